/* The control loop's compiled parts (loaded with ctypes by core/control/compiled_control.py; a plain C shared library):
 * the command guard's apply (command_guard.py, CommandGuard.apply), the last line of the control tick, and the start
 * of a commanded step (stream_limits.py), for a group whose joints each have one coordinate (revolute, prismatic:
 * q ⊖ q' = q - q'; a continuous joint's (cos, sin) keeps the Python path); and the checks of a /joint_states
 * measurement (state_tracker.py). The same operations in the same order as the numpy code, so the two give the same
 * values; the Python paths are the reference (test_command_guard.py, test_stream_limits.py, test_state_tracker.py). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "kernel_math.h"

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

typedef struct {
    int64_t n;                    /* the group's joints (one q, one v each) */
    int64_t n_others;             /* configuration entries outside the group */
    const int64_t *q_index;       /* per group joint: its index in the full q */
    const int64_t *others_q;      /* full-q indices outside the group: measured */
    const double *measured;       /* full nq: the measurement */
    const double *last;           /* full nq: the previous command */
    double *q;                    /* full nq, out: where the step linearizes (the previous command) */
    double *offset;               /* per joint, out: previous command - measured */
    double max_error;             /* [rad or m] the following-error leash (FollowingErrorLimit.max_error) */
    double *follow_lower, *follow_upper; /* per joint, out: FollowingErrorLimit's bounds */
    int64_t has_accel;            /* 0: no acceleration limit (the fields below are unused) */
    double *room_up, *room_lo;    /* per joint, out when max_error is finite: AccelerationLimit's following room */
    const double *u1_in, *u2_in;  /* per joint: the command stream's last two increments (the guard's) */
    double *u1, *u2, *accel_offset; /* per joint, out: AccelerationLimit's history (offset 0: from the command) */
    double *reach_lower, *reach_upper, *rest; /* per joint, out: its reachable increments, the one nearest rest */
    const double *alpha, *delta;  /* per joint: its acceleration and jerk steps */
} ctl_stream_start;


/* StreamLimits.start_state under commanded feedback (stream_limits.py), its numpy operations in the same order:
 * the step linearizes at the previous command (the joints outside the group measured), the following-error limit's
 * bounds from offset = command - measured, the acceleration limit's following room (when max_error is finite), its
 * history (u1, u2, offset 0) and reachable increments, and the following bounds widened to the increment nearest to
 * rest. */
void ctl_stream_start_commanded(const ctl_stream_start *s, int64_t nq) {
    for (int64_t k = 0; k < nq; ++k) s->q[k] = s->last[k];
    for (int64_t k = 0; k < s->n_others; ++k) s->q[s->others_q[k]] = s->measured[s->others_q[k]];
    const double e = s->max_error;
    for (int64_t i = 0; i < s->n; ++i) {
        const int64_t qi = s->q_index[i];
        const double offset = s->last[qi] - s->measured[qi];
        s->offset[i] = offset;
        s->follow_lower[i] = km_nan_min(-e - offset, 0.0);
        s->follow_upper[i] = km_nan_max(e - offset, 0.0);
        if (!s->has_accel) continue;
        if (isfinite(e)) {
            s->room_up[i] = e - offset;
            s->room_lo[i] = e + offset;
        }
        const double u1 = s->u1_in[i], u2 = s->u2_in[i], w_p = u1 - u2;
        s->u1[i] = u1;
        s->u2[i] = u2;
        s->accel_offset[i] = 0.0;
        double lo = km_nan_max(w_p - s->delta[i], -s->alpha[i]), hi = km_nan_min(w_p + s->delta[i], s->alpha[i]);
        lo += u1;
        hi += u1;
        lo += 0.0;  /* += offset (0.0), as the numpy path: a -0.0 becomes +0.0 there too */
        hi += 0.0;
        s->reach_lower[i] = lo;
        s->reach_upper[i] = hi;
        const double rest = km_nan_min(km_nan_max(0.0, lo), hi);  /* nearest_to_rest: offset 0 clipped into [lo, hi] */
        s->rest[i] = rest;
        s->follow_lower[i] = km_nan_min(s->follow_lower[i], rest);
        s->follow_upper[i] = km_nan_max(s->follow_upper[i], rest);
    }
}

