"""Goal handling of the control loop (loop_goals.py, loop_view.py) that mutation testing found unchecked
(docs/mutation.md, core/control).

- Leashes: a joint task's shaped target stays within its ``target_leash`` of the joint, a look_at's direction
  and a com's point within theirs of what the task measures, when a task above blocks them (docs/configuration.md,
  "Goal shaping"); a pose goal's target within leash_distance of the TCP when a barrier blocks the arm.
- Relative poses: each relative_frame task's goal is followed on its own, also when one listed before it is at rest.
- Switching: a twist takes over a moving (jerk_limited) pose goal's target and velocity (README, "Switching"); a
  twist stream that timed out leaves the pose goal where its target stopped; a twist takes over a moving
  max_acceleration pose target too; a joint goal takes over a moving jog at its speed.
- Velocity references: one that times out reports its command's age (motion_limit: "the command's age"), until a
  new reference arrives.
- Motion limits: a jog away from its joint limits is not reported as a joint bound (motion_limit's docstring).
- Configured targets: a group_state that names some of the group's joints leaves the others at the last command.
- Twists on arrival: one exactly command_timeout old is taken, an older one refused with its age (seed 5).
- Seed 7: a frame task has no goal (None) before activation, its target after; a velocity reference that timed out
  says that it is zero now.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pinocchio as pin
import pytest

from models import robot
from roboplan_ik_ros.core.control.binding_bounds import JOINT_BOUND
from roboplan_ik_ros.core.control.control_loop import TRACKING, WAITING_FOR_GOAL, ControlLoop
from roboplan_ik_ros.core.control.loop_modes import COMMAND_TIMEOUT, RAMP_ACCELERATION_SHARE
from roboplan_ik_ros.core.errors import InvalidInputError
from roboplan_ik_ros.core.oink.tasks.com_task import ComTaskConfig
from roboplan_ik_ros.core.oink.tasks.joint_task import JointTaskConfig
from roboplan_ik_ros.core.oink.tasks.look_at_task import LookAtTaskConfig
from test_control_loop import TIP, SimRobot, panda  # noqa: F401 - panda is a fixture
from test_mutation_gaps_control_loop import loop_of, panda_yaml, posture_jog_loop, started

J4 = 3  # panda_joint4 in the group


def loop_with(panda, tasks: list[dict], **settings):
    """panda.yaml (its limits and node: keys) with these tasks and no barriers, activated at "default"."""
    data = panda_yaml()
    data["barriers"], data["tasks"] = [], tasks
    loop = loop_of(panda, data, **settings)
    sim = SimRobot(loop, panda.named_configuration("default"))
    assert loop.activate(sim.t) == ""
    return loop, sim


def ee_task(data: dict) -> dict:
    """panda.yaml's frame task "ee" (priority 1): with no goal it holds the hand where it is."""
    ee = next(t for t in data["tasks"] if t["name"] == "ee")
    assert ee["priority"] == 1
    return ee


def angle_between(a: np.ndarray, b: np.ndarray) -> float:
    return math.atan2(float(np.linalg.norm(np.cross(a, b))), float(a @ b))


# ----------------------------------------------------------------------------- leashes
def test_a_joint_task_target_blocked_by_a_task_above_stays_within_target_leash_of_the_joint(panda):
    """docs/configuration.md (target_leash; Goal shaping): a joint task's shaped target stays within target_leash
    (joint default 0.1 rad) of the joint, so a goal the arm cannot reach (here: the hand held by the frame task
    above) does not wind it up. Checked against the configuration the tick started from (the leash's centre)."""
    leash = JointTaskConfig.__dataclass_fields__["target_leash"].default
    assert leash == 0.1
    loop, sim = loop_with(panda, [ee_task(panda_yaml()),
                                  dict(name="j4", type="joint", joints=["panda_joint4"], priority=2)])
    g = loop.group.q_indices
    goal = sim.q[g].copy()
    goal[J4] += 0.6  # [rad] inside the limits; the hand held still leaves panda_joint4 almost no room
    loop.set_task_target("j4", goal)
    gaps = []
    for _ in range(400):
        q_start = sim.q[g].copy()
        sim.tick()
        gaps.append(abs(float(loop.tasks["j4"].target[J4] - q_start[J4])))
    assert max(gaps) <= leash + 1e-9, max(gaps)
    assert max(gaps) >= 0.5 * leash  # the goal was out of reach: the target did run to its leash
    assert abs(float(loop.tasks["j4"].target[J4] - goal[J4])) > 0.3  # ... and not to the goal


