"""Collision barrier behaviour that mutation testing found unchecked (docs/mutation.md, core/oink/barriers).

RowVertices.support (sphere, box, cylinder, capsule): the max of u.p over sampled surface points, oblique u.
RowVertices.cloud_candidates: per cube its corner least along m, floor <= value <= limit inclusive (brute force).
nearest_cubes: the cubes nearest to a shape by exact distance, the witness's left out, least first, ties by cube index
(brute force).
Cloud first in its pair (a part held after the cloud was set): cube rows point from the cube to the part, as the kernel.
A cloud carried by a link (collision model built by hand): its corners least along n, least bound first, as the kernel.
CollisionBarrier.prepare: no rebuild for an unchanged scene; an added obstacle reaches both paths after prepare().
measured_value and untracked_floor: the rows' and the nearest untracked pair's distance - d_min (brute force).
"""

from __future__ import annotations

import itertools

import coal
import numpy as np
import pinocchio as pin
import pytest

from models import finite_difference, robot
from roboplan_ik_ros.core import CollisionBarrier, Obstacle, Oink, Scene
from roboplan_ik_ros.core.config import PerceptionConfig
from roboplan_ik_ros.core.model import compiled_pairs
from roboplan_ik_ros.core.model.closest_pairs import ClosestPairs
from roboplan_ik_ros.core.model.compiled_pairs import GJK_TOLERANCE, octree_centers
from roboplan_ik_ros.core.model.perceived_cloud import CloudIngest
from roboplan_ik_ros.core.oink.barriers.collision_rows import CUBE_QUERIES, FLAT_AXIS, RowVertices, nearest_cubes

needs_kernel = pytest.mark.skipif(
    compiled_pairs.LOAD_ERROR != "",
    reason=f"the pair distance kernel is not built ({compiled_pairs.LOAD_ERROR}): nothing compiled to compare",
)
TOL = 1e-9  # [m] compiled vs Python rows (test_collision_rows)
CORNERS = np.array(list(itertools.product((-0.5, 0.5), repeat=3)))  # a unit cube's corners about its centre


def panda() -> Scene:
    r = robot("panda")
    return Scene(r.urdf_xml, r.srdf_xml, r.package_paths)


def kinematics(oink: Oink, q: np.ndarray) -> None:
    """What the solver computes before a barrier's update: joint Jacobians, frames, geometry placements."""
    model = oink.scene.model
    pin.computeJointJacobians(model, oink.data, q)
    pin.updateFramePlacements(model, oink.data)
    pin.updateGeometryPlacements(model, oink.data, oink.scene.collision_model, oink.geom_data)


def placed(scene: Scene, q: np.ndarray) -> pin.GeometryData:
    data, geom_data = scene.create_data()
    pin.forwardKinematics(scene.model, data, q)
    pin.updateGeometryPlacements(scene.model, data, scene.collision_model, geom_data)
    return geom_data


def coal_distance(geometry1, M1: pin.SE3, geometry2, M2: pin.SE3) -> coal.DistanceResult:
    """coal's distance of two placed geometries (a fresh result, the barrier's GJK tolerance)."""
    request, result = coal.DistanceRequest(), coal.DistanceResult()
    request.gjk_tolerance = GJK_TOLERANCE
    coal.distance(geometry1, coal.Transform3s(M1.rotation, M1.translation), geometry2,
                  coal.Transform3s(M2.rotation, M2.translation), request, result)
    return result


def row_jacobian_fd(scene: Scene, oink: Oink, q: np.ndarray, moving: int, point: np.ndarray, fixed: np.ndarray,
                    n0: np.ndarray) -> np.ndarray:
    """Central differences of n0.(p(q) - fixed) over the group's velocities: p = ``point`` (world, at q) carried by
    geometry ``moving``, ``fixed`` a world point, n0 held fixed."""
    model, gm = scene.model, scene.collision_model
    data, geom_data = scene.create_data()
    local = oink.geom_data.oMg[moving].actInv(point)

    def h(qq):
        pin.forwardKinematics(model, data, qq)
        pin.updateGeometryPlacements(model, data, gm, geom_data)
        return float(n0 @ (geom_data.oMg[moving].act(local) - fixed))

    return finite_difference(scene, oink.group.v_indices, q, h)


def assert_same_rows(c: CollisionBarrier, p: CollisionBarrier) -> None:
    """The compiled and the Python path's rows: the same count and pairs, a, b, normal, h, Jacobian to TOL."""
    assert c.rows.count == p.rows.count
    np.testing.assert_array_equal(c.rows.pair, p.rows.pair)
    m = c.rows.count
    for key in ("a", "b", "normal"):
        np.testing.assert_allclose(getattr(c.rows, key)[:m], getattr(p.rows, key)[:m], rtol=0.0, atol=TOL, err_msg=key)
    np.testing.assert_allclose(c.value, p.value, rtol=0.0, atol=TOL, err_msg="h")
    np.testing.assert_allclose(c.jacobian, p.jacobian, rtol=0.0, atol=TOL, err_msg="jacobian")


# ------------------------------------------------------------------- RowVertices.support
def unit(*xyzw: float) -> tuple[float, ...]:
    """A quaternion (x, y, z, w) scaled to norm 1."""
    return tuple(np.array(xyzw) / np.linalg.norm(xyzw))


