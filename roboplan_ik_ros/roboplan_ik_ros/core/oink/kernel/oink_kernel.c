/* OInK's step in one call (oink_step): the dense assembly - the nullspace projectors, H and c, the barrier rows,
 * the box, and the unconstrained shortcut -H^{-1} c with its feasibility check - then, when the shortcut does not
 * apply, the QP with DAQP's C API (daqp_workspace.c: DAQP built in from its sources; without them the solver
 * solves the QP with the daqp Python module). Recovery, braking and the slack problems stay in solver.py.
 *
 * The same arithmetic as the numpy path of solver.py (Oink._build_objective, Barrier.constraint,
 * Barrier.regularization_weight, Oink._build_limits for box limits, _unconstrained_optimum_is_feasible),
 * written as plain loops over the small dense matrices of one step. The task, limit and barrier
 * classes stay in Python: they fill their Jacobians, errors, values and bounds in place, and this
 * kernel reads them through pointers that compiled_assembly.py's CompiledAssembly holds (and checks)
 * per step. Two built-in types are also updated here, from pinocchio's Data read in place, with the
 * formulas of their update() (tested equal): FrameTask and PositionBarrier. Any other type (and any
 * subclass of those two) is updated by its own Python code: a new type needs no change here.
 *
 * Every matrix is row-major (numpy C order) and double precision. Loaded with ctypes: no Python API.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "daqp_workspace.h" /* the QP's DAQP workspace, kept between steps */
#include "kernel_math.h"     /* log3, Cholesky, the braking law and the fade: shared with simple_ik_kernel.c */

#define MIN_JACOBIAN_NORM2 1e-12 /* as barrier.py: below it the regularization weight is 0 */
#define LARGE 1e300              /* as barrier.py: |h| capped so that an unused row (h = inf) gives inf */

/* A frame of pinocchio's Data, read in place: the world-frame joint Jacobians (data.J after
 * computeJointJacobians, 6 x nv_model) and the frame's placement (data.oMf[frame]); strides in
 * elements (Eigen stores both column-major). */
typedef struct {
    const double *J_world;
    int64_t J_row_stride, J_col_stride;
    const double *p;        /* (3) frame origin in the world frame [m] */
    int64_t p_stride;
    const double *R;        /* (3 x 3) frame orientation in the world frame */
    int64_t R_row_stride, R_col_stride;
    const int64_t *columns; /* [n] model velocity index of each group column */
    const double *support;  /* [n] 1 where that velocity moves the frame's parent joint, else 0 */
} frame_ref;

/* FrameTask (frame_task.py), the same formulas as FrameTask.update: e = (p_t - p, log3(R_t R^T)),
 * each saturated by tanh when its max_*_error is finite, J = -J_frame(LOCAL_WORLD_ALIGNED). */
typedef struct {
    frame_ref frame;
    const double *p_target; /* (3) */
    const double *R_target; /* (3 x 3) row-major */
    const double *max_error; /* (2) max_position_error, max_rotation_error (inf: no saturation) */
    double *J;     /* (6 x n) out: task.jacobian */
    double *e;     /* (6) out: task.error */
    double *norms; /* (2) out: |e_pos|, |e_rot| before saturation */
} frame_task;

/* PositionBarrier (position_barrier.py): h = S p + offset, dh/dq = S J_lin(LOCAL_WORLD_ALIGNED). */
typedef struct {
    frame_ref frame;
    int64_t rows;
    const double *select; /* (rows x 3) */
    const double *offset; /* (rows) */
    double *h;            /* (rows) out: barrier.value */
    double *J;            /* (rows x n) out: barrier.jacobian */
} frame_position_barrier;

/* The step's QP as solver.py's _solve_qp_daqp gives it to DAQP: min 1/2 dq^T H dq + c^T dq s.t. lower <= dq <= upper
 * on the first n rows (the box: simple bounds) and lower <= A dq <= upper on the others (the other limits' rows,
 * then the barrier rows); dq = DAQP's solution clipped into the box. One per QpLayout (its arrays), the workspace
 * one per solver (compiled_qp.py; the field order matches _KernelQp there). */
typedef struct {
    daqp_workspace *workspace; /* oink_daqp_create's */
    int64_t n;
    int64_t rows;          /* n + the rows of A */
    int64_t barrier_begin; /* the first barrier row (rows barrier_begin.. of upper) */
    double *H;             /* (n x n) */
    double *c;             /* (n) */
    double *A;             /* ((rows - n) x n) */
    double *upper;         /* (rows) */
    double *lower;         /* (rows) */
    double *dq;            /* (n) out */
    double *x;             /* (n) scratch: DAQP's solution */
    double *result;        /* (2) out: DAQP's exit flag, its iterations */
} oink_qp;

/* The layout of one list of tasks, limits and barriers; the field order matches _KernelProblem in
 * compiled_assembly.py. */
