"""A task kind written for the tests, outside the package: ``frame_point`` moves a frame's origin to a world point.

It derives from the Task base alone (no existing kind) and names the known follower "point" (core/control/
follower_kinds.py): the control loop and the node must give it a shaped point goal, a leash and a
``~/<task>/target_point`` topic from that class attribute, with no edit in core/control or node/ (issue 33).
The :func:`frame_point_kind` fixture registers it for one test and removes it after.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin
import pytest

from roboplan_ik_ros.core.errors import as_vector
from roboplan_ik_ros.core.keys import key
from roboplan_ik_ros.core.oink import kind as kind_registry
from roboplan_ik_ros.core.oink.tasks.task import Task, TaskConfig

TYPE = "frame_point"


@dataclass
class FramePointConfig(TaskConfig):
    frame: str = key("")
    # the "point" follower's shaping keys (as the com kind's): no range declared, nothing added to RANGES
    max_target_speed: float = key(0.1)  # [m/s]
    max_target_acceleration: float = key(0.5)  # [m/s^2]
    max_target_jerk: float = key(5.0)  # [m/s^3]
    target_leash: float = key(0.05)  # [m] target to the frame's origin


class FramePointTask(Task):
    """Error ``p_target - p_frame`` [m, world], Jacobian minus the frame Jacobian's linear rows."""

    goal = "point"
    follower = "point"

    def __init__(self, robot, frame: str, priority: int, name: str) -> None:
        super().__init__(robot, 3, 1.0, 0.0, priority, name)
        self.frame_id = robot.scene.frame_id(frame)
        self._columns = robot.group.v_columns
        self._target = np.zeros(3)

    @property
    def target(self) -> np.ndarray:
        return self._target.copy()

    def set_target(self, point) -> None:
        self._target[:] = as_vector(point, 3, f"{self.name}.target")

    def update(self, q: np.ndarray, data: pin.Data) -> None:
        np.subtract(self._target, data.oMf[self.frame_id].translation, out=self.error)
        J = pin.getFrameJacobian(self.scene.model, data, self.frame_id, pin.LOCAL_WORLD_ALIGNED)
        np.negative(J[:3, self._columns], out=self.jacobian)

    def hold(self, q: np.ndarray) -> None:
        pin.framesForwardKinematics(self.scene.model, self.scene.data, q)
        self.set_target(self.scene.data.oMf[self.frame_id].translation)

    def leash_point(self, data: pin.Data, out: np.ndarray) -> np.ndarray:
        out[:] = pin.updateFramePlacement(self.scene.model, data, self.frame_id).translation
        return out


def build_frame_point_task(config: FramePointConfig, context) -> FramePointTask:
    task = FramePointTask(context.robot, config.frame, config.priority, config.name)
    task.hold(context.q)
    return task


@pytest.fixture
def frame_point_kind():
    """``type: frame_point`` registered for the test (removed after: other tests list every registered kind)."""
    tasks = kind_registry.kinds("tasks")  # the package's kinds first (discovered once)
    assert TYPE not in tasks
    kind_registry.register("tasks", TYPE, FramePointConfig, build_frame_point_task)
    try:
        yield TYPE
    finally:
        del tasks[TYPE]
