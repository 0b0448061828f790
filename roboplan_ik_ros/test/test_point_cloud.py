"""core/model/point_cloud.py: PointCloud2 payload decoding (and its refusals), crop, voxel filter."""

from __future__ import annotations

import coal
import numpy as np
import pytest

from roboplan_ik_ros.core.errors import InvalidInputError
from roboplan_ik_ros.core.model.compiled_pairs import octree_centers
from roboplan_ik_ros.core.model.point_cloud import (POINT_FIELD_TYPES, PointCloudLayout, PointField, crop_points,
                                                    decode_points, octree_cells, transform_points, voxel_filter)

FLOAT32, FLOAT64, UINT8 = 7, 8, 2


def xyz_layout(n: int, step: int = 16, height: int = 1, **kwargs) -> PointCloudLayout:
    fields = kwargs.pop("fields", [PointField("x", 0, FLOAT32), PointField("y", 4, FLOAT32), PointField("z", 8, FLOAT32)])
    return PointCloudLayout(fields, n // height, height, step, step * (n // height), **kwargs)


def packed(points: np.ndarray, step: int = 16, dtype=np.float32, bigendian: bool = False) -> bytes:
    size = np.dtype(dtype).itemsize
    buf = np.zeros((len(points), step // size), dtype=(">" if bigendian else "<") + np.dtype(dtype).str[1:])
    buf[:, :3] = points
    return buf.tobytes()


def test_decodes_float32_xyz_with_padding():
    pts = np.random.default_rng(0).uniform(-1, 1, (100, 3))
    out = decode_points(xyz_layout(100), packed(pts))
    np.testing.assert_allclose(out.points, pts.astype(np.float32), rtol=0, atol=0)
    assert out.points.dtype == np.float64 and out.points.shape == (100, 3)
    assert (out.invalid, out.received) == (0, 100)


def test_decodes_float64_bigendian_organized_cloud_with_row_padding():
    pts = np.random.default_rng(1).uniform(-1, 1, (6, 3))
    fields = [PointField("z", 16, FLOAT64), PointField("x", 0, FLOAT64), PointField("y", 8, FLOAT64),
              PointField("rgb", 24, FLOAT32)]
    rows = [packed(pts[r * 3:(r + 1) * 3], 32, np.float64, bigendian=True) + b"\0" * 8 for r in range(2)]
    layout = PointCloudLayout(fields, 3, 2, 32, 3 * 32 + 8, is_bigendian=True)
    np.testing.assert_array_equal(decode_points(layout, b"".join(rows)).points, pts)


def test_nan_points_are_dropped_and_counted_unless_the_cloud_claims_to_be_dense():
    pts = np.random.default_rng(2).uniform(-1, 1, (10, 3))
    pts[3, 1] = np.nan
    pts[7, 2] = np.inf
    out = decode_points(xyz_layout(10), packed(pts))
    assert out.invalid == 2 and len(out.points) == 8 and np.isfinite(out.points).all()
    with pytest.raises(InvalidInputError, match="is_dense: true, but 2 of 10 points"):
        decode_points(xyz_layout(10, is_dense=True), packed(pts))


def test_empty_cloud_is_valid():
    out = decode_points(xyz_layout(0), b"")
    assert out.points.shape == (0, 3) and out.received == 0


@pytest.mark.parametrize("layout, data, message", [
    (xyz_layout(4, fields=[PointField("x", 0, FLOAT32), PointField("y", 4, FLOAT32)]), bytes(64), "no 'z' field"),
    (xyz_layout(4, fields=[PointField("x", 0, FLOAT32), PointField("y", 4, FLOAT32), PointField("z", 8, 9)]),
     bytes(64), r"fields\['z'\].datatype: 9 is not a PointField datatype"),
    (xyz_layout(4, step=8), bytes(32), r"point_step: 8 bytes, but field 'z' \(FLOAT32, 4 bytes\) is at offset 8; "
                                       "expected point_step >= 12"),
    (xyz_layout(4), bytes(60), r"data: 60 bytes; expected row_step \* height = 64 \* 1 = 64"),
    (PointCloudLayout([PointField("x", 0, FLOAT32), PointField("y", 4, FLOAT32), PointField("z", 8, FLOAT32)],
                      4, 1, 16, 32), bytes(32), r"row_step: 32 bytes; expected >= width \* point_step"),
    (xyz_layout(4, fields=[PointField("x", 0, FLOAT32), PointField("y", 4, FLOAT32), PointField("z", 8, FLOAT32, 0)]),
     bytes(64), r"fields\['z'\].count: 0"),
])
def test_malformed_clouds_are_refused_naming_the_field(layout, data, message):
    with pytest.raises(InvalidInputError, match=message):
        decode_points(layout, data)


def test_uint8_coordinates_are_numbers_too():
    fields = [PointField("x", 0, UINT8), PointField("y", 1, UINT8), PointField("z", 2, UINT8)]
    layout = PointCloudLayout(fields, 2, 1, 3, 6)
    np.testing.assert_array_equal(decode_points(layout, bytes([1, 2, 3, 4, 5, 6])).points, [[1, 2, 3], [4, 5, 6]])


def test_transform_and_crop():
    R = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])  # 90 deg about z
    out = transform_points(R, [1.0, 0.0, 0.0], np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 2.0]]))
    np.testing.assert_allclose(out, [[1.0, 1.0, 0.0], [1.0, 0.0, 2.0]])
    kept = crop_points(out, np.array([-np.inf, -np.inf, 0.5]), np.array([np.inf, np.inf, np.inf]))
    np.testing.assert_allclose(kept, [[1.0, 0.0, 2.0]])


