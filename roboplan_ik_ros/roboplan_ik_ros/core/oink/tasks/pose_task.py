"""PoseTask: the part of a task whose target is a pose (frame, relative_frame): its costs and target arrays."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin

from ...errors import InvalidInputError, as_vector, check_positive
from ...ranges import check_key
from .task import Task

if TYPE_CHECKING:
    from ..robot import Robot


def saturate(e: np.ndarray, e_max: float) -> float | None:
    """In place: e <- e_max * tanh(|e| / e_max) * e / |e| (no-op for e_max = inf or e = 0).

    Returns |e| before saturation, or None when e_max = inf (then |e| was not computed)."""
    if e_max < math.inf:
        norm = math.sqrt(float(e @ e))
        if norm > 0.0:
            e *= e_max * math.tanh(norm / e_max) / norm
        return norm
    return None


def as_se3(T, what: str) -> pin.SE3:
    """``T`` (pin.SE3 or 4x4 homogeneous matrix) as a pin.SE3 with a proper rotation, or raise."""
    if isinstance(T, pin.SE3):  # a pin.SE3 always holds a rotation: check finiteness only
        t, R = T.translation, T.rotation
        # one dot product each (NaN and inf propagate); the exact check only if it overflowed
        if not (math.isfinite(float(t @ t)) and math.isfinite(float(np.vdot(R, R)))) and not (
            np.isfinite(t).all() and np.isfinite(R).all()
        ):
            raise InvalidInputError(f"{what}: non-finite values in the pose")
        return T.copy()
    else:
        try:
            M = np.asarray(T, dtype=float)
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(f"{what}: expected a pin.SE3 or a 4x4 matrix, got {T!r}") from exc
        if M.shape != (4, 4):
            raise InvalidInputError(f"{what}: expected a 4x4 homogeneous matrix, got shape {M.shape}")
    if not np.all(np.isfinite(M)):
        raise InvalidInputError(f"{what}: non-finite values in the pose")
    R = M[:3, :3]
    if np.abs(R.T @ R - np.eye(3)).max() > 1e-6 or np.linalg.det(R) < 0:
        raise InvalidInputError(f"{what}: the rotation part is not a rotation matrix")
    return pin.SE3(R, M[:3, 3])


class PoseTask(Task):
    """Six rows, position then orientation, weighted by ``position_cost`` and ``orientation_cost`` ([cost/m],
    [cost/rad]: scalars or per axis; runtime parameters of the kind ``type_``), toward a target pose held in
    :attr:`p_target` and :attr:`R_target` (copied arrays: the compiled assembly reads them in place). The
    target is in the task's goal frame (the world for a frame task, the reference for relative_frame); None
    takes the measured pose at the next update. ``max_position_error`` [m] / ``max_rotation_error`` [rad]
    saturate the errors (tanh; .inf: none) so that a far goal asks for a step the linearization holds for."""

    goal = "pose"

    def __init__(self, robot: Robot, type_: str, target, position_cost, orientation_cost, task_gain: float,
                 lm_damping: float, priority: int, name: str, max_position_error: float = math.inf,
                 max_rotation_error: float = math.inf) -> None:
        super().__init__(robot, 6, task_gain, lm_damping, priority, name)
        self.max_position_error = check_positive(max_position_error, f"{name}.max_position_error", allow_inf=True)
        self.max_rotation_error = check_positive(max_rotation_error, f"{name}.max_rotation_error", allow_inf=True)
        self.norms = np.zeros(2)  # |e_pos|, |e_rot| before saturation (written when saturation is on)
        pos, rot = (as_vector(check_key(cost, f"tasks[{type_}].{key}", f"{name}.{key}", size=3), 3, f"{name}.{key}")
                    for key, cost in (("position_cost", position_cost), ("orientation_cost", orientation_cost)))
        self.sqrt_weight[:3], self.sqrt_weight[3:] = np.sqrt(pos), np.sqrt(rot)
        self._e_pos, self._e_rot = self.error[:3], self.error[3:]
        self.p_target, self.R_target = np.zeros(3), np.eye(3)
        self._target: pin.SE3 | None = None

    @property
    def target(self) -> pin.SE3 | None:
        """The target pose in the task's goal frame (None: the measured pose at the next update)."""
        return self._target

    @target.setter
    def target(self, T) -> None:
        self._target = None if T is None else as_se3(T, f"{self.name}.target")
        if self._target is not None:
            np.copyto(self.p_target, self._target.translation)
            np.copyto(self.R_target, self._target.rotation)

    def set_target(self, T) -> None:
        """New target pose (pin.SE3 or 4x4) in the task's goal frame."""
        self.target = T

    @property
    def position_error(self) -> float:
        """|position error| [m] at the last update, before saturation."""
        if self.max_position_error < math.inf:
            return float(self.norms[0])
        return float(np.linalg.norm(self._e_pos))

    @property
    def orientation_error(self) -> float:
        """|rotation error| [rad] at the last update, before saturation."""
        if self.max_rotation_error < math.inf:
            return float(self.norms[1])
        return float(np.linalg.norm(self._e_rot))

    def _saturate(self) -> None:
        """Saturate the errors just computed (keeping their norms for the reports)."""
        if self.max_position_error < math.inf:
            self.norms[0] = saturate(self._e_pos, self.max_position_error)
        if self.max_rotation_error < math.inf:
            self.norms[1] = saturate(self._e_rot, self.max_rotation_error)

    def set_parameter(self, name: str, value: Any) -> None:
        rows = {"position_cost": slice(0, 3), "orientation_cost": slice(3, 6)}.get(name)
        if rows is None:
            super().set_parameter(name, value)
        else:
            self.sqrt_weight[rows] = np.sqrt(np.broadcast_to(np.asarray(value, dtype=float), (3,)))