typedef struct {
    int64_t n;           /* group nv */
    int64_t n_tasks;     /* in priority order (highest first) */
    int64_t n_levels;
    int64_t n_barriers;  /* barriers assembled here (the generic Barrier.constraint) */
    int64_t n_box;       /* box limits */
    int64_t n_K;         /* rows of K and d */
    int64_t shortcut;    /* 1: try -H^{-1} c */
    const int64_t *level_end;   /* [n_levels] one past the last task of each level */
    const int64_t *task_rows;   /* [n_tasks] rows of each task */
    const double *const *task_J;      /* [n_tasks] (rows x n) signed task Jacobian */
    const double *const *task_e;      /* [n_tasks] (rows) error */
    const double *const *task_w;      /* [n_tasks] (rows) sqrt of the costs: diag(W) */
    const double *task_params;        /* [2 n_tasks] task_gain alpha, lm_damping */
    double *A;           /* (rows_tasks x n) W J N, one block per task */
    double *b;           /* (rows_tasks) alpha W e */
    double *J_above;     /* (rows above the last level x n) stacked Jacobians J_s (rows of weight 0 zeroed
                            when weighted_nullspace) */
    double *JJt;         /* scratch (rows above)^2 */
    double *X;           /* scratch (rows above x n) */
    double *N;           /* (n x n) projector of the levels so far */
    double *H;           /* (n x n) out */
    double *c;           /* (n) out */
    double *L;           /* (n x n) scratch: Cholesky factor of H */
    double regularization; /* lambda */
    double extra_diagonal; /* added to H's diagonal (barriers assembled in Python) */
    const double *c_offset;  /* (n) added to c (barriers assembled in Python: -w dq_safe) */
    const int64_t *barrier_rows;      /* [n_barriers] */
    const double *const *barrier_h;   /* [n_barriers] (rows) h at q */
    const double *const *barrier_J;   /* [n_barriers] (rows x n) dh/dq */
    double *const *barrier_G;         /* [n_barriers] (rows x n) out: -dh/dq, rows of K */
    double *const *barrier_upper;     /* [n_barriers] (rows) out: rows of d */
    const double *barrier_params;     /* [5 n_barriers] dt * gain, safety_margin, safe_displacement_gain,
                                         safe_displacement_fade (<= 0: none), safe_displacement_max_weight
                                         (+inf: none) */
    double *barrier_weight;           /* [n_barriers] out: r / ||J_h||^2 (0 when J_h vanishes) x fade, capped */
    const double *const *box_lower;   /* [n_box] (n) */
    const double *const *box_upper;   /* [n_box] (n) */
    double *lower;       /* (n) out: the box, lower_qp[:n] */
    double *upper;       /* (n) out: d[:n] */
    double *negative_lower; /* (n) out: rows of d */
    const double *K;     /* (n_K x n) every constraint: K dq <= d */
    const double *d;     /* (n_K) */
    double *Kdq;         /* (n_K) scratch */
    double *dq;          /* (n) out: -H^{-1} c when the shortcut ran */
    double *summary;     /* (2) out: least bound of the barrier rows (+inf without rows), 1 if the box
                            has lower > upper on some joint (else 0) */
    int64_t n_frame_tasks;     /* tasks of exact type FrameTask: updated here, not in Python */
    const frame_task *frame_tasks;
    int64_t n_frame_barriers;  /* barriers of exact type PositionBarrier: updated here */
    const frame_position_barrier *frame_barriers;
    double *frame_J;           /* (6 x n) scratch */
    const double *barrier_braking; /* (1 + n) lag steps (< 0: off), per-joint braking alpha [per step^2] */
    int64_t weighted_nullspace;    /* 1: J_s keeps only the rows with a nonzero weight (solver.py docstring) */
    oink_qp *qp;                   /* oink_step solves this QP when the shortcut does not apply (NULL: it does not) */
} oink_problem;

enum {
    OINK_SHORTCUT_FEASIBLE = 0, /* dq = -H^{-1} c satisfies K dq <= d: the optimum */
    OINK_NEEDS_QP = 1,          /* H, c, rows and box are assembled; the shortcut did not apply */
    OINK_VIOLATED_BARRIER = 2,  /* a barrier row has a negative bound: the slack problem is needed */
    OINK_QP_SOLVED = 3,         /* oink_step / oink_solve_qp: DAQP solved the QP (exit flag >= 1), dq is finite */
    OINK_QP_FAILED = 4,         /* DAQP's exit flag < 1, or a non-finite dq: the workspace is set up again next time */
    OINK_QP_SETUP_FAILED = 5,   /* DAQP's setup failed (its flag in result[0]) */
    OINK_H_NOT_PD = -1,         /* Cholesky of H failed */
    OINK_NULLSPACE_NOT_PD = -2, /* Cholesky of J J^T + lambda I failed */
};

/* out (6 x n, row-major) = the frame's Jacobian in LOCAL_WORLD_ALIGNED over the group's columns:
 * the velocity of the point p fixed to the frame is v + w x p (v, w: a joint's world-frame twist), times sign. */
static void frame_jacobian(const frame_ref *f, int64_t n, double sign, double *out) {
    const double px = f->p[0], py = f->p[f->p_stride], pz = f->p[2 * f->p_stride];
    for (int64_t j = 0; j < n; ++j) {
        const double *col = f->J_world + f->columns[j] * f->J_col_stride;
        const int64_t rs = f->J_row_stride;
        const double s = sign * f->support[j];
        const double vx = col[0], vy = col[rs], vz = col[2 * rs];
        const double wx = col[3 * rs], wy = col[4 * rs], wz = col[5 * rs];
        out[0 * n + j] = s * (vx + wy * pz - wz * py);
        out[1 * n + j] = s * (vy + wz * px - wx * pz);
        out[2 * n + j] = s * (vz + wx * py - wy * px);
        out[3 * n + j] = s * wx;
        out[4 * n + j] = s * wy;
        out[5 * n + j] = s * wz;
    }
}


