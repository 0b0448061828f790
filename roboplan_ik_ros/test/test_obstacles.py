"""World obstacles in the core: shapes and validation, the collision world (pairs, add/move/remove),
distances against coal called directly, the broad phase's bounds, the collision barrier's Jacobian
against finite differences, SimpleIK never returning a configuration that hits the table, and the
YAML keys."""

from __future__ import annotations

import dataclasses

import coal
import numpy as np
import pinocchio as pin
import pytest

from models import robot
from roboplan_ik_ros.core import CollisionBarrier, InvalidInputError, Obstacle, Oink, Scene, SimpleIK, SimpleIKOptions
from roboplan_ik_ros.core.config import load_config
from roboplan_ik_ros.core.model.closest_pairs import ClosestPairs
from roboplan_ik_ros.core.simple_ik import FrameGoal

from conftest import CONFIG_DIR

TABLE = Obstacle("table", "box", (1.2, 1.2, 0.04), position=(0.35, 0.0, -0.03))


def fresh_scene() -> Scene:
    r = robot("panda")
    return Scene(r.urdf_xml, r.srdf_xml, r.package_paths)


@pytest.fixture()
def panda() -> Scene:
    return fresh_scene()


def coal_distance(scene: Scene, q: np.ndarray, geometry_a: int, geometry_b: int) -> float:
    """Signed distance of two geometries with coal alone (placements from pinocchio's kinematics)."""
    data = scene.model.createData()
    pin.forwardKinematics(scene.model, data, q)
    placements = []
    for g in (geometry_a, geometry_b):
        obj = scene.collision_model.geometryObjects[g]
        placements.append((obj.geometry, data.oMi[obj.parentJoint] * obj.placement))
    (ga, Ta), (gb, Tb) = placements
    req, res = coal.DistanceRequest(), coal.DistanceResult()
    return coal.distance(ga, coal.Transform3s(Ta.rotation, Ta.translation), gb,
                         coal.Transform3s(Tb.rotation, Tb.translation), req, res)


GJK_TOL = 1e-5  # [m] coal's distance precision


def ball_distance(scene: Scene, q: np.ndarray) -> float:
    """The obstacle "ball"'s signed distance to the nearest robot geometry it is paired with (coal alone)."""
    names = [o.name for o in scene.collision_model.geometryObjects]
    ball = next(k for k, n in enumerate(names) if "ball" in n)
    others = [p.second if p.first == ball else p.first for p in scene.collision_model.collisionPairs
              if ball in (p.first, p.second)]
    assert others, "the ball is paired with no robot geometry"
    return min(coal_distance(scene, q, ball, k) for k in others)


# ------------------------------------------------------------------------------- validation
@pytest.mark.parametrize("obstacle, field, expected", [
    (dataclasses.replace(TABLE, frame="shelf"), "frame", "'world' or a robot link"),
    (dataclasses.replace(TABLE, position=(0.0, float("nan"), 0.0)), "position", "finite"),
    (dataclasses.replace(TABLE, quaternion_xyzw=(0.0, 0.0, 0.0, 2.0)), "orientation", "unit quaternion"),
    (dataclasses.replace(TABLE, dims=(1.0, 0.0, 0.1)), "dimensions", "y = 0"),
    (dataclasses.replace(TABLE, dims=(1.0, 1.0)), "dimensions", "3 numbers > 0"),
    (Obstacle("s", "sphere", (-0.1,)), "dimensions", "radius = -0.1"),
    (Obstacle("c", "cone", (0.1, 0.2)), "shape", "valid: box, sphere, cylinder, capsule, mesh"),
    (Obstacle("m", "mesh", mesh="/nonexistent/part.stl"), "mesh", "no such file"),
    (Obstacle("m", "mesh", mesh="package://nowhere/part.stl"), "mesh", "cannot resolve"),
    (dataclasses.replace(TABLE, touch_links=("panda_hand", "gripper")), "touch_links", "'gripper'"),
    (dataclasses.replace(TABLE, name=""), "name", "non-empty"),
])
def test_malformed_obstacle_is_refused_naming_the_field(panda, obstacle, field, expected):
    with pytest.raises(InvalidInputError) as err:
        panda.add_obstacle(obstacle)
    assert f".{field}:" in str(err.value) and expected in str(err.value), str(err.value)
    assert panda.obstacles == {} and panda.collision_model.ngeoms == panda.world.n_robot_geometries


