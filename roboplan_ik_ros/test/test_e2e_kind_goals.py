"""Goals of the task kinds that take them directly, end to end: ``ik_controller`` and the mock Panda as processes.

- ``look_at``: a geometry_msgs/PointStamped on ``~/look/target_point`` (in panda_link0, then in the hand's own
  frame) turns the hand's z axis onto the point while a position-only frame task brings the hand back where it
  was; a point with a NaN is refused (counted in ~/status) and changes nothing.
- ``relative_frame``: a PoseStamped on ``~/rel/target_pose`` in the task's reference frame (panda_link1) is
  reached; the same pose in panda_link0 is refused with the reason (the target is relative to the reference),
  logged.

Every published command is checked (rig.check: velocity, acceleration, jerk, limits). No assertion is about a
rate, a duration or a latency; the timeouts are generous.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from e2e import ARM, ROOT_FRAME, TIP, panda, rig, write_config  # noqa: F401 - rig is a fixture

WAIT = 60.0


def _q_full(q7):
    p = panda()
    q = pin.neutral(p.model)
    q[p.iq] = q7
    return q


def _frame(q7, name: str) -> pin.SE3:
    p = panda()
    data = p.model.createData()
    pin.framesForwardKinematics(p.model, data, _q_full(q7))
    return data.oMf[p.model.getFrameId(name)].copy()


def _publisher(rig, msg_type, topic):
    pub = rig.node.create_publisher(msg_type, f"/{rig.ik.name}/{topic}", 10)
    rig.wait(lambda: pub.get_subscription_count() > 0, WAIT, f"the node subscribed {topic}")
    return pub


def _wait_commands_still(rig, n: int = 50, span: float = 1e-4) -> np.ndarray:
    """The last command, once the last ``n`` commands moved no joint more than ``span`` [rad] (not exactly still:
    the posture task keeps turning the hand about the look axis, which the tasks above leave free, ~1e-4 rad/s)."""
    def still():
        cmds = [c for _, c in list(rig.rec.commands)[-n:]]
        return len(cmds) == n and float(np.ptp(np.array(cmds), axis=0).max()) < span and (cmds[-1],)

    return rig.wait(still, WAIT, f"the commands still (every joint within {span:g} rad over {n} commands)")[0]


def _pointing_angle(q7, point) -> float:
    T = _frame(q7, TIP)
    u = np.asarray(point) - T.translation
    return float(np.arccos(np.clip(T.rotation[:, 2] @ u / np.linalg.norm(u), -1.0, 1.0)))


def test_a_look_at_point_goal_turns_the_hand_onto_it_and_a_nan_point_is_refused(rig):
    from geometry_msgs.msg import PointStamped

    def edit(data):
        ee = data["tasks"][0]
        ee["orientation_cost"] = 0.0  # the hand's position only (and firmly): look_at owns its orientation
        ee["position_cost"] = 100.0
        data["tasks"].insert(1, {"name": "look", "type": "look_at", "frame": TIP, "axis": "z", "priority": 1})

    rig.start_mock()
    rig.start_ik(write_config(rig.log_dir, edit=edit, node={"activation_timeout": 20.0}))
    rig.activate()
    pub = _publisher(rig, PointStamped, "look/target_point")
    rig.wait_mode("waiting_for_goal", WAIT, since=rig.events["activate_request"])
    q0 = rig.measured()
    p0 = _frame(q0, TIP).translation

    bad = PointStamped()
    bad.header.frame_id = ROOT_FRAME
    bad.point.x, bad.point.y, bad.point.z = float("nan"), 0.0, 0.0
    rejected = rig.last_status().goals_rejected
    pub.publish(bad)
    rig.wait_status(lambda s: s.goals_rejected > rejected, WAIT, "the NaN point counted as rejected")
    assert np.abs(rig.measured() - q0).max() < 1e-9  # nothing moved: no goal yet

    for frame, point in ((ROOT_FRAME, p0 + [0.3, 0.25, -0.35]), (TIP, [0.15, 0.0, 0.4])):
        msg = PointStamped()
        msg.header.frame_id = frame
        msg.point.x, msg.point.y, msg.point.z = (float(v) for v in point)
        world = np.array(point, dtype=float)
        if frame == TIP:  # the node resolves it at its last command: send it with the hand still, resolve it there
            q_still = _wait_commands_still(rig)
            world = _frame(q_still, TIP).act(world)
        pub.publish(msg)
        # at rest with both tasks met: the hand's z axis on the point, the hand back where it was (at one
        # priority the two trade during the turn: the hand moves up to a few cm, then returns)
        rig.wait(lambda: _pointing_angle(rig.measured(), world) < np.radians(1.0)
                 and np.linalg.norm(_frame(rig.measured(), TIP).translation - p0) < 2e-3, WAIT,
                 f"the hand's z axis within 1 deg of the point given in {frame}, the hand within 2 mm of its place")
    rig.check()


def test_a_relative_frame_pose_goal_in_its_reference_frame_is_reached_and_another_frame_refused(rig):
    from geometry_msgs.msg import PoseStamped

    def edit(data):
        ee = data["tasks"][0]
        ee["position_cost"] = ee["orientation_cost"] = 0.0  # the rel task owns the hand
        data["tasks"].insert(1, {"name": "rel", "type": "relative_frame", "frame": TIP, "reference": "panda_link1",
                                 "priority": 1})

    rig.start_mock()
    rig.start_ik(write_config(rig.log_dir, edit=edit, node={"activation_timeout": 20.0}))
    rig.activate()
    pub = _publisher(rig, PoseStamped, "rel/target_pose")
    rig.wait_mode("waiting_for_goal", WAIT, since=rig.events["activate_request"])
    q0 = rig.measured()
    T_ref_hand = _frame(q0, "panda_link1").actInv(_frame(q0, TIP))
    goal = pin.SE3(T_ref_hand.rotation @ pin.exp3(np.array([0.0, 0.3, 0.0])), T_ref_hand.translation + [0.05, 0.0, -0.06])

    wrong = rig.pose_msg(goal, ROOT_FRAME)
    rejected = rig.last_status().goals_rejected
    pub.publish(wrong)
    rig.wait_status(lambda s: s.goals_rejected > rejected, WAIT, "the goal in panda_link0 refused")
    rig.wait(lambda: "expected 'panda_link1' (the task's reference frame" in rig.ik.log(), WAIT, "the reason logged")

    pub.publish(rig.pose_msg(goal, "panda_link1"))

    def error():
        q = rig.measured()
        T = _frame(q, "panda_link1").actInv(_frame(q, TIP))
        return np.linalg.norm(T.translation - goal.translation), np.linalg.norm(pin.log3(goal.rotation.T @ T.rotation))

    rig.wait(lambda: error()[0] < 1e-3 and error()[1] < 1e-3, WAIT, "the relative pose reached (1 mm, 1 mrad)")
    rig.check()
