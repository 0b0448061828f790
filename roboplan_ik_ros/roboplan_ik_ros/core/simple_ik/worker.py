"""IKWorker: SimpleIK in a separate process, so that a solve does not share the GIL with the caller.

A solve in a thread of the control process competes for the interpreter lock with the control
loop: the loop's ticks slip while SimpleIK iterates, and the loop slows the solve. The worker is a
child process (multiprocessing ``spawn`` context by default: a fresh interpreter, never a ``fork``
of a process that may run DDS threads) that builds its own :class:`~.scene.Scene` and
:class:`~.simple_ik.SimpleIK` from a picklable :class:`WorkerSpec` and answers requests over a
pipe. ROS-free.

Life cycle, all in the background (the constructor returns at once):

* ``starting``: a monitor thread spawns the child and waits for its "ready" message. Until then
  :meth:`IKWorker.solve` raises :class:`WorkerError` (the caller decides whether to fall back to
  an in-process solver).
* ``ready``: :meth:`IKWorker.solve` sends one request at a time (a lock serializes callers) and
  waits for the answer with the same id. The request carries an absolute deadline (send time +
  ``max_time``, ``time.monotonic``, one clock for both processes on Linux), so the child's solve
  gets what is left of ``max_time`` end to end. A late answer (more than ``answer_grace`` after the
  deadline) means a wedged worker: it is killed and restarted, so it is never left working on a
  request nobody waits for; answers with another id are dropped.
* ``restarting``: the child died (crash, kill, or killed as wedged). The request in flight, if
  any, fails with :class:`WorkerError` naming the cause; the monitor thread restarts the child
  (at most once per ``restart_interval``).
* ``failed``: ``max_start_failures`` starts in a row ended before "ready" (the message says why,
  e.g. the child's exception while building the scene); no more attempts.
* ``stopped``: after :meth:`IKWorker.stop`; requests fail with :class:`WorkerError`.

The child ends by itself when the parent goes away: its pipe reaches EOF when the parent closes it
or dies, and a watchdog thread exits when the parent pid changes (a solve in progress, or a child
still importing). Interpreter exit also stops every live worker (``atexit``). The child ignores
SIGINT (Ctrl-C in a terminal reaches the whole process group; the parent stops it). With
``spawn``, multiprocessing also starts its resource-tracker process once per parent; it ends with
the parent.

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

import atexit
import math
import multiprocessing
import os
import signal
import sys
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from multiprocessing.connection import wait as _wait_any

import numpy as np

from ..errors import InvalidInputError
from .objectives import AxisGoal, PointGoal
from .goals import FrameGoal, IKResult
from .options import SimpleIKOptions

STARTING, READY, RESTARTING, FAILED, STOPPED = "starting", "ready", "restarting", "failed", "stopped"

_MIN_BUDGET = 1e-6  # [s] solve budget of a request that reaches the child after its deadline
_PARENT_POLL = 0.5  # [s] the child's check that its parent is still alive
_STOP_JOIN = 1.0  # [s] per escalation step of stop(): exit on request, SIGTERM, SIGKILL


class WorkerError(RuntimeError):
    """The worker cannot answer: not started yet, restarting, failed, stopped, died or wedged."""


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
def _watch_parent(owner_pid: int) -> None:
    """Exit once the owner (the process that made the IKWorker) is gone: no orphan. Spawned, the owner is
    the parent; forked from a fork server, the parent is the server (which ends with the owner)."""
    parent = os.getppid()
    while True:
        if os.getppid() != parent or not _alive(owner_pid):
            os._exit(0)  # re-parented, or the owner died
        time.sleep(_PARENT_POLL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, not ours to signal
        return True
    return True


def _lower_priority(nice: int, sched_idle: bool) -> None:
    try:
        if sched_idle:
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        elif nice > 0:
            os.nice(nice)
    except (OSError, AttributeError):  # not permitted, or not Linux: keep the normal priority
        pass


def _worker_main(conn, spec: WorkerSpec, parent_pid: int, nice: int = 0, sched_idle: bool = False) -> None:
    """The child process: build the solver, say "ready", answer requests until "stop" or EOF."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_watch_parent, args=(parent_pid,), name="parent_watch", daemon=True).start()
    t0 = time.perf_counter()
    try:
        from .solver import SimpleIK

        solver = SimpleIK(spec.build_scene(), spec.options)
    except BaseException as exc:  # report why, then exit
        try:
            conn.send(("error", f"{type(exc).__name__}: {exc}"))
        except OSError:
            pass
        return
    _lower_priority(nice, sched_idle)  # after the start-up, which would be slow at a low priority
    try:
        conn.send(("ready", os.getpid(), time.perf_counter() - t0))
    except OSError:
        return  # the parent is gone
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return  # the parent closed its end or died
        if msg[0] != "solve":
            return  # "stop"
        _, rid, deadline, goals, q_seed, options, obstacles = msg
        try:
            if obstacles is not None:  # the parent's obstacles changed since this child last heard
                _set_obstacles(solver.scene, obstacles)
            budget = max(deadline - time.monotonic(), _MIN_BUDGET)  # what is left of max_time
            opt = replace(options, max_time=min(options.max_time, budget))
            result = solver.solve(goals, q_seed, opt)
            if opt.max_time != options.max_time:  # the message names the requested max_time
                result.message = result.message.replace(f"max_time {opt.max_time:g} s",
                                                        f"max_time {options.max_time:g} s")
            reply = ("result", rid, result)
        except InvalidInputError as exc:
            reply = ("invalid", rid, str(exc))
        except Exception as exc:  # a bug: answer, and stay alive for the next request
            reply = ("failed", rid, f"{type(exc).__name__}: {exc}")
        try:
            conn.send(reply)
        except OSError:
            return


