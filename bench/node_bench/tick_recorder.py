"""The benchmark's record of every control tick of the node it runs, kept through the node's ``tick_observer``
hook (roboplan_ik_ros.node.tick_observer) in the node's process: each tick's start and duration as the node
records them for its diagnostics (in a ring of ``capacity``, as the node's own TickStats, but as large as the
run), and the loop thread's CPU time in the same tick (``time.thread_time``, ~1 us a call): a tick p99 above
its CPU p99 is time the tick waited (GIL, a lock, preemption), not computed."""

from __future__ import annotations

import time

import numpy as np

from .process_stats import commit_pages


class TickRecorder:
    """A TickObserver keeping ``capacity`` ticks (see the module docstring); no allocation per tick."""

    def __init__(self, capacity: int) -> None:
        from roboplan_ik_ros.node.diagnostics import TickStats

        self.ticks = TickStats(size=capacity)  # start [s] and duration [s] of the last ``capacity`` ticks
        self.cpu_starts, self.cpu_durations = np.zeros(capacity), np.zeros(capacity)  # [s] the first ``capacity``
        commit_pages(self.ticks.starts, self.ticks.durations, self.cpu_starts, self.cpu_durations)
        self.n_cpu = 0
        self._cpu_at_start = 0.0

    def tick_started(self, start: float) -> None:
        self._cpu_at_start = time.thread_time()

    def tick_ended(self, start: float, duration_s: float) -> None:
        cpu_s = time.thread_time() - self._cpu_at_start
        self.ticks.record(start, duration_s)
        k = self.n_cpu
        if k < len(self.cpu_starts):
            self.cpu_starts[k], self.cpu_durations[k] = start, cpu_s
            self.n_cpu = k + 1

    def as_json(self) -> dict:
        """The ticks in start order and the CPU samples (the keys the tracking run reads)."""
        s = self.ticks
        n = min(s.count, s.size)
        order = np.argsort(s.starts[:n])
        return {"starts": s.starts[:n][order].tolist(), "durations": s.durations[:n][order].tolist(),
                "cpu_starts": self.cpu_starts[:self.n_cpu].tolist(),
                "cpu_durations": self.cpu_durations[:self.n_cpu].tolist()}
