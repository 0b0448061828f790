"""Time parametrization of a joint path (the waypoints :func:`~.path.solve_path` returns) within
per-joint velocity and acceleration limits.

Method (the discrete, finite-difference one of MoveIt's iterative parabolic time parametrization,
as one forward and one backward pass):

* the path is the polyline through the waypoints ``q_0 .. q_N``; segment k (``q_k -> q_k+1``) is
  travelled at the constant joint velocity ``v_k = dq_k / dt_k``, so the path is followed exactly
  and only the durations ``dt_k`` are chosen;
* the trajectory starts and ends at rest; its acceleration at waypoint k is the change of
  velocity there over the mean duration of the two segments around it,
  ``a_k = (v_k - v_k-1) / ((dt_k-1 + dt_k) / 2)``, with the first (last) segment's own duration
  as the interval at the ends: ``a_0 = v_0 / dt_0``, ``a_N = -v_N-1 / dt_N-1`` (the finite
  differences of the timed waypoints from rest to rest);
* start: each ``dt_k`` is the least that keeps every joint within ``v_max`` on segment k;
* forward pass (k = 0 .. N-1): ``dt_k`` grows to the least duration that keeps ``|a_k| <= a_max``
  given segment k-1 (already final in this pass): per joint, ``|dq/dt - v| <= a (d + dt) / 2``
  is two upward parabolas in dt (``a/2 dt^2 + (a d / 2 +- v) dt -+ dq >= 0``), so it changes only
  at their roots and holds beyond the largest: the answer is the current ``dt_k`` or the first root
  above it where every joint holds (``_least_duration``); this is the acceleration ramp from rest;
* backward pass: the end (``dt_N-1 >= sqrt(|dq| / a)``), then waypoints N-1 .. 1, growing
  ``dt_k-1`` given segment k the same way (the deceleration ramp to rest). Each step fixes waypoint k for good (later steps change only earlier
  segments, which waypoint k does not involve), so after it every waypoint is within ``a_max``;
  durations only grow, so the velocity bound keeps holding;
* a closing uniform stretch by ``sqrt(r)`` if rounding left a waypoint over ``a_max`` by a ratio r
  (all accelerations scale by 1/r).

The bounds are exact for the finite differences of the waypoints. A controller that interpolates
between the points (a spline through the velocities and accelerations given per point) can exceed
them by its interpolation error between two points; dense waypoints (e.g. 1 cm) keep it small.
Joints with ``a_max = inf`` are bounded in velocity only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError

_MIN_DT = 1e-9  # [s] duration of a segment in which no joint moves (a repeated waypoint)


@dataclass
class TimedPath:
    times: np.ndarray  # [s], (N+1,), times[0] == 0, increasing
    velocities: np.ndarray  # (N+1, n) at the waypoints: mean of the two segments' (0 at the ends)
    accelerations: np.ndarray  # (N+1, n) a_k above


def segment_accelerations(q_path: np.ndarray, times: np.ndarray) -> np.ndarray:
    """(N+1, n) accelerations ``a_k`` of the timed waypoints (module docstring)."""
    dt = np.diff(times)
    v_seg = np.diff(q_path, axis=0) / dt[:, None]
    zero = np.zeros((1, q_path.shape[1]))
    dv = np.diff(np.vstack((zero, v_seg, zero)), axis=0)
    interval = np.concatenate((dt[:1], 0.5 * (dt[:-1] + dt[1:]), dt[-1:]))
    return dv / interval[:, None]


def _least_duration(dt: float, dq: np.ndarray, v_next: np.ndarray, d_next: float, a_max: np.ndarray) -> float:
    """Least duration >= ``dt`` of a segment moving ``dq`` with ``|dq / dt - v_next| <= a_max (d_next + dt) / 2``
    for every joint (a_max = inf: no bound). Per joint and sign the condition is
    ``a/2 dt^2 + (a d / 2 +- v) dt -+ dq >= 0``, an upward parabola in dt: the feasible durations
    change only at its roots, so the answer is ``dt`` itself or the first root beyond it where every
    joint holds."""
    finite = np.isfinite(a_max)
    half_a = np.where(finite, 0.5 * a_max, 1.0)

    def holds(durations: np.ndarray) -> np.ndarray:  # (C,) -> (C,) bool
        excess = np.abs(dq / durations[:, None] - v_next) - half_a * (d_next + durations[:, None])
        return np.all((excess <= 1e-12 * (np.abs(v_next) + 1.0)) | ~finite, axis=1)

    if holds(np.array([dt]))[0]:
        return dt
    roots = []
    for sign in (1.0, -1.0):
        b = half_a * d_next + sign * v_next
        disc = b * b + 4.0 * half_a * sign * dq
        ok = finite & (disc >= 0.0)
        sq = np.sqrt(np.maximum(disc, 0.0))
        roots += [((-b + sq) / (2.0 * half_a))[ok], ((-b - sq) / (2.0 * half_a))[ok]]
    candidates = np.sort(np.concatenate(roots))
    candidates = candidates[candidates > dt] * (1.0 + 1e-12)
    feasible = candidates[holds(candidates)] if len(candidates) else candidates
    if len(feasible):
        return float(feasible[0])
    return float(max(dt, candidates.max() if len(candidates) else dt) * 2.0)  # not reached (see above)


def time_parametrize(q_path, v_max, a_max) -> TimedPath:
    """Times of the waypoints ``q_path`` ((N+1, n) joint positions, N >= 1, in order) so that every
    segment's velocity is within ``v_max`` and every waypoint's acceleration within ``a_max`` ((n,)
    each, > 0; ``a_max`` may be inf), from rest to rest (module docstring). Bad input raises
    InvalidInputError."""
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
    N = len(dq)
    dt = np.maximum(np.max(np.abs(dq) / v_max, axis=1), _MIN_DT)
    # at the ends (from and to rest): |dq / dt| <= a dt  <=>  dt >= sqrt(|dq| / a); monotone in dt
    with np.errstate(divide="ignore"):
        dt[0] = max(dt[0], float(np.max(np.sqrt(np.abs(dq[0]) / a_max))))
    for k in range(1, N):  # forward: segment k given segment k-1
        dt[k] = _least_duration(dt[k], dq[k], dq[k - 1] / dt[k - 1], dt[k - 1], a_max)
    with np.errstate(divide="ignore"):
        dt[-1] = max(dt[-1], float(np.max(np.sqrt(np.abs(dq[-1]) / a_max))))
    for k in range(N - 1, 0, -1):  # backward: segment k-1 given segment k
        dt[k - 1] = _least_duration(dt[k - 1], dq[k - 1], dq[k] / dt[k], dt[k], a_max)
    times = np.concatenate(([0.0], np.cumsum(dt)))
    r_max = float(np.max(np.abs(segment_accelerations(q_path, times)) / a_max))
    if r_max > 1.0:  # rounding only
        dt *= np.sqrt(r_max) * (1.0 + 1e-12)
        times = np.concatenate(([0.0], np.cumsum(dt)))
    v_seg = dq / dt[:, None]
    velocities = np.zeros_like(q_path)
    velocities[1:-1] = 0.5 * (v_seg[:-1] + v_seg[1:])
    return TimedPath(times, velocities, segment_accelerations(q_path, times))
