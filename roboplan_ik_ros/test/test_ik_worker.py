"""IKWorker (SimpleIK in a child process): same answers as in-process SimpleIK, crash detection and
restart, a wedged child killed, stop and parent death leave no process, and ``~/solve_ik`` through
SolveIKServer with a worker (NOT_READY on a crash, then recovery).

No test asserts a time or a rate: the timeouts only bound how long something may take to happen.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace

import numpy as np
import pinocchio as pin
import pytest

from conftest import wait_until
from models import robot, scene
from roboplan_ik_ros.core import FrameGoal, InvalidInputError, SimpleIK, SimpleIKOptions
from roboplan_ik_ros.core.simple_ik.worker import FAILED, READY, RESTARTING, STOPPED, IKWorker, WorkerError, WorkerSpec

TIP = "panda_hand_tcp"
POS_TOL, ROT_TOL = 1e-3, 1e-3
MAX_TIME = 0.5  # [s] generous: correctness, not speed
READY_TIMEOUT = 60.0  # [s] a child interpreter importing pinocchio on a loaded machine


def panda_spec(**options) -> WorkerSpec:
    r = robot("panda")
    return WorkerSpec(r.urdf_xml, r.srdf_xml, r.package_paths,
                      options=SimpleIKOptions(group_name="arm", seed=1234, **options))


def child_pids() -> dict[int, str]:
    """pid -> command line of this process's live (not zombie) children."""
    me, out = os.getpid(), {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) ": state, ppid, ...
        if int(fields[1]) == me and fields[0] != "Z":
            out[int(entry)] = cmdline
    return out


def worker_children() -> set[int]:
    """Live children of this process that are multiprocessing-spawned interpreters (not the
    resource tracker)."""
    return {p for p, cmd in child_pids().items() if "spawn_main" in cmd}


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def reached(q: np.ndarray, goals: list[FrameGoal]) -> bool:
    """Independent check: FK of its own pinocchio model, limits and collisions of the scene."""
    model = pin.buildModelFromXML(robot("panda").urdf_xml)
    data = model.createData()
    pin.framesForwardKinematics(model, data, q)
    for g in goals:
        M = data.oMf[model.getFrameId(g.tip_frame)]
        T = g.T_world_tip
        if np.linalg.norm(M.translation - T.translation) > POS_TOL:
            return False
        if np.linalg.norm(pin.log3(T.rotation.T @ M.rotation)) > ROT_TOL:
            return False
    s = scene("panda")
    return s.within_limits(q) and not s.in_collision(q)


@pytest.fixture(scope="module")
def worker():
    w = IKWorker(panda_spec())
    assert w.wait_ready(READY_TIMEOUT), w.reason
    yield w
    w.stop()


def goal_set(n: int = 12) -> tuple[np.ndarray, list[list[FrameGoal]]]:
    """A seed and n single-goal problems: FK of random in-limit collision-free configurations, half of
    them near the seed (the seeded attempt converges: no random restart involved), plus one pair of
    goals at once."""
    s = scene("panda")
    rng = np.random.default_rng(7)
    group = s.group("arm")
    q0 = s.named_configuration("default")
    problems = []
    while len(problems) < n:
        if len(problems) % 2:
            q = s.random_configuration(rng, group, q0)
        else:
            q = q0.copy()
            q[group.bounded_q] += rng.uniform(-0.2, 0.2, len(group.bounded_q))
            s.clip_to_limits(q, group)
        if not s.in_collision(q):
            problems.append([FrameGoal(TIP, s.frame_pose(q, TIP))])
    q = s.random_configuration(rng, group, q0)
    problems.append([FrameGoal(TIP, s.frame_pose(q, TIP)), FrameGoal("panda_link7", s.frame_pose(q, "panda_link7"))])
    return q0, problems


