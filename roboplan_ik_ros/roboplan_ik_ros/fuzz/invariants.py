"""The fuzzer's invariants, as pure functions of what a run recorded (so that a unit test can feed each one a
violation). Every check returns a list of :class:`Violation` (empty: it holds).

- ``finite``: every command is finite (no NaN).
- ``velocity``, ``acceleration``, ``jerk``: from consecutive commands q_k (what a drive computes):
  max_k |q_k - q_{k-1}| / dt / v_max, |Δ²q| / dt² / a_max, |Δ³q| / dt³ / j_max, per joint, <= 1 + ``RATIO_SLACK``.
- ``qp_failure``, ``tick_error``, ``guard_cut``: the loop's counters stay 0.
- ``hold``: every hold episode (the loop's mode entering ``holding`` or ``stale``, counted in ``counts.holds``)
  has a cause in :data:`DOCUMENTED_HOLD_CAUSES` (README "Safety rules"). Waiting for a goal and a goal the arm
  stops short of (a joint limit, a barrier) are no holds (the mode stays ``waiting_for_goal``/``tracking``).
  A hold caused by a QP failure is reported under ``qp_failure`` alone.
- ``distance:<class>``: every measured pair stays at least its floor, min(d_min, its distance at the start)
  - ``solver.barrier_tolerance`` (:mod:`.distances`).
- ``overshoot``, ``settling``: for a step goal the scenario knows reachable and unobstructed, started at rest:
  along each axis of the step (the TCP's position and rotation for a pose goal, each joint for a joint goal)
  the arm passes the goal by at most ``OVERSHOOT_MAX`` of the step, and it settles (stays within the band,
  :func:`settle_band`) within ``SETTLING_FACTOR`` times Ruckig's time-optimal duration of the same step
  (:func:`optimal_duration`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

RATIO_SLACK = 1e-6  # relative rounding of the ratios (the bounds are met with equality at full braking)
OVERSHOOT_MAX = 0.01  # share of the step
SETTLING_FACTOR = 1.5  # times Ruckig's time-optimal duration
# an axis is checked for overshoot when its step is at least this (smaller steps: 1 % is below the noise)
MIN_STEP = {"position": 0.01, "rotation": 0.05, "joint": 0.02}  # [m], [rad], [rad]
# the settling band: max(1 % of the step, this floor)
BAND_FLOOR = {"position": 1e-3, "rotation": 2e-3, "joint": 1e-3}  # [m], [rad], [rad]
# documented hold causes a run may show (README "Safety rules"); the runner injects neither, so a fuzz run
# accepts none of the others: a QP failure, a barrier refusal, an error in the step
DOCUMENTED_HOLD_CAUSES = {
    "stale": "no valid joint states for state_timeout (the robot is lost)",
    "deactivate": "stopping (deactivate)",
}


@dataclass
class Violation:
    invariant: str  # e.g. "jerk", "distance:obstacles", "hold"
    cause: str  # a short category for grouping (e.g. the joint, the pair class, the hold cause)
    detail: str  # one line: the figures
    t: float = math.nan  # [s] simulated time of the worst instance


# ------------------------------------------------------------------ command stream
def command_ratios(commands: np.ndarray, dt: float, v_max: np.ndarray, a_max: np.ndarray | None = None,
                   j_max: np.ndarray | None = None) -> dict[str, tuple[float, int, int]]:
    """Peak ratio of each derivative of the command stream (n, nv) to its bound: name -> (ratio, tick of the
    latest command in the difference, joint). Without a bound (None or inf) the name is absent."""
    out = {}
    c = np.asarray(commands, dtype=float)
    for name, order, bound in (("velocity", 1, v_max), ("acceleration", 2, a_max), ("jerk", 3, j_max)):
        if bound is None or len(c) <= order:
            continue
        bound = np.asarray(bound, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.abs(np.diff(c, n=order, axis=0)) / dt ** order / bound
        r = np.where(np.isfinite(bound), r, 0.0)
        if not np.isfinite(bound).any():
            continue
        k, j = np.unravel_index(int(np.nanargmax(r)), r.shape)
        out[name] = (float(r[k, j]), int(k + order), int(j))
    return out


def check_finite(commands: np.ndarray, times: np.ndarray) -> list[Violation]:
    bad = ~np.isfinite(np.asarray(commands, dtype=float)).all(axis=1)
    if not bad.any():
        return []
    k = int(np.argmax(bad))
    return [Violation("finite", "nan", f"{int(bad.sum())} commands not finite, the first at tick {k}", float(times[k]))]


def check_command_stream(commands: np.ndarray, times: np.ndarray, dt: float, v_max, a_max=None, j_max=None,
                         joint_names=()) -> list[Violation]:
    out = check_finite(commands, times)
    if out:
        return out  # the ratios of a stream with NaN say nothing more
    for name, (ratio, k, j) in command_ratios(commands, dt, v_max, a_max, j_max).items():
        if ratio > 1.0 + RATIO_SLACK:
            joint = joint_names[j] if j < len(joint_names) else f"joint {j}"
            out.append(Violation(name, joint, f"peak {name} {ratio:.4f}x its bound on {joint}", float(times[k])))
    return out


# ------------------------------------------------------------------ counters and holds
@dataclass
class HoldEpisode:
    t: float
    mode: str
    reason: str
    cause: str  # qp_failure | barrier_refusal | tick_error | stale | deactivate | other


def hold_cause(reason: str, mode: str, qp_failed: bool, barrier_refused: bool, tick_error: bool) -> str:
    """The cause of a hold from what the tick counted (the counters that moved) and its reason."""
    if qp_failed:
        return "qp_failure"
    if barrier_refused:
        return "barrier_refusal"
    if tick_error:
        return "tick_error"
    if mode == "stale":
        return "stale"
    if reason.startswith("stopping (deactivate)"):
        return "deactivate"
    return "other"


def check_holds(episodes: list[HoldEpisode]) -> list[Violation]:
    out = []
    for e in episodes:
        if e.cause in DOCUMENTED_HOLD_CAUSES or e.cause == "qp_failure":
            continue
        out.append(Violation("hold", e.cause, f"hold without a documented cause: {e.reason[:160]}", e.t))
    return out


def check_counters(qp_failures: int, tick_errors: int, guard_cuts: int, first_qp_failure: str = "",
                   t_first: float = math.nan) -> list[Violation]:
    out = []
    if qp_failures:
        out.append(Violation("qp_failure", "qp", f"{qp_failures} ticks: {first_qp_failure[:160]}", t_first))
    if tick_errors:
        out.append(Violation("tick_error", "exception", f"{tick_errors} ticks raised in the step", t_first))
    if guard_cuts:
        out.append(Violation("guard_cut", "guard", f"the command guard cut {guard_cuts} steps (stays 0 by design)"))
    return out


# ------------------------------------------------------------------ distances
def check_distances(worst: dict) -> list[Violation]:
    """``worst``: class -> (Closest, t) of the least margin over the run (distances.Closest)."""
    out = []
    for c, (closest, t) in worst.items():
        if closest.margin < 0.0:
            out.append(Violation(f"distance:{c}", c, f"{closest.pair}: {closest.distance * 1e3:.2f} mm < floor "
                                 f"{closest.floor * 1e3:.2f} mm (by {-closest.margin * 1e3:.2f} mm)", t))
    return out


# ------------------------------------------------------------------ step goals
def settle_band(axis: str, step: float) -> float:
    return max(OVERSHOOT_MAX * abs(step), BAND_FLOOR[axis])


def overshoot_ratio(remaining: np.ndarray, step: float) -> float:
    """``remaining``: the signed distance left to the goal along the step (step at the start, 0 at the
    goal, < 0 past it); the share of the step by which the goal was passed (0 if never)."""
    return max(0.0, -float(np.min(remaining))) / abs(step)


def settling_time(t: np.ndarray, error: np.ndarray, band: float) -> float:
    """[s] from t[0] until the error (>= 0) enters ``band`` for good; inf if it is outside at the end."""
    outside = np.flatnonzero(np.asarray(error) > band)
    if len(outside) == 0:
        return 0.0
    k = int(outside[-1])
    if k == len(t) - 1:
        return math.inf
    return float(t[k + 1] - t[0])


def optimal_duration(steps, v_max, a_max=None, j_max=None) -> float:
    """[s] Ruckig's time-optimal, time-synchronized duration from rest to rest over ``steps`` (per axis)
    with the bounds per axis (a_max/j_max None or inf: velocity-limited, |step| / v_max)."""
    steps = np.abs(np.asarray(steps, dtype=float))
    v = np.broadcast_to(np.asarray(v_max, dtype=float), steps.shape)
    if a_max is None or not np.isfinite(np.asarray(a_max, dtype=float)).all():
        return float(np.max(steps / v))
    from ruckig import InputParameter, Result, Ruckig, Trajectory

    n = len(steps)
    inp = InputParameter(n)
    inp.current_position = [0.0] * n
    inp.target_position = steps.tolist()
    inp.max_velocity = v.tolist()
    inp.max_acceleration = np.broadcast_to(np.asarray(a_max, dtype=float), steps.shape).tolist()
    jerk = np.inf if j_max is None else j_max
    inp.max_jerk = np.broadcast_to(np.asarray(jerk, dtype=float), steps.shape).tolist()
    trajectory = Trajectory(n)
    result = Ruckig(n).calculate(inp, trajectory)
    if result not in (Result.Working, Result.Finished):
        raise ValueError(f"ruckig: {result} for steps {steps.tolist()}")
    return float(trajectory.duration)


@dataclass
class StepAxis:
    """One axis of a step goal's response: ``remaining`` (signed, along the step) and ``error`` (>= 0) per
    sample, the step's size."""

    axis: str  # position | rotation | joint
    name: str  # "position", "rotation", or the joint's name
    step: float
    remaining: np.ndarray
    error: np.ndarray


