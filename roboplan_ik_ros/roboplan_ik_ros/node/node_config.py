"""The ``node:`` section of the YAML config: control loop, state feedback, outputs, goals, status.

Parsed with :func:`roboplan_ik_ros.core.config.from_mapping` (unknown keys and wrong types are
rejected naming the key path) plus range and choice checks here. Every error is an
:class:`InvalidInputError` whose message starts with the key path (``node.outputs[0].type``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..core.config import from_mapping
from ..core.errors import InvalidInputError

OUTPUT_TYPES = ("forward_command", "joint_trajectory", "joint_state")
INTERFACES = ("position", "velocity")
STATE_FEEDBACK = ("commanded", "measured")
TRIGGERS = ("timer", "joint_states")
SMOOTHING = ("none", "low_pass", "max_speed")


@dataclass
class OutputConfig:
    """One command stream.

    ``forward_command``: std_msgs/Float64MultiArray for forward_command_controller (``interface``
    position or velocity). ``joint_trajectory``: a single-point trajectory_msgs/JointTrajectory for
    joint_trajectory_controller (positions, plus velocities). ``joint_state``: sensor_msgs/JointState
    (position and velocity).
    """

    type: str = "forward_command"
    interface: str = "position"
    topic: str = "/forward_position_controller/commands"
    joints: list[str] = field(default_factory=list)  # output order; [] = the group's joints
    time_from_start: float = 0.0  # [s] joint_trajectory point; 0 = one control period


@dataclass
class GoalSmoothingConfig:
    """How the task target follows a new goal: at once, by a first-order low-pass, or at a bounded speed."""

    type: str = "none"
    time_constant: float = 0.1  # [s] low_pass
    max_linear_speed: float = 0.5  # [m/s] max_speed
    max_angular_speed: float = 1.5  # [rad/s] max_speed


@dataclass
class MarkersConfig:
    enabled: bool = True  # visualization_msgs markers on ~/markers (goals, barrier boxes)
    interactive: bool = True  # a 6-DOF interactive marker per frame task (needs interactive_markers)
    scale: float = 0.1  # [m] size of the goal axes


@dataclass
class NodeConfig:
    control_rate_hz: float = 500.0
    trigger: str = "timer"  # "joint_states": step on each /joint_states message (measured feedback only)
    state_feedback: str = "commanded"
    max_state_divergence: float = 0.1  # [rad or m] commanded mode: resync to /joint_states above this
    state_timeout: float = 0.5  # [s] no valid /joint_states for this long -> hold
    activation_timeout: float = 5.0  # [s] on_activate waits this long for a first /joint_states
    joint_states_topic: str = "/joint_states"
    status_rate_hz: float = 10.0  # ~/status
    diagnostics_rate_hz: float = 2.0  # /diagnostics
    quaternion_tolerance: float = 0.01  # | |q| - 1 | above this rejects a goal (below: normalized)
    tf_timeout: float = 0.05  # [s] frames outside the robot model, through tf2_ros
    goal_smoothing: GoalSmoothingConfig = field(default_factory=GoalSmoothingConfig)
    outputs: list[OutputConfig] = field(default_factory=lambda: [OutputConfig()])
    markers: MarkersConfig = field(default_factory=MarkersConfig)


def _choice(value: str, valid: tuple[str, ...], path: str) -> None:
    if value not in valid:
        raise InvalidInputError(f"{path}: unknown value {value!r}; valid: {', '.join(valid)}")


def _positive(value: float, path: str, *, upper: float = math.inf, allow_zero: bool = False) -> None:
    ok = (value >= 0.0 if allow_zero else value > 0.0) and value <= upper and math.isfinite(value)
    if not ok:
        lo = ">= 0" if allow_zero else "> 0"
        hi = f" and <= {upper:g}" if math.isfinite(upper) else ""
        raise InvalidInputError(f"{path}: expected a finite number {lo}{hi}, got {value!r}")


MAX_RATE_HZ = 2000.0


def check_node_config(cfg: NodeConfig, path: str = "node") -> NodeConfig:
    """Range and choice checks of a parsed :class:`NodeConfig` (also used for runtime updates)."""
    _positive(cfg.control_rate_hz, f"{path}.control_rate_hz", upper=MAX_RATE_HZ)
    _choice(cfg.trigger, TRIGGERS, f"{path}.trigger")
    _choice(cfg.state_feedback, STATE_FEEDBACK, f"{path}.state_feedback")
    if cfg.trigger == "joint_states" and cfg.state_feedback != "measured":
        raise InvalidInputError(f"{path}.trigger: 'joint_states' needs state_feedback: measured")
    _positive(cfg.max_state_divergence, f"{path}.max_state_divergence")
    _positive(cfg.state_timeout, f"{path}.state_timeout")
    _positive(cfg.activation_timeout, f"{path}.activation_timeout")
    if not cfg.joint_states_topic:
        raise InvalidInputError(f"{path}.joint_states_topic: expected a topic name")
    _positive(cfg.status_rate_hz, f"{path}.status_rate_hz", upper=100.0)
    _positive(cfg.diagnostics_rate_hz, f"{path}.diagnostics_rate_hz", upper=100.0)
    _positive(cfg.quaternion_tolerance, f"{path}.quaternion_tolerance", upper=0.5)
    _positive(cfg.tf_timeout, f"{path}.tf_timeout", allow_zero=True)
    gs = cfg.goal_smoothing
    _choice(gs.type, SMOOTHING, f"{path}.goal_smoothing.type")
    _positive(gs.time_constant, f"{path}.goal_smoothing.time_constant")
    _positive(gs.max_linear_speed, f"{path}.goal_smoothing.max_linear_speed")
    _positive(gs.max_angular_speed, f"{path}.goal_smoothing.max_angular_speed")
    if not cfg.outputs:
        raise InvalidInputError(f"{path}.outputs: expected at least one output")
    topics = set()
    for k, out in enumerate(cfg.outputs):
        p = f"{path}.outputs[{k}]"
        _choice(out.type, OUTPUT_TYPES, f"{p}.type")
        _choice(out.interface, INTERFACES, f"{p}.interface")
        if out.type != "forward_command" and out.interface != "position":
            raise InvalidInputError(f"{p}.interface: {out.type} outputs carry positions; use interface: position")
        if not out.topic:
            raise InvalidInputError(f"{p}.topic: expected a topic name")
        if out.topic in topics:
            raise InvalidInputError(f"{p}.topic: {out.topic!r} is used by another output")
        topics.add(out.topic)
        if len(set(out.joints)) != len(out.joints):
            raise InvalidInputError(f"{p}.joints: duplicate joint names in {out.joints}")
        _positive(out.time_from_start, f"{p}.time_from_start", allow_zero=True)
    _positive(cfg.markers.scale, f"{path}.markers.scale")
    return cfg


def load_node_config(mapping: Mapping[str, Any] | None, path: str = "node") -> NodeConfig:
    """Parse and check the ``node:`` mapping (None or {} gives the defaults)."""
    return check_node_config(from_mapping(NodeConfig, mapping or {}, path), path)