def test_unreadable_mesh_file_is_refused(panda, tmp_path):
    path = tmp_path / "broken.stl"
    path.write_text("this is not a mesh")
    with pytest.raises(InvalidInputError, match=r"\.mesh: .*expected a mesh file|\.mesh: .*vertices"):
        panda.add_obstacle(Obstacle("part", "mesh", mesh=str(path)))
    assert panda.obstacles == {}


def test_in_memory_mesh_with_bad_indices_is_refused(panda):
    v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1.0]])
    with pytest.raises(InvalidInputError, match=r"\.mesh: expected triangles"):
        panda.add_obstacle(Obstacle("m", "mesh", vertices=v, triangles=np.array([[0, 1, 9]])))


# ------------------------------------------------------------------------- collision world
def test_pairs_of_world_and_attached_obstacles(panda):
    gm, robot_geoms = panda.collision_model, panda.world.n_robot_geometries
    self_pairs = len(gm.collisionPairs)
    fixed = sum(1 for g in range(robot_geoms) if gm.geometryObjects[g].parentJoint == 0)
    panda.add_obstacle(TABLE)
    assert len(gm.collisionPairs) == self_pairs + robot_geoms - fixed  # the base link never pairs with the table
    hand_joint = panda.model.frames[panda.model.getFrameId("panda_hand")].parentJoint
    on_hand = sum(1 for g in range(robot_geoms) if gm.geometryObjects[g].parentJoint == hand_joint)
    part = Obstacle("part", "cylinder", (0.02, 0.1), position=(0.0, 0.0, 0.15), frame="panda_hand",
                    touch_links=("panda_link7",))
    panda.add_obstacle(part)
    link7 = sum(1 for g in range(robot_geoms) if gm.geometryObjects[g].parentJoint != hand_joint
                and panda.model.frames[gm.geometryObjects[g].parentFrame].name == "panda_link7")
    # robot geometries not on the hand's joint and not panda_link7, plus part x table
    assert len(gm.collisionPairs) == self_pairs + robot_geoms - fixed + robot_geoms - on_hand - link7 + 1
    version = panda.collision_version
    panda.move_obstacle("table", (0.35, 0.0, -0.5), (0.0, 0.0, 0.0, 1.0))
    assert panda.collision_version > version
    panda.remove_obstacle("part")
    assert len(gm.collisionPairs) == self_pairs + robot_geoms - fixed
    panda.clear_obstacles()
    assert len(gm.collisionPairs) == self_pairs and gm.ngeoms == robot_geoms
    with pytest.raises(InvalidInputError, match="unknown obstacle 'table'"):
        panda.remove_obstacle("table")