#: world obstacles turned obliquely, and a rod held in the hand (turned by the arm too)
SHAPES = (
    Obstacle("can", "cylinder", (0.05, 0.3), position=(0.5, -0.3, 0.4), quaternion_xyzw=unit(0.2, 0.4, 0.1, 0.9)),
    Obstacle("pill", "capsule", (0.04, 0.25), position=(0.45, 0.3, 0.5), quaternion_xyzw=unit(-0.3, 0.1, 0.5, 0.8)),
    Obstacle("ball", "sphere", (0.06,), position=(0.6, 0.0, 0.2)),
    Obstacle("crate", "box", (0.1, 0.2, 0.15), position=(0.4, 0.0, 0.9), quaternion_xyzw=unit(0.1, -0.2, 0.3, 0.9)),
    Obstacle("rod", "cylinder", (0.015, 0.16), position=(0.0, 0.0, 0.13),
             quaternion_xyzw=(0.0, 0.70710678, 0.0, 0.70710678), frame="panda_hand",
             touch_links=("panda_leftfinger", "panda_rightfinger")),
)


def circle_max(u: np.ndarray, M: pin.SE3, radius: float, z: float) -> float:
    """max of u.p over sampled points p of the circle of ``radius`` at height z on a geometry's local z axis (placed
    at M): 2001 angles, then 2001 within +-2 of their steps about the best one (steps of 6e-6 rad)."""
    def best(t):
        local = np.stack([radius * np.cos(t), radius * np.sin(t), np.full(len(t), z)], axis=1)
        values = (local @ M.rotation.T + M.translation) @ u
        i = int(np.argmax(values))
        return values[i], t[i]

    step = 2.0 * np.pi / 2000
    _, t = best(np.linspace(0.0, 2.0 * np.pi, 2001))
    value, _ = best(np.linspace(t - 2 * step, t + 2 * step, 2001))
    return float(value)


def ball_max(u: np.ndarray, center: np.ndarray, radius: float) -> float:
    """max of u.p over sampled points p of the sphere of ``radius`` at ``center`` (world): a 101 x 201 grid of
    angles, then twice a 101 x 101 grid of +-2 steps of the grid before about its best sample (steps of 5e-5 rad)."""
    def best(theta, phi):
        T, P = np.meshgrid(theta, phi, indexing="ij")
        s = np.stack([np.sin(T) * np.cos(P), np.sin(T) * np.sin(P), np.cos(T)], axis=-1)
        values = (center + radius * s) @ u
        i = np.unravel_index(np.argmax(values), values.shape)
        return values[i], T[i], P[i]

    dt, dp = np.pi / 100, 2 * np.pi / 200
    value, t, p = best(np.linspace(0.0, np.pi, 101), np.linspace(0.0, 2 * np.pi, 201))
    for _ in range(2):
        value, t, p = best(np.linspace(t - 2 * dt, t + 2 * dt, 101), np.linspace(p - 2 * dp, p + 2 * dp, 101))
        dt, dp = dt / 25, dp / 25
    return float(value)


def test_support_of_sphere_box_cylinder_and_capsule_is_the_max_of_u_dot_p_over_their_surface():
    """support(g, u) = max over the points p of geometry g of u.p (u world, unit) [m]: against the max over a box's
    corners, a cylinder's two end circles, a capsule's two end spheres and a sphere, sampled (not the formula),
    for oblique unit directions (no component below 0.15), to 1e-9 m."""
    scene = panda()
    for obstacle in SHAPES:
        scene.add_obstacle(obstacle)
    q = scene.named_configuration("default")
    q[:7] += [0.3, 0.2, -0.4, 0.1, 0.5, -0.3, 0.7]  # the hand turned obliquely too
    pairs = ClosestPairs(scene, 1, np.inf, "obstacles", use_compiled=False)
    vertices = RowVertices(pairs)
    geom_data = placed(scene, q)
    hand = scene.frame_pose(q, "panda_hand")
    rng = np.random.default_rng(4)
    directions = [u for u in (v / np.linalg.norm(v) for v in rng.normal(size=(200, 3))) if np.abs(u).min() > 0.15][:12]
    assert len(directions) == 12
    checked = set()
    for obstacle in SHAPES:
        g = scene.collision_model.getGeometryId(f"obstacle:{obstacle.name}")
        M = hand * obstacle.T_frame_obstacle if obstacle.attached else obstacle.T_frame_obstacle  # independent of oMg
        for u in directions:
            if obstacle.shape == "box":
                expected = float(np.max((CORNERS * obstacle.dims) @ M.rotation.T @ u + M.translation @ u))
            elif obstacle.shape == "sphere":
                expected = ball_max(u, M.translation, obstacle.dims[0])
            elif obstacle.shape == "cylinder":
                radius, length = obstacle.dims
                expected = max(circle_max(u, M, radius, z) for z in (length / 2, -length / 2))
            else:  # capsule: its side lies between its end spheres
                radius, length = obstacle.dims
                expected = max(ball_max(u, M.act(np.array([0.0, 0.0, z])), radius) for z in (length / 2, -length / 2))
            assert vertices.support(geom_data, g, u) == pytest.approx(expected, abs=1e-9), (obstacle.name, u)
        checked.add(obstacle.shape)
    assert checked == {"box", "sphere", "cylinder", "capsule"}


