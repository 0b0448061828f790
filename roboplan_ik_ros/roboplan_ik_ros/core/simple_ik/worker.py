"""IKWorker: SimpleIK in a separate process, so that a solve does not share the GIL with the caller.

A solve in a thread of the control process competes for the interpreter lock with the control
loop: the loop's ticks slip while SimpleIK iterates, and the loop slows the solve. The worker is a
:class:`~roboplan_ik_ros.core.child_process.SupervisedChild` (its life cycle: starting, ready,
restarting, failed, stopped; no orphan; see ``core/child_process.py``) that builds its own
:class:`~.scene.Scene` and :class:`~.simple_ik.SimpleIK` from a picklable :class:`WorkerSpec` and
answers solve requests over a pipe. ROS-free.

Requests: :meth:`IKWorker.solve` sends one request at a time (a lock serializes callers) and waits
for the answer with the same id. The request carries an absolute deadline (send time +
``max_time``, ``time.monotonic``, one clock for both processes on Linux), so the child's solve gets
what is left of ``max_time`` end to end. A late answer (more than ``answer_grace`` after the
deadline) means a wedged worker: it is killed and restarted, so it is never left working on a
request nobody waits for; answers with another id are dropped. Until the worker is ready (starting,
restarting, failed, stopped) :meth:`IKWorker.solve` raises :class:`WorkerError` (the caller decides
whether to fall back to an in-process solver); a request in flight when the child dies fails with it,
naming the cause.

Measured (Panda, 2-vCPU VM shared with other jobs): spawn -> ready 0.33-0.65 s (0.41 s median when
quiet; 0.93 s under heavy load), of which building the scene and SimpleIK is 0.01-0.03 s and the
rest is the interpreter and its imports (the parent's ``__main__`` module is imported again by
``spawn``: the ``ik_controller`` script adds ~0.2 s and ~25 MB); the constructor returns in
0.2 ms; child RSS 120-145 MB; :meth:`IKWorker.stop` 50-90 ms. Per request, against SimpleIK called
in the same thread on the same 200 goals (same seed, identical iterations): +0.24 ms median
(p90 +0.26 ms) when the machine is quiet, +0.8 ms under load; an empty request (goal already
reached) costs 0.18 ms more. What it buys: a solve no longer stretches the control loop's ticks
(GIL); it still needs a CPU, so on a machine without a free core the loop waits for a CPU instead
(see ``node/solve_ik_service.py``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from ..child_process import (FAILED, READY, RESTARTING, STARTING, STOPPED, SupervisedChild, WorkerError,  # noqa: F401
                             answer, build_or_report, child_started, lower_priority, preload_in_forkserver,
                             report_ready, start_forkserver)
from ..errors import InvalidInputError
from .objectives import AxisGoal, PointGoal
from .goals import FrameGoal, IKResult
from .options import SimpleIKOptions

_MIN_BUDGET = 1e-6  # [s] solve budget of a request that reaches the child after its deadline

preload_in_forkserver(__name__)  # the fork server imports this module (and SimpleIK's) before it forks a worker


@dataclass
class WorkerSpec:
    """What the child needs to build its Scene and SimpleIK (picklable: text, numbers, dicts).

    The scene is ``Scene(urdf_xml, srdf_xml, package_paths, convex_hulls=..., position_limits=...,
    velocity_limits=...)``; :meth:`from_robot_config` gives the arguments with which
    ``core.model.scene_config.scene_from_config`` builds the control loop's scene.
    """

    urdf_xml: str
    srdf_xml: str = ""
    package_paths: tuple[str, ...] = ()
    convex_hulls: bool = True
    position_limits: dict[str, list[float]] = field(default_factory=dict)
    velocity_limits: dict[str, float] = field(default_factory=dict)
    options: SimpleIKOptions = field(default_factory=SimpleIKOptions)

    @classmethod
    def from_robot_config(cls, urdf_xml: str, srdf_xml: str, robot, package_paths: Sequence[str] = (),
                          options: SimpleIKOptions | None = None) -> WorkerSpec:
        """The spec of ``scene_from_config(urdf_xml, srdf_xml, robot, package_paths)`` (``robot``: a
        ``core.config.RobotConfig``) with SimpleIK ``options``."""
        return cls(
            urdf_xml=urdf_xml,
            srdf_xml=srdf_xml or "",
            package_paths=tuple(str(p) for p in (*robot.package_paths, *package_paths)),
            convex_hulls=bool(robot.convex_hulls),
            position_limits={k: list(v) for k, v in robot.position_limits.items()},
            velocity_limits=dict(robot.velocity_limits),
            options=replace(options) if options is not None else SimpleIKOptions(),
        )

    def build_scene(self):
        from ..model.scene import Scene

        return Scene(self.urdf_xml, self.srdf_xml, list(self.package_paths), convex_hulls=self.convex_hulls,
                     position_limits=self.position_limits, velocity_limits=self.velocity_limits)


# ------------------------------------------------------------------------------------------ child
def _worker_main(conn, spec: WorkerSpec, parent_pid: int, nice: int = 0, sched_idle: bool = False) -> None:
    """The child process: build the solver, say "ready", answer requests until "stop" or EOF."""
    child_started(parent_pid)
    t0 = time.perf_counter()

    def build():
        from .solver import SimpleIK

        return SimpleIK(spec.build_scene(), spec.options)

    built, solver = build_or_report(conn, build)
    if not built:
        return  # the parent was told why
    lower_priority(nice, sched_idle)  # after the start-up, which would be slow at a low priority
    if not report_ready(conn, t0):
        return  # the parent is gone
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return  # the parent closed its end or died
        if msg[0] != "solve":
            return  # "stop"
        _, rid, deadline, goals, q_seed, options, obstacles = msg

        def solve() -> tuple:
            if obstacles is not None:  # the parent's obstacles changed since this child last heard
                _set_obstacles(solver.scene, obstacles)
            budget = max(deadline - time.monotonic(), _MIN_BUDGET)  # what is left of max_time
            opt = replace(options, max_time=min(options.max_time, budget))
            result = solver.solve(goals, q_seed, opt)
            if opt.max_time != options.max_time:  # the message names the requested max_time
                result.message = result.message.replace(f"max_time {opt.max_time:g} s",
                                                        f"max_time {options.max_time:g} s")
            return ("result", rid, result)

        if not answer(conn, rid, solve):
            return


def _set_obstacles(scene, obstacles) -> None:
    """Make ``scene``'s obstacles exactly ``obstacles`` (already checked by the parent)."""
    scene.clear_obstacles()
    for obstacle in obstacles:
        scene.add_obstacle(obstacle)


