"""The shipped panda.yaml in closed loop with a simulated Panda (no ROS): every command stream of
issue 12's scenarios stays within Franka's acceleration and jerk bounds, settles without overshoot
(<= 1 mm / 1 mrad) and never needs the guard. Prints the figures (``pytest -s``): peak acceleration
and jerk per joint as a ratio of the bounds, overshoot, time to 1 mm with and without the bounds."""

from __future__ import annotations

import dataclasses

import numpy as np
import pinocchio as pin
import pytest
import yaml

from models import robot
from roboplan_ik_ros.core.config import load_config
from roboplan_ik_ros.core.control.control_loop import ControlLoop, LoopConfig
from roboplan_ik_ros.core.model.scene_config import scene_from_config
from roboplan_ik_ros.core.control.twist_follower import StreamingConfig
from roboplan_ik_ros.core.control.goal_followers import GoalSmoothingConfig

from conftest import CONFIG_DIR

TIP = "panda_hand_tcp"
OVERSHOOT_TOL = 1e-3  # [m] and [rad]: issue 12's target
SETTLE = 1e-3  # [m] "at the goal"


def panda_yaml(drop_acceleration: bool = False) -> tuple[dict, LoopConfig]:
    """panda.yaml as the node reads it (self-collision dropped: the sim has no obstacles and the
    scenarios stay far from self-contact), its node: section as the loop's settings."""
    data = yaml.safe_load((CONFIG_DIR / "panda.yaml").read_text())
    data["barriers"] = [b for b in data["barriers"] if b["name"] != "self_collision"]
    node = data.pop("node")
    smoothing = GoalSmoothingConfig(**node["goal_smoothing"])
    if drop_acceleration:  # today's velocity-only behaviour: the comparison for goal time
        data["limits"] = [lim for lim in data["limits"] if lim["type"] != "acceleration"]
        smoothing = dataclasses.replace(smoothing, type="max_speed")
    keys = {f.name for f in dataclasses.fields(LoopConfig)} - {"goal_smoothing", "streaming"}
    settings = LoopConfig(**{k: v for k, v in node.items() if k in keys}, goal_smoothing=smoothing,
                          streaming=StreamingConfig(**node["streaming"]))
    return data, settings


@pytest.fixture(scope="module")
def panda():
    r = robot("panda")
    config = load_config(panda_yaml()[0])
    return scene_from_config(r.urdf_xml, r.srdf_xml, config.robot, r.package_paths)


def follow_one_tick(loop: ControlLoop, q: np.ndarray, t: float) -> np.ndarray:
    """One tick at time t [s] of a robot at q (full nq) that follows every command exactly: q, moved in place."""
    loop.state.incoming[:] = q
    assert loop.state.accept(t) == ""
    res = loop.tick(t)
    assert res.publish
    q[loop.group.q_indices] = res.command[loop.group.q_indices]
    return q


class Run:
    """The loop driving a robot that follows every command exactly; records commands and TCP poses."""

    def __init__(self, panda, drop_acceleration: bool = False) -> None:
        data, settings = panda_yaml(drop_acceleration)
        self.loop = ControlLoop(panda, load_config(data), settings)
        self.scene, self.dt, self.t = panda, self.loop.dt, 0.0
        self.q = panda.named_configuration("default")
        self.commands: list[np.ndarray] = []
        self.tcp: list[pin.SE3] = []
        self._measure()
        self.loop.activate(self.t)

    def _measure(self) -> None:
        self.loop.state.incoming[:] = self.q
        assert self.loop.state.accept(self.t) == ""

    def tick(self, n: int) -> None:
        g = self.loop.group.q_indices
        for _ in range(n):
            self.t += self.dt
            self._measure()
            res = self.loop.tick(self.t)
            assert res.publish
            self.q[g] = res.command[g]
            self.commands.append(self.q[g].copy())
            self.tcp.append(self.scene.frame_pose(self.q, TIP))

    def pose(self) -> pin.SE3:
        return self.scene.frame_pose(self.q, TIP)

    def ratios(self) -> tuple[np.ndarray, np.ndarray]:
        """Peak |acceleration| / a_max and |jerk| / j_max per joint over the commands so far (finite
        differences at the control period, as a drive sees them)."""
        c = np.array(self.commands)
        accel = self.loop._accel if self.loop._accel is not None else None
        a_max = self.scene.a_max[:7] if accel is None else accel.a_max
        j_max = self.scene.j_max[:7] if accel is None else accel.j_max
        acc = np.abs(np.diff(c, n=2, axis=0)).max(axis=0) / self.dt**2
        jerk = np.abs(np.diff(c, n=3, axis=0)).max(axis=0) / self.dt**3
        return acc / a_max, jerk / j_max


