"""What the node reports outside its ticks: ``~/status`` (with the perceived cloud and the markers when they
changed), the diagnostics, each built from a snapshot taken under the loop's lock in the idle part of a period.
A part of :class:`~.ik_controller.IKControllerNode` (its base class), run in the report thread."""

from __future__ import annotations

from . import diagnostics as diag
from .markers import perceived_cloud
from .spin import ESCAPED
from .status import LoopSnapshot, diagnostics_report, perception_diagnostics, perception_status


class NodeReports:
    """Status, markers and diagnostics of :class:`~.ik_controller.IKControllerNode`."""

    def _wait_for_tick_gap(self) -> None:
        """Block until the next tick has ended (at most three periods; at once when not ticking): work
        started then runs in the idle part of the period instead of stretching a tick (GIL)."""
        if not self._active or self.loop is None:
            return
        self._tick_gap.wait(3.0 / self.node_cfg.control_rate_hz)

    def _publish_status(self) -> None:
        if self.loop is None:
            return
        self._wait_for_tick_gap()
        with self._lock:  # copy what the message needs; build it outside the lock
            snap = LoopSnapshot.take(self.loop)
        msg = snap.status_message(self._last_tick_us, self._last_solve_us)
        if self._perception is not None:
            perception_status(msg, self._perception.snapshot())
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.header.frame_id = self._root
        self._status_pub.publish(msg)
        if self._markers_dirty and self._marker_pub is not None:
            self._publish_markers()
        if self._perceived_dirty and self._perceived_pub is not None:
            self._perceived_dirty = False
            cloud = perceived_cloud(self._perception.points(), self._root)
            cloud.header.stamp = msg.header.stamp
            self._perceived_pub.publish(cloud)

    def _publish_markers(self) -> None:
        self._markers_dirty = False
        with self._lock:  # copies: the array is built outside the lock
            goals = [(n, self.loop.goal(n)) for n in self._frame_tasks]
            goals = [(n, g.copy()) for n, g in goals if g is not None]
            obstacles = list(self.scene.obstacles.values())
        self._marker_pub.publish(self._markers.array(goals, self.loop.barriers, obstacles))
        if self._interactive is not None:  # the 6-DOF targets follow goals from every source
            self._interactive.show_goals(goals)

    def _diagnostics_report(self):
        if self.loop is None:
            return diag.WARN, "unconfigured", []
        self._wait_for_tick_gap()
        with self._lock:
            snap = LoopSnapshot.take(self.loop)
        level, message, values = diagnostics_report(snap, self._stats.summary(), self.node_cfg, self._service,
                                                    self._last_rejection, self.loop_scheduling, self._paths,
                                                    self.other_threads_scheduling())
        if self._perception is not None:
            values += perception_diagnostics(self._perception.snapshot())
        values.append(("callback_errors", str(self.faults.count + ESCAPED.count)))
        if self.faults.last:
            values.append(("last_callback_error", self.faults.last))
        return level, message, values
