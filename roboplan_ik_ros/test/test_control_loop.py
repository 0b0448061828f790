"""ControlLoop, StateTracker and CommandGuard without ROS: the safety rules of the control tick
in closed loop with a simulated robot (optionally lagging behind its commands)."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
import yaml

from models import robot
from roboplan_ik_ros.core.control.command_guard import CommandGuard
from roboplan_ik_ros.core.config import load_config
from roboplan_ik_ros.core.model.scene_config import scene_from_config
from roboplan_ik_ros.core.control.control_loop import (
    HOLDING, RECOVERING, STALE, TRACKING, WAITING_FOR_GOAL, ControlLoop, LoopConfig, TickResult,
)
from roboplan_ik_ros.core.errors import InvalidInputError
from roboplan_ik_ros.core.control.state_tracker import StateTracker

from conftest import CONFIG_DIR

TIP = "panda_hand_tcp"
DT = 0.002


@pytest.fixture(scope="module")
def panda():
    """The Panda as the node builds it from panda.yaml's robot section (joint_limits_file included)."""
    r = robot("panda")
    config = load_config(yaml.safe_load((CONFIG_DIR / "panda.yaml").read_text()))
    return scene_from_config(r.urdf_xml, r.srdf_xml, config.robot, r.package_paths)


def make_loop(panda, *, drop=("self_collision",), **settings) -> ControlLoop:
    data = yaml.safe_load((CONFIG_DIR / "panda.yaml").read_text())
    data["barriers"] = [b for b in data["barriers"] if b["name"] not in drop]
    config = load_config(data)
    return ControlLoop(panda, config, LoopConfig(**settings))


class SimRobot:
    """A position-controlled robot: follows each command with an optional first-order lag."""

    def __init__(self, loop: ControlLoop, q0: np.ndarray, lag: float = 0.0) -> None:
        self.loop, self.q, self.lag, self.t = loop, q0.copy(), lag, 0.0
        self.commands: list[np.ndarray] = []  # published commands (group q)
        self.previous_command = None
        self.max_step_ratio = 0.0  # largest |command step| / (v_max dt) over all joints and ticks
        self.max_lead = 0.0  # [rad] largest |command - the measurement of its tick| over all joints and ticks
        self.measure()

    def measure(self) -> str:
        self.loop.state.incoming[:] = self.q
        return self.loop.state.accept(self.t)

    def tick(self, n: int = 1, measure: bool = True):
        g = self.loop.group
        for _ in range(n):
            self.t += self.loop.dt
            if measure:
                self.measure()
            res = self.loop.tick(self.t)
            if not res.publish:
                continue
            cmd = res.command[g.q_indices].copy()
            if self.commands and not self._reseeded(res):
                step = np.abs(cmd - self.commands[-1]) / (self.loop.guard.v_max * self.loop.dt)
                self.max_step_ratio = max(self.max_step_ratio, float(step.max()))
            self.commands.append(cmd)
            if measure:
                self.max_lead = max(self.max_lead, float(np.abs(cmd - self.q[g.q_indices]).max()))
            a = 1.0 if self.lag <= 0 else 1.0 - np.exp(-self.loop.dt / self.lag)
            self.q[g.q_indices] += a * (cmd - self.q[g.q_indices])
        return self

    def _reseeded(self, res) -> bool:
        return res.command is res.previous  # a re-seed publishes the measurement with previous = itself

    def tcp(self) -> pin.SE3:
        return self.loop.scene.frame_pose(self.q, TIP)


def arm_q(panda, values) -> np.ndarray:
    q = panda.named_configuration("default")
    q[:7] = values
    return q


FOREIGN = [0.5, 0.1, -0.2, -2.0, 0.1, 2.0, 0.3]  # TCP inside the workspace box, far from "default"


