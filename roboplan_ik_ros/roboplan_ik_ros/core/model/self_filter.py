"""SelfFilter: remove the points of a cloud that lie on the robot itself (a camera that sees the arm
must not make it avoid itself).

A point is the robot's if it is inside one of the robot's collision geometries (and the objects
attached to its links) inflated by ``padding`` [m], at configuration ``q``. Vectorised over the points:
every geometry's bounding sphere first (one product for all points and geometries), then, per geometry
with points in its sphere, the exact test in the geometry's own frame for those few points:

* convex hulls (``robot.convex_hulls``): the hull's half-spaces ``n . p + o <= padding`` (coal's
  outward unit normals and offsets), an inflated polytope that contains the hull grown by ``padding``
  (at most sqrt(3) x ``padding`` more at sharp corners: conservative);
* a mesh kept as a mesh (``robot.convex_hulls: false``): the same test on the convex hull of its
  vertices (conservative: the hull contains the mesh). Its bounding sphere, as before, took a hand's
  whole 0.12 m sphere for the robot's: a perceived box the hand came near lost the points facing it, and
  the arm went 4 cm into the true box (issue 30);
* box, sphere, capsule, cylinder: their own inflated shape;
* anything else (a degenerate mesh whose hull qhull refuses): its bounding sphere plus ``padding``.

Geometry tables are read from the scene's collision model at construction and again after an
attached object changed (:meth:`refresh`, with the scene's changes serialized by the caller). The
filter has its own pinocchio data: it may run in a thread of its own. Placing the geometries at ``q``
(:meth:`SelfFilter.placements`, pinocchio) and the test of the points (:func:`robot_mask_at`, numpy
only) are apart: the cloud ingest process (``ingest_process.py``) runs the test on the tables and
placements its parent sends. ROS-free.
"""

from __future__ import annotations

from dataclasses import dataclass

import coal
import numpy as np
import pinocchio as pin

from ..errors import check_positive
from .scene import Scene


@dataclass
class _Shape:
    joint: int  # parent joint
    placement: pin.SE3  # T_joint_geometry
    center: np.ndarray  # bounding-sphere centre in the geometry frame
    radius: float  # bounding-sphere radius [m]
    kind: str  # "convex", "box", "sphere", "capsule", "cylinder", "sphere_bound"
    normals: np.ndarray | None = None  # convex: (F, 3) outward unit normals
    offsets: np.ndarray | None = None  # convex: (F,) with n . p + o <= 0 inside
    dims: tuple[float, ...] = ()  # box half sizes; sphere (r,); capsule/cylinder (r, half length)


class SelfFilter:
    """Remove the robot's own points. ``padding`` [m] >= 0 inflates every geometry."""

    def __init__(self, scene: Scene, padding: float = 0.02) -> None:
        self.scene = scene
        self.padding = check_positive(padding, "perception.self_filter_padding", allow_zero=True)
        self._data = scene.model.createData()
        self._version = -1
        self.refresh()

    def refresh(self) -> bool:
        """Re-read the geometries if the scene's obstacles changed (attached objects); True if it did."""
        if self._version == self.scene.collision_version:
            return False
        gm, world = self.scene.collision_model, self.scene.world
        shapes = []
        for g in range(gm.ngeoms):
            obj = gm.geometryObjects[g]
            robot = g < world.n_robot_geometries
            if not robot and not (world.is_obstacle(g) and obj.parentJoint != 0):
                continue  # world obstacles and perceived clouds are not the robot
            shapes.append(_shape(obj))
        self._shapes = shapes
        self._version = self.scene.collision_version
        return True

    @property
    def shapes(self) -> list[_Shape]:
        """The geometries' tables as last read (a new list after each change: safe to hold)."""
        return self._shapes

    @property
    def version(self) -> int:
        """The scene's ``collision_version`` :attr:`shapes` were read at."""
        return self._version

    def placements(self, q: np.ndarray, shapes: list[_Shape]) -> tuple[np.ndarray, np.ndarray]:
        """(rotations (S, 3, 3), translations (S, 3)): ``T_world_geometry`` of each of ``shapes`` at ``q``
        (the robot's link geometry at that configuration, what :func:`robot_mask_at` needs)."""
        model, data = self.scene.model, self._data
        pin.forwardKinematics(model, data, q)
        placements = [data.oMi[s.joint] * s.placement for s in shapes]  # T_world_geometry
        if not placements:
            return np.zeros((0, 3, 3)), np.zeros((0, 3))
        return np.array([T.rotation for T in placements]), np.array([T.translation for T in placements])

    def robot_mask(self, points: np.ndarray, q: np.ndarray) -> np.ndarray:
        """(N,) True where a point (world frame, (N, 3) [m]) is inside the padded robot at ``q``."""
        shapes = self._shapes  # one read: refresh() may swap the list
        rotations, translations = self.placements(q, shapes)
        return robot_mask_at(points, shapes, rotations, translations, self.padding)

    def filter(self, points: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, int]:
        """(the points not on the robot, how many were removed)."""
        mask = self.robot_mask(points, q)
        removed = int(np.count_nonzero(mask))
        return (np.compress(~mask, points, axis=0) if removed else points), removed


