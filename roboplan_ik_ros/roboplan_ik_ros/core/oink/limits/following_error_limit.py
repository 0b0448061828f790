"""FollowingErrorLimit: the command may run at most ``max_error`` ahead of the measured state."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...errors import check_positive
from .limit import Bounds, Limit

if TYPE_CHECKING:
    from ..robot import Robot


class FollowingErrorLimit(Limit):
    """With ``e = q_command ⊖ q_measured`` per joint of the group (set each step with
    :meth:`set_following_error`), bounds the step so that ``|e + dq| <= max_error`` where possible,
    and otherwise so that it does not grow: ``min(0, -max_error - e) <= dq <= max(0, max_error - e)``.

    The command waits for a robot that trails it (a lagging position controller, a blocked
    joint) instead of being pulled back to the measurement: dq = 0 is always allowed, so the
    limit never conflicts with the others and never makes a command jump.

    Args:
        max_error: [rad or m] per joint.
    """

    def __init__(self, robot: Robot, max_error: float, name: str = "following_error_limit") -> None:
        self.name = name
        self.max_error = check_positive(max_error, f"{name}.max_error")
        self._lower = np.zeros(robot.nv)
        self._upper = np.zeros(robot.nv)
        self.set_following_error(np.zeros(robot.nv))

    def set_following_error(self, e: np.ndarray) -> None:
        """e = commanded ⊖ measured over the group's joints [rad or m]."""
        np.minimum(-self.max_error - e, 0.0, out=self._lower)
        np.maximum(self.max_error - e, 0.0, out=self._upper)

    def include(self, dq: np.ndarray) -> None:
        """Widen the bounds to contain ``dq`` (after :meth:`set_following_error`): with acceleration
        bounds a moving joint cannot stop at once, and braking as hard as they allow must stay feasible."""
        np.minimum(self._lower, dq, out=self._lower)
        np.maximum(self._upper, dq, out=self._upper)

    def bounds(self, q: np.ndarray) -> Bounds:
        return Bounds(None, self._lower, self._upper)

    def last_bounds(self) -> Bounds:
        return Bounds(None, self._lower, self._upper)