# ------------------------------------------------------------------- RowVertices.cloud_candidates
R = 1.0 / 32  # [m] cube size: a power of two, so that the cube corners and values along an axis are exact
#: cubes (i, j, k): centre (i + 1/2, j + 1/2, k + 1/2) R; the block's top is at z = 6 R, over x in [12, 20] R and
#: y in [-4, 4] R: a cube's bottom is k - 6 cubes above it. The last, beside the block, is low but far from it.
CUBE_KEYS = ((13, -2, 7), (15, 1, 8), (17, 0, 7), (14, 2, 9), (18, -3, 10), (16, -1, 8), (12, 3, 11), (19, -4, 9),
             (13, 3, 8), (23, 0, 8))
BLOCK = Obstacle("block", "box", (8 * R, 8 * R, 2 * R), position=(16 * R, 0.0, 5 * R))
ON_BLOCK = np.array([16 * R, 0.0, 6 * R])  # a point on the block's top face


def block_under_cloud():
    """The Panda, the block (axis-aligned, world) and a perceived cloud of CUBE_KEYS' cubes (world frame = the
    cloud's); its cubes in the octree's order, as ClosestPairs' Python path reads them."""
    scene = panda()
    scene.add_obstacle(BLOCK)
    centers = (np.array(CUBE_KEYS, dtype=float) + 0.5) * R
    cloud = CloudIngest(scene, PerceptionConfig(voxel_size=R, octree_resolution=R)).cloud(centers)
    scene.set_perceived_cloud(cloud)
    pairs = ClosestPairs(scene, 1, np.inf, "all", use_compiled=False)
    g_cloud = scene.world.perceived_geometries()[0]
    g_block = scene.collision_model.getGeometryId("obstacle:block")
    cells = octree_centers(cloud.octree)
    assert sorted(map(tuple, cells)) == sorted(map(tuple, centers))  # the cubes asked for, no other
    return scene, pairs, g_cloud, g_block, cells


def expected_candidates(cells, m, q, floor, limit):
    """Brute force: per cube the corner least along m (of its 8; along an axis where |m| <= FLAT_AXIS the middle of
    the cube), value (corner - q).m, kept where floor <= value <= limit and the cube is within limit of the block
    (axis-aligned boxes: the exact distance)."""
    index, corners, values = [], [], []
    for i, c in enumerate(cells):
        corner = c + CORNERS[np.argmin(CORNERS @ m)] * R
        flat = np.abs(m) <= FLAT_AXIS
        corner[flat] = c[flat]
        value = float((corner - q) @ m)
        gap = np.maximum(np.abs(c - np.array(BLOCK.position)) - (np.array(BLOCK.dims) + R) / 2, 0.0)
        if floor <= value <= limit and float(np.linalg.norm(gap)) <= limit:
            index.append(i), corners.append(corner), values.append(value)
    return np.array(index, dtype=int), np.array(corners).reshape(-1, 3), np.array(values)


@pytest.mark.parametrize("m, floor, limit", [
    pytest.param((0.0, 0.0, 1.0), 2 * R, 3 * R, id="along-z-ends-exact"),
    pytest.param((FLAT_AXIS, 0.0, 1.0), 0.05, 0.08, id="x-at-flat-axis"),
    pytest.param((0.3, -0.2, 1.0), 0.03, 0.09, id="oblique"),
    pytest.param((-0.35, 0.25, 0.9), 0.0, 0.07, id="oblique-negative-x"),
])
def test_cloud_candidates_are_each_cubes_corner_least_along_m_with_floor_le_value_le_limit(m, floor, limit):
    """cloud_candidates(cloud, other=block, m, q, floor, limit): (indices, corners (world), values) of the cubes whose
    corner v least along m has floor <= m.(v - q) <= limit, both ends inclusive (along z the values are exact
    multiples of R: cubes at exactly floor and exactly limit are in), and whose distance bound to the block is
    <= limit (the low cube beside the block is out). Where |m| <= FLAT_AXIS along an axis, v is the middle of the
    cube along it."""
    m = np.array(m) / np.linalg.norm(m)
    _, pairs, g_cloud, g_block, cells = block_under_cloud()
    geom_data = placed(pairs.scene, pairs.scene.named_configuration("default"))
    vertices = RowVertices(pairs)
    index, corners, values = vertices.cloud_candidates(geom_data, g_cloud, g_block, m, ON_BLOCK, floor, limit)
    e_index, e_corners, e_values = expected_candidates(cells, m, ON_BLOCK, floor, limit)
    order = np.argsort(index)
    np.testing.assert_array_equal(index[order], e_index)
    np.testing.assert_allclose(corners[order], e_corners, rtol=0.0, atol=1e-12)
    np.testing.assert_allclose(values[order], e_values, rtol=0.0, atol=1e-12)
    all_values = expected_candidates(cells, m, ON_BLOCK, -np.inf, np.inf)[2]
    if m[0] == 0.0:  # the exact case: cubes at both ends, and the low cube beside the block within the values
        assert (e_values == floor).any() and (e_values == limit).any()
        assert (all_values < floor).any() and (all_values > limit).any()
    else:  # no value within rounding of the ends
        assert np.abs(all_values - floor).min() > 1e-6 and np.abs(all_values - limit).min() > 1e-6
    assert 0 < len(e_index) < len(cells)
    beside = int(np.flatnonzero((cells == (np.array(CUBE_KEYS[-1]) + 0.5) * R).all(axis=1))[0])
    assert beside not in set(index.tolist())
    if m[0] == 0.0:  # ... though its value is within the ends: out by its distance to the block only
        assert floor <= float((cells[beside] - (0.0, 0.0, R / 2) - ON_BLOCK) @ m) <= limit


