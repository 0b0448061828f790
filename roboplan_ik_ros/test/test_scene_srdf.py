"""Scene with real robots' SRDFs: fixed joints in groups, URDF/SRDF mismatch, SRDFs without
disable_collisions (collision pairs disabled automatically) and the notes the scene leaves for the log."""

import functools
import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin
import pytest

from models import robot
from roboplan_ik_ros.core import InvalidInputError, Scene
from roboplan_ik_ros.core.model.robots import example_robot_data_share
from roboplan_ik_ros.core.model.srdf import parse_srdf

# (urdf, srdf) in example-robot-data/robots
XARM7 = ("xarm_description/urdf/xarm7.urdf", "xarm_description/srdf/xarm7.srdf")  # group lists fixed joints
JACO = ("kinova_description/robots/kinova.urdf", "kinova_description/srdf/kinova.srdf")  # no disable_collisions


def overlapping_spheres_urdf(offset: float) -> str:
    """Spheres (r = 0.3 m) on base and l2, both at x = ``offset`` [m] from the z axis about which j1 and
    j2 turn: at offset 0 they collide in every configuration, at 0.5 m only when j1 + j2 is near 0.
    l2 is not adjacent to the base: l1, between them, carries geometry (far away)."""
    sphere = f'<collision><origin xyz="{offset} 0 0"/><geometry><sphere radius="0.3"/></geometry></collision>'
    return f"""<robot name="spheres">
  <link name="base">{sphere}</link>
  <link name="l1"><collision><origin xyz="0 0 2"/><geometry><sphere radius="0.1"/></geometry></collision></link>
  <link name="l2">{sphere}</link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" velocity="1" effort="1"/></joint>
  <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" velocity="1" effort="1"/></joint>
</robot>"""


def read(path: str) -> str:
    return (example_robot_data_share() / "example-robot-data" / "robots" / path).read_text()


@functools.lru_cache(maxsize=None)
def scene_of(files: tuple[str, str], convex_hulls: bool = True) -> Scene:
    urdf, srdf = files
    return Scene(read(urdf), read(srdf), [str(example_robot_data_share())], convex_hulls=convex_hulls)


def link_pair(s: Scene, pair: pin.CollisionPair) -> tuple[str, str]:
    """The links the pair's two geometries belong to."""
    link = lambda g: s.model.frames[s.collision_model.geometryObjects[g].parentFrame].name  # noqa: E731
    return link(pair.first), link(pair.second)


def colliding_link_pairs(s: Scene, q: np.ndarray) -> set[tuple[str, str]]:
    """Link pairs of the active collision pairs in collision at q."""
    gm, gd = s.collision_model, pin.GeometryData(s.collision_model)
    pin.computeCollisions(s.model, s.model.createData(), gm, gd, q, False)
    return {link_pair(s, p) for k, p in enumerate(gm.collisionPairs) if gd.collisionResults[k].isCollision()}


def active_link_pairs(s: Scene) -> set[tuple[str, str]]:
    return {link_pair(s, p) for p in s.collision_model.collisionPairs}


def test_parse_srdf_records_robot_name_and_disable_collisions():
    xarm, jaco = parse_srdf(read(XARM7[1])), parse_srdf(read(JACO[1]))
    assert (xarm.robot_name, xarm.has_disable_collisions) == ("UF_ROBOT", True)
    assert ("link1", "link2") in xarm.disabled_collisions
    assert (jaco.robot_name, jaco.has_disable_collisions) == ("kinova", False)
    assert (parse_srdf("").robot_name, parse_srdf("").has_disable_collisions) == ("", False)


def test_xarm7_group_skips_fixed_joints_and_notes_them():
    s = scene_of(XARM7)
    assert s.group("xarm7").joint_names == tuple(f"joint{i}" for i in range(1, 8))
    [note] = [n for n in s.notes if "world_joint" in n]
    assert "'xarm7'" in note and "'joint_eef' (fixed)" in note
    assert not s.in_collision(s.named_configuration("home"))


def test_mismatched_urdf_and_srdf_name_both_robots():
    ur5, panda = robot("ur5"), robot("panda")
    s = Scene(ur5.urdf_xml, panda.srdf_xml, ur5.package_paths)
    with pytest.raises(InvalidInputError) as exc:
        s.group("arm")
    message = str(exc.value)
    for words in ("'panda'", "'ur5'", "joint 'panda_joint1'", "probably describe different robots",
                  "'shoulder_pan_joint'"):
        assert words in message
    assert any("ignored" in n and "disable_collisions" in n and "'ur5'" in n for n in s.notes)


@pytest.mark.parametrize("group_xml, words", [
    ('<chain base_link="root_link" tip_link="tool0"/>', "link 'root_link'"),
    ('<chain base_link="base_link" tip_link="gripper"/>', "link 'gripper'"),
    ('<link name="gripper"/>', "link 'gripper'"),
])
def test_group_link_missing_from_urdf_names_both_robots(group_xml, words):
    ur5 = robot("ur5")
    srdf = f'<robot name="other_arm"><group name="arm">{group_xml}</group></robot>'
    s = Scene(ur5.urdf_xml, srdf, ur5.package_paths)
    with pytest.raises(InvalidInputError, match="probably describe different robots") as exc:
        s.group("arm")
    assert words in str(exc.value) and "'other_arm'" in str(exc.value) and "'ur5'" in str(exc.value)
    assert "'base_link'" in str(exc.value)  # the URDF's links are listed