typedef struct {
    int64_t nq;                   /* the configuration's size */
    int64_t n_checked;            /* the group's bounded joints: refused beyond their limits +- the tolerance */
    int64_t n_clipped;            /* every bounded scalar joint of the model: clipped into its limits */
    int64_t n_rest;               /* the group's configuration entries (the rest clock) */
    const int64_t *checked_q;     /* per checked joint: its full-q index */
    const double *checked_min, *checked_max; /* per checked joint: its limits widened by the tolerance */
    const int64_t *clipped_q;     /* per clipped joint: its full-q index */
    const double *clipped_min, *clipped_max;
    const int64_t *rest_q;        /* per group entry: its full-q index */
    double *incoming;             /* full nq: the measurement offered (clipped in place when taken) */
    double *measured;             /* full nq, out: the measurement taken */
    double *rest_anchor, *rest_now, *rest_diff; /* per group entry: the rest clock's anchor and scratch */
    double rest_tolerance;        /* [rad or m] */
    double now;                   /* [s] the measurement's time */
    double still_since;           /* [s] in/out: the rest clock's start (inf: no run yet) */
} ctl_state_accept;

/* StateTracker.accept (state_tracker.py), its numpy operations in the same order, for a measurement it takes: the
 * group's bounded joints within their widened limits and every coordinate finite, then every bounded joint clipped
 * into its limits, the measurement taken and the rest clock advanced. Returns 0 when taken; 1 when refused, with
 * nothing written (the caller's Python path then says why and counts it). */
int64_t ctl_state_accept_measurement(ctl_state_accept *s) {
    double *q = s->incoming;
    for (int64_t k = 0; k < s->n_checked; ++k) {
        const double x = q[s->checked_q[k]];
        if (!(x >= s->checked_min[k] && x <= s->checked_max[k])) return 1; /* NaN fails both */
    }
    for (int64_t k = 0; k < s->nq; ++k)
        if (!isfinite(q[k])) return 1;
    for (int64_t k = 0; k < s->n_clipped; ++k) {
        const int64_t i = s->clipped_q[k];
        double x = q[i]; /* np.minimum(np.maximum(x, lo), hi) on finite values */
        if (x < s->clipped_min[k]) x = s->clipped_min[k];
        if (x > s->clipped_max[k]) x = s->clipped_max[k];
        q[i] = x;
    }
    for (int64_t k = 0; k < s->nq; ++k) s->measured[k] = q[k];
    double largest = -INFINITY;
    for (int64_t k = 0; k < s->n_rest; ++k) {
        s->rest_now[k] = q[s->rest_q[k]];
        s->rest_diff[k] = fabs(s->rest_now[k] - s->rest_anchor[k]);
        if (s->rest_diff[k] > largest) largest = s->rest_diff[k];
    }
    if (!isfinite(s->still_since) || largest > s->rest_tolerance) {
        for (int64_t k = 0; k < s->n_rest; ++k) s->rest_anchor[k] = s->rest_now[k];
        s->still_since = s->now;
    }
    return 0;
}

/* The layout of every struct the Python side builds with ctypes: per struct, its size then each field's
 * offset and size, in declaration order; ctl_layout writes them (count returned), ctl_layout_names says whose
 * ("struct:field,field;..."), for the loader to compare with its ctypes.Structure mirrors, by name and
 * offset, before any call (compiled_library.check_layout). Generated from the typedefs above
 * (scripts/kernel_layout.py): regenerate when a struct changes. */
