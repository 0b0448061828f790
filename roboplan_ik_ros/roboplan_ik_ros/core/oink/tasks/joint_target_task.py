"""JointTargetTask: the part of a task whose target is joint values (configuration, joint): the target, its
setter, holding still and the per-joint weights as a runtime parameter."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import as_vector
from .task import Task

if TYPE_CHECKING:
    from ..robot import Robot


class JointTargetTask(Task):
    """The target is the group's q (size group nq), kept in a full-model q (other joints: neutral, never read)
    so that ``pin.difference`` gives the error of every joint kind; ``sqrt_weight`` per row."""

    goal = "joints"

    def __init__(self, robot: Robot, m: int, q_target, task_gain: float, lm_damping: float, priority: int,
                 name: str) -> None:
        super().__init__(robot, m, task_gain, lm_damping, priority, name)
        self._q_target_full = robot.scene.neutral()
        self.set_target(q_target)

    def set_target(self, q_target) -> None:
        """New target: the group's q (size group nq)."""
        self._q_target_full[self.group.q_indices] = as_vector(q_target, self.group.nq, f"{self.name}.target")

    @property
    def target(self) -> np.ndarray:
        return self._q_target_full[self.group.q_indices]

    def hold(self, q: np.ndarray) -> None:
        self.set_target(q[self.group.q_indices])

    def set_parameter(self, name: str, value: Any) -> None:
        if name == "weights":
            self.sqrt_weight[:] = np.sqrt(np.broadcast_to(np.asarray(value, dtype=float), self.sqrt_weight.shape))
        else:
            super().set_parameter(name, value)
