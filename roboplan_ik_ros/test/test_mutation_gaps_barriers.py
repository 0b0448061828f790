"""Barrier behaviour that mutation testing found unchecked (docs/mutation.md, core/oink/barriers).

Barrier.constraint is the row the QP gets when the compiled assembly is not used: its safety margin and
its braking bound (for every lag >= 0) had no test that pins the result (the kernel's rows are checked
elsewhere). The rest: which face an axis box's row is, the singular values a singularity barrier reports,
the texts that name a barrier's row when no step keeps it, and the key a collision barrier's error names.
A second sample adds: no floating-point warning from braking a row in recovery, the path and key that a
collision, sphere or joint limit barrier's errors name, the configure note on how collision distances are
computed, the position barrier's and collision barrier's hints, the bounded wait for an expected prepare()
after a prepared swap, and joint limit rows on a group of one joint or of joints apart in q. A third (seed 2):
an axis box of no width on a selected axis, a position barrier's axis_selection from its config, a row's bound
from a barrier reference, and an unused collision row's bound (inf, not NaN).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from models import robot as robot_description, scene
import pinocchio as pin

from roboplan_ik_ros.core import Obstacle, Scene
from roboplan_ik_ros.core.config import load_config
from roboplan_ik_ros.core.errors import InvalidInputError
from roboplan_ik_ros.core.oink.barriers.axis_box import AxisBox
from roboplan_ik_ros.core.oink.barriers.collision_barrier import _MAX_PREPARE_WAIT, CollisionBarrier
from roboplan_ik_ros.core.oink.barriers.joint_limit_barrier import JointLimitBarrier
from roboplan_ik_ros.core.oink.barriers.position_barrier import (PositionBarrier, PositionBarrierConfig,
                                                                  build_position_barrier)
from roboplan_ik_ros.core.oink.barriers.singularity_barrier import SingularityBarrier
from roboplan_ik_ros.core.oink.barriers.sphere_barrier import SphereBarrier
from roboplan_ik_ros.core.oink.kind import BuildContext
from roboplan_ik_ros.core.oink.robot import Robot

DT = 0.002  # [s]
GAIN = 0.5


@pytest.fixture(scope="module")
def panda():
    s = scene("panda")
    return s, Robot(s, s.group("arm"))


def _row_bound(h, margin):
    """The barrier row's bound without braking: dt gain h / (1 + |h|) - safety margin (Barrier's docstring)."""
    return DT * GAIN * h / (1.0 + np.abs(h)) - margin


def test_the_safety_margin_tightens_every_row(panda):
    s, robot = panda
    q = s.named_configuration("default")
    loose = JointLimitBarrier(robot, DT, gain=GAIN)
    tight = JointLimitBarrier(robot, DT, gain=GAIN, safety_margin=0.01)
    for b in (loose, tight):
        b.update(q, None, None)
    G0, up0 = (a.copy() for a in loose.constraint())
    G1, up1 = tight.constraint()
    np.testing.assert_array_equal(G0, G1)
    np.testing.assert_allclose(up0, _row_bound(loose.value, 0.0), rtol=1e-12)
    np.testing.assert_allclose(up1, _row_bound(tight.value, 0.01), rtol=1e-12)
    assert (up1 < up0).all()


@pytest.mark.parametrize("lag", [0.0, 0.5, 2.0])  # [ticks]: no lag, less than one tick, two
def test_braking_caps_the_approach_per_step(panda, lag):
    """With braking [lag, alpha per joint] a row's bound is at most the approach still braked within h:
    b = (-a k + sqrt(a^2 (k^2 - 1) + 8 a h)) / 2, k = 1 + 2 lag, a = |J_h| alpha; the cap binds where h is
    small against the rate term, and then the bound is exactly b."""
    s, robot = panda
    q = s.named_configuration("default")
    g = robot.group
    b = JointLimitBarrier(robot, DT, gain=1e3)  # a fast rate term: the braking cap binds
    q[g.q_indices[0]] = s.q_max_v[g.v_indices[0]] - b.margin[0] - 1e-4  # joint 0 1e-4 rad from its barrier
    b.update(q, None, None)
    _, free = (a.copy() for a in b.constraint())
    alpha = np.full(robot.nv, 1e-5)
    _, capped = b.constraint(braking=np.concatenate([[lag], alpha]))
    h = b.value
    a = np.abs(b.jacobian) @ alpha
    k = 1.0 + 2.0 * lag
    cap = 0.5 * (-a * k + np.sqrt(a * a * (k * k - 1.0) + 8.0 * a * h))
    np.testing.assert_allclose(capped, np.minimum(free, np.maximum(cap, 0.0)), rtol=1e-12)
    row = int(np.argmin(h))
    assert capped[row] < free[row], "the braking cap should bind on the row near its barrier"


@pytest.mark.parametrize("selection", [(True, True, True), (False, True, False), (True, False, True)])
def test_an_axis_box_row_is_its_lower_face_first_then_its_upper_face(selection):
    """Rows 0..k-1 are the selected axes' p_min faces, rows k..2k-1 their p_max faces, in axis order."""
    p_min, p_max = [-0.1, -0.2, -0.3], [0.4, 0.5, 0.6]
    box = AxisBox(p_min, p_max, selection, "box")
    axes = [a for a in range(3) if selection[a]]
    expected = [(a, p_min[a], "p_min") for a in axes] + [(a, p_max[a], "p_max") for a in axes]
    assert [box.face(row) for row in range(box.size)] == expected
    assert box.row_names() == [f"{'xyz'[a]} lower" for a in axes] + [f"{'xyz'[a]} upper" for a in axes]


