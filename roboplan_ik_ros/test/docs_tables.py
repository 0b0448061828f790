"""The reference tables of docs/configuration.md: the ones the declarations give, and the file's, row by row.

The ``node``, ``robot``, ``solver`` and ``perception`` tables are generated from the sections' key declarations
(core/key_table.py): :data:`SECTION_CONFIGS` names the dataclass of each, :func:`generated_docs` is the file with
every marked table regenerated (what ``scripts/docs_tables.py --write`` writes). The parsers below read the
file's rows as a user reads them (what the docs tests and the range edge tests probe).

A row of a section's table (``node``, ``solver``, ``robot``, ``perception``) names one key (``node.state_timeout``)
or several (``node.goal_smoothing.max_linear_speed``, ``max_angular_speed``: relative to the first's section; a
name that starts with the section is absolute), then their defaults (one backticked YAML value per key) and the
meaning, where a key's accepted numbers are written as the cell's first words or right after its unit:
``in (0, 60]`` (an interval), ``> 0`` / ``>= 0`` (a half-line, finite; ``> 0 or `.inf``` also .inf),
``integer >= 1`` (a count), and for several keys ``each in [0, 1]`` / ``each > 0`` (one for all) or one per key
in order."""

from __future__ import annotations

import difflib
import math
import re
from pathlib import Path
from typing import NamedTuple

import yaml

from roboplan_ik_ros.core.config import PerceptionConfig, RobotConfig, SolverConfig
from roboplan_ik_ros.core.key_table import marked_tables, with_generated_tables
from roboplan_ik_ros.node.node_config import NodeConfig

DOCS = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
README = Path(__file__).resolve().parents[2] / "README.md"
#: the README's list of the node keys that are runtime parameters (between these markers)
RUNTIME_BEGIN, RUNTIME_END = "<!-- keys:runtime begin -->\n", "<!-- keys:runtime end -->"
#: each section whose table is generated, and the dataclass that declares its keys
SECTION_CONFIGS = {"node": NodeConfig, "robot": RobotConfig, "solver": SolverConfig, "perception": PerceptionConfig}


def generated_docs(text: str | None = None) -> str:
    """docs/configuration.md's text (or ``text``) with every marked key table regenerated from the declarations."""
    return with_generated_tables(DOCS.read_text(encoding="utf-8") if text is None else text, SECTION_CONFIGS)


def runtime_list() -> str:
    """The README's list of the runtime parameters the ``node:`` declarations make (``key(..., runtime=True)``),
    in declaration order, wrapped at 120 characters."""
    from roboplan_ik_ros.core.keys import runtime_fields

    names = [f"`{name}`" for name, _ in runtime_fields(NodeConfig)]
    lines, line = [], ""
    for k, name in enumerate(names):
        word = name + ("," if k < len(names) - 1 else "")
        if line and len(line) + 1 + len(word) > 120:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return "\n".join([*lines, line])


def generated_readme(text: str | None = None) -> str:
    """README.md's text (or ``text``) with the runtime parameter list regenerated from the declarations."""
    text = README.read_text(encoding="utf-8") if text is None else text
    i, j = text.index(RUNTIME_BEGIN) + len(RUNTIME_BEGIN), text.index(RUNTIME_END)
    return text[:i] + runtime_list() + "\n" + text[j:]


def table_difference(block: str) -> str:
    """Why docs/configuration.md's ``keys:<block>`` table is not the one the declarations give (a unified diff and
    what to run), or "" when it is."""
    now = marked_tables(DOCS.read_text(encoding="utf-8"))
    assert block in now, f"{DOCS.name}: no <!-- keys:{block} begin --> ... <!-- keys:{block} end --> block"
    generated = marked_tables(generated_docs())[block]
    if now[block] == generated:
        return ""
    diff = "\n".join(difflib.unified_diff(now[block].splitlines(), generated.splitlines(), "docs", "declarations",
                                          lineterm="", n=0))
    return f"{DOCS.name}'s {block} table is not the declarations'; run python scripts/docs_tables.py --write\n{diff}"


class Row(NamedTuple):
    keys: list[str]  # <section>.<dotted key>, one per name in the row
    defaults: str  # the defaults cell
    meaning: str  # the meaning cell
    line: str


class DocumentedRange(NamedTuple):
    """The numbers a row says a key accepts: [lo, hi] closed or open at each end (hi = inf: a half-line of finite
    numbers, closed when .inf is accepted too); ``integer``: counts only."""

    lo: float
    hi: float
    lo_closed: bool
    hi_closed: bool
    integer: bool = False


def rows(section: str) -> list[Row]:
    """The rows of ``section``'s table, in order."""
    pattern = re.compile(rf"^\| (`{section}\.[^|]*?) \| (.*?) \|(.*)\|$")
    out = []
    for line in DOCS.read_text(encoding="utf-8").splitlines():
        m = pattern.match(line)
        if not m:
            continue
        names = re.findall(r"`([^`]+)`", m.group(1))
        first = names[0]
        keys = [first] + [n if n.startswith(f"{section}.") else first.rpartition(".")[0] + "." + n.lstrip(".")
                          for n in names[1:]]
        out.append(Row(keys, m.group(2), m.group(3).strip(), line))
    return out


def node_rows() -> list[Row]:
    return rows("node")


def documented_defaults(section: str = "node") -> dict[str, object]:
    """``<section>.<key>`` -> its default as the table gives it (a YAML value), for every row of the section's
    table; a row naming several keys (``node.a.b``, ``c``) gives one default per key, in order."""
    out: dict[str, object] = {}
    for row in rows(section):
        defaults = [yaml.safe_load(d) for d in re.findall(r"`([^`]*)`", row.defaults)]
        assert len(defaults) == len(row.keys), f"{row.line[:80]!r}: {len(row.keys)} keys but {len(defaults)} defaults"
        out.update(zip(row.keys, defaults))
    return out


_NUMBER = r"-?[\d.]+(?:e-?\d+)?"
#: a key's accepted numbers: the cell's first words, or after its unit ("[s], in (0, 60]", "[m/s] in (0, 10]",
#: "each in", "[m], >= 0", "integer >= 1"); not an interval elsewhere in the text (command_in_type's
#: "components in [-1, 1]")
_RANGE = re.compile(rf"(?:^|\],? |each )(integer )?(?:in ([(\[])\s*({_NUMBER}),\s*({_NUMBER})\s*([)\]])"
                    rf"|(>=?) ({_NUMBER})( or `\.inf`)?)")
_EACH = re.compile(r"each (?:integer )?(?:in |>)")


def documented_ranges(section: str) -> dict[str, DocumentedRange]:
    """``<section>.<key>`` -> the numbers it accepts, for every row of the section's table that states them
    (one range for several keys with ``each``, else one per key in order)."""
    out = {}
    for row in rows(section):
        keys = row.keys
        ranges = [DocumentedRange(float(lo), float(hi), a == "[", b == "]", bool(integer)) if a else
                  DocumentedRange(float(low), math.inf, op == ">=", bool(inf), bool(integer))
                  for integer, a, lo, hi, b, op, low, inf in _RANGE.findall(row.meaning)]
        if not ranges:
            continue
        if len(ranges) == 1 and (len(keys) == 1 or _EACH.search(row.meaning)):
            ranges = ranges * len(keys)
        assert len(ranges) == len(keys), f"{DOCS.name}: cannot pair {keys} with {ranges}: {row.line}"
        out.update(zip(keys, ranges))
    return out
