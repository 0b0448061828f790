"""RViz: goal, barrier-box and obstacle markers (visualization_msgs), the perceived cloud (sensor_msgs/PointCloud2)
and optional 6-DOF interactive targets.

Plain markers go out as one MarkerArray on a transient-local topic, so RViz shows the latest
goals and the barrier boxes whenever it connects. Interactive markers use the real
``interactive_markers`` package where it is installed; without it one log line says so.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np
import pinocchio as pin
from geometry_msgs.msg import Point, PoseStamped
from rclpy.qos import QoSProfile
from std_msgs.msg import ColorRGBA
from sensor_msgs.msg import PointCloud2
from visualization_msgs.msg import (InteractiveMarker, InteractiveMarkerControl, InteractiveMarkerFeedback, Marker,
                                    MarkerArray)

from .message_conversions import pose_from_se3, xyz_cloud
from .target_marker_sync import TargetMarkerSync

try:  # the real library where it is installed (apt ROS 2); not on PyPI
    from interactive_markers import InteractiveMarkerServer  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - depends on the install
    InteractiveMarkerServer = None

HAVE_INTERACTIVE_MARKERS = InteractiveMarkerServer is not None
FEEDBACK_QUEUE_DEPTH = 100  # a drag's feedback backlog while the executor is busy (the server's update queue: 100)

_AXIS_COLORS = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))
# The control's orientation (w = 1, x, y, z below, normalized) picks the axis its x axis acts on:
# the usual 6-DOF marker of the interactive_markers tutorials.
_CONTROL_AXES = (("x", (1.0, 0.0, 0.0)), ("y", (0.0, 0.0, 1.0)), ("z", (0.0, 1.0, 0.0)))
_S = float(1.0 / np.sqrt(2.0))


def goal_markers(name: str, T_world_goal: pin.SE3, frame: str, scale: float, marker_id: int) -> Marker:
    """The goal of frame task ``name`` as three colored axes (one LINE_LIST marker)."""
    m = Marker(ns=f"goal/{name}", id=marker_id, type=Marker.LINE_LIST, action=Marker.ADD)
    m.header.frame_id = frame
    m.pose.orientation.w = 1.0
    m.scale.x = 0.08 * scale
    o = T_world_goal.translation
    for axis, (r, g, b) in enumerate(_AXIS_COLORS):
        tip = o + scale * T_world_goal.rotation[:, axis]
        m.points += [Point(x=float(o[0]), y=float(o[1]), z=float(o[2])),
                     Point(x=float(tip[0]), y=float(tip[1]), z=float(tip[2]))]
        c = ColorRGBA(r=r, g=g, b=b, a=1.0)
        m.colors += [c, c]
    return m


def box_marker(name: str, p_min: np.ndarray, p_max: np.ndarray, frame: str, marker_id: int) -> Marker:
    """A translucent CUBE for the box of a PositionBarrier (unbounded axes drawn 4 m wide)."""
    lo = np.where(np.isfinite(p_min), p_min, -2.0)
    hi = np.where(np.isfinite(p_max), p_max, 2.0)
    c = 0.5 * (lo + hi)
    m = Marker(ns=f"barrier/{name}", id=marker_id, type=Marker.CUBE, action=Marker.ADD)
    m.header.frame_id = frame
    m.pose.position.x, m.pose.position.y, m.pose.position.z = (float(v) for v in c)
    m.pose.orientation.w = 1.0
    m.scale.x, m.scale.y, m.scale.z = (float(v) for v in (hi - lo))
    m.color = ColorRGBA(r=0.2, g=0.6, b=1.0, a=0.15)
    return m


def obstacle_markers(obstacle, root: str, marker_id: int) -> list[Marker]:
    """An obstacle (core.model.obstacles.Obstacle) as RViz markers in its frame (the root frame for
    a world obstacle, the link for an attached one): CUBE, SPHERE, CYLINDER, a capsule as a
    cylinder with two spheres, a mesh file as MESH_RESOURCE, an in-memory mesh as TRIANGLE_LIST."""
    frame = root if obstacle.frame == "world" else obstacle.frame
    T = obstacle.T_frame_obstacle
    color = ColorRGBA(r=0.8, g=0.5, b=0.2, a=0.6) if obstacle.frame == "world" else ColorRGBA(r=0.3, g=0.8, b=0.3, a=0.7)

    def marker(kind: int, k: int, offset=(0.0, 0.0, 0.0)) -> Marker:
        m = Marker(ns=f"obstacle/{obstacle.name}", id=marker_id * 3 + k, type=kind, action=Marker.ADD)
        m.header.frame_id = frame
        pose_from_se3(T * pin.SE3(np.eye(3), np.array(offset, dtype=float)), m.pose)
        m.color = color
        return m

    d = [float(v) for v in obstacle.dims]
    if obstacle.shape == "box":
        m = marker(Marker.CUBE, 0)
        m.scale.x, m.scale.y, m.scale.z = d
        return [m]
    if obstacle.shape == "sphere":
        m = marker(Marker.SPHERE, 0)
        m.scale.x = m.scale.y = m.scale.z = 2.0 * d[0]
        return [m]
    if obstacle.shape in ("cylinder", "capsule"):
        m = marker(Marker.CYLINDER, 0)
        m.scale.x = m.scale.y = 2.0 * d[0]
        m.scale.z = d[1]
        out = [m]
        if obstacle.shape == "capsule":
            for k, z in ((1, 0.5 * d[1]), (2, -0.5 * d[1])):
                cap = marker(Marker.SPHERE, k, (0.0, 0.0, z))
                cap.scale.x = cap.scale.y = cap.scale.z = 2.0 * d[0]
                out.append(cap)
        return out
    if obstacle.vertices is None:  # a mesh file: RViz loads it (file path or package:// URI)
        m = marker(Marker.MESH_RESOURCE, 0)
        m.mesh_resource = obstacle.mesh if "://" in obstacle.mesh else f"file://{obstacle.mesh}"
        m.scale.x, m.scale.y, m.scale.z = (float(s) for s in obstacle.scale)
        return [m]
    m = marker(Marker.TRIANGLE_LIST, 0)
    m.scale.x, m.scale.y, m.scale.z = (float(s) for s in obstacle.scale)
    v = np.asarray(obstacle.vertices, dtype=float)
    m.points = [Point(x=float(p[0]), y=float(p[1]), z=float(p[2])) for p in v[np.asarray(obstacle.triangles).reshape(-1)]]
    return [m]


def _boxes(barriers) -> list[tuple[int, tuple[np.ndarray, np.ndarray]]]:
    """(index, (p_min, p_max)) of the barriers that keep a point in a world-frame box (Barrier.world_box)."""
    return [(k, b.world_box) for k, b in enumerate(barriers) if b.world_box is not None]


def _box_key(barriers) -> tuple:
    """What the barrier boxes' markers depend on (their bounds change with runtime parameters)."""
    return tuple((k, lo.tobytes(), hi.tobytes()) for k, (lo, hi) in _boxes(barriers))


