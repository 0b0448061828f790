"""VelocityLimit: bound the displacement of one step by dt * v_max."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

import numpy as np

from ...errors import InvalidInputError, as_vector, check_positive
from ...keys import key
from ..kind import BuildContext, register
from .limit import Bounds, Limit, LimitConfig

if TYPE_CHECKING:
    from ..robot import Robot


@dataclass
class VelocityLimitConfig(LimitConfig):
    """``type: velocity``: |dq| <= dt v_max."""

    v_max: Union[None, float, list[float]] = key(None)  # [rad/s or m/s]; None = URDF (or robot.joint_limits_file)


def build_velocity_limit(config: VelocityLimitConfig, context: BuildContext) -> VelocityLimit:
    return VelocityLimit(context.robot, context.dt, config.v_max)


class VelocityLimit(Limit):
    """``-dt v_max <= dq <= dt v_max``.

    With a reference offset ``r`` (:meth:`set_reference`) the bounds become
    ``r - dt v_max <= dq <= r + dt v_max``: the step's end point stays within ``dt v_max`` of the
    reference configuration ``q ⊕ r`` instead of q itself. A controller that linearizes at the
    measured state uses it to keep each command within ``dt v_max`` of its previous command.

    Args:
        dt: control period [s].
        v_max: per-joint speed limit of the group [rad/s or m/s]; None takes the URDF's limits.
    """

    def __init__(self, robot: Robot, dt: float, v_max=None, name: str = "velocity_limit") -> None:
        self.name = name
        self.dt = check_positive(dt, f"{name}.dt")
        if v_max is None:
            v_max = robot.scene.v_max[robot.group.v_indices]
            bad = ~(np.isfinite(v_max) & (v_max > 0))
            if bad.any():
                joints = [robot.group.joint_names[k] for k in np.flatnonzero(bad)]
                raise InvalidInputError(
                    f"{name}.v_max: the URDF gives no usable velocity limit for {joints}; set v_max explicitly"
                )
        self.v_max = as_vector(v_max, robot.nv, f"{name}.v_max")
        if (self.v_max <= 0).any():
            raise InvalidInputError(f"{name}.v_max: expected values > 0, got {self.v_max.tolist()}")
        self._step = self.dt * self.v_max  # [rad or m] per step
        self._upper = self._step.copy()
        self._lower = -self._step

    def set_reference(self, offset: np.ndarray | None) -> None:
        """Centre the bounds on ``offset`` = q_reference ⊖ q over the group (None: on q itself)."""
        if offset is None:
            self._upper[:] = self._step
            np.negative(self._step, out=self._lower)
        else:
            np.add(offset, self._step, out=self._upper)
            np.subtract(offset, self._step, out=self._lower)

    def bounds(self, q: np.ndarray) -> Bounds:
        return Bounds(None, self._lower, self._upper)

    def last_bounds(self) -> Bounds:
        return Bounds(None, self._lower, self._upper)


register("limits", "velocity", VelocityLimitConfig, build_velocity_limit)
