"""The collision barrier's rows (core/oink/barriers/collision_rows.py, kernel/pair_distance_kernel.cpp):
the compiled and the Python path give the same pairs and rows; the extra (vertex) rows' Jacobians
against finite differences of their own definition; the bounds every row keeps; the same
configuration gives the same rows whatever was queried before; the barrier's name and the
rows_per_pair / row_margin / row_spacing keys from the constructor and the YAML."""

from __future__ import annotations

from roboplan_ik_ros.core.oink.barriers.collision_barrier import CollisionBarrierConfig

import coal
import numpy as np
import pinocchio as pin
import pytest

from models import robot
from roboplan_ik_ros.core import CollisionBarrier, InvalidInputError, Obstacle, Oink, Scene
from roboplan_ik_ros.core.config import parse_config
from roboplan_ik_ros.core.model import compiled_pairs
from roboplan_ik_ros.core.model.scene_config import scene_from_config
from roboplan_ik_ros.core.oink.controller import OinkController

needs_kernel = pytest.mark.skipif(
    compiled_pairs.LOAD_ERROR != "",
    reason=f"the pair distance kernel is not built ({compiled_pairs.LOAD_ERROR}): nothing compiled to compare",
)

#: one obstacle of every primitive shape around the Panda, and a box held in the hand
OBSTACLES = (
    Obstacle("table", "box", (1.2, 1.2, 0.04), position=(0.35, 0.0, -0.03)),
    Obstacle("box", "box", (0.15, 0.2, 0.25), position=(0.5, 0.2, 0.15), quaternion_xyzw=(0.0, 0.0, 0.2588190, 0.9659258)),
    Obstacle("cylinder", "cylinder", (0.05, 0.4), position=(0.35, -0.35, 0.3)),
    Obstacle("capsule", "capsule", (0.04, 0.3), position=(0.45, -0.05, 0.65), quaternion_xyzw=(0.70710678, 0.0, 0.0, 0.70710678)),
    Obstacle("sphere", "sphere", (0.08,), position=(0.4, 0.3, 0.55)),
    Obstacle("tool", "box", (0.03, 0.03, 0.12), position=(0.0, 0.0, 0.16), frame="panda_hand",
             touch_links=("panda_leftfinger", "panda_rightfinger")),
)
TOL = 1e-9


def make_scene(obstacles=OBSTACLES) -> Scene:
    r = robot("panda")
    scene = Scene(r.urdf_xml, r.srdf_xml, r.package_paths)
    for obstacle in obstacles:
        scene.add_obstacle(obstacle)
    return scene


@pytest.fixture(scope="module")
def cell() -> Scene:
    return make_scene()


def kinematics(oink: Oink, q: np.ndarray) -> None:
    """What the solver computes before a barrier's update: joint Jacobians, frames, geometry placements."""
    model = oink.scene.model
    pin.computeJointJacobians(model, oink.data, q)
    pin.updateFramePlacements(model, oink.data)
    pin.updateGeometryPlacements(model, oink.data, oink.scene.collision_model, oink.geom_data)


def snapshot(barrier: CollisionBarrier) -> dict[str, np.ndarray]:
    found, rows = barrier.pairs.result, barrier.rows
    k, m = found.count, rows.count
    return dict(pair_index=found.pair_index[:k].copy(), distance=found.distance[:k].copy(),
                point1=found.point1[:k].copy(), point2=found.point2[:k].copy(), found_normal=found.normal[:k].copy(),
                row_pair=rows.pair.copy(), a=rows.a[:m].copy(), b=rows.b[:m].copy(), normal=rows.normal[:m].copy(),
                h=barrier.value.copy(), jacobian=barrier.jacobian.copy(), measured=barrier.measured_value.copy())


def vertex_rows(barrier: CollisionBarrier):
    """(row, found pair, side) of every extra row: side 0 when its vertex is on geometry 1 (a moved off
    the witness point p1), 1 when on geometry 2."""
    found, rows = barrier.pairs.result, barrier.rows
    out = []
    for r in range(1, rows.count):
        f = int(rows.pair[r])
        if f != int(rows.pair[r - 1]):  # a pair's rows are consecutive, its witness row first
            continue
        out.append((r, f, 0 if not np.array_equal(rows.a[r], found.point1[f]) else 1))
    return out


