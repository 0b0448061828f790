/* The math the C kernels share (oink_kernel.c, simple_ik_kernel.c, control_kernel.c): numpy's NaN-propagating
 * minimum and maximum, rotations and placements (log3, SE3 product and log6), the Cholesky factor and its solve,
 * and OInK's barrier laws (the braking bound and the safe-displacement fade) that the numpy path computes in
 * barrier.py. One definition each, included by each kernel (static inline: each library keeps its own copy, no
 * symbol exported).
 *
 * Conventions: row-major (numpy C order), double precision. A placement is 12 doubles: the rotation
 * (3 x 3, row-major) then the translation [m].
 */
#ifndef ROBOPLAN_KERNEL_MATH_H
#define ROBOPLAN_KERNEL_MATH_H

#include <math.h>
#include <stdint.h>

#define KM_PI 3.14159265358979323846

/* np.maximum / np.minimum: a NaN in either argument gives NaN. */
static inline double km_nan_max(double a, double b) { return (a != a || b != b) ? NAN : (a > b ? a : b); }
static inline double km_nan_min(double a, double b) { return (a != a || b != b) ? NAN : (a < b ? a : b); }

/* w = log3(R) for the rotation R (3 x 3): the axis-angle vector, |w| = theta in [0, pi]; returns theta.
 * atan2, not acos(c): accurate to round-off near 0 and pi too, where acos loses half the digits (pinocchio's
 * log3 up to rounding). */
static inline double km_log3(const double R[9], double w[3]) {
    const double tr = R[0] + R[4] + R[8];
    double c = 0.5 * (tr - 1.0);
    c = c > 1.0 ? 1.0 : (c < -1.0 ? -1.0 : c);
    const double vx = R[7] - R[5], vy = R[2] - R[6], vz = R[3] - R[1]; /* 2 sin(theta) axis */
    const double theta = atan2(0.5 * sqrt(vx * vx + vy * vy + vz * vz), c);
    if (theta > KM_PI - 1e-3) { /* near pi the antisymmetric part vanishes: the axis from the symmetric part */
        const double d = 1.0 - c; /* R = c I + (1 - c) a a^T + sin(theta) [a]x */
        const double a2[3] = {(R[0] - c) / d, (R[4] - c) / d, (R[8] - c) / d};
        int k = 0;
        if (a2[1] > a2[k]) k = 1;
        if (a2[2] > a2[k]) k = 2;
        double a[3];
        a[k] = sqrt(a2[k] > 0.0 ? a2[k] : 0.0);
        for (int i = 0; i < 3; ++i)
            if (i != k) a[i] = (R[3 * i + k] + R[3 * k + i]) / (2.0 * d * a[k]);
        const double norm = sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]);
        const double sign = (a[0] * vx + a[1] * vy + a[2] * vz) < 0.0 ? -1.0 : 1.0;
        for (int i = 0; i < 3; ++i) w[i] = sign * theta * a[i] / norm;
        return theta;
    }
    /* theta / (2 sin theta), by its Taylor series near 0 (relative error < 1e-16 below 1e-4) */
    const double t = theta < 1e-4 ? 0.5 * (1.0 + theta * theta / 6.0) : 0.5 * theta / sin(theta);
    w[0] = t * vx;
    w[1] = t * vy;
    w[2] = t * vz;
    return theta;
}

/* c = a * b (placements) */
static inline void km_se3_mul(const double *a, const double *b, double *c) {
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j)
            c[3 * i + j] = a[3 * i] * b[j] + a[3 * i + 1] * b[3 + j] + a[3 * i + 2] * b[6 + j];
        c[9 + i] = a[3 * i] * b[9] + a[3 * i + 1] * b[10] + a[3 * i + 2] * b[11] + a[9 + i];
    }
}

