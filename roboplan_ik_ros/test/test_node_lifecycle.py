"""Lifecycle of ik_controller over real DDS, driven from another node through lifecycle_msgs."""

import os
import threading

import numpy as np
import pytest
from lifecycle_msgs.msg import Transition
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.parameter import Parameter

from conftest import LifecycleClient, Spinner, fifo_permitted, unique_name, wait_until, write_config
from roboplan_ik_ros.node.ik_controller import IKControllerNode

T = Transition


@pytest.fixture
def make_node(ros, mock_robot):
    """Factory: an ik_controller (unique name) spun in its own thread, with a client; torn down after."""
    made = []

    def make(config_file: str):
        name = unique_name("ik")
        node = IKControllerNode(name, parameter_overrides=[Parameter("config_file", value=config_file)])
        spinner = Spinner(node)
        client = LifecycleClient(name)
        made.append((node, spinner, client))
        return node, client

    yield make
    for node, spinner, client in made:
        client.close()
        spinner.stop()
        node.destroy_node()


def test_full_lifecycle(make_node, mock_robot, tmp_path):
    node, client = make_node(write_config(tmp_path))
    assert client.state() == "unconfigured"
    assert client.transition(T.TRANSITION_CONFIGURE) and client.state() == "inactive"
    assert not client.commands  # nothing is commanded while inactive
    assert client.transition(T.TRANSITION_ACTIVATE) and client.state() == "active"
    wait_until(lambda: len(client.commands) > 20, what="commands while active")
    # holding still at activation: the TCP stays where it was (the posture task may move the
    # arm in the nullspace toward its SRDF target)
    scene = mock_robot.scene
    arm = [f"panda_joint{i}" for i in range(1, 8)]

    def tcp(values):
        return scene.frame_pose(scene.q_from_joint_positions(arm, values, mock_robot.q.copy()), "panda_hand_tcp")

    start = tcp(client.commands[0][1])
    for _, values in client.commands[:20]:
        assert np.allclose(tcp(values).homogeneous, start.homogeneous, atol=1e-6)
    assert client.transition(T.TRANSITION_DEACTIVATE) and client.state() == "inactive"
    n = len(client.commands)
    last = client.commands[-1][1]
    assert np.allclose(tcp(last).homogeneous, start.homogeneous, atol=1e-5)  # the hold command
    assert client.transition(T.TRANSITION_CLEANUP) and client.state() == "unconfigured"
    assert len(client.commands) == n
    # configure again after cleanup (parameters, publishers and services were released)
    assert client.transition(T.TRANSITION_CONFIGURE) and client.state() == "inactive"
    assert client.transition(T.TRANSITION_ACTIVATE) and client.state() == "active"
    assert client.transition(T.TRANSITION_ACTIVE_SHUTDOWN) and client.state() == "finalized"


@pytest.mark.parametrize("edit, words", [
    (lambda d: d["tasks"][0].update(position_cost="high"), ["tasks[0].position_cost", "'high'"]),
    (lambda d: d["tasks"][0].update(frame="panda_hand_tip"), ["unknown frame 'panda_hand_tip'", "panda_hand_tcp"]),
    (lambda d: d.update(solverr={}), ["config.solverr", "unknown key", "valid keys"]),
    (lambda d: d["node"].update(outputs=[{"type": "effort"}]), ["node.outputs[0].type", "forward_command"]),
    (lambda d: d["node"].update(outputs=[{"joints": ["elbow"]}]), ["node.outputs[0].joints", "unknown joint 'elbow'"]),
])
def test_bad_yaml_fails_configure_with_reason(make_node, tmp_path, edit, words):
    node, client = make_node(write_config(tmp_path, edit=edit))
    assert not client.transition(T.TRANSITION_CONFIGURE)
    assert client.state() == "unconfigured"
    for w in words:
        assert w in node.last_error, node.last_error


def test_missing_config_file(make_node):
    node, client = make_node("/nonexistent/panda.yaml")
    assert not client.transition(T.TRANSITION_CONFIGURE)
    assert "cannot read '/nonexistent/panda.yaml'" in node.last_error


def test_activate_fails_without_joint_states(make_node, mock_robot, tmp_path):
    node, client = make_node(write_config(tmp_path, node={"activation_timeout": 0.5}))
    mock_robot.set_parameters([Parameter("paused", value=True)])
    try:
        assert client.transition(T.TRANSITION_CONFIGURE)
        assert not client.transition(T.TRANSITION_ACTIVATE)
        assert client.state() == "inactive"
        assert "no valid /joint_states within 0.5 s" in node.last_error
    finally:
        mock_robot.set_parameters([Parameter("paused", value=False)])
    assert client.transition(T.TRANSITION_ACTIVATE) and client.state() == "active"


def test_refused_parameter_override_fails_configure(ros, mock_robot, tmp_path):
    name = unique_name("ik")
    node = IKControllerNode(name, parameter_overrides=[
        Parameter("config_file", value=write_config(tmp_path)), Parameter("tasks.ee.task_gain", value=3.0)])
    try:
        assert node.trigger_configure() == TransitionCallbackReturn.FAILURE
        # the validator's reason, the YAML's (core/ranges.py), not rclpy's descriptor range
        assert "tasks.ee.task_gain: expected a finite number in (0, 1], got 3.0" in node.last_error, node.last_error
    finally:
        node.destroy_node()


