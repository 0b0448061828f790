"""Point clouds as numpy arrays: decoding a sensor_msgs/PointCloud2 payload, cropping, voxel filtering.

ROS-free: :func:`decode_points` takes the message's fields as plain values (``PointCloudLayout``), so
the core and its tests need no rclpy. Every operation is vectorised (no Python loop over points).

Row-wise work goes column by column (``finite &= isfinite(column)``, ``np.compress(mask, points,
axis=0)``): numpy's reductions along axis 1 of an (N, 3) array and its boolean row indexing cost 10-40x
more on these shapes (bench/bench_ingest.py).

Refusals raise :class:`InvalidInputError` naming the field at fault, what it was and what is expected
(``fields: no 'z' field; expected float fields x, y, z ...``). Points with a NaN or infinite
coordinate: a depth camera's organized cloud (``is_dense: false``) marks pixels without a return so,
and they are dropped and counted (:attr:`DecodedPoints.invalid`); a cloud that says ``is_dense: true``
and still has them is refused (it is not what it claims to be).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError

#: sensor_msgs/PointField datatypes -> numpy type (INT8 = 1 ... FLOAT64 = 8)
POINT_FIELD_TYPES = {1: "i1", 2: "u1", 3: "i2", 4: "u2", 5: "i4", 6: "u4", 7: "f4", 8: "f8"}
POINT_FIELD_NAMES = {1: "INT8", 2: "UINT8", 3: "INT16", 4: "UINT16", 5: "INT32", 6: "UINT32", 7: "FLOAT32",
                     8: "FLOAT64"}
COORDINATES = ("x", "y", "z")


@dataclass(frozen=True)
class PointField:
    """One sensor_msgs/PointField: ``name``, byte ``offset`` in a point, ``datatype`` (1-8), ``count``."""

    name: str
    offset: int
    datatype: int
    count: int = 1


@dataclass(frozen=True)
class PointCloudLayout:
    """The layout of a sensor_msgs/PointCloud2 payload (everything but the header and the data)."""

    fields: Sequence[PointField]
    width: int
    height: int
    point_step: int  # [bytes] per point
    row_step: int  # [bytes] per row (>= width * point_step)
    is_bigendian: bool = False
    is_dense: bool = False  # true: the sender promises no invalid (NaN/inf) point


@dataclass(frozen=True)
class DecodedPoints:
    """``points``: (N, 3) float64, finite, in the cloud's frame [m]; ``invalid``: points dropped for a
    NaN or infinite coordinate; ``received``: width * height."""

    points: np.ndarray
    invalid: int
    received: int


def decode_points(layout: PointCloudLayout, data: bytes | bytearray | memoryview | np.ndarray) -> DecodedPoints:
    """The x, y, z of every valid point of a PointCloud2 payload (see the module docstring)."""
    n_points = _check_layout(layout, len(data))
    if n_points == 0:
        return DecodedPoints(np.zeros((0, 3)), 0, 0)
    order = ">" if layout.is_bigendian else "<"
    by_name = {f.name: f for f in layout.fields}
    buffer = np.frombuffer(data, dtype=np.uint8) if not isinstance(data, np.ndarray) else data.view(np.uint8)
    raw = _coordinate_view(layout, by_name, order, buffer)
    if raw is None:  # the coordinates are not one type at consecutive offsets: one field at a time
        formats = [order + POINT_FIELD_TYPES[by_name[c].datatype] for c in COORDINATES]
        point = np.dtype({"names": list(COORDINATES), "formats": formats,
                          "offsets": [by_name[c].offset for c in COORDINATES], "itemsize": layout.point_step})
        grid = np.ndarray((layout.height, layout.width), dtype=point, buffer=buffer,
                          strides=(layout.row_step, layout.point_step))
        raw = np.empty((n_points, 3))
        for k, c in enumerate(COORDINATES):
            raw[:, k] = grid[c].reshape(-1)
    finite = np.isfinite(raw[:, 0])  # in the sender's type: finite there iff finite as float64
    finite &= np.isfinite(raw[:, 1])
    finite &= np.isfinite(raw[:, 2])
    invalid = n_points - int(np.count_nonzero(finite))
    if invalid and layout.is_dense:
        raise InvalidInputError(f"is_dense: true, but {invalid} of {n_points} points have a NaN or infinite "
                                "coordinate; expected is_dense: false for a cloud with invalid points")
    points = np.compress(finite, raw, axis=0) if invalid else raw
    if points.dtype != np.float64 or not (points.flags.c_contiguous and points.flags.owndata):
        points = np.array(points, dtype=np.float64, order="C")  # one copy; never a view of the message
    return DecodedPoints(points, invalid, n_points)


def _coordinate_view(layout: PointCloudLayout, by_name: dict, order: str, buffer: np.ndarray) -> np.ndarray | None:
    """(N, 3) view of x, y, z in the sender's type (no copy) when they share one datatype at consecutive
    offsets (x, y, z float32 at 0, 4, 8: every depth camera's layout), else None."""
    x, y, z = (by_name[c] for c in COORDINATES)
    if not x.datatype == y.datatype == z.datatype:
        return None
    dtype = np.dtype(order + POINT_FIELD_TYPES[x.datatype])
    size = dtype.itemsize
    if y.offset != x.offset + size or z.offset != x.offset + 2 * size:
        return None
    grid = np.ndarray((layout.height, layout.width, 3), dtype=dtype, buffer=buffer, offset=x.offset,
                      strides=(layout.row_step, layout.point_step, size))
    return grid.reshape(-1, 3)  # a view if the rows are unpadded, else one copy


def _check_layout(layout: PointCloudLayout, n_bytes: int) -> int:
    """The number of points (width * height), or raise naming what is wrong."""
    for key in ("width", "height", "point_step", "row_step"):
        value = getattr(layout, key)
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise InvalidInputError(f"{key}: expected an integer >= 0, got {value!r}")
    by_name: dict[str, PointField] = {}
    for f in layout.fields:
        by_name.setdefault(f.name, f)
    names = [f.name for f in layout.fields]
    for c in COORDINATES:
        if c not in by_name:
            raise InvalidInputError(f"fields: no {c!r} field (fields: {names}); expected fields x, y, z of a "
                                    "numeric datatype (FLOAT32 usually)")
        f = by_name[c]
        if f.datatype not in POINT_FIELD_TYPES:
            raise InvalidInputError(f"fields[{c!r}].datatype: {f.datatype} is not a PointField datatype; expected "
                                    f"one of {', '.join(f'{v} ({k})' for k, v in POINT_FIELD_NAMES.items())}")
        if f.count < 1:
            raise InvalidInputError(f"fields[{c!r}].count: {f.count}; expected >= 1")
        size = np.dtype(POINT_FIELD_TYPES[f.datatype]).itemsize
        if f.offset < 0 or f.offset + size > layout.point_step:
            raise InvalidInputError(
                f"point_step: {layout.point_step} bytes, but field {c!r} ({POINT_FIELD_NAMES[f.datatype]}, {size} "
                f"bytes) is at offset {f.offset}; expected point_step >= {f.offset + size}")
    n_points = layout.width * layout.height
    if n_points and layout.row_step < layout.width * layout.point_step:
        raise InvalidInputError(f"row_step: {layout.row_step} bytes; expected >= width * point_step = "
                                f"{layout.width} * {layout.point_step} = {layout.width * layout.point_step}")
    expected = layout.row_step * layout.height
    if n_bytes != expected:
        raise InvalidInputError(f"data: {n_bytes} bytes; expected row_step * height = {layout.row_step} * "
                                f"{layout.height} = {expected}")
    return n_points


def transform_points(R_world_frame: np.ndarray, t_world_frame: np.ndarray, points: np.ndarray) -> np.ndarray:
    """``T_world_frame * p`` for every row of ``points`` (N, 3) [m]."""
    out = points @ np.asarray(R_world_frame, dtype=float).T
    out += np.asarray(t_world_frame, dtype=float)
    return out


def crop_points(points: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """The points inside the axis-aligned box [lower, upper] (bounds may be infinite: an infinite bound
    is not tested, a point's coordinates being finite)."""
    lower, upper = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
    inside = None
    for k in range(3):
        for bound, keep in ((lower[k], np.greater_equal), (upper[k], np.less_equal)):
            if np.isinf(bound) and keep(0.0, bound):
                continue  # every finite coordinate is on the kept side
            test = keep(points[:, k], bound)
            inside = test if inside is None else np.logical_and(inside, test, out=inside)
    return points if inside is None else np.compress(inside, points, axis=0)


def voxel_filter(points: np.ndarray, voxel_size: float, min_points: int = 1) -> np.ndarray:
    """One point per occupied voxel of a grid of ``voxel_size`` [m] (cells ``floor(p / voxel_size)``):
    the centroid of the points in it (their sum in input order, divided by their count). Order: by
    cell. Voxels with fewer than ``min_points`` points are dropped (PCL's VoxelGrid
    ``setMinimumPointsNumberPerVoxel``: a depth camera's lone noisy point beyond a surface would make a
    cell one voxel nearer for one cloud only). ``voxel_size`` <= 0 returns ``points``."""
    if voxel_size <= 0 or len(points) == 0:
        return points
    cells = np.floor(points / voxel_size).astype(np.int64)
    for k in range(3):  # per column: a reduction along axis 0 of (N, 3) is slow
        cells[:, k] -= cells[:, k].min()
    extent = [int(cells[:, k].max()) + 1 for k in range(3)]
    keys = (cells[:, 0] * extent[1] + cells[:, 1]) * extent[2] + cells[:, 2]  # one int64 per cell
    order = np.argsort(keys)
    sorted_keys = keys[order]
    first = np.empty(len(keys), dtype=bool)  # the first point of each cell, in key order
    first[0] = True
    np.not_equal(sorted_keys[1:], sorted_keys[:-1], out=first[1:])
    cell = np.empty(len(keys), dtype=np.intp)
    cell[order] = np.cumsum(first) - 1  # each point's cell index (np.unique's inverse)
    n_cells = int(np.count_nonzero(first))
    out = np.empty((n_cells, 3))
    for k in range(3):  # bincount sums each cell's points in input order
        out[:, k] = np.bincount(cell, weights=points[:, k], minlength=n_cells)
    counts = np.bincount(cell, minlength=n_cells)
    out /= counts[:, None]
    if min_points > 1:
        out = np.compress(counts >= min_points, out, axis=0)
    return out


#: octomap's keys: 16 levels, key = floor(coordinate / resolution) + 2^15
OCTREE_DEPTH = 16
OCTREE_MAX_KEY = 1 << (OCTREE_DEPTH - 1)


def octree_cells(points: np.ndarray, resolution: float) -> np.ndarray:
    """(n, 3) centres of the leaves that ``coal.makeOctree(points, resolution)`` occupies, in its
    ``toBoxes`` order: what ``compiled_pairs.octree_centers`` reads back from that octree, computed
    without it. As octomap: a point's key per axis is ``floor(p * (1 / resolution)) + 2^15``
    (points outside the 16-bit key range are not inserted), a leaf's centre ``(key - 2^15 + 0.5) *
    resolution``; every leaf with a point is occupied and none is pruned (coal inserts lazily); leaves
    come depth first, children in octomap's order (x the lowest bit, then y, z): by Morton code."""
    if len(points) == 0:
        return np.zeros((0, 3))
    scaled = np.floor(points * (1.0 / resolution))  # coal hands octomap doubles
    valid = np.ones(len(scaled), dtype=bool)
    for k in range(3):
        valid &= (scaled[:, k] >= -OCTREE_MAX_KEY) & (scaled[:, k] < OCTREE_MAX_KEY)
    if not valid.all():
        scaled = np.compress(valid, scaled, axis=0)
    keys = scaled.astype(np.int64) + OCTREE_MAX_KEY  # (n, 3) in [0, 2^16)
    code = _spread_bits(keys[:, 0]) | (_spread_bits(keys[:, 1]) << 1) | (_spread_bits(keys[:, 2]) << 2)
    code.sort()  # the depth-first order
    if len(code) > 1:
        code = code[np.r_[True, code[1:] != code[:-1]]]  # one per leaf (np.unique: a hash table first, slower)
    keys = np.stack([_compact_bits(code), _compact_bits(code >> 1), _compact_bits(code >> 2)], axis=1)
    return ((keys - OCTREE_MAX_KEY).astype(np.float64) + 0.5) * resolution


def _spread_bits(v: np.ndarray) -> np.ndarray:
    """16-bit integers with two zero bits after each bit (bit i -> bit 3 i)."""
    v = v & 0xFFFF
    v = (v | (v << 16)) & 0x0000FF0000FF
    v = (v | (v << 8)) & 0x00F00F00F00F
    v = (v | (v << 4)) & 0x0C30C30C30C3
    v = (v | (v << 2)) & 0x249249249249
    return v


def _compact_bits(v: np.ndarray) -> np.ndarray:
    """The inverse of :func:`_spread_bits` (bits 0, 3, 6, ... -> 0, 1, 2, ...)."""
    v = v & 0x249249249249
    v = (v | (v >> 2)) & 0x0C30C30C30C3
    v = (v | (v >> 4)) & 0x00F00F00F00F
    v = (v | (v >> 8)) & 0x0000FF0000FF
    v = (v | (v >> 16)) & 0xFFFF
    return v
