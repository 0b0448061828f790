"""Measured feedback on the ``joint_states`` trigger, ``exclude_joints`` and the cost-only task kinds
(``damping``, ``low_acceleration``, ``joint_velocity``, ``manipulability``) end to end (issue 31): one
``ik_controller`` process for the module and the mock Panda (a strict drive; lagging behind its commands in the measured-feedback check), over
DDS; every command checked by the harness.

The config (panda.yaml, self-collision dropped as in every e2e config but test_e2e_self_collision.py):
``node.state_feedback: measured``, ``node.trigger: joint_states`` at the mock's RATE_HZ; the ee task with
``exclude_joints: [panda_joint1]`` on the TCP's position (``orientation_cost: 0``: with the orientation too the
ee task would leave the manipulability only panda_joint1, which it does not depend on); ``damp`` (damping), ``lowacc`` (low_acceleration) and ``jv`` (joint_velocity)
at the ee's priority and ``manip`` (manipulability) below it, each with cost 0 (``solver.weighted_nullspace``:
inert) until a scenario sets its cost at run time (``tasks.<task>.cost``), so each is seen alone:

1. the ticks come from /joint_states: while the mock is paused no command follows its last message (a timer
   would command on until ``state_timeout``), and the stream re-seeds when they return;
2. measured feedback: every command while the lagging robot follows a pose goal leads a measurement received
   around it by at most what the lag implies at the robot's speed (v LAG) plus LEAD_STEP;
3. ``exclude_joints``: a pose goal sideways is reached without panda_joint1 (which a free arm turns for it);
4. ``damping`` at cost DAMPING: the first GOAL_TICKS ticks after a goal move the tool a small share of the way;
   at cost 0 it gets there;
5. ``low_acceleration`` at cost LOW_ACCELERATION: the same, from rest (the step can barely change);
6. ``manipulability`` at cost 1: the hand's manipulability (the test's own, √det(J Jᵀ)) rises while the TCP stays;
7. ``joint_velocity``: a velocity stream on panda_joint1 turns it along the reference; it stops after the stream.

No assertion is about a rate, a duration or a latency (tick counts are counts of commands); the timeouts are
generous.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pinocchio as pin

import e2e
from e2e import TIP, report, write_config
from e2e_features import WAIT, module_rig, publisher, q_full, wait_commands_still  # noqa: F401 - fixture

RATE_HZ = 250.0  # [Hz] the mock's /joint_states, hence the ticks
LAG = 0.2  # [s] the mock's first-order lag behind its commands in the measured-feedback check
GOAL_SHIFT = np.array([0.0, 0.04, 0.0])  # [m] the pose goals, sideways
GOAL_TICKS = 250  # ticks (commands) after a goal in the damping and low-acceleration checks
SHARE = 0.1  # of the goal's distance: at most this far within GOAL_TICKS with the cost term set
DAMPING = 1.0e4  # [cost/rad^2]
LOW_ACCELERATION = 1.0e6  # [cost/rad^2]
JV_SPEED = 0.3  # [rad/s] panda_joint1's velocity reference
POSITION_ONLY = (1e-3, math.inf)  # [m], [rad] a goal reached: the ee task weighs the TCP's position only
IN_FLIGHT = 3  # commands of ticks already under way when this process received the last /joint_states
#: [v_max dt] a command leads the measurements received around it by at most what the lag implies at the robot's
#: peak speed (v LAG) plus this: the step the node took from the one it used. Under the acceleration limit the
#: stream goes on from the previous command (never jumps back to a lagging measurement), so measured feedback leads
#: a lagging robot about as commanded feedback does (3.74 against v LAG = 3.88 here; 1.70 when panda.yaml's
#: workspace weight dragged the arm slower): what it changes is where the tasks linearize
LEAD_STEP = 1.0
#: the manipulability rises by this factor. Measured here: ~1e-4 of m per 2 s (joints at ~1e-4 rad/s), far below
#: the 1 mrad per tick the docs give as the task's bound: with the TCP's position fixed m has ~6 % to gain at the
#: SRDF pose; the test claims only that the task acts
RISE = 1.0005


def _edit(data) -> None:
    data["node"].update(state_feedback="measured", trigger="joint_states", control_rate_hz=RATE_HZ)
    data["solver"]["weighted_nullspace"] = True
    ee = next(t for t in data["tasks"] if t["name"] == "ee")
    ee["exclude_joints"] = ["panda_joint1"]
    ee["orientation_cost"] = 0.0  # the TCP's position: the manipulability gets the hand's orientation to work with
    data["tasks"][1:1] = [{"name": "damp", "type": "damping", "cost": 0.0, "priority": 1},
                          {"name": "lowacc", "type": "low_acceleration", "cost": 0.0, "priority": 1},
                          {"name": "jv", "type": "joint_velocity", "cost": 0.0, "priority": 1},
                          {"name": "manip", "type": "manipulability", "frame": TIP, "cost": 0.0, "priority": 2}]
    next(t for t in data["tasks"] if t["name"] == "posture")["priority"] = 3


def _start(rig) -> None:
    if rig.ik is None:
        rig.start_mock(rate_hz=RATE_HZ, command_period=1.0 / RATE_HZ)
        rig.start_ik(write_config(rig.log_dir, node={"activation_timeout": 20.0}, edit=_edit))
        rig.activate()
        rig.wait_mode("waiting_for_goal", WAIT, since=rig.events["activate_request"])


def _goal(rig, shift) -> pin.SE3:
    T = rig.panda.fk(rig.rec.commands[-1][1])
    return pin.SE3(T.rotation, T.translation + np.asarray(shift, dtype=float))


def _set_cost(rig, task: str, value: float) -> None:
    res = rig.set_param(f"tasks.{task}.cost", value)
    assert res.successful, res.reason


def test_the_ticks_come_from_joint_states(module_rig):
    rig = module_rig
    _start(rig)
    t_pause = time.perf_counter()
    assert rig.set_param("paused", True, proc=rig.mock).successful
    stale = rig.wait_mode("stale", WAIT, since=t_pause)
    t_stale = next(t for t, _, s in rig.rec.status if s is stale)
    t_last_js = max(t for t, _, _ in rig.rec.joint_states)
    after = rig.commands_between(t_last_js, t_stale)
    t_resume = time.perf_counter()
    assert rig.set_param("paused", False, proc=rig.mock).successful
    rig.wait_mode("waiting_for_goal", WAIT, since=t_resume)
    report("trigger joint_states", commands_after_the_last_joint_states=len(after),
           stale_after_last_joint_states_s=t_stale - t_last_js)
    # a few in flight at most (the ticks of the last messages, which may reach this process after the message
    # itself); a timer commands on until state_timeout: 124 here with trigger: timer (the test's own run)
    assert len(after) <= IN_FLIGHT, f"{len(after)} commands after the last /joint_states: the ticks do not follow them"
    rig.check()


def test_measured_feedback_leads_a_lagging_robot_by_no_more_than_its_lag_and_excluded_joints_stay(module_rig):
    rig = module_rig
    _start(rig)
    P = rig.panda
    assert rig.set_param("lag_time_constant", LAG, proc=rig.mock).successful
    goal = _goal(rig, 2 * GOAL_SHIFT)
    q0 = rig.measured()
    t0 = rig.send_pose(goal)
    rig.wait_reached(goal, WAIT, since=t0, tol=POSITION_ONLY)
    wait_commands_still(rig, t0, span=1e-6)
    js = [(t, q) for t, q, valid in rig.rec.joint_states if valid and t > t0 - 1.0]
    t_js = np.array([t for t, _ in js])
    bound = P.v_max / RATE_HZ
    worst = 0.0
    for t, c in rig.commands_between(t0):
        k = int(np.searchsorted(t_js, t))
        # the measurements received around the command (the node stepped from one of them, received by this process
        # a little earlier or later than by the node)
        near = [q for _, q in js[max(0, k - 4):k + 2]]
        ratio = min(float((np.abs(c - q) / bound).max()) for q in near)
        worst = max(worst, ratio)
    q1 = rig.measured()
    assert rig.set_param("lag_time_constant", 0.0, proc=rig.mock).successful
    # what the lag implies at the speed the robot moved: v LAG, in v_max dt (the robot follows a first-order lag of
    # LAG: a command stream at speed v runs v LAG ahead of it)
    q_js = np.array([q for _, q in js])
    speed = np.abs(np.diff(q_js, axis=0)) * RATE_HZ  # [rad/s] the mock publishes at RATE_HZ (receive times jitter)
    commanded_lead = float((speed / P.v_max).max()) * LAG * RATE_HZ
    report("measured feedback, exclude_joints", worst_step_from_measurement=worst,
           lag_lead=commanded_lead,
           joint1_moved_rad=float(abs(q1[0] - q0[0])), moved_m=float(np.linalg.norm(2 * GOAL_SHIFT)))
    assert worst <= commanded_lead + LEAD_STEP, (f"a command {worst:.3f} x v_max dt from every measurement around "
                                                 f"it; the lag at the robot's speed accounts for {commanded_lead:.3f}")
    assert abs(q1[0] - q0[0]) < 1e-4, f"panda_joint1 (excluded from ee, no other task's goal) moved {q1[0] - q0[0]:.3g}"
    rig.check()


def _moved_within(rig, t0: float, goal: pin.SE3, T0: pin.SE3) -> float:
    """The TCP's progress toward ``goal`` [share of the way] after GOAL_TICKS commands since ``t0``."""
    rig.wait_commands(GOAL_TICKS, since=t0, timeout=WAIT)
    c = rig.commands_between(t0)[GOAL_TICKS - 1][1]
    way = goal.translation - T0.translation
    return float((rig.panda.fk(c).translation - T0.translation) @ way / (way @ way))


