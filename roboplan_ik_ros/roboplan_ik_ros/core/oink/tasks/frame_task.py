"""FrameTask: drive a frame of the robot to a target pose T_world_target."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

import numpy as np
import pinocchio as pin

from ...errors import InvalidInputError, Range
from ...keys import key
from ..kind import BuildContext, register
from .pose_task import PoseTask
from .task import TaskConfig

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


class FrameTask(PoseTask):
    """Track ``T_world_target`` with frame ``frame``.

    Error (world-aligned, 6,): ``e_pos = p_target - p`` [m], ``e_rot = R log3(R^T R_target)`` [rad]
    (computed as ``log3(R_target R^T)``, the same vector: log3(R A R^T) = R log3(A)),
    each optionally saturated by ``max_position_error`` / ``max_rotation_error`` (tanh). Jacobian:
    minus the frame Jacobian in ``LOCAL_WORLD_ALIGNED``. W = diag(sqrt(position_cost) I3,
    sqrt(orientation_cost) I3); costs may be scalars or per-axis 3-vectors ([cost]/[m], [cost]/[rad]).
    The target defaults to the frame's pose at the first update (hold still).
    """

    follower = "frame_pose"  # world pose goals, smoothed; twist streams (core/control/follower_kinds.py)
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
        super().__init__(robot, "frame", target, position_cost, orientation_cost, task_gain, lm_damping, priority, name,
                         max_position_error, max_rotation_error)
        self.frame = frame
        self.frame_id = robot.scene.frame_id(frame)
        self._columns = robot.group.v_columns
        self._data: pin.Data | None = None  # whose frame placement self._p, self._R view
        self.target = target

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
        self._saturate()

    def hold(self, q: np.ndarray) -> None:
        self.set_target(self.scene.frame_pose(q, self.frame))


register("tasks", "frame", FrameTaskConfig, build_frame_task)