const char *ctl_layout_names(void) {
    return
        "ctl_command_guard:n,n_bounded,n_others,bounded_acceleration,q_index,bounded_q,q_min,q_max,others_q,"
        "max_step,max_dstep,max_ddstep,u1,u2,undo_u1,undo_u2,q,last;ctl_stream_start:n,n_others,q_index,"
        "others_q,measured,last,q,offset,max_error,follow_lower,follow_upper,has_accel,room_up,room_lo,u1_in,"
        "u2_in,u1,u2,accel_offset,reach_lower,reach_upper,rest,alpha,delta;ctl_state_accept:nq,n_checked,"
        "n_clipped,n_rest,checked_q,checked_min,checked_max,clipped_q,clipped_min,clipped_max,rest_q,"
        "incoming,measured,rest_anchor,rest_now,rest_diff,rest_tolerance,now,still_since";
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
        sizeof(ctl_stream_start), offsetof(ctl_stream_start, n), sizeof(((ctl_stream_start *)0)->n),
        offsetof(ctl_stream_start, n_others), sizeof(((ctl_stream_start *)0)->n_others),
        offsetof(ctl_stream_start, q_index), sizeof(((ctl_stream_start *)0)->q_index),
        offsetof(ctl_stream_start, others_q), sizeof(((ctl_stream_start *)0)->others_q),
        offsetof(ctl_stream_start, measured), sizeof(((ctl_stream_start *)0)->measured),
        offsetof(ctl_stream_start, last), sizeof(((ctl_stream_start *)0)->last), offsetof(ctl_stream_start, q),
        sizeof(((ctl_stream_start *)0)->q), offsetof(ctl_stream_start, offset),
        sizeof(((ctl_stream_start *)0)->offset), offsetof(ctl_stream_start, max_error),
        sizeof(((ctl_stream_start *)0)->max_error), offsetof(ctl_stream_start, follow_lower),
        sizeof(((ctl_stream_start *)0)->follow_lower), offsetof(ctl_stream_start, follow_upper),
        sizeof(((ctl_stream_start *)0)->follow_upper), offsetof(ctl_stream_start, has_accel),
        sizeof(((ctl_stream_start *)0)->has_accel), offsetof(ctl_stream_start, room_up),
        sizeof(((ctl_stream_start *)0)->room_up), offsetof(ctl_stream_start, room_lo),
        sizeof(((ctl_stream_start *)0)->room_lo), offsetof(ctl_stream_start, u1_in),
        sizeof(((ctl_stream_start *)0)->u1_in), offsetof(ctl_stream_start, u2_in),
        sizeof(((ctl_stream_start *)0)->u2_in), offsetof(ctl_stream_start, u1), sizeof(((ctl_stream_start *)0)->u1),
        offsetof(ctl_stream_start, u2), sizeof(((ctl_stream_start *)0)->u2),
        offsetof(ctl_stream_start, accel_offset), sizeof(((ctl_stream_start *)0)->accel_offset),
        offsetof(ctl_stream_start, reach_lower), sizeof(((ctl_stream_start *)0)->reach_lower),
        offsetof(ctl_stream_start, reach_upper), sizeof(((ctl_stream_start *)0)->reach_upper),
        offsetof(ctl_stream_start, rest), sizeof(((ctl_stream_start *)0)->rest), offsetof(ctl_stream_start, alpha),
        sizeof(((ctl_stream_start *)0)->alpha), offsetof(ctl_stream_start, delta),
        sizeof(((ctl_stream_start *)0)->delta),
        sizeof(ctl_state_accept), offsetof(ctl_state_accept, nq), sizeof(((ctl_state_accept *)0)->nq),
        offsetof(ctl_state_accept, n_checked), sizeof(((ctl_state_accept *)0)->n_checked),
        offsetof(ctl_state_accept, n_clipped), sizeof(((ctl_state_accept *)0)->n_clipped),
        offsetof(ctl_state_accept, n_rest), sizeof(((ctl_state_accept *)0)->n_rest),
        offsetof(ctl_state_accept, checked_q), sizeof(((ctl_state_accept *)0)->checked_q),
        offsetof(ctl_state_accept, checked_min), sizeof(((ctl_state_accept *)0)->checked_min),
        offsetof(ctl_state_accept, checked_max), sizeof(((ctl_state_accept *)0)->checked_max),
        offsetof(ctl_state_accept, clipped_q), sizeof(((ctl_state_accept *)0)->clipped_q),
        offsetof(ctl_state_accept, clipped_min), sizeof(((ctl_state_accept *)0)->clipped_min),
        offsetof(ctl_state_accept, clipped_max), sizeof(((ctl_state_accept *)0)->clipped_max),
        offsetof(ctl_state_accept, rest_q), sizeof(((ctl_state_accept *)0)->rest_q),
        offsetof(ctl_state_accept, incoming), sizeof(((ctl_state_accept *)0)->incoming),
        offsetof(ctl_state_accept, measured), sizeof(((ctl_state_accept *)0)->measured),
        offsetof(ctl_state_accept, rest_anchor), sizeof(((ctl_state_accept *)0)->rest_anchor),
        offsetof(ctl_state_accept, rest_now), sizeof(((ctl_state_accept *)0)->rest_now),
        offsetof(ctl_state_accept, rest_diff), sizeof(((ctl_state_accept *)0)->rest_diff),
        offsetof(ctl_state_accept, rest_tolerance), sizeof(((ctl_state_accept *)0)->rest_tolerance),
        offsetof(ctl_state_accept, now), sizeof(((ctl_state_accept *)0)->now),
        offsetof(ctl_state_accept, still_since), sizeof(((ctl_state_accept *)0)->still_since),
    };
    const int64_t count = (int64_t)(sizeof(layout) / sizeof(layout[0]));
    for (int64_t i = 0; i < count && i < capacity; ++i) out[i] = layout[i];
    return count;
}
