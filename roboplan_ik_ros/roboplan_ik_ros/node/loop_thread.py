"""The control loop's own thread: ticks on an absolute schedule, independent of the executor.

Goals and parameters run in the executor's thread (status and diagnostics in ``reporting``, ``~/solve_ik`` in
its own); a burst of them delays a tick by at most the GIL hand-over (``sys.setswitchinterval``) each
time the tick wants the GIL back, not by a queue of callbacks. A tick that starts more than one period late re-bases the schedule (no catch-up
burst of ticks).

Priority (``node.loop_priority``): the thread asks for SCHED_FIFO at that priority, as
ros2_control's controller manager does for its loop (``thread_priority``, default 50). A FIFO
thread runs as soon as it wakes and is not preempted by normal processes, so other work on the
machine (the ~/solve_ik worker, DDS, another program) no longer stretches its ticks; the kernel's
RT throttling (95 % of each second by default) still leaves time to everything else. Without the
permission (an rtprio limit in /etc/security/limits.conf, or CAP_SYS_NICE) the thread runs at
normal priority and ``on_priority`` says why.

With ``trigger: joint_states`` the ticks run in a thread of their own too (:class:`WokenLoopThread`), woken by
the /joint_states callback; the executor's thread, which this code does not own, gets ``other_threads_priority``
while active (:class:`BorrowedThreadPriority`, given back on deactivate).

Measured (bench_node, config c, timer, 4 interleaved pairs of 20 s runs, ticks pooled): with a
~/solve_ik stream of 20 calls/s, tick p99 588 -> 756 us (+28.5 %) at normal priority; with the
service in a separate process instead of the node's (variant "external") still +22.7 %: what
stretched the ticks was CPU competition on the two cores, not the GIL. At SCHED_FIFO 50: +10.7 %
and -9.5 % in two such sets (timer), +3.3 % (b) and +6.0 % (c) with joint_states (3 pairs of 15 s).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import threading
import time
from collections.abc import Callable

_PR_SET_NAME = 15


def _set_os_thread_name(name: str) -> None:
    """Name the calling thread for the OS (top -H, /proc/<pid>/task/<tid>/comm): Linux only, best effort."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_NAME, name.encode()[:15], 0, 0, 0)
    except (OSError, AttributeError):
        pass


#: [s] GIL hand-over: a thread woken for its tick (or a drive's step) waits at most this long for another Python
#: thread to give the GIL back (CPython's default is 5 ms)
GIL_SWITCH_INTERVAL = 0.0001


def shorten_gil_switch_interval() -> None:
    """``sys.setswitchinterval(GIL_SWITCH_INTERVAL)`` unless the process already asks for a shorter one."""
    if sys.getswitchinterval() > GIL_SWITCH_INTERVAL:
        sys.setswitchinterval(GIL_SWITCH_INTERVAL)


