"""PositionLimit: keep bounded joints inside their position limits."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ...errors import Range
from ...keys import key
from ..kind import BuildContext, register
from .limit import Bounds, Limit, LimitConfig

if TYPE_CHECKING:
    from ..robot import Robot

_GAIN = Range(0.0, 1.0, lo_open=True)


@dataclass
class PositionLimitConfig(LimitConfig):
    """``type: position``: the joints' position limits (URDF, robot.position_limits, joint_limits_file)."""

    gain: float = key(1.0, range=_GAIN)  # the share of the remaining range one step may use


def build_position_limit(config: PositionLimitConfig, context: BuildContext) -> PositionLimit:
    return PositionLimit(context.robot, config.gain)


class PositionLimit(Limit):
    """``-gain (q - q_min) <= dq <= gain (q_max - q)`` for joints with limits (others unbounded).

    Args:
        gain: gamma in (0, 1]; the share of the remaining range one step may use.
    """

    def __init__(self, robot: Robot, gain: float = 1.0, name: str = "position_limit") -> None:
        self.gain = _GAIN.check(gain, f"{name}.gain")
        self.name = name
        group = robot.group
        iv = group.v_indices[group.bounded_v]
        self.q_min = robot.scene.q_min_v[iv]
        self.q_max = robot.scene.q_max_v[iv]
        self._q_idx = _as_slice(group.bounded_q)
        self._lower = np.full(robot.nv, -np.inf)
        self._upper = np.full(robot.nv, np.inf)
        every_joint = len(group.bounded_v) == robot.nv  # then the bounds are written whole, in place
        self._lower_bounded = self._lower if every_joint else self._lower[group.bounded_v]
        self._upper_bounded = self._upper if every_joint else self._upper[group.bounded_v]
        self._v_idx = None if every_joint else group.bounded_v

    def bounds(self, q: np.ndarray) -> Bounds:
        x = q[self._q_idx]
        lower, upper = self._lower_bounded, self._upper_bounded  # the bounds, or scratch when some joints are unbounded
        np.subtract(self.q_min, x, out=lower)
        np.subtract(self.q_max, x, out=upper)
        if self.gain != 1.0:
            lower *= self.gain
            upper *= self.gain
        if self._v_idx is not None:
            self._lower[self._v_idx], self._upper[self._v_idx] = lower, upper
        return Bounds(None, self._lower, self._upper)

    def last_bounds(self) -> Bounds:
        return Bounds(None, self._lower, self._upper)


def _as_slice(idx: np.ndarray) -> slice | np.ndarray:
    """Contiguous indices as a slice (indexing with it is a view), others unchanged."""
    if len(idx) and np.array_equal(idx, np.arange(idx[0], idx[0] + len(idx))):
        return slice(int(idx[0]), int(idx[0]) + len(idx))
    return idx


register("limits", "position", PositionLimitConfig, build_position_limit)
