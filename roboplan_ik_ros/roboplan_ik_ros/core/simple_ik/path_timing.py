"""Time parametrization of a joint path (the waypoints :func:`~.path.solve_path` returns) within
per-joint velocity and acceleration limits, along the interpolation a trajectory controller runs.

What is timed: the trajectory is the **cubic Hermite spline** through the waypoints ``q_0 .. q_N``
at times ``t_0 .. t_N`` with the velocities ``v_0 .. v_N`` this module returns, i.e. exactly what
ros2_control's joint_trajectory_controller interpolates when a ``JointTrajectoryPoint`` has positions
and velocities but no accelerations (its ``interpolate_between_points``: per segment and joint the
cubic with the two end positions and velocities). Every joint stays within ``v_max`` and ``a_max``
at every instant of that spline, not only at the points.

Why positions and velocities (and no accelerations): a cubic segment's acceleration is linear in
time and its velocity quadratic, so both limits are checked exactly (the ends, and the velocity's
vertex). Given accelerations the controller runs a quintic through them; a C1 cubic has no single
acceleration at a waypoint to hand it (it steps there, by at most ``2 a_max``), and made-up point
accelerations would be a different curve with a quartic velocity to bound. The price: the
acceleration steps at the waypoints (unbounded jerk there; small steps for dense waypoints).

Velocities at the waypoints (``hermite_velocities``): per joint, the slope of the parabola through
the waypoint and its two neighbours (in time: ``(dt_k m_k-1 + dt_k-1 m_k) / (dt_k-1 + dt_k)``, m the
segments' mean velocities), limited to ``3 min(|m_k-1|, |m_k|)`` and set to 0 where the joint stops
or turns back (the two m differ in sign or one is 0), and 0 at both ends (rest to rest): the
Fritsch-Carlson conditions, under which the cubic moves each joint monotonically between its two
waypoint values. It never overshoots a waypoint, so a path within the position limits stays
within them, and a sharp corner makes the turning joints stop at the corner instead of swinging
past it. (The harmonic mean of PCHIP is monotonic too but lags the faster segment: in a ramp from
rest it tripled the cubic's acceleration over the finite differences'.)

Durations ``dt_k`` of the segments, in three vectorized steps (no Python loop over waypoints):

1. ``squared_speed_bounds`` / ``squared_speeds``: segment k runs at the path-speed
   ``sigma_k = 1 / dt_k``, bounded as squared speed ``x_k = sigma_k^2``: the velocity cap
   ``x_k <= min_j (v_max_j / |dq_kj|)^2``; at each waypoint the change of mean velocity
   ``dq_k sigma_k - dq_k-1 sigma_k-1`` split into a direction change
   ``(dq_k - dq_k-1) (sigma_k + sigma_k-1) / 2`` (capping x of both segments at
   ``a_max / (2 |dq_k - dq_k-1|)``) and a speed change ``(dq_k + dq_k-1) (sigma_k - sigma_k-1) / 2``
   (``|x_k - x_k-1| <= 4 (a_max - |dq_k - dq_k-1| X) / |dq_k + dq_k-1|``, X the larger cap of the two
   segments), the direction change within half of ``a_max`` and the speed change within the rest,
   over the mean duration of the two segments (MoveIt's iterative parabolic time parametrization,
   with the budget split so that the bounds are linear in x). The ramps use 60 % of their budget:
   where a ramp meets a cap (a kink of the speed profile) the cubic needs about twice the finite
   differences' acceleration for a segment or two, and that headroom lets step 2 slow a segment
   without the ramps it creates violating in turn. A joint at rest at either end of a segment (the
   path's ends, a reversal) caps it at ``a_max / (4 |dq|)`` (the cubic from rest to about the
   segment's mean velocity). The difference bounds on x are met by one forward and one backward
   pass, each a cumulative minimum (``x_k = min(cap_k, x_k-1 + c_k)`` is
   ``C_k + min_{i<=k}(cap_i - C_i)``, C the cumulative sum of c). This is a model of the spline,
   not a bound on it: the next steps check and fix it.
2. ``spline_limit_ratios``: each segment's exact peak |velocity| and |acceleration| of the cubic,
   as ``r_k = max_j max(peak_v / v_max, sqrt(peak_a / a_max))`` (<= 1: within the limits). The
   segments over 1 are stretched, and their neighbours with them, by the window
   ``s_k = max_i sqrt(r_i) rho^-|k - i|`` (rho = 1.01; the square root because the waypoint
   velocities follow only part of the way), up to four rounds. Stretching a lone segment by r_k
   instead slows its neighbours' end velocities, they then violate in turn and the slow-down
   spreads over the whole path (measured: a 0.5 m Panda line 1.7 s -> 6.5 s). What remains over 1
   after the rounds is left to step 3. Measured totals (Panda: 0.5 m line / 0.3 m path with a
   right-angle corner, joint_limits.yaml a_max; a 3 rad joint line at v_max 1, a_max 2 in 1 cm
   steps, whose trapezoid takes 3.5 s): 1.24 / 1.02 / 3.89 s. Alternatives, measured before the
   still-segment rule below and step 3's shrink (this design then: 1.30 / 1.11 / 3.89 s):
   full-budget ramps 1.17 / 1.35 / 5.0 s, no step 2 1.50 / 1.53 / 4.78 s. Waypoint velocities of a
   C2 cubic spline (not monotonic) instead of these, with the still-segment rule, before the
   shrink: 1.24 / 0.99 / 3.89 s against 1.24 / 1.02 / 3.89 s, not worth the overshoot.
3. A closing uniform scaling of every segment by ``max_k r_k``: a stretch if some ratio is left over
   1, else a shrink until the binding segment is at its limit (steps 1 and 2 are conservative:
   the finite-difference model with its split budgets, the window). It is exact:
   scaling every duration by s scales every mean velocity, waypoint velocity (homogeneous of degree
   -1 in the durations) and so the whole spline's velocities by 1/s and accelerations by 1/s^2,
   hence every ratio by 1/s (a segment in which nothing moves is constant and keeps its duration:
   the waypoint velocities on both sides of it are 0 whatever the durations). So the result is
   within the limits by construction, whatever steps 1 and 2 left.

A segment in which no joint moves (a repeated waypoint: the first one when the path starts at the
seed's pose) lasts 1 ms, at rest. Joints with ``a_max = inf`` are bounded in velocity only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError

_MIN_DT = 1e-9  # [s] shortest segment
_STILL_DT = 1e-3  # [s] duration of a segment in which no joint moves (a repeated waypoint, e.g. the seed's pose)
_STRETCH_ROUNDS = 4  # local stretch rounds (step 2) before the closing uniform stretch (step 3)
_STRETCH_DECAY = np.log(1.01)  # log(rho) of step 2's window
_RAMP_FRACTION = 0.6  # of the speed-change budget used by step 1's ramps (headroom for the cubic at a kink)
_ROUNDING = 1.0 + 1e-12  # stretch factors are raised by this against floating-point rounding


@dataclass
class TimedPath:
    """A joint path timed as a cubic Hermite spline (module docstring)."""

    times: np.ndarray  # [s], (N+1,), times[0] == 0, increasing
    velocities: np.ndarray  # (N+1, n) at the waypoints (0 at both ends)


def hermite_velocities(dq: np.ndarray, dt: np.ndarray) -> np.ndarray:
    """(N+1, n) waypoint velocities of the segments ``dq`` ((N, n) displacements) of durations ``dt``
    ((N,) [s]): the slope of the parabola through the waypoint and its two neighbours, limited to
    ``3 min(|m_k-1|, |m_k|)`` and 0 where the adjacent mean velocities differ in sign or one is 0,
    and 0 at both ends (module docstring)."""
    m = dq / dt[:, None]
    v = np.zeros((len(dq) + 1, dq.shape[1]))
    if len(dq) < 2:
        return v
    m0, m1 = m[:-1], m[1:]
    h0, h1 = dt[:-1, None], dt[1:, None]
    parabola = (h1 * m0 + h0 * m1) / (h0 + h1)
    bound = 3.0 * np.minimum(np.abs(m0), np.abs(m1))
    v[1:-1] = np.where(m0 * m1 > 0.0, np.clip(parabola, -bound, bound), 0.0)
    return v


def spline_peaks(dq: np.ndarray, dt: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(peak |velocity|, peak |acceleration|), each (N, n), of every segment's cubic Hermite (end
    velocities ``v[k]``, ``v[k+1]``, displacement ``dq[k]``, duration ``dt[k]``), exactly: in the
    segment's normalized time s in [0, 1] the velocity is ``v0 + (v1 - v0 + k) s - k s^2`` with
    ``k = 6 m - 3 (v0 + v1)``, m = dq / dt, and the acceleration its derivative over dt (linear)."""
    T = dt[:, None]
    v0, v1 = v[:-1], v[1:]
    k = 6.0 * dq / T - 3.0 * (v0 + v1)
    b = v1 - v0 + k  # dv/ds at s = 0
    acc = np.maximum(np.abs(b), np.abs(v1 - v0 - k)) / T  # |a| at s = 0 and s = 1
    vel = np.maximum(np.abs(v0), np.abs(v1))
    with np.errstate(divide="ignore", invalid="ignore"):
        s = b / (2.0 * k)  # the velocity's vertex
        inside = (k != 0.0) & (s > 0.0) & (s < 1.0)
        vertex = np.where(inside, np.abs(v0 + b * s - k * s * s), 0.0)
    return np.maximum(vel, vertex), acc