def _fixed_markers(barriers, obstacles, root: str) -> list[Marker]:
    out = [box_marker(barriers[k].name, lo, hi, root, k) for k, (lo, hi) in _boxes(barriers)]
    for k, obstacle in enumerate(obstacles):
        out.extend(obstacle_markers(obstacle, root, k))
    return out


def scene_markers(goals, barriers, obstacles, root: str, scale: float) -> MarkerArray:
    """Everything ~/markers shows, as one array that replaces what was there (a DELETEALL first: removed
    obstacles disappear too): each (name, T_world_goal) of ``goals``, the box of each barrier that has
    one (``p_min``/``p_max``), each obstacle."""
    return MarkerArray(markers=[Marker(action=Marker.DELETEALL),
                                *(goal_markers(name, goal, root, scale, k) for k, (name, goal) in enumerate(goals)),
                                *_fixed_markers(barriers, obstacles, root)])


class MarkerCache:
    """:func:`scene_markers` for a node that republishes as goals move: the goal markers are built each time
    (one LINE_LIST per frame task), the barrier boxes and obstacles only when they changed (:meth:`invalidate`
    after an obstacle change; the boxes' bounds are compared each time). Building an obstacle's markers costs
    ~30 us: a cell of 23 obstacles republished with every goal change took ~0.7 ms of the executor's thread."""

    def __init__(self, root: str, scale: float) -> None:
        self.root, self.scale = root, scale
        self._fixed: list[Marker] | None = None
        self._box_key: tuple = ()
        self._delete_all = Marker(action=Marker.DELETEALL)

    def invalidate(self) -> None:
        """The obstacles changed: rebuild their markers next time."""
        self._fixed = None

    def array(self, goals, barriers, obstacles) -> MarkerArray:
        key = _box_key(barriers)
        if self._fixed is None or key != self._box_key:
            self._fixed, self._box_key = _fixed_markers(barriers, obstacles, self.root), key
        return MarkerArray(markers=[self._delete_all, *(goal_markers(name, goal, self.root, self.scale, k)
                                                        for k, (name, goal) in enumerate(goals)), *self._fixed])


