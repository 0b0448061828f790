"""OInK: one QP over the joint displacement dq of a joint group per control step.

    min_dq  1/2 dq^T H dq + c^T dq
    s.t.    lower <= dq <= upper          (box limits: PositionLimit, VelocityLimit)
            l_c <= G_c dq <= u_c          (other hard limits)
            G_b dq <= h_b                 (barrier rows)

    H = lambda I + sum_k (N_k^T J_k^T W_k^2 J_k N_k + mu_k I) + sum_b r_b / ||J_b||^2 I
    c = sum_k alpha_k N_k^T J_k^T W_k^2 e_k - sum_b r_b / ||J_b||^2 dq_safe_b

This is the objective ``1/2 sum_k ||W_k (J_k N_k dq + alpha_k e_k)||^2`` expanded, with each task's
J carrying the sign that moves toward its target (see :class:`Task`). N_k is the damped nullspace
projector of the stacked Jacobians of all priority levels above k (N_1 = I).

Recovery: a barrier row with a negative bound h_b (dq = 0 violates it: the robot is outside that
barrier's safe set, or inside its safety margin) may demand more inward motion than the limits
allow, and the QP above would be infeasible. Whenever some row has h_b < 0, OInK solves the slack
problem instead, with one slack s_i [m] per barrier row:

    min_{dq, s}  1/2 dq^T H dq + c^T dq + rho_1 sum(s) + rho_2/2 ||s||^2
    s.t.         the box and the other hard limits (never relaxed)
                 G_b dq - s <= h_b
                 0 <= s_i <= max(0, -h_b,i)

The bound on s keeps every row that dq = 0 satisfies hard (a recovery never gives up another row's
safety) and lets a violated row relax at most to ``G_b,i dq <= 0``: its h never decreases (to first
order). The linear term makes the penalty exact: while rho_1 = ``barrier_slack_penalty`` exceeds the
multiplier the tasks put on a row, that row gets no slack if the QP above is feasible (the step is
that QP's) and otherwise only what the limits force, so the robot moves back as fast as the
limits allow and the tasks use whatever freedom remains. rho_2 = rho_1 / _SLACK_QUADRATIC_LENGTH
makes the problem strictly convex in s and spreads an unavoidable violation over the rows. (A large
quadratic-only penalty, rho_2 ~ 1e6, is inexact by s = multiplier / rho_2 - the robot settles ~10 um
outside - and OSQP mostly hits max_iter on it once the limits bind: its multipliers dwarf H.)
A violated row that no step within the box can move back is reported as a failure.

Solving: if the unconstrained minimizer -H^{-1} c satisfies every constraint (barrier rows at their
unrelaxed bounds), it is the optimum of both problems (s = 0 there) and is returned without calling
OSQP; otherwise OSQP solves the problem. Each problem has its own OSQP workspace, kept between steps
(values updated, set up again only when its size changes) and warm-started from the previous
solution. Any failure gives dq = 0 and a status; only a recovery step whose OSQP run hit max_iter is
still used if its last iterate keeps every row of the slack problem (within eps_abs).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import osqp
import pinocchio as pin
import scipy.sparse as sp
from scipy.linalg.lapack import dposv

from ..errors import check_positive
from ..scene import Scene
from .barriers.barrier import Barrier
from .barriers.position_barrier import PositionBarrier
from .barriers.self_collision_barrier import SelfCollisionBarrier
from .limits.limit import Limit
from .tasks.task import Task

_OSQP_INF = 1e30
# [m]: rho_2 = rho_1 / this, so the quadratic part of the slack penalty adds 1 % to its slope at s = 1 mm.
_SLACK_QUADRATIC_LENGTH = 0.1
_OSQP_SOLVED = (osqp.SolverStatus.OSQP_SOLVED, osqp.SolverStatus.OSQP_SOLVED_INACCURATE)
_OSQP_MAX_ITER = osqp.SolverStatus.OSQP_MAX_ITER_REACHED
# [m] per step: a violated barrier row that no dq inside the box moves back by more than this is stuck
# (5 um/s at 500 Hz; above the noise of distance Jacobians whose witness points slide on flat faces).
_MIN_RECOVERY_DISPLACEMENT = 1e-8


def solve_spd(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """x with A x = b for symmetric positive definite A (LAPACK Cholesky; far less call overhead
    than numpy.linalg.solve at these sizes)."""
    _, x, info = dposv(A, b)
    if info != 0:
        raise np.linalg.LinAlgError(f"matrix not positive definite (LAPACK info {info})")
    return x


@dataclass
class OinkResult:
    """Outcome of one step. ``dq`` (group nv) is a buffer reused by the next solve: copy to keep."""

    dq: np.ndarray
    ok: bool
    status: str
    used_qp: bool = False  # False when the unconstrained optimum was feasible
    qp_iterations: int = 0
    recovering: bool = False  # a barrier row was violated at q: dq solves the slack problem


class Oink:
    """Optimal IK for one joint group of ``scene``.

    Args:
        regularization: Tikhonov lambda [cost]/[rad^2]; also damps the nullspace projectors.
        unconstrained_shortcut: return -H^{-1} c without OSQP when it satisfies every constraint.
        barrier_slack_penalty: rho_1 [cost]/[m], the exact-penalty weight of the slack problem
            solved while the robot is outside a barrier's safe set (see the module docstring). It
            must exceed the pull of the tasks on a barrier row (~0.1-10 with unit task weights).
        eps_abs, eps_rel, max_iter: OSQP settings.
    """

    def __init__(
        self,
        scene: Scene,
        group_name: str = "",
        regularization: float = 1e-6,
        *,
        unconstrained_shortcut: bool = True,
        barrier_slack_penalty: float = 100.0,
        eps_abs: float = 1e-6,
        eps_rel: float = 1e-6,
        max_iter: int = 4000,
    ) -> None:
        self.scene = scene
        self.group = scene.group(group_name)
        self.nv = self.group.nv
        self.regularization = check_positive(regularization, "regularization")
        self.unconstrained_shortcut = bool(unconstrained_shortcut)
        self.barrier_slack_penalty = check_positive(barrier_slack_penalty, "barrier_slack_penalty")
        self.osqp_settings = dict(
            eps_abs=check_positive(eps_abs, "eps_abs"),
            eps_rel=check_positive(eps_rel, "eps_rel"),
            max_iter=int(max_iter),
            verbose=False,
            polishing=False,
            warm_starting=True,
        )
        self.data, self.geom_data = scene.create_data()
        n = self.nv
        self._eye = np.eye(n)
        self.H = np.zeros((n, n))
        self.c = np.zeros(n)
        self._dq = np.zeros(n)
        self._lower = np.empty(n)
        self._upper = np.empty(n)
        # OSQP: P is the dense upper triangle, A is stored dense (all m x n entries).
        rows, cols = np.tril_indices(n)  # (r, c) with r >= c, row-major == CSC order of the upper triangle
        self._P_rows, self._P_cols = cols, rows
        self._P = sp.csc_matrix(
            (np.zeros(len(rows)), cols, np.concatenate([[0], np.cumsum(np.arange(1, n + 1))])), shape=(n, n)
        )
        self._qp: osqp.OSQP | None = None
        self._qp_rows = -1
        self._A = np.zeros((0, n))
        self._l = np.zeros(0)
        self._u = np.zeros(0)
        self._levels_key: tuple = ()
        self._levels: list[list[Task]] = []
        self._box_rows = np.eye(n)
        self._blocks: list[tuple[np.ndarray, np.ndarray | None, np.ndarray]] = []
        self._last_barriers: Sequence[Barrier] = ()
        self._barrier_rows = 0  # rows of all barriers: the last rows of A
        self._slack = _SlackProblem(n, self.osqp_settings)

    # ----------------------------------------------------------------- helpers
    def scatter(self, dq: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """The group's dq placed into a full-model velocity vector (zeros elsewhere)."""
        if out is None:
            out = np.zeros(self.scene.model.nv)
        else:
            out[:] = 0.0
        out[self.group.v_indices] = dq
        return out

    def _fail(self, status: str) -> OinkResult:
        self._dq[:] = 0.0
        return OinkResult(self._dq, False, status)

    # ------------------------------------------------------------------- solve
    def solve(
        self,
        q: np.ndarray,
        tasks: Sequence[Task],
        limits: Sequence[Limit] = (),
        barriers: Sequence[Barrier] = (),
    ) -> OinkResult:
        """One step at q (full nq). Never raises: failures return dq = 0 with ``ok=False``."""
        if q.shape != (self.scene.model.nq,) or not np.isfinite(q).all():
            return self._fail(f"invalid configuration: expected {self.scene.model.nq} finite values")
        try:
            self._build_kinematics(q, barriers)
            self._build_objective(q, tasks)
            for b in barriers:
                b.update(q, self.data, self.geom_data)
            self._add_barrier_regularization(barriers)
            status = self._build_constraints(q, limits, barriers)
            if status:
                return self._fail(status)
            violated = _most_violated_row(barriers)
            if violated is None:
                return self._solve_qp()
            return self._solve_recovery(*violated)
        except (ValueError, np.linalg.LinAlgError, RuntimeError) as exc:
            return self._fail(f"error: {exc}")

    def _build_kinematics(self, q: np.ndarray, barriers: Sequence[Barrier]) -> None:
        model, data = self.scene.model, self.data
        pin.computeJointJacobians(model, data, q)  # also forward kinematics
        pin.updateFramePlacements(model, data)
        if any(b.needs_geometry for b in barriers):
            pin.updateGeometryPlacements(model, data, self.scene.collision_model, self.geom_data)

    def _build_objective(self, q: np.ndarray, tasks: Sequence[Task]) -> None:
        H, c, lam = self.H, self.c, self.regularization
        np.multiply(self._eye, lam, out=H)
        c[:] = 0.0
        stacked: list[np.ndarray] = []  # raw Jacobians of the levels above
        for level in self._priority_levels(tasks):
            N = None
            if stacked:
                Js = stacked[0] if len(stacked) == 1 else np.vstack(stacked)
                JJt = Js @ Js.T
                JJt.flat[:: len(Js) + 1] += lam
                N = self._eye - Js.T @ solve_spd(JJt, Js)  # damped nullspace projector of the levels above
            for task in level:
                task.update(q, self.data)
                JN = task.jacobian if N is None else task.jacobian @ N
                WJ = task.sqrt_weight[:, None] * JN
                We = task.error * task.sqrt_weight
                We *= task.task_gain
                H += WJ.T @ WJ
                c += WJ.T @ We
                if task.lm_damping > 0.0:
                    H.flat[:: self.nv + 1] += task.lm_damping * float(We @ We)
                stacked.append(task.jacobian)

    def _priority_levels(self, tasks: Sequence[Task]) -> list[list[Task]]:
        """Tasks grouped by priority, highest first (cached for the same task list)."""
        key = tuple(map(id, tasks)) + tuple(t.priority for t in tasks)
        if key != self._levels_key:
            ordered = sorted(tasks, key=lambda t: t.priority)
            self._levels = [list(g) for _, g in itertools.groupby(ordered, key=lambda t: t.priority)]
            self._levels_key = key
        return self._levels

    def _add_barrier_regularization(self, barriers: Sequence[Barrier]) -> None:
        for b in barriers:
            w = b.regularization_weight()
            if w > 0.0:
                self.H.flat[:: self.nv + 1] += w
                dq_safe = b.safe_displacement()
                if dq_safe is not None:
                    self.c -= w * dq_safe

    def _build_constraints(self, q: np.ndarray, limits: Sequence[Limit], barriers: Sequence[Barrier]) -> str:
        """Fill the box and the general rows; returns a non-empty status if the limits conflict."""
        lower, upper = self._lower, self._upper
        lower[:] = -np.inf
        upper[:] = np.inf
        general = []
        for lim in limits:
            G, lo, up = lim.bounds(q)
            if G is None:
                np.maximum(lower, lo, out=lower)
                np.minimum(upper, up, out=upper)
            else:
                general.append((G, lo, up))
        conflict = lower > upper
        if conflict.any():
            k = int(np.flatnonzero(conflict)[0])
            return (
                f"infeasible limits: joint {self.group.joint_names[k]!r} needs dq >= {lower[k]:.6g} and "
                f"dq <= {upper[k]:.6g} (is it outside its position limits?)"
            )
        self._last_barriers = barriers
        self._blocks = general  # (G, lower, upper) rows besides the box; barrier rows have lower None
        self._barrier_rows = 0
        for b in barriers:
            G, up = b.constraint()
            self._blocks.append((G, None, up))
            self._barrier_rows += len(up)
        return ""

    def _feasible(self, dq: np.ndarray) -> bool:
        """Does dq satisfy the box and every constraint block (exactly, no tolerance)?"""
        if not ((dq >= self._lower).all() and (dq <= self._upper).all()):
            return False
        for G, lo, up in self._blocks:
            Gdq = G @ dq
            if not (Gdq <= up).all() or (lo is not None and not (Gdq >= lo).all()):
                return False
        return True

    def _unconstrained_optimum_is_feasible(self) -> bool:
        """Put -H^{-1} c into the dq buffer; True if it satisfies every constraint (then it is the optimum)."""
        dq = self._dq
        dq[:] = solve_spd(self.H, self.c)
        np.negative(dq, out=dq)
        return self._feasible(dq)

    def _assemble(self) -> None:
        """Stack the box and the blocks into the dense A, l, u given to OSQP."""
        n = self.nv
        m = n + sum(len(up) for _, _, up in self._blocks)
        if self._A.shape[0] != m:
            self._A = np.zeros((m, n))
            self._A[:n] = self._box_rows  # constant: written once per row layout
            self._l = np.zeros(m)
            self._u = np.zeros(m)
        self._l[:n], self._u[:n] = self._lower, self._upper
        i = n
        for G, lo, up in self._blocks:
            k = len(up)
            self._A[i : i + k] = G
            self._l[i : i + k] = -np.inf if lo is None else lo
            self._u[i : i + k] = up
            i += k

    def _solve_qp(self) -> OinkResult:
        """The QP with hard barrier rows (no row is violated at q)."""
        dq = self._dq
        if self.unconstrained_shortcut and self._unconstrained_optimum_is_feasible():
            return OinkResult(dq, True, "solved (unconstrained optimum is feasible)")
        self._assemble()
        l = np.clip(self._l, -_OSQP_INF, _OSQP_INF)
        u = np.clip(self._u, -_OSQP_INF, _OSQP_INF)
        self._P.data[:] = self.H[self._P_rows, self._P_cols]
        Ax = self._A.ravel(order="F")
        m = len(l)
        if self._qp is None or self._qp_rows != m:
            A = sp.csc_matrix((Ax.copy(), np.tile(np.arange(m), self.nv), np.arange(0, m * self.nv + 1, m)), (m, self.nv))
            self._qp = osqp.OSQP()
            self._qp.setup(self._P, self.c, A, l, u, **self.osqp_settings)
            self._qp_rows = m
        else:
            self._qp.update(q=self.c, l=l, u=u, Px=self._P.data, Ax=Ax)
        res = self._qp.solve(raise_error=False)
        if not _osqp_solved(res):
            self._qp = None  # do not warm-start from a failed solve
            return self._fail(f"QP failed: OSQP status {res.info.status!r}{self._explain_infeasibility()}")
        dq[:] = np.clip(res.x, self._lower, self._upper)  # box limits hold exactly despite ADMM tolerance
        return OinkResult(dq, True, res.info.status, used_qp=True, qp_iterations=int(res.info.iter))

    def _solve_recovery(self, barrier: Barrier, row: int) -> OinkResult:
        """The slack problem (``barrier``'s ``row`` is the most violated row at q)."""
        label = f"recovering: barrier {barrier.name!r} row {barrier.row_names[row]!r} h = {barrier.value[row]:.4g} m"
        stuck = self._explain_infeasibility()
        if stuck:
            return self._fail(f"cannot recover{stuck}")
        dq = self._dq
        if self.unconstrained_shortcut and self._unconstrained_optimum_is_feasible():
            return OinkResult(dq, True, f"{label} (unconstrained optimum is feasible)", recovering=True)
        self._assemble()
        self._P.data[:] = self.H[self._P_rows, self._P_cols]
        res = self._slack.solve(
            self._P, self.c, self._A, self._l, self._u, self._barrier_rows, self.barrier_slack_penalty
        )
        status = f"{label} ({res.info.status})"
        if res.x is not None and np.isfinite(res.x).all():
            dq[:] = np.clip(res.x[: self.nv], self._lower, self._upper)  # box limits hold exactly
            if _osqp_solved(res) or (res.info.status_val == _OSQP_MAX_ITER and self._keeps_slack_rows(dq)):
                return OinkResult(dq, True, status, used_qp=True, qp_iterations=int(res.info.iter), recovering=True)
        self._slack.reset()  # do not warm-start from a failed solve
        return self._fail(f"{label}; QP failed: OSQP status {res.info.status!r}")

    def _keeps_slack_rows(self, dq: np.ndarray) -> bool:
        """Does dq (inside the box) satisfy the slack problem's rows within OSQP's eps_abs: the other
        limits, each barrier row that dq = 0 satisfies, and ``G dq <= 0`` for each violated one?"""
        tol = self.osqp_settings["eps_abs"]
        for G, lo, up in self._blocks:
            Gdq = G @ dq
            if lo is None:  # barrier rows
                if not (Gdq <= np.maximum(up, 0.0) + tol).all():
                    return False
            elif not ((Gdq >= lo - tol).all() and (Gdq <= up + tol).all()):
                return False
        return True

    def _explain_infeasibility(self) -> str:
        """Name a barrier row that no dq inside the box limits can satisfy, if any.

        The least ``G dq`` over the box is ``sum_j min(G_j lower_j, G_j upper_j)``; above the row's
        bound, the row alone makes the QP infeasible. A row violated at q (bound < 0; the slack
        problem relaxes it to ``G dq <= 0``) counts as unsatisfiable when the least value is also
        above -_MIN_RECOVERY_DISPLACEMENT: no step can move it back, so the robot cannot recover.
        """
        lo = np.clip(self._lower, -_OSQP_INF, _OSQP_INF)
        up = np.clip(self._upper, -_OSQP_INF, _OSQP_INF)
        for b in self._last_barriers:
            least = np.minimum(b.G * lo, b.G * up).sum(axis=1)
            stuck = least > np.maximum(b.upper, -_MIN_RECOVERY_DISPLACEMENT)
            if stuck.any():
                k = int(np.flatnonzero(stuck)[0])
                return (
                    f"; barrier {b.name!r} row {b.row_names[k]!r} cannot be satisfied within the joint limits "
                    f"(h = {b.value[k]:.4g} m): {_barrier_row_hint(b, k)}"
                )
        return ""

    # --------------------------------------------------------- barrier check
    def enforce_barriers(
        self, q: np.ndarray, dq_full: np.ndarray, barriers: Sequence[Barrier], tolerance: float = 1e-4
    ) -> bool:
        """Forward-kinematics check of q ⊕ dq_full against every barrier's rows of the last solve.

        A row is violated when ``h(q ⊕ dq) < min(h(q), 0) - tolerance``: a satisfied row may not end
        more than ``tolerance`` outside its safe set, and a row already violated at q may not get
        worse by more than ``tolerance`` (a recovery step moves it back to first order; what remains
        is linearization error). On violation ``dq_full`` is zeroed in place and False is returned.
        Call after :meth:`solve` at the same q.
        """
        if not barriers:
            return True
        model, data = self.scene.model, self.data
        q_next = pin.integrate(model, q, dq_full)
        pin.framesForwardKinematics(model, data, q_next)
        if any(b.needs_geometry for b in barriers):
            pin.updateGeometryPlacements(model, data, self.scene.collision_model, self.geom_data)
        for b in barriers:  # b.value still holds h at q (evaluate returns a new array)
            h_next = b.evaluate(data, self.geom_data)
            if np.any(h_next < np.minimum(b.value, 0.0) - tolerance):
                dq_full[:] = 0.0
                return False
        return True


