"""Every promise of the README has an end-to-end proof (issue 31): docs/e2e_coverage.md maps each row of the
README's interface tables and each item of its kinds list to e2e tests (processes over DDS, through the strict
drive), and this test holds the map to the README and to the test files.

No process is started: the README and the doc are parsed, and the tests named are looked up by their ``def test_``
names in files that run the e2e harness (they import ``e2e``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
COVERAGE = ROOT / "docs" / "e2e_coverage.md"
TEST_DIR = Path(__file__).resolve().parent
#: README table headers -> the doc's name of the table
TABLES = {"| interface | type | what |": "interfaces", "| input | type | fields read | units |": "streaming"}
TEST_ID = re.compile(r"(test_\w+\.py)::(test_\w+)")


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def readme_table_rows(text: str) -> set[tuple[str, str]]:
    """(table, first cell) of every body row of the README tables named in TABLES."""
    rows: set[tuple[str, str]] = set()
    lines = text.splitlines()
    for i, line in enumerate(lines):
        table = TABLES.get(line.strip())
        if table is None:
            continue
        for body in lines[i + 2:]:  # after the header and its |---| line
            if not body.startswith("|"):
                break
            rows.add((table, _cells(body)[0]))
    return rows


def _split_list(text: str) -> list[str]:
    """'a, b and c' -> ['a', 'b', 'c']."""
    return [p.strip() for p in re.split(r",\s*|\s+and\s+", text) if p.strip()]


def readme_kind_rows(text: str) -> set[tuple[str, str]]:
    """('kinds', item) of the README's bullet 'tasks (...), limits (...) and barriers (...)' and its dual-arm item."""
    start = text.index("- tasks (")
    end = text.index("\n- ", start + 1)
    bullet = " ".join(text[start:end].split())
    m = re.search(r"tasks \((.*?)\), limits \((.*?)\) and barriers \((.*?)\), one module a kind", bullet)
    assert m, f"the README's kinds bullet changed its form: {bullet!r}"
    tasks, extras = m.group(1).split(";")
    rows = {f"task `{name}`" for name in re.findall(r"`(\w+)`", tasks)}
    rows |= {f"`{name}`" for name in re.findall(r"`(\w+)`", extras)}
    rows |= {f"limit {name}" for name in _split_list(m.group(2))}
    rows |= {f"barrier {name}" for name in _split_list(m.group(3))}
    dual = re.search(r"(two arms in one QP) \(`config/baxter_dual\.yaml`\)", bullet)
    assert dual, "the README's kinds bullet no longer names the dual-arm config"
    rows.add(dual.group(1))
    return {("kinds", r) for r in rows}


def coverage_map(text: str) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """(table, README row) -> [(file, test)] of the doc's three-column tables."""
    mapping: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for line in text.splitlines():
        if not line.startswith("|"):
            continue
        cells = _cells(line)
        if len(cells) != 3 or cells[0] not in (*TABLES.values(), "kinds"):
            continue
        key = (cells[0], cells[1])
        assert key not in mapping, f"docs/e2e_coverage.md maps {key} twice"
        mapping[key] = TEST_ID.findall(cells[2])
    return mapping


def e2e_tests() -> dict[str, set[str]]:
    """file -> its ``def test_`` names, for the test files that run the e2e harness."""
    out: dict[str, set[str]] = {}
    for path in TEST_DIR.glob("test_*.py"):
        source = path.read_text()
        if re.search(r"^(from e2e import|import e2e\b)", source, re.M):
            out[path.name] = set(re.findall(r"^def (test_\w+)\(", source, re.M))
    return out


@pytest.fixture(scope="module")
def readme_rows():
    text = README.read_text()
    rows = readme_table_rows(text) | readme_kind_rows(text)
    # the parser found the tables it is meant to (a renamed header would leave them out silently)
    assert {t for t, _ in rows} == {*TABLES.values(), "kinds"}, sorted({t for t, _ in rows})
    return rows


@pytest.fixture(scope="module")
def mapping():
    return coverage_map(COVERAGE.read_text())


def test_every_readme_row_is_mapped_to_an_e2e_test(readme_rows, mapping):
    missing = sorted(r for r in readme_rows if not mapping.get(r))
    assert not missing, "README rows without an e2e test in docs/e2e_coverage.md:\n" + "\n".join(
        f"  {t}: {row}" for t, row in missing)


def test_the_map_names_only_readme_rows(readme_rows, mapping):
    stale = sorted(set(mapping) - readme_rows)
    assert not stale, "docs/e2e_coverage.md rows the README does not have (renamed or removed?):\n" + "\n".join(
        f"  {t}: {row}" for t, row in stale)


def test_every_mapped_test_exists_in_an_e2e_file(mapping):
    tests = e2e_tests()
    assert "test_e2e_motion.py" in tests and "test_e2e_coverage.py" not in tests, sorted(tests)
    unknown = sorted({f"{f}::{t}" for ids in mapping.values() for f, t in ids if t not in tests.get(f, ())})
    assert not unknown, "docs/e2e_coverage.md names tests that are not in an e2e test file:\n  " + "\n  ".join(unknown)


def test_the_parsers_see_what_the_readme_says():
    """The parsers on a small README of the same form (each table's rows, the kinds bullet's items)."""
    text = """
| interface | type | what |
|---|---|---|
| `~/a` (sub) | T | x |
| `~/b` (srv) | U | y |

| input | type | fields read | units |
|---|---|---|---|
| `~/c` | V | f | u |

- tasks (`frame`, `joint`; `exclude_joints` on each), limits (position, velocity and jerk) and
  barriers (a workspace box, singularity, `sphere`), one module a kind ([Kinds](x));
  two arms in one QP (`config/baxter_dual.yaml`);
- next
"""
    assert readme_table_rows(text) == {("interfaces", "`~/a` (sub)"), ("interfaces", "`~/b` (srv)"),
                                       ("streaming", "`~/c`")}
    assert readme_kind_rows(text) == {("kinds", r) for r in (
        "task `frame`", "task `joint`", "`exclude_joints`", "limit position", "limit velocity", "limit jerk",
        "barrier a workspace box", "barrier singularity", "barrier `sphere`", "two arms in one QP")}
    doc = "| kinds | task `frame` | test_e2e_motion.py::test_step_goals_10_to_30_cm<br>test_a.py::test_b |\n"
    assert coverage_map(doc) == {("kinds", "task `frame`"): [("test_e2e_motion.py", "test_step_goals_10_to_30_cm"),
                                                            ("test_a.py", "test_b")]}
