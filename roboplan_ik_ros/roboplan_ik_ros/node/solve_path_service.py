"""``~/solve_path`` (roboplan_ik_interfaces/srv/SolvePath): SimpleIK.solve_path along a list of poses,
answered with a JointTrajectory timed by
:func:`~roboplan_ik_ros.core.simple_ik.path_timing.time_parametrize` (positions and velocities: the
cubic a joint_trajectory_controller plays stays within the scene's ``v_max`` and ``a_max``, from
robot.joint_limits_file; joints without an acceleration limit are timed by velocity only and the
response's message names them).

Served beside ``~/solve_ik`` without blocking it: a path is many solves chained on each other's
answers (seconds for a long one), so it has a thread ("solve_path") and a helper node
(``<node name>_solve_path``, same context and namespace, no parameter services) of its own, and
solves on a **private scene and SimpleIK**: built from the node's WorkerSpec (the same robot, limits
and options as the control loop's scene; 0.01-0.03 s for the Panda) when the thread starts, before
it serves. Nothing of the node's scene is used while solving, so no lock is held: ``~/solve_ik``
requests, the control loop and ``~/collision_objects`` go on meanwhile.

Obstacles: the node's scene holds the world's obstacles (config and ``~/collision_objects``). At the
start of each request, if they changed since the previous one (``collision_version``), the private
scene takes a copy of them, read under the node's ``scene_lock`` (the lock every change holds), so
each path is solved against the obstacles the node held when its request started. If they changed
while it was being solved, the private scene takes them again and the solved waypoints are checked
against them: the answer stops before the first one in collision (NO_SOLUTION, with the fraction
and a message saying why). So an answer is clear of the obstacles the node held when it was made.

Without a WorkerSpec (a SolveIKServer built by hand, as some tests do), the path is solved with the
node's own SimpleIK under ``scene_lock``, still in this thread: ``~/solve_ik`` then waits only
when it too solves in-process (its worker not ready).

GIL: the solve runs in this process's interpreter, as ``~/solve_ik``'s in-process fallback does; a
long path takes the interpreter lock from the control loop's thread in turns (the loop's ticks
are run by a thread of their own with its own OS priority; see loop_thread).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from roboplan_ik_interfaces.srv import SolvePath
from trajectory_msgs.msg import JointTrajectoryPoint

from ..core.errors import InvalidInputError
from ..core.simple_ik.path import PathResult
from ..core.simple_ik.path_timing import time_parametrize
from ..core.simple_ik.solver import SimpleIK
from ..core.simple_ik.worker import WorkerSpec
from .goal_frames import GoalError
from .threaded_service import ServiceThread
from .solve_ik_service import GOAL_CODES, MAX_TIME_LIMIT, NotReady, SolveIKServer, private_resolver

MAX_PATH_WAYPOINTS = 10000  # most waypoints a ~/solve_path request may have
#: ~/solve_path times the path within the limits times this: time_from_start has a 1 ns resolution,
#: whose rounding changes a segment's duration by up to 0.5 ns (1e-7 of a 5 ms segment), its cubic's
#: acceleration by twice that relative
TIMING_MARGIN = 1.0 - 1e-5
THREAD_NAME = "solve_path"  # the service thread, also its OS name (top -H)


class SolvePathServer:
    """Serves ``~/solve_path`` of ``owner.node`` from its own thread; ``owner`` (the node's
    :class:`~.solve_ik_service.SolveIKServer`) lends, through its public members, its node, scene,
    resolver, solver (the options; the in-process fallback), ``scene_lock``, ``guard``,
    ``on_thread_start``, ``wait_for_gap``, ``quaternion_tolerance``, the default seed (``seed_q``), the
    joint maps (``joint_map``), the counters and error answers (``count_call``, ``count_failure``,
    ``answer_error``) and its shutdown flag (``closing``). With ``worker_spec``, solves on a private
    scene built from it (module docstring). :meth:`destroy` ends the thread and the helper node."""

    def __init__(self, owner: SolveIKServer, worker_spec: WorkerSpec | None) -> None:
        self.owner = owner
        self.node = owner.node
        self.scene = owner.scene  # the node's: its obstacles are the truth
        self.spec = worker_spec
        self.busy = False  # a request is being solved (diagnostics)
        self.calls = 0
        self._resolver = private_resolver(owner.resolver)  # used in this thread only
        self._solver: SimpleIK | None = None  # private (built in this thread), None: the owner's
        self._obstacles_version = -1  # the node scene's collision_version last copied
        self._build_error = ""
        self._service_thread = ServiceThread(self.node, SolvePath, "solve_path", self._on_request, THREAD_NAME,
                                     before_spin=self._build_solver, guard=owner.guard,
                                     on_start=owner.on_thread_start)
        self.service_name = self._service_thread.service_name

    # ------------------------------------------------------------------ thread
    def _build_solver(self) -> None:
        """The private SimpleIK, built in the service thread before it serves (module docstring)."""
        if self.spec is not None:
            try:
                self._solver = SimpleIK(self.spec.build_scene(), self.spec.options)
            except Exception as exc:  # not expected: the node's scene was built from the same spec
                self._build_error = f"building the private scene of ~/solve_path failed: {type(exc).__name__}: {exc}"
                self.node.get_logger().error(f"solve_path: {self._build_error}")

    def destroy(self, timeout: float) -> None:
        """End the thread (after the request in flight, at most ``timeout``), the service and the
        helper node."""
        self._service_thread.destroy(timeout)

    # ------------------------------------------------------------------ solving
    def _sync_obstacles(self, solver: SimpleIK) -> None:
        """The private scene's obstacles := the node scene's, if they changed (module docstring)."""
        with self.owner.scene_lock:
            version = self.scene.collision_version
            if version == self._obstacles_version:
                return
            obstacles = list(self.scene.obstacles.values())  # immutable records: safe to use unlocked
        scene = solver.scene
        scene.clear_obstacles()
        for obstacle in obstacles:
            scene.add_obstacle(obstacle)  # checked when the node's scene took it
        self._obstacles_version = version

    def solve(self, tip_frame, poses, q_seed, max_joint_step, options):
        """SimpleIK.solve_path on the private scene (after syncing its obstacles), else on the node's
        SimpleIK under ``scene_lock``."""
        if self._build_error:
            raise NotReady(self._build_error)
        solver = self._solver
        if solver is None:
            with self.owner.scene_lock:
                return self.owner.solver.solve_path(tip_frame, poses, q_seed, max_joint_step, options)
        self._sync_obstacles(solver)
        result = solver.solve_path(tip_frame, poses, q_seed, max_joint_step, options)
        return self.recheck(result, len(poses)) if options.check_collisions else result

    def recheck(self, result: PathResult, n_poses: int) -> PathResult:
        """If the node's obstacles changed while ``result`` was being solved: take them, and cut the
        path before its first waypoint that collides with them (module docstring)."""
        solver, before = self._solver, self._obstacles_version
        self._sync_obstacles(solver)
        if self._obstacles_version == before:
            return result
        for k, q in enumerate(result.q_path):
            if solver.scene.in_collision(q):
                return PathResult(False, k / n_poses, result.q_path[:k],
                                  f"waypoint {k} of {n_poses}: in collision with the obstacles as they changed "
                                  f"while the path was being solved ({len(self.scene.obstacles)} now); the path "
                                  f"stops before it")
        return result

    # ------------------------------------------------------------------ callback (this thread)
    def _on_request(self, request: SolvePath.Request, response: SolvePath.Response) -> SolvePath.Response:
        self.calls += 1
        self.owner.count_call()
        self.busy = True
        try:
            if self.owner.wait_for_gap is not None:
                self.owner.wait_for_gap()
            try:
                tip_frame, poses, q_seed, max_joint_step, options = self.parse(request)
                if self.owner.closing:
                    raise NotReady("the node is shutting down")
                result = self.solve(tip_frame, poses, q_seed, max_joint_step, options)
            except GoalError as exc:
                return self.owner.answer_error(response, GOAL_CODES[exc.code], str(exc))
            except NotReady as exc:
                return self.owner.answer_error(response, SolvePath.Response.NOT_READY, str(exc))
            except InvalidInputError as exc:
                return self.owner.answer_error(response, SolvePath.Response.INVALID_REQUEST, str(exc))
            response.success = bool(result.success)
            response.fraction = float(result.fraction)
            response.error_code = SolvePath.Response.SUCCESS if result.success else SolvePath.Response.NO_SOLUTION
            response.message = result.message
            if result.q_path:
                try:
                    self._fill_trajectory(response, options.group_name, q_seed, result.q_path)
                except InvalidInputError as exc:  # e.g. a joint without a velocity limit in the URDF
                    response.success = False
                    return self.owner.answer_error(response, SolvePath.Response.INVALID_REQUEST, f"timing the path: {exc}")
            if not result.success:
                self.owner.count_failure()
            return response
        finally:
            self.busy = False

    def _fill_trajectory(self, response: SolvePath.Response, group_name: str, q_seed, q_path) -> None:
        joints = self.owner.joint_map(group_name)
        positions = np.array([joints.from_q(q, np.empty(len(joints.names))) for q in [q_seed] + q_path])
        if joints.has_continuous:  # from_q wraps angles to (-pi, pi]: a path through pi must not jump 2 pi
            positions[:, joints.cont_src] = np.unwrap(positions[:, joints.cont_src], axis=0)
        a_max = self.scene.a_max[joints.v_idx]
        timed = time_parametrize(positions, self.scene.v_max[joints.v_idx] * TIMING_MARGIN, a_max * TIMING_MARGIN)
        trajectory = response.trajectory
        trajectory.header.stamp = self.node.get_clock().now().to_msg()
        trajectory.joint_names = list(joints.names)
        for t, p, v in zip(timed.times, positions, timed.velocities):
            # positions and velocities, no accelerations: joint_trajectory_controller then runs the
            # cubic that time_parametrize keeps within the limits (path_timing's docstring)
            point = JointTrajectoryPoint(positions=p.tolist(), velocities=v.tolist())
            point.time_from_start.sec = int(t)
            point.time_from_start.nanosec = int(round((t - int(t)) * 1e9))
            if point.time_from_start.nanosec >= 1_000_000_000:
                point.time_from_start.sec += 1
                point.time_from_start.nanosec -= 1_000_000_000
            trajectory.points.append(point)
        unbounded = [n for n, a in zip(joints.names, a_max) if not np.isfinite(a)]
        if unbounded:
            response.message += (f"; timed within the velocity limits only for {unbounded}: no acceleration "
                                 f"limit configured (robot.joint_limits_file)")

    def parse(self, request: SolvePath.Request):
        """(tip_frame, poses, q_seed, max_joint_step, options) of a ~/solve_path request, or raise
        GoalError / InvalidInputError / NotReady."""
        owner = self.owner
        base = owner.solver.options
        group_name = request.group_name or base.group_name
        group = self.scene.group(group_name)  # raises listing the valid groups
        q_seed = owner.seed_q(request.seed, group)
        if not request.waypoints or len(request.waypoints) > MAX_PATH_WAYPOINTS:
            raise InvalidInputError(f"waypoints: expected 1 to {MAX_PATH_WAYPOINTS} poses, got {len(request.waypoints)}")
        tip_frame = request.waypoints[0].tip_frame
        try:
            self.scene.frame_id(tip_frame)
        except InvalidInputError as exc:
            raise GoalError(f"waypoints[0].tip_frame: {exc}", GoalError.UNKNOWN_FRAME) from exc
        poses = []
        for k, w in enumerate(request.waypoints):
            if w.tip_frame != tip_frame:
                raise InvalidInputError(f"waypoints[{k}].tip_frame: expected {tip_frame!r} like waypoints[0] (one "
                                        f"tip along a path), got {w.tip_frame!r}")
            poses.append(self._resolver.resolve(w.pose, q_seed, owner.quaternion_tolerance, f"waypoints[{k}].pose"))
        if not (math.isfinite(request.max_joint_step) and request.max_joint_step > 0.0):
            raise InvalidInputError(f"max_joint_step: expected a finite value > 0 [rad or m] (largest motion of "
                                    f"any joint between consecutive waypoints), got {request.max_joint_step}")
        if not (math.isfinite(request.max_time) and request.max_time <= MAX_TIME_LIMIT):
            raise InvalidInputError(f"max_time: expected <= {MAX_TIME_LIMIT:g} s per waypoint (<= 0: the configured "
                                    f"{base.max_time:g} s), got {request.max_time}")
        options = dataclasses.replace(base, group_name=group_name,
                                      max_time=request.max_time if request.max_time > 0 else base.max_time)
        options.validate()
        return tip_frame, poses, q_seed, float(request.max_joint_step), options
