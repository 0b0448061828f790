"""Perceived obstacles end to end: ``ik_controller`` (panda.yaml: its ``perceived`` barrier and ``perception:``
section) and the mock Panda (a strict drive) as processes over DDS; this test publishes sensor_msgs/PointCloud2
clouds on ``~/pointcloud``.

- a cloud of a 8 cm box on the hand's straight path to a pose goal: the arm comes to rest against it (in
  front of it, or past it: the tasks are soft, and the hand may slide around so small a box, as it did once
  the cloud's rows held the whole hand face); every measured configuration keeps d_min from the box (the
  test's own coal distance of the URDF's hulls to the box the points were drawn on), every command within
  v_max * dt and the strict drive's bounds;
- a malformed cloud (no z field) is refused with the reason and counted; the previous cloud stays (the arm
  still stops for the box);
- head on (issue 30): a new noisy cloud (2 mm) of a 0.15 m cube 14 cm ahead of the TCP at 15 Hz and a goal
  32 cm ahead through it: the hand's flat face comes to rest on the wall of cells with 0 holds, 0 QP failures
  and 0 barrier refusals (the node's /diagnostics and ~/status), at rest at least d_min - barrier_tolerance
  from the cells (the node's ``closest_perceived_distance``) and within a few mm of d_min (the barrier
  engaged), never nearer the true cube than d_min less half a cell and 1.5 noise sigmas.

"At rest" is the last REST_SAMPLES /joint_states still to REST_SPREAD with the node's distance to the cells
within ENGAGED of d_min: an arm that paused short of the barrier is not at rest there.
No assertion is about a rate, a duration or a latency; the timeouts are generous.
"""

from __future__ import annotations

import time

import numpy as np
import pinocchio as pin
import coal

import e2e
from e2e import ROOT_FRAME, panda, report, rig, write_config  # noqa: F401 - fixture
from roboplan_ik_ros.core.config import PerceptionConfig
from test_e2e_obstacle_features import geometry
from test_e2e_obstacle_push import COUNTERS, _diagnostics_after
from test_perceived_cloud import box_surface

WAIT = 60.0
SHIPPED = e2e.shipped_config()
D_MIN = next(b["d_min"] for b in SHIPPED["barriers"] if b["name"] == "perceived")
BARRIER_TOLERANCE = SHIPPED["solver"]["barrier_tolerance"]  # [m]
RESOLUTION = SHIPPED["perception"].get("octree_resolution", PerceptionConfig().octree_resolution)  # [m] a cell
NODE = {"activation_timeout": 20.0, "diagnostics_rate_hz": 5.0}
REST_SAMPLES = 50  # /joint_states (half a second of the mock's 100 Hz) ...
REST_SPREAD = 1e-5  # [rad] ... within this per joint: at rest
ENGAGED = 0.003  # [m] at rest the node's distance to the cells is within this of d_min: the barrier stopped the arm
# head on (issue 30)
CUBE_SIZE, CUBE_AHEAD = 0.15, 0.215  # [m]; its centre ahead of the TCP at the start along +x (near face 14 cm)
POINTS, NOISE = 3000, 0.002  # per cloud; [m] sigma, every axis
CLOUD_PERIOD = 1.0 / 15.0  # [s]
GOAL_AHEAD = 0.32  # [m] along +x from the TCP: through the cube
PUSH_COMMANDS = 1500  # commands after the goal with clouds coming (3 s of the node's 500 Hz ticks: a count)


def _one_cloud_kept(data) -> None:
    data["perception"]["max_age"] = 30.0  # one cloud for the whole scenario: never stale


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


def at_rest_on_the_cells(rig) -> bool:
    """The last REST_SAMPLES /joint_states within REST_SPREAD of each other, and the node's distance to the
    perceived cells (``~/status``, at its last command) within ENGAGED of d_min."""
    recent = [q for _, q, valid in rig.rec.joint_states[-REST_SAMPLES:] if valid]
    st = rig.last_status()
    return (len(recent) == REST_SAMPLES and float(np.ptp(np.array(recent), axis=0).max()) <= REST_SPREAD
            and st is not None and st.closest_perceived_distance <= D_MIN + ENGAGED)


class CloudStream:
    """A new noisy cloud of the cube's surface at most every CLOUD_PERIOD, published from a wait predicate."""

    def __init__(self, pub, center, rng) -> None:
        self.pub, self.center, self.rng = pub, center, rng
        self.sent, self.count = -float("inf"), 0

    def __call__(self) -> None:
        if time.monotonic() - self.sent >= CLOUD_PERIOD:
            points = box_surface(self.center, [CUBE_SIZE] * 3, POINTS, self.rng)
            self.pub.publish(cloud_msg(points + self.rng.normal(0.0, NOISE, points.shape)))
            self.sent = time.monotonic()
            self.count += 1