# ----------------------------------------------------------------------------- state tracker
def test_state_tracker_rejects_measurements_outside_the_limits(panda):
    st = StateTracker(panda, panda.group("arm"), limit_tolerance=0.01)
    st.incoming[:] = panda.named_configuration("default")
    assert st.accept(1.0) == "" and st.age(1.5) == 0.5
    good = st.measured.copy()
    st.incoming[6] = panda.q_max_v[6] + 7.0
    reason = st.accept(2.0)
    assert "panda_joint7" in reason and "joint_limit_tolerance" in reason
    assert np.array_equal(st.measured, good) and np.array_equal(st.incoming, good) and st.rejected == 1
    assert st.age(2.0) == 1.0  # a rejected message does not refresh the state
    st.incoming[0] = panda.q_max_v[0] + 0.005  # within the tolerance: clipped into the limits
    assert st.accept(3.0) == "" and st.measured[0] == panda.q_max_v[0]


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_state_tracker_rejects_a_measurement_that_is_not_a_finite_number_naming_the_joint(panda, bad):
    """NaN passes every limit comparison: a group joint's or a finger's (outside the group, but its geometry is
    placed from it) NaN or inf is refused as a whole, named, and the last good measurement kept."""
    st = StateTracker(panda, panda.group("arm"), limit_tolerance=0.01)
    st.incoming[:] = panda.named_configuration("default")
    assert st.accept(1.0) == ""
    good = st.measured.copy()
    finger = panda.model.idx_qs[panda.model.getJointId("panda_finger_joint1")]
    assert finger >= 7  # outside the arm group
    for k, name in ((3, "panda_joint4"), (finger, "panda_finger_joint1")):
        st.incoming[k] = bad
        reason = st.accept(2.0)
        assert name in reason and "expected a finite position" in reason, reason
        assert np.array_equal(st.measured, good) and np.array_equal(st.incoming, good)
    assert st.rejected == 2 and st.age(2.0) == 1.0


# ----------------------------------------------------------------------------- command guard
def test_guard_cuts_jumps_and_counts_them(panda):
    g = panda.group("arm")
    guard = CommandGuard(panda, g, panda.v_max[:7], DT)
    q0 = panda.named_configuration("default")
    guard.reseed(q0)
    small = q0.copy()
    small[:7] += 0.5 * panda.v_max[:7] * DT
    assert np.allclose(guard.apply(small), small) and guard.cuts == 0
    jump = small.copy()
    jump[0] += 1.0
    cmd = guard.apply(jump).copy()
    assert guard.cuts == 1 and np.isclose(cmd[0] - small[0], panda.v_max[0] * DT)
    nan = cmd.copy()
    nan[3] = np.nan
    assert np.isfinite(guard.apply(nan)).all() and guard.cuts == 2
    with pytest.raises(InvalidInputError, match="velocity limits"):
        CommandGuard(panda, g, np.full(7, np.inf), DT)


def test_a_command_not_sent_is_taken_back(panda):
    """A failed publish: the next command steps from the last one the robot got, not the lost one."""
    loop = make_loop(panda)
    robot = SimRobot(loop, arm_q(panda, FOREIGN))
    assert loop.activate(robot.t) == ""
    T0 = robot.tcp()
    loop.set_pose_goal("ee", pin.SE3(T0.rotation, T0.translation + np.array([0.0, 0.2, -0.1])))
    robot.tick(20)  # moving
    g = loop.group
    robot.t += DT
    robot.measure()
    lost = loop.tick(robot.t)
    sent_before, lost_command = lost.previous.copy(), lost.command.copy()
    assert lost.publish and np.abs(lost_command - sent_before)[g.q_indices].max() > 1e-4  # it moved
    loop.command_not_sent(lost)
    assert np.array_equal(loop.guard.last, sent_before) and loop.counts.undelivered == 1
    robot.t += DT
    robot.measure()
    nxt = loop.tick(robot.t)
    assert np.array_equal(nxt.previous, sent_before)
    step = np.abs(nxt.command - sent_before)[g.q_indices] / (loop.guard.v_max * loop.dt)
    assert step.max() <= 1.0 + 1e-9 and loop.guard.cuts == 0
    hold = TickResult(True, loop.guard.last, loop.guard.last)  # a hold: nothing to take back
    before = loop.guard.last.copy()
    loop.command_not_sent(hold)
    assert np.array_equal(loop.guard.last, before) and loop.counts.undelivered == 2