def _set_obstacles(scene, obstacles) -> None:
    """Make ``scene``'s obstacles exactly ``obstacles`` (already checked by the parent)."""
    scene.clear_obstacles()
    for obstacle in obstacles:
        scene.add_obstacle(obstacle)


# ----------------------------------------------------------------------------------------- parent
class _Child:
    """One started child process (a generation) and the parent's end of its pipe."""

    def __init__(self, process, conn, started: float) -> None:
        self.process = process
        self.conn = conn
        self.started = started  # time.monotonic() at spawn
        self.ready = False
        self.obstacles_version = -1  # of IKWorker's obstacles last sent to this child
        self.death = ""  # why the parent killed it (else it crashed)
        self.exit = ""  # how it ended, set by the monitor thread (the only one that reaps a ready child)
        self.exited = threading.Event()


_LIVE: weakref.WeakSet = weakref.WeakSet()


@atexit.register
def _stop_all_at_exit() -> None:  # runs before multiprocessing's own exit handler (registered earlier)
    for worker in list(_LIVE):
        worker.stop()


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


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


def start_forkserver(timeout: float = 60.0) -> None:
    """Start multiprocessing's fork server now, with this module preloaded. Call once, early, from the
    main thread of a process that will use ``IKWorker(start_method="forkserver")`` (the node does at
    start). A worker forked from it imports nothing before :func:`_worker_main` ignores SIGINT, so a
    Ctrl-C to the process group while a worker starts neither kills it nor prints a traceback (a
    spawned worker imports the parent's main module and pinocchio first: seconds in which the
    signal raises KeyboardInterrupt there); and it starts in a fraction of a spawn's time. Returns once
    the server runs (at most ``timeout`` [s]: a loaded machine imports pinocchio slowly)."""
    ctx = multiprocessing.get_context("forkserver")
    # a forked child still runs the parent's main module (as __mp_main__) before its target: what that module
    # imported (its package's modules, rclpy) is preloaded, so re-running its body takes milliseconds. Not the
    # module itself: run again while already imported, runpy warns of "unpredictable behaviour"
    main_spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    preload = [__name__]
    if main_spec is not None and main_spec.name:
        roots = {main_spec.name.split(".")[0], "rclpy"}
        preload += sorted(n for n, m in list(sys.modules.items())
                          if m is not None and n != main_spec.name and n.split(".")[0] in roots)
    ctx.set_forkserver_preload(preload)
    # a first (empty) child: returns once the server has preloaded and ignores SIGINT itself (until then a
    # Ctrl-C would interrupt its imports), so from here on no start of a worker can be interrupted
    probe = ctx.Process(target=_noop, name="forkserver_probe", daemon=True)
    probe.start()
    probe.join(timeout)


