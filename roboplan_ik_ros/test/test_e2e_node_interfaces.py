"""Interfaces of the running node proved from outside (issue 31): one ``ik_controller`` process for the module
(panda.yaml, self-collision dropped as in every e2e config but test_e2e_self_collision.py) and the mock Panda
(a strict drive), over DDS; every command checked by the harness.

- NaN positions and a message without one of the group's joints on ``/joint_states`` (published from this
  process among the mock's) are each rejected, counted one by one in ``~/status`` and logged with the reason,
  and the arm at rest holds still;
- ``~/clear_pointcloud`` removes the perceived cloud (``~/status``: ``cleared (service)``, 0 points) and the next
  cloud replaces it;
- ``~/markers`` (transient local) holds the ee task's goal where it was sent, the workspace box as configured and
  the table, and the goal marker follows a new goal;
- ``streaming.*`` runtime parameters: ``speed_override`` 0 stops a twist stream from moving the tool, 1 lets it
  move it again, 1.5 is refused naming the parameter;
- ``mock_camera`` (a process) publishing on ``~/pointcloud``: its clouds are in use (``fresh``), none refused, and
  the box it shows when ``box_visible`` is set adds points to the perceived cloud;
- ``~/<task>/joint_jog``: where control_msgs is not installed (a PyPI install: this machine), the node says so at
  configure and subscribes no such topic; where it is, a JointJog jogs the posture's joint.

No assertion is about a rate, a duration or a latency; the timeouts are generous.
"""

from __future__ import annotations

import importlib.util
import math
import time

import numpy as np
import pinocchio as pin

import e2e
from e2e import ARM, ROOT_FRAME, report, write_config
from e2e_features import WAIT, module_rig, trigger, publisher, wait_commands_still  # noqa: F401 - fixture
from test_e2e_features import TwistStream, _twist_pub
from test_e2e_pointcloud import cloud_msg

SHIPPED = e2e.shipped_config()
WORKSPACE = next(b for b in SHIPPED["barriers"] if b["name"] == "workspace")
BAD_MESSAGES = 5  # of each kind
CLOUD_CENTER = np.array([0.5, -0.35, 0.3])  # [m] panda_link0: a 6 cm cube of points away from the arm
CLOUD_SIZE = 0.06
# mock_camera: few, small clouds (its ray casting takes a core at 20000, 15 Hz), but enough for the shipped
# perception.min_points_per_voxel: 2 to keep the box (at the default pose its cells: 3000 rays 0-3, 8000 ~45,
# 12000 ~95, three noise seeds)
CAMERA_HZ, CAMERA_POINTS = 5.0, 10000
BOX_POINTS = 20  # the camera's box adds at least this many points (cells) to the perceived cloud


def _start(rig) -> None:
    if rig.ik is None:
        rig.start_mock()
        rig.start_ik(write_config(rig.log_dir, node={"activation_timeout": 20.0}))
        rig.activate()
        rig.wait_mode("waiting_for_goal", WAIT, since=rig.events["activate_request"])


def _goal(rig, shift) -> pin.SE3:
    T0 = rig.tcp()
    return pin.SE3(T0.rotation, T0.translation + np.asarray(shift, dtype=float))


def _bad_joint_states():
    """(what, message) pairs: every joint with panda_joint4 NaN, and one without panda_joint3."""
    from sensor_msgs.msg import JointState

    P = e2e.panda()
    names = list(ARM) + ["panda_finger_joint1", "panda_finger_joint2"]
    values = list(P.default) + [0.0, 0.0]
    nan = list(values)
    nan[3] = math.nan
    keep = [k for k, n in enumerate(names) if n != "panda_joint3"]
    return [("non-finite", JointState(name=names, position=nan)),
            ("missing joints", JointState(name=[names[k] for k in keep], position=[values[k] for k in keep]))]


