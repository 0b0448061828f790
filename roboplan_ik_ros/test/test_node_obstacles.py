"""World obstacles through the node, end to end: ``ik_controller`` (shipped panda.yaml with its table)
and ``mock_robot`` as separate processes; objects are added, moved, removed, listed and cleared over
DDS (~/collision_objects, ~/list_collision_objects, ~/clear_collision_objects), malformed ones are
refused with the reason while the others stay, ~/status reports the closest obstacle, and a goal
through a block keeps the arm d_min away from it with every command within the safety invariants."""

from __future__ import annotations

import math
import time

import numpy as np
import pinocchio as pin
import pytest

import e2e
from e2e import ROOT_FRAME, Rig, write_config, rig  # noqa: F401 - rig is a fixture

WAIT = 60.0
D_MIN = next(b["d_min"] for b in e2e.shipped_config()["barriers"] if b["name"] == "obstacles")


def pose(xyz=(0.0, 0.0, 0.0), xyzw=(0.0, 0.0, 0.0, 1.0)):
    from geometry_msgs.msg import Pose

    p = Pose()
    p.position.x, p.position.y, p.position.z = (float(v) for v in xyz)
    p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w = (float(v) for v in xyzw)
    return p


def box(object_id: str, size, xyz, frame: str = ROOT_FRAME, operation=None):
    from shape_msgs.msg import SolidPrimitive

    from roboplan_ik_interfaces.msg import CollisionObject

    msg = CollisionObject(id=object_id, operation=CollisionObject.ADD if operation is None else operation)
    msg.header.frame_id = frame
    msg.pose = pose(xyz)
    msg.primitives = [SolidPrimitive(type=SolidPrimitive.BOX, dimensions=[float(s) for s in size])]
    msg.primitive_poses = [pose()]
    return msg


class Objects:
    """The test's end of the node's obstacle interface."""

    def __init__(self, rig: Rig) -> None:
        from std_srvs.srv import Trigger

        from roboplan_ik_interfaces.msg import CollisionObject
        from roboplan_ik_interfaces.srv import ListCollisionObjects
        from rclpy.qos import QoSProfile, ReliabilityPolicy

        self.rig = rig
        name = rig.ik.name
        self.pub = rig.node.create_publisher(CollisionObject, f"/{name}/collision_objects",
                                             QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE))
        self.list_client = rig.node.create_client(ListCollisionObjects, f"/{name}/list_collision_objects")
        self.clear_client = rig.node.create_client(Trigger, f"/{name}/clear_collision_objects")
        rig.wait(lambda: self.pub.get_subscription_count() > 0, WAIT, "the node's ~/collision_objects subscription")

    def list(self) -> dict:
        from roboplan_ik_interfaces.srv import ListCollisionObjects

        res = self.rig.call(self.list_client, ListCollisionObjects.Request(), what="list_collision_objects")
        return {o.id: o for o in res.objects}

    def clear(self):
        from std_srvs.srv import Trigger

        return self.rig.call(self.clear_client, Trigger.Request(), what="clear_collision_objects")

    def send(self, msg) -> None:
        self.pub.publish(msg)

    def wait_listed(self, predicate, what: str) -> dict:
        listed = {}

        def check():
            listed.update(self.list())
            return predicate(self.list())

        self.rig.wait(check, WAIT, what)
        return self.list()


def start(rig: Rig) -> Objects:
    rig.start_mock()
    rig.start_ik(write_config(rig.log_dir, node={"activation_timeout": 20.0}))
    rig.activate()
    rig.wait_mode("waiting_for_goal", WAIT, since=rig.events["activate_request"])
    return Objects(rig)