# ------------------------------------------------------------------- a pair with the perceived cloud first
NEAR_RES = 0.01  # [m]
#: cube centres under the part (a sphere of 3 cm held 12 cm below the hand: centre near (0.307, 0, 0.470) at the
#: default configuration): seven within a few cm, at distinct distances, and three far below
NEAR_CUBES = np.array([[0.305, 0.005, 0.425], [0.325, 0.005, 0.425], [0.285, -0.015, 0.425], [0.305, 0.025, 0.435],
                       [0.335, -0.025, 0.445], [0.295, -0.005, 0.415], [0.315, -0.025, 0.425],
                       [0.205, 0.105, 0.305], [0.405, -0.105, 0.305], [0.455, 0.155, 0.205]])
#: cubes in pairs mirrored about the plane y = 0, which holds the part's centre (to ~1e-16 m at the default
#: configuration): each pair at the same distance from the part (to the 1 nm step of the order), then far ones
MIRRORED_CUBES = np.array([[0.305, y, z] for y0, z in [(0.005, 0.425), (0.015, 0.425), (0.025, 0.435), (0.005, 0.415)]
                           for y in (y0, -y0)] + [[0.205, 0.105, 0.305], [0.405, -0.105, 0.305]])
PART = Obstacle("part", "sphere", (0.03,), position=(0.0, 0.0, 0.12), frame="panda_hand")


def part_over_cloud(cubes: np.ndarray = NEAR_CUBES):
    """The perceived cloud of ``cubes`` (centres), then the part held in the hand (added after: its pair is (cloud,
    part))."""
    scene = panda()
    cloud = CloudIngest(scene, PerceptionConfig(voxel_size=NEAR_RES, octree_resolution=NEAR_RES)).cloud(cubes)
    scene.set_perceived_cloud(cloud)
    scene.add_obstacle(PART)
    g_cloud = scene.world.perceived_geometries()[0]
    g_part = scene.collision_model.getGeometryId("obstacle:part")
    return scene, g_cloud, g_part, octree_centers(cloud.octree)


def cube_distances(scene: Scene, geom_data, g_part: int, cells: np.ndarray) -> list[coal.DistanceResult]:
    """Per cube (octree order): coal's distance from the part to that cube alone (brute force)."""
    part = scene.collision_model.geometryObjects[g_part].geometry
    cube = coal.Box(NEAR_RES, NEAR_RES, NEAR_RES)
    return [coal_distance(part, geom_data.oMg[g_part], cube, pin.SE3(np.eye(3), c)) for c in cells]


def nearest_besides_the_witness(results, witness: np.ndarray, limit: float, count: int) -> list[int]:
    """The cubes within limit, least distance first (in steps of 1 nm, ties by cube index), not the witness's."""
    d = np.array([r.min_distance for r in results])
    witness_cube = int(np.argmin(d))
    assert np.linalg.norm(np.array(results[witness_cube].getNearestPoint2()) - witness) <= 1e-9
    keep = [i for i in range(len(results)) if i != witness_cube and d[i] <= limit]
    return sorted(keep, key=lambda i: (np.floor(d[i] * 1e9), i))[:count]


