"""CollisionBarrier: keep the closest collision pairs (robot x robot, robot x obstacles) at least d_min apart."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pinocchio as pin

from ...model.closest_pairs import ClosestPairs
from ...errors import check_positive
from .barrier import Barrier

if TYPE_CHECKING:
    from ..solver import Oink


class CollisionBarrier(Barrier):
    """One row per tracked pair: ``h_i = d_i - d_min`` with d_i the signed distance of the pair.

    ``pairs`` chooses the pairs: ``"self"`` (the robot's own, after the SRDF), ``"obstacles"`` (robot
    links and attached objects against the scene's obstacles, see :class:`CollisionWorld`) or
    ``"all"``. An obstacle fixed in the world has no Jacobian of its own (joint 0 moves with no
    velocity); one attached to a link moves with that link's joint, like the link's own geometry.
    Obstacles added, moved or removed at run time are picked up at the next update.

    The ``n_collision_pairs`` closest pairs are re-selected at every update (exactly, with a
    bounding-sphere broad phase; pairs farther than ``broad_phase_cutoff`` are not evaluated and
    their rows stay unused). With n the unit vector from witness point 1 to witness point 2 and r_k
    the lever arm from joint k's origin to its witness point (world frame), the derivative of the
    distance is ``dh/dq = n^T J2_lin + (r2 x n)^T J2_ang - n^T J1_lin - (r1 x n)^T J1_ang`` with
    LOCAL_WORLD_ALIGNED joint Jacobians (checked against finite differences in the tests). A row
    whose witness points coincide (normal undefined) is zeroed.

    Args:
        n_collision_pairs: pairs constrained per step (``pairs="self"``: <= collision pairs after the SRDF).
        d_min: minimum distance [m].
        broad_phase_cutoff: pairs whose lower-bound distance exceeds this [m] are skipped; it must
            exceed d_min plus the largest approach of two bodies in one step.
    """

    needs_geometry = True

    def __init__(
        self,
        oink: Oink,
        n_collision_pairs: int,
        dt: float,
        d_min: float = 0.02,
        gain: float = 1.0,
        safe_displacement_gain: float = 1.0,
        safety_margin: float = 0.0,
        broad_phase_cutoff: float = 0.2,
        name: str = "self_collision",
        pairs: str = "self",
    ) -> None:
        self.pairs = ClosestPairs(oink.scene, n_collision_pairs, broad_phase_cutoff, pairs)
        super().__init__(oink, n_collision_pairs, dt, gain, safe_displacement_gain, safety_margin, name)
        self.d_min = check_positive(d_min, f"{name}.d_min", allow_zero=True)
        model = oink.scene.model
        self._pair_joints()
        self._active_pairs = np.zeros(0, dtype=int)
        # support[j, v] = 1 where velocity v moves joint j (the universe, j = 0, has none); group columns
        support = np.array([oink.scene.support_mask(j) for j in range(model.njoints)])
        self._columns = oink.group.v_columns
        self._support = support[:, self._columns]
        self._data: pin.Data | None = None  # whose world-frame joint Jacobians (data.J) self._J views

    def _pair_joints(self) -> None:
        """Parent joint of each pair's geometries (after the pairs' tables were (re)built)."""
        gm = self.oink.scene.collision_model
        joint_of = {int(g): gm.geometryObjects[int(g)].parentJoint for g in self.pairs.geometries}
        self._joint1 = np.array([joint_of[int(g)] for g in self.pairs.first], dtype=int)
        self._joint2 = np.array([joint_of[int(g)] for g in self.pairs.second], dtype=int)

    def update(self, q: np.ndarray, data: pin.Data, geom_data: pin.GeometryData) -> None:
        if self.pairs.refresh():  # obstacles changed (the solver's geom_data already follows)
            self._pair_joints()
        res = self.pairs.query(data, geom_data)
        k = res.count
        self.value[:k] = res.distance[:k]
        self.value[:k] -= self.d_min
        self.value[k:] = np.inf
        self.jacobian[k:] = 0.0
        if k:
            self._distance_jacobian(data, res.pair_index[:k], res.point1[:k], res.point2[:k], res.normal[:k])
        self.row_names[:k] = [self.pairs.pair_name(i) for i in res.pair_index[:k]]
        self.row_names[k:] = ["(no pair within the broad-phase cutoff)"] * (self.size - k)
        self._active_pairs = res.pair_index[:k].copy()

    def _distance_jacobian(self, data: pin.Data, pairs, p1, p2, normal) -> None:
        """Rows [:k] of the Jacobian: ``n^T dp2/dq - n^T dp1/dq`` with dp/dq of a point fixed to its
        joint = ``J_lin + J_ang x p`` over the joint's support, from pinocchio's world-frame joint
        Jacobians (data.J): ``n^T (J_lin + J_ang x p) = n^T J_lin + (p x n)^T J_ang``. This equals the
        formula in the class docstring (there r = p - joint origin, with LOCAL_WORLD_ALIGNED Jacobians)."""
        if data is not self._data:
            self._J, self._data = data.J, data  # a view: it follows every later kinematics call
        J = self._J[:, self._columns]
        n_lin = normal @ J[:3]  # (k, nv): n^T J_lin, the same for both points
        row2 = _cross(p2, normal) @ J[3:]
        row2 += n_lin
        row2 *= self._support[self._joint2[pairs]]
        row1 = _cross(p1, normal) @ J[3:]
        row1 += n_lin
        row1 *= self._support[self._joint1[pairs]]
        np.subtract(row2, row1, out=self.jacobian[: len(pairs)])

    def evaluate(self, data: pin.Data, geom_data: pin.GeometryData) -> np.ndarray:
        h = np.full(self.size, np.inf)
        for row, k in enumerate(self._active_pairs):
            h[row] = self.pairs.distance(geom_data, int(k)).min_distance - self.d_min
        return h


SelfCollisionBarrier = CollisionBarrier  # the name of the pairs="self" barrier before obstacles existed


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise a x b of (k, 3) arrays: the outer products a_j b_k contracted with the Levi-Civita
    symbol (two numpy calls; np.cross, or indexing columns, costs several times more at these sizes)."""
    return (a[:, :, None] * b[:, None, :]).reshape(len(a), 9) @ _LEVI_CIVITA


_LEVI_CIVITA = np.zeros((9, 3))  # [3 j + k, i] = epsilon_ijk, so that (a x b)_i = sum_jk epsilon_ijk a_j b_k
for _i, _j, _k in ((0, 1, 2), (1, 2, 0), (2, 0, 1)):
    _LEVI_CIVITA[3 * _j + _k, _i], _LEVI_CIVITA[3 * _k + _j, _i] = 1.0, -1.0
