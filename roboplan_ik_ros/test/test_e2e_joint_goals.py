"""Joint-space goals, configured targets and the other output types end to end (issue 31): one ``ik_controller``
process for the module and the mock Panda (a strict drive), over DDS; every command checked by the harness.

The config (panda.yaml, self-collision dropped as in every e2e config but test_e2e_self_collision.py): the ee
task on the TCP's position only (priority 1; ``solver.weighted_nullspace`` leaves its zero-cost rows to the
lower priorities), a ``joint`` task ``wrist`` on panda_joint7 with a configured
``target`` and a ``look_at`` task ``look`` with a configured ``point`` (both priority 1: the TCP's position, the
hand's pointing and its roll about the pointing axis are six independent rows), the posture below (priority 2,
one degree of freedom left: the elbow's self-motion), and two more outputs besides the forward command, a
``joint_trajectory`` and a ``joint_state`` one.

- no goal, no motion; ``~/apply_configured_targets`` moves panda_joint7 to its configured target and the hand's
  z axis onto the configured point, the TCP staying where it was;
- a ``joint`` goal on ``~/wrist/target_joints`` (panda_joint7 by name) is reached, nothing else moves;
- a posture goal on ``~/posture/target_joints`` (a configuration 0.3 rad along the self-motion that keeps the
  TCP, the pointing and the wrist, found with the test's own Jacobians) is reached while the tool stays;
- the joint_trajectory and joint_state outputs carry exactly the forward commands (same values, the group's
  joint names, the trajectory point one control period ahead).

No assertion is about a rate, a duration or a latency; the timeouts are generous.
"""

from __future__ import annotations

import time

import numpy as np
import pinocchio as pin

import e2e
from e2e import ARM, TIP, report, write_config
from e2e_features import (WAIT, TopicRecorder, module_rig, publisher, q_full, trigger,  # noqa: F401 - fixture
                          wait_commands_still)

WRIST_OFFSET = 0.4  # [rad] the wrist task's configured target from the SRDF pose
WRIST_GOAL_OFFSET = -0.3  # [rad] its goal on ~/wrist/target_joints
LOOK_FROM_TCP = np.array([0.15, 0.1, -0.4])  # [m] the configured look_at point, from the TCP at the start
SELF_MOTION = 0.3  # [rad] the posture goal's distance along the self-motion
JOINT_TOL = 1e-3  # [rad]
POINTING_TOL = np.radians(1.0)  # [rad]
TCP_TOL = 1e-3  # [m]
JT_TOPIC, JS_TOPIC = e2e.unique("/e2e_joint_trajectory"), e2e.unique("/e2e_joint_state_command")
RATE_HZ = e2e.shipped_config()["node"]["control_rate_hz"]


def _look_point() -> np.ndarray:
    P = e2e.panda()
    return P.fk(P.default).translation + LOOK_FROM_TCP


def _edit(data) -> None:
    P = e2e.panda()
    ee = next(t for t in data["tasks"] if t["name"] == "ee")
    ee["orientation_cost"] = 0.0
    # the zero-cost orientation rows leave their directions to the lower priorities (without it they block them
    # once a barrier's safe-displacement weight outweighs the regularization, and the posture cannot move)
    data["solver"]["weighted_nullspace"] = True
    data["tasks"][1:1] = [
        {"name": "wrist", "type": "joint", "joints": ["panda_joint7"], "target": [float(P.default[6] + WRIST_OFFSET)],
         "priority": 1},
        {"name": "look", "type": "look_at", "frame": TIP, "axis": "z", "point": [float(x) for x in _look_point()],
         "priority": 1}]
    data["node"]["outputs"] += [{"type": "joint_trajectory", "topic": JT_TOPIC},
                                {"type": "joint_state", "topic": JS_TOPIC}]


def _pointing_angle(q7, point) -> float:
    T = e2e.panda().fk(q7)
    u = np.asarray(point) - T.translation
    return float(np.arccos(np.clip(T.rotation[:, 2] @ u / np.linalg.norm(u), -1.0, 1.0)))


def _tcp_moved(q7, q_ref) -> float:
    P = e2e.panda()
    return float(np.linalg.norm(P.fk(q7).translation - P.fk(q_ref).translation))


