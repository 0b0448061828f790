/* The control loop's compiled parts (loaded with ctypes by core/control/compiled_guard.py; a plain C shared library):
 * the command guard's apply (command_guard.py, CommandGuard.apply), the last line of the control tick, for a group
 * whose joints each have one coordinate (revolute, prismatic: q ⊖ q' = q - q'; a continuous joint's (cos, sin) keeps
 * the Python path). The same operations in the same order as the numpy code, so the two give the same bits; the
 * Python path is the reference (test_command_guard.py holds them equal). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    int64_t n;                    /* the group's joints (one q, one v each) */
    int64_t n_bounded;            /* of them, those with position limits */
    int64_t n_others;             /* configuration entries outside the group */
    int64_t bounded_acceleration; /* 1: the acceleration (and jerk) bounds apply */
    const int64_t *q_index;       /* per group joint: its index in the full q */
    const int64_t *bounded_q;     /* per bounded joint: its index in the full q */
    const double *q_min, *q_max;  /* per bounded joint [rad or m] */
    const int64_t *others_q;      /* full-q indices outside the group: taken from q_next */
    const double *max_step, *max_dstep, *max_ddstep; /* per joint: v_max dt, a_max dt^2, j_max dt^3 (with slack) */
    double *u1, *u2;              /* per joint: the last two command increments, updated */
    double *undo_u1, *undo_u2;    /* per joint: u1, u2 before this apply (command_not_sent) */
    double *q;                    /* scratch, full nq */
    double *last;                 /* full nq: the previous command, updated to the new one */
} ctl_command_guard;

/* The command for q_next (full nq) into g->last: each joint's step from the previous command cut to max_step and,
 * with bounded_acceleration, to the increments' acceleration and jerk boxes (a non-finite step is 0), clipped into
 * the position limits; u1, u2 (and their undo copies) updated. Returns how many of the two checks changed something
 * (the step cut, the limits clipped): CommandGuard counts them. */
int64_t ctl_command_guard_apply(const ctl_command_guard *g, const double *q_next, int64_t nq) {
    int64_t cut_any = 0, clipped = 0;
    double *q = g->q, *last = g->last;
    for (int64_t k = 0; k < nq; ++k) q[k] = last[k];
    for (int64_t i = 0; i < g->n; ++i) {
        const int64_t qi = g->q_index[i];
        const double d = q_next[qi] - last[qi];
        double c = d;  /* np.minimum(np.maximum(d, -m), m): a NaN stays NaN */
        if (c < -g->max_step[i]) c = -g->max_step[i];
        if (c > g->max_step[i]) c = g->max_step[i];
        if (g->bounded_acceleration) {
            const double u1 = g->u1[i], center = 2.0 * u1 - g->u2[i];
            const double lo1 = u1 - g->max_dstep[i], hi1 = u1 + g->max_dstep[i];
            if (c < lo1) c = lo1;
            if (c > hi1) c = hi1;
            const double lo2 = center - g->max_ddstep[i], hi2 = center + g->max_ddstep[i];
            if (c < lo2) c = lo2;
            if (c > hi2) c = hi2;
        }
        if (c != d || !isfinite(d)) cut_any = 1;
        if (!isfinite(c)) c = 0.0;
        q[qi] = last[qi] + c;
    }
    for (int64_t k = 0; k < g->n_others; ++k) q[g->others_q[k]] = q_next[g->others_q[k]];
    for (int64_t b = 0; b < g->n_bounded; ++b) {
        const int64_t qi = g->bounded_q[b];
        const double x = q[qi];
        double y = x;
        if (y < g->q_min[b]) y = g->q_min[b];
        if (y > g->q_max[b]) y = g->q_max[b];
        if (y != x) clipped = 1;
        q[qi] = y;
    }
    for (int64_t i = 0; i < g->n; ++i) {
        const int64_t qi = g->q_index[i];
        g->undo_u1[i] = g->u1[i];
        g->undo_u2[i] = g->u2[i];
        g->u2[i] = g->u1[i];
        g->u1[i] = q[qi] - last[qi];
    }
    for (int64_t k = 0; k < nq; ++k) last[k] = q[k];
    return cut_any + clipped;
}

/* The layout of every struct the Python side builds with ctypes: per struct, its size then each field's
 * offset and size, in declaration order; ctl_layout writes them (count returned), ctl_layout_names says whose
 * ("struct:field,field;..."), for the loader to compare with its ctypes.Structure mirrors, by name and
 * offset, before any call (compiled_library.check_layout). Generated from the typedefs above
 * (scripts/kernel_layout.py): regenerate when a struct changes. */
const char *ctl_layout_names(void) {
    return
        "ctl_command_guard:n,n_bounded,n_others,bounded_acceleration,q_index,bounded_q,q_min,q_max,others_q,"
        "max_step,max_dstep,max_ddstep,u1,u2,undo_u1,undo_u2,q,last";
}

int64_t ctl_layout(int64_t *out, int64_t capacity) {
    const int64_t layout[] = {
        sizeof(ctl_command_guard), offsetof(ctl_command_guard, n), sizeof(((ctl_command_guard *)0)->n),
        offsetof(ctl_command_guard, n_bounded), sizeof(((ctl_command_guard *)0)->n_bounded),
        offsetof(ctl_command_guard, n_others), sizeof(((ctl_command_guard *)0)->n_others),
        offsetof(ctl_command_guard, bounded_acceleration), sizeof(((ctl_command_guard *)0)->bounded_acceleration),
        offsetof(ctl_command_guard, q_index), sizeof(((ctl_command_guard *)0)->q_index),
        offsetof(ctl_command_guard, bounded_q), sizeof(((ctl_command_guard *)0)->bounded_q),
        offsetof(ctl_command_guard, q_min), sizeof(((ctl_command_guard *)0)->q_min),
        offsetof(ctl_command_guard, q_max), sizeof(((ctl_command_guard *)0)->q_max),
        offsetof(ctl_command_guard, others_q), sizeof(((ctl_command_guard *)0)->others_q),
        offsetof(ctl_command_guard, max_step), sizeof(((ctl_command_guard *)0)->max_step),
        offsetof(ctl_command_guard, max_dstep), sizeof(((ctl_command_guard *)0)->max_dstep),
        offsetof(ctl_command_guard, max_ddstep), sizeof(((ctl_command_guard *)0)->max_ddstep),
        offsetof(ctl_command_guard, u1), sizeof(((ctl_command_guard *)0)->u1), offsetof(ctl_command_guard, u2),
        sizeof(((ctl_command_guard *)0)->u2), offsetof(ctl_command_guard, undo_u1),
        sizeof(((ctl_command_guard *)0)->undo_u1), offsetof(ctl_command_guard, undo_u2),
        sizeof(((ctl_command_guard *)0)->undo_u2), offsetof(ctl_command_guard, q),
        sizeof(((ctl_command_guard *)0)->q), offsetof(ctl_command_guard, last),
        sizeof(((ctl_command_guard *)0)->last),
    };
    const int64_t count = (int64_t)(sizeof(layout) / sizeof(layout[0]));
    for (int64_t i = 0; i < count && i < capacity; ++i) out[i] = layout[i];
    return count;
}
