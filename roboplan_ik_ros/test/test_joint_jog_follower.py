"""JointJogFollower without ROS: integration, acceleration bound, braking before a position limit,
command timeout, the leash; and joint jogs through ControlLoop (a configuration-only Panda config,
where the jog is the whole motion; with a pose task the jog acts in its nullspace)."""

import numpy as np
import pytest
import yaml

from models import scene
from roboplan_ik_ros.core.config import load_config
from roboplan_ik_ros.core.control.control_loop import COMMAND_TIMEOUT, JOINT_BOUND, ControlLoop, LoopConfig
from roboplan_ik_ros.core.control.joint_jog_follower import JointJogFollower
from roboplan_ik_ros.core.control.twist_follower import StreamingConfig, scale_joint_velocities
from roboplan_ik_ros.core.errors import InvalidInputError
from test_control_loop import SimRobot, panda  # noqa: F401 - panda is a fixture
from conftest import CONFIG_DIR

DT = 0.002
A = 2.0  # [rad/s^2]


@pytest.fixture(scope="module")
def arm():
    s = scene("panda")
    return s, s.group("arm")


def jog(arm, **kw):
    s, g = arm
    f = JointJogFollower(s, g, StreamingConfig(**kw), np.full(g.nv, A))
    q0 = s.named_configuration("default")
    f.start(q0[g.q_indices])
    return f, q0


def test_a_jog_is_integrated_within_the_acceleration_bound(arm):
    f, q0 = jog(arm)
    dq = np.zeros(7)
    dq[0] = 0.3
    previous, t = np.zeros(7), 0.0
    for _ in range(200):
        t += DT
        f.command(dq, t)
        before = f.target.copy()
        f.step(DT, t)
        assert np.abs(f.velocity - previous).max() <= A * DT + 1e-12
        previous = f.velocity.copy()
    assert np.allclose(f.velocity, dq) and np.allclose(f.target - before, dq * DT)


def test_a_jog_brakes_to_stop_at_the_position_limit(arm):
    s, g = arm
    f, q0 = jog(arm)
    dq = np.zeros(7)
    dq[3] = 0.5  # joint 4 toward its upper limit
    upper = s.q_max_v[g.v_indices[3]]
    t, speeds = 0.0, []
    for _ in range(3000):
        t += DT
        f.command(dq, t)
        f.step(DT, t)
        speeds.append(f.velocity[3])
        assert f.target[3] <= upper + 1e-12
    assert f.target[3] == pytest.approx(upper, abs=1e-6) and f.velocity[3] == pytest.approx(0.0, abs=1e-9)
    assert (np.abs(np.diff(speeds)) <= A * DT + 1e-12).all()  # braked within the bound, not clipped
    assert f.at_bound[3] and f.bounds_reached() == [(3, "upper", upper)]


def test_a_jog_times_out_and_the_leash_holds_a_blocked_joint(arm):
    f, q0 = jog(arm, command_timeout=0.1, joint_leash=0.05)
    dq = np.zeros(7)
    dq[0] = 0.4
    t = 0.0
    for _ in range(300):  # the joint does not move (blocked): the target stays within the leash
        t += DT
        f.command(dq, t)
        f.step(DT, t, q0)
        assert abs(f.target[0] - q0[0]) <= 0.05 + 1e-12
    assert f.leashed
    while f.streaming:
        t += DT
        f.step(DT, t, q0)
        assert t < 5.0
    assert f.timed_out and not f.velocity.any()


def test_a_jog_target_held_at_the_leash_moves_on_with_a_slower_joint(arm):
    """The joint follows at 0.1 rad/s a jog of 0.4 rad/s: its target stays at the leash, held at every
    step and moving at the joint's speed (not dropped to zero and caught up again)."""
    f, q0 = jog(arm, joint_leash=0.05)
    dq = np.zeros(7)
    dq[0] = 0.4
    q, t = q0.copy(), 0.0
    for k in range(400):
        t += DT
        q[0] += 0.1 * DT
        f.command(dq, t)
        f.step(DT, t, q)
        if k >= 150:
            assert f.leashed and f.target[0] - q[0] == pytest.approx(0.05, abs=1e-12)
    assert f.velocity[0] == pytest.approx(0.1, abs=1e-9)  # the joint's speed (cut after this step's increase)


def test_jog_scaling():
    cfg = StreamingConfig(command_in_type="unitless", max_joint_speed=0.4, speed_override=0.5)
    assert np.allclose(scale_joint_velocities(cfg, [1.0, -0.5]), [0.2, -0.1])
    with pytest.raises(InvalidInputError, match=r"\[-1, 1\]"):
        scale_joint_velocities(cfg, [1.2])
    cfg.command_in_type = "speed_units"
    assert np.allclose(scale_joint_velocities(cfg, [0.8, -0.4]), [0.2, -0.1])  # clipped as a whole, then halved
    with pytest.raises(InvalidInputError, match="non-finite"):
        scale_joint_velocities(cfg, [np.nan])