# ----------------------------------------------------------------------------- no goal, no motion
def test_no_goal_no_motion_from_a_foreign_pose(panda):
    loop = make_loop(panda)
    robot = SimRobot(loop, arm_q(panda, FOREIGN))
    assert loop.activate(robot.t) == "" and loop.mode == WAITING_FOR_GOAL
    robot.tick(1000)
    drift = np.abs(np.array(robot.commands) - np.array(FOREIGN)).max()
    assert drift == 0.0 and loop.mode == WAITING_FOR_GOAL and loop.guard.cuts == 0
    # the first goal: the posture (SRDF 'default') takes effect too, ramped, the TCP goes to the goal
    T0 = robot.tcp()
    goal = pin.SE3(T0.rotation, T0.translation + np.array([0.0, 0.05, -0.05]))
    loop.set_pose_goal("ee", goal)
    robot.tick(3000)
    assert loop.mode == TRACKING and loop.guard.cuts == 0 and robot.max_step_ratio <= 1.0 + 1e-6
    assert np.linalg.norm(robot.tcp().translation - goal.translation) < 1e-3


def test_posture_ramp_speed_is_bounded(panda):
    loop = make_loop(panda, drop=("self_collision", "workspace"))
    robot = SimRobot(loop, arm_q(panda, FOREIGN))
    loop.activate(robot.t)
    loop.apply_configured_targets()  # the explicit request: posture toward SRDF 'default', no pose goal
    ramp = loop._ramps["posture"]
    previous = ramp.target.copy()
    for _ in range(200):
        robot.tick()
        assert np.abs(ramp.target - previous).max() <= 0.5 * loop.dt + 1e-12  # max_target_speed 0.5 rad/s
        previous = ramp.target.copy()
    assert loop.guard.cuts == 0


# ----------------------------------------------------------------------------- bad measurements
def test_a_glitched_measurement_is_never_followed(panda):
    loop = make_loop(panda, state_feedback="measured")
    robot = SimRobot(loop, panda.named_configuration("default"))
    loop.activate(robot.t)
    T0 = robot.tcp()
    loop.set_pose_goal("ee", pin.SE3(T0.rotation, T0.translation + np.array([0.05, 0.0, 0.0])))
    for k in range(600):
        robot.t += loop.dt
        robot.loop.state.incoming[:] = robot.q
        if k % 25 == 0:
            robot.loop.state.incoming[6] += 7.0  # beyond the limits: rejected like NaN
        loop.state.accept(robot.t)
        robot.tick(measure=False)
    assert loop.state.rejected == 24 and loop.guard.cuts == 0 and robot.max_step_ratio <= 1.0 + 1e-6


# ----------------------------------------------------------------------------- stale state
@pytest.mark.parametrize("behavior", ["stop", "hold"])
def test_stale_state_stops_then_reseeds_at_the_measurement(panda, behavior):
    loop = make_loop(panda, stale_behavior=behavior)
    robot = SimRobot(loop, panda.named_configuration("default"))
    loop.activate(robot.t)
    T0 = robot.tcp()
    loop.set_pose_goal("ee", pin.SE3(T0.rotation, T0.translation + np.array([0.0, 0.1, 0.0])))
    robot.tick(100)
    n = len(robot.commands)
    robot.tick(400, measure=False)  # 0.8 s without measurements (state_timeout 0.5 s)
    assert loop.mode == STALE and loop.holding
    published = np.array(robot.commands[n:])
    if behavior == "stop":  # commanded until stale (0.5 s = 250 ticks), then nothing
        assert len(published) <= 251
    else:  # then the last command, repeated
        assert len(published) == 400 and np.ptp(published[-140:], axis=0).max() == 0.0
    with pytest.raises(InvalidInputError, match="stale"):
        loop.set_pose_goal("ee", T0)
    held = robot.commands[-1].copy()
    robot.q[:7] = FOREIGN  # the driver restarted elsewhere
    n = len(robot.commands)
    settle = int(np.floor(loop.settings.reseed_settle_time / loop.dt))  # periods of reseed_settle_time
    robot.tick(settle - 1)  # measurements are back: re-seed once the robot has been still for reseed_settle_time
    assert loop.mode == STALE and "waiting for the robot to be still" in loop.hold_reason
    if behavior == "stop":
        assert len(robot.commands) == n
    for _ in range(3):  # (the settle time spans `settle` periods from the first measurement, +- rounding)
        robot.tick(1)
        if loop.mode != STALE:
            break
    assert np.array_equal(robot.commands[-1], robot.q[:7]) and loop.mode == WAITING_FOR_GOAL
    # stop: re-seeded where the driver restarted; hold: the held command drove that driver back to the held
    # pose while the node waited for it to be still (the README's warning about hold), re-seeded there
    expected = np.array(FOREIGN) if behavior == "stop" else held
    assert np.abs(robot.commands[-1] - expected).max() == 0.0
    robot.tick(200)
    assert np.abs(np.array(robot.commands[-200:]) - expected).max() == 0.0  # holds: a new goal is needed
    assert loop.counts.reseeds == 2 and loop.counts.holds == 1 and loop.guard.cuts == 0