/* In place: e <- e_max tanh(|e| / e_max) e / |e| when e_max is finite; returns |e| before. */
static double saturate3(double *e, double e_max) {
    const double norm = sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]);
    if (isfinite(e_max) && norm > 0.0) {
        const double s = e_max * tanh(norm / e_max) / norm;
        e[0] *= s;
        e[1] *= s;
        e[2] *= s;
    }
    return norm;
}

static void update_frame_task(const frame_task *t, int64_t n) {
    const frame_ref *f = &t->frame;
    frame_jacobian(f, n, -1.0, t->J); /* J = -J_frame */
    const int64_t ps = f->p_stride, rr = f->R_row_stride, rc = f->R_col_stride;
    for (int i = 0; i < 3; ++i) t->e[i] = t->p_target[i] - f->p[i * ps];
    double M[9]; /* R_target R^T */
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            double s = 0.0;
            for (int k = 0; k < 3; ++k) s += t->R_target[3 * i + k] * f->R[j * rr + k * rc];
            M[3 * i + j] = s;
        }
    km_log3(M, t->e + 3);
    t->norms[0] = saturate3(t->e, t->max_error[0]);
    t->norms[1] = saturate3(t->e + 3, t->max_error[1]);
}

static void update_frame_barrier(const frame_position_barrier *b, int64_t n, double *scratch) {
    const frame_ref *f = &b->frame;
    frame_jacobian(f, n, 1.0, scratch); /* rows 0-2: the linear part */
    for (int64_t r = 0; r < b->rows; ++r) {
        const double *S = b->select + 3 * r;
        b->h[r] = S[0] * f->p[0] + S[1] * f->p[f->p_stride] + S[2] * f->p[2 * f->p_stride] + b->offset[r];
        for (int64_t j = 0; j < n; ++j)
            b->J[r * n + j] = S[0] * scratch[j] + S[1] * scratch[n + j] + S[2] * scratch[2 * n + j];
    }
}


/* N <- I - Js^T (Js Js^T + lambda I)^{-1} Js for the first r rows of J_above (a zeroed row adds lambda to
 * the diagonal and nothing to N: as if dropped). */
static int nullspace(oink_problem *p, int64_t r) {
    const int64_t n = p->n;
    const double *Js = p->J_above;
    for (int64_t i = 0; i < r; ++i) {
        for (int64_t j = 0; j <= i; ++j) {
            double s = 0.0;
            for (int64_t k = 0; k < n; ++k) s += Js[i * n + k] * Js[j * n + k];
            p->JJt[i * r + j] = s;
        }
        p->JJt[i * r + i] += p->regularization;
    }
    if (km_cholesky(p->JJt, r) != 0) return -1;
    memcpy(p->X, Js, (size_t)(r * n) * sizeof(double));
    km_cholesky_solve(p->JJt, r, p->X, n);
    for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j < n; ++j) {
            double s = 0.0;
            for (int64_t k = 0; k < r; ++k) s += Js[k * n + i] * p->X[k * n + j];
            p->N[i * n + j] = (i == j ? 1.0 : 0.0) - s;
        }
    }
    return 0;
}

/* A, b, J_above and the projectors; returns what H's diagonal needs from the tasks (sum of mu_k). */
static int tasks(oink_problem *p, double *damping) {
    const int64_t n = p->n;
    int64_t row = 0, task = 0;
    double mu = 0.0;
    for (int64_t level = 0; level < p->n_levels; ++level) {
        for (; task < p->level_end[level]; ++task) {
            const int64_t m = p->task_rows[task];
            const double *J = p->task_J[task], *e = p->task_e[task], *w = p->task_w[task];
            const double gain = p->task_params[2 * task], lm = p->task_params[2 * task + 1];
            double *A = p->A + row * n, *b = p->b + row;
            double bb = 0.0;
            for (int64_t i = 0; i < m; ++i) {
                if (level == 0) {
                    for (int64_t j = 0; j < n; ++j) A[i * n + j] = J[i * n + j] * w[i];
                } else { /* (J N) * w */
                    for (int64_t j = 0; j < n; ++j) {
                        double s = 0.0;
                        for (int64_t k = 0; k < n; ++k) s += J[i * n + k] * p->N[k * n + j];
                        A[i * n + j] = s * w[i];
                    }
                }
                b[i] = e[i] * w[i] * gain;
                bb += b[i] * b[i];
            }
            if (lm > 0.0) mu += lm * bb; /* mu_k = lambda_LM ||W alpha e||^2 */
            if (level + 1 < p->n_levels) {
                double *Js = p->J_above + row * n;
                if (!p->weighted_nullspace) {
                    memcpy(Js, J, (size_t)(m * n) * sizeof(double));
                } else { /* the mask W != 0 (np.not_equal: a NaN weight keeps its row) */
                    for (int64_t i = 0; i < m; ++i) {
                        if (w[i] != 0.0) memcpy(Js + i * n, J + i * n, (size_t)n * sizeof(double));
                        else memset(Js + i * n, 0, (size_t)n * sizeof(double));
                    }
                }
            }
            row += m;
        }
        if (level + 1 < p->n_levels && nullspace(p, row) != 0) return -1;
    }
    /* H = A^T A, c = A^T b (lower triangle, then mirrored) */
    for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j <= i; ++j) {
            double s = 0.0;
            for (int64_t r = 0; r < row; ++r) s += p->A[r * n + i] * p->A[r * n + j];
            p->H[i * n + j] = s;
            p->H[j * n + i] = s;
        }
        double s = 0.0;
        for (int64_t r = 0; r < row; ++r) s += p->A[r * n + i] * p->b[r];
        p->c[i] = s + p->c_offset[i];
    }
    *damping = mu;
    return 0;
}