def _noop() -> None:
    """The target of :func:`start_forkserver`'s probe child."""


class IKWorker:
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

    def __init__(self, spec: WorkerSpec, *, on_event: Callable[[str, str], None] | None = None, start: bool = True,
                 start_method: str = "spawn", start_timeout: float = 60.0, answer_grace: float = 1.0,
                 restart_interval: float = 1.0, max_start_failures: int = 3, nice: int = 0,
                 sched_idle: bool = False) -> None:
        if start_method not in ("spawn", "forkserver"):
            raise InvalidInputError(f"start_method: expected 'spawn' or 'forkserver', got {start_method!r}")
        self.spec = spec
        self.on_event = on_event
        self.start_timeout = start_timeout
        self.answer_grace = answer_grace
        self.restart_interval = restart_interval
        self.max_start_failures = max_start_failures
        self.nice = int(nice)
        self.sched_idle = bool(sched_idle)
        self._ctx = multiprocessing.get_context(start_method)
        if start_method == "forkserver":  # (no effect once the server runs: start_forkserver did it already)
            self._ctx.set_forkserver_preload([__name__])
        self._cond = threading.Condition()  # guards the state below
        self._request_lock = threading.Lock()  # one request at a time
        self._stop = threading.Event()
        self._monitor: threading.Thread | None = None
        self._child: _Child | None = None
        self._state = STOPPED
        self._reason = "the IK worker is not started"
        self._next_id = 0
        self.starts = 0  # children spawned
        self.crashes = 0  # ready children that died without being stopped
        self.start_seconds = math.nan  # [s] spawn -> ready of the last ready child (parent's clock)
        self.build_seconds = math.nan  # [s] of that, the child's own scene + SimpleIK build
        self._obstacles: tuple = ()  # the collision world's obstacles, sent with the next request
        self._obstacles_version = 0
        if start:
            self.start()

    # ------------------------------------------------------------------ state
    @property
    def state(self) -> str:
        return self._state

    @property
    def ready(self) -> bool:
        return self._state == READY

    @property
    def reason(self) -> str:
        """Why the worker cannot answer now ("" when ready)."""
        return "" if self._state == READY else self._reason

    @property
    def pid(self) -> int | None:
        child = self._child
        return child.process.pid if child is not None else None

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Block until ready (True), or until failed/stopped or ``timeout`` (False)."""
        with self._cond:
            self._cond.wait_for(lambda: self._state in (READY, FAILED, STOPPED), timeout)
            return self._state == READY

    def _set_state(self, state: str, reason: str = "") -> None:
        with self._cond:
            if self._stop.is_set():
                return  # stop() has set STOPPED: the monitor thread must not override it
            self._state, self._reason = state, reason
            self._cond.notify_all()

    def _event(self, level: str, message: str) -> None:
        if self.on_event is not None:
            try:
                self.on_event(level, message)
            except Exception:  # a logging problem must not kill the monitor
                pass

    # ------------------------------------------------------------------ start / stop
    def start(self) -> None:
        """Start the child in the background (no-op if already running)."""
        with self._cond:
            if self._monitor is not None and self._monitor.is_alive():
                return
            self._stop.clear()
            self._state, self._reason = STARTING, "the IK worker process is starting"
            self._monitor = threading.Thread(target=self._run, name="ik_worker_monitor", daemon=True)
            self._monitor.start()
        _LIVE.add(self)

    def stop(self, timeout: float = _STOP_JOIN) -> None:
        """Stop the child (asks, then SIGTERM, then SIGKILL) and the monitor; idempotent. A request
        in flight fails with WorkerError."""
        self._stop.set()
        with self._cond:
            child, monitor = self._child, self._monitor
            self._state, self._reason = STOPPED, "the IK worker is stopped"
            self._cond.notify_all()
        if child is not None:
            self._end(child, timeout)
        if monitor is not None and monitor is not threading.current_thread():
            monitor.join(timeout=timeout + 1.0)
        with self._cond:
            self._monitor = None
        _LIVE.discard(self)

    def _end(self, child: _Child, timeout: float) -> None:
        p = child.process
        if p.exitcode is None and child.ready and self._request_lock.acquire(blocking=False):
            try:  # nothing in flight: ask it to exit
                child.conn.send(("stop",))
            except (OSError, ValueError):
                pass
            finally:
                self._request_lock.release()
            p.join(timeout)
        if p.exitcode is None:
            p.terminate()
            p.join(timeout)
        if p.exitcode is None:
            p.kill()
            p.join(timeout)
        self._close_pipe(child, timeout)  # a request in flight has seen the end of the pipe (the child's death)

    def _close_pipe(self, child: _Child, timeout: float = _STOP_JOIN) -> None:
        """Close the parent's end of ``child``'s pipe once no request uses it (``_request_lock``).

        Closed under a request in another thread, its fd number is free while that thread may be
        about to poll it (it took the number, then lost the CPU): the next child's pipe reuses the
        number and the request waits on that pipe for all of max_time + answer_grace instead of
        seeing this child's end (seen under load). A request on a dead child sees the end of the
        pipe and returns at once, so the wait is short; after ``timeout`` (a child that could not be
        killed) the pipe is left to the garbage collector, which closes it with its last reference.
        """
        if self._request_lock.acquire(timeout=timeout):
            try:
                child.conn.close()
            finally:
                self._request_lock.release()

    def __enter__(self) -> IKWorker:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    # ------------------------------------------------------------------ monitor thread
    def _spawn(self) -> _Child:
        parent_conn, child_conn = self._ctx.Pipe(duplex=True)
        process = self._ctx.Process(target=_worker_main, name="ik_worker", daemon=True,
                                    args=(child_conn, self.spec, os.getpid(), self.nice, self.sched_idle))
        started = time.monotonic()
        try:
            process.start()
        finally:
            child_conn.close()  # the child holds its own copy: EOF reaches us when it dies
        self.starts += 1
        return _Child(process, parent_conn, started)

    def _run(self) -> None:
        failures = 0  # consecutive starts that ended before "ready"
        last_start = -math.inf
        while not self._stop.wait(max(0.0, last_start + self.restart_interval - time.monotonic())):
            last_start = time.monotonic()
            try:
                child = self._spawn()
            except Exception as exc:  # e.g. out of processes or memory
                child, why = None, f"cannot start the IK worker process: {type(exc).__name__}: {exc}"
            else:
                with self._cond:
                    self._child = child
                if self._stop.is_set():  # stop() ran before the child was published
                    self._end(child, _STOP_JOIN)
                    break
                why = self._await_ready(child)
            if self._stop.is_set():
                break
            if child is not None and child.ready:
                failures = 0
                _wait_any([child.process.sentinel])  # until it dies: crash, kill, or stop()
                if self._stop.is_set():
                    break
                child.process.join(_STOP_JOIN)
                child.exit = _describe_exit(child.process.exitcode)
                child.exited.set()
                self.crashes += 1
                why = child.death or f"the IK worker process (pid {child.process.pid}) died ({child.exit})"
                self._set_state(RESTARTING, f"{why}; restarting it")
                self._event("warning", f"{why}; restarting it")
            else:
                failures += 1
                if child is not None:
                    self._end(child, _STOP_JOIN)
                if failures >= self.max_start_failures:
                    reason = f"the IK worker could not start ({failures} attempts): {why}"
                    self._set_state(FAILED, reason)
                    self._event("error", reason)
                    break
                self._event("warning", f"{why}; retrying")
            if child is not None:
                self._close_pipe(child)

    def _await_ready(self, child: _Child) -> str:
        """Wait for the child's "ready"; "" on success, else why it did not start."""
        deadline = child.started + self.start_timeout
        p = child.process
        while not self._stop.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return f"the IK worker process was not ready within {self.start_timeout:g} s"
            events = _wait_any([child.conn, p.sentinel], timeout=remaining)
            if child.conn in events:
                try:
                    msg = child.conn.recv()
                except (EOFError, OSError):
                    p.join(_STOP_JOIN)
                    return f"the IK worker process died while starting ({_describe_exit(p.exitcode)})"
                if msg[0] == "error":
                    return f"the IK worker process could not build its solver: {msg[1]}"
                if msg[0] == "ready":
                    self.start_seconds = time.monotonic() - child.started
                    self.build_seconds = float(msg[2])
                    with self._cond:
                        if self._stop.is_set():
                            return "stopped"
                        child.ready = True
                        self._state, self._reason = READY, ""
                        self._cond.notify_all()
                    self._event("info", f"IK worker process ready (pid {p.pid}, {self.start_seconds:.2f} s after "
                                        f"spawn, {self.build_seconds:.2f} s of it building the solver)")
                    return ""
            elif p.sentinel in events:
                p.join(_STOP_JOIN)
                return f"the IK worker process died while starting ({_describe_exit(p.exitcode)})"
        return "stopped"

    # ------------------------------------------------------------------ requests
    def set_obstacles(self, obstacles: Sequence) -> None:
        """The obstacles (``core.model.obstacles.Obstacle``, already checked against the robot) of the
        child's scene from the next request on: sent with it to each child that has not had them
        (a restarted child included), so that its collision check matches the caller's."""
        with self._cond:
            self._obstacles = tuple(obstacles)
            self._obstacles_version += 1

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
            with self._cond:
                child = self._child
                if self._state != READY or child is None or not child.ready:
                    raise WorkerError(self._reason or "the IK worker is not ready")
                self._next_id += 1
                rid = self._next_id
                obstacles = None
                if child.obstacles_version != self._obstacles_version:
                    obstacles, child.obstacles_version = self._obstacles, self._obstacles_version
            deadline = time.monotonic() + opt.max_time
            try:
                child.conn.send(("solve", rid, deadline, request_goals, q, opt, obstacles))
            except (OSError, ValueError) as exc:  # the child died, or stop() closed the pipe
                raise self._lost(child, f"while sending the request ({type(exc).__name__})") from None
            give_up = deadline + self.answer_grace
            while True:
                remaining = give_up - time.monotonic()
                try:
                    if remaining <= 0 or not child.conn.poll(remaining):
                        break
                    reply = child.conn.recv()
                except (EOFError, OSError, ValueError):
                    raise self._lost(child, "while solving this request") from None
                if reply[1] != rid:
                    continue  # the answer to an earlier request: nobody waits for it any more
                if reply[0] == "result":
                    return reply[2]
                if reply[0] == "invalid":
                    raise InvalidInputError(reply[2])
                raise WorkerError(f"SimpleIK failed in the IK worker process: {reply[2]}")
            # wedged: never leave it working on a request nobody waits for
            why = (f"the IK worker process (pid {child.process.pid}) did not answer within max_time "
                   f"{opt.max_time:g} s + {self.answer_grace:g} s: killed")
            child.death = why
            self._mark_lost(child, why + "; restarting it")
            child.process.kill()
            raise WorkerError(why + "; restarting it")

    def _lost(self, child: _Child, when: str) -> WorkerError:
        """The error for a request whose child went away (the monitor thread restarts it)."""
        if self._stop.is_set():
            return WorkerError(f"the IK worker was stopped {when}")
        child.exited.wait(1.0)  # the monitor thread reaps it and records how it ended
        why = (f"the IK worker process (pid {child.process.pid}) died {when} "
               f"({child.exit or 'exit status unknown'}); restarting it")
        self._mark_lost(child, why)
        return WorkerError(why)

    def _mark_lost(self, child: _Child, why: str) -> None:
        with self._cond:
            child.ready = False
            if self._child is child and self._state == READY:
                self._state, self._reason = RESTARTING, why
                self._cond.notify_all()