def test_after_an_outage_the_reseed_waits_for_the_robot_to_be_still(panda):
    """The mechanism of a strict drive's acceleration fault under load (17 439 rad/s^2, issue 19): the
    driver process stalls, so /joint_states stop (the node goes stale) while commands queue up at the
    drive; when it wakes, its first measurements are older than the queued commands it then works
    off. A re-seed at the first measurement would reach the drive after the queued commands: a step
    back. The re-seed waits until the measurements show the robot still, and starts there: at the
    drive's last command, no step at all."""
    loop = make_loop(panda)
    robot = SimRobot(loop, panda.named_configuration("default"))
    assert loop.activate(robot.t) == ""
    T0 = robot.tcp()
    loop.set_pose_goal("ee", pin.SE3(T0.rotation, T0.translation + np.array([0.0, 0.15, -0.1])))
    g = loop.group
    robot.tick(60)  # moving
    # the drive stalls: it neither reports nor executes; the node's commands queue up
    queued, q_stalled = [], robot.q.copy()
    for _ in range(int(1.2 * loop.settings.state_timeout / loop.dt)):
        robot.t += loop.dt
        res = loop.tick(robot.t)
        if res.publish:
            queued.append(res.command[g.q_indices].copy())
    assert loop.mode == STALE and len(queued) > 10
    last_sent = queued[-1]
    # it wakes: reports where it stalled, then works off the queue (the robot reaches the last command)
    robot.measure()
    robot.t += loop.dt
    res = loop.tick(robot.t)
    assert not res.publish and loop.mode == STALE  # not re-seeded at the stalled measurement
    robot.q[g.q_indices] = last_sent
    published = []
    for _ in range(int(np.ceil(loop.settings.reseed_settle_time / loop.dt)) + 2):
        robot.t += loop.dt
        robot.measure()
        res = loop.tick(robot.t)
        if res.publish:
            published.append(res.command[g.q_indices].copy())
    assert published and loop.mode == WAITING_FOR_GOAL
    assert np.array_equal(published[0], last_sent)  # the re-seed is the drive's last command: no step back
    assert not np.array_equal(q_stalled[g.q_indices], last_sent)  # (the stalled measurement was elsewhere)


def test_after_an_outage_no_news_is_not_a_still_robot(panda):
    """Under load the node's executor (normal priority) may take no /joint_states for a while after an
    outage while its ticks (SCHED_FIFO) go on: seen in test_e2e_chaos's outage with two busy cores, the
    re-seed was a measurement 0.15 s old and the lagging robot had moved on by 1.02 mrad, a new stream
    beyond the strict drive's max_start_offset (1 mrad). The robot is still when measurements spanning
    reseed_settle_time show it still, not when reseed_settle_time has passed since the last of them."""
    loop = make_loop(panda)
    robot = SimRobot(loop, panda.named_configuration("default"), lag=0.1)
    assert loop.activate(robot.t) == ""
    T0 = robot.tcp()
    loop.set_pose_goal("ee", pin.SE3(T0.rotation, T0.translation + np.array([0.0, 0.15, -0.1])))
    g = loop.group
    robot.tick(100)  # moving, the robot behind its commands
    while loop.mode != STALE:
        robot.tick(1, measure=False)
    held = robot.commands[-1].copy()
    a = 1.0 - np.exp(-loop.dt / robot.lag)

    def step(measure: bool):  # the robot converges toward the held command; the node sees it or not
        robot.t += loop.dt
        robot.q[g.q_indices] += a * (held - robot.q[g.q_indices])
        if measure:
            robot.measure()
        return loop.tick(robot.t)

    n = len(robot.commands)
    step(measure=True)  # one measurement after the outage, then none for 2 reseed_settle_time
    for _ in range(int(2 * loop.settings.reseed_settle_time / loop.dt)):
        assert not step(measure=False).publish and loop.mode == STALE
    assert np.abs(robot.q[g.q_indices] - loop.measured_position()[g.q_indices]).max() > loop.settings.reseed_tolerance
    for _ in range(2000):  # measured again: re-seeded once they show the robot still, where it is
        res = step(measure=True)
        if res.publish:
            break
    assert loop.mode == WAITING_FOR_GOAL and len(robot.commands) == n
    assert np.array_equal(res.command[g.q_indices], robot.q[g.q_indices])


