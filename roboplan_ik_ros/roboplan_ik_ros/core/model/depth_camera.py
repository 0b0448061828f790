"""DepthCamera: what a fixed depth camera sees of boxes (a table, a box) and of the robot itself, by
ray casting with numpy. The mock camera node (``sim/mock_camera.py``) publishes it; tests use it to
make realistic clouds. ROS-free.

One ray per pixel of a ``width`` x ``height`` pinhole image (horizontal field of view ``fov``), from
``T_world_camera`` (the camera looks along its +z, image x to the right, y down: the optical frame
convention). Each ray's first hit, among:

* boxes (``T_world_box``, half sizes): the slab test, every ray at once;
* the robot's collision geometry at configuration ``q``: convex hulls (their half-spaces, the same
  tables the self-filter uses), boxes, spheres; other shapes by their bounding sphere. Only the rays
  that pass a geometry's bounding sphere are tested against it (a link covers a few hundred pixels).

Depth noise: the hit distance along the ray gets a Gaussian of ``noise`` [m] (a structured-light or
stereo camera's error grows along the ray). Pixels that hit nothing are NaN (an organized cloud,
``is_dense: false``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from ..errors import InvalidInputError, check_positive
from .scene import Scene
from .self_filter import _shape


@dataclass(frozen=True)
class CameraBox:
    """A box the camera sees: centre pose in the world and half sizes [m]."""

    T_world_box: pin.SE3
    half: np.ndarray  # (3,) [m]


def look_at(position, target, up=(0.0, 0.0, 1.0)) -> pin.SE3:
    """T_world_camera of a camera at ``position`` looking at ``target`` (optical frame: +z forward, +y
    down in the image), world ``up`` up in the image."""
    position, target = np.asarray(position, dtype=float), np.asarray(target, dtype=float)
    z = target - position
    if not np.linalg.norm(z) > 1e-9:
        raise InvalidInputError(f"camera target {target.tolist()} equals its position")
    z /= np.linalg.norm(z)
    x = np.cross(z, np.asarray(up, dtype=float))
    if not np.linalg.norm(x) > 1e-9:
        raise InvalidInputError("camera: looking straight along 'up'; move the target")
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    return pin.SE3(np.column_stack([x, y, z]), position)


def image_size(points: int, aspect: float = 4.0 / 3.0) -> tuple[int, int]:
    """(width, height) of an image of about ``points`` pixels with ``aspect`` = width / height."""
    if not (isinstance(points, int) and points >= 1):
        raise InvalidInputError(f"points: expected an integer >= 1, got {points!r}")
    height = max(1, int(round(np.sqrt(points / aspect))))
    return max(1, int(round(points / height))), height


class DepthCamera:
    """See the module docstring. ``fov``: horizontal field of view [rad] in (0, pi)."""

    def __init__(self, scene: Scene, T_world_camera: pin.SE3, width: int, height: int, fov: float,
                 noise: float = 0.0, seed: int | None = None) -> None:
        if not 0.0 < fov < np.pi:
            raise InvalidInputError(f"fov: expected (0, pi) rad, got {fov!r}")
        self.scene = scene
        self.T_world_camera = T_world_camera
        self.width, self.height = int(width), int(height)
        self.noise = check_positive(noise, "noise", allow_zero=True)
        self._rng = np.random.default_rng(seed)
        f = (self.width / 2) / np.tan(fov / 2)  # focal length [px]
        u = (np.arange(self.width) + 0.5 - self.width / 2) / f
        v = (np.arange(self.height) + 0.5 - self.height / 2) / f
        uu, vv = np.meshgrid(u, v)
        d_cam = np.stack([uu, vv, np.ones_like(uu)], axis=-1).reshape(-1, 3)
        d_cam /= np.linalg.norm(d_cam, axis=1, keepdims=True)
        self.directions = d_cam @ T_world_camera.rotation.T  # (N, 3) unit rays, world frame
        self.origin = T_world_camera.translation.copy()
        world = scene.world
        gm = scene.collision_model
        self._shapes = []  # (the self-filter's shape table, half extents of its local bounding box)
        for g in range(world.n_robot_geometries):
            shape = _shape(gm.geometryObjects[g])  # computes aabb_local
            aabb = gm.geometryObjects[g].geometry.aabb_local
            self._shapes.append((shape, (np.array(aabb.max_) - np.array(aabb.min_)) / 2))
        self._data = scene.model.createData()
        self.set_boxes()

    @property
    def n_pixels(self) -> int:
        return len(self.directions)

    def set_boxes(self, boxes=()) -> None:
        """The boxes in view (:class:`CameraBox`); they do not move, so their depths are cast here, once."""
        t = np.full(self.n_pixels, np.inf)
        every = np.arange(self.n_pixels)
        for box in boxes:
            np.minimum(t, self._box_hits(box.T_world_box, np.asarray(box.half, dtype=float), every), out=t)
        self._static = t

    def depths(self, q: np.ndarray | None) -> np.ndarray:
        """(N,) distance along each ray to its first hit [m], inf where none (no noise); ``q``: the
        robot's configuration (None: the robot is not in view)."""
        t = self._static.copy()
        if q is not None:
            self._robot_hits(q, t)
        return t

    def render(self, q: np.ndarray | None) -> np.ndarray:
        """(height * width, 3) world-frame points, row-major, with noise; NaN where the ray hit nothing."""
        t = self.depths(q)
        hit = np.isfinite(t)
        if self.noise > 0.0:
            t[hit] += self._rng.normal(0.0, self.noise, int(np.count_nonzero(hit)))
        points = self.origin + t[:, None] * self.directions
        points[~hit] = np.nan
        return points

    # ------------------------------------------------------------------ intersections
    def _box_hits(self, T: pin.SE3, half: np.ndarray, rays: np.ndarray) -> np.ndarray:
        """Entry distance of ``rays`` (indices) into the box, inf where missed (the slab test)."""
        R, p = T.rotation, T.translation
        o = R.T @ (self.origin - p)  # the camera in the box frame
        d = self.directions[rays] @ R
        with np.errstate(divide="ignore", invalid="ignore"):
            inv = 1.0 / d
            t1, t2 = (-half - o) * inv, (half - o) * inv
        t1 = np.where(np.isnan(t1), -np.inf, t1)  # a ray parallel to a slab and inside it
        t2 = np.where(np.isnan(t2), np.inf, t2)
        near = np.minimum(t1, t2).max(axis=1)
        far = np.maximum(t1, t2).min(axis=1)
        hit = (near <= far) & (far > 0.0)
        return np.where(hit, np.maximum(near, 0.0), np.inf)

    def _robot_hits(self, q: np.ndarray, t: np.ndarray) -> None:
        model, data = self.scene.model, self._data
        pin.forwardKinematics(model, data, q)
        for s, half in self._shapes:
            T = data.oMi[s.joint] * s.placement  # T_world_geometry
            c = T.rotation @ s.center + T.translation
            oc = c - self.origin
            along = self.directions @ oc  # closest approach of each ray to the sphere's centre
            miss2 = oc @ oc - along * along
            rays = np.flatnonzero((miss2 <= s.radius * s.radius) & (along > -s.radius))
            if not len(rays):
                continue
            if s.kind == "box":
                hits = self._box_hits(T, np.asarray(s.dims), rays)
            elif s.kind == "convex":
                hits = self._convex_hits(T, s, half, rays)
            else:  # sphere, and every other shape by its bounding sphere
                r = s.dims[0] if s.kind == "sphere" else s.radius
                m2 = miss2[rays]
                inside = m2 <= r * r
                hits = np.where(inside, along[rays] - np.sqrt(np.maximum(r * r - m2, 0.0)), np.inf)
                hits = np.where(hits > 0.0, hits, np.inf)
            np.minimum(t[rays], hits, out=hits)
            t[rays] = hits

    def _convex_hits(self, T: pin.SE3, s, half: np.ndarray, rays: np.ndarray) -> np.ndarray:
        """Entry distance into the polytope n . x + o <= 0 (geometry frame), inf where missed: the rays
        through its bounding box first, then the half-spaces in float32 (0.1 um at 2 m)."""
        hits = np.full(len(rays), np.inf)
        box = self._box_hits(pin.SE3(T.rotation, T.rotation @ s.center + T.translation), half, rays)
        inside = np.flatnonzero(np.isfinite(box))
        if not len(inside):
            return hits
        R, p = T.rotation, T.translation
        o = R.T @ (self.origin - p)
        d = (self.directions[rays[inside]] @ R).astype(np.float32)  # (K, 3) in the geometry frame
        num = (-(s.normals @ o + s.offsets)).astype(np.float32)  # (F,) > 0: the camera is inside this face's half-space
        den = d @ s.normals.T.astype(np.float32)  # (K, F)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = num / den
        leaving = den > 0.0
        far = np.where(leaving, ratio, np.float32(np.inf)).min(axis=1)
        np.copyto(ratio, np.float32(-np.inf), where=leaving)
        near = ratio.max(axis=1)  # (a ray parallel to a face, den == 0, counts as a miss: measure zero)
        hit = (near <= far) & (far > 0.0)
        hits[inside] = np.where(hit, np.maximum(near, 0.0), np.inf)
        return hits