def test_no_goal_no_motion_then_apply_configured_targets_reaches_the_joint_and_look_at_targets(module_rig):
    rig = module_rig
    P = e2e.panda()
    rig.start_mock()
    rig.start_ik(write_config(rig.log_dir, node={"activation_timeout": 20.0}, edit=_edit))
    rig.activate()
    rig.wait_mode("waiting_for_goal", WAIT, since=rig.events["activate_request"])
    q0 = rig.measured()
    t0 = rig.rec.commands[-1][0]
    rig.wait_commands(200, since=t0, timeout=WAIT)
    drift = max(float(np.abs(c - q0).max()) for _, c in rig.commands_between(t0))
    assert drift == 0.0, f"the commands moved {drift:.3g} rad without a goal"
    assert _pointing_angle(q0, _look_point()) > np.radians(10.0)  # the configured targets are not met yet

    res = trigger(rig, "apply_configured_targets")
    assert res.success, res.message
    target7 = P.default[6] + WRIST_OFFSET
    rig.wait(lambda: abs(rig.measured()[6] - target7) < JOINT_TOL and
             _pointing_angle(rig.measured(), _look_point()) < POINTING_TOL, WAIT,
             "panda_joint7 at its configured target (1 mrad) and the hand's z axis on the configured point (1 deg)")
    q1 = wait_commands_still(rig, t0, span=1e-5)
    report("apply_configured_targets", joint7_error_rad=float(abs(q1[6] - target7)),
           pointing_error_rad=_pointing_angle(q1, _look_point()), tcp_moved_m=_tcp_moved(q1, q0))
    assert abs(q1[6] - target7) < JOINT_TOL and _pointing_angle(q1, _look_point()) < POINTING_TOL
    assert _tcp_moved(q1, q0) < TCP_TOL, "the TCP left its place (the ee task holds it)"
    rig.check()


def test_a_joint_goal_by_name_is_reached_and_nothing_else_moves(module_rig):
    from sensor_msgs.msg import JointState

    rig = module_rig
    P = e2e.panda()
    pub = publisher(rig, JointState, "wrist/target_joints")
    q0 = rig.measured()
    goal7 = P.default[6] + WRIST_GOAL_OFFSET
    t0 = rig.rec.commands[-1][0]
    pub.publish(JointState(name=["panda_joint7"], position=[float(goal7)]))
    rig.wait(lambda: abs(rig.measured()[6] - goal7) < JOINT_TOL, WAIT, "panda_joint7 at its goal (1 mrad)")
    q1 = wait_commands_still(rig, t0, span=1e-5)
    report("joint goal", joint7_error_rad=float(abs(q1[6] - goal7)), tcp_moved_m=_tcp_moved(q1, q0),
           pointing_error_rad=_pointing_angle(q1, _look_point()))
    assert abs(q1[6] - goal7) < JOINT_TOL
    assert _tcp_moved(q1, q0) < TCP_TOL and _pointing_angle(q1, _look_point()) < POINTING_TOL
    rig.check()


def _self_motion_goal(q7: np.ndarray, distance: float, step: float = 0.005) -> np.ndarray:
    """A configuration ``distance`` [rad] along the one-dimensional self-motion that keeps the TCP's position, the
    z axis's pointing at the look point and panda_joint7 (the test's own Jacobians, re-linearized every step)."""
    P = e2e.panda()
    model, data = P.model, P.model.createData()
    q, n_prev = q7.copy(), None
    for _ in range(int(round(distance / step))):
        qf = q_full(model, P.iq, q)
        pin.computeJointJacobians(model, data, qf)
        pin.framesForwardKinematics(model, data, qf)
        J = pin.getFrameJacobian(model, data, P.tip, pin.LOCAL_WORLD_ALIGNED)[:, P.iq]
        z = data.oMf[P.tip].rotation[:, 2]
        # rows: the TCP's position; the axis, which turns by (J_w dq) x z (the line of sight stays: the TCP does);
        # panda_joint7
        A = np.vstack([J[:3], -pin.skew(z) @ J[3:], np.eye(7)[6]])
        n = np.linalg.svd(A)[2][-1]
        if n_prev is not None and n @ n_prev < 0:
            n = -n
        q, n_prev = q + step * n, n
    return q


