"""What an interactive target marker's feedback does, and where the marker is shown: the logic of
:class:`~.markers.InteractiveTargets`, without the interactive_markers server (a seam testable without it).

RViz sends, for one drag: MOUSE_DOWN, POSE_UPDATEs while the mouse moves, then POSE_UPDATE and MOUSE_UP back to
back on release; every message carries the marker's pose. A POSE_UPDATE is a goal, and so is a MOUSE_UP whose pose
is not the one the server already holds (the release's POSE_UPDATE was lost or never sent): the arm ends where RViz
shows the marker. A MOUSE_UP at the held pose (a click, or a release after its POSE_UPDATE) is no new goal: a click
on the marker never sets a goal of its own. BUTTON_CLICK, MENU_SELECT and KEEP_ALIVE are no goals.

The marker follows the active goal whatever set it (a ``~/<task>/target_pose`` goal, a service): :meth:`pose_to_show`
says where to move it, except while the user drags it (MOUSE_DOWN until MOUSE_UP; a drag whose MOUSE_UP never came
ends after :data:`DRAG_IDLE_S` without feedback) and when it is already there.
"""

from __future__ import annotations

import threading

import numpy as np
import pinocchio as pin
from geometry_msgs.msg import Pose, PoseStamped
from visualization_msgs.msg import InteractiveMarkerFeedback

from .message_conversions import pose_from_se3

# RViz holds a marker's pose in float32 (~1e-7 relative): poses closer than this (m, and rad of rotation) are one pose
POSE_MATCH_TOLERANCE = 1e-5
DRAG_IDLE_S = 2.0  # [s] without feedback from a marker, its drag is over (a lost MOUSE_UP)

_GOAL_EVENTS = (InteractiveMarkerFeedback.POSE_UPDATE, InteractiveMarkerFeedback.MOUSE_UP)


def _position(pose: Pose) -> np.ndarray:
    return np.array([pose.position.x, pose.position.y, pose.position.z])


def _quaternion_wxyz(pose: Pose) -> np.ndarray:
    o = pose.orientation
    q = np.array([o.w, o.x, o.y, o.z])
    norm = np.linalg.norm(q)
    return q / norm if norm > 0.0 else q


def same_pose(a: Pose, b: Pose, tolerance: float = POSE_MATCH_TOLERANCE) -> bool:
    """True when the positions are within ``tolerance`` [m] and the rotations within ``tolerance`` [rad]
    (q and -q are one rotation)."""
    if np.linalg.norm(_position(a) - _position(b)) > tolerance:
        return False
    cos_half = min(1.0, abs(float(np.dot(_quaternion_wxyz(a), _quaternion_wxyz(b)))))
    return 2.0 * np.arccos(cos_half) <= tolerance


class TargetMarkerSync:
    """Per marker: the pose the server holds (what we placed there, or the last POSE_UPDATE, which the server applies
    itself), and whether the user drags it. Thread-safe: feedback arrives in the executor's thread, goals are shown
    from the reporting thread. ``frame``: the markers' frame; ``now`` arguments: monotonic seconds."""

    def __init__(self, frame: str) -> None:
        self.frame = frame
        self._held: dict[str, Pose] = {}
        self._drag_feedback_at: dict[str, float] = {}  # markers being dragged: the time of their last feedback
        self._lock = threading.Lock()

    def placed(self, name: str, pose: Pose) -> None:
        """The marker was inserted or moved at ``pose`` (in :attr:`frame`) by us."""
        with self._lock:
            self._held[name] = _copy(pose)

    def forget(self, name: str) -> None:
        """The server does not hold marker ``name`` (any more): no pose is known for it."""
        with self._lock:
            self._held.pop(name, None)

    def on_feedback(self, fb: InteractiveMarkerFeedback, now: float) -> PoseStamped | None:
        """The goal this feedback gives (its header and pose), or None."""
        name, event = fb.marker_name, fb.event_type
        with self._lock:
            if event == InteractiveMarkerFeedback.MOUSE_UP:
                self._drag_feedback_at.pop(name, None)
            elif event in (InteractiveMarkerFeedback.MOUSE_DOWN, InteractiveMarkerFeedback.POSE_UPDATE):
                self._drag_feedback_at[name] = now
            if event not in _GOAL_EVENTS:
                return None
            held = self._held.get(name)
            in_frame = fb.header.frame_id in ("", self.frame)
            if event == InteractiveMarkerFeedback.MOUSE_UP and held is not None and in_frame \
                    and same_pose(fb.pose, held):
                return None  # a click, or the release after its POSE_UPDATE: no new goal
            if event == InteractiveMarkerFeedback.POSE_UPDATE and in_frame:
                self._held[name] = _copy(fb.pose)  # the server applies a POSE_UPDATE to its marker itself
        goal = PoseStamped()
        goal.header = fb.header
        goal.pose = _copy(fb.pose)
        return goal

    def pose_to_show(self, name: str, T_frame_goal: pin.SE3, now: float) -> Pose | None:
        """Where to move marker ``name`` to show the active goal ``T_frame_goal`` (in :attr:`frame`), or None: it is
        being dragged, or it is already there. A returned pose counts as placed (the caller sets it)."""
        pose = pose_from_se3(T_frame_goal)
        with self._lock:
            dragged_at = self._drag_feedback_at.get(name)
            if dragged_at is not None:
                if now - dragged_at < DRAG_IDLE_S:
                    return None
                del self._drag_feedback_at[name]
            held = self._held.get(name)
            if held is not None and same_pose(pose, held):
                return None
            self._held[name] = pose
        return _copy(pose)


def _copy(pose: Pose) -> Pose:
    out = Pose()
    out.position.x, out.position.y, out.position.z = pose.position.x, pose.position.y, pose.position.z
    o = pose.orientation
    out.orientation.x, out.orientation.y, out.orientation.z, out.orientation.w = o.x, o.y, o.z, o.w
    return out