def overshoot(tcp: list[pin.SE3], start: np.ndarray, goal: pin.SE3) -> tuple[float, float]:
    """How far the TCP went past the goal along the approach [m], and its largest rotation error
    after it first came within SETTLE of the goal [rad]."""
    n = goal.translation - start
    n /= np.linalg.norm(n)
    p = np.array([T.translation for T in tcp])
    past = float(max(0.0, ((p - goal.translation) @ n).max()))
    near = np.flatnonzero(np.linalg.norm(p - goal.translation, axis=1) < SETTLE)
    rot = 0.0 if near.size == 0 else max(
        float(np.linalg.norm(pin.log3(goal.rotation.T @ T.rotation))) for T in tcp[near[0]:])
    return past, rot


def time_to_goal(run: Run, goal: pin.SE3, first: int = 0) -> float:
    p = np.array([T.translation for T in run.tcp[first:]])
    far = np.flatnonzero(np.linalg.norm(p - goal.translation, axis=1) >= SETTLE)
    return (0 if far.size == 0 else far[-1] + 1) * run.dt


def table(title: str, acc: np.ndarray, jerk: np.ndarray) -> None:
    print(f"\n{title}\n  joint        " + " ".join(f"{j:>6d}" for j in range(1, 8)))
    print("  accel/a_max  " + " ".join(f"{x:6.3f}" for x in acc))
    print("  jerk/j_max   " + " ".join(f"{x:6.3f}" for x in jerk))


def assert_within_bounds(run: Run) -> None:
    acc, jerk = run.ratios()
    assert acc.max() <= 1.0 + 1e-6 and jerk.max() <= 1.0 + 1e-6, (acc, jerk)
    assert run.loop.guard.cuts == 0 and run.loop.counts.qp_failures == 0
    assert run.loop._accel.nonviable == 0
    return acc, jerk


STEPS = [np.array([0.0, 0.2, 0.0]), np.array([0.1, -0.1, -0.1]), np.array([0.2, -0.1, 0.1])]  # inside the workspace box


def test_step_goals_settle_within_the_bounds_without_overshoot(panda):
    run = Run(panda)
    worst_past = worst_rot = 0.0
    for offset in STEPS:
        start = run.pose()
        goal = pin.SE3(start.rotation, start.translation + offset)
        first = len(run.tcp)
        run.loop.set_pose_goal("ee", goal)
        run.tick(1500)
        past, rot = overshoot(run.tcp[first:], start.translation, goal)
        worst_past, worst_rot = max(worst_past, past), max(worst_rot, rot)
        assert np.linalg.norm(run.pose().translation - goal.translation) < SETTLE
        print(f"step {np.linalg.norm(offset) * 100:.0f} cm: to 1 mm in {time_to_goal(run, goal, first):.2f} s, "
              f"overshoot {past * 1e3:.3f} mm / {rot * 1e3:.3f} mrad")
    acc, jerk = assert_within_bounds(run)
    table("step goals 10-30 cm", acc, jerk)
    assert worst_past <= OVERSHOOT_TOL and worst_rot <= OVERSHOOT_TOL


@pytest.mark.parametrize("goal_hz", [50.0, 1000.0])
def test_a_circle_stream_stays_within_the_bounds_and_stops_at_its_end(panda, goal_hz):
    """A pose-goal stream along a circle (a dragged marker at 50 Hz; a 1 kHz stream: two goals per
    500 Hz tick, the latest wins)."""
    run = Run(panda)
    start = run.pose()
    center, radius, period = start.translation, 0.08, 2.0  # [m], [s]: 0.25 m/s along the circle
    goal = start
    n_goals = int(2 * period * goal_hz)
    for k in range(n_goals):
        phase = 2 * np.pi * k / goal_hz / period
        goal = pin.SE3(start.rotation, center + radius * np.array([np.sin(phase), 1 - np.cos(phase), 0.0]))
        run.loop.set_pose_goal("ee", goal)
        t_next = (k + 1) / goal_hz  # tick while the loop's time is behind the next goal's
        while run.t + run.dt <= t_next + 1e-12:
            run.tick(1)
    before = run.pose().translation
    first = len(run.tcp)
    run.tick(1000)  # the stream stopped: its last goal
    past, rot = overshoot(run.tcp[first:], before, goal)
    acc, jerk = assert_within_bounds(run)
    table(f"{goal_hz:g} Hz goal stream along a circle (r = 8 cm, 0.25 m/s)", acc, jerk)
    print(f"after the stream: overshoot {past * 1e3:.3f} mm / {rot * 1e3:.3f} mrad")
    assert np.linalg.norm(run.pose().translation - goal.translation) < SETTLE
    assert past <= OVERSHOOT_TOL and rot <= OVERSHOOT_TOL


