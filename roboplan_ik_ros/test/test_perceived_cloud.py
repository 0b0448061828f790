"""core/model/self_filter.py and perceived_cloud.py: the robot's own points removed, the octree in the
scene as ``pairs: perceived`` (apart from ``pairs: obstacles``), its distances against brute force, the
barrier's Jacobian against finite differences, and a closed loop that keeps d_min from a perceived box."""

from __future__ import annotations

import dataclasses

import coal
import numpy as np
import pinocchio as pin
import pytest

from models import robot, scene as cached_scene
from roboplan_ik_ros.core import Scene
from roboplan_ik_ros.core.config import PerceptionConfig, load_config
from roboplan_ik_ros.core.control.control_loop import ControlLoop
from roboplan_ik_ros.core.errors import InvalidInputError
from roboplan_ik_ros.core.model.closest_pairs import ClosestObstacle, ClosestPairs
from roboplan_ik_ros.core.model.compiled_pairs import octree_centers
from roboplan_ik_ros.core.model.obstacles import Obstacle
from roboplan_ik_ros.core.model.perceived_cloud import CloudIngest
from roboplan_ik_ros.core.model.point_cloud import PointCloudLayout, PointField
from roboplan_ik_ros.core.model.self_filter import _inside
from roboplan_ik_ros.core.oink import Oink
from roboplan_ik_ros.core.oink.barriers.collision_barrier import CollisionBarrier
from roboplan_ik_ros.core.model.scene_config import scene_from_config

from test_closed_loop_bounds import TIP, panda_yaml
from test_closed_loop_obstacles import drive


def fresh_scene() -> Scene:
    r = robot("panda")
    return Scene(r.urdf_xml, r.srdf_xml, r.package_paths)


def box_surface(center, size, n, rng) -> np.ndarray:
    """``n`` points on the surface of an axis-aligned box."""
    half = np.asarray(size) / 2
    p = rng.uniform(-half, half, (n, 3))
    axis = rng.integers(0, 3, n)
    p[np.arange(n), axis] = np.where(rng.random(n) < 0.5, -1, 1) * half[axis]
    return p + center


def arm_surface(scene: Scene, q, n, rng) -> np.ndarray:
    """``n`` points on the robot's convex hulls at q (their vertices)."""
    data = scene.model.createData()
    pin.forwardKinematics(scene.model, data, q)
    pts = []
    for g in scene.collision_model.geometryObjects:
        if isinstance(g.geometry, coal.ConvexBase):
            T = data.oMi[g.parentJoint] * g.placement
            pts.append(np.array(g.geometry.points()) @ T.rotation.T + T.translation)
    pts = np.vstack(pts)
    return pts[rng.integers(0, len(pts), n)]


_DOT = coal.Sphere(1e-9)  # a point, for coal's distance queries


def placed_robot(scene: Scene, q) -> list:
    """The robot's collision geometries at q: (geometry, coal placement, world centre of its local AABB [m],
    the AABB's half diagonal [m]) each (pinocchio + coal)."""
    data = scene.model.createData()
    pin.forwardKinematics(scene.model, data, q)
    out = []
    for g in scene.collision_model.geometryObjects[: scene.world.n_robot_geometries]:
        T = data.oMi[g.parentJoint] * g.placement
        g.geometry.computeLocalAABB()
        lo, hi = np.array(g.geometry.aabb_local.min_), np.array(g.geometry.aabb_local.max_)
        out.append((g.geometry, coal.Transform3s(T.rotation, T.translation), T.act((lo + hi) / 2),
                    float(np.linalg.norm(hi - lo) / 2)))
    return out


def _point_distance(geometry, T, p) -> tuple[float, np.ndarray]:
    """(signed distance [m] of point p to the placed geometry, its nearest point on the geometry)."""
    res = coal.DistanceResult()
    d = coal.distance(geometry, T, _DOT, coal.Transform3s(np.eye(3), np.asarray(p, dtype=float)),
                      coal.DistanceRequest(), res)
    return d + _DOT.radius, np.array(res.getNearestPoint1())


