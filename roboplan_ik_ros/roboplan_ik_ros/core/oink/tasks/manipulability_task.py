"""ManipulabilityTask: raise the manipulability of a frame's Jacobian at a rate (pink's ManipulabilityTask).

Yoshikawa's manipulability of the frame's Jacobian J over the group's joints (LOCAL; the same value in
any frame attached to the frame, the axes only rotate both blocks), restricted to its ``axes``:

    m(q) = sqrt(det(J_a J_a^T)),   J_a = the rows of J that ``axes`` selects (6, or 3 for position or
                                   orientation only; the group needs at least as many joints)

m is 0 at a singular configuration and grows as the frame gets equally mobile in every direction; its
unit is that of the product of J_a's singular values (m^3 for ``all`` and ``position``, 1 for
``orientation``). The task has one row: it asks m to grow by ``rate * dt`` per step,

    error = rate * dt,   Jacobian = -dm/dq,

so that the QP's ``J dq = -alpha e`` reads ``dm/dq dq = alpha rate dt`` (the sign convention of
:class:`Task`: J = -d(measured)/dq). It has no target: it never stops asking. Where m has a maximum
(over the joints it acts on: with a frame task above it, over the self-motion that keeps the frame's
pose), the gradient vanishes and the least-squares step ``rate dt / |dm/dq|`` would grow without bound and
make the arm dither around the maximum. The task's Levenberg-Marquardt damping (``lm_damping``,
mu = lm_damping ||W alpha e||^2) bounds it: the step it asks for is at most ``1 / (2 sqrt(lm_damping))``
[rad], and near the maximum it becomes a gradient step ``dq = grad / (lm_damping alpha rate dt)`` that
settles there. Its default, 2.5e5, caps the step at 1 mrad (0.5 rad/s at 500 Hz); as for every task, mu
damps the whole step (0.01 for cost 1, rate 0.1 and dt 2 ms).

Gradient (no finite differences, no kinematic Hessian): with J_a = U S V^T, m = prod(S) and
``dm/dq_i = <B, dJ_a/dq_i>`` with ``B = U diag(c) V^T``, ``c_k = prod_{l != k} S_l`` (which equals
``m (J_a J_a^T)^-1 J_a`` where J_a is regular, and stays defined at a singularity, where the gradient is
what leaves it). In the body frame of a serial chain ``dJ_j/dq_i = ad(J_j) J_i`` for joints j before i
(0 otherwise), so ``dm/dq_i = (sum_{j<i} ad(J_j)^T B_j) . J_i``: one cumulative sum over the columns (the
singularity barrier's gradient with B = u v^T), taken in the model's joint order (parents first).
Checked against finite differences in the tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin

from ...errors import InvalidInputError, Range
from ...ranges import check_key
from ...keys import key
from ..kind import BuildContext, register
from .task import Task, TaskConfig

if TYPE_CHECKING:
    from ..robot import Robot

AXES = {"all": slice(0, 6), "position": slice(0, 3), "orientation": slice(3, 6)}


def _bracket_tensor() -> np.ndarray:
    """T (6 x 36) with ``ad(V)^T b = T vec(b V^T)`` for twists V = (v, w), b = (b_lin, b_ang) (pinocchio order):
    ad(V)^T b = [b_lin x w ; b_lin x v + b_ang x w]."""
    eps = np.zeros((3, 3, 3))  # Levi-Civita: (x cross y)_i = eps_ijk x_j y_k
    eps[0, 1, 2] = eps[1, 2, 0] = eps[2, 0, 1] = 1.0
    eps[0, 2, 1] = eps[2, 1, 0] = eps[1, 0, 2] = -1.0
    T = np.zeros((6, 6, 6))  # [row of the result, entry of b, entry of V]
    T[:3, :3, 3:] = eps  # b_lin x w
    T[3:, :3, :3] = eps  # b_lin x v
    T[3:, 3:, 3:] = eps  # b_ang x w
    return T.reshape(6, 36)


_BRACKET = _bracket_tensor()


@dataclass
class ManipulabilityTaskConfig(TaskConfig):
    """``type: manipulability``: raise the manipulability of a frame's Jacobian by ``rate`` per second."""

    # the asked step is at most 1 / (2 sqrt(lm_damping)) [rad]: 1 mrad (module docstring)
    lm_damping: float = key(2.5e5, range=Range(), runtime="Levenberg-Marquardt damping factor")
    frame: str = key("")
    cost: float = key(1.0, range=Range(unit="cost"), runtime="weight of the manipulability row")
    rate: float = key(0.1, range=Range(unit="manipulability/s"), runtime="asked increase of the manipulability")
    axes: str = key("all")  # "all" (the 6 x n Jacobian), "position" (its linear rows) or "orientation"

    def validate(self, path: str) -> None:
        super().validate(path)
        if not self.frame:
            raise InvalidInputError(f"{path}.frame: required for a manipulability task")
        if self.axes not in AXES:
            raise InvalidInputError(f"{path}.axes: unknown axes {self.axes!r}; valid: {', '.join(AXES)}")


def build_manipulability_task(config: ManipulabilityTaskConfig, context: BuildContext) -> ManipulabilityTask:
    return ManipulabilityTask(context.robot, config.frame, context.dt, cost=config.cost, rate=config.rate,
                              axes=config.axes, task_gain=config.task_gain, lm_damping=config.lm_damping,
                              priority=config.priority, name=config.name)