def set_fifo_priority(priority: int) -> str:
    """Put the calling thread under SCHED_FIFO at ``priority`` (1-99); "" on success, else why not."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))  # 0: this thread (Linux)
    except (OSError, AttributeError) as exc:  # EPERM without the permission; AttributeError: not Linux
        return (f"{exc}; running at normal priority (allow it with an rtprio limit of at least {priority} in "
                f"/etc/security/limits.conf, or CAP_SYS_NICE; or set node.loop_priority: 0)")
    return ""


class BorrowedThreadPriority:
    """SCHED_FIFO for a thread this code does not own (the executor's, while active), given back on :meth:`restore`.

    :meth:`apply_here` is called from that thread (on activate); it remembers the thread's
    policy and :meth:`restore` (from any thread: Linux sets a policy by thread id) puts it back."""

    def __init__(self, priority: int) -> None:
        self.priority = priority
        self._tid: int | None = None
        self._saved: tuple[int, int] | None = None  # (policy, priority) before

    @property
    def applied_to(self) -> int | None:
        """The native id of the thread now running at the priority, if any."""
        return self._tid

    def apply_here(self) -> str:
        """SCHED_FIFO for the calling thread; "" on success, else why not."""
        try:
            saved = (os.sched_getscheduler(0), os.sched_getparam(0).sched_priority)
        except (OSError, AttributeError) as exc:
            return f"{exc}; running at normal priority"
        why_not = set_fifo_priority(self.priority)
        if not why_not:
            self._tid, self._saved = threading.get_native_id(), saved
        return why_not

    def restore(self) -> None:
        """The thread's scheduling as before :meth:`apply_here` (idempotent; a thread gone is fine)."""
        if self._tid is None:
            return
        tid, (policy, priority) = self._tid, self._saved
        self._tid = self._saved = None
        try:
            os.sched_setscheduler(tid, policy, os.sched_param(priority))
        except OSError:  # e.g. ESRCH: the thread has ended
            pass


class SharedThreadPriority:
    """SCHED_FIFO at ``priority`` for the node's threads other than the loop's (``node.other_threads_priority``).

    In CPython every thread that runs Python holds, in turns, the GIL the ticks need. A normal process that
    preempts one of them while it holds it (one core busy elsewhere) stalls the loop until the scheduler gives
    that thread its CPU back: a priority inversion, since the GIL has no priority inheritance. Under SCHED_FIFO
    below the loop's priority no normal process preempts them. Each thread calls :meth:`apply_here` as it
    starts (Linux sets a policy per thread); ``report(ok, message)`` hears of each success and of the first
    refusal (they all fail alike: the rtprio limit).

    Measured (bench_node, config c and d, timer, 1 kHz, one core kept busy by another process, 2 runs each):
    on time 99.02-99.08 % (c) and 98.59-99.25 % (d) with these threads at normal priority, 99.89-99.96 % and
    99.86-99.89 % under SCHED_FIFO 40 (the loop at 50); Fast DDS's reception threads under SCHED_FIFO instead
    changed nothing (98.98-99.07 %, 99.28-99.34 %)."""

    def __init__(self, priority: int, report: Callable[[bool, str], None] | None = None) -> None:
        self.priority = priority
        self._report = report
        self._lock = threading.Lock()
        self._refused = False
        self.applied: list[str] = []  # the threads now under it (names given to apply_here)

    def apply_here(self, what: str) -> None:
        """SCHED_FIFO for the calling thread (``what`` names it in the report); nothing at priority 0."""
        if self.priority <= 0:
            return
        why_not = set_fifo_priority(self.priority)
        with self._lock:
            first_refusal = bool(why_not) and not self._refused
            self._refused = self._refused or bool(why_not)
            if not why_not:
                self.applied.append(what)
        if self._report is not None and (first_refusal or not why_not):
            self._report(not why_not, f"{what}: {why_not or f'SCHED_FIFO priority {self.priority}'}")


class _TickThread:
    """A thread named ``name`` that runs :meth:`_loop` until :meth:`stop`.

    ``priority`` > 0: the thread asks for SCHED_FIFO at that priority when it starts and reports the
    outcome once through ``on_priority(ok, message)`` (called from the thread); ``on_start`` is called next."""

    def __init__(self, name: str, priority: int, on_priority: Callable[[bool, str], None] | None,
                 on_start: Callable[[], None] | None) -> None:
        self._name = name
        self.priority = priority
        self._on_priority = on_priority
        self._on_start = on_start  # called first in the thread (e.g. SharedThreadPriority.apply_here)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def name(self) -> str:
        return self._name

    @property
    def native_id(self) -> int | None:
        """The OS thread id (top -H, sched_getscheduler), None before the start."""
        thread = self._thread
        return None if thread is None else thread.native_id

    def is_alive(self) -> bool:
        thread = self._thread
        return thread is not None and thread.is_alive()

    def start(self) -> None:
        if self.is_alive():
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop and wait for the tick in progress to finish (at most 5 s)."""
        self._stop.set()
        self._interrupt()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5.0)

    def _interrupt(self) -> None:
        """Wake the thread from its wait so that it sees the stop (nothing to do for a bounded sleep)."""

    def _run(self) -> None:
        _set_os_thread_name(self._name)
        if self.priority > 0:
            why_not = set_fifo_priority(self.priority)
            if self._on_priority is not None:
                self._on_priority(not why_not, why_not or f"SCHED_FIFO priority {self.priority}")
        if self._on_start is not None:
            self._on_start()
        self._loop()

    def _loop(self) -> None:
        raise NotImplementedError


class LoopThread(_TickThread):
    """Calls ``tick(start_time)`` every ``period`` seconds in a thread named ``name`` (``trigger: timer``).

    ``priority`` > 0: the thread asks for SCHED_FIFO at that priority when it starts and reports the
    outcome once through ``on_priority(ok, message)`` (called from the loop thread)."""

    def __init__(self, period: float, tick: Callable[[float], None], name: str = "control_loop",
                 priority: int = 0, on_priority: Callable[[bool, str], None] | None = None,
                 on_start: Callable[[], None] | None = None) -> None:
        super().__init__(name, priority, on_priority, on_start)
        self.period = period  # [s]
        self._tick = tick  # called with the tick's start time (time.perf_counter())

    def _loop(self) -> None:
        next_start = time.perf_counter()
        while not self._stop.is_set():
            now = time.perf_counter()
            if next_start > now:
                time.sleep(next_start - now)
            elif now - next_start > self.period:
                next_start = now  # fell behind by more than a period: re-base, no burst
            if self._stop.is_set():
                break
            start = time.perf_counter()
            self._tick(start)
            next_start += self.period


class WokenLoopThread(_TickThread):
    """Calls ``tick(start_time)`` in a thread named ``name`` each time :meth:`wake` is called (``trigger:
    joint_states``: the /joint_states callback wakes it), and ``idle(now)`` after each ``idle_period`` [s] without
    a wake (the staleness watchdog). Wakes that come while a tick runs give one more tick, not a burst.

    The ticks run in a thread of their own, not in the executor's that receives the measurement: the executor goes
    on with its callbacks while the tick runs at ``priority``. :meth:`wake` is one lock release (a C call, no
    Python-level Condition as an Event's ``set``): the thread waits in ``Lock.acquire(timeout=...)`` with the GIL
    released, and takes the GIL back within the switch interval (:func:`shorten_gil_switch_interval`)."""

    def __init__(self, tick: Callable[[float], None], idle: Callable[[float], None], idle_period: float,
                 name: str = "control_loop", priority: int = 0,
                 on_priority: Callable[[bool, str], None] | None = None,
                 on_start: Callable[[], None] | None = None) -> None:
        super().__init__(name, priority, on_priority, on_start)
        self.idle_period = idle_period  # [s]
        self._tick = tick  # called with the tick's start time (time.perf_counter())
        self._idle = idle
        self._wake = threading.Lock()  # released = a wake is pending
        self._wake.acquire()

    def start(self) -> None:
        if not self.is_alive():
            self._wake.acquire(blocking=False)  # no wake left pending by a stop
        super().start()

    def wake(self) -> None:
        """Ask for a tick (any thread; a wake already pending is kept, not doubled)."""
        try:
            self._wake.release()
        except RuntimeError:  # released already: a wake is pending
            pass

    def _interrupt(self) -> None:
        self.wake()

    def _loop(self) -> None:
        while not self._stop.is_set():
            woken = self._wake.acquire(timeout=self.idle_period)
            if self._stop.is_set():
                break
            start = time.perf_counter()
            if woken:
                self._tick(start)
            else:
                self._idle(start)


class TickGap:
    """The end of a control tick, for threads that want to start work in the idle part of the period
    (``~/solve_ik``, status, diagnostics): :meth:`wait` blocks until the next tick has ended. The tick
    calls :meth:`ended`, which costs an attribute check unless a thread waits (an Event's ``set`` is
    Python-level Condition work, several microseconds on a cold cache, 500 times a second)."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._wanted = False
        self.running = False  # a tick runs (between started() and ended())

    def started(self) -> None:
        """Called by the tick as it starts."""
        self.running = True

    def ended(self) -> None:
        """Called by the tick as it ends."""
        self.running = False
        if self._wanted:
            self._wanted = False
            self._event.set()

    def wait(self, timeout: float) -> bool:
        """Block until a tick ends (at most ``timeout`` [s]); True if one did."""
        self._event.clear()
        self._wanted = True
        return self._event.wait(timeout)


def run_on_schedule(period: float, step: Callable[[float], bool], first_start: float, deadline: float) -> bool:
    """Call ``step(start_time)`` at ``first_start``, ``first_start + period``, ... (``time.perf_counter()``
    times, sleeping in between; a late call re-bases the schedule, no burst) until it returns True:
    True then, False when ``deadline`` passed first. For work that must keep the control period in
    the calling thread (the braking commands of a controlled stop)."""
    next_start = first_start
    while True:
        now = time.perf_counter()
        if now > deadline:
            return False
        if next_start > now:
            time.sleep(next_start - now)
        elif now - next_start > period:
            next_start = now
        if step(time.perf_counter()):
            return True
        next_start += period
