/* One SimpleIK iteration after the kinematics: the damped least-squares step, its cap and the
 * position limits (active set or clip), in one call.
 *
 * The same arithmetic as the Python path of descent.py (_descend_fast: the dls and lm_* steps of
 * methods.py, the cap to max_step_norm; active_set.py: the active set on the limits), written
 * as plain loops over the small dense matrices of one step (m = 6 rows per goal, n <= a few tens of
 * joints). The kinematics (pinocchio), the error, the convergence and stall/plateau tests stay in
 * Python; this replaces the ~10 BLAS/LAPACK/numpy calls of a step and the ~20 of each re-solve
 * at the limits, whose per-call cost (~1 us from Python) was most of an iteration's time.
 *
 * Every matrix is row-major (numpy C order) and double precision. Loaded with ctypes: no Python API.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "kernel_math.h" /* log3 and log6, SE3 product, Cholesky: shared with oink_kernel.c */

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
    if (km_cholesky(A, m) != 0) return -1; /* A = L L^T in place; also NaN */
    for (int64_t i = 0; i < m; ++i) y[i] = b[i];
    km_cholesky_solve(A, m, y, 1);
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


/* ------------------------------------------------------------------------------------------------
 * A whole attempt: sik_descend runs descent.py's _descend_fast loop (one goal, scalar joints) in C: per
 * iteration the kinematics of the chain that carries the tip (its forward kinematics in the goal's
 * frame, so that the tip's placement is T_goal^-1 T(q), and its LOCAL frame Jacobian), the error
 * e = log6(T_goal^-1 T(q)), the convergence, stall, plateau and time tests, and the step above. From
 * Python each of those is a call (~1-2 us each, more with cold caches): an iteration cost ~6-10 us
 * there against well under 1 us here.
 *
 * Placements are 12 doubles: the rotation (row-major 3x3) then the translation.
 */

/* kinds of chain joints (pinocchio's scalar joints) */
enum { SIK_RX = 0, SIK_RY, SIK_RZ, SIK_REVOLUTE, SIK_PX, SIK_PY, SIK_PZ, SIK_PRISMATIC };

/* outcomes of an attempt; the order matches compiled_step.py's DESCENT_STATUS (SIK_NOT_FINITE: NOT_FINITE) */
enum { SIK_CONVERGED = 0, SIK_MAX_ITERS, SIK_STALLED, SIK_PLATEAU, SIK_TIME_OUT, SIK_SINGULAR, SIK_NOT_FINITE };

/* A conservative collision test: oriented boxes that contain the geometries of the collision pairs (each
 * geometry's local AABB in its own frame, e.g. around a convex hull), placed by the forward kinematics of
 * the joints that carry them. Two boxes separated (by more than margin) prove that the geometries inside
 * do not collide; boxes that overlap prove nothing (the caller runs the exact check). The field order
 * matches _Bounds in compiled_step.py. */
typedef struct {
    int64_t nt;              /* joints that carry geometries, and their ancestors, parents first */
    const int64_t *parent;   /* (nt) the parent's index in this list, -1: the universe (the goal's frame) */
    const double *placements;/* (nt x 12) each joint's placement in its parent */
    const double *axes;      /* (nt x 3) */
    const int64_t *kinds;    /* (nt) SIK_* */
    const int64_t *q_index;  /* (nt) */
    int64_t ng;
    const int64_t *joint;    /* (ng) each box's joint (index in this list), -1: the universe */
    const double *boxes;     /* (ng x 15) each box in its joint's frame: rotation (row-major), centre, half extents */
    int64_t np;
    const int64_t *pairs;    /* (np x 2) box indices */
    double margin;           /* [m] separation below which boxes count as overlapping */
    double *scratch;         /* (nt x 12 + ng x 12) */
} sik_bounds;

