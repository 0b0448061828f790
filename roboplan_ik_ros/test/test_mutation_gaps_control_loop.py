"""Control-loop behaviour that mutation testing found unchecked (docs/mutation.md, core/control).

- Lifecycle: a re-activation waits for a goal like the first one; a loop built from a config logs through its ``log``;
  the hold reason says the loop waits for a goal (and, outside a barrier, that a goal starts the recovery); a rate
  change keeps every task's target; obstacles expected to be prepared keep the ticks on the previous tables.
- Stale state: the ticks while stale (hold) and the tick that waits for a still robot are holds (``previous is
  command``: nothing to take back); a held stream goes on after the outage when the group's joints (not the
  gripper's) are near the last command.
- Holds: entering a hold logs one warning with its reason, leaving it logs why the loop held; a refused step whose
  braking along the path crosses a barrier's floor brakes joint by joint at the jerk bound, without an internal error.
- Joint jogs ramp their target's speed at half the acceleration limit's a_max (README, "Joint jog").
- braking_time_bound: inf when it exceeds the float range (it was 1 s or 0.1 s: a stop cut short).
- Reports: a joint at its jerk bound is reported with its jerk (the last three commands), a fresh StateTracker
  with no rejection; its rest clock restarts on a move beyond rest_tolerance.
- min_jerk is the least j_max whose braking reserve fits in the leash, also when the leash is exactly n^2 a dt^2.
- GoalJudge: an improvement by more than PROGRESS_SHARE of the best distance is progress.
- SingularityScale: kappa over the constrained rows that ``row_weights`` names; a NaN Jacobian raises LinAlgError.
- Seed 4: every hold episode is counted; a restarted stream logs where it starts (the measurement, the last command);
  the singularity motion limit says a twist away is not scaled; a move of exactly rest_tolerance keeps the rest clock.
- Seed 5: the stall clock counts from when the frame became still (a clock not starting at 0); a singularity scale
  with no constrained rows keeps kappa 1.0; command_started is a bool; a sample of no sampled limit counts nothing.
- Seed 6: the tick that resumes gives the activation's wait as its reason, marked resumed; a barrier row that no joint
  moves never binds, even on its boundary; a step the barrier check refused is never reported as the arm's bound (a
  pause keeps it as the last outcome); a frame no joint moves has kappa inf and a scale in [0, 1]; a StateTracker's
  bad limit_tolerance is refused naming joint_limit_tolerance.
- Seed 7: a tick of an inactive loop publishes nothing and is neither a hold nor an error; resume logs that the targets
  restart at the current pose, and a goal sent while resuming is refused saying so; accept_measurement takes the
  buffer as measured at the time it is given.
- Seed 8: stopping_tick publishes nothing (False) while inactive or stale; a config without a velocity limit gets the
  URDF's at the loop's period, noted; a goal's text before it arrives, and that of a goal traded against a heavy
  posture task; a measurement exactly on a joint's limits is accepted.
- control_loop.py's whole-module run (a 150-mutant sample, seed 80): the OInK note says why a part runs in Python; a
  tracking loop has no hold reason; the stale reason, per stale_behavior; activation and the re-seed at exactly their
  time edges, the re-seed tick's result, a pause kept through it; pause and resume (log, reasons, paused at rest);
  failed steps without an acceleration limit, each counted; stopping_tick without one; a rate change while moving
  (without one) or inactive, the stream's velocities kept; set_max_state_divergence.
- Seed 9: going stale and entering recovery each log one warning; a joint braking for its position limit is reported
  on its side; a jog the hand holds back says its target is held at the joint leash.
"""

from __future__ import annotations

import math
import re
import signal
from contextlib import contextmanager

import numpy as np
import pinocchio as pin
import pytest
import yaml

from conftest import CONFIG_DIR
from models import robot, scene
from roboplan_ik_ros.core import Obstacle
from roboplan_ik_ros.core.config import load_config
from roboplan_ik_ros.core.control.binding_bounds import ACCELERATION_BOUND, JOINT_BOUND, binding_bounds
from roboplan_ik_ros.core.control.control_loop import (HOLDING, INACTIVE, PAUSED, RECOVERING, SINGULARITY, STALE,
                                                       TRACKING, WAITING_FOR_GOAL, ControlLoop, load_loop_config)
from roboplan_ik_ros.core.control.following_speed import min_jerk
from roboplan_ik_ros.core.control.goal_feedback import (LIMITED, PROGRESS_TIME, REACHABLE, STALL_TIME, TRADEOFF,
                                                        GoalJudge)
from roboplan_ik_ros.core.control.loop_modes import COMMAND_TIMEOUT, LEASH
from roboplan_ik_ros.core.control.singularity_scale import SingularityScale
from roboplan_ik_ros.core.control.state_tracker import StateTracker
from roboplan_ik_ros.core.errors import InvalidInputError
from roboplan_ik_ros.core.oink import AccelerationLimit, FollowingErrorLimit, Oink, VelocityLimit
from test_control_loop import TIP, SimRobot, make_loop, panda  # noqa: F401 - panda is a fixture
from test_singularity_scale import kappa, outward, stretched

DT = 0.002  # [s] panda.yaml's control period (500 Hz)


def panda_yaml() -> dict:
    return yaml.safe_load((CONFIG_DIR / "panda.yaml").read_text())


def franka_limits() -> dict[str, dict]:
    """panda_joint_limits.yaml (MoveIt format): per joint max_velocity, max_acceleration, max_jerk."""
    return yaml.safe_load((CONFIG_DIR / "panda_joint_limits.yaml").read_text())["joint_limits"]


def loop_of(panda, data: dict, log=None, **settings) -> ControlLoop:
    """The loop of config ``data`` with its node: section's settings, ``settings`` set in that section."""
    for key, value in settings.items():
        if isinstance(value, dict):
            data["node"][key].update(value)
        else:
            data["node"][key] = value
    config = load_config(data)
    return ControlLoop(panda, config, load_loop_config(config), log)


def started(panda, **settings):
    """panda.yaml without the self-collision barrier, activated at "default" and ticked a few times."""
    data = panda_yaml()
    data["barriers"] = [b for b in data["barriers"] if b["name"] != "self_collision"]
    loop = loop_of(panda, data, **settings)
    sim = SimRobot(loop, panda.named_configuration("default"))
    assert loop.activate(sim.t) == ""
    sim.tick(3)
    return loop, sim