def witness_row(barrier: CollisionBarrier, f: int) -> int:
    return int(np.flatnonzero(barrier.rows.pair[: barrier.rows.count] == f)[0])


# ------------------------------------------------------------------- compiled vs Python
@needs_kernel
@pytest.mark.parametrize("pairs", ["self", "obstacles", "all"])
@pytest.mark.parametrize("rows_per_pair", [1, 5])
def test_compiled_and_python_paths_give_the_same_pairs_and_rows(cell, pairs, rows_per_pair):
    oink = Oink(cell, "arm")
    make = dict(n_collision_pairs=6, dt=0.01, pairs=pairs, rows_per_pair=rows_per_pair, row_margin=0.02)
    compiled = CollisionBarrier(oink, **make)
    python = CollisionBarrier(oink, **make, use_compiled=False)
    assert compiled.compiled, compiled.compiled_reason
    assert not python.compiled and "use_compiled=False" in python.compiled_reason
    rng = np.random.default_rng(3)
    extra_rows = 0
    for _ in range(100):
        q = cell.random_configuration(rng, oink.group)
        kinematics(oink, q)
        compiled.update(q, oink.data, oink.geom_data)
        python.update(q, oink.data, oink.geom_data)
        c, p = snapshot(compiled), snapshot(python)
        np.testing.assert_array_equal(c["pair_index"], p["pair_index"])
        np.testing.assert_array_equal(c["row_pair"], p["row_pair"])
        for key in ("distance", "point1", "point2", "found_normal", "a", "b", "normal", "h", "jacobian", "measured"):
            np.testing.assert_allclose(c[key], p[key], rtol=0.0, atol=TOL, err_msg=key)
        assert compiled.row_names == python.row_names
        extra_rows += compiled.rows.count - compiled.pairs.result.count
    assert (extra_rows > 0) == (rows_per_pair > 1)  # the vertex rows were compared too


def urgent_walks(cell, seed: int, **make):
    """Random walks through the cell, re-solving at the same q every third update, with a compiled and a Python
    CollisionBarrier(**make) (urgent pairs; a closing pair's urgency counts 20 steps of its approach): after every
    update both track the same pairs at the same distances, with the same approach. Yields, per update, the compiled
    barrier (its candidates and tracked pairs)."""
    oink = Oink(cell, "arm")
    compiled = CollisionBarrier(oink, **make)
    python = CollisionBarrier(oink, **make, use_compiled=False)
    assert compiled.compiled and not python.compiled
    for b in (compiled, python):
        b.set_braking_lookahead(20.0)
    rng = np.random.default_rng(seed)
    for _ in range(6):
        q = cell.random_configuration(rng, oink.group)
        step = rng.normal(0.0, 0.02, q.shape)  # [rad per update]
        for k in range(60):
            if k % 3:
                q = q + step  # (every third update re-solves at the same q)
            kinematics(oink, q)
            for b in (compiled, python):
                b.update(q, oink.data, oink.geom_data)
            c, p = compiled._tracked, python._tracked
            assert c.count == p.count
            np.testing.assert_array_equal(c.pair_index[: c.count], p.pair_index[: p.count])
            for key in ("distance", "point1", "point2", "normal"):
                np.testing.assert_allclose(getattr(c, key)[: c.count], getattr(p, key)[: p.count], rtol=0.0, atol=TOL)
            np.testing.assert_allclose(compiled._approach, python._approach, rtol=0.0, atol=TOL)
            yield compiled


