"""The edges of every documented range of a numeric key of the ``node:``, ``solver:``, ``robot:`` and
``perception:`` sections, probed from outside the code's table: the ranges are parsed from
docs/configuration.md (the user's reference, docs_tables.py), not read from the declarations (which the YAML
loader, the objects and the runtime parameters all use: a test comparing those reads the same declaration on
both sides and cannot see a range that is wrong in it). For each key, a value just inside each edge is accepted
and one just outside refused, naming the key: by the YAML loader and, for the node's runtime parameters, by the
node's parameter validation (node/parameters.py, what a ``ros2 param set`` meets), and for the solver keys that
Oink takes, by Oink's constructor. "Just" is one float step (numpy.nextafter): an open edge refuses the edge
itself, a closed one accepts it; a count's step is 1 (and a number between two counts is refused); a
half-line's far edge is the largest finite float (accepted) and .inf (refused, unless the row says ``or .inf``)."""

from __future__ import annotations

import inspect
import math
import re
import sys
from collections.abc import Mapping

import numpy as np
import pytest

from docs_tables import DOCS, DocumentedRange, documented_ranges
from models import scene
from roboplan_ik_ros.core.config import load_config
from roboplan_ik_ros.core.errors import InvalidInputError
from roboplan_ik_ros.core.oink.solver import Oink
from roboplan_ik_ros.node.node_config import load_node_config
from roboplan_ik_ros.node.parameters import loop_specs

RANGES_DOC = documented_ranges("node")
SECTIONS = ("solver", "robot", "perception")
SECTION_RANGES_DOC = {k: r for section in SECTIONS for k, r in documented_ranges(section).items()}


def _edges(r: DocumentedRange) -> tuple[list[float], list[float]]:
    """(values just inside the range, values just outside it) at both edges."""
    if r.integer:
        inside = [int(r.lo) if r.lo_closed else int(r.lo) + 1]
        outside = [inside[0] - 1, inside[0] + 0.5]
        if math.isfinite(r.hi):
            top = int(r.hi) if r.hi_closed else int(r.hi) - 1
            inside.append(top)
            outside.append(top + 1)
        return inside, outside
    down, up = -np.inf, np.inf
    inside = [r.lo if r.lo_closed else np.nextafter(r.lo, up)]
    outside = [np.nextafter(r.lo, down) if r.lo_closed else r.lo]
    if math.isfinite(r.hi):
        inside.append(r.hi if r.hi_closed else np.nextafter(r.hi, down))
        outside.append(np.nextafter(r.hi, up) if r.hi_closed else r.hi)
    else:
        inside.append(sys.float_info.max)
        (inside if r.hi_closed else outside).append(math.inf)  # closed: ".inf" is accepted too (a leash: none)
    return [float(v) for v in inside], [float(v) for v in outside]


def _node_section(key: str, value: float) -> dict:
    """{"goal_smoothing": {"time_constant": value}} for node.goal_smoothing.time_constant; a list item's key
    (node.outputs[].time_from_start) in a list of one item."""
    *parents, leaf = key.split(".")[1:]
    section = {leaf: value}
    for p in reversed(parents):
        section = {p.removesuffix("[]"): [section] if p.endswith("[]") else section}
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
    assert "node.state_timeout" in RANGES_DOC and RANGES_DOC["node.state_timeout"] == (0.0, 60.0, False, True, False)


@pytest.mark.parametrize("key", sorted(RANGES_DOC))
def test_the_yaml_loader_accepts_just_inside_and_refuses_just_outside_each_edge(key):
    inside, outside = _edges(RANGES_DOC[key])
    for value in inside:
        load_node_config(_node_section(key, value))  # accepted: no exception
    for value in outside:
        with pytest.raises(InvalidInputError, match=re.escape(key.replace("[]", "[0]"))):  # the list's one item
            load_node_config(_node_section(key, value))


@pytest.mark.parametrize("key", sorted(k for k in RANGES_DOC if k.removeprefix("node.") in _runtime_specs()))
def test_the_runtime_parameter_accepts_just_inside_and_refuses_just_outside_each_edge(key):
    spec = _runtime_specs()[key.removeprefix("node.")]
    inside, outside = _edges(RANGES_DOC[key])
    for value in inside:
        assert spec.validate(value) == "", f"{spec.name} = {value!r} refused: {spec.validate(value)}"
    for value in outside:
        assert spec.validate(value) != "", f"{spec.name} = {value!r} accepted, outside {RANGES_DOC[key]}"


#: the smallest config a section is loaded with (its YAML check runs whatever the robot; nothing is built)
_BASE = {"tasks": [{"name": "ee", "type": "frame", "frame": "panda_hand_tcp"}]}
_DEFAULTS = load_config(_BASE)


def _section_config(key: str, value: float) -> dict:
    """{"solver": {"max_iter": value}} for solver.max_iter; a mapping key (joint -> number) gets one entry."""
    section, name = key.split(".", 1)
    if isinstance(getattr(getattr(_DEFAULTS, section), name), Mapping):
        value = {"panda_joint1": value}
    return {**_BASE, section: {name: value}}


def test_the_docs_give_the_sections_ranges_that_the_edge_tests_below_probe():
    """What the tests below cover: each section's table states ranges (the docs test, test_section_keys_docs.py,
    checks that they are every declared one)."""
    for section in SECTIONS:
        assert any(k.startswith(f"{section}.") for k in SECTION_RANGES_DOC), f"{DOCS.name}: no range for {section}:"
    assert SECTION_RANGES_DOC["perception.max_age"] == (0.0, 3600.0, False, True, False)
    assert SECTION_RANGES_DOC["solver.max_iter"] == (1.0, math.inf, True, False, True)


@pytest.mark.parametrize("key", sorted(SECTION_RANGES_DOC))
def test_the_yaml_loader_accepts_just_inside_and_refuses_just_outside_each_edge_of_a_section_key(key):
    inside, outside = _edges(SECTION_RANGES_DOC[key])
    for value in inside:
        load_config(_section_config(key, value))  # accepted: no exception
    for value in outside:
        with pytest.raises(InvalidInputError, match=re.escape(key)):
            load_config(_section_config(key, value))


_OINK_KEYWORDS = inspect.signature(Oink.__init__).parameters


@pytest.mark.parametrize("key", sorted(k for k in SECTION_RANGES_DOC
                                       if k.startswith("solver.") and k.removeprefix("solver.") in _OINK_KEYWORDS))
def test_oink_accepts_just_inside_and_refuses_just_outside_each_edge_of_a_solver_key(key):
    """Oink built in code (not from the YAML) checks its arguments with the same ranges."""
    name = key.removeprefix("solver.")
    inside, outside = _edges(SECTION_RANGES_DOC[key])
    panda = scene("panda")
    for value in inside:
        Oink(panda, "arm", **{name: value})  # accepted: no exception
    for value in outside:
        with pytest.raises(InvalidInputError, match=rf"^{name}: "):
            Oink(panda, "arm", **{name: value})