def robot_mask_at(points: np.ndarray, shapes: list[_Shape], rotations: np.ndarray, translations: np.ndarray,
                  padding: float) -> np.ndarray:
    """(N,) True where a point (world frame, (N, 3) [m]) is inside one of ``shapes`` inflated by ``padding``
    [m], the shapes placed at ``rotations`` (S, 3, 3) and ``translations`` (S, 3) (``T_world_geometry``,
    :meth:`SelfFilter.placements`). numpy only: what the cloud ingest process runs."""
    inside = np.zeros(len(points), dtype=bool)
    if not len(points) or not shapes:
        return inside
    pad = padding
    centers = np.array([rotations[k] @ s.center + translations[k] for k, s in enumerate(shapes)])
    reach = np.array([s.radius for s in shapes]) + pad
    # every shape's bounding sphere at once, (S, N): |p|^2 + |c|^2 - 2 p.c <= reach^2, loosened by far
    # more than its rounding (1e-12 relative, 1e-9 m^2); the points it keeps get the exact test below
    pp = points[:, 0] * points[:, 0]
    pp += points[:, 1] * points[:, 1]
    pp += points[:, 2] * points[:, 2]
    cc = np.einsum("ij,ij->i", centers, centers)
    d2 = centers @ points.T
    d2 *= -2.0
    d2 += pp * (1.0 - 1e-12)
    d2 += (cc * (1.0 - 1e-12))[:, None]
    candidates = d2 <= (reach * reach + 1e-9)[:, None]
    for k in np.flatnonzero(candidates.any(axis=1)):
        near = np.flatnonzero(candidates[k])
        near = near[~inside[near]]
        if not len(near):
            continue
        s, c, r = shapes[k], centers[k], reach[k]
        gap = points[near] - c
        near = near[np.einsum("ij,ij->i", gap, gap) <= r * r]  # the bounding sphere, exactly
        if not len(near):
            continue
        local = (points[near] - translations[k]) @ rotations[k]  # R^T (p - t): the points in the geometry frame
        inside[near[_inside(s, local, pad)]] = True
    return inside


def _inside(s: _Shape, p: np.ndarray, pad: float) -> np.ndarray:
    """Which local points (K, 3) are inside the shape inflated by ``pad``."""
    if s.kind == "convex":
        return (p @ s.normals.T + s.offsets).max(axis=1) <= pad
    if s.kind == "box":
        return (np.abs(p) <= np.asarray(s.dims) + pad).all(axis=1)
    if s.kind == "sphere":
        return np.einsum("ij,ij->i", p, p) <= (s.dims[0] + pad) ** 2
    if s.kind == "capsule":
        r, half = s.dims
        q = p.copy()
        q[:, 2] -= np.clip(p[:, 2], -half, half)  # minus the nearest point of the axis segment
        return np.einsum("ij,ij->i", q, q) <= (r + pad) ** 2
    if s.kind == "cylinder":
        r, half = s.dims
        return (p[:, 0] ** 2 + p[:, 1] ** 2 <= (r + pad) ** 2) & (np.abs(p[:, 2]) <= half + pad)
    return np.ones(len(p), dtype=bool)  # sphere_bound: already inside the padded bounding sphere


def _shape(obj: pin.GeometryObject) -> _Shape:
    geometry = obj.geometry
    geometry.computeLocalAABB()
    lo, hi = np.array(geometry.aabb_local.min_), np.array(geometry.aabb_local.max_)
    center, radius = (lo + hi) / 2, float(np.linalg.norm(hi - lo) / 2)
    shape = _Shape(obj.parentJoint, obj.placement.copy(), center, radius, "sphere_bound")
    swept = float(geometry.getSweptSphereRadius()) if hasattr(geometry, "getSweptSphereRadius") else 0.0
    if isinstance(geometry, coal.BVHModelBase):
        geometry = _vertex_hull(geometry)  # a ConvexBase, or the mesh if qhull refused its vertices
    if isinstance(geometry, coal.ConvexBase) and geometry.num_normals_and_offsets > 0:
        shape.kind = "convex"
        shape.normals = np.array(geometry.normals(), dtype=float).reshape(-1, 3)
        shape.offsets = np.array(geometry.offsets(), dtype=float).reshape(-1) - swept
    elif isinstance(geometry, coal.Box):
        shape.kind, shape.dims = "box", tuple(float(h) + swept for h in geometry.halfSide)
    elif isinstance(geometry, coal.Sphere):
        shape.kind, shape.dims = "sphere", (float(geometry.radius) + swept,)
    elif isinstance(geometry, coal.Capsule):
        shape.kind, shape.dims = "capsule", (float(geometry.radius) + swept, float(geometry.halfLength))
    elif isinstance(geometry, coal.Cylinder):
        shape.kind, shape.dims = "cylinder", (float(geometry.radius) + swept, float(geometry.halfLength))
    return shape


def _vertex_hull(mesh):
    """The convex hull of a mesh's vertices (qhull, as the scene's ``convex_hulls``), built on a copy of its
    vertices (the scene's mesh is left as it is); the mesh itself if qhull refuses them (flat, degenerate)."""
    vertices = np.ascontiguousarray(mesh.vertices(), dtype=float).reshape(-1, 3)
    if len(vertices) < 4:
        return mesh
    points = coal.BVHModelOBBRSS()
    points.beginModel(0, len(vertices))
    points.addVertices(vertices)
    points.endModel()
    try:
        points.buildConvexHull(False, "Qt")
    except Exception:  # noqa: BLE001 - qhull's error for a flat or degenerate point set: the bounding sphere
        return mesh
    return points.convex