class InteractiveTargets:
    """One 6-DOF interactive marker per frame task; dragging it calls ``on_goal(task, PoseStamped)``, and
    :meth:`show_goals` moves it to the active goal set by any other source. What a feedback message does and where
    the marker is shown is :class:`~.target_marker_sync.TargetMarkerSync`'s decision."""

    def __init__(self, node, namespace: str, frame: str, scale: float,
                 on_goal: Callable[[str, PoseStamped], None]) -> None:
        # the server's default feedback queue holds 1 message: RViz's release sends POSE_UPDATE and MOUSE_UP back
        # to back, and the MOUSE_UP replaced the POSE_UPDATE (the goal stayed a frame behind the marker)
        self.server = InteractiveMarkerServer(node, namespace, feedback_sub_qos=QoSProfile(depth=FEEDBACK_QUEUE_DEPTH))
        self.frame = frame
        self.scale = scale
        self.on_goal = on_goal
        self.sync = TargetMarkerSync(frame)

    def set_targets(self, targets: Sequence[tuple[str, pin.SE3]]) -> None:
        for name, T in targets:
            im = InteractiveMarker(name=name, description=f"{name} target", scale=2.0 * self.scale)
            im.header.frame_id = self.frame
            pose_from_se3(T, im.pose)
            for axis, (qx, qy, qz) in _CONTROL_AXES:
                for mode, word in ((InteractiveMarkerControl.ROTATE_AXIS, "rotate"),
                                   (InteractiveMarkerControl.MOVE_AXIS, "move")):
                    ctrl = InteractiveMarkerControl(name=f"{word}_{axis}", interaction_mode=mode)
                    ctrl.orientation.w, ctrl.orientation.x, ctrl.orientation.y, ctrl.orientation.z = (
                        _S, qx * _S, qy * _S, qz * _S)
                    im.controls.append(ctrl)
            self.server.insert(im, feedback_callback=self._feedback)
            self.sync.placed(name, im.pose)
        self.server.applyChanges()

    def show_goals(self, goals: Sequence[tuple[str, pin.SE3]]) -> None:
        """Move each marker to its task's active goal ``T_frame_goal`` (in ``frame``), unless the user drags it or
        it is there already."""
        moved = False
        for name, T_frame_goal in goals:
            pose = self.sync.pose_to_show(name, T_frame_goal, time.monotonic())
            if pose is None:
                continue
            if self.server.setPose(name, pose):
                moved = True
            else:  # no such marker on the server (yet): try again with the next goal
                self.sync.forget(name)
        if moved:
            self.server.applyChanges()

    def _feedback(self, fb: InteractiveMarkerFeedback) -> None:
        goal = self.sync.on_feedback(fb, time.monotonic())
        if goal is not None:
            self.on_goal(fb.marker_name, goal)

    def shutdown(self) -> None:
        self.server.shutdown()


def perceived_cloud(points: np.ndarray, root: str) -> PointCloud2:
    """The perceived cloud's kept points (world frame, (N, 3)) for ``~/perceived_cloud``: x, y, z float32, dense
    (RViz's PointCloud2 display, style Boxes at the octree resolution, draws the voxels). Built with numpy: a
    20 000-point cloud costs well under a millisecond; the CUBE_LIST marker of Point messages it replaces took 3.7 ms
    to build and 1.5 ms to convert for 5000 points (0.01 ms each for this)."""
    xyz = np.asarray(points).reshape(-1, 3)
    return xyz_cloud(xyz, len(xyz), 1, root, is_dense=True)