def _look_at_blocked(panda):
    """A look_at on the hand's z axis under the frame task that holds the hand: a goal 90 deg off the axis
    (in the arm's vertical plane, 1 m from the hand). Per tick: the target's angle from the axis, seen from
    the hand's origin at the tick's start."""
    loop, sim = loop_with(panda, [ee_task(panda_yaml()),
                                  dict(name="look", type="look_at", frame=TIP, axis="z", priority=2)])
    T = sim.tcp()
    z = T.rotation[:, 2]
    side = np.cross(z, [0.0, 1.0, 0.0])
    side /= np.linalg.norm(side)
    loop.set_task_target("look", T.translation + side)
    angles = []
    for _ in range(400):
        T = sim.tcp()
        sim.tick()
        angles.append(angle_between(loop.tasks["look"].target - T.translation, T.rotation[:, 2]))
    return max(angles), LookAtTaskConfig.__dataclass_fields__["target_leash"].default, 2e-3


def _com_blocked(panda):
    """A com task under the frame task that holds the hand: a goal 0.4 m off along x. Per tick: the target's
    distance from the centre of mass at the tick's start."""
    loop, sim = loop_with(panda, [ee_task(panda_yaml()),
                                  dict(name="c", type="com", max_target_speed=0.5, max_target_acceleration=5.0,
                                       max_target_jerk=100.0, priority=2)])
    com = loop.tasks["c"].com
    loop.set_task_target("c", com.at(sim.q) + np.array([0.4, 0.0, 0.0]))
    gaps = []
    for _ in range(400):
        c = com.at(sim.q)
        sim.tick()
        gaps.append(float(np.linalg.norm(loop.tasks["c"].target - c)))
    return max(gaps), ComTaskConfig.__dataclass_fields__["target_leash"].default, 1e-9


@pytest.mark.parametrize("run", [_look_at_blocked, _com_blocked], ids=["look_at", "com"])
def test_a_point_goal_blocked_by_a_task_above_stays_within_target_leash_of_what_the_task_measures(panda, run):
    """docs/configuration.md (target_leash: look_at 0.2 rad, com 0.05 m): the shaped target stays that close to
    the look_at axis's direction / the centre of mass, also when the hand is held by the task above (the goal
    is out of reach: without the leash the target would run to it, 90 deg / 0.4 m away). Tolerance for the
    look_at: the leash is measured from the eye where the goal arrived (the held hand moves by a hair)."""
    largest, leash, tolerance = run(panda)
    assert leash in (0.2, 0.05)
    assert largest <= leash + tolerance, (largest, leash)
    assert largest >= 0.5 * leash  # it did run to its leash


def test_a_pose_goal_beyond_a_barrier_keeps_its_target_within_leash_distance_of_the_tcp(panda):
    """node.goal_smoothing.leash_distance (panda.yaml: 0.05 m): a pose goal the arm cannot reach (0.2 m above the
    workspace box's top face) does not wind the frame task's target up: after every tick it is within leash_distance
    of the TCP at the tick's start (the leash's anchor; commanded feedback, a robot without lag: the last command).
    It does run to the leash (the goal is out of reach) and stays far from the goal."""
    loop, sim = started(panda)
    leash = loop.settings.goal_smoothing.leash_distance
    z_max = next(b for b in panda_yaml()["barriers"] if b["name"] == "workspace")["p_max"][2]  # [m]
    T0 = sim.tcp()
    goal = pin.SE3(T0.rotation, np.array([T0.translation[0], T0.translation[1], z_max + 0.2]))
    loop.set_pose_goal("ee", goal)
    gaps = []
    for _ in range(750):
        p_start = sim.tcp().translation.copy()
        sim.tick()
        gaps.append(float(np.linalg.norm(loop.tasks["ee"].target.translation - p_start)))
    assert max(gaps) <= leash + 1e-9, max(gaps)
    assert max(gaps) >= 0.5 * leash, max(gaps)  # out of reach: the target did run to its leash
    assert float(np.linalg.norm(loop.tasks["ee"].target.translation - goal.translation)) > 0.1  # ... not to the goal


