/* A DAQP workspace kept between the steps of one solver (daqp_workspace.c), for oink_kernel.c's QP. */
#ifndef OINK_DAQP_WORKSPACE_H
#define OINK_DAQP_WORKSPACE_H

#include <stdint.h>

typedef struct daqp_workspace daqp_workspace; /* opaque: DAQP's own workspace, problem and buffers */

/* What daqp_workspace_solve returns. */
enum {
    DAQP_WORKSPACE_SOLVED = 0,       /* DAQP's exit flag is >= 1: x is its solution */
    DAQP_WORKSPACE_FAILED = 1,       /* the solve ended with an exit flag < 1 */
    DAQP_WORKSPACE_SETUP_FAILED = 2, /* setting the problem up failed (the flag says why) */
};

/* 1 if the library was built with DAQP's C sources (else every call below is a stub: create returns NULL). */
int64_t oink_daqp_available(void);

/* A workspace with DAQP's default settings but primal_tol and iter_limit (Oink.daqp_settings); NULL without DAQP
 * or memory. Freed by oink_daqp_free (the Python side holds it, one per solver). */
daqp_workspace *oink_daqp_create(double primal_tol, int64_t iter_limit);
void oink_daqp_free(daqp_workspace *w);

/* Used by oink_kernel.c only: not exported from the library. */
#define DAQP_WORKSPACE_INTERNAL __attribute__((visibility("hidden")))

/* Drop the problem set up in w: the next solve sets it up again (no warm start from a failed solve). */
DAQP_WORKSPACE_INTERNAL void daqp_workspace_reset(daqp_workspace *w);

/* min 1/2 x^T H x + f^T x  s.t.  lower <= x <= upper on the first n rows (simple bounds), lower <= A x <= upper on
 * the m - n rows of A (row-major). Sets the problem up when w holds none or one of another m, else updates it in
 * place and warm-starts from the last active set: what solver.py's daqp.Model does (setup, then update + solve).
 * The arrays are read during the call only. x: (n) out; exit flag and iterations out. */
DAQP_WORKSPACE_INTERNAL int daqp_workspace_solve(daqp_workspace *w, int n, int m, double *H, double *f, double *A,
                                                 double *upper, double *lower, double *x, int *exitflag,
                                                 int *iterations);

#endif
