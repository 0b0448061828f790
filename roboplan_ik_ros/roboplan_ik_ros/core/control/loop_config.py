"""The control loop's settings: the keys of the YAML ``node:`` section that the core's ControlLoop takes.

The ``node:`` section holds two kinds of keys: the control loop's (:class:`LoopConfig`: rate, state feedback,
stale handling, goal smoothing, streaming, ...), parsed and checked here, and the ROS node's (trigger, outputs,
topics, thread priorities, status rates, markers), which only the node reads (``node/node_config.py``, which
takes the loop keys from :func:`load_loop_config`: one parser for both). A ControlLoop built from a config and
separate settings says which of the YAML's loop keys its settings do not apply (:func:`unapplied_loop_keys`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

from ..config import IKConfig, from_mapping, load_config
from ..errors import InvalidInputError, Range
from ..keys import check_declared, declared_ranges, key
from ..ranges import RANGES
from .goal_followers import GoalSmoothingConfig
from .twist_follower import StreamingConfig, check_singularity_thresholds

STATE_FEEDBACK = ("commanded", "measured")
STALE_BEHAVIORS = ("stop", "hold")
MAX_RATE_HZ = 2000.0


@dataclass
class LoopConfig:
    """The control-loop keys of the YAML ``node:`` section, each declared once (core/keys.py): its default,
    range or choices, its meaning (the docs row's text) and whether it is a runtime parameter. The YAML check
    (:func:`check_loop_config`), the table of ranges (:data:`~..ranges.RANGES`, ``node.<key>``), the node's
    runtime parameters (node/parameters.py, described by the doc) and the docs' table (core/key_table.py) read
    them."""

    control_rate_hz: float = key(500.0, range=Range(0.0, MAX_RATE_HZ, lo_open=True, unit="Hz"),
                                 doc="control rate", runtime=True)
    state_feedback: str = key("commanded", choices=STATE_FEEDBACK,
                              doc="`commanded` (step from the last command) or `measured` (from `/joint_states`)",
                              runtime=True)
    max_state_divergence: float = key(
        0.1, range=Range(0.0, 10.0, lo_open=True, unit="rad or m"),
        doc="commanded feedback: the command leads the measured state by at most this", runtime=True)
    state_timeout: float = key(0.5, range=Range(0.0, 60.0, lo_open=True, unit="s"),
                               doc="no valid `/joint_states` for this long → stale", runtime=True)
    stale_behavior: str = key("stop", choices=STALE_BEHAVIORS,
                              doc="`stop` (publish nothing) or `hold` (repeat the last command) while stale",
                              runtime=True)
    joint_limit_tolerance: float = key(0.01, range=Range(unit="rad or m"),
                                       doc="measurements further outside the joint limits are rejected")
    # (reseed_settle_time is also the least time without a command before a new stream: stop)
    reseed_settle_time: float = key(
        0.15, range=Range(0.0, 10.0, unit="s"),
        doc="when joint states come back after being stale, the node restarts the command stream once the robot "
            "has been still this long (every joint within `reseed_tolerance`), measured on messages received after "
            "the outage (see Stale joint states in the "
            "[README](../README.md#safety-rules-corecontrolcontrol_looppy-ros-free-and-unit-tested))")
    reseed_tolerance: float = key(
        0.0005, range=Range(0.0, 1.0, lo_open=True, unit="rad or m"),
        doc="how far a joint may move and still count as still, for `reseed_settle_time`")
    max_goal_distance: Union[None, float] = key(
        None, range=Range(lo_open=True, unit="m"),
        doc="goals farther from the arm's first joint are rejected; `null`: twice the arm's reach")
    goal_smoothing: GoalSmoothingConfig = key(factory=GoalSmoothingConfig)
    streaming: StreamingConfig = key(factory=StreamingConfig)  # twist and joint-jog streams

RANGES.update(declared_ranges("node", LoopConfig))  # node.<key>: what the objects and the parameters check with


def check_loop_config(cfg: LoopConfig, path: str = "node") -> None:
    """The declared choices and ranges of the control-loop keys (nested sections included; of a NodeConfig, its
    ROS keys too), and the streaming section's own rule."""
    check_declared(cfg, path)
    check_singularity_thresholds(cfg.streaming, f"{path}.streaming")


class UnappliedConfigWarning(UserWarning):
    """A ControlLoop built with settings that leave loop keys of its config's ``node:`` section unapplied."""


LOOP_KEYS = tuple(f.name for f in dataclasses.fields(LoopConfig))  # the node: keys the core's ControlLoop takes


def split_node_section(node: Mapping[str, Any] | None, path: str = "node") -> tuple[dict, dict]:
    """(the control-loop keys, every other key) of a ``node:`` mapping (None: both empty)."""
    if node is None:
        return {}, {}
    if not isinstance(node, Mapping):
        raise InvalidInputError(f"{path}: expected a mapping, got {type(node).__name__} {node!r}")
    loop = {k: v for k, v in node.items() if k in LOOP_KEYS}
    return loop, {k: v for k, v in node.items() if k not in LOOP_KEYS}


def load_loop_config(source: IKConfig | Mapping[str, Any] | str | Path | None, path: str = "node",
                     overrides: Mapping[str, Any] | None = None) -> LoopConfig:
    """The :class:`LoopConfig` of a config's ``node:`` section, parsed and checked (errors name the key path).

    ``source``: an :class:`IKConfig` or a YAML file (its ``node:`` section), or the ``node:`` mapping itself
    (None or {}: the defaults). Keys that are not the loop's (the ROS node's) are left to the caller
    (:func:`split_node_section`). ``overrides``: loop keys set in code, over the YAML's, checked the same way
    (a nested mapping such as ``{"goal_smoothing": {"type": "none"}}`` replaces only the keys it names).
    """
    if isinstance(source, (str, Path)):
        source = load_config(source)
    node = source.node if isinstance(source, IKConfig) else source
    loop, _ = split_node_section(node, path)
    if overrides:
        unknown = sorted(set(overrides) - set(LOOP_KEYS))
        if unknown:
            raise InvalidInputError(f"overrides: {', '.join(unknown)}: not a control-loop key; valid keys: "
                                    f"{', '.join(LOOP_KEYS)}")
        loop = _merged(loop, overrides)
    settings = from_mapping(LoopConfig, loop, path)
    check_loop_config(settings, path)
    return settings


def _merged(base: Mapping, update: Mapping) -> dict:
    out = dict(base)
    for name, value in update.items():
        old = out.get(name)
        out[name] = _merged(old, value) if isinstance(value, Mapping) and isinstance(old, Mapping) else value
    return out


def unapplied_loop_keys(node: Mapping[str, Any] | None, settings: LoopConfig, path: str = "node") -> list[str]:
    """The key paths (``node.goal_smoothing.type``) that the ``node:`` mapping sets and ``settings`` does not
    hold as it says; [] when the section is empty or fully applied. A section that does not parse: every
    loop key it names (its error is raised where the section is loaded)."""
    loop, _ = split_node_section(node if isinstance(node, Mapping) else None, path)
    if not loop:
        return []
    try:
        wanted = from_mapping(LoopConfig, loop, path)
    except InvalidInputError:
        return [f"{path}.{k}" for k in loop]
    return _differences(loop, wanted, settings, path)


def _differences(given: Mapping, wanted: Any, actual: Any, path: str) -> list[str]:
    out = []
    for name, value in given.items():
        w, a = getattr(wanted, name), getattr(actual, name, None)
        if isinstance(value, Mapping) and dataclasses.is_dataclass(w) and dataclasses.is_dataclass(a):
            out += _differences(value, w, a, f"{path}.{name}")
        elif w != a:
            out.append(f"{path}.{name}")
    return out