@pytest.mark.parametrize("behavior", ["stop", "hold"])
def test_after_an_outage_a_lagging_robot_gets_no_step(panda, behavior):
    """A lagging robot (first-order, 0.1 s) that loses its /joint_states mid-motion settles behind the last
    command. stop: nothing is published for at least reseed_settle_time (the drive's stream has ended),
    then a new stream starts at the robot's position; hold: the stream never ended, so it continues from
    the last command (a step to the measurement within a running stream: a strict drive's jerk fault,
    55 518 rad/s^3 in the long chaos run)."""
    loop = make_loop(panda, stale_behavior=behavior)
    robot = SimRobot(loop, panda.named_configuration("default"), lag=0.1)
    assert loop.activate(robot.t) == ""
    T0 = robot.tcp()
    loop.set_pose_goal("ee", pin.SE3(T0.rotation, T0.translation + np.array([0.0, 0.15, -0.1])))
    g = loop.group
    robot.tick(100)  # moving, the robot behind its commands
    t_stale = None
    for _ in range(int(1.2 * loop.settings.state_timeout / loop.dt)):  # no measurements: stale
        robot.tick(1, measure=False)
        if t_stale is None and loop.mode == STALE:
            t_stale = robot.t
    last = robot.commands[-1].copy()
    n = len(robot.commands)
    while loop.mode == STALE:  # measured again: the robot converges toward what the drive holds
        robot.tick(1)
    first = robot.commands[n] if behavior == "stop" else robot.commands[-1]
    if behavior == "stop":
        assert len(robot.commands) == n + 1  # nothing while stale, then the new stream's first command
        assert robot.t - t_stale >= loop.settings.reseed_settle_time  # the old stream has ended by then
        assert np.array_equal(first, robot.q[g.q_indices])  # from rest, where the robot is
        assert 1e-5 < np.abs(first - last).max() <= loop.settings.max_state_divergence  # (it lagged)
    else:
        assert np.array_equal(first, last)  # the running stream goes on: no step
    robot.tick(50)
    assert loop.mode == WAITING_FOR_GOAL and np.abs(np.array(robot.commands[-50:]) - first).max() == 0.0


# ----------------------------------------------------------------------------- lagging robot
@pytest.mark.parametrize("feedback", ["commanded", "measured"])
def test_a_lagging_robot_gets_no_jumps_and_converges(panda, feedback):
    loop = make_loop(panda, drop=("self_collision", "workspace"), state_feedback=feedback)
    robot = SimRobot(loop, panda.named_configuration("default"), lag=0.3)
    loop.activate(robot.t)
    target = panda.named_configuration("default")[:7] + np.array([2.0, 0.3, 0.0, 0.4, 0.0, -0.3, 1.0])
    loop.set_joint_goal("posture", target)
    loop.set_pose_goal("ee", panda.frame_pose(arm_q(panda, target), TIP))
    robot.tick(6000)
    assert loop.guard.cuts == 0 and robot.max_step_ratio <= 1.0 + 1e-6
    travel = np.abs(np.array(robot.commands) - np.array(robot.commands[0])).max()
    assert travel > 1.0  # a large motion: the lag matters
    if feedback == "commanded":  # the command waits for the robot: never more than the leash ahead
        e = loop.settings.max_state_divergence
        assert 0.5 * e < robot.max_lead <= e + 1e-9, (robot.max_lead, e)
    assert np.linalg.norm(robot.tcp().translation - panda.frame_pose(arm_q(panda, target), TIP).translation) < 2e-3