@pytest.mark.parametrize("obstacle", [
    Obstacle("box", "box", (0.2, 0.3, 0.1), position=(0.45, 0.1, 0.3), quaternion_xyzw=(0.0, 0.0, 0.38268343, 0.92387953)),
    Obstacle("sphere", "sphere", (0.08,), position=(0.4, -0.2, 0.5)),
    Obstacle("cylinder", "cylinder", (0.05, 0.4), position=(0.3, 0.3, 0.3)),
    Obstacle("capsule", "capsule", (0.04, 0.3), position=(0.5, 0.0, 0.6), quaternion_xyzw=(0.70710678, 0.0, 0.0, 0.70710678)),
    Obstacle("mesh", "mesh", mesh="package://example-robot-data/robots/panda_description/meshes/collision/link4.stl",
             position=(0.5, 0.3, 0.2)),
    Obstacle("tool", "box", (0.03, 0.03, 0.12), position=(0.0, 0.0, 0.16), frame="panda_hand"),
    Obstacle("tetra", "mesh", vertices=np.array([[0, 0, 0], [0.2, 0, 0], [0, 0.2, 0], [0, 0, 0.2]], dtype=float),
             triangles=np.array([[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3]]), position=(0.4, -0.3, 0.3)),
])
def test_distances_match_coal(panda, obstacle):
    """Every obstacle pair's distance (through ClosestPairs and pinocchio) equals coal's own, at random
    configurations, for every shape, world-fixed and attached."""
    r = robot("panda")
    panda.world.package_paths = tuple(r.package_paths)
    panda.add_obstacle(TABLE)
    panda.add_obstacle(obstacle)
    pairs = ClosestPairs(panda, 1, pairs="obstacles")
    data, geom_data = panda.create_data()
    rng = np.random.default_rng(1)
    for _ in range(5):
        q = panda.random_configuration(rng)
        pin.forwardKinematics(panda.model, data, q)
        pin.updateGeometryPlacements(panda.model, data, panda.collision_model, geom_data)
        bounds = pairs.lower_bounds(data)
        for k in range(len(pairs.first)):
            d = pairs.distance(geom_data, k).min_distance
            expected = coal_distance(panda, q, int(pairs.first[k]), int(pairs.second[k]))
            assert d == pytest.approx(expected, abs=1e-5), pairs.pair_name(k)  # GJK's precision
            if d >= 0:
                assert bounds[k] <= d + 1e-9, pairs.pair_name(k)  # the broad phase never skips a closer pair


def test_closest_pairs_equal_exhaustive_search_with_many_obstacles(panda):
    """The broad phase (spheres, boxes for world-fixed geometries) returns the same n closest pairs as
    evaluating every pair: a table, two walls and 20 random primitives."""
    for obstacle in cell_obstacles(np.random.default_rng(5)):
        panda.add_obstacle(obstacle)
    pairs = ClosestPairs(panda, 4, pairs="all")
    data, geom_data = panda.create_data()
    rng = np.random.default_rng(2)
    checked = 0
    for _ in range(40):
        q = panda.random_configuration(rng)
        pin.forwardKinematics(panda.model, data, q)
        pin.updateGeometryPlacements(panda.model, data, panda.collision_model, geom_data)
        every = np.array([pairs.distance(geom_data, k).min_distance for k in range(len(pairs.first))])
        if every.min() < 0:
            continue  # penetration depths: the broad phase only promises exact ranks for separated pairs
        res = pairs.query(data, geom_data)
        np.testing.assert_allclose(res.distance[:res.count], np.sort(every)[:4], atol=1e-5)  # GJK's precision
        assert pairs.narrow_phase_calls < len(pairs.first)
        checked += 1
    assert checked >= 5


def cell_obstacles(rng: np.random.Generator) -> list[Obstacle]:
    """A table, two walls and 20 random primitives around the Panda (bench config (d))."""
    out = [TABLE,
           Obstacle("wall_left", "box", (1.2, 0.04, 1.2), position=(0.35, 0.75, 0.55)),
           Obstacle("wall_back", "box", (0.04, 1.2, 1.2), position=(-0.45, 0.0, 0.55))]
    for k in range(20):
        shape = ("box", "sphere", "cylinder", "capsule")[k % 4]
        dims = {"box": tuple(rng.uniform(0.03, 0.1, 3)), "sphere": (rng.uniform(0.02, 0.06),)}.get(
            shape, (rng.uniform(0.02, 0.05), rng.uniform(0.05, 0.15)))
        angle = rng.uniform(0, 2 * np.pi)
        radius = rng.uniform(0.6, 0.9)
        out.append(Obstacle(f"clutter_{k}", shape, dims,
                            position=(radius * np.cos(angle), radius * np.sin(angle), rng.uniform(0.05, 0.9))))
    return out


