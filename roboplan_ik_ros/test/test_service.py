"""SolveIKServer (``~/solve_ik``) without the controller: served from its own thread and helper node
(the node's executor does no per-request work), named after the node (namespace, remappings),
private kinematics data for goal frames, NOT_READY without a state, a burst of requests all
answered, and destroy() releasing the thread and the service.

No test asserts a time or a rate: the timeouts only bound how long something may take to happen.
"""

from __future__ import annotations

import threading

import numpy as np
import pinocchio as pin
import pytest

from conftest import Spinner, unique_name, wait_future, wait_until
from models import scene
from roboplan_ik_ros.core import SimpleIK, SimpleIKOptions

TIP = "panda_hand_tcp"


def _request(T: pin.SE3, frame: str = "panda_link0", **kw):
    from roboplan_ik_interfaces.msg import PoseGoal
    from roboplan_ik_interfaces.srv import SolveIK
    from roboplan_ik_ros.node.message_conversions import pose_from_se3

    g = PoseGoal(tip_frame=TIP)
    g.pose.header.frame_id = frame
    pose_from_se3(T, g.pose.pose)
    return SolveIK.Request(goals=[g], **kw)


class Setup:
    """A SolveIKServer (in-process solver, no worker) on a node that no executor spins, and a
    client node that a Spinner spins."""

    def __init__(self, namespace: str | None = None, cli_args=None, current_q=None, name: str = "",
                 wait_for_gap=None, next_tick_in=None, server_class=None) -> None:
        import rclpy

        from roboplan_ik_interfaces.srv import SolveIK
        from roboplan_ik_ros.node.goal_frames import FrameResolver
        from roboplan_ik_ros.node.message_conversions import root_frame_name
        from roboplan_ik_ros.node.solve_ik_service import SolveIKServer

        self.scene = scene("panda")
        self.q0 = self.scene.neutral()
        self.threads: list[str] = []

        def default_current_q():
            self.threads.append(threading.current_thread().name)
            return self.q0.copy()

        self.node = rclpy.create_node(name or unique_name("solve_ik_only"), namespace=namespace, cli_args=cli_args)
        self.resolver = FrameResolver(self.scene, root_frame_name(self.scene))
        self.srv = (server_class or SolveIKServer)(
            self.node, self.scene, SimpleIK(self.scene, SimpleIKOptions(group_name="arm")), self.resolver, 1e-3,
            current_q or default_current_q, wait_for_gap=wait_for_gap, next_tick_in=next_tick_in)
        self.client_node = rclpy.create_node(unique_name("solve_ik_client"))
        self.spinner = Spinner(self.client_node)
        self.client = self.client_node.create_client(SolveIK, self.srv.service_name)
        assert self.client.wait_for_service(timeout_sec=10.0)

    def call(self, request, timeout: float = 20.0):
        return wait_future(self.client.call_async(request), timeout=timeout)

    def close(self) -> None:
        self.srv.destroy()
        self.spinner.stop()
        self.client_node.destroy_node()
        self.node.destroy_node()


@pytest.fixture
def setup(ros):
    s = Setup()
    yield s
    s.close()


def _reachable(setup: Setup) -> pin.SE3:
    return setup.scene.frame_pose(setup.q0, TIP) * pin.SE3(pin.exp3(np.array([0.0, 0.2, 0.0])),
                                                            np.array([0.03, -0.05, 0.02]))


def test_served_from_its_own_thread_while_the_node_is_not_spun(setup):
    from roboplan_ik_interfaces.srv import SolveIK
    from roboplan_ik_ros.node.solve_ik_service import THREAD_NAME

    res = setup.call(_request(_reachable(setup), max_time=0.5))
    assert res.success and res.error_code == SolveIK.Response.SUCCESS, res.message
    assert len(res.solution.position) == 7
    assert setup.threads and set(setup.threads) == {THREAD_NAME}  # the default seed was read there
    assert setup.srv.calls == 1 and setup.srv.failures == 0


def test_a_subclass_solve_answers_the_parsed_requests(ros):
    """The seam the benchmarks' variants use (IKControllerNode.solve_ik_server_class): a subclass's solve gets the
    parsed goals, seed and options, and its result is the answer, through the shipped handle_request."""
    from roboplan_ik_interfaces.srv import SolveIK
    from roboplan_ik_ros.core.simple_ik import IKResult
    from roboplan_ik_ros.node.solve_ik_service import SolveIKServer

    seen = []

    class SeedAnswer(SolveIKServer):
        def solve(self, goals, q_seed, options, inline=None):
            seen.append(([g.tip_frame for g in goals], q_seed.copy(), options.group_name))
            return IKResult(True, q_seed, np.zeros(len(goals)), np.zeros(len(goals)), message="the seed")

    s = Setup(server_class=SeedAnswer)
    try:
        res = s.call(_request(_reachable(s), max_time=0.5))
    finally:
        s.close()
    assert res.success and res.error_code == SolveIK.Response.SUCCESS and res.message == "the seed"
    assert len(seen) == 1 and seen[0][0] == [TIP] and seen[0][2] == "arm"
    np.testing.assert_array_equal(res.solution.position, seen[0][1][s.scene.group("arm").q_indices])


