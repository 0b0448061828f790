"""JointLimitBarrier: keep each bounded joint of the group a margin away from its position limits.

Two rows per joint of the group with finite position limits (revolute and prismatic; continuous joints
have none), with span = q_max - q_min and margin = margin_fraction * span:

    h_lower = q - (q_min + margin),    dh/dq = +e_i
    h_upper = (q_max - margin) - q,    dh/dq = -e_i

in the joint's unit (rad or m). RoboPlan's JointLimitBarrier has the same rows, but clamps h at 0
(``max(h, 0)``) so that a joint inside its margin is held where it is; here h < 0 means violated, as for
every barrier, and the solver's recovery moves the joint back out of the margin (its CBF row asks
``dq >= dt * gain * |h| / (1 + |h|)`` outward, within the limits). That matters when the arm starts inside
a margin: it is brought out gently instead of being stuck there. The rows sit on top of the hard position
limit (``limits: - type: position``), which they do not replace.

A 45 % margin at most (``margin_fraction <= 0.45``) leaves every joint a range of 10 % of its span.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin

from ...errors import InvalidInputError, Range
from ...ranges import check_key
from ...keys import key
from ..kind import BuildContext, register
from .barrier import Barrier, BarrierConfig

if TYPE_CHECKING:
    from ..robot import Robot


@dataclass
class JointLimitBarrierConfig(BarrierConfig):
    """``type: joint_limit``: every bounded joint of the group at least margin_fraction * span inside its limits."""

    # no safe-displacement term unless asked: with dq_safe = 0 it would only damp every step of every task
    safe_displacement_gain: float = key(0.0, range=Range(), runtime="safe-displacement regularization gain")
    margin_fraction: float = key(0.05, range=Range(0.0, 0.45))  # share of each joint's span kept free at each end


def build_joint_limit_barrier(config: JointLimitBarrierConfig, context: BuildContext) -> JointLimitBarrier:
    return JointLimitBarrier(context.robot, context.dt, config.margin_fraction, **config.barrier_keys())


class JointLimitBarrier(Barrier):
    """Rows ``q_i - (q_min_i + m_i)`` (lower) for the group's bounded joints, then ``(q_max_i - m_i) - q_i``
    (upper), with ``m_i = margin_fraction * (q_max_i - q_min_i)`` (module docstring).

    Args:
        margin_fraction: share of each joint's span kept free at each end, in [0, 0.45].
    """

    option_defaults = {"safe_displacement_gain": JointLimitBarrierConfig.safe_displacement_gain}  # the kind's YAML default: 0

    def __init__(
        self,
        robot: Robot,
        dt: float,
        margin_fraction: float = 0.05,
        name: str = "joint_limit",
        **options: Any,
    ) -> None:
        fraction = check_key(margin_fraction, "barriers[joint_limit].margin_fraction", f"{name}.margin_fraction")
        group, scene = robot.group, robot.scene
        bounded = group.bounded_v  # indices into the group's v of the joints with finite limits
        if len(bounded) == 0:
            raise InvalidInputError(f"{name}: no joint of group {group.name!r} has finite position limits; "
                                    f"remove the joint_limit barrier")
        k = len(bounded)
        super().__init__(robot, 2 * k, dt, name, **options)
        iv = group.v_indices[bounded]
        q_min, q_max = scene.q_min_v[iv], scene.q_max_v[iv]
        self.margin = np.clip(fraction * (q_max - q_min), 0.0, 0.45 * (q_max - q_min))  # [rad or m] per joint
        self.q_low = q_min + self.margin  # the barrier's bounds: h_lower = q - q_low, h_upper = q_high - q
        self.q_high = q_max - self.margin
        self.joint_names = [group.joint_names[i] for i in bounded]
        self.row_names = [f"{j} lower" for j in self.joint_names] + [f"{j} upper" for j in self.joint_names]
        self._joint_ids = [int(j) for j in group.joint_ids[bounded]]
        idx = np.asarray(group.bounded_q)
        contiguous = np.array_equal(idx, np.arange(idx[0], idx[0] + k))
        self._q_idx = slice(int(idx[0]), int(idx[0]) + k) if contiguous else idx  # their entries of the full q
        self.jacobian[np.arange(2 * k), np.concatenate([bounded, bounded])] = np.repeat([1.0, -1.0], k)
        self._q = np.zeros(k)  # the bounded joints' q (when not a view of q)
        self._evaluated = np.zeros(2 * k)
        self._data: pin.Data | None = None  # whose joint data self._joint_data holds
        self._joint_data: list = []

    def _h(self, x: np.ndarray, out: np.ndarray) -> np.ndarray:
        """h of the bounded joints at positions x, into ``out``."""
        k = len(x)
        np.subtract(x, self.q_low, out=out[:k])
        np.subtract(self.q_high, x, out=out[k:])
        return out

    def update(self, q: np.ndarray, data: pin.Data, geom_data: pin.GeometryData) -> None:
        x = q[self._q_idx] if isinstance(self._q_idx, slice) else np.take(q, self._q_idx, out=self._q)
        self._h(x, self.value)

    def evaluate(self, data: pin.Data, geom_data: pin.GeometryData) -> np.ndarray:
        # ``data`` holds placements at the checked configuration, not q itself: each joint's data keeps its q
        # (references into data.joints follow every later kinematics call); a loop of at most the group's joints
        if data is not self._data:
            self._joint_data, self._data = [data.joints[j] for j in self._joint_ids], data
        self._q[:] = [jd.joint_q[0] for jd in self._joint_data]
        return self._h(self._q, self._evaluated)

    def row_hint(self, row: int) -> str:
        k = len(self.joint_names)
        i = row % k
        if row < k:
            where = f"above {self.q_low[i]:.4g} (its lower limit + a margin of {self.margin[i]:.4g})"
        else:
            where = f"below {self.q_high[i]:.4g} (its upper limit - a margin of {self.margin[i]:.4g})"
        return (f"joint {self.joint_names[i]!r} cannot stay {where}: lower margin_fraction, or widen the joint's "
                f"position limits")


register("barriers", "joint_limit", JointLimitBarrierConfig, build_joint_limit_barrier)