@pytest.mark.parametrize("cubes", [NEAR_CUBES, MIRRORED_CUBES], ids=["distinct", "mirrored"])
@pytest.mark.parametrize("count", [2, 3])
def test_nearest_cubes_are_the_cubes_nearest_to_the_shape_besides_the_witness_least_distance_first(count, cubes):
    """nearest_cubes(shape=part, cloud, n from the part, witness, d, limit, count): (p_shape, p_cube, unit normal
    from the shape, distance) of the ``count`` cubes nearest to the part by coal's exact distance to each cube,
    least first, the witness's cube left out; cubes at the same distance (mirrored ones) in cube index order. All
    near cubes are asked here (7 or 8 within the limit, <= CUBE_QUERIES * count; the others are > 15 cm away), and the
    near cubes' order by distance is not their index order."""
    scene, g_cloud, g_part, cells = part_over_cloud(cubes)
    q = scene.named_configuration("default")
    geom_data = placed(scene, q)
    pairs = ClosestPairs(scene, 1, 0.3, "perceived", use_compiled=False)
    data = scene.model.createData()
    pin.forwardKinematics(scene.model, data, q)
    found = pairs.query(data, geom_data)
    k = int(found.pair_index[0])
    assert (int(pairs.first[k]), int(pairs.second[k])) == (g_cloud, g_part), "the cloud is the pair's first geometry"
    d, witness, n = float(found.distance[0]), found.point1[0], found.normal[0]
    limit = d + 0.02
    out = nearest_cubes(pairs, RowVertices(pairs), geom_data, g_part, g_cloud, -n, witness, d, limit, count)
    results = cube_distances(scene, geom_data, g_part, cells)
    expected = nearest_besides_the_witness(results, witness, limit, count)
    witness_cube = int(np.argmin([r.min_distance for r in results]))
    within = [i for i, r in enumerate(results) if r.min_distance <= limit and i != witness_cube]
    assert len(within) > count and expected != sorted(within)[:count]  # not the lowest indices
    steps = [np.floor(results[i].min_distance * 1e9) for i in within]
    assert (len(set(steps)) < len(steps)) == (cubes is MIRRORED_CUBES)  # ties only among the mirrored cubes
    assert len(within) + 1 <= CUBE_QUERIES * count and all(r.min_distance <= limit or r.min_distance > 0.15
                                                           for r in results)
    assert len(out) == count
    for (p_shape, p_cube, normal, distance), i in zip(out, expected):
        assert distance == pytest.approx(results[i].min_distance, abs=1e-12)
        np.testing.assert_allclose(p_cube, results[i].getNearestPoint2(), atol=1e-12)
        np.testing.assert_allclose(p_shape, results[i].getNearestPoint1(), atol=1e-12)
        assert np.abs(p_cube - cells[i]).max() <= NEAR_RES / 2 + 1e-12  # on that cube
        assert np.linalg.norm(p_shape - geom_data.oMg[g_part].translation) == pytest.approx(PART.dims[0], abs=1e-12)
        np.testing.assert_allclose(normal, (p_cube - p_shape) / distance, atol=1e-9)


def part_barriers(use_compiled: bool):
    scene, g_cloud, g_part, cells = part_over_cloud()
    oink = Oink(scene, "arm")
    barrier = CollisionBarrier(oink, 1, 0.01, pairs="perceived", rows_per_pair=5, row_margin=0.02, d_min=0.005,
                               broad_phase_cutoff=0.3, use_compiled=use_compiled)
    return scene, oink, barrier, g_cloud, g_part, cells


@pytest.mark.parametrize("use_compiled", [True, False])
def test_cube_rows_of_a_pair_with_the_cloud_first_point_from_the_cube_to_the_part(use_compiled):
    """The pair (cloud, part) within row_margin of d_min: besides its witness row, rows_per_pair // 2 rows of the
    cubes nearest to the part (the witness's left out), each with a on that cube (geometry 1), b on the part,
    normal (b - a)/|b - a| (from geometry 1 to 2), h = |b - a| - d_min = that cube's distance - d_min, and
    Jacobian d/dq of n0.(b(q) - a) with b carried by the hand and a fixed in the world (finite differences)."""
    if use_compiled and compiled_pairs.LOAD_ERROR:
        pytest.skip(f"the pair distance kernel is not built ({compiled_pairs.LOAD_ERROR})")
    scene, oink, barrier, g_cloud, g_part, cells = part_barriers(use_compiled)
    q = scene.named_configuration("default")
    kinematics(oink, q)
    barrier.update(q, oink.data, oink.geom_data)
    found, rows = barrier.pairs.result, barrier.rows
    k = int(found.pair_index[0])
    assert (int(barrier.pairs.first[k]), int(barrier.pairs.second[k])) == (g_cloud, g_part)
    d = float(found.distance[0])
    assert 0.0 < d - barrier.d_min <= barrier.row_margin
    results = cube_distances(scene, oink.geom_data, g_part, cells)
    expected = nearest_besides_the_witness(results, found.point1[0], d + barrier.row_margin, 2)
    assert rows.count == 3 and (rows.pair[:3] == 0).all()
    center = oink.geom_data.oMg[g_part].translation
    for r, i in zip((1, 2), expected):
        a, b, n = rows.a[r], rows.b[r], rows.normal[r]
        assert np.abs(a - cells[i]).max() <= NEAR_RES / 2 + 1e-9, "a on the cube"
        assert np.linalg.norm(b - center) == pytest.approx(PART.dims[0], abs=1e-9), "b on the part"
        gap = np.linalg.norm(b - a)
        np.testing.assert_allclose(n, (b - a) / gap, atol=1e-9)
        assert barrier.value[r] == pytest.approx(gap - barrier.d_min, abs=1e-9)
        assert barrier.value[r] == pytest.approx(results[i].min_distance - barrier.d_min, abs=1e-9)
        expected_jacobian = row_jacobian_fd(scene, oink, q, g_part, b, a, n.copy())
        np.testing.assert_allclose(barrier.jacobian[r], expected_jacobian, rtol=0.0, atol=1e-6)
    assert barrier.rows.pair[3] == -1 and np.isinf(barrier.value[3:]).all()


