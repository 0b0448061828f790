"""When an attempt ends: the convergence tests on the true errors and the per-solve constants of the
stall, plateau and step-cap rules."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import pinocchio as pin

from .methods import METHOD_TABLE
from .options import SimpleIKOptions

if TYPE_CHECKING:
    from .workspace import Workspace

STALL_FACTOR = 0.5  # stall_iters: the squared error must drop below this fraction of its reference
PLATEAU_RATIO = 0.98  # plateau_iters: an iteration is flat if the squared error drops by less than 2 %


class Constants:
    """Per-solve numbers derived from the options (computed once per solve, not per attempt)."""

    __slots__ = ("lin2", "ang2", "near", "neg_step", "step2", "max_step", "max_step2", "stall_iters", "plateau_iters",
                 "method", "gain", "null_space")

    def __init__(self, opt: SimpleIKOptions) -> None:
        self.lin2, self.ang2 = opt.max_linear_error_norm**2, opt.max_angular_error_norm**2
        self.near = near_bound(self.lin2, opt.max_angular_error_norm)  # |log6|^2 above which a goal is not reached
        self.neg_step, self.step2, self.max_step = -opt.step_size, opt.step_size**2, opt.max_step_norm
        self.max_step2 = self.max_step * self.max_step
        self.stall_iters = opt.stall_iters or opt.max_iters + 1
        self.plateau_iters = opt.plateau_iters or opt.max_iters + 1
        self.method, self.gain = METHOD_TABLE[opt.method], opt.resolved_lm_gain()
        self.null_space = opt.joint_limit_gain > 0.0 or opt.manipulability_gain > 0.0 or opt.bias_gain > 0.0


_CONSTANTS: dict[tuple, Constants] = {}


def constants(opt: SimpleIKOptions) -> Constants:
    """Constants(opt), cached by the option values they depend on."""
    key = (opt.max_linear_error_norm, opt.max_angular_error_norm, opt.step_size, opt.max_step_norm,
           opt.stall_iters, opt.plateau_iters, opt.max_iters, opt.method, opt.lm_gain, opt.joint_limit_gain > 0.0 or
           opt.manipulability_gain > 0.0 or opt.bias_gain > 0.0)
    c = _CONSTANTS.get(key)
    if c is None:
        if len(_CONSTANTS) >= 64:
            _CONSTANTS.clear()
        c = _CONSTANTS[key] = Constants(opt)
    return c


def reached(T_err: pin.SE3, e: np.ndarray, lin2: float, ang2: float) -> bool:
    """True if the true position and orientation errors are within the (squared) thresholds."""
    t = T_err.translation
    w = e[3:]
    return bool(t @ t <= lin2 and w @ w <= ang2)


def weighted_reached(t: np.ndarray, e: np.ndarray, ws: Workspace, k: int, lin2: float, ang2: float,
                     near: float) -> bool:
    """Convergence of goal k under its error weights: the true errors (as reached) unless a weight is 0; then the
    components with a zero weight are left out: the orientation error is |mask * log3| and the position
    error |t| (the true one) while every translation weight is > 0, else |mask * v| (log6's translation
    part, which is the position error once the orientation is reached)."""
    mask = ws.mask[6 * k : 6 * k + 6]  # goal k's
    if not ws.masked or mask.min() > 0.0:
        return bool(e.dot(e) <= near and t.dot(t) <= lin2 and e[3:].dot(e[3:]) <= ang2)
    em = e * mask
    p2 = t.dot(t) if ws.translation_full[k] else em[:3].dot(em[:3])
    return bool(p2 <= lin2 and em[3:].dot(em[3:]) <= ang2)


def near_bound(lin2: float, max_angle: float) -> float:
    """Upper bound of |log6(T_err)|^2 when the position error is <= sqrt(lin2) and the angle <= max_angle.

    log6 = (v, w) with w = log3(R_goal^T R), |w| = the orientation error, and v = V(w)^-1 t where
    t = R_goal^T (p - p_goal), |t| = the position error. The largest singular value of V(w)^-1 is
    (theta/2) / sin(theta/2) for theta = |w| <= pi, so |v| <= |t| (theta/2) / sin(theta/2). A larger
    |log6|^2 proves that the goal is not reached; a smaller one is checked exactly by reached.
    """
    theta = min(max_angle, math.pi)
    gain = (theta / 2.0) / math.sin(theta / 2.0) if theta > 0.0 else 1.0
    return (lin2 * gain * gain + theta * theta) * (1.0 + 1e-9)