def test_nan_and_missing_joint_states_are_rejected_counted_and_the_arm_holds_still(module_rig):
    from sensor_msgs.msg import JointState

    rig = module_rig
    _start(rig)
    goal = _goal(rig, [0.0, 0.04, -0.03])
    t_goal = rig.send_pose(goal)
    rig.wait_reached(goal, WAIT, since=t_goal)
    q_rest = wait_commands_still(rig, t_goal, span=1e-6)
    pub = rig.node.create_publisher(JointState, "/joint_states", 10)
    rig.wait(lambda: pub.get_subscription_count() >= 2, WAIT, "the node matched to this process's /joint_states")
    t0 = rig.rec.commands[-1][0]
    counted = {}
    for what, msg in _bad_joint_states():
        before = rig.wait_status(lambda s: True, WAIT, "a status").joint_states_rejected
        for k in range(BAD_MESSAGES):
            pub.publish(msg)
            rig.wait_status(lambda s, n=before + k + 1: s.joint_states_rejected >= n, WAIT,
                            f"{what} message {k + 1} counted as rejected")
        counted[what] = rig.wait_status(lambda s: True, WAIT, "a status").joint_states_rejected - before
    rig.node.destroy_publisher(pub)
    log = rig.ik.log()
    assert "ignored a joint_states message: non-finite positions for ['panda_joint4']" in log
    assert "ignored a joint_states message: missing joints ['panda_joint3']" in log
    cmds = np.array([c for _, c in rig.commands_between(t0)])
    modes = {s.mode for s in rig.status_since(t0)}
    report("bad joint states", counted=counted, commands=len(cmds), modes=sorted(modes),
           drift_rad=float(np.abs(cmds - q_rest).max()))
    assert counted == {what: BAD_MESSAGES for what, _ in _bad_joint_states()}, counted
    assert np.abs(cmds - q_rest).max() <= 1e-6, "the arm moved while bad joint states arrived"
    assert modes == {"tracking"}, modes
    rig.check()