# ----------------------------------------------------------------------------- relative poses
def test_a_relative_frame_goal_is_followed_while_a_relative_frame_task_listed_before_it_is_at_rest(panda):
    """Each relative_frame task's pose goal is smoothed (node.goal_smoothing) and reaches its task on its own: a 2 cm
    step of the hand in panda_link1 arrives (target at the goal, the hand's relative pose within 1 mm), while a
    relative_frame task configured before it (panda_link4 in panda_link1, lowest priority) has no goal."""
    loop, sim = loop_with(panda, [
        dict(name="elbow", type="relative_frame", frame="panda_link4", reference="panda_link1", priority=3,
             position_cost=0.01, orientation_cost=0.0),
        dict(name="rel", type="relative_frame", frame=TIP, reference="panda_link1", priority=1)])
    assert list(loop.direct_goals) == ["elbow", "rel"]  # the configured order: "elbow" first
    task = loop.tasks["rel"]
    start = task.target.copy()
    goal = pin.SE3(start.rotation, start.translation + np.array([0.0, 0.0, -0.02]))
    loop.set_task_target("rel", goal)
    sim.tick(600)
    assert np.allclose(task.target.translation, goal.translation, atol=1e-9), task.target.translation - goal.translation
    data = loop.scene.model.createData()
    pin.framesForwardKinematics(loop.scene.model, data, sim.q)
    assert np.linalg.norm(task.relative_pose(data).translation - goal.translation) <= 1e-3


# ----------------------------------------------------------------------------- switching
@pytest.mark.parametrize("smoothing", ["jerk_limited", "max_acceleration"])
def test_a_twist_takes_over_a_moving_pose_goal_target_and_its_velocity(panda, smoothing):
    """README (Switching): a twist takes over a moving pose goal's target and velocity, without a jump, under
    goal_smoothing.type jerk_limited (shipped) and max_acceleration (the other type that brakes the target; seed 3,
    docs/mutation.md). A zero twist sent mid-way through a 20 cm pose step: the stream's target goes on at the pose
    target's speed and brakes at most streaming.max_linear_acceleration, so its first step differs from the step
    before by at most 2 a dt^2 (not starting from rest)."""
    loop, sim = started(panda, goal_smoothing={"type": smoothing})
    assert loop.settings.goal_smoothing.type == smoothing
    a = loop.settings.streaming.max_linear_acceleration
    T = sim.tcp()
    loop.set_pose_goal("ee", pin.SE3(T.rotation, T.translation + np.array([0.0, 0.2, 0.0])))
    sim.tick(200)
    before = loop.tasks["ee"].target.translation.copy()
    sim.tick()
    after = loop.tasks["ee"].target.translation.copy()
    step = after - before
    assert np.linalg.norm(step) / loop.dt > 0.1  # [m/s] the pose target moves
    loop.set_twist("ee", np.zeros(3), np.zeros(3), sim.t)
    sim.tick()
    step_twist = loop.tasks["ee"].target.translation - after
    assert np.linalg.norm(step_twist - step) <= 2.0 * a * loop.dt**2 + 1e-9, (step_twist, step)


def test_a_twist_stream_that_times_out_leaves_the_pose_goal_where_its_target_stopped(panda):
    """A twist stream with no newer command brakes to rest after command_timeout; then the frame task's pose follower
    restarts where the stream's target stopped: goal("ee") is the task's target there (not the pose the stream
    started from), the stream's timeout is counted once, and no tick raised."""
    loop, sim = started(panda)
    T0 = sim.tcp()
    loop.set_twist("ee", np.array([0.0, 0.2, 0.0]), np.zeros(3), sim.t)  # unitless: 0.2 of max_linear_speed
    ticks = int(4 * loop.settings.streaming.command_timeout / loop.dt)  # the timeout, the braking and some more
    sim.tick(ticks)
    assert not loop.streaming and loop.counts.stream_timeouts == 1
    assert loop.counts.tick_errors == 0, loop.hold_reason
    target, goal = loop.tasks["ee"].target, loop.goal("ee")
    assert float(np.linalg.norm(target.translation - T0.translation)) > 1e-3  # the premise: the stream moved it
    np.testing.assert_array_equal(goal.translation, target.translation)
    np.testing.assert_array_equal(goal.rotation, target.rotation)


