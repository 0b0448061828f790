"""The n closest collision pairs, exactly, with a bounding-sphere broad phase.

Every geometry gets a bounding sphere (centre and radius of its local AABB). For a pair, the
distance between the spheres minus both radii is a lower bound of the true distance. Pairs are
visited in increasing lower bound; the narrow phase (coal) runs only while a pair could still be
among the n closest and its lower bound is within ``cutoff``. The result is the same set as
querying every pair (for the pairs within the cutoff), at a fraction of the cost.

Two paths compute it: the compiled kernel (:mod:`compiled_pairs`, one C++ call) when it is built
and takes every geometry, else this module's numpy broad phase and coal's Python distance. Neither
keeps a GJK guess from an earlier query (pinocchio's ``computeDistance`` does): the same
configuration gives the same witness points, whatever was queried before.
"""

from __future__ import annotations

import copy
import math
import threading
from dataclasses import dataclass

import coal
import numpy as np
import pinocchio as pin

from ..errors import InvalidInputError, check_positive
from .compiled_pairs import GJK_TOLERANCE, CompiledPairs, octree_centers
from .scene import Scene


@dataclass
class PairDistances:
    """Result buffers, reused between queries. Rows ``[:count]`` are valid, sorted by distance."""

    pair_index: np.ndarray  # (n,) local pair index (ClosestPairs.collision_pair maps it to collisionPairs)
    distance: np.ndarray  # (n,) signed distance [m]
    point1: np.ndarray  # (n, 3) witness point on the first geometry, world frame [m]
    point2: np.ndarray  # (n, 3) witness point on the second geometry, world frame [m]
    normal: np.ndarray  # (n, 3) unit normal from geometry 1 to geometry 2 (0 when undefined)
    count: int = 0


PAIR_SETS = ("all", "self", "obstacles", "perceived")


def empty_distances(n: int) -> PairDistances:
    """Buffers for n pairs."""
    return PairDistances(np.zeros(n, dtype=int), np.zeros(n), np.zeros((n, 3)), np.zeros((n, 3)), np.zeros((n, 3)))


