"""Scene: groups from the SRDF, limits, manifold operations, collisions and input validation."""

import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin
import pytest

from models import robot, scene
from roboplan_ik_ros.core import InvalidInputError, Scene

# A 2-joint arm with a continuous joint (nq = 3, nv = 2) to exercise nq != nv.
CONTINUOUS_URDF = """<robot name="two">
  <link name="base"/><link name="l1"/><link name="l2"/><link name="tip"/>
  <joint name="j_cont" type="continuous"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/></joint>
  <joint name="j_rev" type="revolute"><parent link="l1"/><child link="l2"/><origin xyz="0.5 0 0"/>
    <axis xyz="0 1 0"/><limit lower="-1" upper="1" velocity="2" effort="1"/></joint>
  <joint name="j_tip" type="fixed"><parent link="l2"/><child link="tip"/><origin xyz="0.4 0 0"/></joint>
</robot>"""


def test_panda_arm_group_from_srdf():
    s = scene("panda")
    g = s.group("arm")
    assert g.joint_names == tuple(f"panda_joint{i}" for i in range(1, 8))
    assert g.nq == g.nv == 7
    assert s.group("arm_and_hand").nv == 8  # nested groups
    assert s.group("").nv == s.model.nv


def test_srdf_disabled_pairs_removed():
    """The pairs checked are every pair of geometries on different joints whose links the SRDF does not
    disable (derived here from the geometry list and the SRDF text)."""
    s = scene("panda")
    geoms = s.collision_model.geometryObjects
    names = {(geoms[p.first].name, geoms[p.second].name) for p in s.collision_model.collisionPairs}
    assert ("panda_link0_0", "panda_link1_0") not in names  # adjacent, disabled in the SRDF
    disabled = {frozenset((d.get("link1"), d.get("link2")))
                for d in ET.fromstring(robot("panda").srdf_xml).iter("disable_collisions")}
    link = [s.model.frames[g.parentFrame].name for g in geoms]
    different_joints = [(a, b) for a in range(len(geoms)) for b in range(a + 1, len(geoms))
                        if geoms[a].parentJoint != geoms[b].parentJoint]
    expected = {(a, b) for a, b in different_joints if frozenset((link[a], link[b])) not in disabled}
    assert {(min(p.first, p.second), max(p.first, p.second)) for p in s.collision_model.collisionPairs} == expected
    assert 0 < len(expected) < len(different_joints)  # the SRDF disabled some, not all


def test_default_state_is_collision_free_and_within_limits():
    s = scene("panda")
    q = s.named_configuration("default")
    assert s.within_limits(q, s.group("arm"))
    assert not s.in_collision(q)


def test_neutral_is_zero_or_mid_limits():
    s = scene("panda")
    q = s.neutral()
    lo, hi = s.q_min_v[3], s.q_max_v[3]  # panda_joint4: [-3.07, -0.07] rad excludes 0
    assert q[3] == pytest.approx(0.5 * (lo + hi))
    assert np.all(q[[0, 1, 2, 4, 5, 6]] == 0.0) and s.within_limits(q)


def test_random_configurations_within_limits():
    s = scene("ur5")
    rng = np.random.default_rng(0)
    for _ in range(100):
        assert s.within_limits(s.random_configuration(rng))


def test_continuous_joint_uses_manifold_operations():
    s = Scene(CONTINUOUS_URDF)
    assert (s.model.nq, s.model.nv) == (3, 2)
    g = s.group("")
    assert list(g.q_indices) == [0, 1, 2] and list(g.v_indices) == [0, 1]
    assert list(g.bounded_v) == [1]  # the continuous joint has no position limit
    q = s.q_from_joint_positions(["j_cont", "j_rev"], [3.0, 0.5])
    q2 = s.integrate(q, np.array([0.5, 0.1]))
    np.testing.assert_allclose(s.joint_positions(q2, ["j_cont", "j_rev"]), [3.5 - 2 * np.pi, 0.6], atol=1e-12)
    np.testing.assert_allclose(s.difference(q, q2), [0.5, 0.1], atol=1e-12)
    rng = np.random.default_rng(1)
    qr = s.random_configuration(rng)
    assert abs(np.hypot(qr[0], qr[1]) - 1.0) < 1e-12


def test_limit_overrides():
    r = robot("panda")
    s = Scene(r.urdf_xml, r.srdf_xml, r.package_paths,
              position_limits={"panda_joint1": [-1.0, 1.0]}, velocity_limits={"panda_joint2": 0.5})
    assert s.q_min_v[0] == -1.0 and s.q_max_v[0] == 1.0 and s.v_max[1] == 0.5


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(urdf_xml=""), "URDF is empty"),
        (dict(urdf_xml="<robot><link"), "cannot parse URDF"),
        (dict(srdf_xml="<robot><group"), "cannot parse SRDF"),
        (dict(position_limits={"nope": [0, 1]}), "unknown joint 'nope'; valid: 'panda_joint1'"),
        (dict(position_limits={"panda_joint1": [1, 0]}), r"position_limits.panda_joint1: expected lower < upper"),
        (dict(velocity_limits={"panda_joint1": -1.0}), r"velocity_limits.panda_joint1: expected a finite number > 0"),
        (dict(package_paths=["/nonexistent"]), "cannot load the collision geometry"),
    ],
)
def test_bad_scene_input_names_the_problem(kwargs, match):
    r = robot("panda")
    args = dict(urdf_xml=r.urdf_xml, srdf_xml=r.srdf_xml, package_paths=r.package_paths) | kwargs
    with pytest.raises(ValueError, match=match):
        Scene(**args)


def test_bad_queries_name_the_problem():
    s = scene("panda")
    with pytest.raises(InvalidInputError, match="unknown joint group 'leg'; valid: '', 'arm'"):
        s.group("leg")
    with pytest.raises(InvalidInputError, match="unknown frame 'tool99'; valid: .*'panda_hand_tcp'"):
        s.frame_id("tool99")
    with pytest.raises(InvalidInputError, match="q: expected 9 values"):
        s.check_configuration(np.zeros(3))
    with pytest.raises(InvalidInputError, match="non-finite value at index 2"):
        s.check_configuration([0, 0, np.nan, 0, 0, 0, 0, 0, 0])
    with pytest.raises(InvalidInputError, match="unknown SRDF group_state 'home'; valid: 'default'"):
        s.named_configuration("home")


def test_frame_pose_matches_pinocchio():
    s = scene("panda")
    q = s.named_configuration("default")
    data = s.model.createData()
    pin.framesForwardKinematics(s.model, data, q)
    assert s.frame_pose(q, "panda_hand_tcp").isApprox(data.oMf[s.frame_id("panda_hand_tcp")])


@pytest.mark.parametrize("name", ["ur5", "panda"])
def test_convex_hulls_are_conservative(name):
    """Every collision of the exact meshes is also one of the hulls (UR5's meshes are not convex)."""
    r = robot(name)
    hulls = scene(name)
    meshes = Scene(r.urdf_xml, r.srdf_xml, r.package_paths, convex_hulls=False)
    rng = np.random.default_rng(5)
    mesh_collisions = 0
    for _ in range(300):
        q = hulls.random_configuration(rng)
        if meshes.in_collision(q):
            mesh_collisions += 1
            assert hulls.in_collision(q)
    assert mesh_collisions > 10  # the check is not vacuous
