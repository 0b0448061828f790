"""Base class of OInK tasks: a residual ``J dq + alpha e`` to drive to zero, weighted by W."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

import numpy as np
import pinocchio as pin

from ...errors import InvalidInputError
from ...ranges import check_key

if TYPE_CHECKING:
    from ..robot import Robot


class Task(ABC):
    """A task contributes ``1/2 || W (J N dq + alpha e) ||^2 + mu/2 ||dq||^2`` to the QP objective.

    Subclasses fill :attr:`error` (shape (m,)) and :attr:`jacobian` (shape (m, nv_group)) in
    :meth:`update`; the Jacobian carries the sign that makes ``J dq = -alpha e`` move toward the
    target (``J = -d(measured)/dq``). :attr:`sqrt_weight` is the diagonal of W (sqrt of the costs).

    Args:
        task_gain: alpha in (0, 1], the share of the error corrected in one step (low-pass gain).
        lm_damping: Levenberg-Marquardt factor; mu = lm_damping * ||W alpha e||^2 [cost].
        priority: integer >= 1; 1 is highest. Lower priorities act in the nullspace of higher ones.
    """

    def __init__(self, robot: Robot, m: int, task_gain: float, lm_damping: float, priority: int, name: str) -> None:
        gain = check_key(task_gain, "tasks[].task_gain", f"{name}.task_gain")
        if isinstance(priority, bool) or not isinstance(priority, (int, np.integer)) or priority < 1:
            raise InvalidInputError(f"{name}.priority: expected an integer >= 1 (1 = highest), got {priority!r}")
        self.name = name
        self.task_gain = gain
        self.lm_damping = check_key(lm_damping, "tasks[].lm_damping", f"{name}.lm_damping")
        self.priority = int(priority)
        self.scene = robot.scene  # model, frames and limits
        self.group = robot.group  # the joints dq moves
        self.error = np.zeros(m)
        self.jacobian = np.zeros((m, robot.nv))
        self.sqrt_weight = np.ones(m)

    @abstractmethod
    def update(self, q: np.ndarray, data: pin.Data) -> None:
        """Fill :attr:`error` and :attr:`jacobian` at q; ``data`` holds joint Jacobians and frames at q."""
