"""CollisionObject messages to core obstacles (node/collision_objects.py), without DDS: shapes and
their naming, MoveIt's cylinder dimension order, in-message meshes, frames (world, attached, other
robot frames, unknown ones without tf2), MOVE, and the refusals naming the field."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from geometry_msgs.msg import Point, Pose
from shape_msgs.msg import Mesh, MeshTriangle, SolidPrimitive

from models import robot
from roboplan_ik_interfaces.msg import CollisionObject
from roboplan_ik_ros.core import InvalidInputError, Scene
from roboplan_ik_ros.node.collision_objects import CollisionObjectReader, check_and_build
from roboplan_ik_ros.node.goal_frames import FrameResolver


@pytest.fixture(scope="module")
def panda():
    r = robot("panda")
    return Scene(r.urdf_xml, r.srdf_xml, r.package_paths)


@pytest.fixture
def reader(panda):
    return CollisionObjectReader(FrameResolver(panda, "panda_link0"), panda.link_names, "panda_link0", 0.01)


def pose(xyz=(0.0, 0.0, 0.0), xyzw=(0.0, 0.0, 0.0, 1.0)) -> Pose:
    p = Pose()
    p.position.x, p.position.y, p.position.z = (float(v) for v in xyz)
    p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w = (float(v) for v in xyzw)
    return p


def message(frame="panda_link0", **fields) -> CollisionObject:
    msg = CollisionObject(id="thing", operation=CollisionObject.ADD, **fields)
    msg.header.frame_id = frame
    return msg


def test_shapes_names_poses_and_cylinder_order(reader, panda):
    s = 0.5 ** 0.5
    msg = message(pose=pose((0.5, 0.0, 0.2), (0.0, 0.0, s, s)))  # the object's frame: 90 deg about z
    msg.primitives = [SolidPrimitive(type=SolidPrimitive.BOX, dimensions=[0.1, 0.2, 0.3]),
                      SolidPrimitive(type=SolidPrimitive.CYLINDER, dimensions=[0.4, 0.05])]  # [height, radius]
    msg.primitive_poses = [pose(), pose((0.1, 0.0, 0.0))]
    v = [Point(x=x, y=y, z=z) for x, y, z in ((0, 0, 0), (0.1, 0, 0), (0, 0.1, 0), (0, 0, 0.1))]
    msg.meshes = [Mesh(vertices=v, triangles=[MeshTriangle(vertex_indices=t) for t in
                                              ((0, 1, 2), (0, 1, 3), (0, 2, 3), (1, 2, 3))])]
    msg.mesh_poses = [pose()]
    shapes, obstacles = reader.shapes(msg, panda.neutral())
    assert [o.name for o in obstacles] == ["thing/0", "thing/1", "thing/2"]
    box, cylinder, mesh = obstacles
    assert box.shape == "box" and box.dims == (0.1, 0.2, 0.3) and box.frame == "world"
    assert cylinder.dims == (0.05, 0.4)  # radius, length
    np.testing.assert_allclose(cylinder.position, [0.5, 0.1, 0.2], atol=1e-12)  # (0.1, 0, 0) turned 90 deg
    assert mesh.shape == "mesh" and mesh.vertices.shape == (4, 3) and mesh.triangles.shape == (4, 3)
    for o in obstacles:
        check_and_build(o, panda, o.name)
    moved = reader.moved(message(pose=pose((0.0, 0.5, 0.2))), shapes, panda.neutral())
    np.testing.assert_allclose(moved[1][1].translation, [0.1, 0.5, 0.2], atol=1e-12)  # the shape's offset kept


def test_frames(reader, panda):
    q = panda.neutral()
    msg = message("panda_hand", pose=pose((0.0, 0.0, 0.1)))
    msg.primitives, msg.primitive_poses = [SolidPrimitive(type=SolidPrimitive.SPHERE, dimensions=[0.03])], [pose()]
    _, (attached,) = reader.shapes(msg, q)
    assert attached.frame == "panda_hand" and attached.name == "thing"
    msg.header.frame_id = "panda_joint4"  # a robot frame that is not a link: fixed where it is now
    _, (fixed,) = reader.shapes(msg, q)
    expected = panda.frame_pose(q, "panda_joint4") * pin.SE3(np.eye(3), np.array([0.0, 0.0, 0.1]))
    assert fixed.frame == "world"
    np.testing.assert_allclose(fixed.position, expected.translation, atol=1e-12)
    msg.header.frame_id = "shelf"
    with pytest.raises(InvalidInputError, match=r"header.frame_id: .*tf2_ros is not installed"):
        reader.shapes(msg, q)


@pytest.mark.parametrize("edit, expected", [
    (lambda m: setattr(m, "id", ""), "id: expected a non-empty name"),
    (lambda m: setattr(m, "primitive_poses", []), "primitive_poses: expected one pose per entry of primitives"),
    (lambda m: setattr(m.primitives[0], "dimensions", [0.1, 0.2]), "primitives[0].dimensions: a box takes 3"),
    (lambda m: setattr(m.primitives[0], "type", SolidPrimitive.CONE), "primitives[0].type: 4 is not supported"),
    (lambda m: setattr(m, "pose", pose(xyzw=(0.0, 0.0, 0.0, 0.0))), "pose: zero quaternion"),
    (lambda m: setattr(m, "primitives", []) or setattr(m, "primitive_poses", []), "an ADD needs at least one shape"),
    (lambda m: setattr(m, "mesh_uri_scales", [1.0]), "mesh_uri_scales: expected none or one per mesh_uris"),
])
def test_refusals_name_the_field(reader, panda, edit, expected):
    msg = message(pose=pose())
    msg.primitives = [SolidPrimitive(type=SolidPrimitive.BOX, dimensions=[0.1, 0.1, 0.1])]
    msg.primitive_poses = [pose()]
    edit(msg)
    with pytest.raises(InvalidInputError) as err:
        reader.shapes(msg, panda.neutral())
    assert expected in str(err.value), str(err.value)