# ---------------------------------------------------------------------------- barrier
@pytest.mark.parametrize("attached", [False, True])
def test_obstacle_barrier_jacobian_matches_finite_differences(panda, attached):
    panda.add_obstacle(Obstacle("ball", "sphere", (0.06,), position=(0.45, 0.15, 0.35)))
    if attached:  # a part in the hand, against the ball and the table
        panda.add_obstacle(TABLE)
        panda.add_obstacle(Obstacle("part", "capsule", (0.02, 0.1), position=(0.0, 0.0, 0.17), frame="panda_hand",
                                    touch_links=("panda_leftfinger", "panda_rightfinger")))
    oink = Oink(panda, "arm")
    barrier = CollisionBarrier(oink, 4, 0.01, pairs="obstacles", broad_phase_cutoff=np.inf)
    for request in oink.geom_data.distanceRequests:  # GJK to 1e-10 m: its default 1e-6 m is 1e-2 in a 1e-4 step
        request.gjk_tolerance = 1e-10
    rng = np.random.default_rng(11)
    checked = 0
    for _ in range(200):
        q = panda.random_configuration(rng, oink.group)
        pin.computeJointJacobians(panda.model, oink.data, q)
        pin.updateFramePlacements(panda.model, oink.data)
        pin.updateGeometryPlacements(panda.model, oink.data, panda.collision_model, oink.geom_data)
        barrier.update(q, oink.data, oink.geom_data)
        if panda.in_collision(q) or barrier.value.min() < 0.01 or barrier.value.max() > 0.5:
            continue

        def h(qq):
            pin.framesForwardKinematics(panda.model, oink.data, qq)
            pin.updateGeometryPlacements(panda.model, oink.data, panda.collision_model, oink.geom_data)
            return barrier.evaluate(oink.data, oink.geom_data).copy()  # evaluate reuses its array

        expected = []
        for k in oink.group.v_indices:
            dv = np.zeros(panda.model.nv)
            dv[k] = 1e-4
            expected.append((h(panda.integrate(q, dv)) - h(panda.integrate(q, -dv))) / 2e-4)
        np.testing.assert_allclose(barrier.jacobian, np.array(expected).T, atol=2e-3, rtol=2e-2)
        checked += 1
        if checked == 5:
            break
    assert checked == 5
    if attached:  # the rows include the attached part
        assert any("obstacle:part" in name for name in barrier.row_names)


def test_barrier_follows_obstacles_added_and_removed_at_run_time(panda):
    oink = Oink(panda, "arm")
    d_min = 0.02  # [m]
    barrier = CollisionBarrier(oink, 2, 0.01, d_min=d_min, pairs="obstacles", name="obstacles")
    q = panda.named_configuration("default")
    res = oink.solve(q, [], [], [barrier])
    assert res.ok and np.isinf(barrier.value).all()  # no obstacle yet: unused rows
    tcp = panda.frame_pose(q, "panda_hand_tcp").translation
    panda.add_obstacle(Obstacle("ball", "sphere", (0.03,), position=tuple(tcp + [0.0, 0.0, -0.1])))
    assert oink.solve(q, [], [], [barrier]).ok
    # h = the ball's distance to the nearest robot geometry (coal alone) - d_min
    expected = ball_distance(panda, q) - d_min
    assert "obstacle:ball" in barrier.row_names[0]
    assert barrier.value[0] == pytest.approx(expected, abs=GJK_TOL), (barrier.value[0], expected)
    panda.move_obstacle("ball", tcp + [0.0, 0.0, -0.2], (0.0, 0.0, 0.0, 1.0))
    assert oink.solve(q, [], [], [barrier]).ok
    moved = ball_distance(panda, q) - d_min
    assert moved > expected + 0.05  # 10 cm farther down: the row follows the move
    assert barrier.value[0] == pytest.approx(moved, abs=GJK_TOL), (barrier.value[0], moved)
    panda.remove_obstacle("ball")
    assert oink.solve(q, [], [], [barrier]).ok and np.isinf(barrier.value).all()


