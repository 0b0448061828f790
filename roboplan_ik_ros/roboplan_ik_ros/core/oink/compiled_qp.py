"""The step's QP solved in the OInK kernel: DAQP's C sources built into it (kernel/daqp_workspace.c), called through
ctypes.

The QP is the one solver.py's ``_solve_qp_daqp`` gives the daqp Python module (the box as simple bounds, then the
other limits' and the barrier rows; dq = the solution clipped into the box), with the same settings and the same
warm starts: a :class:`DaqpWorkspace` per solver is its daqp.Model (set up again when the row count changes or after
a failed solve, else updated in place and started from the last active set). The kernel's ``oink_step`` solves it
in the call that assembles it; ``oink_solve_qp`` (:meth:`CompiledQp.solve`) for the steps solver.py finishes
itself (a barrier reference, a violated row within the boundary tolerance, the numpy assembly of a layout). The
recovery, braking and slack problems stay in Python.

The kernel is built with DAQP when setup.py finds its sources (daqp_sources.py next to setup.py;
scripts/fetch_daqp_sources.sh, run by ``make bootstrap``, puts the pinned version's in build/). Without them, or
without the kernel, :func:`compiled_assembly.load_qp` says why and the solver keeps the daqp Python module: the
same solver, called through Python (tests hold the two equal).
"""

from __future__ import annotations

import ctypes
import weakref
from typing import NamedTuple

import numpy as np

# Return codes of oink_step (beyond oink_assemble's) and oink_solve_qp (oink_kernel.c)
QP_SOLVED = 3  # DAQP's exit flag >= 1 and dq finite
QP_FAILED = 4  # exit flag < 1 (or a non-finite dq): the workspace sets the problem up again next time
QP_SETUP_FAILED = 5  # DAQP's setup failed

# DAQP's exit flags (its constants.h)
DAQP_STATUS = {
    1: "solved", 2: "solved with soft constraints relaxed", -1: "infeasible", -2: "cycling", -3: "unbounded",
    -4: "iteration limit reached", -5: "non-convex", -6: "overdetermined initial active set", -7: "time limit reached",
}

_p = ctypes.c_void_p
_i64 = ctypes.c_int64


def daqp_status(flag: int) -> str:
    return DAQP_STATUS.get(flag, f"exit flag {flag}")


class _KernelQp(ctypes.Structure):
    """Mirror of ``oink_qp`` in oink_kernel.c (same field order)."""

    _fields_ = [("workspace", _p), ("n", _i64), ("rows", _i64), ("barrier_begin", _i64), ("H", _p), ("c", _p),
                ("A", _p), ("upper", _p), ("lower", _p), ("dq", _p), ("x", _p), ("result", _p)]


class QpFunctions(NamedTuple):
    """The kernel's QP functions (ctypes)."""

    available: object  # () -> 1 if built with DAQP's sources
    create: object  # (primal_tol, iter_limit) -> workspace handle
    free: object  # (handle) -> None
    solve: object  # (oink_qp *) -> QP_SOLVED / QP_FAILED / QP_SETUP_FAILED


def bind_qp(lib: ctypes.CDLL) -> QpFunctions:
    """The QP functions of an OInK kernel whose layout the caller has checked (AttributeError if missing)."""
    available, create = lib.oink_daqp_available, lib.oink_daqp_create
    free, solve = lib.oink_daqp_free, lib.oink_solve_qp
    available.argtypes, available.restype = [], ctypes.c_int64
    create.argtypes, create.restype = [ctypes.c_double, ctypes.c_int64], ctypes.c_void_p
    free.argtypes, free.restype = [ctypes.c_void_p], None
    solve.argtypes, solve.restype = [ctypes.c_void_p], ctypes.c_int
    return QpFunctions(available, create, free, solve)


class DaqpWorkspace:
    """The solver's DAQP workspace in the kernel (its daqp.Model, with DAQP's default settings but ``primal_tol``
    and ``iter_limit``), freed with this object."""

    def __init__(self, functions: QpFunctions, primal_tol: float, iter_limit: int) -> None:
        self.handle = functions.create(float(primal_tol), int(iter_limit))
        if not self.handle:
            raise MemoryError("oink_daqp_create returned no workspace")
        self.functions = functions
        weakref.finalize(self, functions.free, self.handle)


def _usable(a: np.ndarray, shape: tuple) -> bool:
    return isinstance(a, np.ndarray) and a.dtype == np.float64 and a.flags.c_contiguous and a.shape == shape


class CompiledQp:
    """One layout's QP for the kernel: pointers to the solver's H, c and dq and to the layout's A, upper_qp and
    lower_qp (rows ``barrier_begin``.. are the barrier rows), read in place at every solve."""

    def __init__(self, workspace: DaqpWorkspace, H: np.ndarray, c: np.ndarray, A: np.ndarray, upper: np.ndarray,
                 lower: np.ndarray, dq: np.ndarray, barrier_begin: int) -> None:
        n, rows = len(c), len(upper)
        for name, a, shape in (("H", H, (n, n)), ("c", c, (n,)), ("A", A, (rows - n, n)), ("upper", upper, (rows,)),
                               ("lower", lower, (rows,)), ("dq", dq, (n,))):
            if not _usable(a, shape):
                raise ValueError(f"the kernel's QP: {name} must be a C-contiguous float64 array of shape {shape}")
        self.x = np.zeros(n)
        self.result = np.zeros(2)  # DAQP's exit flag and iterations of the last solve
        self._held = (workspace, H, c, A, upper, lower, dq)  # what the kernel points at outlives this layout's use
        self.struct = _KernelQp(workspace=workspace.handle, n=n, rows=rows, barrier_begin=barrier_begin,
                                H=H.ctypes.data, c=c.ctypes.data, A=A.ctypes.data, upper=upper.ctypes.data,
                                lower=lower.ctypes.data, dq=dq.ctypes.data, x=self.x.ctypes.data,
                                result=self.result.ctypes.data)
        self.address = ctypes.addressof(self.struct)
        self._solve = workspace.functions.solve

    def solve(self) -> int:
        """DAQP on the arrays as they are now; QP_SOLVED (dq written), QP_FAILED or QP_SETUP_FAILED."""
        return self._solve(self.address)

    @property
    def exitflag(self) -> int:
        return int(self.result[0])

    @property
    def iterations(self) -> int:
        return int(self.result[1])