def robot_distance(placed: list, points: np.ndarray, beyond: float = np.inf) -> np.ndarray:
    """Each point's signed distance [m] to the nearest robot geometry (coal alone: the reference of the
    self-filter tests, nothing of self_filter.py); a point farther than ``beyond`` from every geometry's
    bounding sphere gets that lower bound instead (> beyond)."""
    points = np.asarray(points, dtype=float).reshape(-1, 3)
    centres = np.array([c for _, _, c, _ in placed])
    radii = np.array([r for _, _, _, r in placed])
    lower = np.linalg.norm(points[:, None, :] - centres[None], axis=2) - radii  # (N, G) <= the distances
    out = lower.min(axis=1)
    for i in np.flatnonzero(out <= beyond):
        out[i] = min(_point_distance(placed[k][0], placed[k][1], points[i])[0]
                     for k in np.flatnonzero(lower[i] <= beyond))
    return out


def points_at_distance(placed: list, d: float, n: int, rng) -> np.ndarray:
    """Points at Euclidean distance ``d`` [m] from the robot (the nearest of its geometries; to 1e-6 m):
    each off a random geometry along the normal at its nearest point to a random far point, kept only if no
    other geometry is nearer. Between 0 and n of them."""
    candidates = []
    for _ in range(n):
        geometry, T, origin, _ = placed[rng.integers(len(placed))]
        u = rng.normal(size=3)
        far = origin + 0.5 * u / np.linalg.norm(u)
        _, nearest = _point_distance(geometry, T, far)
        normal = (far - nearest) / np.linalg.norm(far - nearest)
        candidates.append(nearest + d * normal)
    candidates = np.array(candidates)
    return candidates[np.abs(robot_distance(placed, candidates) - d) < 1e-6]


def test_self_filter_removes_every_point_within_the_padding_and_keeps_those_well_beyond():
    """Points placed at known distances from the arm (coal): within the padding (0.6 and 0.95 x) all removed;
    beyond sqrt(3) x it (1.8 and 2.5 x: a hull's inflated half-spaces reach that far at most) all kept, with
    the points of a box nearby. Sensitive both ways: half the padding keeps the 0.6 x points, twice it
    removes the 1.8 x ones."""
    s = cached_scene("panda")
    q = s.named_configuration("default")
    padding = 0.02
    rng = np.random.default_rng(1)
    placed = placed_robot(s, q)
    near = {f: points_at_distance(placed, f * padding, 600, rng) for f in (0.6, 0.95)}
    far = {f: points_at_distance(placed, f * padding, 600, rng) for f in (1.8, 2.5)}
    for f, pts in {**near, **far}.items():
        assert len(pts) >= 50, f"only {len(pts)} points at {f} x the padding: the construction failed"
    box = box_surface([0.5, 0.3, 0.1], [0.1, 0.1, 0.1], 1000, rng)
    assert robot_distance(placed, box).min() > 2.5 * padding  # the box is well away from the arm
    near_all = np.vstack(list(near.values()))
    ingest = CloudIngest(s, PerceptionConfig(voxel_size=0.0, self_filter_padding=padding))
    for f, pts in near.items():
        kept, removed = ingest.self_filter.filter(pts, q)
        assert removed == len(pts) and len(kept) == 0, f"{len(kept)} of {len(pts)} points {f} x the padding kept"
    for f, pts in far.items():
        kept, removed = ingest.self_filter.filter(np.vstack([pts, box]), q)
        assert removed == 0, f"{removed} of {len(pts)} points {f} x the padding from the arm removed"
        np.testing.assert_array_equal(kept, np.vstack([pts, box]))
    kept, removed = ingest.self_filter.filter(np.vstack([near_all, box]), q)
    assert removed == len(near_all)
    np.testing.assert_array_equal(kept, box)


def test_self_filter_of_raw_meshes_is_their_convex_hulls_not_their_bounding_spheres():
    """robot.convex_hulls: false: a mesh's points are those inside its vertices' hull grown by the padding, as
    with convex_hulls: true (the same mask on points 0.6 and 2.5 x the padding from the hulls); its bounding
    sphere (before) took the points 2.5 x the padding away too (a perceived box the hand came near lost its
    near face)."""
    r = robot("panda")
    hulls, meshes = cached_scene("panda"), Scene(r.urdf_xml, r.srdf_xml, r.package_paths, convex_hulls=False)
    assert any(isinstance(g.geometry, coal.BVHModelBase) for g in meshes.collision_model.geometryObjects)
    q = hulls.named_configuration("default")
    padding = 0.02
    rng = np.random.default_rng(7)
    placed = placed_robot(hulls, q)
    pts = np.vstack([points_at_distance(placed, f * padding, 400, rng) for f in (0.6, 2.5)])
    config = PerceptionConfig(voxel_size=0.0, self_filter_padding=padding)
    expected = CloudIngest(hulls, config).self_filter.robot_mask(pts, q)
    assert 50 <= expected.sum() < len(pts) - 50, "the construction failed: too few points on either side"
    np.testing.assert_array_equal(CloudIngest(meshes, config).self_filter.robot_mask(pts, q), expected)