def test_worker_solves_like_in_process(worker):
    local = SimpleIK(scene("panda"), replace(worker.spec.options))
    q0, problems = goal_set()
    opt = replace(worker.spec.options, max_time=MAX_TIME)
    for k, goals in enumerate(problems):
        mine, theirs = local.solve(goals, q0, opt), worker.solve(goals, q0, opt)
        assert theirs.success == mine.success, (k, theirs.message, mine.message)
        assert theirs.success, (k, theirs.message)
        assert reached(theirs.q, goals), k
        assert theirs.position_errors.shape == theirs.orientation_errors.shape == (len(goals),)
        assert (theirs.position_errors <= POS_TOL).all() and (theirs.orientation_errors <= ROT_TOL).all()
        assert theirs.message == "solved"
        if k % 2 == 0 and k < len(problems) - 1:  # near the seed: the same deterministic descent
            assert theirs.restarts == mine.restarts == 0
            np.testing.assert_allclose(theirs.q, mine.q, atol=1e-9)


def test_unreachable_goal_fails_like_in_process(worker):
    s = scene("panda")
    q0 = s.neutral()
    goals = [FrameGoal(TIP, pin.SE3(np.eye(3), np.array([3.0, 0.0, 0.5])))]
    opt = replace(worker.spec.options, max_time=0.02, fast_return=False)  # searches until max_time
    mine, theirs = SimpleIK(s, replace(worker.spec.options)).solve(goals, q0, opt), worker.solve(goals, q0, opt)
    assert not theirs.success and not mine.success
    assert "no solution" in theirs.message and "max_time 0.02 s reached" in theirs.message, theirs.message
    np.testing.assert_array_equal(theirs.q, q0)  # the seed, as in-process
    assert theirs.position_errors[0] > 2.0


def test_goal_forms_and_bad_input(worker):
    s = scene("panda")
    q0 = s.neutral()
    T = s.frame_pose(q0, TIP)
    assert worker.solve([(TIP, T)], q0).success  # (name, pin.SE3)
    assert worker.solve([(TIP, T.homogeneous)], q0).success  # (name, 4x4)
    assert worker.solve(FrameGoal(TIP, T), q0).success  # a single FrameGoal
    with pytest.raises(InvalidInputError, match="unknown frame 'nope'"):
        worker.solve([("nope", T)], q0)
    with pytest.raises(InvalidInputError, match="4x4"):
        worker.solve([(TIP, np.eye(3))], q0)
    with pytest.raises(InvalidInputError, match="q_seed"):
        worker.solve([(TIP, T)], q0[:3])
    with pytest.raises(InvalidInputError, match="max_time"):
        worker.solve([(TIP, T)], q0, replace(worker.spec.options, max_time=-1.0))
    with pytest.raises(InvalidInputError, match="goals\\[0\\]"):
        worker.solve([42], q0)
    assert worker.ready and worker.crashes == 0  # bad input does not hurt the worker


def test_worker_solves_objectives_like_in_process(worker):
    """PointGoal, AxisGoal, a relative FrameGoal with weights and standing objectives in the options reach
    the child intact: the same answers as in-process (same seed: the same descent), checked by FK."""
    from roboplan_ik_ros.core.simple_ik import AxisGoal, PointGoal

    s = scene("panda")
    q0 = s.named_configuration("default")
    q_goal = q0.copy()
    q_goal[:7] += [0.15, -0.1, 0.1, 0.2, -0.1, 0.15, 0.2]
    T_goal = s.frame_pose(q_goal, TIP)
    down = [0.0, 0.0, -1.0]
    point = PointGoal(TIP, [0.0, 0.0, 0.0], T_goal.translation, weights=[1.0, 1.0, 0.5])
    axis = AxisGoal(TIP, [0.0, 0.0, 1.0], T_goal.rotation[:, 2])
    rel = FrameGoal(TIP, s.frame_pose(q_goal, "panda_link3").actInv(T_goal), weights=[2, 2, 2, 1, 1, 1],
                    relative_to="panda_link3")
    standing = replace(worker.spec.options, max_time=MAX_TIME, objectives=[AxisGoal(TIP, [0, 0, 1], down)])
    opt = replace(worker.spec.options, max_time=MAX_TIME)
    local = SimpleIK(scene("panda"), replace(worker.spec.options))
    for goals, o in (([point, axis], opt), ([rel], opt), ([PointGoal(TIP, [0, 0, 0], [0.45, 0.1, 0.3])], standing)):
        mine, theirs = local.solve(goals, q0, o), worker.solve(goals, q0, o)
        assert theirs.success and mine.success, (theirs.message, mine.message)
        if mine.restarts == 0:  # the seeded attempt: deterministic, whatever the restart RNG's state
            np.testing.assert_allclose(theirs.q, mine.q, atol=1e-9)
        assert len(theirs.position_errors) == len(goals) + len(o.objectives)
    M = s.frame_pose(theirs.q, TIP)
    assert np.linalg.norm(M.translation - [0.45, 0.1, 0.3]) <= POS_TOL
    assert np.degrees(np.arccos(np.clip(M.rotation[:, 2] @ down, -1, 1))) <= np.degrees(ROT_TOL)
    with pytest.raises(InvalidInputError, match=r"objectives\[0\].link_frame: unknown frame 'nope'"):
        worker.solve([point], q0, replace(opt, objectives=[AxisGoal("nope", [0, 0, 1], down)]))
    assert worker.ready and worker.crashes == 0


