"""The n closest collision pairs, exactly, with a bounding-sphere broad phase.

Every geometry gets a bounding sphere (centre and radius of its local AABB). For a pair, the
distance between the spheres minus both radii is a lower bound of the true distance. Pairs are
visited in increasing lower bound; the narrow phase (coal, through pinocchio) runs only while a
pair could still be among the n closest and its lower bound is within ``cutoff``. The result is
the same set as querying every pair (for the pairs within the cutoff), at a fraction of the cost.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from ..errors import InvalidInputError, check_positive
from .scene import Scene


@dataclass
class PairDistances:
    """Result buffers, reused between queries. Rows ``[:count]`` are valid, sorted by distance."""

    pair_index: np.ndarray  # (n,) index into collision_model.collisionPairs
    distance: np.ndarray  # (n,) signed distance [m]
    point1: np.ndarray  # (n, 3) witness point on the first geometry, world frame [m]
    point2: np.ndarray  # (n, 3) witness point on the second geometry, world frame [m]
    normal: np.ndarray  # (n, 3) unit normal from geometry 1 to geometry 2 (0 when undefined)
    count: int = 0


class ClosestPairs:
    """Query the ``n`` closest active collision pairs of ``scene``.

    Args:
        scene: the scene whose collision model is queried.
        n: number of pairs wanted (<= number of collision pairs).
        cutoff: pairs whose lower-bound distance exceeds this [m] are never evaluated (inf: all may be).
    """

    def __init__(self, scene: Scene, n: int, cutoff: float = np.inf) -> None:
        gm = scene.collision_model
        npairs = len(gm.collisionPairs)
        if not isinstance(n, (int, np.integer)) or not 1 <= n <= npairs:
            raise InvalidInputError(
                f"n_collision_pairs: expected an integer in [1, {npairs}] (the collision pairs left "
                f"after the SRDF's disabled pairs), got {n!r}"
            )
        self.cutoff = check_positive(cutoff, "broad_phase_cutoff", allow_inf=True)
        self.scene = scene
        self.n = int(n)
        # geometryObjects[i] copies the object (meshes included) in pinocchio's Python API: read once.
        geometry_names = [g.name for g in gm.geometryObjects]
        self.first = np.array([p.first for p in gm.collisionPairs], dtype=int)
        self.second = np.array([p.second for p in gm.collisionPairs], dtype=int)
        self.geometries = np.unique(np.concatenate([self.first, self.second]))
        self._pair_names = [f"{geometry_names[a]} <-> {geometry_names[b]}" for a, b in zip(self.first, self.second)]
        slot = {g: k for k, g in enumerate(self.geometries)}
        self._slot1 = np.array([slot[g] for g in self.first])
        self._slot2 = np.array([slot[g] for g in self.second])
        centers, radii, parents = [], [], []
        for g in self.geometries:
            obj = gm.geometryObjects[int(g)]
            obj.geometry.computeLocalAABB()
            box = obj.geometry.aabb_local
            lo, hi = np.array(box.min_), np.array(box.max_)
            centers.append(obj.placement.act((lo + hi) / 2))  # sphere centre in the parent joint frame
            radii.append(np.linalg.norm(hi - lo) / 2)
            parents.append(obj.parentJoint)
        self._joints = np.unique(parents)  # joints that carry geometry
        self._joint_slot = np.searchsorted(self._joints, parents)
        self._center_joint = np.array(centers)  # (ngeom, 3)
        self._radius_sum = np.array(radii)[self._slot1] + np.array(radii)[self._slot2]
        self._data: pin.Data | None = None  # whose joint placements the views below follow
        self.result = PairDistances(
            np.zeros(n, dtype=int), np.zeros(n), np.zeros((n, 3)), np.zeros((n, 3)), np.zeros((n, 3))
        )
        self.narrow_phase_calls = 0  # of the last query

    def lower_bounds(self, data: pin.Data) -> np.ndarray:
        """Per-pair lower bound of the distance [m]; needs forward kinematics in ``data``."""
        if data is not self._data:  # views of data.oMi[j]: they follow every later kinematics call
            self._R_views = [data.oMi[int(j)].rotation for j in self._joints]
            self._t_views = [data.oMi[int(j)].translation for j in self._joints]
            self._data = data
        slot = self._joint_slot  # one placement per joint carrying geometry, spread to its geometries
        cw = np.matmul(np.array(self._R_views)[slot], self._center_joint[:, :, None])[:, :, 0]
        cw += np.array(self._t_views)[slot]  # sphere centres in the world frame, (ngeom, 3)
        gap = cw[self._slot1]
        gap -= cw[self._slot2]
        gap *= gap
        bound = np.sqrt(gap.sum(axis=1))
        bound -= self._radius_sum
        return bound

    def query(self, data: pin.Data, geom_data: pin.GeometryData) -> PairDistances:
        """Fill and return :attr:`result`; call after ``pin.updateGeometryPlacements``."""
        gm = self.scene.collision_model
        lb = self.lower_bounds(data)
        order = np.argsort(lb)
        found_d: list[float] = []
        found: list[tuple[int, float, np.ndarray, np.ndarray, np.ndarray]] = []
        calls = 0
        for k in order:
            bound = lb[k]
            if bound > self.cutoff:
                break
            if len(found) >= self.n and bound >= max(found_d):
                break
            res = pin.computeDistance(gm, geom_data, int(k))
            calls += 1
            d = res.min_distance
            if len(found) >= self.n:  # replace the current farthest
                worst = found_d.index(max(found_d))
                if d >= found_d[worst]:
                    continue
                del found_d[worst], found[worst]
            p1, p2 = np.array(res.getNearestPoint1()), np.array(res.getNearestPoint2())
            found_d.append(d)
            found.append((int(k), d, p1, p2, _unit_normal(d, p1, p2, np.array(res.normal))))
        self.narrow_phase_calls = calls
        out = self.result
        found.sort(key=lambda item: item[1])
        out.count = len(found)
        for row, (k, d, p1, p2, nrm) in enumerate(found):
            out.pair_index[row], out.distance[row] = k, d
            out.point1[row], out.point2[row], out.normal[row] = p1, p2, nrm
        return out

    def pair_name(self, pair_index: int) -> str:
        """"geometry1 <-> geometry2" of a collision pair."""
        return self._pair_names[pair_index]


def _unit_normal(d: float, p1: np.ndarray, p2: np.ndarray, coal_normal: np.ndarray) -> np.ndarray:
    """Unit vector along which the distance grows when geometry 2 moves (0 if undefined).

    Separated: (p2 - p1) / |p2 - p1|. Penetrating: coal's normal (from geometry 1 to 2) when it is
    a unit vector. Witness points that coincide leave the normal undefined: zero.
    """
    delta = p2 - p1
    norm = math.sqrt(float(delta @ delta))  # np.linalg.norm costs ~8x more on a 3-vector
    if d > 0 and norm > 1e-9:
        delta /= norm
        return delta
    cn = math.sqrt(float(coal_normal @ coal_normal))
    if d <= 0 and abs(cn - 1.0) < 1e-6:
        return coal_normal
    return np.zeros(3)
