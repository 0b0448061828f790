"""PositionLimit: keep bounded joints inside their position limits."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...errors import InvalidInputError, check_positive
from .limit import Bounds, Limit

if TYPE_CHECKING:
    from ..solver import Oink


class PositionLimit(Limit):
    """``-gain (q - q_min) <= dq <= gain (q_max - q)`` for joints with limits (others unbounded).

    Args:
        gain: gamma in (0, 1]; the share of the remaining range one step may use.
    """

    def __init__(self, oink: Oink, gain: float = 1.0, name: str = "position_limit") -> None:
        self.gain = check_positive(gain, f"{name}.gain")
        if self.gain > 1.0:
            raise InvalidInputError(f"{name}.gain: expected a value in (0, 1], got {gain!r}")
        self.name = name
        group = oink.group
        self._q_idx = group.bounded_q
        self._v_idx = group.bounded_v
        iv = group.v_indices[group.bounded_v]
        self.q_min = oink.scene.q_min_v[iv]
        self.q_max = oink.scene.q_max_v[iv]
        self._lower = np.full(oink.nv, -np.inf)
        self._upper = np.full(oink.nv, np.inf)

    def bounds(self, q: np.ndarray) -> Bounds:
        x = q[self._q_idx]
        self._lower[self._v_idx] = self.gain * (self.q_min - x)
        self._upper[self._v_idx] = self.gain * (self.q_max - x)
        return Bounds(None, self._lower, self._upper)
