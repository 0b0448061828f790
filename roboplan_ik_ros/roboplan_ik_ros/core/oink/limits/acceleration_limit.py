"""AccelerationLimit: bounded acceleration and jerk of the command stream, with braking viability.

Per joint, with u_k the command increment of step k (``q_cmd,k ⊖ q_cmd,k-1`` [rad or m]) and the
per-step constants ``alpha = a_max dt^2``, ``delta = j_max dt^3``, ``V = v_max dt``, the step's
``w = u - u_1`` (u_1, u_2: the two previous increments) must satisfy

    acceleration   |w| <= alpha                       (|u - u_1| / dt^2 <= a_max)
    jerk           |w - (u_1 - u_2)| <= delta          (|u - 2 u_1 + u_2| / dt^3 <= j_max)

and *viability*: from the state the step leaves, the joint can still brake within the bounds before
its position limit and without exceeding v_max. Viability is what keeps the QP feasible at every
later step (a joint that approaches its limit at full speed can always stop; a velocity near v_max
with positive acceleration can always level off under the jerk bound). It is enforced with a braking
policy pi (the acceleration ramps down by delta per step to -alpha, then stays there) and bounds on
what pi still travels, which pi's own next state satisfies again (a super-solution: if the step
satisfies them, pi's next step does too, so the box is never empty at the next step):

- the velocity can still rise by at most ``g(w) = max(w, 0)^2 / (2 delta)`` before the acceleration
  is back to zero, so ``u + g(w) <= V``;
- pi travels at most ``B(w) = n_A P + (P + alpha/2)^2 / (2 alpha) + E`` towards the upper limit,
  with ``P = u + g(w)`` its peak increment (B = E when P <= 0), ``n_A = ceil((w + alpha)/delta) - 1``
  the steps before it decelerates at -alpha, and ``E = alpha n_C^2`` (n_C = ceil(alpha/delta) - 1)
  for easing the acceleration back to zero at the stop; ``B <= d`` where d is the distance from the
  previous command to the upper limit (the step's own travel counts). Mirrored for the lower limit.

Without a jerk bound (delta = inf) both reduce to the exact discrete braking law
``u <= sqrt(2 alpha d) - alpha/2``: constant deceleration a_max stops within d.

The bounds are a box on the QP's dq. The increments refer to the command stream: in ``measured``
feedback the step linearizes at the measurement and the loop passes the offset
``r = q_cmd,prev ⊖ q`` (:meth:`set_history`), so that ``dq = r + u``.
"""

from __future__ import annotations

import ctypes
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

import numpy as np

from ...errors import InvalidInputError, as_vector, check_positive
from ...keys import key
from ..compiled_assembly import AccelerationBounds, AccelerationBox, load_acceleration_box
from ..kind import BuildContext, register
from .limit import Bounds, Limit, LimitConfig

if TYPE_CHECKING:
    from ..robot import Robot

_ROUND_OFF = 1e-9  # relative to alpha: a bound this far below pi's step is round-off, not a conflict
_BISECTION_STEPS = 40  # halvings of [w_lo, w_hi] (<= 2 alpha wide): resolution alpha * 2^-39


@dataclass
class AccelerationLimitConfig(LimitConfig):
    """``type: acceleration``: commands within a_max and j_max per joint, stops included (at most one)."""

    # [rad/s^2] / [rad/s^3], scalar or per group joint; None = robot.joint_limits_file (a_max required there or
    # here; j_max: none where the file gives none); .inf = no jerk bound
    a_max: Union[None, float, list[float]] = key(None)
    j_max: Union[None, float, list[float]] = key(None)


def build_acceleration_limit(config: AccelerationLimitConfig, context: BuildContext) -> AccelerationLimit:
    """a_max / j_max from the keys, else from the scene (robot.joint_limits_file)."""
    scene, group = context.robot
    a_max = config.a_max
    if a_max is None:
        a_max = scene.a_max[group.v_indices]
        missing = [group.joint_names[k] for k in np.flatnonzero(~np.isfinite(a_max))]
        if missing:
            raise InvalidInputError(f"a_max: no acceleration bound for {missing}: set a_max, or "
                                    "robot.joint_limits_file with has_acceleration_limits for them")
    j_max = scene.j_max[group.v_indices] if config.j_max is None else config.j_max
    return AccelerationLimit(context.robot, context.dt, a_max, j_max)


