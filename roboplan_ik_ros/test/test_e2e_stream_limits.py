"""Streams pushed into a limit, end to end (``ik_controller`` and the mock Panda as a strict drive,
separate processes, 100 Hz streams from this process):

- a sensor_msgs/JointState jog of panda_joint7 toward its upper limit (the posture task above the
  pose task: the jog is the whole motion): the joint brakes to a stop at the limit, never past it,
  ~/status says ``joint_bound``, and the reverse jog moves it away again;
- a TwistStamped straight down into the table (the workspace box lowered below it): the obstacle
  barrier holds the arm d_min above the table, ~/status names the pair, and the reverse twist lifts it;
- a TwistStamped faster than the joints' velocity limit allows (``limits[].v_max`` 0.2 rad/s): the hand
  follows slower, ~/status says ``velocity_bound`` and names joints that the commands move at 0.2 rad/s,
  and /diagnostics counts the episode (``motion_limit.velocity_bound``).

Every command within the limits, v_max*dt and Franka's acceleration and jerk bounds (rig.check)."""

from __future__ import annotations

import time

import numpy as np

import e2e
from e2e import rig, write_config  # noqa: F401 - rig is a fixture

WAIT = 60.0
NODE = {"activation_timeout": 20.0}


def _posture_first(data) -> None:
    """The posture task above the hand's pose task: the jog is the whole motion (a full-rank posture
    task leaves the pose task no nullspace)."""
    for t in data["tasks"]:
        t["priority"] = 1 if t["type"] == "configuration" else 2


def _jog(rig, pub, velocity: float, until, what: str) -> None:
    from sensor_msgs.msg import JointState

    deadline = time.monotonic() + WAIT
    while not until():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        pub.publish(JointState(name=["panda_joint7"], velocity=[velocity]))
        time.sleep(0.01)


def test_jogging_joint7_into_its_limit_brakes_at_the_limit_and_says_joint_bound(rig):
    from sensor_msgs.msg import JointState

    rig.start_mock()
    rig.start_ik(write_config(rig.log_dir, node=NODE, edit=_posture_first))
    pub = rig.node.create_publisher(JointState, f"/{rig.ik.name}/posture/target_joint_velocities", 10)
    rig.activate()
    rig.wait(lambda: pub.get_subscription_count() > 0, WAIT, "the node's jog subscription")
    upper = rig.panda.upper[6]
    t0 = time.perf_counter()
    _jog(rig, pub, 1.0, lambda: (s := rig.last_status()) is not None and s.motion_limit == "joint_bound"
         and abs(rig.measured()[6] - upper) < 0.01, "joint 7 braked at its upper limit (joint_bound)")
    status = rig.last_status()
    at_limit = rig.measured()[6]
    _jog(rig, pub, -1.0, lambda: rig.measured()[6] < at_limit - 0.05, "joint 7 moving away again")
    rig.wait_status(lambda s: s.motion_limit == "command_timeout", WAIT, "the reverse jog timed out",
                    since=time.perf_counter())
    cmds = np.array([c for t, c in rig.rec.commands if t >= t0])
    peak = float(cmds[:, 6].max())
    print(f"\njog into panda_joint7's upper limit {upper:.4f} rad: highest command {peak:.6f} rad "
          f"({(upper - peak) * 1e3:.3f} mrad short); status {status.motion_limit}: {status.motion_limit_reason}")
    # (that it got to within 1 cm of the limit is what the jog waited for: not asserted again)
    rig.require(peak <= upper + 1e-9, f"joint 7 commanded {(peak - upper) * 1e3:.3g} mrad past its upper limit")
    rig.require("panda_joint7" in status.motion_limit_reason, f"joint_bound without the joint: {status.motion_limit_reason}")
    rig.check()  # limits, v_max*dt, guard_cuts 0, and the strict drive ok (acceleration and jerk)
    rig.node.destroy_publisher(pub)


def _box_below_the_table(data) -> None:
    """The workspace box reaching under the table: the table's barrier is what stops a downward twist."""
    for b in data["barriers"]:
        if b["name"] == "workspace":
            b["p_min"][2] = -0.5


