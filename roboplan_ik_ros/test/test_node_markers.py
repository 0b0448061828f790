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
    def __init__(self, node, namespace):
        self.namespace, self.inserted, self.applied = namespace, [], 0

    def insert(self, marker, *, feedback_callback=None, feedback_type=None):
        self.inserted.append((marker, feedback_callback))

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
