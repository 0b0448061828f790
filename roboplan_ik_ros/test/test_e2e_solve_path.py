"""``~/solve_path`` does not block ``~/solve_ik``, end to end: ``ik_controller`` (shipped panda.yaml,
diagnostics at 50 Hz) and the mock Panda run as separate processes; from here a path request is sent
whose last waypoint is out of reach (2 m away), with ``simple_ik.max_restarts`` so large that its
``max_time`` (PATH_MAX_TIME per waypoint) is what ends it: the path is being solved for that long
whatever the machine's speed. Once the node's /diagnostics say a path is being solved
(``solve_path_busy: true``), a ~/solve_ik request is sent. Its answer must arrive while the path is
still being solved (the node's /diagnostics stamped after the answer arrived still say busy:
ordering on one clock, not durations), and be right (the goal reached, by this test's own FK); then
the path is answered, stopped at its last waypoint, and every command the node published meanwhile
passes the harness's safety checks.

Before (one service thread for both): the ~/solve_ik request waited in its queue until the path was
done, so it was answered after the path's solve ended. With a thread each it is answered during the
path, unless it waits for a CPU for all of PATH_MAX_TIME (the generous timeout of this test). No
assertion is about a duration.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pinocchio as pin

from e2e import ARM, ROOT_FRAME, TIP, panda, pose_errors, report, rig, write_config  # noqa: F401 (fixture)

WAIT = 120.0
N_REACHABLE = 1000  # waypoints before the unreachable last one
PATH_MAX_TIME = 5.0  # [s] per waypoint: the unreachable one uses all of it


def _diagnostic(msgs, node_name: str, key: str):
    """The latest value of ``key`` in the node's /diagnostics status, or None."""
    for array in reversed(list(msgs)):
        for status in array.status:
            if node_name in status.name:
                for kv in status.values:
                    if kv.key == key:
                        return kv.value
    return None


def _busy_after(msgs, node_name: str, t_wall: float) -> list[str]:
    """The node's solve_path_busy values in the /diagnostics stamped after ``t_wall`` (the node's
    clock: this machine's time.time()), in the order received."""
    out = []
    for array in list(msgs):
        if array.header.stamp.sec + 1e-9 * array.header.stamp.nanosec <= t_wall:
            continue
        for status in array.status:
            if node_name in status.name:
                out += [kv.value for kv in status.values if kv.key == "solve_path_busy"]
    return out