def _robot_mask_per_geometry(self_filter, points: np.ndarray, q: np.ndarray) -> np.ndarray:
    """The reference self-filter: each geometry's bounding sphere over every point, then its exact test."""
    data = self_filter.scene.model.createData()
    pin.forwardKinematics(self_filter.scene.model, data, q)
    inside = np.zeros(len(points), dtype=bool)
    pad = self_filter.padding
    for s in self_filter._shapes:
        T = data.oMi[s.joint] * s.placement
        c = T.rotation @ s.center + T.translation
        gap = points - c
        near = np.flatnonzero(np.einsum("ij,ij->i", gap, gap) <= (s.radius + pad) ** 2)
        local = (points[near] - T.translation) @ T.rotation
        inside[near[_inside(s, local, pad)]] = True
    return inside


@pytest.mark.parametrize("padding", [0.0, 0.02, 0.03])
def test_self_filter_mask_equals_the_per_geometry_reference(padding):
    """All geometries' spheres in one product, then the exact tests: the same points as one geometry at a time
    (points on and around every hull, at their bounding spheres' edges, far away; an attached cylinder)."""
    s = fresh_scene()
    s.add_obstacle(Obstacle("rod", "cylinder", (0.01, 0.3), position=(0.0, 0.0, 0.25), frame="panda_hand"))
    self_filter = CloudIngest(s, PerceptionConfig(self_filter_padding=padding)).self_filter
    rng = np.random.default_rng(4)
    data = s.model.createData()
    for q in [s.named_configuration("default")] + [s.random_configuration(rng, s.group("arm"),
                                                                        s.named_configuration("default"))
                                                   for _ in range(5)]:
        pin.forwardKinematics(s.model, data, q)
        edges = []
        for shape in self_filter._shapes:  # on each bounding sphere's padded edge, to the rounding
            T = data.oMi[shape.joint] * shape.placement
            u = rng.normal(size=(40, 3))
            u /= np.linalg.norm(u, axis=1, keepdims=True)
            edges.append(T.rotation @ shape.center + T.translation + u * (shape.radius + padding))
        pts = np.vstack([arm_surface(s, q, 3000, rng) + rng.normal(0, 0.02, (3000, 3)), *edges,
                         rng.uniform([-1, -1, -0.1], [1, 1, 1.3], (5000, 3)), rng.uniform(-50, 50, (100, 3))])
        mask = self_filter.robot_mask(pts, q)
        np.testing.assert_array_equal(mask, _robot_mask_per_geometry(self_filter, pts, q))
        assert 0 < mask.sum() < len(pts)


def test_the_kernel_takes_the_ingested_cells_as_the_octree_holds_them():
    """CloudIngest computes the octree's occupied cells (point_cloud.octree_cells); they equal what the octree
    gives back (toBoxes), and a kernel given them answers as one that reads them from the octree."""
    s = fresh_scene()
    rng = np.random.default_rng(5)
    points = np.vstack([box_surface([0.5, 0.1, 0.3], [0.1, 0.12, 0.2], 1500, rng),
                        np.c_[rng.uniform(0.2, 0.8, (1500, 2)), rng.normal(0.02, 0.003, 1500)]])
    cloud = CloudIngest(s, PerceptionConfig()).cloud(points)
    np.testing.assert_array_equal(cloud.cells, octree_centers(cloud.octree))
    s.set_perceived_cloud(cloud)
    given = ClosestPairs(s, 4, 0.3, "perceived")
    s.set_perceived_cloud(dataclasses.replace(cloud, cells=None))
    read_back = ClosestPairs(s, 4, 0.3, "perceived")
    if given.compiled is None:
        pytest.skip(given.compiled_reason)
    for q in [s.named_configuration("default")] + [s.random_configuration(rng, s.group("arm"),
                                                                        s.named_configuration("default"))
                                                   for _ in range(8)]:
        data, geom_data = s.create_data()
        pin.forwardKinematics(s.model, data, q)
        pin.updateGeometryPlacements(s.model, data, s.collision_model, geom_data)
        a, b = given.query(data, geom_data), read_back.query(data, geom_data)
        assert a.count == b.count
        for name in ("pair_index", "distance", "point1", "point2", "normal"):
            np.testing.assert_array_equal(getattr(a, name)[:a.count], getattr(b, name)[:b.count])