def check_step(label: str, t: np.ndarray, axes: list[StepAxis], t_optimal: float) -> tuple[list[Violation], dict]:
    """Overshoot of each axis (steps of at least MIN_STEP) and the settling time (every axis in its band)
    against SETTLING_FACTOR x ``t_optimal``; also the figures (for the report)."""
    out, worst_overshoot, settle = [], 0.0, 0.0
    for a in axes:
        if abs(a.step) >= MIN_STEP[a.axis]:
            o = overshoot_ratio(a.remaining, a.step)
            worst_overshoot = max(worst_overshoot, o)
            if o > OVERSHOOT_MAX:
                out.append(Violation("overshoot", a.axis, f"{label}: {a.name} passes the goal by {o * 100:.2f} % of "
                                     f"its {a.step:.4g} step (max {OVERSHOOT_MAX * 100:g} %)",
                                     float(t[int(np.argmin(a.remaining))])))
        settle = max(settle, settling_time(t, a.error, settle_band(a.axis, a.step)))
    limit = SETTLING_FACTOR * t_optimal
    if settle > limit:
        text = "never settles" if math.isinf(settle) else f"settles in {settle:.3f} s"
        out.append(Violation("settling", "unsettled" if math.isinf(settle) else "slow",
                             f"{label}: {text}; Ruckig's optimum {t_optimal:.3f} s (max {limit:.3f} s)", float(t[0])))
    return out, {"overshoot": worst_overshoot, "settling": settle, "optimal": t_optimal}
