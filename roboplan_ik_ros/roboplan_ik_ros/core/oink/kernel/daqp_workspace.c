/* A DAQP workspace kept between the steps of one solver: the calls of the daqp Python module's Model (daqp.pyx of
 * the pinned sdist: __cinit__ + settings, setup, update, solve), made from C, so that oink_kernel.c solves the
 * step's QP in the call that assembles it, with the same warm starts as solver.py's daqp.Model.
 *
 * DAQP (MIT, Daniel Arnström) is built into the kernel from its sdist's C sources when setup.py finds them
 * (scripts/fetch_daqp_sources.sh puts them in build/daqp-<version>/, with their LICENSE); it then defines
 * OINK_WITH_DAQP. Without them this file only has stubs that say so (oink_daqp_available() = 0), and the solver
 * keeps the daqp Python module.
 */
#include "daqp_workspace.h"

#include <stdlib.h>

#ifdef OINK_WITH_DAQP

#include "api.h"   /* DAQP's: setup, solve, settings */
#include "utils.h" /* DAQP's: daqp_update_ldp (the update of daqp.Model.update) */

/* One set-up problem: what a daqp.Model holds after its setup (DAQP's workspace points at `problem`). */
typedef struct {
    DAQPWorkspace work;
    DAQPProblem problem; /* its arrays are re-pointed at every update */
    int *sense;          /* (m) the constraint states the setup starts from: all 0, as Model.setup's */
    double *lam;         /* (m) DAQP's dual solution (Model's _lam buffer) */
} daqp_setup;

struct daqp_workspace {
    DAQPSettings settings; /* Model's settings (every setup points at them) */
    daqp_setup *setup;     /* NULL: none (no solve yet, or dropped after a failed solve) */
};

int64_t oink_daqp_available(void) { return 1; }

daqp_workspace *oink_daqp_create(double primal_tol, int64_t iter_limit) {
    daqp_workspace *w = calloc(1, sizeof(daqp_workspace));
    if (w == NULL) return NULL;
    daqp_default_settings(&w->settings); /* Model(): allocate_daqp_settings; then .settings = {...} */
    w->settings.primal_tol = primal_tol;
    w->settings.iter_limit = (int)iter_limit;
    return w;
}

static void free_setup(daqp_setup *s) {
    if (s == NULL) return;
    s->work.settings = NULL; /* the workspace's own (Model.__dealloc__ frees its malloc'd copy) */
    free_daqp_workspace(&s->work);
    free_daqp_ldp(&s->work);
    free(s->sense);
    free(s->lam);
    free(s);
}

void daqp_workspace_reset(daqp_workspace *w) {
    free_setup(w->setup);
    w->setup = NULL;
}

void oink_daqp_free(daqp_workspace *w) {
    if (w == NULL) return;
    daqp_workspace_reset(w);
    free(w);
}

/* A new daqp.Model, set up (Model.setup(H, f, A, upper, lower): setup_daqp_main with no init mask); it replaces
 * w's only when the setup succeeds, as the solver keeps its old Model when a new one's setup fails. */
static int set_up(daqp_workspace *w, int n, int m, double *H, double *f, double *A, double *upper, double *lower) {
    daqp_setup *s = calloc(1, sizeof(daqp_setup));
    if (s == NULL) return DAQP_EXIT_UNSUPPORTED;
    s->sense = calloc((size_t)m, sizeof(int));
    s->lam = calloc((size_t)m, sizeof(double));
    if (s->sense == NULL || s->lam == NULL) {
        free_setup(s);
        return DAQP_EXIT_UNSUPPORTED;
    }
    s->work.settings = &w->settings;
    s->problem = (DAQPProblem){.n = n, .m = m, .ms = n, .H = H, .f = f, .A = m > n ? A : NULL, .bupper = upper,
                               .blower = lower, .sense = s->sense, .break_points = NULL, .nh = 0, .problem_type = 0};
    double setup_time = 0.0;
    const int flag = setup_daqp_main(&s->problem, &s->work, &setup_time, 0);
    if (flag < 0) {
        free_setup(s);
        return flag;
    }
    daqp_workspace_reset(w);
    w->setup = s;
    return flag;
}

int daqp_workspace_solve(daqp_workspace *w, int n, int m, double *H, double *f, double *A, double *upper,
                         double *lower, double *x, int *exitflag, int *iterations) {
    *iterations = 0;
    if (w->setup == NULL || w->setup->problem.m != m) {
        const int flag = set_up(w, n, m, H, f, A, upper, lower);
        if (flag < 0) {
            *exitflag = flag;
            return DAQP_WORKSPACE_SETUP_FAILED;
        }
    } else {
        /* Model.update(H=, f=, A= (when there are rows), bupper=, blower=): no sense given, so DAQP keeps the
         * constraint states of the last solve (the warm start). Its return is not checked, as the solver does not
         * check Model.update's: a failed update shows in the solve's exit flag. */
        DAQPProblem *p = &w->setup->problem;
        int mask = DAQP_UPDATE_Rinv | DAQP_UPDATE_v | DAQP_UPDATE_d | DAQP_UPDATE_sense;
        p->H = H;
        p->f = f;
        if (m > n) {
            p->A = A;
            mask |= DAQP_UPDATE_M;
        }
        p->bupper = upper;
        p->blower = lower;
        p->sense = w->setup->work.sense;
        (void)daqp_update_ldp(mask, &w->setup->work, p);
    }
    DAQPResult result = {.x = x, .lam = w->setup->lam};
    daqp_solve(&result, &w->setup->work);
    *exitflag = result.exitflag;
    *iterations = result.iter;
    return result.exitflag >= 1 ? DAQP_WORKSPACE_SOLVED : DAQP_WORKSPACE_FAILED;
}

#else /* built without DAQP's C sources */

int64_t oink_daqp_available(void) { return 0; }

daqp_workspace *oink_daqp_create(double primal_tol, int64_t iter_limit) {
    (void)primal_tol;
    (void)iter_limit;
    return NULL;
}

void oink_daqp_free(daqp_workspace *w) { (void)w; }

void daqp_workspace_reset(daqp_workspace *w) { (void)w; }

int daqp_workspace_solve(daqp_workspace *w, int n, int m, double *H, double *f, double *A, double *upper,
                         double *lower, double *x, int *exitflag, int *iterations) {
    (void)w, (void)n, (void)m, (void)H, (void)f, (void)A, (void)upper, (void)lower, (void)x;
    *exitflag = -8; /* DAQP_EXIT_UNSUPPORTED */
    *iterations = 0;
    return DAQP_WORKSPACE_SETUP_FAILED;
}

#endif
