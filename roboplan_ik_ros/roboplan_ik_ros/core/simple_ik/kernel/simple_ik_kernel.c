/* One SimpleIK iteration after the kinematics: the damped least-squares step, its cap and the
 * position limits (active set or clip), in one call.
 *
 * The same arithmetic as the Python path of solver.py (_descend_fast: the dls and lm_* steps of
 * methods.py, the cap to max_step_norm; active_set.py: the active set on the limits), written
 * as plain loops over the small dense matrices of one step (m = 6 rows per goal, n <= a few tens of
 * joints). The kinematics (pinocchio), the error, the convergence and stall/plateau tests stay in
 * Python; this replaces the ~10 BLAS/LAPACK/numpy calls of a step and the ~20 of each re-solve
 * at the limits, whose per-call cost (~1 us from Python) was most of an iteration's time.
 *
 * Every matrix is row-major (numpy C order) and double precision. Loaded with ctypes: no Python API.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

/* The layout of one step; the field order matches _Step in compiled_step.py. */
typedef struct {
    const double *J; /* (m x n) the (weighted) Jacobian of the error, J dq ~ e */
    const double *e; /* (m) the (weighted) error */
    double *x;       /* (n) in/out: the group's coordinates (q of contiguous scalar joints) */
    const double *lo, *hi; /* (n) their limits (-inf / inf: none) */
    double *work;    /* scratch: sik_work_size(m, n) doubles */
    int64_t m, n;
    double lambda;   /* damping added to J J^T's diagonal (dls: damping; lm_*: the method's lambda_k) */
    double neg_step; /* -step_size */
    double max_step; /* [rad or m] cap of the step's 2-norm (inf: none) */
    int64_t clamp;   /* 1: active set on the limits (clamp_limits); 0: clip into them */
    int64_t rounds;  /* re-solves of the active set (active_set.CLAMP_ROUNDS) */
} sik_step;

/* Scratch doubles a step needs: the step's A (m x m), y, (unused) (m), dq, target (n), then the
 * re-solve's A (m x m), y, b (m), d_f, inside, clamped, newly, free (n). */
int64_t sik_work_size(int64_t m, int64_t n) { return 2 * m * m + 4 * m + 7 * n; }

/* y = (Jf Jf^T + lambda I)^-1 b by Cholesky, Jf = J with the columns where mask[j] == 0 zeroed
 * (mask NULL: all columns). A is (m x m) scratch. Returns 0, or -1 if not positive definite. */
static int solve_damped(const double *J, const double *mask, int64_t m, int64_t n, double lambda, double *A,
                        const double *b, double *y) {
    for (int64_t i = 0; i < m; ++i) {
        const double *Ji = J + i * n;
        for (int64_t k = 0; k <= i; ++k) {
            const double *Jk = J + k * n;
            double s = 0.0;
            if (mask) {
                for (int64_t j = 0; j < n; ++j) s += Ji[j] * Jk[j] * mask[j];
            } else {
                for (int64_t j = 0; j < n; ++j) s += Ji[j] * Jk[j];
            }
            A[i * m + k] = s;
        }
        A[i * m + i] += lambda;
    }
    /* lower Cholesky in place: A = L L^T */
    for (int64_t i = 0; i < m; ++i) {
        for (int64_t k = 0; k <= i; ++k) {
            double s = A[i * m + k];
            for (int64_t j = 0; j < k; ++j) s -= A[i * m + j] * A[k * m + j];
            if (i == k) {
                if (!(s > 0.0)) return -1; /* also NaN */
                A[i * m + i] = sqrt(s);
            } else {
                A[i * m + k] = s / A[k * m + k];
            }
        }
    }
    for (int64_t i = 0; i < m; ++i) { /* L z = b */
        double s = b[i];
        for (int64_t j = 0; j < i; ++j) s -= A[i * m + j] * y[j];
        y[i] = s / A[i * m + i];
    }
    for (int64_t i = m - 1; i >= 0; --i) { /* L^T y = z */
        double s = y[i];
        for (int64_t j = i + 1; j < m; ++j) s -= A[j * m + i] * y[j];
        y[i] = s / A[i * m + i];
    }
    return 0;
}

/* out = Jf^T y (n), Jf as in solve_damped; returns |out|^2. */
static double transpose_times(const double *J, const double *mask, int64_t m, int64_t n, const double *y,
                              double *out) {
    for (int64_t j = 0; j < n; ++j) out[j] = 0.0;
    for (int64_t i = 0; i < m; ++i) {
        const double *Ji = J + i * n;
        const double yi = y[i];
        for (int64_t j = 0; j < n; ++j) out[j] += Ji[j] * yi;
    }
    double n2 = 0.0;
    for (int64_t j = 0; j < n; ++j) {
        if (mask) out[j] *= mask[j];
        n2 += out[j] * out[j];
    }
    return n2;
}