def test_requests_from_several_threads_are_serialized(worker):
    q0, problems = goal_set(6)
    results, errors = {}, []

    def run(k):
        try:
            results[k] = worker.solve(problems[k], q0, replace(worker.spec.options, max_time=MAX_TIME))
        except Exception as exc:  # pragma: no cover (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(len(problems))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30.0)
    assert not errors, errors
    assert sorted(results) == list(range(len(problems)))
    for k, res in results.items():  # each answer belongs to its own request
        assert res.success and reached(res.q, problems[k]), k


def test_crash_is_detected_and_recovered():
    events = []
    w = IKWorker(panda_spec(), on_event=lambda level, msg: events.append((level, msg)))
    try:
        assert w.wait_ready(READY_TIMEOUT), w.reason
        s = scene("panda")
        q0 = s.neutral()
        T = s.frame_pose(q0, TIP)
        first = w.pid
        # killed while idle: noticed without a request, then restarted
        os.kill(first, signal.SIGKILL)
        wait_until(lambda: w.crashes == 1, timeout=10.0, what="the crash to be noticed")
        assert w.wait_ready(READY_TIMEOUT), w.reason
        assert w.pid != first and not alive(first)
        assert any(level == "warning" and "SIGKILL" in msg and "restarting" in msg for level, msg in events), events
        assert w.solve([(TIP, T)], q0).success
        # killed while solving a long request: that request fails at once, naming the cause
        second = w.pid
        far = pin.SE3(np.eye(3), np.array([3.0, 0.0, 0.5]))  # unreachable: uses all of max_time
        outcome = {}

        def request():
            try:
                outcome["result"] = w.solve([(TIP, far)], q0, replace(w.spec.options, max_time=30.0,
                                                                         fast_return=False))
            except WorkerError as exc:
                outcome["error"] = str(exc)

        sent_before = w._next_id
        # no third child within this test: the state after the second crash is RESTARTING whatever the
        # machine's speed (the monitor reads the interval when it waits to restart)
        w.restart_interval = 3600.0
        t = threading.Thread(target=request)
        t.start()
        # kill only once the request has taken this child (on a loaded machine the thread may start
        # late: killed earlier, the monitor could restart the worker and the request would go to the
        # new child); from there the request must fail, whether the child died before or after it read it
        wait_until(lambda: w._next_id > sent_before, timeout=10.0, what="the request to be sent")
        time.sleep(0.05)
        os.kill(second, signal.SIGKILL)
        t.join(timeout=10.0)  # well before the request's max_time
        assert not t.is_alive()
        assert "died" in outcome.get("error", "") and "restarting" in outcome["error"], outcome
        wait_until(lambda: w.crashes == 2, timeout=10.0, what="the second crash to be noticed")
        assert w.state == RESTARTING, w.state
        with pytest.raises(WorkerError, match="restarting"):  # requests fail until a new child is ready
            w.solve([(TIP, T)], q0)
        assert not alive(second)
    finally:
        w.stop()