class _SlackProblem:
    """The OSQP problem of a recovery step over x = (dq [rad], s [m]), s one slack per barrier row.

    P = diag(H, rho_2 I), q = (c, rho_1 1). A = [[A_hard, S], [0, I]] with A_hard the dense rows of the
    hard problem (box, other limits, then the k barrier rows last) and S = -I on the barrier rows;
    the last k rows bound the slacks: 0 <= s <= max(0, -u_barrier). Arrays are allocated and OSQP
    is set up only when the row counts change; otherwise values are updated and OSQP warm-starts.
    """

    def __init__(self, n: int, settings: dict) -> None:
        self.n = n
        self.settings = settings
        self._qp: osqp.OSQP | None = None
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
    ):
        """OSQP's result for this step: P_hard, c, A_hard, l_hard, u_hard of the hard problem, whose
        last k rows are the barrier rows; penalty rho_1 [cost]/[m]."""
        n, m = self.n, len(l_hard)
        if self._shape != (m, k):
            self._allocate(P_hard, m, k)
        self._P_dq[:] = P_hard.data
        self._P_slack[:] = penalty / _SLACK_QUADRATIC_LENGTH
        np.copyto(self._A_dq, A_hard.T)
        self._q[:n] = c
        self._q[n:] = penalty
        np.clip(l_hard, -_OSQP_INF, _OSQP_INF, out=self._l[:m])
        np.clip(u_hard, -_OSQP_INF, _OSQP_INF, out=self._u[:m])
        s_max = self._u[m:]  # [m]: max(0, -u) per barrier row, 0 for the rows dq = 0 satisfies
        np.negative(u_hard[m - k :], out=s_max)
        np.maximum(s_max, 0.0, out=s_max)
        if self._qp is None:
            self._qp = osqp.OSQP()
            self._qp.setup(self._P, self._q, self._A, self._l, self._u, **self.settings)
        else:
            self._qp.update(q=self._q, l=self._l, u=self._u, Px=self._P.data, Ax=self._A.data)
        return self._qp.solve(raise_error=False)


