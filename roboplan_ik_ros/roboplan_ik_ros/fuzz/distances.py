"""The fuzzer's own distances: coal (through pinocchio's ``computeDistance``) on the scene's collision
geometry, with a GeometryData of its own. Not the collision barriers' code (``core/model/closest_pairs.py``,
the compiled kernel): every pair of the scene's collision model is measured, not the barrier's closest few.

Pairs fall in three classes, each checked against its barrier's d_min: ``self`` (two robot geometries),
``obstacles`` (a robot geometry and an obstacle), ``perceived`` (a robot geometry and the perceived cloud's
octree). A pair whose bounding spheres are farther apart than its class's d_min + ``BROAD_MARGIN`` cannot be
below d_min and is not measured (a sound skip: the spheres enclose the geometries' local AABBs).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

CLASSES = ("self", "obstacles", "perceived")
BROAD_MARGIN = 0.05  # [m] pairs whose bounding spheres are this much beyond d_min are not measured


@dataclass
class Closest:
    """The pair of one class with the least margin d - floor (floor: the pair's allowed minimum)."""

    pair_class: str
    margin: float  # [m] d - floor, inf when no pair was measured
    distance: float  # [m]
    floor: float  # [m]
    pair: str  # "geometry_a x geometry_b"


def _bounding_sphere(geometry) -> tuple[np.ndarray, float]:
    """(centre in the geometry's frame, radius) enclosing its local AABB; (0, inf) if it has none."""
    try:
        geometry.computeLocalAABB()
        box = geometry.aabb_local
        lo, hi = np.array(box.min_), np.array(box.max_)
        if np.isfinite(lo).all() and np.isfinite(hi).all():
            return (lo + hi) / 2.0, float(np.linalg.norm(hi - lo) / 2.0)
    except Exception:  # noqa: BLE001 - a geometry without an AABB is always measured
        pass
    return np.zeros(3), np.inf


class DistanceOracle:
    """Distances of every collision pair of ``scene`` (as it is now) at a configuration q.

    ``d_min``: class -> the barrier's d_min (a class without a barrier is not measured). ``floors_at``: the
    configuration whose distances lower each pair's floor: floor = min(d_min, d(floors_at)) - ``tolerance``
    (a pair that starts inside d_min may not get closer than it starts; the barrier recovers from there).
    Rebuild it after the scene's obstacles change."""

    def __init__(self, scene, d_min: dict[str, float], tolerance: float, floors_at: np.ndarray | None = None) -> None:
        self.scene, self.tolerance = scene, float(tolerance)
        gm = scene.collision_model
        self._gm = gm
        self._data, self._gdata = scene.model.createData(), pin.GeometryData(gm)
        n_robot = scene.world.n_robot_geometries
        perceived = set(scene.world.perceived_geometries())
        names = [gm.geometryObjects[i].name for i in range(gm.ngeoms)]
        pairs, classes = [], []
        for k, p in enumerate(gm.collisionPairs):
            a, b = int(p.first), int(p.second)
            if a >= n_robot and b >= n_robot:
                continue  # an attached object x an obstacle: not the robot's distance
            c = ("self" if b < n_robot and a < n_robot
                 else "perceived" if (a in perceived or b in perceived) else "obstacles")
            if c in d_min:
                pairs.append((k, a, b))
                classes.append(c)
        self.pairs, self.classes = pairs, classes
        self.names = [f"{names[a]} x {names[b]}" for _, a, b in pairs]
        spheres = [_bounding_sphere(gm.geometryObjects[i].geometry) for i in range(gm.ngeoms)]
        self._centre = np.array([s[0] for s in spheres]).reshape(-1, 3)
        self._radius = np.array([s[1] for s in spheres])
        self._a = np.array([a for _, a, _ in pairs], dtype=int)
        self._b = np.array([b for _, _, b in pairs], dtype=int)
        self._d_min = np.array([d_min[c] for c in classes])
        self.floor = self._d_min - self.tolerance
        if floors_at is not None and pairs:
            start = self.all_distances(floors_at)
            self.floor = np.minimum(self._d_min, start) - self.tolerance

    def _place(self, q: np.ndarray) -> np.ndarray:
        """World centres of the geometries' bounding spheres at q (geometry placements updated)."""
        pin.updateGeometryPlacements(self.scene.model, self._data, self._gm, self._gdata, q)
        oMg = self._gdata.oMg
        return np.array([oMg[i].act(self._centre[i]) for i in range(len(self._centre))]).reshape(-1, 3)

    def _distance(self, k: int) -> float:
        return float(pin.computeDistance(self._gm, self._gdata, self.pairs[k][0]).min_distance)

    def all_distances(self, q: np.ndarray) -> np.ndarray:
        """Every pair's distance at q [m] (no broad phase)."""
        self._place(q)
        return np.array([self._distance(k) for k in range(len(self.pairs))])

    def closest(self, q: np.ndarray, beyond: float = BROAD_MARGIN) -> dict[str, Closest]:
        """Per class, the pair with the least margin d - floor at q (pairs the broad phase proves farther
        than d_min + ``beyond`` are skipped)."""
        out = {}
        if not self.pairs:
            return out
        centres = self._place(q)
        with np.errstate(invalid="ignore"):
            bound = (np.linalg.norm(centres[self._a] - centres[self._b], axis=1)
                     - self._radius[self._a] - self._radius[self._b])
        near = np.flatnonzero(~(bound > self._d_min + beyond))
        for k in near:
            d = self._distance(int(k))
            c = self.classes[k]
            margin = d - self.floor[k]
            best = out.get(c)
            if best is None or margin < best.margin:
                out[c] = Closest(c, margin, d, float(self.floor[k]), self.names[k])
        return out