/* The layout version of oink_problem and its parameter arrays: compiled_assembly.py refuses a library
 * built from another version (a stale build would read the arrays with the wrong strides). Bump it with
 * every change of a struct or of what an array holds. 2: barrier_params has 5 values per barrier.
 * 3: oink_problem ends with weighted_nullspace. 5: oink_qp, and oink_problem ends with qp. */
int64_t oink_layout_version(void) { return 6; }


/* G = -J_h, upper = min(dt gain h / (1 + |h|), braking bound where h >= 0) - margin, weight = r / ||J_h||^2
 * (times the fade of the least h when set, capped at the max weight: Barrier.regularization_weight);
 * returns the sum of the weights. */
static double barriers(oink_problem *p) {
    const int64_t n = p->n;
    double total = 0.0, least = INFINITY;
    for (int64_t k = 0; k < p->n_barriers; ++k) {
        const int64_t m = p->barrier_rows[k];
        const double *h = p->barrier_h[k], *J = p->barrier_J[k];
        double *G = p->barrier_G[k], *up = p->barrier_upper[k];
        const double *params = p->barrier_params + 5 * k;
        const double scale = params[0], margin = params[1], safe_gain = params[2], fade = params[3];
        const double max_weight = params[4];
        double norm2 = 0.0, h_min = INFINITY; /* h_min as np.fmin.reduce over moving rows: NaN rows skipped */
        const double lag = p->barrier_braking[0];
        const double *alpha = p->barrier_braking + 1;
        for (int64_t i = 0; i < m; ++i) {
            double a_h = 0.0, row2 = 0.0;
            for (int64_t j = 0; j < n; ++j) {
                const double v = J[i * n + j];
                G[i * n + j] = -v;
                row2 += v * v;
                if (lag >= 0.0) a_h += fabs(v) * alpha[j];
            }
            norm2 += row2;
            if (row2 > MIN_JACOBIAN_NORM2 && h[i] < h_min) h_min = h[i]; /* a row that dq moves */
            const double a = fabs(h[i]);
            double bound = h[i] / (1.0 + (a < LARGE ? a : LARGE)) * scale;
            if (lag >= 0.0 && h[i] >= 0.0) {
                const double brake = km_braking_bound(h[i], a_h, lag);
                if (brake < bound) bound = brake;
            }
            up[i] = bound - margin;
            if (up[i] < least) least = up[i];
        }
        double w = norm2 > MIN_JACOBIAN_NORM2 ? safe_gain / norm2 : 0.0;
        if (fade > 0.0 && w > 0.0) w *= km_safe_displacement_fade(h_min, fade);
        if (!(w <= max_weight)) w = max_weight;
        p->barrier_weight[k] = w;
        total += w;
    }
    p->summary[0] = least;
    return total;
}


/* The box: the largest lower and least upper bound of the box limits. */
static void box(oink_problem *p) {
    const int64_t n = p->n;
    p->summary[1] = 0.0;
    if (p->n_box == 0) return;
    memcpy(p->lower, p->box_lower[0], (size_t)n * sizeof(double));
    memcpy(p->upper, p->box_upper[0], (size_t)n * sizeof(double));
    for (int64_t k = 1; k < p->n_box; ++k) {
        const double *lo = p->box_lower[k], *up = p->box_upper[k];
        for (int64_t j = 0; j < n; ++j) {
            p->lower[j] = km_nan_max(p->lower[j], lo[j]);
            p->upper[j] = km_nan_min(p->upper[j], up[j]);
        }
    }
    double conflict = 0.0;
    for (int64_t j = 0; j < n; ++j) {
        p->negative_lower[j] = -p->lower[j];
        if (p->lower[j] > p->upper[j]) conflict = 1.0;
    }
    p->summary[1] = conflict;
}

/* dq = -H^{-1} c; 1 if K dq <= d holds on every row (a NaN fails it). */
static int shortcut(oink_problem *p, int *not_pd) {
    const int64_t n = p->n;
    memcpy(p->L, p->H, (size_t)(n * n) * sizeof(double));
    *not_pd = 0;
    if (km_cholesky(p->L, n) != 0) {
        *not_pd = 1;
        return 0;
    }
    for (int64_t j = 0; j < n; ++j) p->dq[j] = -p->c[j];
    km_cholesky_solve(p->L, n, p->dq, 1);
    int feasible = 1;
    for (int64_t i = 0; i < p->n_K; ++i) {
        double s = 0.0;
        for (int64_t j = 0; j < n; ++j) s += p->K[i * n + j] * p->dq[j];
        p->Kdq[i] = s;
        if (!(s <= p->d[i])) feasible = 0;
    }
    return feasible;
}