def test_a_request_stalled_before_its_poll_sees_its_own_child_die(monkeypatch):
    """The request's thread takes its pipe's fd number, then loses the CPU before it polls it (as on a
    loaded machine) while the child is killed: the request still fails with "died", never waits on
    the next child's pipe. (The monitor thread used to close the dead child's pipe at once: the next
    child's pipe got the same fd number, and the request waited on it for all of max_time.)"""
    import multiprocessing.connection as mpc

    w = IKWorker(panda_spec(), restart_interval=0.0)
    real_wait = mpc.wait
    stalled = threading.Event()

    def stalled_wait(object_list, timeout=None):
        if threading.current_thread().name != "stalled_request":
            return real_wait(object_list, timeout)
        by_fd = {obj.fileno(): obj for obj in object_list}  # the numbers, taken as wait() takes them
        stalled.set()
        wait_until(lambda: w.crashes == 1, timeout=30.0, what="the crash to be noticed")
        # off the CPU until the next child is up, if the dead one's pipe is closed meanwhile (else 3 s)
        end = time.monotonic() + 3.0
        while time.monotonic() < end and not (w.state == READY and w.pid != victim):
            time.sleep(0.01)
        return [by_fd[fd] for fd in real_wait(list(by_fd), timeout)]

    try:
        assert w.wait_ready(READY_TIMEOUT), w.reason
        s = scene("panda")
        q0 = s.neutral()
        victim = w.pid
        outcome = {}

        def request():
            try:
                outcome["result"] = w.solve([(TIP, pin.SE3(np.eye(3), np.array([3.0, 0.0, 0.5])))], q0,
                                            replace(w.spec.options, max_time=60.0, fast_return=False))
            except WorkerError as exc:
                outcome["error"] = str(exc)

        monkeypatch.setattr(mpc, "wait", stalled_wait)
        t = threading.Thread(target=request, name="stalled_request")
        t.start()
        assert stalled.wait(30.0), "the request never polled"
        os.kill(victim, signal.SIGKILL)
        t.join(timeout=30.0)  # well before the request's max_time
        assert not t.is_alive(), "the request waits on another pipe than its child's"
        assert "died" in outcome.get("error", "") and str(victim) in outcome["error"], outcome
        monkeypatch.setattr(mpc, "wait", real_wait)
        assert w.wait_ready(READY_TIMEOUT), w.reason
        assert w.solve([(TIP, s.frame_pose(q0, TIP))], q0).success
    finally:
        monkeypatch.setattr(mpc, "wait", real_wait)
        w.stop()


def test_wedged_worker_is_killed_and_restarted():
    w = IKWorker(panda_spec(), answer_grace=0.2)
    try:
        assert w.wait_ready(READY_TIMEOUT), w.reason
        s = scene("panda")
        q0 = s.neutral()
        T = s.frame_pose(q0, TIP)
        wedged = w.pid
        os.kill(wedged, signal.SIGSTOP)  # alive but never answers
        with pytest.raises(WorkerError, match="did not answer within max_time"):
            w.solve([(TIP, T)], q0, replace(w.spec.options, max_time=0.05))
        wait_until(lambda: not alive(wedged), timeout=10.0, what="the wedged child to be killed")
        assert w.wait_ready(READY_TIMEOUT), w.reason
        assert w.pid != wedged
        assert w.solve([(TIP, T)], q0).success
    finally:
        w.stop()


def test_stop_leaves_no_child_and_later_requests_fail_cleanly():
    before = worker_children()  # the module's shared worker
    w = IKWorker(panda_spec())
    assert w.wait_ready(READY_TIMEOUT), w.reason
    pid = w.pid
    assert pid in child_pids()
    w.stop()
    assert w.state == STOPPED and not alive(pid)
    assert worker_children() <= before, child_pids()
    s = scene("panda")
    q0 = s.neutral()
    with pytest.raises(WorkerError, match="stopped"):
        w.solve([(TIP, s.frame_pose(q0, TIP))], q0)
    w.stop()  # idempotent
    assert w.state == STOPPED


