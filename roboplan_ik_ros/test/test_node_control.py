"""ik_controller in closed loop with the mock robot over real DDS: goals, limits, the SolveIK
service, bad input (stale or NaN joint states, bad goals), runtime parameters, diagnostics."""

import math
import time

import numpy as np
import pinocchio as pin
import pytest
import yaml
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped
from lifecycle_msgs.msg import Transition
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState

from conftest import CONFIG_DIR, LifecycleClient, Spinner, fifo_permitted, unique_name, wait_future, wait_until, write_config
from roboplan_ik_interfaces.msg import PoseGoal
from roboplan_ik_interfaces.srv import SolveIK
from roboplan_ik_ros.node.ik_controller import IKControllerNode
from roboplan_ik_ros.node.message_conversions import pose_from_se3

ARM = [f"panda_joint{i}" for i in range(1, 8)]
TIP = "panda_hand_tcp"


class Rig:
    def __init__(self, node, client, mock):
        self.node, self.client, self.mock = node, client, mock
        self.name = node.get_name()
        self.goal_pub = client.node.create_publisher(PoseStamped, f"/{self.name}/ee/target_pose", 10)
        self.js_pub = client.node.create_publisher(JointState, "/joint_states", 10)
        self.srv = client.node.create_client(SolveIK, f"/{self.name}/solve_ik")

    def tcp_pose(self) -> pin.SE3:
        """The mock robot's actual TCP pose (its own model: independent of the controller)."""
        return self.mock.scene.frame_pose(self.mock.q.copy(), TIP)

    def send_goal(self, T: pin.SE3, frame: str = "panda_link0") -> None:
        ps = PoseStamped()
        ps.header.frame_id = frame
        pose_from_se3(T, ps.pose)
        wait_until(lambda: self.goal_pub.get_subscription_count() > 0, what="goal subscription")
        self.goal_pub.publish(ps)

    def solve(self, goals, **kw) -> SolveIK.Response:
        req = SolveIK.Request(goals=goals, **kw)
        assert self.srv.wait_for_service(timeout_sec=10.0)
        return wait_future(self.srv.call_async(req), timeout=10.0)


@pytest.fixture(scope="module")
def rig(ros, mock_robot, tmp_path_factory):
    name = unique_name("ik")
    node = IKControllerNode(name, parameter_overrides=[
        Parameter("config_file", value=write_config(tmp_path_factory.mktemp("cfg")))])
    spinner = Spinner(node)
    client = LifecycleClient(name)
    assert client.transition(Transition.TRANSITION_CONFIGURE)
    assert client.transition(Transition.TRANSITION_ACTIVATE)
    yield Rig(node, client, mock_robot)
    client.close()
    spinner.stop()
    node.destroy_node()


def _errors(T_goal: pin.SE3, T: pin.SE3) -> tuple[float, float]:
    return (float(np.linalg.norm(T.translation - T_goal.translation)),
            float(np.linalg.norm(pin.log3(T_goal.rotation.T @ T.rotation))))


def test_converges_to_pose_goal(rig):
    T0 = rig.tcp_pose()
    goal = pin.SE3(T0.rotation @ pin.exp3(np.array([0.1, -0.15, 0.2])), T0.translation + [0.08, 0.1, -0.06])
    rig.send_goal(goal)
    wait_until(lambda: max(_errors(goal, rig.tcp_pose())[0] / 1e-3, _errors(goal, rig.tcp_pose())[1] / 1e-3) < 1.0,
               timeout=60.0, what="the mock robot's TCP within 1 mm / 1 mrad of the goal")
    status = rig.client.wait_status(lambda s: not s.holding)
    ee = next(t for t in status.tasks if t.name == "ee")
    assert ee.position_error < 1e-3 and ee.orientation_error < 1e-3
    assert any(b.name == "workspace" for b in status.barriers)


