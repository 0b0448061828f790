"""``~/solve_ik``: one-shot SimpleIK (roboplan_ik_interfaces/srv/SolveIK) next to the control loop: pose
goals and IKObjective objectives (objective_msgs.py), per-request overrides of the configured options
(the null-space terms, a bias configuration, the standing objectives; 0/empty = configured).
(``~/solve_path`` has a thread, helper node and solver of its own: solve_path_service.py.)

The service is served by a thread of its own ("solve_ik"), not by the node's executor: the
server creates a small helper node (``<node name>_solve_ik``, same context and namespace, no
parameter services, no global remappings) that offers the node's ``~/solve_ik`` name (resolved
with the node's own remappings), and spins it in that thread. There a request is handled in one
synchronous callback: checked, its goals resolved (with a private copy of the frame resolver's
kinematics data), solved, answered; requests are solved one at a time (a burst waits in the
service's request queue, depth 100). The node's executor does no per-request work, so a long solve
never delays goals, status or (``trigger: joint_states``) ticks. With a ``worker_spec``, the solve
is shipped to an :class:`~roboplan_ik_ros.core.simple_ik.worker.IKWorker` process and the thread waits on
its pipe (GIL released): SimpleIK's Python iterations do not compete with the control loop's thread
for the GIL either.

A request's Python work (~0.1-0.3 ms) should not overlap a tick (GIL): it starts at once when the
next tick is due later than that work takes (1.25 x the p90 of recent requests', 0.15-1 ms; 0.4 ms
at first; ``next_tick_in``, from the node), else it waits for the end of the next tick
(``wait_for_gap``, at most three periods; not at all while the loop is inactive). (Before, every request waited for the end of the next tick: tick p99 with a
request stream 434 / 534 / 451 us with that wait vs 613 / 625 / 485 us without, config c, 3 pairs;
it cost ~1.3 ms of every round trip.)

With the worker ready, a request with ``fast_return`` (the default) is first tried in this thread:
the seeded attempt alone, at most ``INLINE_MAX_ITERS`` (20) iterations. An easy goal converges in a
few iterations (~0.1 ms) and is answered without the worker's round trip; the answer is the one the
worker would give (the same first attempt, same scene, obstacles and options). If it does not
converge (or converges in collision) the worker solves the request from the seed, as before. The
options of a request's overrides are built and validated once per distinct set (a planner repeats
them) and reused.

Measured (``bench/bench_service.py``: a separate client process calling one at a time, easy goals
with an explicit seed, the node at 500 Hz, config c, timer, tracking a 50 Hz goal stream; interleaved
runs of the code before and after, see the README): round trip p50 7.4 -> 1.5 ms in a loaded run
(load average 4); stages of the old path, p50: DDS to the callback 0.4-0.8 ms, the gap wait 1.3 ms,
parsing 0.38-0.50 ms (SimpleIKOptions.validate was most of it), the worker round trip 1.1-2.8 ms,
building the response 0.04 ms, DDS back 0.5-0.9 ms. rclpy and DDS alone (bench_node's ``reject``
variant: answered at once) take 0.9 ms p50 in the same run.

Why not an ``async`` callback awaiting the solve (as before): this rclpy's EventsExecutor re-runs a
task that awaits a Future as fast as it can until the Future is done (thousands of iterations for
a 0.5 ms wait), so the executor thread held the GIL for most of every solve and the loop's ticks
stretched (measured below).

Worker policy:

* until the worker is ready for the first time (it starts in the background: 0.3-0.65 s after
  configure on the test VM, up to ~1 s under load; configure itself is not slowed), and if it
  could not start at all, requests are solved in-process by ``solver`` (as without a worker): the
  service answers at once after configure, at the cost of sharing the GIL for that first second;
* a request in flight when the worker dies (or is killed as wedged) gets NOT_READY with the cause;
  until the restarted worker is ready, requests get NOT_READY (not the in-process fallback: a
  request that crashed the worker must not be retried inside the node's process).

Measured (``bench/bench_node.py --loads idle,service --repeat 3``: ik_controller at 500 Hz, timer
trigger, mock Panda, 2-vCPU VM shared with another engineer's benchmarks; 20 requests/s, random
reachable goals, 0.1-0.3 ms per solve in the worker; tick duration p99 idle -> with the requests,
interleaved pairs of 15 s runs; the idle p99 alone varies 250-460 us between runs):

* config b (no self-collision barrier), before (async callback awaiting a pool thread): +46 to
  +62 % in 5 of 6 pairs (one -21 %), on-time share 99.64-99.99 % -> 99.04-99.85 %; now: +2, +3,
  +7, +11 % (two outliers: +59 %, -28 %), on-time share 99.91-99.99 %;
* config c (shipped), before: +34, +49, +84 %, on-time share down to 97.8 %; now: +3, +18, +41 %,
  on-time share 99.84-99.99 %;
* CPU per request: the executor thread spent 1.3-1.8 ms before (the busy task), nothing now; the
  service thread 0.5-0.7 ms (of which rclpy's take, message conversion and send ~0.4 ms, parsing,
  the pipe and the response ~0.17 ms); the worker process 0.5-0.8 ms. Response time p50 1.4-2.1 ms,
  p99 2.8-5.7 ms (before 2.0-3.2 and 5.4-8.9 ms).

Earlier (previous design, 20 requests/s with unreachable goals, each using its whole 5 ms
max_time): tick p99 0.28-0.49 ms idle, 1.76-2.32 ms solving in a thread, 0.53-0.74 ms with the
worker. The worker needs a CPU of its own: on two vCPUs, late tick starts were not fewer with it
than with a thread (an unrelated process burning 5 ms of CPU every 50 ms delays a bare 500 Hz
Python loop as much). With reachable goals every variant stayed near the idle figures.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import threading
import time
from collections import deque
from collections.abc import Callable

import numpy as np

from roboplan_ik_interfaces.srv import SolveIK

from ..core.errors import InvalidInputError
from ..core.simple_ik.objective_config import check_objective_frames
from ..core.simple_ik.worker import FAILED, READY, STARTING, IKWorker, WorkerError, WorkerSpec
from ..core.model.scene import Scene
from ..core.simple_ik import FrameGoal, IKResult, SimpleIK, SimpleIKOptions
from .goal_frames import FrameResolver, GoalError
from .objective_msgs import objective_from_msg
from .message_conversions import JointMap
from .threaded_service import ServiceThread

MAX_TIME_LIMIT = 10.0  # [s] longest max_time a request may ask for
GAP_NEED = 0.0004  # [s] a request starts at once when the next tick is due at least this far ahead, until
GAP_NEED_RANGE = (0.00015, 0.001)  # its work in this thread has been timed: then 1.25 x the p90 of the last
_WORK_WINDOW, _WORK_EVERY = 64, 16  # 64 in-thread attempts (parse + attempt), within this range, every 16 (_wait_gap)
INLINE_MAX_ITERS = 20  # iterations of the seeded attempt solved in the service thread (see solve)
_OPTIONS_CACHE = 32  # requests' distinct option overrides kept validated (see parse)
THREAD_NAME = "solve_ik"  # the service thread, also its OS name (top -H)

GOAL_CODES = {
    GoalError.INVALID: SolveIK.Response.INVALID_REQUEST,
    GoalError.UNKNOWN_FRAME: SolveIK.Response.UNKNOWN_FRAME,
    GoalError.TRANSFORM_FAILED: SolveIK.Response.TRANSFORM_FAILED,
}


class NotReady(Exception):
    """The node cannot answer yet (no joint state for a default seed, shutting down)."""


def private_resolver(resolver: FrameResolver) -> FrameResolver:
    """A FrameResolver like ``resolver`` (same frames, tf2 buffer and timeout) with its own kinematics
    data: FrameResolver evaluates model frames with ``scene.frame_pose``, which writes the scene's
    data, and the node's executor keeps using ``resolver`` for pose goals meanwhile."""
    scene = copy.copy(resolver.scene)  # shares the model and every read-only table
    scene.data = scene.model.createData()
    return FrameResolver(scene, resolver.root_frame, resolver.tf_buffer, resolver.tf_timeout)


