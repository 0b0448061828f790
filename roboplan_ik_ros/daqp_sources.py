"""Where setup.py finds DAQP's C sources, which it builds into the OInK kernel (the step's QP in the kernel's call).

DAQP (MIT) ships them in its sdist (csrc/src/*.c, csrc/include/*.h); scripts/fetch_daqp_sources.sh extracts the
version requirements.txt pins into build/daqp-<version>/ (with its LICENSE). Without them the kernel is built
without its QP and the solver uses the daqp Python module (the same solver, through Python).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import NamedTuple

SOURCES_VARIABLE = "ROBOPLAN_DAQP_SOURCES"  # a folder holding csrc/src and csrc/include (an extracted DAQP sdist)

# What DAQP's own setup.py compiles (every file of csrc/src: api.c reaches all of them), and its flags: -O3 and the
# reassociation it allows (the daqp wheel's arithmetic); not its -DPROFILING (timers only: time_limit stays 0).
# Hidden visibility: the kernel exports only its own functions (no clash with the daqp module's symbols).
SOURCE_FILES = ("api.c", "avi.c", "auxiliary.c", "bnb.c", "daqp.c", "daqp_prox.c", "eq_elim.c", "factorization.c",
                "hierarchical.c", "presolve.c", "utils.c")
COMPILE_FLAGS = ("-O3", "-fassociative-math", "-fno-signed-zeros", "-fno-trapping-math", "-fvisibility=hidden")


class DaqpSources(NamedTuple):
    sources: list[str]  # csrc/src/*.c, SOURCE_FILES' order
    include: str  # csrc/include
    headers: list[str]


def pinned_version(requirements: Path) -> str:
    """The version ``daqp==<version>`` in ``requirements`` ("" if it pins none)."""
    if not requirements.is_file():
        return ""
    m = re.search(r"^daqp==([0-9][0-9A-Za-z.]*)", requirements.read_text(), flags=re.M)
    return m.group(1) if m else ""


def find_daqp_sources(repository: Path, environ=os.environ) -> tuple[DaqpSources | None, str]:
    """(DAQP's sources, "") from ``$ROBOPLAN_DAQP_SOURCES``, else from ``repository``/build/daqp-<pinned version>;
    or (None, why not)."""
    where = environ.get(SOURCES_VARIABLE, "")
    if where:
        root, origin = Path(where), f"${SOURCES_VARIABLE} ({where})"
    else:
        version = pinned_version(repository / "requirements.txt")
        if not version:
            return None, f"{repository / 'requirements.txt'} pins no daqp==<version> (set ${SOURCES_VARIABLE})"
        root = repository / "build" / f"daqp-{version}"
        origin = f"{root} (scripts/fetch_daqp_sources.sh puts them there; or set ${SOURCES_VARIABLE})"
    src, include = root / "csrc" / "src", root / "csrc" / "include"
    missing = [name for name in SOURCE_FILES if not (src / name).is_file()]
    if missing or not (include / "api.h").is_file():
        return None, f"DAQP's C sources are not in {origin}"
    return DaqpSources([str(src / name) for name in SOURCE_FILES], str(include),
                       sorted(str(h) for h in include.glob("*.h"))), ""