def test_the_arm_keeps_d_min_from_a_perceived_box_and_a_malformed_cloud_is_refused(rig):
    from sensor_msgs.msg import PointCloud2

    rig.start_mock()
    rig.start_ik(write_config(rig.log_dir, node={"activation_timeout": 20.0}, edit=_one_cloud_kept))
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
    rig.wait(lambda: at_rest_on_the_cells(rig), WAIT, "the arm at rest with the barrier engaged")
    clearances = [G.clearance(q, block, T_block) for _, q, valid in rig.rec.joint_states if valid]
    closest = min(clearances)
    tcp_y = P.fk(rig.measured()).translation[1] - T0.translation[1]
    report("perceived box", closest_mm=closest * 1e3, d_min_mm=D_MIN * 1e3, tcp_progress_m=tcp_y,
           rest_cells_mm=rig.last_status().closest_perceived_distance * 1e3)
    assert closest >= D_MIN - 1e-3, f"{closest * 1e3:.2f} mm from the perceived box (d_min {D_MIN * 1e3:.0f} mm)"
    rig.check()


def test_a_flat_hand_face_comes_to_rest_on_a_noisy_perceived_cube_head_on(rig):
    """Issue 30: before, 178-251 holds, 28-82 more after the clouds stopped, ending ``recovering`` 0.4 mm inside
    d_min."""
    from diagnostic_msgs.msg import DiagnosticArray
    from sensor_msgs.msg import PointCloud2

    diagnostics: list = []
    rig.node.create_subscription(DiagnosticArray, "/diagnostics", diagnostics.append, 100)
    rig.start_mock()
    rig.start_ik(write_config(rig.log_dir, node=NODE))
    rig.activate()
    rig.wait_mode("waiting_for_goal", WAIT, since=rig.events["activate_request"])
    pub = rig.node.create_publisher(PointCloud2, f"/{rig.ik.name}/pointcloud", 10)
    rig.wait(lambda: pub.get_subscription_count() > 0, WAIT, "the node's ~/pointcloud subscription")
    G, P = geometry(), rig.panda
    q0 = rig.measured()
    T0 = P.fk(q0)
    center = T0.translation + [CUBE_AHEAD, 0.0, 0.0]
    cube, T_cube = coal.Box(*[CUBE_SIZE] * 3), pin.SE3(np.eye(3), center)
    assert G.clearance(q0, cube, T_cube) > D_MIN + 0.05
    stream = CloudStream(pub, center, np.random.default_rng(0))

    def streaming(predicate):
        def wait_for():
            stream()
            return predicate()
        return wait_for

    rig.wait(streaming(lambda: (st := rig.last_status()) is not None and st.perceived_points > 0), WAIT,
             "the cloud in the scene (~/status.perceived_points)")
    before = _diagnostics_after(rig, diagnostics, time.time())
    t_goal = time.perf_counter()
    rig.send_pose(pin.SE3(T0.rotation, T0.translation + [GOAL_AHEAD, 0.0, 0.0]))
    rig.wait(streaming(lambda: rig.count_commands(t_goal) >= PUSH_COMMANDS), WAIT,
             f"{PUSH_COMMANDS} commands after the goal, clouds coming")
    rig.wait(streaming(lambda: at_rest_on_the_cells(rig)), WAIT,
             "the arm at rest on the cells, clouds coming")
    clouds = stream.count
    t_last_cloud = time.perf_counter()  # the last cloud stays; nothing changes
    rig.wait_commands(PUSH_COMMANDS // 3, since=t_last_cloud, timeout=WAIT, what="commands after the last cloud")
    rig.wait(lambda: at_rest_on_the_cells(rig), WAIT, "the arm at rest on the last cloud")
    after = _diagnostics_after(rig, diagnostics, time.time())
    figures = rig.check()

    counters = {k: int(after[k]) - int(before[k]) for k in COUNTERS}
    statuses = rig.status_since(t_goal)
    modes = sorted({s.mode for s in statuses})
    last = statuses[-1]
    true_cube = min(G.clearance(q, cube, T_cube) for t, q, valid in rig.rec.joint_states if valid and t > t_goal)
    out = dict(clouds=clouds, **counters, status_holds=last.holds - statuses[0].holds, modes="/".join(modes),
               last_mode=last.mode, rest_cells_mm=last.closest_perceived_distance * 1e3,
               closest_true_cube_mm=true_cube * 1e3, d_min_mm=D_MIN * 1e3,
               tcp_progress_mm=(P.fk(rig.measured()).translation[0] - T0.translation[0]) * 1e3,
               commands=figures["commands"], strict_drives_ok=figures.get("strict_drives_ok"))
    report("perceived cube head on", **out)
    where = str(out)
    assert clouds >= 10, where
    assert all(v == 0 for v in counters.values()), where
    assert out["status_holds"] == 0 and "holding" not in modes and last.mode == "tracking", where
    assert last.closest_perceived_distance >= D_MIN - BARRIER_TOLERANCE, where
    assert last.closest_perceived_distance <= D_MIN + ENGAGED, where  # the barrier stopped the arm
    assert true_cube >= D_MIN - RESOLUTION / 2 - 1.5 * NOISE, where
