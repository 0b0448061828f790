"""run_scenario: one scenario through the core ControlLoop on a simulated robot, and its invariants.

The loop ticks at its control rate (the config's node.control_rate_hz, 500 Hz as shipped) in simulated time.
The robot reports its position before each tick and then moves to the command ``lag_ticks`` ticks old (0:
exactly to the new command). Obstacles reach the scene like ``~/collision_objects`` does (scene.add_obstacle,
then the loop's collision tables are prepared), the cloud like ``~/pointcloud`` (CloudIngest.cloud of the
points, scene.set_perceived_cloud), both before the first goal. Distances are measured at every command
(:mod:`.distances`), the invariants checked after the run (:mod:`.invariants`).
"""

from __future__ import annotations

import math
import time
import traceback
from collections import deque
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from ..core.control.control_loop import HOLDING, STALE, ControlLoop
from ..core.errors import InvalidInputError
from . import invariants as inv
from .distances import DistanceOracle
from .robots import make_config
from .scenario import STREAM_RATE_HZ, Event, Scenario, build_scene, d_min_by_class, make_scenario


@dataclass
class ScenarioResult:
    seed: int
    robot: str
    kind: str
    lag_ticks: int
    summary: str
    violations: list = field(default_factory=list)  # inv.Violation
    metrics: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    wall_time: float = 0.0  # [s]

    @property
    def ok(self) -> bool:
        return not self.violations


@dataclass
class _Step:
    event: Event
    k0: int  # tick index of the goal
    k1: int = -1  # end of its segment (exclusive)
    at_rest: bool = True
    q0: np.ndarray | None = None  # the robot's full q at the goal


def _apply(loop: ControlLoop, e: Event, t: float) -> None:
    if e.kind == "pose":
        for task, T in e.value.items():
            loop.set_pose_goal(task, T)
    elif e.kind == "joints":
        loop.set_joint_goal(e.task, e.value)
    elif e.kind == "twist":
        loop.set_twist(e.task, e.value[0], e.value[1], t)
    elif e.kind == "jog":
        loop.set_joint_velocities(e.task, e.value, t)
    else:
        raise ValueError(f"unknown event kind {e.kind!r}")


def run_scenario(scenario: Scenario | int) -> ScenarioResult:
    """Run one scenario (or the scenario of a seed) and check it; never raises (an exception in the fuzzer
    or the core is a ``runner_error`` violation)."""
    wall = time.perf_counter()
    sc = scenario if isinstance(scenario, Scenario) else make_scenario(int(scenario))
    res = ScenarioResult(sc.seed, sc.robot, sc.kind, sc.lag_ticks, sc.summary(), notes=list(sc.notes))
    try:
        _run(sc, res)
    except Exception as exc:  # noqa: BLE001 - one broken scenario is a finding, not the end of the run
        tb = traceback.extract_tb(exc.__traceback__)[-1]
        res.violations.append(inv.Violation("runner_error", type(exc).__name__,
                                            f"{type(exc).__name__}: {exc} ({tb.filename.split('/')[-1]}:{tb.lineno})"))
    res.wall_time = time.perf_counter() - wall
    return res