# ----------------------------------------------------------------------------- velocity references
def test_a_timed_out_velocity_reference_reports_the_age_of_its_last_command(panda):
    """docs/configuration.md (joint_velocity: a stream, 0 after command_timeout) and motion_limit (a timed-out
    stream, the command's age): a reference stamped at t0 = 0.2 s expires at the first tick later than
    t0 + command_timeout (0.1 s); motion_limit is COMMAND_TIMEOUT and says the latest command is now - t0 old:
    more than command_timeout, by less than one period, and that the reference is zero now. The warning
    logged says the same."""
    messages: list[tuple[str, str]] = []
    data = panda_yaml()
    data["barriers"] = []
    data["tasks"] = [dict(name="jv", type="joint_velocity", priority=1)]
    loop = loop_of(panda, data, log=lambda level, text: messages.append((level, text)))
    sim = SimRobot(loop, panda.named_configuration("default"))
    assert loop.activate(sim.t) == ""
    sim.tick(100)  # t = 0.2 s
    t0 = sim.t
    assert t0 > 0.19
    v = np.zeros(loop.group.nv)
    v[0] = 0.05  # [rad/s]
    loop.set_task_target("jv", v, now=t0)
    timeout = loop.settings.streaming.command_timeout
    assert timeout == 0.1
    while loop.counts.stream_timeouts == 0:
        sim.tick()
        assert sim.t < t0 + 2.0 * timeout
    code, text = loop.motion_limit(sim.t)
    assert code == COMMAND_TIMEOUT and "'jv'" in text, text
    age = float(re.search(r"the latest command is ([0-9.]+) s old", text).group(1))
    assert timeout < age + 5e-4 and age <= timeout + loop.dt + 5e-4, (age, sim.t - t0)
    assert text == (f"task 'jv': command timeout: the latest command is {age:.3f} s old (command_timeout {timeout:g} "
                    "s): its velocity reference is zero")
    assert ("warning", text) in messages


# ----------------------------------------------------------------------------- motion limits
def test_a_jog_away_from_its_joint_limits_is_not_reported_as_a_joint_bound(panda):
    """motion_limit: JOINT_BOUND names a jogged joint at its limit; a jog of panda_joint1 at 0.05 rad/s from
    "default" (0 rad, limits +-2.9 rad) reaches none, is followed (no leash), and gives no motion limit."""
    loop, sim = started(panda)
    dq = np.zeros(loop.group.nv)
    dq[0] = 0.1  # unitless: 0.1 of max_joint_speed (0.5 rad/s)
    for _ in range(20):
        loop.set_joint_velocities("posture", dq, sim.t)
        sim.tick()
        assert loop.motion_limit(sim.t) == ("", ""), loop.motion_limit(sim.t)
    assert sim.q[0] > 1e-3  # the jog moves the joint
    assert loop.motion_limit(sim.t)[0] != JOINT_BOUND


# ----------------------------------------------------------------------------- configured targets
def test_a_configured_target_naming_some_of_the_groups_joints_keeps_the_others_where_they_are():
    """A configuration task's target named by an SRDF group_state that sets only panda_joint7 (0.3 rad): on
    apply_configured_targets the goal is the current configuration (the last command: here "default") with
    panda_joint7 at 0.3, not the model's neutral configuration for the joints the state does not name."""
    r = robot("panda")
    srdf = r.srdf_xml.replace("</robot>", '<group_state name="wrist_turned" group="arm">'
                                          '<joint name="panda_joint7" value="0.3"/></group_state></robot>')
    data = panda_yaml()
    data["barriers"] = []
    next(t for t in data["tasks"] if t["name"] == "posture")["target"] = "wrist_turned"
    loop = ControlLoop.from_config(data, r.urdf_xml, srdf, r.package_paths)
    q0 = loop.scene.named_configuration("default")
    loop.state.incoming[:] = q0
    assert loop.state.accept(0.0) == "" and loop.activate(0.0) == ""
    loop.apply_configured_targets()
    g = loop.group.q_indices
    expected = q0[g].copy()
    expected[list(loop.group.joint_names).index("panda_joint7")] = 0.3
    np.testing.assert_array_equal(loop.goal("posture"), expected)