def test_a_singularity_barrier_reports_the_frames_singular_values_largest_first(panda):
    s, robot = panda
    barrier = SingularityBarrier(robot, "panda_hand_tcp", DT, sigma_min=0.02)
    data = s.model.createData()
    q = s.named_configuration("default")
    pin.computeJointJacobians(s.model, data, q)
    pin.updateFramePlacements(s.model, data)
    barrier.update(q, data, None)
    J = pin.getFrameJacobian(s.model, data, s.frame_id("panda_hand_tcp"), pin.LOCAL)[:, robot.group.v_columns]
    sigma = np.linalg.svd(J, compute_uv=False)
    np.testing.assert_allclose(barrier.sigma, sigma[:6], rtol=1e-12)
    assert barrier.value[0] == pytest.approx(sigma[-1] - 0.02, rel=1e-12)


def test_a_joint_limit_barrier_names_the_limit_of_the_row_that_no_step_keeps(panda):
    s, robot = panda
    b = JointLimitBarrier(robot, DT)
    k = len(b.joint_names)
    for i in (0, k - 1):
        lower, upper = b.row_hint(i), b.row_hint(k + i)
        assert f"joint {b.joint_names[i]!r} cannot stay above {b.q_low[i]:.4g} (its lower limit" in lower
        assert f"joint {b.joint_names[i]!r} cannot stay below {b.q_high[i]:.4g} (its upper limit" in upper
        assert f"a margin of {b.margin[i]:.4g}" in upper


def test_a_sphere_barrier_names_the_sphere_and_the_frame_its_centre_is_in(panda):
    s, robot = panda
    world = SphereBarrier(robot, "panda_hand_tcp", [0.5, 0.0, 0.25], 0.1, False, DT)
    moving = SphereBarrier(robot, "panda_hand_tcp", [0.0, 0.0, 0.1], 0.1, False, DT, center_frame="panda_link0")
    assert "the sphere of radius 0.1 m around [0.5, 0, 0.25] (world)" in world.row_hint(0)
    assert "the sphere of radius 0.1 m around [0, 0, 0.1] in frame 'panda_link0'" in moving.row_hint(0)
    assert "(world)" not in moving.row_hint(0)


@pytest.mark.parametrize("key, value", [("d_min", -0.01), ("row_margin", -1.0), ("row_spacing", -1.0)])
def test_a_collision_barrier_refuses_a_negative_distance_naming_its_key(panda, key, value):
    s, robot = panda
    with pytest.raises(InvalidInputError, match=rf"^self_collision\.{key}: "):
        CollisionBarrier(robot, 2, DT, name="self_collision", **{key: value})