def test_a_burst_of_requests_is_answered_one_by_one(setup):
    from roboplan_ik_interfaces.srv import SolveIK

    far = pin.SE3(np.eye(3), np.array([3.0, 0.0, 0.5]))  # unreachable: each uses its whole max_time
    futures = [setup.client.call_async(_request(far, max_time=0.05, fast_return=SolveIK.Request.OPTION_FALSE))
               for _ in range(5)]
    futures.append(setup.client.call_async(_request(_reachable(setup), max_time=0.5)))
    results = [wait_future(f, timeout=30.0) for f in futures]
    assert [r.error_code for r in results[:5]] == [SolveIK.Response.NO_SOLUTION] * 5
    assert results[5].success, results[5].message
    assert setup.srv.calls == 6


def test_not_ready_without_a_state(ros):
    from roboplan_ik_interfaces.srv import SolveIK

    s = Setup(current_q=lambda: None)
    try:
        res = s.call(_request(s.scene.frame_pose(s.q0, TIP)))
        assert res.error_code == SolveIK.Response.NOT_READY and "joint_states" in res.message, res.message
    finally:
        s.close()


def test_the_service_name_follows_the_node_namespace_and_remappings(ros):
    s = Setup(namespace="/robot_ns")
    try:
        assert s.srv.service_name == f"/robot_ns/{s.node.get_name()}/solve_ik"
        assert s.call(_request(_reachable(s), max_time=0.5)).success
    finally:
        s.close()
    name = unique_name("solve_ik_only")
    s = Setup(name=name, cli_args=["--ros-args", "-r", f"/{name}/solve_ik:=/elsewhere/{name}_ik"])
    try:
        assert s.srv.service_name == f"/elsewhere/{name}_ik"
        assert s.call(_request(_reachable(s), max_time=0.5)).success
    finally:
        s.close()


def test_private_resolver_has_its_own_kinematics_data(setup):
    from roboplan_ik_ros.node.solve_ik_service import private_resolver

    r = private_resolver(setup.resolver)
    assert r.scene.data is not setup.resolver.scene.data
    assert r.scene.model is setup.resolver.scene.model
    assert (r.root_frame, r.tf_buffer, r.tf_timeout) == (setup.resolver.root_frame, setup.resolver.tf_buffer,
                                                         setup.resolver.tf_timeout)
    q = setup.scene.neutral()
    q[:7] += 0.3
    before = setup.resolver.scene.data.oMf[setup.scene.frame_id("panda_link4")].copy()
    T = r.T_world_frame("panda_link4", q)  # writes only its own data
    assert setup.resolver.scene.data.oMf[setup.scene.frame_id("panda_link4")].isApprox(before)
    assert T.isApprox(setup.scene.frame_pose(q, "panda_link4"))
    # a request stamped in a robot frame resolves through the private data, as through the shared one
    res = setup.call(_request(r.T_world_frame("panda_link4", setup.q0).inverse() * _reachable(setup),
                              frame="panda_link4", max_time=0.5))
    assert res.success, res.message


def test_destroy_ends_the_thread_and_withdraws_the_service(ros):
    s = Setup()
    thread = s.srv._service_thread.thread
    assert thread.is_alive()
    s.srv.destroy()
    assert not thread.is_alive()
    wait_until(lambda: not s.client.service_is_ready(), timeout=10.0, what="the service to disappear")
    s.srv.destroy()  # idempotent
    s.close()


def test_each_request_waits_for_the_gap_between_ticks_before_its_work(ros):
    """With wait_for_gap, a request's parsing (current_q is read there) starts only after the gap
    call returned: the node passes one that returns once a control tick has ended."""
    order: list[str] = []
    tick_ended = threading.Event()

    def wait_for_gap():
        order.append("wait")
        assert tick_ended.wait(10.0)  # the "loop" below ends a tick
        order.append("gap")

    s = Setup(wait_for_gap=wait_for_gap, current_q=lambda: (order.append("parse"), s.q0.copy())[1])
    try:
        T = s.scene.frame_pose(s.q0, TIP)
        future = s.client.call_async(_request(T))
        assert wait_until(lambda: order == ["wait"], timeout=10.0)  # held before any work
        tick_ended.set()
        response = wait_future(future, timeout=20.0)
        assert response.success, response.message
        assert order == ["wait", "gap", "parse"]
    finally:
        s.close()