def test_self_filter_removes_an_attached_object():
    s = fresh_scene()
    q = s.named_configuration("default")
    s.add_obstacle(Obstacle("rod", "cylinder", (0.01, 0.3), position=(0.0, 0.0, 0.25), frame="panda_hand"))
    ingest = CloudIngest(s, PerceptionConfig(self_filter_padding=0.01))
    tip = s.frame_pose(q, "panda_hand").act(np.array([0.0, 0.0, 0.38]))  # on the rod, far from the hand
    assert ingest.self_filter.robot_mask(tip[None], q).all()


def packed_cloud(points: np.ndarray) -> tuple[PointCloudLayout, bytes]:
    buf = np.zeros((len(points), 4), np.float32)
    buf[:, :3] = points
    fields = [PointField("x", 0, 7), PointField("y", 4, 7), PointField("z", 8, 7)]
    return PointCloudLayout(fields, len(points), 1, 16, 16 * len(points)), buf.tobytes()


def test_ingest_counts_and_crop():
    s = cached_scene("panda")
    q = s.named_configuration("default")
    rng = np.random.default_rng(1)
    table = np.c_[rng.uniform(0.2, 0.8, (500, 2)), np.full(500, -0.01)]
    box = box_surface([0.5, 0.3, 0.1], [0.1, 0.1, 0.1], 500, rng)
    pts = np.vstack([table, box, [[np.nan, 0, 0]]])
    ingest = CloudIngest(s, PerceptionConfig(crop_min=[-np.inf, -np.inf, 0.005]))
    layout, data = packed_cloud(pts)
    T = pin.SE3(pin.utils.rpyToMatrix(0.3, 0.0, 0.2), np.array([0.1, 0.0, 0.5]))  # a camera frame
    local = (pts - T.translation) @ T.rotation  # the same points in the camera frame
    layout, data = packed_cloud(local)
    cloud = ingest.ingest(layout, data, T.rotation, T.translation, q, "camera", 12.5)
    assert (cloud.received, cloud.invalid, cloud.cropped) == (1001, 1, 500)
    assert cloud.points.dtype == np.float64 and cloud.points.shape[1] == 3
    assert np.all(cloud.points[:, 2] > 0.04)  # the table is cropped, the box stays
    assert cloud.resolution == 0.02 and isinstance(cloud.octree, coal.OcTree)
    with pytest.raises(InvalidInputError, match="max_points"):
        CloudIngest(s, PerceptionConfig(max_points=100)).ingest(layout, data, T.rotation, T.translation, q)


def test_min_points_per_voxel_drops_a_lone_noisy_point_beyond_a_surface():
    """A face at x = 0.447 m with 2 mm noise: the one point past x = 0.44 (a voxel nearer) is a cell of its own
    with min_points_per_voxel 1, none with 2; the face's voxels stay. Keys refused with the reason."""
    s = cached_scene("panda")
    q = s.named_configuration("default")
    rng = np.random.default_rng(5)
    face = np.c_[np.full(400, 0.447) + rng.normal(0.0, 0.002, 400).clip(-0.005, 0.005),
                 rng.uniform(-0.06, 0.06, 400), rng.uniform(0.42, 0.54, 400)]
    outlier = [[0.438, 0.0, 0.49]]  # 4.5 sigma in front of the face
    layout, data = packed_cloud(np.vstack([face, outlier]))
    clouds = {n: CloudIngest(s, PerceptionConfig(min_points_per_voxel=n)).ingest(layout, data, np.eye(3),
                                                                                 np.zeros(3), q)
              for n in (1, 2)}
    near = {n: int((c.cells[:, 0] < 0.44).sum()) for n, c in clouds.items()}
    assert near == {1: 1, 2: 0}, near
    assert len(clouds[2].cells) == len(clouds[1].cells) - 1, "only the lone point's voxel went"
    for value, match in ((0, "min_points_per_voxel: expected an integer >= 1"), (2.5, "expected an integer"),
                         (True, "expected an integer")):
        with pytest.raises(InvalidInputError, match=match):
            load_config(dict(tasks=[dict(name="ee", type="frame", frame=TIP)],
                             perception=dict(min_points_per_voxel=value)))
    with pytest.raises(InvalidInputError, match="needs voxels; expected voxel_size > 0"):
        load_config(dict(tasks=[dict(name="ee", type="frame", frame=TIP)],
                         perception=dict(min_points_per_voxel=2, voxel_size=0.0)))


