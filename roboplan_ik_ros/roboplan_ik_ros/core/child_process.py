"""SupervisedChild: a helper process the caller starts, watches, restarts on death and stops, so that
its work does not share the caller's interpreter lock (GIL). ROS-free.

The IK worker (``simple_ik/worker.py``: SimpleIK) and the cloud ingest (``model/ingest_process.py``:
a point cloud's numpy filter) are such children; this module is what they share. The child is a
multiprocessing ``spawn`` or ``forkserver`` child (a fresh interpreter, or a fork of a server that
imported the package and nothing else: never a ``fork`` of a process that may run DDS threads),
built from a picklable spec, that talks to the parent over a pipe: it says "ready" once built, then
answers one request at a time (:meth:`SupervisedChild._begin_request`, :meth:`~SupervisedChild._await_reply`).

Life cycle, all in the background (the constructor returns at once):

* ``starting``: a monitor thread spawns the child and waits for its "ready" message. Until then a
  request raises :class:`WorkerError` (the caller decides whether to fall back to in-process work).
* ``ready``: requests go to the child, one at a time (``_request_lock``).
* ``restarting``: the child died (crash, kill, or killed as wedged). The request in flight, if any,
  fails with :class:`WorkerError` naming the cause; the monitor thread restarts the child (at most
  once per ``restart_interval``).
* ``failed``: ``max_start_failures`` starts in a row ended before "ready" (the message says why,
  e.g. the child's exception while building); no more attempts.
* ``stopped``: after :meth:`SupervisedChild.stop`; requests fail with :class:`WorkerError`.

The child ends by itself when the parent goes away (:func:`child_started`): its pipe reaches EOF when
the parent closes it or dies, and a watchdog thread exits when the parent pid changes (work in
progress, or a child still importing). Interpreter exit also stops every live child (``atexit``). The
child ignores SIGINT (Ctrl-C in a terminal reaches the whole process group; the parent stops it).
multiprocessing also starts its resource-tracker process once per parent; it ends with the parent.
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
from collections.abc import Callable
from multiprocessing.connection import wait as _wait_any

from .errors import InvalidInputError

STARTING, READY, RESTARTING, FAILED, STOPPED = "starting", "ready", "restarting", "failed", "stopped"

_PARENT_POLL = 0.5  # [s] the child's check that its parent is still alive
_STOP_JOIN = 1.0  # [s] per escalation step of stop(): exit on request, SIGTERM, SIGKILL


class WorkerError(RuntimeError):
    """The child cannot answer: not started yet, restarting, failed, stopped, died or wedged."""


# ------------------------------------------------------------------------------------------ child
def _watch_parent(owner_pid: int) -> None:
    """Exit once the owner (the process that made the SupervisedChild) is gone: no orphan. Spawned, the
    owner is the parent; forked from a fork server, the parent is the server (which ends with the owner)."""
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


def child_started(owner_pid: int) -> None:
    """First in a child's main function: ignore SIGINT (the parent stops it) and exit when the owner
    ``owner_pid`` is gone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_watch_parent, args=(owner_pid,), name="parent_watch", daemon=True).start()


def lower_priority(nice: int, sched_idle: bool) -> None:
    """In the child: SCHED_IDLE, else ``nice`` added to its niceness (kept as it is where refused)."""
    try:
        if sched_idle:
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        elif nice > 0:
            os.nice(nice)
    except (OSError, AttributeError):  # not permitted, or not Linux: keep the normal priority
        pass


# ----------------------------------------------------------------------------------------- parent
def build_or_report(conn, build: Callable[[], object]) -> tuple[bool, object]:
    """A child's start-up: ``(True, build())``, or ``(False, None)`` after telling the parent why it failed
    (``("error", "Type: message")``; the child then exits)."""
    try:
        return True, build()
    except BaseException as exc:  # noqa: BLE001 - report why, then exit
        try:
            conn.send(("error", f"{type(exc).__name__}: {exc}"))
        except OSError:
            pass
        return False, None


def report_ready(conn, t0: float) -> bool:
    """Tell the parent the child is ready (its pid, the start-up's duration since ``t0`` = time.perf_counter());
    False when the parent is gone."""
    try:
        conn.send(("ready", os.getpid(), time.perf_counter() - t0))
    except OSError:
        return False
    return True