def test_stop_while_starting_leaves_no_child():
    before = worker_children()
    w = IKWorker(panda_spec())
    wait_until(lambda: w.pid is not None, timeout=10.0, what="the child to be spawned")
    w.stop()  # most likely still importing
    assert w.state == STOPPED
    assert worker_children() <= before, child_pids()
    assert not w.wait_ready(1.0)


def test_start_failure_is_reported():
    before = worker_children()
    events = []
    w = IKWorker(WorkerSpec("<robot name='broken'><link name='a'/>"), max_start_failures=1,
                 on_event=lambda level, msg: events.append((level, msg)))
    try:
        assert not w.wait_ready(READY_TIMEOUT)
        assert w.state == FAILED and "cannot parse URDF" in w.reason, w.reason
        assert events and events[-1][0] == "error"
        with pytest.raises(WorkerError, match="could not start"):
            w.solve([(TIP, np.eye(4))], np.zeros(9))
    finally:
        w.stop()
    assert worker_children() <= before, child_pids()


PARENT = """
import sys, time
from roboplan_ik_ros.core.model.robots import load_example_robot
from roboplan_ik_ros.core.simple_ik import SimpleIKOptions
from roboplan_ik_ros.core.simple_ik.worker import IKWorker, WorkerSpec
r = load_example_robot("panda")
w = IKWorker(WorkerSpec(r.urdf_xml, r.srdf_xml, r.package_paths, options=SimpleIKOptions(group_name="arm")))
assert w.wait_ready(60.0), w.reason
print(w.pid, flush=True)
time.sleep(600)
"""


def test_worker_ends_when_its_parent_dies():
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True)
    try:
        line = parent.stdout.readline()
        assert line.strip().isdigit(), f"the parent did not report a worker pid: {line!r}"
        child = int(line)
        assert alive(child)
        parent.kill()  # no cleanup at all in the parent
        parent.wait(timeout=10.0)
        wait_until(lambda: not alive(child), timeout=10.0, what="the orphaned worker to exit")
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


# --------------------------------------------------------------------- ~/solve_ik with a worker
@pytest.fixture
def server(ros):
    import rclpy

    from conftest import Spinner, unique_name
    from roboplan_ik_ros.node.goal_frames import FrameResolver
    from roboplan_ik_ros.node.message_conversions import root_frame_name
    from roboplan_ik_ros.node.solve_ik_service import SolveIKServer

    s = scene("panda")
    q0 = s.neutral()
    node = rclpy.create_node(unique_name("solve_ik_worker"))
    srv = SolveIKServer(node, s, SimpleIK(s, SimpleIKOptions(group_name="arm")),
                        FrameResolver(s, root_frame_name(s)), 1e-3, lambda: q0.copy(), worker_spec=panda_spec())
    spinner = Spinner(node)
    yield srv, q0
    srv.destroy()
    spinner.stop()
    node.destroy_node()