def test_commands_never_leave_the_joint_limits(rig):
    lower, upper = rig.mock.scene.q_min_v[:7], rig.mock.scene.q_max_v[:7]
    T0 = rig.tcp_pose()
    start = len(rig.client.commands)
    # turn the hand by almost pi about its axis: joint 7 runs into its limit on the way
    rig.send_goal(pin.SE3(T0.rotation @ pin.exp3(np.array([0.0, 0.0, 3.0])), T0.translation))

    def joint7_near_a_limit() -> bool:  # the acceleration bounds and goal smoothing make this take a while
        q7 = np.array([c[1][6] for c in rig.client.commands[start:]])
        return q7.size > 0 and (np.isclose(q7.max(), upper[6], atol=0.05) or np.isclose(q7.min(), lower[6], atol=0.05))

    wait_until(joint7_near_a_limit, timeout=60.0, what="joint 7 commanded to within 0.05 rad of a limit")
    pressed = len(rig.client.commands)
    wait_until(lambda: len(rig.client.commands) >= pressed + 250, timeout=60.0,
               what="250 more commands pressed against the limit")
    cmds = np.array([c[1] for c in rig.client.commands[start:]])
    outside = (cmds < lower - 1e-9) | (cmds > upper + 1e-9)
    assert not outside.any(), f"{int(outside.any(axis=1).sum())} of {len(cmds)} commands outside the joint limits"
    rig.send_goal(T0)  # back
    wait_until(lambda: _errors(T0, rig.tcp_pose())[0] < 1e-3, timeout=60.0, what="back to the start")


def _goal(T: pin.SE3, tip: str = TIP, frame: str = "panda_link0") -> PoseGoal:
    g = PoseGoal(tip_frame=tip)
    g.pose.header.frame_id = frame
    pose_from_se3(T, g.pose.pose)
    return g


def test_service_solves_reachable_goal_while_the_loop_runs(rig):
    T0 = rig.tcp_pose()
    target = pin.SE3(T0.rotation @ pin.exp3(np.array([0.0, 0.3, 0.0])), T0.translation + [0.05, -0.1, 0.05])
    res = rig.solve([_goal(target)], max_time=0.5)  # generous: CI machines may be loaded
    assert res.success and res.error_code == SolveIK.Response.SUCCESS, res.message
    assert list(res.solution.name) == ARM and len(res.solution.position) == 7
    assert res.position_errors[0] < 1e-3 and res.orientation_errors[0] < 1e-3
    q = rig.mock.scene.q_from_joint_positions(ARM, res.solution.position, rig.mock.q.copy())
    assert _errors(target, rig.mock.scene.frame_pose(q, TIP))[0] < 1e-3
    # a long request (no fast return, 0.2 s): the control loop keeps commanding meanwhile (how
    # regularly is bench_node's business, not a test's)
    n = len(rig.client.commands)
    res = rig.solve([_goal(target)], max_time=0.2, fast_return=SolveIK.Request.OPTION_FALSE)
    assert res.success
    assert len(rig.client.commands) > n  # commands arrived while the request was solved


def test_service_seed_and_group(rig):
    T0 = rig.tcp_pose()
    seed = JointState(name=ARM, position=[0.0, -0.5, 0.0, -2.0, 0.0, 1.5, 0.8])
    res = rig.solve([_goal(T0)], seed=seed, group_name="arm", check_collisions=SolveIK.Request.OPTION_TRUE,
                    max_time=0.5)
    assert res.success, res.message
    # the answer, checked with the mock's own model: it reaches the goal, inside the limits, collision-free
    assert list(res.solution.name) == ARM
    q = rig.mock.scene.q_from_joint_positions(ARM, res.solution.position, rig.mock.q.copy())
    pos, rot = _errors(T0, rig.mock.scene.frame_pose(q, TIP))
    assert pos < 1e-3 and rot < 1e-3, (pos, rot)
    assert rig.mock.scene.within_limits(q) and not rig.mock.scene.in_collision(q)