int oink_assemble(oink_problem *p) {
    for (int64_t k = 0; k < p->n_frame_tasks; ++k) update_frame_task(&p->frame_tasks[k], p->n);
    for (int64_t k = 0; k < p->n_frame_barriers; ++k) update_frame_barrier(&p->frame_barriers[k], p->n, p->frame_J);
    double damping = 0.0;
    if (tasks(p, &damping) != 0) return OINK_NULLSPACE_NOT_PD;
    const double weights = barriers(p);
    const double diagonal = p->regularization + damping + weights + p->extra_diagonal;
    for (int64_t j = 0; j < p->n; ++j) p->H[j * p->n + j] += diagonal;
    box(p);
    if (p->summary[0] < 0.0) return OINK_VIOLATED_BARRIER;
    if (!p->shortcut) return OINK_NEEDS_QP;
    int not_pd = 0;
    const int feasible = shortcut(p, &not_pd);
    if (not_pd) return OINK_H_NOT_PD;
    return feasible ? OINK_SHORTCUT_FEASIBLE : OINK_NEEDS_QP;
}

/* The QP of q (solver.py's _solve_qp_daqp with the daqp module): DAQP from the workspace's last active set, dq its
 * solution clipped into the box (np.maximum, np.minimum); a failed solve drops the workspace's problem. */
int oink_solve_qp(oink_qp *q) {
    int flag = 0, iterations = 0;
    const int outcome = daqp_workspace_solve(q->workspace, (int)q->n, (int)q->rows, q->H, q->c, q->A, q->upper,
                                             q->lower, q->x, &flag, &iterations);
    q->result[0] = flag;
    q->result[1] = iterations;
    if (outcome == DAQP_WORKSPACE_SETUP_FAILED) return OINK_QP_SETUP_FAILED;
    if (outcome == DAQP_WORKSPACE_SOLVED) {
        double norm2 = 0.0; /* finite unless an entry is NaN or inf (or |dq| > 1e154: no step either) */
        for (int64_t j = 0; j < q->n; ++j) {
            q->dq[j] = km_nan_min(km_nan_max(q->x[j], q->lower[j]), q->upper[j]);
            norm2 += q->dq[j] * q->dq[j];
        }
        if (isfinite(norm2)) return OINK_QP_SOLVED;
    }
    daqp_workspace_reset(q->workspace); /* no warm start from a failed solve */
    return OINK_QP_FAILED;
}

/* The step: the assembly, then the QP when the assembly needs one and p->qp is set - unless the box conflicts or a
 * barrier row assembled in Python is violated (np.min over the barrier rows < 0; a NaN row hides the others, as
 * there): those steps go back to solver.py as NEEDS_QP, which reports the conflict or solves the slack problem. */
int oink_step(oink_problem *p) {
    const int code = oink_assemble(p);
    oink_qp *q = p->qp;
    if (code != OINK_NEEDS_QP || q == NULL || p->summary[1] != 0.0) return code;
    double least = INFINITY;
    for (int64_t i = q->barrier_begin; i < q->rows; ++i) least = km_nan_min(least, q->upper[i]);
    if (least < 0.0) return code;
    return oink_solve_qp(q);
}

/* ------------------------------------------------------------------------------------------------
 * AccelerationLimit's box (acceleration_limit.py: AccelerationLimit.bounds, its numpy path, whose
 * arithmetic this mirrors joint by joint; test_acceleration_limit.py checks the two equal). In
 * command increments: the caller adds u1 and the offset. Returns the number of joints whose state
 * had left the viable set (their box is the hardest braking the bounds allow).
 * ------------------------------------------------------------------------------------------------ */
typedef struct {
    int64_t n, has_jerk, bisection_steps;
    double round_off; /* relative to alpha */
    const double *u1, *u2, *alpha, *delta, *V, *E;
    const double *d_up, *d_lo; /* distance of the previous command to the upper / lower bound (inf: none) */
    double *lo, *hi;           /* out: the admissible w = u - u1 */
} accel_box;

static double accel_travel(double u1, double w, double alpha, double delta, double E) {
    double g = 0.0, n_a = 0.0;
    if (isfinite(delta)) {
        const double wp = w > 0.0 ? w : 0.0;
        g = wp * wp / (2.0 * delta);
        n_a = ceil((w + alpha) / delta - 1e-12) - 1.0;
        if (n_a < 0.0) n_a = 0.0;
    }
    const double P = u1 + w + g;
    if (!(P > 0.0)) return E;
    return n_a * P + (P + alpha / 2.0) * (P + alpha / 2.0) / (2.0 * alpha) + E;
}

static double accel_velocity_room(double u1, double V, double delta) {
    const double slack = V - u1 > 0.0 ? V - u1 : 0.0;
    if (!isfinite(delta)) return slack;
    return sqrt(delta * delta + 2.0 * delta * slack) - delta;
}

static double accel_position_room(const accel_box *b, double u1, double w_lo, double w_hi, double d,
                                  double alpha, double delta, double E) {
    if (!isfinite(d)) return INFINITY;
    if (!b->has_jerk) {
        const double dn = d > 0.0 ? d : 0.0;
        const double u_max = dn >= alpha / 8.0 ? sqrt(2.0 * alpha * dn) - alpha / 2.0 : 0.0;
        return u_max - u1;
    }
    if (accel_travel(u1, w_hi, alpha, delta, E) <= d) return INFINITY;
    const int ok_lo = accel_travel(u1, w_lo, alpha, delta, E) <= d + b->round_off * alpha;
    double a = w_lo, c = w_hi;
    for (int64_t k = 0; k < b->bisection_steps; ++k) {
        const double m = 0.5 * (a + c);
        if (accel_travel(u1, m, alpha, delta, E) <= d) a = m;
        else c = m;
    }
    return ok_lo ? a : w_lo - 1.0;
}

