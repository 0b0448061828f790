"""Base class of control barrier functions (CBF): keep h(q) >= 0 forward invariant.

Discrete-time condition per row: ``J_h dq / dt + gamma * h / (1 + |h|) >= 0``, written with the
safety margin m as the QP row ``-J_h dq <= dt * gamma * h / (1 + |h|) - m``.

With acceleration bounds (:meth:`Oink.set_barrier_braking`) a row whose h >= 0 also bounds the
approach per step s = -J_h dq by what can still be braked within h: decelerating at
``a_h = sum_j |J_h,j| alpha_j`` per step^2 after ``lag`` steps, ``s <= b(h)`` with b the larger root of
``(s + a_h/2)^2 + 2 a_h lag s = 2 a_h h`` (at least 0): the row's bound is the smaller of the two. A
barrier with a high gain is then approached no faster than the arm can stop before it. Each barrier also adds
the safe-displacement regularization ``r / (2 ||J_h||^2) ||dq - dq_safe||^2`` (Frobenius norm of
the barrier's stacked Jacobian; dq_safe = 0 unless a subclass says otherwise).

That weight damps every step, near the barrier or not (RoboPlan's form: a lag of the tracking wherever
a barrier is configured). Two options shape it, per barrier (None: RoboPlan's constant form):
``safe_displacement_fade`` D [m] multiplies it by ``f(h_min / D)`` with h_min the least value of the
rows that dq moves (a row whose J_h row is 0, such as a pair of two fixed bodies, never binds),
f(x) = 1 for x <= 0, (1 - x)^2 (1 + 2 x) (a cubic smoothstep: f and f' continuous) for 0 < x < 1 and 0
for x >= 1, so that far from the barrier the step is the one without it and within D the weight rises
to RoboPlan's; ``safe_displacement_max_weight`` caps it (a row whose ||J_h||^2 is tiny, such as a
collision pair near the base, would otherwise weigh r / ||J_h||^2 >> the tasks and freeze the arm).
The rows, which alone keep h >= 0, do not change.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Union

import numpy as np
import pinocchio as pin

from ...errors import Range, check_positive
from ...keys import check_declared, key
from ...ranges import check_key
from ..kind import declare_ranges

if TYPE_CHECKING:
    from ..robot import Robot

_MIN_JACOBIAN_NORM2 = 1e-12
_LARGE = 1e300


@dataclass
class BarrierConfig:
    """The YAML keys every barrier kind has (``barriers:`` entries); a kind's config dataclass adds its own."""

    name: str
    type: str
    gain: float = key(1.0, range=Range(lo_open=True, unit="1/s"), runtime="barrier gain gamma")
    safe_displacement_gain: float = key(1.0, range=Range(), runtime="safe-displacement regularization gain")
    # [m] the safe-displacement weight fades to 0 from this h_min on; None: RoboPlan's constant weight
    safe_displacement_fade: Union[float, None] = key(None, range=Range(lo_open=True, unit="m"))
    # [cost/rad^2] cap of that weight; None: none (RoboPlan)
    safe_displacement_max_weight: Union[float, None] = key(None, range=Range(lo_open=True, unit="cost/rad^2"))
    safety_margin: float = key(0.0, range=Range(0.0, 10.0, unit="m"), runtime="safety margin of the barrier rows")
    given_keys: frozenset = field(default=frozenset(), repr=False, compare=False)  # keys set in the YAML

    def validate(self, path: str) -> None:
        """Check the keys' ranges and the kind's own rules (an InvalidInputError naming the key under ``path``)."""
        check_declared(self, path)

    def barrier_keys(self) -> dict[str, Any]:
        """The keys every barrier's constructor takes, from this config: its name and the common options."""
        return {"name": self.name, **{k: getattr(self, k) for k in OPTION_KEYS}}


declare_ranges("barriers", BarrierConfig)
# The options every barrier has: BarrierConfig's keys but the entry's name and type. Declared once, there: a new
# one is a field of BarrierConfig (its default and range), which Barrier takes, checks and keeps as an attribute.
OPTION_KEYS = tuple(f.name for f in fields(BarrierConfig) if f.name not in ("name", "type", "given_keys"))
_OPTION_DEFAULTS = {f.name: f.default for f in fields(BarrierConfig) if f.name in OPTION_KEYS}