class SolveIKServer:
    """Serves ``~/solve_ik`` of ``node`` from its own thread; ``current_q()`` returns the node's current
    full q or None (called from that thread: must be thread-safe).

    ``solver`` gives the default options (and solves in-process without a worker, see the module
    docstring). ``wait_for_gap()``, if given, is called at the start of each request and returns
    once the control loop is between ticks (see the module docstring). ``worker_spec`` (the same scene and options as ``solver``): solve in an
    :class:`IKWorker` process, started here in the background and stopped by :meth:`destroy` or
    :meth:`stop_worker`. :meth:`destroy` also ends the thread and the helper node.

    A request goes :meth:`handle_request` (the whole answer) -> :meth:`parse` -> :meth:`solve` (the worker's,
    this thread's or the in-process solve of a parsed request); a subclass may replace any of them (the node
    builds ``IKControllerNode.solve_ik_server_class``: the benchmarks measure the service's parts that way,
    bench/node_bench/children.py).
    """

    def __init__(self, node, scene: Scene, solver: SimpleIK, resolver: FrameResolver,
                 quaternion_tolerance: float, current_q: Callable[[], np.ndarray | None],
                 worker_spec: WorkerSpec | None = None, wait_for_gap: Callable[[], None] | None = None,
                 guard=None, next_tick_in: Callable[[], float] | None = None,
                 on_thread_start: Callable[[str], None] | None = None) -> None:
        self.node = node
        self.scene = scene
        self.solver = solver
        self.resolver = resolver
        self._resolver = private_resolver(resolver)  # used in the service thread only
        self.quaternion_tolerance = quaternion_tolerance
        self.current_q = current_q
        self.wait_for_gap = wait_for_gap
        self.next_tick_in = next_tick_in
        self.calls = 0  # ~/solve_ik and ~/solve_path requests (diagnostics); counted under _counts_lock:
        self.failures = 0  # both services' threads count here
        self._counts_lock = threading.Lock()
        self.fallback_solves = 0  # solved in-process because the worker was not ready yet
        self.inline_solves = 0  # answered by the seeded attempt in the service thread (the worker was ready)
        self.gap_waits = 0  # requests that waited for the end of a tick (see _wait_gap)
        self.gap_need = GAP_NEED  # [s] see _wait_gap
        self._work: deque[float] = deque(maxlen=_WORK_WINDOW)  # [s] recent parse + in-thread attempt durations
        self._work_new = 0
        self._started = 0.0  # perf_counter() when this request's work started
        # the options of each distinct set of request overrides, validated once: key -> (options, inline options)
        self._options_cache: dict[tuple, tuple[SimpleIKOptions, SimpleIKOptions | None]] = {}
        self._options_base: SimpleIKOptions | None = None  # the solver's options the cache was made with
        self._joint_maps: dict[str, JointMap] = {}  # per group: the response's joint order
        self._closing = False
        self._destroyed = False
        self.worker: IKWorker | None = None
        self.scene_lock = threading.Lock()  # the in-process solve against changes of the scene's obstacles
        self.guard = guard  # the node's callback rules (node/session.py), for this and ~/solve_path
        self.on_thread_start = on_thread_start  # first in each service thread (this and ~/solve_path's)
        self._service_thread = ServiceThread(node, SolveIK, "solve_ik", self.handle_request, THREAD_NAME, guard=guard,
                                             on_start=on_thread_start)
        self.service_name = self._service_thread.service_name
        if worker_spec is not None:  # returns at once: the process starts in the background
            # forked from the fork server (started by main(), else at the first start): see start_forkserver
            self.worker = IKWorker(worker_spec, on_event=self._on_worker_event, start_method="forkserver")
            self.set_obstacles(list(scene.obstacles.values()))

    def set_obstacles(self, obstacles) -> None:
        """The worker's scene gets these obstacles (the control loop's) with its next request."""
        if self.worker is not None:
            self.worker.set_obstacles(obstacles)

    @property
    def closing(self) -> bool:
        """The node is shutting down (:meth:`close`, :meth:`destroy`): requests answer NOT_READY."""
        return self._closing

    def close(self) -> None:
        """Requests queued or in flight answer NOT_READY (the worker stops); :meth:`destroy` follows."""
        self._closing = True
        self.stop_worker()

    def stop_worker(self) -> None:
        """Stop the worker process (idempotent); a request in flight gets NOT_READY."""
        if self.worker is not None:
            self.worker.stop()

    def destroy(self) -> None:
        """Stop the worker, wait for the request in flight, end the service thread, destroy the
        service and its helper node (idempotent)."""
        if self._destroyed:
            return
        self._destroyed = True
        self._closing = True  # queued requests answer NOT_READY
        self.stop_worker()
        # an in-process request in flight ends within its max_time; bounded (ServiceThread.destroy)
        self._service_thread.destroy(5.0 if self.node.context.ok() else 0.5)

    def _on_worker_event(self, level: str, message: str) -> None:
        log = self.node.get_logger()
        {"info": log.info, "warning": log.warning}.get(level, log.error)(f"solve_ik: {message}")

    def solve(self, goals: list[FrameGoal], q_seed: np.ndarray, options: SimpleIKOptions,
              inline: SimpleIKOptions | None = None) -> IKResult:
        """The worker's answer, the in-process solver's, or WorkerError. ``inline``: the options of the
        seeded attempt tried in this thread first when the worker is ready (see :meth:`parse`)."""
        if self._closing:
            raise WorkerError("the node is shutting down")
        worker = self.worker
        if worker is None or worker.state in (STARTING, FAILED):  # not ready for the first time (or never)
            if worker is not None:
                self.fallback_solves += 1
            with self.scene_lock:  # the obstacles of the shared scene do not change during the solve
                return self.solver.solve(goals, q_seed, options)
        if inline is not None and worker.state == READY:
            # An easy goal converges in a few iterations of the seeded attempt (~0.1 ms): solved here it
            # is answered without the worker's round trip (pickling, pipe, another process's wake-up: ~1 ms
            # median on this VM). The attempt is the one the worker would make first (same scene,
            # obstacles and options; the restarts' RNG unused), capped at INLINE_MAX_ITERS iterations so
            # that its GIL time stays short; if it does not converge (or ends in collision) the worker
            # solves the request as before, from the seed. Not while the worker restarts: a request that
            # crashed it must not run in the node's process.
            with self.scene_lock:
                result = self.solver.solve(goals, q_seed, inline)
            self._timed_work(time.perf_counter() - self._started)
            if result.success:
                self.inline_solves += 1
                return result
        return worker.solve(goals, q_seed, options)

    def _wait_gap(self) -> None:
        """Wait for the end of the next tick unless the next tick is due at least ``gap_need`` from now
        (the request's Python work then ends before it: the GIL is free when the tick starts) or not at
        all (not ticking). ``gap_need`` is GAP_NEED until the in-thread work has been timed, then 1.25 x
        the p90 of the last _WORK_WINDOW requests' parse + attempt (within GAP_NEED_RANGE): 0.15-0.3 ms on
        a quiet machine, more when it is loaded (and the work takes longer)."""
        if self.wait_for_gap is None:
            return
        if self.next_tick_in is not None and self.next_tick_in() >= self.gap_need:
            return
        self.gap_waits += 1
        self.wait_for_gap()

    def _timed_work(self, seconds: float) -> None:
        self._work.append(seconds)
        self._work_new += 1
        if self._work_new >= _WORK_EVERY:
            self._work_new = 0
            recent = sorted(self._work)
            lo, hi = GAP_NEED_RANGE
            self.gap_need = min(max(1.25 * recent[int(0.9 * (len(recent) - 1))], lo), hi)

    # ------------------------------------------------------------------ callback (service thread)
    def handle_request(self, request: SolveIK.Request, response: SolveIK.Response) -> SolveIK.Response:
        """One ``~/solve_ik`` request answered (the service thread's callback): :meth:`parse`, :meth:`solve`, the
        response; every refusal as its error code."""
        self.count_call()
        self._wait_gap()
        self._started = time.perf_counter()
        try:
            goals, q_seed, options = self.parse(request)
            result = self.solve(goals, q_seed, options, self._inline_options(options))
        except GoalError as exc:
            return self.answer_error(response, GOAL_CODES[exc.code], str(exc))
        except NotReady as exc:
            return self.answer_error(response, SolveIK.Response.NOT_READY, str(exc))
        except InvalidInputError as exc:
            return self.answer_error(response, SolveIK.Response.INVALID_REQUEST, str(exc))
        except WorkerError as exc:  # not ready after a crash, died or wedged while solving, shutting down
            return self.answer_error(response, SolveIK.Response.NOT_READY, str(exc))
        if result.success:  # a failed solve has no solution to hand out (not even the seed)
            joints = self.joint_map(options.group_name)
            response.solution.name = list(joints.names)
            response.solution.position = joints.from_q(result.q, np.empty(len(joints.names))).tolist()
            response.solution.header.stamp = self.node.get_clock().now().to_msg()
        response.position_errors = result.position_errors.tolist()
        response.orientation_errors = result.orientation_errors.tolist()
        response.success = bool(result.success)
        response.error_code = SolveIK.Response.SUCCESS if result.success else SolveIK.Response.NO_SOLUTION
        response.message = result.message
        if not result.success:
            self.count_failure()
        return response

    def count_call(self) -> None:
        with self._counts_lock:
            self.calls += 1

    def count_failure(self) -> None:
        with self._counts_lock:
            self.failures += 1

    def answer_error(self, response, code: int, message: str):
        """``response`` (a SolveIK or SolvePath response) as a failure with ``code`` and ``message``, counted
        and logged (throttled)."""
        self.count_failure()
        response.success = False
        response.error_code = code
        response.message = message
        self.node.get_logger().warning(f"solve_ik: {message}", throttle_duration_sec=1.0)
        return response

    def joint_map(self, group_name: str) -> JointMap:
        """The joints of group ``group_name`` in a response's order (built once per group)."""
        joints = self._joint_maps.get(group_name)
        if joints is None:
            joints = JointMap(self.scene, list(self.scene.group(group_name).joint_names))
            self._joint_maps[group_name] = joints
        return joints

    # ------------------------------------------------------------------ request
    def parse(self, request: SolveIK.Request) -> tuple[list, np.ndarray, SimpleIKOptions]:
        """(goals, q_seed, options) of a request, or raise GoalError / InvalidInputError / NotReady: the
        goals are the PoseGoals as FrameGoals, then the objectives (IKObjective, objective_msgs.py); the
        options carry the request's overrides (empty/0: the configured value), the null-space terms and
        the standing objectives (simple_ik.objectives) unless ``standing_objectives`` is OPTION_FALSE."""
        base = self.solver.options
        group_name = request.group_name or base.group_name
        group = self.scene.group(group_name)  # raises listing the valid groups
        q_seed = self.seed_q(request.seed, group)
        if not request.goals and not request.objectives:
            raise InvalidInputError("goals, objectives: expected at least one goal or objective")
        goals = []
        for k, g in enumerate(request.goals):
            try:
                self.scene.frame_id(g.tip_frame)
            except InvalidInputError as exc:
                raise GoalError(f"goals[{k}].tip_frame: {exc}", GoalError.UNKNOWN_FRAME) from exc
            T = self._resolver.resolve(g.pose, q_seed, self.quaternion_tolerance, f"goals[{k}].pose")
            goals.append(FrameGoal(g.tip_frame, T))
        options = self._options(request, base, group_name, group)
        objectives = [objective_from_msg(m, f"objectives[{k}]", options.error_weights)
                      for k, m in enumerate(request.objectives)]
        try:
            check_objective_frames(objectives, self.scene.frame_id, "objectives")
        except InvalidInputError as exc:
            raise GoalError(str(exc), GoalError.UNKNOWN_FRAME) from exc
        return goals + objectives, q_seed, options

    def _options(self, request: SolveIK.Request, base: SimpleIKOptions, group_name: str, group) -> SimpleIKOptions:
        """The validated options of a request's overrides, or InvalidInputError. A planner sends the same
        overrides (usually none) request after request: each distinct set is checked and built once
        (``SimpleIKOptions.validate`` alone cost ~0.1 ms a request) and the same (never mutated) object
        reused; the cache follows the solver's options."""
        if base is not self._options_base:
            self._options_cache.clear()
            self._options_base = base
        b = request.bias_configuration
        key = (group_name, request.check_collisions, request.fast_return, request.standing_objectives,
               request.max_time, request.max_deviation, request.method, tuple(request.error_weights),
               tuple(request.active_joints), request.joint_limit_gain, request.manipulability_gain,
               request.bias_gain, request.joint_limit_ps, request.joint_limit_pi, tuple(b.name), tuple(b.position))
        cached = self._options_cache.get(key)  # (a NaN in the key never matches: checked, refused again)
        if cached is not None:
            return cached[0]
        o = SolveIK.Request
        for name in ("check_collisions", "fast_return", "standing_objectives"):
            if getattr(request, name) not in (o.OPTION_DEFAULT, o.OPTION_TRUE, o.OPTION_FALSE):
                raise InvalidInputError(f"{name}: expected OPTION_DEFAULT (0), OPTION_TRUE (1) or OPTION_FALSE (2), "
                                        f"got {getattr(request, name)}")
        if not (math.isfinite(request.max_time) and request.max_time <= MAX_TIME_LIMIT):
            raise InvalidInputError(f"max_time: expected <= {MAX_TIME_LIMIT:g} s (<= 0: the configured "
                                    f"{base.max_time:g} s), got {request.max_time}")

        if math.isnan(request.max_deviation) or request.max_deviation < 0.0:
            raise InvalidInputError(f"max_deviation: expected > 0 [rad or m] (inf: unbounded; 0: the configured "
                                    f"{base.max_deviation:g}), got {request.max_deviation}")

        def option(value: int, default: bool) -> bool:
            return default if value == o.OPTION_DEFAULT else value == o.OPTION_TRUE

        options = dataclasses.replace(
            base, group_name=group_name,
            max_time=request.max_time if request.max_time > 0 else base.max_time,
            check_collisions=option(request.check_collisions, base.check_collisions),
            fast_return=option(request.fast_return, base.fast_return),
            method=request.method or base.method,
            error_weights=list(request.error_weights) if len(request.error_weights) else base.error_weights,
            max_deviation=request.max_deviation if request.max_deviation > 0.0 else base.max_deviation,
            active_joints=list(request.active_joints) if len(request.active_joints) else base.active_joints,
        )
        moving = group if options.active_joints is None else self.scene.subgroup(group, options.active_joints)
        # (unknown active joints: InvalidInputError listing the group's)
        options = dataclasses.replace(
            options, **null_space_overrides(request, base),
            objectives=base.objectives if request.standing_objectives != o.OPTION_FALSE else [])
        bias = bias_override(request.bias_configuration, group, moving)
        if bias is not None:
            options.bias_configuration = bias
            if options.bias_gain == 0.0:
                raise InvalidInputError(f"bias_configuration: given, but bias_gain is 0 (configured "
                                        f"{base.bias_gain:g}{' and turned off' if request.bias_gain < 0 else ''}); "
                                        f"expected a bias_gain > 0 with it")
        options.validate()
        if len(self._options_cache) >= _OPTIONS_CACHE:
            self._options_cache.clear()
        self._options_cache[key] = (options, self._make_inline(options))
        return options

    def _inline_options(self, options: SimpleIKOptions) -> SimpleIKOptions | None:
        """The options of the seeded attempt :meth:`solve` tries in this thread (None: not tried)."""
        for cached, inline in self._options_cache.values():
            if cached is options:
                return inline
        return self._make_inline(options)

    @staticmethod
    def _make_inline(options: SimpleIKOptions) -> SimpleIKOptions | None:
        """The seeded attempt alone, at most INLINE_MAX_ITERS iterations: its answer, when it converges
        clear of collisions, is the worker's (which would stop there: fast_return). None with
        fast_return false (the worker searches max_time for the nearest answer)."""
        if not options.fast_return:
            return None
        return dataclasses.replace(options, max_restarts=0, max_iters=min(options.max_iters, INLINE_MAX_ITERS))

    def seed_q(self, seed, group) -> np.ndarray:
        """Full q of a request's seed (sensor_msgs/JointState; empty: the node's current state), or raise
        InvalidInputError / NotReady."""
        current = self.current_q()
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
        return q_seed