def _box_points(center, size, n: int = 400, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return center + rng.uniform(-0.5 * size, 0.5 * size, (n, 3))


def test_clear_pointcloud_removes_the_perceived_cloud_and_the_next_cloud_replaces_it(module_rig):
    from rclpy.qos import qos_profile_sensor_data
    from sensor_msgs.msg import PointCloud2

    rig = module_rig
    _start(rig)
    pub = publisher(rig, PointCloud2, "pointcloud", qos_profile_sensor_data)
    cloud = cloud_msg(_box_points(CLOUD_CENTER, CLOUD_SIZE).astype(np.float32), ROOT_FRAME)

    def wait_cloud(what: str):
        sent = [-math.inf]

        def fresh():
            if time.monotonic() - sent[0] > 0.25:  # best effort: again until it arrived (not a flood in flight)
                pub.publish(cloud)
                sent[0] = time.monotonic()
            s = rig.wait_status(lambda s: True, WAIT, "a status")
            return s.perception_state == "fresh" and s.perceived_points > 0 and s
        return rig.wait(fresh, WAIT, what)

    st = wait_cloud("the cloud held (fresh, points)")
    n_points = st.perceived_points
    # no cloud in flight when the service clears: the held one has aged past perception.max_age (on_stale: keep)
    rig.wait_status(lambda s: s.perception_state == "stale", WAIT, "the held cloud stale (nothing in flight)")
    res = trigger(rig, "clear_pointcloud")
    assert res.success, res.message
    t_clear = rig.rec.status[-1][0]
    cleared = rig.wait_status(lambda s: s.perception_state == "cleared (service)", WAIT, "the cloud cleared",
                              since=t_clear)
    assert cleared.perceived_points == 0 and math.isinf(cleared.closest_perceived_distance), cleared
    again = wait_cloud("the next cloud held")
    report("clear_pointcloud", points_before=n_points, points_after_clear=cleared.perceived_points,
           points_again=again.perceived_points, service_message=res.message)
    assert again.perceived_points == n_points
    rig.check()


def test_markers_show_the_goal_the_workspace_box_and_the_table(module_rig):
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from visualization_msgs.msg import Marker, MarkerArray

    rig = module_rig
    _start(rig)
    arrays: list = []
    sub = rig.node.create_subscription(MarkerArray, f"/{rig.ik.name}/markers", arrays.append, QoSProfile(
        depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL))

    def marker(ns: str):
        return next((m for a in reversed(arrays) for m in a.markers if m.ns == ns and m.action == Marker.ADD), None)

    def goal_at(T: pin.SE3):
        m = marker("goal/ee")
        return m is not None and np.allclose([m.points[0].x, m.points[0].y, m.points[0].z], T.translation, atol=1e-6)

    for shift in ([0.03, 0.0, 0.02], [-0.03, -0.03, 0.0]):
        goal = _goal(rig, shift)
        t_goal = rig.send_pose(goal)
        rig.wait(lambda: goal_at(goal), WAIT, f"the ee goal marker at the goal sent ({shift})")
        rig.wait_reached(goal, WAIT, since=t_goal)
    box = marker("barrier/workspace")
    p_min, p_max = np.array(WORKSPACE["p_min"]), np.array(WORKSPACE["p_max"])
    assert box is not None and box.type == Marker.CUBE, [m.ns for m in arrays[-1].markers]
    assert np.allclose([box.pose.position.x, box.pose.position.y, box.pose.position.z], 0.5 * (p_min + p_max))
    assert np.allclose([box.scale.x, box.scale.y, box.scale.z], p_max - p_min)
    table = marker("obstacle/table")
    assert table is not None, [m.ns for m in arrays[-1].markers]
    report("markers", namespaces=sorted({m.ns for a in arrays for m in a.markers}))
    rig.node.destroy_subscription(sub)
    rig.check()


def test_streaming_speed_override_zero_stops_a_twist_and_an_out_of_range_value_is_refused(module_rig):
    rig = module_rig
    _start(rig)
    pub = _twist_pub(rig)
    P = rig.panda
    assert rig.set_param("streaming.speed_override", 0.0).successful
    assert rig.get_param("streaming.speed_override") == 0.0
    T0 = P.fk(rig.measured())
    stream = TwistStream(rig, pub, [0.0, 0.4, 0.0], frame=ROOT_FRAME, stamped=False)  # unitless 0.4 along y
    t_start = rig.rec.commands[-1][0]
    rig.wait_commands(300, since=t_start, timeout=WAIT)
    still = max(float(np.linalg.norm(P.fk(c).translation - T0.translation)) for _, c in rig.commands_between(t_start))
    assert rig.set_param("streaming.speed_override", 1.0).successful
    rig.wait(lambda: np.linalg.norm(P.fk(rig.measured()).translation - T0.translation) >= 0.01, WAIT,
             "the TCP moving 1 cm with the override back at 1")
    t_stop = stream.stop()
    rig.wait_status(lambda s: s.motion_limit == "command_timeout", WAIT, "the stream timed out", since=t_stop)
    bad = rig.set_param("streaming.speed_override", 1.5)
    report("streaming.speed_override", tcp_moved_at_0_m=still, refusal=bad.reason)
    assert still <= 1e-5, f"the TCP moved {still:.3g} m with speed_override 0"
    assert not bad.successful and "streaming.speed_override" in bad.reason, bad.reason
    assert rig.get_param("streaming.speed_override") == 1.0
    rig.check()


def test_joint_jog_is_there_where_control_msgs_is_and_said_to_be_absent_where_not(module_rig):
    rig = module_rig
    _start(rig)
    topic = f"/{rig.ik.name}/posture/joint_jog"
    if importlib.util.find_spec("control_msgs") is None:
        assert "control_msgs is not installed: no ~/<task>/joint_jog" in rig.ik.log()
        assert not rig.subscribers_of(topic), rig.subscribers_of(topic)
        report("joint_jog", control_msgs="absent: logged at configure, no subscription")
    else:  # a jog of panda_joint1 at 0.3 x max_joint_speed
        from control_msgs.msg import JointJog

        pub = rig.node.create_publisher(JointJog, topic, 10)
        rig.wait(lambda: pub.get_subscription_count() > 0, WAIT, "the node's joint_jog subscription")
        q0 = rig.measured()
        msg = JointJog(joint_names=["panda_joint1"], velocities=[0.3])

        def moved():
            pub.publish(msg)
            return abs(rig.measured()[0] - q0[0]) >= 0.01

        rig.wait(moved, WAIT, "panda_joint1 jogged 0.01 rad")
        report("joint_jog", control_msgs="installed: jogged")
    rig.check()


def test_mock_camera_clouds_reach_the_node_and_its_box_shows_up(module_rig):
    rig = module_rig
    _start(rig)
    name = e2e.unique("e2e_camera")
    e2e.KNOWN_NODES.add(name)
    camera = e2e.Proc(name, "roboplan_ik_ros.sim.mock_camera",
                      {"topic": f"/{rig.ik.name}/pointcloud", "frame_id": ROOT_FRAME, "rate_hz": CAMERA_HZ,
                       "points": CAMERA_POINTS, "box_visible": False}, rig.log_dir)
    rig.procs.append(camera)
    try:
        t0 = rig.rec.status[-1][0]
        rig.wait(lambda: camera.alive and rig.wait_status(lambda s: True, WAIT, "a status").perception_state == "fresh"
                 and rig.last_status().perceived_age < 1.0 / CAMERA_HZ * 3, WAIT, "the camera's clouds in use")
        without = rig.last_status().perceived_points
        assert rig.set_param("box_visible", True, proc=camera).successful
        st = rig.wait_status(lambda s: s.perceived_points >= without + BOX_POINTS, WAIT,
                             f"the box in the perceived cloud ({BOX_POINTS}+ more points)", since=t0)
        report("mock_camera", points_without_box=without, points_with_box=st.perceived_points,
               closest_link=st.closest_perceived_link, closest_m=st.closest_perceived_distance)
        assert st.pointclouds_refused == 0, st.pointclouds_refused
    finally:
        camera.stop()
    rig.check()
