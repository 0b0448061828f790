"""The collision barrier's rows: several per close pair, so that d_min holds at edges and corners.

One row per pair (RoboPlan's form) holds only the pair's current closest points. When a link comes
over an obstacle's edge, or lies nearly parallel to a face, the closest point jumps between
features from one step to the next (two corners of the hand, two corners of a box), and the
feature that is not the closest this step moves in unconstrained: d_min ends up halved.

Here each of the closest pairs gets up to ``rows_per_pair`` rows, all with the pair's unit normal n
(from geometry 1 to geometry 2) and the witness points p1, p2:

- row 0: the witness row, h = d - d_min, a = p1, b = p2;
- then the vertices of either geometry (a convex hull's points, a box's corners, a mesh's vertices, a point
  cloud's cubes' corners) whose lower bound of distance is within ``margin`` of d: a vertex v of geometry 1 is at least
  ``n.(p2 - v)`` from geometry 2 (geometry 2 lies beyond the plane through p2 normal to n), a vertex w of
  geometry 2 at least ``n.(w - p1)`` from geometry 1. Its row: that bound minus d_min, with a = v, b = p2
  (or a = p1, b = w). Each bound is >= d, so an extra row is never more violated than the witness row.
  The plane bound holds when the *other* geometry is convex (:func:`is_convex`: coal's shapes; not a
  mesh without its convex hull). Against a point cloud (not convex) a link's vertices get the same rows,
  the cloud taken locally as the plane through its witness point: exact for a flat wall of cells, and
  what keeps a flat link face from turning its far corners into the wall (with the witness row alone it
  did: the witness jumped to another corner already inside d_min, and the arm stalled in holds; issue 30).
  A cube beside the link may lie before that plane: such a row overstates its vertex's distance, and the
  witness row and the barrier check, which measure the cloud itself, still hold d_min. So a cloud fixed in the
  world against a convex geometry also gives up to half the extra rows (``rows_per_pair // 2``, first) to its
  other cubes nearest the link, exactly (:func:`nearest_cubes`: coal's distance from the link to that cube alone,
  its own witness points and normal): with the plane alone a cube standing 1-2 mm out of a noisy cloud beside
  the witness was reached in one step of a fast twist, 0.9-1.5 mm past the check's floor (fuzz seeds 589, 980). A geometry fixed
  in the world (a table, a wall, the perceived cloud) gets no rows of its own: its vertex does not move, so
  its row's Jacobian is the witness row's (the link's witness point) with a looser bound. Such rows only
  took the pair's row budget from the link's own vertices: a forearm lying flat over a table tied with
  the table's four top corners, which got the rows; its far end, unconstrained, dipped 3.8 mm inside d_min
  when the arm braked (fuzz seed 872). A mesh kept as a mesh (``robot.convex_hulls: false``) is not convex: its
  vertex may lie before the plane through its own witness point, so it gets a row only where its bound is
  at least the pair's distance (less ``CLOUD_ROW_SLACK``). A cloud carried by a link does get rows, against
  a convex geometry: per cube, its
  corner least along the direction away from the other geometry (the middle of a face or an edge where
  that direction is along the cube's axes, up to ``FLAT_AXIS``), and only cubes whose lower bound of
  distance to the other geometry (its local AABB, the kernel's ``box_aabb_bound``) is within ``margin``
  of d too (far cubes near the plane would add nothing), and bound >= d - ``CLOUD_ROW_SLACK`` (a cloud is
  not convex: a cube beside the link may lie before the witness plane, a true but loose bound below d).
  Vertices closer than ``spacing`` to a point already used on the same geometry are skipped, lowest
  bound first (bounds compared in steps of ``1 / ROW_ORDER_STEPS`` m, ties by geometry then vertex
  index: the vertices of a face parallel to the other geometry tie up to rounding, which differs
  between numpy and the kernel, and must not decide which of them get rows).

Every row's Jacobian is ``n^T (dp_b/dq - dp_a/dq)`` with the normal held fixed, as the witness row's
(the class docstring of :class:`CollisionBarrier`). ``rows_per_pair = 1`` is RoboPlan's exact form.
The compiled kernel (kernel/pair_distance_kernel.cpp, pdk_rows within pdk_barrier_update; a cloud's rows in
kernel/cloud_distance.hpp)
writes the same rows; this module is its Python path.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import coal
import numpy as np
import pinocchio as pin

from ...model.closest_pairs import ClosestPairs, PairDistances, unit_normal
from ...model.compiled_pairs import is_convex, row_vertices

ROW_ORDER_STEPS = 1e9  # [1/m] vertex bounds are ordered by floor(bound * this); kernel: kRowOrderSteps
CLOUD_ROW_SLACK = 1e-6  # [m] a cube's row bound is at least the pair's distance minus this; kernel: kCloudRowSlack
FLAT_AXIS = 1e-9  # a cube's point least along u: no offset along an axis where |u| <= this; kernel: kFlatAxis
FLAT_END = 1e-9  # a cylinder whose axis is within this (sine) of u has its cap facing u; kernel: kFlatEnd
CUBE_QUERIES = 4  # nearest_cubes: cubes asked per row wanted; kernel: kCubeQueries
SAME_CUBE = 1e-5  # [m] a cube whose distance and point are the witness's within this is its (ten times GJK's tolerance: coal's octree distance, the Python path's witness, differs by that); kernel: kSameCube


@dataclass
class CollisionRows:
    """Per-row data of the last update (rows ``[:count]`` used)."""

    pair: np.ndarray  # (m,) int64: index into the pairs found (PairDistances rows), -1 unused
    a: np.ndarray  # (m, 3) point on geometry 1, world frame [m]
    b: np.ndarray  # (m, 3) point on geometry 2, world frame [m]
    normal: np.ndarray  # (m, 3) unit normal from geometry 1 to geometry 2
    count: int = 0

    @classmethod
    def zeros(cls, m: int) -> CollisionRows:
        return cls(np.full(m, -1, dtype=np.int64), np.zeros((m, 3)), np.zeros((m, 3)), np.zeros((m, 3)))


class RowVertices:
    """The local vertices of each geometry of a pair set (read once per build of its tables), whether it is
    convex, its local AABB and, for a point cloud (an octree), its cubes' centres and size."""

    def __init__(self, pairs: ClosestPairs) -> None:
        self.local, self.convex, self.aabb, self.cloud, self.fixed = {}, {}, {}, {}, {}
        self.round = {}  # a cylinder's or capsule's (radius, half length, capsule?)
        self.sphere = {}  # a sphere's radius
        self.cube = {}  # a point cloud's cube (coal.Box of its resolution)
        for g in pairs.geometries:
            obj = pairs.object(int(g))
            geometry = obj.geometry
            if isinstance(geometry, coal.Sphere):
                self.sphere[int(g)] = float(geometry.radius)
            if isinstance(geometry, (coal.Cylinder, coal.Capsule)):
                self.round[int(g)] = (float(geometry.radius), float(geometry.halfLength),
                                      isinstance(geometry, coal.Capsule))
            self.local[int(g)] = row_vertices(geometry)
            self.convex[int(g)] = is_convex(geometry)
            self.fixed[int(g)] = obj.parentJoint == 0  # fixed in the world
            geometry.computeLocalAABB()
            self.aabb[int(g)] = (np.array(geometry.aabb_local.min_), np.array(geometry.aabb_local.max_))
            if isinstance(geometry, coal.OcTree):
                self.cloud[int(g)] = (pairs.octree_cells(int(g)), float(geometry.getResolution()))
                r = float(geometry.getResolution())
                self.cube[int(g)] = coal.Box(r, r, r)  # one of its cubes, for nearest_cubes (reused)

    def world(self, geom_data: pin.GeometryData, geometry: int) -> np.ndarray:
        local = self.local[geometry]
        if not len(local):
            return local
        M = geom_data.oMg[geometry]
        return local @ M.rotation.T + M.translation

    def support(self, geom_data: pin.GeometryData, geometry: int, u: np.ndarray) -> float:
        """max over the points y of convex geometry ``geometry`` of u.y (u world, unit): its support function (the
        kernel's support)."""
        M = geom_data.oMg[geometry]
        v = M.rotation.T @ u
        if geometry in self.sphere:
            h = self.sphere[geometry] * float(np.linalg.norm(v))
        elif geometry in self.round:
            radius, half_length, capsule = self.round[geometry]
            h = half_length * abs(float(v[2])) + radius * (float(np.linalg.norm(v)) if capsule else math.hypot(v[0], v[1]))
        else:
            h = float(np.max(self.local[geometry] @ v))
        return h + float(u @ M.translation)

    def end_points(self, geom_data: pin.GeometryData, geometry: int, u: np.ndarray) -> np.ndarray:
        """(2, 3) world: a cylinder's or capsule's points farthest along ``u`` (world) at either end of its axis
        (its z; the kernel's end_points): where a cylinder lying along a face may touch it, as a convex hull's
        end vertices (a cap facing u: its centre)."""
        radius, half_length, capsule = self.round[geometry]
        M = geom_data.oMg[geometry]
        v = M.rotation.T @ u
        lateral = float(np.linalg.norm(v)) if capsule else math.hypot(v[0], v[1])
        radial = np.zeros(3)
        if lateral > FLAT_END * float(np.linalg.norm(v)):
            radial = (radius / lateral) * v
            if not capsule:
                radial[2] = 0.0
        ends = np.array([radial + (0.0, 0.0, half_length), radial - (0.0, 0.0, half_length)])
        return ends @ M.rotation.T + M.translation

    def cube_bounds(self, geom_data: pin.GeometryData, cloud: int, other: int) -> np.ndarray:
        """Per cube of point cloud ``cloud``: a lower bound of its distance to geometry ``other`` (its local AABB;
        -inf where they overlap), the kernel's box_aabb_bound."""
        centers, resolution = self.cloud[cloud]
        T = geom_data.oMg[cloud].actInv(geom_data.oMg[other])  # the other geometry in the cloud's frame
        Rt, t = T.rotation.T, T.translation
        local = (centers - t) @ Rt.T
        e = np.abs(Rt) @ np.full(3, resolution / 2)
        lo, hi = self.aabb[other]
        out = np.maximum(lo - e - local, local - hi - e)
        return np.where(out.max(axis=1) <= 0.0, -np.inf, np.linalg.norm(np.maximum(out, 0.0), axis=1))

    def cloud_candidates(self, geom_data: pin.GeometryData, cloud: int, other: int, m: np.ndarray, q: np.ndarray,
                         floor: float, limit: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(indices, corners (world), values) of the cubes of point cloud ``cloud`` whose corner v least along
        ``m`` has floor <= m.(v - q) <= limit and whose lower bound of distance to ``other`` (its local AABB)
        is <= limit (the kernel's cloud_candidates)."""
        centers, resolution = self.cloud[cloud]
        Mc = geom_data.oMg[cloud]
        near = np.flatnonzero(self.cube_bounds(geom_data, cloud, other) <= limit)
        m_local = Mc.rotation.T @ m
        offset = np.where(np.abs(m_local) > FLAT_AXIS, np.where(m_local > 0.0, 0.5, -0.5), 0.0)
        corners = centers[near] - offset * resolution
        corners = corners @ Mc.rotation.T + Mc.translation
        values = (corners - q) @ m
        keep = (values <= limit) & (values >= floor)
        return near[keep], corners[keep], values[keep]


def nearest_cubes(pairs: ClosestPairs, vertices: RowVertices, geom_data: pin.GeometryData, shape: int, cloud: int,
                  n: np.ndarray, witness: np.ndarray, distance: float, limit: float, count: int) -> list[tuple]:
    """(p_shape, p_cube, unit normal from the shape, distance) of up to ``count`` cubes of cloud ``cloud`` (fixed in
    the world) within ``limit`` of geometry ``shape``, besides the witness's (the cube at ``distance`` whose point is
    ``witness``), least distance first: exact rows of their own (module docstring). The cubes asked: those within
    ``limit`` of the shape's local AABB, the CUBE_QUERIES * count least far beyond the shape's support plane along
    ``n`` (the pair's normal, from the shape; a cube standing out toward the link first; the kernel's
    nearest_cubes)."""
    if count <= 0:
        return []
    centers, resolution = vertices.cloud[cloud]
    near = np.flatnonzero(vertices.cube_bounds(geom_data, cloud, shape) <= limit)
    Mc = geom_data.oMg[cloud]
    n_cloud = Mc.rotation.T @ n
    bound = centers[near] @ n_cloud + float(n @ Mc.translation) - float(np.abs(n_cloud).sum()) * (resolution / 2)
    bound -= vertices.support(geom_data, shape, n)
    key = np.floor(bound * ROW_ORDER_STEPS)
    asked = near[np.lexsort((near, key))][: CUBE_QUERIES * count]
    cube = vertices.cube[cloud]
    T_cube = coal.Transform3s()
    T_cube.setRotation(Mc.rotation)
    found = []
    for i in asked.tolist():
        T_cube.setTranslation(Mc.act(centers[i]))
        res = pairs.box_distance(geom_data, shape, cube, T_cube)
        d = res.min_distance
        p_shape, p_cube = np.array(res.getNearestPoint1()), np.array(res.getNearestPoint2())
        if d > limit or (abs(d - distance) <= SAME_CUBE and np.linalg.norm(p_cube - witness) <= SAME_CUBE):
            continue
        n = unit_normal(d, p_shape, p_cube, np.array(res.normal))
        if n.any():
            found.append((math.floor(d * ROW_ORDER_STEPS), i, p_shape, p_cube, n, d))
    found.sort(key=lambda r: (r[0], r[1]))
    return [r[2:] for r in found[:count]]


def python_rows(
    pairs: ClosestPairs,
    found: PairDistances,
    vertices: RowVertices,
    geom_data: pin.GeometryData,
    rows_per_pair: int,
    margin: float,
    spacing: float,
    d_min: float,
    J: np.ndarray,
    support1: np.ndarray,
    support2: np.ndarray,
    out: CollisionRows,
    value: np.ndarray,
    jacobian: np.ndarray,
) -> int:
    """Fill ``out``, ``value`` (h) and ``jacobian`` (dh/dq over the group's columns J, 6 x n world-frame
    joint Jacobians) for the pairs in ``found``; support1/support2: per found row, the 0/1 support of
    geometry 1's / 2's joint over those columns. Returns the number of rows used."""
    m = len(value)
    value.fill(np.inf)
    jacobian.fill(0.0)
    out.pair.fill(-1)
    rows = 0

    def emit(f: int, a: np.ndarray, b: np.ndarray, n: np.ndarray, h: float) -> None:
        nonlocal rows
        out.pair[rows], out.a[rows], out.b[rows], out.normal[rows] = f, a, b, n
        value[rows] = h - d_min
        jacobian[rows] = (n @ J[:3] + np.cross(b, n) @ J[3:]) * support2[f]
        jacobian[rows] -= (n @ J[:3] + np.cross(a, n) @ J[3:]) * support1[f]
        rows += 1

    for f in range(found.count):
        if rows >= m:
            break
        k = int(found.pair_index[f])
        d, p1, p2, n = float(found.distance[f]), found.point1[f], found.point2[f], found.normal[f]
        emit(f, p1, p2, n, d)
        if rows_per_pair <= 1 or not n.any():
            continue
        g1, g2 = int(pairs.first[k]), int(pairs.second[k])
        limit = d + margin
        extra = 0
        # a cloud fixed in the world against a convex geometry, the pair within margin of d_min: the cubes nearest
        # to the witness's, exact rows of their own, up to half the extra rows; the link's vertices below get the
        # rest (the kernel's order; each costs a GJK call: a pair farther above d_min keeps its other rows only)
        for cloud, shape, witness, first in ((g2, g1, p2, False), (g1, g2, p1, True)):
            if cloud in vertices.cloud and vertices.fixed[cloud] and vertices.convex[shape] and d - d_min <= margin:
                for p_shape, p_cube, n_cube, d_cube in nearest_cubes(pairs, vertices, geom_data, shape, cloud,
                                                                     -n if first else n, witness, d, limit,
                                                                     rows_per_pair // 2):
                    if rows >= m:
                        break
                    emit(f, p_cube, p_shape, -n_cube, d_cube) if first else emit(f, p_shape, p_cube, n_cube, d_cube)
                    extra += 1
                break
        points, candidates = ([], []), []
        for side, (g, other, u, q) in enumerate(((g1, g2, -n, p2), (g2, g1, n, p1))):
            # the plane bound: against a convex geometry, or a cloud taken locally as that plane; a geometry fixed
            # in the world gets no rows (each would repeat the witness row's moving point, module docstring)
            plane = vertices.convex[other] or other in vertices.cloud
            if not plane or vertices.fixed[g] or (g in vertices.cloud and not vertices.convex[other]):
                points[side].append(np.zeros((0, 3)))
                continue
            if g in vertices.cloud:
                index, v, bound = vertices.cloud_candidates(geom_data, g, other, u, q, d - CLOUD_ROW_SLACK, limit)
                order = {int(i): r for r, i in enumerate(index)}
                points[side].append((v, order))
                candidates += [(math.floor(float(b) * ROW_ORDER_STEPS), side, int(i), float(b))
                               for i, b in zip(index, bound)]
                continue
            v = vertices.end_points(geom_data, g, -u) if g in vertices.round else vertices.world(geom_data, g)
            points[side].append(v)
            bound = (p2 - v) @ n if side == 0 else (v - p1) @ n
            # a mesh's vertex (not convex) only at or beyond the pair's distance (never more violated than it)
            floor = -math.inf if vertices.convex[g] else d - CLOUD_ROW_SLACK
            candidates += [(math.floor(float(bound[i]) * ROW_ORDER_STEPS), side, int(i), float(bound[i]))
                           for i in np.flatnonzero((bound <= limit) & (bound >= floor))]
        candidates.sort()
        chosen = ([p1], [p2])
        for _, side, i, bound in candidates:
            if extra + 1 >= rows_per_pair or rows >= m:
                break
            held = points[side][0]
            v = held[0][held[1][i]] if isinstance(held, tuple) else held[i]
            if any(float((c - v) @ (c - v)) < spacing * spacing for c in chosen[side]):
                continue
            chosen[side].append(v)
            emit(f, v, p2, n, bound) if side == 0 else emit(f, p1, v, n, bound)
            extra += 1
    out.count = rows
    return rows
