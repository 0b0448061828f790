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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

from ..config import IKConfig, from_mapping, load_config
from ..errors import InvalidInputError
from ..ranges import check_key
from .goal_followers import GoalSmoothingConfig
from .twist_follower import StreamingConfig, check_streaming_config

STATE_FEEDBACK = ("commanded", "measured")
STALE_BEHAVIORS = ("stop", "hold")
SMOOTHING = ("none", "low_pass", "max_speed", "max_acceleration", "jerk_limited")


@dataclass
class LoopConfig:
    """The control-loop keys of the YAML ``node:`` section (see the README for each)."""

    control_rate_hz: float = 500.0
    state_feedback: str = "commanded"  # commanded | measured
    max_state_divergence: float = 0.1  # [rad or m] commanded feedback: the command leads by at most this
    state_timeout: float = 0.5  # [s] no accepted /joint_states for this long -> stale
    stale_behavior: str = "stop"  # stop (publish nothing) | hold (repeat the last command)
    joint_limit_tolerance: float = 0.01  # [rad or m] measurements further outside their limits are rejected
    # after a stale episode: re-seed once every joint stayed within reseed_tolerance for reseed_settle_time
    reseed_settle_time: float = 0.15  # [s] (also the least time without a command before a new stream: stop)
    reseed_tolerance: float = 0.0005  # [rad or m]
    max_goal_distance: Union[None, float] = None  # [m] from the arm's first joint; null = 2x its reach
    goal_smoothing: GoalSmoothingConfig = field(default_factory=GoalSmoothingConfig)
    streaming: StreamingConfig = field(default_factory=StreamingConfig)  # twist and joint-jog streams


def check_choice(value: str, valid: tuple[str, ...], path: str) -> None:
    if value not in valid:
        raise InvalidInputError(f"{path}: unknown value {value!r}; valid: {', '.join(valid)}")


def check_loop_config(cfg: LoopConfig, path: str = "node") -> None:
    """Choices and ranges (:data:`~..ranges.RANGES`) of the control-loop keys."""
    check_choice(cfg.state_feedback, STATE_FEEDBACK, f"{path}.state_feedback")
    check_choice(cfg.stale_behavior, STALE_BEHAVIORS, f"{path}.stale_behavior")
    check_choice(cfg.goal_smoothing.type, SMOOTHING, f"{path}.goal_smoothing.type")
    for key in ("control_rate_hz", "max_state_divergence", "state_timeout", "joint_limit_tolerance",
                "reseed_settle_time", "reseed_tolerance"):
        check_key(getattr(cfg, key), f"node.{key}", f"{path}.{key}")
    if cfg.max_goal_distance is not None:
        check_key(cfg.max_goal_distance, "node.max_goal_distance", f"{path}.max_goal_distance")
    for key in ("time_constant", "max_linear_speed", "max_angular_speed", "max_linear_acceleration",
                "max_angular_acceleration", "max_linear_jerk", "max_angular_jerk", "leash_distance",
                "leash_angle"):  # leashes: .inf = no leash
        check_key(getattr(cfg.goal_smoothing, key), f"node.goal_smoothing.{key}", f"{path}.goal_smoothing.{key}")
    check_streaming_config(cfg.streaming, f"{path}.streaming")


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
    for key, value in update.items():
        old = out.get(key)
        out[key] = _merged(old, value) if isinstance(value, Mapping) and isinstance(old, Mapping) else value
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
    for key, value in given.items():
        w, a = getattr(wanted, key), getattr(actual, key, None)
        if isinstance(value, Mapping) and dataclasses.is_dataclass(w) and dataclasses.is_dataclass(a):
            out += _differences(value, w, a, f"{path}.{key}")
        elif w != a:
            out.append(f"{path}.{key}")
    return out
