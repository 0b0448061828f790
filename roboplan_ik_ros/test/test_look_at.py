"""The look_at task (core/oink/tasks/look_at_task.py): the Panda's hand z axis (a wrist camera) turns to
point at world points, a posture task below it keeping the arm near its default pose, closed loop through
OinkController; also from pointing straight away (where ``a x u`` would already be zero) and at a given
distance. Its Jacobian against finite differences at angles from 1e-7 to 3.1 rad; bad keys refused."""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
import pytest

from models import finite_difference, robot, scene
from roboplan_ik_ros.core.config import load_config
from roboplan_ik_ros.core.errors import InvalidInputError
from roboplan_ik_ros.core.model.scene_config import scene_from_config
from roboplan_ik_ros.core.oink.controller import OinkController
from roboplan_ik_ros.core.oink.robot import Robot
from roboplan_ik_ros.core.oink.tasks.look_at_task import LookAtTask

HAND = "panda_hand_tcp"
DT = 0.01
ONE_DEGREE = math.radians(1.0)


def _controller(look: dict, q=None) -> OinkController:
    cfg = load_config({"robot": {"group": "arm"},
                       "tasks": [{"name": "camera", "type": "look_at", "frame": HAND, **look},
                                 {"name": "posture", "type": "configuration", "weights": 1e-2, "priority": 2}],
                       "limits": [{"type": "position"}, {"type": "velocity"}]})
    r = robot("panda")
    s = scene_from_config(r.urdf_xml, r.srdf_xml, cfg.robot, r.package_paths)
    return OinkController(s, cfg, DT, s.named_configuration("default") if q is None else q)


def _angle(s, q, point, axis=(0.0, 0.0, 1.0)) -> float:
    """The angle [rad] between the hand's axis and the line from the hand to ``point``."""
    T = s.frame_pose(q, HAND)
    a, d = T.rotation @ np.asarray(axis), np.asarray(point) - T.translation
    return math.acos(np.clip(a @ d / np.linalg.norm(d), -1.0, 1.0))


def _kinematics(s, q) -> pin.Data:
    data = s.model.createData()
    pin.computeJointJacobians(s.model, data, q)
    pin.updateFramePlacements(s.model, data)
    return data


def _run(ctrl, q, steps=400):
    for _ in range(steps):
        out = ctrl.step(q)
        assert out.result.ok, out.result.status
        q = out.q_next
    return q


@pytest.mark.parametrize("point", [[0.6, 0.0, 0.0], [0.3, 0.5, 0.2], [0.2, -0.4, 0.1], [0.3, 0.1, 1.2]])
def test_the_hand_axis_ends_pointing_at_the_point(point):
    ctrl = _controller({"axis": "z"})
    s, q = ctrl.scene, ctrl.scene.named_configuration("default")
    start = _angle(s, q, point)
    ctrl.tasks["camera"].set_target(np.array(point))
    q = _run(ctrl, q)
    assert _angle(s, q, point) < ONE_DEGREE, f"from {math.degrees(start):.1f} deg"
    assert ctrl.tasks["camera"].angle == pytest.approx(_angle(s, q, point), abs=1e-6)
    # the posture kept it sane: no joint went far from the default pose (measured <= 1.32 rad, from 172 deg)
    assert np.abs(s.difference(s.named_configuration("default"), q)[:7]).max() < 2.0


def test_from_pointing_straight_away_it_turns_around():
    """a x u is zero there too; the rotation-vector error is pi and the hand turns to the point."""
    ctrl = _controller({"axis": "z"})
    s, q = ctrl.scene, ctrl.scene.named_configuration("default")
    T = s.frame_pose(q, HAND)
    behind = T.translation - 0.5 * T.rotation[:, 2]  # on the axis, behind the hand
    assert _angle(s, q, behind) > math.pi - 1e-6
    task = ctrl.tasks["camera"]
    task.set_target(behind)
    task.update(q, _kinematics(s, q))
    assert np.linalg.norm(task.error) == pytest.approx(math.pi) and task.jacobian.any()
    q = _run(ctrl, q, 600)
    assert _angle(s, q, behind) < ONE_DEGREE