@needs_kernel
def test_compiled_and_python_paths_track_the_same_urgent_pairs_along_a_motion(cell):
    """With urgent pairs, which candidates beyond the n closest are tracked depends on their approach since the
    update before (the kernel's pdk_barrier_update, its history of candidates kept in the kernel; the Python rule
    without it): along random walks through the cell both paths track the same pairs at the same distances. The
    walks must exercise the choice: updates with more candidates than slots where a candidate is chosen over a
    nearer one by its approach."""
    chosen_by_approach = 0
    for barrier in urgent_walks(cell, 11, n_collision_pairs=2, dt=0.01, pairs="all", urgent_pairs=2):
        cand, c = barrier._candidates, barrier._tracked
        n, size = barrier.pairs.n, len(c.distance)
        if cand.count > size:
            nearest_others = cand.pair_index[n:size]
            chosen_by_approach += not np.array_equal(np.sort(c.pair_index[n:size]), np.sort(nearest_others))
    assert chosen_by_approach > 0, "no update chose a candidate over a nearer one by its approach: the rule untested"


@needs_kernel
def test_when_every_candidate_fits_both_paths_track_them_all_in_distance_order(cell):
    """Urgent pairs with few pairs within the broad-phase cutoff (the obstacles only, 5 cm): at updates with at
    least one candidate and no more than the slots (n closest + urgent), every candidate is tracked, nearest first,
    by both paths alike."""
    fits = 0
    for barrier in urgent_walks(cell, 12, n_collision_pairs=2, dt=0.01, pairs="obstacles", urgent_pairs=2,
                                broad_phase_cutoff=0.05):
        cand, c = barrier._candidates, barrier._tracked
        if 0 < cand.count <= len(c.distance):
            fits += 1
            assert c.count == cand.count
            np.testing.assert_array_equal(c.pair_index[: c.count], cand.pair_index[: cand.count])
            assert np.all(np.diff(c.distance[: c.count]) >= 0.0)
    assert fits > 0, "no update had every candidate fit: the branch untested"


@needs_kernel
@pytest.mark.parametrize("urgent_pairs", [0, 2])
def test_compiled_and_python_paths_evaluate_the_same_next_step(cell, urgent_pairs):
    """A barrier's evaluate at the step's end (the kernel's pdk_barrier_evaluate; the Python path's query and
    distances): the same h per row and the same floor for an untracked pair, along random walks. A d_min of 6 cm and
    one closest pair make untracked pairs end within d_min often: the walks must see both finite floors and rows."""
    oink = Oink(cell, "arm")
    make = dict(n_collision_pairs=1, dt=0.01, pairs="all", d_min=0.06, rows_per_pair=5, urgent_pairs=urgent_pairs)
    compiled = CollisionBarrier(oink, **make)
    python = CollisionBarrier(oink, **make, use_compiled=False)
    rng = np.random.default_rng(17)
    finite_floors = rows_seen = 0
    for walk in range(8):
        if walk == 4:  # a d_min set after construction: both paths take it (the kernel's settings follow the barrier)
            compiled.d_min = python.d_min = 0.045
        q = cell.random_configuration(rng, oink.group)
        step = rng.normal(0.0, 0.03, q.shape)  # [rad per update]
        for _ in range(25):
            kinematics(oink, q)
            for b in (compiled, python):
                b.update(q, oink.data, oink.geom_data)
            q = q + step
            kinematics(oink, q)
            h_c, h_p = (b.evaluate(oink.data, oink.geom_data).copy() for b in (compiled, python))
            np.testing.assert_allclose(h_c, h_p, rtol=0.0, atol=TOL)
            floor_c, floor_p = compiled.untracked_floor(1e-4), python.untracked_floor(1e-4)
            assert floor_c == pytest.approx(floor_p, abs=TOL) if np.isfinite(floor_p) else floor_c == floor_p
            finite_floors += bool(np.isfinite(floor_p))
            rows_seen += compiled.rows.count
    assert finite_floors > 0 and rows_seen > 0, (finite_floors, rows_seen)


