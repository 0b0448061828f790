"""Compiled collision pair distances: kernel/pair_distance_kernel.cpp, loaded with ctypes.

One C++ call per query places the geometries, runs the broad phase (the same bounds as
:class:`ClosestPairs`' Python path) and coal's narrow phase on the candidates; a collision barrier makes two
per step over its own arrays (:class:`BarrierStep`): its update (the tracked pairs, with the urgent pairs'
choice and its history kept in the kernel, and every row: value and distance Jacobian over the group's
columns) and its evaluate at the step's end (the rows' values, the nearest untracked pair within d_min).
The kernel holds its own copies of the geometries, rebuilt from their parameters (coal's primitives, the
convex hull of the same points): coal's Python objects do not hand out their C++ pointers.

A point cloud (a coal ``OcTree``: the perceived cloud) is held as its occupied cells' centres, each an
axis-aligned cube of the octree's resolution, binned in a uniform grid of ``CLOUD_GRID_CELL``; its
distance to a geometry is the least over its cubes, as coal's octree distance, but computed by the
kernel's own narrow phase (kernel/cloud_distance.hpp): grid cells in increasing lower bound, coal's
distance to one cube only for cubes whose lower bound is below the least distance found (exact; measured
in bench/bench_cloud.py: tens of microseconds where coal's octree distance took 0.3-1 ms). The Python
path keeps coal's octree distance (the same distances, slow).

The library is built with the package when coal's headers and library are found (setup.py:
``roboplan_ik_ros.core.model._pair_distance_kernel``, linked against the coal that pinocchio
uses). Without it, or for a geometry it does not know (a swept-sphere radius, a height field), the
Python path runs: the same rows, slower, and :attr:`ClosestPairs.compiled_reason` says why.
"""

from __future__ import annotations

import ctypes
import operator
from pathlib import Path

import coal
import numpy as np

from ..compiled_library import array_address, check_layout, library_path, load_library

_LIBRARY_STEM = "_pair_distance_kernel"
GJK_TOLERANCE = 1e-6  # coal's default [m]; no guess is kept between calls, so equal input gives equal rows
CLOUD_GRID_CELL = 0.05  # [m] grid cell of a point cloud's narrow phase (bench/bench_cloud.py)

# shape kinds of pdk_add_geometry
_BOX, _SPHERE, _CYLINDER, _CAPSULE, _CONVEX, _MESH, _OCTREE = range(1, 8)

#: what a pdk_* call returns when it caught a C++ exception (coal's, or an allocation): pdk_last_error says which
_THREW = -2

_p = ctypes.c_void_p
_i64 = ctypes.c_int64
_f64 = ctypes.c_double


def _bind(lib: ctypes.CDLL) -> ctypes.CDLL:
    lib.pdk_new.restype, lib.pdk_new.argtypes = _p, [_f64]
    lib.pdk_free.restype, lib.pdk_free.argtypes = None, [_p]
    lib.pdk_add_geometry.restype = _i64
    lib.pdk_add_geometry.argtypes = [_p, _i64, _p, _p, _i64, _p, _i64, _i64, _p]
    lib.pdk_truncate.restype, lib.pdk_truncate.argtypes = None, [_p, _i64]
    lib.pdk_add_pair.restype, lib.pdk_add_pair.argtypes = _i64, [_p, _i64, _i64]
    lib.pdk_set_joint.restype, lib.pdk_set_joint.argtypes = _i64, [_p, _i64, _p, _p]
    lib.pdk_last_error.restype, lib.pdk_last_error.argtypes = ctypes.c_char_p, [_p]
    lib.pdk_closest.restype = _i64
    lib.pdk_closest.argtypes = [_p, _i64, _f64, _p, _p, _p, _p, _p]
    lib.pdk_narrow_calls.restype, lib.pdk_narrow_calls.argtypes = _i64, [_p]
    lib.pdk_distances.restype, lib.pdk_distances.argtypes = _i64, [_p, _i64, _p, _p]
    check_layout(lib, "pdk_layout", (BarrierStep,))  # AttributeError: a stale build, refused (Python path)
    lib.pdk_barrier_update.restype, lib.pdk_barrier_update.argtypes = _i64, [_p, _p]
    lib.pdk_barrier_evaluate.restype, lib.pdk_barrier_evaluate.argtypes = _i64, [_p, _p, _i64, _i64]
    return lib


