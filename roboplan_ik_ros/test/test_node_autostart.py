"""autostart runs from the spinning executor (issue 30, item 7): ik_controller's main configured before the executor
spun, so the latched /robot_description its subscription had received was never delivered and configure waited
2.2-2.6 s on a new subscription. Now :func:`spin.call_when_ready` runs it from a timer, once the descriptions are
kept. Checked in-process: the configure transition runs in the spinning thread, with the kept URDF (no wait on a
new /robot_description subscription), and the helper calls its action once, when ready or at its timeout."""

from __future__ import annotations

import threading

import rclpy
from lifecycle_msgs.msg import State
from rclpy.parameter import Parameter

from conftest import Spinner, unique_name, wait_until, write_config
from roboplan_ik_ros.node import configure_inputs
from roboplan_ik_ros.node.ik_controller import IKControllerNode
from roboplan_ik_ros.node.spin import call_when_ready

LOOKS_BEFORE_READY = 5  # the predicate was asked this often before it turned true


def test_call_when_ready_acts_once_in_the_spinning_thread_once_ready(ros):
    node = rclpy.create_node(unique_name("ready"))
    looks, calls, is_ready = [], [], threading.Event()

    def ready() -> bool:
        looks.append(threading.current_thread())
        return is_ready.is_set()

    timer = call_when_ready(node, ready, lambda: calls.append(threading.current_thread()), timeout=60.0)
    spinner = Spinner(node)
    try:
        wait_until(lambda: len(looks) >= LOOKS_BEFORE_READY, what="the predicate asked")
        assert calls == [], "acted before ready"
        is_ready.set()
        wait_until(lambda: calls, what="the action")
        wait_until(timer.is_canceled, what="the timer cancelled")
        assert calls == [spinner._thread], "not called once, in the spinning thread"
        assert set(looks) == {spinner._thread}
    finally:
        spinner.stop()
        node.destroy_node()


def test_call_when_ready_acts_at_its_timeout(ros):
    node = rclpy.create_node(unique_name("ready"))
    calls = []
    timer = call_when_ready(node, lambda: False, lambda: calls.append(1), timeout=0.0)
    spinner = Spinner(node)
    try:
        wait_until(timer.is_canceled, what="the timer cancelled")
        assert calls == [1]
    finally:
        spinner.stop()
        node.destroy_node()


def test_autostart_configures_in_the_executor_with_the_kept_description(ros, mock_robot, tmp_path, monkeypatch):
    description_waits = []
    real_wait = configure_inputs.wait_for_message

    def recording_wait(msg_type, node, topic, **kw):
        if "robot_description" in topic:
            description_waits.append(topic)
        return real_wait(msg_type, node, topic, **kw)

    monkeypatch.setattr(configure_inputs, "wait_for_message", recording_wait)  # where _description looks it up
    node = IKControllerNode(unique_name("ik"), parameter_overrides=[
        Parameter("config_file", value=write_config(tmp_path)), Parameter("autostart", value=True)])
    # the probe sees a configure that runs before the executor spun: it waits on a new subscription
    assert node._description("robot_description", 30.0)
    assert description_waits == ["/robot_description"], description_waits
    description_waits.clear()
    configured_in = []
    trigger_configure = node.trigger_configure
    monkeypatch.setattr(node, "trigger_configure",
                        lambda: configured_in.append(threading.current_thread()) or trigger_configure())
    node.schedule_autostart()
    spinner = Spinner(node)
    try:
        wait_until(lambda: node._state_machine.current_state[0] == State.PRIMARY_STATE_ACTIVE or node.last_error,
                   what="autostart's configure and activate")
        assert not node.last_error, node.last_error
        assert configured_in == [spinner._thread], "configure did not run once in the spinning executor"
        assert description_waits == [], f"configure waited on a new subscription for {description_waits}"
    finally:
        spinner.stop()
        node.destroy_node()
