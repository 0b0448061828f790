"""DampingTask: penalize the step itself, cost * ||dq||^2 (pink's DampingTask, pymanoid's MinVelTask)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

import numpy as np
import pinocchio as pin

from ...errors import Range
from ...keys import key
from ..kind import BuildContext, register
from .step_reference_task import StepReferenceTask
from .task import TaskConfig

if TYPE_CHECKING:
    from ..robot import Robot


@dataclass
class DampingTaskConfig(TaskConfig):
    """``type: damping``: the least step; no goal."""

    cost: Union[float, list[float]] = key(0.01, range=Range(unit="cost/rad^2"), size=-1,
                                          runtime="cost of the step per joint")


def build_damping_task(config: DampingTaskConfig, context: BuildContext) -> DampingTask:
    return DampingTask(context.robot, config.cost, task_gain=config.task_gain, lm_damping=config.lm_damping,
                       priority=config.priority, name=config.name)


class DampingTask(StepReferenceTask):
    """Error 0 (group nv), Jacobian ``-I``: the QP term is ``sum_i cost_i dq_i^2`` [cost], the step's
    size. Beside tracking tasks it trades a little tracking speed for smaller steps (the arm slows down
    most where the tasks would ask for large joint motion: near singularities). Its Jacobian has full
    rank: at the priority of a tracking task it leaves no nullspace to the lower levels (a priority-2
    posture or joint task then barely moves: 0.13 mrad of 0.3 rad, measured); at the lowest priority it
    penalizes only the motion the higher levels leave free.

    Args:
        cost: per joint (scalar or group nv) [cost]/[rad^2]; W = diag(sqrt(cost)).
    """

    def __init__(self, robot: Robot, cost=0.01, task_gain: float = 1.0, lm_damping: float = 0.0, priority: int = 1,
                 name: str = "damping") -> None:
        super().__init__(robot, "damping", cost, task_gain, lm_damping, priority, name)

    def update(self, q: np.ndarray, data: pin.Data) -> None:
        pass  # the error stays 0 and the Jacobian -I


register("tasks", "damping", DampingTaskConfig, build_damping_task)
