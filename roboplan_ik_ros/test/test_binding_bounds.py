"""What holds a twist at its leash (binding_bounds through ControlLoop.motion_limit), without ROS, in
closed loop with the simulated robot of test_control_loop (the shipped panda.yaml without barriers, so
that only joint bounds can hold the twist): a joint position limit, a velocity limit, the acceleration
bound, or nothing (the task's priority: ``leash``). Each report names joints that really are at the
bound it names (checked on the published commands)."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from conftest import CONFIG_DIR
from roboplan_ik_ros.core.config import load_config
from roboplan_ik_ros.core.control.binding_bounds import (ACCELERATION_BOUND, FOLLOWING_ERROR, JOINT_BOUND,
                                                         VELOCITY_BOUND, binding_bounds)
from roboplan_ik_ros.core.control.control_loop import LEASH, ControlLoop, LoopConfig
from roboplan_ik_ros.core.control.twist_follower import StreamingConfig
from test_control_loop import SimRobot, panda  # noqa: F401 - panda is a fixture
from test_control_loop_streams import within_bounds

TASK = "ee"
SAMPLE = 25  # ticks between status samples (20 Hz at 500 Hz, as a status publisher would)


def started(panda, edit=None, **streaming):
    data = yaml.safe_load((CONFIG_DIR / "panda.yaml").read_text())
    data["barriers"] = []  # nothing but the joint bounds can hold the twist
    if edit is not None:
        edit(data)
    loop = ControlLoop(panda, load_config(data),
                       LoopConfig(streaming=StreamingConfig(command_in_type="speed_units", **streaming)))
    sim = SimRobot(loop, panda.named_configuration("default"))
    assert loop.activate(sim.t) == ""
    sim.tick(5)
    return loop, sim


def stream(loop, sim, v, w, ticks, task=TASK):
    """A 100 Hz twist for ``ticks`` ticks, sampled like the node's status (motion_limit, then
    note_motion_limit); the samples (code, text) in order."""
    samples = []
    for k in range(ticks):
        if k % 5 == 0:
            loop.set_twist(task, np.asarray(v, float), np.asarray(w, float), sim.t)
        sim.tick()
        if k % SAMPLE == SAMPLE - 1:
            code, text = loop.motion_limit(sim.t)
            loop.note_motion_limit(code)
            samples.append((code, text))
    return samples


def named_joints(loop, code):
    return [h.joint for h in loop.binding_bounds() if h.code == code]


def test_a_twist_into_a_joint_limit_names_the_joint_at_its_limit(panda):
    """Turning the hand about the world z axis at 1 rad/s winds the wrist up until joints reach their
    limits: the status says joint_bound and names joints whose commands are at their limits."""
    loop, sim = started(panda)
    samples = stream(loop, sim, np.zeros(3), [0.0, 0.0, 1.0], 3000)
    code, text = samples[-1]
    assert code == JOINT_BOUND, samples[-1]
    joints = named_joints(loop, JOINT_BOUND)
    assert joints and all(j in text for j in joints) and "position limit" in text
    g, names = loop.group, list(loop.group.joint_names)
    q = sim.commands[-1]
    for j in joints:
        k = names.index(j)
        lo, hi = panda.q_min_v[g.v_indices[k]], panda.q_max_v[g.v_indices[k]]
        assert min(q[k] - lo, hi - q[k]) < 1e-3, (j, q[k], lo, hi)  # it is at (or braking into) that limit
    assert loop.counts.motion_limits.get(JOINT_BOUND, 0) >= 1
    within_bounds(loop, sim.commands)


def test_a_twist_faster_than_a_joint_velocity_limit_says_velocity_bound(panda):
    """v_max 0.3 rad/s on every joint, a 0.5 m/s twist: the hand follows slower, the status says
    velocity_bound and names joints that move at 0.3 rad/s; it holds at every sample (the target rides at
    the leash with the frame instead of falling back and catching up)."""
    def slow(data):
        data["limits"][1]["v_max"] = 0.3

    loop, sim = started(panda, slow, max_linear_speed=1.0)
    samples = stream(loop, sim, [0.0, 0.5, 0.0], np.zeros(3), 600)
    assert all(code == VELOCITY_BOUND for code, _ in samples[10:]), [c for c, _ in samples]  # from 0.5 s on
    joints = named_joints(loop, VELOCITY_BOUND)
    assert joints and all(j in samples[-1][1] for j in joints) and "velocity limit" in samples[-1][1]
    v = (sim.commands[-1] - sim.commands[-2]) / loop.dt
    names = list(loop.group.joint_names)
    for j in joints:
        assert abs(v[names.index(j)]) == pytest.approx(0.3, rel=1e-6)
    assert loop.counts.motion_limits.get(VELOCITY_BOUND) == 1  # one episode
    within_bounds(loop, sim.commands)


def test_a_sudden_reversal_under_tight_acceleration_bounds_says_acceleration_bound(panda):
    """a_max 1 rad/s^2 on every joint: a 0.2 m/s twist is followed (nothing limits it once up to
    speed), then reversed at once (the stream's own acceleration 50 m/s^2): the arm brakes at a_max, the
    status says acceleration_bound and names joints decelerating at a_max."""
    def tight(data):
        data["limits"][2]["a_max"] = 1.0
        data["limits"][2]["j_max"] = float("inf")

    loop, sim = started(panda, tight)
    steady = stream(loop, sim, [0.0, 0.2, 0.0], np.zeros(3), 1000)
    assert steady[-1] == ("", ""), steady[-1]
    loop.settings.streaming.max_linear_acceleration = 50.0  # a runtime parameter: the target reverses at once
    samples = stream(loop, sim, [0.0, -0.2, 0.0], np.zeros(3), 100)
    codes = [code for code, _ in samples]
    assert ACCELERATION_BOUND in codes, samples
    k = codes.index(ACCELERATION_BOUND)
    assert "acceleration bound" in samples[k][1] and "a_max 1.000" in samples[k][1]
    assert loop.counts.motion_limits.get(ACCELERATION_BOUND, 0) >= 1
    within_bounds(loop, sim.commands)


def test_the_acceleration_bound_is_read_off_the_commands(panda):
    """At a sample that says acceleration_bound, the joints it names change velocity by a_max dt per tick."""
    def tight(data):
        data["limits"][2]["a_max"] = 1.0
        data["limits"][2]["j_max"] = float("inf")

    loop, sim = started(panda, tight)
    stream(loop, sim, [0.0, 0.2, 0.0], np.zeros(3), 1000)
    loop.settings.streaming.max_linear_acceleration = 50.0
    for _ in range(100):
        stream(loop, sim, [0.0, -0.2, 0.0], np.zeros(3), 1)
        joints = named_joints(loop, ACCELERATION_BOUND)
        if joints:
            break
    assert joints
    c = np.array(sim.commands[-3:])
    a = (c[2] - 2 * c[1] + c[0]) / loop.dt**2
    names = list(loop.group.joint_names)
    for j in joints:
        assert abs(a[names.index(j)]) == pytest.approx(1.0, rel=1e-6)


def test_a_robot_that_trails_its_commands_says_following_error(panda):
    """A robot that follows its commands with a 0.9 s lag (commanded feedback): the commands run ahead
    until max_state_divergence holds them; the status says following_error and names joints whose
    command leads the measured joint by most of that window."""
    loop, sim = started(panda)
    sim.lag = 0.9  # [s] first-order lag of the simulated robot
    samples = stream(loop, sim, [0.0, 0.25, 0.0], np.zeros(3), 800)
    code, text = samples[-1]
    assert code == FOLLOWING_ERROR and "following-error window" in text, samples[-1]
    joints = named_joints(loop, FOLLOWING_ERROR)
    names, e = list(loop.group.joint_names), loop.settings.max_state_divergence
    lead = np.abs(sim.commands[-1] - sim.q[loop.group.q_indices])
    assert joints, "following_error names no joint"
    for j in joints:
        assert 0.5 * e < lead[names.index(j)] <= e + 1e-9, (j, lead[names.index(j)], e)
    within_bounds(loop, sim.commands)


def test_a_twist_held_by_a_higher_priority_task_says_leash(panda):
    """An elbow task below the hand's priority, twisted where the hand's nullspace cannot take it: the
    hand holds it back, no joint bound binds the step, and the status says leash (not a bound)."""
    def elbow(data):
        data["tasks"].append({"name": "elbow", "type": "frame", "frame": "panda_link4", "position_cost": 1.0,
                              "orientation_cost": 0.0, "priority": 2})

    loop, sim = started(panda, elbow)
    samples = stream(loop, sim, [0.0, 0.0, 0.1], np.zeros(3), 300, task="elbow")
    code, text = samples[-1]
    assert code == LEASH and "elbow" in text and "no joint limit" in text, samples[-1]
    assert loop.binding_bounds() == []
    assert loop.counts.motion_limits.get(LEASH) == 1


def test_one_hit_per_joint_the_most_final_bound_first(panda):
    """At rest, a step of zero is inside every bound; a step of v_max dt on one joint is at its velocity
    limit (and far beyond its acceleration window): one hit, velocity_bound, naming that joint."""
    loop, sim = started(panda)
    assert loop.binding_bounds() == []  # waiting for a goal: nothing moves, nothing to report
    args = (panda, loop.group, loop.ctrl.limits, sim.q)
    tol = loop.ctrl.oink.constraint_tolerance
    assert binding_bounds(*args, np.zeros(7), loop.dt, tol) == []
    dq = np.zeros(7)
    dq[2] = loop.guard.v_max[2] * loop.dt
    hits = binding_bounds(*args, dq, loop.dt, tol)
    assert [(h.code, h.joint) for h in hits] == [(VELOCITY_BOUND, "panda_joint3")]
    v_max = panda.model.velocityLimit[loop.group.v_indices[2]]  # the URDF's panda_joint3 limit: the step is at it
    assert f"v {v_max:+.4f} rad/s, v_max {v_max:.4f} rad/s" in hits[0].text


def test_a_leash_with_nothing_binding_names_the_nearest_barrier_row(panda):
    """The node's status (LoopSnapshot) for the same elbow held by the hand, with panda.yaml's barriers
    kept: no barrier row binds the step, so the code stays leash, and the reason says how near the
    nearest barrier row is (its soft term also trades against the task)."""
    from roboplan_ik_ros.node.status import LoopSnapshot

    def elbow_with_barriers(data):
        data["barriers"] = yaml.safe_load((CONFIG_DIR / "panda.yaml").read_text())["barriers"]
        data["tasks"].append({"name": "elbow", "type": "frame", "frame": "panda_link4", "position_cost": 1.0,
                              "orientation_cost": 0.0, "priority": 2})

    loop, sim = started(panda, elbow_with_barriers)
    stream(loop, sim, [0.0, 0.0, 0.1], np.zeros(3), 300, task="elbow")
    snap = LoopSnapshot.take(loop, sim.t)
    code, text = snap.motion_limit
    assert code == LEASH and "nearest barrier row:" in text, snap.motion_limit
    name, row, h = min(((n, rows[k], float(v[k])) for n, rows, v, _ in snap.barriers for k in range(len(v))),
                       key=lambda x: x[2])
    assert f"{name} {row} (h = {h:.4f} m)" in text
