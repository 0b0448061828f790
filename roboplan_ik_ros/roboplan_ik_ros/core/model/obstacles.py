"""Obstacle: one shape of the robot's cell (a table, a wall, a fixture, a grasped part) and its coal geometry.

An obstacle is fixed to a frame: ``"world"`` (the URDF root; a table, a wall) or a robot link (a
tool or a grasped part that moves with the link). ``T_frame_obstacle`` places the shape in that
frame; the shape is centred on its own origin (coal's convention: a box of ``size`` [x, y, z]
spans +-size/2, a cylinder and a capsule run along their z axis).

:func:`check_obstacle` validates an obstacle against a scene's frames and names the field at
fault; :func:`obstacle_geometry` builds the coal geometry (meshes read once, convex hull on
request). ROS-free.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import coal
import numpy as np
import pinocchio as pin

from ..errors import InvalidInputError
from .resources import resolve_path

WORLD = "world"
SHAPES = ("box", "sphere", "cylinder", "capsule", "mesh")
#: how many dimensions each primitive takes, and what they are
DIMENSIONS = {"box": ("x", "y", "z"), "sphere": ("radius",), "cylinder": ("radius", "length"),
              "capsule": ("radius", "length"), "mesh": ()}
QUATERNION_TOLERANCE = 1e-3  # | |q| - 1 | above this is refused (a typo, not rounding)


@dataclass(frozen=True)
class Obstacle:
    """One collision shape of the cell.

    Attributes:
        name: unique name (a geometry object of the collision model is named ``obstacle:<name>``).
        shape: one of :data:`SHAPES`.
        dims: box [x, y, z] full sizes; sphere [radius]; cylinder and capsule [radius, length] [m].
        mesh: mesh file (a path or ``package://`` URI) for ``shape == "mesh"`` without ``vertices``.
        vertices, triangles: an in-memory mesh ((n, 3) [m], (m, 3) vertex indices), e.g. from
            shape_msgs/Mesh; used instead of ``mesh`` when given.
        scale: mesh scale per axis.
        position, quaternion_xyzw: ``T_frame_obstacle`` [m], unit quaternion (x, y, z, w).
        frame: ``"world"`` or the robot link the obstacle is fixed to.
        touch_links: robot links allowed to touch it (no collision pair with them).
    """

    name: str
    shape: str
    dims: tuple[float, ...] = ()
    mesh: str = ""
    vertices: np.ndarray | None = field(default=None, compare=False, repr=False)
    triangles: np.ndarray | None = field(default=None, compare=False, repr=False)
    scale: tuple[float, float, float] = (1.0, 1.0, 1.0)
    position: tuple[float, float, float] = (0.0, 0.0, 0.0)
    quaternion_xyzw: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 1.0)
    frame: str = WORLD
    touch_links: tuple[str, ...] = ()

    @property
    def T_frame_obstacle(self) -> pin.SE3:
        x, y, z, w = self.quaternion_xyzw
        return pin.SE3(pin.Quaternion(w, x, y, z).normalized().matrix(), np.array(self.position, dtype=float))

    @property
    def attached(self) -> bool:
        """True if fixed to a robot link (it moves with the robot)."""
        return self.frame != WORLD


def check_obstacle(obstacle: Obstacle, links: Sequence[str], where: str = "obstacle") -> None:
    """Raise :class:`InvalidInputError` naming the field of ``obstacle`` at fault and what is expected.
    ``links``: the robot's link names (valid frames besides "world" and valid touch links)."""
    o = obstacle
    if not isinstance(o.name, str) or not o.name.strip():
        raise InvalidInputError(f"{where}.name: expected a non-empty string, got {o.name!r}")
    where = f"{where} ({o.name})"
    if o.shape not in SHAPES:
        raise InvalidInputError(f"{where}.shape: unknown shape {o.shape!r}; valid: {', '.join(SHAPES)}")
    if o.frame != WORLD and o.frame not in links:
        shown = ", ".join(repr(n) for n in list(links)[:20])
        raise InvalidInputError(f"{where}.frame: unknown frame {o.frame!r}; expected 'world' or a robot link: {shown}")
    _check_finite(o.position, 3, f"{where}.position", "3 finite numbers [m]")
    quat = _check_finite(o.quaternion_xyzw, 4, f"{where}.orientation", "a unit quaternion [x, y, z, w]")
    norm = float(np.linalg.norm(quat))
    if abs(norm - 1.0) > QUATERNION_TOLERANCE:
        raise InvalidInputError(f"{where}.orientation: quaternion {list(quat)} has norm {norm:.6g}; expected a unit "
                                f"quaternion (norm 1 +- {QUATERNION_TOLERANCE:g})")
    names = DIMENSIONS[o.shape]
    if o.shape != "mesh":
        dims = _check_finite(o.dims, len(names), f"{where}.dimensions",
                             f"{len(names)} numbers > 0 [m] ({', '.join(names)})")
        if (dims <= 0).any():
            bad = names[int(np.flatnonzero(dims <= 0)[0])]
            raise InvalidInputError(f"{where}.dimensions: {bad} = {dims[names.index(bad)]:g}; expected > 0 [m] "
                                    f"({o.shape} dimensions: {', '.join(names)})")
    else:
        scale = _check_finite(o.scale, 3, f"{where}.scale", "3 numbers > 0")
        if (scale <= 0).any():
            raise InvalidInputError(f"{where}.scale: {list(scale)}; expected 3 numbers > 0")
        if o.vertices is None and not o.mesh:
            raise InvalidInputError(f"{where}.mesh: a mesh needs a file (path or package:// URI) or vertices")
        if o.vertices is not None:
            _check_mesh_arrays(o.vertices, o.triangles, where)
    bad_links = [link for link in o.touch_links if link not in links]
    if bad_links:
        raise InvalidInputError(f"{where}.touch_links: unknown robot link(s) {bad_links}; expected links of the robot")


def _check_finite(values, size: int, what: str, expected: str) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{what}: expected {expected}, got {values!r}") from exc
    if arr.shape != (size,) or not np.isfinite(arr).all():
        raise InvalidInputError(f"{what}: expected {expected}, got {list(np.atleast_1d(arr))}")
    return arr


def _check_mesh_arrays(vertices, triangles, where: str) -> None:
    v = np.asarray(vertices, dtype=float)
    t = np.asarray(triangles if triangles is not None else np.zeros((0, 3)))
    if v.ndim != 2 or v.shape[1] != 3 or len(v) < 4 or not np.isfinite(v).all():
        raise InvalidInputError(f"{where}.mesh: expected at least 4 finite vertices (n, 3), got shape {v.shape}")
    if t.ndim != 2 or t.shape[1] != 3 or len(t) < 1 or t.min() < 0 or t.max() >= len(v):
        raise InvalidInputError(f"{where}.mesh: expected triangles (m, 3) indexing the {len(v)} vertices, "
                                f"got shape {t.shape}")
    extent = v.max(axis=0) - v.min(axis=0)
    if (extent <= 0).sum() > 1:
        raise InvalidInputError(f"{where}.mesh: the vertices span {list(extent)} [m]; expected a shape with volume or area")


def obstacle_geometry(obstacle: Obstacle, package_paths: Sequence[str] = (), convex_hull: bool = True,
                      where: str = "obstacle") -> coal.CollisionGeometry:
    """The coal geometry of a checked obstacle. Meshes: read with coal's loader (assimp) or built from
    ``vertices``; ``convex_hull`` replaces them by their convex hull (conservative, and GJK instead of
    mesh-to-mesh). Raises :class:`InvalidInputError` for an unreadable mesh."""
    o, d = obstacle, obstacle.dims
    if o.shape == "box":
        return coal.Box(*map(float, d))
    if o.shape == "sphere":
        return coal.Sphere(float(d[0]))
    if o.shape == "cylinder":
        return coal.Cylinder(float(d[0]), float(d[1]))
    if o.shape == "capsule":
        return coal.Capsule(float(d[0]), float(d[1]))
    where = f"{where} ({o.name}).mesh"
    if o.vertices is not None:
        bvh = coal.BVHModelOBBRSS()
        bvh.beginModel(0, 0)
        bvh.addSubModel(np.asarray(o.vertices, dtype=float) * np.asarray(o.scale), np.asarray(o.triangles, dtype=int))
        bvh.endModel()
    else:
        path = resolve_path(o.mesh, package_paths, where)
        try:
            bvh = coal.MeshLoader().load(str(path), np.asarray(o.scale, dtype=float))
        except Exception as exc:  # assimp: unknown format, corrupt file
            raise InvalidInputError(f"{where}: cannot read mesh {o.mesh!r} ({_coal_message(exc)}); expected a mesh file "
                                    "(STL, DAE, OBJ, ...)") from exc
        if bvh.num_vertices < 4:
            raise InvalidInputError(f"{where}: mesh {o.mesh!r} has {bvh.num_vertices} vertices; expected a solid")
    if convex_hull:
        try:
            bvh.buildConvexHull(False, "Qt")
        except Exception as exc:  # qhull: flat or degenerate point set
            raise InvalidInputError(f"{where}: cannot build the convex hull of the mesh ({exc}); expected a "
                                    "mesh with volume (or convex_hulls: false)") from exc
        return bvh.convex
    return bvh


def _coal_message(exc: Exception) -> str:
    """coal's exception text without its source location lines."""
    text = str(exc)
    if "message:" in text:
        text = text.split("message:", 1)[1]
    return " ".join(line.strip() for line in text.splitlines() if line.strip() and not line.startswith("Hint"))


def obstacle_from_mapping(item, where: str) -> Obstacle:
    """An Obstacle from a YAML mapping (``name, shape, size | radius [, length] | mesh [, scale],
    position, orientation [x, y, z, w], frame, touch_links``); unknown keys and wrong types raise."""
    if not isinstance(item, dict):
        raise InvalidInputError(f"{where}: expected a mapping with name, shape, ..., got {item!r}")
    valid = ("name", "shape", "size", "radius", "length", "mesh", "scale", "position", "orientation", "frame",
             "touch_links")
    for key in item:
        if key not in valid:
            raise InvalidInputError(f"{where}.{key}: unknown key; valid keys: {', '.join(valid)}")
    shape = item.get("shape")
    name = item.get("name", "")
    wanted = {"box": ("size",), "sphere": ("radius",), "cylinder": ("radius", "length"),
              "capsule": ("radius", "length"), "mesh": ("mesh",)}
    if shape not in wanted:
        raise InvalidInputError(f"{where}.shape: unknown shape {shape!r}; valid: {', '.join(SHAPES)}")
    for key in ("size", "radius", "length", "mesh", "scale"):
        if key in item and key not in wanted[shape] and not (key == "scale" and shape == "mesh"):
            raise InvalidInputError(f"{where}.{key}: does not apply to a {shape} (its keys: {', '.join(wanted[shape])})")
    for key in wanted[shape]:
        if key not in item:
            raise InvalidInputError(f"{where}.{key}: required for a {shape}")
    if shape == "box":
        dims = item["size"]
        if not isinstance(dims, list):
            raise InvalidInputError(f"{where}.size: expected [x, y, z] [m], got {dims!r}")
    elif shape == "sphere":
        dims = [item["radius"]]
    elif shape in ("cylinder", "capsule"):
        dims = [item["radius"], item["length"]]
    else:
        dims = []
    for key in ("name", "frame", "mesh"):
        if key in item and not isinstance(item[key], str):
            raise InvalidInputError(f"{where}.{key}: expected a string, got {item[key]!r}")
    touch = item.get("touch_links", [])
    if not isinstance(touch, list) or not all(isinstance(t, str) for t in touch):
        raise InvalidInputError(f"{where}.touch_links: expected a list of link names, got {touch!r}")
    scale = item.get("scale", 1.0)
    scale = [scale] * 3 if isinstance(scale, (int, float)) and not isinstance(scale, bool) else scale
    try:
        return Obstacle(
            name=name, shape=shape, dims=tuple(_numbers(dims, f"{where}.{'size' if shape == 'box' else 'radius'}")),
            mesh=item.get("mesh", ""), scale=tuple(_numbers(scale, f"{where}.scale")),
            position=tuple(_numbers(item.get("position", [0.0, 0.0, 0.0]), f"{where}.position")),
            quaternion_xyzw=tuple(_numbers(item.get("orientation", [0.0, 0.0, 0.0, 1.0]), f"{where}.orientation")),
            frame=item.get("frame", WORLD), touch_links=tuple(touch),
        )
    except TypeError as exc:
        raise InvalidInputError(f"{where}: {exc}") from exc


def _numbers(values, what: str) -> list[float]:
    if not isinstance(values, list) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and not math.isnan(v) for v in values):
        raise InvalidInputError(f"{what}: expected a list of numbers, got {values!r}")
    return [float(v) for v in values]