def spline_limit_ratios(dq, dt, v, v_max, a_max) -> np.ndarray:
    """(N,) per segment: ``max_j max(peak_v / v_max, sqrt(peak_a / a_max))``, the stretch factor
    that brings the segment within the limits if its end velocities scale with it (<= 1: within)."""
    peak_v, peak_a = spline_peaks(dq, dt, v)
    return np.maximum(np.max(peak_v / v_max, axis=1), np.sqrt(np.max(peak_a / a_max, axis=1)))


def _min_plus_pass(cap: np.ndarray, c: np.ndarray) -> np.ndarray:
    """x_k = min(cap_k, x_k-1 + c_k) (x_0 = cap_0; c[0] unused) as a cumulative minimum."""
    C = np.cumsum(np.concatenate(([0.0], c[1:])))
    return C + np.minimum.accumulate(cap - C)


def squared_speed_bounds(dq: np.ndarray, v_max: np.ndarray, a_max: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(cap (N,), c (N,)): the bounds ``x_k <= cap_k`` and ``|x_k - x_k-1| <= c_k`` (c[0] unused) on
    the squared path-speed ``x_k = 1 / dt_k^2`` of step 1 (module docstring)."""
    adq = np.abs(dq)
    N = len(dq)
    with np.errstate(divide="ignore", invalid="ignore"):
        cap = np.min((v_max / adq) ** 2, axis=1)  # inf where no joint moves
        # a joint at rest at a waypoint (an end, a reversal, a stop): its cubic on either side goes
        # from 0 to about the mean velocity m, |a| ~ 4 |m| / dt = 4 |dq| x (6 at most)
        rest = np.ones((N + 1, dq.shape[1]), dtype=bool)
        rest[1:-1] = (dq[:-1] * dq[1:]) <= 0.0
        rest_seg = rest[:-1] | rest[1:]
        cap = np.minimum(cap, np.min(np.where(rest_seg, a_max / (4.0 * adq), np.inf), axis=1))
        turn = np.abs(np.diff(dq, axis=0))  # (N-1, n) direction change at the inner waypoints
        turn_cap = np.min(a_max / (2.0 * turn), axis=1)
        cap[:-1] = np.minimum(cap[:-1], turn_cap)
        cap[1:] = np.minimum(cap[1:], turn_cap)
    finite = cap[np.isfinite(cap)]
    x_top = float(finite.max()) if len(finite) else 1.0
    cap = np.minimum(cap, x_top)  # a bound above every finite cap binds nothing; keeps the sums finite
    # the speed change gets what the direction change leaves: the latter uses at most |turn| x
    # <= |turn| max(cap_k-1, cap_k) (<= a_max / 2 by the caps above)
    x_around = np.maximum(cap[:-1], cap[1:])[:, None]
    budget = np.where(np.isfinite(a_max), a_max - turn * x_around, np.inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.min(4.0 * _RAMP_FRACTION * budget / np.abs(dq[1:] + dq[:-1]), axis=1)  # speed change
    c = np.where(np.isnan(c), np.inf, c)
    still = np.all(dq == 0.0, axis=1)
    c[still[:-1] | still[1:]] = np.inf  # no coupling across a still segment: both neighbours rest there
    return cap, np.minimum(np.concatenate(([0.0], c)), x_top)


def squared_speeds(cap: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The largest x with ``x <= cap`` and ``|x_k - x_k-1| <= c_k``: a forward then a backward pass."""
    x = _min_plus_pass(cap, c)
    return _min_plus_pass(x[::-1], np.concatenate(([0.0], c[:0:-1])))[::-1]


def stretch_window(r: np.ndarray, decay: float) -> np.ndarray:
    """(N,) ``s_k = max_i sqrt(max(r_i, 1)) exp(-decay |k - i|)`` (step 2), by a forward and a
    backward cumulative maximum in the log domain."""
    log_r = 0.5 * np.log(np.maximum(r, 1.0))
    k = decay * np.arange(len(r))
    forward = np.maximum.accumulate(log_r + k) - k
    backward = np.maximum.accumulate((log_r - k)[::-1])[::-1] + k
    return np.exp(np.maximum(forward, backward))


def _durations(x: np.ndarray) -> np.ndarray:
    return np.maximum(1.0 / np.sqrt(x), _MIN_DT)


def time_parametrize(q_path, v_max, a_max) -> TimedPath:
    """Times and velocities of the waypoints ``q_path`` ((N+1, n) joint positions, N >= 1, in order)
    so that the cubic Hermite spline through them stays within ``v_max`` and ``a_max`` ((n,) each,
    > 0; ``a_max`` may be inf) at every instant, from rest to rest (module docstring). Bad input
    raises InvalidInputError."""
    q_path = np.asarray(q_path, dtype=float)
    if q_path.ndim != 2 or q_path.shape[0] < 2 or not np.all(np.isfinite(q_path)):
        raise InvalidInputError(f"q_path: expected >= 2 finite waypoints as an (N+1, n) array, got shape "
                                f"{q_path.shape}")
    n = q_path.shape[1]
    v_max = np.broadcast_to(np.asarray(v_max, dtype=float), (n,))
    a_max = np.broadcast_to(np.asarray(a_max, dtype=float), (n,))
    for name, limit in (("v_max", v_max), ("a_max", a_max)):
        if np.any(np.isnan(limit)) or np.any(limit <= 0.0):
            raise InvalidInputError(f"{name}: expected > 0 per joint, got {limit.tolist()}")
    if not np.all(np.isfinite(v_max)):
        raise InvalidInputError(f"v_max: expected finite per joint (a path needs a speed), got {v_max.tolist()}")
    dq = np.diff(q_path, axis=0)
    still = np.all(dq == 0.0, axis=1)
    dt = np.where(still, _STILL_DT, _durations(squared_speeds(*squared_speed_bounds(dq, v_max, a_max))))
    for _ in range(_STRETCH_ROUNDS):  # step 2
        r = spline_limit_ratios(dq, dt, hermite_velocities(dq, dt), v_max, a_max)
        if np.all(r <= 1.0 + 1e-9):  # step 3 removes what rounding leaves
            break
        dt = np.where(still, _STILL_DT, dt * stretch_window(r, _STRETCH_DECAY) * _ROUNDING)
    for attempt in range(3):  # step 3: one scaling; a second only if rounding left a ratio a hair over 1
        v = hermite_velocities(dq, dt)
        r_max = float(np.max(spline_limit_ratios(dq, dt, v, v_max, a_max)))
        if r_max <= 1.0 and (attempt or r_max == 0.0):
            return TimedPath(np.concatenate(([0.0], np.cumsum(dt))), v)
        if not np.isfinite(r_max):
            break
        dt = np.where(still, _STILL_DT, dt * r_max * _ROUNDING)  # a still segment's cubic is constant anyway
    raise RuntimeError(f"time_parametrize: the spline's limit ratio stayed at {r_max} (a bug)")
