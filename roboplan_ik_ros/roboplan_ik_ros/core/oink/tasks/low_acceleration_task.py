"""LowAccelerationTask: penalize the change of the step, cost * ||dq - dq_prev||^2 (pink's
LowAccelerationTask, pymanoid's MinAccelTask)."""

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
class LowAccelerationTaskConfig(TaskConfig):
    """``type: low_acceleration``: steps that change little from one to the next; no goal."""

    cost: Union[float, list[float]] = key(1.0, range=Range(unit="cost/rad^2"), size=-1,
                                          runtime="cost of the change of the step per joint")


def build_low_acceleration_task(config: LowAccelerationTaskConfig, context: BuildContext) -> LowAccelerationTask:
    return LowAccelerationTask(context.robot, config.cost, task_gain=config.task_gain, lm_damping=config.lm_damping,
                               priority=config.priority, name=config.name)


class LowAccelerationTask(StepReferenceTask):
    """Error ``dq_prev = q ⊖ q_prev`` (group nv) with q_prev the configuration of the task's previous
    update, Jacobian ``-I``: the QP term is ``sum_i cost_i (dq_i - alpha dq_prev,i)^2`` [cost], a
    discrete acceleration penalty (alpha = task_gain, 1 by default). With commanded state feedback q is
    the previous command, so dq_prev is exactly the previous step; with measured feedback it is the
    measured motion over one period. At the first update, and after :meth:`hold`, dq_prev = 0 (at rest).

    It carries the motion on: nothing else slows the motion the tracking tasks leave free (a redundant
    arm's self-motion), which then goes on after the goal is reached (Panda, 16 cm goal, cost 1: still
    2 mrad per step after 600 steps). Pair it with a :class:`DampingTask` (pink's advice): with
    damping 0.1 the arm comes to rest. At the priority of a tracking task its Jacobian has full rank,
    so lower priority levels get no nullspace: weigh a posture task in at the same priority instead.

    Args:
        cost: per joint (scalar or group nv) [cost]/[rad^2]; W = diag(sqrt(cost)).
    """

    def __init__(self, robot: Robot, cost=1.0, task_gain: float = 1.0, lm_damping: float = 0.0, priority: int = 1,
                 name: str = "low_acceleration") -> None:
        super().__init__(robot, "low_acceleration", cost, task_gain, lm_damping, priority, name)
        self._columns = robot.group.v_columns
        self._q_previous = robot.scene.neutral()  # full nq, valid once _has_previous
        self._has_previous = False

    def update(self, q: np.ndarray, data: pin.Data) -> None:
        if self._has_previous:
            self.error[:] = pin.difference(self.scene.model, self._q_previous, q)[self._columns]
        else:
            self.error.fill(0.0)
            self._has_previous = True
        np.copyto(self._q_previous, q)

    def hold(self, q: np.ndarray) -> None:
        """At rest at q: the next update at q sees no previous motion."""
        np.copyto(self._q_previous, q)
        self._has_previous = True


register("tasks", "low_acceleration", LowAccelerationTaskConfig, build_low_acceleration_task)