def test_a_posture_goal_along_the_self_motion_is_reached_while_the_tool_stays(module_rig):
    rig = module_rig
    P = e2e.panda()
    q0 = rig.measured()
    goal = _self_motion_goal(q0, SELF_MOTION)
    assert P.within_limits(goal), goal
    # the goal keeps the other tasks' rows (up to the integration's drift)
    assert _tcp_moved(goal, q0) < 0.2 * TCP_TOL and abs(goal[6] - q0[6]) < 1e-9
    assert abs(_pointing_angle(goal, _look_point()) - _pointing_angle(q0, _look_point())) < 0.2 * POINTING_TOL
    t0 = rig.send_joints(goal)
    rig.wait(lambda: np.abs(rig.measured() - goal).max() < 1e-2, WAIT, "the arm at the posture goal (10 mrad)")
    q1 = wait_commands_still(rig, t0, span=1e-5)
    moved = [_tcp_moved(c, q0) for _, c in rig.commands_between(t0)]
    report("posture goal", distance_before_rad=float(np.abs(q0 - goal).max()),
           distance_after_rad=float(np.abs(q1 - goal).max()), tcp_moved_max_m=max(moved))
    assert np.abs(q1 - goal).max() < 1e-2
    assert max(moved) < TCP_TOL, "the tool moved while the posture changed"
    rig.check()


def test_the_joint_trajectory_and_joint_state_outputs_carry_the_forward_commands(module_rig):
    """Recorded only while the wrist moves back to its configured target (three 500 Hz streams into this process
    for the whole module would outrun its recorder's history)."""
    from sensor_msgs.msg import JointState
    from trajectory_msgs.msg import JointTrajectory

    rig = module_rig
    P = e2e.panda()
    jt_rec, js_rec = TopicRecorder(rig, JointTrajectory, JT_TOPIC), TopicRecorder(rig, JointState, JS_TOPIC)
    rig.wait(lambda: jt_rec.messages and js_rec.messages, WAIT, "the joint_trajectory and joint_state outputs")
    t0 = rig.rec.commands[-1][0]
    target7 = P.default[6] + WRIST_OFFSET
    assert trigger(rig, "apply_configured_targets").success
    rig.wait(lambda: abs(rig.measured()[6] - target7) < JOINT_TOL, WAIT, "panda_joint7 back at its configured target")
    q_rest = wait_commands_still(rig, t0, n=20, span=1e-6)
    rig.node.destroy_subscription(jt_rec.sub)
    rig.node.destroy_subscription(js_rec.sub)
    jt = [m for _, m in jt_rec.since(t0)]
    js = [m for _, m in js_rec.since(t0)]
    rig.wait_commands(10, since=time.perf_counter(), timeout=WAIT)  # the forward commands of the same ticks
    forward = {tuple(c) for _, c in rig.commands_between(t0 - 1.0)}
    moving = {tuple(m.points[0].positions) for m in jt}
    assert len(moving) >= 50, f"only {len(moving)} distinct joint_trajectory points while the wrist moved"
    period = 1.0 / RATE_HZ
    for m in jt:
        assert list(m.joint_names) == list(ARM) and len(m.points) == 1, (m.joint_names, len(m.points))
        p = m.points[0]
        assert abs(p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec - period) < 1e-9, p.time_from_start
        assert tuple(p.positions) in forward, f"a joint_trajectory point that is no forward command: {p.positions}"
    for m in js:
        assert list(m.name) == list(ARM), m.name
        assert tuple(m.position) in forward, f"a joint_state command that is no forward command: {m.position}"
    for last in (np.array(jt[-1].points[0].positions), np.array(js[-1].position)):  # at rest (still to 1e-6 rad)
        assert np.abs(last - q_rest).max() <= 1e-6, f"an output at rest {last} is not the rest command {q_rest}"
    report("outputs", joint_trajectory=len(jt), joint_state=len(js), distinct_points=len(moving))
    rig.check()