int64_t oink_acceleration_box(const accel_box *b) {
    int64_t nonviable = 0;
    for (int64_t j = 0; j < b->n; ++j) {
        const double u1 = b->u1[j], w_p = u1 - b->u2[j];
        const double alpha = b->alpha[j], delta = b->delta[j], E = b->E[j];
        const double w_hi = fmin(alpha, w_p + delta), w_lo = fmax(-alpha, w_p - delta);
        double hi = w_hi, lo = w_lo;
        if (b->has_jerk) {
            hi = fmin(hi, accel_velocity_room(u1, b->V[j], delta));
            lo = fmax(lo, -accel_velocity_room(-u1, b->V[j], delta));
        }
        hi = fmin(hi, accel_position_room(b, u1, w_lo, w_hi, b->d_up[j], alpha, delta, E));
        lo = fmax(lo, -accel_position_room(b, -u1, -w_hi, -w_lo, b->d_lo[j], alpha, delta, E));
        if (lo > hi && lo <= hi + b->round_off * alpha) hi = lo; /* round-off, not a conflict */
        if (lo > hi) ++nonviable;
        if (u1 == 0.0 && w_p == 0.0) { /* at rest: staying there is always viable (no goal, no motion) */
            lo = fmin(lo, 0.0);
            hi = fmax(hi, 0.0);
        }
        if (lo > hi) {
            const double best = hi < w_lo ? w_lo : (lo > w_hi ? w_hi : 0.5 * (lo + hi));
            lo = hi = best;
        }
        b->lo[j] = lo;
        b->hi[j] = hi;
    }
    return nonviable;
}

/* AccelerationLimit.bounds around its box (acceleration_limit.py, its numpy operations in the same order): each
 * bounded joint's distance of the previous command q + offset to its limits, the least of it and the following
 * room (what the box brakes for), the box (oink_acceleration_box, writing b->lo, b->hi), then the step's bounds
 * u1 + box + offset. Returns the box's count of non-viable joints. */
typedef struct {
    int64_t n_bounded;
    const int64_t *bq_q, *bq_v; /* per bounded joint: its full-q index, its group v index */
    const double *q_min, *q_max, *offset; /* per group joint */
    double *d_up, *d_lo;        /* per group joint: the distance to the limits (inf for an unbounded one) */
    const double *room_up, *room_lo; /* per group joint: the following room (inf: none) */
    double *lower, *upper;      /* per group joint, out: the step's bounds */
} accel_bounds;

int64_t oink_acceleration_bounds(const accel_box *b, const accel_bounds *s, const double *q) {
    for (int64_t k = 0; k < s->n_bounded; ++k) {
        const int64_t v = s->bq_v[k];
        const double x = q[s->bq_q[k]] + s->offset[v];
        s->d_up[v] = s->q_max[v] - x;
        s->d_lo[v] = x - s->q_min[v];
    }
    double *d_up_all = (double *)b->d_up, *d_lo_all = (double *)b->d_lo; /* the box reads them */
    for (int64_t j = 0; j < b->n; ++j) {
        d_up_all[j] = km_nan_min(s->d_up[j], s->room_up[j]);
        d_lo_all[j] = km_nan_min(s->d_lo[j], s->room_lo[j]);
    }
    const int64_t nonviable = oink_acceleration_box(b);
    for (int64_t j = 0; j < b->n; ++j) {
        double lower = b->u1[j] + b->lo[j], upper = b->u1[j] + b->hi[j];
        lower += s->offset[j];
        upper += s->offset[j];
        s->lower[j] = lower;
        s->upper[j] = upper;
    }
    return nonviable;
}

/* The layout of every struct the Python side builds with ctypes: per struct, its size then each field's
 * offset and size, in declaration order; oink_layout writes them (count returned), oink_layout_names says whose
 * ("struct:field,field;..."), for the loader to compare with its ctypes.Structure mirrors, by name and
 * offset, before any call (compiled_library.check_layout). Generated from the typedefs above
 * (scripts/kernel_layout.py): regenerate when a struct changes. */
const char *oink_layout_names(void) {
    return
        "frame_ref:J_world,J_row_stride,J_col_stride,p,p_stride,R,R_row_stride,R_col_stride,columns,support;"
        "frame_task:frame,p_target,R_target,max_error,J,e,norms;frame_position_barrier:frame,rows,select,"
        "offset,h,J;oink_qp:workspace,n,rows,barrier_begin,H,c,A,upper,lower,dq,x,result;oink_problem:n,"
        "n_tasks,n_levels,n_barriers,n_box,n_K,shortcut,level_end,task_rows,task_J,task_e,task_w,task_params,"
        "A,b,J_above,JJt,X,N,H,c,L,regularization,extra_diagonal,c_offset,barrier_rows,barrier_h,barrier_J,"
        "barrier_G,barrier_upper,barrier_params,barrier_weight,box_lower,box_upper,lower,upper,"
        "negative_lower,K,d,Kdq,dq,summary,n_frame_tasks,frame_tasks,n_frame_barriers,frame_barriers,frame_J,"
        "barrier_braking,weighted_nullspace,qp;accel_box:n,has_jerk,bisection_steps,round_off,u1,u2,alpha,"
        "delta,V,E,d_up,d_lo,lo,hi;accel_bounds:n_bounded,bq_q,bq_v,q_min,q_max,offset,d_up,d_lo,room_up,"
        "room_lo,lower,upper";
}