# ---------------------------------------------------------------------------- SimpleIK
def test_simple_ik_never_returns_a_configuration_that_hits_the_table():
    """Goals above a table reached by configurations whose elbow goes through it, seeded there: without
    obstacles SimpleIK returns them (the test can fail); with the table, none of its answers touches
    the table (checked with coal alone): it restarts elsewhere or reports failure (many of these
    goals have no collision-free solution at all)."""
    table = Obstacle("table", "box", (0.6, 1.2, 0.04), position=(0.6, 0.0, 0.18))  # top at z = 0.20, x >= 0.3
    bare, with_table, probe = fresh_scene(), fresh_scene(), fresh_scene()
    with_table.add_obstacle(table)
    probe.add_obstacle(table)
    table_pairs = [(p.first, p.second) for p in probe.collision_model.collisionPairs
                   if p.second >= probe.world.n_robot_geometries]

    def through_table(q) -> bool:
        return min(coal_distance(probe, q, a, b) for a, b in table_pairs) < 0.0

    rng = np.random.default_rng(4)
    cases = []
    while len(cases) < 12:
        q = bare.random_configuration(rng)
        tcp = bare.frame_pose(q, "panda_hand_tcp")
        if tcp.translation[2] > 0.28 and not bare.in_collision(q) and through_table(q):
            cases.append((tcp, q))
    options = SimpleIKOptions(group_name="arm", max_time=0.5, max_restarts=300, seed=3)
    hits, solved = {}, {}
    for name, scene in (("bare", bare), ("table", with_table)):
        solver = SimpleIK(scene, options)
        results = [solver.solve([FrameGoal("panda_hand_tcp", tcp)], q) for tcp, q in cases]
        solved[name] = sum(r.success for r in results)
        hits[name] = sum(r.success and through_table(r.q) for r in results)
    print(f"\nSimpleIK, {len(cases)} goals above a table seeded with an elbow through it: without obstacles "
          f"{solved['bare']} solved, {hits['bare']} through the table; with the table {solved['table']} solved, "
          f"{hits['table']} through it")
    assert hits["table"] == 0
    assert hits["bare"] == len(cases), "the scenario no longer tempts SimpleIK into the table: the test cannot fail"
    assert solved["table"] >= 1  # it still solves where it can


# ------------------------------------------------------------------------------ config
def test_yaml_obstacles_and_collision_barrier_keys():
    cfg = load_config(CONFIG_DIR / "panda.yaml")
    assert [o.name for o in cfg.obstacles] == ["table"] and cfg.obstacles[0].dims == (1.2, 1.2, 0.04)
    kinds = {b.name: (b.type, getattr(b, "pairs", None)) for b in cfg.barriers}
    assert kinds["self_collision"] == ("collision", "self") and kinds["obstacles"] == ("collision", "obstacles")
    base = {"tasks": [{"name": "ee", "type": "frame", "frame": "panda_hand_tcp"}]}
    legacy = load_config({**base, "barriers": [{"name": "sc", "type": "self_collision", "n_collision_pairs": 2}]})
    assert (legacy.barriers[0].type, legacy.barriers[0].pairs) == ("collision", "self")
    bad = [
        ({"barriers": [{"name": "c", "type": "collision", "pairs": "walls"}]}, "barriers[0].pairs: unknown pair set"),
        ({"barriers": [{"name": "c", "type": "self_collision", "pairs": "all"}]}, "barriers[0].pairs: type"),
        ({"barriers": [{"name": "c", "type": "position", "pairs": "all"}]}, "barriers[0].pairs: does not apply"),
        ({"obstacles": [{"name": "t", "shape": "box", "radius": 0.1}]}, "obstacles[0].radius: does not apply"),
        ({"obstacles": [{"name": "t", "shape": "box"}]}, "obstacles[0].size: required"),
        ({"obstacles": [{"name": "t", "shape": "sphere", "radius": 0.1, "colour": 1}]}, "obstacles[0].colour: unknown key"),
        ({"obstacles": [{"name": "t", "shape": "sphere", "radius": 0.1}] * 2}, "obstacles[1].name: duplicate"),
        ({"obstacles": [{"name": "t", "shape": "sphere", "radius": 0.1, "position": [0, "a", 0]}]},
         "obstacles[0].position: expected a list of numbers"),
    ]
    for extra, message in bad:
        with pytest.raises(InvalidInputError) as err:
            load_config({**base, **extra})
        assert message in str(err.value), str(err.value)