# ----------------------------------------------------------------------------- seed 3 (docs/mutation.md)
def test_a_joint_goal_takes_over_a_moving_jog_at_its_speed(panda):
    """A joint goal sent while a jog moves the target (posture task, panda_joint1 at 0.25 rad/s) continues from the
    jog's target and velocity: the shaped target's first step differs from the jog's last by at most the shaper's
    acceleration bound (RAMP_ACCELERATION_SHARE a_max) dt^2, instead of starting again from rest."""
    loop, sim = posture_jog_loop(panda)
    dq = np.zeros(loop.group.nv)
    dq[0] = 0.25  # [rad/s]
    for _ in range(50):  # the jog's ramp reaches its speed in ~0.03 s
        loop.set_joint_velocities("posture", dq, sim.t)
        sim.tick()
    before = loop.tasks["posture"].target.copy()
    loop.set_joint_velocities("posture", dq, sim.t)
    sim.tick()
    after = loop.tasks["posture"].target.copy()
    step = after - before
    assert step[0] == pytest.approx(dq[0] * loop.dt, rel=1e-6)  # the premise: the jog cruises
    goal = after.copy()
    goal[0] += 0.5  # [rad] ahead, inside the limits
    loop.set_joint_goal("posture", goal)
    sim.tick()
    step_goal = loop.tasks["posture"].target - after
    a_ramp = RAMP_ACCELERATION_SHARE * loop.acceleration_limit.a_max[0]
    assert abs(step_goal[0] - step[0]) <= a_ramp * loop.dt**2 + 1e-12, (step_goal[0], step[0])


def test_a_new_velocity_reference_after_a_timeout_ends_the_timeout_report(panda):
    """motion_limit keeps saying why a stream stopped until its task's next input: a velocity reference that timed
    out is reported (COMMAND_TIMEOUT) until a new reference arrives; from then on nothing is reported."""
    data = panda_yaml()
    data["barriers"] = []
    data["tasks"] = [dict(name="jv", type="joint_velocity", priority=1)]
    loop = loop_of(panda, data)
    sim = SimRobot(loop, panda.named_configuration("default"))
    assert loop.activate(sim.t) == ""
    v = np.zeros(loop.group.nv)
    v[0] = 0.05  # [rad/s]
    loop.set_task_target("jv", v, now=sim.t)
    while loop.counts.stream_timeouts == 0:
        sim.tick()
        assert sim.t < 1.0
    assert loop.motion_limit(sim.t)[0] == COMMAND_TIMEOUT
    sim.tick(3)
    assert loop.motion_limit(sim.t)[0] == COMMAND_TIMEOUT  # kept while no new input
    loop.set_task_target("jv", v, now=sim.t)
    assert loop.motion_limit(sim.t) == ("", "")
    sim.tick()
    assert loop.motion_limit(sim.t) == ("", "")


# ----------------------------------------------------------------------------- seed 5 (docs/mutation.md)
def test_a_twist_exactly_command_timeout_old_on_arrival_is_taken_only_an_older_one_is_refused(panda):
    """set_twist refuses a twist *more* than command_timeout old on arrival (its text: the age, "more than
    command_timeout"); one exactly that old is taken (the loop tracks it). command_timeout 2^-3 s: exact in binary."""
    loop, sim = started(panda, streaming=dict(command_timeout=0.125))
    timeout = loop.settings.streaming.command_timeout
    assert timeout == 0.125  # the premise
    older = math.nextafter(timeout, math.inf)
    with pytest.raises(InvalidInputError, match=re.escape(f"the twist is {older:.3f} s old on arrival (header.stamp), "
                                                          f"more than command_timeout {timeout:g} s: ignored")):
        loop.set_twist("ee", np.array([0.01, 0.0, 0.0]), np.zeros(3), sim.t, age=older)
    assert loop.mode == WAITING_FOR_GOAL  # refused: still no goal
    loop.set_twist("ee", np.array([0.01, 0.0, 0.0]), np.zeros(3), sim.t, age=timeout)
    assert loop.mode == TRACKING  # taken: the first goal


# ----------------------------------------------------------------------------- seed 7 (docs/mutation.md)
def test_a_frame_task_has_no_goal_before_activation_and_its_target_after(panda):
    """goal(task) of a frame task: None until the first activation (the node's goal markers skip a task whose goal
    is None, and copy every other), then the pose activation holds: the task's target."""
    loop = loop_of(panda, panda_yaml())
    assert loop.goal("ee") is None
    sim = SimRobot(loop, panda.named_configuration("default"))
    assert loop.activate(sim.t) == ""
    goal, target = loop.goal("ee"), loop.tasks["ee"].target
    np.testing.assert_array_equal(goal.homogeneous, target.homogeneous)