def test_a_solve_ik_call_made_during_a_long_path_is_answered_during_it(rig):  # noqa: F811
    from diagnostic_msgs.msg import DiagnosticArray
    from roboplan_ik_interfaces.msg import PoseGoal
    from roboplan_ik_interfaces.srv import SolveIK, SolvePath
    from sensor_msgs.msg import JointState

    rig.start_mock()

    def restarts_until_max_time(data) -> None:  # an unreachable waypoint ends by its max_time, not a count
        data.setdefault("simple_ik", {})["max_restarts"] = 1_000_000_000

    rig.start_ik(write_config(rig.log_dir, node={"diagnostics_rate_hz": 50.0}, edit=restarts_until_max_time))
    rig.activate()
    name = rig.ik.name
    diagnostics = []
    sub = rig.node.create_subscription(DiagnosticArray, "/diagnostics", diagnostics.append, 100)
    path_client = rig.node.create_client(SolvePath, f"/{name}/solve_path")
    ik_client = rig.node.create_client(SolveIK, f"/{name}/solve_ik")
    rig.wait(lambda: path_client.service_is_ready() and ik_client.service_is_ready(), WAIT, "the two services")
    rig.wait(lambda: _diagnostic(diagnostics, name, "solve_path_busy") == "false", WAIT, "diagnostics: no path yet")

    robot = panda()
    q_seed = rig.measured()
    T0 = robot.fk(q_seed)

    def pose_goal(T: pin.SE3):
        g = PoseGoal(tip_frame=TIP)
        g.pose.header.frame_id = ROOT_FRAME
        quat = pin.Quaternion(T.rotation)
        g.pose.pose.position.x, g.pose.pose.position.y, g.pose.pose.position.z = T.translation.tolist()
        g.pose.pose.orientation.x, g.pose.pose.orientation.y = quat.x, quat.y
        g.pose.pose.orientation.z, g.pose.pose.orientation.w = quat.z, quat.w
        return g

    # 10 strokes of 10 cm up and down at 1 mm (every waypoint reachable), then one 2 m away
    z = 0.05 * (1.0 - np.cos(np.linspace(0.0, 2.0 * np.pi * 10, N_REACHABLE)))
    waypoints = [pose_goal(pin.SE3(T0.rotation, T0.translation + [0.0, 0.0, -dz])) for dz in z]
    waypoints.append(pose_goal(pin.SE3(T0.rotation, T0.translation + [2.0, 0.0, 0.0])))
    seed = JointState(name=list(ARM), position=q_seed.tolist())
    # a reachable goal 5 cm beside the start, seeded at the start
    goal_T = pin.SE3(T0.rotation, T0.translation + [0.0, 0.05, 0.0])
    goal = pose_goal(goal_T)

    path_done = threading.Event()
    t_path = time.perf_counter()
    path_future = path_client.call_async(SolvePath.Request(waypoints=waypoints, seed=seed, max_joint_step=0.1,
                                                           max_time=PATH_MAX_TIME))
    path_future.add_done_callback(lambda _: path_done.set())
    rig.wait(lambda: _diagnostic(diagnostics, name, "solve_path_busy") == "true" or path_done.is_set(), WAIT,
             "diagnostics: a path being solved")
    if path_done.is_set():
        raise AssertionError(f"the path was answered before it was seen busy: {path_future.result().message}")
    ik_done, ik_answered = threading.Event(), []
    t_ik = time.perf_counter()
    ik_future = ik_client.call_async(SolveIK.Request(goals=[goal], seed=seed, max_time=1.0))
    ik_future.add_done_callback(lambda _: (ik_answered.append(time.time()), ik_done.set()))
    rig.wait(ik_done.is_set, WAIT, "the ~/solve_ik answer")
    ik_seconds = time.perf_counter() - t_ik
    ik = ik_future.result()
    assert ik.success and ik.error_code == SolveIK.Response.SUCCESS, ik.message
    q = np.array([ik.solution.position[list(ik.solution.name).index(j)] for j in ARM])
    assert pose_errors(goal_T, robot.fk(q))[0] < 1e-3

    rig.wait(path_done.is_set, WAIT, "the path's answer")
    res = path_future.result()
    assert not res.success and res.error_code == SolvePath.Response.NO_SOLUTION, res.message
    assert res.fraction == N_REACHABLE / (N_REACHABLE + 1) and len(res.trajectory.points) == N_REACHABLE + 1, \
        (res.fraction, len(res.trajectory.points), res.message)
    assert f"waypoint {N_REACHABLE} of {N_REACHABLE + 1}" in res.message, res.message
    rig.wait(lambda: _diagnostic(diagnostics, name, "solve_path_busy") == "false", WAIT, "diagnostics: path done")
    # The ~/solve_ik answer was here while the path was still being solved: the node reported it busy in
    # two /diagnostics stamped after the answer arrived (the second read the flag after the first's stamp).
    after = _busy_after(diagnostics, name, ik_answered[0])
    report("solve_ik during a long solve_path", path_s=time.perf_counter() - t_path, solve_ik_s=ik_seconds,
           solve_ik_sent_after_s=t_ik - t_path, busy_after_the_answer=after[:3])
    assert after[:2] == ["true", "true"], f"~/solve_ik was answered after the path (busy after the answer: {after[:3]})"
    rig.node.destroy_subscription(sub)
    rig.check()