class BarrierStep(ctypes.Structure):
    """Mirror of ``pdk_barrier_step`` (kernel/barrier_step.h): a collision barrier's arrays for its update and
    evaluate calls, set once (:func:`barrier_step`); ``cand_count``, ``tracked_count``, ``row_count`` and
    ``untracked_h`` are written by the calls."""

    _fields_ = [("n", _i64), ("n_candidates", _i64), ("size", _i64), ("urgent", _i64), ("cutoff", _f64),
                ("lookahead", _f64), ("nq", _i64), ("q", _p),
                ("cand_pair", _p), ("cand_distance", _p), ("cand_p1", _p), ("cand_p2", _p), ("cand_normal", _p),
                ("cand_count", _i64),
                ("tracked_pair", _p), ("tracked_distance", _p), ("tracked_p1", _p), ("tracked_p2", _p),
                ("tracked_normal", _p), ("tracked_count", _i64),
                ("approach", _p), ("urgency", _p), ("order", _p),
                ("rows_per_pair", _i64), ("margin", _f64), ("spacing", _f64), ("d_min", _f64), ("max_rows", _i64),
                ("J", _p), ("nv", _i64), ("columns", _p), ("n_columns", _i64), ("support", _p),
                ("row_pair", _p), ("a", _p), ("b", _p), ("normal", _p), ("h", _p), ("jacobian", _p), ("measured", _p),
                ("row_count", _i64), ("h_next", _p), ("distance_next", _p), ("untracked_h", _f64)]


def barrier_step(*, n: int, urgent: int, cutoff: float, q: np.ndarray, candidates, tracked, approach: np.ndarray,
                 urgency: np.ndarray, order: np.ndarray, rows_per_pair: int, margin: float, spacing: float,
                 d_min: float, J: np.ndarray, columns: np.ndarray, support: np.ndarray, rows,
                 h_next: np.ndarray, distance_next: np.ndarray) -> BarrierStep:
    """A BarrierStep over these arrays (``q``: where the caller writes each update's configuration; PairDistances
    ``candidates`` and ``tracked``; ``rows``: the rows' pair, a, b, normal, h, jacobian and measured arrays); the
    caller keeps every array alive and unmoved while it is used. Each array is checked to be what the kernel reads
    or writes (ValueError naming it). ``urgent`` 0: the n closest are the tracked pairs (``candidates`` unused)."""
    if not J.flags.f_contiguous or J.dtype != np.float64 or J.shape[0] != 6:
        raise ValueError("barrier_step: J must be pinocchio's column-major 6 x nv data.J")
    f64, i64 = np.float64, np.int64
    at = lambda name, a, dtype=f64: array_address("barrier_step", name, a, dtype)  # noqa: E731
    s = BarrierStep()
    s.n, s.n_candidates, s.size, s.urgent = n, len(candidates.distance), len(tracked.distance), urgent
    s.cutoff, s.lookahead, s.nq, s.q = cutoff, 1.0, len(q), at("q", q)
    for prefix, found in (("cand", candidates), ("tracked", tracked)):
        for field, key, dtype in (("pair", "pair_index", i64), ("distance", "distance", f64), ("p1", "point1", f64),
                                  ("p2", "point2", f64), ("normal", "normal", f64)):
            setattr(s, f"{prefix}_{field}", at(f"{prefix}.{key}", getattr(found, key), dtype))
    s.approach, s.urgency, s.order = at("approach", approach), at("urgency", urgency), at("order", order, i64)
    s.rows_per_pair, s.margin, s.spacing, s.d_min, s.max_rows = rows_per_pair, margin, spacing, d_min, len(rows.h)
    s.J, s.nv, s.n_columns = J.ctypes.data, J.shape[1], len(columns)
    s.columns, s.support = at("columns", columns, i64), at("support", support)
    s.row_pair = at("rows.pair", rows.pair, i64)
    for key in ("a", "b", "normal", "h", "jacobian", "measured"):
        setattr(s, key, at(f"rows.{key}", getattr(rows, key)))
    s.h_next, s.distance_next = at("h_next", h_next), at("distance_next", distance_next)
    s.untracked_h = np.inf
    return s