# ------------------------------------------------------------------- vertex rows' Jacobians
#: the hand held down over a box whose top corner is beside the hand: vertex rows on both geometries
CORNER_BOX = Obstacle("block", "box", (0.2, 0.3, 0.3), position=(0.55, 0.0, 0.15))
#: held below the hand, across its fingers: a rod (cylinder) along the hand's x, a pin (capsule) along its y
FINGERS = ("panda_leftfinger", "panda_rightfinger")
HELD_ROUND = (
    Obstacle("rod", "cylinder", (0.015, 0.16), position=(0.0, 0.0, 0.13), quaternion_xyzw=(0.0, 0.70710678, 0.0, 0.70710678),
             frame="panda_hand", touch_links=FINGERS),
    Obstacle("pin", "capsule", (0.01, 0.12), position=(0.0, 0.0, 0.15), quaternion_xyzw=(0.70710678, 0.0, 0.0, 0.70710678),
             frame="panda_hand", touch_links=FINGERS),
)


def rows_at_corner_box(use_compiled: bool, rows_per_pair: int = 5, pairs: str = "obstacles"):
    scene = make_scene([CORNER_BOX, *HELD_ROUND])
    oink = Oink(scene, "arm")
    barrier = CollisionBarrier(oink, 4, 0.01, pairs=pairs, rows_per_pair=rows_per_pair, row_margin=0.05,
                               use_compiled=use_compiled)
    return scene, oink, barrier


def configurations_near_the_box(scene: Scene, oink: Oink, count: int, seed: int = 5):
    """Configurations around the Panda's ready pose with the hand lowered towards the block's top."""
    rng = np.random.default_rng(seed)
    ready = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
    lowered = np.array([0.0, 0.35, 0.0, -1.9, 0.0, 2.2, 0.785])  # hand about 0.1 m over the block
    for _ in range(count):
        q = scene.neutral().copy()
        s = rng.uniform(0.4, 1.0)
        q[:7] = (1 - s) * ready + s * lowered + rng.uniform(-0.25, 0.25, 7)
        yield q


@pytest.mark.parametrize("use_compiled", [True, False])
def test_vertex_rows_jacobians_match_finite_differences_of_their_points(use_compiled):
    """A vertex row claims dh/dq = n^T (db/dq - da/dq) with n held fixed and a, b fixed to their
    geometries: the derivative of n0 . (b(q) - a(q)) with a, b moved with their geometries. Both sides
    have rows: the arm's links against each other and the block ("all" pairs)."""
    if use_compiled and compiled_pairs.LOAD_ERROR:
        pytest.skip(f"the pair distance kernel is not built ({compiled_pairs.LOAD_ERROR})")
    scene, oink, barrier = rows_at_corner_box(use_compiled, pairs="all")
    model, gm = scene.model, scene.collision_model
    data, geom_data = scene.create_data()
    eps = 1e-6
    checked = {0: 0, 1: 0}
    for q in configurations_near_the_box(scene, oink, 300):
        kinematics(oink, q)
        barrier.update(q, oink.data, oink.geom_data)
        found, rows, pairs = barrier.pairs.result, barrier.rows, barrier.pairs
        for r, f, side in vertex_rows(barrier):
            if found.distance[f] <= 0.0:
                continue
            k = int(found.pair_index[f])
            g1, g2 = int(pairs.first[k]), int(pairs.second[k])
            a_local = oink.geom_data.oMg[g1].actInv(rows.a[r])
            b_local = oink.geom_data.oMg[g2].actInv(rows.b[r])
            n0 = rows.normal[r].copy()

            def h(qq):
                pin.forwardKinematics(model, data, qq)
                pin.updateGeometryPlacements(model, data, gm, geom_data)
                return n0 @ (geom_data.oMg[g2].act(b_local) - geom_data.oMg[g1].act(a_local))

            expected = []
            for v in oink.group.v_indices:
                dv = np.zeros(model.nv)
                dv[v] = eps
                expected.append((h(scene.integrate(q, dv)) - h(scene.integrate(q, -dv))) / (2 * eps))
            np.testing.assert_allclose(barrier.jacobian[r], expected, rtol=0.0, atol=1e-6,
                                       err_msg=f"row {r} ({barrier.row_names[r]}), vertex on geometry {side + 1}")
            # and its h is its own definition, n.(b - a) - d_min
            assert barrier.value[r] == pytest.approx(n0 @ (rows.b[r] - rows.a[r]) - barrier.d_min, abs=1e-12)
            checked[side] += 1
        if min(checked.values()) >= 5:
            break
    assert min(checked.values()) >= 5, f"vertex rows checked per side (geometry 1, geometry 2): {checked}"