def _cost_term_slows_a_goal(rig, task: str, cost: float, shift) -> float:
    T0 = rig.panda.fk(rig.rec.commands[-1][1])
    goal = pin.SE3(T0.rotation, T0.translation + np.asarray(shift, dtype=float))
    _set_cost(rig, task, cost)
    t0 = rig.send_pose(goal)
    share = _moved_within(rig, t0, goal, T0)
    _set_cost(rig, task, 0.0)
    rig.wait_reached(goal, WAIT, since=t0, tol=POSITION_ONLY, what=f"the goal once {task}'s cost is 0")
    wait_commands_still(rig, t0, span=1e-6)
    return share


def test_damping_and_low_acceleration_hold_a_goal_back_until_their_cost_is_0(module_rig):
    rig = module_rig
    _start(rig)
    damped = _cost_term_slows_a_goal(rig, "damp", DAMPING, -GOAL_SHIFT)
    held = _cost_term_slows_a_goal(rig, "lowacc", LOW_ACCELERATION, GOAL_SHIFT)
    # the same goal without either: most of the way in as many ticks
    free = _cost_term_slows_a_goal(rig, "damp", 0.0, -GOAL_SHIFT)
    report("damping, low_acceleration", share_damped=damped, share_low_acceleration=held, share_free=free,
           ticks=GOAL_TICKS)
    assert damped < SHARE, f"with damping {DAMPING:g} the TCP went {damped:.2f} of the way in {GOAL_TICKS} ticks"
    assert held < SHARE, f"with low_acceleration {LOW_ACCELERATION:g} the TCP went {held:.2f} of the way"
    assert free > 5 * SHARE, f"without them the TCP went only {free:.2f} of the way in {GOAL_TICKS} ticks"
    rig.check()


