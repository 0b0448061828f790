"""FrameTask: drive a frame of the robot to a target pose T_world_target."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

import numpy as np
import pinocchio as pin

from ...errors import InvalidInputError, Range, as_vector, check_positive
from ...ranges import check_key
from ..kind import BuildContext, key, register
from .task import Task, TaskConfig

if TYPE_CHECKING:
    from ..robot import Robot


@dataclass
class FrameTaskConfig(TaskConfig):
    """``type: frame``: a frame's pose in the world frame; goals on ``~/<task>/target_pose``."""

    frame: str = key("")
    position_cost: Union[float, list[float]] = key(1.0, range=Range(unit="cost/m"), size=3,
                                                   runtime="position cost (x, y, z)")
    orientation_cost: Union[float, list[float]] = key(1.0, range=Range(unit="cost/rad"), size=3,
                                                      runtime="orientation cost (x, y, z)")
    max_position_error: float = key(math.inf)  # [m] tanh saturation of the error; .inf = none
    max_rotation_error: float = key(math.inf)  # [rad]

    def validate(self, path: str) -> None:
        super().validate(path)
        if not self.frame:
            raise InvalidInputError(f"{path}.frame: required for a frame task")


def build_frame_task(config: FrameTaskConfig, context: BuildContext) -> FrameTask:
    """The task, aimed at the frame's pose at the starting configuration (hold still until a goal)."""
    scene = context.robot.scene
    target = scene.frame_pose(context.q, config.frame) if scene.model.existFrame(config.frame) else None
    return FrameTask(context.robot, config.frame, target, config.position_cost, config.orientation_cost,
                     task_gain=config.task_gain, lm_damping=config.lm_damping, priority=config.priority,
                     max_position_error=config.max_position_error, max_rotation_error=config.max_rotation_error,
                     name=config.name)


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


def saturate(e: np.ndarray, e_max: float) -> float | None:
    """In place: e <- e_max * tanh(|e| / e_max) * e / |e| (no-op for e_max = inf or e = 0).

    Returns |e| before saturation, or None when e_max = inf (then |e| was not computed)."""
    if e_max < math.inf:
        norm = math.sqrt(float(e @ e))
        if norm > 0.0:
            e *= e_max * math.tanh(norm / e_max) / norm
        return norm
    return None


class FrameTask(Task):
    """Track ``T_world_target`` with frame ``frame``.

    Error (world-aligned, 6,): ``e_pos = p_target - p`` [m], ``e_rot = R log3(R^T R_target)`` [rad]
    (computed as ``log3(R_target R^T)``, the same vector: log3(R A R^T) = R log3(A)),
    each optionally saturated by ``max_position_error`` / ``max_rotation_error`` (tanh). Jacobian:
    minus the frame Jacobian in ``LOCAL_WORLD_ALIGNED``. W = diag(sqrt(position_cost) I3,
    sqrt(orientation_cost) I3); costs may be scalars or per-axis 3-vectors ([cost]/[m], [cost]/[rad]).
    The target defaults to the frame's pose at the first update (hold still).
    """

    goal = "pose"

    native_form = "frame_task"  # the compiled assembly updates this exact class itself (compiled_assembly.py)

    def __init__(
        self,
        robot: Robot,
        frame: str,
        target=None,
        position_cost=1.0,
        orientation_cost=1.0,
        task_gain: float = 1.0,
        lm_damping: float = 0.0,
        max_position_error: float = np.inf,
        max_rotation_error: float = np.inf,
        priority: int = 1,
        name: str | None = None,
    ) -> None:
        name = name or frame
        super().__init__(robot, 6, task_gain, lm_damping, priority, name)
        self.frame = frame
        self.frame_id = robot.scene.frame_id(frame)
        self._columns = robot.group.v_columns
        pos, rot = (as_vector(check_key(cost, f"tasks[frame].{key}", f"{name}.{key}", size=3), 3, f"{name}.{key}")
                    for key, cost in (("position_cost", position_cost), ("orientation_cost", orientation_cost)))
        self.sqrt_weight[:3], self.sqrt_weight[3:] = np.sqrt(pos), np.sqrt(rot)
        self.max_position_error = check_positive(max_position_error, f"{name}.max_position_error", allow_inf=True)
        self.max_rotation_error = check_positive(max_rotation_error, f"{name}.max_rotation_error", allow_inf=True)
        self._e_pos, self._e_rot = self.error[:3], self.error[3:]
        self.norms = np.zeros(2)  # |e_pos|, |e_rot| before saturation (written when saturation is on)
        self._data: pin.Data | None = None  # whose frame placement self._p, self._R view
        # the target, copied (the compiled assembly reads these arrays in place)
        self.p_target, self.R_target = np.zeros(3), np.eye(3)
        self.target = target

    @property
    def target(self) -> pin.SE3 | None:
        """Target pose in the world frame (None: the frame's pose at the next update)."""
        return self._target

    @target.setter
    def target(self, T_world_target) -> None:
        self._target = None if T_world_target is None else as_se3(T_world_target, f"{self.name}.target")
        if self._target is not None:
            np.copyto(self.p_target, self._target.translation)
            np.copyto(self.R_target, self._target.rotation)

    def set_target(self, T_world_target) -> None:
        """New target pose (pin.SE3 or 4x4), in the model's world frame."""
        self.target = T_world_target

    @property
    def position_error(self) -> float:
        """|p_target - p| [m] at the last update, before saturation."""
        if self.max_position_error < math.inf:
            return float(self.norms[0])
        return float(np.linalg.norm(self._e_pos))

    @property
    def orientation_error(self) -> float:
        """|log3(R^T R_target)| [rad] at the last update, before saturation."""
        if self.max_rotation_error < math.inf:
            return float(self.norms[1])
        return float(np.linalg.norm(self._e_rot))

    def hold_if_untargeted(self, data: pin.Data) -> None:
        """Without a target, take the frame's pose in ``data`` (placements at q) as the target."""
        if self._target is None:
            placement = data.oMf[self.frame_id]
            self.target = pin.SE3(placement.rotation.copy(), placement.translation.copy())

    def update(self, q: np.ndarray, data: pin.Data) -> None:
        if data is not self._data:  # views of data.oMf[frame]: they follow every later kinematics call
            placement = data.oMf[self.frame_id]
            self._p, self._R, self._data = placement.translation, placement.rotation, data
        J = pin.getFrameJacobian(self.scene.model, data, self.frame_id, pin.LOCAL_WORLD_ALIGNED)
        np.negative(J[:, self._columns], out=self.jacobian)
        self.hold_if_untargeted(data)
        np.subtract(self.p_target, self._p, out=self._e_pos)
        self._e_rot[:] = pin.log3(np.dot(self.R_target, self._R.T))
        if self.max_position_error < math.inf:
            self.norms[0] = saturate(self._e_pos, self.max_position_error)
        if self.max_rotation_error < math.inf:
            self.norms[1] = saturate(self._e_rot, self.max_rotation_error)

    def hold(self, q: np.ndarray) -> None:
        self.set_target(self.scene.frame_pose(q, self.frame))

    def set_parameter(self, name: str, value: Any) -> None:
        rows = {"position_cost": slice(0, 3), "orientation_cost": slice(3, 6)}.get(name)
        if rows is None:
            super().set_parameter(name, value)
        else:
            self.sqrt_weight[rows] = np.sqrt(np.broadcast_to(np.asarray(value, dtype=float), (3,)))


register("tasks", "frame", FrameTaskConfig, build_frame_task)
