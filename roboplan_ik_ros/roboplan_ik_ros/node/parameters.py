"""Runtime ROS parameters of the controller: gains, weights, rate, state feedback, smoothing.

Each parameter is a :class:`ParamSpec`: its initial value (from the YAML config), a descriptor
(description, range), a validator that returns the reason a value is refused ("" = accept) and
an ``apply`` that changes the live controller. The node validates in its on-set callback and
applies in its post-set callback, so ``ros2 param set`` either takes effect or is refused with
the reason. Names: ``control_rate_hz``, ``state_feedback``, ``tasks.<task>.<field>``,
``barriers.<barrier>.<field>``, ``goal_smoothing.<field>``, ``streaming.<field>``.
:func:`unknown_parameter_reason` says why a set of an undeclared name is refused (the closest names,
the valid ones under its prefix).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from rcl_interfaces.msg import FloatingPointRange, ParameterDescriptor, ParameterType

from ..core.config import BarrierConfig, TaskConfig
from ..core.control.control_loop import MAX_RATE_HZ, SMOOTHING, STALE_BEHAVIORS, STATE_FEEDBACK
from ..core.control.twist_follower import COMMAND_IN_TYPES


@dataclass
class ParamSpec:
    name: str
    value: Any
    descriptor: ParameterDescriptor
    validate: Callable[[Any], str]
    apply: Callable[[Any], None]


def _descriptor(description: str, ptype: int, lo: float | None = None, hi: float | None = None,
                *, dynamic: bool = False) -> ParameterDescriptor:
    """``dynamic``: accept one number or an array (checked by the validator instead of the type).
    Double parameters also accept integers (``ros2 param set ... control_rate_hz 250``): rclpy's type
    check is replaced by the validator's."""
    dynamic = dynamic or ptype == ParameterType.PARAMETER_DOUBLE
    d = ParameterDescriptor(description=description, type=ptype, dynamic_typing=dynamic)
    if lo is not None and hi is not None and ptype == ParameterType.PARAMETER_DOUBLE:
        d.floating_point_range = [FloatingPointRange(from_value=float(lo), to_value=float(hi), step=0.0)]
    return d


def number_check(lo: float, hi: float = math.inf, *, lo_open: bool = False, size: int | None = None) -> Callable[[Any], str]:
    """Validator: a finite number (or ``size`` numbers) in [lo, hi] ((lo, hi] with lo_open)."""

    def check(value: Any) -> str:
        values = np.atleast_1d(np.asarray(value, dtype=float)) if _is_numeric(value) else None
        if values is None:
            return f"expected a number, got {value!r}"
        if size is not None and np.ndim(value) > 0 and len(values) != size:
            return f"expected {size} values or one number, got {len(values)}"
        bad = ~np.isfinite(values) | (values < lo) | (values > hi) | ((values == lo) if lo_open else False)
        if np.any(bad):
            left = "(" if lo_open else "["
            right = "]" if math.isfinite(hi) else ")"
            return f"expected finite values in {left}{lo:g}, {hi:g}{right}, got {_show(value)}"
        return ""

    return check


def choice_check(valid: tuple[str, ...]) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        return "" if value in valid else f"unknown value {value!r}; valid: {', '.join(valid)}"

    return check


