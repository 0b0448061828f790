"""core/model/point_cloud.py: PointCloud2 payload decoding (and its refusals), crop, voxel filter."""

from __future__ import annotations

import numpy as np
import pytest

from roboplan_ik_ros.core.errors import InvalidInputError
from roboplan_ik_ros.core.model.point_cloud import (PointCloudLayout, PointField, crop_points, decode_points,
                                                    transform_points, voxel_filter)

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
