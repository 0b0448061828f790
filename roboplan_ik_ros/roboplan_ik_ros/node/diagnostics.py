"""Loop statistics and /diagnostics.

:class:`TickStats` records tick start times and durations in preallocated ring buffers (no
allocation per tick); percentiles are computed only when a report is built.
:class:`DiagnosticsReporter` publishes through ``diagnostic_updater`` where it is installed, else
(one log line) publishes diagnostic_msgs/DiagnosticArray itself with the same content.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

try:  # the real library where it is installed (apt ROS 2); not on PyPI
    import diagnostic_updater  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - depends on the install
    diagnostic_updater = None

OK, WARN, ERROR = DiagnosticStatus.OK, DiagnosticStatus.WARN, DiagnosticStatus.ERROR


class TickStats:
    """Ring buffers of the last ``size`` ticks: start time [s] and duration [s]."""

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self.starts = np.zeros(size)
        self.durations = np.zeros(size)
        self.count = 0  # total ticks recorded
        self.late = 0  # ticks that started more than half a period late
        self._last_start = None
        self.period = 0.0

    def reset(self, period: float) -> None:
        self.period = period
        self.count = 0
        self.late = 0
        self._last_start = None

    def record(self, start: float, duration: float) -> None:
        k = self.count % self.size
        self.starts[k] = start
        self.durations[k] = duration
        if self._last_start is not None and start - self._last_start > 1.5 * self.period:
            self.late += 1
        self._last_start = start
        self.count += 1

    def summary(self) -> dict[str, float]:
        """Rate [Hz] over the buffer, tick duration p50/p99/max [us], late share [%] since reset, and
        the counts since reset (ticks, late ticks): an observer takes the on-time share of any window
        from two readings."""
        n = min(self.count, self.size)
        if n < 2:
            return {"rate_hz": 0.0, "tick_p50_us": 0.0, "tick_p99_us": 0.0, "tick_max_us": 0.0, "late_pct": 0.0,
                    "ticks": self.count, "late_ticks": self.late}
        idx = (np.arange(self.count - n, self.count)) % self.size
        starts = self.starts[idx]
        d = self.durations[idx] * 1e6
        span = starts[-1] - starts[0]
        return {
            "rate_hz": (n - 1) / span if span > 0 else 0.0,
            "tick_p50_us": float(np.percentile(d, 50)),
            "tick_p99_us": float(np.percentile(d, 99)),
            "tick_max_us": float(d.max()),
            "late_pct": 100.0 * self.late / max(1, self.count - 1),
            "ticks": self.count,
            "late_ticks": self.late,
        }


# report function: () -> (level, message, [(key, value), ...])
Report = Callable[[], tuple[bytes, str, list[tuple[str, str]]]]


class DiagnosticsReporter:
    """Publishes one diagnostic status ``"<node>: <name>"`` built by ``report`` every ``period`` [s]."""

    def __init__(self, node, name: str, report: Report, period: float, hardware_id: str = "none",
                 own_timer: bool = True) -> None:
        """``own_timer`` False: without diagnostic_updater, the caller calls :meth:`publish` every ``period``
        (:attr:`has_own_timer` says which); the updater, when installed, always runs its own timer."""
        self.node = node
        self.report = report
        self._updater = None
        self._pub = None
        self._timer = None
        if diagnostic_updater is not None:
            self._updater = diagnostic_updater.Updater(node, period)
            self._updater.setHardwareID(hardware_id)
            self._updater.add(name, self._fill_wrapper)
        else:
            node.get_logger().info(
                "diagnostic_updater is not installed: publishing /diagnostics directly (same content)"
            )
            self._status = DiagnosticStatus(name=f"{node.get_name()}: {name}", hardware_id=hardware_id)
            self._pub = node.create_publisher(DiagnosticArray, "/diagnostics", 10)
            if own_timer:
                self._timer = node.create_timer(period, self.publish)
        self.has_own_timer = self._updater is not None or self._timer is not None

    def _fill_wrapper(self, stat):
        level, message, values = self.report()
        stat.summary(level, message)
        for key, value in values:
            stat.add(key, value)
        return stat

    def publish(self) -> None:
        if self._updater is not None:
            self._updater.force_update()
            return
        level, message, values = self.report()
        st = self._status
        st.level, st.message = level, message
        st.values = [KeyValue(key=k, value=v) for k, v in values]
        msg = DiagnosticArray(status=[st])
        msg.header.stamp = self.node.get_clock().now().to_msg()
        self._pub.publish(msg)

    def destroy(self) -> None:
        node = self.node
        if self._updater is not None:
            timer = getattr(self._updater, "timer", None)
            if timer is not None:
                node.destroy_timer(timer)
            node.destroy_publisher(self._updater.publisher)
            if node.has_parameter(self._updater.period_parameter):
                node.undeclare_parameter(self._updater.period_parameter)
            self._updater = None
        if self._timer is not None:
            node.destroy_timer(self._timer)
            self._timer = None
        if self._pub is not None:
            node.destroy_publisher(self._pub)
            self._pub = None