_PATH = library_path(Path(__file__).parent, _LIBRARY_STEM)
_LIBRARY, LOAD_ERROR = load_library(_PATH, _LIBRARY_STEM, _bind, "collision distances run in Python")
# The same library through a handle whose calls keep the GIL: the per-step calls (placements, closest pairs, the
# barriers' update and evaluate, distances: microseconds, in the control tick). Building the geometries (a mesh's
# convex hull: milliseconds, in the thread that prepares an obstacle change or a new cloud) goes through _LIBRARY
# and lets the tick run.
_STEP_LIBRARY = load_library(_PATH, _LIBRARY_STEM, _bind, "", keep_gil=True)[0] if _LIBRARY is not None else None


def _address(a: np.ndarray) -> int:
    return a.ctypes.data


def geometry_parameters(geometry, cells: np.ndarray | None = None) \
        -> tuple[int, np.ndarray, np.ndarray, np.ndarray] | str:
    """(kind, params, points (n, 3), triangles (m, 3)) of a coal geometry for the kernel, or why it cannot
    take it. ``cells``: an octree's occupied cell centres if known (``PerceivedCloud.cells``, equal to
    :func:`octree_centers`), else they are read back from the octree."""
    empty = np.zeros((0, 3))
    if hasattr(geometry, "getSweptSphereRadius") and geometry.getSweptSphereRadius() != 0.0:
        return f"{type(geometry).__name__} with a swept-sphere radius"
    if isinstance(geometry, coal.Box):
        return _BOX, 2.0 * np.asarray(geometry.halfSide, dtype=float), empty, empty
    if isinstance(geometry, coal.Sphere):
        return _SPHERE, np.array([geometry.radius]), empty, empty
    if isinstance(geometry, coal.Cylinder):
        return _CYLINDER, np.array([geometry.radius, 2.0 * geometry.halfLength]), empty, empty
    if isinstance(geometry, coal.Capsule):
        return _CAPSULE, np.array([geometry.radius, 2.0 * geometry.halfLength]), empty, empty
    if isinstance(geometry, coal.ConvexBase):
        return _CONVEX, np.zeros(1), np.ascontiguousarray(geometry.points(), dtype=float), empty
    if isinstance(geometry, coal.BVHModelBase):
        vertices = np.ascontiguousarray(geometry.vertices(), dtype=float).reshape(-1, 3)
        try:
            triangles = mesh_triangles(geometry)
        except (TypeError, AttributeError) as exc:  # another coal's bindings (Boost's ArgumentError is a TypeError)
            first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            return f"a {type(geometry).__name__} whose triangles this coal does not hand out ({first_line})"
        if not len(triangles) or triangles.min() < 0 or triangles.max() >= len(vertices):
            return f"a {type(geometry).__name__} without triangles over its {len(vertices)} vertices"
        return _MESH, np.zeros(1), vertices, triangles
    if isinstance(geometry, coal.OcTree):  # the centres of its occupied cells, at its resolution
        centers = octree_centers(geometry) if cells is None else np.ascontiguousarray(cells, dtype=float)
        return _OCTREE, np.array([geometry.getResolution(), CLOUD_GRID_CELL]), centers, empty
    return f"a {type(geometry).__name__}"


def mesh_triangles(mesh) -> np.ndarray:
    """(m, 3) vertex indices of a coal mesh's triangles. coal 3 hands them out one at a time
    (``tri_indices(i)``, ``num_tris``: no call for them all); read at build time, never in a step."""
    triangles = np.empty((mesh.num_tris, 3), dtype=np.int64)
    for i in range(len(triangles)):
        t = mesh.tri_indices(i)
        triangles[i] = t[0], t[1], t[2]
    return triangles


def octree_centers(octree) -> np.ndarray:
    """(n, 3) centres of an octree's occupied cells (cubes of its resolution), in ``toBoxes`` order (for
    ``coal.makeOctree``'s octrees ``point_cloud.octree_cells`` computes the same without the octree)."""
    boxes = np.asarray(octree.toBoxes(), dtype=float).reshape(-1, 6)
    occupied = boxes[:, 4] >= octree.getOccupancyThres()
    return np.ascontiguousarray(boxes[occupied, :3])


