/* A collision barrier's buffers for its two calls per step (pdk_barrier_update, pdk_barrier_evaluate in
 * pair_distance_kernel.cpp): what CollisionBarrier.update and .evaluate compute with five kernel calls and their
 * Python glue, in one call each. The barrier's arrays, set once (compiled_pairs.BarrierStep, its ctypes mirror);
 * the counts marked "out" are written by the calls. Included by pair_distance_kernel.cpp inside extern "C". */
#include <stddef.h>
#include <stdint.h>

typedef struct {
    int64_t n;            /* the closest pairs constrained */
    int64_t n_candidates; /* the closest pairs queried per update (n when urgent is 0) */
    int64_t size;         /* the pairs tracked: n + urgent_pairs */
    int64_t urgent;       /* 0: the n closest as queried are the tracked pairs (tracked_* are cand_*) */
    double cutoff;        /* [m] broad phase of the update's query */
    double lookahead;     /* [steps] to brake: a candidate's urgency is d - lookahead * approach */
    int64_t nq;           /* the configuration's size (a re-solve at the same q keeps the approach) */
    const double *q;      /* the update's configuration (nq): the caller writes it before each update */
    int64_t *cand_pair;   /* the candidates (n_candidates): pair, distance [m], witness points, unit normal */
    double *cand_distance, *cand_p1, *cand_p2, *cand_normal;
    int64_t cand_count;   /* out */
    int64_t *tracked_pair; /* the tracked pairs (size), sorted by distance */
    double *tracked_distance, *tracked_p1, *tracked_p2, *tracked_normal;
    int64_t tracked_count; /* out */
    double *approach, *urgency; /* scratch (n_candidates) */
    int64_t *order;
    int64_t rows_per_pair; /* the rows (pdk_rows): per pair, settings [m], the group's Jacobian columns */
    double margin, spacing, d_min;
    int64_t max_rows;
    const double *J;      /* 6 x nv, column-major: pinocchio's data.J (world-frame joint Jacobians) */
    int64_t nv;
    const int64_t *columns;
    int64_t n_columns;
    const double *support; /* njoints x n_columns */
    int64_t *row_pair;    /* per row (max_rows): its tracked pair, points, normal, h, dh/dq, pair distance - d_min */
    double *a, *b, *normal, *h, *jacobian, *measured;
    int64_t row_count;    /* out */
    double *h_next;       /* evaluate: per row (max_rows), its pair's distance - d_min at the new placements */
    double *distance_next; /* ... per tracked pair (size) */
    double untracked_h;   /* out of evaluate: the nearest untracked pair's distance - d_min (inf: none within d_min) */
} pdk_barrier_step;

/* The layout of every struct the Python side builds with ctypes: per struct, its size then each field's
 * offset and size, in declaration order; pdk_layout writes them (count returned), pdk_layout_names says whose
 * ("struct:field,field;..."), for the loader to compare with its ctypes.Structure mirrors, by name and
 * offset, before any call (compiled_library.check_layout). Generated from the typedefs above
 * (scripts/kernel_layout.py): regenerate when a struct changes. */
const char *pdk_layout_names(void) {
    return
        "pdk_barrier_step:n,n_candidates,size,urgent,cutoff,lookahead,nq,q,cand_pair,cand_distance,cand_p1,"
        "cand_p2,cand_normal,cand_count,tracked_pair,tracked_distance,tracked_p1,tracked_p2,tracked_normal,"
        "tracked_count,approach,urgency,order,rows_per_pair,margin,spacing,d_min,max_rows,J,nv,columns,"
        "n_columns,support,row_pair,a,b,normal,h,jacobian,measured,row_count,h_next,distance_next,untracked_h";
}