@needs_kernel
def test_compiled_and_python_rows_agree_for_a_pair_with_the_cloud_first():
    """The (cloud, part) pair's rows (witness and cube rows), at the default configuration and two near it."""
    scene, oink, compiled, *_ = part_barriers(True)
    python = CollisionBarrier(oink, 1, 0.01, pairs="perceived", rows_per_pair=5, row_margin=0.02, d_min=0.005,
                              broad_phase_cutoff=0.3, use_compiled=False)
    rng = np.random.default_rng(2)
    q0 = scene.named_configuration("default")
    cube_rows = 0
    for q in (q0, q0 + np.r_[rng.uniform(-0.02, 0.02, 7), 0.0, 0.0], q0 + np.r_[rng.uniform(-0.02, 0.02, 7), 0.0, 0.0]):
        kinematics(oink, q)
        compiled.update(q, oink.data, oink.geom_data)
        python.update(q, oink.data, oink.geom_data)
        assert_same_rows(compiled, python)
        cube_rows += compiled.rows.count - compiled.pairs.result.count
    assert cube_rows >= 4


# ------------------------------------------------------------------- a cloud carried by a link
CARRIED_RES = 0.01  # [m]
#: the carried cloud: 5 x 5 columns of one cube each, at heights 0-2 cubes (seeded), 15 cm below the hand, turned
CARRIED_TILT = pin.SE3(pin.rpy.rpyToMatrix(0.3, -0.2, 0.5), np.array([0.0, 0.0, 0.15]))
TABLE = Obstacle("table", "box", (0.2, 0.2, 0.02), position=(0.31, 0.0, 0.37))  # top 2 cm below the cloud


def carried_cloud(use_compiled: bool, row_spacing: float):
    """The Panda holding a cloud (a coal OcTree on the hand's joint) over a small table. The API fixes point clouds to
    the world (CollisionWorld.set_perceived), so the geometry and its pair with the table are added to the collision
    model by hand; the pair is (table, cloud): the cloud second, its cubes' rows from cloud_candidates."""
    scene = panda()
    scene.add_obstacle(TABLE)
    rng = np.random.default_rng(0)
    columns = np.array([(i, j) for i in range(-2, 3) for j in range(-2, 3)])
    points = np.c_[(columns + 0.5) * CARRIED_RES, (rng.integers(0, 3, len(columns)) + 0.5) * CARRIED_RES]
    octree = coal.makeOctree(points, CARRIED_RES)
    gm = scene.collision_model
    hand = scene.model.getFrameId("panda_hand", pin.FrameType.BODY)
    frame = scene.model.frames[hand]
    gm.addGeometryObject(pin.GeometryObject("held:cloud", frame.parentJoint, hand, frame.placement * CARRIED_TILT,
                                            octree))
    g_cloud, g_table = gm.ngeoms - 1, gm.getGeometryId("obstacle:table")
    gm.addCollisionPair(pin.CollisionPair(g_table, g_cloud))
    oink = Oink(scene, "arm")
    barrier = CollisionBarrier(oink, 1, 0.01, pairs="obstacles", rows_per_pair=5, row_margin=0.05, d_min=0.01,
                               row_spacing=row_spacing, use_compiled=use_compiled)
    return scene, oink, barrier, g_cloud, g_table, octree_centers(octree)


@pytest.mark.parametrize("use_compiled", [True, False])
def test_a_carried_clouds_rows_are_its_corners_least_along_n_least_bound_first(use_compiled):
    """A cloud carried by a link, against a convex geometry (the table, geometry 1): with row_spacing 0 its
    rows_per_pair - 1 extra rows are the cubes' corners v least along the pair's normal n (brute force over each
    cube's 8 corners), the least n.(v - p1) first among those within [d - 1 um, d + row_margin] (every cube is
    within that of the table here), with a = p1, b = v, normal n, h = n.(v - p1) - d_min and Jacobian d/dq of
    n.(v(q) - p1), v carried by the hand (finite differences). Those least bounds are not the lowest cube indices."""
    if use_compiled and compiled_pairs.LOAD_ERROR:
        pytest.skip(f"the pair distance kernel is not built ({compiled_pairs.LOAD_ERROR})")
    scene, oink, barrier, g_cloud, g_table, cells = carried_cloud(use_compiled, 0.0)
    q = scene.named_configuration("default")
    kinematics(oink, q)
    barrier.update(q, oink.data, oink.geom_data)
    found, rows = barrier.pairs.result, barrier.rows
    k = int(found.pair_index[0])
    assert (int(barrier.pairs.first[k]), int(barrier.pairs.second[k])) == (g_table, g_cloud)
    d, p1, n = float(found.distance[0]), found.point1[0], found.normal[0]
    assert d > 0.0
    M = oink.geom_data.oMg[g_cloud]
    table = scene.collision_model.geometryObjects[g_table].geometry
    cube = coal.Box(CARRIED_RES, CARRIED_RES, CARRIED_RES)
    candidates = []
    for i, c in enumerate(cells):
        corners = (c + CORNERS * CARRIED_RES) @ M.rotation.T + M.translation
        v = corners[np.argmin(corners @ n)]
        value = float(n @ (v - p1))
        distance = coal_distance(cube, pin.SE3(M.rotation, M.act(c)), table, TABLE.T_frame_obstacle).min_distance
        assert distance <= d + barrier.row_margin  # no cube left out by its distance bound
        if d - 1e-6 <= value <= d + barrier.row_margin:
            candidates.append((np.floor(value * 1e9), i, v, value))
    candidates.sort(key=lambda c: (c[0], c[1]))
    chosen = candidates[: barrier.rows_per_pair - 1]
    assert sorted(c[1] for c in chosen) != sorted(c[1] for c in candidates)[: len(chosen)]
    assert rows.count == barrier.rows_per_pair and (rows.pair[: rows.count] == 0).all()
    for r, (_, _, v, value) in zip(range(1, rows.count), chosen):
        np.testing.assert_allclose(rows.a[r], p1, atol=1e-12)
        np.testing.assert_allclose(rows.b[r], v, atol=1e-12)
        np.testing.assert_allclose(rows.normal[r], n, atol=1e-12)
        assert barrier.value[r] == pytest.approx(value - barrier.d_min, abs=1e-12)
        expected_jacobian = row_jacobian_fd(scene, oink, q, g_cloud, v, p1, n.copy())
        np.testing.assert_allclose(barrier.jacobian[r], expected_jacobian, rtol=0.0, atol=1e-6)