def answer(conn, rid: int, work: Callable[[], tuple]) -> bool:
    """A child's answer to request ``rid``: ``work()``'s reply, ``("invalid", rid, why)`` when it raised
    InvalidInputError, ``("failed", rid, "Type: message")`` on any other error (a bug: the child stays alive for the
    next request); sent on ``conn``. False when the parent is gone (the child then ends)."""
    try:
        reply = work()
    except InvalidInputError as exc:
        reply = ("invalid", rid, str(exc))
    except Exception as exc:  # noqa: BLE001 - a bug: answer, and stay alive for the next request
        reply = ("failed", rid, f"{type(exc).__name__}: {exc}")
    try:
        conn.send(reply)
    except OSError:
        return False
    return True


class _Child:
    """One started child process (a generation) and the parent's end of its pipe."""

    def __init__(self, process, conn, started: float) -> None:
        self.process = process
        self.conn = conn
        self.started = started  # time.monotonic() at spawn
        self.ready = False
        self.sent: dict[str, object] = {}  # what the parent has sent this child (versions of its state)
        self.death = ""  # why the parent killed it (else it crashed)
        self.exit = ""  # how it ended, set by the monitor thread (the only one that reaps a ready child)
        self.exited = threading.Event()


_LIVE: weakref.WeakSet = weakref.WeakSet()
_PRELOAD = [__name__]  # modules the fork server imports before it forks a child (preload_in_forkserver)


@atexit.register
def _stop_all_at_exit() -> None:  # runs before multiprocessing's own exit handler (registered earlier)
    for child in list(_LIVE):
        child.stop()


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def preload_in_forkserver(module: str) -> None:
    """Have the fork server import ``module`` (a child's main function's) before it forks: a child forked
    from it imports nothing before it ignores SIGINT. Call at the module's import; effective for a
    server started afterwards."""
    if module not in _PRELOAD:
        _PRELOAD.append(module)


def start_forkserver(timeout: float = 60.0) -> None:
    """Start multiprocessing's fork server now, with the children's modules preloaded. Call once, early,
    from the main thread of a process that will start children with ``start_method="forkserver"`` (the
    node does at start). A child forked from it imports nothing before its main function ignores SIGINT,
    so a Ctrl-C to the process group while a child starts neither kills it nor prints a traceback (a
    spawned child imports the parent's main module and pinocchio first: seconds in which the signal
    raises KeyboardInterrupt there); and it starts in a fraction of a spawn's time. Returns once the
    server runs (at most ``timeout`` [s]: a loaded machine imports pinocchio slowly)."""
    ctx = multiprocessing.get_context("forkserver")
    # a forked child still runs the parent's main module (as __mp_main__) before its target: what that module
    # imported (its package's modules, rclpy) is preloaded, so re-running its body takes milliseconds. Not the
    # module itself: run again while already imported, runpy warns of "unpredictable behaviour"
    main_spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    preload = list(_PRELOAD)
    if main_spec is not None and main_spec.name:
        roots = {main_spec.name.split(".")[0], "rclpy"}
        preload += sorted(n for n, m in list(sys.modules.items())
                          if m is not None and n != main_spec.name and n.split(".")[0] in roots and n not in preload)
    ctx.set_forkserver_preload(preload)
    # a first (empty) child: returns once the server has preloaded and ignores SIGINT itself (until then a
    # Ctrl-C would interrupt its imports), so from here on no start of a child can be interrupted
    probe = ctx.Process(target=_noop, name="forkserver_probe", daemon=True)
    probe.start()
    probe.join(timeout)


def _noop() -> None:
    """The target of :func:`start_forkserver`'s probe child."""


