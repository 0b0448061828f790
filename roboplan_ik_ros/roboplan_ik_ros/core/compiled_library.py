"""The package's optional compiled kernels (C, loaded through ctypes), built next to their Python
modules when the package is installed; without one, its caller takes its numpy / Python path (same
results, slower) and says why."""

from __future__ import annotations

import ctypes
import importlib.machinery
import os
from pathlib import Path
from typing import Callable, TypeVar

import numpy as np

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


def check_layout(lib: ctypes.CDLL, symbol: str, structs) -> None:
    """Raise AttributeError (a library the caller refuses) unless ``lib``'s ``symbol`` (``symbol(int64 *out, capacity)
    -> count``: per struct of the C file in its order, its size then each field's offset and size) and ``symbol_names()``
    ("struct:field,field;...") describe ``structs`` (the ctypes mirrors, in the same order) exactly: the same
    fields, by name (a mirror's trailing "_", as ``lambda_`` for C's ``lambda``, aside) and in order, at the same
    offsets, and the same sizes. A field added, removed, retyped or moved on one side only would otherwise hand the
    kernel wrong pointers. A build without the symbols is refused too (scripts/kernel_layout.py writes them)."""
    names_fn = getattr(lib, f"{symbol}_names")  # AttributeError: a build older than the check
    names_fn.argtypes, names_fn.restype = [], ctypes.c_char_p
    built = [entry.split(":") for entry in names_fn().decode().split(";")]
    if len(built) != len(structs):
        raise AttributeError(f"{symbol}: the build has {len(built)} structs, the mirrors {len(structs)}")
    expected, where = [], []
    for (c_name, c_fields), s in zip(built, structs):
        fields = [name for name, *_ in s._fields_]
        if [f.rstrip("_") for f in fields] != c_fields.split(","):
            raise AttributeError(f"{symbol}: {s.__name__}'s fields {fields} are not {c_name}'s in the build "
                                 f"({c_fields.split(',')}): a struct changed on one side (rebuild, or update the mirror)")
        expected.append(ctypes.sizeof(s))
        where.append(f"sizeof {s.__name__}")
        for name in fields:
            expected += [getattr(s, name).offset, getattr(s, name).size]
            where += [f"{s.__name__}.{name}'s offset", f"{s.__name__}.{name}'s size"]
    fn = getattr(lib, symbol)
    fn.argtypes, fn.restype = [ctypes.POINTER(ctypes.c_int64), ctypes.c_int64], ctypes.c_int64
    out = (ctypes.c_int64 * len(expected))()
    count = int(fn(out, len(expected)))
    if count != len(expected):
        raise AttributeError(f"{symbol}: the build lays out {count} sizes and offsets, its mirrors {len(expected)}")
    for k, (e, g) in enumerate(zip(expected, out)):
        if e != g:
            raise AttributeError(f"{symbol}: {where[k]} is {g} bytes in the build, {e} in its ctypes mirror (a field "
                                 "retyped on one side: rebuild, setup.py build_ext --inplace, or update the mirror)")


def array_address(owner: str, name: str, a: np.ndarray, dtype) -> int:
    """The data address of ``a`` for a kernel that reads or writes it as a contiguous ``dtype`` array, or ValueError
    ("<owner>: <name> must be a contiguous <dtype> array"): a kernel given raw addresses would read an array of
    another dtype as other numbers, or write a strided one past or across its elements."""
    if a.dtype != dtype or not a.flags.c_contiguous:
        raise ValueError(f"{owner}: {name} must be a contiguous {np.dtype(dtype).name} array")
    return a.ctypes.data