@pytest.mark.parametrize("method", ["lm_chan", "gauss_newton"])
def test_service_method_and_error_weights_per_request(rig, method):
    """A request picks its method; position-only weights reach the position of a goal whose
    orientation is far off (and report the true orientation error)."""
    T0 = rig.tcp_pose()
    target = pin.SE3(T0.rotation @ pin.exp3(np.array([0.0, 0.3, 0.0])), T0.translation + [0.05, -0.1, 0.05])
    res = rig.solve([_goal(target)], max_time=0.5, method=method)
    assert res.success, res.message
    q = rig.mock.scene.q_from_joint_positions(ARM, res.solution.position, rig.mock.q.copy())
    pos, rot = _errors(target, rig.mock.scene.frame_pose(q, TIP))
    assert pos < 1e-3 and rot < 1e-3
    turned = pin.SE3(target.rotation @ pin.exp3(np.array([2.5, 0.0, 0.0])), target.translation)
    res = rig.solve([_goal(turned)], max_time=0.5, method=method, error_weights=[1.0, 1.0, 1.0, 0.0, 0.0, 0.0])
    assert res.success, res.message
    q = rig.mock.scene.q_from_joint_positions(ARM, res.solution.position, rig.mock.q.copy())
    pos, rot = _errors(turned, rig.mock.scene.frame_pose(q, TIP))
    assert pos < 1e-3 and res.orientation_errors[0] == pytest.approx(rot, abs=1e-6)


def test_service_max_deviation(rig):
    """max_deviation in a request: the answer stays within it of the request's seed; a goal that needs
    more motion is NO_SOLUTION; a negative value is INVALID_REQUEST."""
    seed_values = [0.0, -0.5, 0.0, -2.0, 0.0, 1.5, 0.8]
    seed = JointState(name=ARM, position=seed_values)
    q_seed = rig.mock.scene.q_from_joint_positions(ARM, seed_values, rig.mock.q.copy())
    q_near = q_seed.copy()
    q_near[:7] += 0.05
    near = rig.mock.scene.frame_pose(q_near, TIP)
    res = rig.solve([_goal(near)], seed=seed, max_deviation=0.1, max_time=0.5)
    assert res.success, res.message
    assert np.abs(np.asarray(res.solution.position) - seed_values).max() <= 0.1 + 1e-9
    q_far = q_seed.copy()
    q_far[0] += 1.0
    res = rig.solve([_goal(rig.mock.scene.frame_pose(q_far, TIP))], seed=seed, max_deviation=0.1, max_time=0.1)
    assert not res.success and res.error_code == SolveIK.Response.NO_SOLUTION, res.message
    res = rig.solve([_goal(near)], seed=seed, max_deviation=-1.0)
    assert res.error_code == SolveIK.Response.INVALID_REQUEST and "max_deviation: expected > 0" in res.message


def test_service_active_joints(rig):
    """active_joints: only those joints move (the others keep the request's seed values in the solution);
    a joint outside the group is INVALID_REQUEST naming it."""
    seed_values = [0.0, -0.5, 0.0, -2.0, 0.0, 1.5, 0.8]
    seed = JointState(name=ARM, position=seed_values)
    q_goal = rig.mock.scene.q_from_joint_positions(ARM, seed_values, rig.mock.q.copy())
    q_goal[[0, 1, 3]] += [0.2, 0.1, -0.15]  # panda_joint1, 2, 4
    target = rig.mock.scene.frame_pose(q_goal, TIP)
    res = rig.solve([_goal(target)], seed=seed, active_joints=ARM[:4], max_time=0.5)
    assert res.success, res.message
    assert list(res.solution.name) == ARM
    assert list(res.solution.position[4:]) == seed_values[4:]
    q = rig.mock.scene.q_from_joint_positions(ARM, res.solution.position, rig.mock.q.copy())
    assert _errors(target, rig.mock.scene.frame_pose(q, TIP))[0] < 1e-3
    res = rig.solve([_goal(target)], seed=seed, active_joints=["panda_joint1", "panda_finger_joint1"])
    assert res.error_code == SolveIK.Response.INVALID_REQUEST and "panda_finger_joint1" in res.message, res.message


