"""Perceived obstacles end to end: ``ik_controller`` (panda.yaml plus a ``pairs: perceived`` barrier) and the
mock Panda as processes over DDS; this test publishes sensor_msgs/PointCloud2 clouds on ``~/pointcloud``.

- a cloud of a 8 cm box on the hand's straight path to a pose goal: the hand stops in front of it; every
  measured configuration keeps d_min from the box (the test's own coal distance of the URDF's hulls to the
  box the points were drawn on), every command within v_max * dt and the strict drive's bounds;
- a malformed cloud (no z field) is refused with the reason and counted; the previous cloud stays (the arm
  still stops for the box).

No assertion is about a rate, a duration or a latency; the timeouts are generous.
"""

from __future__ import annotations

import time

import numpy as np
import pinocchio as pin
import coal

from e2e import ROOT_FRAME, panda, report, rig, write_config  # noqa: F401 - fixture
from test_e2e_obstacle_features import geometry
from test_perceived_cloud import box_surface

WAIT = 60.0
D_MIN = 0.03


def _perceived_barrier(data) -> None:
    data["barriers"] = [b for b in data["barriers"] if b["name"] != "perceived"]  # the shipped one: d_min here
    data["barriers"].append({"name": "perceived", "type": "collision", "pairs": "perceived", "n_collision_pairs": 4,
                             "d_min": D_MIN, "gain": 5.0, "safe_displacement_gain": 1.0e-4})
    data["perception"] = {"crop_min": [-10.0, -10.0, 0.005], "max_age": 30.0}


def cloud_msg(points: np.ndarray, frame: str = ROOT_FRAME, drop_z: bool = False):
    from sensor_msgs.msg import PointCloud2, PointField

    fields = [PointField(name=n, offset=4 * k, datatype=PointField.FLOAT32, count=1)
              for k, n in enumerate("xyz") if not (drop_z and n == "z")]
    buf = np.zeros((len(points), 4), np.float32)
    buf[:, :3] = points
    msg = PointCloud2(height=1, width=len(points), fields=fields, is_bigendian=False, point_step=16,
                      row_step=16 * len(points), is_dense=True)
    msg.header.frame_id = frame
    msg.data = buf.tobytes()
    return msg

def test_the_arm_keeps_d_min_from_a_perceived_box_and_a_malformed_cloud_is_refused(rig):
    from sensor_msgs.msg import PointCloud2

    rig.start_mock()
    rig.start_ik(write_config(rig.log_dir, node={"activation_timeout": 20.0}, edit=_perceived_barrier))
    rig.activate()
    rig.wait_mode("waiting_for_goal", WAIT, since=rig.events["activate_request"])
    pub = rig.node.create_publisher(PointCloud2, f"/{rig.ik.name}/pointcloud", 10)
    rig.wait(lambda: pub.get_subscription_count() > 0, WAIT, "the node's ~/pointcloud subscription")
    shown = []  # ~/perceived_cloud: what the node holds, for RViz (transient local, as ~/markers)
    from rclpy.qos import DurabilityPolicy, QoSProfile
    rig.node.create_subscription(PointCloud2, f"/{rig.ik.name}/perceived_cloud", shown.append,
                                 QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL))
    G, P = geometry(), rig.panda
    q0 = rig.measured()
    T0 = P.fk(q0)
    size = np.array([0.08, 0.08, 0.08])
    center = T0.translation + [0.0, 0.25, 0.0]
    block, T_block = coal.Box(*size), pin.SE3(np.eye(3), center)
    assert G.clearance(q0, block, T_block) > 0.1
    points = box_surface(center, size, 3000, np.random.default_rng(0))
    msg, sent = cloud_msg(points), [-1.0]

    def cloud_in() -> bool:  # ~/pointcloud is best effort (sensor QoS), as a camera stream: resend at 5 Hz until in
        st = rig.last_status()
        if st is not None and st.perceived_points > 0:
            return True
        if time.monotonic() - sent[0] > 0.2:
            pub.publish(msg)
            sent[0] = time.monotonic()
        return False

    # the node keeps only the newest cloud (a sensor stream): wait until this one is in before the next
    rig.wait(cloud_in, WAIT, "the cloud in the scene (~/status.perceived_points)")
    points_in = rig.last_status().perceived_points
    rig.wait(lambda: shown and shown[-1].width == points_in, WAIT, "~/perceived_cloud with the points the node holds")
    held = np.frombuffer(bytes(shown[-1].data), dtype=np.float32).reshape(-1, 3)
    assert shown[-1].header.frame_id == "panda_link0" and np.all(np.abs(held - center).max(axis=1) <= 0.05 + 0.02)
    pub.publish(cloud_msg(points[:10], drop_z=True))
    rig.wait(lambda: "cloud refused" in rig.ik.log(), WAIT, "the malformed cloud refused (log)")
    log = rig.ik.log()
    assert "fields: no 'z' field" in log
    refused_at = rig.node.get_clock().now().nanoseconds * 1e-9
    rig.wait(lambda: (st := rig.last_status()) is not None and st.header.stamp.sec + 1e-9 * st.header.stamp.nanosec
             > refused_at, WAIT, "a ~/status after the refusal")
    assert rig.last_status().perceived_points == points_in, "the refused cloud replaced the previous one"
    goal = pin.SE3(T0.rotation, T0.translation + [0.0, 0.4, 0.0])  # straight through the box
    rig.send_pose(goal)
    last = [None]

    def settled() -> bool:
        q = rig.measured()
        moved = last[0] is None or np.abs(q - last[0]).max() > 1e-5
        last[0] = q
        return not moved and P.fk(q).translation[1] > T0.translation[1] + 0.05

    rig.wait(settled, WAIT, "the arm stopped in front of the box")
    clearances = [G.clearance(q, block, T_block) for _, q, valid in rig.rec.joint_states if valid]
    closest = min(clearances)
    tcp_y = P.fk(rig.measured()).translation[1] - T0.translation[1]
    report("perceived box", closest_mm=closest * 1e3, d_min_mm=D_MIN * 1e3, tcp_progress_m=tcp_y)
    assert closest >= D_MIN - 1e-3, f"{closest * 1e3:.2f} mm from the perceived box (d_min {D_MIN * 1e3:.0f} mm)"
    assert tcp_y < 0.25, "the hand went through the box"
    rig.check()
