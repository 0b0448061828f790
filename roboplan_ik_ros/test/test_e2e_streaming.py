"""Twist streams end to end: ``ik_controller`` (the shipped panda.yaml, its ``node.streaming``) drives
the mock Panda as a strict drive (separate processes, DDS); a 100 Hz TwistStamped stream from this
process on ``~/ee/target_twist``, ``~/pause`` as a user calls it.

- the tool moves at the commanded velocity within 2 % in free space: FK on /joint_states, each
  sample matched to the command it equals (the mock follows commands exactly), so the time base is
  the command periods between them (a late tick slows the arm in wall time, not the path); the
  wall-clock speed from receipt times is printed only;
- the stream stops: the arm brakes to rest within Franka's bounds (the strict drive and the
  recorder's ratios) and ~/status says ``command_timeout`` with the command's age;
- twisting into the workspace box: the face is not crossed, ~/status says barrier, naming the workspace, and the arm
  moves away when the twist reverses;
- pause during a stream: braked stop, inputs refused while paused, resume: no jump (every step
  within v_max dt, the strict drive ok), nothing moves until a new input.

No assertion is about a duration; timeouts are generous.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import e2e
from e2e import Rig, panda, write_config
from test_e2e_motion import DT, print_table, ratios, record, segment, wait_moving_fast, wait_settled

#: command_timeout 1 s (shipped 0.1 s): this process's 100 Hz publisher thread, starved on a loaded machine,
#: must not end a stream (nor send twists that arrive too old) in the middle of a measurement: a generous
#: timeout for the next twist to arrive, instead of measuring only the windows a fast machine gives
NODE = {"activation_timeout": 20.0, "streaming": {"command_timeout": 1.0}}
WAIT = 60.0
STREAM_HZ = 100.0
MAX_LINEAR_SPEED = 0.25  # [m/s] panda.yaml node.streaming.max_linear_speed (unitless 1.0)


class TwistStream:
    """Publishes one TwistStamped at STREAM_HZ from a thread of this process until stopped; stamps
    with this process's ROS clock (the node's clock: the same machine)."""

    def __init__(self, rig: Rig, linear, angular=(0.0, 0.0, 0.0), frame: str = e2e.ROOT_FRAME) -> None:
        from geometry_msgs.msg import TwistStamped

        self.rig, self.msg = rig, TwistStamped()
        self.msg.header.frame_id = frame
        self.msg.twist.linear.x, self.msg.twist.linear.y, self.msg.twist.linear.z = (float(x) for x in linear)
        self.msg.twist.angular.x, self.msg.twist.angular.y, self.msg.twist.angular.z = (float(x) for x in angular)
        self._stop = threading.Event()
        self.sent = 0
        self.t_start = time.perf_counter()
        self.t_last = self.t_start
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        period, next_t = 1.0 / STREAM_HZ, time.perf_counter()
        while not self._stop.is_set():
            self.msg.header.stamp = self.rig.node.get_clock().now().to_msg()
            self.rig.twist_pub.publish(self.msg)
            self.sent += 1
            self.t_last = time.perf_counter()
            next_t += period
            self._stop.wait(max(0.0, next_t - time.perf_counter()))

    def stop(self) -> float:
        """Stop publishing; the time of the last message."""
        self._stop.set()
        self._thread.join()
        return self.t_last


@pytest.fixture(scope="module")
def rig(ros, tmp_path_factory):
    from geometry_msgs.msg import TwistStamped
    from std_srvs.srv import SetBool

    r = Rig(tmp_path_factory.mktemp("e2e_streaming"))
    try:
        r.start_mock()
        r.start_ik(write_config(r.log_dir, node=NODE))
        r.twist_pub = r.node.create_publisher(TwistStamped, f"/{r.ik.name}/ee/target_twist", 10)
        r.pause_client = r.node.create_client(SetBool, f"/{r.ik.name}/pause")
        r.activate()
        r.wait(lambda: r.twist_pub.get_subscription_count() > 0, WAIT, "the node's twist subscription")
        r.wait_mode("waiting_for_goal", WAIT, since=r.events["activate_request"])
        yield r
        r.check()
    finally:
        r.close()
        print_table()


def pause(rig: Rig, on: bool):
    from std_srvs.srv import SetBool

    return rig.call(rig.pause_client, SetBool.Request(data=on), what="~/pause")


def moving_commands(rig: Rig, since: float) -> int:
    """Commands received after ``since`` that differ from the command before them (ticks that moved)."""
    cmds = [c for t, c in list(rig.rec.commands) if t > since]
    return sum(1 for a, b in zip(cmds, cmds[1:]) if not np.array_equal(a, b))


def command_index(cmds: np.ndarray, q: np.ndarray) -> int:
    """The index of the (last) command the joint state ``q`` equals (-1: none)."""
    hits = np.flatnonzero(np.all(cmds == q, axis=1))
    return int(hits[-1]) if hits.size else -1


def test_a_100hz_twist_stream_moves_the_tool_at_the_commanded_velocity_then_times_out(rig):
    unitless = np.array([0.2, 0.4, -0.2])
    v_cmd = unitless * MAX_LINEAR_SPEED  # [m/s] world (panda_link0) frame
    stream = TwistStream(rig, unitless)
    # counted in control ticks that follow the stream (commands that move), not seconds nor commands
    # received (held commands published before the first twist, or a burst after a stall, count for
    # nothing): 250 for the ramp-up, then a window of 150 more
    rig.wait(lambda: moving_commands(rig, stream.t_start) >= 250, WAIT, "250 moving commands (the ramp-up is over)")
    # the window: 150 more moving commands; the stream reached the node throughout it (no command_timeout,
    # no twist refused, up to the second status after it)
    rejected = rig.last_status().goals_rejected
    t_a = rig.rec.joint_states[-1][0]
    rig.wait(lambda: moving_commands(rig, t_a) >= 150, WAIT, "150 more moving commands")
    t_b = rig.rec.joint_states[-1][0]
    rig.wait(lambda: len(rig.status_since(t_b)) >= 2, WAIT, "two statuses after the window")
    window = [s for t, _, s in list(rig.rec.status) if t > t_a]
    gaps = sorted({s.motion_limit for s in window if s.motion_limit == "command_timeout"})
    refused = window[-1].goals_rejected - rejected
    rig.require(not gaps and refused == 0, f"the twist stream had a gap in the window (command_timeout "
                                           f"{NODE['streaming']['command_timeout']} s): {gaps}, {refused} twists refused")
    t_stop = stream.stop()
    # FK on /joint_states: the first and last samples of the window, each matched to its command
    _, cmds = np.array([t for t, _ in rig.rec.commands]), np.array([c for _, c in rig.rec.commands])
    samples = [(t, q) for t, q, valid in rig.rec.joint_states if valid and t_a <= t <= t_b]
    (ta, qa), (tb, qb) = samples[0], samples[-1]
    ka, kb = command_index(cmds, qa), command_index(cmds, qb)
    assert ka >= 0 and kb > ka, "joint states that equal no command: the mock did not follow the stream"
    P = panda()
    d = P.fk(qb).translation - P.fk(qa).translation
    v_path = d / ((kb - ka) * DT)
    v_wall = d / (tb - ta)
    err = float(np.linalg.norm(v_path - v_cmd) / np.linalg.norm(v_cmd))
    rot = float(np.linalg.norm(e2e.pin.log3(P.fk(qa).rotation.T @ P.fk(qb).rotation)))
    print(f"\ntwist tracking: commanded {np.round(v_cmd, 4).tolist()} m/s; measured (FK on joint_states, per control "
          f"period) {np.round(v_path, 4).tolist()} m/s: error {err * 100:.3f} %; wall clock "
          f"{np.round(v_wall, 4).tolist()} m/s ({kb - ka} commands in {tb - ta:.3f} s); rotation {rot * 1e3:.3f} mrad")
    assert err <= 0.02, err
    status = rig.wait_status(lambda s: s.motion_limit == "command_timeout", WAIT,
                             "~/status motion_limit command_timeout", since=t_stop)
    assert "command timeout" in status.motion_limit_reason and "s old" in status.motion_limit_reason
    t_rest = wait_settled(rig)
    times, cmds, first, last = segment(rig, t_stop, t_rest)
    _, _, first_all, _ = segment(rig, stream.t_start)
    acc, jerk = ratios(cmds, first_all, last)
    record("twist stream 100 Hz, then timeout", acc, jerk, f"tracking error {err * 100:.2f} %")
    assert rig.last_status().motion_limit == "command_timeout" and rig.last_status().stream_timeouts >= 1
    print(f"status after the stop: {rig.last_status().motion_limit}: {rig.last_status().motion_limit_reason}")


def test_twisting_into_the_workspace_box_stops_at_the_face_and_reverses(rig):
    p_min = e2e.WORKSPACE[0]
    t0 = time.perf_counter()
    stream = TwistStream(rig, [-0.4, 0.0, 0.0])  # 0.1 m/s toward the box's lower x face
    rig.wait(lambda: rig.tcp().translation[0] < p_min[0] + 0.01, WAIT, "the TCP at the box face")
    # pushing into the face: the workspace barrier's row binds the step
    status = rig.wait_status(lambda s: s.motion_limit == "barrier" and "workspace" in s.motion_limit_reason, WAIT,
                             "~/status: the workspace barrier holds the twist")
    t_held = time.perf_counter()
    rig.wait_commands(250, since=t_held, timeout=WAIT, what="250 commands pushing into the face")
    stream.stop()
    x_at_face = rig.tcp().translation[0]
    back = TwistStream(rig, [0.4, 0.0, 0.0])
    rig.wait(lambda: rig.tcp().translation[0] > x_at_face + 0.02, WAIT, "the TCP moving away again")
    t_stop = back.stop()
    rig.wait_status(lambda s: s.motion_limit == "command_timeout", WAIT, "the reverse stream timed out", since=t_stop)
    wait_settled(rig)
    times, cmds, first, last = segment(rig, t0)
    deepest = max(float(p_min[0] - panda().fk(c).translation[0]) for c in cmds[first:last])
    acc, jerk = ratios(cmds, first, last)
    record("twist into the box face, then back", acc, jerk,
           f"face crossed by {max(deepest, 0.0) * 1e3:.3f} mm; status {status.motion_limit}")
    print(f"\ninto the box: {status.motion_limit}: {status.motion_limit_reason}")
    assert deepest <= 1e-4, deepest


def test_pause_during_a_stream_then_resume_has_no_jump(rig):
    stream = TwistStream(rig, [0.0, -0.4, 0.0])
    wait_moving_fast(rig, 0.05)  # the stream is followed: the arm moves when the pause comes
    t_pause = time.perf_counter()
    res = pause(rig, True)
    assert res.success, res.message
    rig.wait_status(lambda s: s.mode == "paused" and s.motion_limit == "paused", WAIT, "~/status paused",
                    since=t_pause)
    t_rest = wait_settled(rig)  # the stream goes on: refused while paused
    rejected = rig.last_status().goals_rejected
    rig.wait_status(lambda s: s.goals_rejected > rejected, WAIT, "twists refused while paused")
    stream.stop()
    q_paused = rig.measured()
    t_resume = time.perf_counter()
    res = pause(rig, False)
    assert res.success, res.message
    rig.wait_mode("waiting_for_goal", WAIT, since=time.perf_counter())
    wait_settled(rig)
    assert np.abs(rig.measured() - q_paused).max() < 1e-9, "the arm moved after resume without an input"
    y_resumed = rig.tcp().translation[1]
    after = TwistStream(rig, [0.0, 0.4, 0.0])
    # resumed, inputs are followed again: the TCP moves 1 cm along the new twist (+y)
    rig.wait(lambda: rig.tcp().translation[1] > y_resumed + 0.01, WAIT, "the TCP following the new stream")
    after.stop()
    wait_settled(rig)
    times, cmds, first, last = segment(rig, t_pause)
    acc, jerk = ratios(cmds, first, last)
    record("pause during a twist stream, resume, stream", acc, jerk, "")
    # while paused (from the paused status to the resume) the commands came to rest and stayed there
    paused_cmds = np.array([c for t, c in rig.rec.commands if t_rest < t <= t_resume])
    assert len(paused_cmds) and np.ptp(paused_cmds, axis=0).max() <= 1e-5, "the arm moved while paused"


class JogStream:
    """Publishes one posture jog (panda_joint1 at ``velocity``, unitless of max_joint_speed) at
    STREAM_HZ from a thread of this process until stopped."""

    def __init__(self, pub, velocity: float) -> None:
        from sensor_msgs.msg import JointState

        self.pub, self.msg = pub, JointState(name=["panda_joint1"], velocity=[float(velocity)])
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        period, next_t = 1.0 / STREAM_HZ, time.perf_counter()
        while not self._stop.is_set():
            self.pub.publish(self.msg)
            next_t += period
            self._stop.wait(max(0.0, next_t - time.perf_counter()))

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return time.perf_counter()


def test_switching_twist_to_pose_to_jog_has_no_jump(rig):
    """A twist stream, a pose goal while the twist target still moves, then a posture jog while the
    pose goal is approached: one command stream within the bounds (the strict drive checks every
    command). Then, at rest at the goal, a jog of its own: it acts in the pose task's nullspace, so
    the elbow moves and the tool stays (FK on every command of it)."""
    from sensor_msgs.msg import JointState

    jog_pub = rig.node.create_publisher(JointState, f"/{rig.ik.name}/posture/target_joint_velocities", 10)
    rig.wait(lambda: jog_pub.get_subscription_count() > 0, WAIT, "the node's jog subscription")
    start = rig.tcp()
    t0 = time.perf_counter()
    stream = TwistStream(rig, [0.0, 0.4, 0.0])
    rig.wait(lambda: rig.tcp().translation[1] > start.translation[1] + 0.01, WAIT, "the twist moving the TCP 1 cm")
    goal = e2e.pin.SE3(start.rotation, start.translation + np.array([0.0, 0.0, 0.05]))
    stream.stop()
    t_pose = rig.send_pose(goal)  # the twist target is still moving (within command_timeout): taken over
    rig.wait_commands(150, since=t_pose, timeout=WAIT, what="150 commands toward the pose goal")
    rig.require(max(e2e.pose_errors(goal, rig.tcp())) > 2e-3, "the pose goal was reached before the jog: no switch")
    jog = JogStream(jog_pub, 0.3)  # while the pose goal is approached
    rig.wait_commands(300, timeout=WAIT, what="300 commands of jogging")
    t_jog_end = jog.stop()
    rig.wait_status(lambda s: s.motion_limit == "command_timeout" and "posture" in s.motion_limit_reason, WAIT,
                    "the jog timed out", since=t_jog_end)
    rig.wait_reached(goal, WAIT, what="the pose goal (held during the jog)")
    wait_settled(rig)
    times, cmds, first, last = segment(rig, t0)
    acc, jerk = ratios(cmds, first, last)
    record("twist -> pose -> posture jog", acc, jerk, "")

    # the jog's own effect, at rest at the goal: joint 1 moves, the tool stays
    q_before = rig.measured()
    t_rest_jog = time.perf_counter()
    jog = JogStream(jog_pub, 0.3)
    rig.wait(lambda: abs(rig.measured()[0] - q_before[0]) > 0.02, WAIT, "the jog turning panda_joint1 by 0.02 rad")
    t_stop = jog.stop()
    rig.wait_status(lambda s: s.motion_limit == "command_timeout" and "posture" in s.motion_limit_reason, WAIT,
                    "the jog timed out", since=t_stop)
    wait_settled(rig)
    times, cmds, first, last = segment(rig, t_rest_jog)
    worst = max(max(e2e.pose_errors(goal, panda().fk(c))) for c in cmds[first:last])
    moved = float(np.abs(rig.measured() - q_before).max())
    acc, jerk = ratios(cmds, first, last)
    record("posture jog at the pose goal", acc, jerk,
           f"joints moved up to {moved:.3f} rad; tool off the goal by at most {worst * 1e3:.3f} mm/mrad")
    assert worst <= 1e-3, f"the tool left the goal by {worst * 1e3:.3f} mm/mrad during the jog"
    rig.node.destroy_publisher(jog_pub)