def _is_numeric(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return True
    try:
        return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
    except TypeError:
        return False


def _show(value: Any) -> str:
    return repr(list(value)) if not isinstance(value, (int, float, str)) else repr(value)


def _double_or_array(value: Any) -> tuple[Any, int]:
    """YAML scalar -> (float, DOUBLE); list -> (list of floats, DOUBLE_ARRAY)."""
    if isinstance(value, (list, tuple)):
        return [float(v) for v in value], ParameterType.PARAMETER_DOUBLE_ARRAY
    return float(value), ParameterType.PARAMETER_DOUBLE


# ------------------------------------------------------------------------------------ builders
def task_specs(tc: TaskConfig, get_task: Callable[[str], Any], nv: int) -> list[ParamSpec]:
    """Parameters of one task. ``get_task(name)`` returns the live core task (may be rebuilt)."""
    p = f"tasks.{tc.name}"

    def setter(field: str, live: Callable[[Any, Any], None]):
        def apply(value: Any) -> None:
            setattr(tc, field, [float(x) for x in value] if hasattr(value, "__len__") else float(value))
            live(get_task(tc.name), value)
        return apply

    specs = [
        ParamSpec(f"{p}.task_gain", float(tc.task_gain),
                  _descriptor("share of the task error corrected per step, in (0, 1]", ParameterType.PARAMETER_DOUBLE, 0.0, 1.0),
                  number_check(0.0, 1.0, lo_open=True),
                  setter("task_gain", lambda t, v: setattr(t, "task_gain", float(v)))),
        ParamSpec(f"{p}.lm_damping", float(tc.lm_damping),
                  _descriptor("Levenberg-Marquardt damping factor, >= 0", ParameterType.PARAMETER_DOUBLE, 0.0, 1e6),
                  number_check(0.0),
                  setter("lm_damping", lambda t, v: setattr(t, "lm_damping", float(v)))),
    ]
    if tc.type == "frame":
        for field, rows, unit in (("position_cost", slice(0, 3), "[cost]/[m]"), ("orientation_cost", slice(3, 6), "[cost]/[rad]")):
            value, ptype = _double_or_array(getattr(tc, field))

            def live(task, v, rows=rows):
                task.sqrt_weight[rows] = np.sqrt(np.broadcast_to(np.asarray(v, dtype=float), (3,)))

            specs.append(ParamSpec(
                f"{p}.{field}", value,
                _descriptor(f"{field.replace('_', ' ')} {unit}, >= 0 (one number or x, y, z)", ptype, dynamic=True),
                number_check(0.0, size=3), setter(field, live)))
    else:
        value, ptype = _double_or_array(tc.weights)

        def live_w(task, v):
            task.sqrt_weight[:] = np.sqrt(np.broadcast_to(np.asarray(v, dtype=float), (nv,)))

        specs.append(ParamSpec(
            f"{p}.weights", value,
            _descriptor(f"posture cost per joint [cost]/[rad], >= 0 (one number or {nv})", ptype, dynamic=True),
            number_check(0.0, size=nv), setter("weights", live_w)))
    return specs


def barrier_specs(bc: BarrierConfig, get_barrier: Callable[[str], Any]) -> list[ParamSpec]:
    p = f"barriers.{bc.name}"

    def setter(field: str):
        def apply(value: Any) -> None:
            setattr(bc, field, float(value))
            setattr(get_barrier(bc.name), field, float(value))
        return apply

    return [
        ParamSpec(f"{p}.gain", float(bc.gain),
                  _descriptor("barrier gain gamma, > 0", ParameterType.PARAMETER_DOUBLE, 0.0, 1e6),
                  number_check(0.0, lo_open=True), setter("gain")),
        ParamSpec(f"{p}.safe_displacement_gain", float(bc.safe_displacement_gain),
                  _descriptor("safe-displacement regularization gain, >= 0", ParameterType.PARAMETER_DOUBLE, 0.0, 1e6),
                  number_check(0.0), setter("safe_displacement_gain")),
        ParamSpec(f"{p}.safety_margin", float(bc.safety_margin),
                  _descriptor("safety margin of the barrier rows [m], >= 0", ParameterType.PARAMETER_DOUBLE, 0.0, 10.0),
                  number_check(0.0), setter("safety_margin")),
    ]


def loop_specs(node_cfg, apply_rate: Callable[[float], None], apply_feedback: Callable[[str], None],
               apply_divergence: Callable[[float], None]) -> list[ParamSpec]:
    """Control rate, state feedback, stale handling and goal smoothing (``node_cfg`` is the live NodeConfig)."""
    gs, st = node_cfg.goal_smoothing, node_cfg.streaming

    def set_attr(obj, field, conv=float):
        return lambda v: setattr(obj, field, conv(v))

    dbl = ParameterType.PARAMETER_DOUBLE
    return [
        ParamSpec("control_rate_hz", float(node_cfg.control_rate_hz),
                  _descriptor(f"control loop rate [Hz], in (0, {MAX_RATE_HZ:g}]", dbl, 0.0, MAX_RATE_HZ),
                  number_check(0.0, MAX_RATE_HZ, lo_open=True), apply_rate),
        ParamSpec("state_feedback", node_cfg.state_feedback,
                  _descriptor("commanded: integrate own output (resync on divergence); measured: step from "
                              "/joint_states", ParameterType.PARAMETER_STRING),
                  choice_check(STATE_FEEDBACK), apply_feedback),
        ParamSpec("max_state_divergence", float(node_cfg.max_state_divergence),
                  _descriptor("commanded feedback: the command leads the measured state by at most this [rad or m]",
                              dbl, 0.0, 10.0),
                  number_check(0.0, 10.0, lo_open=True), apply_divergence),
        ParamSpec("state_timeout", float(node_cfg.state_timeout),
                  _descriptor("stale after no valid /joint_states for this long [s]", dbl, 0.0, 60.0),
                  number_check(0.0, 60.0, lo_open=True), set_attr(node_cfg, "state_timeout")),
        ParamSpec("stale_behavior", node_cfg.stale_behavior,
                  _descriptor("stale /joint_states: stop (publish nothing) | hold (repeat the last command)",
                              ParameterType.PARAMETER_STRING),
                  choice_check(STALE_BEHAVIORS), set_attr(node_cfg, "stale_behavior", str)),
        ParamSpec("goal_smoothing.type", gs.type,
                  _descriptor("target smoothing of a new goal: " + " | ".join(SMOOTHING), ParameterType.PARAMETER_STRING),
                  choice_check(SMOOTHING), set_attr(gs, "type", str)),
        ParamSpec("goal_smoothing.time_constant", float(gs.time_constant),
                  _descriptor("low_pass time constant [s]", dbl, 0.0, 60.0),
                  number_check(0.0, 60.0, lo_open=True), set_attr(gs, "time_constant")),
        ParamSpec("goal_smoothing.max_linear_speed", float(gs.max_linear_speed),
                  _descriptor("max_speed, max_acceleration: target speed [m/s]", dbl, 0.0, 100.0),
                  number_check(0.0, 100.0, lo_open=True), set_attr(gs, "max_linear_speed")),
        ParamSpec("goal_smoothing.max_angular_speed", float(gs.max_angular_speed),
                  _descriptor("max_speed, max_acceleration: target angular speed [rad/s]", dbl, 0.0, 100.0),
                  number_check(0.0, 100.0, lo_open=True), set_attr(gs, "max_angular_speed")),
        ParamSpec("streaming.speed_override", float(st.speed_override),
                  _descriptor("scales every streamed twist and joint jog, in [0, 1]", dbl, 0.0, 1.0),
                  number_check(0.0, 1.0), set_attr(st, "speed_override")),
        ParamSpec("streaming.command_in_type", st.command_in_type,
                  _descriptor("unitless: twist components in [-1, 1] times the max speeds; speed_units: m/s, rad/s",
                              ParameterType.PARAMETER_STRING),
                  choice_check(COMMAND_IN_TYPES), set_attr(st, "command_in_type", str)),
        ParamSpec("streaming.max_linear_speed", float(st.max_linear_speed),
                  _descriptor("streamed twists: linear speed of the task frame [m/s]", dbl, 0.0, 10.0),
                  number_check(0.0, 10.0, lo_open=True), set_attr(st, "max_linear_speed")),
        ParamSpec("streaming.max_angular_speed", float(st.max_angular_speed),
                  _descriptor("streamed twists: angular speed of the task frame [rad/s]", dbl, 0.0, 100.0),
                  number_check(0.0, 100.0, lo_open=True), set_attr(st, "max_angular_speed")),
        ParamSpec("streaming.command_timeout", float(st.command_timeout),
                  _descriptor("a stream older than this is braked to a stop [s]", dbl, 0.0, 10.0),
                  number_check(0.0, 10.0, lo_open=True), set_attr(st, "command_timeout")),
    ]


# ------------------------------------------------------------------------------------ unknown names
#: Prefixes of the parameters that exist only while the node is configured (declared from the YAML).
RUNTIME_PREFIXES = ("control_rate_hz", "state_feedback", "max_state_divergence", "state_timeout", "stale_behavior",
                    "tasks.", "barriers.", "goal_smoothing.", "streaming.")
_LISTED = 30  # names listed before "(and N more)"


def unknown_parameter_reason(name: str, declared: Iterable[str], configured: bool) -> str:
    """Why setting the undeclared parameter ``name`` is refused: its name, the closest declared names
    and the declared names under the longest prefix it shares with them (every name if none), as a
    configure error names a YAML key. ``configured``: whether the runtime parameters exist now."""
    declared = sorted(declared)
    parts = name.split(".")
    prefix, under = "", declared
    for k in range(len(parts) - 1, 0, -1):  # longest dotted prefix that some declared name has
        candidate = ".".join(parts[:k]) + "."
        matching = [d for d in declared if d.startswith(candidate)]
        if matching:
            prefix, under = candidate, matching
            break
    reason = f"{name}: no such parameter"
    close = difflib.get_close_matches(name, declared, n=3, cutoff=0.6)
    if close:
        reason += f"; did you mean {' or '.join(repr(c) for c in close)}?"
    if not configured and any(name == p or name.startswith(p) for p in RUNTIME_PREFIXES):
        reason += ("; the runtime parameters (tasks.<task>.*, barriers.<barrier>.*, goal_smoothing.*, control_rate_hz, "
                   "...) exist once the node is configured")
    shown = ", ".join(d[len(prefix):] for d in under[:_LISTED])
    more = f" (and {len(under) - _LISTED} more)" if len(under) > _LISTED else ""
    reason += f"; valid {'under ' + repr(prefix) if prefix else 'names'}: {shown}{more}"
    return reason
