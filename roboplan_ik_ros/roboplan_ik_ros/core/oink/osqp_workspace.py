"""OsqpWorkspace: one OSQP problem kept between steps (warm start), updated in place.

osqp 1.x's Python class (``osqp.OSQP``) adds about 20 us of Python to every update + solve: it
clips the bounds into new arrays, keeps a cache for its derivatives, and builds a namespace of
the 25 fields of the solver's info. On the OInK problems (7 variables, tens of rows) that is
more than OSQP's own iterations. The compiled solver behind it (``OSQP._solver``, osqp >= 1.0)
has the same update and solve calls, so this workspace calls them directly when they are there.
With another osqp, it falls back to the public API (same results, slower). The bounds must already
be within +-OSQP_INFTY (the callers clip them in place).

Measured (Panda, config b with qp_solver osqp, a step where the box barrier binds): Oink.solve
54 us through the public API, 36 us with the direct calls (timeit, 3000 steps, best of 5). Under
cProfile ``OSQP.update`` took 26 us and ``OSQP.solve`` 25 us per step, of which the compiled calls
took 6.6 us and 8.4 us.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import osqp

_DIRECT_CALLS = ("update_data_vec", "update_data_mat", "solve", "info", "solution")


@dataclass
class OsqpResult:
    x: np.ndarray | None  # the solver's solution (may be reused by its next solve: copy what you keep)
    status: str  # e.g. "solved", "maximum iterations reached"
    status_val: int  # osqp.SolverStatus
    iterations: int


class OsqpWorkspace:
    """``osqp.OSQP`` set up with (P, q, A, l, u, **settings); :meth:`update` and :meth:`solve` go
    to its compiled solver when present (``direct``), else to the public API."""

    def __init__(self, P, q, A, l, u, settings: dict) -> None:
        self._qp = osqp.OSQP()
        self._qp.setup(P, q, A, l, u, **settings)
        solver = getattr(self._qp, "_solver", None)
        self._solver = solver if all(hasattr(solver, name) for name in _DIRECT_CALLS) else None

    @property
    def direct(self) -> bool:
        return self._solver is not None

    def update(self, q: np.ndarray, l: np.ndarray, u: np.ndarray, Px: np.ndarray, Ax: np.ndarray) -> None:
        """New values (same sparsity patterns): q, bounds l <= A x <= u, the data arrays of P and A."""
        s = self._solver
        if s is None:
            self._qp.update(q=q, l=l, u=u, Px=Px, Ax=Ax)
            return
        s.update_data_vec(q=q, l=l, u=u)
        s.update_data_mat(P_x=Px, P_i=None, A_x=Ax, A_i=None)

    def solve(self) -> OsqpResult:
        s = self._solver
        if s is None:
            res = self._qp.solve(raise_error=False)
            return OsqpResult(res.x, res.info.status, res.info.status_val, int(res.info.iter))
        s.solve()
        info = s.info
        return OsqpResult(s.solution.x, info.status, info.status_val, int(info.iter))
