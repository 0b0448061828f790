"""Command message building (no DDS)."""

import numpy as np
import pytest
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory

from models import scene
from roboplan_ik_ros.node.diagnostics import TickStats
from roboplan_ik_ros.node.node_config import OutputConfig
from roboplan_ik_ros.node.command_encoders import CommandEncoder

ARM = [f"panda_joint{i}" for i in range(1, 8)]
DT = 0.002


@pytest.fixture(scope="module")
def panda():
    return scene("panda")


@pytest.fixture
def qs(panda):
    q = panda.named_configuration("default")
    q_next = q.copy()
    q_next[:7] += np.linspace(0.001, 0.007, 7)
    return q, q_next


def test_forward_position(panda, qs):
    q, q_next = qs
    enc = CommandEncoder(OutputConfig(), panda, ARM, DT)
    msg = enc.encode(q_next, q)
    assert isinstance(msg, Float64MultiArray)
    assert np.allclose(msg.data, q_next[:7]) and msg.layout.dim[0].size == 7


def test_forward_velocity_and_joint_order(panda, qs):
    q, q_next = qs
    order = list(reversed(ARM))
    enc = CommandEncoder(OutputConfig(interface="velocity", topic="/v"), panda, order, DT)
    msg = enc.encode(q_next, q)
    assert np.allclose(msg.data, ((q_next - q)[:7] / DT)[::-1])
    assert np.allclose(enc.encode_hold(q_next).data, 0.0)


def test_message_is_reused(panda, qs):
    q, q_next = qs
    enc = CommandEncoder(OutputConfig(), panda, ARM, DT)
    assert enc.encode(q_next, q) is enc.encode(q, q)


def test_joint_trajectory(panda, qs):
    q, q_next = qs
    enc = CommandEncoder(OutputConfig(type="joint_trajectory", topic="/jt"), panda, ARM, DT)
    msg = enc.encode(q_next, q)
    assert isinstance(msg, JointTrajectory) and msg.joint_names == ARM and len(msg.points) == 1
    p = msg.points[0]
    assert np.allclose(p.positions, q_next[:7]) and np.allclose(p.velocities, (q_next - q)[:7] / DT)
    assert p.time_from_start.sec == 0 and p.time_from_start.nanosec == 2_000_000
    enc.set_dt(0.004)
    assert msg.points[0].time_from_start.nanosec == 4_000_000


def test_joint_state(panda, qs):
    from builtin_interfaces.msg import Time

    q, q_next = qs
    enc = CommandEncoder(OutputConfig(type="joint_state", topic="/js"), panda, ARM, DT)
    msg = enc.encode(q_next, q, Time(sec=3))
    assert isinstance(msg, JointState) and msg.name == ARM and msg.header.stamp.sec == 3
    assert np.allclose(msg.position, q_next[:7])


def test_positions_never_outside_limits(panda, qs):
    q, _ = qs
    bad = q.copy()
    bad[:7] = 10.0
    for cfg in (OutputConfig(), OutputConfig(type="joint_trajectory", topic="/a"),
                OutputConfig(type="joint_state", topic="/b")):
        enc = CommandEncoder(cfg, panda, ARM, DT)
        msg = enc.encode(bad, q)
        values = np.asarray(msg.data if cfg.type == "forward_command" else
                            (msg.points[0].positions if cfg.type == "joint_trajectory" else msg.position))
        assert (values <= panda.q_max_v[:7] + 1e-12).all() and (values >= panda.q_min_v[:7] - 1e-12).all()
    vel = CommandEncoder(OutputConfig(interface="velocity"), panda, ARM, DT).encode(bad, q)
    assert (q[:7] + np.asarray(vel.data) * DT <= panda.q_max_v[:7] + 1e-9).all()


def test_unknown_output_joint(panda):
    with pytest.raises(ValueError, match="unknown joint 'elbow'"):
        CommandEncoder(OutputConfig(), panda, ["elbow"], DT)


def test_tick_stats():
    """40 ticks at 2 ms, the 31st 4 ms late (one late start); tick k lasts k us. The figures are over
    the buffer (the last 16 ticks, k = 24..39), the late share over all ticks since reset."""
    s = TickStats(size=16)
    s.reset(0.002)
    for k in range(40):
        s.record(0.002 * k + (0.004 if k >= 30 else 0.0), 1e-6 * k)
    out = s.summary()
    assert s.late == 1 and out["late_pct"] == pytest.approx(100.0 * 1 / 39)  # 39 gaps, one > 1.5 periods
    # 15 periods between the starts of ticks 24 and 39: (0.078 + 0.004) - 0.048 s
    assert out["rate_hz"] == pytest.approx(15 / (0.082 - 0.048))
    # durations 24..39 us: median 31.5 (over all 40 ticks it would be 19.5), p99 24 + 0.99 * 15, max 39
    assert out["tick_p50_us"] == pytest.approx(31.5)
    assert out["tick_p99_us"] == pytest.approx(24 + 0.99 * 15)
    assert out["tick_max_us"] == pytest.approx(39.0)
    assert (out["ticks"], out["late_ticks"]) == (40, 1)  # since reset, not the buffer's 16


@pytest.mark.parametrize("stale", [False, True])
def test_a_hold_while_stale_reaches_only_the_velocity_outputs(panda, stale):
    """Mixed outputs (a position and a velocity forward_command): a hold reaches both, but while the joint states
    are stale only the velocity output gets its zero; a position hold then would be taken by a restarted driver
    (core/control/stale_hold.py)."""
    from types import SimpleNamespace

    from roboplan_ik_ros.node.command_outputs import CommandOutputs
    from roboplan_ik_ros.node.node_config import load_node_config

    cfg = load_node_config({"outputs": [{"type": "forward_command", "interface": "position", "topic": "/p"},
                                        {"type": "forward_command", "interface": "velocity", "topic": "/v"}]})
    q_last = panda.named_configuration("default")[:7]
    loop = SimpleNamespace(group=SimpleNamespace(joint_names=ARM), scene=panda, dt=DT, command_started=True,
                           last_command=lambda: q_last)
    outputs = CommandOutputs(None, cfg, loop)
    sent = {"/p": [], "/v": []}
    outputs.publishers = [SimpleNamespace(publish=lambda m, t=enc.cfg.topic: sent[t].append(list(m.data)))
                          for enc in outputs.encoders]
    outputs.publish_hold(loop, velocity_only=stale)
    assert sent["/v"] == [[0.0] * 7], "the velocity output is told zero"
    assert sent["/p"] == ([] if stale else [pytest.approx(q_last.tolist())])