def test_voxel_filter_one_centroid_per_occupied_voxel():
    rng = np.random.default_rng(3)
    cells = np.array([[0, 0, 0], [3, -2, 1], [-5, 4, 7]])
    pts = np.vstack([(c + rng.uniform(0, 1, (50, 3))) * 0.02 for c in cells])
    out = voxel_filter(pts, 0.02)
    assert len(out) == 3
    expected = np.array([pts[k * 50:(k + 1) * 50].mean(axis=0) for k in range(3)])
    np.testing.assert_allclose(np.sort(out, axis=0), np.sort(expected, axis=0), atol=1e-12)
    assert len(voxel_filter(pts, 0.0)) == len(pts)
    assert np.array_equal(np.unique(np.floor(out / 0.02), axis=0).shape, (3, 3))


def test_voxel_filter_drops_voxels_with_fewer_than_min_points():
    """min_points: the voxels with fewer points go, the others keep the centroids of the plain filter."""
    rng = np.random.default_rng(4)
    cells = np.array([[0, 0, 0], [3, -2, 1], [-5, 4, 7]])
    sizes = [1, 2, 5]  # points per voxel
    pts = np.vstack([(c + rng.uniform(0, 1, (n, 3))) * 0.02 for c, n in zip(cells, sizes)])
    every = voxel_filter(pts, 0.02)
    for min_points in (1, 2, 3, 6):
        out = voxel_filter(pts, 0.02, min_points)
        kept = [k for k, n in enumerate(sizes) if n >= min_points]
        expected = np.array([pts[sum(sizes[:k]):sum(sizes[:k + 1])].mean(axis=0) for k in kept]).reshape(-1, 3)
        assert len(out) == len(kept), min_points
        np.testing.assert_allclose(np.sort(out, axis=0), np.sort(expected, axis=0), atol=1e-12)
        assert all(np.isclose(every, p).all(axis=1).any() for p in out), "a kept voxel's centroid changed"


# ---------------------------------------------------------------- the fast paths equal the plain ones
def _decode_field_by_field(layout: PointCloudLayout, data: bytes) -> np.ndarray:
    """The reference decoder: a structured dtype, one field at a time into float64, then the finite rows."""
    order = ">" if layout.is_bigendian else "<"
    by_name = {f.name: f for f in layout.fields}
    point = np.dtype({"names": list("xyz"), "formats": [order + POINT_FIELD_TYPES[by_name[c].datatype] for c in "xyz"],
                      "offsets": [by_name[c].offset for c in "xyz"], "itemsize": layout.point_step})
    grid = np.ndarray((layout.height, layout.width), dtype=point, buffer=np.frombuffer(data, dtype=np.uint8),
                      strides=(layout.row_step, layout.point_step))
    points = np.stack([grid[c].reshape(-1).astype(np.float64) for c in "xyz"], axis=1)
    return points[np.isfinite(points).all(axis=1)]


@pytest.mark.parametrize("dtype, step, row_pad, bigendian", [
    (np.float32, 12, 0, False), (np.float32, 16, 0, False), (np.float32, 32, 8, False), (np.float64, 24, 0, False),
    (np.float64, 32, 16, True), (np.int16, 6, 2, True)])