@pytest.mark.parametrize("make, code, words", [
    (lambda T: dict(goals=[_goal(T, tip="panda_hand_tip")]), SolveIK.Response.UNKNOWN_FRAME, "panda_hand_tip"),
    (lambda T: dict(goals=[_goal(T, frame="map")]), SolveIK.Response.UNKNOWN_FRAME, "tf2_ros"),
    (lambda T: dict(goals=[]), SolveIK.Response.INVALID_REQUEST, "at least one goal"),
    (lambda T: dict(goals=[_goal(T)], group_name="legs"), SolveIK.Response.INVALID_REQUEST, "legs"),
    (lambda T: dict(goals=[_goal(pin.SE3(np.eye(3), np.array([3.0, 0.0, 0.5])))], max_time=0.02),
     SolveIK.Response.NO_SOLUTION, "no solution"),
    (lambda T: dict(goals=[_goal(T)], seed=JointState(name=ARM, position=[0.0])),
     SolveIK.Response.INVALID_REQUEST, "7 names but 1 positions"),
    (lambda T: dict(goals=[_goal(T)], check_collisions=7), SolveIK.Response.INVALID_REQUEST, "OPTION_DEFAULT"),
    (lambda T: dict(goals=[_goal(T)], method="bfgs"), SolveIK.Response.INVALID_REQUEST,
     "method: expected one of dls, lm_wampler, lm_chan, lm_sugihara, newton_raphson, gauss_newton, got 'bfgs'"),
    (lambda T: dict(goals=[_goal(T)], error_weights=[1.0, 1.0]), SolveIK.Response.INVALID_REQUEST,
     "error_weights: expected 6 finite numbers >= 0"),
])
def test_service_bad_requests(rig, make, code, words):
    res = rig.solve(**make(rig.tcp_pose()))
    assert not res.success and res.error_code == code and words in res.message, res.message


@pytest.mark.parametrize("orientation, words", [
    ((0.0, 0.0, 0.0, 0.0), "zero quaternion"),
    ((math.nan, 0.0, 0.0, 1.0), "non-finite"),
    ((0.0, 0.0, 0.0, 1.5), "is not 1"),
])
def test_service_bad_pose(rig, orientation, words):
    g = _goal(rig.tcp_pose())
    o = g.pose.pose.orientation
    o.x, o.y, o.z, o.w = orientation
    res = rig.solve([g])
    assert res.error_code == SolveIK.Response.INVALID_REQUEST and words in res.message, res.message


def _wait_still(rig, timeout: float = 15.0) -> pin.SE3:
    """Wait until the mock's TCP stops moving (the previous goal settled); return its pose."""
    last = [rig.tcp_pose()]

    def still() -> bool:
        time.sleep(0.2)
        T = rig.tcp_pose()
        moved = max(_errors(last[0], T))
        last[0] = T
        return moved < 1e-6

    wait_until(still, timeout=timeout, what="the TCP at rest")
    return last[0]


def test_bad_goals_are_rejected_and_the_robot_holds(rig):
    tcp_before = _wait_still(rig)
    goal_before = rig.node.loop.goal("ee").copy()
    n0 = rig.node.loop.counts.goals_rejected
    bad = []
    for xyzw in ((0.0, 0.0, 0.0, 0.0), (math.nan, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0, 3.0)):
        ps = PoseStamped()
        ps.header.frame_id = "panda_link0"
        ps.pose.position.x = 0.5
        ps.pose.orientation.x, ps.pose.orientation.y, ps.pose.orientation.z, ps.pose.orientation.w = xyzw
        bad.append(ps)
    unknown = PoseStamped()
    unknown.header.frame_id = "map"
    unknown.pose.orientation.w = 1.0
    bad.append(unknown)
    for k, ps in enumerate(bad):  # one at a time: the goal topics keep only the latest message
        rig.goal_pub.publish(ps)
        wait_until(lambda: rig.node.loop.counts.goals_rejected >= n0 + k + 1, what=f"rejected goal {k}")
    assert "'map' is not a frame of the robot model" in rig.node._last_rejection
    assert np.allclose(rig.node.loop.goal("ee").homogeneous, goal_before.homogeneous)  # no bad goal got through
    assert max(_errors(tcp_before, rig.tcp_pose())) < 1e-4  # the TCP holds (the posture may act in the nullspace)
    status = rig.client.wait_status(lambda s: s.goals_rejected >= n0 + len(bad))
    assert status.guard_cuts == 0


