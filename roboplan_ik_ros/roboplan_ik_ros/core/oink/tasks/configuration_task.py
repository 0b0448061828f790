"""ConfigurationTask: drive the group's joints toward a target configuration (posture)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

import numpy as np
import pinocchio as pin

from ...errors import InvalidInputError, Range, as_vector
from ...ranges import check_key
from ...keys import key
from ..kind import BuildContext, register
from .joint_target_task import JointTargetTask
from .task import TaskConfig, named_state

if TYPE_CHECKING:
    from ..robot import Robot


@dataclass
class ConfigurationTaskConfig(TaskConfig):
    """``type: configuration``: a posture of the group's joints; goals on ``~/<task>/target_joints``."""

    target: Union[str, list[float]] = key("current")  # "current", an SRDF group_state, or one value per joint
    weights: Union[float, list[float]] = key(1.0, range=Range(unit="cost/rad"), size=-1,
                                             runtime="posture cost per joint")
    max_target_speed: float = key(0.5, range=Range(lo_open=True, unit="rad/s"))  # per joint: a goal is shaped (target_shaper.py)

    def configured_goal(self, robot: Robot, q: np.ndarray) -> np.ndarray | None:
        """The group q ``target`` names (:func:`configured_target`); None for "current"."""
        return None if self.target == "current" else configured_target(self, robot, q)

    def srdf_states(self) -> tuple[str, ...]:
        return named_state(self.target)


def configured_target(config: ConfigurationTaskConfig, robot: Robot, q: np.ndarray) -> np.ndarray:
    """The group q that the ``target`` key names at configuration q (full nq; "current": q's)."""
    group = robot.group
    if isinstance(config.target, list):
        names = list(group.joint_names)
        if len(config.target) != len(names):
            raise InvalidInputError(f"target: expected {len(names)} joint values ({names}), got {len(config.target)}")
        return robot.scene.q_from_joint_positions(names, config.target, q)[group.q_indices]
    if config.target == "current":
        return q[group.q_indices]
    return robot.scene.named_configuration(config.target, q)[group.q_indices]


def build_configuration_task(config: ConfigurationTaskConfig, context: BuildContext) -> ConfigurationTask:
    return ConfigurationTask(context.robot, configured_target(config, context.robot, context.q), config.weights,
                             task_gain=config.task_gain, lm_damping=config.lm_damping, priority=config.priority,
                             name=config.name)


class ConfigurationTask(JointTargetTask):
    """Error ``e = difference(q, q_target)`` over the group's velocity indices, Jacobian ``-I``.

    Args:
        q_target: target of the group's joints, size group nq (cos/sin pairs for continuous joints).
        weights: cost per joint (scalar or group nv) [cost]/[rad]; W = diag(sqrt(weights)).
    """

    follower = "posture"  # joint goals, shaped, and joint jog streams (core/control/follower_kinds.py)

    def __init__(
        self,
        robot: Robot,
        q_target,
        weights=1.0,
        task_gain: float = 1.0,
        lm_damping: float = 0.0,
        priority: int = 1,
        name: str = "posture",
    ) -> None:
        super().__init__(robot, robot.nv, q_target, task_gain, lm_damping, priority, name)
        w = as_vector(check_key(weights, "tasks[configuration].weights", f"{name}.weights", size=robot.nv), robot.nv,
                      f"{name}.weights")
        self.sqrt_weight[:] = np.sqrt(w)
        self.jacobian[:] = -np.eye(robot.nv)
        self._columns = robot.group.v_columns  # the group's entries of a full-model v (a slice when contiguous)

    def update(self, q: np.ndarray, data: pin.Data) -> None:
        self.error[:] = pin.difference(self.scene.model, q, self._q_target_full)[self._columns]


register("tasks", "configuration", ConfigurationTaskConfig, build_configuration_task)