# ----------------------------------------------------------------------------------------- parent
def _request_goal(goal, k: int):
    """The goal as sent to the child: a FrameGoal (its target as a 4x4 array, weights and relative_to
    kept) from a FrameGoal or a (name, pin.SE3 or 4x4) pair; a PointGoal or AxisGoal as it is (plain
    data). The child checks everything else, as SimpleIK does in-process."""
    if isinstance(goal, (PointGoal, AxisGoal)):
        return goal
    try:
        if isinstance(goal, FrameGoal):
            name, T, weights, relative_to = goal.tip_frame, goal.T_world_tip, goal.weights, goal.relative_to
        else:
            (name, T), weights, relative_to = goal, None, None
        homogeneous = getattr(T, "homogeneous", None)  # pin.SE3
        M = np.array(homogeneous if homogeneous is not None else T, dtype=float)
    except (TypeError, ValueError):
        raise InvalidInputError(f"goals[{k}]: expected a FrameGoal, PointGoal, AxisGoal or a (frame name, pin.SE3 "
                                f"or 4x4 matrix) pair, got {goal!r}") from None
    if not isinstance(name, str):
        raise InvalidInputError(f"goals[{k}].tip_frame: expected a string, got {name!r}")
    return FrameGoal(name, M, None if weights is None else list(weights), relative_to)