int64_t oink_layout(int64_t *out, int64_t capacity) {
    const int64_t layout[] = {
        sizeof(frame_ref), offsetof(frame_ref, J_world), sizeof(((frame_ref *)0)->J_world),
        offsetof(frame_ref, J_row_stride), sizeof(((frame_ref *)0)->J_row_stride),
        offsetof(frame_ref, J_col_stride), sizeof(((frame_ref *)0)->J_col_stride), offsetof(frame_ref, p),
        sizeof(((frame_ref *)0)->p), offsetof(frame_ref, p_stride), sizeof(((frame_ref *)0)->p_stride),
        offsetof(frame_ref, R), sizeof(((frame_ref *)0)->R), offsetof(frame_ref, R_row_stride),
        sizeof(((frame_ref *)0)->R_row_stride), offsetof(frame_ref, R_col_stride),
        sizeof(((frame_ref *)0)->R_col_stride), offsetof(frame_ref, columns), sizeof(((frame_ref *)0)->columns),
        offsetof(frame_ref, support), sizeof(((frame_ref *)0)->support),
        sizeof(frame_task), offsetof(frame_task, frame), sizeof(((frame_task *)0)->frame),
        offsetof(frame_task, p_target), sizeof(((frame_task *)0)->p_target), offsetof(frame_task, R_target),
        sizeof(((frame_task *)0)->R_target), offsetof(frame_task, max_error), sizeof(((frame_task *)0)->max_error),
        offsetof(frame_task, J), sizeof(((frame_task *)0)->J), offsetof(frame_task, e),
        sizeof(((frame_task *)0)->e), offsetof(frame_task, norms), sizeof(((frame_task *)0)->norms),
        sizeof(frame_position_barrier), offsetof(frame_position_barrier, frame),
        sizeof(((frame_position_barrier *)0)->frame), offsetof(frame_position_barrier, rows),
        sizeof(((frame_position_barrier *)0)->rows), offsetof(frame_position_barrier, select),
        sizeof(((frame_position_barrier *)0)->select), offsetof(frame_position_barrier, offset),
        sizeof(((frame_position_barrier *)0)->offset), offsetof(frame_position_barrier, h),
        sizeof(((frame_position_barrier *)0)->h), offsetof(frame_position_barrier, J),
        sizeof(((frame_position_barrier *)0)->J),
        sizeof(oink_qp), offsetof(oink_qp, workspace), sizeof(((oink_qp *)0)->workspace), offsetof(oink_qp, n),
        sizeof(((oink_qp *)0)->n), offsetof(oink_qp, rows), sizeof(((oink_qp *)0)->rows),
        offsetof(oink_qp, barrier_begin), sizeof(((oink_qp *)0)->barrier_begin), offsetof(oink_qp, H),
        sizeof(((oink_qp *)0)->H), offsetof(oink_qp, c), sizeof(((oink_qp *)0)->c), offsetof(oink_qp, A),
        sizeof(((oink_qp *)0)->A), offsetof(oink_qp, upper), sizeof(((oink_qp *)0)->upper),
        offsetof(oink_qp, lower), sizeof(((oink_qp *)0)->lower), offsetof(oink_qp, dq), sizeof(((oink_qp *)0)->dq),
        offsetof(oink_qp, x), sizeof(((oink_qp *)0)->x), offsetof(oink_qp, result), sizeof(((oink_qp *)0)->result),
        sizeof(oink_problem), offsetof(oink_problem, n), sizeof(((oink_problem *)0)->n),
        offsetof(oink_problem, n_tasks), sizeof(((oink_problem *)0)->n_tasks), offsetof(oink_problem, n_levels),
        sizeof(((oink_problem *)0)->n_levels), offsetof(oink_problem, n_barriers),
        sizeof(((oink_problem *)0)->n_barriers), offsetof(oink_problem, n_box), sizeof(((oink_problem *)0)->n_box),
        offsetof(oink_problem, n_K), sizeof(((oink_problem *)0)->n_K), offsetof(oink_problem, shortcut),
        sizeof(((oink_problem *)0)->shortcut), offsetof(oink_problem, level_end),
        sizeof(((oink_problem *)0)->level_end), offsetof(oink_problem, task_rows),
        sizeof(((oink_problem *)0)->task_rows), offsetof(oink_problem, task_J), sizeof(((oink_problem *)0)->task_J),
        offsetof(oink_problem, task_e), sizeof(((oink_problem *)0)->task_e), offsetof(oink_problem, task_w),
        sizeof(((oink_problem *)0)->task_w), offsetof(oink_problem, task_params),
        sizeof(((oink_problem *)0)->task_params), offsetof(oink_problem, A), sizeof(((oink_problem *)0)->A),
        offsetof(oink_problem, b), sizeof(((oink_problem *)0)->b), offsetof(oink_problem, J_above),
        sizeof(((oink_problem *)0)->J_above), offsetof(oink_problem, JJt), sizeof(((oink_problem *)0)->JJt),
        offsetof(oink_problem, X), sizeof(((oink_problem *)0)->X), offsetof(oink_problem, N),
        sizeof(((oink_problem *)0)->N), offsetof(oink_problem, H), sizeof(((oink_problem *)0)->H),
        offsetof(oink_problem, c), sizeof(((oink_problem *)0)->c), offsetof(oink_problem, L),
        sizeof(((oink_problem *)0)->L), offsetof(oink_problem, regularization),
        sizeof(((oink_problem *)0)->regularization), offsetof(oink_problem, extra_diagonal),
        sizeof(((oink_problem *)0)->extra_diagonal), offsetof(oink_problem, c_offset),
        sizeof(((oink_problem *)0)->c_offset), offsetof(oink_problem, barrier_rows),
        sizeof(((oink_problem *)0)->barrier_rows), offsetof(oink_problem, barrier_h),
        sizeof(((oink_problem *)0)->barrier_h), offsetof(oink_problem, barrier_J),
        sizeof(((oink_problem *)0)->barrier_J), offsetof(oink_problem, barrier_G),
        sizeof(((oink_problem *)0)->barrier_G), offsetof(oink_problem, barrier_upper),
        sizeof(((oink_problem *)0)->barrier_upper), offsetof(oink_problem, barrier_params),
        sizeof(((oink_problem *)0)->barrier_params), offsetof(oink_problem, barrier_weight),
        sizeof(((oink_problem *)0)->barrier_weight), offsetof(oink_problem, box_lower),
        sizeof(((oink_problem *)0)->box_lower), offsetof(oink_problem, box_upper),
        sizeof(((oink_problem *)0)->box_upper), offsetof(oink_problem, lower), sizeof(((oink_problem *)0)->lower),
        offsetof(oink_problem, upper), sizeof(((oink_problem *)0)->upper), offsetof(oink_problem, negative_lower),
        sizeof(((oink_problem *)0)->negative_lower), offsetof(oink_problem, K), sizeof(((oink_problem *)0)->K),
        offsetof(oink_problem, d), sizeof(((oink_problem *)0)->d), offsetof(oink_problem, Kdq),
        sizeof(((oink_problem *)0)->Kdq), offsetof(oink_problem, dq), sizeof(((oink_problem *)0)->dq),
        offsetof(oink_problem, summary), sizeof(((oink_problem *)0)->summary),
        offsetof(oink_problem, n_frame_tasks), sizeof(((oink_problem *)0)->n_frame_tasks),
        offsetof(oink_problem, frame_tasks), sizeof(((oink_problem *)0)->frame_tasks),
        offsetof(oink_problem, n_frame_barriers), sizeof(((oink_problem *)0)->n_frame_barriers),
        offsetof(oink_problem, frame_barriers), sizeof(((oink_problem *)0)->frame_barriers),
        offsetof(oink_problem, frame_J), sizeof(((oink_problem *)0)->frame_J),
        offsetof(oink_problem, barrier_braking), sizeof(((oink_problem *)0)->barrier_braking),
        offsetof(oink_problem, weighted_nullspace), sizeof(((oink_problem *)0)->weighted_nullspace),
        offsetof(oink_problem, qp), sizeof(((oink_problem *)0)->qp),
        sizeof(accel_box), offsetof(accel_box, n), sizeof(((accel_box *)0)->n), offsetof(accel_box, has_jerk),
        sizeof(((accel_box *)0)->has_jerk), offsetof(accel_box, bisection_steps),
        sizeof(((accel_box *)0)->bisection_steps), offsetof(accel_box, round_off),
        sizeof(((accel_box *)0)->round_off), offsetof(accel_box, u1), sizeof(((accel_box *)0)->u1),
        offsetof(accel_box, u2), sizeof(((accel_box *)0)->u2), offsetof(accel_box, alpha),
        sizeof(((accel_box *)0)->alpha), offsetof(accel_box, delta), sizeof(((accel_box *)0)->delta),
        offsetof(accel_box, V), sizeof(((accel_box *)0)->V), offsetof(accel_box, E), sizeof(((accel_box *)0)->E),
        offsetof(accel_box, d_up), sizeof(((accel_box *)0)->d_up), offsetof(accel_box, d_lo),
        sizeof(((accel_box *)0)->d_lo), offsetof(accel_box, lo), sizeof(((accel_box *)0)->lo),
        offsetof(accel_box, hi), sizeof(((accel_box *)0)->hi),
        sizeof(accel_bounds), offsetof(accel_bounds, n_bounded), sizeof(((accel_bounds *)0)->n_bounded),
        offsetof(accel_bounds, bq_q), sizeof(((accel_bounds *)0)->bq_q), offsetof(accel_bounds, bq_v),
        sizeof(((accel_bounds *)0)->bq_v), offsetof(accel_bounds, q_min), sizeof(((accel_bounds *)0)->q_min),
        offsetof(accel_bounds, q_max), sizeof(((accel_bounds *)0)->q_max), offsetof(accel_bounds, offset),
        sizeof(((accel_bounds *)0)->offset), offsetof(accel_bounds, d_up), sizeof(((accel_bounds *)0)->d_up),
        offsetof(accel_bounds, d_lo), sizeof(((accel_bounds *)0)->d_lo), offsetof(accel_bounds, room_up),
        sizeof(((accel_bounds *)0)->room_up), offsetof(accel_bounds, room_lo), sizeof(((accel_bounds *)0)->room_lo),
        offsetof(accel_bounds, lower), sizeof(((accel_bounds *)0)->lower), offsetof(accel_bounds, upper),
        sizeof(((accel_bounds *)0)->upper),
    };
    const int64_t count = (int64_t)(sizeof(layout) / sizeof(layout[0]));
    for (int64_t i = 0; i < count && i < capacity; ++i) out[i] = layout[i];
    return count;
}