@needs_kernel
def test_compiled_and_python_paths_give_the_same_rows_for_held_cylinders_and_capsules():
    """The end rows of a held cylinder and capsule (and the hand's hull rows) near the block: the kernel's and
    the Python path's, equal."""
    scene, oink, compiled = rows_at_corner_box(True, pairs="all")
    python = CollisionBarrier(oink, 4, 0.01, pairs="all", rows_per_pair=5, row_margin=0.05, use_compiled=False)
    ends = 0
    for q in configurations_near_the_box(scene, oink, 100):
        kinematics(oink, q)
        compiled.update(q, oink.data, oink.geom_data)
        python.update(q, oink.data, oink.geom_data)
        c, p = snapshot(compiled), snapshot(python)
        np.testing.assert_array_equal(c["row_pair"], p["row_pair"])
        for key in ("distance", "a", "b", "normal", "h", "jacobian"):
            np.testing.assert_allclose(c[key], p[key], rtol=0.0, atol=TOL, err_msg=key)
        ends += sum(1 for name in compiled.row_names if "vertex" in name and ("rod" in name or "pin" in name))
    assert ends >= 20  # end rows were compared


@pytest.mark.parametrize("use_compiled", [True, False])
def test_a_geometry_fixed_in_the_world_gets_no_vertex_rows(use_compiled):
    """A vertex of the block (fixed in the world) does not move: its row would have the witness row's
    Jacobian with a looser bound, and take a row the link's own vertices need."""
    if use_compiled and compiled_pairs.LOAD_ERROR:
        pytest.skip(f"the pair distance kernel is not built ({compiled_pairs.LOAD_ERROR})")
    scene, oink, barrier = rows_at_corner_box(use_compiled)
    objects = scene.collision_model.geometryObjects
    against_block = 0
    for q in configurations_near_the_box(scene, oink, 100):
        kinematics(oink, q)
        barrier.update(q, oink.data, oink.geom_data)
        for _, f, side in vertex_rows(barrier):
            k = int(barrier.pairs.result.pair_index[f])
            g = (int(barrier.pairs.first[k]), int(barrier.pairs.second[k]))
            assert objects[g[side]].parentJoint != 0, f"a row on {objects[g[side]].name}, fixed in the world"
            against_block += objects[g[1 - side]].name == "obstacle:block"
    assert against_block >= 20  # rows of the links against the block were there to check


@pytest.mark.parametrize("use_compiled", [True, False])
def test_a_held_cylinder_or_capsule_gets_rows_at_either_end_of_its_axis(use_compiled):
    """A cylinder or capsule lying along the block's top face touches it along a segment: besides its witness
    point it gets rows at the points of either end farthest toward the block (its support point restricted to
    that end: in the geometry frame z = +-half length, and the radius across the axis, toward the block)."""
    if use_compiled and compiled_pairs.LOAD_ERROR:
        pytest.skip(f"the pair distance kernel is not built ({compiled_pairs.LOAD_ERROR})")
    scene, oink, barrier = rows_at_corner_box(use_compiled)
    gm = scene.collision_model
    held = {gm.getGeometryId(f"obstacle:{o.name}"): o for o in HELD_ROUND}
    ends = {(g, e): 0 for g in held for e in (1, -1)}
    for q in configurations_near_the_box(scene, oink, 150):
        kinematics(oink, q)
        barrier.update(q, oink.data, oink.geom_data)
        found, rows = barrier.pairs.result, barrier.rows
        for r, f, side in vertex_rows(barrier):
            k = int(found.pair_index[f])
            g = (int(barrier.pairs.first[k]), int(barrier.pairs.second[k]))[side]
            if g not in held:
                continue
            radius, length = held[g].dims
            M = oink.geom_data.oMg[g]
            local = M.actInv(rows.b[r] if side else rows.a[r])
            u = M.rotation.T @ (-rows.normal[r] if side else rows.normal[r])  # toward the other, geometry frame
            if held[g].shape == "cylinder":
                radial = radius * np.array([u[0], u[1], 0.0]) / np.hypot(u[0], u[1])
            else:
                radial = radius * u / np.linalg.norm(u)
            end = int(np.sign(local[2]))
            np.testing.assert_allclose(local, radial + (0.0, 0.0, end * length / 2), atol=1e-9)
            ends[(g, end)] += 1
    assert min(ends.values()) >= 3, {(gm.geometryObjects[g].name, e): c for (g, e), c in ends.items()}