def _run(sc: Scenario, res: ScenarioResult) -> None:
    config, settings = make_config(sc.robot, sc.joint_space)
    scene = build_scene(sc.robot, config)
    loop = ControlLoop(scene, config, settings)
    group, dt = loop.group, loop.dt
    g = group.q_indices
    q_robot = sc.q_start.copy()
    loop.state.incoming[:] = q_robot
    if loop.state.accept(0.0) or loop.activate(0.0):
        raise RuntimeError("the start configuration was refused")
    if sc.obstacles or sc.cloud_points is not None:  # as ~/collision_objects and ~/pointcloud do, before the goal
        from ..core.model.perceived_cloud import CloudIngest

        for o in sc.obstacles:
            scene.add_obstacle(o)
        if sc.cloud_points is not None:
            scene.set_perceived_cloud(CloudIngest(scene, config.perception).cloud(sc.cloud_points))
        loop.expect_collision_prepare()
        loop.prepare_collisions()
    oracle = DistanceOracle(scene, d_min_by_class(config), config.solver.barrier_tolerance, floors_at=q_robot)
    n = int(math.ceil(sc.duration / dt))
    times = dt * np.arange(1, n + 1)
    commands = np.zeros((n, len(g)))
    robot_q = np.zeros((n, scene.model.nq))
    lag = deque([q_robot[g].copy()] * sc.lag_ticks)
    events, next_event = sorted(sc.events, key=lambda e: e.t), 0
    streams: list[Event] = []
    stream_period = max(1, int(round(1.0 / (STREAM_RATE_HZ * dt))))
    steps: list[_Step] = []
    holds: list[inv.HoldEpisode] = []
    worst: dict = {}
    first_qp = ("", math.nan)
    unpublished = 0
    for k in range(n):
        t = times[k]
        while next_event < len(events) and events[next_event].t <= t:
            e = events[next_event]
            next_event += 1
            if steps and steps[-1].k1 < 0:
                steps[-1].k1 = k
            try:
                _apply(loop, e, t)
            except InvalidInputError as exc:
                (res.violations.append(inv.Violation("goal_refused", e.kind, f"{e.label}: {exc}", t)) if e.checked
                 else res.notes.append(f"{e.label} refused: {exc}"))
                continue
            if e.kind in ("twist", "jog"):
                streams = [s for s in streams if s.task != e.task] + [e]
            if e.checked:
                steps.append(_Step(e, k, at_rest=loop.at_rest, q0=q_robot.copy()))
        for s in streams:
            if t < s.until and k % stream_period == 0:
                _apply(loop, s, t)
        streams = [s for s in streams if t < s.until]
        loop.state.incoming[:] = q_robot
        refused = loop.state.accept(t)
        if refused:
            raise RuntimeError(f"the simulated robot's measurement was refused: {refused}")
        counts = loop.counts
        before = (counts.qp_failures, counts.barrier_refusals, counts.tick_errors, counts.holds)
        mode_before = loop.mode
        out = loop.tick(t)
        if not out.publish:
            unpublished += 1
        commands[k] = out.command[g]
        if counts.holds > before[3] or (loop.mode in (HOLDING, STALE) and mode_before not in (HOLDING, STALE)):
            holds.append(inv.HoldEpisode(t, loop.mode, loop.hold_reason, inv.hold_cause(
                loop.hold_reason, loop.mode, counts.qp_failures > before[0], counts.barrier_refusals > before[1],
                counts.tick_errors > before[2])))
        if counts.qp_failures > before[0] and not first_qp[0]:
            first_qp = (loop.hold_reason, t)
        for c, closest in oracle.closest(out.command).items():
            if c not in worst or closest.margin < worst[c][0].margin:
                worst[c] = (closest, t)
        lag.append(out.command[g].copy())
        q_robot[g] = lag.popleft()
        robot_q[k] = q_robot
    if steps and steps[-1].k1 < 0:
        steps[-1].k1 = n
    v = res.violations
    accel = loop.acceleration_limit
    names = group.joint_names
    v += inv.check_command_stream(np.vstack([sc.q_start[g], commands]), np.concatenate([[0.0], times]), dt,
                                  loop.guard.v_max, None if accel is None else accel.a_max,
                                  None if accel is None else accel.j_max, names)
    v += inv.check_counters(loop.counts.qp_failures, loop.counts.tick_errors, loop.guard_cuts, *first_qp)
    v += inv.check_holds(holds)
    v += inv.check_distances(worst)
    if unpublished:
        v.append(inv.Violation("unpublished", "stale", f"{unpublished} ticks published nothing"))
    ratios = inv.command_ratios(np.vstack([sc.q_start[g], commands]), dt, loop.guard.v_max,
                                None if accel is None else accel.a_max, None if accel is None else accel.j_max)
    res.metrics.update({f"peak_{name}": r for name, (r, _, _) in ratios.items()})
    res.metrics.update({f"min_margin_{c}": w[0].margin for c, w in worst.items()})
    res.metrics.update(ticks=n, holds=loop.counts.holds, qp_failures=loop.counts.qp_failures,
                       barrier_refusals=loop.counts.barrier_refusals, hold_causes=[h.cause for h in holds])
    for s in steps:
        if not s.at_rest:
            res.notes.append(f"{s.event.label}: the arm was moving at the goal: not checked")
            continue
        found, figures = _check_step(loop, scene, config, s, times[s.k0:s.k1], robot_q[s.k0:s.k1])
        v += found
        res.metrics.setdefault("steps", []).append(figures)


