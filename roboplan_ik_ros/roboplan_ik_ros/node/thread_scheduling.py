"""How the node's threads are scheduled (``node.loop_priority``, ``node.other_threads_priority``): the outcome
each thread's priority request reports, and the summary the diagnostics show. A part of
:class:`~.ik_controller.IKControllerNode` (its base class); the priorities themselves are
:mod:`.loop_thread`'s."""

from __future__ import annotations


class ThreadScheduling:
    """Thread scheduling of :class:`~.ik_controller.IKControllerNode` (its ``_other_threads``,
    ``_executor_priority``, ``loop_scheduling``, ``node_cfg``)."""

    def _on_other_threads_priority(self, ok: bool, message: str) -> None:
        """The scheduling outcome of one of the node's other threads (called from that thread)."""
        if ok:
            self.get_logger().debug(f"node.other_threads_priority: {message}")
        else:
            self.get_logger().warning(f"node.other_threads_priority {self._other_threads.priority}: {message}")

    def other_threads_scheduling(self) -> str:
        """How the node's other threads are scheduled (diagnostics)."""
        shared = self._other_threads
        if shared.priority <= 0:
            return "normal"
        under = list(shared.applied)
        if self._executor_priority is not None and self._executor_priority.applied_to is not None:
            under.insert(0, "executor")
        if not under:
            return f"normal (SCHED_FIFO {shared.priority} refused)"
        return f"SCHED_FIFO {shared.priority}: {', '.join(under)}"

    def _on_loop_priority(self, ok: bool, message: str) -> None:
        """The scheduling outcome of the thread that runs the ticks (called from that thread, once per
        activation)."""
        self.loop_scheduling = message if ok else f"normal (SCHED_FIFO {self.node_cfg.loop_priority} refused)"
        if ok:
            self.get_logger().info(f"ticks: {message}")
        else:
            self.get_logger().warning(f"node.loop_priority {self.node_cfg.loop_priority}: {message}")