# ------------------------------------------------------------------- the bounds a row keeps
BOUND_TOL = 1e-5  # [m] ten times coal's GJK tolerance (compiled_pairs.GJK_TOLERANCE)


def point_distance(point: np.ndarray, geometry, placement: pin.SE3) -> float:
    """coal's distance from a point to a placed geometry (a sphere of 1 um at the point, its radius added back)."""
    radius = 1e-6
    req, res = coal.DistanceRequest(), coal.DistanceResult()
    d = coal.distance(coal.Sphere(radius), coal.Transform3s(np.eye(3), point), geometry,
                      coal.Transform3s(placement.rotation, placement.translation), req, res)
    return d + radius


@pytest.mark.parametrize("use_compiled", [True, False])
@pytest.mark.parametrize("scene_kind", ["cell", "corner_box"])
def test_every_row_lies_between_the_pair_distance_and_its_vertex_distance(cell, use_compiled, scene_kind):
    """An extra row's h is never below its pair's witness row (the bound is never below the distance),
    and no row's h exceeds the true distance of its vertex to the other geometry - d_min; both to
    BOUND_TOL: coal's GJK stops at 1e-6 m, so the witness points' plane supports the geometry to
    a few um (measured: extra rows up to 3.8e-6 m below the witness row over 300 configurations of the
    cell, 1.1e-14 m at the block; about one extra row in five is below by some rounding)."""
    if use_compiled and compiled_pairs.LOAD_ERROR:
        pytest.skip(f"the pair distance kernel is not built ({compiled_pairs.LOAD_ERROR})")
    if scene_kind == "cell":
        scene, oink = cell, Oink(cell, "arm")
        barrier = CollisionBarrier(oink, 6, 0.01, pairs="all", rows_per_pair=5, row_margin=0.05,
                                   use_compiled=use_compiled)
        rng = np.random.default_rng(8)
        configurations = (cell.random_configuration(rng, oink.group) for _ in range(150))
    else:
        scene, oink, barrier = rows_at_corner_box(use_compiled)
        configurations = configurations_near_the_box(scene, oink, 150)
    gm = scene.collision_model
    checked = 0
    for q in configurations:
        kinematics(oink, q)
        barrier.update(q, oink.data, oink.geom_data)
        found, rows, pairs = barrier.pairs.result, barrier.rows, barrier.pairs
        for r in range(rows.count):
            f = int(rows.pair[r])
            if found.distance[f] <= 0.0:  # the plane bound holds for separated convex geometries
                continue
            k = int(found.pair_index[f])
            g1, g2 = int(pairs.first[k]), int(pairs.second[k])
            assert barrier.value[r] >= barrier.value[witness_row(barrier, f)] - BOUND_TOL, barrier.row_names[r]
            if not np.array_equal(rows.a[r], found.point1[f]):  # a vertex of geometry 1, against geometry 2
                true = point_distance(rows.a[r], gm.geometryObjects[g2].geometry, oink.geom_data.oMg[g2])
            else:  # a vertex of geometry 2 (or the witness point p2), against geometry 1
                true = point_distance(rows.b[r], gm.geometryObjects[g1].geometry, oink.geom_data.oMg[g1])
            assert barrier.value[r] <= true - barrier.d_min + BOUND_TOL, (barrier.row_names[r], barrier.value[r], true)
            checked += r != witness_row(barrier, f)
    assert checked >= 20  # extra rows checked


