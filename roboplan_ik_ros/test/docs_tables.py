"""The ``node:`` table of docs/configuration.md, row by row: what the docs tests read (the user's reference).

A row names one key (``node.state_timeout``) or several (``node.goal_smoothing.max_linear_speed``,
``max_angular_speed``: relative to the first's section; a name that starts with ``node.`` is absolute), then their
defaults (one backticked YAML value per key) and the meaning (a key's interval is written there)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

DOCS = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
_ROW = re.compile(r"^\| (`node\.[^|]*?) \| (.*?) \|(.*)\|$")


class NodeRow(NamedTuple):
    keys: list[str]  # node.<dotted key>, one per name in the row
    defaults: str  # the defaults cell
    meaning: str  # the meaning cell
    line: str


def node_rows() -> list[NodeRow]:
    rows = []
    for line in DOCS.read_text(encoding="utf-8").splitlines():
        m = _ROW.match(line)
        if not m:
            continue
        names = re.findall(r"`([^`]+)`", m.group(1))
        first = names[0]
        keys = [first] + [n if n.startswith("node.") else first.rpartition(".")[0] + "." + n.lstrip(".")
                          for n in names[1:]]
        rows.append(NodeRow(keys, m.group(2), m.group(3).strip(), line))
    return rows
