"""Kinds: the task, limit and barrier types of the YAML config, each registered by the module that implements it.

A kind module (``tasks/frame_task.py``, ``barriers/position_barrier.py``, ...) holds, next to its class:

- its YAML keys: a dataclass derived from its section's base (:class:`~.tasks.task.TaskConfig`,
  :class:`~.limits.limit.LimitConfig`, :class:`~.barriers.barrier.BarrierConfig`), each key declared with
  :func:`~..keys.key`: default, accepted :class:`~..errors.Range`, size, and, for a key that can change while
  the node runs, the runtime parameter's description;
- its builder, ``build(config, context) -> object``, with :class:`BuildContext` the robot, the control
  period and the starting configuration;
- a :func:`register` call.

The YAML loader (``config.py``), the controller and the node's runtime parameters loop over :func:`kinds`:
adding a kind is one module (and its documentation row and tests). The modules of the ``tasks``,
``limits`` and ``barriers`` packages are imported on the first :func:`kinds` call, which registers them.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InvalidInputError
from ..ranges import RANGES
from .robot import Robot

SECTIONS = ("tasks", "limits", "barriers")


@dataclass(frozen=True)
class BuildContext:
    """What a kind's builder gets: the robot (scene and group), the control period [s] and the full
    configuration q at build time (targets default to it)."""

    robot: Robot
    dt: float
    q: np.ndarray


@dataclass(frozen=True)
class Kind:
    """One YAML ``type`` of a section: its config dataclass and its builder."""

    section: str  # "tasks" | "limits" | "barriers"
    type: str
    config: type
    build: Callable[[Any, BuildContext], Any]
    unique: bool = False  # at most one per config

    def keys(self) -> tuple[str, ...]:
        """The YAML keys of this kind (``given_keys`` is bookkeeping, not a key)."""
        return tuple(f.name for f in dataclasses.fields(self.config) if f.name != "given_keys")


_KINDS: dict[str, dict[str, Kind]] = {section: {} for section in SECTIONS}
_discovered = False


def register(section: str, type: str, config: type, build: Callable[[Any, BuildContext], Any], *,
             unique: bool = False) -> Kind:
    """Register a kind (at import of its module). Its keys' ranges join :data:`~..ranges.RANGES`
    (:func:`range_key`)."""
    if section not in _KINDS:
        raise ValueError(f"unknown section {section!r}; valid: {', '.join(SECTIONS)}")
    declare_ranges(section, config, type)
    kind = Kind(section, type, config, build, unique)
    _KINDS[section][type] = kind
    return kind


_BASES: dict[str, type] = {}  # section -> its base config dataclass (declare_ranges(section, base))


def range_key(section: str, type: str, name: str) -> str:
    """The key of :data:`~..ranges.RANGES` that holds key ``name``'s range: ``<section>[].<name>`` for a key of
    the section's base config (every kind has it: ``tasks[].task_gain``), ``<section>[<type>].<name>`` for a
    kind's own key (``tasks[com].cost`` [cost/m] and ``tasks[manipulability].cost`` [cost] differ)."""
    base = _BASES.get(section)
    if base is not None and name in {f.name for f in dataclasses.fields(base)}:
        return f"{section}[].{name}"
    return f"{section}[{type}].{name}"


def declare_ranges(section: str, config: type, type: str = "") -> None:
    """Add the ranges of ``config``'s keys to :data:`~..ranges.RANGES` under :func:`range_key` (what the
    objects' constructors check with). Without ``type``: ``config`` is the section's base config."""
    if not type:
        _BASES[section] = config
    for f in dataclasses.fields(config):
        rng = f.metadata.get("range")
        if rng is not None:
            name = range_key(section, type, f.name)
            if RANGES.setdefault(name, rng) != rng:
                raise ValueError(f"{config.__name__}.{f.name}: range {rng} differs from {RANGES[name]} of {name}")


def kinds(section: str) -> dict[str, Kind]:
    """The registered kinds of ``section`` by YAML type (importing the kind modules on the first call)."""
    global _discovered
    if not _discovered:
        _discovered = True
        for package in SECTIONS:
            name = f"{__package__}.{package}"
            for module in pkgutil.iter_modules(importlib.import_module(name).__path__):
                importlib.import_module(f"{name}.{module.name}")
    return _KINDS[section]


def kind_of(section: str, type: Any, path: str) -> Kind:
    """The kind named by a list entry's ``type`` (an InvalidInputError naming ``path`` if there is none)."""
    known = kinds(section)
    if type not in known:
        raise InvalidInputError(f"{path}.type: unknown type {type!r}; valid: {', '.join(known)}")
    return known[type]


def foreign_key_error(section: str, kind: Kind, name: str, path: str) -> InvalidInputError:
    """The error for a key that ``kind`` does not take: if another kind of the section takes it, say so."""
    others = {k.config: k.type for k in reversed(kinds(section).values())  # one name per config (the first)
              if k.config is not kind.config and name in k.keys()}.values()
    if others:
        return InvalidInputError(f"{path}.{name}: does not apply to type {kind.type!r} (it is a key of type "
                                 f"{' / '.join(repr(t) for t in others)}); remove it")
    return InvalidInputError(f"{path}.{name}: unknown key; valid keys: {', '.join(kind.keys())}")


@dataclass(frozen=True)
class RuntimeKey:
    """A key of a kind that is also a runtime parameter of the node."""

    name: str
    range_key: str  # the key of RANGES (range_key())
    size: int | None
    description: str


def runtime_keys(config: Any, section: str) -> list[RuntimeKey]:
    """The keys of ``config`` that can change while the node runs, in declaration order."""
    return [RuntimeKey(f.name, range_key(section, config.type, f.name), f.metadata.get("size"), f.metadata["runtime"])
            for f in dataclasses.fields(config) if f.metadata.get("runtime")]
