"""The reference tables rendered from key declarations (core/key_table.py), on small dataclasses made here: what a
row states (unit, range, choices, rule, runtime), which keys share a row, which declarations cannot be rendered
(the error names the key and what to add), the defaults as YAML values that read back equal, and the marked
blocks of a docs text (only the table between its markers changes). The real sections' tables are compared with
the docs in test_node_keys_docs.py and test_section_keys_docs.py."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest
import yaml

from roboplan_ik_ros.core.errors import Range
from roboplan_ik_ros.core.key_table import (UndocumentedKeyError, marked_tables, range_words, table,
                                            with_generated_tables, yaml_value)
from roboplan_ik_ros.core.keys import key, plain_text

_PAIR = "the pair's doc"


@dataclass
class Inner:
    speed: float = key(0.5, range=Range(0.0, 10.0, lo_open=True, unit="m/s"), doc=_PAIR, runtime=True)
    turn: float = key(1.0, range=Range(0.0, 100.0, lo_open=True, unit="rad/s"), doc=_PAIR, runtime=True)


@dataclass
class Item:
    name: str = key("", doc="its name")


@dataclass
class Section:
    inner: Inner = key(factory=Inner)
    timeout: float = key(0.5, range=Range(0.0, 60.0, lo_open=True, unit="s"), doc="how long")
    mode: str = key("a", choices=("a", "b"), doc="the mode")
    accel: float = key(1.0, range=Range(lo_open=True, unit="m/s^2"), doc=_PAIR)
    jerk: float = key(2.0, range=Range(lo_open=True, unit="m/s^3"), doc=_PAIR)
    leash: float = key(0.1, range=Range(lo_open=True, inf_ok=True), doc="a leash")
    low: float = key(1.0, range=Range(lo_open=True), rule="`low < high`", doc="the band")
    high: float = key(2.0, range=Range(lo_open=True), rule="`low < high`", doc="the band")
    items: list[Item] = key(factory=lambda: [Item()])


def _rows(config: type = Section, name: str = "s") -> dict[str, str]:
    """first cell -> meaning cell of each row of ``config``'s table."""
    out = {}
    for line in table([(name, config)]).splitlines()[2:]:
        cells = line.split(" | ")
        out[cells[0].removeprefix("| ")] = cells[2].removesuffix(" |")
    return out


def test_a_row_states_the_unit_and_range_before_the_doc():
    assert _rows()["`s.timeout`"] == "[s], in (0, 60]: how long"


def test_the_words_a_doc_does_not_name_are_stated_first_and_named_words_are_not_repeated():
    assert _rows()["`s.mode`"] == "`a` or `b`: the mode"

    @dataclass
    class Named:
        mode: str = key("a", choices=("a", "b"), doc="`a` (first) or `b` (second)")

    assert _rows(Named)["`s.mode`"] == "`a` (first) or `b` (second)"


def test_consecutive_keys_with_one_doc_share_a_row_with_one_range_or_one_per_key():
    rows = _rows()
    assert rows["`s.accel`, `jerk`"] == "[m/s²], [m/s³], each > 0: the pair's doc"
    assert rows["`s.inner.speed`, `turn`"] == \
        "[m/s] in (0, 10], [rad/s] in (0, 100]: the pair's doc. Runtime parameters."


def test_own_keys_come_before_subsections_and_list_items():
    assert list(_rows()) == ["`s.timeout`", "`s.mode`", "`s.accel`, `jerk`", "`s.leash`", "`s.low`, `high`",
                             "`s.inner.speed`, `turn`", "`s.items[].name`"]


def test_a_rule_is_stated_in_place_of_the_range_and_inf_when_accepted():
    rows = _rows()
    assert rows["`s.low`, `high`"] == "`low < high`: the band"
    assert rows["`s.leash`"] == "> 0 or `.inf`: a leash"


def test_pipes_in_a_doc_are_escaped_so_the_cell_does_not_split():
    @dataclass
    class Piped:
        tol: float = key(0.1, doc="`| |q| - 1 |` above this")

    assert _rows(Piped)["`s.tol`"] == r"`\| \|q\| - 1 \|` above this"