def test_bad_twists_jogs_and_inputs_while_paused_are_rejected_and_the_robot_holds(rig):
    from geometry_msgs.msg import TwistStamped
    from std_srvs.srv import SetBool

    tcp_before = _wait_still(rig)
    twist_pub = rig.client.node.create_publisher(TwistStamped, f"/{rig.name}/ee/target_twist", 10)
    jog_pub = rig.client.node.create_publisher(JointState, f"/{rig.name}/posture/target_joint_velocities", 10)
    wait_until(lambda: twist_pub.get_subscription_count() > 0 and jog_pub.get_subscription_count() > 0,
               what="the stream subscriptions")

    def twist(linear, frame="panda_link0", age=0.0):
        m = TwistStamped()
        m.header.frame_id = frame
        if age:
            m.header.stamp = (rig.client.node.get_clock().now() - rclpy_duration(age)).to_msg()
        m.twist.linear.x, m.twist.linear.y, m.twist.linear.z = linear
        return m

    cases = [
        (twist_pub, twist((1.5, 0.0, 0.0)), "components must be in [-1, 1]"),
        (twist_pub, twist((math.nan, 0.0, 0.0)), "non-finite twist"),
        (twist_pub, twist((0.1, 0.0, 0.0), frame="map"), "'map' is not a frame of the robot model"),
        (twist_pub, twist((0.1, 0.0, 0.0), age=0.3), "old on arrival"),
        (jog_pub, JointState(name=["elbow"], velocity=[0.1]), "not in the group"),
        (jog_pub, JointState(name=["panda_joint1"], velocity=[0.1, 0.2]), "equal length"),
        (jog_pub, JointState(name=["panda_joint1"], velocity=[math.inf]), "non-finite velocities"),
    ]
    n0 = rig.node.loop.counts.goals_rejected
    for k, (pub, msg, words) in enumerate(cases):
        pub.publish(msg)
        # the count and the reason are set one after the other by the node's thread: wait for both
        wait_until(lambda: rig.node.loop.counts.goals_rejected >= n0 + k + 1 and words in rig.node._last_rejection,
                   what=f"input {k} rejected for {words!r}")
    pause = rig.client.node.create_client(SetBool, f"/{rig.name}/pause")
    assert pause.wait_for_service(timeout_sec=10.0)
    assert wait_future(pause.call_async(SetBool.Request(data=True)), timeout=10.0).success
    status = rig.client.wait_status(lambda s: s.mode == "paused" and s.motion_limit == "paused")
    assert "paused" in status.motion_limit_reason
    twist_pub.publish(twist((0.1, 0.0, 0.0)))
    wait_until(lambda: "paused" in rig.node._last_rejection, what="a twist refused while paused")
    assert wait_future(pause.call_async(SetBool.Request(data=False)), timeout=10.0).success
    rig.client.wait_status(lambda s: s.mode == "waiting_for_goal")
    assert max(_errors(tcp_before, rig.tcp_pose())) < 1e-4  # nothing moved
    from roboplan_ik_ros.node.status import LoopSnapshot
    with rig.node._lock:
        counters = LoopSnapshot.take(rig.node.loop).counters  # what /diagnostics lists
    assert counters["motion_limit.paused"] >= 1
    rig.client.node.destroy_client(pause)
    rig.client.node.destroy_publisher(twist_pub)
    rig.client.node.destroy_publisher(jog_pub)