def posture_only_loop(panda):
    data = yaml.safe_load((CONFIG_DIR / "panda.yaml").read_text())
    data["tasks"] = [t for t in data["tasks"] if t["name"] == "posture"]
    data["tasks"][0]["weights"] = 1.0
    data["barriers"] = []
    return ControlLoop(panda, load_config(data), LoopConfig(streaming=StreamingConfig(command_in_type="speed_units")))


def test_jogging_a_joint_into_its_limit_brakes_before_it_and_says_joint_bound(panda):
    loop = posture_only_loop(panda)
    sim = SimRobot(loop, panda.named_configuration("default"))
    assert loop.activate(sim.t) == ""
    sim.tick(3)
    g = loop.group
    upper = panda.q_max_v[g.v_indices[3]]
    dq = np.zeros(7)
    dq[3] = 0.5
    for k in range(3000):
        if k % 5 == 0:
            loop.set_joint_velocities("posture", dq, sim.t)
        sim.tick()
    code, text = loop.motion_limit(sim.t)
    assert code == JOINT_BOUND and "panda_joint4" in text and "upper limit" in text
    assert loop.counts.motion_limits[JOINT_BOUND] == 1
    assert sim.q[g.q_indices][3] <= upper + 1e-9 and sim.q[g.q_indices][3] > upper - 1e-3
    c = np.array(sim.commands)
    acc = loop.acceleration_limit
    assert (np.abs(np.diff(c, n=2, axis=0)) <= acc.alpha[:7] * (1 + 1e-9) + 1e-15).all()
    assert (np.abs(np.diff(c, n=3, axis=0)) <= acc.delta[:7] * (1 + 1e-9) + 1e-15).all()
    assert loop.guard.cuts == 0 and sim.max_step_ratio <= 1.0 + 1e-9
    # jog away, then stop: timeout
    dq[3] = -0.3
    for k in range(200):
        if k % 5 == 0:
            loop.set_joint_velocities("posture", dq, sim.t)
        sim.tick()
    assert sim.q[g.q_indices][3] < upper - 0.01
    sim.tick(500)
    assert loop.motion_limit(sim.t)[0] == COMMAND_TIMEOUT
    assert np.abs(np.diff(sim.commands[-3:], axis=0)).max() < 1e-9


def test_switching_jog_to_joint_goal_has_no_jump(panda):
    loop = posture_only_loop(panda)
    sim = SimRobot(loop, panda.named_configuration("default"))
    assert loop.activate(sim.t) == ""
    dq = np.array([0.3, -0.2, 0.0, 0.1, 0.0, 0.2, 0.0])
    for k in range(100):
        if k % 5 == 0:
            loop.set_joint_velocities("posture", dq, sim.t)
        sim.tick()
    goal = sim.q[loop.group.q_indices].copy()
    loop.set_joint_goal("posture", goal)  # mid-jog: back to where the jog was then
    sim.tick(1000)
    c = np.array(sim.commands)
    acc = loop.acceleration_limit
    assert (np.abs(np.diff(c, n=2, axis=0)) <= acc.alpha[:7] * (1 + 1e-9) + 1e-15).all()
    assert loop.guard.cuts == 0
    assert np.abs(sim.q[loop.group.q_indices] - goal).max() < 1e-3


def test_a_jog_under_a_held_pose_moves_the_arm_along_its_self_motion_as_long_as_it_lasts():
    """The joints not jogged follow the arm (their targets where they are): jogging panda_joint1 while the pose task
    holds the tool turns the elbow for as long as the jog lasts, the tool staying put. (Their targets held where the
    jog started pulled back and stopped it after ~0.06 rad.)"""
    from conftest import CONFIG_DIR
    from models import robot

    r = robot("panda")
    data = yaml.safe_load((CONFIG_DIR / "panda.yaml").read_text())
    data["barriers"] = [b for b in data["barriers"] if b["name"] != "self_collision"]
    loop = ControlLoop.from_config(data, r.urdf_xml, r.srdf_xml, r.package_paths)
    scene = loop.scene
    sim = SimRobot(loop, scene.named_configuration("default"))
    assert loop.activate(sim.t) == ""
    T_tool = scene.frame_pose(sim.q, "panda_hand_tcp")
    loop.set_pose_goal("ee", T_tool)  # hold the tool where it is
    sim.tick(50)
    q_start = sim.q.copy()
    dq = np.zeros(7)
    dq[0] = 0.5  # unitless: half of streaming.max_joint_speed
    for k in range(1500):  # 3 s
        if k % 5 == 0:
            loop.set_joint_velocities("posture", dq, sim.t)
        sim.tick()
    turned = sim.q[loop.group.q_indices][0] - q_start[loop.group.q_indices][0]
    assert turned > 0.2, f"panda_joint1 turned {turned:.3f} rad in 3 s of jogging at 0.25 rad/s"
    T_end = scene.frame_pose(sim.q, "panda_hand_tcp")
    assert np.linalg.norm(T_end.translation - T_tool.translation) < 1e-3
