"""JointVelocityTask: track a joint velocity reference, cost * ||dq - v_ref dt||^2 (pink's
JointVelocityTask, with the sign that moves along v_ref)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

import numpy as np
import pinocchio as pin

from ...errors import Range, as_vector, check_positive
from ...keys import key
from ..kind import BuildContext, register
from .step_reference_task import StepReferenceTask
from .task import TaskConfig

if TYPE_CHECKING:
    from ..robot import Robot


@dataclass
class JointVelocityTaskConfig(TaskConfig):
    """``type: joint_velocity``: the group's joint velocities; goals: v (group nv) [rad/s or m/s], 0 at the start."""

    cost: Union[float, list[float]] = key(1.0, range=Range(unit="cost/rad^2"), size=-1,
                                          runtime="cost of the velocity error per joint")


def build_joint_velocity_task(config: JointVelocityTaskConfig, context: BuildContext) -> JointVelocityTask:
    return JointVelocityTask(context.robot, context.dt, config.cost, task_gain=config.task_gain,
                             lm_damping=config.lm_damping, priority=config.priority, name=config.name)


class JointVelocityTask(StepReferenceTask):
    """Error ``v_ref dt`` (group nv) [rad or m], Jacobian ``-I``: the QP term is
    ``sum_i cost_i (dq_i - alpha v_ref,i dt)^2`` [cost] (alpha = task_gain, 1 by default), so alone it
    steps ``dq = v_ref dt``: q moves along v_ref, within the limits. The reference starts at 0 (hold
    still) and :meth:`hold` sets it back to 0. Its Jacobian has full rank: lower priority levels get no
    nullspace from a level that holds it.

    Args:
        dt: control period [s].
        cost: per joint (scalar or group nv) [cost]/[rad^2]; W = diag(sqrt(cost)).
    """

    goal = "velocities"
    follower = "velocities"  # a reference stream, zeroed after command_timeout (core/control/follower_kinds.py)

    def __init__(self, robot: Robot, dt: float, cost=1.0, task_gain: float = 1.0, lm_damping: float = 0.0,
                 priority: int = 1, name: str = "joint_velocity") -> None:
        super().__init__(robot, "joint_velocity", cost, task_gain, lm_damping, priority, name)
        self.dt = check_positive(dt, f"{name}.dt")
        self._step = np.zeros(robot.nv)  # v_ref dt [rad or m]

    @property
    def target(self) -> np.ndarray:
        """v_ref (group nv) [rad/s or m/s]."""
        return self._step / self.dt

    def set_target(self, v) -> None:
        """New velocity reference v_ref (group nv) [rad/s or m/s]."""
        np.multiply(as_vector(v, self.group.nv, f"{self.name}.target"), self.dt, out=self._step)

    def update(self, q: np.ndarray, data: pin.Data) -> None:
        np.copyto(self.error, self._step)

    def hold(self, q: np.ndarray) -> None:
        """Stop: v_ref = 0."""
        self._step.fill(0.0)


register("tasks", "joint_velocity", JointVelocityTaskConfig, build_joint_velocity_task)