def _osqp_solved(res) -> bool:
    """OSQP solved (possibly inaccurately) with a finite solution."""
    return res.info.status_val in _OSQP_SOLVED and res.x is not None and np.isfinite(res.x).all()


def _most_violated_row(barriers: Sequence[Barrier]) -> tuple[Barrier, int] | None:
    """(barrier, row) with the least h among the rows dq = 0 violates (upper < 0), or None."""
    worst: tuple[Barrier, int] | None = None
    for b in barriers:
        if b.upper.min(initial=np.inf) < 0.0:
            k = int(np.argmin(np.where(b.upper < 0.0, b.value, np.inf)))
            if worst is None or b.value[k] < worst[0].value[worst[1]]:
                worst = (b, k)
    return worst


def _barrier_row_hint(b: Barrier, row: int) -> str:
    """What to change when ``b``'s ``row`` cannot be satisfied, worded for the barrier's type."""
    if isinstance(b, PositionBarrier):
        n_axes = len(b.axes)
        axis = b.axes[row % n_axes]
        bound, face = (b.p_min, "p_min") if row < n_axes else (b.p_max, "p_max")
        where = "outside" if b.value[row] < 0.0 else "at"
        return (
            f"frame {b.frame!r} is {where} the box on {'xyz'[axis]} ({face}[{axis}] = {bound[axis]:.4g} m) and no "
            f"step within the joint limits moves it inward: the box may be too small or not reachable within the "
            f"joint limits (check p_min/p_max)"
        )
    if isinstance(b, SelfCollisionBarrier):
        return "lower its d_min/safety_margin, or disable that pair in the SRDF"
    return "relax the barrier or the joint limits"