def rclpy_duration(seconds: float):
    from rclpy.duration import Duration

    return Duration(nanoseconds=int(seconds * 1e9))


def test_nan_joint_states_are_ignored_and_the_node_keeps_running(rig):
    # a goal at the hand's pose: the node tracks it, whatever the earlier tests left (a stream timing out)
    rig.send_goal(rig.tcp_pose())
    rig.client.wait_status(lambda s: s.mode == "tracking", what="tracking the goal at the hand's pose")
    n0 = rig.node.loop.state.rejected
    wait_until(lambda: rig.js_pub.get_subscription_count() > 0, what="joint_states subscription")
    bad = (JointState(name=ARM, position=[0.0, math.nan, 0.0, -2.0, 0.0, 1.5, 0.8]),
           JointState(name=ARM[:5], position=[0.0] * 5),
           JointState(name=ARM, position=[0.0, 0.0, 0.0, -2.0, 0.0, 1.5, 7.8]))  # joint 7 beyond its limit
    for k, msg in enumerate(bad):  # one at a time, sent again every 50 ms until counted: the subscription keeps
        sent = [0.0]  # the newest message only, and the mock robot's valid joint states come at 100 Hz

        def rejected(msg=msg, k=k, sent=sent):
            if time.monotonic() - sent[0] > 0.05:
                rig.js_pub.publish(msg)
                sent[0] = time.monotonic()
            return rig.node.loop.state.rejected >= n0 + k + 1

        wait_until(rejected, what=f"rejected joint state {k + 1} of 3")
    n = len(rig.client.commands)
    wait_until(lambda: len(rig.client.commands) > n + 100, what="the loop keeps commanding")
    after = rig.client.wait_status(lambda s: True)
    assert after.mode == "tracking" and not after.holding, (after.mode, after.hold_reason)  # no hold, no stale
    assert np.isfinite(np.array([c[1] for c in rig.client.commands[-100:]])).all()


def test_stale_joint_states_stop_then_reseed(rig):
    rig.mock.set_parameters([Parameter("paused", value=True)])
    try:
        status = rig.client.wait_status(lambda s: s.mode == "stale", timeout=10.0, what="stale")
        assert "no valid joint states" in status.hold_reason and status.holding
        wait_until(lambda: rig.node.loop.mode == "stale", what="stale")
        n = len(rig.client.commands)
        T0 = rig.tcp_pose()
        rig.send_goal(pin.SE3(T0.rotation, T0.translation + [0.0, 0.0, 0.05]))  # refused: the pose is unknown
        wait_until(lambda: "stale" in rig.node._last_rejection, what="the goal refused")
        time.sleep(0.2)  # stale_behavior stop: nothing is published meanwhile
        assert len(rig.client.commands) == n
    finally:
        rig.mock.set_parameters([Parameter("paused", value=False)])
    rig.client.wait_status(lambda s: s.mode == "waiting_for_goal", timeout=10.0, what="re-seeded")
    wait_until(lambda: len(rig.client.commands) > n, what="commands again")
    first = np.array(rig.client.commands[n][1])
    assert np.abs(first - np.array([rig.mock.joint_positions()[j] for j in ARM])).max() < 1e-9