# --------------------------------------------------------------- second sample (seed 1)
def test_braking_leaves_a_row_in_recovery_to_its_rate_term_without_a_floating_point_warning(panda):
    """Barrier's docstring: the braking cap applies to a row whose h >= 0; a row in recovery (h < 0, where the
    cap's square root has a negative argument) keeps its rate term, with no RuntimeWarning per step."""
    s, robot = panda
    q = s.named_configuration("default")
    g = robot.group
    b = JointLimitBarrier(robot, DT, gain=GAIN)
    q[g.q_indices[0]] = s.q_min_v[g.v_indices[0]] + 0.5 * b.margin[0]  # joint 0 inside its lower margin: h < 0
    b.update(q, None, None)
    assert b.value[0] < 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, up = b.constraint(braking=np.concatenate([[0.0], np.full(robot.nv, 1e-3)]))
    assert up[0] == pytest.approx(_row_bound(b.value[0], 0.0), rel=1e-12)


def test_a_collision_barrier_entry_names_its_own_path_for_a_common_key_out_of_range():
    """A common key (gain > 0) refused in a collision barrier's entry names the entry's path, as every key."""
    base = {"tasks": [{"name": "ee", "type": "frame", "frame": "panda_hand_tcp"}]}
    for kind in ("collision", "self_collision"):
        with pytest.raises(InvalidInputError, match=r"barriers\[1\]\.gain: expected a finite number > 0"):
            load_config({**base, "barriers": [{"name": "jl", "type": "joint_limit"},
                                              {"name": "c", "type": kind, "gain": 0}]})


def test_a_compiled_collision_barrier_says_so_at_configure_and_the_python_path_says_why_not(panda):
    s, robot = panda
    compiled = CollisionBarrier(robot, 2, DT, rows_per_pair=3)
    python = CollisionBarrier(robot, 2, DT, rows_per_pair=3, use_compiled=False)
    assert compiled.compiled and not python.compiled
    assert compiled.configure_notes()[0] == "barrier 'self_collision': collision distances compiled, 3 row(s) per pair"
    assert python.configure_notes()[0] == (f"barrier 'self_collision': collision distances in Python "
                                           f"({python.compiled_reason}), 3 row(s) per pair")
    assert "use_compiled=False" in python.compiled_reason


def test_a_collision_barrier_hint_points_at_the_srdf(panda):
    s, robot = panda
    hint = CollisionBarrier(robot, 2, DT).row_hint(0)
    assert "d_min/safety_margin" in hint and "disable that pair in the SRDF" in hint


@pytest.mark.kernel  # a compiled barrier: it keeps its own copy of the geometries
def test_an_expected_prepare_holds_the_old_tables_for_a_bounded_number_of_updates_after_a_prepared_swap():
    """While a prepare() is expected (expect_prepare) a compiled barrier goes on with its previous tables for
    _MAX_PREPARE_WAIT updates, then rebuilds them itself; a prepared swap before restarts that count."""
    r = robot_description("panda")
    s = Scene(r.urdf_xml, r.srdf_xml, r.package_paths)
    s.add_obstacle(Obstacle("table", "box", (1.2, 1.2, 0.04), position=(0.35, 0.0, -0.03)))
    barrier = CollisionBarrier(Robot(s, s.group("arm")), 4, DT, pairs="obstacles")
    assert barrier.compiled
    data = s.model.createData()
    q = s.named_configuration("default")
    pin.computeJointJacobians(s.model, data, q)
    pin.updateFramePlacements(s.model, data)
    hand = data.oMf[s.frame_id("panda_hand_tcp")].translation

    def update() -> str:
        geom_data = pin.GeometryData(s.collision_model)
        pin.updateGeometryPlacements(s.model, data, s.collision_model, geom_data)
        barrier.update(q, data, geom_data)
        return " ".join(barrier.row_names)

    update()
    s.add_obstacle(Obstacle("post", "sphere", (0.03,), position=tuple(hand + [0.0, 0.12, 0.0])))
    barrier.prepare()
    assert "obstacle:post" in update()  # the prepared tables swapped in
    s.add_obstacle(Obstacle("ball", "sphere", (0.03,), position=tuple(hand + [0.0, -0.12, 0.0])))
    barrier.expect_prepare()
    for _ in range(_MAX_PREPARE_WAIT):
        assert "obstacle:ball" not in update()  # the previous tables, while a prepare may still come
    assert "obstacle:ball" in update()  # none came: rebuilt in the tick


