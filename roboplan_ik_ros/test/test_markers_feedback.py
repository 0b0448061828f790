"""Interactive target markers (issue 30, item 5): what RViz's feedback does (node/target_marker_sync.py) and the
marker following goals from other sources (node/markers.py InteractiveTargets.show_goals), with feedback messages
in the order RViz sends them (interactive_markers is not installed: the server is test_node_markers' recorder).

RViz's release sends POSE_UPDATE and MOUSE_UP back to back; behind the server's default feedback queue (depth 1)
the MOUSE_UP replaced the POSE_UPDATE and the goal stayed a frame (30 mm) behind where RViz showed the marker.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from geometry_msgs.msg import Pose
from visualization_msgs.msg import InteractiveMarkerFeedback as Feedback

from roboplan_ik_ros.node import markers
from roboplan_ik_ros.node.message_conversions import pose_from_se3, se3_from_pose
from roboplan_ik_ros.node.target_marker_sync import DRAG_IDLE_S, POSE_MATCH_TOLERANCE, TargetMarkerSync, same_pose
from test_node_markers import FakeServer

FRAME = "panda_link0"
START = pin.SE3(pin.utils.rotate("x", np.pi), np.array([0.4, 0.0, 0.5]))
STEP = np.array([0.03, 0.0, 0.0])  # [m] one mouse frame of a quick drag along x


def _at(k: int) -> pin.SE3:
    """The marker's pose ``k`` mouse frames into the drag."""
    return pin.SE3(START.rotation, START.translation + k * STEP)


def _feedback(event: int, T: pin.SE3, name: str = "ee") -> Feedback:
    """A feedback message as RViz sends it: the marker's pose in its frame with every event."""
    fb = Feedback(client_id="/rviz2/InteractiveMarkers", marker_name=name, control_name="move_x", event_type=event)
    fb.header.frame_id = FRAME
    pose_from_se3(T, fb.pose)
    return fb


def _goals(sync: TargetMarkerSync, messages, now: float = 0.0) -> list[pin.SE3]:
    out = []
    for fb in messages:
        goal = sync.on_feedback(fb, now)
        if goal is not None:
            assert goal.header.frame_id == FRAME
            out.append(se3_from_pose(goal.pose))
    return out


def _placed_sync() -> TargetMarkerSync:
    sync = TargetMarkerSync(FRAME)
    sync.placed("ee", pose_from_se3(START))
    return sync


def test_a_release_whose_pose_update_was_replaced_ends_the_goal_at_the_marker():
    """MOUSE_DOWN, two mouse frames, then the release's POSE_UPDATE lost behind its MOUSE_UP: the goal is the
    MOUSE_UP's pose, where RViz shows the marker, not the frame before it."""
    received = [_feedback(Feedback.MOUSE_DOWN, _at(0)), _feedback(Feedback.POSE_UPDATE, _at(1)),
                _feedback(Feedback.MOUSE_UP, _at(2))]  # POSE_UPDATE at _at(2) never arrived
    goals = _goals(_placed_sync(), received)
    assert len(goals) == 2
    assert np.allclose(goals[-1].translation, _at(2).translation, atol=POSE_MATCH_TOLERANCE), \
        f"goal {goals[-1].translation} stayed behind the marker at {_at(2).translation}"


def test_a_whole_release_gives_each_pose_once():
    received = [_feedback(Feedback.MOUSE_DOWN, _at(0)), _feedback(Feedback.POSE_UPDATE, _at(1)),
                _feedback(Feedback.POSE_UPDATE, _at(2)), _feedback(Feedback.MOUSE_UP, _at(2))]
    goals = _goals(_placed_sync(), received)
    assert [g.translation[0] for g in goals] == pytest.approx([_at(1).translation[0], _at(2).translation[0]])


def test_a_click_on_the_marker_sets_no_goal():
    """MOUSE_DOWN, MOUSE_UP at the pose the marker was placed at, BUTTON_CLICK: no goal (no goal, no motion)."""
    received = [_feedback(Feedback.MOUSE_DOWN, START), _feedback(Feedback.MOUSE_UP, START),
                _feedback(Feedback.BUTTON_CLICK, START), _feedback(Feedback.KEEP_ALIVE, START)]
    assert _goals(_placed_sync(), received) == []