def test_octree_distance_against_brute_force_points():
    """The octree's distance to a robot link is within one voxel diagonal below the distance to the points."""
    s = fresh_scene()
    rng = np.random.default_rng(2)
    points = box_surface([0.45, 0.0, 0.12], [0.1, 0.1, 0.24], 3000, rng)
    cfg = PerceptionConfig(voxel_size=0.0, octree_resolution=0.01)
    s.set_perceived_cloud(CloudIngest(s, cfg).cloud(points))
    pairs = ClosestPairs(s, 1, np.inf, "perceived")
    data, geom_data = s.create_data()
    group = s.group("panda_arm") if "panda_arm" in s.srdf.groups else s.group("")
    checked = 0
    while checked < 10:
        q = s.random_configuration(rng, group, s.named_configuration("default"))
        pin.forwardKinematics(s.model, data, q)
        pin.updateGeometryPlacements(s.model, data, s.collision_model, geom_data)
        res = pairs.query(data, geom_data)
        if not res.count or res.distance[0] < 0.02:
            continue
        k = int(res.pair_index[0])
        g = s.collision_model.geometryObjects[int(pairs.first[k])]
        sphere = coal.Sphere(1e-6)
        T_geom = geom_data.oMg[int(pairs.first[k])]
        brute = min(coal.distance(g.geometry, coal.Transform3s(T_geom.rotation, T_geom.translation), sphere,
                                  coal.Transform3s(np.eye(3), p), coal.DistanceRequest(), coal.DistanceResult())
                    for p in points)
        assert brute - np.sqrt(3) * 0.01 - 1e-4 <= res.distance[0] <= brute + 1e-4
        # witness points: point1 on the robot geometry, point2 on the cloud, normal from 1 to 2
        np.testing.assert_allclose(np.linalg.norm(res.point2[0] - res.point1[0]), res.distance[0], atol=1e-6)
        assert res.point2[0][2] <= 0.24 + 0.02  # on the cloud's side
        checked += 1


def test_pair_sets_keep_perceived_and_obstacles_apart():
    s = fresh_scene()
    s.add_obstacle(Obstacle("table", "box", (1.2, 1.2, 0.04), position=(0.35, 0.0, -0.03)))
    assert len(ClosestPairs(s, 1, np.inf, "perceived").first) == 0
    n_obstacle_pairs = len(ClosestPairs(s, 1, np.inf, "obstacles").first)
    s.set_perceived_cloud(CloudIngest(s, PerceptionConfig()).cloud(np.array([[0.5, 0.3, 0.2]])))
    perceived = ClosestPairs(s, 1, np.inf, "perceived")
    moving = sum(1 for g in s.collision_model.geometryObjects[:s.world.n_robot_geometries] if g.parentJoint != 0)
    assert len(perceived.first) == moving
    assert len(ClosestPairs(s, 1, np.inf, "obstacles").first) == n_obstacle_pairs
    s.add_obstacle(Obstacle("part", "sphere", (0.02,), position=(0, 0, 0.1), frame="panda_hand"))
    assert len(ClosestPairs(s, 1, np.inf, "perceived").first) == moving + 1  # the attached part too
    name, link, d = ClosestObstacle(s, "perceived").query(s.named_configuration("default"))
    assert name == "perceived:cloud" and np.isfinite(d)
    s.set_perceived_cloud(None)
    assert len(ClosestPairs(s, 1, np.inf, "perceived").first) == 0
    assert ClosestObstacle(s, "perceived").query(s.named_configuration("default"))[0] == ""