class IKWorker(SupervisedChild):
    """SimpleIK in a child process built from ``spec``; see the module docstring.

    Args:
        spec: scene and SimpleIK options of the child.
        on_event: ``on_event(level, message)`` with level "info", "warning" or "error", called from
            the monitor thread when the worker becomes ready, dies, restarts or fails.
        start: start at once (in the background).
        start_method: multiprocessing start method, "spawn" or "forkserver" ("fork" is refused: the
            parent may run DDS threads).
        start_timeout: [s] a child that is not ready within this counts as a failed start.
        answer_grace: [s] after a request's deadline, how long to wait for its answer before the
            child counts as wedged (killed and restarted).
        restart_interval: [s] least time between two starts.
        max_start_failures: consecutive starts that end before "ready" after which it gives up.
        nice: added to the child's niceness once it is ready (lower CPU priority: when every core
            is busy, the other processes get more of the CPU and the solve waits).
        sched_idle: run the child under SCHED_IDLE once it is ready: it only gets a CPU that no
            other task wants; on a busy machine its solves get little CPU time (``max_time`` still
            bounds the answer).

    ``nice`` and ``sched_idle`` are off by default: on the 2-vCPU test VM, nice 10 did not
    measurably help the 500 Hz loop, and SCHED_IDLE helped a little when the machine was quiet
    (on-time 98.4 % against 97.2 %) but starved the solves under load (7-15 % of reachable
    requests answered NO_SOLUTION against 0-1 %).
    """

    label = "IK worker"
    process_name = "ik_worker"
    builds = "solver"

    def __init__(self, spec: WorkerSpec, *, on_event: Callable[[str, str], None] | None = None, start: bool = True,
                 start_method: str = "spawn", start_timeout: float = 60.0, answer_grace: float = 1.0,
                 restart_interval: float = 1.0, max_start_failures: int = 3, nice: int = 0,
                 sched_idle: bool = False) -> None:
        super().__init__(on_event=on_event, start_method=start_method, start_timeout=start_timeout,
                         restart_interval=restart_interval, max_start_failures=max_start_failures)
        self.spec = spec
        self.answer_grace = answer_grace
        self.nice = int(nice)
        self.sched_idle = bool(sched_idle)
        self._obstacles: tuple = ()  # the collision world's obstacles, sent with the next request
        self._obstacles_version = 0
        if start:
            self.start()

    def _child_main(self):
        return _worker_main, (self.spec, os.getpid(), self.nice, self.sched_idle)

    def __enter__(self) -> IKWorker:
        return self

    # ------------------------------------------------------------------ requests
    def set_obstacles(self, obstacles: Sequence) -> None:
        """The obstacles (``core.model.obstacles.Obstacle``, already checked against the robot) of the
        child's scene from the next request on: sent with it to each child that has not had them
        (a restarted child included), so that its collision check matches the caller's."""
        with self._cond:
            self._obstacles = tuple(obstacles)
            self._obstacles_version += 1

    def _obstacles_for(self, child) -> tuple | None:
        """The obstacles to send ``child`` with this request (None: it has them); with ``_cond`` held."""
        if child.sent.get("obstacles", -1) == self._obstacles_version:
            return None
        child.sent["obstacles"] = self._obstacles_version
        return self._obstacles

    def solve(self, goals: Sequence, q_seed: np.ndarray, options: SimpleIKOptions | None = None) -> IKResult:
        """SimpleIK.solve in the child: ``goals`` are FrameGoals (weights and relative_to included),
        PointGoals, AxisGoals or (frame name, pin.SE3 or 4x4) pairs; ``options``' standing objectives
        travel with the options. Blocks for at most ``max_time`` + ``answer_grace``. Raises InvalidInputError for bad
        input (as SimpleIK.solve) and WorkerError when the worker cannot answer."""
        opt = options if options is not None else self.spec.options
        if options is not None:
            options.validate()
        if isinstance(goals, (FrameGoal, PointGoal, AxisGoal)):
            goals = [goals]
        request_goals = [_request_goal(g, k) for k, g in enumerate(goals)]
        q = np.array(q_seed, dtype=float)
        with self._request_lock:
            child, rid, obstacles = self._begin_request(self._obstacles_for)
            deadline = time.monotonic() + opt.max_time
            self._send(child, ("solve", rid, deadline, request_goals, q, opt, obstacles))
            reply = self._await_reply(child, rid, deadline + self.answer_grace, "while solving this request")
            if reply is None:  # wedged
                raise self._kill_wedged(child, f"the IK worker process (pid {child.process.pid}) did not answer "
                                               f"within max_time {opt.max_time:g} s + {self.answer_grace:g} s: killed")
            if reply[0] == "result":
                return reply[2]
            if reply[0] == "invalid":
                raise InvalidInputError(reply[2])
            raise WorkerError(f"SimpleIK failed in the IK worker process: {reply[2]}")