def test_scene_from_config_refuses_an_obstacle_on_an_unknown_link():
    from roboplan_ik_ros.core.model.scene_config import scene_from_config

    r = robot("panda")
    cfg = load_config({"tasks": [{"name": "ee", "type": "frame", "frame": "panda_hand_tcp"}],
                       "obstacles": [{"name": "tool", "shape": "sphere", "radius": 0.05, "frame": "gripper"}]})
    with pytest.raises(InvalidInputError, match=r"obstacles\[0\] \(tool\)\.frame: unknown frame 'gripper'"):
        scene_from_config(r.urdf_xml, r.srdf_xml, cfg.robot, r.package_paths, cfg.obstacles)


def test_prepared_pair_tables_are_swapped_in_without_a_rebuild_in_the_tick(panda, monkeypatch):
    """An obstacle added, then prepare() (the thread that changed the scene): the next update swaps the
    prepared tables in and builds nothing; without prepare() the update rebuilds them itself. Both give
    the rows a fresh barrier gives."""
    from roboplan_ik_ros.core.model import closest_pairs

    s = panda
    s.add_obstacle(TABLE)
    oink = Oink(s, "arm")
    barrier = CollisionBarrier(oink, 4, 0.01, pairs="obstacles", rows_per_pair=3)
    q = s.named_configuration("default")
    pin.computeJointJacobians(s.model, oink.data, q)
    pin.updateGeometryPlacements(s.model, oink.data, s.collision_model, oink.geom_data)
    barrier.update(q, oink.data, oink.geom_data)
    builds = []
    original = closest_pairs.ClosestPairs._build
    monkeypatch.setattr(closest_pairs.ClosestPairs, "_build", lambda self: (builds.append(self), original(self))[1])

    def rows_now():
        oink.geom_data = pin.GeometryData(s.collision_model)
        pin.updateGeometryPlacements(s.model, oink.data, s.collision_model, oink.geom_data)
        barrier.update(q, oink.data, oink.geom_data)
        fresh = CollisionBarrier(oink, 4, 0.01, pairs="obstacles", rows_per_pair=3)
        fresh.update(q, oink.data, oink.geom_data)
        np.testing.assert_array_equal(barrier.value, fresh.value)
        np.testing.assert_array_equal(barrier.jacobian, fresh.jacobian)

    s.add_obstacle(Obstacle("post", "cylinder", (0.05, 0.6), position=(0.45, 0.1, 0.3)))
    barrier.prepare()
    assert len(builds) == 1
    rows_now()  # (the fresh barrier builds its own: counted below)
    assert len(builds) == 2 and builds[1] is not barrier.pairs, "the tick rebuilt the tables"
    assert "obstacle:post" in " ".join(barrier.row_names)
    s.remove_obstacle("post")
    builds.clear()
    rows_now()  # nothing prepared: the update rebuilds
    assert builds[0] is barrier.pairs