def test_service_with_worker_answers_and_reports_a_crash(server):
    import rclpy

    from conftest import Spinner, unique_name, wait_future
    from roboplan_ik_interfaces.msg import PoseGoal
    from roboplan_ik_interfaces.srv import SolveIK
    from roboplan_ik_ros.node.message_conversions import pose_from_se3

    srv, q0 = server
    s = scene("panda")
    T = s.frame_pose(q0, TIP) * pin.SE3(pin.exp3(np.array([0.0, 0.2, 0.0])), np.array([0.03, -0.05, 0.02]))
    client_node = rclpy.create_node(unique_name("solve_ik_client"))
    spinner = Spinner(client_node)
    try:
        client = client_node.create_client(SolveIK, f"{srv.node.get_fully_qualified_name()}/solve_ik")
        assert client.wait_for_service(timeout_sec=10.0)

        def call(target: pin.SE3, **kw) -> SolveIK.Response:
            g = PoseGoal(tip_frame=TIP)
            g.pose.header.frame_id = "panda_link0"
            pose_from_se3(target, g.pose.pose)
            return wait_future(client.call_async(SolveIK.Request(goals=[g], **kw)), timeout=20.0)

        res = call(T, max_time=MAX_TIME)  # in-process or in the worker, whichever is ready: same answer
        assert res.success and res.error_code == SolveIK.Response.SUCCESS, res.message
        assert srv.worker.wait_ready(READY_TIMEOUT), srv.worker.reason
        fallbacks = srv.fallback_solves
        res = call(T, max_time=MAX_TIME)
        assert res.success and srv.fallback_solves == fallbacks, res.message  # solved by the worker
        q = s.q_from_joint_positions(list(res.solution.name), list(res.solution.position), q0)
        assert reached(q, [FrameGoal(TIP, T)])
        res = call(pin.SE3(np.eye(3), np.array([3.0, 0.0, 0.5])), max_time=0.02)
        assert res.error_code == SolveIK.Response.NO_SOLUTION and "no solution" in res.message, res.message
        # the worker dies while solving: NOT_READY naming the cause, then it is back
        future = client.call_async(SolveIK.Request(goals=[], max_time=0.0))  # INVALID_REQUEST, parsed in the node
        assert wait_future(future).error_code == SolveIK.Response.INVALID_REQUEST
        pid = srv.worker.pid
        g = PoseGoal(tip_frame=TIP)
        g.pose.header.frame_id = "panda_link0"
        pose_from_se3(pin.SE3(np.eye(3), np.array([3.0, 0.0, 0.5])), g.pose.pose)
        sent_before = srv.worker._next_id
        slow = client.call_async(SolveIK.Request(goals=[g], max_time=8.0,
                                                 fast_return=SolveIK.Request.OPTION_FALSE))
        # killed once the request has taken this child (killed before, on a loaded machine the service
        # thread could reach the worker after the next child is up, which would solve it for 8 s)
        wait_until(lambda: srv.worker._next_id > sent_before, timeout=10.0, what="the slow request to reach the worker")
        time.sleep(0.05)
        os.kill(pid, signal.SIGKILL)
        # the cause in the answer, not its time: a death noticed only at the deadline would answer "did
        # not answer within max_time 8 s + ...: killed"; a generous timeout beyond that deadline
        res = wait_future(slow, timeout=60.0)
        assert res.error_code == SolveIK.Response.NOT_READY and "died" in res.message, res.message
        assert f"pid {pid}" in res.message and "did not answer within max_time" not in res.message, res.message
        assert srv.worker.wait_ready(READY_TIMEOUT), srv.worker.reason
        res = call(T, max_time=MAX_TIME)
        assert res.success, res.message
    finally:
        spinner.stop()
        client_node.destroy_node()
    worker_pid = srv.worker.pid
    srv.destroy()
    assert srv.worker.state == STOPPED and not alive(worker_pid)


def test_worker_checks_the_obstacles_it_was_given():
    """set_obstacles reaches the child with the next request: a goal seeded through a table is
    answered with a configuration clear of it (or no solution), never one through it; after the
    table is taken away again, the same request returns the seed's configuration."""
    from roboplan_ik_ros.core import Obstacle, Scene

    table = Obstacle("table", "box", (0.6, 1.2, 0.04), position=(0.6, 0.0, 0.18))
    probe = Scene(robot("panda").urdf_xml, robot("panda").srdf_xml, robot("panda").package_paths)
    bare = scene("panda")
    rng = np.random.default_rng(4)
    while True:  # a configuration whose elbow goes through the table, TCP above it
        q = bare.random_configuration(rng)
        probe.clear_obstacles()
        free = not probe.in_collision(q)
        probe.add_obstacle(table)
        if free and probe.in_collision(q) and bare.frame_pose(q, TIP).translation[2] > 0.28:
            break
    goal = [FrameGoal(TIP, bare.frame_pose(q, TIP))]
    with IKWorker(panda_spec(max_time=MAX_TIME)) as worker:
        assert worker.wait_ready(READY_TIMEOUT), worker.reason
        worker.set_obstacles([table])
        result = worker.solve(goal, q)
        assert not (result.success and probe.in_collision(result.q)), "the worker ignored the table"
        worker.set_obstacles([])
        result = worker.solve(goal, q)
        assert result.success and probe.in_collision(result.q)  # without obstacles: the seed itself
