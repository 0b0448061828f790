"""RViz markers and the optional-library seams (interactive_markers, diagnostic_updater), with
stand-ins that record calls in the shape of the real APIs (no DDS)."""

import numpy as np
import pinocchio as pin
from visualization_msgs.msg import InteractiveMarkerFeedback, Marker

from roboplan_ik_ros.node import diagnostics, markers


def test_goal_and_box_markers():
    T = pin.SE3(pin.rpy.rpyToMatrix(0.0, 0.0, np.pi / 2), np.array([0.4, 0.1, 0.5]))
    m = markers.goal_markers("ee", T, "panda_link0", 0.1, 3)
    assert m.type == Marker.LINE_LIST and m.ns == "goal/ee" and m.id == 3 and len(m.points) == 6
    x_tip = m.points[1]
    assert np.allclose([x_tip.x, x_tip.y, x_tip.z], [0.4, 0.2, 0.5])  # x axis rotated onto +y
    b = markers.box_marker("workspace", np.array([0.2, -0.5, 0.2]), np.array([0.8, 0.5, np.inf]), "panda_link0", 0)
    assert b.type == Marker.CUBE and np.isclose(b.scale.x, 0.6) and np.isclose(b.scale.y, 1.0)
    assert np.isfinite(b.scale.z) and b.color.a < 0.5


class FakeServer:
    """Records calls in the shape of interactive_markers' InteractiveMarkerServer (rolling/kilted:
    ``(node, namespace, *, update_pub_qos, feedback_sub_qos)``, insert, setPose, applyChanges, shutdown)."""

    def __init__(self, node, namespace, *, update_pub_qos=None, feedback_sub_qos=None):
        self.namespace, self.inserted, self.applied = namespace, [], 0
        self.feedback_sub_qos, self.poses = feedback_sub_qos, []

    def insert(self, marker, *, feedback_callback=None, feedback_type=None):
        self.inserted.append((marker, feedback_callback))

    def setPose(self, name, pose, header=None):
        known = any(marker.name == name for marker, _ in self.inserted)
        if known:
            self.poses.append((name, pose))
        return known

    def applyChanges(self):
        self.applied += 1

    def shutdown(self):
        pass


def test_interactive_targets(monkeypatch):
    monkeypatch.setattr(markers, "InteractiveMarkerServer", FakeServer)
    goals = []
    it = markers.InteractiveTargets(None, "/ik/targets", "panda_link0", 0.1, lambda n, ps: goals.append((n, ps)))
    it.set_targets([("ee", pin.SE3(np.eye(3), np.array([0.3, 0.0, 0.5])))])
    (marker, callback), = it.server.inserted
    assert marker.name == "ee" and len(marker.controls) == 6 and it.server.applied == 1
    for c in marker.controls:
        q = c.orientation
        assert np.isclose(q.w**2 + q.x**2 + q.y**2 + q.z**2, 1.0)
    fb = InteractiveMarkerFeedback(marker_name="ee", event_type=InteractiveMarkerFeedback.POSE_UPDATE)
    fb.header.frame_id = "panda_link0"
    fb.pose.position.x = 0.35
    callback(fb)
    callback(InteractiveMarkerFeedback(marker_name="ee", event_type=InteractiveMarkerFeedback.MOUSE_DOWN))
    assert len(goals) == 1 and goals[0][0] == "ee" and goals[0][1].pose.position.x == 0.35


class FakeStatusWrapper:
    def __init__(self):
        self.level, self.message, self.values = None, "", []

    def summary(self, level, message):
        self.level, self.message = level, message

    def add(self, key, value):
        self.values.append((key, value))


class FakeUpdater:
    def __init__(self, node, period=1.0):
        self.tasks, self.hwid, self.period = [], None, period

    def setHardwareID(self, hwid):
        self.hwid = hwid

    def add(self, name, fn):
        self.tasks.append((name, fn))


class FakeModule:
    Updater = FakeUpdater


