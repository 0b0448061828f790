"""The QP's buffers for one list of tasks, limits and barriers: made once per list, refilled in place at every step.

A :class:`QpLayout` holds (the math of the solver's module docstring is unchanged; this is speed)

    M = [W_k J_k N_k | alpha_k W_k e_k], one row block per task, so that M^T M = [[H_tasks, c], ...]
        (the tasks' part of H and c in one product; the diagonal terms are added after), and
    K = [I; G_c; G_b; -I; -G_c], d = [upper; u_c; h_b; -lower; -l_c], so that ``K dq <= d`` is
        every constraint (the shortcut's feasibility check is one product). The QP's rows are the
        first n + m rows of K (the box first, as DAQP and OSQP take them) with lower bounds
        [lower; l_c; -inf]. Barriers write their rows straight into K and d
        (:meth:`Barrier.write_rows_into`).
"""

from __future__ import annotations

import itertools

import numpy as np

from .barriers.barrier import Barrier
from .compiled_assembly import CompiledAssembly
from .compiled_qp import CompiledQp
from .limits.limit import Limit

INF = 1e30  # the QP solvers' infinity


class QpLayout:
    """Buffers for one list of tasks, limits and barriers (see "Buffers" in the module docstring).

    ``levels``: per priority level (highest first), per task: (task, its rows of A_tasks (W J N) and of
    b_tasks (alpha W e), sqrt_weight[:, None], its rows of the stacked Jacobians J_s or None, and with
    ``weighted_nullspace`` a (rows, 1) bool buffer for its mask W != 0, else None).
    ``nullspace``: per level, the buffers (stacked Jacobians J_s or None for a single task's own
    unmasked Jacobian, J_s J_s^T, its diagonal, N) of the next level's projector, or None after the
    last level.
    """

    def __init__(self, oink, q: np.ndarray, key: tuple, tasks, limits, barriers) -> None:  # oink: the solver.Oink
        for kind, objects in (("task", tasks), ("limit", limits), ("barrier", barriers)):
            if len({id(o) for o in objects}) != len(objects):
                raise ValueError(f"the same {kind} is passed twice")
        n = oink.nv
        self.key = key
        # ---- objective
        ordered = sorted(tasks, key=lambda t: t.priority)
        grouped = [list(g) for _, g in itertools.groupby(ordered, key=lambda t: t.priority)]
        rows = sum(len(t.error) for t in tasks)
        self.A_tasks, self.b_tasks = np.zeros((rows, n)), np.zeros(rows)
        n_above = sum(len(t.error) for level in grouped[:-1] for t in level)  # rows above the last level
        weighted = oink.weighted_nullspace  # J_s masked: copied even for a single task above
        stack = weighted or sum(len(level) for level in grouped[:-1]) > 1  # else the one task above is its own J_s
        J_above = np.zeros((n_above if stack else 0, n))  # J_s: the (masked) Jacobians of the rows above the last level
        N = np.zeros((n, n))
        self.levels, self.nullspace = [], []
        r = 0
        for k, level in enumerate(grouped):
            last = k + 1 == len(grouped)
            blocks = []
            for t in level:
                rows = slice(r, r + len(t.error))
                w_column = t.sqrt_weight[:, None]  # a view: weights changed in place are seen
                J_rows = J_above[rows] if stack and not last else None
                mask = np.zeros((len(t.error), 1), dtype=bool) if weighted and not last else None
                blocks.append((t, self.A_tasks[rows], self.b_tasks[rows], w_column, J_rows, mask))
                r += len(t.error)
            self.levels.append(blocks)
            if last:
                self.nullspace.append(None)
            else:  # N of the next level, from the (masked) Jacobians of rows [:r]
                JJt = np.zeros((r, r))
                self.nullspace.append((J_above[:r] if stack else None, JJt, JJt.reshape(-1)[:: r + 1], N))
        # ---- constraints
        self.box_limits: list[Limit] = []
        row_limits = []
        for lim in limits:
            G = lim.bounds(q).G
            if G is None:
                self.box_limits.append(lim)
            else:
                row_limits.append((lim, len(G)))
        m_c = sum(k for _, k in row_limits)
        m_b = sum(b.size for b in barriers)
        m = m_c + m_b
        self.K = np.zeros((2 * n + m + m_c, n))
        self.d = np.full(len(self.K), np.inf)
        self.lower_qp = np.full(n + m, -np.inf)  # [lower; l_c; -inf for the barrier rows]
        self.K[:n] = np.eye(n)
        self.K[n + m : 2 * n + m] = -np.eye(n)
        self.lower, self.upper = self.lower_qp[:n], self.d[:n]
        self.negative_lower = self.d[n + m : 2 * n + m]
        self.row_limits = []
        i, j = n, 2 * n + m  # next row of G_c, of -G_c
        for lim, k in row_limits:
            rows, negative_rows = slice(i, i + k), slice(j, j + k)
            self.row_limits.append(
                (lim, self.K[rows], self.d[rows], self.lower_qp[rows], self.K[negative_rows], self.d[negative_rows])
            )
            i, j = i + k, j + k
        self.barriers = list(barriers)
        for b in barriers:
            b.write_rows_into(self.K[i : i + b.size], self.d[i : i + b.size])
            i += b.size
        self.barrier_rows = slice(n + m_c, n + m)
        self.barrier_upper = self.d[self.barrier_rows]
        self.A = self.K[n : n + m]  # DAQP's rows (the box goes in as simple bounds)
        self.A_daqp = self.A if m else None  # daqp 0.11's update fails on a 0-row A (there is nothing to update)
        self.A_box = self.K[: n + m]  # OSQP's rows
        self.upper_qp = self.d[: n + m]
        self.Kdq = np.zeros(len(self.K))
        self.satisfied = np.zeros(len(self.K), dtype=bool)
        self.needs_geometry = any(b.needs_geometry for b in barriers)
        self._osqp_l = np.zeros(n + m)
        self._osqp_u = np.zeros(n + m)
        # ---- the kernel's QP of this layout (None: the daqp Python module solves it, or OSQP does)
        self.qp = None
        if oink.daqp_workspace is not None:
            self.qp = CompiledQp(oink.daqp_workspace, oink.H, oink.c, self.A, self.upper_qp, self.lower_qp, oink._dq,
                                 n + m_c)
        # ---- the compiled assembly (None: the numpy path serves this layout)
        self.python_barriers = [b for b in barriers if not _assembled_by_kernel(b)]
        self.kernel_barriers = [b for b in barriers if _assembled_by_kernel(b)]
        self.compiled = None
        if oink.kernel is not None:
            box_arrays = [lim.bounds(q)[1:] for lim in self.box_limits]
            outputs = dict(H=oink.H, c=oink.c, A=self.A_tasks, b=self.b_tasks, lower=self.lower, upper=self.upper,
                           negative_lower=self.negative_lower, Kdq=self.Kdq, dq=oink._dq)
            self.compiled = CompiledAssembly.build(
                oink.kernel, n, grouped, n_above, self.K, self.d, self.box_limits, box_arrays,
                [b for b in barriers if _assembled_by_kernel(b)], outputs, oink, barriers, oink.barrier_braking,
                weighted_nullspace=weighted, qp=self.qp)

    def osqp_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """The QP's bounds clipped to OSQP's +-1e30."""
        np.maximum(self.lower_qp, -INF, out=self._osqp_l)
        np.minimum(self.upper_qp, INF, out=self._osqp_u)
        return self._osqp_l, self._osqp_u


def _assembled_by_kernel(b: Barrier) -> bool:
    """Does ``b`` use the base class's rows and regularization (which the kernel computes)?"""
    t = type(b)
    return (t.constraint is Barrier.constraint and t.regularization_weight is Barrier.regularization_weight
            and t.safe_displacement is Barrier.safe_displacement)
