"""ConfigurationTask: drive the group's joints toward a target configuration (posture)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pinocchio as pin

from ...errors import as_vector
from ...ranges import check_key
from .task import Task

if TYPE_CHECKING:
    from ..robot import Robot


class ConfigurationTask(Task):
    """Error ``e = difference(q, q_target)`` over the group's velocity indices, Jacobian ``-I``.

    Args:
        q_target: target of the group's joints, size group nq (cos/sin pairs for continuous joints).
        weights: cost per joint (scalar or group nv) [cost]/[rad]; W = diag(sqrt(weights)).
    """

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
        super().__init__(robot, robot.nv, task_gain, lm_damping, priority, name)
        w = as_vector(check_key(weights, "tasks[].weights", f"{name}.weights", size=robot.nv), robot.nv,
                      f"{name}.weights")
        self.sqrt_weight[:] = np.sqrt(w)
        self.jacobian[:] = -np.eye(robot.nv)
        self._q_target_full = robot.scene.neutral()
        self._columns = robot.group.v_columns  # the group's entries of a full-model v (a slice when contiguous)
        self.set_target(q_target)

    def set_target(self, q_target) -> None:
        """New target for the group's joints (size group nq)."""
        self._q_target_full[self.group.q_indices] = as_vector(
            q_target, self.group.nq, f"{self.name}.q_target"
        )

    @property
    def target(self) -> np.ndarray:
        return self._q_target_full[self.group.q_indices]

    def update(self, q: np.ndarray, data: pin.Data) -> None:
        self.error[:] = pin.difference(self.scene.model, q, self._q_target_full)[self._columns]
