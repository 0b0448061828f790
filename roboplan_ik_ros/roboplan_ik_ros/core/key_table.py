"""The configuration reference's key tables (docs/configuration.md), generated from the key declarations.

Each key of a YAML section is declared once (:func:`.keys.key`); its row of the section's table is rendered from
that declaration: the key, its default as a YAML value, and its meaning: the unit and the numbers it accepts
(``[s], in (0, 60]``; several keys in one row: ``[m/s], [rad/s], each in (0, 100]``, or one range per key when
they differ), or the words it accepts unless its doc names them, or its rule between keys; then its doc, and
``Runtime parameter.`` for a runtime parameter. Consecutive keys declared with the same doc share one row. A
section's own keys come first, then its subsections' (``node.goal_smoothing.type``) and the keys of each item
of a list of sections (``node.outputs[].type``).

The docs hold each generated table between two marker lines, ``<!-- keys:node begin -->`` and
``<!-- keys:node end -->`` (``keys:robot,solver``: one table for both sections, in that order); the prose around
them is written by hand. ``scripts/docs_tables.py --write`` rewrites the tables; the docs tests fail until it has.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import yaml

from .errors import Range

HEADER = ("| key | default | meaning |", "|---|---|---|")
MARKER = re.compile(r"^<!-- keys:([a-z_,]+) (begin|end) -->$", re.M)
_SUPERSCRIPTS = {"^2": "²", "^3": "³"}


class UndocumentedKeyError(ValueError):
    """A key whose row cannot be rendered from its declaration (no key(), no doc, a row that mixes kinds)."""


def yaml_value(value: Any) -> str:
    """``value`` as YAML writes it (and reads it back equal): ``null``, ``true``, ``1.0e-6``, ``-.inf``,
    ``""``, ``[]``, ``/joint_states``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        if math.isinf(value):
            return ".inf" if value > 0 else "-.inf"
        text = repr(value)
        if "e" in text:  # YAML 1.1 reads an exponent only after a dot in the mantissa, and signed: 1.0e-6
            mantissa, exponent = text.split("e")
            text = f"{mantissa if '.' in mantissa else mantissa + '.0'}e{int(exponent):+d}"
        return text
    if isinstance(value, str):
        return value if value and _reads_back(value) else json.dumps(value)
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{yaml_value(k)}: {yaml_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(yaml_value(v) for v in value) + "]"
    raise UndocumentedKeyError(f"{value!r}: no YAML form for a default of type {type(value).__name__}")


def _reads_back(text: str) -> bool:
    """Does YAML read ``text`` unquoted as this same string?"""
    try:
        return yaml.safe_load(text) == text
    except yaml.YAMLError:
        return False


def range_words(rng: Range) -> str:
    """The numbers ``rng`` accepts, as a row states them: ``in (0, 60]``, ``> 0``, ``>= 0``, ``integer >= 1``,
    ``> 0 or `.inf```."""
    if math.isinf(rng.hi):
        text = f"{'>' if rng.lo_open else '>='} {rng.lo:g}"
    else:
        text = f"in {'(' if rng.lo_open else '['}{rng.lo:g}, {rng.hi:g}{')' if rng.hi_open else ']'}"
    text = f"integer {text}" if rng.integer else text
    return f"{text} or `.inf`" if rng.inf_ok else text


def unit_words(rng: Range) -> str:
    """``rng``'s unit as a row writes it (``[m/s²]``; "" without one)."""
    unit = rng.unit
    for plain, superscript in _SUPERSCRIPTS.items():
        unit = unit.replace(plain, superscript)
    return f"[{unit}]" if unit else ""


def _default(f: dataclasses.Field) -> Any:
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default


def _section_of(f: dataclasses.Field) -> tuple[type, str] | None:
    """(the config dataclass, the path suffix) a field holds: a subsection (``goal_smoothing``: ``.``) or a
    list of sections (``outputs``: ``[].``, from its default's first item); None for a key."""
    default = _default(f)
    if dataclasses.is_dataclass(default) and not isinstance(default, type):
        return type(default), "."
    if isinstance(default, list) and default and all(dataclasses.is_dataclass(v) for v in default):
        return type(default[0]), "[]."
    return None


def documented_keys(config: type, prefix: str = "") -> Iterator[tuple[str, dataclasses.Field]]:
    """(dotted name under ``prefix``, field) of every key of ``config`` in table order: its own keys in
    declaration order, then each subsection's (``goal_smoothing.type``) and each list item's
    (``outputs[].type``)."""
    sections = []
    for f in dataclasses.fields(config):
        held = _section_of(f)
        if held is None:
            yield f"{prefix}{f.name}", f
        else:
            sections.append((held, f"{prefix}{f.name}"))
    for (section, suffix), name in sections:
        yield from documented_keys(section, f"{name}{suffix}")


def _row_groups(section: str, config: type) -> list[list[tuple[str, dataclasses.Field]]]:
    """The keys of ``section`` grouped into rows: a run of consecutive keys with the same doc and parent."""
    groups: list[list[tuple[str, dataclasses.Field]]] = []
    for name, f in documented_keys(config):
        path = f"{section}.{name}"
        if "doc" not in f.metadata:
            raise UndocumentedKeyError(f"{path}: not declared with key(..., doc=...): it would have no docs row")
        if not f.metadata["doc"]:
            raise UndocumentedKeyError(f"{path}: declared without a doc: key(..., doc=\"what it means\")")
        last = groups[-1][-1] if groups else None
        if (last is not None and last[1].metadata["doc"] == f.metadata["doc"]
                and last[0].rpartition(".")[0] == path.rpartition(".")[0]):
            groups[-1].append((path, f))
        else:
            groups.append([(path, f)])
    return groups


def _accepted(keys: list[tuple[str, dataclasses.Field]]) -> str:
    """What a row's keys accept, as the row states it first ("" when nothing is declared)."""
    names = ", ".join(path for path, _ in keys)
    fields = [f for _, f in keys]
    rules = {f.metadata["rule"] for f in fields}
    if rules != {""}:
        if len(rules) != 1:
            raise UndocumentedKeyError(f"{names}: one row, different rules; give them different docs")
        return rules.pop()
    ranges = [f.metadata["range"] for f in fields]
    if all(r is None for r in ranges):
        return _choices(keys)
    if any(r is None for r in ranges):
        raise UndocumentedKeyError(f"{names}: one row, some with a range and some without; give them different docs")
    units = [unit_words(r) for r in ranges]
    words = [range_words(r) for r in ranges]
    if len(set(words)) > 1 or (len(set(units)) > 1 and "" in units):  # per key: "[m/s] in (0, 10], [rad/s] in (0, 100]"
        return ", ".join(f"{u} {w}".strip() for u, w in zip(units, words))
    several = len(fields) > 1 or isinstance(_default(fields[0]), Mapping)  # a mapping key: each of its values
    shown_units = list(dict.fromkeys(units)) if len(set(units)) == 1 else units
    return ", ".join([u for u in shown_units if u] + [f"{'each ' if several else ''}{words[0]}"])


def _choices(keys: list[tuple[str, dataclasses.Field]]) -> str:
    """The words a row's keys accept when its doc does not name each of them (backticked); else ""."""
    choices = list(dict.fromkeys(c for _, f in keys for c in (f.metadata["choices"] or ())))
    doc = keys[0][1].metadata["doc"]
    if all(f"`{c}`" in doc for c in choices):
        return ""
    quoted = [f"`{c}`" for c in choices]
    return ", ".join(quoted[:-1]) + f" or {quoted[-1]}" if len(quoted) > 1 else quoted[0]


def _runtime(keys: list[tuple[str, dataclasses.Field]]) -> str:
    runtime = [bool(f.metadata["runtime"]) for _, f in keys]
    if any(runtime) and not all(runtime):
        raise UndocumentedKeyError(f"{', '.join(p for p, _ in keys)}: one row, some runtime parameters and some "
                                   f"not; give them different docs")
    return "" if not runtime[0] else "Runtime parameters." if len(keys) > 1 else "Runtime parameter."


def _cell(markdown: str) -> str:
    """Text in a table cell: its pipes escaped (GFM splits cells at a pipe, code spans too)."""
    return re.sub(r"(?<!\\)\|", r"\\|", markdown)


def row(keys: list[tuple[str, dataclasses.Field]]) -> str:
    """The table row of one key or of several that share a doc (``<section>.<dotted name>``, field)."""
    first = keys[0][0]
    parent = first.rpartition(".")[0]
    names = ", ".join([f"`{first}`"] + [f"`{path.removeprefix(parent + '.')}`" for path, _ in keys[1:]])
    defaults = ", ".join(f"`{yaml_value(_default(f))}`" for _, f in keys)
    accepted, doc, runtime = _accepted(keys), keys[0][1].metadata["doc"], _runtime(keys)
    meaning = f"{accepted}: {doc}" if accepted else doc
    if runtime:
        meaning = f"{meaning}{'' if meaning.endswith('.') else '.'} {runtime}"
    return f"| {names} | {defaults} | {_cell(meaning)} |"


def table(sections: Sequence[tuple[str, type]]) -> str:
    """The reference table of one or more sections ((name, config dataclass), in order), header included."""
    return "\n".join([*HEADER, *(row(keys) for name, config in sections for keys in _row_groups(name, config))])


def marked_tables(text: str) -> dict[str, str]:
    """``{"robot,solver": table text}`` of every block between a ``<!-- keys:<names> begin -->`` and its
    ``end`` line in ``text`` (the lines between, without the markers)."""
    out, start, name = {}, None, None
    for m in MARKER.finditer(text):
        if m.group(2) == "begin":
            if m.group(1) in out:
                raise ValueError(f"<!-- keys:{m.group(1)} begin --> twice")
            if name is not None:
                raise ValueError(f"<!-- keys:{m.group(1)} begin --> inside the keys:{name} block")
            name, start = m.group(1), m.end()
        else:
            if m.group(1) != name:
                raise ValueError(f"<!-- keys:{m.group(1)} end --> without its begin")
            out[name] = text[start:m.start()].strip("\n")
            name = None
    if name is not None:
        raise ValueError(f"<!-- keys:{name} begin --> without its end")
    return out


def with_generated_tables(text: str, configs: Mapping[str, type]) -> str:
    """``text`` with every marked block (:func:`marked_tables`) replaced by the table its sections' declarations
    give (``configs``: section name -> its config dataclass)."""
    for name in marked_tables(text):
        unknown = [s for s in name.split(",") if s not in configs]
        if unknown:
            raise ValueError(f"<!-- keys:{name} begin -->: no declared section {', '.join(unknown)}; "
                             f"known: {', '.join(configs)}")
        begin, end = f"<!-- keys:{name} begin -->", f"<!-- keys:{name} end -->"
        head, _, rest = text.partition(begin)
        _, _, tail = rest.partition(end)
        text = f"{head}{begin}\n{table([(s, configs[s]) for s in name.split(',')])}\n{end}{tail}"
    return text