def test_perceived_barrier_jacobian():
    s = fresh_scene()
    rng = np.random.default_rng(4)
    s.set_perceived_cloud(CloudIngest(s, PerceptionConfig(octree_resolution=0.01)).cloud(
        box_surface([0.45, 0.2, 0.3], [0.1, 0.1, 0.1], 2000, rng)))
    oink = Oink(s, "panda_arm" if "panda_arm" in s.srdf.groups else "")
    barrier = CollisionBarrier(oink, 2, 0.01, broad_phase_cutoff=np.inf, pairs="perceived")
    checked = 0
    while checked < 5:
        q = s.random_configuration(rng, oink.group, s.named_configuration("default"))
        pin.computeJointJacobians(s.model, oink.data, q)
        pin.framesForwardKinematics(s.model, oink.data, q)
        pin.updateGeometryPlacements(s.model, oink.data, s.collision_model, oink.geom_data)
        barrier.update(q, oink.data, oink.geom_data)
        if barrier.value.min() < 0.02 or not np.isfinite(barrier.value).all():
            continue
        J, h0 = barrier.jacobian.copy(), barrier.value.copy()
        fd = np.zeros_like(J)
        eps = 1e-5
        for c, iv in enumerate(oink.group.v_indices):
            dq = np.zeros(s.model.nv)
            dq[iv] = eps
            qp = pin.integrate(s.model, q, dq)
            pin.framesForwardKinematics(s.model, oink.data, qp)
            pin.updateGeometryPlacements(s.model, oink.data, s.collision_model, oink.geom_data)
            fd[:, c] = (barrier.evaluate(oink.data, oink.geom_data) - h0) / eps
        np.testing.assert_allclose(J, fd, atol=5e-3, rtol=5e-2)
        checked += 1


def test_closed_loop_keeps_d_min_from_a_perceived_box():
    """panda.yaml with a perceived barrier; a sweep through a box that only the cloud knows."""
    data, settings = panda_yaml()
    data["barriers"] = [b for b in data["barriers"] if b["name"] != "workspace"]
    d_min = 0.03
    data["barriers"] = [b for b in data["barriers"] if b["name"] != "perceived"]  # the shipped one: d_min here
    data["barriers"].append({"name": "perceived", "type": "collision", "pairs": "perceived", "n_collision_pairs": 4,
                             "d_min": d_min, "gain": 5.0, "safe_displacement_gain": 1.0e-4})
    config = load_config(data)
    r = robot("panda")
    scene = scene_from_config(r.urdf_xml, r.srdf_xml, config.robot, r.package_paths, config.obstacles)
    rng = np.random.default_rng(5)
    points = box_surface([0.45, 0.0, 0.115], [0.1, 0.1, 0.25], 4000, rng)
    cloud = CloudIngest(scene, config.perception).cloud(points)
    scene.set_perceived_cloud(cloud)
    loop = ControlLoop(scene, config, settings)
    start = scene.frame_pose(scene.named_configuration("default"), TIP)
    left = pin.SE3(start.rotation, np.array([0.45, 0.25, 0.15]))
    right = pin.SE3(start.rotation, np.array([0.45, -0.25, 0.15]))
    closest = ClosestObstacle(scene, "perceived")
    out = drive(loop, [left, right], 1500, closest.query)
    d = closest.query(out["q"])[2]
    print(f"\nsweep through a perceived box: closest {out['closest_perceived'] * 1e3:.2f} mm at the end {d * 1e3:.2f} mm "
          f"(d_min {d_min * 1e3:.0f} mm), QP failures {loop.counts.qp_failures}, holds {loop.counts.holds}, "
          f"peak acc/a_max {out['acc']:.3f}")
    assert out["closest_perceived"] >= d_min - 1e-3
    assert loop.guard.cuts == 0
    assert out["acc"] <= 1.0 + 1e-6 and out["jerk"] <= 1.0 + 1e-6
    tcp = scene.frame_pose(out["q"], TIP).translation
    assert d >= d_min - 1e-3
    assert tcp[1] > -0.2, "the arm passed through the perceived box"
