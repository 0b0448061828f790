"""core/model/depth_camera.py (the mock camera's ray caster): the cloud has points on the table, the box
and the arm, each on its surface (to the noise); the node's ingest (decode, self-filter at the same
configuration) removes the arm's points and keeps the box's."""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
import pytest

from models import scene as cached_scene
from roboplan_ik_ros.core.config import PerceptionConfig
from roboplan_ik_ros.core.errors import InvalidInputError
from roboplan_ik_ros.core.model.depth_camera import CameraBox, DepthCamera, image_size, look_at
from roboplan_ik_ros.core.model.perceived_cloud import CloudIngest
from roboplan_ik_ros.core.model.point_cloud import PointCloudLayout, PointField
from test_perceived_cloud import placed_robot, robot_distance

NOISE = 0.002
TABLE = CameraBox(pin.SE3(np.eye(3), np.array([0.35, 0.0, -0.03])), np.array([0.6, 0.6, 0.02]))
BOX_CENTER, BOX_HALF = np.array([0.5, 0.2, 0.15]), np.array([0.06, 0.06, 0.15])
BOX = CameraBox(pin.SE3(np.eye(3), BOX_CENTER), BOX_HALF)


@pytest.fixture(scope="module")
def camera():
    s = cached_scene("panda")
    width, height = image_size(20000)
    cam = DepthCamera(s, look_at([1.4, -0.6, 1.3], [0.3, 0.0, 0.15]), width, height, math.radians(50), NOISE, seed=0)
    cam.set_boxes([TABLE, BOX])
    return cam


def _on_box(points, center, half, tol):
    """Points within ``tol`` of the box's surface."""
    local = np.abs(points - center)
    inside_grown = (local <= half + tol).all(axis=1)
    inside_shrunk = (local < half - tol).all(axis=1)
    return inside_grown & ~inside_shrunk


def test_image_size_and_bad_parameters():
    w, h = image_size(20000)
    assert abs(w * h - 20000) < 200 and abs(w / h - 4 / 3) < 0.02
    with pytest.raises(InvalidInputError, match="points"):
        image_size(0)
    with pytest.raises(InvalidInputError, match="equals its position"):
        look_at([1, 0, 0], [1, 0, 0])
    with pytest.raises(InvalidInputError, match="fov"):
        DepthCamera(cached_scene("panda"), look_at([1, 0, 1], [0, 0, 0]), 4, 3, 4.0)


def test_the_cloud_has_the_table_the_box_and_the_arm(camera):
    s = camera.scene
    q = s.named_configuration("default")
    points = camera.render(q)
    assert points.shape == (camera.width * camera.height, 3)
    hit = points[np.isfinite(points).all(axis=1)]
    assert 0 < len(hit) < len(points)  # some rays see nothing (NaN, as a depth camera's)
    tol = 5 * NOISE
    on_table = _on_box(hit, TABLE.T_world_box.translation, TABLE.half, tol)
    on_box = _on_box(hit, BOX_CENTER, BOX_HALF, tol)
    placed = placed_robot(s, q)
    on_arm = robot_distance(placed, hit, beyond=tol) <= tol  # on (or, by the noise, inside) a robot geometry: coal's distances
    assert on_table.sum() > 1000 and on_box.sum() > 100 and on_arm.sum() > 300
    # the box's visible faces only: the ones facing the camera (+x, -y, top)
    assert (hit[on_box, 0] > BOX_CENTER[0]).any() and (hit[on_box, 1] < BOX_CENTER[1]).any()
    local = hit[on_box] - BOX_CENTER
    interior = np.abs(local) < BOX_HALF - tol  # per axis: away from that axis' faces
    assert not ((local[:, 0] < 0) & interior[:, 1] & interior[:, 2]).any()  # the -x face is hidden
    assert not ((local[:, 1] > 0) & interior[:, 0] & interior[:, 2]).any()  # and the +y face
    # every point is on one of the three (to the noise): nothing else is drawn
    assert (on_table | on_box | on_arm).all()
    # without the robot: no point inside the arm's place
    empty = camera.render(None)
    assert (robot_distance(placed, empty[np.isfinite(empty).all(axis=1)], beyond=tol) > 0.0).all()


def test_the_arm_hides_what_is_behind_it(camera):
    s = camera.scene
    q = s.named_configuration("default")
    with_arm, without = camera.depths(q), camera.depths(None)
    assert (with_arm <= without).all()
    assert (with_arm < without - 0.05).sum() > 300  # the arm in front of the table


def test_the_node_ingest_removes_the_arm_and_keeps_the_box(camera):
    """The organized float32 cloud the mock camera publishes, through CloudIngest (the node's path)."""
    s = camera.scene
    q = s.named_configuration("default")
    points = camera.render(q).astype(np.float32)
    layout = PointCloudLayout([PointField(n, 4 * k, 7, 1) for k, n in enumerate("xyz")], camera.width, camera.height,
                              12, 12 * camera.width, False, False)
    config = PerceptionConfig(voxel_size=0.0)
    cloud = CloudIngest(s, config).ingest(layout, points.tobytes(), np.eye(3), np.zeros(3), q)
    assert cloud.invalid == np.isnan(points).any(axis=1).sum() > 0
    assert cloud.self_points > 300
    kept = cloud.points
    # no point of the arm is left: every kept point is farther than the padding from every robot geometry
    assert robot_distance(placed_robot(s, q), kept, beyond=1.0).min() > config.self_filter_padding
    assert _on_box(kept, BOX_CENTER, BOX_HALF, 5 * NOISE).sum() > 100  # the box is
    assert _on_box(kept, TABLE.T_world_box.translation, TABLE.half, 5 * NOISE).sum() > 1000