def test_runtime_parameters(rig):
    c = rig.client
    ok = c.set_parameter("tasks.ee.task_gain", 0.5)
    assert ok.successful and rig.node.loop.ctrl.tasks["ee"].task_gain == 0.5
    bad = c.set_parameter("tasks.ee.task_gain", 1.5)
    assert not bad.successful and "task_gain" in bad.reason
    bad = c.set_parameter("tasks.posture.weights", [1.0, 2.0])
    assert not bad.successful and "7 values" in bad.reason
    bad = c.set_parameter("state_feedback", "guessed")
    assert not bad.successful and "commanded, measured" in bad.reason
    assert c.set_parameter("tasks.ee.position_cost", [1.0, 1.0, 2.0]).successful
    assert np.allclose(rig.node.loop.ctrl.tasks["ee"].sqrt_weight[:3] ** 2, [1.0, 1.0, 2.0])
    assert c.set_parameter("tasks.posture.weights", [0.05] * 7).successful
    assert c.set_parameter("tasks.ee.position_cost", 2.0).successful
    assert np.allclose(rig.node.loop.ctrl.tasks["ee"].sqrt_weight[:3], math.sqrt(2.0))
    assert c.set_parameter("barriers.workspace.gain", 2.0).successful
    # an integer, as `ros2 param set` sends it; taken once the arm is at rest (refused while it moves)
    wait_until(lambda: c.set_parameter("control_rate_hz", 250).successful, timeout=60.0,
               what="rate change at rest (the increments decay to exactly 0: slower on a loaded machine)")
    assert rig.node.loop.dt == 1 / 250
    assert rig.node.loop.ctrl.tasks["ee"].task_gain == 0.5  # kept across the rebuild
    for name, value in (("control_rate_hz", 500.0), ("tasks.ee.task_gain", 1.0), ("tasks.ee.position_cost", 1.0),
                        ("barriers.workspace.gain", 5.0)):
        assert c.set_parameter(name, value).successful


def test_unknown_parameter_is_refused_with_the_valid_names(rig):
    """`ros2 param set /ik_controller tasks.ee.positon_cost 1.0` (a typo) over the parameter service: the
    answer names the parameter, the closest valid name and the valid ones under its prefix; nothing is
    declared and the real parameter keeps its value."""
    c = rig.client
    before = rig.node.get_parameter("tasks.ee.position_cost").value
    bad = c.set_parameter("tasks.ee.positon_cost", 1.0)
    assert not bad.successful
    assert bad.reason.startswith("tasks.ee.positon_cost: no such parameter"), bad.reason
    assert "did you mean 'tasks.ee.position_cost'" in bad.reason, bad.reason
    assert "valid under 'tasks.ee.': " in bad.reason and "orientation_cost" in bad.reason, bad.reason
    assert "weights" not in bad.reason, bad.reason  # the posture task's field: another prefix
    assert not rig.node.has_parameter("tasks.ee.positon_cost")
    assert rig.node.get_parameter("tasks.ee.position_cost").value == before
    bad = c.set_parameter("tasks.elbow.task_gain", 0.5)  # no such task: the tasks are listed
    assert not bad.successful and "valid under 'tasks.': " in bad.reason and "ee.task_gain" in bad.reason, bad.reason
    bad = c.set_parameter("controll_rate_hz", 100.0)
    assert not bad.successful and "did you mean 'control_rate_hz'" in bad.reason, bad.reason
    assert c.set_parameter("tasks.ee.task_gain", 1.0).successful  # declared names still work


def test_measured_feedback_and_diagnostics(rig):
    got = []
    sub = rig.client.node.create_subscription(DiagnosticArray, "/diagnostics", got.append, 10)
    try:
        assert rig.client.set_parameter("state_feedback", "measured").successful
        T0 = rig.tcp_pose()
        goal = pin.SE3(T0.rotation, T0.translation + [0.0, 0.05, 0.0])
        rig.send_goal(goal)
        wait_until(lambda: _errors(goal, rig.tcp_pose())[0] < 1e-3, timeout=10.0, what="converged (measured)")
        status = wait_until(lambda: next((s for a in got for s in a.status if rig.name in s.name), None),
                            what="diagnostics")
        values = {kv.key: kv.value for kv in status.values}
        # OK, or WARN for late ticks on a loaded machine; never ERROR or holding
        assert status.level in (b"\x00", b"\x01") and "holding" not in status.message, status.message
        assert "rate_hz (achieved)" in values and values["guard_cuts"] == "0"
        # panda.yaml's acceleration limit, with Franka's bounds from its joint_limits file (read here)
        limits = yaml.safe_load((CONFIG_DIR / "panda_joint_limits.yaml").read_text())["joint_limits"]
        a_max = [float(limits[j]["max_acceleration"]) for j in ARM]
        j_max = [float(limits[j]["max_jerk"]) for j in ARM]
        assert values["acceleration_bounds"] == f"a_max {a_max}, j_max {j_max}", values["acceleration_bounds"]
        assert values["acceleration_nonviable"] == "0"
        # the shipped loop_priority 50: granted where this machine permits it (asked of the kernel), else
        # refused and said so (test_loop_thread forces the refusal)
        expected = "SCHED_FIFO priority 50" if fifo_permitted(50) else "normal (SCHED_FIFO 50 refused)"
        assert values["loop_scheduling"] == expected, values
        # node.other_threads_priority null: one below, for every other thread of the node that runs Python
        other = values["other_threads_scheduling"]
        if fifo_permitted(49):
            assert other.startswith("SCHED_FIFO 49: executor, "), other
            threads = set(other.split(": ", 1)[1].split(", "))
            assert threads == {"executor", "reporting", "solve_ik", "solve_path"}, other
        else:
            assert other == "normal (SCHED_FIFO 49 refused)", other
    finally:
        rig.client.node.destroy_subscription(sub)
        rig.client.set_parameter("state_feedback", "commanded")


