"""The joint limits as an active set: a step that leaves [lo, hi] is redone with the violating joints on
their bounds and the others re-solved (clamp_limits), or clipped. The compiled kernel (compiled_step.py)
does the same arithmetic in C. ``ws``: the solve's Workspace (workspace.py), whose buffers
(``clamped``, ``free``, ``d_c``, ...) these functions write; it imports this module, not the reverse."""

from __future__ import annotations

import numpy as np
from scipy.linalg.blas import daxpy, dgemv, dnrm2, dsyrk
from scipy.linalg.lapack import dposv

CLAMP_ROUNDS = 3  # clamp_limits: re-solves per iteration when the re-solved step hits other limits


def back_into_limits(clamp: bool, x, qg, J, e, neg_step, lo, hi, max_step, ws) -> None:
    """``qg`` (= x + the step, some joint outside [lo, hi]; in place) back inside: the clamped re-solve
    of :func:`clamped_step`, or a plain clip when ``clamp`` is off."""
    if clamp:
        clamped_step(x, qg, J, e, neg_step, lo, hi, max_step, ws)
    else:
        np.minimum(qg, hi, out=qg)
        np.maximum(qg, lo, out=qg)


def clamped_step(x, target, J, e, neg_step, lo, hi, max_step, ws) -> None:
    """``target`` (= x + the DLS step, outside [lo, hi]; in place) with the coordinates that left [lo, hi]
    clamped and the others re-solved.

    The step should change the error by ``rhs = neg_step e`` (``J dq ~ rhs``). A clamped joint moves
    exactly onto its bound (``d_c``); the free joints solve ``J_f d_f ~ rhs - J d_c`` by DLS (zero
    columns of J for the clamped joints, hence ``d_f = 0`` there), capped to ``max_step``. New
    violations join the clamped set (at most CLAMP_ROUNDS re-solves); the result is clipped, so it is
    always inside. Masks are 0/1 floats (float-only numpy loops are the cheap ones).
    """
    minimum, maximum, subtract = np.minimum, np.maximum, np.subtract
    clamped, free, d_c, D, inside, Jf = ws.clamped, ws.free, ws.d_c, ws.D, ws.inside, ws.Jf
    Jft = Jf.T  # J_f^T (F-ordered view): J with the clamped joints' columns zeroed
    maximum(minimum(target, hi, out=inside), lo, out=inside)
    np.not_equal(inside, target, out=clamped)  # 1.0 for the joints out of range (the caller found one)
    for rnd in range(CLAMP_ROUNDS):
        if rnd:
            maximum(minimum(target, hi, out=inside), lo, out=inside)
            np.not_equal(inside, target, out=free)  # (free as scratch) the newly violated joints
            if dnrm2(free) == 0.0:
                return  # inside: done
            maximum(clamped, free, out=clamped)
        subtract(1.0, clamped, out=free)
        subtract(inside, x, out=d_c)
        d_c *= clamped  # known motion of the clamped joints, 0 for the free ones
        np.multiply(J, free, out=Jf)
        b = dgemv(-1.0, J, d_c, neg_step, e)  # rhs - J d_c, rhs = neg_step e (e is not overwritten)
        _, y, info = dposv(dsyrk(1.0, Jft, 1.0, D, 1), b, 0, 1, 1)  # (J_f J_f^T + D)^-1 (rhs - J d_c)
        if info != 0:
            target[:] = inside
            return
        d_f = dgemv(1.0, Jft, y)
        norm = dnrm2(d_f)
        np.add(x, d_c, out=target)
        daxpy(d_f, target, a=max_step / norm if norm > max_step else 1.0)  # target = x + d_c + d_f (capped)
    minimum(target, hi, out=target)
    maximum(target, lo, out=target)
