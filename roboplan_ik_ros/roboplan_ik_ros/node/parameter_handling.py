"""The node's runtime parameter sets: rclpy's set calls answered with the reason for an undeclared name, each value
checked before it is taken (its range, and the loop's rules: ControlLoop.rate_change_refusal) and applied under
the loop's lock. A part of :class:`~.ik_controller.IKControllerNode` (its base class), on the node's state."""

from __future__ import annotations

import traceback

from rcl_interfaces.msg import SetParametersResult

from .loop_thread import WokenLoopThread
from .node_config import watchdog_period
from .parameters import DESCRIPTION_TIMEOUT, unknown_parameter_reason


class ParameterHandling:
    """Parameter sets of :class:`~.ik_controller.IKControllerNode` (its ``_params``, ``loop``, ``_lock``)."""

    # Setting an undeclared name (``ros2 param set /ik_controller tasks.ee.positon_cost 1.0``): rclpy's
    # parameter services call these two methods, which would raise ParameterNotDeclaredException with an
    # empty name list ("Invalid access to undeclared parameter(s): []"). They answer instead with the name,
    # the closest declared names and the valid ones. Not allow_undeclared_parameters: an on-set callback
    # cannot tell a set from a declaration (diagnostic_updater declares its period at configure), and
    # nothing undeclared is ever stored.
    def set_parameters_atomically(self, parameter_list):
        unknown = self._undeclared(parameter_list)
        if unknown:
            return SetParametersResult(successful=False, reason=unknown)
        return super().set_parameters_atomically(parameter_list)

    def set_parameters(self, parameter_list):
        """Per parameter, as rclpy's: an undeclared one gets a failed result with the reason (the others
        are set)."""
        results = []
        for p in parameter_list:
            unknown = self._undeclared([p])
            results.append(SetParametersResult(successful=False, reason=unknown) if unknown
                           else super().set_parameters([p])[0])
        return results

    def _undeclared(self, parameter_list) -> str:
        """The reason the first undeclared parameter of the list is refused, "" if all are declared."""
        for p in parameter_list:
            if not self.has_parameter(p.name):
                return unknown_parameter_reason(p.name, self.list_parameters([], 0).names,
                                                configured=getattr(self, "loop", None) is not None)
        return ""

    def _validate_parameters(self, params) -> SetParametersResult:
        for p in params:
            if p.name == "description_timeout":
                reason = DESCRIPTION_TIMEOUT.reason(p.value)
            elif self._params is not None:
                reason = self._params.refusal(p.name, p.value) or (
                    self._rate_change_refusal(p.value) if p.name == "control_rate_hz" else "")
            else:
                reason = ""
            if reason:
                return SetParametersResult(successful=False, reason=f"{p.name}: {reason}")
        return SetParametersResult(successful=True)

    def _apply_parameters(self, params) -> None:
        try:
            for p in params:
                if self._params is not None and self.loop is not None:
                    self._params.apply(p.name, p.value, self._lock)
        except Exception as exc:  # noqa: BLE001 - half applied: a fault like any callback's (controlled stop)
            self.on_fault("node", f"parameter set {[p.name for p in params]}", exc, traceback.format_exc())

    def _rate_change_refusal(self, hz) -> str:
        """Why a new control rate cannot be taken now ("" when it can; the rule is the loop's)."""
        loop = getattr(self, "loop", None)
        return "" if loop is None else loop.rate_change_refusal(float(hz))

    def _apply_rate(self, hz) -> None:
        """New control rate: the loop rebuilds its solver objects (dt-dependent) and keeps its targets."""
        hz = float(hz)
        if hz == self.node_cfg.control_rate_hz:
            return
        self.loop.set_rate(hz)
        self._outputs.set_dt(self.loop.dt)
        thread = self._loop_thread
        if isinstance(thread, WokenLoopThread):  # trigger: joint_states: the watchdog's period follows the rate
            thread.idle_period = watchdog_period(self.loop.dt, self.node_cfg.state_timeout)
        elif thread is not None:
            thread.period = self.loop.dt
        self._stats.reset(self.loop.dt)
        self.get_logger().info(f"control rate: {hz:g} Hz")

    def _apply_feedback(self, mode: str) -> None:  # one the trigger cannot take was refused (parameters.py)
        self.loop.set_state_feedback(mode)
