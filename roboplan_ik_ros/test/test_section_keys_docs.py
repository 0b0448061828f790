"""The ``solver:``, ``robot:`` and ``perception:`` reference tables (docs/configuration.md) against the keys the
code declares.

Every key of these sections is declared once, in its dataclass (core/oink/solver_config.py,
core/model/robot_config.py, core/model/perception_config.py): default, range or choices, and its meaning (``doc``,
the row's text). The YAML check, the ranges the objects read (Oink, the Scene), RANGES and the docs tables come
from that declaration: the tables are generated (core/key_table.py, ``scripts/docs_tables.py --write``), and this
test fails until the file holds the generated ones. The file's rows are also read back as a user reads them: a
field not declared with key(), a declared key without a row, a row for a key the code does not have, a default
that does not read back as the declared one, a range or a choice that differs fails here. (The ranges' edges are
probed from the rows by test_parameter_range_edges.py.)"""

from __future__ import annotations

import dataclasses
import math
import re

import pytest

from docs_tables import DocumentedRange, documented_defaults, documented_ranges, rows, table_difference
from roboplan_ik_ros.core.config import PerceptionConfig, RobotConfig, SolverConfig
from roboplan_ik_ros.core.errors import Range
from roboplan_ik_ros.core.keys import declared_fields
from roboplan_ik_ros.core.ranges import RANGES

SECTIONS = {"solver": SolverConfig, "robot": RobotConfig, "perception": PerceptionConfig}


def declared(section: str) -> dict[str, dataclasses.Field]:
    """``<section>.<key>`` -> the field of every key the section's dataclass declares with key()."""
    return {f"{section}.{name}": f for name, f in declared_fields(SECTIONS[section])}


def declared_default(f: dataclasses.Field) -> object:
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default


def as_documented(rng: Range) -> DocumentedRange:
    """A declared range as the docs state it (a half-line's far edge: hi = inf, open unless .inf is accepted)."""
    hi_closed = (math.isfinite(rng.hi) and not rng.hi_open) or rng.inf_ok
    return DocumentedRange(rng.lo, rng.hi, not rng.lo_open, hi_closed, rng.integer)


@pytest.mark.parametrize("block", ["robot,solver", "perception"])
def test_the_sections_tables_in_the_docs_are_the_ones_generated_from_the_declarations(block):
    difference = table_difference(block)
    assert not difference, difference


@pytest.mark.parametrize("section", SECTIONS)
def test_every_field_of_the_section_is_declared_with_key(section):
    """A field without key() would escape the YAML check (check_declared) and this test."""
    fields = [f"{section}.{f.name}" for f in dataclasses.fields(SECTIONS[section])]
    assert list(declared(section)) == fields


@pytest.mark.parametrize("section", SECTIONS)
def test_every_declared_key_has_a_row_and_every_row_a_declared_key(section):
    documented, keys = set(documented_defaults(section)), set(declared(section))
    assert documented, f"no {section}. row found in docs/configuration.md"
    assert not keys - documented, f"declared but not in docs/configuration.md: {sorted(keys - documented)}"
    assert not documented - keys, f"in docs/configuration.md but not declared: {sorted(documented - keys)}"


@pytest.mark.parametrize("section", SECTIONS)
def test_each_rows_default_is_the_declared_default(section):
    documented = documented_defaults(section)
    wrong = {k: (documented[k], declared_default(f)) for k, f in declared(section).items()
             if k in documented and documented[k] != declared_default(f)}
    assert not wrong, f"docs default != declared default: {wrong}"


@pytest.mark.parametrize("section", SECTIONS)
def test_each_rows_range_is_the_declared_range_and_no_row_states_an_undeclared_one(section):
    documented = documented_ranges(section)
    ranges = {k: f.metadata["range"] for k, f in declared(section).items() if f.metadata["range"] is not None}
    assert ranges, f"{section}: no declared range"
    missing = sorted(set(ranges) - set(documented))
    assert not missing, f"declared ranges that docs/configuration.md does not state: {missing}"
    undeclared = sorted(set(documented) - set(ranges))
    assert not undeclared, f"ranges in docs/configuration.md that are not declared: {undeclared}"
    wrong = {k: (documented[k], as_documented(rng)) for k, rng in ranges.items() if documented[k] != as_documented(rng)}
    assert not wrong, f"docs range != declared range: {wrong}"


@pytest.mark.parametrize("section", SECTIONS)
def test_each_rows_choices_are_the_declared_choices(section):
    """Each word a key accepts is named in its row (backticked)."""
    meaning = {k: row.meaning for row in rows(section) for k in row.keys}
    for k, f in declared(section).items():
        choices = f.metadata["choices"]
        if choices is None:
            continue
        words = set(re.findall(r"`([a-z_]+)`", meaning[k]))
        assert set(choices) <= words, f"{k}: declared choices {choices}, the row names {sorted(words)}"


@pytest.mark.parametrize("section", SECTIONS)
def test_the_sections_ranges_in_RANGES_are_the_declared_ones(section):
    """RANGES (what Oink's constructor checks with) holds each declared range under ``<section>.<key>``, the same
    object: derived, not written again."""
    ranges = {k: f.metadata["range"] for k, f in declared(section).items() if f.metadata["range"] is not None}
    assert {k: RANGES.get(k) for k in ranges} == ranges
    assert all(RANGES[k] is rng for k, rng in ranges.items())
    assert not {k for k in RANGES if k.startswith(f"{section}.")} - set(ranges), "a RANGES entry without a declaration"


@pytest.mark.parametrize("section", SECTIONS)
def test_no_key_of_the_section_is_declared_runtime(section):
    """The node declares runtime parameters for the node: section and the kinds only (node/parameters.py): a
    runtime description here would promise a ``ros2 param set`` that does not exist."""
    runtime = [k for k, f in declared(section).items() if f.metadata["runtime"]]
    assert not runtime, f"declared runtime, but the node has no parameter for them: {runtime}"
