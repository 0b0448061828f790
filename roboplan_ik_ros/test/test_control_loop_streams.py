"""Twist streams, command timeout, pause/resume and input switching through ControlLoop, without
ROS, in closed loop with the simulated robot of test_control_loop (the shipped panda.yaml: its
acceleration/jerk limit and max_acceleration goal smoothing)."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from roboplan_ik_ros.core.control.control_loop import (
    COMMAND_TIMEOUT, PAUSED, TRACKING, WAITING_FOR_GOAL, LIMIT_PAUSED,
)
from roboplan_ik_ros.core.control.twist_follower import StreamingConfig
from roboplan_ik_ros.core.errors import InvalidInputError
from test_control_loop import SimRobot, make_loop, panda  # noqa: F401 - panda is a fixture

TASK = "ee"


def within_bounds(loop, commands) -> None:
    """Every second and third difference of the command stream within the acceleration limit's
    per-tick bounds (the guard enforces the same; its cut count must stay 0)."""
    c = np.array(commands)
    acc = loop.acceleration_limit
    assert (np.abs(np.diff(c, n=2, axis=0)) <= acc.alpha[:7] * (1 + 1e-9) + 1e-15).all()
    assert (np.abs(np.diff(c, n=3, axis=0)) <= acc.delta[:7] * (1 + 1e-9) + 1e-15).all()
    assert loop.guard.cuts == 0


def started(panda):
    loop = make_loop(panda, streaming=StreamingConfig(command_in_type="speed_units"))
    sim = SimRobot(loop, panda.named_configuration("default"))
    assert loop.activate(sim.t) == ""
    sim.tick(5)
    return loop, sim


def stream(loop, sim, v, w=(0.0, 0.0, 0.0), ticks=1, every=5):
    """Send the twist every ``every`` ticks (500 Hz loop: 100 Hz input) for ``ticks`` ticks."""
    for k in range(ticks):
        if k % every == 0:
            loop.set_twist(TASK, np.asarray(v, float), np.asarray(w, float), sim.t)
        sim.tick()


def test_a_twist_stream_moves_the_tool_at_the_commanded_velocity_then_times_out(panda):
    loop, sim = started(panda)
    v = np.array([0.05, -0.03, 0.02])  # [m/s] world frame
    R0 = sim.tcp().rotation
    stream(loop, sim, v, ticks=250)  # 0.5 s: the ramp-up is over
    p0, t0 = sim.tcp().translation.copy(), sim.t
    stream(loop, sim, v, ticks=250)
    measured = (sim.tcp().translation - p0) / (sim.t - t0)
    assert np.linalg.norm(measured - v) <= 0.02 * np.linalg.norm(v), measured
    assert np.linalg.norm(pin.log3(R0.T @ sim.tcp().rotation)) < 1e-3  # no rotation asked, none made
    assert loop.motion_limit(sim.t) == ("", "")
    n = len(sim.commands)
    sim.tick(400)  # no more commands: timeout, braked stop
    assert loop.motion_limit(sim.t)[0] == COMMAND_TIMEOUT and "command timeout" in loop.motion_limit(sim.t)[1]
    assert np.abs(np.diff(sim.commands[-3:], axis=0)).max() < 1e-9  # still (converged on the stopped target)
    assert loop.counts.stream_timeouts == 1
    assert loop.counts.motion_limits == {COMMAND_TIMEOUT: 1}  # one episode, counted once
    within_bounds(loop, sim.commands[n - 3:])
    assert sim.max_step_ratio <= 1.0 + 1e-9


def test_a_twist_in_the_tool_frame_is_rotated_into_the_world(panda):
    loop, sim = started(panda)
    R = sim.tcp().rotation
    p0 = sim.tcp().translation.copy()
    for k in range(300):
        if k % 5 == 0:
            loop.set_twist(TASK, np.array([0.0, 0.0, 0.04]), np.zeros(3), sim.t, R_world_command=R)
        sim.tick()
    d = sim.tcp().translation - p0
    assert d @ R[:, 2] > 0.9 * np.linalg.norm(d) > 0  # along the tool's z axis


def test_switching_pose_twist_pose_has_no_jump(panda):
    loop, sim = started(panda)
    T0 = sim.tcp()
    loop.set_pose_goal(TASK, pin.SE3(T0.rotation, T0.translation + np.array([0.0, 0.1, 0.0])))
    sim.tick(100)  # mid-motion
    stream(loop, sim, [0.05, 0.0, 0.0], ticks=100)
    loop.set_pose_goal(TASK, pin.SE3(T0.rotation, T0.translation + np.array([0.05, 0.0, -0.05])))
    sim.tick(1500)
    within_bounds(loop, sim.commands)
    assert sim.max_step_ratio <= 1.0 + 1e-9
    assert np.linalg.norm(sim.tcp().translation - (T0.translation + [0.05, 0.0, -0.05])) < 1e-3
    assert loop.motion_limit(sim.t) == ("", "")  # a pose goal has no timeout


def test_pause_brakes_refuses_inputs_and_resumes_from_the_current_pose(panda):
    loop, sim = started(panda)
    stream(loop, sim, [0.0, 0.08, 0.0], ticks=200)
    loop.pause()
    loop.pause()  # again: still paused
    assert loop.counts.motion_limits[LIMIT_PAUSED] == 1
    assert loop.mode == PAUSED and loop.motion_limit(sim.t)[0] == LIMIT_PAUSED
    with pytest.raises(InvalidInputError, match="paused"):
        loop.set_twist(TASK, np.array([0.0, 0.1, 0.0]), np.zeros(3), sim.t)
    sim.tick(300)
    assert loop.at_rest
    T_paused = sim.tcp()
    loop.resume()
    loop.pause()  # while resuming: paused again
    assert loop.paused and loop.mode == PAUSED
    loop.resume()
    sim.tick(3)
    assert loop.mode == WAITING_FOR_GOAL
    sim.tick(200)  # nothing moves after a resume until a new input
    assert np.linalg.norm(sim.tcp().translation - T_paused.translation) < 1e-9
    stream(loop, sim, [0.0, -0.05, 0.0], ticks=100)
    assert loop.mode == TRACKING
    within_bounds(loop, sim.commands)
    assert sim.max_step_ratio <= 1.0 + 1e-9


def _two_task_loop(panda):
    import yaml

    from conftest import CONFIG_DIR
    from roboplan_ik_ros.core.config import load_config
    from roboplan_ik_ros.core.control.control_loop import ControlLoop, LoopConfig
    from test_control_loop import SimRobot

    data = yaml.safe_load((CONFIG_DIR / "panda.yaml").read_text())
    data["barriers"] = [b for b in data["barriers"] if b["type"] == "position"]
    data["tasks"].append({"name": "elbow", "type": "frame", "frame": "panda_link4", "position_cost": 1.0,
                          "orientation_cost": 0.0, "priority": 2})
    loop = ControlLoop(panda, load_config(data), LoopConfig(streaming=StreamingConfig(command_in_type="speed_units")))
    sim = SimRobot(loop, panda.named_configuration("default"))
    assert loop.activate(sim.t) == ""
    sim.tick(5)
    return loop, sim


def test_two_frame_tasks_stream_at_once_each_with_its_own_timeout(panda):
    """Two twist streams at once (the hand and, below it in priority, the elbow's position): the hand
    follows its twist while the elbow's stream moves the elbow in the hand's nullspace; when the
    elbow's stream stops only the elbow times out and the hand keeps following its own (MoveIt Servo
    serves one end effector)."""
    # the elbow sideways: the direction the Panda's self-motion moves it at the default pose
    v_hand, v_elbow = np.array([0.0, 0.0, 0.04]), np.array([0.0, -0.05, 0.0])

    def run(elbow_stream: bool):
        loop, sim = _two_task_loop(panda)

        def both(ticks, elbow_too):
            for k in range(ticks):
                if k % 5 == 0:
                    loop.set_twist(TASK, v_hand, np.zeros(3), sim.t)
                    if elbow_too:
                        loop.set_twist("elbow", v_elbow, np.zeros(3), sim.t)
                sim.tick()

        both(250, elbow_stream)
        p0, e0, t0 = sim.tcp().translation.copy(), panda.frame_pose(sim.q, "panda_link4").translation.copy(), sim.t
        both(250, elbow_stream)
        hand = (sim.tcp().translation - p0) / (sim.t - t0)
        elbow_side = -(panda.frame_pose(sim.q, "panda_link4").translation[1] - e0[1]) / (sim.t - t0)
        return loop, sim, both, hand, elbow_side

    _, _, _, _, elbow_alone = run(False)
    loop, sim, both, hand, elbow_side = run(True)
    print(f"\nhand {np.round(hand, 4).tolist()} m/s (asked {v_hand.tolist()}); elbow along -y {elbow_side * 1e3:.2f} mm/s "
          f"with its stream, {elbow_alone * 1e3:.2f} mm/s without")
    assert np.linalg.norm(hand - v_hand) <= 0.02 * np.linalg.norm(v_hand), hand
    assert elbow_side > elbow_alone + 2e-3  # the elbow's stream acts (in the hand's nullspace)
    # the elbow's stream stops, the hand's goes on: only the elbow times out
    p1, t1 = sim.tcp().translation.copy(), sim.t
    both(400, False)
    hand = (sim.tcp().translation - p1) / (sim.t - t1)
    assert np.linalg.norm(hand - v_hand) <= 0.02 * np.linalg.norm(v_hand), hand
    assert loop.counts.stream_timeouts == 1
    within_bounds(loop, sim.commands)


def test_barrier_episodes_are_counted_once_per_episode(panda):
    loop, _ = started(panda)
    for binding in (False, True, True, True, False, True, False):
        loop.note_motion_limit("barrier" if binding else "")
    assert loop.counts.motion_limits.get("barrier") == 2


# ----------------------------------------------------------------------------- direct goals of other kinds
def test_a_joint_velocity_reference_is_a_stream_zeroed_after_the_command_timeout(panda):
    """A joint_velocity task's goal (ControlLoop.set_task_target, the node's ~/<task>/target_joint_velocities)
    moves its joint at the reference while it is renewed, then brakes to rest once no reference came for
    command_timeout: no input, no motion. Every command within the acceleration and jerk bounds."""
    import yaml

    from roboplan_ik_ros.core.config import load_config
    from roboplan_ik_ros.core.control.control_loop import ControlLoop, LoopConfig
    from test_control_loop import CONFIG_DIR

    data = yaml.safe_load((CONFIG_DIR / "panda.yaml").read_text())
    data["barriers"] = []  # (a barrier's safe-displacement weight would drag the reference: see safe_displacement_fade)
    data["tasks"][0]["position_cost"] = data["tasks"][0]["orientation_cost"] = 0.0
    data["tasks"].append({"name": "jv", "type": "joint_velocity", "cost": 1.0, "priority": 1})
    loop = ControlLoop(panda, load_config(data), LoopConfig())
    assert dict(loop.direct_goals) == {"jv": "velocities"}
    sim = SimRobot(loop, panda.named_configuration("default"))
    assert loop.activate(sim.t) == ""
    sim.tick(5)
    v = np.zeros(7)
    v[0] = 0.2  # [rad/s] joint 1
    q_start = sim.commands[-1][0]
    for _ in range(100):  # 1 s of references at 50 Hz
        loop.set_task_target("jv", v, sim.t)
        sim.tick(10)
    speed = (sim.commands[-1][0] - sim.commands[-11][0]) / (10 * loop.dt)
    assert speed == pytest.approx(0.2, rel=0.02) and sim.commands[-1][0] - q_start > 0.15
    assert loop.streaming
    sim.tick(int(1.0 / loop.dt))  # no reference for 1 s (command_timeout 0.1 s): zeroed, braked to rest
    assert not loop.streaming and loop.counts.stream_timeouts == 1
    # at rest: (the posture task's pull through the damped nullspace projector of the level above, whose
    # stacked Jacobian has full rank, is of the order of the regularization: 1e-5 rad/s here)
    assert np.abs(np.array(sim.commands[-20:]) - sim.commands[-1]).max() < 20 * loop.dt * 1e-4
    within_bounds(loop, sim.commands)