class SupervisedChild:
    """A child process and the monitor thread that starts and restarts it; see the module docstring.

    A subclass names itself (:attr:`label` in messages, :attr:`process_name`, :attr:`builds`: what the
    child builds before "ready"), gives the child's main function and its arguments
    (:meth:`_child_main`: called as ``main(conn, *args)``; it sends ``("ready", pid, build_seconds)`` or
    ``("error", text)``, then answers requests until ``("stop",)`` or EOF) and calls :meth:`start`.

    Args:
        on_event: ``on_event(level, message)`` with level "info", "warning" or "error", called from
            the monitor thread when the child becomes ready, dies, restarts or fails.
        start_method: multiprocessing start method, "spawn" or "forkserver" ("fork" is refused: the
            parent may run DDS threads).
        start_timeout: [s] a child that is not ready within this counts as a failed start.
        restart_interval: [s] least time between two starts.
        max_start_failures: consecutive starts that end before "ready" after which it gives up.
    """

    label = "child"  # "the {label} process (pid ...) died"
    process_name = "child"
    builds = "state"  # "could not build its {builds}", "... s of it building the {builds}"

    def __init__(self, *, on_event: Callable[[str, str], None] | None = None, start_method: str = "spawn",
                 start_timeout: float = 60.0, restart_interval: float = 1.0, max_start_failures: int = 3) -> None:
        if start_method not in ("spawn", "forkserver"):
            raise InvalidInputError(f"start_method: expected 'spawn' or 'forkserver', got {start_method!r}")
        self.on_event = on_event
        self.start_timeout = start_timeout
        self.restart_interval = restart_interval
        self.max_start_failures = max_start_failures
        self._ctx = multiprocessing.get_context(start_method)
        if start_method == "forkserver":  # (no effect once the server runs: start_forkserver did it already)
            self._ctx.set_forkserver_preload(list(_PRELOAD))
        self._cond = threading.Condition()  # guards the state below
        self._request_lock = threading.Lock()  # one request at a time
        self._stop = threading.Event()
        self._monitor: threading.Thread | None = None
        self._child: _Child | None = None
        self._state = STOPPED
        self._reason = f"the {self.label} is not started"
        self._next_id = 0
        self.starts = 0  # children spawned
        self.crashes = 0  # ready children that died without being stopped
        self.start_seconds = math.nan  # [s] spawn -> ready of the last ready child (parent's clock)
        self.build_seconds = math.nan  # [s] of that, the child's own build

    def _child_main(self) -> tuple[Callable, tuple]:
        """(the child's main function, its arguments after the pipe's end); called at each spawn."""
        raise NotImplementedError

    # ------------------------------------------------------------------ state
    @property
    def state(self) -> str:
        return self._state

    @property
    def ready(self) -> bool:
        return self._state == READY

    @property
    def reason(self) -> str:
        """Why the child cannot answer now ("" when ready)."""
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
            self._state, self._reason = STARTING, f"the {self.label} process is starting"
            self._monitor = threading.Thread(target=self._run, name=f"{self.process_name}_monitor", daemon=True)
            self._monitor.start()
        _LIVE.add(self)

    def stop(self, timeout: float = _STOP_JOIN) -> None:
        """Stop the child (asks, then SIGTERM, then SIGKILL) and the monitor; idempotent. A request
        in flight fails with WorkerError."""
        self._stop.set()
        with self._cond:
            child, monitor = self._child, self._monitor
            self._state, self._reason = STOPPED, f"the {self.label} is stopped"
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
        number and the request waits on that pipe for all of its time instead of seeing this child's
        end (seen under load). A request on a dead child sees the end of the pipe and returns at once,
        so the wait is short; after ``timeout`` (a child that could not be killed) the pipe is left to
        the garbage collector, which closes it with its last reference.
        """
        if self._request_lock.acquire(timeout=timeout):
            try:
                child.conn.close()
            finally:
                self._request_lock.release()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    # ------------------------------------------------------------------ monitor thread
    def _spawn(self) -> _Child:
        parent_conn, child_conn = self._ctx.Pipe(duplex=True)
        main, args = self._child_main()
        process = self._ctx.Process(target=main, name=self.process_name, daemon=True, args=(child_conn, *args))
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
                child, why = None, f"cannot start the {self.label} process: {type(exc).__name__}: {exc}"
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
                why = child.death or f"the {self.label} process (pid {child.process.pid}) died ({child.exit})"
                self._set_state(RESTARTING, f"{why}; restarting it")
                self._event("warning", f"{why}; restarting it")
            else:
                failures += 1
                if child is not None:
                    self._end(child, _STOP_JOIN)
                if failures >= self.max_start_failures:
                    reason = f"the {self.label} could not start ({failures} attempts): {why}"
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
                return f"the {self.label} process was not ready within {self.start_timeout:g} s"
            events = _wait_any([child.conn, p.sentinel], timeout=remaining)
            if child.conn in events:
                try:
                    msg = child.conn.recv()
                except (EOFError, OSError):
                    p.join(_STOP_JOIN)
                    return f"the {self.label} process died while starting ({_describe_exit(p.exitcode)})"
                if msg[0] == "error":
                    return f"the {self.label} process could not build its {self.builds}: {msg[1]}"
                if msg[0] == "ready":
                    self.start_seconds = time.monotonic() - child.started
                    self.build_seconds = float(msg[2])
                    with self._cond:
                        if self._stop.is_set():
                            return "stopped"
                        child.ready = True
                        self._state, self._reason = READY, ""
                        self._cond.notify_all()
                    self._event("info", f"{self.label} process ready (pid {p.pid}, {self.start_seconds:.2f} s after "
                                        f"spawn, {self.build_seconds:.2f} s of it building the {self.builds})")
                    return ""
            elif p.sentinel in events:
                p.join(_STOP_JOIN)
                return f"the {self.label} process died while starting ({_describe_exit(p.exitcode)})"
        return "stopped"

    # ------------------------------------------------------------------ requests
    def _begin_request(self, prepare: Callable[[_Child], object] | None = None) -> tuple[_Child, int, object]:
        """With ``_request_lock`` held: (the ready child, a new request id, ``prepare(child)``'s value, run
        under the state's lock), or raise WorkerError saying why there is no ready child."""
        with self._cond:
            child = self._child
            if self._state != READY or child is None or not child.ready:
                raise WorkerError(self._reason or f"the {self.label} is not ready")
            self._next_id += 1
            return child, self._next_id, (prepare(child) if prepare is not None else None)

    def _send(self, child: _Child, message: tuple, payload=None) -> None:
        """``message`` (pickled), then ``payload`` (a bytes-like object, not pickled) if given."""
        try:
            child.conn.send(message)
            if payload is not None:
                child.conn.send_bytes(payload)
        except (OSError, ValueError) as exc:  # the child died, or stop() closed the pipe
            raise self._lost(child, f"while sending the request ({type(exc).__name__})") from None

    def _await_reply(self, child: _Child, rid: int, give_up: float, during: str):
        """The child's reply to request ``rid`` (a tuple whose [1] is the id; replies to earlier requests
        are dropped), or None if none came by ``give_up`` (``time.monotonic``). Raises WorkerError if the
        child died (``during``: what it was doing, for the message)."""
        while True:
            remaining = give_up - time.monotonic()
            try:
                if remaining <= 0 or not child.conn.poll(remaining):
                    return None
                reply = child.conn.recv()
            except (EOFError, OSError, ValueError):
                raise self._lost(child, during) from None
            if reply[1] == rid:
                return reply

    def _kill_wedged(self, child: _Child, why: str) -> WorkerError:
        """Kill a child that did not answer in time (never leave it working on a request nobody waits
        for); the monitor thread restarts it. Returns the request's error."""
        child.death = why
        self._mark_lost(child, why + "; restarting it")
        child.process.kill()
        return WorkerError(why + "; restarting it")

    def _lost(self, child: _Child, when: str) -> WorkerError:
        """The error for a request whose child went away (the monitor thread restarts it)."""
        if self._stop.is_set():
            return WorkerError(f"the {self.label} was stopped {when}")
        child.exited.wait(1.0)  # the monitor thread reaps it and records how it ended
        why = (f"the {self.label} process (pid {child.process.pid}) died {when} "
               f"({child.exit or 'exit status unknown'}); restarting it")
        self._mark_lost(child, why)
        return WorkerError(why)

    def _mark_lost(self, child: _Child, why: str) -> None:
        with self._cond:
            child.ready = False
            if self._child is child and self._state == READY:
                self._state, self._reason = RESTARTING, why
                self._cond.notify_all()
