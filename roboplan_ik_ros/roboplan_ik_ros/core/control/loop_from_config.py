"""A ControlLoop from a YAML config, everything it says included: the loop keys of its ``node:`` section.

The ``node:`` section holds two kinds of keys: the control loop's (:class:`LoopConfig`: rate, state feedback,
stale handling, goal smoothing, streaming, ...), parsed and checked here, and the ROS node's (trigger, outputs,
topics, thread priorities, status rates, markers), which only the node reads (``node/node_config.py``, which
takes the loop keys from :func:`load_loop_config`: one parser for both). A core user builds the loop with
:func:`control_loop_from_config` (also ``ControlLoop.from_config``); a ControlLoop built from a config and
separate settings says which of the YAML's loop keys its settings do not apply (:func:`unapplied_loop_keys`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import IKConfig, from_mapping, load_config
from ..errors import InvalidInputError
from .control_loop import LoopConfig, check_loop_config

if TYPE_CHECKING:
    from .control_loop import ControlLoop, LogFn

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


def control_loop_from_config(config: IKConfig | Mapping[str, Any] | str | Path, urdf_xml: str, srdf_xml: str,
                             package_paths=(), log: LogFn | None = None,
                             overrides: Mapping[str, Any] | None = None) -> ControlLoop:
    """The ControlLoop the YAML describes, as the node builds it: the scene of its ``robot:`` section
    (joint limits file: acceleration and jerk bounds; explicit limits; ``obstacles:``) and the loop keys of
    its ``node:`` section (:func:`load_loop_config`, with ``overrides`` over them). The node section's other
    keys (the ROS node's) are named in the loop's notes, not used."""
    from ..model.scene_config import scene_from_config
    from .control_loop import ControlLoop

    if isinstance(config, Mapping):
        config = load_config(config)
    elif not isinstance(config, IKConfig):
        config = load_config(Path(config))
    settings = load_loop_config(config, overrides=overrides)
    scene = scene_from_config(urdf_xml, srdf_xml, config.robot, package_paths, config.obstacles)
    loop = ControlLoop(scene, config, settings, log)
    _, ros_keys = split_node_section(config.node)
    if ros_keys:
        loop.notes.append(f"node: {', '.join(ros_keys)}: keys of the ROS node (node/node_config.py checks them), "
                          "not used by the core ControlLoop")
    loop.notes[:0] = list(getattr(scene, "notes", []))
    return loop