def test_a_goal_reversed_after_0_3_s_comes_back_without_overshoot(panda):
    run = Run(panda)
    start = run.pose()
    away = pin.SE3(start.rotation, start.translation + np.array([0.0, 0.25, 0.0]))
    run.loop.set_pose_goal("ee", away)
    run.tick(150)  # 0.3 s: at full speed
    turn = run.pose().translation
    first = len(run.tcp)
    run.loop.set_pose_goal("ee", start)
    run.tick(2000)
    # coming back, the TCP must not go past the start along the way back
    past, rot = overshoot(run.tcp[first:], turn, start)
    acc, jerk = assert_within_bounds(run)
    table("goal reversed after 0.3 s", acc, jerk)
    print(f"reversed goal: back to 1 mm in {time_to_goal(run, start, first):.2f} s, overshoot "
          f"{past * 1e3:.3f} mm / {rot * 1e3:.3f} mrad")
    assert np.linalg.norm(run.pose().translation - start.translation) < SETTLE
    assert past <= OVERSHOOT_TOL and rot <= OVERSHOOT_TOL


def test_the_bounds_cost_goal_time_and_remove_the_acceleration_peaks(panda):
    """The same 20 cm step with and without the acceleration limit: without it the command stream
    breaks Franka's bounds many times over (what the issue measured); with it, it does not. The
    cost in goal time is printed."""
    results = {}
    for bounded in (True, False):
        run = Run(panda, drop_acceleration=not bounded)
        start = run.pose()
        goal = pin.SE3(start.rotation, start.translation + np.array([0.0, 0.2, 0.0]))
        run.loop.set_pose_goal("ee", goal)
        run.tick(1500)
        acc, jerk = run.ratios()
        results[bounded] = (time_to_goal(run, goal), acc.max(), jerk.max(), overshoot(run.tcp, start.translation, goal)[0])
    for bounded, (t, a, j, past) in results.items():
        print(f"20 cm step {'with' if bounded else 'without'} acceleration limit: to 1 mm in {t:.2f} s, "
              f"peak accel {a:.2f}x, peak jerk {j:.2f}x of Franka's bounds, overshoot {past * 1e3:.2f} mm")
    print(f"goal time ratio bounded / unbounded: {results[True][0] / results[False][0]:.2f}")
    assert results[True][1] <= 1.0 + 1e-6 and results[True][2] <= 1.0 + 1e-6
    assert results[False][1] > 1.0  # without the limit the stream breaks the drive's bounds


def _box_approach(panda, braking: bool) -> tuple[float, int, float]:
    """A goal 30 cm beyond the workspace box's y_max, no goal smoothing (full speed into the box
    face), workspace barrier gain 100 (it lets the TCP come close fast): (deepest crossing of the
    box [m], QP failures, peak acceleration ratio)."""
    data, settings = panda_yaml()
    for b in data["barriers"]:
        if b["name"] == "workspace":
            b["gain"], p_max = 100.0, np.array(b["p_max"])
    settings = dataclasses.replace(settings, goal_smoothing=GoalSmoothingConfig(type="none"))
    run = Run.__new__(Run)
    run.loop = ControlLoop(panda, load_config(data), settings)
    if not braking:
        run.loop.ctrl.oink.set_barrier_braking(None, 0.0)
    run.scene, run.dt, run.t = panda, run.loop.dt, 0.0
    run.q, run.commands, run.tcp = panda.named_configuration("default"), [], []
    run._measure()
    run.loop.activate(run.t)
    start = run.pose()
    goal = start.translation.copy()
    goal[1] = p_max[1] + 0.3
    run.loop.set_pose_goal("ee", pin.SE3(start.rotation, goal))
    run.tick(1500)
    crossing = max(float((T.translation - p_max).max()) for T in run.tcp)
    return crossing, run.loop.counts.qp_failures, float(run.ratios()[0].max())


