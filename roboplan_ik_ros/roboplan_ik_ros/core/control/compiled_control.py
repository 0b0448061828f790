"""The control loop's compiled parts (kernel/control_kernel.c, loaded with ctypes): CommandGuard.apply's numpy
operations in one C call and StreamLimits.start_state's under commanded feedback, for a group whose joints each have
one coordinate (revolute, prismatic), and StateTracker.accept's for a measurement it takes. The numpy paths stay the
reference and the fallback (no kernel, a continuous joint in the group): the same values (test_command_guard.py,
test_stream_limits.py, test_state_tracker.py)."""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np

from ..compiled_library import array_address, check_layout, library_path, load_library

_LIBRARY_STEM = "_control_kernel"
_p, _i64 = ctypes.c_void_p, ctypes.c_int64


class GuardArrays(ctypes.Structure):
    """Mirror of ``ctl_command_guard`` in control_kernel.c (same field order)."""

    _fields_ = [("n", _i64), ("n_bounded", _i64), ("n_others", _i64), ("bounded_acceleration", _i64),
                ("q_index", _p), ("bounded_q", _p), ("q_min", _p), ("q_max", _p), ("others_q", _p),
                ("max_step", _p), ("max_dstep", _p), ("max_ddstep", _p), ("u1", _p), ("u2", _p),
                ("undo_u1", _p), ("undo_u2", _p), ("q", _p), ("last", _p)]


class StreamStartArrays(ctypes.Structure):
    """Mirror of ``ctl_stream_start`` in control_kernel.c (same field order)."""

    _fields_ = [("n", _i64), ("n_others", _i64), ("q_index", _p), ("others_q", _p), ("measured", _p), ("last", _p),
                ("q", _p), ("offset", _p), ("max_error", ctypes.c_double), ("follow_lower", _p), ("follow_upper", _p),
                ("has_accel", _i64), ("room_up", _p), ("room_lo", _p), ("u1_in", _p), ("u2_in", _p), ("u1", _p),
                ("u2", _p), ("accel_offset", _p), ("reach_lower", _p), ("reach_upper", _p), ("rest", _p),
                ("alpha", _p), ("delta", _p)]


class StateAcceptArrays(ctypes.Structure):
    """Mirror of ``ctl_state_accept`` in control_kernel.c (same field order)."""

    _fields_ = [("nq", _i64), ("n_checked", _i64), ("n_clipped", _i64), ("n_rest", _i64), ("checked_q", _p),
                ("checked_min", _p), ("checked_max", _p), ("clipped_q", _p), ("clipped_min", _p), ("clipped_max", _p),
                ("rest_q", _p), ("incoming", _p), ("measured", _p), ("rest_anchor", _p), ("rest_now", _p),
                ("rest_diff", _p), ("rest_tolerance", ctypes.c_double), ("now", ctypes.c_double),
                ("still_since", ctypes.c_double)]


def _bind(lib: ctypes.CDLL):
    check_layout(lib, "ctl_layout", (GuardArrays, StreamStartArrays, StateAcceptArrays))  # AttributeError: stale
    apply, start, accept = lib.ctl_command_guard_apply, lib.ctl_stream_start_commanded, lib.ctl_state_accept_measurement
    apply.argtypes, apply.restype = [_p, _p, _i64], _i64
    start.argtypes, start.restype = [_p, _i64], None
    accept.argtypes, accept.restype = [_p], _i64
    return apply, start, accept


_PATH = library_path(Path(__file__).resolve().parent, _LIBRARY_STEM)
# calls of the tick (a microsecond): they keep the GIL (compiled_library.load_library)
_FUNCTIONS, LOAD_ERROR = load_library(_PATH, _LIBRARY_STEM, _bind, "the command guard, the step's start and the "
                                      "measurement's checks run in numpy", keep_gil=True)
APPLY, STREAM_START, STATE_ACCEPT = _FUNCTIONS if _FUNCTIONS is not None else (None, None, None)


_INDEX_FIELDS = ("q_index", "bounded_q", "others_q", "checked_q", "clipped_q", "rest_q")


def _point_at(struct: ctypes.Structure, arrays: dict[str, np.ndarray | None]) -> ctypes.Structure:
    """``struct``'s pointer fields at ``arrays`` (by field name: int64 index arrays, float64 values, each contiguous,
    kept alive and unmoved by the caller while it is used; None: a null pointer, a part the call does not use)."""
    for name, kind in type(struct)._fields_:
        if kind is _p:
            a = arrays[name]
            if a is None:
                continue
            dtype = np.int64 if name in _INDEX_FIELDS else np.float64
            setattr(struct, name, array_address(type(struct).__name__, name, a, dtype))
    return struct


def guard_arrays(arrays: dict[str, np.ndarray], bounded_acceleration: bool) -> GuardArrays:
    """A GuardArrays over ``arrays`` (see :func:`_point_at`)."""
    g = _point_at(GuardArrays(), arrays)
    g.n, g.n_bounded, g.n_others = len(arrays["q_index"]), len(arrays["bounded_q"]), len(arrays["others_q"])
    g.bounded_acceleration = int(bounded_acceleration)
    return g


def stream_start_arrays(arrays: dict[str, np.ndarray | None], max_error: float) -> StreamStartArrays:
    """A StreamStartArrays over ``arrays`` (see :func:`_point_at`; the acceleration limit's arrays None without
    one)."""
    s = _point_at(StreamStartArrays(), arrays)
    s.n, s.n_others = len(arrays["q_index"]), len(arrays["others_q"])
    s.max_error = float(max_error)
    s.has_accel = int(arrays["u1"] is not None)
    return s


def state_accept_arrays(arrays: dict[str, np.ndarray]) -> StateAcceptArrays:
    """A StateAcceptArrays over ``arrays`` (see :func:`_point_at`); the caller sets rest_tolerance, now and
    still_since before each call."""
    s = _point_at(StateAcceptArrays(), arrays)
    s.nq, s.n_checked = len(arrays["incoming"]), len(arrays["checked_q"])
    s.n_clipped, s.n_rest = len(arrays["clipped_q"]), len(arrays["rest_q"])
    return s
