"""``autostart``: configure and activate without a lifecycle manager, from the spinning executor once the
latched descriptions have arrived. A part of :class:`~.ik_controller.IKControllerNode` (its base class)."""

from __future__ import annotations

import time

from rclpy.lifecycle import TransitionCallbackReturn

from .spin import call_when_ready

_SUCCESS = TransitionCallbackReturn.SUCCESS
_OPTIONAL_SRDF_WAIT_S = 1.0  # [s] autostart waits this long after the URDF for an SRDF (configure too, if optional)


class Autostart:
    """The ``autostart`` parameter's transitions for :class:`~.ik_controller.IKControllerNode` (its ``_param``,
    ``_descriptions``, ``last_error``)."""

    def autostart(self) -> bool:
        """configure -> activate (the ``autostart`` parameter); False if a transition failed."""
        if self.trigger_configure() != _SUCCESS:
            return False
        return self.trigger_activate() == _SUCCESS

    def schedule_autostart(self) -> None:
        """:meth:`autostart` from the spinning executor, once the latched descriptions this node listens to have
        arrived (the SRDF, or 1 s after the URDF; or after ``description_timeout``: configure then waits and says
        what is missing). Configured before the executor spun, nothing had been delivered and configure waited
        2.2-2.6 s on a new subscription for a /robot_description that had already arrived."""
        scheduled = time.monotonic()

        def known_for(name: str) -> float | None:  # [s] since /name is known (a parameter: since scheduling)
            if self._param(name):
                return time.monotonic() - scheduled
            kept = self._descriptions.get(name)
            return None if kept is None else kept[1]

        def ready() -> bool:
            urdf = known_for("robot_description")
            return urdf is not None and (known_for("robot_description_semantic") is not None
                                         or urdf >= _OPTIONAL_SRDF_WAIT_S)

        def start() -> None:
            if not self.autostart():
                self.get_logger().error(f"autostart: {self.last_error}; waiting for lifecycle transitions")

        call_when_ready(self, ready, start, float(self._param("description_timeout")))
