"""Where the control loop's command goes when it does not follow a step: a hold, a refused step, a pause, a
controlled stop (deactivate).

Without an acceleration limit a stop repeats the previous command (the robot stops at once). With one, a stop is
a motion too: the command brakes along the path at the bounds (:meth:`AccelerationLimit.braking_step`), over many
ticks, and a stop after a refused step must be no less safe than the step it replaces (:meth:`Braking.safest_from`:
turned back along the barrier rows, or braking joint by joint, when the path's braking would cross a barrier's
floor). The acceleration limit must leave room for that braking inside the following leash
(:meth:`Braking.check_reserve`).
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidInputError
from ..model.scene import Scene
from ..oink import AccelerationLimit
from ..oink.controller import OinkController
from .following_speed import min_jerk


class Braking:
    """The stops of one controller build (``ctrl`` and its acceleration limit ``accel``, None without one: rebuilt
    with them). ``counts``: the loop's counters (:class:`~.control_loop.LoopCounters`: corrected and hardest stops).
    Each method expects the acceleration limit's history set for this tick (the step's start state)."""

    def __init__(self, scene: Scene, ctrl: OinkController, accel: AccelerationLimit | None, barrier_tolerance: float,
                 counts) -> None:
        self.scene, self.ctrl, self.accel = scene, ctrl, accel
        self.barrier_tolerance = barrier_tolerance
        self.counts = counts
        nv = scene.model.nv
        self._dq_brake = np.zeros(nv)  # the braking step along the path
        self._dq_stop = np.zeros(nv)  # safest_from's corrected or hardest braking

    def braked(self, q: np.ndarray) -> np.ndarray:
        """q ⊕ the acceleration limit's braking step at q."""
        dq = self.ctrl.oink.scatter(self.accel.braking_step(q), out=self._dq_brake)
        return self.scene.integrate(q, dq)

    def from_start(self, q: np.ndarray, previous: np.ndarray) -> np.ndarray:
        """Where a hold goes from the step's start q: the ``previous`` command, or with an acceleration limit the
        braking step (zero once at rest)."""
        if self.accel is None:
            return previous
        return self.braked(q)

    def safest_from(self, q: np.ndarray, previous: np.ndarray) -> np.ndarray:
        """Where a hold goes from q when the step failed. A stop is a motion too (with an acceleration limit the
        arm brakes over many ticks), and it must be no less safe than what it replaces: the braking along the
        path (:meth:`from_start`) when the barrier check accepts it, else that braking corrected back along the
        failing rows' gradients within the box limits (:meth:`Oink.correct_step`), else the hardest braking joint by
        joint (corrected the same way if it fails the check) when that ends farther above the check's floors
        (:meth:`Oink.step_margin`; it brakes every joint at its bound, where the path's braking brakes all at the
        pace of the slowest)."""
        q_brake = self.from_start(q, previous)
        barriers, accel = self.ctrl.barriers, self.accel
        if accel is None or not barriers:  # the previous command again: no motion of the stream
            return q_brake
        oink, tolerance = self.ctrl.oink, self.barrier_tolerance
        margin = oink.step_margin(q, self._dq_brake, barriers, tolerance)
        if margin >= 0.0:
            return q_brake
        # the path's braking crosses a floor (an arm sliding along a curved surface brakes straight on, into it):
        # turned back along the rows' gradients within the box limits, it brakes along the surface
        dq = self._dq_stop
        dq[:] = self._dq_brake
        if oink.correct_step(q, dq, barriers, tolerance):
            self.counts.corrected_stops += 1
            return self.scene.integrate(q, dq)
        dq = oink.scatter(accel.hardest_braking_step(q), out=self._dq_stop)
        hardest = oink.step_margin(q, dq, barriers, tolerance)
        if hardest < 0.0 and oink.correct_step(q, dq, barriers, tolerance):
            self.counts.corrected_stops += 1
            return self.scene.integrate(q, dq)
        if hardest <= margin:
            return q_brake
        self.counts.hardest_stops += 1
        return self.scene.integrate(q, dq)

    def time_bound(self, v_max: np.ndarray) -> float:
        """[s] A generous bound on a stop from any velocity within ``v_max`` and the bounds: twice the slowest
        joint's v_max/a_max + a_max/j_max, + 0.1 s (1 s without an acceleration limit). inf when that exceeds the
        float range (a v_max near it, a subnormal a_max): v_max and a_max are finite and > 0, j_max > 0 or inf, so
        a term is infinite only by overflow, and a stop that long must not be cut short."""
        accel = self.accel
        if accel is None:
            return 1.0
        with np.errstate(over="ignore"):
            t = v_max / accel.a_max + accel.a_max / accel.j_max
        return 2.0 * float(t.max()) + 0.1

    def check_reserve(self, joint_names, dt: float, max_state_divergence: float) -> None:
        """Refuse an acceleration limit whose braking reserve E (the travel its braking policy counts for
        easing the acceleration back to zero: a_max dt^2 (ceil(a_max / (j_max dt)) - 1)^2, per joint) does
        not fit in the following leash: under commanded feedback a joint could never start moving (its
        corridor of +-max_state_divergence is narrower than what the policy reserves), and a jerk ramp that
        long (a_max / j_max) makes the one-step tasks overshoot and oscillate around their goals anyway.
        ``joint_names``: the group's, in v order (for the message). A reserve that overflows (inf: a j_max
        far below a_max / dt) is refused too."""
        accel = self.accel
        if accel is None:
            return
        k = int(np.argmax(accel.E))
        leash = max_state_divergence
        if accel.E[k] >= leash:
            joint = joint_names[k]
            a_max, j_max = float(accel.a_max[k]), float(accel.j_max[k])
            raise InvalidInputError(
                f"limits (acceleration): joint {joint!r}: a_max {a_max:g} and j_max {j_max:g} at {1 / dt:g} Hz "
                f"take {a_max / j_max:.3g} s to reach a_max, and braking reserves {accel.E[k]:.3g} rad or m, more than "
                f"node.max_state_divergence {leash:g}: the joint could not start moving within its following leash. "
                f"Expected j_max >= {min_jerk(a_max, dt, leash):.4g} (or a larger max_state_divergence)")