def is_convex(geometry) -> bool:
    """True for coal's shapes (primitives, convex hulls), whose points all lie beyond the plane through a
    witness point normal to the pair's normal; False for meshes and octrees (the kernel: BOX..CONVEX)."""
    return isinstance(geometry, coal.ShapeBase)


def box_vertices(half_side: np.ndarray) -> np.ndarray:
    """The 8 corners of a box centred at its frame's origin, in the kernel's order."""
    i = np.arange(8)
    signs = np.stack([np.where(i & 1, 0.5, -0.5), np.where(i & 2, 0.5, -0.5), np.where(i & 4, 0.5, -0.5)], axis=1)
    return signs * (2.0 * np.asarray(half_side, dtype=float))


def row_vertices(geometry) -> np.ndarray:
    """Local points that may each get a barrier row (the kernel's ``vertices``): a convex hull's points,
    a box's corners, a mesh's vertices; none for smooth shapes. An octree's cubes get rows too, from their
    corners (collision_rows.py), not from this."""
    if isinstance(geometry, coal.Box):
        return box_vertices(geometry.halfSide)
    if isinstance(geometry, coal.ConvexBase):
        return np.array(geometry.points(), dtype=float).reshape(-1, 3)
    if isinstance(geometry, coal.BVHModelBase):
        return np.array(geometry.vertices(), dtype=float).reshape(-1, 3)
    return np.zeros((0, 3))


