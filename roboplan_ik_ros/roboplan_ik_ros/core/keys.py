"""Declared keys: each YAML key of a config dataclass declared once, with everything that derives from it.

A field declared with :func:`key` carries its default, the numbers it accepts (:class:`~.errors.Range`) or the
words it accepts (``choices``), its size, its meaning (``doc``: the text of its row in docs/configuration.md)
and whether it can change while the node runs (its runtime parameter's description: derived from ``doc`` for
the sections' keys, given as text by the kinds'). From that one declaration come the YAML check
(:func:`check_declared`, the error naming the key path), the table of ranges the objects and the node's parameter
validation read (:func:`declared_ranges` into :data:`~.ranges.RANGES`), the runtime parameters
(:func:`runtime_fields`, their type, range and description) and the docs' reference tables (:mod:`.key_table`).
The task, limit and barrier kinds declare theirs the same way (:mod:`.oink.kind`), and so do the ``node:``
section's dataclasses (:mod:`.control.loop_config`) and the ``robot:``, ``solver:`` and ``perception:``
sections' (:mod:`.model.robot_config`, :mod:`.oink.solver_config`, :mod:`.model.perception_config`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from .errors import InvalidInputError, Range


def key(default: Any = dataclasses.MISSING, *, factory: Callable[[], Any] | None = None, range: Range | None = None,
        choices: tuple[str, ...] | None = None, size: int | None = None, rule: str = "", doc: str = "",
        runtime: str | bool = "") -> Any:
    """A YAML key of a config dataclass.

    Args:
        range: the numbers it accepts (checked when the YAML is loaded, by the built object and by its
            runtime parameter: one declaration); None: its type alone is checked (and the owner's own checks).
            A mapping key (``robot.velocity_limits``: joint -> v_max): each of its values.
        choices: the words it accepts (a string key), checked the same way.
        size: None one number; n one number or n of them (per axis); -1 one number or one per joint of
            the group (its length is checked when the owner is built).
        rule: what it accepts when that depends on another key (markdown, as the docs show it: the streaming
            singularity thresholds' ``1 <= lower < hard``; checked by its owner): the docs state it in place of
            the range, which alone would promise values the owner refuses.
        doc: its meaning, as its docs row says it (markdown, without the unit, range or choices: the table
            states those from the declaration, :mod:`.key_table`). Consecutive keys with the same doc share a
            row (``max_linear_speed``, ``max_angular_speed``).
        runtime: True: it is a runtime parameter, described by its doc (as plain text); a string: the runtime
            parameter's description, for a key without a doc (the kinds'); "": none.
    """
    if runtime is True:
        if not doc:
            raise ValueError("key(runtime=True) describes the runtime parameter by its doc: give doc=")
        runtime = plain_text(doc)
    elif runtime and doc:
        raise ValueError("key(): a doc and a runtime description; give the text once, as doc= with runtime=True")
    metadata = {"range": range, "choices": choices, "size": size, "rule": rule, "doc": doc,
                "runtime": runtime or ""}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def plain_text(markdown: str) -> str:
    """A doc's markdown as plain text (a runtime parameter's description): code spans, emphasis and links as their
    text."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", markdown)
    return re.sub(r"\*([^*\s][^*]*)\*", r"\1", text).replace("`", "")


def choice_reason(value: Any, choices: tuple[str, ...]) -> str:
    """Why ``value`` is not one of ``choices`` ("" if it is)."""
    return "" if value in choices else f"unknown value {value!r}; valid: {', '.join(choices)}"


def declared_reason(f: dataclasses.Field, value: Any) -> str:
    """Why ``value`` is refused for the declared field ``f`` ("" if accepted; None is "not set": accepted)."""
    if value is None:
        return ""
    rng, choices = f.metadata.get("range"), f.metadata.get("choices")
    if rng is not None:
        return rng.reason(value, f.metadata.get("size"))
    if choices is not None:
        return choice_reason(value, choices)
    return ""


def check_declared(config: Any, path: str) -> None:
    """Check every declared range and choice of ``config``, and of the config dataclasses it holds (nested
    sections such as ``node.goal_smoothing``): an InvalidInputError naming the key path (``node.state_timeout``;
    an entry of a mapping key: ``robot.velocity_limits.panda_joint1``)."""
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        entries = value.items() if isinstance(value, Mapping) else [(None, value)]
        for name, item in entries:
            reason = declared_reason(f, item)
            if reason:
                raise InvalidInputError(f"{path}.{f.name}{'' if name is None else f'.{name}'}: {reason}")
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            check_declared(value, f"{path}.{f.name}")


def _nested_type(f: dataclasses.Field) -> type | None:
    """The config dataclass a field holds (its default or default factory's), or None."""
    default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
    return type(default) if dataclasses.is_dataclass(default) and not isinstance(default, type) else None


def declared_fields(config: type | Any, prefix: str = "") -> Iterator[tuple[str, dataclasses.Field]]:
    """(dotted name under ``prefix``, field) of every declared key of ``config`` and its nested sections, in
    declaration order (``goal_smoothing.type``)."""
    for f in dataclasses.fields(config):
        name = f"{prefix}{f.name}"
        nested = _nested_type(f)
        if nested is not None:
            yield from declared_fields(nested, f"{name}.")
        elif "range" in f.metadata:
            yield name, f


def declared_range(config: type | Any, name: str) -> Range:
    """The range declared for key ``name`` of ``config`` (what an object that takes the key checks it with)."""
    rng = next(f for f in dataclasses.fields(config) if f.name == name).metadata.get("range")
    if rng is None:
        raise KeyError(f"{name}: no range declared")
    return rng


def declared_ranges(section: str, config: type) -> dict[str, Range]:
    """``{"<section>.<dotted key>": range}`` of every key of ``config`` that declares a range."""
    return {f"{section}.{name}": f.metadata["range"] for name, f in declared_fields(config)
            if f.metadata.get("range") is not None}


def runtime_fields(config: type | Any) -> list[tuple[str, dataclasses.Field]]:
    """(dotted name, field) of the keys of ``config`` (and its nested sections) that are runtime parameters."""
    return [(name, f) for name, f in declared_fields(config) if f.metadata.get("runtime")]