def test_twisting_down_into_the_table_stops_d_min_above_it_and_reverses(rig):
    from geometry_msgs.msg import TwistStamped

    rig.start_mock()
    rig.start_ik(write_config(rig.log_dir, node=NODE, edit=_box_below_the_table))
    pub = rig.node.create_publisher(TwistStamped, f"/{rig.ik.name}/ee/target_twist", 10)
    rig.activate()
    rig.wait(lambda: pub.get_subscription_count() > 0, WAIT, "the node's twist subscription")
    d_min = next(b["d_min"] for b in e2e.shipped_config()["barriers"] if b["name"] == "obstacles")
    t0 = time.perf_counter()

    def twist(vz: float, until, what: str) -> None:
        msg = TwistStamped()
        msg.header.frame_id = "panda_link0"
        msg.twist.linear.z = vz
        deadline = time.monotonic() + WAIT
        while not until():
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            msg.header.stamp = rig.node.get_clock().now().to_msg()
            pub.publish(msg)
            time.sleep(0.01)

    # unitless -1 = max_linear_speed straight down, until the barrier holds the arm at the table
    twist(-1.0, lambda: (s := rig.last_status()) is not None and s.motion_limit == "barrier"
          and "obstacles" in s.motion_limit_reason and s.closest_obstacle_distance < d_min + 0.01,
          "the table's barrier holding the arm (~/status barrier 'obstacles')")
    held = rig.last_status()
    hold_until = time.perf_counter() + 0.5
    twist(-1.0, lambda: time.perf_counter() > hold_until, "0.5 s pushing down")
    z_held = rig.tcp().translation[2]
    twist(1.0, lambda: rig.tcp().translation[2] > z_held + 0.05, "the TCP moving up again")
    rig.wait_status(lambda s: s.motion_limit == "command_timeout", WAIT, "the stream timed out", since=time.perf_counter())
    closest = min(s.closest_obstacle_distance for t, _, s in rig.rec.status if t >= t0)
    print(f"\ntwist down into the table: closest obstacle distance {closest * 1e3:.2f} mm (d_min {d_min * 1e3:.0f} mm), "
          f"{held.closest_obstacle} <-> {held.closest_obstacle_link}; status {held.motion_limit}: {held.motion_limit_reason}")
    assert closest >= d_min - 1e-3
    rig.check()  # limits, v_max*dt, guard_cuts 0, and the strict drive ok (acceleration and jerk)
    rig.node.destroy_publisher(pub)



SLOW_V_MAX = 0.2  # [rad/s] every joint: a 0.25 m/s twist (unitless 1.0) of the hand needs more


def _slow_joints(data) -> None:
    for lim in data["limits"]:
        if lim["type"] == "velocity":
            lim["v_max"] = SLOW_V_MAX


def test_a_twist_faster_than_the_velocity_limit_says_velocity_bound_and_names_the_joints(rig):
    from diagnostic_msgs.msg import DiagnosticArray
    from geometry_msgs.msg import TwistStamped

    rig.start_mock()
    rig.start_ik(write_config(rig.log_dir, node={**NODE, "diagnostics_rate_hz": 5.0}, edit=_slow_joints))
    pub = rig.node.create_publisher(TwistStamped, f"/{rig.ik.name}/ee/target_twist", 10)
    diagnostics = []
    sub = rig.node.create_subscription(DiagnosticArray, "/diagnostics", diagnostics.append, 10)
    rig.activate()
    rig.wait(lambda: pub.get_subscription_count() > 0, WAIT, "the node's twist subscription")
    t0 = time.perf_counter()
    msg = TwistStamped()
    msg.header.frame_id = "panda_link0"
    msg.twist.linear.y = 1.0  # unitless: max_linear_speed (0.25 m/s)
    deadline = time.monotonic() + WAIT
    status = None
    while status is None or status.motion_limit != "velocity_bound":
        assert time.monotonic() < deadline, f"no velocity_bound status; last: {rig.last_status()}"
        msg.header.stamp = rig.node.get_clock().now().to_msg()
        pub.publish(msg)
        time.sleep(0.01)
        status = rig.last_status()
    t_status = time.perf_counter()
    rig.wait_status(lambda s: s.motion_limit == "command_timeout", WAIT, "the stream timed out", since=t_status)
    names = [j for j in e2e.ARM if j in status.motion_limit_reason]
    print(f"\ntwist 0.25 m/s with v_max {SLOW_V_MAX} rad/s: {status.motion_limit}: {status.motion_limit_reason}")
    assert names and "velocity limit" in status.motion_limit_reason
    # the named joints move at v_max in the commands around that status (per command period, the node's 500 Hz)
    cmds = np.array([c for t, c in rig.rec.commands if t0 <= t <= t_status])
    speed = np.abs(np.diff(cmds, axis=0)).max(axis=0) * rig.rate_hz
    for j in names:
        k = e2e.ARM.index(j)
        assert abs(speed[k] - SLOW_V_MAX) <= 1e-6 * SLOW_V_MAX, (j, speed[k])
    assert (speed <= SLOW_V_MAX * (1 + 1e-6)).all(), speed  # and no joint faster
    counted = rig.wait(lambda: next((kv.value for a in list(diagnostics) for st in a.status if rig.ik.name in st.name
                                     for kv in st.values if kv.key == "motion_limit.velocity_bound"), None),
                       WAIT, "/diagnostics motion_limit.velocity_bound")
    assert int(counted) >= 1
    rig.check()  # limits, v_max*dt, guard_cuts 0, and the strict drive ok (acceleration and jerk)
    rig.node.destroy_subscription(sub)
    rig.node.destroy_publisher(pub)
