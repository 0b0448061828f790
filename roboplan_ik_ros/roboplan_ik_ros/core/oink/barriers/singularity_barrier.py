"""SingularityBarrier: keep a frame's Jacobian away from singular, by its smallest singular value.

One row, ``h(q) = sigma_min(J(q)) - sigma_min_allowed`` with J the frame's 6 x n Jacobian over the
group (LOCAL: the frame's origin and axes; its singular values equal those of LOCAL_WORLD_ALIGNED,
which differs by a rotation of both blocks). sigma_min is in the Jacobian's mixed units (m/rad for
the linear rows, rad/rad for the angular ones), like the manipulability of Yoshikawa. As every barrier
row, it bounds only the approach: a step that increases sigma_min (moving away from the singular
configuration) is never restricted, so an arm that starts near or at a singularity can always leave
it (Servo instead halts above its hard threshold).

Gradient (no finite differences, no kinematic Hessian): with ``J = U S V^T`` and (u, v) the singular
vectors of sigma_min, ``d sigma_min / dq_i = u^T (dJ/dq_i) v``, and in the body frame of the tip the
columns of a serial chain obey ``dJ_j / dq_i = ad(J_j) J_i`` for j < i (0 for j >= i), ad the motion
cross product. So ``d sigma_min / dq_i = (sum_{j<i} v_j ad(J_j)^T u) . J_i``: one cumulative sum over
the columns. Checked against finite differences in the tests. At a repeated smallest singular value the
gradient is that of one of them (sigma_min is not differentiable there); the barrier stays valid.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin

from ...errors import Range, check_positive
from ...keys import key
from ..kind import BuildContext, register
from .barrier import Barrier, BarrierConfig

if TYPE_CHECKING:
    from ..robot import Robot


@dataclass
class SingularityBarrierConfig(BarrierConfig):
    """``type: singularity``: the frame's Jacobian keeps its smallest singular value >= sigma_min."""

    # no safe-displacement term unless asked: its weight r / |dh/dq|^2 grows without bound where sigma_min is
    # flat (|dh/dq| ~ 0.01-0.1), which would damp every motion far from a singularity
    safe_displacement_gain: float = key(0.0, range=Range(), runtime="safe-displacement regularization gain")
    frame: str = key("")
    sigma_min: float = key(0.02)  # the smallest singular value allowed (mixed units: see the module docstring)


def build_singularity_barrier(config: SingularityBarrierConfig, context: BuildContext) -> SingularityBarrier:
    return SingularityBarrier(context.robot, config.frame, context.dt, config.sigma_min, **config.barrier_keys())


class SingularityBarrier(Barrier):
    """``h = sigma_min(J_frame) - sigma_min_allowed`` (one row).

    Args:
        frame: the frame whose Jacobian must stay regular (the tool).
        sigma_min: the smallest singular value allowed (mixed units, see the module docstring). For
            the Panda's hand: 0.22 at the SRDF's default pose, 0.005 with the elbow almost straight.
    """

    option_defaults = {"safe_displacement_gain": SingularityBarrierConfig.safe_displacement_gain}  # the kind's YAML default: 0

    def __init__(
        self,
        robot: Robot,
        frame: str,
        dt: float,
        sigma_min: float = 0.02,
        name: str | None = None,
        **options: Any,
    ) -> None:
        name = name or f"{frame}_singularity"
        super().__init__(robot, 1, dt, name, **options)
        self.frame = frame
        self.frame_id = robot.scene.frame_id(frame)
        self.sigma_min_allowed = check_positive(sigma_min, f"{name}.sigma_min")
        self.row_names = ["sigma_min"]
        self._columns = robot.group.v_columns
        self.sigma = np.zeros(min(6, robot.nv))  # singular values at the last update, largest first
        self._evaluated = np.zeros(1)

    def _jacobian(self, data: pin.Data) -> np.ndarray:
        """The frame's LOCAL Jacobian over the group's columns (data holds joint Jacobians)."""
        J = pin.getFrameJacobian(self.scene.model, data, self.frame_id, pin.LOCAL)
        return J[:, self._columns]

    def update(self, q: np.ndarray, data: pin.Data, geom_data: pin.GeometryData) -> None:
        J = self._jacobian(data)
        U, S, Vt = np.linalg.svd(J, full_matrices=False)
        self.sigma[:] = S[: self.sigma.size]
        self.value[0] = S[-1] - self.sigma_min_allowed
        self.jacobian[0] = sigma_min_gradient(J, U[:, -1], Vt[-1])

    def evaluate(self, data: pin.Data, geom_data: pin.GeometryData) -> np.ndarray:
        # data holds placements at the checked configuration (not its Jacobians): compute them from those
        pin.computeJointJacobians(self.scene.model, data)
        self._evaluated[0] = np.linalg.svd(self._jacobian(data), compute_uv=False)[-1] - self.sigma_min_allowed
        return self._evaluated


def sigma_min_gradient(J_local: np.ndarray, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """d sigma / dq over the columns of a serial chain's body-frame Jacobian ``J_local`` (6 x n,
    pinocchio order: linear rows first), for the singular value with left/right vectors u (6), v (n)."""
    lin, ang = J_local[:3].T, J_local[3:].T  # (n, 3): v_j, w_j of each column
    u_lin, u_ang = u[:3], u[3:]
    # ad(J_j)^T u = [u_lin x w_j ; u_lin x v_j + u_ang x w_j]  (ad(V) = [[w^, v^], [0, w^]])
    g = np.empty((J_local.shape[1], 6))
    g[:, :3] = np.cross(u_lin, ang)
    g[:, 3:] = np.cross(u_lin, lin) + np.cross(u_ang, ang)
    g *= v[:, None]
    c = np.cumsum(g, axis=0)
    c[1:] = c[:-1].copy()  # exclusive: sum over j < i
    c[0] = 0.0
    return np.einsum("ik,ki->i", c, J_local)


register("barriers", "singularity", SingularityBarrierConfig, build_singularity_barrier)
