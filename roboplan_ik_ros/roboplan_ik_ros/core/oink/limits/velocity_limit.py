"""VelocityLimit: bound the displacement of one step by dt * v_max."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...errors import InvalidInputError, as_vector, check_positive
from .limit import Bounds, Limit

if TYPE_CHECKING:
    from ..solver import Oink


class VelocityLimit(Limit):
    """``-dt v_max <= dq <= dt v_max``.

    Args:
        dt: control period [s].
        v_max: per-joint speed limit of the group [rad/s or m/s]; None takes the URDF's limits.
    """

    def __init__(self, oink: Oink, dt: float, v_max=None, name: str = "velocity_limit") -> None:
        self.name = name
        self.dt = check_positive(dt, f"{name}.dt")
        if v_max is None:
            v_max = oink.scene.v_max[oink.group.v_indices]
            bad = ~(np.isfinite(v_max) & (v_max > 0))
            if bad.any():
                joints = [oink.group.joint_names[k] for k in np.flatnonzero(bad)]
                raise InvalidInputError(
                    f"{name}.v_max: the URDF gives no usable velocity limit for {joints}; set v_max explicitly"
                )
        self.v_max = as_vector(v_max, oink.nv, f"{name}.v_max")
        if (self.v_max <= 0).any():
            raise InvalidInputError(f"{name}.v_max: expected values > 0, got {self.v_max.tolist()}")
        self._upper = self.dt * self.v_max
        self._lower = -self._upper

    def bounds(self, q: np.ndarray) -> Bounds:
        return Bounds(None, self._lower, self._upper)