_GAINS = ("joint_limit_gain", "manipulability_gain", "bias_gain")  # 0: configured; GAIN_OFF: off; > 0
_DISTANCES = ("joint_limit_ps", "joint_limit_pi")  # 0: configured; > 0


def null_space_overrides(request: SolveIK.Request, base: SimpleIKOptions) -> dict:
    """The null-space options of a request (SolveIK's gains and distances: 0 = configured), or
    InvalidInputError naming the field."""
    out = {}
    for name in _GAINS:
        v = getattr(request, name)
        if v == SolveIK.Request.GAIN_OFF:
            out[name] = 0.0
        elif v == 0.0:
            out[name] = getattr(base, name)
        elif math.isfinite(v) and v > 0.0:
            out[name] = float(v)
        else:
            raise InvalidInputError(f"{name}: expected a finite gain > 0, 0 (the configured "
                                    f"{getattr(base, name):g}) or GAIN_OFF (-1: off), got {v}")
    for name in _DISTANCES:
        v = getattr(request, name)
        if v == 0.0:
            out[name] = getattr(base, name)
        elif math.isfinite(v) and v > 0.0:
            out[name] = float(v)
        else:
            raise InvalidInputError(f"{name}: expected a finite distance > 0 [rad or m] or 0 (the configured "
                                    f"{getattr(base, name):g}), got {v}")
    return out