def test_add_move_remove_list_clear_and_refusals(rig):
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from visualization_msgs.msg import Marker, MarkerArray

    from roboplan_ik_interfaces.msg import CollisionObject

    diagnostics, marker_arrays = [], []
    rig.node.create_subscription(DiagnosticArray, "/diagnostics", diagnostics.append, 10)
    objects = start(rig)
    rig.node.create_subscription(MarkerArray, f"/{rig.ik.name}/markers", marker_arrays.append, QoSProfile(
        depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL))

    def diagnostic(key: str, predicate) -> None:
        def found():
            values = [kv.value for d in list(diagnostics) for st in d.status if st.name.startswith(rig.ik.name)
                      for kv in st.values if kv.key == key]
            return values and predicate(values[-1])
        rig.wait(found, WAIT, f"/diagnostics {key}")

    def markers_of(name: str):
        return [m for m in marker_arrays[-1].markers if m.ns == f"obstacle/{name}"] if marker_arrays else []

    listed = objects.list()
    assert set(listed) == {"table"} and listed["table"].source == "config" and listed["table"].shape == "box"
    status = rig.wait_status(lambda s: s.obstacles == 1 and s.closest_obstacle == "table", WAIT, "the table in ~/status")
    assert status.closest_obstacle_link and math.isfinite(status.closest_obstacle_distance)

    diagnostic("closest_obstacle", lambda v: v.startswith("table <-> "))
    objects.send(box("block", (0.1, 0.1, 0.1), (0.5, 0.3, 0.05)))
    listed = objects.wait_listed(lambda o: "block" in o, "block listed")
    assert listed["block"].source == "topic" and listed["block"].frame == "world"
    assert listed["block"].pose.position.y == pytest.approx(0.3)
    rig.wait(lambda: markers_of("block") and markers_of("table"), WAIT, "block and table markers on ~/markers")
    cube = markers_of("block")[0]
    assert cube.type == Marker.CUBE and cube.scale.x == pytest.approx(0.1) and cube.pose.position.y == pytest.approx(0.3)
    diagnostic("obstacles", lambda v: v == "2")

    objects.send(box("block", (), (0.5, -0.3, 0.05), operation=CollisionObject.MOVE))
    objects.wait_listed(lambda o: "block" in o and abs(o["block"].pose.position.y + 0.3) < 1e-9, "block moved")

    tool = box("tool", (0.02, 0.02, 0.1), (0.0, 0.0, 0.12), frame="panda_hand")
    tool.touch_links = ["panda_leftfinger", "panda_rightfinger"]
    objects.send(tool)
    listed = objects.wait_listed(lambda o: "tool" in o, "attached tool listed")
    assert listed["tool"].frame == "panda_hand" and list(listed["tool"].touch_links) == list(tool.touch_links)

    refused_before = rig.last_status().collision_objects_refused
    bad = []
    nan_pose = box("nan", (0.1, 0.1, 0.1), (0.5, float("nan"), 0.3))
    bad.append(nan_pose)
    bad.append(box("flat", (0.1, 0.0, 0.1), (0.5, 0.0, 0.3)))
    bad.append(box("lost", (0.1, 0.1, 0.1), (0.5, 0.0, 0.3), frame="shelf"))
    mesh = CollisionObject(id="part", operation=CollisionObject.ADD)
    mesh.header.frame_id = ROOT_FRAME
    mesh.pose = pose()
    mesh.mesh_uris, mesh.mesh_uri_poses = ["/nonexistent/part.stl"], [pose()]
    bad.append(mesh)
    bad.append(box("ghost", (), (0.0, 0.0, 0.0), operation=CollisionObject.REMOVE))
    for msg in bad:
        objects.send(msg)
    status = rig.wait_status(lambda s: s.collision_objects_refused >= refused_before + len(bad), WAIT,
                             f"{len(bad)} malformed objects refused")
    assert set(objects.list()) == {"table", "block", "tool"}  # the others stay
    log = rig.ik.log()
    for expected in ("'nan' (ADD) refused: pose: non-finite", "'flat' (ADD) refused", "y = 0",
                     "'lost' (ADD) refused: header.frame_id", "tf2_ros is not installed",
                     "'part' (ADD) refused", "no such file", "'ghost' (REMOVE) refused: id: no object 'ghost'"):
        assert expected in log, f"{expected!r} not in the node's log\n{rig.ik.tail(40)}"

    objects.send(box("block", (), (0.0, 0.0, 0.0), operation=CollisionObject.REMOVE))
    objects.wait_listed(lambda o: "block" not in o, "block removed")
    res = objects.clear()
    assert res.success and "tool" in res.message
    assert set(objects.list()) == {"table"}
    rig.wait_status(lambda s: s.obstacles == 1, WAIT, "one obstacle left in ~/status")
    objects.send(box("table", (), (0.0, 0.0, 0.0), operation=CollisionObject.REMOVE))  # a configured one, by name
    objects.wait_listed(lambda o: not o, "table removed")
    status = rig.wait_status(lambda s: s.obstacles == 0, WAIT, "no obstacle in ~/status")
    assert status.closest_obstacle == "" and math.isinf(status.closest_obstacle_distance)
    diagnostic("last_rejection", lambda v: "collision_objects" in v)
    rig.wait(lambda: marker_arrays and not any(m.ns.startswith("obstacle/") for m in marker_arrays[-1].markers),
             WAIT, "no obstacle marker left")
    rig.check()


def test_goal_through_a_block_keeps_d_min(rig):
    objects = start(rig)
    start_tcp = rig.tcp()
    below = start_tcp.translation - np.array([0.0, 0.0, 0.2])  # inside the workspace box
    top = below[2] + 0.1  # the block's top face: 10 cm above the goal
    objects.send(box("block", (0.2, 0.2, top + 0.01), (below[0], below[1], (top - 0.01) / 2)))
    status = rig.wait_status(lambda s: s.closest_obstacle == "block", WAIT, "the block nearest in ~/status")
    t0 = rig.send_pose(pin.SE3(start_tcp.rotation, below))
    # the arm stops on the block: the closest distance settles near d_min
    rig.wait_status(lambda s: s.closest_obstacle_distance < D_MIN + 0.005, WAIT, "the hand near the block", since=t0)
    t1 = time.perf_counter()
    rig.wait(lambda: len(rig.status_since(t1)) >= 10, WAIT, "10 more status messages (held against the block)")
    statuses = rig.status_since(t0)
    closest = min(s.closest_obstacle_distance for s in statuses)
    print(f"\nnode: goal 10 cm into a block: closest obstacle distance {closest * 1e3:.2f} mm over {len(statuses)} "
          f"status messages (d_min {D_MIN * 1e3:.0f} mm), link {statuses[-1].closest_obstacle_link!r}")
    assert closest >= D_MIN - 1e-3
    assert rig.tcp().translation[2] > top  # held above the block
    rig.check()