class CompiledPairs:
    """A kernel holding ``geometries`` (collision-model objects) and ``pairs`` (indices into them);
    ``cells``: {index into ``objects``: the occupied cell centres of that octree} where known (see
    :func:`geometry_parameters`).

    Raises ValueError (with the reason) if the library is missing or a geometry is not supported.
    """

    def __init__(self, objects, pairs: np.ndarray, cells: dict[int, np.ndarray] | None = None) -> None:
        if _LIBRARY is None:
            raise ValueError(LOAD_ERROR)
        self._lib = _LIBRARY  # building (releases the GIL)
        self._step = _STEP_LIBRARY or _LIBRARY  # per-step queries (keep it)
        self._handle = self._lib.pdk_new(GJK_TOLERANCE)
        if not self._handle:
            raise ValueError("the pair distance kernel could not be created")
        self._joints = set()
        self._address_cache: dict = {}
        self.built_geometries = np.zeros(0, dtype=int)  # collision-model indices of the geometries held (set by the owner)
        self.rebuild(objects, pairs, cells=cells)

    def rebuild(self, objects, pairs: np.ndarray, keep: int = 0, cells: dict[int, np.ndarray] | None = None) -> None:
        """Geometries from index ``keep`` on are replaced by ``objects[keep:]`` (the first ``keep`` are
        already built, unchanged), and the pairs by ``pairs``; ``cells`` as in the constructor."""
        lib, h = self._lib, self._handle
        lib.pdk_truncate(h, keep)
        self.built_geometries = np.zeros(0, dtype=int)  # until the owner says what it holds
        for k, obj in enumerate(objects[keep:], start=keep):
            spec = geometry_parameters(obj.geometry, (cells or {}).get(k))
            if isinstance(spec, str):
                raise ValueError(f"geometry {obj.name!r} is {spec}, which the compiled kernel does not take")
            kind, params, points, triangles = spec
            params = np.ascontiguousarray(params, dtype=float)
            placement = np.concatenate([np.asarray(obj.placement.rotation).ravel(), obj.placement.translation])
            index = self._check(lib.pdk_add_geometry(h, kind, _address(params), _address(points), len(points),
                                                     _address(triangles), len(triangles), int(obj.parentJoint),
                                                     _address(np.ascontiguousarray(placement))),
                                f"adding geometry {obj.name!r}")
            if index != k:
                raise ValueError(f"geometry {obj.name!r}: coal refused its parameters in the compiled kernel")
            self._joints.add(int(obj.parentJoint))
        for a, b in np.asarray(pairs, dtype=np.int64).reshape(-1, 2):
            if self._check(lib.pdk_add_pair(h, int(a), int(b)), "adding a pair") < 0:
                raise ValueError("a pair names a geometry the kernel does not hold")
        self.n_pairs = len(pairs)
        self._data = None

    def __del__(self) -> None:
        handle = getattr(self, "_handle", None)
        if handle:
            self._lib.pdk_free(handle)
            self._handle = None

    def _check(self, result: int, what: str) -> int:
        """``result`` of a pdk_* call, or the C++ exception it caught as a RuntimeError (the kernel is unchanged
        by a call that threw before it wrote; the caller's step fails and ends as any error of the tick)."""
        if result == _THREW:
            message = (self._lib.pdk_last_error(self._handle) or b"").decode(errors="replace").strip()
            raise RuntimeError(f"collision kernel: {what}: coal or the allocator threw: {message}")
        return result

    def follow(self, data) -> None:
        """Read joint placements from ``data`` (views into it, kept: they follow every kinematics call)."""
        if data is self._data:
            return
        views = []
        for j in sorted(self._joints):
            R, t = data.oMi[j].rotation, data.oMi[j].translation
            if not (R.flags.f_contiguous and R.dtype == np.float64 and t.flags.c_contiguous):
                raise ValueError("pinocchio's joint placements are not column-major double arrays")
            self._check(self._step.pdk_set_joint(self._handle, j, _address(R), _address(t)), "joint placements")
            views.append((R, t))
        self._views, self._data = views, data

    def _addresses(self, key, *arrays) -> tuple[int, ...]:
        """The arrays' data addresses, taken once per set of arrays (``ndarray.ctypes`` costs ~1.5 us a call;
        the arrays are kept, so their memory and ids stay theirs)."""
        entry = self._address_cache.get(key)
        if entry is None or not all(map(operator.is_, entry[0], arrays)):
            entry = (arrays, tuple(_address(a) for a in arrays))
            self._address_cache[key] = entry
        return entry[1]

    def closest(self, data, n: int, cutoff: float, out) -> int:
        """The n closest pairs into ``out`` (a PairDistances); returns their count."""
        if data is not self._data:
            self.follow(data)
        count = self._step.pdk_closest(self._handle, n, cutoff, *self._addresses(
            ("closest", id(out)), out.pair_index, out.distance, out.point1, out.point2, out.normal))
        if count < 0:
            self._check(count, "closest pairs")
            raise ValueError("a joint carrying geometry has no placement")
        return count

    @property
    def narrow_calls(self) -> int:
        return int(self._step.pdk_narrow_calls(self._handle))

    def barrier_update(self, step: BarrierStep, data) -> int:
        """A collision barrier's update at the configuration in ``step``'s q array (pdk_barrier_update: the tracked
        pairs, then their rows, into ``step``'s arrays; its counts set). Returns the rows."""
        if data is not self._data:
            self.follow(data)
        rows = self._step.pdk_barrier_update(self._handle, ctypes.addressof(step))
        if rows < 0:
            self._check(rows, "a collision barrier's update")
            raise ValueError("a joint carrying geometry has no placement")
        return rows

    def barrier_evaluate(self, step: BarrierStep, data, tracked_count: int, row_count: int) -> None:
        """A collision barrier's evaluate at ``data``'s placements (pdk_barrier_evaluate: ``step.untracked_h``,
        ``step``'s h_next and distance_next)."""
        if data is not self._data:
            self.follow(data)
        result = self._step.pdk_barrier_evaluate(self._handle, ctypes.addressof(step), tracked_count, row_count)
        if result < 0:
            self._check(result, "a collision barrier's evaluate")
            raise ValueError("a joint carrying geometry has no placement")

    def distances(self, data, pairs: np.ndarray, count: int, out: np.ndarray) -> None:
        """Signed distances of ``pairs[:count]`` (int64 kernel pair indices) at ``data``'s placements into
        ``out[:count]``."""
        if data is not self._data:
            self.follow(data)
        result = self._step.pdk_distances(self._handle, count, *self._addresses(("distances", id(out)), pairs, out))
        if result < 0:
            self._check(result, "pair distances")
            raise ValueError("a joint carrying geometry has no placement")