@pytest.mark.parametrize("rng, words", [(Range(0.0, 60.0, lo_open=True), "in (0, 60]"), (Range(0.0, 1.0), "in [0, 1]"),
                                        (Range(lo_open=True), "> 0"), (Range(), ">= 0"),
                                        (Range(1, integer=True), "integer >= 1"),
                                        (Range(0.0, 1.0, hi_open=True), "in [0, 1)"),
                                        (Range(lo_open=True, inf_ok=True), "> 0 or `.inf`")])
def test_range_words_state_each_edge_open_or_closed(rng, words):
    assert range_words(rng) == words


@pytest.mark.parametrize("value", [None, True, False, 0, 4000, 0.0, 500.0, 1e-6, 1e-4, 0.0005, 1e16, -math.inf,
                                   math.inf, "", "/joint_states", "jerk_limited", "yes", "null", "1.0", "a: b", [],
                                   [-math.inf, 0.005, 1.0], {}, {"panda_joint1": 2.0}])
def test_a_default_is_written_as_yaml_that_reads_back_equal(value):
    assert yaml.safe_load(yaml_value(value)) == value


def test_a_scientific_default_is_written_with_a_dot_and_a_signed_exponent():
    assert (yaml_value(1e-6), yaml_value(1e16)) == ("1.0e-6", "1.0e+16")  # PyYAML reads "1e-06" as a string


def test_a_field_without_key_or_without_a_doc_is_refused_naming_it():
    @dataclass
    class Plain:
        rate: float = 1.0

    @dataclass
    class NoDoc:
        rate: float = key(1.0)

    with pytest.raises(UndocumentedKeyError, match=r"^s\.rate: not declared with key\(\.\.\., doc=\.\.\.\)"):
        table([("s", Plain)])
    with pytest.raises(UndocumentedKeyError, match=r"^s\.rate: declared without a doc"):
        table([("s", NoDoc)])


def test_a_shared_row_that_mixes_runtime_and_not_or_range_and_none_is_refused():
    @dataclass
    class MixedRuntime:
        a: float = key(1.0, range=Range(), doc="one doc", runtime=True)
        b: float = key(1.0, range=Range(), doc="one doc")

    @dataclass
    class MixedRange:
        a: float = key(1.0, range=Range(), doc="one doc")
        b: bool = key(True, doc="one doc")

    with pytest.raises(UndocumentedKeyError, match="some runtime parameters and some not"):
        table([("s", MixedRuntime)])
    with pytest.raises(UndocumentedKeyError, match="some with a range and some without"):
        table([("s", MixedRange)])


def test_a_runtime_key_is_described_by_its_doc_as_plain_text_and_the_text_is_given_once():
    f = Inner.__dataclass_fields__["speed"]
    assert f.metadata["runtime"] == "the pair's doc"
    assert plain_text("see [Goal shaping](#goal-shaping): `jerk_limited`, *at rest*") == \
        "see Goal shaping: jerk_limited, at rest"
    with pytest.raises(ValueError, match="give doc="):
        key(1.0, runtime=True)
    with pytest.raises(ValueError, match="give the text once"):
        key(1.0, doc="a doc", runtime="another description")


def test_only_the_table_between_the_markers_is_rewritten():
    text = "prose before\n<!-- keys:s begin -->\n| stale |\n<!-- keys:s end -->\nprose after\n"
    out = with_generated_tables(text, {"s": Item})
    assert out == f"prose before\n<!-- keys:s begin -->\n{table([('s', Item)])}\n<!-- keys:s end -->\nprose after\n"
    assert marked_tables(out) == {"s": table([("s", Item)])}
    assert with_generated_tables(out, {"s": Item}) == out


def test_a_block_of_two_sections_is_one_table_in_their_order_and_an_unknown_section_is_refused():
    text = "<!-- keys:s,t begin -->\n<!-- keys:s,t end -->\n"
    lines = marked_tables(with_generated_tables(text, {"s": Item, "t": Item}))["s,t"].splitlines()
    assert lines[2:] == ["| `s.name` | `\"\"` | its name |", "| `t.name` | `\"\"` | its name |"]
    with pytest.raises(ValueError, match="no declared section u"):
        with_generated_tables("<!-- keys:u begin -->\n<!-- keys:u end -->\n", {"s": Item})


def test_a_marker_without_its_end_is_refused():
    with pytest.raises(ValueError, match="without its end"):
        marked_tables("<!-- keys:s begin -->\n| row |\n")
