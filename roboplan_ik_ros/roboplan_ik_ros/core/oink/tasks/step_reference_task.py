"""StepReferenceTask: a task on the step itself (damping, low_acceleration, joint_velocity): per group joint
``cost_i (dq_i - alpha r_i)^2`` with r the kind's reference step (its error) and Jacobian ``-I``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import as_vector
from ...ranges import check_key
from .task import Task

if TYPE_CHECKING:
    from ..robot import Robot


class StepReferenceTask(Task):
    """One row per group joint, Jacobian ``-I`` (full rank: at a priority level it leaves no nullspace to the
    levels below), W = diag(sqrt(cost)) with ``cost`` the kind's runtime key (scalar or group nv) [cost/rad^2]."""

    step_reference = True

    def __init__(self, robot: Robot, type_: str, cost, task_gain: float, lm_damping: float, priority: int,
                 name: str) -> None:
        super().__init__(robot, robot.nv, task_gain, lm_damping, priority, name)
        cost = check_key(cost, f"tasks[{type_}].cost", f"{name}.cost", size=-1)
        self.sqrt_weight[:] = np.sqrt(as_vector(cost, robot.nv, f"{name}.cost"))
        self.jacobian[:] = -np.eye(robot.nv)

    def set_parameter(self, name: str, value: Any) -> None:
        if name == "cost":
            self.sqrt_weight[:] = np.sqrt(np.broadcast_to(np.asarray(value, dtype=float), self.sqrt_weight.shape))
        else:
            super().set_parameter(name, value)