def test_a_full_speed_approach_to_a_stiff_barrier_brakes_in_time(panda):
    """Viability of the barrier rows: with braking the approach never crosses the box face and
    the QP never fails; without it (printed, the reason it exists) the arm arrives too fast."""
    crossing, failures, acc = _box_approach(panda, braking=True)
    crossing_off, failures_off, _ = _box_approach(panda, braking=False)
    print(f"\nworkspace barrier gain 100, full-speed approach: with barrier braking: deepest crossing "
          f"{crossing * 1e3:.2f} mm, {failures} QP failures, peak accel {acc:.2f}x; without: "
          f"{crossing_off * 1e3:.2f} mm, {failures_off} QP failures")
    assert -5e-3 < crossing <= 1e-4 and failures == 0 and acc <= 1.0 + 1e-6  # at the face, not through it


def test_coming_back_from_an_unreachable_goal_does_not_overshoot(panda):
    """A goal beyond the workspace box: the arm stops at the box face while the goal smoother's
    target would run on to the goal; then a goal back to the start. The target is leashed to the
    frame's actual pose, so the return starts from where the arm is, not from the far goal (which
    made the arm chase a target at full speed and overshoot by its braking distance)."""
    data, _ = panda_yaml()
    p_max = np.array(next(b for b in data["barriers"] if b["name"] == "workspace")["p_max"])
    run = Run(panda)
    start = run.pose()
    beyond = start.translation.copy()
    beyond[1] = p_max[1] + 0.3
    run.loop.set_pose_goal("ee", pin.SE3(start.rotation, beyond))
    run.tick(1500)  # 3 s: the arm at the face, the goal 30 cm beyond it
    at_face = run.pose().translation
    assert at_face[1] <= p_max[1] + 1e-4
    target_gap = float(np.linalg.norm(run.loop.ctrl.tasks["ee"].target.translation - at_face))
    first = len(run.tcp)
    run.loop.set_pose_goal("ee", start)
    run.tick(2000)
    past, rot = overshoot(run.tcp[first:], at_face, start)
    acc, jerk = assert_within_bounds(run)
    print(f"\nunreachable goal 30 cm beyond the box face: target {target_gap * 1e3:.1f} mm from the TCP; back "
          f"to 1 mm in {time_to_goal(run, start, first):.2f} s, overshoot {past * 1e3:.3f} mm / {rot * 1e3:.3f} mrad")
    assert np.linalg.norm(run.pose().translation - start.translation) < SETTLE
    assert past <= OVERSHOOT_TOL and rot <= OVERSHOOT_TOL


def test_a_stop_while_moving_brakes_to_rest_within_the_bounds_and_nothing_is_braked_while_stale(panda):
    """ControlLoop.stopping_tick (what deactivate and SIGINT publish): from full speed the stream
    comes to rest within the bounds; while stale it publishes nothing (the robot is lost)."""
    run = Run(panda)
    start = run.pose()
    run.loop.set_pose_goal("ee", pin.SE3(start.rotation, start.translation + np.array([0.0, 0.25, 0.0])))
    run.tick(150)  # moving fast
    assert not run.loop.at_rest
    g = run.loop.group.q_indices
    n = 0
    while not run.loop.at_rest:
        res = run.loop.stopping_tick()
        assert res.publish
        run.q[g] = res.command[g]
        run.commands.append(run.q[g].copy())
        n += 1
        assert n < 1000
    acc, jerk = assert_within_bounds(run)
    print(f"\nstop from full speed: at rest after {n} commands ({n * run.dt:.3f} s), peak accel {acc.max():.3f}x, "
          f"jerk {jerk.max():.3f}x")
    assert n > 10  # it braked, it did not stop at once
    # stale: a stop publishes nothing
    run2 = Run(panda)
    run2.loop.set_pose_goal("ee", pin.SE3(start.rotation, start.translation + np.array([0.0, 0.25, 0.0])))
    run2.tick(150)
    run2.t += 1.0  # no measurement for longer than state_timeout
    assert not run2.loop.tick(run2.t).publish and run2.loop.mode == "stale"
    assert not run2.loop.stopping_tick().publish