int64_t pdk_layout(int64_t *out, int64_t capacity) {
    const int64_t layout[] = {
        sizeof(pdk_barrier_step), offsetof(pdk_barrier_step, n), sizeof(((pdk_barrier_step *)0)->n),
        offsetof(pdk_barrier_step, n_candidates), sizeof(((pdk_barrier_step *)0)->n_candidates),
        offsetof(pdk_barrier_step, size), sizeof(((pdk_barrier_step *)0)->size), offsetof(pdk_barrier_step, urgent),
        sizeof(((pdk_barrier_step *)0)->urgent), offsetof(pdk_barrier_step, cutoff),
        sizeof(((pdk_barrier_step *)0)->cutoff), offsetof(pdk_barrier_step, lookahead),
        sizeof(((pdk_barrier_step *)0)->lookahead), offsetof(pdk_barrier_step, nq),
        sizeof(((pdk_barrier_step *)0)->nq), offsetof(pdk_barrier_step, q), sizeof(((pdk_barrier_step *)0)->q),
        offsetof(pdk_barrier_step, cand_pair), sizeof(((pdk_barrier_step *)0)->cand_pair),
        offsetof(pdk_barrier_step, cand_distance), sizeof(((pdk_barrier_step *)0)->cand_distance),
        offsetof(pdk_barrier_step, cand_p1), sizeof(((pdk_barrier_step *)0)->cand_p1),
        offsetof(pdk_barrier_step, cand_p2), sizeof(((pdk_barrier_step *)0)->cand_p2),
        offsetof(pdk_barrier_step, cand_normal), sizeof(((pdk_barrier_step *)0)->cand_normal),
        offsetof(pdk_barrier_step, cand_count), sizeof(((pdk_barrier_step *)0)->cand_count),
        offsetof(pdk_barrier_step, tracked_pair), sizeof(((pdk_barrier_step *)0)->tracked_pair),
        offsetof(pdk_barrier_step, tracked_distance), sizeof(((pdk_barrier_step *)0)->tracked_distance),
        offsetof(pdk_barrier_step, tracked_p1), sizeof(((pdk_barrier_step *)0)->tracked_p1),
        offsetof(pdk_barrier_step, tracked_p2), sizeof(((pdk_barrier_step *)0)->tracked_p2),
        offsetof(pdk_barrier_step, tracked_normal), sizeof(((pdk_barrier_step *)0)->tracked_normal),
        offsetof(pdk_barrier_step, tracked_count), sizeof(((pdk_barrier_step *)0)->tracked_count),
        offsetof(pdk_barrier_step, approach), sizeof(((pdk_barrier_step *)0)->approach),
        offsetof(pdk_barrier_step, urgency), sizeof(((pdk_barrier_step *)0)->urgency),
        offsetof(pdk_barrier_step, order), sizeof(((pdk_barrier_step *)0)->order),
        offsetof(pdk_barrier_step, rows_per_pair), sizeof(((pdk_barrier_step *)0)->rows_per_pair),
        offsetof(pdk_barrier_step, margin), sizeof(((pdk_barrier_step *)0)->margin),
        offsetof(pdk_barrier_step, spacing), sizeof(((pdk_barrier_step *)0)->spacing),
        offsetof(pdk_barrier_step, d_min), sizeof(((pdk_barrier_step *)0)->d_min),
        offsetof(pdk_barrier_step, max_rows), sizeof(((pdk_barrier_step *)0)->max_rows),
        offsetof(pdk_barrier_step, J), sizeof(((pdk_barrier_step *)0)->J), offsetof(pdk_barrier_step, nv),
        sizeof(((pdk_barrier_step *)0)->nv), offsetof(pdk_barrier_step, columns),
        sizeof(((pdk_barrier_step *)0)->columns), offsetof(pdk_barrier_step, n_columns),
        sizeof(((pdk_barrier_step *)0)->n_columns), offsetof(pdk_barrier_step, support),
        sizeof(((pdk_barrier_step *)0)->support), offsetof(pdk_barrier_step, row_pair),
        sizeof(((pdk_barrier_step *)0)->row_pair), offsetof(pdk_barrier_step, a),
        sizeof(((pdk_barrier_step *)0)->a), offsetof(pdk_barrier_step, b), sizeof(((pdk_barrier_step *)0)->b),
        offsetof(pdk_barrier_step, normal), sizeof(((pdk_barrier_step *)0)->normal), offsetof(pdk_barrier_step, h),
        sizeof(((pdk_barrier_step *)0)->h), offsetof(pdk_barrier_step, jacobian),
        sizeof(((pdk_barrier_step *)0)->jacobian), offsetof(pdk_barrier_step, measured),
        sizeof(((pdk_barrier_step *)0)->measured), offsetof(pdk_barrier_step, row_count),
        sizeof(((pdk_barrier_step *)0)->row_count), offsetof(pdk_barrier_step, h_next),
        sizeof(((pdk_barrier_step *)0)->h_next), offsetof(pdk_barrier_step, distance_next),
        sizeof(((pdk_barrier_step *)0)->distance_next), offsetof(pdk_barrier_step, untracked_h),
        sizeof(((pdk_barrier_step *)0)->untracked_h),
    };
    const int64_t count = (int64_t)(sizeof(layout) / sizeof(layout[0]));
    for (int64_t i = 0; i < count && i < capacity; ++i) out[i] = layout[i];
    return count;
}
