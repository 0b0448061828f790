"""The control loop's own thread: ticks on an absolute schedule, independent of the executor.

Goals, parameters, status and diagnostics run in the executor's thread (``~/solve_ik`` in its
own); a burst of them delays a tick by at most the GIL hand-over (``sys.setswitchinterval``) each
time the tick wants the GIL back, not by a queue of callbacks. A tick that starts more than one period late re-bases the schedule (no catch-up
burst of ticks).
"""

from __future__ import annotations

import ctypes
import ctypes.util
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


class LoopThread:
    def __init__(self, period: float, tick: Callable[[float], None], name: str = "control_loop") -> None:
        self.period = period  # [s]
        self._tick = tick  # called with the tick's start time (time.perf_counter())
        self._name = name
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop and wait for the tick in progress to finish."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5.0)
        self._thread = None

    def _run(self) -> None:
        _set_os_thread_name(self._name)
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