def _check_step(loop: ControlLoop, scene, config, s: _Step, t: np.ndarray, qs: np.ndarray):
    """The overshoot and settling of one checked step (the robot's positions ``qs`` from the goal on)."""
    e = s.event
    t = t - t[0]
    if e.kind == "joints":
        g = loop.group.q_indices
        goal, q0 = np.asarray(e.value, dtype=float), s.q0[g]
        step = goal - q0
        direction = np.sign(step)
        axes = [inv.StepAxis("joint", name, float(step[j]), (goal[j] - qs[:, g[j]]) * direction[j],
                             np.abs(goal[j] - qs[:, g[j]])) for j, name in enumerate(loop.group.joint_names)]
        speed = float(loop.tasks[e.task].max_target_speed) if hasattr(loop.tasks[e.task], "max_target_speed") \
            else _task_speed(config, e.task)
        accel = loop.acceleration_limit
        t_opt = inv.optimal_duration(step, np.minimum(loop.guard.v_max, speed), None if accel is None else accel.a_max,
                                     None if accel is None else accel.j_max)
        return inv.check_step(e.label, t, axes, t_opt)
    data = scene.model.createData()
    gs = loop.settings.goal_smoothing
    found, figures = [], {}
    for task, T_goal in e.value.items():
        fid = scene.frame_id(config_frame(config, task))
        poses = []
        for q in qs:
            pin.forwardKinematics(scene.model, data, q)
            poses.append(pin.updateFramePlacement(scene.model, data, fid).copy())
        T0 = scene.frame_pose(s.q0, config_frame(config, task))
        dp = T_goal.translation - T0.translation
        u = dp / max(np.linalg.norm(dp), 1e-12)
        w = pin.log3(T_goal.rotation @ T0.rotation.T)
        wn = w / max(np.linalg.norm(w), 1e-12)
        p_err = np.array([T_goal.translation - P.translation for P in poses])
        r_err = np.array([pin.log3(T_goal.rotation @ P.rotation.T) for P in poses])
        axes = [inv.StepAxis("position", f"{task} position", float(np.linalg.norm(dp)), p_err @ u,
                             np.linalg.norm(p_err, axis=1)),
                inv.StepAxis("rotation", f"{task} rotation", float(np.linalg.norm(w)), r_err @ wn,
                             np.linalg.norm(r_err, axis=1))]
        t_opt = pose_optimal_duration(loop, gs, [np.linalg.norm(dp), np.linalg.norm(w)], s.q0, qs[-1])
        f, fig = inv.check_step(f"{e.label} ({task})", t, axes, t_opt)
        found += f
        figures = fig
    return found, figures


def pose_optimal_duration(loop: ControlLoop, gs, steps, q0: np.ndarray, q_end: np.ndarray) -> float:
    """[s] A pose step's time-optimal duration: the longer of (a) Ruckig over the step's distance and angle
    with the goal smoothing's limits (``max_acceleration``: max_linear/angular_speed and _acceleration, jerk
    unbounded; ``jerk_limited``: and max_linear/angular_jerk; ``max_speed``: the speeds alone;
    ``none``/``low_pass``: no bound, 0) and (b) Ruckig over the joints from q0 to where the arm ended (q_end) with the joint bounds (v_max; a_max, j_max of the
    acceleration limit, none without one)."""
    target = 0.0
    if gs.type in ("max_speed", "max_acceleration", "jerk_limited"):
        target = inv.optimal_duration(steps, [gs.max_linear_speed, gs.max_angular_speed],
                                      [gs.max_linear_acceleration, gs.max_angular_acceleration]
                                      if gs.type != "max_speed" else None,
                                      [gs.max_linear_jerk, gs.max_angular_jerk] if gs.type == "jerk_limited" else None)
    g = loop.group.q_indices
    accel = loop.acceleration_limit
    joints = inv.optimal_duration(q_end[g] - q0[g], loop.guard.v_max, None if accel is None else accel.a_max,
                                  None if accel is None else accel.j_max)
    return max(target, joints)


def config_frame(config, task: str) -> str:
    return next(tc.frame for tc in config.tasks if tc.name == task)


def _task_speed(config, task: str) -> float:
    return float(next(tc.max_target_speed for tc in config.tasks if tc.name == task))
