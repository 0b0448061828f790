"""The ``node:`` section of the YAML config: control loop, outputs, goals, status.

The control-loop keys are the core's :class:`~roboplan_ik_ros.core.control.control_loop.LoopConfig`,
parsed and checked by the core's :func:`~roboplan_ik_ros.core.control.loop_config.load_loop_config`
(what a core user's ``ControlLoop.from_config`` reads too); this adds the ROS-only keys, parsed with
:func:`roboplan_ik_ros.core.config.from_mapping` (unknown keys and wrong types are rejected naming
the key path) plus range and choice checks. Every error is an :class:`InvalidInputError` whose
message starts with the key path (``node.outputs[0].type``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping, Union

from ..core.config import from_mapping
from ..core.control.loop_config import LoopConfig, check_loop_config
from ..core.control.loop_config import LOOP_KEYS, load_loop_config, split_node_section
from ..core.errors import InvalidInputError, Range
from ..core.keys import check_declared, key

OUTPUT_TYPES = ("forward_command", "joint_trajectory", "joint_state")
INTERFACES = ("position", "velocity")
TRIGGERS = ("timer", "joint_states")
MAX_LOOP_PRIORITY = 99  # SCHED_FIFO's highest (Linux)
_REPORT_RATES = "how often `~/status` and `/diagnostics` are published"  # status_rate_hz, diagnostics_rate_hz: one row


def trigger_feedback_reason(trigger: str, state_feedback: str) -> str:
    """Why ``state_feedback`` cannot go with ``trigger`` ("" if it can): the one rule, for the YAML
    (``node.state_feedback``) and the runtime parameter (``state_feedback``) alike."""
    if trigger == "joint_states" and state_feedback != "measured":
        return (f"{state_feedback!r} with trigger 'joint_states'; expected 'measured' (that trigger steps on each "
                f"/joint_states message, from the measurement)")
    return ""


@dataclass
class OutputConfig:
    """One command stream.

    ``forward_command``: std_msgs/Float64MultiArray for forward_command_controller (``interface``
    position or velocity). ``joint_trajectory``: a single-point trajectory_msgs/JointTrajectory for
    joint_trajectory_controller (positions, plus velocities). ``joint_state``: sensor_msgs/JointState
    (position and velocity).
    """

    type: str = key("forward_command", choices=OUTPUT_TYPES,
                    doc="`forward_command`, `joint_trajectory` (single point) or `joint_state`")
    interface: str = key("position", choices=INTERFACES, doc="`position` or `velocity` (forward_command)")
    topic: str = key("/forward_position_controller/commands", doc="the topic the commands are published on")
    joints: list[str] = key(factory=list, doc="output joint order (`[]`: the group's joints)")
    time_from_start: float = key(0.0, range=Range(unit="s"), doc="joint_trajectory point (0: one control period)")


@dataclass
class MarkersConfig:
    enabled: bool = key(True, doc="RViz markers: goals and barriers on `~/markers`, the perceived cloud on "
                                  "`~/perceived_cloud`")
    interactive: bool = key(True, doc="RViz: a 6-DOF interactive marker per frame task (needs `interactive_markers`)")
    scale: float = key(0.1, range=Range(lo_open=True, unit="m"), doc="RViz markers: size of the goal axes")


@dataclass
class NodeConfig(LoopConfig):
    """The ``node:`` section: the control loop's keys (:class:`LoopConfig`) and the ROS node's, each declared once
    with its docs row's meaning (docs/configuration.md's table is generated from these)."""

    trigger: str = key(
        "timer", choices=TRIGGERS,
        doc="`timer`, or `joint_states`: step on each measurement (needs `state_feedback: measured`, in the YAML and "
            "at runtime); either way the ticks run in the `control_loop` thread, on a timer or woken by the "
            "/joint_states callback")
    # checked by check_node_config (an integer in [0, 99]; other_threads_priority below loop_priority)
    loop_priority: int = key(
        50,
        doc="SCHED_FIFO priority (1-99) of the `control_loop` thread that runs the ticks (both triggers), like "
            "ros2_control's `thread_priority`; `0` = normal scheduling. Needs an rtprio limit (`/etc/security/limits.conf`) or "
            "CAP_SYS_NICE; if refused, the node logs why and runs at normal priority (diagnostics: "
            "`loop_scheduling`)")
    other_threads_priority: Union[None, int] = key(
        None,
        doc="SCHED_FIFO priority (0-99, below `loop_priority`) of the node's other threads that run Python: the "
            "executor's thread while active (it gets its own scheduling back on deactivate), `reporting`, `solve_ik` and `solve_path` (not `pointcloud`: an ingest is "
            "milliseconds of numpy calls that hold the GIL whatever its priority, and a starved ingest drops stale "
            "clouds instead of taking a core; at 1 kHz with the 15 Hz camera it made the loop later). They hold the "
            "GIL the ticks need in turns; a normal process that preempts one of them while it holds it stalls the "
            "loop until it runs again (a priority inversion). `null` = `loop_priority - 1` (0 when `loop_priority` "
            "is 0); `0` = normal scheduling. A value not below `loop_priority` is refused. Refused by the kernel: "
            "logged once, those threads run at normal priority (`/diagnostics` `other_threads_scheduling` lists "
            "the threads under it)")
    activation_timeout: float = key(5.0, range=Range(lo_open=True, unit="s"),
                                    doc="activate waits this long for `/joint_states`")
    joint_states_topic: str = key("/joint_states", doc="the topic the measured joint states come on")
    status_rate_hz: float = key(10.0, range=Range(0.0, 100.0, lo_open=True, unit="Hz"), doc=_REPORT_RATES)
    diagnostics_rate_hz: float = key(2.0, range=Range(0.0, 100.0, lo_open=True, unit="Hz"), doc=_REPORT_RATES)
    quaternion_tolerance: float = key(
        0.01, range=Range(0.0, 0.5, lo_open=True),
        doc="goals with `| |q| − 1 |` above this are rejected (below: normalized)")
    tf_timeout: float = key(0.05, range=Range(unit="s"), doc="tf2 lookup for goal frames outside the robot model")
    outputs: list[OutputConfig] = key(factory=lambda: [OutputConfig()])  # the rows of its items: OutputConfig's
    markers: MarkersConfig = key(factory=MarkersConfig)

def check_node_config(cfg: NodeConfig, path: str = "node") -> NodeConfig:
    """Range and choice checks of a parsed :class:`NodeConfig` (also used for runtime updates): the declared ones
    (core/keys.py: check_loop_config walks every field, the loop's keys, these and markers; each output below),
    then the rules between keys."""
    check_loop_config(cfg, path)
    reason = trigger_feedback_reason(cfg.trigger, cfg.state_feedback)
    if reason:
        raise InvalidInputError(f"{path}.state_feedback: {reason}")
    if isinstance(cfg.loop_priority, bool) or not isinstance(cfg.loop_priority, int) or not (
            0 <= cfg.loop_priority <= MAX_LOOP_PRIORITY):
        raise InvalidInputError(f"{path}.loop_priority: expected an integer in [0, {MAX_LOOP_PRIORITY}] "
                                f"(SCHED_FIFO priority; 0 = normal scheduling), got {cfg.loop_priority!r}")
    other = cfg.other_threads_priority
    if other is not None:
        if isinstance(other, bool) or not isinstance(other, int) or not 0 <= other <= MAX_LOOP_PRIORITY:
            raise InvalidInputError(f"{path}.other_threads_priority: expected null or an integer in "
                                    f"[0, {MAX_LOOP_PRIORITY}] (SCHED_FIFO priority; 0 = normal scheduling), "
                                    f"got {other!r}")
        if other and other >= cfg.loop_priority:
            raise InvalidInputError(
                f"{path}.other_threads_priority: {other} is not below loop_priority ({cfg.loop_priority}): those "
                f"threads would take the CPU from the ticks; expected an integer below it, 0, or null (one below it)")
    if not cfg.joint_states_topic:
        raise InvalidInputError(f"{path}.joint_states_topic: expected a topic name")
    if not cfg.outputs:
        raise InvalidInputError(f"{path}.outputs: expected at least one output")
    topics = set()
    for k, out in enumerate(cfg.outputs):
        p = f"{path}.outputs[{k}]"
        check_declared(out, p)
        if out.type != "forward_command" and out.interface != "position":
            raise InvalidInputError(f"{p}.interface: {out.type} outputs carry positions; use interface: position")
        if not out.topic:
            raise InvalidInputError(f"{p}.topic: expected a topic name")
        if out.topic in topics:
            raise InvalidInputError(f"{p}.topic: {out.topic!r} is used by another output")
        topics.add(out.topic)
        if len(set(out.joints)) != len(out.joints):
            raise InvalidInputError(f"{p}.joints: duplicate joint names in {out.joints}")
    return cfg


def other_threads_priority(cfg: NodeConfig) -> int:
    """The SCHED_FIFO priority of the node's other threads (0 = normal): the key, or one below loop_priority."""
    if cfg.other_threads_priority is not None:
        return cfg.other_threads_priority
    return max(cfg.loop_priority - 1, 0)


def load_node_config(mapping: Mapping[str, Any] | None, path: str = "node") -> NodeConfig:
    """Parse and check the ``node:`` mapping (None or {} gives the defaults): the loop keys by the core
    (:func:`load_loop_config`), the ROS-only keys here (an unknown key is refused, naming every valid one)."""
    loop_keys, ros_keys = split_node_section(mapping, path)
    loop = load_loop_config(loop_keys, path)
    cfg = from_mapping(NodeConfig, ros_keys, path)
    return check_node_config(replace(cfg, **{key: getattr(loop, key) for key in LOOP_KEYS}), path)


def watchdog_period(dt: float, state_timeout: float) -> float:
    """[s] The staleness watchdog's period under ``trigger: joint_states`` (/joint_states wakes the ticks, the
    watchdog ticks when they stop): a quarter of state_timeout, at most 50 ms, at least one control period."""
    return max(dt, min(0.05, state_timeout / 4.0))