# ------------------------------------------------------------------- repeatability
@pytest.mark.parametrize("use_compiled", [True, False])
def test_same_configuration_gives_bitwise_identical_rows_whatever_came_before(cell, use_compiled):
    if use_compiled and compiled_pairs.LOAD_ERROR:
        pytest.skip(f"the pair distance kernel is not built ({compiled_pairs.LOAD_ERROR})")
    oink = Oink(cell, "arm")
    barrier = CollisionBarrier(oink, 6, 0.01, pairs="all", rows_per_pair=5, row_margin=0.05,
                               use_compiled=use_compiled)
    rng = np.random.default_rng(21)
    others = [cell.random_configuration(rng, oink.group) for _ in range(6)]
    for q in [cell.random_configuration(rng, oink.group) for _ in range(5)]:
        results = []
        for before in ([], others[:2], others[2:4][::-1], others[4:] + others[:1]):
            for other in before:
                kinematics(oink, other)
                barrier.update(other, oink.data, oink.geom_data)
            kinematics(oink, q)
            barrier.update(q, oink.data, oink.geom_data)
            results.append(snapshot(barrier))
        for later in results[1:]:
            for key, value in results[0].items():
                assert np.array_equal(value, later[key]), key  # bitwise: no tolerance


# ------------------------------------------------------------------- name and messages
def test_barrier_built_in_code_is_named_after_its_pairs_in_its_messages():
    """pairs="obstacles" and no name: "obstacles", in the recovery status (the hand inside a ball) and the
    failure status (a ball on joint 1's axis inside panda_link1: no step can move it out)."""
    scene = make_scene()
    oink = Oink(scene, "arm")
    assert CollisionBarrier(oink, 2, 0.01, pairs="self").name == "self_collision"
    assert CollisionBarrier(oink, 2, 0.01, pairs="all").name == "collision"
    barrier = CollisionBarrier(oink, 1, 0.01, pairs="obstacles")
    assert barrier.name == "obstacles"
    q = scene.named_configuration("default")
    hand = scene.frame_pose(q, "panda_hand").translation
    scene.add_obstacle(Obstacle("ball", "sphere", (0.03,), position=tuple(hand)))
    res = oink.solve(q, [], [], [barrier])
    assert res.ok and res.recovering, res.status
    assert res.status.startswith("recovering: barrier 'obstacles' row "), res.status
    scene.remove_obstacle("ball")
    scene.add_obstacle(Obstacle("ball", "sphere", (0.05,), position=(0.0, 0.0, 0.2)))  # in panda_link1
    res = oink.solve(q, [], [], [barrier])
    assert not res.ok, res.status
    assert res.status.startswith("cannot recover; barrier 'obstacles' row 'panda_link1"), res.status


# ------------------------------------------------------------------- rows_per_pair and the YAML keys
@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_rows_per_pair_must_be_an_integer_of_at_least_one(cell, bad):
    with pytest.raises(InvalidInputError, match=r"obstacles\.rows_per_pair: expected an integer >= 1") as err:
        CollisionBarrier(Oink(cell, "arm"), 2, 0.01, pairs="obstacles", rows_per_pair=bad)
    assert repr(bad) in str(err.value)


BASE = "tasks: [{name: ee, type: frame, frame: panda_hand_tcp}]\n"


def build(text: str) -> OinkController:
    cfg = parse_config(text)
    r = robot("panda")
    scene = scene_from_config(r.urdf_xml, r.srdf_xml, cfg.robot, r.package_paths)
    return OinkController(scene, cfg, 0.01, scene.named_configuration("default"))