def _manipulability(q7) -> float:
    P = e2e.panda()
    data = P.model.createData()
    J = pin.computeFrameJacobian(P.model, data, q_full(P.model, P.iq, q7), P.tip, pin.LOCAL)[:, P.iq]
    return float(np.sqrt(np.linalg.det(J @ J.T)))


def test_manipulability_rises_while_the_tool_stays(module_rig):
    rig = module_rig
    _start(rig)
    P = rig.panda
    q0 = rig.rec.commands[-1][1]
    m0, T0 = _manipulability(q0), P.fk(q0)
    t0 = rig.send_pose(T0)  # hold the tool where it is
    _set_cost(rig, "manip", 1.0)
    rig.wait(lambda: _manipulability(rig.rec.commands[-1][1]) > RISE * m0, WAIT, f"the manipulability {RISE - 1:.2%} up")
    _set_cost(rig, "manip", 0.0)
    moved = max(float(np.linalg.norm(P.fk(c).translation - T0.translation)) for _, c in rig.commands_between(t0))
    m1 = _manipulability(rig.rec.commands[-1][1])
    report("manipulability", m_before=m0, m_after=m1, tcp_moved_m=moved)
    assert moved < 1e-3, f"the tool moved {moved:.4f} m while the manipulability rose"
    rig.check()


def test_a_joint_velocity_stream_turns_the_joint_and_stops_with_it(module_rig):
    from sensor_msgs.msg import JointState

    rig = module_rig
    _start(rig)
    _set_cost(rig, "jv", 1.0)
    pub = publisher(rig, JointState, "jv/target_joint_velocities")
    q0 = rig.measured()
    msg = JointState(name=["panda_joint1"], velocity=[JV_SPEED])

    def turned():
        pub.publish(msg)
        time.sleep(0.01)
        return rig.measured()[0] - q0[0] >= 0.05

    t0 = rig.rec.commands[-1][0]
    rig.wait(turned, WAIT, "panda_joint1 turned 0.05 rad along the reference")
    t_stop = time.perf_counter()
    q_rest = wait_commands_still(rig, t_stop, n=50, span=1e-6)
    turn = [c[0] - q0[0] for _, c in rig.commands_between(t0)]
    _set_cost(rig, "jv", 0.0)
    report("joint_velocity", joint1_turned_rad=float(q_rest[0] - q0[0]), min_turn_rad=float(min(turn)))
    assert min(turn) > -1e-6, "panda_joint1 turned against the reference"
    rig.check()
