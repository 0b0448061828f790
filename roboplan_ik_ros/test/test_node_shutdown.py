"""Ctrl-C on a running node: rclpy's SIGINT handler shuts the ROS context down while the control loop
still ticks. The publishes that fail then are the node going away, not commands lost by a running node:
they do not count in ``undelivered`` and the loop stops ticking.

The node runs in a process of its own that sends itself SIGINT (the real signal handler) and then
waits 0.2 s before destroying the node, as a slow shutdown path does (the benchmark writes its
statistics first): without the check, every tick of those 0.2 s counted as an undelivered command.
"""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import write_config

SCRIPT = r"""
import json, os, signal, sys, threading, time
import rclpy
from rclpy.parameter import Parameter
from roboplan_ik_ros.node.ik_controller import IKControllerNode
from roboplan_ik_ros.node.spin import make_executor, spin_until_shutdown
from roboplan_ik_ros.sim.mock_robot import MockRobot
from roboplan_ik_ros.core.model.robots import load_example_robot

rclpy.init()
mock = MockRobot("sigint_mock", parameter_overrides=[Parameter("rate_hz", value=250.0)])
# the descriptions as parameters: this test is about Ctrl-C, not about discovering the mock's latched
# topics (two participants in one loaded process sometimes took longer than description_timeout)
robot = load_example_robot("panda")
node = IKControllerNode("sigint_ik", parameter_overrides=[
    Parameter("config_file", value=sys.argv[1]), Parameter("robot_description", value=robot.urdf_xml),
    Parameter("robot_description_semantic", value=robot.srdf_xml)])
def spin(node):
    executor = make_executor()
    executor.add_node(node)
    thread = threading.Thread(target=spin_until_shutdown, args=(executor,), daemon=True)
    thread.start()
    return thread

spin(mock)  # /joint_states
assert node.autostart(), node.last_error  # as ik_controller's main: configure and activate, then spin
spinner = spin(node)
deadline = time.monotonic() + 60.0
while node._stats.count < 100 and time.monotonic() < deadline:
    time.sleep(0.01)
ticks_before = node._stats.count
try:
    os.kill(os.getpid(), signal.SIGINT)
    spinner.join(10.0)
    time.sleep(0.6)  # several status (10 Hz) and diagnostics (2 Hz) periods
except KeyboardInterrupt:
    time.sleep(0.6)
print(json.dumps({"ticks_before": ticks_before, "undelivered": node.loop.counts.undelivered,
                  "active": node._active, "context_ok": rclpy.ok(), "faults": node.faults.count,
                  "last_fault": node.faults.last}), flush=True)
node.destroy_node()
mock.destroy_node()
"""


def test_ctrl_c_while_ticking_is_not_an_undelivered_command(tmp_path):
    config = write_config(tmp_path, node={"activation_timeout": 20.0})
    out = subprocess.run([sys.executable, "-c", SCRIPT, config], capture_output=True, text=True, timeout=120)
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    assert lines, f"no result (exit {out.returncode}):\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    result = json.loads(lines[-1])
    assert result["ticks_before"] >= 100 and not result["context_ok"], result
    assert result["undelivered"] == 0, result
    assert not result["active"], result  # the loop stopped ticking
    # nor did the reporting thread raise on publishing status or diagnostics into the dead context
    assert result["faults"] == 0, result
    assert "publishing the command failed" not in out.stdout + out.stderr


SHUTDOWN_FIRST = r"""
import sys, threading, time
import rclpy
from rclpy.parameter import Parameter
from roboplan_ik_ros.core.model.robots import load_example_robot
from roboplan_ik_ros.node.ik_controller import IKControllerNode
from roboplan_ik_ros.node.spin import make_executor, spin_until_shutdown

rclpy.init()
robot = load_example_robot("panda")
node = IKControllerNode("shutdown_first_ik", parameter_overrides=[
    Parameter("config_file", value=sys.argv[1]), Parameter("robot_description", value=robot.urdf_xml),
    Parameter("robot_description_semantic", value=robot.srdf_xml)])
from lifecycle_msgs.msg import State
node.trigger_configure()  # configured: the SolveIK service and its thread run (no robot needed)
assert node._state_machine.current_state[0] == State.PRIMARY_STATE_INACTIVE, node._state_machine.current_state
executor = make_executor()
executor.add_node(node)
threading.Thread(target=spin_until_shutdown, args=(executor,), daemon=True).start()
time.sleep(0.5)
rclpy.shutdown()  # before destroy_node: rclpy destroys the node itself, holding the context's lock
print("shut down", flush=True)
executor.shutdown()  # the program's own executor (an EventsExecutor still spinning at exit aborts the interpreter)
"""


def test_rclpy_shutdown_before_destroy_node_does_not_hang(tmp_path):
    """A program that embeds the node and calls rclpy.shutdown() first must still exit (the SolveIK
    service thread used to wait forever for a lock rclpy's shutdown held; then for 5 s per service
    thread, a join that could only time out), with exit code 0."""
    config = write_config(tmp_path, node={"activation_timeout": 20.0})
    try:
        out = subprocess.run([sys.executable, "-c", SHUTDOWN_FIRST, config], capture_output=True, text=True,
                             timeout=60)
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"the process hung after rclpy.shutdown():\n{exc.stdout}\n{exc.stderr}") from None
    assert "shut down" in out.stdout and out.returncode == 0, \
        f"exit {out.returncode}:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