class ClosestPairs:
    """Query the ``n`` closest active collision pairs of ``scene``.

    Args:
        scene: the scene whose collision model is queried.
        n: number of pairs wanted (for ``pairs="self"``: <= the robot's collision pairs; with
            obstacles the pairs come and go, and a query finds at most as many as exist).
        cutoff: pairs whose lower-bound distance exceeds this [m] are never evaluated (inf: all may be).
        pairs: ``"self"`` (robot x robot), ``"obstacles"`` (robot or attached object x obstacle),
            ``"perceived"`` (robot or attached object x the perceived cloud) or ``"all"``.
        use_compiled: False runs the Python path even when the compiled kernel is built (the same
            results, slower; the tests compare the two paths with it).

    Broad phase: a bounding sphere per geometry (centre and radius of its local AABB); for a pair
    with a geometry fixed in the world (the robot's base, a table, a wall), the distance from the
    other's sphere to the fixed geometry's box (its local AABB, placed in the world) instead, which
    is much tighter for large flat obstacles. The pair tables are rebuilt after the scene's
    obstacles change (:attr:`Scene.collision_version`).
    """

    def __init__(self, scene: Scene, n: int, cutoff: float = np.inf, pairs: str = "self",
                 use_compiled: bool = True) -> None:
        if pairs not in PAIR_SETS:
            raise InvalidInputError(f"pairs: unknown pair set {pairs!r}; valid: {', '.join(PAIR_SETS)}")
        self.scene = scene
        self.pair_set = pairs
        self.use_compiled = bool(use_compiled)
        self.cutoff = check_positive(cutoff, "broad_phase_cutoff", allow_inf=True)
        self._version = -1
        self._build()
        npairs = len(self.first)
        static = pairs == "self"
        if not isinstance(n, (int, np.integer)) or n < 1 or (static and n > npairs):
            raise InvalidInputError(
                f"n_collision_pairs: expected an integer in [1, {npairs}] (the collision pairs left "
                f"after the SRDF's disabled pairs), got {n!r}" if static else
                f"n_collision_pairs: expected an integer >= 1, got {n!r}"
            )
        self.n = int(n)
        self.result = empty_distances(self.n)
        self.narrow_phase_calls = 0  # of the last query
        self._request = coal.DistanceRequest()
        self._request.gjk_tolerance = GJK_TOLERANCE
        self._result = coal.DistanceResult()
        self._transform1, self._transform2 = coal.Transform3s(), coal.Transform3s()

    def rebuilt(self, kernel: CompiledPairs | None) -> ClosestPairs:
        """A new ClosestPairs of the same pair set for the scene as it is now (call where the scene cannot
        change meanwhile); ``kernel``: a spare compiled kernel no query uses any more, rebuilt in place
        (keeping the robot geometries it holds), or None for a new one. This object is not touched: a
        control tick may go on querying it until the new one is swapped in."""
        new = copy.copy(self)
        new.result = empty_distances(self.n)
        new._request, new._result = coal.DistanceRequest(), coal.DistanceResult()
        new._request.gjk_tolerance = GJK_TOLERANCE
        new._transform1, new._transform2 = coal.Transform3s(), coal.Transform3s()
        new.compiled = kernel
        new._build()
        return new

    @property
    def version(self) -> int:
        """The scene's collision_version these tables were built for."""
        return self._version

    def refresh(self) -> bool:
        """Rebuild the pair tables if the scene's obstacles changed; True if it did. The robot's own
        pairs never change (the obstacles' pairs come after them): ``pairs="self"`` never rebuilds."""
        if self._version == self.scene.collision_version or self.pair_set == "self":
            return False
        self._build()
        return True

    def _build(self) -> None:
        scene = self.scene
        gm, world = scene.collision_model, scene.world
        self._version = scene.collision_version
        # geometryObjects[i] copies the object (meshes included) in pinocchio's Python API: read once.
        objects = [gm.geometryObjects[i] for i in range(gm.ngeoms)]
        robot = world.n_robot_geometries
        every = np.array([(p.first, p.second) for p in gm.collisionPairs], dtype=int).reshape(-1, 2)  # read once
        is_self = (every < robot).all(axis=1)
        is_perceived = np.isin(every, world.perceived_geometries()).any(axis=1)
        keep = {"all": np.ones(len(every), dtype=bool), "self": is_self, "obstacles": ~is_self & ~is_perceived,
                "perceived": is_perceived}[self.pair_set]
        self.collision_pair = np.flatnonzero(keep)  # local pair k -> index into collisionPairs
        self.first, self.second = every[keep, 0].copy(), every[keep, 1].copy()
        self.obstacle_pair = (self.first >= robot) | (self.second >= robot)
        # coal (3.0) returns the witness points of a shape-octree distance swapped (the octree's first)
        self._octree_second = np.array([isinstance(objects[b].geometry, coal.OcTree) for b in self.second], dtype=bool)
        self.geometries = np.unique(np.concatenate([self.first, self.second]))
        self._pair_names = [f"{objects[a].name} <-> {objects[b].name}" for a, b in zip(self.first, self.second)]
        slot = {int(g): k for k, g in enumerate(self.geometries)}
        self._slot1 = np.array([slot[g] for g in self.first], dtype=int)
        self._slot2 = np.array([slot[g] for g in self.second], dtype=int)
        centers, radii, parents, lows, highs, placements = [], [], [], [], [], []
        for g in self.geometries:
            obj = objects[int(g)]
            obj.geometry.computeLocalAABB()
            box = obj.geometry.aabb_local
            lo, hi = np.array(box.min_), np.array(box.max_)
            centers.append(obj.placement.act((lo + hi) / 2))  # sphere centre in the parent joint frame
            radii.append(np.linalg.norm(hi - lo) / 2)
            parents.append(obj.parentJoint)
            lows.append(lo), highs.append(hi), placements.append(obj.placement)
        parents = np.array(parents, dtype=int)
        self._joints = np.unique(parents)  # joints that carry geometry
        self._joint_slot = np.searchsorted(self._joints, parents)
        self._center_joint = np.array(centers).reshape(-1, 3)  # (ngeom, 3)
        radii = np.array(radii)
        self._radius_sum = radii[self._slot1] + radii[self._slot2] if len(self.first) else np.zeros(0)
        # pairs with one geometry fixed in the world (joint 0): sphere-to-box bound; the others: spheres
        if len(self.first):
            fixed1, fixed2 = parents[self._slot1] == 0, parents[self._slot2] == 0
        else:
            fixed1 = fixed2 = np.zeros(0, dtype=bool)
        box = fixed1 | fixed2
        self._box_pairs, self._sphere_pairs = np.flatnonzero(box), np.flatnonzero(~box)
        self._sphere_slot1, self._sphere_slot2 = self._slot1[self._sphere_pairs], self._slot2[self._sphere_pairs]
        self._sphere_radius_sum = self._radius_sum[self._sphere_pairs]
        fixed_slot = np.where(fixed2, self._slot2, self._slot1)[self._box_pairs]
        moving_slot = np.where(fixed2, self._slot1, self._slot2)[self._box_pairs]
        self._fixed_slots, fixed_index = np.unique(fixed_slot, return_inverse=True)
        # local coordinates of every sphere centre in every fixed geometry's frame, (nfixed, ngeom, 3),
        # computed at once per query; a box pair reads its entry [fixed, moving] of the flattened array
        self._box_entry = moving_slot * len(self._fixed_slots) + fixed_index.reshape(-1)
        self._box_radius = radii[moving_slot] if len(self._box_pairs) else np.zeros(0)
        # [R_1 R_2 ...] (3, 3 nfixed): c^T R_f = (R_f^T c)^T for every fixed geometry f in one product
        self._fixed_R = np.hstack([placements[s].rotation for s in self._fixed_slots]) if len(self._fixed_slots) \
            else np.zeros((3, 0))
        self._fixed_RTt = np.concatenate([placements[s].rotation.T @ placements[s].translation
                                          for s in self._fixed_slots]) if len(self._fixed_slots) else np.zeros(0)
        self._box_lo = np.array([lows[s] for s in fixed_slot]).reshape(-1, 3)
        self._box_hi = np.array([highs[s] for s in fixed_slot]).reshape(-1, 3)
        self._data = None  # whose joint placements the views below follow
        self._objects = [objects[int(g)] for g in self.geometries]  # the geometries of the pairs, by slot
        # the perceived cloud's occupied cells as its ingest computed them (else read back from the octree)
        cloud = world.perceived
        cells = getattr(cloud, "cells", None) if cloud is not None else None
        self._cells = {int(g): cells for g in world.perceived_geometries() if cells is not None}
        self._build_compiled(robot)

    def _build_compiled(self, robot: int) -> None:
        """The compiled kernel's copy of the geometries and pairs; keeps the robot geometries it already
        built (they never change). ``compiled`` None: :attr:`compiled_reason` says why."""
        if not self.use_compiled:
            self.compiled, self.compiled_reason = None, "use_compiled=False: the Python path was asked for"
            return
        pairs = np.stack([self._slot1, self._slot2], axis=1) if len(self.first) else np.zeros((0, 2), dtype=int)
        kernel = getattr(self, "compiled", None)
        old = kernel.built_geometries if kernel is not None else np.zeros(0, dtype=int)
        keep = 0
        while keep < min(len(old), len(self.geometries)) and old[keep] == self.geometries[keep] and old[keep] < robot:
            keep += 1
        cells = {int(np.searchsorted(self.geometries, g)): c for g, c in self._cells.items() if g in self.geometries}
        try:
            if kernel is None:
                self.compiled = CompiledPairs(self._objects, pairs, cells)
            else:
                self.compiled.rebuild(self._objects, pairs, keep, cells)
            self.compiled_reason = ""
            self.compiled.built_geometries = self.geometries.copy()
        except ValueError as exc:
            self.compiled, self.compiled_reason = None, str(exc)

    def lower_bounds(self, data: pin.Data) -> np.ndarray:
        """Per-pair lower bound of the distance [m]; needs forward kinematics in ``data``."""
        if not len(self.first):
            return np.zeros(0)
        if data is not self._data:  # views of data.oMi[j]: they follow every later kinematics call
            self._R_views = [data.oMi[int(j)].rotation for j in self._joints]
            self._t_views = [data.oMi[int(j)].translation for j in self._joints]
            self._data = data
        slot = self._joint_slot  # one placement per joint carrying geometry, spread to its geometries
        cw = np.matmul(np.array(self._R_views)[slot], self._center_joint[:, :, None])[:, :, 0]
        cw += np.array(self._t_views)[slot]  # sphere centres in the world frame, (ngeom, 3)
        bound = np.empty(len(self.first))
        if len(self._sphere_pairs):
            gap = cw[self._sphere_slot1]
            gap -= cw[self._sphere_slot2]
            gap *= gap
            bound[self._sphere_pairs] = np.sqrt(gap.sum(axis=1)) - self._sphere_radius_sum
        if len(self._box_pairs):  # the moving sphere's centre in the fixed geometry's frame, to its box
            local = cw @ self._fixed_R  # (ngeom, 3 nfixed): R_f^T c of every centre in every fixed frame
            local -= self._fixed_RTt  # R_f^T (c - t_f)
            local = local.reshape(-1, 3)[self._box_entry]  # one row per box pair
            outside = self._box_lo - local  # per axis: how far outside the box, or <= 0 inside
            np.maximum(outside, local - self._box_hi, out=outside)
            np.maximum(outside, 0.0, out=outside)
            outside *= outside
            bound[self._box_pairs] = np.sqrt(outside.sum(axis=1)) - self._box_radius
        return bound

    def distance(self, geom_data: pin.GeometryData, k: int) -> coal.DistanceResult:
        """coal's distance result of local pair ``k`` at ``geom_data``'s placements (no guess kept from an
        earlier call); the result object is reused by the next call."""
        a, b = self._objects[self._slot1[k]], self._objects[self._slot2[k]]
        t1, t2 = self._transform1, self._transform2
        M1, M2 = geom_data.oMg[int(self.first[k])], geom_data.oMg[int(self.second[k])]
        t1.setRotation(M1.rotation), t1.setTranslation(M1.translation)
        t2.setRotation(M2.rotation), t2.setTranslation(M2.translation)
        res = self._result
        res.clear()
        coal.distance(a.geometry, t1, b.geometry, t2, self._request, res)
        return res

    def box_distance(self, geom_data: pin.GeometryData, geometry: int, box: coal.Box,
                     T_world_box: coal.Transform3s) -> coal.DistanceResult:
        """coal's distance result from geometry ``geometry`` (one of :attr:`geometries`) at ``geom_data``'s placement
        to ``box`` at ``T_world_box`` (a cloud's cube, :func:`collision_rows.nearest_cubes`); reused by the next call."""
        M = geom_data.oMg[int(geometry)]
        t1 = self._transform1
        t1.setRotation(M.rotation), t1.setTranslation(M.translation)
        res = self._result
        res.clear()
        coal.distance(self.object(geometry).geometry, t1, box, T_world_box, self._request, res)
        return res

    def query(self, data: pin.Data, geom_data: pin.GeometryData, out: PairDistances | None = None,
              cutoff: float | None = None, n: int | None = None) -> PairDistances:
        """Fill and return ``out`` (default :attr:`result`); call after ``pin.updateGeometryPlacements``
        with a geometry data of the current collision model (and after :meth:`refresh`). ``cutoff``: this
        query's instead of :attr:`cutoff` [m]; ``n``: this query's number of pairs instead of :attr:`n`
        (at most ``out``'s size)."""
        out = self.result if out is None else out
        cutoff = self.cutoff if cutoff is None else cutoff
        n = self.n if n is None else n
        if self.compiled is not None:
            out.count = self.compiled.closest(data, n, cutoff, out)
            self.narrow_phase_calls = self.compiled.narrow_calls
            return out
        lb = self.lower_bounds(data)
        near = np.flatnonzero(lb <= cutoff)  # only these can be evaluated: sort just them
        order = near[np.lexsort((near, lb[near]))]  # by bound, then pair (the kernel's order)
        found: list[tuple[float, int, np.ndarray, np.ndarray, np.ndarray]] = []  # the n closest so far
        worst = math.inf  # the largest distance in found once it holds n pairs
        calls = 0
        for k in order.tolist():
            if lb[k] >= worst:  # neither this pair nor any later one can be closer than the n found
                break
            res = self.distance(geom_data, k)
            calls += 1
            d = res.min_distance
            p1, p2, coal_normal = np.array(res.getNearestPoint1()), np.array(res.getNearestPoint2()), np.array(res.normal)
            if self._octree_second[k]:  # coal (3.0) gives a shape-octree pair's witness points swapped
                p1, p2, coal_normal = p2, p1, -coal_normal
            entry = (d, k, p1, p2, coal_normal)
            if len(found) < n:
                found.append(entry)
                if len(found) == n:
                    worst = max(found, key=_order)[0]
            elif d < worst:
                found.remove(max(found, key=_order))
                found.append(entry)
                worst = max(found, key=_order)[0]
        self.narrow_phase_calls = calls
        found.sort(key=_order)
        out.count = len(found)
        for row, (d, k, p1, p2, coal_normal) in enumerate(found):
            out.pair_index[row], out.distance[row] = k, d
            out.point1[row], out.point2[row] = p1, p2
            out.normal[row] = unit_normal(d, p1, p2, coal_normal)
        return out

    def distances(self, data: pin.Data, geom_data: pin.GeometryData, pairs: np.ndarray, count: int,
                  out: np.ndarray) -> None:
        """Signed distances of local ``pairs[:count]`` (int64) at the current placements into ``out[:count]``."""
        if self.compiled is not None:
            self.compiled.distances(data, pairs, count, out)
            return
        for i, k in enumerate(pairs[:count].tolist()):
            out[i] = self.distance(geom_data, k).min_distance

    def object(self, geometry: int):
        """The collision-model object of geometry index ``geometry`` (one of :attr:`geometries`)."""
        return self._objects[int(np.searchsorted(self.geometries, geometry))]

    def octree_cells(self, geometry: int) -> np.ndarray:
        """(n, 3) occupied cell centres of octree geometry ``geometry`` (one of :attr:`geometries`), in
        ``toBoxes`` order: the perceived cloud's as its ingest computed them, else read back from the octree."""
        cells = self._cells.get(int(geometry))
        return octree_centers(self.object(geometry).geometry) if cells is None else cells

    def pair_name(self, pair_index: int) -> str:
        """"geometry1 <-> geometry2" of a collision pair."""
        return self._pair_names[pair_index]