@contextmanager
def time_limit(seconds: float):
    """Fail (TimeoutError) instead of hanging when the body runs longer than ``seconds`` [s]."""
    def expire(signum, frame):
        raise TimeoutError(f"still running after {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0.0)
        signal.signal(signal.SIGALRM, previous)


# ----------------------------------------------------------------------------- lifecycle
@pytest.mark.parametrize("paused", [False, True], ids=["running", "paused"])
def test_activating_again_after_deactivate_waits_for_a_goal_and_takes_one(panda, paused):
    """README (lifecycle): activate seeds at the measurement and holds still until a goal arrives (mode
    waiting_for_goal), also after a deactivate; a pause before the deactivate does not outlive it."""
    loop, sim = started(panda)
    if paused:
        loop.pause()
        sim.tick(2)
    loop.deactivate()
    assert not loop.active
    sim.measure()
    assert loop.activate(sim.t) == ""
    assert loop.mode == WAITING_FOR_GOAL and not loop.paused
    T = sim.tcp()
    loop.set_pose_goal("ee", pin.SE3(T.rotation, T.translation + np.array([0.0, 0.0, 0.01])))  # not refused
    sim.tick(5)
    assert loop.mode == TRACKING, loop.hold_reason


def test_a_loop_built_from_a_config_logs_through_the_given_log():
    """from_config(..., log=): the loop's messages reach that function (here the re-seed's at activation)."""
    r = robot("panda")
    data = panda_yaml()
    data["barriers"] = []
    messages: list[tuple[str, str]] = []
    loop = ControlLoop.from_config(data, r.urdf_xml, r.srdf_xml, r.package_paths,
                                   log=lambda level, text: messages.append((level, text)))
    loop.state.incoming[:] = loop.scene.named_configuration("default")
    assert loop.state.accept(0.0) == ""
    assert loop.activate(0.0) == ""
    assert any(level == "info" and "command stream (re)started" in text for level, text in messages), messages


# ----------------------------------------------------------------------------- stale state
def test_the_tick_waiting_for_a_still_robot_after_stale_is_a_hold_with_nothing_to_take_back(panda):
    """Back from stale (stale_behavior hold), the ticks before reseed_settle_time of stillness repeat the last
    command: previous is command (TickResult: buffers of the loop; command_not_sent: a hold has nothing to take
    back), so an unsent one leaves the guard's last command as it was."""
    loop, sim = started(panda, stale_behavior="hold", state_timeout=0.02, reseed_settle_time=0.1)
    sim.tick(20, measure=False)  # 40 ms without joint states: stale
    assert loop.mode == STALE
    last = loop.guard.last.copy()
    sim.t += loop.dt
    sim.measure()
    res = loop.tick(sim.t)
    assert "waiting for the robot to be still" in loop.hold_reason
    assert res.publish and isinstance(res.previous, np.ndarray) and res.previous is res.command
    np.testing.assert_array_equal(res.command, last)
    loop.command_not_sent(res)
    np.testing.assert_array_equal(loop.guard.last, last)


def test_back_from_stale_a_gripper_moved_meanwhile_does_not_end_a_held_stream(panda):
    """stale_behavior hold: back from stale, a still robot whose group joints are within max_state_divergence of the
    last command continues the stream from that command (a re-seed at the measurement would be a step within a
    running stream). Joints outside the group do not count: here the finger, which another controller opened by
    0.039 m (more than max_state_divergence 0.02) during the outage, while panda_joint1 settled 0.01 rad short of
    the last command (a tracking error). The first command after the outage is the last one before it."""
    loop, sim = started(panda, stale_behavior="hold", state_timeout=0.02, reseed_settle_time=0.1,
                        max_state_divergence=0.02)
    sim.tick(20, measure=False)  # 40 ms without joint states: stale
    assert loop.mode == STALE
    g, e = loop.group, loop.settings.max_state_divergence
    last = loop.guard.last.copy()
    joint = panda.model.joints[panda.model.getJointId("panda_finger_joint1")]
    finger = int(joint.idx_q)
    assert finger not in g.q_indices
    q_robot = last.copy()
    q_robot[g.q_indices[0]] -= 0.5 * e
    q_robot[finger] = panda.q_max_v[joint.idx_v] - 1e-3  # [m] opened
    assert abs(q_robot[finger] - last[finger]) > e  # the premise: the finger alone is beyond the divergence
    t = sim.t
    for _ in range(int(2 * loop.settings.reseed_settle_time / loop.dt)):  # measured again, still
        t += loop.dt
        loop.state.incoming[:] = q_robot
        assert loop.state.accept(t) == ""
        res = loop.tick(t)
        if loop.mode != STALE:
            break
    assert loop.mode == WAITING_FOR_GOAL, loop.hold_reason
    np.testing.assert_array_equal(res.command[g.q_indices], last[g.q_indices])


def tracking_with_a_log(panda):
    """The shipped config without barriers, tracking a 2 cm pose goal after 5 ticks; every log line in ``messages``."""
    messages: list[tuple[str, str]] = []
    loop = loop_of(panda, {**panda_yaml(), "barriers": []}, log=lambda level, text: messages.append((level, text)))
    sim = SimRobot(loop, panda.named_configuration("default"))
    assert loop.activate(sim.t) == ""
    T = sim.tcp()
    loop.set_pose_goal("ee", pin.SE3(T.rotation, T.translation + np.array([0.0, 0.0, 0.02])))
    sim.tick(5)
    assert loop.mode == TRACKING
    return loop, sim, messages


# ----------------------------------------------------------------------------- holds
def test_leaving_a_hold_logs_that_the_loop_resumed_and_why_it_held(panda):
    """An exception in the step holds (tick's docstring: the next tick tries again); the next step that moves
    logs at info level that it resumed, naming the hold's reason."""
    loop, sim, messages = tracking_with_a_log(panda)
    step = loop.ctrl.step

    def boom(q):
        raise RuntimeError("boom")

    loop.ctrl.step = boom
    try:
        sim.tick()
    finally:
        loop.ctrl.step = step
    assert loop.mode == HOLDING and loop.counts.tick_errors == 1
    reason = loop.hold_reason
    assert "RuntimeError: boom" in reason
    messages.clear()
    sim.tick()
    assert loop.mode == TRACKING
    infos = [text for level, text in messages if level == "info"]
    assert any(isinstance(t, str) and "resumed" in t and reason in t for t in infos), messages


def _stream_toward_the_face(panda, loop, q0: np.ndarray, tcp: np.ndarray) -> np.ndarray:
    """A goal 5 cm along +x from ``q0``'s TCP, and the command stream so far: two equal increments moving the TCP at
    0.5 m/s along +x (a steady speed toward a face just ahead); returns that increment [rad per period]."""
    loop.set_pose_goal("ee", pin.SE3(panda.frame_pose(q0, TIP).rotation, tcp + np.array([0.05, 0.0, 0.0])))
    J = pin.computeFrameJacobian(panda.model, panda.model.createData(), q0, panda.model.getFrameId(TIP),
                                 pin.LOCAL_WORLD_ALIGNED)[:3, loop.group.v_columns]
    u = np.linalg.pinv(J) @ np.array([0.5 * DT, 0.0, 0.0])  # [rad per period] 0.5 m/s along +x
    loop.guard.u1[:] = u
    loop.guard.u2[:] = u
    return u


def test_a_refused_step_whose_path_braking_crosses_the_floor_brakes_each_joint_at_its_jerk_bound(panda):
    """The TCP 0.3 mm inside the workspace box's +x face, moving toward it at 0.5 m/s (a steady command stream):
    the barrier check refuses the step and the braking along the path (every joint slowed by one scale) would
    still cross the face, so the hold brakes joint by joint as hard as the bounds allow (hardest_stops): from a
    steady speed each joint's increment drops by the smaller of j_max dt^3 and a_max dt^2 (panda_joint_limits.yaml),
    with no internal error in the stop."""
    q0 = panda.named_configuration("default")
    tcp = panda.frame_pose(q0, TIP).translation
    data = panda_yaml()
    data["barriers"] = [b for b in data["barriers"] if b["name"] == "workspace"]
    data["barriers"][0]["p_max"][0] = float(tcp[0] + 3e-4)  # [m]
    loop = loop_of(panda, data)
    assert loop.dt == DT
    loop.state.incoming[:] = q0
    assert loop.state.accept(0.0) == "" and loop.activate(0.0) == ""
    u = _stream_toward_the_face(panda, loop, q0, tcp)
    loop.state.incoming[:] = q0
    assert loop.state.accept(DT) == ""
    res = loop.tick(DT)
    assert loop.counts.tick_errors == 0, loop.hold_reason
    assert loop.mode == HOLDING and loop.hold_reason == "the barrier check refused the step (dq = 0)"
    assert loop.counts.barrier_refusals == 1 and loop.counts.hardest_stops == 1
    limits = franka_limits()
    names = loop.group.joint_names
    j_step = np.array([limits[n]["max_jerk"] for n in names]) * DT**3  # [rad per period] jerk bound
    a_step = np.array([limits[n]["max_acceleration"] for n in names]) * DT**2  # acceleration bound
    expected = u - np.sign(u) * np.minimum(np.abs(u), np.minimum(j_step, a_step))
    g = loop.group
    np.testing.assert_allclose(res.command[g.q_indices] - q0[g.q_indices], expected, rtol=0.0, atol=1e-12)


# ----------------------------------------------------------------------------- configure notes
@pytest.mark.parametrize("smoothing", ["none", "low_pass", "max_speed", "max_acceleration", "jerk_limited"])
def test_an_acceleration_limit_with_a_smoothing_that_does_not_brake_is_noted(panda, smoothing):
    """panda.yaml has an acceleration limit: a pose goal smoothed by a type that does not brake the target into the
    goal (none, low_pass, max_speed) is reached at the acceleration bounds and overshot; configure says so, naming
    the type and the two that brake; max_acceleration and jerk_limited give no such note."""
    loop = loop_of(panda, panda_yaml(), goal_smoothing={"type": smoothing})
    notes = [n for n in loop.notes if n.startswith("node.goal_smoothing.type")]
    if smoothing in ("max_acceleration", "jerk_limited"):
        assert notes == []
    else:
        assert notes == [
            f"node.goal_smoothing.type {smoothing!r} with an acceleration limit: a pose goal that jumps is reached at "
            "the acceleration bounds and overshot by the braking distance; 'jerk_limited' or 'max_acceleration' "
            "brakes the target into the goal instead"]


# ----------------------------------------------------------------------------- joint jog
def posture_jog_loop(panda, keep_the_hand: bool = False):
    """The shipped config with only its posture task (all weights 1; with ``keep_the_hand`` the ee task too, whose
    priority 1 is above the posture's), no barrier, jogs in speed units, activated at "default": (loop, sim)."""
    data = panda_yaml()
    data["tasks"] = [t for t in data["tasks"] if t["name"] == "posture" or (keep_the_hand and t["name"] == "ee")]
    next(t for t in data["tasks"] if t["name"] == "posture")["weights"] = 1.0
    data["barriers"] = []
    loop = loop_of(panda, data, streaming={"command_in_type": "speed_units"})
    sim = SimRobot(loop, panda.named_configuration("default"))
    assert loop.activate(sim.t) == ""
    return loop, sim


def test_a_joint_jog_ramps_its_target_speed_at_half_the_acceleration_limit(panda):
    """README (Joint jog): the target's joint velocities change by at most half the acceleration limit's a_max
    per second: panda_joint1 jogged at 0.5 rad/s (a_max 15 rad/s^2) speeds up by 7.5 rad/s^2 * dt per tick, its
    target moving v dt a tick."""
    loop, sim = posture_jog_loop(panda)
    sim.tick(2)
    a_ramp = 0.5 * franka_limits()["panda_joint1"]["max_acceleration"]  # [rad/s^2]
    dq = np.zeros(7)
    dq[0] = 0.5  # [rad/s]
    targets = [loop.tasks["posture"].target[0]]
    for k in range(10):
        if k % 5 == 0:
            loop.set_joint_velocities("posture", dq, sim.t)
        sim.tick()
        targets.append(loop.tasks["posture"].target[0])
    speeds = np.diff(targets) / DT  # [rad/s]
    np.testing.assert_allclose(speeds, a_ramp * DT * np.arange(1, 11), rtol=1e-9, atol=1e-12)


# ----------------------------------------------------------------------------- braking time bound
@pytest.mark.parametrize("velocity, acceleration", [(dict(v_max=1.7e308), dict(a_max=1.0)), ({}, dict(a_max=1e-308))],
                         ids=["v_max-near-the-float-range", "subnormal-a_max"])
def test_a_braking_time_bound_beyond_the_float_range_is_inf_not_a_short_stop(panda, velocity, acceleration):
    """braking_time_bound = 2 max(v_max / a_max + a_max / j_max) + 0.1 s, here without a jerk bound (a_max / inf = 0).
    With v_max 1.7e308 rad/s and a_max 1 rad/s^2 the doubled quotient, with the Franka's v_max and a_max 1e-308 rad/s^2
    the quotient itself exceeds the float range: the bound is inf (a controlled stop brakes until at rest), not a
    short one (they were 1 s and 0.1 s: the node stopped braking after that, however fast the arm moved)."""
    data = panda_yaml()
    data["barriers"] = []
    for lim in data["limits"]:
        if lim["type"] == "velocity":
            lim.update(velocity)
        elif lim["type"] == "acceleration":
            lim.update(acceleration, j_max=math.inf)
    with np.errstate(over="ignore"):  # AccelerationLimit's own per-step constants overflow too at a_max 1e-308
        loop = loop_of(panda, data)
        assert not np.isfinite(2.0 * np.max(loop.guard.v_max / loop.acceleration_limit.a_max))  # the premise
    assert loop.braking_time_bound() == math.inf


# ----------------------------------------------------------------------------- reports
CRUISE_A_MAX = 15.0  # [rad/s^2] cruising's acceleration bound


def cruising(s, c: np.ndarray, q: np.ndarray, j_max: float | None) -> AccelerationLimit:
    """An AccelerationLimit of the Panda's arm (a_max CRUISE_A_MAX, ``j_max``, v_max 10 rad/s) whose last two
    commands both moved the joints by ``c`` [rad per period], its bounds solved at ``q``."""
    lim = AccelerationLimit(Oink(s, "arm"), DT, CRUISE_A_MAX, j_max, v_max=10.0)
    lim.set_history(c, c)
    lim.bounds(q)
    return lim


@pytest.mark.parametrize("upper", [True, False], ids=["upper", "lower"])
@pytest.mark.parametrize("bound", ["jerk", "acceleration"])
def test_a_joint_at_its_jerk_or_acceleration_bound_is_reported_with_that_derivative(upper, bound):
    """Steady at 0.5 rad/s (u1 = u2 = 1 mrad a period). With j_max 1000 rad/s^3 (below a_max / dt: the jerk bound is
    the tighter one) a step of u1 +- j_max dt^3 has jerk (u - 2 u1 + u2) / dt^3 = +-j_max: binding_bounds names the
    jerk bound with that jerk [rad/s^3]. Without a jerk bound a step of u1 +- a_max dt^2 changes the velocity at
    (u - u1) / dt^2 = +-a_max (acceleration_limit.py: |u - u_1| / dt^2 <= a_max): it names the acceleration bound
    with that acceleration [rad/s^2], not one counting the previous increment again."""
    s = scene("panda")
    a_max, j_max = CRUISE_A_MAX, (1000.0 if bound == "jerk" else None)  # [rad/s^2], [rad/s^3]
    q = s.named_configuration("default")
    c = np.full(7, 1e-3)  # [rad per period]
    lim = cruising(s, c, q, j_max)
    sign = 1.0 if upper else -1.0
    dq = c + sign * (j_max * DT**3 if bound == "jerk" else a_max * DT**2)
    hits = binding_bounds(s, s.group("arm"), [lim], q, dq, DT, 1e-10)
    assert len(hits) == 7 and all(h.code == ACCELERATION_BOUND and f"{bound} bound" in h.text for h in hits), hits
    symbol, unit, expected, tol = ("j", r"rad/s\^3", j_max, 0.1) if bound == "jerk" else ("a", r"rad/s\^2", a_max, 1e-3)
    for h in hits:
        value = float(re.search(rf"\({symbol} ([-+0-9.]+) {unit}", h.text).group(1))
        assert value == pytest.approx(sign * expected, abs=tol), h.text


def test_a_fresh_state_tracker_has_no_rejection_and_keeps_the_latest_reason():
    """Nothing rejected yet: last_rejection is "" (0 rejected); a rejected measurement's reason is kept."""
    s = scene("panda")
    st = StateTracker(s, s.group("arm"), limit_tolerance=0.01)
    assert st.rejected == 0 and st.last_rejection == ""
    st.incoming[:] = s.named_configuration("default")
    st.incoming[0] = s.q_max_v[0] + 1.0
    reason = st.accept(1.0)
    assert reason and st.rejected == 1 and st.last_rejection == reason


def test_a_measurement_that_moves_beyond_rest_tolerance_restarts_the_rest_clock():
    """StateTracker.rest_duration: how long the measurements stayed within rest_tolerance of the one that started the
    run. Still from 0 to 0.1 s: 0.1 s. panda_joint1 moves by half rest_tolerance at 0.15 s: still the same run
    (0.15 s). It moves by twice rest_tolerance from there at 0.2 s: a new run starts there (0 s), and at 0.3 s it
    has lasted 0.1 s."""
    s = scene("panda")
    st = StateTracker(s, s.group("arm"), limit_tolerance=0.01)
    q = s.named_configuration("default")
    tol = st.rest_tolerance

    def measure(t: float, dq1: float = 0.0) -> float:
        q[0] += dq1
        st.incoming[:] = q
        assert st.accept(t) == ""
        return st.rest_duration()

    assert [measure(0.0), measure(0.05), measure(0.1)] == pytest.approx([0.0, 0.05, 0.1], abs=1e-12)
    assert measure(0.15, 0.5 * tol) == pytest.approx(0.15, abs=1e-12)
    assert measure(0.2, 2.0 * tol) == 0.0
    assert measure(0.3) == pytest.approx(0.1, abs=1e-12)


# ----------------------------------------------------------------------------- min_jerk
def _reserve(a_max: float, j_max: float, dt: float) -> float:
    """[rad] the braking reserve a_max dt^2 (ceil(a_max / (j_max dt)) - 1)^2 (following_speed.min_jerk)."""
    return a_max * dt * dt * max(np.ceil(a_max / (j_max * dt)) - 1.0, 0.0) ** 2


@pytest.mark.parametrize("a_max, dt, leash", [(1.0, 0.5, 1.0), (16.0, 0.25, 9.0), (15.0, DT, 0.1)],
                         ids=["4-alpha", "9-alpha", "franka"])
def test_min_jerk_is_the_least_jerk_whose_braking_reserve_fits_in_the_leash(a_max, dt, leash):
    """The reserve at min_jerk is below the leash, and just below min_jerk it is not; also where the leash is
    exactly n^2 a_max dt^2 (4 and 9 times it: binary-exact), whose n does not fit (reserve < leash is strict)."""
    with time_limit(5.0):
        j = min_jerk(a_max, dt, leash)
    assert _reserve(a_max, j * (1 + 1e-9), dt) < leash
    assert _reserve(a_max, j * (1 - 1e-9), dt) >= leash


# ----------------------------------------------------------------------------- goal feedback
def test_a_distance_gain_of_more_than_the_progress_share_restarts_the_progress_clock():
    """PROGRESS_SHARE (5 %) of the best distance is progress: 0.5 m -> 0.45 m (a 10 % gain, 50 mm > 25 mm) at
    0.5 s restarts the clock, so at 1.25 s, over PROGRESS_TIME after the goal but not after the gain, the moving
    frame is still reachable; with no further gain it is limited PROGRESS_TIME after the gain."""
    judge = GoalJudge()
    goal = pin.SE3(np.eye(3), np.array([0.5, 0.0, 0.0]))
    moving = np.array([0.1, 0.0, 0.0, 0.0, 0.0, 0.0])  # [m/s, rad/s] never stalled
    at = lambda x: pin.SE3(np.eye(3), np.array([x, 0.0, 0.0]))  # noqa: E731
    assert judge.judge(0.0, at(0.0), goal, moving)[0] == REACHABLE
    verdict, distance, angle = judge.judge(0.5, at(0.05), goal, moving)
    assert verdict == REACHABLE and distance == pytest.approx(0.45) and angle == pytest.approx(0.0)
    assert judge.judge(1.25, at(0.05), goal, moving)[0] == REACHABLE
    assert judge.judge(0.5 + PROGRESS_TIME, at(0.05), goal, moving)[0] == LIMITED


# ----------------------------------------------------------------------------- singularity scale
def test_the_singularity_scale_takes_kappa_over_the_rows_its_weights_constrain():
    """row_weights [1, 1, 1, 0, 0, 0] (a position-only task): kappa is the condition number of the frame
    Jacobian's 3 linear rows, not of all 6; below lower_singularity_threshold a twist is not scaled."""
    s = scene("panda")
    g = s.group("arm")
    fid = s.model.getFrameId(TIP)
    q = s.named_configuration("default")
    q[3] = -0.9  # the elbow nearly stretched
    J = pin.computeFrameJacobian(s.model, s.model.createData(), q, fid, pin.LOCAL_WORLD_ALIGNED)[:, g.v_columns]
    S3, S6 = np.linalg.svd(J[:3], compute_uv=False), np.linalg.svd(J, compute_uv=False)
    k3, k6 = S3[0] / S3[-1], S6[0] / S6[-1]
    assert k3 < k6 / 1.5, (k3, k6)  # far enough apart to tell
    lower = 0.5 * (k3 + k6)
    weights = np.array([1.0, 1.0, 1.0, 0.0, 0.0, 0.0])
    sc = SingularityScale(s, g, fid, lower=lower, hard=10.0 * k6, row_weights=weights)
    for v in np.eye(3):
        assert sc.scale(q, 0.05 * v, np.zeros(3)) == 1.0
        assert sc.kappa == pytest.approx(k3, rel=1e-9)


def test_a_jacobian_with_a_nan_raises_numpys_linalg_error_from_the_singularity_scale():
    """_singular_values: LAPACK's dgesdd through scipy refuses a matrix with a NaN (info != 0); the scale then raises
    numpy's LinAlgError, as np.linalg.svd did before that shortcut (a tick turns it into a hold that names it). A
    NaN in panda_joint1 makes the whole frame Jacobian NaN."""
    s = scene("panda")
    q = s.named_configuration("default")
    q[0] = np.nan
    sc = SingularityScale(s, s.group("arm"), s.model.getFrameId(TIP), lower=17.0, hard=30.0)
    with pytest.raises(np.linalg.LinAlgError):
        sc.scale(q, np.array([0.05, 0.0, 0.0]), np.zeros(3))


# ----------------------------------------------------------------------------- seed 3 (docs/mutation.md)
def test_activation_gives_the_reason_that_the_loop_waits_for_a_goal_and_the_waiting_ticks_keep_it(panda):
    """README (lifecycle): activate holds the current pose until a goal arrives, and the status says so: the hold
    reason names the wait for a goal, and the ticks that wait without a goal give the same reason."""
    loop = loop_of(panda, {**panda_yaml(), "barriers": []})
    sim = SimRobot(loop, panda.named_configuration("default"))
    assert loop.activate(sim.t) == ""
    at_activation = loop.hold_reason
    assert loop.mode == WAITING_FOR_GOAL and "waiting for a goal" in at_activation, at_activation
    sim.tick(3)
    assert loop.mode == WAITING_FOR_GOAL and loop.hold_reason == at_activation


def activated_above_the_box(panda, loop) -> SimRobot:
    """The robot with its TCP ~20 mm above the workspace box's top (as
    test_starting_outside_the_box_recovers_monotonically), ``loop`` activated there (waiting for a goal)."""
    q = panda.named_configuration("default")
    q[3] += 0.75
    q[5] -= 0.375
    sim = SimRobot(loop, q)
    assert loop.activate(sim.t) == ""
    return sim


def test_waiting_for_a_goal_outside_a_barrier_the_reason_keeps_the_wait_and_adds_the_recovery(panda):
    """Activated with the TCP above the workspace box: the step would recover, but no goal, no motion; the hold
    reason is the wait's (as at activation) followed by the step's status, which says a goal starts the recovery."""
    loop = make_loop(panda)
    sim = activated_above_the_box(panda, loop)
    waiting = loop.hold_reason
    sim.tick(3)
    result = loop.last_outcome.result
    assert result.recovering and loop.mode == WAITING_FOR_GOAL  # the premise: outside, no goal
    assert loop.hold_reason.startswith(waiting), loop.hold_reason
    assert result.status in loop.hold_reason and "a goal starts the recovery" in loop.hold_reason


def test_a_hold_is_logged_once_as_a_warning_that_names_its_reason(panda):
    """Entering a hold (here: the step raises, three ticks running) logs one warning with the hold's reason (the
    error's traceback is logged at error level, every tick)."""
    loop, sim, messages = tracking_with_a_log(panda)
    step = loop.ctrl.step

    def boom(q):
        raise RuntimeError("boom")

    messages.clear()
    loop.ctrl.step = boom
    try:
        sim.tick(3)
    finally:
        loop.ctrl.step = step
    assert loop.mode == HOLDING and loop.counts.holds == 1
    warnings = [text for level, text in messages if level == "warning"]
    assert len(warnings) == 1 and loop.hold_reason in warnings[0], messages


def test_the_ticks_while_stale_with_hold_repeat_the_last_command_with_nothing_to_take_back(panda):
    """stale_behavior hold: while no joint states arrive, every tick publishes the last command again as a hold:
    previous is command (TickResult), so command_not_sent on it leaves the guard's last command as it was."""
    loop, sim = started(panda, stale_behavior="hold", state_timeout=0.02)
    while loop.mode != STALE:
        sim.tick(measure=False)
        assert sim.t < 1.0
    last = loop.guard.last.copy()
    sim.t += loop.dt
    res = loop.tick(sim.t)
    assert loop.mode == STALE and res.publish
    assert res.previous is res.command
    np.testing.assert_array_equal(res.command, last)
    loop.command_not_sent(res)
    np.testing.assert_array_equal(loop.guard.last, last)


def _targets(loop) -> dict[str, np.ndarray]:
    """Every task's target as an array (a pose as its homogeneous matrix); None kept."""
    out = {}
    for name, task in loop.tasks.items():
        target = task.target
        out[name] = None if target is None else np.array(
            target.homogeneous if isinstance(target, pin.SE3) else target, dtype=float)
    return out


def test_a_rate_change_keeps_every_tasks_target(panda):
    """set_rate rebuilds the controller for the new period and keeps the targets: after a pose goal 2 cm up was
    followed to rest (the posture task's configured target taken too), every task's target is the same after
    set_rate(250 Hz) as before, not the new controller's (its tasks built at the last command)."""
    loop, sim = started(panda)
    T = sim.tcp()
    loop.set_pose_goal("ee", pin.SE3(T.rotation, T.translation + np.array([0.0, 0.0, 0.02])))
    sim.tick(50)
    while not loop.at_rest:
        sim.tick()
        assert sim.t < 10.0
    before = _targets(loop)
    assert any(t is not None for t in before.values())
    loop.set_rate(250.0)
    assert loop.dt == pytest.approx(1.0 / 250.0)
    after = _targets(loop)
    assert after.keys() == before.keys()
    for name, target in before.items():
        if target is None:
            assert after[name] is None, name
        else:
            np.testing.assert_array_equal(after[name], target, err_msg=name)


@pytest.mark.kernel  # the compiled barrier keeps its own copy of the geometries
def test_obstacles_expected_to_be_prepared_keep_the_ticks_on_the_previous_tables_until_prepared():
    """expect_collision_prepare (the node, under its lock, right after changing the obstacles; prepare_collisions
    follows outside it): the ticks in between go on with the collision barrier's previous pair tables instead of
    rebuilding them in the tick; the tick after prepare_collisions has the tables of the new scene."""
    r = robot("panda")
    data = panda_yaml()
    data["barriers"] = [b for b in data["barriers"] if b["name"] == "obstacles"]
    loop = ControlLoop.from_config(data, r.urdf_xml, r.srdf_xml, r.package_paths)
    barrier = loop.ctrl.barriers[0]
    assert barrier.compiled  # the kernel goes on with its own copy of the geometries; the Python path cannot
    s = loop.scene
    q = s.named_configuration("default")
    loop.state.incoming[:] = q
    assert loop.state.accept(0.0) == "" and loop.activate(0.0) == ""
    t = 0.0
    for _ in range(2):
        t += loop.dt
        assert loop.state.accept(t) == ""
        loop.tick(t)
    old = barrier.pairs.version
    assert old == s.collision_version
    hand = s.frame_pose(q, TIP).translation
    s.add_obstacle(Obstacle("post", "sphere", (0.03,), position=tuple(hand + [0.0, 0.12, 0.0])))
    assert s.collision_version != old
    loop.expect_collision_prepare()
    t += loop.dt
    assert loop.state.accept(t) == ""
    loop.tick(t)
    assert barrier.pairs.version == old  # the previous tables: a prepare is under way
    loop.prepare_collisions()
    t += loop.dt
    assert loop.state.accept(t) == ""
    loop.tick(t)
    assert barrier.pairs.version == s.collision_version
    assert loop.counts.tick_errors == 0, loop.hold_reason


# ----------------------------------------------------------------------------- seed 4 (docs/mutation.md)
def test_every_hold_episode_is_counted_a_second_hold_after_resuming_makes_two(panda):
    """counts.holds: "times the loop entered a hold" (the status report's holds). The step raises (a hold), works
    again (tracking), raises again: two episodes, two holds; the ticks of one episode count once."""
    loop, sim, _ = tracking_with_a_log(panda)
    assert loop.counts.holds == 0  # the premise: no hold before
    step = loop.ctrl.step

    def boom(q):
        raise RuntimeError("boom")

    for episode in (1, 2):
        loop.ctrl.step = boom
        try:
            sim.tick(2)
        finally:
            loop.ctrl.step = step
        assert loop.mode == HOLDING and loop.counts.holds == episode
        sim.tick()
        assert loop.mode == TRACKING


def test_a_restarted_command_stream_logs_whether_it_starts_at_the_measurement_or_at_the_last_command(panda):
    """The info line of a (re)started command stream says where it starts: activation, at the measured position;
    back from stale (hold) with the still robot near the last command, the stream goes on from the last command,
    and the line says so (an operator reads which of the two happened)."""
    messages: list[tuple[str, str]] = []
    data = panda_yaml()
    data["barriers"] = [b for b in data["barriers"] if b["name"] != "self_collision"]
    loop = loop_of(panda, data, log=lambda level, text: messages.append((level, text)), stale_behavior="hold",
                   state_timeout=0.02, reseed_settle_time=0.1)
    sim = SimRobot(loop, panda.named_configuration("default"))

    def restarts() -> list[str]:
        return [text for level, text in messages if level == "info" and text.startswith("command stream (re)started")]

    assert loop.activate(sim.t) == ""
    assert len(restarts()) == 1 and "at the measured position;" in restarts()[0], messages
    sim.tick(20, measure=False)  # 40 ms without joint states: stale
    assert loop.mode == STALE
    for _ in range(int(2 * loop.settings.reseed_settle_time / loop.dt)):  # measured again, still at the command
        sim.tick()
        if loop.mode != STALE:
            break
    assert loop.mode == WAITING_FOR_GOAL and loop.counts.reseeds == 2, loop.hold_reason
    assert len(restarts()) == 2 and "at the last command;" in restarts()[1], messages


def test_the_singularity_motion_limit_says_a_twist_away_is_not_scaled(panda):
    """A twist toward the elbow singularity (the arm stretched, as test_singularity_scale's) between the
    thresholds: the motion limit is SINGULARITY, and its text ends by saying that a twist away is not scaled (the
    README's promise, SingularityScale: away is never slowed). The thresholds are set around the start's kappa."""
    q0 = stretched(panda, -1.3)
    k0 = kappa(panda, q0, panda.model.getFrameId(TIP), panda.group("arm").v_columns)
    lower, hard = max(1.0, 0.5 * k0), 4.0 * k0
    loop = loop_of(panda, {**panda_yaml(), "barriers": []},  # the workspace box would stop the stretch first
                   streaming=dict(command_in_type="speed_units", lower_singularity_threshold=lower,
                                  hard_stop_singularity_threshold=hard))
    st = loop.settings.streaming
    assert st.lower_singularity_threshold < k0 < st.hard_stop_singularity_threshold  # the premise: between them
    sim = SimRobot(loop, q0)
    assert loop.activate(sim.t) == ""
    loop.set_twist("ee", 0.1 * outward(panda, q0), np.zeros(3), sim.t)
    sim.tick(3)
    code, text = loop.motion_limit(sim.t)
    assert code == SINGULARITY, (code, text)
    assert text.endswith("(away: not scaled)"), text


def test_a_move_of_exactly_rest_tolerance_is_within_it_and_keeps_the_rest_clock():
    """rest_duration counts while every group coordinate stays *within* rest_tolerance of the run's first
    measurement (reseed_tolerance: "every joint within"): a move of exactly the tolerance, either way, keeps the run;
    the next float beyond it starts a new one. Binary fractions: the differences are exact."""
    s = scene("panda")
    tol = 2.0**-11  # [rad]
    st = StateTracker(s, s.group("arm"), limit_tolerance=0.01, rest_tolerance=tol)
    q = s.named_configuration("default")

    def measure(t: float, q1: float) -> float:
        q[0] = q1
        st.incoming[:] = q
        assert st.accept(t) == ""
        return st.rest_duration()

    assert measure(0.0, 0.0) == 0.0
    assert measure(0.25, tol) == 0.25 and measure(0.5, -tol) == 0.5  # at the edge: the same run
    assert measure(0.75, math.nextafter(tol, math.inf)) == 0.0  # beyond it: a new run


# ----------------------------------------------------------------------------- seed 5 (docs/mutation.md)
def test_the_stall_clock_counts_from_when_the_frame_became_still_whatever_the_clock_reads():
    """GoalJudge: a frame still short of its goal is limited STALL_TIME after it became still, not before, also on a
    clock that does not start at 0 (the node's: seconds since the epoch): a goal at t0 = 64 s is reachable at t0 and
    half a STALL_TIME later, limited STALL_TIME later (PROGRESS_TIME not yet over)."""
    judge = GoalJudge()
    goal = pin.SE3(np.eye(3), np.array([0.1, 0.0, 0.0]))
    frame, still, t0 = pin.SE3.Identity(), np.zeros(6), 64.0
    assert STALL_TIME < PROGRESS_TIME  # the premise: the stall, not the progress clock, decides
    assert judge.judge(t0, frame, goal, still)[0] == REACHABLE
    assert judge.judge(t0 + 0.5 * STALL_TIME, frame, goal, still)[0] == REACHABLE
    assert judge.judge(t0 + STALL_TIME, frame, goal, still)[0] == LIMITED


def test_a_singularity_scale_with_no_constrained_rows_scales_nothing_and_keeps_kappa_one():
    """SingularityScale.kappa (the condition number at the last call) is 1.0, a number (the status text formats it),
    before any call and after one for a task that weighs no row (nothing to be singular): the twist is not scaled
    and ``value`` stays 1."""
    s = scene("panda")
    sc = SingularityScale(s, s.group("arm"), s.model.getFrameId(TIP), lower=17.0, hard=30.0, row_weights=np.zeros(6))
    assert sc.kappa == 1.0 and sc.value == 1.0
    assert sc.scale(s.named_configuration("default"), np.array([0.05, 0.0, 0.0]), np.zeros(3)) == 1.0
    assert sc.kappa == 1.0 and sc.value == 1.0


def test_command_started_is_false_before_activation_and_true_after(panda):
    """ControlLoop.command_started (a bool: the node reads it to decide whether to publish) is False before the
    first activation (no command stream yet) and True once activation started one."""
    loop = loop_of(panda, panda_yaml())
    assert loop.command_started is False
    sim = SimRobot(loop, panda.named_configuration("default"))
    assert loop.command_started is False  # a state is not a command stream
    assert loop.activate(sim.t) == ""
    assert loop.command_started is True


def test_a_sample_without_a_sampled_motion_limit_counts_no_episode(panda):
    """note_motion_limit counts only BARRIER and a leash's cause (the codes the tick cannot see): a sample of none
    ("") or of a code the tick counts itself (COMMAND_TIMEOUT, JOINT_BOUND, not the leash's cause here) adds no
    episode of any code."""
    loop, _ = started(panda)
    before = dict(loop.counts.motion_limits)
    assert loop.leash_cause == ""  # the premise: no stream held at its leash
    for code in ("", COMMAND_TIMEOUT, JOINT_BOUND, ""):
        loop.note_motion_limit(code)
    assert loop.counts.motion_limits == before


# ----------------------------------------------------------------------------- seed 6 (docs/mutation.md)
def test_the_tick_that_resumes_gives_the_activations_wait_as_its_reason_marked_resumed(panda):
    """pause, then resume: the tick that finds the arm at rest re-targets every task and waits for a goal; its hold
    reason is the wait's, as at activation, marked "resumed: " (the status says why the arm holds and that the pause
    is over). The waiting ticks after it give the wait's own reason, as after activation."""
    loop, sim = started(panda)
    at_activation = loop.hold_reason
    assert loop.mode == WAITING_FOR_GOAL, at_activation  # the premise: the activation's wait
    loop.pause()
    sim.tick(2)
    loop.resume()
    for _ in range(200):
        sim.tick()
        if loop.mode != PAUSED:
            break
    assert loop.mode == WAITING_FOR_GOAL
    assert loop.hold_reason == "resumed: " + at_activation
    assert loop.last_outcome is None and loop.barrier_rows() == []  # no step from this pose yet, as after activation
    sim.tick()
    assert loop.hold_reason == at_activation


def test_a_barrier_row_that_no_joint_moves_never_binds_even_on_its_boundary(panda):
    """barrier_rows: a row binds when the step could move at most BINDING_SLACK further along its direction. A row
    whose gradient is zero has no direction: a position barrier on panda_link0 (the base, which no joint of the group
    moves) with its z floor exactly at the base (h = 0, bound 0, G = 0: the slack test 0 <= 0 holds) is not binding
    while the arm tracks a goal; the workspace rows, which the joints move, are judged as always."""
    q0 = panda.named_configuration("default")
    z_base = float(panda.frame_pose(q0, "panda_link0").translation[2])
    data = panda_yaml()
    data["barriers"] = [b for b in data["barriers"] if b["name"] == "workspace"]
    data["barriers"].append({"name": "base_floor", "type": "position", "frame": "panda_link0",
                             "p_min": [0.0, 0.0, z_base], "p_max": [0.0, 0.0, z_base + 1.0],
                             "axis_selection": [False, False, True]})
    loop = loop_of(panda, data)
    sim = SimRobot(loop, q0)
    assert loop.activate(sim.t) == ""
    T = sim.tcp()
    loop.set_pose_goal("ee", pin.SE3(T.rotation, T.translation + np.array([0.05, 0.0, 0.0])))
    sim.tick(5)
    assert loop.mode == TRACKING
    rows = {name: (names, h, binding) for name, names, h, binding in loop.barrier_rows()}
    names, h, binding = rows["base_floor"]
    k = names.index("z lower")
    base = next(b for b in loop.ctrl.barriers if b.name == "base_floor")
    assert h[k] == 0.0 and not base.G[k].any() and base.upper[k] == 0.0  # the premise: on the boundary, no gradient
    assert not binding.any()


def test_a_step_the_barrier_check_refused_is_never_reported_as_the_bound_that_holds_the_arm(panda):
    """binding_bounds: [] unless the last step moved the arm. A refused step (the barrier check; built as
    test_a_refused_step_whose_path_braking_crosses_the_floor_brakes_each_joint_at_its_jerk_bound, with panda_joint7
    resting on its upper limit and no posture task, so that the refused step sits on that limit) holds the arm; a
    pause brakes without a step and resuming forgets the refused step (no step from the resumed pose yet). Resumed,
    a goal sets the loop tracking before its next step: the refused step's joint bound, still read off it, is not
    reported."""
    q0 = panda.named_configuration("default")
    q0[6] = panda.q_max_v[6]
    tcp = panda.frame_pose(q0, TIP).translation
    data = panda_yaml()
    data["tasks"] = [t for t in data["tasks"] if t["name"] == "ee"]
    data["barriers"] = [b for b in data["barriers"] if b["name"] == "workspace"]
    data["barriers"][0]["p_max"][0] = float(tcp[0] + 3e-4)  # [m]
    loop = loop_of(panda, data)
    sim = SimRobot(loop, q0)
    assert loop.activate(sim.t) == ""
    _stream_toward_the_face(panda, loop, q0, tcp)
    sim.tick()
    refused = loop.last_outcome
    assert loop.mode == HOLDING and refused.result.ok and not refused.barriers_ok  # the premise: refused

    def bounds_of_the_refused_step():
        return binding_bounds(loop.scene, loop.group, loop.ctrl.limits, loop._q_start, refused.result.dq, loop.dt,
                              loop.ctrl.oink.constraint_tolerance)

    assert ("panda_joint7", JOINT_BOUND) in [(h.joint, h.code) for h in bounds_of_the_refused_step()]
    loop.pause()
    for k in range(400):
        sim.tick()
        if k == 10:
            loop.resume()
        if loop.mode == WAITING_FOR_GOAL:
            break
    assert loop.mode == WAITING_FOR_GOAL and loop.last_outcome is None
    T = sim.tcp()
    loop.set_pose_goal("ee", pin.SE3(T.rotation, T.translation - np.array([0.05, 0.0, 0.0])))
    assert loop.mode == TRACKING
    assert ("panda_joint7", JOINT_BOUND) in [(h.joint, h.code) for h in bounds_of_the_refused_step()]
    assert loop.binding_bounds() == []


def test_a_frame_that_no_joint_moves_has_kappa_inf_and_a_scale_in_0_1():
    """SingularityScale of a frame the group cannot move (panda_link0, the base): every singular value of its Jacobian
    is 0, so kappa = s_max / s_min is taken as inf (0 / 0 would be NaN: the motion limit's text would print it, and
    the fade (hard - kappa) / (hard - lower) would turn it into a NaN scale). A twist along either sign of each axis
    gets a scale in [0, 1]."""
    s = scene("panda")
    sc = SingularityScale(s, s.group("arm"), s.model.getFrameId("panda_link0"), lower=17.0, hard=30.0)
    q = s.named_configuration("default")
    for axis in np.eye(3):
        for sign in (1.0, -1.0):
            for linear, angular in ((sign * 0.05 * axis, np.zeros(3)), (np.zeros(3), sign * 0.2 * axis)):
                value = sc.scale(q, linear, angular)
                assert sc.kappa == math.inf
                assert 0.0 <= value <= 1.0 and 0.0 <= sc.value <= 1.0, (linear, angular, value)


@pytest.mark.parametrize("bad", [-0.01, math.nan, "0.01"], ids=["negative", "nan", "text"])
def test_a_state_tracker_refuses_a_bad_limit_tolerance_naming_joint_limit_tolerance(bad):
    """StateTracker(limit_tolerance=) takes a number >= 0 (0 allowed: the limits exactly); anything else is refused
    with an error that names the key it comes from, joint_limit_tolerance."""
    s = scene("panda")
    StateTracker(s, s.group("arm"), limit_tolerance=0.0)  # the premise: the edge is taken
    with pytest.raises(InvalidInputError, match=r"^joint_limit_tolerance: "):
        StateTracker(s, s.group("arm"), limit_tolerance=bad)


# ----------------------------------------------------------------------------- seed 7 (docs/mutation.md)
@pytest.mark.parametrize("deactivated", [False, True], ids=["never-activated", "deactivated"])
def test_an_inactive_loop_ticks_without_publishing_holding_or_counting_an_error(panda, deactivated):
    """tick of an inactive loop (before the first activate, or after deactivate): nothing to publish, and no hold:
    the command is the last one with nothing to take back (``previous is command``), the mode stays INACTIVE and
    neither a hold nor a tick error is counted (an error there would hold, and after a deactivate publish)."""
    loop = loop_of(panda, panda_yaml())
    sim = SimRobot(loop, panda.named_configuration("default"))
    if deactivated:
        assert loop.activate(sim.t) == ""
        sim.tick(3)
        loop.deactivate()
    holds, errors = loop.counts.holds, loop.counts.tick_errors
    res = loop.tick(sim.t + loop.dt)
    assert not res.publish
    assert res.command is loop.guard.last and res.previous is res.command
    assert loop.mode == INACTIVE, loop.hold_reason
    assert (loop.counts.holds, loop.counts.tick_errors) == (holds, errors)


def test_resuming_logs_that_targets_restart_at_the_current_pose_and_refuses_goals_saying_it_resumes(panda):
    """resume (ControlLoop): logs at info level that the targets restart at the current pose once at rest; until the
    tick that finds the arm at rest, a goal is refused with the reason that the loop is resuming (inputs are accepted
    once at rest), not that it is paused."""
    loop, sim, messages = tracking_with_a_log(panda)
    loop.pause()
    messages.clear()
    loop.resume()
    assert messages == [("info", "resumed: the targets restart at the current pose once at rest")]
    T = sim.tcp()
    with pytest.raises(InvalidInputError) as refused:
        loop.set_pose_goal("ee", pin.SE3(T.rotation, T.translation + np.array([0.0, 0.0, 0.01])))
    assert str(refused.value) == ("the controller is resuming from a pause: inputs are accepted once the arm is "
                                  "at rest")


def test_accept_measurement_takes_the_buffer_as_measured_at_the_time_given(panda):
    """LoopView.accept_measurement (how the node hands a decoded joint state over): the configuration written into
    measurement_buffer becomes the measurement, received at ``now``: the state's age counts from that time."""
    loop = loop_of(panda, panda_yaml())
    q = panda.named_configuration("default")
    q[0] = 0.25  # [rad] not the tracker's initial configuration
    loop.measurement_buffer[:] = q
    now = 0.25  # [s] (binary fractions: the ages below are exact)
    assert loop.accept_measurement(now) == ""
    np.testing.assert_array_equal(loop.state.measured, q)
    assert loop.state.age(now + 0.5) == 0.5


# ----------------------------------------------------------------------------- seed 8 (docs/mutation.md)
@pytest.mark.parametrize("mode", [INACTIVE, STALE])
def test_a_stopping_tick_publishes_nothing_while_inactive_or_stale(panda, mode):
    """stopping_tick (deactivate's controlled stop) of a loop never activated, or one whose joint states went stale:
    nothing to publish (publish is False, the TickResult's bool), the last command with nothing to take back, and the
    guard's last command unchanged."""
    if mode == INACTIVE:
        loop = loop_of(panda, panda_yaml())
    else:
        loop, sim = started(panda, stale_behavior="hold", state_timeout=0.02)
        sim.tick(20, measure=False)  # 40 ms without joint states
    assert loop.mode == mode
    last = loop.guard.last.copy()
    res = loop.stopping_tick()
    assert res.publish is False
    assert res.command is loop.guard.last and res.previous is res.command
    np.testing.assert_array_equal(loop.guard.last, last)


def test_a_config_without_a_velocity_limit_gets_the_urdfs_at_the_loops_period_and_says_so(panda):
    """A ControlLoop whose config has no velocity limit adds one with the URDF's v_max at its control period (every
    command within v_max dt), noted; a rate change rebuilds it at the new period."""
    data = panda_yaml()
    data["limits"] = [lim for lim in data["limits"] if lim["type"] != "velocity"]
    loop = loop_of(panda, data)
    assert ("limits: no velocity limit configured: using the URDF's (commands never move faster than v_max)"
            in loop.notes)
    (velocity,) = [lim for lim in loop.ctrl.limits if isinstance(lim, VelocityLimit)]
    assert velocity.dt == loop.dt
    np.testing.assert_array_equal(velocity.v_max, panda.v_max[loop.group.v_indices])
    loop.set_rate(250.0)
    (velocity,) = [lim for lim in loop.ctrl.limits if isinstance(lim, VelocityLimit)]
    assert velocity.dt == loop.dt == 1.0 / 250.0


def test_a_goal_has_no_text_before_it_arrives_and_one_traded_against_a_heavy_posture_says_so(panda):
    """GoalVerdict.text: "no goal" before a goal. A pose goal 18 cm off the 'default' posture, with the posture task
    weighing 50 (panda.yaml: 0.05), stalls short of it with no barrier row nor joint limit binding and the Jacobian
    well conditioned: limited by tradeoff, whose text says where it stopped and that the goal is traded against the
    other tasks, with the condition number (below lower_singularity_threshold)."""
    data = panda_yaml()
    data["barriers"] = [b for b in data["barriers"] if b["name"] == "workspace"]
    (posture,) = [t for t in data["tasks"] if t["name"] == "posture"]
    posture["weights"] = 50.0
    loop = loop_of(panda, data)
    sim = SimRobot(loop, panda.named_configuration("default"))
    assert loop.activate(sim.t) == ""
    (before,) = [v for v in loop.goal_feedback(sim.t) if v.task == "ee"]
    assert before.text() == "no goal"
    T = sim.tcp()
    loop.set_pose_goal("ee", pin.SE3(T.rotation, T.translation + np.array([0.0, 0.15, -0.1])))
    for _ in range(60):  # 6 s at most
        sim.tick(50)
        (v,) = [v for v in loop.goal_feedback(sim.t) if v.task == "ee"]
        if v.verdict == LIMITED:
            break
    assert (v.verdict, v.limited_by, v.limited_at) == (LIMITED, TRADEOFF, ()), v
    reason = re.fullmatch(r"no barrier row or joint position limit binds the step: the goal is traded against the "
                          r"other tasks, the regularization or the barriers' soft terms \(condition number "
                          r"([0-9.]+)\)", v.reason)
    assert reason is not None, v.reason
    assert float(reason[1]) < loop.settings.streaming.lower_singularity_threshold
    assert v.text() == (f"limited by tradeoff: stops {v.distance * 1e3:.1f} mm / {v.angle:.3f} rad from the goal; "
                        f"{v.reason}")


def test_a_measurement_exactly_on_a_joints_limits_is_accepted_with_no_tolerance(panda):
    """StateTracker.accept with joint_limit_tolerance 0: a joint measured exactly at its lower or its upper position
    limit (an arm resting on its stop) is inside the limits, accepted as it is; a float beyond either is rejected."""
    g = panda.group("arm")
    q_min, q_max = panda.q_min_v[g.v_indices[0]], panda.q_max_v[g.v_indices[0]]
    q = panda.named_configuration("default")
    for value, accepted in ((q_min, True), (q_max, True), (np.nextafter(q_min, -np.inf), False),
                            (np.nextafter(q_max, np.inf), False)):
        st = StateTracker(panda, g, 0.0)
        st.incoming[:] = q
        st.incoming[g.q_indices[0]] = value
        assert (st.accept(1.0) == "") is accepted, value
        if accepted:
            assert st.measured[g.q_indices[0]] == value


# ----------------------------------------------------------------------------- whole-module run: control_loop.py
def test_the_oink_note_says_why_a_part_of_the_solver_runs_in_python(panda, monkeypatch):
    """ControlLoop's configure note on OInK names the assembly and the QP solver and, in parentheses, why a part runs
    in Python when one does (here the kernel's QP functions are reported missing, as for a build without DAQP's
    sources; without the compiled kernel the note gives the kernel's reason)."""
    import roboplan_ik_ros.core.oink.solver as solver

    monkeypatch.setattr(solver, "load_qp", lambda: (None, "the test's kernel has no QP functions"))
    loop = loop_of(panda, panda_yaml())
    oink = loop.ctrl.oink
    assert oink.assembly_note, "the premise: a part runs in Python"
    assert f"OInK: {oink.assembly} assembly, qp_solver {oink.qp_solver} ({oink.assembly_note})" in loop.notes


def test_a_tracking_loop_has_no_hold_reason(panda):
    """hold_reason says why the loop holds; tracking a goal it holds nothing: "" (not the solver's status)."""
    loop, sim = started(panda)
    T = sim.tcp()
    loop.set_pose_goal("ee", pin.SE3(T.rotation, T.translation + np.array([0.0, 0.05, 0.0])))
    sim.tick(5)
    assert loop.mode == TRACKING and loop.last_outcome.result.status  # the premise: the solver says something
    assert loop.hold_reason == ""


def _hand_fed_loop(panda, log=None, **settings):
    """(loop, measure): panda.yaml without the self-collision barrier, ``settings`` in its node: section, measured at
    'default' at t = 0 and activated there, logging through ``log``; ``measure(t)`` accepts 'default' again at time t
    [s]. Times chosen by the test (binary fractions: ages and rest durations are exact)."""
    data = panda_yaml()
    data["barriers"] = [b for b in data["barriers"] if b["name"] != "self_collision"]
    loop = loop_of(panda, data, log, **settings)
    q = panda.named_configuration("default")

    def measure(t: float) -> None:
        loop.state.incoming[:] = q
        assert loop.state.accept(t) == ""

    measure(0.0)
    assert loop.activate(0.0) == ""
    return loop, measure


@pytest.mark.parametrize("behavior, says", [("stop", "stopped commanding"), ("hold", "holding")])
def test_the_stale_reason_names_the_age_the_timeout_and_what_the_loop_does(panda, behavior, says):
    """The hold reason of stale joint states, logged once as a warning when the loop goes stale (not again on the
    stale ticks after it): how long none came, the state_timeout and what the loop does under its stale_behavior."""
    messages: list[tuple[str, str]] = []
    loop, _ = _hand_fed_loop(panda, lambda level, text: messages.append((level, text)), stale_behavior=behavior,
                             state_timeout=0.25)
    messages.clear()
    loop.tick(1.0)  # 1 s after the last measurement
    assert loop.mode == STALE
    reason = f"no valid joint states for 1.00 s (state_timeout 0.25 s): {says}"
    assert loop.hold_reason == reason
    loop.tick(1.5)
    assert loop.mode == STALE
    assert [text for level, text in messages if level == "warning"] == [reason], messages


def test_the_loop_reseeds_once_the_robot_was_still_for_exactly_reseed_settle_time(panda):
    """Back from stale (stale_behavior stop), the loop waits until the measurements showed a still robot for
    reseed_settle_time (0.125 s), not longer: still for a float less it waits, for exactly that long it re-seeds. The
    re-seed tick publishes the measured position with nothing to take back (previous is command), so a
    command_not_sent on it leaves the new stream's start as it is."""
    loop, measure = _hand_fed_loop(panda, stale_behavior="stop", state_timeout=0.25, reseed_settle_time=0.125)
    loop.tick(1.0)
    assert loop.mode == STALE
    measure(2.0)  # back: the rest clock starts here
    loop.tick(2.0)
    measure(math.nextafter(2.125, 0.0))
    loop.tick(2.125)
    assert loop.mode == STALE and loop.state.rest_duration() < 0.125  # a float short: waiting
    measure(2.125)
    assert loop.state.rest_duration() == 0.125  # the premise: exactly
    res = loop.tick(2.125)
    assert loop.mode == WAITING_FOR_GOAL, loop.hold_reason
    assert res.publish and res.command is loop.guard.last and res.previous is res.command
    start = res.command.copy()
    np.testing.assert_array_equal(start, loop.state.measured)
    loop.command_not_sent(res)
    np.testing.assert_array_equal(loop.guard.last, start)


def test_a_pause_outlives_a_reseed_after_stale_joint_states(panda):
    """A loop paused before its joint states went stale is still paused after the re-seed that follows them back:
    mode PAUSED, its reason that inputs are refused until resumed, and a goal refused."""
    loop, measure = _hand_fed_loop(panda, stale_behavior="stop", state_timeout=0.25, reseed_settle_time=0.125)
    loop.pause()
    loop.tick(1.0)
    assert loop.mode == STALE
    measure(2.0)
    loop.tick(2.0)
    measure(2.25)
    loop.tick(2.25)
    assert loop.counts.reseeds == 2  # the premise: activation's and this one
    assert (loop.mode, loop.hold_reason) == (PAUSED, "paused (~/pause): inputs are refused until resumed")
    with pytest.raises(InvalidInputError, match="paused"):
        loop.set_joint_goal("posture", panda.named_configuration("default")[loop.group.q_indices])


def test_activation_takes_a_state_exactly_state_timeout_old_and_refuses_an_older_one_saying_why(panda):
    """activate: a measurement at most state_timeout (0.5 s) old is fresh enough: exactly that old it activates; a
    float older it refuses, saying no valid joint state came within state_timeout."""
    loop = loop_of(panda, panda_yaml())
    loop.state.incoming[:] = panda.named_configuration("default")
    assert loop.state.accept(0.0) == ""
    timeout = loop.settings.state_timeout
    assert loop.activate(math.nextafter(timeout, math.inf)) == "no valid joint state received within state_timeout"
    assert not loop.active
    assert loop.activate(timeout) == "" and loop.active


def test_pause_logs_and_stays_paused_at_rest_until_resume_which_says_it_waits_for_rest(panda):
    """pause: logs "paused: braking to a stop", says so in its reason, and stays PAUSED once at rest (resuming starts
    only with resume); resume's reason until the tick that finds the arm at rest: it waits to be at rest, then for a
    new input."""
    loop, sim, messages = tracking_with_a_log(panda)
    messages.clear()
    loop.pause()
    assert messages == [("info", "paused: braking to a stop")]
    reason = "paused (~/pause): braking to a stop; inputs are refused until resumed"
    assert (loop.mode, loop.hold_reason) == (PAUSED, reason)
    for _ in range(2000):
        sim.tick()
        if loop.at_rest:
            break
    assert loop.at_rest
    sim.tick(5)
    assert (loop.mode, loop.hold_reason) == (PAUSED, reason)
    loop.resume()
    assert loop.hold_reason == "resuming: waiting to be at rest, then for a new input"


def _without_acceleration_limit() -> dict:
    """panda.yaml without its acceleration limit and its self-collision barrier."""
    data = panda_yaml()
    data["limits"] = [lim for lim in data["limits"] if lim["type"] != "acceleration"]
    data["barriers"] = [b for b in data["barriers"] if b["name"] != "self_collision"]
    return data


def _tracking_without_acceleration_limit(panda):
    """(loop, sim): activated at 'default' with no acceleration limit, 10 ticks toward a goal 10 cm away (moving)."""
    loop = loop_of(panda, _without_acceleration_limit())
    sim = SimRobot(loop, panda.named_configuration("default"))
    assert loop.activate(sim.t) == "" and loop.acceleration_limit is None
    T = sim.tcp()
    loop.set_pose_goal("ee", pin.SE3(T.rotation, T.translation + np.array([0.0, 0.1, 0.0])))
    sim.tick(10)
    assert loop.mode == TRACKING and not loop.at_rest
    return loop, sim


@pytest.mark.parametrize("failure", ["qp", "barrier check"])
def test_failed_steps_without_an_acceleration_limit_hold_the_previous_command_each_counted(panda, monkeypatch,
                                                                                          failure):
    """Without an acceleration limit a hold repeats the previous command: a QP that fails, or a step the barrier
    check refuses, five ticks running, holds the arm at the last command (one hold), each tick counted in
    qp_failures or barrier_refusals, none an error of the step."""
    loop, sim = _tracking_without_acceleration_limit(panda)
    oink = loop.ctrl.oink
    if failure == "qp":
        fail = oink._fail
        monkeypatch.setattr(oink, "solve", lambda *a, **k: fail("QP failed: test"))
    else:
        monkeypatch.setattr(oink, "enforce_barriers", lambda *a, **k: False)
    last = loop.guard.last.copy()
    sim.tick(5)
    assert loop.mode == HOLDING
    counted = loop.counts.qp_failures if failure == "qp" else loop.counts.barrier_refusals
    assert (counted, loop.counts.holds, loop.counts.tick_errors) == (5, 1, 0)
    np.testing.assert_array_equal(loop.guard.last, last)


def test_a_stopping_tick_without_an_acceleration_limit_repeats_the_last_command(panda):
    """stopping_tick (deactivate) without an acceleration limit: the robot stops at once, the command repeats: it
    publishes the last command with nothing to take back."""
    loop, _ = _tracking_without_acceleration_limit(panda)
    last = loop.guard.last.copy()
    res = loop.stopping_tick()
    assert res.publish and res.command is loop.guard.last and res.previous is res.command
    np.testing.assert_array_equal(res.command, last)


def test_without_an_acceleration_limit_the_rate_changes_while_moving_keeping_the_streams_velocities(panda):
    """rate_change_refusal refuses a new rate only under acceleration bounds with the arm moving: without an
    acceleration limit set_rate takes it while the arm moves, and the command stream's last increments become the
    same velocities in increments of the new period (times new dt / old dt)."""
    loop, _ = _tracking_without_acceleration_limit(panda)
    assert loop.rate_change_refusal(250.0) == ""
    u1, u2, old_dt = loop.guard.u1.copy(), loop.guard.u2.copy(), loop.dt
    assert np.abs(u1).max() > 1e-6  # the premise: moving
    loop.set_rate(250.0)
    ratio = (1.0 / 250.0) / old_dt
    np.testing.assert_array_equal(loop.guard.u1, u1 * ratio)
    np.testing.assert_array_equal(loop.guard.u2, u2 * ratio)


def test_an_inactive_loop_takes_a_new_rate_though_its_stream_was_moving(panda):
    """With an acceleration limit a new rate waits for the arm at rest, unless the loop is inactive (no stream to
    step): deactivated while moving, it takes the rate."""
    loop, sim = tracking_with_a_log(panda)[:2]
    assert loop.acceleration_limit is not None and not loop.at_rest  # the premise
    assert loop.rate_change_refusal(250.0).startswith("refused while the arm moves")
    loop.deactivate()
    assert loop.rate_change_refusal(250.0) == ""
    loop.set_rate(250.0)
    assert loop.dt == 1.0 / 250.0


def test_set_max_state_divergence_sets_the_following_window_of_the_settings_and_the_limit(panda):
    """set_max_state_divergence (a runtime parameter): the settings and the following-error limit take the new window
    (commanded feedback); a robot lagging behind its commands (lag 0.5 s) then stays within it of the command, plus
    one step."""
    loop = loop_of(panda, _without_acceleration_limit())
    assert loop.settings.state_feedback == "commanded"
    loop.set_max_state_divergence(0.05)
    assert loop.settings.max_state_divergence == 0.05
    (following,) = [lim for lim in loop.ctrl.limits if isinstance(lim, FollowingErrorLimit)]
    assert following.max_error == 0.05
    sim = SimRobot(loop, panda.named_configuration("default"), lag=0.5)
    assert loop.activate(sim.t) == ""
    target = panda.named_configuration("default")[loop.group.q_indices]
    target[0] += 1.0  # [rad]
    loop.set_joint_goal("posture", target)
    sim.tick(500)
    assert 0.04 < sim.max_lead <= 0.05 + float(loop.guard.v_max.max()) * loop.dt + 1e-9


# ----------------------------------------------------------------------------- seed 9 (docs/mutation.md)
def test_entering_recovery_logs_the_steps_status_once_as_a_warning(panda):
    """Activated above the workspace box, a goal inside it starts the recovery: the tick that enters RECOVERING logs
    its step's status (the barrier row outside, its h) as one warning; the recovering ticks after it, whose status
    changes with h, log none."""
    messages: list[tuple[str, str]] = []
    data = panda_yaml()
    data["barriers"] = [b for b in data["barriers"] if b["name"] != "self_collision"]
    loop = loop_of(panda, data, lambda level, text: messages.append((level, text)))
    sim = activated_above_the_box(panda, loop)
    sim.tick(3)
    assert loop.mode == WAITING_FOR_GOAL  # the premise: outside, no goal
    loop.set_pose_goal("ee", pin.SE3(sim.tcp().rotation, np.array([0.5, 0.0, 0.5])))
    messages.clear()
    sim.tick()
    assert loop.mode == RECOVERING
    entered = loop.last_outcome.result.status
    assert entered.startswith("recovering: barrier 'workspace'"), entered
    sim.tick(5)
    assert loop.mode == RECOVERING and loop.last_outcome.result.status != entered
    assert [text for level, text in messages if level == "warning"] == [entered], messages


@pytest.mark.parametrize("upper", [True, False], ids=["upper", "lower"])
@pytest.mark.parametrize("j_max", [None, 1000.0], ids=["no-jerk-bound", "jerk-bound"])
def test_a_joint_braking_for_its_position_limit_within_a_max_is_reported_with_that_side(upper, j_max):
    """Every joint 5 mm from its upper (lower) limit, moving toward it at 0.5 rad/s: the acceleration limit's box
    brakes it for that limit (bound_cause: position), and binding_bounds reports a step at the bound as a joint
    bound on that side, with the commanded position, the limit and the velocity."""
    s = scene("panda")
    g = s.group("arm")
    sign, side = (1.0, "upper") if upper else (-1.0, "lower")
    limit = (s.q_max_v if upper else s.q_min_v)[g.v_indices]
    q = s.named_configuration("default")
    q[g.q_indices] = limit - sign * 0.005
    lim = cruising(s, np.full(7, sign * 0.5 * DT), q, j_max)
    assert [lim.bound_cause(k, upper) for k in range(7)] == ["position"] * 7  # the premise
    b = lim.last_bounds()
    dq = b.upper if upper else b.lower
    hits = binding_bounds(s, g, [lim], q, dq, DT, 1e-10)
    assert [(h.code, h.joint) for h in hits] == [(JOINT_BOUND, name) for name in g.joint_names]
    for k, h in enumerate(hits):
        assert h.text == (f"{h.joint} brakes for its {side} position limit within a_max (q "
                          f"{q[g.q_indices[k]] + dq[k]:.4f} rad, limit {limit[k]:.4f} rad, v {dq[k] / DT:+.4f} rad/s)")


def test_a_jog_the_hand_holds_back_says_its_target_is_held_at_the_joint_leash(panda):
    """Every joint jogged at 0.3 rad/s while the hand's task (priority 1) holds the TCP: the arm has one redundant
    degree of freedom, so the joints cannot follow the jog. The motion limit says the jog's target is held
    joint_leash from the joints (which it is: the target's farthest joint that far from the measured one)."""
    loop, sim = posture_jog_loop(panda, keep_the_hand=True)
    dq = np.full(7, 0.3)  # [rad/s]
    for k in range(200):
        if k % 5 == 0:
            loop.set_joint_velocities("posture", dq, sim.t)
        sim.tick()
    code, text = loop.motion_limit(sim.t)
    leash = loop.settings.streaming.joint_leash  # [rad]
    assert code == LEASH, (code, text)
    assert text.startswith(f"task 'posture': the joints cannot follow the jog (its target is held {leash:g} rad from "
                           "them); "), text
    lead = np.abs(loop.tasks["posture"].target - sim.q[loop.group.q_indices])
    assert float(lead.max()) == pytest.approx(leash, abs=0.1 * leash)
