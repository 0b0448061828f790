"""The command guard's compiled apply (kernel/control_kernel.c, loaded with ctypes): CommandGuard.apply's numpy
operations in one C call, for a group whose joints each have one coordinate (revolute, prismatic). The numpy path
stays the reference and the fallback (no kernel, a continuous joint in the group): the same bits
(test_command_guard.py)."""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np

from ..compiled_library import check_layout, library_path, load_library

_LIBRARY_STEM = "_control_kernel"
_p, _i64 = ctypes.c_void_p, ctypes.c_int64


class GuardArrays(ctypes.Structure):
    """Mirror of ``ctl_command_guard`` in control_kernel.c (same field order)."""

    _fields_ = [("n", _i64), ("n_bounded", _i64), ("n_others", _i64), ("bounded_acceleration", _i64),
                ("q_index", _p), ("bounded_q", _p), ("q_min", _p), ("q_max", _p), ("others_q", _p),
                ("max_step", _p), ("max_dstep", _p), ("max_ddstep", _p), ("u1", _p), ("u2", _p),
                ("undo_u1", _p), ("undo_u2", _p), ("q", _p), ("last", _p)]


def _bind(lib: ctypes.CDLL):
    check_layout(lib, "ctl_layout", (GuardArrays,))  # AttributeError: a stale build, refused
    fn = lib.ctl_command_guard_apply
    fn.argtypes, fn.restype = [_p, _p, _i64], _i64
    return fn


_PATH = library_path(Path(__file__).resolve().parent, _LIBRARY_STEM)
# a call of the tick (a microsecond): it keeps the GIL (compiled_library.load_library)
APPLY, LOAD_ERROR = load_library(_PATH, _LIBRARY_STEM, _bind, "the command guard runs in numpy", keep_gil=True)


def guard_arrays(arrays: dict[str, np.ndarray], bounded_acceleration: bool) -> GuardArrays:
    """A GuardArrays over ``arrays`` (every field's array by name: int64 index arrays, float64 values, each
    contiguous; kept alive and unmoved by the caller while it is used)."""
    g = GuardArrays()
    for name, kind in GuardArrays._fields_:
        if kind is _p:
            a = arrays[name]
            dtype = np.int64 if name in ("q_index", "bounded_q", "others_q") else np.float64
            if a.dtype != dtype or not a.flags.c_contiguous:
                raise ValueError(f"guard_arrays: {name} must be a contiguous {np.dtype(dtype).name} array")
            setattr(g, name, a.ctypes.data)
    g.n, g.n_bounded, g.n_others = len(arrays["q_index"]), len(arrays["bounded_q"]), len(arrays["others_q"])
    g.bounded_acceleration = int(bounded_acceleration)
    return g