def _order(entry: tuple) -> tuple[float, int]:
    return entry[0], entry[1]


def unit_normal(d: float, p1: np.ndarray, p2: np.ndarray, coal_normal: np.ndarray) -> np.ndarray:
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


class ClosestObstacle:
    """The obstacle nearest to the robot at a configuration, for status reports. ``pairs``:
    ``"obstacles"`` or ``"perceived"`` (the perceived cloud's nearest point).

    Its tables follow the scene's obstacles: :meth:`prepare` builds them where the scene changed (off
    the control loop's lock), else :meth:`query` rebuilds them itself (a few ms with a point cloud)."""

    def __init__(self, scene: Scene, pairs: str = "obstacles") -> None:
        self.scene = scene
        self.pair_set = pairs
        self._state: tuple | None = None  # (collision_version, ClosestPairs, names by geometry, Data, GeometryData)
        self._spare = None  # the kernel of the tables before the current ones: no query uses it
        self._lock = threading.Lock()  # a query and the swap of the tables it uses

    def prepare(self) -> None:
        """Build the tables for the scene as it is now (call where the scene cannot change meanwhile);
        the next :meth:`query` takes them. Safe beside a query running in another thread: the query
        keeps the tables it started with. The compiled kernel of the tables before is rebuilt in place
        (its robot geometries kept: a new kernel would take the convex hulls again, ~2 ms)."""
        scene = self.scene
        state = self._state
        if state is not None and state[0] == scene.collision_version:
            return
        version = scene.collision_version
        spare, self._spare = self._spare, None
        pairs = state[1].rebuilt(spare) if state is not None else ClosestPairs(scene, 1, np.inf, self.pair_set)
        model, world = scene.model, scene.world
        names = {int(g): (model.frames[pairs.object(g).parentFrame].name if g < world.n_robot_geometries
                          else world.obstacle_name(int(g))) for g in pairs.geometries}
        # the kernel places its own geometries: a Data is enough; the Python path needs one that fits the model
        data, geom_data = (state[3], state[4]) if state is not None and pairs.compiled is not None else scene.create_data()
        with self._lock:  # no query runs with the old tables after this: their kernel becomes the spare
            self._state = (version, pairs, names, data, geom_data)
            if state is not None and state[1].compiled is not pairs.compiled:
                self._spare = state[1].compiled

    def query(self, q: np.ndarray) -> tuple[str, str, float]:
        """(obstacle, the robot link or attached object nearest to it, signed distance [m]);
        ("", "", inf) without obstacles (or none that any link can reach)."""
        scene = self.scene
        if not (scene.obstacles if self.pair_set == "obstacles" else scene.world.perceived_geometries()):
            return "", "", math.inf
        if self._state is None or self._state[0] != scene.collision_version:
            self.prepare()
        with self._lock:
            _, pairs, names, data, geom_data = self._state
            if not len(pairs.first):
                return "", "", math.inf
            pin.forwardKinematics(scene.model, data, q)
            if pairs.compiled is None:  # the Python path reads coal's placements; the kernel places its own
                pin.updateGeometryPlacements(scene.model, data, scene.collision_model, geom_data)
            res = pairs.query(data, geom_data)
            if not res.count:
                return "", "", math.inf
            k, d = int(res.pair_index[0]), float(res.distance[0])
        a, b = int(pairs.first[k]), int(pairs.second[k])
        world = scene.world
        if world.is_obstacle(a) and world.is_obstacle(b):  # an attached object against a world obstacle
            first = scene.obstacles.get(names[a])  # None: the perceived cloud
            a, b = (a, b) if first is not None and first.attached else (b, a)
            return names[b], f"{names[a]} (attached)", d
        robot_geometry, obstacle = (a, b) if world.is_obstacle(b) else (b, a)
        return names[obstacle], names[robot_geometry], d