class AccelerationLimit(Limit):
    """Box bounds on dq from the two previous command increments (see the module docstring).

    Args:
        dt: control period [s].
        a_max: per-joint acceleration bound of the group [rad/s^2 or m/s^2] (scalar or group nv), > 0.
        j_max: per-joint jerk bound [rad/s^3 or m/s^3]; None or inf: no jerk bound.
        v_max: the velocity bound the commands respect [rad/s or m/s] (scalar or group nv); None:
            the scene's (URDF) limits. Used for viability under the jerk bound.
    """

    def __init__(self, robot: Robot, dt: float, a_max, j_max=None, v_max=None,
                 name: str = "acceleration_limit", compiled: bool = True) -> None:
        self.name = name
        n = robot.nv
        self.nv = n
        self.dt = check_positive(dt, f"{name}.dt")
        self.a_max = as_vector(a_max, n, f"{name}.a_max")
        if (self.a_max <= 0).any():
            raise InvalidInputError(f"{name}.a_max: expected values > 0, got {self.a_max.tolist()}")
        self.j_max = as_vector(np.inf if j_max is None else j_max, n, f"{name}.j_max", allow_inf=True)
        if (self.j_max <= 0).any():
            raise InvalidInputError(f"{name}.j_max: expected values > 0 (or .inf for none), got {self.j_max.tolist()}")
        group = robot.group
        if v_max is None:
            v_max = robot.scene.v_max[group.v_indices]
        self.v_max = as_vector(v_max, n, f"{name}.v_max", allow_inf=True)
        if (self.v_max <= 0).any():
            raise InvalidInputError(f"{name}.v_max: expected values > 0, got {self.v_max.tolist()}")
        self.joint_names = list(group.joint_names)
        self.q_min = robot.scene.q_min_v[group.v_indices]  # -inf / +inf for unbounded joints
        self.q_max = robot.scene.q_max_v[group.v_indices]
        self._bq_v = group.bounded_v  # group v indices of bounded joints
        self._bq_q = group.bounded_q  # their full-q indices
        # per-step constants [rad or m]
        self.alpha = self.a_max * self.dt**2
        self.delta = self.j_max * self.dt**3
        self.V = self.v_max * self.dt
        self.has_jerk = bool(np.isfinite(self.delta).any())
        with np.errstate(divide="ignore", invalid="ignore"):
            n_c = np.where(np.isfinite(self.delta), np.maximum(np.ceil(self.alpha / self.delta) - 1.0, 0.0), 0.0)
        self.E = self.alpha * n_c**2
        # history (command increments, group nv) and the offset of the linearization point
        self.u1 = np.zeros(n)
        self.u2 = np.zeros(n)
        self.offset = np.zeros(n)
        self._lower = np.zeros(n)
        self._upper = np.zeros(n)
        self._hardest = np.zeros(n)  # hardest_braking_step's
        self.reach_lower = np.zeros(n)  # dq reachable this step under the acceleration and jerk bounds alone
        self.reach_upper = np.zeros(n)
        self._rest = np.zeros(n)
        self._d_up = np.full(n, np.inf)  # distance of the previous command to the limits
        self._d_lo = np.full(n, np.inf)
        self._room_up = np.full(n, np.inf)  # set_following_room: travel left before a moving window's edge
        self._room_lo = np.full(n, np.inf)
        self._box_kept = False  # _lower/_upper hold the box of the last bounds() (braking_step reuses _lower)
        self._d_up_all = np.zeros(n)
        self._d_lo_all = np.zeros(n)
        self.nonviable = 0  # steps whose state had already left the viable set (clamped; should stay 0)
        self._w_lo = np.zeros(n)  # the box in increments w = u - u1 (the kernel's output)
        self._w_hi = np.zeros(n)
        self._box = None  # the C kernel's view of these arrays (None: the numpy path)
        functions = load_acceleration_box() if compiled else None
        if functions is not None:
            self._box_fn, self._bounds_fn = functions
            self._box = AccelerationBox(
                n=n, has_jerk=int(self.has_jerk), bisection_steps=_BISECTION_STEPS, round_off=_ROUND_OFF,
                u1=self.u1.ctypes.data, u2=self.u2.ctypes.data, alpha=self.alpha.ctypes.data,
                delta=self.delta.ctypes.data, V=self.V.ctypes.data, E=self.E.ctypes.data,
                d_up=self._d_up_all.ctypes.data, d_lo=self._d_lo_all.ctypes.data,
                lo=self._w_lo.ctypes.data, hi=self._w_hi.ctypes.data)
            self._box_ref = ctypes.byref(self._box)
            self._bq_q_i64 = np.ascontiguousarray(self._bq_q, dtype=np.int64)  # the arrays the bounds' kernel reads
            self._bq_v_i64 = np.ascontiguousarray(self._bq_v, dtype=np.int64)
            self._q_min_c, self._q_max_c = np.ascontiguousarray(self.q_min), np.ascontiguousarray(self.q_max)
            self._bounds_arrays = AccelerationBounds(
                n_bounded=len(self._bq_v_i64), bq_q=self._bq_q_i64.ctypes.data, bq_v=self._bq_v_i64.ctypes.data,
                q_min=self._q_min_c.ctypes.data, q_max=self._q_max_c.ctypes.data, offset=self.offset.ctypes.data,
                d_up=self._d_up.ctypes.data, d_lo=self._d_lo.ctypes.data, room_up=self._room_up.ctypes.data,
                room_lo=self._room_lo.ctypes.data, lower=self._lower.ctypes.data, upper=self._upper.ctypes.data)
            self._bounds_ref = ctypes.byref(self._bounds_arrays)
            self._q_seen, self._q_address = None, 0  # the q array of the last bounds() call and its address

    def set_velocity_bound(self, v_max) -> None:
        """The velocity bound the commands keep (viability under the jerk bound) [rad/s or m/s]."""
        self.v_max = as_vector(v_max, self.nv, f"{self.name}.v_max", allow_inf=True)
        self.V[:] = self.v_max * self.dt  # in place: the kernel reads this array

    def set_following_room(self, up: np.ndarray | None, lo: np.ndarray | None = None) -> None:
        """Travel [rad or m] the previous command may still make up / down before the edge of a
        window that moves with the robot (the following-error leash), braked for like a position
        limit; None: no window."""
        if up is None:
            self._room_up.fill(np.inf)
            self._room_lo.fill(np.inf)
        else:
            self._room_up[:] = up
            self._room_lo[:] = lo

    # ----------------------------------------------------------------- history
    def reset(self) -> None:
        """At rest: no previous motion (a new command stream)."""
        self.u1.fill(0.0)
        self.u2.fill(0.0)
        self.offset.fill(0.0)

    def set_history(self, u1: np.ndarray, u2: np.ndarray, offset: np.ndarray | None = None) -> None:
        """The previous two command increments (group nv, newest first) and ``offset`` = previous
        command ⊖ the configuration the step linearizes at (None: it is the previous command)."""
        self.u1[:] = u1
        self.u2[:] = u2
        if offset is None:
            self.offset.fill(0.0)
        else:
            self.offset[:] = offset
        w_p = u1 - u2  # the reachable increments: u1 + [max(-alpha, w_p - delta), min(alpha, w_p + delta)]
        np.maximum(w_p - self.delta, -self.alpha, out=self.reach_lower)
        np.minimum(w_p + self.delta, self.alpha, out=self.reach_upper)
        self.reach_lower += u1
        self.reach_upper += u1
        self.reach_lower += self.offset
        self.reach_upper += self.offset

    def nearest_to_rest(self) -> np.ndarray:
        """The reachable dq closest to stopping this step (per joint; this limit's buffer): a limit
        that wants the joint still (a following-error bound) must allow at least this much."""
        # u = 0 (dq = offset: the previous command again), clipped into the reachable interval
        np.minimum(np.maximum(self.offset, self.reach_lower, out=self._rest), self.reach_upper, out=self._rest)
        return self._rest

    @property
    def at_rest(self) -> bool:
        """No motion and no acceleration in the history."""
        return not (self.u1.any() or self.u2.any())

    # ------------------------------------------------------------------ bounds
    def bounds(self, q: np.ndarray) -> Bounds:
        if self._box is not None and (q is self._q_seen or self._take_q(q)):  # the same steps in one kernel call
            if self._bounds_fn(self._box_ref, self._bounds_ref, self._q_address) > 0:
                self.nonviable += 1
            self._box_kept = True
            return Bounds(None, self._lower, self._upper)
        # position viability, from the previous command q ⊕ offset
        x = q[self._bq_q] + self.offset[self._bq_v]
        self._d_up[self._bq_v] = self.q_max[self._bq_v] - x
        self._d_lo[self._bq_v] = x - self.q_min[self._bq_v]
        np.minimum(self._d_up, self._room_up, out=self._d_up_all)
        np.minimum(self._d_lo, self._room_lo, out=self._d_lo_all)
        if self._box is not None:
            if self._box_fn(self._box_ref) > 0:
                self.nonviable += 1
            lo, hi = self._w_lo, self._w_hi
        else:
            lo, hi = self._numpy_box()
        np.add(self.u1, lo, out=self._lower)
        np.add(self.u1, hi, out=self._upper)
        self._lower += self.offset
        self._upper += self.offset
        self._box_kept = True
        return Bounds(None, self._lower, self._upper)

    def _take_q(self, q: np.ndarray) -> bool:
        """Keep q (and its address) for the kernel's bounds if it can read it: a contiguous float64 array."""
        if q.dtype != np.float64 or not q.flags.c_contiguous or q.ndim != 1 or len(q) <= int(self._bq_q_i64.max(initial=-1)):
            return False
        self._q_seen, self._q_address = q, q.ctypes.data
        return True

    def last_bounds(self) -> Bounds | None:
        """The box of the last :meth:`bounds` call; None after a :meth:`braking_step` (it reuses the buffer)."""
        return Bounds(None, self._lower, self._upper) if self._box_kept else None

    def bound_cause(self, k: int, upper: bool) -> str:
        """Which term of the last box (:meth:`bounds`) sets joint ``k``'s (group v index) ``upper`` (else
        lower) bound: "acceleration" or "jerk" (the reachable window itself), "velocity" (the velocity can
        still level off at v_max under the jerk bound), "position" (the joint can still brake before its
        position limit), "following" (before the edge of the following-error window). For reports, off the tick."""
        u1, w_p, alpha, delta = self.u1[k], self.u1[k] - self.u2[k], self.alpha[k], self.delta[k]
        sign = 1.0 if upper else -1.0
        box = self._upper[k] if upper else self._lower[k]
        w = sign * (box - self.offset[k] - u1)  # the bound in increments, mirrored to the upper side
        eps = _ROUND_OFF * alpha
        jerk = sign * w_p + delta
        if w >= min(alpha, jerk) - eps:
            return "jerk" if jerk < alpha else "acceleration"
        if self.has_jerk and np.isfinite(delta) and w >= _velocity_room(np.array([sign * u1]), self.V[k:k + 1],
                                                                        self.delta[k:k + 1])[0] - eps:
            return "velocity"
        room, d = (self._room_up[k], self._d_up[k]) if upper else (self._room_lo[k], self._d_lo[k])
        return "following" if room < d else "position"

    def _numpy_box(self) -> tuple[np.ndarray, np.ndarray]:
        """The admissible w = u - u1 per joint (the kernel's oink_acceleration_box does the same)."""
        u1, w_p = self.u1, self.u1 - self.u2
        alpha, delta = self.alpha, self.delta
        w_hi = np.minimum(alpha, w_p + delta)
        w_lo = np.maximum(-alpha, w_p - delta)
        hi, lo = w_hi.copy(), w_lo.copy()
        if self.has_jerk:  # velocity viability: u + g(w) <= V (and its mirror)
            np.minimum(hi, _velocity_room(u1, self.V, delta), out=hi)
            np.maximum(lo, -_velocity_room(-u1, self.V, delta), out=lo)
        d_up, d_lo = self._d_up_all, self._d_lo_all
        np.minimum(hi, self._position_room(u1, w_p, w_lo, w_hi, d_up), out=hi)
        np.maximum(lo, -self._position_room(-u1, -w_p, -w_hi, -w_lo, d_lo), out=lo)
        bad = lo > hi
        if bad.any():
            # round-off: pi's step sits exactly on the bound it met last step (equal to ~1e-18)
            np.maximum(hi, np.where(lo <= hi + _ROUND_OFF * alpha, lo, hi), out=hi)
            bad = lo > hi
        if bad.any():  # a step whose state is not viable (counted once)
            self.nonviable += 1
        rest = (u1 == 0.0) & (w_p == 0.0)
        if rest.any():  # at rest, staying there is always viable (pi, which brakes at -alpha even from rest,
            # counts travel E that a joint at rest never needs): a corridor narrower than E must not move it
            np.minimum(lo, np.where(rest, 0.0, lo), out=lo)
            np.maximum(hi, np.where(rest, 0.0, hi), out=hi)
            bad &= ~rest
        if bad.any():  # the state already left the viable set: brake as hard as the bounds allow
            best = np.where(hi < w_lo, w_lo, np.where(lo > w_hi, w_hi, 0.5 * (lo + hi)))
            lo[bad] = hi[bad] = best[bad]
        return lo, hi

    def _position_room(self, u1, w_p, w_lo, w_hi, d) -> np.ndarray:
        """Largest w in [w_lo, w_hi] whose braking travel B(w) fits in d (upper side; the lower side
        calls it mirrored). w_lo where even that does not fit (the caller detects the conflict)."""
        room = np.full(len(u1), np.inf)
        near = np.isfinite(d)
        if not near.any():
            return room
        alpha, delta, E = self.alpha, self.delta, self.E
        if not self.has_jerk:  # exact: u <= sqrt(2 alpha d) - alpha/2 (u <= 0 when d < alpha/8)
            dn = np.maximum(d[near], 0.0)
            u_max = np.where(dn >= alpha[near] / 8.0, np.sqrt(2.0 * alpha[near] * dn) - alpha[near] / 2.0, 0.0)
            room[near] = u_max - u1[near]
            return room
        # with jerk: is the largest reachable w fine? otherwise bisect (B is non-decreasing in w)
        fits = _travel(u1, w_hi, alpha, delta, E) <= d
        todo = near & ~fits
        if not todo.any():
            return room
        k = np.flatnonzero(todo)
        a, b = w_lo[k].copy(), w_hi[k].copy()
        uk, ak, dk, Ek, dd = u1[k], alpha[k], delta[k], E[k], d[k]
        # pi's step meets last step's bound exactly (round-off): not a conflict; the search itself is strict
        ok_lo = _travel(uk, a, ak, dk, Ek) <= dd + _ROUND_OFF * ak
        for _ in range(_BISECTION_STEPS):
            m = 0.5 * (a + b)
            ok = _travel(uk, m, ak, dk, Ek) <= dd
            a = np.where(ok, m, a)
            b = np.where(ok, b, m)
        room[k] = np.where(ok_lo, a, w_lo[k] - 1.0)  # -1: below w_lo, flags the conflict
        return room

    # ------------------------------------------------------------------ stops
    def braking_step(self, q: np.ndarray) -> np.ndarray:
        """A controlled-stop step (dq, group nv, a buffer of this limit) at q: the previous increment
        scaled down uniformly (the path is kept) as far as the bounds allow, each joint clipped into
        the box where no uniform scale fits. At rest it is zero (plus the offset)."""
        lower, upper = self.bounds(q)[1:]
        u1 = self.u1
        lo, hi = lower - self.offset, upper - self.offset  # in increments
        moving = u1 != 0.0
        s = 0.0
        if moving.any():
            with np.errstate(divide="ignore", invalid="ignore"):
                r_lo, r_hi = lo[moving] / u1[moving], hi[moving] / u1[moving]
            s_min = float(np.max(np.minimum(r_lo, r_hi)))
            s_max = float(np.min(np.maximum(r_lo, r_hi)))
            s = max(s_min, 0.0)
            if not (s <= s_max and np.all(lo[~moving] <= 0.0) and np.all(hi[~moving] >= 0.0)):
                s = math.nan  # no uniform scale fits every joint
        step = self._lower  # reuse: bounds() is done with it
        self._box_kept = False
        if math.isnan(s):
            np.minimum(np.maximum(0.0, lo), hi, out=step)
        else:
            np.multiply(u1, s, out=step)
            np.minimum(np.maximum(step, lo), hi, out=step)
        step += self.offset
        return step

    def braking_lookahead(self) -> float:
        """[steps] What an approach per step s costs in distance before the arm is at rest, per unit of s, at
        top speed: half the slowest joint's v_max / a_max (braking at constant deceleration covers half
        the distance of going on at the same speed) plus the jerk bound's ramp, in steps (>= 1)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            t_stop = np.where(np.isfinite(self.V), self.V / self.alpha, 0.0)  # [steps] from top speed to rest
        lag = self.barrier_braking()[1]
        return max(0.5 * float(t_stop.max()) + lag, 1.0)

    def hardest_braking_step(self, q: np.ndarray) -> np.ndarray:
        """The step (dq, group nv, a buffer of this limit) at q that brings each joint as near to rest as the
        bounds allow, joint by joint (the path is not kept: :meth:`braking_step` keeps it, braking less hard
        where the joints would brake unevenly)."""
        lower, upper = self.bounds(q)[1:]
        np.minimum(np.maximum(self.offset, lower, out=self._hardest), upper, out=self._hardest)
        return self._hardest

    def barrier_braking(self) -> tuple[np.ndarray, float]:
        """(alpha, lag) for :meth:`Oink.set_barrier_braking`: each barrier row counts on
        BARRIER_BRAKING_SHARE of a_max dt^2 per joint, available after the jerk bound's ramp (2 alpha / delta
        steps)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            ramp = np.where(np.isfinite(self.delta), np.ceil(2.0 * self.alpha / self.delta) - 1.0, 0.0)
        return BARRIER_BRAKING_SHARE * self.alpha, float(max(ramp.max(), 0.0))