def test_looks_from_the_asked_distance():
    point = np.array([0.5, 0.2, 0.1])
    ctrl = _controller({"axis": "z", "point": point.tolist(), "distance": 0.3, "distance_cost": 1.0})
    s = ctrl.scene
    q = _run(ctrl, s.named_configuration("default"))
    assert _angle(s, q, point) < ONE_DEGREE
    assert np.linalg.norm(point - s.frame_pose(q, HAND).translation) == pytest.approx(0.3, abs=1e-3)


def test_other_axes_and_the_default_target_hold_still():
    ctrl = _controller({"axis": [1.0, 0.0, 1.0]})  # no point: the one 1 m ahead along the axis at the start
    s, q0 = ctrl.scene, ctrl.scene.named_configuration("default")
    out = ctrl.step(q0)
    assert np.abs(out.dq).max() < 1e-9
    point = [0.4, -0.3, 0.3]
    ctrl.tasks["camera"].set_target(np.array(point))
    q = _run(ctrl, q0)
    assert _angle(s, q, point, np.array([1.0, 0.0, 1.0]) / math.sqrt(2.0)) < ONE_DEGREE


def test_jacobian_is_the_derivative_of_the_error_at_any_angle():
    s = scene("panda")
    group = s.group("arm")
    rng = np.random.default_rng(8)
    data = s.model.createData()
    for angle in (1e-7, 1e-3, 0.4, 1.6, 2.6, 3.1):
        q = s.random_configuration(rng, group)
        T = s.frame_pose(q, HAND)
        a = T.rotation[:, 2]
        n = np.cross(a, rng.normal(size=3))
        point = T.translation + rng.uniform(0.2, 1.0) * (pin.exp3(n / np.linalg.norm(n) * angle) @ a)
        task = LookAtTask(Robot(s, group), HAND, point, axis="z", distance=0.5)

        def error(qq):
            pin.computeJointJacobians(s.model, data, qq)
            pin.updateFramePlacements(s.model, data)
            task.update(qq, data)
            return task.error.copy()

        expected = finite_difference(s, group.v_indices, q, error)
        error(q)
        assert task.angle == pytest.approx(angle, abs=1e-9)
        np.testing.assert_allclose(np.linalg.norm(task.error[:3]), angle, atol=1e-9)  # |phi| is the angle
        np.testing.assert_allclose(task.jacobian, expected, atol=1e-7)  # measured <= 6e-9


@pytest.mark.parametrize("keys, message", [
    ({"frame": ""}, r"tasks\[0\]\.frame: required"),
    ({"frame": "no_such_link"}, r"frame: unknown frame 'no_such_link'"),
    ({"axis": "w"}, r"tasks\[0\]\.axis: unknown axis 'w'"),
    ({"axis": [0, 0, 0]}, r"tasks\[0\]\.axis: expected a nonzero 3-vector"),
    ({"point": [1, 2]}, r"tasks\[0\]\.point: expected 3 values"),
    ({"distance": 0.0}, r"tasks\[0\]\.distance: expected a finite number > 0"),
    ({"pointing_cost": -1.0}, r"tasks\[0\]\.pointing_cost: expected a finite number >= 0"),
    ({"orientation_cost": 1.0}, r"tasks\[0\]\.orientation_cost: does not apply to type 'look_at'"),
])
def test_bad_keys_are_refused_by_name(keys, message):
    with pytest.raises(InvalidInputError, match=message):
        _controller({"frame": HAND, **keys})


def test_bad_points_are_refused_and_the_old_target_kept():
    ctrl = _controller({"point": [0.5, 0.0, 0.0]})
    task = ctrl.tasks["camera"]
    for bad in ([0.0, np.nan, 0.0], [1.0, 2.0], "there"):
        with pytest.raises(InvalidInputError, match="camera.target"):
            task.set_target(bad)
    np.testing.assert_array_equal(task.target, [0.5, 0.0, 0.0])
    assert LookAtTask.goal == "point"


def test_a_target_at_the_frame_origin_asks_nothing():
    s = scene("panda")
    group = s.group("arm")
    q = s.named_configuration("default")
    task = LookAtTask(Robot(s, group), HAND, s.frame_pose(q, HAND).translation, distance=0.2)
    task.update(q, _kinematics(s, q))
    assert not task.error.any() and not task.jacobian.any()