def bias_override(bias, group, moving) -> list[float] | None:
    """A request's bias_configuration (sensor_msgs/JointState; empty: None = configured) as the moving
    joints' values in their order, or InvalidInputError: names and positions of equal length, each a
    joint of the group, once, finite, every moving joint named."""
    if not bias.name and not bias.position:
        return None
    if len(bias.name) != len(bias.position):
        raise InvalidInputError(f"bias_configuration: {len(bias.name)} names but {len(bias.position)} positions "
                                f"(expected one position per name)")
    values: dict[str, float] = {}
    for k, (name, value) in enumerate(zip(bias.name, bias.position)):
        if name not in group.joint_names:
            raise InvalidInputError(f"bias_configuration.name[{k}]: {name!r} is not a joint of group "
                                    f"{group.name!r}; valid: {list(group.joint_names)}")
        if name in values:
            raise InvalidInputError(f"bias_configuration.name[{k}]: {name!r} named twice")
        if not math.isfinite(value):
            raise InvalidInputError(f"bias_configuration.position[{k}] ({name}): expected a finite value [rad or m], "
                                    f"got {value}")
        values[name] = float(value)
    missing = [j for j in moving.joint_names if j not in values]
    if missing:
        raise InvalidInputError(f"bias_configuration: expected a value for every moving joint of group "
                                f"{moving.name!r}; missing {missing}")
    return [values[j] for j in moving.joint_names]