@pytest.mark.parametrize("joints", [["panda_joint4"], ["panda_joint2", "panda_joint5"],
                                    ["panda_joint1", "panda_joint7"]])
def test_a_joint_limit_barrier_on_a_few_active_joints_has_their_rows(joints):
    """A group of one joint, or of joints apart in q: rows q - q_low (lower), then q_high - q (upper)."""
    s = scene("panda")
    group = s.subgroup(s.group("arm"), joints)
    b = JointLimitBarrier(Robot(s, group), DT, margin_fraction=0.1)
    q = s.named_configuration("default")
    lo, hi = s.q_min_v[group.v_indices], s.q_max_v[group.v_indices]
    margin = 0.1 * (hi - lo)
    x = q[group.q_indices]
    b.update(q, None, None)
    np.testing.assert_allclose(b.value, np.concatenate([x - (lo + margin), (hi - margin) - x]), rtol=1e-12)
    k = len(joints)
    np.testing.assert_array_equal(b.jacobian, np.vstack([np.eye(k), -np.eye(k)]))
    assert b.row_names == [f"{j} lower" for j in joints] + [f"{j} upper" for j in joints]


def test_a_joint_limit_barrier_built_without_a_name_is_named_joint_limit(panda):
    """Built in code without a name, it is named after its kind (the YAML type ``joint_limit``), and so are its
    errors."""
    s, robot = panda
    assert JointLimitBarrier(robot, DT).name == "joint_limit"
    with pytest.raises(InvalidInputError, match=r"^joint_limit\.margin_fraction: "):
        JointLimitBarrier(robot, DT, margin_fraction=0.9)


def test_a_position_barrier_hint_names_the_face_of_its_row(panda):
    """Outside a face: "outside the box on <axis> (<p_min|p_max>[i] = bound m)"; inside: how far inside that face."""
    s, robot = panda
    data = s.model.createData()
    q = s.named_configuration("default")
    pin.computeJointJacobians(s.model, data, q)
    pin.updateFramePlacements(s.model, data)
    p = data.oMf[s.frame_id("panda_hand_tcp")].translation.copy()
    p_min, p_max = p + [0.125, -0.5, -0.5], p + [0.5, 0.5, 0.25]  # x below p_min: outside; z 0.25 m below p_max
    b = PositionBarrier(robot, "panda_hand_tcp", p_min, p_max, DT)
    b.update(q, data, None)
    assert (f"frame 'panda_hand_tcp' is outside the box on x (p_min[0] = {p_min[0]:.4g} m)" in b.row_hint(0))
    assert (f"frame 'panda_hand_tcp' is 0.25 m inside the box face on z (p_max[2] = {p_max[2]:.4g} m)"
            in b.row_hint(5))


def test_a_sphere_barrier_refuses_a_radius_naming_its_key(panda):
    s, robot = panda
    for radius in (0.0, -0.1, np.inf):
        with pytest.raises(InvalidInputError, match=r"^panda_hand_tcp_sphere\.radius: expected a finite number > 0"):
            SphereBarrier(robot, "panda_hand_tcp", [0.0, 0.0, 0.0], radius, False, DT)
        with pytest.raises(InvalidInputError, match=r"^keep_out\.radius: "):
            SphereBarrier(robot, "panda_hand_tcp", [0.0, 0.0, 0.0], radius, False, DT, name="keep_out")