def test_row_keys_from_yaml_reach_the_barrier():
    ctl = build(BASE + "barriers: [{name: near, type: collision, pairs: self, n_collision_pairs: 3, rows_per_pair: 4, "
                       "row_margin: 0.02, row_spacing: 0.03}]")
    barrier = ctl.barriers[0]
    assert (barrier.rows_per_pair, barrier.row_margin, barrier.row_spacing) == (4, 0.02, 0.03)
    assert barrier.size == (3 + 3) * 4  # the 3 closest and, by default, 3 urgent pairs (test_closed_loop_untracked_pairs)
    default = build(BASE + "barriers: [{name: near, type: collision, pairs: self, n_collision_pairs: 3}]").barriers[0]
    assert default.rows_per_pair == CollisionBarrierConfig.rows_per_pair == 5  # the YAML default (in code: 1, RoboPlan's form)
    assert default.urgent_pairs == 3  # the YAML default: n_collision_pairs (in code: 0, RoboPlan's form)
    none = build(BASE + "barriers: [{name: near, type: collision, pairs: self, n_collision_pairs: 3, urgent_pairs: 0}]")
    assert none.barriers[0].size == 3 * 5


@pytest.mark.parametrize("value, message", [
    ("1.5", r"config\.barriers\[0\]\.rows_per_pair: expected an integer, got 1\.5"),
    ("true", r"config\.barriers\[0\]\.rows_per_pair: expected an integer, got True"),
])
def test_non_integer_rows_per_pair_in_yaml_is_refused_naming_the_key(value, message):
    with pytest.raises(InvalidInputError, match=message):
        parse_config(BASE + f"barriers: [{{name: near, type: collision, rows_per_pair: {value}}}]")


@pytest.mark.parametrize("value", ["0", "-1"])
def test_rows_per_pair_below_one_in_yaml_is_refused_when_building_naming_the_key(value):
    with pytest.raises(InvalidInputError, match=r"barriers\[0\] \(near\): near\.rows_per_pair: expected an integer >= 1"):
        build(BASE + f"barriers: [{{name: near, type: collision, pairs: self, n_collision_pairs: 3, "
                     f"rows_per_pair: {value}}}]")


@pytest.mark.parametrize("key", ["row_margin", "row_spacing"])
def test_negative_row_margin_or_spacing_in_yaml_is_refused_naming_the_key(key):
    with pytest.raises(InvalidInputError, match=rf"near\.{key}: expected"):
        build(BASE + f"barriers: [{{name: near, type: collision, pairs: self, n_collision_pairs: 3, {key}: -0.01}}]")


@needs_kernel
def test_the_kernels_barrier_arrays_refuse_an_array_it_would_misread_naming_it(cell):
    """barrier_step hands the kernel raw addresses: an int32 row-pair array (the kernel writes int64) or a
    non-contiguous Jacobian row array would be written past or across; it refuses them, naming the array."""
    oink = Oink(cell, "arm")
    barrier = CollisionBarrier(oink, 2, 0.01, pairs="all", urgent_pairs=1)
    kinematics(oink, cell.neutral())
    barrier.update(cell.neutral(), oink.data, oink.geom_data)  # builds its arrays once: they are all right
    assert barrier._kernel_step is not None
    rows = barrier._kernel_rows
    arrays = dict(n=2, urgent=1, cutoff=0.2, q=barrier._q, candidates=barrier._candidates, tracked=barrier._tracked,
                  approach=barrier._approach, urgency=barrier._urgency, order=barrier._order, rows_per_pair=1,
                  margin=0.01, spacing=0.01, d_min=0.02, J=oink.data.J, columns=barrier._columns,
                  support=barrier._support, rows=rows, h_next=barrier._h, distance_next=barrier._distances)
    compiled_pairs.barrier_step(**arrays)  # as the barrier builds it
    pair = rows.pair
    rows.pair = pair.astype(np.int32)
    with pytest.raises(ValueError, match="rows.pair must be a contiguous int64 array"):
        compiled_pairs.barrier_step(**arrays)
    rows.pair, jacobian = pair, rows.jacobian
    rows.jacobian = np.asfortranarray(jacobian)
    with pytest.raises(ValueError, match="rows.jacobian must be a contiguous float64 array"):
        compiled_pairs.barrier_step(**arrays)
    rows.jacobian = jacobian