@pytest.mark.parametrize("assembly", ["compiled", "numpy"])
@pytest.mark.parametrize("lag, stall", [(0.1, 0), (0.0, 25)])
def test_measured_feedback_near_the_workspace_box_never_fails_the_qp(panda, lag, stall, assembly, monkeypatch):
    """state_feedback measured with the workspace barrier and the acceleration limit: a robot that trails
    its commands (first-order lag 0.1 s) or whose measurements stall (25 ticks of every 100, as on a
    loaded machine) follows a 5 cm move without a QP failure or a hold; the trailing one then goes to
    a goal beyond the box's top and the command stream stops at the face. (The barrier rows used to
    bound the step from the measurement, the previous command's lead included, while the acceleration
    box keeps that lead: infeasible, 40 and 14 QP failures on the 5 cm move.)"""
    if assembly == "numpy":
        monkeypatch.setattr("roboplan_ik_ros.core.oink.solver.load_kernel", lambda: (None, "numpy assembly (test)"))
    loop = make_loop(panda, state_feedback="measured")
    assert loop.ctrl.oink.assembly == assembly
    robot = SimRobot(loop, panda.named_configuration("default"), lag=lag)
    loop.activate(robot.t)
    T0 = robot.tcp()
    z_max = 0.75  # panda.yaml's workspace box top
    goals = [([0.0, 0.05, 0.0], 2000)]
    if not stall:
        goals.append(([0.0, 0.0, z_max + 0.1 - T0.translation[2]], 4000))
    for shift, ticks in goals:
        goal = pin.SE3(T0.rotation, T0.translation + np.array(shift))
        loop.set_pose_goal("ee", goal)
        for k in range(ticks):
            robot.tick(1, measure=not (stall and k % 100 < stall))
            assert loop.counts.qp_failures == 0 and loop.counts.holds == 0, loop.hold_reason
            z_cmd = panda.frame_pose(arm_q(panda, robot.commands[-1]), TIP).translation[2]
            assert z_cmd <= z_max + 1e-4, z_cmd
    assert loop.guard.cuts == 0 and robot.max_step_ratio <= 1.0 + 1e-6
    if stall:
        assert np.linalg.norm(robot.tcp().translation - goal.translation) < 1e-3
    else:
        assert abs(robot.tcp().translation[2] - z_max) < 1e-3  # at the face (the goal is beyond it)


