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

Solving: if the unconstrained minimizer -H^{-1} c satisfies every constraint, it is the QP's
optimum (the QP is strictly convex) and is returned without calling OSQP; otherwise OSQP solves
the QP. Its workspace is kept between steps (values updated, set up again only when the number of
rows changes) and warm-started from the previous solution. Any failure gives dq = 0 and a status.
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
from .limits.limit import Limit
from .tasks.task import Task

_OSQP_INF = 1e30


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


class Oink:
    """Optimal IK for one joint group of ``scene``.

    Args:
        regularization: Tikhonov lambda [cost]/[rad^2]; also damps the nullspace projectors.
        unconstrained_shortcut: return -H^{-1} c without OSQP when it satisfies every constraint.
        eps_abs, eps_rel, max_iter: OSQP settings.
    """

    def __init__(
        self,
        scene: Scene,
        group_name: str = "",
        regularization: float = 1e-6,
        *,
        unconstrained_shortcut: bool = True,
        eps_abs: float = 1e-6,
        eps_rel: float = 1e-6,
        max_iter: int = 4000,
    ) -> None:
        self.scene = scene
        self.group = scene.group(group_name)
        self.nv = self.group.nv
        self.regularization = check_positive(regularization, "regularization")
        self.unconstrained_shortcut = bool(unconstrained_shortcut)
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
            return self._solve_qp()
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
        for b in barriers:
            G, up = b.constraint()
            self._blocks.append((G, None, up))
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
        dq = self._dq
        if self.unconstrained_shortcut:
            dq[:] = solve_spd(self.H, self.c)
            np.negative(dq, out=dq)
            if self._feasible(dq):
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
        status = res.info.status
        if res.info.status_val not in (1, 2) or res.x is None or not np.isfinite(res.x).all():  # solved, inaccurate
            self._qp = None  # do not warm-start from a failed solve
            return self._fail(f"QP failed: OSQP status {status!r}{self._explain_infeasibility()}")
        dq[:] = np.clip(res.x, self._lower, self._upper)  # box limits hold exactly despite ADMM tolerance
        return OinkResult(dq, True, status, used_qp=True, qp_iterations=int(res.info.iter))

    def _explain_infeasibility(self) -> str:
        """Name a barrier row that no dq inside the box limits can satisfy, if any.

        The least ``G dq`` over the box is ``sum_j min(G_j lower_j, G_j upper_j)``; above the row's
        bound, the row alone makes the QP infeasible.
        """
        lo = np.clip(self._lower, -_OSQP_INF, _OSQP_INF)
        up = np.clip(self._upper, -_OSQP_INF, _OSQP_INF)
        for b in self._last_barriers:
            least = np.minimum(b.G * lo, b.G * up).sum(axis=1)
            stuck = least > b.upper
            if stuck.any():
                k = int(np.flatnonzero(stuck)[0])
                return (
                    f"; barrier {b.name!r} row {b.row_names[k]!r} cannot be satisfied within the joint limits "
                    f"(h = {b.value[k]:.4g} m): lower its d_min/safety_margin, or disable that pair in the SRDF"
                )
        return ""

    # --------------------------------------------------------- barrier check
    def enforce_barriers(
        self, q: np.ndarray, dq_full: np.ndarray, barriers: Sequence[Barrier], tolerance: float = 1e-4
    ) -> bool:
        """Forward-kinematics check of q ⊕ dq_full against every barrier's rows of the last solve.

        A row is violated when h(q ⊕ dq) < -tolerance and the step makes it worse than at q (a step
        that moves a violated barrier back toward safety is allowed). On violation ``dq_full`` is
        zeroed in place and False is returned. Call after :meth:`solve` at the same q.
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
            if np.any((h_next < -tolerance) & (h_next < b.value)):
                dq_full[:] = 0.0
                return False
        return True