/* The layout of one descent; the field order matches _Descent in compiled_step.py. */
typedef struct {
    sik_step *step;         /* the step: its J (6 x n) and e (6) are filled here, its x moved */
    const double *q;        /* the full configuration (x is a view into it): the chain's joints read here */
    const double *chain;    /* (nj x 12) each chain joint's placement in its parent joint (root first) */
    const double *axes;     /* (nj x 3) the joint axes (in the joint's frame) */
    const int64_t *kinds;   /* (nj) SIK_* */
    const int64_t *q_index; /* (nj) the joint's index in q */
    const int64_t *column;  /* (nj) the joint's column of J (its index in x), -1 outside the group */
    const double *frame;    /* (12) the tip frame's placement in the last chain joint */
    const double *goal;     /* (4 x 4, row-major) T_goal^-1, or T_goal with invert_goal */
    double *placements;     /* (nj x 12) scratch: the joints' placements in the goal's frame */
    int64_t nj;
    int64_t nq;             /* size of q */
    int64_t invert_goal;    /* 1: goal is T_goal (checked finite, inverted here); 0: T_goal^-1 */
    double *goal_inv;       /* (12) scratch: T_goal^-1 as a placement */
    double lin2, ang2, near; /* squared thresholds; |log6|^2 above near rules convergence out */
    int64_t max_iters, stall_iters, plateau_iters;
    double stall_factor, plateau_ratio;
    double lambda_a, lambda_b; /* the step's damping per iteration: lambda_a err + lambda_b (b alone if a == 0) */
    double budget;           /* [s] from the call on (inf: none) */
    /* out */
    int64_t iterations, status;
    double position_error, orientation_error; /* [m], [rad] at convergence */
    const sik_bounds *bounds; /* NULL: none; else at convergence: */
    int64_t free;            /* 1 if the bounds prove the converged q free of collision, else 0 */
} sik_descent;