def test_solve_path_service_on_the_running_node(rig):
    """~/solve_path of the node (its config: panda.yaml with panda_joint_limits.yaml): the 0.5 m line
    at 1 cm from the default pose (explicit seed), answered while the loop runs, every waypoint reached
    (the mock's own model), no joint jump, within the file's velocity and acceleration limits all
    along joint_trajectory_controller's cubic between the points."""
    from pathlib import Path

    from roboplan_ik_interfaces.srv import SolvePath
    from roboplan_ik_ros.core.model.joint_limits_file import load_joint_limits
    from jtc_spline import limit_ratios

    limits = load_joint_limits(Path(__file__).resolve().parents[1] / "config" / "panda_joint_limits.yaml")
    v_max = np.array([limits.velocity[j] for j in ARM])
    a_max = np.array([limits.acceleration[j] for j in ARM])
    scene = rig.mock.scene
    q_seed = scene.named_configuration("default")
    seed = JointState(name=ARM, position=q_seed[:7].tolist())
    T0 = scene.frame_pose(q_seed, TIP)
    direction = np.array([0.3, 0.2, -0.3]) / np.linalg.norm([0.3, 0.2, -0.3])
    poses = [pin.SE3(T0.rotation, T0.translation + direction * 0.5 * k / 50) for k in range(51)]
    client = rig.client.node.create_client(SolvePath, f"/{rig.name}/solve_path")
    assert client.wait_for_service(timeout_sec=10.0)
    res = wait_future(client.call_async(SolvePath.Request(waypoints=[_goal(T) for T in poses], seed=seed,
                                                          max_joint_step=0.1, max_time=0.2)), timeout=30.0)
    assert res.success and res.fraction == 1.0 and res.error_code == SolvePath.Response.SUCCESS, res.message
    assert list(res.trajectory.joint_names) == ARM and len(res.trajectory.points) == 52
    positions = np.array([p.positions for p in res.trajectory.points])
    times = np.array([p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec for p in res.trajectory.points])
    assert np.allclose(positions[0], q_seed[:7]) and np.abs(np.diff(positions, axis=0)).max() <= 0.1 + 1e-9
    for row, T in zip(positions[1:], poses):
        q = scene.q_from_joint_positions(ARM, row.tolist(), q_seed)
        assert _errors(T, scene.frame_pose(q, TIP))[0] < 1e-3
    velocities = np.array([p.velocities for p in res.trajectory.points])
    assert not any(p.accelerations for p in res.trajectory.points)  # the controller runs its cubic
    r_v, r_a = limit_ratios(times, positions, velocities, None, v_max, a_max)
    assert np.all(r_v <= 1.0) and np.all(r_a <= 1.0), (r_v, r_a)
    rig.client.node.destroy_client(client)