@needs_kernel
@pytest.mark.parametrize("row_spacing", [0.0, 0.015])
def test_compiled_and_python_rows_agree_for_a_cloud_carried_by_a_link(row_spacing):
    """The carried cloud's rows against the table, at the default configuration and two near it; row_spacing 0.015
    (between the cubes' 1 cm and 1.4 cm corner spacings: no tie) skips corners next to one already used."""
    scene, oink, compiled, *_ = carried_cloud(True, row_spacing)
    python = CollisionBarrier(oink, 1, 0.01, pairs="obstacles", rows_per_pair=5, row_margin=0.05, d_min=0.01,
                              row_spacing=row_spacing, use_compiled=False)
    rng = np.random.default_rng(1)
    q0 = scene.named_configuration("default")
    for q in (q0, q0 + np.r_[rng.uniform(-0.03, 0.03, 7), 0.0, 0.0], q0 + np.r_[rng.uniform(-0.03, 0.03, 7), 0.0, 0.0]):
        kinematics(oink, q)
        compiled.update(q, oink.data, oink.geom_data)
        python.update(q, oink.data, oink.geom_data)
        assert compiled.pairs.result.distance[0] > 0.0
        assert_same_rows(compiled, python)
        assert compiled.rows.count == compiled.rows_per_pair


# ------------------------------------------------------------------- CollisionBarrier.prepare
POST = Obstacle("post", "cylinder", (0.04, 0.6), position=(0.42, 0.1, 0.3))


def table_scene():
    scene = panda()
    scene.add_obstacle(Obstacle("table", "box", (1.2, 1.2, 0.04), position=(0.35, 0.0, -0.03)))
    return scene


@pytest.mark.parametrize("use_compiled", [True, False])
def test_prepare_with_an_unchanged_scene_builds_no_pair_tables(use_compiled, monkeypatch):
    """prepare() builds the tables for the scene as it is now: with no obstacle changed since the last build there is
    nothing to build (no ClosestPairs._build), and the barrier keeps its pairs."""
    if use_compiled and compiled_pairs.LOAD_ERROR:
        pytest.skip(f"the pair distance kernel is not built ({compiled_pairs.LOAD_ERROR})")
    from roboplan_ik_ros.core.model import closest_pairs

    scene = table_scene()
    oink = Oink(scene, "arm")
    barrier = CollisionBarrier(oink, 3, 0.01, pairs="obstacles", rows_per_pair=3, use_compiled=use_compiled)
    q = scene.named_configuration("default")
    kinematics(oink, q)
    barrier.update(q, oink.data, oink.geom_data)
    pairs = barrier.pairs
    builds = []
    original = closest_pairs.ClosestPairs._build
    monkeypatch.setattr(closest_pairs.ClosestPairs, "_build", lambda self: (builds.append(self), original(self))[1])
    barrier.prepare()
    barrier.prepare()
    barrier.update(q, oink.data, oink.geom_data)
    assert builds == [] and barrier.pairs is pairs


def test_an_obstacle_added_then_prepared_reaches_the_rows_of_both_paths():
    """After an obstacle is added and prepare() ran (on a barrier that had updated already, so has joint Jacobians to
    warm a kernel up with), the next update has rows on it: the Python path (no kernel) as a fresh Python barrier,
    the compiled one equal to it; after its removal and prepare() none."""
    scene = table_scene()
    oink = Oink(scene, "arm")
    make = dict(n_collision_pairs=3, dt=0.01, pairs="obstacles", rows_per_pair=3)
    python = CollisionBarrier(oink, **make, use_compiled=False)
    barriers = [python] + ([CollisionBarrier(oink, **make)] if not compiled_pairs.LOAD_ERROR else [])
    q = scene.named_configuration("default")
    q[:7] += [0.2, 0.3, 0.0, 0.2, 0.0, 0.0, 0.0]  # the forearm near the post

    def update_all():
        oink.geom_data = pin.GeometryData(scene.collision_model)
        kinematics(oink, q)
        for b in barriers:
            b.update(q, oink.data, oink.geom_data)
        fresh = CollisionBarrier(oink, **make, use_compiled=False)
        fresh.update(q, oink.data, oink.geom_data)
        for b in barriers:
            assert_same_rows(b, fresh)
        return " ".join(python.row_names)

    assert "obstacle:post" not in update_all()
    scene.add_obstacle(POST)
    for b in barriers:
        b.prepare()
    assert "obstacle:post" in update_all()
    scene.remove_obstacle("post")
    for b in barriers:
        b.prepare()
    assert "obstacle:post" not in update_all()


