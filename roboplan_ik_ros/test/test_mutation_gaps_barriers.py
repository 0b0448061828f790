"""Barrier behaviour that mutation testing found unchecked (docs/mutation.md, core/oink/barriers).

Barrier.constraint is the row the QP gets when the compiled assembly is not used: its safety margin and
its braking bound (for every lag >= 0) had no test that pins the result (the kernel's rows are checked
elsewhere). The rest: which face an axis box's row is, the singular values a singularity barrier reports,
the texts that name a barrier's row when no step keeps it, and the key a collision barrier's error names.
"""

from __future__ import annotations

import numpy as np
import pytest

from models import scene
import pinocchio as pin

from roboplan_ik_ros.core.errors import InvalidInputError
from roboplan_ik_ros.core.oink.barriers.axis_box import AxisBox
from roboplan_ik_ros.core.oink.barriers.collision_barrier import CollisionBarrier
from roboplan_ik_ros.core.oink.barriers.joint_limit_barrier import JointLimitBarrier
from roboplan_ik_ros.core.oink.barriers.singularity_barrier import SingularityBarrier
from roboplan_ik_ros.core.oink.barriers.sphere_barrier import SphereBarrier
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