class FakeNode:
    def get_logger(self):
        raise AssertionError("no fallback log expected")


def test_diagnostics_through_diagnostic_updater(monkeypatch):
    monkeypatch.setattr(diagnostics, "diagnostic_updater", FakeModule)
    report = lambda: (diagnostics.WARN, "holding: stale", [("rate_hz", "0.0")])  # noqa: E731
    rep = diagnostics.DiagnosticsReporter(FakeNode(), "control loop", report, 0.5)
    (name, fn), = rep._updater.tasks
    stat = fn(FakeStatusWrapper())
    assert name == "control loop" and rep._updater.period == 0.5
    assert stat.level == diagnostics.WARN and stat.message == "holding: stale" and stat.values == [("rate_hz", "0.0")]


class _Box:
    """A box barrier as the markers see it (Barrier.world_box)."""

    def __init__(self, name, lo, hi):
        self.name, self.p_min, self.p_max = name, np.array(lo, dtype=float), np.array(hi, dtype=float)

    @property
    def world_box(self):
        return self.p_min, self.p_max


def _ball(name, x):
    from roboplan_ik_ros.core.model.obstacles import Obstacle

    return Obstacle(name=name, shape="sphere", dims=(0.05,), position=(x, 0.0, 0.3))


def _summary(arr):
    return [(m.ns, m.id, m.type, m.action, round(m.pose.position.x, 9), round(m.scale.x, 9)) for m in arr.markers]


def test_marker_cache_rebuilds_what_changed_and_equals_the_whole_array():
    """~/markers' cache: the goals each time, the boxes when their bounds change, the obstacles on invalidate();
    always the same array as building everything anew."""
    cache = markers.MarkerCache("panda_link0", 0.1)
    box = _Box("workspace", [0.2, -0.5, 0.1], [0.8, 0.5, 0.9])
    obstacles = [_ball("ball", 0.5)]
    goal = pin.SE3(np.eye(3), np.array([0.4, 0.0, 0.5]))

    def check(goals):
        arr = cache.array(goals, [box], obstacles)
        assert _summary(arr) == _summary(markers.scene_markers(goals, [box], obstacles, "panda_link0", 0.1))
        return arr

    first = check([("ee", goal)])
    assert first.markers[0].action == Marker.DELETEALL
    moved = check([("ee", pin.SE3(np.eye(3), np.array([0.45, 0.0, 0.5])))])
    assert moved.markers[-1] is first.markers[-1]  # the obstacle's marker: not rebuilt for a goal
    box.p_max[0] = 0.7  # a runtime parameter moved the wall: rebuilt
    assert np.isclose(check([("ee", goal)]).markers[2].scale.x, 0.5)
    obstacles[0] = _ball("ball", 0.6)
    stale = cache.array([("ee", goal)], [box], obstacles)
    assert np.isclose(stale.markers[-1].pose.position.x, 0.5)  # not told: the cached one
    cache.invalidate()
    assert np.isclose(check([("ee", goal)]).markers[-1].pose.position.x, 0.6)


def test_perceived_cloud_is_a_pointcloud2_our_decoder_reads_back():
    from roboplan_ik_ros.core.model.point_cloud import PointCloudLayout, PointField as Field, decode_points

    points = np.random.default_rng(0).uniform(-1.0, 1.0, (2000, 3))
    msg = markers.perceived_cloud(points, "panda_link0")
    assert msg.header.frame_id == "panda_link0" and msg.width == 2000 and msg.height == 1 and msg.is_dense
    layout = PointCloudLayout(fields=[Field(f.name, f.offset, f.datatype, f.count) for f in msg.fields],
                              width=msg.width, height=msg.height, point_step=msg.point_step, row_step=msg.row_step,
                              is_bigendian=msg.is_bigendian, is_dense=msg.is_dense)
    decoded = decode_points(layout, bytes(msg.data))
    assert np.allclose(decoded.points, points, atol=1e-6)
    assert markers.perceived_cloud(np.zeros((0, 3)), "panda_link0").width == 0