/* e = log6(M) = (v, w) of the placement M: w = log3(R), v = V(w)^-1 p */
static inline void km_se3_log(const double *M, double *e) {
    double *w = e + 3;
    const double theta = km_log3(M, w);
    const double *p = M + 9;
    const double tr = M[0] + M[4] + M[8];
    double alpha, beta;
    if (tr >= 3.0 - 6.0554544523933395e-06) { /* eps^(1/3): below it, a series */
        const double ax = 0.5 * (M[7] - M[5]), ay = 0.5 * (M[2] - M[6]), az = 0.5 * (M[3] - M[1]);
        const double t2 = ax * ax + ay * ay + az * az;
        alpha = 1.0 - t2 / 12.0 - t2 * t2 / 720.0;
        beta = 1.0 / 12.0 + t2 / 720.0;
    } else {
        const double st = sin(theta), ct = cos(theta);
        alpha = theta * st / (2.0 * (1.0 - ct));
        beta = 1.0 / (theta * theta) - st / (2.0 * theta * (1.0 - ct));
    }
    const double wp = w[0] * p[0] + w[1] * p[1] + w[2] * p[2];
    e[0] = alpha * p[0] - 0.5 * (w[1] * p[2] - w[2] * p[1]) + beta * wp * w[0];
    e[1] = alpha * p[1] - 0.5 * (w[2] * p[0] - w[0] * p[2]) + beta * wp * w[1];
    e[2] = alpha * p[2] - 0.5 * (w[0] * p[1] - w[1] * p[0]) + beta * wp * w[2];
}

/* In place: the lower Cholesky factor of the SPD (m x m) matrix in a (only its lower triangle is read);
 * 0 on success, -1 when not positive definite (also NaN). */
static inline int km_cholesky(double *a, int64_t m) {
    for (int64_t j = 0; j < m; ++j) {
        double s = a[j * m + j];
        for (int64_t k = 0; k < j; ++k) s -= a[j * m + k] * a[j * m + k];
        if (!(s > 0.0)) return -1;
        const double ljj = sqrt(s);
        a[j * m + j] = ljj;
        for (int64_t i = j + 1; i < m; ++i) {
            double t = a[i * m + j];
            for (int64_t k = 0; k < j; ++k) t -= a[i * m + k] * a[j * m + k];
            a[i * m + j] = t / ljj;
        }
    }
    return 0;
}

/* In place: x <- (L L^T)^{-1} x for the factor in the lower triangle of l (m x m); x has `cols`
 * right-hand sides stored as columns of a row-major (m x cols) matrix. */
static inline void km_cholesky_solve(const double *l, int64_t m, double *x, int64_t cols) {
    for (int64_t col = 0; col < cols; ++col) {
        for (int64_t i = 0; i < m; ++i) { /* L y = x */
            double t = x[i * cols + col];
            for (int64_t k = 0; k < i; ++k) t -= l[i * m + k] * x[k * cols + col];
            x[i * cols + col] = t / l[i * m + i];
        }
        for (int64_t i = m - 1; i >= 0; --i) { /* L^T z = y */
            double t = x[i * cols + col];
            for (int64_t k = i + 1; k < m; ++k) t -= l[k * m + i] * x[k * cols + col];
            x[i * cols + col] = t / l[i * m + i];
        }
    }
}

/* The approach per step a barrier row can still brake from within h, decelerating at a_h per step^2
 * after `lag` steps (Barrier.constraint's braking term, barrier.py _braking_bound): the larger root s of
 * (s + a_h/2)^2 + 2 a_h lag s = 2 a_h h, at least 0; +inf when the row has no deceleration. */
static inline double km_braking_bound(double h, double a_h, double lag) {
    if (!(a_h > 0.0) || !isfinite(h)) return INFINITY;
    const double k = 1.0 + 2.0 * lag;
    const double b = 0.5 * (-a_h * k + sqrt(a_h * a_h * (k * k - 1.0) + 8.0 * a_h * h));
    return b > 0.0 ? b : 0.0;
}

/* Barrier.safe_displacement_fade: f(h_min / fade), 1 for h_min <= 0, 0 from fade on (and for NaN), the
 * cubic smoothstep (1 - x)^2 (1 + 2 x) between. */
static inline double km_safe_displacement_fade(double h_min, double fade) {
    const double x = h_min / fade;
    if (!(x < 1.0)) return 0.0;
    if (x <= 0.0) return 1.0;
    return (1.0 - x) * (1.0 - x) * (1.0 + 2.0 * x);
}

#endif /* ROBOPLAN_KERNEL_MATH_H */
