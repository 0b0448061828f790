"""The recovery step's problem (a barrier row violated at q): the hard QP with one slack per barrier row, for
OSQP and for DAQP (the solver's module docstring, "Recovery"). Each keeps its workspace between steps."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .osqp_workspace import OsqpWorkspace
from .qp_layout import INF, QpLayout

try:
    import daqp
except ImportError:  # only qp_solver "osqp" works (the solver says so at construction)
    daqp = None

SLACK_QUADRATIC_LENGTH = 0.1  # [m] rho_2 = rho_1 / this (the solver's module docstring)


class OsqpSlackProblem:
    """The OSQP problem of a recovery step over x = (dq [rad], s [m]), s one slack per barrier row.

    P = diag(H, rho_2 I), q = (c, rho_1 1). A = [[A_hard, S], [0, I]] with A_hard the dense rows of the
    hard problem (box, other limits, then the k barrier rows last) and S = -I on the barrier rows;
    the last k rows bound the slacks: 0 <= s <= max(0, -u_barrier). Arrays are allocated and OSQP
    is set up only when the row counts change; otherwise values are updated and OSQP warm-starts.
    """

    def __init__(self, n: int, settings: dict) -> None:
        self.n = n
        self.settings = settings
        self._qp: OsqpWorkspace | None = None
        self._shape = (-1, -1)  # (rows of A_hard, barrier rows k)

    def reset(self) -> None:
        """Set OSQP up again at the next solve (no warm start from a failed solve)."""
        self._qp = None

    def _allocate(self, P_hard: sp.csc_matrix, m: int, k: int) -> None:
        """Sparsity patterns and value buffers for m hard rows of which the last k are barrier rows."""
        n = self.n
        n_tri = len(P_hard.data)
        self._P = sp.csc_matrix(
            (
                np.zeros(n_tri + k),
                np.concatenate([P_hard.indices, np.arange(n, n + k)]),
                np.concatenate([P_hard.indptr, n_tri + np.arange(1, k + 1)]),
            ),
            shape=(n + k, n + k),
        )
        self._P_dq = self._P.data[:n_tri]  # views: the upper triangle of H, then rho_2 on the slack diagonal
        self._P_slack = self._P.data[n_tri:]
        slack_rows = np.stack([np.arange(m - k, m), np.arange(m, m + k)], axis=1).ravel()  # (barrier row, bound row)
        self._A = sp.csc_matrix(
            (
                np.concatenate([np.zeros(m * n), np.tile([-1.0, 1.0], k)]),
                np.concatenate([np.tile(np.arange(m), n), slack_rows]),  # dq columns: every row of A_hard
                np.concatenate([np.arange(0, m * n + 1, m), m * n + 2 * np.arange(1, k + 1)]),
            ),
            shape=(m + k, n + k),
        )
        self._A_dq = self._A.data[: m * n].reshape(n, m)  # view: A_hard^T
        self._q = np.zeros(n + k)
        self._l = np.zeros(m + k)
        self._u = np.zeros(m + k)
        self._shape = (m, k)
        self._qp = None

    def solve(
        self,
        P_hard: sp.csc_matrix,
        c: np.ndarray,
        A_hard: np.ndarray,
        l_hard: np.ndarray,
        u_hard: np.ndarray,
        k: int,
        penalty: float,
        s_max: np.ndarray | None = None,
    ):
        """OSQP's result for this step: P_hard, c, A_hard, l_hard, u_hard of the hard problem, whose
        last k rows are the barrier rows; penalty rho_1 [cost]/[m]; ``s_max``: the slacks' upper bounds
        [m] (default max(0, -u) per barrier row)."""
        n, m = self.n, len(l_hard)
        if self._shape != (m, k):
            self._allocate(P_hard, m, k)
        self._P_dq[:] = P_hard.data
        self._P_slack[:] = penalty / SLACK_QUADRATIC_LENGTH
        np.copyto(self._A_dq, A_hard.T)
        self._q[:n] = c
        self._q[n:] = penalty
        np.clip(l_hard, -INF, INF, out=self._l[:m])
        np.clip(u_hard, -INF, INF, out=self._u[:m])
        bound = self._u[m:]  # [m]: max(0, -u) per barrier row, 0 for the rows dq = 0 satisfies
        if s_max is None:
            np.negative(u_hard[m - k :], out=bound)
            np.maximum(bound, 0.0, out=bound)
        else:
            np.minimum(s_max, INF, out=bound)
        if self._qp is None:
            self._qp = OsqpWorkspace(self._P, self._q, self._A, self._l, self._u, self.settings)
        else:
            self._qp.update(self._q, self._l, self._u, self._P.data, self._A.data)
        return self._qp.solve()


class DaqpSlackProblem:
    """The DAQP problem of a recovery step over x = (dq [rad], s [m]), s one slack per barrier row.

    H_x = diag(H, rho_2 I), f = (c, rho_1 1). Simple bounds: the box on dq, 0 <= s <= max(0, -h_b).
    Rows: [G_c, 0] between l_c and u_c, then [G_b, -I] <= h_b. Arrays are allocated and DAQP set up
    only when the row counts change; otherwise values are updated and DAQP warm-starts from its last
    active set.
    """

    def __init__(self, n: int, settings: dict) -> None:
        self.n = n
        self.settings = settings
        self._qp = None  # daqp.Model
        self._shape = (-1, -1)  # (general rows m, barrier rows k)

    def reset(self) -> None:
        """Set DAQP up again at the next solve (no warm start from a failed solve)."""
        self._qp = None

    def _allocate(self, m: int, k: int) -> None:
        n = self.n
        self._H = np.zeros((n + k, n + k))
        self._f = np.zeros(n + k)
        self._A = np.zeros((m, n + k))
        self._A[m - k :, n:] = -np.eye(k)
        self._upper = np.zeros(n + k + m)  # [box upper; s_max; u_c; h_b]
        self._lower = np.zeros(n + k + m)  # [box lower; 0; l_c; -inf]
        self._shape = (m, k)
        self._qp = None

    def solve(self, H: np.ndarray, c: np.ndarray, lay: QpLayout, k: int, penalty: float,
              s_max: np.ndarray | None = None):
        """(x or None on failure, DAQP exit flag, iterations) for this step; penalty rho_1 [cost]/[m];
        ``s_max``: the slacks' upper bounds [m] (default max(0, -h_b))."""
        n, m = self.n, len(lay.A)
        if self._shape != (m, k):
            self._allocate(m, k)
        self._H[:n, :n] = H
        self._H.reshape(-1)[(n + k + 1) * n :: n + k + 1] = penalty / SLACK_QUADRATIC_LENGTH
        self._f[:n] = c
        self._f[n:] = penalty
        self._A[:, :n] = lay.A
        upper, lower = self._upper, self._lower
        upper[:n], lower[:n] = lay.upper, lay.lower
        if s_max is None:
            np.maximum(np.negative(lay.barrier_upper), 0.0, out=upper[n : n + k])
        else:
            upper[n : n + k] = s_max
        lower[n : n + k] = 0.0
        upper[n + k :], lower[n + k :] = lay.upper_qp[n:], lay.lower_qp[n:]
        if self._qp is None:
            self._qp = daqp.Model()
            self._qp.settings = self.settings
            flag, _ = self._qp.setup(self._H, self._f, self._A, upper, lower)
            if flag < 0:
                return None, flag, 0
        else:
            self._qp.update(H=self._H, f=self._f, A=self._A, bupper=upper, blower=lower)
        x, _, flag, info = self._qp.solve()
        ok = flag >= 1 and np.isfinite(x).all()
        return (x if ok else None), flag, int(info["iterations"])
