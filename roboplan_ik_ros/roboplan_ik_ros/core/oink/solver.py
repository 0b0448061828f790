"""OInK: one QP over the joint displacement dq of a joint group per control step.

    min_dq  1/2 dq^T H dq + c^T dq
    s.t.    lower <= dq <= upper          (box limits: PositionLimit, VelocityLimit)
            l_c <= G_c dq <= u_c          (other hard limits)
            G_b dq <= h_b                 (barrier rows)

    H = lambda I + sum_k (N_k^T J_k^T W_k^2 J_k N_k + mu_k I) + sum_b r_b / ||J_b||^2 I
    c = sum_k alpha_k N_k^T J_k^T W_k^2 e_k - sum_b r_b / ||J_b||^2 dq_safe_b

This is the objective ``1/2 sum_k ||W_k (J_k N_k dq + alpha_k e_k)||^2`` expanded, with each task's
J carrying the sign that moves toward its target (see :class:`Task`). N_k is the damped nullspace
projector of the stacked Jacobians of all priority levels above k (N_1 = I):

    N_k = I - J_s^T (J_s J_s^T + lambda I)^{-1} J_s,    J_s = [J_1; ...; J_{k-1}]

Weighted nullspace (``weighted_nullspace=True``; default off: RoboPlan's form above): J_s keeps only
the rows whose weight is nonzero (J_s = [M_1 J_1; ...], M = diag(W != 0)), so a row its task does not care
about (``orientation_cost: 0``) no longer takes its direction from the levels below; every row with a nonzero
weight keeps RoboPlan's projector exactly. Why a mask and not W, and what the unweighted form does with a
zero-weight row (measured): docs/formulation.md, "Weighted nullspace".

Recovery: whenever some barrier row has h_b < 0 (dq = 0 violates it), OInK solves the slack problem
instead (slack_problems.py), one slack s_i [m] per barrier row:

    min_{dq, s}  1/2 dq^T H dq + c^T dq + rho_1 sum(s) + rho_2/2 ||s||^2
    s.t.         the box and the other hard limits (never relaxed)
                 G_b dq - s <= h_b
                 0 <= s_i <= max(0, -h_b,i)

so a row that dq = 0 satisfies stays hard and a violated one relaxes at most to ``G_b,i dq <= 0``; the
exact penalty rho_1 = ``barrier_slack_penalty`` gives no slack where the QP above is feasible (why this
form, and rho_2: docs/formulation.md, "Recovery"). A violated row that no step within the box can move
back is reported as a failure.

Solving: if the unconstrained minimizer -H^{-1} c satisfies every constraint (barrier rows at their
unrelaxed bounds), it is the optimum of both problems (s = 0 there) and is returned without a QP
solver. Otherwise ``qp_solver`` solves the problem:

- "daqp" (default): DAQP, a dense dual active-set method. Its solution is the exact optimum of the
  active set it ends with (round-off only); every row holds to within _DAQP_PRIMAL_TOL = 1e-9.
- "osqp": OSQP (ADMM), accurate to eps_abs / eps_rel, with max_iter iterations at most.

Each problem (hard, slack) has its own workspace, kept between steps (set up again only when its size
changes), warm-started from the previous step (DAQP: its active set; OSQP: its iterates). The box holds
exactly (the solution is clipped into it). A failure gives dq = 0 and a status; a recovery step whose
OSQP run hit max_iter is still used if its last iterate keeps every row of the slack problem (eps_abs).
Buffers: a :class:`QpLayout` per list of tasks, limits and barriers (qp_layout.py).

Assembly: when the C kernel is built (the default install builds it), one call of
:mod:`compiled_assembly` fills N_k, M, H, c, the generic barrier rows, the box and tries the
shortcut, reading the objects' arrays in place, then solves the QP when DAQP is built in (:mod:`compiled_qp`);
the numpy code of this module (``compiled=False``, or a layout whose arrays the kernel cannot read) and the daqp
module are the same math, tested against each other and the seed's formulas (test_oink_compiled*.py, *_oracle.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import osqp
import pinocchio as pin
import scipy.sparse as sp
from scipy.linalg.lapack import dposv

from ..errors import InvalidInputError, check_positive
from ..model.scene import Scene
from ..ranges import check_key
from . import compiled_assembly, compiled_qp
from .compiled_assembly import CompiledAssembly, load_kernel, load_qp
from .compiled_qp import DaqpWorkspace, daqp_status as _daqp_status
from .barrier_check import BarrierCheck, most_violated_row
from .barriers.barrier import Barrier
from .osqp_workspace import OsqpResult, OsqpWorkspace
from .qp_layout import INF, QpLayout
from .robot import Robot
from .slack_problems import DaqpSlackProblem, OsqpSlackProblem
from .solver_config import QP_SOLVERS, SolverConfig
from .limits.limit import Limit
from .tasks.task import Task

try:
    import daqp
except ImportError:  # a colcon install without `pip install daqp`: only qp_solver "osqp" works
    daqp = None

_OSQP_SOLVED = (osqp.SolverStatus.OSQP_SOLVED, osqp.SolverStatus.OSQP_SOLVED_INACCURATE)
_OSQP_MAX_ITER = osqp.SolverStatus.OSQP_MAX_ITER_REACHED
# [m] per step: a violated barrier row that no dq inside the box moves back by more than this is stuck
# (5 um/s at 500 Hz; above the noise of distance Jacobians whose witness points slide on flat faces).
_MIN_RECOVERY_DISPLACEMENT = 1e-8
_SHORTCUT = "solved (unconstrained optimum is feasible)"
# [rad or m] DAQP adds a row to its active set when violated by more than this (its default, 1e-6, lets
# warm and cold starts end on different active sets, dq up to ~5e-6 apart); the rows then hold to 1e-9.
_DAQP_PRIMAL_TOL = 1e-9


def solve_spd(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """x with A x = b for symmetric positive definite A (LAPACK Cholesky; far less call overhead
    than numpy.linalg.solve at these sizes)."""
    _, x, info = dposv(A, b)
    if info != 0:
        raise np.linalg.LinAlgError(f"matrix not positive definite (LAPACK info {info})")
    return x


@dataclass(slots=True)
class OinkResult:
    """Outcome of one step. ``dq`` (group nv) is a buffer reused by the next solve: copy to keep."""

    dq: np.ndarray
    ok: bool
    status: str
    used_qp: bool = False  # False when the unconstrained optimum was feasible
    qp_iterations: int = 0
    recovering: bool = False  # a barrier row was violated at q: dq solves the slack problem


class QpData(NamedTuple):
    """min 1/2 dq^T H dq + c^T dq  s.t.  lower <= dq <= upper, G_lower <= G dq <= G_upper."""

    H: np.ndarray
    c: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    G: np.ndarray
    G_lower: np.ndarray
    G_upper: np.ndarray


class Oink(BarrierCheck):
    """Optimal IK for one joint group of ``scene``.

    Args:
        regularization: Tikhonov lambda [cost]/[rad^2]; also damps the nullspace projectors.
        qp_solver: "daqp" or "osqp" (see the module docstring).
        unconstrained_shortcut: return -H^{-1} c without a QP solver when it satisfies every constraint.
        barrier_slack_penalty: rho_1 [cost]/[m], the exact-penalty weight of the slack problem
            solved while the robot is outside a barrier's safe set (see the module docstring). It
            must exceed the pull of the tasks on a barrier row (~0.1-10 with unit task weights).
        eps_abs, eps_rel: OSQP's tolerances (DAQP's solution is exact for its active set; a row holds to 1e-9).
        max_iter: iteration limit of either solver.
        compiled: assemble each step with the compiled kernel when it is built, and with "daqp" solve its QP there
            when DAQP is built in (:mod:`compiled_assembly`, :mod:`compiled_qp`; :attr:`assembly` and
            :attr:`daqp_workspace` say which path runs, :attr:`assembly_note` why a part runs in Python).
        weighted_nullspace: build the priority levels' projectors from the rows with a nonzero weight
            only (see the module docstring); False: RoboPlan's projector of the unweighted Jacobians.

    The defaults and accepted values are the ``solver:`` section's declarations (:mod:`.solver_config`).
    """

    def __init__(
        self,
        scene: Scene,
        group_name: str = "",
        regularization: float = SolverConfig.regularization,
        *,
        qp_solver: str = SolverConfig.qp_solver,
        unconstrained_shortcut: bool = SolverConfig.unconstrained_shortcut,
        barrier_slack_penalty: float = SolverConfig.barrier_slack_penalty,
        eps_abs: float = SolverConfig.eps_abs,
        eps_rel: float = SolverConfig.eps_rel,
        max_iter: int = SolverConfig.max_iter,
        compiled: bool = True,
        weighted_nullspace: bool = SolverConfig.weighted_nullspace,
    ) -> None:
        if qp_solver not in QP_SOLVERS:
            raise InvalidInputError(f"qp_solver: expected one of {', '.join(QP_SOLVERS)}, got {qp_solver!r}")
        if qp_solver == "daqp" and daqp is None:
            raise InvalidInputError('qp_solver: "daqp" needs the daqp package (pip install daqp==0.11.0), '
                                    'or use "osqp"')
        self.scene = scene
        self.group = scene.group(group_name)
        self.nv = self.group.nv
        self.robot = Robot(scene, self.group)  # what tasks, limits and barriers are built against
        self.regularization = check_key(regularization, "solver.regularization", "regularization")
        self.qp_solver = qp_solver
        self.unconstrained_shortcut = bool(unconstrained_shortcut)
        self.barrier_slack_penalty = check_key(barrier_slack_penalty, "solver.barrier_slack_penalty",
                                               "barrier_slack_penalty")
        max_iter = check_key(max_iter, "solver.max_iter", "max_iter")
        self.osqp_settings = dict(
            eps_abs=check_key(eps_abs, "solver.eps_abs", "eps_abs"),
            eps_rel=check_key(eps_rel, "solver.eps_rel", "eps_rel"),
            max_iter=max_iter,
            verbose=False,
            polishing=False,
            warm_starting=True,
        )
        self.daqp_settings = dict(primal_tol=_DAQP_PRIMAL_TOL, iter_limit=max_iter)
        self._weighted_nullspace = bool(weighted_nullspace)
        # The compiled assembly (compiled_assembly.py) when built and asked for, else the numpy path.
        self.kernel, why = load_kernel() if compiled else (None, "compiled=False")
        self.assembly = "compiled" if self.kernel is not None else "numpy"
        # The kernel's DAQP (compiled_qp.py; None: the daqp module solves the QP); the note: why a part runs in Python
        functions, self.assembly_note = load_qp() if self.kernel is not None and qp_solver == "daqp" else (None, why)
        self.daqp_workspace = DaqpWorkspace(functions, _DAQP_PRIMAL_TOL, max_iter) if functions else None
        self.data, self.geom_data = scene.create_data()
        self._geometry_version = scene.collision_structure_version  # geom_data is remade when obstacles come or go
        n = self.nv
        self._q_shape = (scene.model.nq,)
        self._v_columns = self.group.v_columns
        self._eye = np.eye(n)
        self.H = np.zeros((n, n))
        self.c = np.zeros(n)
        self._H_diagonal = self.H.reshape(-1)[:: n + 1]  # writable view
        self._dq = np.zeros(n)
        self._dq_scaled = np.zeros(n)
        self.shortened_steps = 0  # steps that enforce_barriers accepted only shortened
        self.corrected_steps = 0  # steps that enforce_barriers accepted after a second-order correction
        # [m] a barrier row with -boundary_tolerance <= h < 0 is on its boundary, not violated: its hard row
        # (move back by gain * dt * |h|) stays in the QP instead of the recovery's slack problem
        self.boundary_tolerance = 0.0
        self.braking_relaxations = 0  # steps whose barrier rows were relaxed to what the box allows (_solve_braking)
        # Barrier braking (set_barrier_braking): [lag steps (< 0: off), per-joint alpha [per step^2]]
        self.barrier_braking = np.concatenate([[-1.0], np.zeros(n)])
        # Barrier reference (set_barrier_reference): the rows bound the step from q ⊕ offset (None: from q)
        self.barrier_reference: np.ndarray | None = None
        self._barrier_reference = np.zeros(n)
        self._layout: QpLayout | None = None
        # OSQP: P is the dense upper triangle, A is stored dense (all m x n entries).
        rows, cols = np.tril_indices(n)  # (r, c) with r >= c, row-major == CSC order of the upper triangle
        self._P_rows, self._P_cols = cols, rows
        self._P = sp.csc_matrix(
            (np.zeros(len(rows)), cols, np.concatenate([[0], np.cumsum(np.arange(1, n + 1))])), shape=(n, n)
        )
        self._qp = None  # the hard problem's workspace (OsqpWorkspace or daqp.Model), kept between steps
        self._qp_rows = -1
        if qp_solver == "daqp":
            self._slack: OsqpSlackProblem | DaqpSlackProblem = DaqpSlackProblem(n, self.daqp_settings)
        else:
            self._slack = OsqpSlackProblem(n, self.osqp_settings)

    @property
    def weighted_nullspace(self) -> bool:
        """Do the projectors keep only the rows with a nonzero weight? (Set at construction: the
        layouts and the compiled kernel's problem are built for it.)"""
        return self._weighted_nullspace

    @property
    def constraint_tolerance(self) -> float:
        """[rad or m] how closely a solution meets the constraints it is held by (DAQP: its primal tolerance;
        OSQP: eps_abs): a dq this close to a bound is taken to sit on it (reports of what binds a step)."""
        return _DAQP_PRIMAL_TOL if self.qp_solver == "daqp" else self.osqp_settings["eps_abs"]

    def set_barrier_braking(self, alpha, lag: float) -> None:
        """Make every barrier row account for braking (see :class:`Barrier`): ``alpha`` [rad or m per
        step^2] the per-joint deceleration a row may count on (a_max dt^2 times a share), ``lag`` the
        steps before it is available (the jerk bound's ramp). ``alpha=None`` turns it off."""
        if alpha is None:
            self.barrier_braking[0] = -1.0
            return
        self.barrier_braking[1:] = np.asarray(alpha, dtype=float)
        self.barrier_braking[0] = check_positive(lag, "barrier braking lag", allow_zero=True)

    def set_barrier_reference(self, offset: np.ndarray | None) -> None:
        """Make every barrier row bound the step from the reference configuration ``q ⊕ offset``
        (``offset`` over the group's nv; None: from q itself), as :meth:`VelocityLimit.set_reference`
        centres the velocity box: h is taken at the reference to first order, ``h + J_h offset``, and
        the row bounds ``-J_h (dq - offset)``. A controller that linearizes at the measured state
        passes its previous command's lead over the measurement: the command stream then approaches a
        barrier as it would from the command itself, and a lead the bounds keep (an acceleration
        limit cannot drop it at once) no longer counts as an approach of this step."""
        if offset is None:
            self.barrier_reference = None
        else:
            self._barrier_reference[:] = offset
            self.barrier_reference = self._barrier_reference

    # ----------------------------------------------------------------- helpers
    def scatter(self, dq: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """The group's dq placed into a full-model velocity vector (zeros elsewhere)."""
        if out is None:
            out = np.zeros(self.scene.model.nv)
        else:
            out.fill(0.0)
        out[self._v_columns] = dq
        return out

    def last_qp(self) -> QpData:
        """Copies of the hard problem of the last solve (for tests and debugging; the box as bounds,
        the other limits' and the barriers' rows as G; the slack problem adds slacks to the barrier rows)."""
        lay = self._layout
        if lay is None:
            raise RuntimeError("no solve yet")
        n = self.nv
        return QpData(self.H.copy(), self.c.copy(), lay.lower.copy(), lay.upper.copy(), lay.A.copy(),
                      lay.lower_qp[n:].copy(), lay.upper_qp[n:].copy())

    def _fail(self, status: str) -> OinkResult:
        self._dq.fill(0.0)
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
        if q.shape != self._q_shape or not (math.isfinite(q @ q) or np.isfinite(q).all()):  # q @ q may overflow
            return self._fail(f"invalid configuration: expected {self.scene.model.nq} finite values")
        try:
            key = (len(tasks), len(limits), *tasks, *limits, *barriers, *[t.priority for t in tasks])
            lay = self._layout
            if lay is None or lay.key != key:
                lay = self._layout = QpLayout(self, q, key, tasks, limits, barriers)
            model, data = self.scene.model, self.data
            pin.computeJointJacobians(model, data, q)  # also forward kinematics
            pin.updateFramePlacements(model, data)
            if any(b.needs_geometry for b in lay.barriers):  # the Python collision path (the kernel places its own)
                if self._geometry_version != self.scene.collision_structure_version:  # obstacles added/removed
                    self.geom_data = pin.GeometryData(self.scene.collision_model)
                    self._geometry_version = self.scene.collision_structure_version
                pin.updateGeometryPlacements(model, data, self.scene.collision_model, self.geom_data)
            if lay.compiled is not None:
                return self._solve_compiled(q, lay, key, tasks, limits, barriers)
            diagonal = self._build_objective(q, lay)
            diagonal += self._barrier_terms(q, barriers, self.c)
            self._H_diagonal += diagonal
            if not self._build_limits(q, lay):  # a limit changed the kind or size of its bounds
                lay = self._layout = QpLayout(self, q, key, tasks, limits, barriers)
                if not self._build_limits(q, lay):
                    raise ValueError("a limit's bounds change shape from one call to the next")
            if lay.barrier_upper.size and lay.barrier_upper.min() < 0.0:
                violated = most_violated_row(barriers, self.boundary_tolerance)
                if violated is not None:
                    return self._solve_recovery(lay, *violated)
            return self._solve_qp(lay)
        except (ValueError, np.linalg.LinAlgError, RuntimeError) as exc:
            return self._fail(f"error: {exc}")

    def _solve_compiled(self, q: np.ndarray, lay: QpLayout, key: tuple, tasks, limits, barriers) -> OinkResult:
        """The step with the compiled assembly (:mod:`compiled_assembly`): the objects update their
        arrays here, the kernel assembles H, c, the rows and the box and tries the shortcut."""
        data, geom_data = self.data, self.geom_data
        ca = lay.compiled
        for task in ca.python_tasks:
            task.update(q, data)
            if task.excluded is not None:  # joints the task does not use (such a task is never updated natively)
                task.jacobian[:, task.excluded] = 0.0
        for task in ca.frame_tasks:  # updated by the kernel
            task.hold_if_untargeted(data)
        for b in ca.updated_barriers:
            b.update(q, data, geom_data)
        if not (_set_compiled_box(q, ca) and self._build_row_limits(q, lay) and ca.refresh()):
            # a limit changed the kind or size of its bounds, or an object swapped an array: new layout
            lay = self._layout = QpLayout(self, q, key, tasks, limits, barriers)
            ca = lay.compiled
            if ca is None or not (_set_compiled_box(q, ca) and self._build_row_limits(q, lay) and ca.refresh()):
                raise ValueError("a task, limit or barrier changes its arrays or their shapes from one call to "
                                 "the next")
        extra_diagonal = 0.0
        if lay.python_barriers:  # barriers with their own constraint/regularization: as the numpy path
            ca.c_offset.fill(0.0)
            extra_diagonal = self._barrier_terms(q, lay.python_barriers, ca.c_offset)
        referenced = self.barrier_reference is not None and bool(lay.kernel_barriers)
        code = ca.run(self.regularization, extra_diagonal, self.unconstrained_shortcut and not referenced,
                      solve_qp=not referenced)
        if code < 0:
            which = "J J^T + lambda I of a priority level" if code == compiled_assembly.NULLSPACE_NOT_PD else "H"
            raise np.linalg.LinAlgError(f"matrix not positive definite ({which})")
        if code >= compiled_qp.QP_SOLVED:  # the kernel solved the QP too
            return self._daqp_result(lay, code, lay.qp.exitflag, lay.qp.iterations)
        if referenced:  # the kernel's rows bound the step from q: rewrite them from the reference (rare: measured feedback)
            for b in lay.kernel_barriers:
                b.constraint(self.barrier_reference, self.barrier_braking)
            if lay.barrier_upper.size and lay.barrier_upper.min() < 0.0:
                violated = most_violated_row(barriers, self.boundary_tolerance)
                if violated is not None:
                    return self._solve_recovery(lay, *violated)
            return self._solve_qp(lay, shortcut=self.unconstrained_shortcut, box_conflict=True)
        if code == compiled_assembly.VIOLATED_BARRIER or (
            lay.python_barriers and lay.barrier_upper.size and lay.barrier_upper.min() < 0.0
        ):
            violated = most_violated_row(barriers, self.boundary_tolerance)
            if violated is not None:
                return self._solve_recovery(lay, *violated)
        if code == compiled_assembly.SHORTCUT_FEASIBLE:
            return OinkResult(self._dq, True, _SHORTCUT)
        # NEEDS_QP: the kernel tried the shortcut if it was on; VIOLATED_BARRIER without a row: it did not
        return self._solve_qp(lay, shortcut=self.unconstrained_shortcut and code != compiled_assembly.NEEDS_QP,
                              box_conflict=ca.summary[1] != 0.0)

    def _barrier_terms(self, q: np.ndarray, barriers: Sequence[Barrier], c: np.ndarray) -> float:
        """Update ``barriers``, write their rows into K and d, subtract their ``w dq_safe`` from ``c``;
        returns the sum of their regularization weights w (what H's diagonal gets from them)."""
        diagonal = 0.0
        for b in barriers:
            b.update(q, self.data, self.geom_data)
            b.constraint(self.barrier_reference, self.barrier_braking)  # into K and d
            w = b.regularization_weight()
            if w > 0.0:
                diagonal += w
                dq_safe = b.safe_displacement()
                if dq_safe is not None:
                    c -= w * dq_safe
        return diagonal

    def _build_objective(self, q: np.ndarray, lay: QpLayout) -> float:
        """Update the tasks; fill A = [W_k J_k N_k], b = [alpha_k W_k e_k] and H = A^T A, c = A^T b.
        Returns what H's diagonal still needs: lambda + sum_k mu_k."""
        data = self.data
        diagonal = self.regularization
        N = None
        for level, nullspace in zip(lay.levels, lay.nullspace):
            for task, A_rows, b_rows, w_column, J_above, weighted_rows in level:
                task.update(q, data)
                if task.excluded is not None:  # joints the task does not use
                    task.jacobian[:, task.excluded] = 0.0
                if N is None:
                    np.multiply(task.jacobian, w_column, out=A_rows)
                else:
                    np.dot(task.jacobian, N, out=A_rows)
                    A_rows *= w_column
                np.multiply(task.error, task.sqrt_weight, out=b_rows)
                if task.task_gain != 1.0:
                    b_rows *= task.task_gain
                if task.lm_damping > 0.0:
                    diagonal += task.lm_damping * float(b_rows @ b_rows)  # mu_k = lambda_LM ||W alpha e||^2
                if weighted_rows is not None:  # weighted_nullspace: the rows with a nonzero weight, the others 0
                    np.not_equal(w_column, 0.0, out=weighted_rows)
                    np.multiply(task.jacobian, weighted_rows, out=J_above)
                elif J_above is not None:
                    np.copyto(J_above, task.jacobian)
            if nullspace is not None:  # N of the next level
                Js, JJt, JJt_diagonal, N = nullspace
                if Js is None:  # a single task above: its own Jacobian
                    Js = level[0][0].jacobian
                np.dot(Js, Js.T, out=JJt)
                JJt_diagonal += self.regularization
                _, X, info = dposv(JJt, Js)
                if info != 0:
                    raise np.linalg.LinAlgError(f"matrix not positive definite (LAPACK info {info})")
                np.dot(Js.T, X, out=N)
                np.subtract(self._eye, N, out=N)  # damped nullspace projector of the levels so far
        np.dot(lay.A_tasks.T, lay.A_tasks, out=self.H)
        np.dot(lay.A_tasks.T, lay.b_tasks, out=self.c)
        return diagonal

    def _build_limits(self, q: np.ndarray, lay: QpLayout) -> bool:
        """Fill the box and the other limits' rows of K, d and the QP's lower bounds. False if a limit's
        bounds no longer fit the layout (a box became rows or the number of rows changed)."""
        return self._build_box(q, lay) and self._build_row_limits(q, lay)

    def _build_box(self, q: np.ndarray, lay: QpLayout) -> bool:
        box = lay.box_limits
        if box:
            lower, upper = lay.lower, lay.upper
            G, lower_0, upper_0 = box[0].bounds(q)
            if G is not None:
                return False
            if len(box) == 1:
                np.copyto(lower, lower_0)
                np.copyto(upper, upper_0)
            for i in range(1, len(box)):
                G, lo, up = box[i].bounds(q)
                if G is not None:
                    return False
                np.maximum(lower_0 if i == 1 else lower, lo, out=lower)
                np.minimum(upper_0 if i == 1 else upper, up, out=upper)
            np.negative(lower, out=lay.negative_lower)
        return True

    def _build_row_limits(self, q: np.ndarray, lay: QpLayout) -> bool:
        for lim, G_rows, up_rows, lo_rows, negative_G_rows, negative_lo_rows in lay.row_limits:
            G, lo, up = lim.bounds(q)
            if G is None or G.shape != G_rows.shape:
                return False
            G_rows[:], up_rows[:], lo_rows[:] = G, up, lo
            np.negative(G, out=negative_G_rows)
            np.negative(lo, out=negative_lo_rows)
        return True

    def _limits_conflict(self, lay: QpLayout) -> str:
        """A non-empty status if the box limits conflict (lower > upper for some joint)."""
        conflict = np.greater(lay.lower, lay.upper, out=lay.satisfied[: self.nv])
        if not np.count_nonzero(conflict):
            return ""
        k = int(np.flatnonzero(conflict)[0])
        return (
            f"infeasible limits: joint {self.group.joint_names[k]!r} needs dq >= {lay.lower[k]:.6g} and "
            f"dq <= {lay.upper[k]:.6g} (is it outside its position limits?)"
        )

    def _unconstrained_optimum_is_feasible(self, lay: QpLayout) -> bool:
        """Put -H^{-1} c into the dq buffer; True if it satisfies every constraint, exactly (then it is the optimum)."""
        dq = self._dq
        np.negative(solve_spd(self.H, self.c), out=dq)
        np.dot(lay.K, dq, out=lay.Kdq)
        return np.count_nonzero(np.less_equal(lay.Kdq, lay.d, out=lay.satisfied)) == len(lay.d)  # NaN: not

    def _solve_qp(self, lay: QpLayout, shortcut: bool | None = None, box_conflict: bool = True) -> OinkResult:
        """The QP with hard barrier rows (no row is violated at q); ``shortcut`` (default:
        unconstrained_shortcut) tries -H^{-1} c first; ``box_conflict=False``: the box is known to
        have lower <= upper (or NaN) on every joint."""
        if shortcut is None:
            shortcut = self.unconstrained_shortcut
        if shortcut and self._unconstrained_optimum_is_feasible(lay):
            return OinkResult(self._dq, True, _SHORTCUT)
        status = self._limits_conflict(lay) if box_conflict else ""
        if status:
            return self._fail(status)
        if self.qp_solver == "daqp":
            return self._solve_qp_daqp(lay)
        return self._solve_qp_osqp(lay)

    def _solve_qp_daqp(self, lay: QpLayout) -> OinkResult:
        if lay.qp is not None:  # DAQP in the kernel (the workspace oink_step solves with)
            return self._daqp_result(lay, lay.qp.solve(), lay.qp.exitflag, lay.qp.iterations)
        m = len(lay.lower_qp)
        qp = self._qp
        if qp is None or self._qp_rows != m:
            qp = daqp.Model()
            qp.settings = self.daqp_settings
            flag, _ = qp.setup(self.H, self.c, lay.A, lay.upper_qp, lay.lower_qp)
            if flag < 0:
                return self._daqp_result(lay, compiled_qp.QP_SETUP_FAILED, flag, 0)
            self._qp, self._qp_rows = qp, m
        else:
            qp.update(H=self.H, f=self.c, A=lay.A_daqp, bupper=lay.upper_qp, blower=lay.lower_qp)
        x, _, flag, info = qp.solve()
        if flag >= 1 and math.isfinite((dq := self._clip_into_box(x, lay)) @ dq):  # NaN, inf, |dq| > 1e154: no
            return self._daqp_result(lay, compiled_qp.QP_SOLVED, flag, info["iterations"])
        self._qp = None  # do not warm-start from a failed solve (the kernel drops its problem likewise)
        return self._daqp_result(lay, compiled_qp.QP_FAILED, flag, 0)

    def _daqp_result(self, lay: QpLayout, code: int, flag: int, iterations: int) -> OinkResult:
        """The step from DAQP's outcome (``code``: compiled_qp's; DAQP's exit flag), the kernel's or the module's."""
        if code == compiled_qp.QP_SOLVED:
            return OinkResult(self._dq, True, _daqp_status(flag), used_qp=True, qp_iterations=iterations)
        if code == compiled_qp.QP_SETUP_FAILED:
            return self._fail(f"QP failed: DAQP setup: {_daqp_status(flag)}")
        return self._qp_failed(lay, f"DAQP {_daqp_status(flag)}")

    def _qp_failed(self, lay: QpLayout, solver_status: str) -> OinkResult:
        """The hard QP failed: the braking problem's step, else a failure naming a row the box cannot satisfy."""
        braked = self._solve_braking(lay)
        if braked is not None:
            return braked
        return self._fail(f"QP failed: {solver_status}{self._explain_infeasibility(lay)}")

    def _solve_qp_osqp(self, lay: QpLayout) -> OinkResult:
        l, u = lay.osqp_bounds()
        self._P.data[:] = self.H[self._P_rows, self._P_cols]
        c = self.c  # contiguous: osqp 1.1's update reads a strided array as if it were contiguous
        Ax = lay.A_box.ravel(order="F")
        m = len(l)
        if self._qp is None or self._qp_rows != m:
            A = sp.csc_matrix((Ax.copy(), np.tile(np.arange(m), self.nv), np.arange(0, m * self.nv + 1, m)), (m, self.nv))
            self._qp = OsqpWorkspace(self._P, c, A, l, u, self.osqp_settings)
            self._qp_rows = m
        else:
            self._qp.update(c, l, u, self._P.data, Ax)
        res = self._qp.solve()
        if not _osqp_solved(res):
            self._qp = None  # do not warm-start from a failed solve
            return self._qp_failed(lay, f"OSQP status {res.status!r}")
        dq = self._clip_into_box(res.x, lay)
        return OinkResult(dq, True, res.status, used_qp=True, qp_iterations=res.iterations)

    def _clip_into_box(self, x: np.ndarray, lay: QpLayout) -> np.ndarray:
        """The dq buffer holding x[:n] clipped into the box (which then holds exactly, despite solver tolerances)."""
        dq = self._dq
        np.maximum(x[: self.nv], lay.lower, out=dq)
        np.minimum(dq, lay.upper, out=dq)
        return dq

    def _solve_recovery(self, lay: QpLayout, barrier: Barrier, row: int) -> OinkResult:
        """The slack problem (``barrier``'s ``row`` is the most violated row at q)."""
        status = self._limits_conflict(lay)
        if status:
            return self._fail(status)
        label = f"recovering: barrier {barrier.name!r} row {barrier.row_names[row]!r} h = {barrier.value[row]:.4g} m"
        stuck = self._explain_infeasibility(lay)
        if stuck:  # the box does not let some row stop approaching yet: brake along it as hard as it allows
            braked = self._solve_braking(lay, recovering=True)
            if braked is not None:
                return braked
            return self._fail(f"cannot recover{stuck}")
        if self.unconstrained_shortcut and self._unconstrained_optimum_is_feasible(lay):
            return OinkResult(self._dq, True, f"{label} (unconstrained optimum is feasible)", recovering=True)
        k = lay.barrier_upper.size
        if self.qp_solver == "daqp":
            x, flag, iterations = self._slack.solve(self.H, self.c, lay, k, self.barrier_slack_penalty)
            if x is not None:
                dq = self._clip_into_box(x, lay)
                status = f"{label} ({_daqp_status(flag)})"
                return OinkResult(dq, True, status, used_qp=True, qp_iterations=iterations, recovering=True)
            self._slack.reset()
            return self._fail(f"{label}; QP failed: DAQP {_daqp_status(flag)}")
        self._P.data[:] = self.H[self._P_rows, self._P_cols]
        res = self._slack.solve(self._P, self.c, lay.A_box, lay.lower_qp, lay.upper_qp, k, self.barrier_slack_penalty)
        status = f"{label} ({res.status})"
        if res.x is not None and np.isfinite(res.x).all():
            dq = self._clip_into_box(res.x, lay)
            if _osqp_solved(res) or (res.status_val == _OSQP_MAX_ITER and self._keeps_slack_rows(dq, lay)):
                return OinkResult(dq, True, status, used_qp=True, qp_iterations=res.iterations, recovering=True)
        self._slack.reset()  # do not warm-start from a failed solve
        return self._fail(f"{label}; QP failed: OSQP status {res.status!r}")

    def _solve_braking(self, lay: QpLayout, recovering: bool = False) -> OinkResult | None:
        """The hard QP is infeasible although no barrier row is violated at q: some row's braking bound
        asks for more deceleration than the box (velocity, acceleration, jerk, position limits) allows,
        typically a pair that has just become one of the closest while the arm moves toward it. Each
        row is relaxed by what the box cannot give (its least ``G dq`` over the box minus its bound: the
        step brakes along it as hard as the limits allow), through the slack problem; if the rows still
        conflict with each other, every barrier row gets a penalized slack. In recovery (``recovering``)
        the same for a violated row the box forces further in this step (the arm still moving toward it).
        None if the box itself is empty, a violated row cannot move at all (no joint moves it: unrecoverable),
        or the slack problem fails too."""
        k = lay.barrier_upper.size
        if not k or self._limits_conflict(lay):
            return None
        lo, up = np.maximum(lay.lower, -INF), np.minimum(lay.upper, INF)
        deficit, r, worst = np.zeros(k), 0, (0.0, None, -1)
        for b in lay.barriers:
            least = np.minimum(b.G * lo, b.G * up).sum(axis=1)
            if np.any((b.upper < 0.0) & (least > -_MIN_RECOVERY_DISPLACEMENT) & (least <= _MIN_RECOVERY_DISPLACEMENT)):
                return None  # a violated row no step inside the box moves back, nor forward: no braking helps it
            gap = np.maximum(least - np.maximum(b.upper, 0.0), 0.0)  # a violated row's slack already gives -u
            deficit[r : r + b.size] = gap
            j = int(np.argmax(gap))
            if gap[j] > worst[0]:
                worst = (float(gap[j]), b, j)
            r += b.size
        s_max = np.maximum(-lay.barrier_upper, 0.0)
        s_max += deficit * (1.0 + 1e-6) + np.where(deficit > 0.0, 1e-9, 0.0)
        gap, b, j = worst
        label = (f"braking: barrier {b.name!r} row {b.row_names[j]!r} (h = {b.value[j]:.4g} m) cannot keep its "
                 f"braking bound within the joint limits; relaxed by {gap:.3g} m" if b is not None else
                 "braking: the barrier rows conflict with each other within the joint limits; penalized")
        for bound in (s_max, np.full(k, INF)):
            if self.qp_solver == "daqp":
                x, flag, iterations = self._slack.solve(self.H, self.c, lay, k, self.barrier_slack_penalty, bound)
                if x is not None:
                    self.braking_relaxations += 1
                    return OinkResult(self._clip_into_box(x, lay), True, f"{label} ({_daqp_status(flag)})",
                                      used_qp=True, qp_iterations=iterations, recovering=recovering)
            else:
                self._P.data[:] = self.H[self._P_rows, self._P_cols]
                res = self._slack.solve(self._P, self.c, lay.A_box, lay.lower_qp, lay.upper_qp, k,
                                        self.barrier_slack_penalty, bound)
                if res.x is not None and np.isfinite(res.x).all() and _osqp_solved(res):
                    self.braking_relaxations += 1
                    return OinkResult(self._clip_into_box(res.x, lay), True, f"{label} ({res.status})",
                                      used_qp=True, qp_iterations=res.iterations, recovering=recovering)
            self._slack.reset()
            label = "braking: the barrier rows conflict with each other within the joint limits; penalized"
        return None

    def _keeps_slack_rows(self, dq: np.ndarray, lay: QpLayout) -> bool:
        """Does dq (inside the box) satisfy the slack problem's rows within OSQP's eps_abs: the other
        limits, each barrier row that dq = 0 satisfies, and ``G dq <= 0`` for each violated one?"""
        bound = lay.d.copy()
        np.maximum(lay.barrier_upper, 0.0, out=bound[lay.barrier_rows])
        return bool(np.all(lay.K @ dq <= bound + self.osqp_settings["eps_abs"]))

    def _explain_infeasibility(self, lay: QpLayout) -> str:
        """Name a barrier row that no dq inside the box limits can satisfy, if any.

        The least ``G dq`` over the box is ``sum_j min(G_j lower_j, G_j upper_j)``; above the row's
        bound, the row alone makes the QP infeasible. A row violated at q (bound < 0; the slack
        problem relaxes it to ``G dq <= 0``) counts as unsatisfiable when the least value is also
        above -_MIN_RECOVERY_DISPLACEMENT: no step can move it back, so the robot cannot recover.
        """
        lo = np.maximum(lay.lower, -INF)
        up = np.minimum(lay.upper, INF)
        for b in lay.barriers:
            least = np.minimum(b.G * lo, b.G * up).sum(axis=1)
            stuck = least > np.maximum(b.upper, -_MIN_RECOVERY_DISPLACEMENT)
            if stuck.any():
                k = int(np.flatnonzero(stuck)[0])
                return (
                    f"; barrier {b.name!r} row {b.row_names[k]!r} cannot be satisfied within the joint limits "
                    f"(h = {b.value[k]:.4g} m): {b.row_hint(k)}"
                )
        return ""


def _set_compiled_box(q: np.ndarray, ca: CompiledAssembly) -> bool:
    """Hand the box limits' bounds at q to the kernel; False if one of them no longer is a box."""
    for k, lim in enumerate(ca.box):
        G, lower, upper = lim.bounds(q)
        if G is not None:
            return False
        ca.set_box_bounds(k, lower, upper)
    return True


def _osqp_solved(res: OsqpResult) -> bool:
    """OSQP solved (possibly inaccurately) with a finite solution."""
    return res.status_val in _OSQP_SOLVED and res.x is not None and np.isfinite(res.x).all()