@pytest.mark.parametrize("trigger", ["timer", "joint_states"])
def test_either_trigger_raises_the_executor_thread_below_the_loop_while_active(make_node, mock_robot, tmp_path,
                                                                                trigger):
    """The executor's thread holds the GIL the ticks need (it receives /joint_states, goals, parameters), so while
    active it runs at node.other_threads_priority (null: one below loop_priority 50) where the machine permits it,
    with either trigger, and gets its own scheduling back on deactivate."""
    keys = {"trigger": trigger} if trigger == "timer" else {"trigger": trigger, "state_feedback": "measured"}
    node, client = make_node(write_config(tmp_path, node=keys))
    assert client.transition(T.TRANSITION_CONFIGURE) and client.transition(T.TRANSITION_ACTIVATE)
    wait_until(lambda: node._stats.count > 50, what="ticks")
    tid = node._executor_priority.applied_to if node._executor_priority is not None else None
    assert (tid is not None) == fifo_permitted(49), node.other_threads_scheduling()
    if tid is not None:
        assert tid != node._loop_thread.native_id  # the ticks run in a thread of their own
        assert os.sched_getscheduler(tid) == os.SCHED_FIFO and os.sched_getparam(tid).sched_priority == 49
        assert node.other_threads_scheduling().startswith("SCHED_FIFO 49: executor")
    assert client.transition(T.TRANSITION_DEACTIVATE)
    assert node._executor_priority is None
    if tid is not None:  # given back: that thread also runs this test's other callbacks
        assert os.sched_getscheduler(tid) == os.SCHED_OTHER


@pytest.mark.parametrize("refused", [False, True])
def test_trigger_on_joint_states(make_node, mock_robot, tmp_path, refused, monkeypatch):
    """trigger: joint_states: each /joint_states message wakes the control_loop thread, which runs the tick at the
    shipped loop_priority 50 where the machine permits it (asked of the kernel first); refused (forced here, or
    not permitted) the node says so and the ticks run at normal priority. Deactivate ends that thread."""
    permitted = fifo_permitted(50) and not refused
    if refused:
        from roboplan_ik_ros.node import loop_thread

        def refuse(pid, policy, param):
            raise PermissionError(1, "Operation not permitted")

        monkeypatch.setattr(loop_thread.os, "sched_setscheduler", refuse)
    node, client = make_node(write_config(tmp_path, node={"trigger": "joint_states", "state_feedback": "measured"}))
    assert client.transition(T.TRANSITION_CONFIGURE) and client.transition(T.TRANSITION_ACTIVATE)
    wait_until(lambda: node._stats.count > 250, what="ticks driven by /joint_states")
    thread = node._loop_thread
    assert thread.name == "control_loop" and thread.native_id != threading.get_native_id()
    # commanded feedback, which this trigger cannot take: refused as the YAML refuses it (was accepted and ignored)
    bad = client.set_parameter("state_feedback", "commanded")
    assert not bad.successful and bad.reason == (
        "state_feedback: 'commanded' with trigger 'joint_states'; expected 'measured' (that trigger steps on each "
        "/joint_states message, from the measurement)"), bad.reason
    assert node.get_parameter("state_feedback").value == "measured" and node.loop.settings.state_feedback == "measured"
    tid = thread.native_id
    if permitted:
        assert node.loop_scheduling == "SCHED_FIFO priority 50", node.loop_scheduling
        assert os.sched_getscheduler(tid) == os.SCHED_FIFO and os.sched_getparam(tid).sched_priority == 50
    else:
        assert node.loop_scheduling == "normal (SCHED_FIFO 50 refused)"
        assert os.sched_getscheduler(tid) == os.SCHED_OTHER
    assert client.transition(T.TRANSITION_DEACTIVATE)
    assert node._loop_thread is None and not thread.is_alive()
def test_mock_robot_velocity_interface_and_lag(ros):
    from std_msgs.msg import Float64MultiArray

    from roboplan_ik_ros.sim.mock_robot import MockRobot

    mock = MockRobot(unique_name("mock"), parameter_overrides=[
        Parameter("command_interface", value="velocity"), Parameter("command_topic", value="/unused_velocity"),
        Parameter("paused", value=True), Parameter("drive_thread", value=False)])  # stepped by hand below
    try:
        q0 = mock.q.copy()
        upper = mock.scene.q_max_v[:7]
        for _ in range(200):  # 1 rad/s on every joint for ~0.2 s of simulated time per step
            mock._on_forward_command(Float64MultiArray(data=[1.0] * 7))
            mock._last_step -= 0.05
            mock._drive_step()
        assert (mock.q[:7] > q0[:7]).all() and (mock.q[:7] <= upper + 1e-12).all()
        assert np.isclose(mock.q[6], upper[6])  # ran into the limit and stayed there
        mock.set_parameters([Parameter("command_interface", value="position")])  # read-only: refused
        assert mock.interface == "velocity"
        assert not mock.set_parameters([Parameter("lag_time_constant", value=-1.0)])[0].successful
    finally:
        mock.destroy_node()