def test_the_marker_follows_a_goal_from_elsewhere_but_not_while_dragged():
    sync = _placed_sync()
    elsewhere = _at(1)  # a ~/ee/target_pose goal, 30 mm from the marker
    shown = sync.pose_to_show("ee", elsewhere, now=0.0)
    assert shown is not None and same_pose(shown, pose_from_se3(elsewhere))
    assert sync.pose_to_show("ee", elsewhere, now=0.0) is None, "already there: no second move"
    sync.on_feedback(_feedback(Feedback.MOUSE_DOWN, elsewhere), now=1.0)
    assert sync.pose_to_show("ee", _at(3), now=1.0) is None, "moved under the user's drag"
    sync.on_feedback(_feedback(Feedback.MOUSE_UP, elsewhere), now=1.5)
    shown = sync.pose_to_show("ee", _at(3), now=1.5)
    assert shown is not None and same_pose(shown, pose_from_se3(_at(3)))


def test_a_drag_whose_mouse_up_was_lost_ends_after_the_idle_time():
    sync = _placed_sync()
    sync.on_feedback(_feedback(Feedback.POSE_UPDATE, _at(1)), now=0.0)
    assert sync.pose_to_show("ee", _at(4), now=0.5 * DRAG_IDLE_S) is None
    shown = sync.pose_to_show("ee", _at(4), now=1.5 * DRAG_IDLE_S)
    assert shown is not None and same_pose(shown, pose_from_se3(_at(4)))


def test_same_pose_takes_q_and_minus_q_and_rviz_float32_rounding():
    pose = pose_from_se3(START)
    flipped = Pose()
    flipped.position = pose.position
    o = pose.orientation
    flipped.orientation.x, flipped.orientation.y, flipped.orientation.z, flipped.orientation.w = -o.x, -o.y, -o.z, -o.w
    assert same_pose(pose, flipped)
    rounded = pose_from_se3(pin.SE3(START.rotation, START.translation.astype(np.float32).astype(float)))
    assert same_pose(pose, rounded)
    assert not same_pose(pose, pose_from_se3(_at(1)))
    turned = pose_from_se3(pin.SE3(START.rotation @ pin.utils.rotate("z", 10 * POSE_MATCH_TOLERANCE), START.translation))
    assert not same_pose(pose, turned)


@pytest.fixture
def targets(monkeypatch):
    monkeypatch.setattr(markers, "InteractiveMarkerServer", FakeServer)
    goals = []
    it = markers.InteractiveTargets(None, "/ik/targets", FRAME, 0.1, lambda name, ps: goals.append((name, ps)))
    it.set_targets([("ee", START)])
    return it, goals


def test_the_server_keeps_a_release_in_its_feedback_queue(targets):
    """The feedback subscription holds at least a release's POSE_UPDATE and MOUSE_UP (the default held one)."""
    it, _ = targets
    assert it.server.feedback_sub_qos is not None and it.server.feedback_sub_qos.depth >= 2


def test_interactive_targets_send_the_release_and_show_goals_from_elsewhere(targets, monkeypatch):
    it, goals = targets
    (_, callback), = it.server.inserted
    for fb in (_feedback(Feedback.MOUSE_DOWN, START), _feedback(Feedback.MOUSE_UP, _at(1))):
        callback(fb)
    assert len(goals) == 1 and goals[0][0] == "ee" and same_pose(goals[0][1].pose, pose_from_se3(_at(1)))
    applied = it.server.applied
    it.show_goals([("ee", _at(2))])  # a ~/ee/target_pose goal
    assert [name for name, _ in it.server.poses] == ["ee"] and same_pose(it.server.poses[0][1], pose_from_se3(_at(2)))
    assert it.server.applied == applied + 1
    it.show_goals([("ee", _at(2))])
    assert len(it.server.poses) == 1 and it.server.applied == applied + 1, "moved to where it already is"
    callback(_feedback(Feedback.MOUSE_DOWN, _at(2)))
    it.show_goals([("ee", _at(3))])
    assert len(it.server.poses) == 1, "moved while the user drags it"


def test_show_goals_skips_a_marker_the_server_does_not_hold(targets):
    it, _ = targets
    applied = it.server.applied
    it.show_goals([("elbow", _at(1))])
    assert it.server.poses == [] and it.server.applied == applied
