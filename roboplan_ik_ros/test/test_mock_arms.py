"""mock_robot --arms N (sim/mock_arms.py): one process drives several arms, each in its own namespace with its own
topics, state and strict drive; the command line picks the namespaces. Over DDS: the arms and the test's client
node are separate nodes of this process, as the other mock tests run them."""

from __future__ import annotations

import time

import numpy as np
import pytest
from rclpy.parameter import Parameter

from conftest import Spinner, unique_name, wait_until
from roboplan_ik_ros.core.errors import InvalidInputError
from roboplan_ik_ros.sim.mock_arms import MockArms, arm_namespaces, checked_namespaces, namespaces_from_command_line
from roboplan_ik_ros.sim.mock_robot import MockRobot

TIMEOUT = 60.0  # [s] generous: discovery on a busy machine; nothing here judges a speed


def test_arms_option_names_one_namespace_per_arm_and_no_option_keeps_the_single_mock():
    assert namespaces_from_command_line(["mock_robot", "--arms", "3", "--ros-args", "-p", "rate_hz:=500.0"]) == \
        ["/arm1", "/arm2", "/arm3"]
    assert namespaces_from_command_line(["mock_robot", "--namespaces", "left,/right"]) == ["/left", "/right"]
    assert namespaces_from_command_line(["mock_robot", "--ros-args", "-p", "rate_hz:=500.0"]) is None


def test_arms_refuses_no_arm_a_shared_namespace_the_root_and_both_options():
    with pytest.raises(InvalidInputError):
        arm_namespaces(0)
    with pytest.raises(InvalidInputError):
        checked_namespaces(["/a", "a"])  # the same namespace twice: the two arms would share their topics
    with pytest.raises(InvalidInputError):
        checked_namespaces(["/"])
    with pytest.raises(InvalidInputError):
        namespaces_from_command_line(["mock_robot", "--arms", "2", "--namespaces", "/a,/b"])


def test_each_arm_follows_its_own_commands_and_a_command_to_one_arm_does_not_move_the_other(ros):
    import rclpy
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    namespaces = [f"/{unique_name('arm_a')}", f"/{unique_name('arm_b')}"]
    arms = MockArms(namespaces, MockRobot, parameter_overrides=[Parameter("rate_hz", value=100.0)])
    client = rclpy.create_node(unique_name("arms_client"))
    latest: dict[str, np.ndarray] = {}

    def keep(ns: str, msg) -> None:
        latest[ns] = np.array(msg.position)

    for ns in namespaces:
        client.create_subscription(JointState, f"{ns}/joint_states", lambda m, ns=ns: keep(ns, m), 10)
    pubs = {ns: client.create_publisher(Float64MultiArray, f"{ns}/forward_position_controller/commands", 10)
            for ns in namespaces}
    spinners = [Spinner(*arms.arms), Spinner(client)]
    arms.start()
    try:
        a, b = namespaces
        wait_until(lambda: a in latest and b in latest, TIMEOUT, "joint_states of both arms")
        start = latest[a][:7].copy()
        assert np.allclose(latest[b][:7], start)  # both arms start at the same pose (the SRDF's "default")
        wait_until(lambda: all(p.get_subscription_count() > 0 for p in pubs.values()), TIMEOUT, "command subscriptions")

        goal_a = start + np.array([0.1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline and not np.allclose(latest[a][:7], goal_a):  # no lag: the arm jumps there
            pubs[a].publish(Float64MultiArray(data=goal_a.tolist()))
            time.sleep(0.05)
        assert np.allclose(latest[a][:7], goal_a)
        fresh_b = []  # arm b's joint_states from now on, after arm a moved
        client.create_subscription(JointState, f"{b}/joint_states", lambda m: fresh_b.append(np.array(m.position)), 10)
        wait_until(lambda: len(fresh_b) >= 5, TIMEOUT, "fresh joint_states of arm b")
        assert all(np.allclose(q[:7], start) for q in fresh_b)  # arm a's commands did not move arm b
        assert arms.arms[1].commands == 0  # nor reached it

        goal_b = start + np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -0.2])
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline and not np.allclose(latest[b][:7], goal_b):
            pubs[b].publish(Float64MultiArray(data=goal_b.tolist()))
            time.sleep(0.05)
        assert np.allclose(latest[b][:7], goal_b)
        assert np.allclose(latest[a][:7], goal_a)  # and arm a stays where its own command put it
    finally:
        for s in spinners:
            s.stop()
        arms.destroy()
        client.destroy_node()
