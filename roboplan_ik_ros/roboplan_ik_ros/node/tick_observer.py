"""The supported way to time the node's control ticks from outside it (benchmarks, profilers): an object
set as ``IKControllerNode.tick_observer`` is told when each tick starts and when it ends, in the thread
that runs the tick (``trigger: timer``: the loop thread; ``trigger: joint_states``: the executor's), so it
may also read that thread's clocks (e.g. ``time.thread_time()``, the tick's CPU time).

Only ticks the active node runs are observed (a tick called while inactive returns at once, unseen). The
observer runs inside the tick, on its hot path: it must be quick and must not raise (an exception is a
fault of the tick: controlled stop, error transition)."""

from __future__ import annotations

from typing import Protocol


class TickObserver(Protocol):
    """Told of each tick; ``start`` [s, ``time.perf_counter()``] is the tick's start as the node records it
    (the t0 of its diagnostics' tick statistics), the same in both calls of one tick."""

    def tick_started(self, start: float) -> None:
        """A tick begins (before the loop's lock is taken)."""

    def tick_ended(self, start: float, duration_s: float) -> None:
        """The tick begun at ``start`` ended: ``duration_s`` [s] is the duration the node records for it
        (from ``start`` to the end of the step, its publication and the node's bookkeeping)."""