class Barrier(ABC):
    """A barrier with ``m`` rows. Subclasses fill :attr:`value` (h [m]) and :attr:`jacobian` (dh/dq)."""

    needs_geometry = False  # True if update/evaluate need geometry placements

    # a kind's own defaults of the common options (OPTION_KEYS), when constructed directly (the YAML's: its config)
    option_defaults: dict[str, Any] = {}

    def __init__(self, robot: Robot, m: int, dt: float, name: str, **options: Any) -> None:
        """``options``: any of :data:`OPTION_KEYS` (gain, safe_displacement_gain, ...), each checked against the
        range BarrierConfig declares (an error naming ``<name>.<key>``); the others take the kind's default
        (:attr:`option_defaults`) or BarrierConfig's."""
        unknown = sorted(set(options) - set(OPTION_KEYS))
        if unknown:
            raise TypeError(f"{type(self).__name__}: unknown option(s) {', '.join(unknown)}; every barrier takes "
                            f"{', '.join(OPTION_KEYS)}")
        self.name = name
        self.scene = robot.scene  # model, frames and collision geometry
        self.group = robot.group  # the joints dq moves
        self.dt = check_positive(dt, f"{name}.dt")
        for option in OPTION_KEYS:
            value = options.get(option, self.option_defaults.get(option, _OPTION_DEFAULTS[option]))
            setattr(self, option, None if value is None else check_key(value, f"barriers[].{option}", f"{name}.{option}"))
        self.value = np.zeros(m)  # h at the last update [m]; +inf for an unused row
        self.jacobian = np.zeros((m, robot.nv))  # dh/dq over the group
        self.G = np.zeros((m, robot.nv))  # -J_h
        self.upper = np.zeros(m)
        self.row_names: list[str] = [""] * m
        self._scratch = np.zeros(m)
        self._h_reference = np.zeros(m)

    @property
    def size(self) -> int:
        return len(self.value)

    def untracked_floor(self, boundary_tolerance: float = 0.0) -> float:
        """After :meth:`evaluate`: the least h - floor over what the rows do not track (a collision pair
        that was not among the closest at q); >= 0 when nothing untracked crossed its floor. The
        barrier check refuses a step that makes it negative."""
        return math.inf

    @property
    def measured_value(self) -> np.ndarray:
        """h at the last update as measured (:attr:`value` may report a row within tolerance of its
        boundary as on it); what the solver's barrier check compares the next configuration with."""
        return self.value

    @abstractmethod
    def update(self, q: np.ndarray, data: pin.Data, geom_data: pin.GeometryData) -> None:
        """Fill value and jacobian at q (data holds joint Jacobians, frames and, if needed, geometry at q)."""

    @abstractmethod
    def evaluate(self, data: pin.Data, geom_data: pin.GeometryData) -> np.ndarray:
        """h for the rows of the last update, at the configuration whose kinematics ``data`` holds (an array
        that the next call may reuse, never :attr:`value`)."""

    def write_rows_into(self, G: np.ndarray, upper: np.ndarray) -> None:
        """From now on :meth:`constraint` writes into ``G`` and ``upper`` (views into the solver's
        stacked constraint arrays, so that nothing is copied per step)."""
        G[:], upper[:] = self.G, self.upper
        self.G, self.upper = G, upper

    def constraint(self, reference: np.ndarray | None = None,
                   braking: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(G, upper) with ``G dq <= upper``; unused rows have G = 0 and upper = inf. With a barrier reference
        ``r`` (the solver's, :meth:`Oink.set_barrier_reference`) the row is ``G (dq - r) <= b(h + J_h r)``;
        ``braking`` = [lag, alpha per joint] (:meth:`Oink.set_barrier_braking`; lag < 0 or None: off)."""
        h, up, scratch = self.value, self.upper, self._scratch
        np.negative(self.jacobian, out=self.G)
        if reference is not None:
            h = np.dot(self.jacobian, reference, out=self._h_reference)
            h += self.value  # h at q ⊕ r, to first order
        np.abs(h, out=scratch)
        np.minimum(scratch, _LARGE, out=scratch)  # an unused row: inf / (1 + 1e300) = inf, not inf / inf = nan
        scratch += 1.0
        np.divide(h, scratch, out=up)  # h / (1 + |h|)
        up *= self.dt * self.gain
        if braking is not None and braking[0] >= 0.0:
            np.minimum(up, _braking_bound(h, np.abs(self.jacobian) @ braking[1:], braking[0]), out=up)
        up -= self.safety_margin
        if reference is not None:
            up += np.dot(self.G, reference, out=scratch)
        return self.G, up

    def safe_displacement(self) -> np.ndarray | None:
        """dq_safe of the regularization; None means zero."""
        return None

    def regularization_weight(self) -> float:
        """r / ||J_h||^2 (0 when the Jacobian vanishes), times the fade f(h_min / D) and capped at the
        max weight when those are set (module docstring); the kernel computes the same (kernel_math.h)."""
        norm2 = float(np.vdot(self.jacobian, self.jacobian))
        w = self.safe_displacement_gain / norm2 if norm2 > _MIN_JACOBIAN_NORM2 else 0.0
        fade = self.safe_displacement_fade
        if fade is not None and w > 0.0:  # h_min over the rows that dq moves (a static pair's row never binds)
            h = self.value[np.einsum("ij,ij->i", self.jacobian, self.jacobian) > _MIN_JACOBIAN_NORM2]
            w *= safe_displacement_fade(float(np.fmin.reduce(h)) if h.size else math.inf, fade)
        cap = self.safe_displacement_max_weight
        return w if cap is None or w <= cap else cap


    def set_braking_lookahead(self, steps: float) -> None:
        """The steps the arm needs to brake to rest from its top speed (the acceleration limit's): a barrier
        that chooses which of its candidates get rows (a collision barrier) looks this far ahead."""

    def configure_notes(self) -> list[str]:
        """What the node logs about this barrier at configure (how it computes, a risky setting); none here."""
        return []

    def expect_prepare(self) -> None:
        """The scene's obstacles just changed and :meth:`prepare` will follow outside the loop's lock (called where
        they changed, under it); nothing here (a kind with tables built from the obstacles: the collision
        barrier)."""

    def prepare(self) -> None:
        """After the scene's obstacles changed: build what the next :meth:`update` needs for them, in the thread
        that changed them (not the control tick); nothing here."""

    @property
    def world_box(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(p_min, p_max) [m] of the world-frame box this barrier keeps a point in (RViz draws it); None: not a
        box (the default)."""
        return None

    def row_hint(self, row: int) -> str:
        """What to change when ``row`` cannot be satisfied within the limits (the end of a failure status)."""
        return "relax the barrier or the joint limits"

    def set_parameter(self, name: str, value: Any) -> None:
        """A runtime parameter of this barrier's kind changed (already checked against its range)."""
        setattr(self, name, float(value))

def safe_displacement_fade(h_min: float, fade: float) -> float:
    """f(h_min / fade): 1 at or inside the barrier (h_min <= 0), 0 from ``fade`` [m] on (and for NaN),
    the cubic smoothstep (1 - x)^2 (1 + 2 x) between (f and its derivative are continuous)."""
    x = h_min / fade
    if not x < 1.0:
        return 0.0
    if x <= 0.0:
        return 1.0
    return (1.0 - x) * (1.0 - x) * (1.0 + 2.0 * x)


def _braking_bound(h: np.ndarray, a_h: np.ndarray, lag: float) -> np.ndarray:
    """Per row: the approach per step still braked within h (module docstring); +inf where h < 0
    (recovery), h is infinite (unused row) or the row has no deceleration."""
    k = 1.0 + 2.0 * lag
    with np.errstate(invalid="ignore", over="ignore"):
        b = 0.5 * (-a_h * k + np.sqrt(a_h * a_h * (k * k - 1.0) + 8.0 * a_h * h))
    return np.where((h >= 0.0) & np.isfinite(h) & (a_h > 0.0), np.maximum(b, 0.0), np.inf)
