"""SimpleIK's step methods: one :class:`Method` row per ``SimpleIKOptions.method``, in :data:`METHOD_TABLE`.

A method is its step direction ``dq`` (``J dq ~ e``; the loop applies ``-step_size dq``, capped to
max_step_norm) on the weighted ``J = W^1/2 J``, ``e = W^1/2 e`` (``err = e^T W e = 2 E``), its damping
rule, and whether the compiled kernel (compiled_step.py) computes that step. The kernel is
method-agnostic: it solves ``J^T (J J^T + lambda I)^-1 e`` at the lambda it is given, so a method is
compiled exactly when its direction is that damped least-squares form: dls (lambda = ``damping``, set
once per solve) and the lm_* (``lambda_k(gain, err)``, set per iteration). Everything else of an
iteration (cap, active set on the limits, stall/plateau, restarts, collision check) is shared by
every method (descent.py, solver.py).

Adding a method: one direction function and one row here (its README row, and a case in
test_simple_ik_methods.py); nothing in the solver depends on the rows' order.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from scipy.linalg.blas import dgemv, dsyrk
from scipy.linalg.lapack import dposv

if TYPE_CHECKING:
    from .compiled_step import CompiledStep
    from .workspace import Workspace

PINV_RCOND = 1e-10  # newton_raphson, gauss_newton: singular values below this fraction of the largest are cut

# (J, J^T, e, err, gain, workspace) -> dq, or None if the step's system is singular; e is kept
Direction = Callable[[np.ndarray, np.ndarray, np.ndarray, float, float, "Workspace"], "np.ndarray | None"]


@dataclass(frozen=True)
class Method:
    """One step method: its direction, damping and whether the compiled kernel runs it."""

    name: str
    direction: Direction  # the Python step direction (the compiled kernel computes the same for compiled rows)
    damping: str  # the damping rule, as documented (README "SimpleIK methods")
    lambda_k: Callable[[float, float], float] | None = None  # (gain, err) -> per-iteration lambda; None: the
    # options' ``damping``, set once per solve (dls) or none (the pinv methods)
    default_gain: float = 0.0  # lm_gain when None (0.0: the method has no gain)
    compiled: bool = False  # the compiled kernel's damped least-squares step is this method's step
    # lambda_k as gain -> (a, b) with lambda_k(gain, err) = a err + b (b alone when a is 0), the form the compiled
    # descent computes per iteration (compiled_step.py); None: a compiled row whose lambda_k is not of that form
    # runs the compiled step with its kinematics in Python (dls: lambda_k None, lambda = damping)
    lambda_affine: Callable[[float], tuple[float, float]] | None = None


def _dls(J, Jt, e, err, gain, ws) -> np.ndarray | None:
    """``J^T (J J^T + D)^-1 e``, D = damping I (ws.D, set per solve). BLAS on ``Jt = J^T`` (F-ordered when J
    is C-ordered: no copy): dsyrk fills the upper triangle dposv reads."""
    _, y, info = dposv(dsyrk(1.0, Jt, 1.0, ws.D, 1), e, 0, 1, 0)
    return dgemv(1.0, Jt, y) if info == 0 else None


def _levenberg_marquardt(lambda_k: Callable[[float, float], float]) -> Direction:
    """``(J^T W J + W_n)^-1 J^T W e`` with ``W_n = lambda_k I``, computed as the equal ``J^T (J J^T + lambda_k
    I)^-1 e`` (m x m, m = 6 per goal <= nv). ws.D holds lambda_k, so that the clamped re-solve at the
    limits (active_set.py) uses the same damping."""

    def direction(J, Jt, e, err, gain, ws) -> np.ndarray | None:
        ws.D_diag.fill(lambda_k(gain, err))
        ws.damping = math.nan  # the next solve's set_damping refills D
        _, y, info = dposv(dsyrk(1.0, Jt, 1.0, ws.D, 1), e, 0, 1, 0)
        return dgemv(1.0, Jt, y) if info == 0 else None

    return direction


def _newton_raphson(J, Jt, e, err, gain, ws) -> np.ndarray:
    """``pinv(J) e``, singular values below PINV_RCOND of the largest cut."""
    return np.linalg.pinv(J, PINV_RCOND) @ e


def _gauss_newton(J, Jt, e, err, gain, ws) -> np.ndarray:
    """``pinv(J^T W J) J^T W e``: newton_raphson's step in exact arithmetic; the normal matrix squares the
    condition number, so its cut-off drops more directions near a singularity."""
    return np.linalg.pinv(Jt @ J, PINV_RCOND, hermitian=True) @ dgemv(1.0, Jt, e)


# lambda_k of the lm_* methods at the weighted squared error err = 2 E
def _wampler(gain: float, err: float) -> float:
    return gain


def _chan(gain: float, err: float) -> float:
    return gain * 0.5 * err


def _sugihara(gain: float, err: float) -> float:
    return 0.5 * err + gain


# The rows, in the order the docs and error messages list them. Default gains: Chan's lambda 1.0 (the Robotics
# Toolbox's k); Sugihara's w_n = 0.01 l^2 for l ~ 0.3 m links; Wampler's constant 1e-4 (the best constant
# measured, also dls's default damping: with the defaults lm_wampler takes dls's steps through the generic LM
# code, a check of both in the benchmark).
METHOD_TABLE: dict[str, Method] = {m.name: m for m in (
    Method("dls", _dls, "damping (constant)", compiled=True),
    Method("lm_wampler", _levenberg_marquardt(_wampler), "lm_gain (constant)", _wampler, 1e-4, compiled=True,
           lambda_affine=lambda gain: (0.0, gain)),
    Method("lm_chan", _levenberg_marquardt(_chan), "lm_gain * E", _chan, 1.0, compiled=True,
           lambda_affine=lambda gain: (gain * 0.5, 0.0)),  # (gain * 0.5) * err: _chan's rounding
    Method("lm_sugihara", _levenberg_marquardt(_sugihara), "E + lm_gain", _sugihara, 1e-3, compiled=True,
           lambda_affine=lambda gain: (0.5, gain)),
    Method("newton_raphson", _newton_raphson, "none (pinv)"),
    Method("gauss_newton", _gauss_newton, "none (pinv of the normal matrix)"),
)}
METHODS = tuple(METHOD_TABLE)  # the valid SimpleIKOptions.method names
LM_GAIN_DEFAULTS = {m.name: m.default_gain for m in METHOD_TABLE.values() if m.lambda_k is not None}


def run_compiled_step(compiled: CompiledStep, method: Method, J: np.ndarray, e: np.ndarray, gain: float, err: float,
                  qg: np.ndarray | None, ws: Workspace, model, q: np.ndarray) -> bool:
    """One step of a compiled ``method`` in C on the (weighted) J and e: on ``qg`` (the group's q view, scalar
    joints) or through the workspace's limit coordinates (continuous joints, solve_nearby); False: a
    singular system."""
    np.copyto(compiled.J, J)
    np.copyto(compiled.e, e)
    if method.lambda_k is not None:
        compiled.set_damping(method.lambda_k(gain, err))
    if qg is not None:
        return compiled.run() >= 0
    return ws.step_compiled(model, q, compiled)
