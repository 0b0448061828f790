"""Null-space terms of SimpleIK for redundant arms (the Robotics Toolbox notebook's q_null, after Baur):
joint-limit avoidance and manipulability maximisation, projected into the null space of the task
Jacobian so that they do not disturb the pose error's step.

``q_null = (I - J^+ J) (k_sigma Sigma(q) + k_m grad m(q))`` with, per joint i (``d_lo = q_i - lo_i``,
``d_hi = hi_i - q_i``, influence distance ``pi``, minimum approach ``ps`` [rad or m]):

* ``Sigma_i = (d_lo - pi)^2 / (ps - pi)^2`` when ``d_lo <= pi`` (away from the lower limit),
  ``-(d_hi - pi)^2 / (ps - pi)^2`` when ``d_hi <= pi`` (the upper one wins if both), 0 otherwise;
* ``m(q) = sqrt(det(J J^T))`` of the tip's 6 x n Jacobian (the same in any frame attached to the
  tip and for LOCAL, WORLD or LOCAL_WORLD_ALIGNED axes: they differ by factors of determinant 1), and
  ``d m / d q_i = m tr((J J^T)^-1 dJ/dq_i J^T)`` with the spatial (WORLD) Jacobian, whose column j
  depends on joint i only when i is a strict ancestor of j: ``dS_j/dq_i = [S_i, S_j]`` (the
  motion cross product ``(w_i x v_j + v_i x w_j, w_i x w_j)``).

The gains multiply (the notebook divides by its lambda_Sigma, lambda_m: gain = 1 / lambda). Both terms
need a group of one-degree-of-freedom joints (the bracket formula is per joint); continuous joints
(q as cos, sin; one velocity) are such joints: Sigma is 0 for them (no limit to avoid).
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from ..errors import InvalidInputError
from ..model.joint_group import JointGroup


def joint_limit_gradient(x: np.ndarray, lo: np.ndarray, hi: np.ndarray, ps: float, pi: float) -> np.ndarray:
    """Sigma(x) [1] per joint of the group (x, lo, hi in the group's v order; infinite limits give 0)."""
    d_lo, d_hi = x - lo, hi - x
    scale = 1.0 / (ps - pi) ** 2
    g = np.where(d_lo <= pi, (d_lo - pi) ** 2 * scale, 0.0)
    return np.where(d_hi <= pi, -(d_hi - pi) ** 2 * scale, g)


class Manipulability:
    """m(q) and its gradient for the group's columns of a frame's Jacobian (ancestry resolved once)."""

    def __init__(self, model: pin.Model, group: JointGroup) -> None:
        ids = [int(j) for j in group.joint_ids]
        if any(model.joints[j].nv != 1 for j in ids):
            raise InvalidInputError("manipulability_gain: needs a group of one-degree-of-freedom joints; group "
                                    f"{group.name!r} has {[model.names[j] for j in ids if model.joints[j].nv != 1]}")
        # ancestor[i, j] = 1.0 if the joint of column i is a strict ancestor of the joint of column j
        self.ancestor = np.array([[1.0 if i != j and i_id in model.supports[j_id] else 0.0
                                   for j, j_id in enumerate(ids)] for i, i_id in enumerate(ids)])

    def value_and_gradient(self, J_world: np.ndarray) -> tuple[float, np.ndarray]:
        """(m, dm/dq) from the group's columns of the WORLD-frame Jacobian (6 x n) of the frame."""
        A = J_world @ J_world.T
        det = np.linalg.det(A)
        if det <= 0.0:  # singular (or fewer than 6 joints): no gradient to follow
            return 0.0, np.zeros(J_world.shape[1])
        m = float(np.sqrt(det))
        P = np.linalg.solve(A, J_world)  # (J J^T)^-1 J, 6 x n
        v, w = J_world[:3], J_world[3:]
        # bracket[:, i, j] = [S_i, S_j] = (w_i x v_j + v_i x w_j, w_i x w_j)
        wi, vi = w[:, :, None], v[:, :, None]
        wj, vj = w[:, None, :], v[:, None, :]
        lin = np.cross(wi, vj, axis=0) + np.cross(vi, wj, axis=0)
        ang = np.cross(wi, wj, axis=0)
        # dm/dq_i = m sum_j ancestor[i, j] <[S_i, S_j], P[:, j]>
        inner = np.einsum("kij,kj->ij", lin, P[:3]) + np.einsum("kij,kj->ij", ang, P[3:])
        return m, m * (self.ancestor * inner).sum(axis=1)


def project_into_null_space(J: np.ndarray, g: np.ndarray) -> np.ndarray:
    """(I - J^+ J) g: the part of g that leaves J g unchanged (J^+ by SVD, singular values below 1e-10
    of the largest cut)."""
    return g - np.linalg.pinv(J, 1e-10) @ (J @ g)
