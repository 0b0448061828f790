"""What a SimpleIK solve is asked and answers: FrameGoal (a tip pose to reach; PointGoal and AxisGoal are in
objectives.py), the check that turns its target into the solver's T_goal^-1, and IKResult."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin
from scipy.linalg.blas import ddot

from ..oink.tasks.pose_task import as_se3


@dataclass
class FrameGoal:
    """Reach ``T_world_tip`` (pin.SE3 or 4x4, model world frame) with frame ``tip_frame``; ``weights``:
    this goal's 6 error weights (as SimpleIKOptions.error_weights; None: the options'). With
    ``relative_to`` (a frame name), ``T_world_tip`` is the tip's pose in that frame, which moves with q
    (objectives.py)."""

    tip_frame: str
    T_world_tip: object
    weights: Sequence[float] | None = None
    relative_to: str | None = None


@dataclass
class IKResult:
    success: bool
    q: np.ndarray  # full nq; the seed when no solution was found
    position_errors: np.ndarray = field(default_factory=lambda: np.zeros(0))  # [m] per goal
    orientation_errors: np.ndarray = field(default_factory=lambda: np.zeros(0))  # [rad] per goal
    iterations: int = 0
    restarts: int = 0
    message: str = ""


def goal_label(k: int | str) -> str:
    """"goals[k]" for a request's goal k, the label itself (e.g. "objectives[0]") for a standing objective."""
    return k if isinstance(k, str) else f"goals[{k}]"


def inverse_target(T, k: int | str) -> pin.SE3:
    """T_goal^-1 of goal k (a pin.SE3 or a 4x4 matrix; k its index or its label, e.g. "objectives[0]"), or
    InvalidInputError (as_se3's checks)."""
    if type(T) is pin.SE3:
        Tinv = T.inverse()  # a new SE3: the caller's goal is never aliased
        # A pin.SE3 always holds a rotation: check finiteness only. T^-1's translation -R^T t is finite
        # iff R and t are (a non-finite entry makes every product it enters non-finite, 0 * inf = nan).
        t = Tinv.translation
        if math.isfinite(ddot(t, t)):  # (an overflow to inf falls back to as_se3, which accepts it)
            return Tinv
    return as_se3(T, f"{k}.T_world_tip" if isinstance(k, str) else f"goals[{k}].T_world_tip").inverse()
