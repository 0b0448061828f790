"""Regenerate the key tables of docs/configuration.md (and README.md's list of runtime parameters) from the sections' key declarations (``key(..., doc=...)``
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

from docs_tables import DOCS, README, generated_docs, generated_readme  # noqa: E402  (the package and its test support, from this tree)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="rewrite the tables in docs/configuration.md")
    mode.add_argument("--check", action="store_true", help="exit 1 if a table differs from its declarations")
    args = parser.parse_args(argv)
    stale = False
    for path, generate in ((DOCS, generated_docs), (README, generated_readme)):
        current = path.read_text(encoding="utf-8")
        generated = generate(current)
        if args.write:
            if generated != current:
                path.write_text(generated, encoding="utf-8")
            print(f"{path.relative_to(ROOT)}: {'rewritten' if generated != current else 'already up to date'}")
        elif generated != current:
            stale = True
            sys.stdout.writelines(difflib.unified_diff(current.splitlines(True), generated.splitlines(True),
                                                       f"{path.name} (now)", f"{path.name} (from the declarations)"))
            print(f"{path.relative_to(ROOT)}: differs from the declarations; run python scripts/docs_tables.py "
                  f"--write", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
