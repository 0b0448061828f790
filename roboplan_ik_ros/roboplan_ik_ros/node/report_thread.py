"""~/status, ~/markers, ~/perceived_cloud and /diagnostics published from a thread of their own.

A status report in the executor's thread (the loop's snapshot, the message, the markers: ~1 ms with a cell of
obstacles) delays the callbacks behind it (when the ticks ran in the executor with ``trigger: joint_states``, the
tick with them). In their own thread the reports give way to the executor's callbacks at every GIL
hand-over (0.1 ms, ``sys.setswitchinterval``) except inside a message's conversion to C. Measured with
bench_node, idle, 3 interleaved rounds against the reports in the executor (with the marker cache of
markers.py): config d, joint_states trigger, 500 Hz: 95.60 / 94.73 / 95.15 -> 98.29 / 98.17 / 98.23 % of
the ticks on time (the robot's own /joint_states 98.2-99.4 % on time); config d, timer, 1 kHz: 98.77 / 98.36
/ 98.98 -> 99.20 / 99.57 / 99.69 %, the longest gap between ticks 5.4 / 27.8 / 24.4 -> 4.3 / 2.9 / 8.0 ms.

Each job runs at its own period (the thread wakes at the shortest); a job due late runs once, not in a
burst. With ``diagnostic_updater`` installed, /diagnostics keeps the updater's own timer (its API owns it).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from .loop_thread import LoopThread


class ReportThread:
    """Runs each ``(period [s], job)`` at its period in a thread named ``name`` (``on_start()`` first in
    it: the node's :class:`~.loop_thread.SharedThreadPriority`), while ``running()`` is true (the node's ROS
    context: after rclpy's own SIGINT handler shut it down, a publish only raises; an executor's timer would
    not have fired either)."""

    def __init__(self, jobs: list[tuple[float, Callable[[], None]]], name: str = "reporting",
                 running: Callable[[], bool] = lambda: True, on_start: Callable[[], None] | None = None) -> None:
        if not jobs or min(p for p, _ in jobs) <= 0.0:
            raise ValueError("ReportThread: expected at least one job, each with a period > 0")
        self.period = min(p for p, _ in jobs)  # [s] the thread's wake-up period
        self._jobs = [[period, job, -math.inf] for period, job in jobs]  # period, job, last start
        self._running = running
        self._thread = LoopThread(self.period, self._run, name=name, on_start=on_start)  # on_start: first, in it

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop and wait for the job in progress to finish (idempotent)."""
        self._thread.stop()

    def _run(self, now: float) -> None:
        if not self._running():
            return
        slack = 0.5 * self.period  # a wake-up a little early still runs a job due at it
        for entry in self._jobs:
            period, job, last = entry
            if now - last >= period - slack:
                entry[2] = now
                job()