/* min over j of the distance of t to [lo, hi] (negative: outside) */
static double margin(const double *t, const double *lo, const double *hi, int64_t n) {
    double mn = INFINITY;
    for (int64_t j = 0; j < n; ++j) {
        double a = t[j] - lo[j], b = hi[j] - t[j];
        if (a < mn) mn = a;
        if (b < mn) mn = b;
    }
    return mn;
}

/* inside = clip(t, lo, hi); returns the number of coordinates that changed, marked 1.0 in newly */
static int64_t clip_mark(const double *t, const double *lo, const double *hi, int64_t n, double *inside,
                         double *newly) {
    int64_t count = 0;
    for (int64_t j = 0; j < n; ++j) {
        double v = t[j] < hi[j] ? t[j] : hi[j];
        v = v > lo[j] ? v : lo[j];
        inside[j] = v;
        newly[j] = v != t[j] ? 1.0 : 0.0;
        count += v != t[j];
    }
    return count;
}

/* active_set.clamped_step: target (= x + the step, outside [lo, hi]) with the coordinates that left the
 * range clamped onto it and the free ones re-solved for rhs - J d_c (rhs = neg_step e) by the same
 * damped least squares, capped; new violations join the clamped set (at most `rounds` re-solves);
 * the result is clipped, so it is always inside. */
static void clamped_step(const sik_step *s, double *target, double *w) {
    const int64_t m = s->m, n = s->n;
    double *A = w, *y = A + m * m, *b = y + m, *d_f = b + m, *inside = d_f + n, *clamped = inside + n,
           *newly = clamped + n, *free_ = newly + n;
    clip_mark(target, s->lo, s->hi, n, inside, clamped);
    for (int64_t rnd = 0; rnd < s->rounds; ++rnd) {
        if (rnd) {
            if (clip_mark(target, s->lo, s->hi, n, inside, newly) == 0) return; /* inside: done */
            for (int64_t j = 0; j < n; ++j)
                if (newly[j] > clamped[j]) clamped[j] = newly[j];
        }
        for (int64_t j = 0; j < n; ++j) free_[j] = 1.0 - clamped[j];
        /* b = rhs - J d_c, d_c = (inside - x) on the clamped joints, 0 on the free ones */
        for (int64_t i = 0; i < m; ++i) {
            const double *Ji = s->J + i * n;
            double v = 0.0;
            for (int64_t j = 0; j < n; ++j) v += Ji[j] * ((inside[j] - s->x[j]) * clamped[j]);
            b[i] = s->neg_step * s->e[i] - v;
        }
        if (solve_damped(s->J, free_, m, n, s->lambda, A, b, y) != 0) {
            memcpy(target, inside, (size_t)n * sizeof(double));
            return;
        }
        double norm = sqrt(transpose_times(s->J, free_, m, n, y, d_f));
        double scale = norm > s->max_step ? s->max_step / norm : 1.0;
        for (int64_t j = 0; j < n; ++j)
            target[j] = s->x[j] + (inside[j] - s->x[j]) * clamped[j] + d_f[j] * scale;
    }
    for (int64_t j = 0; j < n; ++j) {
        double v = target[j] < s->hi[j] ? target[j] : s->hi[j];
        target[j] = v > s->lo[j] ? v : s->lo[j];
    }
}

/* x <- x + the step: dq = J^T (J J^T + lambda I)^-1 e, applied as neg_step dq, or scaled to
 * max_step when |neg_step dq| is longer; then the limits. Returns 0, 1 if the limits acted, or -1
 * if J J^T + lambda I is not positive definite (x unchanged). */
int64_t sik_step_run(const sik_step *s) {
    const int64_t m = s->m, n = s->n;
    double *w = s->work, *A = w, *y = A + m * m, *dq = y + 2 * m, *target = dq + n;
    if (solve_damped(s->J, NULL, m, n, s->lambda, A, s->e, y) != 0) return -1;
    double norm = sqrt(transpose_times(s->J, NULL, m, n, y, dq));
    double step = -s->neg_step;
    double factor = step * norm <= s->max_step ? s->neg_step : -s->max_step / norm;
    for (int64_t j = 0; j < n; ++j) target[j] = s->x[j] + factor * dq[j];
    int64_t limited = margin(target, s->lo, s->hi, n) < 0.0;
    if (limited) {
        if (s->clamp) {
            clamped_step(s, target, target + n);
        } else {
            for (int64_t j = 0; j < n; ++j) {
                double v = target[j] < s->hi[j] ? target[j] : s->hi[j];
                target[j] = v > s->lo[j] ? v : s->lo[j];
            }
        }
    }
    memcpy(s->x, target, (size_t)n * sizeof(double));
    return limited;
}