def test_decode_reads_the_coordinates_as_one_block_exactly_as_field_by_field(dtype, step, row_pad, bigendian):
    rng = np.random.default_rng(7)
    width, height = 37, 5
    pts = rng.uniform(-100, 100, (width * height, 3))
    if np.dtype(dtype).kind == "f":
        pts[rng.integers(0, len(pts), 20), rng.integers(0, 3, 20)] = np.nan
        pts[3, 0], pts[4, 2] = np.inf, -np.inf
    rows = [packed(pts[r * width:(r + 1) * width], step, dtype, bigendian) + b"\7" * row_pad for r in range(height)]
    size = np.dtype(dtype).itemsize
    datatype = {np.float32: FLOAT32, np.float64: FLOAT64, np.int16: 3}[dtype]
    fields = [PointField(c, k * size, datatype) for k, c in enumerate("xyz")]
    layout = PointCloudLayout(fields, width, height, step, width * step + row_pad, is_bigendian=bigendian)
    data = b"".join(rows)
    out = decode_points(layout, data)
    expected = _decode_field_by_field(layout, data)
    assert out.points.dtype == np.float64 and out.points.flags.c_contiguous and out.points.flags.writeable
    np.testing.assert_array_equal(out.points, expected)
    assert out.invalid == len(pts) - len(expected)


def test_crop_with_infinite_bounds_equals_the_full_test():
    rng = np.random.default_rng(8)
    pts = rng.uniform(-1, 1, (500, 3))
    inf = np.inf
    for lower, upper in [([-inf] * 3, [inf] * 3), ([-inf, -inf, 0.2], [inf] * 3), ([-0.5, -inf, 0.0], [0.5, 0.3, inf]),
                         ([inf, -inf, -inf], [inf] * 3), ([-inf] * 3, [inf, -inf, inf]), ([0.9, 0.9, 0.9], [1, 1, 1])]:
        lower, upper = np.array(lower), np.array(upper)
        expected = pts[((pts >= lower) & (pts <= upper)).all(axis=1)]
        np.testing.assert_array_equal(crop_points(pts, lower, upper), expected)


def _voxel_filter_by_unique(points: np.ndarray, voxel_size: float) -> np.ndarray:
    """The reference voxel filter: np.unique's inverse and np.bincount's sums."""
    cells = np.floor(points / voxel_size).astype(np.int64)
    cells -= cells.min(axis=0)
    extent = cells.max(axis=0) + 1
    keys = (cells[:, 0] * extent[1] + cells[:, 1]) * extent[2] + cells[:, 2]
    unique, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
    out = np.stack([np.bincount(inverse, weights=points[:, k], minlength=len(unique)) for k in range(3)], axis=1)
    return out / counts[:, None]


def test_voxel_filter_equals_the_unique_and_bincount_reference_to_the_bit():
    rng = np.random.default_rng(9)
    crowded = rng.uniform(0, 0.04, (3000, 3))  # eight voxels of hundreds of points each
    spread = rng.uniform(-2, 2, (20000, 3))
    on_edges = rng.integers(-50, 50, (2000, 3)) * 0.02 + rng.choice([0.0, 1e-12, -1e-12], (2000, 3))
    for pts in (crowded, spread, on_edges, np.vstack([spread, crowded]), spread[:1]):
        for voxel in (0.01, 0.02, 0.05):
            np.testing.assert_array_equal(voxel_filter(pts, voxel), _voxel_filter_by_unique(pts, voxel))


@pytest.mark.parametrize("resolution", [0.02, 0.01, 0.05, 0.013])
def test_octree_cells_are_coal_octree_leaves_in_to_boxes_order(resolution):
    rng = np.random.default_rng(10)
    pts = rng.uniform(-2, 2, (4000, 3))
    pts[:2000] = rng.integers(-100, 100, (2000, 3)) * resolution + rng.choice([0, 1e-9, -1e-9, 1e-17], (2000, 3))
    far = np.array([[700.0, 0.0, 0.0], [0.0, -700.0, 0.0]])  # beyond octomap's 16-bit keys at 1-2 cm: not inserted
    for p in (pts, pts[:1], np.vstack([pts[:100], far])):
        np.testing.assert_array_equal(octree_cells(p, resolution), octree_centers(coal.makeOctree(p, resolution)))
    assert octree_cells(np.zeros((0, 3)), resolution).shape == (0, 3)
