"""The edges of every documented range of a numeric ``node.*`` key, probed from outside the code's table:
the intervals are parsed from docs/configuration.md (the user's reference), not read from core/ranges.py
(which the YAML loader and the runtime parameters both use: a test comparing those two reads the same
table on both sides and cannot see a range that is wrong in it). For each key, a value just inside each
edge is accepted and one just outside refused, naming the key: by the YAML loader (``node:`` section)
and, for the runtime parameters, by the node's parameter validation (node/parameters.py, what a
``ros2 param set`` meets). "Just" is one float step (numpy.nextafter): an open edge refuses the edge
itself, a closed one accepts it."""

from __future__ import annotations

import re

import numpy as np
import pytest

from docs_tables import DOCS, node_rows
from roboplan_ik_ros.core.errors import InvalidInputError
from roboplan_ik_ros.node.node_config import load_node_config
from roboplan_ik_ros.node.parameters import loop_specs

#: a key's interval: the cell's first words, or after its unit ("[s], in (0, 60]", "[m/s] in (0, 10]", "each in");
#: not an interval elsewhere in the text (command_in_type's "components in [-1, 1]")
_INTERVAL = re.compile(r"(?:^|\],? |each )in ([(\[])\s*(-?[\d.]+(?:e-?\d+)?),\s*(-?[\d.]+(?:e-?\d+)?)\s*([)\]])")


def documented_ranges() -> dict[str, tuple[float, float, bool, bool]]:
    """``node.<key>`` -> (lo, hi, lo_closed, hi_closed) of every row of the node table with an interval
    (``in (0, 60]``; one interval for several keys with ``each in``, else one per key in order)."""
    out = {}
    for row in node_rows():
        keys = row.keys
        intervals = [(float(lo), float(hi), a == "[", b == "]") for a, lo, hi, b in _INTERVAL.findall(row.meaning)]
        if not intervals:
            continue
        if len(intervals) == 1 and (len(keys) == 1 or "each in" in row.meaning):
            intervals = intervals * len(keys)
        assert len(intervals) == len(keys), f"{DOCS.name}: cannot pair {keys} with {intervals}: {row.line}"
        out.update(zip(keys, intervals))
    return out


RANGES_DOC = documented_ranges()


def _edges(lo: float, hi: float, lo_closed: bool, hi_closed: bool) -> tuple[list[float], list[float]]:
    """(values just inside the interval, values just outside it) at both edges."""
    down, up = -np.inf, np.inf
    inside = [lo if lo_closed else np.nextafter(lo, up), hi if hi_closed else np.nextafter(hi, down)]
    outside = [np.nextafter(lo, down) if lo_closed else lo, np.nextafter(hi, up) if hi_closed else hi]
    return [float(v) for v in inside], [float(v) for v in outside]


def _node_section(key: str, value: float) -> dict:
    """{"goal_smoothing": {"time_constant": value}} for node.goal_smoothing.time_constant."""
    *parents, leaf = key.split(".")[1:]
    section = {leaf: value}
    for p in reversed(parents):
        section = {p: section}
    return section


def _runtime_specs() -> dict:
    return {s.name: s for s in loop_specs(load_node_config({}), lambda v: None, lambda v: None, lambda v: None)}


def test_the_docs_give_a_range_for_every_numeric_runtime_parameter():
    """What the edge tests below cover: each numeric node parameter settable at run time has its interval
    in the docs' node table (a parameter without one would be probed nowhere)."""
    numeric = [name for name, spec in _runtime_specs().items() if isinstance(spec.value, float)]
    assert numeric, "no numeric runtime parameter found"
    missing = [name for name in numeric if f"node.{name}" not in RANGES_DOC]
    assert not missing, f"{DOCS.name}'s node table states no interval ('in (a, b]') for {missing}"
    assert "node.state_timeout" in RANGES_DOC and RANGES_DOC["node.state_timeout"] == (0.0, 60.0, False, True)


@pytest.mark.parametrize("key", sorted(RANGES_DOC))
def test_the_yaml_loader_accepts_just_inside_and_refuses_just_outside_each_edge(key):
    inside, outside = _edges(*RANGES_DOC[key])
    for value in inside:
        load_node_config(_node_section(key, value))  # accepted: no exception
    for value in outside:
        with pytest.raises(InvalidInputError, match=re.escape(key)):
            load_node_config(_node_section(key, value))


@pytest.mark.parametrize("key", sorted(k for k in RANGES_DOC if k.removeprefix("node.") in _runtime_specs()))
def test_the_runtime_parameter_accepts_just_inside_and_refuses_just_outside_each_edge(key):
    spec = _runtime_specs()[key.removeprefix("node.")]
    inside, outside = _edges(*RANGES_DOC[key])
    for value in inside:
        assert spec.validate(value) == "", f"{spec.name} = {value!r} refused: {spec.validate(value)}"
    for value in outside:
        assert spec.validate(value) != "", f"{spec.name} = {value!r} accepted, outside {RANGES_DOC[key]}"
