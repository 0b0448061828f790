"""The package's optional compiled kernels (C, loaded through ctypes), built next to their Python
modules when the package is installed; without one, its caller takes its numpy / Python path (same
results, slower) and says why."""

from __future__ import annotations

import ctypes
import importlib.machinery
import os
from pathlib import Path
from typing import Callable, TypeVar

T = TypeVar("T")


NO_COMPILE = "ROBOPLAN_NO_COMPILE"  # set (non-empty, not "0"): no kernel is loaded, as without a compiler


def kernels_disabled() -> bool:
    """``$ROBOPLAN_NO_COMPILE`` is set: every caller takes its numpy / Python path (``make test-no-compile``
    runs the core tests so, proving the fallback of an install without a compiler; setup.py builds nothing)."""
    return os.environ.get(NO_COMPILE, "") not in ("", "0")


def library_path(directory: Path, stem: str) -> Path | None:
    """``directory/<stem><extension suffix>`` (e.g. ``_oink_kernel.cpython-311-x86_64-linux-gnu.so``), if built
    (None with :func:`kernels_disabled`)."""
    if kernels_disabled():
        return None
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = directory / f"{stem}{suffix}"
        if path.is_file():
            return path
    return None


def load_library(path: Path | None, stem: str, bind: Callable[[ctypes.CDLL], T],
                 fallback: str, keep_gil: bool = False) -> tuple[T | None, str]:
    """(``bind(the library)``, "") or (None, why not, ending with ``fallback``: what the caller does instead).

    ``keep_gil``: the calls keep the GIL (``ctypes.PyDLL``) instead of releasing it for their duration
    (``ctypes.CDLL``). For the control tick's kernels (calls of microseconds): a release hands the GIL to any
    thread waiting for it (the executor with a /joint_states message, the reports, ~/solve_ik), and the tick
    then waits to get it back, up to that thread's turn (``sys.setswitchinterval``) plus whatever C call it
    is in. Long calls (SimpleIK's descent in the service thread, building a mesh's convex hull where an
    obstacle change is prepared) release it, so that the tick can run: a library may be loaded twice, a
    handle of each kind (compiled_pairs.py)."""
    if path is None:
        if kernels_disabled():
            return None, f"{stem} is not loaded (${NO_COMPILE} is set); {fallback} (same results, slower)"
        return None, f"{stem} is not built (no C compiler when the package was installed?); {fallback} (same results, slower)"
    try:
        return bind((ctypes.PyDLL if keep_gil else ctypes.CDLL)(str(path))), ""
    except (OSError, AttributeError) as exc:
        return None, f"cannot load {path}: {exc}; {fallback}"