/* the joint's motion M(q) (12 doubles) */
static void joint_motion(int64_t kind, const double *axis, double q, double *m) {
    static const double identity[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    memcpy(m, identity, sizeof identity);
    m[9] = m[10] = m[11] = 0.0;
    if (kind >= SIK_PX) {
        if (kind == SIK_PRISMATIC) {
            m[9] = axis[0] * q, m[10] = axis[1] * q, m[11] = axis[2] * q;
        } else {
            m[9 + (kind - SIK_PX)] = q;
        }
        return;
    }
    const double c = cos(q), s = sin(q);
    if (kind == SIK_RX) {
        m[4] = c, m[5] = -s, m[7] = s, m[8] = c;
    } else if (kind == SIK_RY) {
        m[0] = c, m[2] = s, m[6] = -s, m[8] = c;
    } else if (kind == SIK_RZ) {
        m[0] = c, m[1] = -s, m[3] = s, m[4] = c;
    } else { /* Rodrigues: c I + s [a]x + (1 - c) a a^T */
        const double x = axis[0], y = axis[1], z = axis[2], t = 1.0 - c;
        m[0] = c + t * x * x, m[1] = t * x * y - s * z, m[2] = t * x * z + s * y;
        m[3] = t * x * y + s * z, m[4] = c + t * y * y, m[5] = t * y * z - s * x;
        m[6] = t * x * z - s * y, m[7] = t * y * z + s * x, m[8] = c + t * z * z;
    }
}



/* the tip's placement in the goal's frame (T_goal^-1 T(q)) into tip, every chain joint's into
 * d->placements */
static void chain_kinematics(const sik_descent *d, double *tip) {
    double local[12], motion[12];
    const double *parent = d->goal_inv;
    for (int64_t k = 0; k < d->nj; ++k) {
        double *M = d->placements + 12 * k;
        joint_motion(d->kinds[k], d->axes + 3 * k, d->q[d->q_index[k]], motion);
        km_se3_mul(d->chain + 12 * k, motion, local);
        km_se3_mul(parent, local, M);
        parent = M;
    }
    km_se3_mul(parent, d->frame, tip);
}

/* J (6 x n, row-major, zero outside the chain's columns) = the tip's LOCAL frame Jacobian */
static void chain_jacobian(const sik_descent *d, const double *tip, double *J, int64_t n) {
    const double *Rt = tip, *pt = tip + 9;
    for (int64_t k = 0; k < d->nj; ++k) {
        const int64_t c = d->column[k];
        if (c < 0) continue;
        const double *M = d->placements + 12 * k, *a = d->axes + 3 * k;
        double aw[3]; /* the axis in the goal's frame */
        for (int i = 0; i < 3; ++i) aw[i] = M[3 * i] * a[0] + M[3 * i + 1] * a[1] + M[3 * i + 2] * a[2];
        double lin[3], ang[3];
        if (d->kinds[k] >= SIK_PX) {
            lin[0] = aw[0], lin[1] = aw[1], lin[2] = aw[2];
            ang[0] = ang[1] = ang[2] = 0.0;
        } else { /* the tip's velocity aw x (p_tip - p_joint), the angular velocity aw */
            const double r0 = pt[0] - M[9], r1 = pt[1] - M[10], r2 = pt[2] - M[11];
            lin[0] = aw[1] * r2 - aw[2] * r1, lin[1] = aw[2] * r0 - aw[0] * r2, lin[2] = aw[0] * r1 - aw[1] * r0;
            ang[0] = aw[0], ang[1] = aw[1], ang[2] = aw[2];
        }
        for (int i = 0; i < 3; ++i) { /* in the tip's frame: R_tip^T */
            J[i * n + c] = Rt[i] * lin[0] + Rt[3 + i] * lin[1] + Rt[6 + i] * lin[2];
            J[(3 + i) * n + c] = Rt[i] * ang[0] + Rt[3 + i] * ang[1] + Rt[6 + i] * ang[2];
        }
    }
}

/* 1 if the boxes of two placements (12 doubles each: rotation row-major, centre) with half extents ea, eb are
 * separated by more than margin along one of the 15 axes of the separating-axis test, else 0 (NaN: 0). */
static int boxes_separated(const double *A, const double *ea, const double *B, const double *eb, double margin) {
    double R[3][3], AR[3][3], t[3], d[3];
    for (int i = 0; i < 3; ++i) d[i] = B[9 + i] - A[9 + i];
    for (int i = 0; i < 3; ++i) { /* R = A^T B (B's axes in A's frame), t = A^T d */
        t[i] = A[i] * d[0] + A[3 + i] * d[1] + A[6 + i] * d[2];
        for (int j = 0; j < 3; ++j) {
            R[i][j] = A[i] * B[j] + A[3 + i] * B[3 + j] + A[6 + i] * B[6 + j];
            AR[i][j] = fabs(R[i][j]) + 1e-12; /* (parallel edges: the cross axes degenerate) */
        }
    }
    for (int i = 0; i < 3; ++i) { /* A's axes */
        const double rb = eb[0] * AR[i][0] + eb[1] * AR[i][1] + eb[2] * AR[i][2];
        if (fabs(t[i]) > ea[i] + rb + margin) return 1;
    }
    for (int j = 0; j < 3; ++j) { /* B's axes */
        const double ra = ea[0] * AR[0][j] + ea[1] * AR[1][j] + ea[2] * AR[2][j];
        if (fabs(t[0] * R[0][j] + t[1] * R[1][j] + t[2] * R[2][j]) > ra + eb[j] + margin) return 1;
    }
    for (int i = 0; i < 3; ++i) { /* A_i x B_j */
        const int i1 = (i + 1) % 3, i2 = (i + 2) % 3;
        for (int j = 0; j < 3; ++j) {
            const int j1 = (j + 1) % 3, j2 = (j + 2) % 3;
            const double ra = ea[i1] * AR[i2][j] + ea[i2] * AR[i1][j];
            const double rb = eb[j1] * AR[i][j2] + eb[j2] * AR[i][j1];
            if (fabs(t[i2] * R[i1][j] - t[i1] * R[i2][j]) > ra + rb + margin) return 1;
        }
    }
    return 0;
}

/* 1 if every pair's boxes are separated at q (world placements premultiplied by base: the goal's frame),
 * else 0. */
static int64_t bounds_free(const sik_bounds *b, const double *q, const double *base) {
    double motion[12], local[12];
    double *joints = b->scratch, *boxes = b->scratch + 12 * b->nt;
    for (int64_t k = 0; k < b->nt; ++k) {
        joint_motion(b->kinds[k], b->axes + 3 * k, q[b->q_index[k]], motion);
        km_se3_mul(b->placements + 12 * k, motion, local);
        km_se3_mul(b->parent[k] < 0 ? base : joints + 12 * b->parent[k], local, joints + 12 * k);
    }
    for (int64_t g = 0; g < b->ng; ++g)
        km_se3_mul(b->joint[g] < 0 ? base : joints + 12 * b->joint[g], b->boxes + 15 * g, boxes + 12 * g);
    for (int64_t p = 0; p < b->np; ++p) {
        const int64_t g1 = b->pairs[2 * p], g2 = b->pairs[2 * p + 1];
        if (!boxes_separated(boxes + 12 * g1, b->boxes + 15 * g1 + 12, boxes + 12 * g2, b->boxes + 15 * g2 + 12,
                             b->margin))
            return 0;
    }
    return 1;
}

/* bounds_free for Python (tests; q the full configuration, base a placement of 12 doubles) */
int64_t sik_bounds_free(const sik_bounds *b, const double *q, const double *base) { return bounds_free(b, q, base); }

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One attempt from x (clipped into the limits first): returns (and stores) the status; iterations as
 * _descend_fast counts them; the errors at convergence. */
/* d->goal_inv from d->goal (inverted with invert_goal); 0, or -1 if a number is not finite */
static int goal_placement(sik_descent *d) {
    const double *H = d->goal;
    double *G = d->goal_inv;
    if (!d->invert_goal) {
        for (int i = 0; i < 3; ++i) {
            G[3 * i] = H[4 * i], G[3 * i + 1] = H[4 * i + 1], G[3 * i + 2] = H[4 * i + 2];
            G[9 + i] = H[4 * i + 3];
        }
        return 0;
    }
    for (int i = 0; i < 3; ++i) /* R^T, -R^T p */
        for (int j = 0; j < 3; ++j) G[3 * i + j] = H[4 * j + i];
    double sum = 0.0;
    for (int i = 0; i < 3; ++i) {
        G[9 + i] = -(H[i] * H[3] + H[4 + i] * H[7] + H[8 + i] * H[11]);
        sum += G[9 + i] * G[9 + i];
    }
    for (int k = 0; k < 12; ++k) sum += H[k] * 0.0; /* any nan or inf in R or p makes it nan */
    return isfinite(sum) ? 0 : -1;
}

int64_t sik_descend(sik_descent *d) {
    sik_step *s = d->step;
    const int64_t n = s->n;
    double *J = (double *)s->J, *e = (double *)s->e, *x = s->x;
    if (d->invert_goal) { /* the plain path's inputs, unchecked so far */
        double sum = 0.0;
        for (int64_t k = 0; k < d->nq; ++k) sum += d->q[k] * d->q[k];
        if (!isfinite(sum) || goal_placement(d) != 0) {
            d->iterations = 0, d->status = SIK_NOT_FINITE;
            return SIK_NOT_FINITE;
        }
    } else {
        goal_placement(d);
    }
    const double deadline = isinf(d->budget) ? INFINITY : now_seconds() + d->budget;
    double tip[12];
    for (int64_t j = 0; j < n; ++j) { /* a seed outside the limits */
        double v = x[j] > s->lo[j] ? x[j] : s->lo[j];
        x[j] = v < s->hi[j] ? v : s->hi[j];
    }
    memset(J, 0, (size_t)(6 * n) * sizeof(double));
    double stall_ref = INFINITY, flat_ref = INFINITY;
    int64_t ref_it = 0, flat = 0, status = SIK_MAX_ITERS, it = 0;
    for (;; ++it) {
        chain_kinematics(d, tip);
        km_se3_log(tip, e);
        const double err = e[0] * e[0] + e[1] * e[1] + e[2] * e[2] + e[3] * e[3] + e[4] * e[4] + e[5] * e[5];
        if (err <= d->near) {
            const double p2 = tip[9] * tip[9] + tip[10] * tip[10] + tip[11] * tip[11];
            const double r2 = e[3] * e[3] + e[4] * e[4] + e[5] * e[5];
            if (p2 <= d->lin2 && r2 <= d->ang2) {
                d->position_error = sqrt(p2), d->orientation_error = sqrt(r2);
                d->free = d->bounds ? bounds_free(d->bounds, d->q, d->goal_inv) : 0;
                status = SIK_CONVERGED;
                break;
            }
        }
        if (it == d->max_iters) {
            status = SIK_MAX_ITERS;
            break;
        }
        if (err < stall_ref) {
            stall_ref = d->stall_factor * err, ref_it = it;
        } else if (it - ref_it >= d->stall_iters) {
            status = SIK_STALLED;
            break;
        }
        if (err > flat_ref) {
            if (++flat >= d->plateau_iters) {
                status = SIK_PLATEAU;
                break;
            }
        } else {
            flat = 0;
        }
        flat_ref = d->plateau_ratio * err;
        if (deadline < INFINITY && now_seconds() >= deadline) {
            status = SIK_TIME_OUT;
            break;
        }
        chain_jacobian(d, tip, J, n);
        s->lambda = d->lambda_a != 0.0 ? d->lambda_a * err + d->lambda_b : d->lambda_b;
        if (sik_step_run(s) < 0) {
            status = SIK_SINGULAR;
            ++it;
            break;
        }
    }
    d->iterations = it, d->status = status;
    return status;
}

/* The layout of every struct the Python side builds with ctypes: per struct, its size then each field's
 * offset and size, in declaration order; sik_layout writes them (count returned), sik_layout_names says whose
 * ("struct:field,field;..."), for the loader to compare with its ctypes.Structure mirrors, by name and
 * offset, before any call (compiled_library.check_layout). Generated from the typedefs above
 * (scripts/kernel_layout.py): regenerate when a struct changes. */
const char *sik_layout_names(void) {
    return
        "sik_step:J,e,x,lo,hi,work,m,n,lambda,neg_step,max_step,clamp,rounds;sik_bounds:nt,parent,placements,"
        "axes,kinds,q_index,ng,joint,boxes,np,pairs,margin,scratch;sik_descent:step,q,chain,axes,kinds,"
        "q_index,column,frame,goal,placements,nj,nq,invert_goal,goal_inv,lin2,ang2,near,max_iters,"
        "stall_iters,plateau_iters,stall_factor,plateau_ratio,lambda_a,lambda_b,budget,iterations,status,"
        "position_error,orientation_error,bounds,free";
}

int64_t sik_layout(int64_t *out, int64_t capacity) {
    const int64_t layout[] = {
        sizeof(sik_step), offsetof(sik_step, J), sizeof(((sik_step *)0)->J), offsetof(sik_step, e),
        sizeof(((sik_step *)0)->e), offsetof(sik_step, x), sizeof(((sik_step *)0)->x), offsetof(sik_step, lo),
        sizeof(((sik_step *)0)->lo), offsetof(sik_step, hi), sizeof(((sik_step *)0)->hi), offsetof(sik_step, work),
        sizeof(((sik_step *)0)->work), offsetof(sik_step, m), sizeof(((sik_step *)0)->m), offsetof(sik_step, n),
        sizeof(((sik_step *)0)->n), offsetof(sik_step, lambda), sizeof(((sik_step *)0)->lambda),
        offsetof(sik_step, neg_step), sizeof(((sik_step *)0)->neg_step), offsetof(sik_step, max_step),
        sizeof(((sik_step *)0)->max_step), offsetof(sik_step, clamp), sizeof(((sik_step *)0)->clamp),
        offsetof(sik_step, rounds), sizeof(((sik_step *)0)->rounds),
        sizeof(sik_bounds), offsetof(sik_bounds, nt), sizeof(((sik_bounds *)0)->nt), offsetof(sik_bounds, parent),
        sizeof(((sik_bounds *)0)->parent), offsetof(sik_bounds, placements), sizeof(((sik_bounds *)0)->placements),
        offsetof(sik_bounds, axes), sizeof(((sik_bounds *)0)->axes), offsetof(sik_bounds, kinds),
        sizeof(((sik_bounds *)0)->kinds), offsetof(sik_bounds, q_index), sizeof(((sik_bounds *)0)->q_index),
        offsetof(sik_bounds, ng), sizeof(((sik_bounds *)0)->ng), offsetof(sik_bounds, joint),
        sizeof(((sik_bounds *)0)->joint), offsetof(sik_bounds, boxes), sizeof(((sik_bounds *)0)->boxes),
        offsetof(sik_bounds, np), sizeof(((sik_bounds *)0)->np), offsetof(sik_bounds, pairs),
        sizeof(((sik_bounds *)0)->pairs), offsetof(sik_bounds, margin), sizeof(((sik_bounds *)0)->margin),
        offsetof(sik_bounds, scratch), sizeof(((sik_bounds *)0)->scratch),
        sizeof(sik_descent), offsetof(sik_descent, step), sizeof(((sik_descent *)0)->step),
        offsetof(sik_descent, q), sizeof(((sik_descent *)0)->q), offsetof(sik_descent, chain),
        sizeof(((sik_descent *)0)->chain), offsetof(sik_descent, axes), sizeof(((sik_descent *)0)->axes),
        offsetof(sik_descent, kinds), sizeof(((sik_descent *)0)->kinds), offsetof(sik_descent, q_index),
        sizeof(((sik_descent *)0)->q_index), offsetof(sik_descent, column), sizeof(((sik_descent *)0)->column),
        offsetof(sik_descent, frame), sizeof(((sik_descent *)0)->frame), offsetof(sik_descent, goal),
        sizeof(((sik_descent *)0)->goal), offsetof(sik_descent, placements), sizeof(((sik_descent *)0)->placements),
        offsetof(sik_descent, nj), sizeof(((sik_descent *)0)->nj), offsetof(sik_descent, nq),
        sizeof(((sik_descent *)0)->nq), offsetof(sik_descent, invert_goal), sizeof(((sik_descent *)0)->invert_goal),
        offsetof(sik_descent, goal_inv), sizeof(((sik_descent *)0)->goal_inv), offsetof(sik_descent, lin2),
        sizeof(((sik_descent *)0)->lin2), offsetof(sik_descent, ang2), sizeof(((sik_descent *)0)->ang2),
        offsetof(sik_descent, near), sizeof(((sik_descent *)0)->near), offsetof(sik_descent, max_iters),
        sizeof(((sik_descent *)0)->max_iters), offsetof(sik_descent, stall_iters),
        sizeof(((sik_descent *)0)->stall_iters), offsetof(sik_descent, plateau_iters),
        sizeof(((sik_descent *)0)->plateau_iters), offsetof(sik_descent, stall_factor),
        sizeof(((sik_descent *)0)->stall_factor), offsetof(sik_descent, plateau_ratio),
        sizeof(((sik_descent *)0)->plateau_ratio), offsetof(sik_descent, lambda_a),
        sizeof(((sik_descent *)0)->lambda_a), offsetof(sik_descent, lambda_b), sizeof(((sik_descent *)0)->lambda_b),
        offsetof(sik_descent, budget), sizeof(((sik_descent *)0)->budget), offsetof(sik_descent, iterations),
        sizeof(((sik_descent *)0)->iterations), offsetof(sik_descent, status), sizeof(((sik_descent *)0)->status),
        offsetof(sik_descent, position_error), sizeof(((sik_descent *)0)->position_error),
        offsetof(sik_descent, orientation_error), sizeof(((sik_descent *)0)->orientation_error),
        offsetof(sik_descent, bounds), sizeof(((sik_descent *)0)->bounds), offsetof(sik_descent, free),
        sizeof(((sik_descent *)0)->free),
    };
    const int64_t count = (int64_t)(sizeof(layout) / sizeof(layout[0]));
    for (int64_t i = 0; i < count && i < capacity; ++i) out[i] = layout[i];
    return count;
}
