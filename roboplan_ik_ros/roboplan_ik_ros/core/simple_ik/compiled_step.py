"""The compiled SimpleIK step: kernel/simple_ik_kernel.c, loaded with ctypes.

One C call per iteration does what SimpleIK's Python step does in ~10 BLAS/LAPACK/numpy calls (the
damped least-squares direction of dls and lm_*, the cap to max_step_norm) plus ~20 per re-solve of
the active set on the joint limits (active_set.py): at ~1 us per call from Python, those calls were
most of an iteration's time (TALOS torso + arm hits a limit in most iterations). The kinematics, the
error, the convergence, stall and plateau tests stay in Python.

The library is built with the package (setup.py: ``roboplan_ik_ros.core.simple_ik._simple_ik_kernel``,
a plain shared library with no Python API). Without it, :func:`load_step_kernel` says why and SimpleIK
runs its Python step: the same math (test_simple_ik checks both against a plain numpy reference).
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np

from ..compiled_library import library_path, load_library

_LIBRARY_STEM = "_simple_ik_kernel"
USE_COMPILED_STEP = True  # the compiled methods' steps in C when the kernel is built (tests switch it)
_p, _i64, _f64 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_double


class _Step(ctypes.Structure):
    """Mirror of ``sik_step`` in simple_ik_kernel.c (same field order)."""

    _fields_ = [("J", _p), ("e", _p), ("x", _p), ("lo", _p), ("hi", _p), ("work", _p), ("m", _i64), ("n", _i64),
                ("lambda_", _f64), ("neg_step", _f64), ("max_step", _f64), ("clamp", _i64), ("rounds", _i64)]


_kernel = None
_kernel_error = ""


def _library_path() -> Path | None:
    return library_path(Path(__file__).resolve().parent, _LIBRARY_STEM)


def _bind(lib: ctypes.CDLL):
    run, size = lib.sik_step_run, lib.sik_work_size
    run.argtypes, run.restype = [ctypes.c_void_p], ctypes.c_int64
    size.argtypes, size.restype = [ctypes.c_int64, ctypes.c_int64], ctypes.c_int64
    return run, size


def load_step_kernel():
    """(the ctypes functions (sik_step_run, sik_work_size), "") or (None, why it is not available)."""
    global _kernel, _kernel_error
    if _kernel is None and not _kernel_error:
        _kernel, _kernel_error = load_library(_library_path(), _LIBRARY_STEM, _bind, "SimpleIK uses its Python step")
    return _kernel, _kernel_error


class CompiledStep:
    """The kernel's step on fixed buffers for one (m rows, n joints) workspace: the caller copies J and e
    into ``J``, ``e``, points it at the coordinates to move (:meth:`bind`) and calls :meth:`run`."""

    def __init__(self, m: int, n: int, clamp_rounds: int) -> None:
        kernel, error = load_step_kernel()
        if kernel is None:
            raise RuntimeError(error)
        self._run, size = kernel
        self.J, self.e = np.zeros((m, n)), np.zeros(m)
        self._work = np.zeros(int(size(m, n)))
        self._lo = self._hi = None  # held: the struct points into them
        self._x = None
        s = self._step = _Step()
        s.J, s.e, s.work = self.J.ctypes.data, self.e.ctypes.data, self._work.ctypes.data
        s.m, s.n, s.rounds = m, n, clamp_rounds
        self._address = ctypes.addressof(s)

    def configure(self, lo: np.ndarray, hi: np.ndarray, damping: float, step_size: float, max_step: float,
                  clamp: bool) -> None:
        """Per solve: the limits (contiguous float arrays, held) and the step's constants."""
        s = self._step
        if lo is not self._lo or hi is not self._hi:
            self._lo, self._hi = np.ascontiguousarray(lo, dtype=float), np.ascontiguousarray(hi, dtype=float)
            s.lo, s.hi = self._lo.ctypes.data, self._hi.ctypes.data
        s.lambda_, s.neg_step, s.max_step, s.clamp = damping, -step_size, max_step, int(clamp)

    def set_damping(self, damping: float) -> None:
        self._step.lambda_ = damping

    def bind(self, x: np.ndarray) -> None:
        """The coordinates the next runs move in place (a contiguous float64 view, held)."""
        self._x = x
        self._step.x = x.ctypes.data

    def run(self) -> int:
        """x <- x + the capped step within the limits: 0, 1 if the limits acted, -1 if singular (x unchanged)."""
        return self._run(self._address)