def test_a_request_skips_the_gap_wait_when_the_next_tick_is_far_enough(ros):
    """With next_tick_in, the wait for the gap happens only when the next tick is due within gap_need
    (the expected in-thread work; or a tick runs: 0): otherwise the request's work fits before it."""
    waits: list[float] = []
    next_tick = [1.0]
    s = Setup(wait_for_gap=lambda: waits.append(next_tick[0]), next_tick_in=lambda: next_tick[0])
    try:
        GAP_NEED = s.srv.gap_need
        T = s.scene.frame_pose(s.q0, TIP)
        for due in (float("inf"), 1.0, 2.0 * GAP_NEED, 0.5 * GAP_NEED, 0.0, -0.001):
            next_tick[0] = due
            assert s.call(_request(T)).success
        assert waits == [0.5 * GAP_NEED, 0.0, -0.001]
        assert s.srv.gap_waits == 3
    finally:
        s.close()


class FakeWorker:
    """Stands in for IKWorker: a state, and solve() answering a fixed result (recording its calls)."""

    def __init__(self, state: str, result=None) -> None:
        self.state, self.result, self.calls = state, result, []

    def solve(self, goals, q_seed, options):
        from roboplan_ik_ros.core.simple_ik.worker import READY, WorkerError

        self.calls.append(options)
        if self.state != READY:
            raise WorkerError(f"the IK worker is {self.state}")
        return self.result

    def stop(self) -> None:
        pass


def test_an_easy_goal_is_solved_in_the_service_thread_and_the_rest_by_the_worker(setup):
    """With the worker ready, the seeded attempt (at most INLINE_MAX_ITERS iterations, no restart) runs in
    the service thread: its answer when it converges; otherwise, and with fast_return false, the worker
    solves the request with the request's own options. While the worker restarts nothing is solved in
    the node's process (NOT_READY)."""
    from roboplan_ik_interfaces.srv import SolveIK
    from roboplan_ik_ros.core.simple_ik import IKResult
    from roboplan_ik_ros.core.simple_ik.worker import READY, RESTARTING

    marker = IKResult(False, setup.q0.copy(), np.zeros(1), np.zeros(1), message="from the worker")
    worker = FakeWorker(READY, marker)
    setup.srv.worker = worker
    res = setup.call(_request(_reachable(setup), max_time=0.5))
    assert res.success and res.message == "solved" and not worker.calls
    assert setup.srv.inline_solves == 1
    # an answer of the seeded attempt is the worker's: the same solver from the same seed
    goals, q_seed, options = setup.srv.parse(_request(_reachable(setup), max_time=0.5))
    direct = SimpleIK(setup.scene, setup.srv.solver.options).solve(goals, q_seed, options)
    assert np.allclose(np.array(res.solution.position), direct.q[:7], atol=1e-12)

    far = pin.SE3(np.eye(3), np.array([3.0, 0.0, 0.5]))  # unreachable: the attempt fails, the worker answers
    res = setup.call(_request(far, max_time=0.5))
    assert res.message == "from the worker" and len(worker.calls) == 1
    assert worker.calls[0].max_time == 0.5 and worker.calls[0].max_restarts == setup.srv.solver.options.max_restarts
    res = setup.call(_request(_reachable(setup), fast_return=SolveIK.Request.OPTION_FALSE))
    assert res.message == "from the worker" and len(worker.calls) == 2 and not worker.calls[1].fast_return
    assert setup.srv.inline_solves == 1

    worker.state = RESTARTING
    res = setup.call(_request(_reachable(setup), max_time=0.5))
    assert res.error_code == SolveIK.Response.NOT_READY and "restarting" in res.message, res.message
    assert setup.srv.inline_solves == 1 and len(worker.calls) == 3


def test_repeated_overrides_reuse_their_checked_options_and_bad_ones_are_still_refused(setup):
    from roboplan_ik_interfaces.srv import SolveIK

    T = _reachable(setup)
    _, _, a = setup.srv.parse(_request(T, max_time=0.5))
    _, _, b = setup.srv.parse(_request(T, max_time=0.5))
    _, _, c = setup.srv.parse(_request(T, max_time=0.25))
    assert a is b and c is not a and (a.max_time, c.max_time) == (0.5, 0.25)
    for bad in ({"max_time": float("nan")}, {"max_time": 11.0}, {"max_deviation": float("nan")},
                {"joint_limit_gain": -2.0}, {"method": "nope"}):
        for _ in range(2):  # refused again, not served from the cache
            res = setup.call(_request(T, **bad))
            assert res.error_code == SolveIK.Response.INVALID_REQUEST, (bad, res.message)


def test_the_gap_need_follows_the_timed_in_thread_work_within_its_range(setup):
    from roboplan_ik_ros.node.solve_ik_service import _WORK_EVERY, GAP_NEED, GAP_NEED_RANGE

    assert setup.srv.gap_need == GAP_NEED
    for _ in range(_WORK_EVERY):
        setup.srv._timed_work(10.0)  # a very slow machine: capped
    assert setup.srv.gap_need == GAP_NEED_RANGE[1]
    for _ in range(4 * _WORK_EVERY):
        setup.srv._timed_work(0.0)  # faster than the floor
    assert setup.srv.gap_need == GAP_NEED_RANGE[0]
    for _ in range(4 * _WORK_EVERY):
        setup.srv._timed_work(0.0004)
    assert setup.srv.gap_need == 1.25 * 0.0004