def adjacent_geometry_links(urdf_xml: str) -> set[tuple[str, str]]:
    """(parent, child) link pairs with collision geometry on adjacent bodies, from the URDF text: a
    body is a link with everything fixed to it; bodies are adjacent across one moving joint (every
    body of the Jaco carries geometry, so no body is skipped)."""
    root = ET.fromstring(urdf_xml)
    with_geometry = {link.get("name") for link in root.findall("link") if link.findall("collision")}
    parent = {j.find("child").get("link"): (j.find("parent").get("link"), j.get("type")) for j in root.findall("joint")}

    def body(link: str) -> str:
        while link in parent and parent[link][1] == "fixed":
            link = parent[link][0]
        return link

    members: dict[str, set[str]] = {}
    for link in with_geometry:
        members.setdefault(body(link), set()).add(link)
    pairs = set()
    for child_body, links in members.items():
        if child_body in parent:
            pairs |= {(a, b) for a in members.get(body(parent[child_body][0]), ()) for b in links}
    return pairs


def test_jaco_without_disable_collisions_notes_the_disabled_pairs():
    s = scene_of(JACO)
    [adjacent] = [n for n in s.notes if "adjacent" in n]
    expected = adjacent_geometry_links(read(JACO[0]))
    assert adjacent.startswith(f"SRDF has no disable_collisions: disabled {len(expected)} ")
    assert all(f"'{a}/{b}'" in adjacent for a, b in expected), (sorted(expected), adjacent)
    assert "'j2s6s200_link_1/j2s6s200_link_2'" in adjacent
    assert any("random configurations" in n for n in s.notes)
    assert ("j2s6s200_link_1", "j2s6s200_link_2") not in active_link_pairs(s)
    assert ("j2s6s200_link_3", "j2s6s200_link_5") in active_link_pairs(s)  # not adjacent: still checked


@pytest.mark.parametrize("convex_hulls", [True, False])
def test_jaco_typical_configurations_are_collision_free(convex_hulls):
    s = scene_of(JACO, convex_hulls)
    assert not s.in_collision(s.neutral())
    assert not s.in_collision(s.named_configuration("arm_up"))
    rng = np.random.default_rng(7)
    collisions = sum(s.in_collision(s.random_configuration(rng)) for _ in range(200))
    # a few folded configurations, not every one (with its adjacent pairs active every one collides)
    assert 0 < collisions < 200


def test_jaco_hulls_find_every_collision_the_meshes_find():
    """A convex hull contains its mesh: every random configuration in collision with the exact meshes
    is in collision with the hulls too (the hulls are conservative)."""
    hulls, meshes = scene_of(JACO), scene_of(JACO, False)
    rng = np.random.default_rng(7)
    qs = [hulls.random_configuration(rng) for _ in range(200)]
    by_mesh = [k for k, q in enumerate(qs) if meshes.in_collision(q)]
    assert by_mesh and all(hulls.in_collision(qs[k]) for k in by_mesh)


def test_jaco_folded_onto_itself_is_still_in_collision():
    """Elbow and wrist folded to 0.05 rad from their lower limits: the exact meshes intersect."""
    hulls, meshes = scene_of(JACO), scene_of(JACO, False)
    lower = hulls.q_min_v
    folded = [0.0, lower[1] + 0.05, lower[2] + 0.05, 0.0, lower[4] + 0.05, 0.0]  # [rad]
    q = hulls.q_from_joint_positions(hulls.joint_names, folded)
    assert ("j2s6s200_link_3", "j2s6s200_link_5") in colliding_link_pairs(meshes, q)
    assert hulls.in_collision(q)


def test_always_colliding_pair_is_disabled_and_sometimes_colliding_is_not():
    s = Scene(overlapping_spheres_urdf(0.0))
    assert active_link_pairs(s) == set()  # base/l1 and l1/l2 adjacent, base/l2 always colliding
    assert s.notes == [
        "no SRDF: disabled 2 collision pairs of adjacent links: 'base/l1', 'l1/l2'",
        "no SRDF: disabled 1 collision pairs in collision in >= 95% of 300 random configurations: 'base/l2'",
    ]
    sometimes = Scene(overlapping_spheres_urdf(0.5))
    assert active_link_pairs(sometimes) == {("base", "l2")}
    assert sometimes.in_collision(sometimes.neutral())


def test_srdf_with_disable_collisions_is_applied_as_written():
    s = scene_of(XARM7)
    assert not any("adjacent" in n for n in s.notes)
    assert ("link1", "link2") not in active_link_pairs(s) and ("link2", "link4") in active_link_pairs(s)