# ------------------------------------------------------------------- measured_value, untracked_floor
#: two balls either side of the hand (default configuration); "b" nearer; joint 1 turned by -0.08 rad brings
#: the hand nearest to "a"
BALLS = (Obstacle("a", "sphere", (0.03,), position=(0.307, -0.165, 0.56)),
         Obstacle("b", "sphere", (0.03,), position=(0.307, 0.155, 0.56)))
D_MIN = 0.06  # [m] both balls' nearest pairs within it


def balls_scene():
    scene = panda()
    for obstacle in BALLS:
        scene.add_obstacle(obstacle)
    return scene


def obstacle_pair_distances(scene: Scene, geom_data) -> dict[tuple[int, int], float]:
    """Brute force: coal's distance of every robot x obstacle collision pair of the scene."""
    gm = scene.collision_model
    out = {}
    for pair in gm.collisionPairs:
        g1, g2 = int(pair.first), int(pair.second)
        if g2 >= scene.world.n_robot_geometries:
            out[(g1, g2)] = coal_distance(gm.geometryObjects[g1].geometry, geom_data.oMg[g1],
                                          gm.geometryObjects[g2].geometry, geom_data.oMg[g2]).min_distance
    return out


@pytest.mark.parametrize("use_compiled", [True, False])
def test_measured_value_is_each_rows_pair_distance_minus_d_min(use_compiled):
    """measured_value after an update: per used row, its pair's distance - d_min [m] (brute force), inf beyond."""
    if use_compiled and compiled_pairs.LOAD_ERROR:
        pytest.skip(f"the pair distance kernel is not built ({compiled_pairs.LOAD_ERROR})")
    scene = balls_scene()
    oink = Oink(scene, "arm")
    barrier = CollisionBarrier(oink, 2, 0.01, pairs="obstacles", d_min=D_MIN, rows_per_pair=5, row_margin=0.0,
                               use_compiled=use_compiled)
    q = scene.named_configuration("default")
    kinematics(oink, q)
    barrier.update(q, oink.data, oink.geom_data)
    distances = obstacle_pair_distances(scene, oink.geom_data)
    rows, found, pairs = barrier.rows, barrier.pairs.result, barrier.pairs
    assert 2 <= rows.count < barrier.size
    expected = np.full(barrier.size, np.inf)
    for r in range(rows.count):
        k = int(found.pair_index[int(rows.pair[r])])
        expected[r] = distances[(int(pairs.first[k]), int(pairs.second[k]))] - D_MIN
    np.testing.assert_allclose(barrier.measured_value, expected, rtol=0.0, atol=1e-7)
    assert sorted(distances.values())[0] - D_MIN == pytest.approx(barrier.measured_value.min(), abs=1e-7)


@pytest.mark.parametrize("use_compiled", [True, False])
def test_untracked_floor_is_the_nearest_untracked_pairs_distance_minus_d_min_less_the_floor(use_compiled):
    """One pair tracked (n_collision_pairs 1, hand x ball "b" at q0); evaluate() at q1, where the hand is nearest to
    ball "a": untracked_floor(tol) = (d_u - d_min) - min(-tol, least measured h at q0), d_u the least distance at q1
    of the pairs not tracked (brute force) [m]."""
    if use_compiled and compiled_pairs.LOAD_ERROR:
        pytest.skip(f"the pair distance kernel is not built ({compiled_pairs.LOAD_ERROR})")
    scene = balls_scene()
    oink = Oink(scene, "arm")
    barrier = CollisionBarrier(oink, 1, 0.01, pairs="obstacles", d_min=D_MIN, rows_per_pair=3,
                               use_compiled=use_compiled)
    q0 = scene.named_configuration("default")
    q1 = q0.copy()
    q1[0] -= 0.08
    kinematics(oink, q0)
    at_q0 = obstacle_pair_distances(scene, oink.geom_data)
    tracked = min(at_q0, key=at_q0.get)
    barrier.update(q0, oink.data, oink.geom_data)
    data1, geom_data1 = scene.create_data()
    pin.forwardKinematics(scene.model, data1, q1)
    pin.updateGeometryPlacements(scene.model, data1, scene.collision_model, geom_data1)
    barrier.evaluate(data1, geom_data1)
    at_q1 = obstacle_pair_distances(scene, geom_data1)
    untracked = min(d for pair, d in at_q1.items() if pair != tracked)
    assert untracked < D_MIN and min(at_q1, key=at_q1.get) != tracked  # an untracked pair came nearest
    h0 = at_q0[tracked] - D_MIN
    assert h0 < 0.0
    for tol in (0.0, 0.05):
        expected = (untracked - D_MIN) - min(-tol, h0)
        assert barrier.untracked_floor(tol) == pytest.approx(expected, abs=1e-7), tol