class ManipulabilityTask(Task):
    """One row: ``error = rate * dt``, ``jacobian = -dm/dq`` (module docstring); W = sqrt(cost).

    Args:
        frame: the frame whose Jacobian's manipulability is raised (the tool).
        dt: control period [s].
        cost: [cost] weight of the row (per unit of m squared).
        rate: asked increase of m per second [m's unit/s]; 0 asks for nothing.
        axes: "all", "position" or "orientation": the rows of the frame's Jacobian m is taken of.
    """

    def __init__(
        self,
        robot: Robot,
        frame: str,
        dt: float,
        cost: float = 1.0,
        rate: float = 0.1,
        axes: str = "all",
        task_gain: float = 1.0,
        lm_damping: float = 2.5e5,
        priority: int = 1,
        name: str | None = None,
    ) -> None:
        name = name or f"{frame}_manipulability"
        super().__init__(robot, 1, task_gain, lm_damping, priority, name)
        if axes not in AXES:
            raise InvalidInputError(f"{name}.axes: unknown axes {axes!r}; valid: {', '.join(AXES)}")
        self.rows = AXES[axes]
        n_rows = self.rows.stop - self.rows.start
        if robot.nv < n_rows:
            raise InvalidInputError(
                f"{name}.axes: {axes!r} takes the manipulability of {n_rows} rows, which is 0 everywhere with the "
                f"{robot.nv} joints of group {robot.group.name!r}; expected at least {n_rows} joints (or axes "
                f"'position' / 'orientation')")
        self.frame = frame
        self.frame_id = robot.scene.frame_id(frame)
        self.axes = axes
        self.dt = float(dt)
        self.sqrt_weight[0] = np.sqrt(check_key(cost, "tasks[manipulability].cost", f"{name}.cost"))
        self.rate = check_key(rate, "tasks[manipulability].rate", f"{name}.rate")
        # the group's columns in the model's joint order (a parent before its children): the bracket formula's
        # "j before i"; _order maps them back to the group's order
        v = robot.group.v_indices
        order = np.argsort(v, kind="stable")
        self._columns = _as_slice(v[order])
        self._order = None if np.array_equal(order, np.arange(len(v))) else order
        self.measured = np.zeros(1)  # m at the last update
        self.singular_values = np.zeros(n_rows)  # of J_a at the last update, largest first
        n = robot.nv
        self._B = np.zeros((6, n))  # dm/dJ (zero outside the selected rows)
        self._bracket = np.zeros((n, 6))  # ad(J_j)^T B_j, then its cumulative sum over the columns
        self._gradient = np.zeros(n)
        self._outer = np.zeros((n, 6, 6))  # B_j J_j^T per column
        self._cofactor = np.ones((n_rows, n_rows))  # row k: the singular values with S_k replaced by 1

    def update(self, q: np.ndarray, data: pin.Data) -> None:
        J = pin.getFrameJacobian(self.scene.model, data, self.frame_id, pin.LOCAL)[:, self._columns]
        m, gradient = self._value_and_gradient(J)
        self.measured[0] = m
        if self._order is None:
            np.negative(gradient, out=self.jacobian[0])
        else:
            self.jacobian[0, self._order] = -gradient
        self.error[0] = self.rate * self.dt

    def _value_and_gradient(self, J: np.ndarray) -> tuple[float, np.ndarray]:
        """m and dm/dq over the columns of the body-frame Jacobian J (6 x n, parents first)."""
        U, S, Vt = np.linalg.svd(J[self.rows], full_matrices=False)
        self.singular_values[:] = S
        cofactor = self._cofactor
        cofactor[:] = S
        np.fill_diagonal(cofactor, 1.0)
        c = cofactor.prod(axis=1)  # c_k = prod_{l != k} S_l
        B = self._B
        B[self.rows] = (U * c) @ Vt
        # ad(J_j)^T B_j = [b_lin x w_j ; b_lin x v_j + b_ang x w_j]  (ad(V) = [[w^, v^], [0, w^]]), bilinear in
        # (B_j, J_j): per column, _BRACKET (6 x 36) times the outer product B_j J_j^T (two calls, no allocation)
        g = self._bracket
        np.multiply(B.T[:, :, None], J.T[:, None, :], out=self._outer)
        np.dot(self._outer.reshape(len(g), 36), _BRACKET.T, out=g)
        np.cumsum(g, axis=0, out=g)  # row i: the sum over j <= i; column i takes the sum over j < i
        np.einsum("ik,ki->i", g[:-1], J[:, 1:], out=self._gradient[1:])
        self._gradient[0] = 0.0
        return float(S.prod()), self._gradient

    @property
    def manipulability(self) -> float:
        """m at the last update [m's unit]."""
        return float(self.measured[0])

    def set_parameter(self, name: str, value: Any) -> None:
        if name == "cost":
            self.sqrt_weight[0] = np.sqrt(float(value))
        else:
            super().set_parameter(name, value)


def _as_slice(idx: np.ndarray) -> slice | np.ndarray:
    """Contiguous increasing indices as a slice (indexing with it is a view), others unchanged."""
    if len(idx) and np.array_equal(idx, np.arange(idx[0], idx[0] + len(idx))):
        return slice(int(idx[0]), int(idx[0]) + len(idx))
    return idx


register("tasks", "manipulability", ManipulabilityTaskConfig, build_manipulability_task)
