"""An exception in any kind of callback of ik_controller: caught at one place (node/session.py),
logged, counted, a controlled stop and the lifecycle error transition, never an exit.

One error is injected into each kind of callback of a running node (subscription, timer, service,
~/solve_ik's service thread, the control loop's thread, a parameter set) while the arm moves toward
a goal. Each must end with the node unconfigured through ``on_error`` (configure works again), the
error counted under the callback's name, and every command, braking included, within v_max*dt of
the previous one. Plus the :class:`Session` rules themselves: a callback queued before retirement
never runs after it (the crash of issue 19: a timer's publish after cleanup), and retirement waits
for callbacks running in other threads.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pinocchio as pin
import pytest
from geometry_msgs.msg import PoseStamped
from lifecycle_msgs.msg import Transition
from rclpy.parameter import Parameter
from std_srvs.srv import SetBool

from conftest import LifecycleClient, Spinner, unique_name, wait_future, wait_until, write_config
from roboplan_ik_ros.node.session import Faults, Session, refusal

ARM = [f"panda_joint{i}" for i in range(1, 8)]
TIP = "panda_hand_tcp"


# =========================================================================== Session rules
def test_a_retired_session_runs_no_callback_queued_before():
    """What crashed the node: an executor had taken a timer event; cleanup destroyed the publisher;
    the callback ran on None. A guarded callback called after retire() does not run."""
    faults = []
    s = Session("configured", lambda *a: faults.append(a))
    ran = []
    cb = s.guard(lambda: ran.append(1), "timer")
    cb()
    assert ran == [1]
    assert s.retire(1.0) == []
    cb()  # the queued event, after retirement
    assert ran == [1] and not faults


def test_a_callback_error_goes_to_the_fault_handler_and_a_service_still_answers():
    from std_srvs.srv import Trigger

    faults = []
    s = Session("configured", lambda *a: faults.append(a))

    def boom(request, response):
        raise ValueError("injected")

    cb = s.guard(boom, "service ~/x", refusal("~/x"))
    response = cb(Trigger.Request(), Trigger.Response(success=True))
    assert isinstance(response, Trigger.Response) and not response.success and "~/x did not run" in response.message
    (session, what, exc, trace), = faults
    assert session == "configured" and what == "service ~/x" and isinstance(exc, ValueError)
    assert "injected" in trace and "Traceback" in trace
    s.retire(1.0)  # refused after retirement too, with the same answer
    assert not cb(Trigger.Request(), Trigger.Response(success=True)).success and len(faults) == 1


def test_retire_waits_for_callbacks_running_in_other_threads_and_destroys_newest_first():
    s = Session("active", lambda *a: None)
    entered, release, finished = threading.Event(), threading.Event(), []

    def slow():
        entered.set()
        release.wait(5.0)
        finished.append(time.monotonic())

    t = threading.Thread(target=s.guard(slow, "tick"))
    t.start()
    assert entered.wait(5.0)
    assert s.retire(0.05) != []  # still running: reported, not waited for beyond the timeout
    threading.Timer(0.1, release.set).start()
    assert s.retire(5.0) == []  # returns once the tick ended
    assert finished
    order = []
    s.own("first", lambda: order.append("first"))
    s.own("broken", lambda: 1 / 0)
    s.own("last", lambda: order.append("last"))
    errors = []
    s.destroy(errors.append)
    assert order == ["last", "first"] and len(errors) == 1 and "broken" in errors[0]
    t.join(5.0)


def test_retire_from_inside_one_of_its_callbacks_does_not_wait_for_itself():
    s = Session("configured", lambda *a: None)
    out = []
    s.guard(lambda: out.append(s.retire(5.0)), "transition")()
    assert out == [[]]


def test_faults_count_per_callback():
    f = Faults()
    f.add("timer (0.1 s)", "ValueError: a")
    f.add("timer (0.1 s)", "ValueError: b")
    assert f.count == 2 and f.by_callback["timer (0.1 s)"] == 2 and f.last == "timer (0.1 s): ValueError: b"


# =========================================================================== the node
class Injector:
    """A callable that raises while ``on`` (and counts the raises)."""

    def __init__(self, original) -> None:
        self.original = original
        self.on = False
        self.raised = 0

    def __call__(self, *args, **kwargs):
        if self.on:
            self.raised += 1
            raise RuntimeError("injected fault")
        return self.original(*args, **kwargs)


def _v_max(scene) -> np.ndarray:
    return np.array([scene.model.velocityLimit[scene.model.joints[scene.model.getJointId(j)].idx_v] for j in ARM])


#: (kind, what names the callback in node.faults.by_callback, how to inject, how to trigger)
KINDS = ["subscription (pose goal)", "subscription (joint_states)", "reporting thread (status)",
         "reporting thread (diagnostics)",
         "service (~/pause)", "service thread (~/solve_ik)", "control loop thread (tick)", "parameter set",
         "point cloud thread"]


@pytest.mark.parametrize("kind", KINDS)
def test_an_error_in_any_callback_stops_the_arm_and_takes_the_error_transition(ros, mock_robot, tmp_path, kind,
                                                                                 monkeypatch):
    from roboplan_ik_interfaces.srv import SolveIK
    from roboplan_ik_ros.node.ik_controller import IKControllerNode
    from roboplan_ik_ros.node.message_conversions import pose_from_se3
    from roboplan_ik_ros.node.goal_inputs import GoalInputs
    from roboplan_ik_ros.sim.mock_camera import cloud_message
    from roboplan_ik_ros.node.pointcloud_input import PointCloudInput
    from roboplan_ik_ros.node.solve_ik_service import SolveIKServer

    name = unique_name("ik")
    # state_timeout 5 s: a stall of the in-process mock under load is not a stale stop (a re-seed, a jump this
    # test would have to tell from a fault's)
    config = write_config(tmp_path, node={"state_timeout": 5.0})
    node = IKControllerNode(name, parameter_overrides=[Parameter("config_file", value=config)])
    attr = {"subscription (joint_states)": "_on_joint_states", "reporting thread (status)": "_publish_status",
            "reporting thread (diagnostics)": "_diagnostics_report", "control loop thread (tick)": "_tick_locked"}.get(kind)
    method = {"subscription (pose goal)": (GoalInputs, "on_pose_goal"), "service (~/pause)": (GoalInputs, "on_pause"),
              "service thread (~/solve_ik)": (SolveIKServer, "handle_request"),
              "point cloud thread": (PointCloudInput, "_process")}.get(kind)
    injector = None
    if attr is not None:  # the node's own method, replaced before configure registers it
        injector = Injector(getattr(node, attr))
        setattr(node, attr, injector)
    elif method is not None:  # a method of a part configure builds
        cls, name_ = method
        injector = Injector(getattr(cls, name_))
        monkeypatch.setattr(cls, name_, lambda self, *args: injector(self, *args))
    spinner = Spinner(node)
    client = LifecycleClient(name)
    # every command, in a reliable subscription deep enough for any stall of this process (the client's
    # keeps 100); a lost one would show as a jump (no DDS message-lost event: it can hang this process, see
    # e2e.Rig._create_command_subscription)
    recorded = []
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from std_msgs.msg import Float64MultiArray

    client.node.create_subscription(
        Float64MultiArray, "/forward_position_controller/commands",
        lambda m: recorded.append((time.perf_counter(), tuple(m.data))),
        QoSProfile(depth=100_000, reliability=ReliabilityPolicy.RELIABLE))
    try:
        assert client.transition(Transition.TRANSITION_CONFIGURE) and client.transition(Transition.TRANSITION_ACTIVATE)
        if kind == "parameter set":  # a runtime parameter whose apply raises (configured by then)
            spec = node._params.specs["tasks.ee.position_cost"]
            injector = Injector(spec.apply)
            spec.apply = injector
        goal_pub = client.node.create_publisher(PoseStamped, f"/{name}/ee/target_pose", 10)
        wait_until(lambda: goal_pub.get_subscription_count() > 0, what="the goal subscription")
        scene = mock_robot.scene
        T0 = scene.frame_pose(mock_robot.q.copy(), TIP)
        goal = PoseStamped()
        goal.header.frame_id = "panda_link0"
        pose_from_se3(pin.SE3(T0.rotation, T0.translation + np.array([0.0, 0.1, -0.1])), goal.pose)
        wait_until(lambda: client.commands, 30.0, "the hold commands after activation")
        q_start = np.array(client.commands[-1][1])
        goal_pub.publish(goal)
        wait_until(lambda: np.abs(np.array(client.commands[-1][1]) - q_start).max() > 0.02, 30.0, "the arm moving")
        faults0 = node.faults.count
        t_fault = time.perf_counter()
        injector.on = True
        if kind == "subscription (pose goal)":
            goal_pub.publish(goal)
        elif kind == "service (~/pause)":
            cli = client.node.create_client(SetBool, f"/{name}/pause")
            assert cli.wait_for_service(timeout_sec=10.0)
            res = wait_future(cli.call_async(SetBool.Request(data=True)), timeout=20.0)
            assert not res.success and "did not run" in res.message  # answered, not left hanging
        elif kind == "service thread (~/solve_ik)":
            cli = client.node.create_client(SolveIK, f"/{name}/solve_ik")
            assert cli.wait_for_service(timeout_sec=10.0)
            res = wait_future(cli.call_async(SolveIK.Request()), timeout=20.0)
            assert not res.success and res.error_code == SolveIK.Response.NOT_READY
        elif kind == "parameter set":
            client.set_parameter("tasks.ee.position_cost", 2.0)
        elif kind == "point cloud thread":  # a well-formed cloud; its processing raises (a bug)
            from sensor_msgs.msg import PointCloud2

            cloud_pub = client.node.create_publisher(PointCloud2, f"/{name}/pointcloud", 10)
            wait_until(lambda: cloud_pub.get_subscription_count() > 0, what="the cloud subscription")
            cloud_pub.publish(cloud_message(np.array([[0.6, 0.3, 0.2], [0.6, 0.31, 0.2]]), 2, 1, "panda_link0"))
        wait_until(lambda: node.faults.count > faults0, 30.0, "the fault counted")
        wait_until(lambda: client.state() == "unconfigured", 30.0, "the error transition to unconfigured")
        injector.on = False
        assert injector.raised >= 1
        expected = {"subscription (pose goal)": "subscription ~/ee/target_pose",
                    "subscription (joint_states)": "subscription /joint_states",
                    "reporting thread (status)": "reporting thread (~/status)",
                    "reporting thread (diagnostics)": "reporting thread (/diagnostics)", "service (~/pause)": "service ~/pause",
                    "service thread (~/solve_ik)": "~/solve_ik", "control loop thread (tick)": "control tick",
                    "parameter set": "parameter", "point cloud thread": "~/pointcloud processing thread"}[kind]
        assert any(expected in what for what in node.faults.by_callback), dict(node.faults.by_callback)
        assert "raised RuntimeError: injected fault" in node.last_error or "injected fault" in node.faults.last
        # every command, the braking ones included, within v_max*dt of the previous one (shipped 500 Hz)
        cmds = np.array([c for _, c in recorded])
        steps = np.abs(np.diff(cmds, axis=0))
        bound = _v_max(scene) * (1.0 / 500.0)
        ratio = (steps / bound).max(axis=1)
        k = int(ratio.argmax())
        times = [t for t, _ in recorded]
        assert (steps <= bound * (1 + 1e-6) + 1e-9).all(), (
            f"command {k + 1} of {len(cmds)} jumps: step ratio {ratio[k]:.3f}, received {times[k + 1] - t_fault:+.3f} s "
            f"after the fault was injected (previous {times[k] - t_fault:+.3f} s); {cmds[k].tolist()} -> "
            f"{cmds[k + 1].tolist()}")
        # the node is alive and works again: configure, activate, commands
        n = len(client.commands)
        assert client.transition(Transition.TRANSITION_CONFIGURE), node.last_error
        assert client.transition(Transition.TRANSITION_ACTIVATE), node.last_error
        wait_until(lambda: len(client.commands) > n + 5, 30.0, "commands after reconfiguring")
        assert client.transition(Transition.TRANSITION_DEACTIVATE)
    finally:
        client.close()
        spinner.stop()
        node.destroy_node()


def test_an_error_in_a_transition_is_logged_counted_and_ends_unconfigured(ros, mock_robot, tmp_path):
    """rclpy alone turns an exception in a transition callback into ERROR without a word; here it is
    counted, named in last_error, and on_error leaves the node unconfigured and able to configure."""
    from roboplan_ik_ros.node.ik_controller import IKControllerNode

    name = unique_name("ik")
    node = IKControllerNode(name, parameter_overrides=[Parameter("config_file", value=write_config(tmp_path))])
    spinner = Spinner(node)
    client = LifecycleClient(name)
    try:
        assert client.transition(Transition.TRANSITION_CONFIGURE)
        injector = Injector(node.loop.activate)
        injector.on = True
        node.loop.activate = injector
        assert not client.transition(Transition.TRANSITION_ACTIVATE)
        assert injector.raised == 1
        assert client.state() == "unconfigured"
        assert node.faults.by_callback["transition activate"] == 1
        assert "activate failed: unexpected error: RuntimeError: injected fault" == node.last_error
        assert client.transition(Transition.TRANSITION_CONFIGURE) and client.transition(Transition.TRANSITION_ACTIVATE)
        wait_until(lambda: client.commands, 60.0, "commands after configuring again")
        assert client.transition(Transition.TRANSITION_DEACTIVATE)
    finally:
        client.close()
        spinner.stop()
        node.destroy_node()
