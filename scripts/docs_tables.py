"""Regenerate the key tables of docs/configuration.md from the sections' key declarations (``key(..., doc=...)``
in the ``node``, ``robot``, ``solver`` and ``perception`` dataclasses; core/key_table.py renders them). Run after
adding or changing a key (the docs tests fail until then):

    python scripts/docs_tables.py --write

``--check``: write nothing, print the difference and exit 1 if a table is not the one the declarations give.
Only the tables between the ``<!-- keys:<sections> begin -->`` / ``end`` marker lines change; the prose stays.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "roboplan_ik_ros"), str(ROOT / "roboplan_ik_ros" / "test")]

from docs_tables import DOCS, generated_docs  # noqa: E402  (the package and its test support, from this tree)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="rewrite the tables in docs/configuration.md")
    mode.add_argument("--check", action="store_true", help="exit 1 if a table differs from its declarations")
    args = parser.parse_args(argv)
    current = DOCS.read_text(encoding="utf-8")
    generated = generated_docs(current)
    if args.write:
        if generated != current:
            DOCS.write_text(generated, encoding="utf-8")
        print(f"{DOCS.relative_to(ROOT)}: {'rewritten' if generated != current else 'already up to date'}")
        return 0
    if generated == current:
        return 0
    sys.stdout.writelines(difflib.unified_diff(current.splitlines(True), generated.splitlines(True),
                                               f"{DOCS.name} (now)", f"{DOCS.name} (from the declarations)"))
    print(f"{DOCS.relative_to(ROOT)}: the key tables differ from the declarations; run python scripts/docs_tables.py "
          f"--write", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
