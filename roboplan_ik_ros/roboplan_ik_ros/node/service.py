"""``~/solve_ik``: one-shot SimpleIK (roboplan_ik_interfaces/srv/SolveIK) next to the control loop.

The request is checked and its goals resolved in the executor thread (fast, and the frame
resolver's kinematics data is single-threaded). The solve itself is handed to a single pool
thread that the async callback awaits, so the executor keeps running meanwhile and requests are
solved one at a time. With a ``worker_spec``, that thread only ships the request to an
:class:`~roboplan_ik_ros.core.ik_worker.IKWorker` process and waits on its pipe (GIL released):
SimpleIK's Python iterations no longer compete with the control loop's thread for the GIL.

Worker policy:

* until the worker is ready for the first time (it starts in the background: 0.3-0.65 s after
  configure on the test VM, up to ~1 s under load; configure itself is not slowed), and if it
  could not start at all, requests are solved in-process by ``solver`` (as without a worker): the
  service answers at once after configure, at the cost of sharing the GIL for that first second;
* a request in flight when the worker dies (or is killed as wedged) gets NOT_READY with the cause;
  until the restarted worker is ready, requests get NOT_READY (not the in-process fallback: a
  request that crashed the worker must not be retried inside the node's process).

Measured (ik_controller, 500 Hz timer, mock Panda, 2-vCPU VM; 20 requests/s whose goals are
unreachable, so that each uses its whole 5 ms max_time, the worst case): tick duration p99
0.28-0.49 ms idle, 1.76-2.32 ms solving in a thread, 0.53-0.74 ms with the worker. But the worker
needs a CPU of its own: on two vCPUs, late tick starts were not fewer (on-time share 99.98-100 %
idle, 97.7-98.4 % thread, 97.0-97.5 % worker; in a bare 500 Hz Python loop, an unrelated process
burning 5 ms of CPU every 50 ms delayed it as much as the worker did). With reachable goals
(0.1-0.3 ms per solve) every variant stays near the idle figures.

The service has its own (reentrant) callback group for executors that run groups in parallel.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import math
from collections.abc import Callable

import numpy as np
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.task import Future

from roboplan_ik_interfaces.srv import SolveIK

from ..core.errors import InvalidInputError
from ..core.ik_worker import FAILED, STARTING, IKWorker, WorkerError, WorkerSpec
from ..core.scene import Scene
from ..core.simple_ik import FrameGoal, IKResult, SimpleIK, SimpleIKOptions
from .goals import FrameResolver, GoalError
from .rosbridge import JointMap

MAX_TIME_LIMIT = 10.0  # [s] longest max_time a request may ask for

_GOAL_CODES = {
    GoalError.INVALID: SolveIK.Response.INVALID_REQUEST,
    GoalError.UNKNOWN_FRAME: SolveIK.Response.UNKNOWN_FRAME,
    GoalError.TRANSFORM_FAILED: SolveIK.Response.TRANSFORM_FAILED,
}


class NotReady(Exception):
    """The node cannot answer yet (no joint state for a default seed, shutting down)."""


class SolveIKServer:
    """Creates ``~/solve_ik`` on ``node``; ``current_q()`` returns the node's current full q or None.

    ``solver`` gives the default options (and solves in-process without a worker, see the module
    docstring). ``worker_spec`` (the same scene and options as ``solver``): solve in an
    :class:`IKWorker` process, started here in the background and stopped by :meth:`destroy` or
    :meth:`stop_worker`.
    """

    def __init__(self, node, scene: Scene, solver: SimpleIK, resolver: FrameResolver,
                 quaternion_tolerance: float, current_q: Callable[[], np.ndarray | None],
                 worker_spec: WorkerSpec | None = None) -> None:
        self.node = node
        self.scene = scene
        self.solver = solver
        self.resolver = resolver
        self.quaternion_tolerance = quaternion_tolerance
        self.current_q = current_q
        self.calls = 0
        self.failures = 0
        self.fallback_solves = 0  # solved in-process because the worker was not ready yet
        self._closing = False
        self._destroyed = False
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="solve_ik")
        self.worker: IKWorker | None = None
        self.service = node.create_service(SolveIK, "~/solve_ik", self._on_request,
                                           callback_group=ReentrantCallbackGroup())
        if worker_spec is not None:  # returns at once: the process starts in the background
            self.worker = IKWorker(worker_spec, on_event=self._on_worker_event)

    def stop_worker(self) -> None:
        """Stop the worker process (idempotent); a request in flight gets NOT_READY."""
        if self.worker is not None:
            self.worker.stop()

    def destroy(self) -> None:
        """Stop the worker, wait for the request in flight, destroy the service (idempotent)."""
        if self._destroyed:
            return
        self._destroyed = True
        self._closing = True  # queued requests answer NOT_READY
        self.stop_worker()
        self._pool.shutdown(wait=True)  # an in-process request in flight ends within its max_time
        self.node.destroy_service(self.service)

    def _on_worker_event(self, level: str, message: str) -> None:
        log = self.node.get_logger()
        {"info": log.info, "warning": log.warning}.get(level, log.error)(f"solve_ik: {message}")

    def _solve(self, goals: list[FrameGoal], q_seed: np.ndarray, options: SimpleIKOptions) -> IKResult:
        """In the pool thread: the worker's answer, the in-process solver's, or WorkerError."""
        if self._closing:
            raise WorkerError("the node is shutting down")
        worker = self.worker
        if worker is None or worker.state in (STARTING, FAILED):  # not ready for the first time (or never)
            if worker is not None:
                self.fallback_solves += 1
            return self.solver.solve(goals, q_seed, options)
        return worker.solve(goals, q_seed, options)

    # ------------------------------------------------------------------ callback
    async def _on_request(self, request: SolveIK.Request, response: SolveIK.Response) -> SolveIK.Response:
        self.calls += 1
        try:
            goals, q_seed, options = self.parse(request)
        except GoalError as exc:
            return self._error(response, _GOAL_CODES[exc.code], str(exc))
        except NotReady as exc:
            return self._error(response, SolveIK.Response.NOT_READY, str(exc))
        except InvalidInputError as exc:
            return self._error(response, SolveIK.Response.INVALID_REQUEST, str(exc))
        done: Future = Future()
        try:
            work = self._pool.submit(self._solve, goals, q_seed, options)
        except RuntimeError:  # the pool was shut down: cleanup in progress
            return self._error(response, SolveIK.Response.NOT_READY, "the node is shutting down")
        work.add_done_callback(done.set_result)
        finished = await done
        try:
            result = finished.result()
        except InvalidInputError as exc:
            return self._error(response, SolveIK.Response.INVALID_REQUEST, str(exc))
        except WorkerError as exc:  # not ready after a crash, died or wedged while solving, shutting down
            return self._error(response, SolveIK.Response.NOT_READY, str(exc))
        if result.success:  # a failed solve has no solution to hand out (not even the seed)
            names = list(self.scene.group(options.group_name).joint_names)
            response.solution.name = names
            response.solution.position = JointMap(self.scene, names).from_q(result.q, np.empty(len(names))).tolist()
            response.solution.header.stamp = self.node.get_clock().now().to_msg()
        response.position_errors = result.position_errors.tolist()
        response.orientation_errors = result.orientation_errors.tolist()
        response.success = bool(result.success)
        response.error_code = SolveIK.Response.SUCCESS if result.success else SolveIK.Response.NO_SOLUTION
        response.message = result.message
        if not result.success:
            self.failures += 1
        return response

    def _error(self, response: SolveIK.Response, code: int, message: str) -> SolveIK.Response:
        self.failures += 1
        response.success = False
        response.error_code = code
        response.message = message
        self.node.get_logger().warning(f"solve_ik: {message}", throttle_duration_sec=1.0)
        return response

    # ------------------------------------------------------------------ request
    def parse(self, request: SolveIK.Request) -> tuple[list[FrameGoal], np.ndarray, SimpleIKOptions]:
        """(goals, q_seed, options) of a request, or raise GoalError / InvalidInputError / NotReady."""
        base = self.solver.options
        group_name = request.group_name or base.group_name
        group = self.scene.group(group_name)  # raises listing the valid groups
        current = self.current_q()
        seed = request.seed
        if len(seed.name) != len(seed.position):
            raise InvalidInputError(f"seed: {len(seed.name)} names but {len(seed.position)} positions")
        if seed.name:
            missing = [j for j in group.joint_names if j not in seed.name]
            if current is None and missing:
                raise NotReady(f"no /joint_states received yet and the seed lacks joints {missing}")
            q_seed = self.scene.q_from_joint_positions(list(seed.name), list(seed.position), current)
        elif current is None:
            raise NotReady("no /joint_states received yet: give a seed with every joint of the group")
        else:
            q_seed = current
        if not request.goals:
            raise InvalidInputError("goals: expected at least one goal")
        goals = []
        for k, g in enumerate(request.goals):
            try:
                self.scene.frame_id(g.tip_frame)
            except InvalidInputError as exc:
                raise GoalError(f"goals[{k}].tip_frame: {exc}", GoalError.UNKNOWN_FRAME) from exc
            T = self.resolver.resolve(g.pose, q_seed, self.quaternion_tolerance, f"goals[{k}].pose")
            goals.append(FrameGoal(g.tip_frame, T))
        o = SolveIK.Request
        for name in ("check_collisions", "fast_return"):
            if getattr(request, name) not in (o.OPTION_DEFAULT, o.OPTION_TRUE, o.OPTION_FALSE):
                raise InvalidInputError(f"{name}: expected OPTION_DEFAULT (0), OPTION_TRUE (1) or OPTION_FALSE (2), "
                                        f"got {getattr(request, name)}")
        if not (math.isfinite(request.max_time) and request.max_time <= MAX_TIME_LIMIT):
            raise InvalidInputError(f"max_time: expected <= {MAX_TIME_LIMIT:g} s (<= 0: the configured "
                                    f"{base.max_time:g} s), got {request.max_time}")

        def option(value: int, default: bool) -> bool:
            return default if value == o.OPTION_DEFAULT else value == o.OPTION_TRUE

        options = dataclasses.replace(
            base, group_name=group_name,
            max_time=request.max_time if request.max_time > 0 else base.max_time,
            check_collisions=option(request.check_collisions, base.check_collisions),
            fast_return=option(request.fast_return, base.fast_return),
        )
        options.validate()
        return goals, q_seed, options