def test_following_error_limit_keeps_the_command_near_the_robot(panda):
    loop = make_loop(panda, drop=("self_collision", "workspace"), max_state_divergence=0.05)
    robot = SimRobot(loop, panda.named_configuration("default"), lag=0.5)
    loop.activate(robot.t)
    target = panda.named_configuration("default")[:7] + np.array([1.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    loop.set_joint_goal("posture", target)
    loop.set_pose_goal("ee", panda.frame_pose(arm_q(panda, target), TIP))
    worst = 0.0
    for _ in range(2000):
        robot.tick()
        worst = max(worst, float(np.abs(robot.commands[-1] - robot.q[:7]).max()))
    assert worst <= 0.05 + panda.v_max.max() * loop.dt + 1e-9 and loop.guard.cuts == 0


# ----------------------------------------------------------------------------- barriers
def test_starting_outside_the_box_recovers_monotonically(panda):
    loop = make_loop(panda)
    q = panda.named_configuration("default")
    q[3] += 0.75  # stretch the elbow: the TCP rises ~20 mm above the box's top (z 0.75), x stays inside
    q[5] -= 0.375
    p0 = panda.frame_pose(q, TIP).translation
    assert 0.76 < p0[2] < 0.8 and 0.2 < p0[0] < 0.8
    robot = SimRobot(loop, q)
    loop.activate(robot.t)
    robot.tick(50)
    assert loop.mode == WAITING_FOR_GOAL and "recovering" in loop.hold_reason  # says so, but no goal: no motion
    inside = pin.SE3(robot.tcp().rotation, np.array([0.5, 0.0, 0.5]))
    loop.set_pose_goal("ee", inside)
    zs, modes = [], set()
    for _ in range(1500):
        robot.tick()
        modes.add(loop.mode)
        zs.append(panda.frame_pose(robot.q, TIP).translation[2])
    assert RECOVERING in modes and loop.guard.cuts == 0
    above = np.array(zs)[np.array(zs) > 0.75]
    assert np.all(np.diff(above) <= 1e-9)  # while outside: never further away
    assert zs[-1] <= 0.75 + 1e-4


# ----------------------------------------------------------------------------- runtime changes
def _tick_until_at_rest(loop: ControlLoop, robot: SimRobot, limit: int = 5000) -> None:
    for _ in range(limit):
        robot.tick()
        if loop.at_rest:
            return
    raise AssertionError(f"the arm did not come to rest in {limit} ticks")


def test_rate_and_feedback_changes_keep_the_command_continuous(panda):
    """With acceleration bounds a new rate is refused while the arm moves (a velocity step for the drive: the
    same increment per command at another period) and taken at rest; feedback changes mid-motion."""
    loop = make_loop(panda)
    assert loop.acceleration_limit is not None  # panda.yaml's
    robot = SimRobot(loop, panda.named_configuration("default"), lag=0.05)
    loop.activate(robot.t)
    T0 = robot.tcp()
    loop.set_pose_goal("ee", pin.SE3(T0.rotation, T0.translation + np.array([0.0, 0.15, 0.0])))
    robot.tick(100)
    assert not loop.at_rest and loop.rate_change_refusal(250.0)
    with pytest.raises(InvalidInputError, match="control_rate_hz 250: refused while the arm moves"):
        loop.set_rate(250.0)
    assert loop.dt == pytest.approx(1.0 / 500.0)  # unchanged
    _tick_until_at_rest(loop, robot)
    assert loop.rate_change_refusal(250.0) == ""
    loop.set_rate(250.0)
    assert loop.dt == pytest.approx(1.0 / 250.0)
    loop.set_pose_goal("ee", T0)
    robot.tick(100)
    loop.set_state_feedback("measured")
    robot.tick(100)
    loop.set_state_feedback("commanded")
    _tick_until_at_rest(loop, robot)
    loop.set_rate(500.0)
    robot.tick(100)
    assert loop.guard.cuts == 0 and robot.max_step_ratio <= 1.0 + 1e-6


def test_goal_checks(panda):
    loop = make_loop(panda)
    with pytest.raises(InvalidInputError, match="not active"):
        loop.set_pose_goal("ee", pin.SE3.Identity())
    robot = SimRobot(loop, panda.named_configuration("default"))
    loop.activate(robot.t)
    with pytest.raises(InvalidInputError, match="max_goal_distance"):
        loop.set_pose_goal("ee", pin.SE3(np.eye(3), np.array([1e6, 0.0, 0.0])))
    loop.set_pose_goal("ee", pin.SE3(np.eye(3), np.array([1.0, 0.0, 0.5])))  # out of reach but plausible: allowed


def assert_braked_to_rest(loop: ControlLoop, commands) -> None:
    """``commands`` (3 before the stop, then the stop) brake along the path within the acceleration
    and jerk bounds: no increment grows or reverses, and the stream ends at rest (repeated)."""
    c = np.array(commands)
    u = np.diff(c, axis=0)
    accel = loop._accel
    assert (np.abs(np.diff(u, axis=0)) <= accel.alpha[:7] * (1 + 1e-9) + 1e-15).all()
    assert (np.abs(np.diff(u, n=2, axis=0)) <= accel.delta[:7] * (1 + 1e-9) + 1e-15).all()
    after = u[2:]
    assert (np.abs(after[1:]) <= np.abs(after[:-1]) + 1e-15).all()  # slowing down only
    assert (after * u[1] >= -1e-15).all()  # never backwards
    assert np.abs(u[1]).max() > 0.0 and np.abs(after[-3:]).max() == 0.0  # moving before, at rest at the end


def test_qp_failure_holds_the_last_command(panda, monkeypatch):
    loop = make_loop(panda)
    robot = SimRobot(loop, panda.named_configuration("default"))
    loop.activate(robot.t)
    T0 = robot.tcp()
    loop.set_pose_goal("ee", pin.SE3(T0.rotation, T0.translation + np.array([0.0, 0.1, 0.0])))
    robot.tick(50)
    fail = loop.ctrl.oink._fail
    monkeypatch.setattr(loop.ctrl.oink, "solve", lambda *a, **k: fail("QP failed: test"))
    robot.tick(100)
    assert loop.mode == HOLDING and "QP failed" in loop.hold_reason and loop.counts.holds == 1
    assert_braked_to_rest(loop, robot.commands[-103:])
    monkeypatch.undo()
    robot.tick(10)
    assert loop.mode == TRACKING and loop.guard.cuts == 0


def test_an_exception_in_the_step_holds_and_the_loop_goes_on(panda, monkeypatch):
    """A bug in one step (here: the solver raises) never kills the loop: it holds the last command,
    logs the traceback once per kind, counts it, and resumes when the step works again."""
    logged = []
    loop = make_loop(panda)
    loop.log = lambda level, message: logged.append((level, message))
    robot = SimRobot(loop, panda.named_configuration("default"))
    loop.activate(robot.t)
    T0 = robot.tcp()
    loop.set_pose_goal("ee", pin.SE3(T0.rotation, T0.translation + np.array([0.0, 0.1, 0.0])))
    robot.tick(50)

    def broken(*args, **kwargs):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(loop.ctrl.oink, "solve", broken)
    robot.tick(80)
    assert loop.mode == HOLDING and "ZeroDivisionError: a bug" in loop.hold_reason
    assert loop.counts.tick_errors == 80 and loop.counts.holds == 1
    assert_braked_to_rest(loop, robot.commands[-83:])  # a controlled stop, then the same command
    errors = [m for level, m in logged if level == "error"]
    assert errors and "Traceback" in errors[0] and "ZeroDivisionError" in errors[0]
    monkeypatch.undo()
    robot.tick(10)
    assert loop.mode == TRACKING and loop.guard.cuts == 0 and robot.max_step_ratio <= 1.0 + 1e-9


# ----------------------------------------------------------------------------- the node's read-only view
def test_a_stop_from_a_fast_motion_ends_within_the_braking_time_bound(panda):
    """braking_time_bound() (how long a controlled stop may publish braking commands) covers a real stop:
    moving toward a far goal, stopping_tick reaches rest in fewer control periods than the bound allows."""
    loop = make_loop(panda)
    robot = SimRobot(loop, arm_q(panda, FOREIGN))
    assert loop.activate(robot.t) == ""
    T0 = robot.tcp()
    loop.set_pose_goal("ee", pin.SE3(T0.rotation, T0.translation + np.array([0.0, 0.3, -0.2])))
    robot.tick(150)
    speed = np.abs(loop.guard.u1) / loop.dt  # the last increment (group nv) [rad/s]
    assert speed.max() > 0.1, "not moving fast enough to test a stop"
    bound = loop.braking_time_bound()
    accel = loop.acceleration_limit
    assert accel is not None
    expected = 2.0 * float(np.max(loop.guard.v_max / accel.a_max + accel.a_max / accel.j_max)) + 0.1
    assert bound == pytest.approx(expected)
    n = 0
    while not loop.at_rest:
        res = loop.stopping_tick()
        assert res.publish
        n += 1
        assert n * loop.dt <= bound, f"still moving after {n} braking commands ({n * loop.dt:.3f} s > {bound:.3f} s)"
    assert n > 1  # it did have to brake


def test_the_read_only_view_hands_out_copies(panda):
    loop = make_loop(panda)
    robot = SimRobot(loop, arm_q(panda, FOREIGN))
    assert loop.activate(robot.t) == ""
    with pytest.raises(TypeError):
        loop.tasks["extra"] = None  # a read-only mapping
    q = loop.last_command()
    q[:] = 0.0
    assert not np.array_equal(loop.last_command(), q)
    m = loop.measured_position()
    m[:] = 0.0
    assert not np.array_equal(loop.measured_position(), m)
    assert loop.barrier(loop.barriers[0].name) is loop.barriers[0]
    with pytest.raises(KeyError, match="no barrier 'nope'"):
        loop.barrier("nope")


def test_an_acceleration_limit_whose_braking_reserve_exceeds_the_following_leash_is_refused(panda):
    """a_max 4, j_max 20 at 500 Hz: the braking policy reserves 0.157 rad, more than max_state_divergence 0.1:
    a joint could never start moving in its corridor. Refused at configure with the joint, the numbers and the
    least j_max that fits."""
    data = yaml.safe_load((CONFIG_DIR / "panda.yaml").read_text())
    for lim in data["limits"]:
        if lim["type"] == "acceleration":
            lim.update(a_max=4.0, j_max=20.0)
    with pytest.raises(InvalidInputError, match=r"joint 'panda_joint1': a_max 4 and j_max 20 at 500 Hz take 0.2 s "
                                                r"to reach a_max, and braking reserves 0.157 rad or m, more than "
                                                r"node.max_state_divergence 0.1.*Expected j_max >= 25"):
        ControlLoop(panda, load_config(data), LoopConfig())
    ControlLoop(panda, load_config(data), LoopConfig(max_state_divergence=0.2))  # a wider leash fits
