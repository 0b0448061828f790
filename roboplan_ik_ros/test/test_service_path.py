"""``~/solve_path`` (roboplan_ik_interfaces/srv/SolvePath) over DDS, served by SolveIKServer beside
``~/solve_ik`` (Panda with its shipped joint_limits.yaml): a 0.5 m straight line at 1 cm spacing is
solved without a joint jump and its trajectory stays within the velocity and acceleration limits
all along joint_trajectory_controller's cubic between the points (jtc_spline, dense samples), and
every point reaches its waypoint by independent FK; a path
through an unreachable pose stops there and says how far it got; bad requests are named.

No test asserts a time or a rate: the timeouts only bound how long something may take to happen.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from conftest import Spinner, unique_name, wait_future
from models import robot
from roboplan_ik_ros.core import Obstacle, Scene, SimpleIK, SimpleIKOptions
from roboplan_ik_ros.core.model.joint_limits_file import load_joint_limits
from jtc_spline import limit_ratios

TIP = "panda_hand_tcp"
LIMITS = Path(__file__).resolve().parents[1] / "config" / "panda_joint_limits.yaml"
MAX_JOINT_STEP = 0.1  # [rad]


class PathSetup:
    def __init__(self) -> None:
        import rclpy

        from roboplan_ik_interfaces.srv import SolvePath
        from roboplan_ik_ros.node.goal_frames import FrameResolver
        from roboplan_ik_ros.node.message_conversions import root_frame_name
        from roboplan_ik_ros.core.simple_ik.worker import WorkerSpec
        from roboplan_ik_ros.node.solve_path_service import SolvePathServer
        from roboplan_ik_ros.node.solve_ik_service import SolveIKServer

        r = robot("panda")
        limits = load_joint_limits(LIMITS)
        self.scene = Scene(r.urdf_xml, r.srdf_xml, r.package_paths, acceleration_limits=limits.acceleration)
        self.check_scene = Scene(r.urdf_xml, r.srdf_xml, r.package_paths)  # independent FK
        self.q0 = self.scene.named_configuration("default")
        self.node = rclpy.create_node(unique_name("solve_path_only"))
        resolver = FrameResolver(self.scene, root_frame_name(self.scene))
        ik = SimpleIK(self.scene, SimpleIKOptions(group_name="arm", max_time=0.05, seed=1))
        self.srv = SolveIKServer(self.node, self.scene, ik, resolver, 1e-3, lambda: self.q0.copy())
        self.paths = SolvePathServer(self.srv, WorkerSpec(r.urdf_xml, r.srdf_xml, tuple(r.package_paths),
                                                          options=ik.options))
        self.client_node = rclpy.create_node(unique_name("solve_path_client"))
        self.spinner = Spinner(self.client_node)
        self.client = self.client_node.create_client(SolvePath, self.paths.service_name)
        assert self.client.wait_for_service(timeout_sec=10.0)
        group = self.scene.group("arm")
        self.v_max = self.scene.v_max[group.v_indices]
        self.a_max = np.array([limits.acceleration[j] for j in group.joint_names])

    def call(self, request, timeout: float = 60.0):
        return wait_future(self.client.call_async(request), timeout=timeout)

    def close(self) -> None:
        self.paths.destroy(5.0)
        self.srv.destroy()
        self.spinner.stop()
        self.client_node.destroy_node()
        self.node.destroy_node()


@pytest.fixture(scope="module")
def setup(ros):
    s = PathSetup()
    yield s
    s.close()


def _request(poses, tip=TIP, **kw):
    from roboplan_ik_interfaces.msg import PoseGoal
    from roboplan_ik_interfaces.srv import SolvePath
    from roboplan_ik_ros.node.message_conversions import pose_from_se3

    waypoints = []
    for T in poses:
        g = PoseGoal(tip_frame=tip)
        g.pose.header.frame_id = "panda_link0"
        pose_from_se3(T, g.pose.pose)
        waypoints.append(g)
    return SolvePath.Request(waypoints=waypoints, **({"max_joint_step": MAX_JOINT_STEP} | kw))


def _line(T0: pin.SE3, direction, length: float, spacing: float) -> list[pin.SE3]:
    n = int(round(length / spacing))
    d = np.asarray(direction, dtype=float) / np.linalg.norm(direction)
    return [pin.SE3(T0.rotation, T0.translation + d * (length * k / n)) for k in range(n + 1)]


def _check_trajectory(setup: PathSetup, res, poses) -> np.ndarray:
    """Points: the seed, then one per solved waypoint, each reaching it (independent FK); times
    increasing from 0; no joint jump; within v_max and a_max by finite differences, rest to rest."""
    traj = res.trajectory
    group = setup.scene.group("arm")
    assert traj.joint_names == list(group.joint_names)
    times = np.array([p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec for p in traj.points])
    positions = np.array([p.positions for p in traj.points])
    assert times[0] == 0.0 and np.all(np.diff(times) > 0.0)
    assert np.allclose(positions[0], setup.q0[group.q_indices])
    assert np.abs(np.diff(positions, axis=0)).max() <= MAX_JOINT_STEP + 1e-9  # no joint jump
    for row, T in zip(positions[1:], poses):
        q = setup.q0.copy()
        q[group.q_indices] = row
        err = pin.log6(T.actInv(setup.check_scene.frame_pose(q, TIP))).vector
        assert np.linalg.norm(err[:3]) < 1e-3 and np.linalg.norm(err[3:]) < 1e-2
    # as joint_trajectory_controller plays it: positions + velocities (no accelerations) -> its cubic
    assert all(len(p.velocities) == len(group.joint_names) and not p.accelerations for p in traj.points)
    velocities = np.array([p.velocities for p in traj.points])
    r_v, r_a = limit_ratios(times, positions, velocities, None, setup.v_max, setup.a_max)
    assert np.all(r_v <= 1.0) and np.all(r_a <= 1.0), (r_v, r_a)
    assert max(r_v.max(), r_a.max()) > 0.9  # and not slower than needed: a limit is (nearly) reached
    assert np.all(velocities[[0, -1]] == 0.0)
    return positions


def test_straight_line_at_1cm_without_joint_jump_within_limits(setup):
    from roboplan_ik_interfaces.srv import SolvePath

    poses = _line(setup.scene.frame_pose(setup.q0, TIP), [0.3, 0.2, -0.3], 0.5, 0.01)
    res = setup.call(_request(poses))
    assert res.success and res.error_code == SolvePath.Response.SUCCESS and res.fraction == 1.0, res.message
    assert len(res.trajectory.points) == len(poses) + 1 == 52
    _check_trajectory(setup, res, poses)


def test_path_through_an_unreachable_pose_stops_with_the_fraction(setup):
    from roboplan_ik_interfaces.srv import SolvePath

    T0 = setup.scene.frame_pose(setup.q0, TIP)
    poses = _line(T0, [0.0, 0.0, -1.0], 0.2, 0.01)
    poses[12] = pin.SE3(T0.rotation, np.array([2.0, 0.0, 0.5]))  # 2 m out: beyond the Panda's reach
    res = setup.call(_request(poses))
    assert not res.success and res.error_code == SolvePath.Response.NO_SOLUTION
    assert res.fraction == pytest.approx(12 / len(poses))
    assert "waypoint 12 of 21" in res.message
    assert len(res.trajectory.points) == 13  # the seed and the 12 waypoints before it, timed
    _check_trajectory(setup, res, poses[:12])


@pytest.mark.parametrize("kw, words", [
    (dict(max_joint_step=0.0), "max_joint_step"),
    (dict(max_joint_step=float("nan")), "max_joint_step"),
    (dict(max_time=100.0), "max_time"),
    (dict(group_name="nope"), "nope"),
])
def test_bad_requests_are_named(setup, kw, words):
    from roboplan_ik_interfaces.srv import SolvePath

    res = setup.call(_request([setup.scene.frame_pose(setup.q0, TIP)], **kw))
    assert not res.success and res.error_code == SolvePath.Response.INVALID_REQUEST
    assert words in res.message and not res.trajectory.points


def test_mixed_tip_frames_and_unknown_frames(setup):
    from roboplan_ik_interfaces.srv import SolvePath

    T = setup.scene.frame_pose(setup.q0, TIP)
    req = _request([T, T])
    req.waypoints[1].tip_frame = "panda_link7"
    res = setup.call(req)
    assert res.error_code == SolvePath.Response.INVALID_REQUEST and "waypoints[1].tip_frame" in res.message
    res = setup.call(_request([T], tip="no_such_frame"))
    assert res.error_code == SolvePath.Response.UNKNOWN_FRAME and "waypoints[0].tip_frame" in res.message
    res = setup.call(_request([]))
    assert res.error_code == SolvePath.Response.INVALID_REQUEST and "waypoints" in res.message


def test_the_path_is_checked_against_the_nodes_obstacles(setup):
    """~/solve_path solves on a private scene: it still checks the obstacles the node's scene holds
    when the request starts. A plate across a line straight down stops the path before it; once
    the plate is removed, the same request is solved to the end."""
    from roboplan_ik_interfaces.srv import SolvePath

    T0 = setup.scene.frame_pose(setup.q0, TIP)
    poses = _line(T0, [0.0, 0.0, -1.0], 0.2, 0.01)
    below = T0.translation + [0.0, 0.0, -0.12]
    plate = Obstacle("plate", "box", (0.3, 0.3, 0.02), position=tuple(below))
    with setup.srv.scene_lock:
        setup.scene.add_obstacle(plate)
    try:
        res = setup.call(_request(poses))
        assert not res.success and res.error_code == SolvePath.Response.NO_SOLUTION, res.message
        assert 0.0 < res.fraction < 12 / len(poses), res.message  # stopped above the plate
        check = Scene(robot("panda").urdf_xml, robot("panda").srdf_xml, robot("panda").package_paths)
        check.add_obstacle(plate)
        group = setup.scene.group("arm")
        for p in res.trajectory.points:  # every point it did return is clear of the plate
            q = setup.q0.copy()
            q[group.q_indices] = p.positions
            assert not check.in_collision(q)
    finally:
        with setup.srv.scene_lock:
            setup.scene.remove_obstacle("plate")
    res = setup.call(_request(poses))
    assert res.success and res.fraction == 1.0, res.message


def test_obstacles_changed_while_solving_cut_the_path(setup):
    """The re-check after a solve: a path solved without the plate, then the plate is added to the
    node's scene (as ~/collision_objects would, during the solve): the answer stops before the
    first waypoint that collides with it; without a change the result is kept as it is."""
    from conftest import wait_until

    paths = setup.paths
    wait_until(lambda: paths._solver is not None, timeout=30.0, what="the private SimpleIK")
    T0 = setup.scene.frame_pose(setup.q0, TIP)
    poses = _line(T0, [0.0, 0.0, -1.0], 0.2, 0.01)
    options = paths._solver.options
    res = paths.solve(TIP, poses, setup.q0, MAX_JOINT_STEP, options)
    assert res.success
    assert paths.recheck(res, len(poses)) is res  # nothing changed
    plate = Obstacle("plate", "box", (0.3, 0.3, 0.02), position=tuple(T0.translation + [0.0, 0.0, -0.12]))
    with setup.srv.scene_lock:
        setup.scene.add_obstacle(plate)
    try:
        cut = paths.recheck(res, len(poses))
        assert not cut.success and 0 < len(cut.q_path) < 12 and cut.fraction == len(cut.q_path) / len(poses)
        assert "changed while the path was being solved" in cut.message
        check = Scene(robot("panda").urdf_xml, robot("panda").srdf_xml, robot("panda").package_paths)
        check.add_obstacle(plate)
        assert not any(check.in_collision(q) for q in cut.q_path)
        assert check.in_collision(res.q_path[len(cut.q_path)])  # cut right before the first collision
    finally:
        with setup.srv.scene_lock:
            setup.scene.remove_obstacle("plate")