# --------------------------------------------------------------- third sample (seed 2)
def test_an_axis_box_refuses_p_min_equal_to_p_max_on_a_selected_axis_only():
    """p_min < p_max strictly on the selected axes (a box of no width there has no inside: both rows could never
    be kept together); on an axis not selected the bounds are not used, so equal ones are taken."""
    p_min, p_max = [-0.1, -0.2, 0.5], [0.4, 0.5, 0.5]  # z: no width
    AxisBox(p_min, p_max, (True, True, False), "box")  # the premise: z not selected
    with pytest.raises(InvalidInputError, match=r"^box: expected finite p_min < p_max on the selected axes, got "
                                                r"p_min=\[-0\.1, -0\.2, 0\.5\], p_max=\[0\.4, 0\.5, 0\.5\]$"):
        AxisBox(p_min, p_max, (False, False, True), "box")


def test_a_position_barrier_from_config_keeps_only_the_selected_axes(panda):
    """A ``type: position`` entry's axis_selection reaches the barrier its builder makes: z alone gives the two z
    rows, whose h are the frame's height above p_min and below p_max."""
    s, robot = panda
    q = s.named_configuration("default")
    config = PositionBarrierConfig(name="height", type="position", frame="panda_hand_tcp", p_min=[-1.0, -1.0, 0.25],
                                   p_max=[1.0, 1.0, 1.5], axis_selection=[False, False, True])
    b = build_position_barrier(config, BuildContext(robot, DT, q))
    data = s.model.createData()
    pin.computeJointJacobians(s.model, data, q)
    pin.updateFramePlacements(s.model, data)
    b.update(q, data, None)
    z = data.oMf[s.frame_id("panda_hand_tcp")].translation[2]
    assert b.row_names == ["z lower", "z upper"]
    np.testing.assert_allclose(b.value, [z - 0.25, 1.5 - z], rtol=0.0, atol=1e-15)


def test_with_a_barrier_reference_a_row_bounds_the_step_from_the_reference(panda):
    """Barrier.constraint(reference=r) (Oink.set_barrier_reference: measured feedback): h is taken at q ⊕ r to
    first order, h + J_h r, and the row bounds dq - r: G dq <= b(h + J_h r) + G r, G = -J_h."""
    s, robot = panda
    q = s.named_configuration("default")
    g = robot.group
    b = JointLimitBarrier(robot, DT, gain=GAIN, safety_margin=0.001)
    q[g.q_indices[0]] = s.q_min_v[g.v_indices[0]] + 2.0 * b.margin[0]  # joint 0 near its lower limit
    b.update(q, None, None)
    r = np.linspace(-0.01, 0.01, robot.nv)  # [rad] the previous command's lead over q
    G, up = b.constraint(reference=r)
    h_ref = b.value + b.jacobian @ r
    np.testing.assert_array_equal(G, -b.jacobian)
    np.testing.assert_allclose(up, _row_bound(h_ref, 0.001) - b.jacobian @ r, rtol=1e-12, atol=1e-18)


def test_an_unused_collision_row_is_never_bounded_also_with_braking_and_a_reference(panda):
    """A collision barrier with more rows than pairs within its broad-phase cutoff (here one pair within 5 cm of 4
    rows): an unused row has h = inf and G = 0, and its bound is +inf (the QP drops it), never inf / inf = NaN,
    with or without braking and a barrier reference."""
    s, robot = panda
    q = s.named_configuration("default")
    data = s.model.createData()
    pin.computeJointJacobians(s.model, data, q)
    pin.updateFramePlacements(s.model, data)
    geom_data = pin.GeometryData(s.collision_model)
    pin.updateGeometryPlacements(s.model, data, s.collision_model, geom_data)
    b = CollisionBarrier(robot, 4, DT, broad_phase_cutoff=0.05)
    b.update(q, data, geom_data)
    used = b.rows.count
    assert 0 < used < b.size and np.isinf(b.value[used:]).all()  # the premise
    braking = np.concatenate([[1.0], np.full(robot.nv, 1e-3)])
    for kwargs in ({}, {"braking": braking}, {"reference": np.full(robot.nv, 0.01)}):
        G, up = b.constraint(**kwargs)
        assert not G[used:].any() and np.isposinf(up[used:]).all(), (kwargs, up)
        assert np.isfinite(up[:used]).all(), (kwargs, up)