def _velocity_room(u1: np.ndarray, V: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """Largest w with ``u1 + w + w^2 / (2 delta) <= V`` (w >= 0 part; u1 <= V keeps it >= 0)."""
    slack = np.maximum(V - u1, 0.0)
    with np.errstate(invalid="ignore"):
        room = np.sqrt(delta * delta + 2.0 * delta * slack) - delta
    # delta = inf: no jerk bound on this joint -> the velocity box alone
    return np.where(np.isfinite(delta), room, slack)


def _travel(u1, w, alpha, delta, E) -> np.ndarray:
    """B(w): what the braking policy travels towards the upper limit after the step u1 + w."""
    with np.errstate(divide="ignore", invalid="ignore"):
        wp = np.maximum(w, 0.0)
        g = np.where(np.isfinite(delta), wp * wp / (2.0 * delta), 0.0)
        n_a = np.where(np.isfinite(delta), np.maximum(np.ceil((w + alpha) / delta - 1e-12) - 1.0, 0.0), 0.0)
    P = u1 + w + g
    Pp = np.maximum(P, 0.0)
    return np.where(P > 0.0, n_a * Pp + (Pp + alpha / 2.0) ** 2 / (2.0 * alpha), 0.0) + E


# With an acceleration limit, a barrier row counts on this share of the deceleration its joints can
# give together (sum_j |J_h,j| a_max,j): the rest stays for the joints' own braking and the tasks.
BARRIER_BRAKING_SHARE = 0.5


def brake_barriers_for(solver, accel: AccelerationLimit, barriers=()) -> None:
    """Make ``solver``'s (an :class:`~..solver.Oink`) barrier rows account for braking under ``accel``
    (:meth:`AccelerationLimit.barrier_braking`), and ``barriers`` look ahead by its braking time
    (:meth:`AccelerationLimit.braking_lookahead`)."""
    solver.set_barrier_braking(*accel.barrier_braking())
    steps = accel.braking_lookahead()
    for barrier in barriers:
        barrier.set_braking_lookahead(steps)


register("limits", "acceleration", AccelerationLimitConfig, build_acceleration_limit, unique=True)
