"""The relative_frame task (core/oink/tasks/relative_frame_task.py): the pose of the Panda's hand in its
link 1 (6 joints between them: any nearby relative pose is reachable) and link 3 (joints 1-3 move both),
closed loop through OinkController; its Jacobian against finite differences far from the target
(the error uses the exact Jlog3, so they agree at any error); bad keys refused by name."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from models import finite_difference, robot, scene
from roboplan_ik_ros.core.config import load_config
from roboplan_ik_ros.core.errors import InvalidInputError
from roboplan_ik_ros.core.model.scene_config import scene_from_config
from roboplan_ik_ros.core.oink.controller import OinkController
from roboplan_ik_ros.core.oink.robot import Robot
from roboplan_ik_ros.core.oink.tasks.relative_frame_task import RelativeFrameTask

HAND, REFERENCE, LINK1 = "panda_hand_tcp", "panda_link3", "panda_link1"
DT = 0.01


def _controller(tasks: list[dict], q=None) -> OinkController:
    cfg = load_config({"robot": {"group": "arm"}, "tasks": tasks,
                       "limits": [{"type": "position"}, {"type": "velocity"}]})
    r = robot("panda")
    s = scene_from_config(r.urdf_xml, r.srdf_xml, cfg.robot, r.package_paths)
    return OinkController(s, cfg, DT, s.named_configuration("default") if q is None else q)


def _relative(s, q, reference=REFERENCE) -> pin.SE3:
    return s.frame_pose(q, reference).actInv(s.frame_pose(q, HAND))


def _relative_task(**keys) -> dict:
    return {"name": "grasp", "type": "relative_frame", "frame": HAND, "reference": REFERENCE, **keys}


def test_reaches_a_target_pose_relative_to_link1():
    ctrl = _controller([_relative_task(reference=LINK1),
                        {"name": "posture", "type": "configuration", "weights": 1e-3, "priority": 2}])
    s, q = ctrl.scene, ctrl.scene.named_configuration("default")
    start = _relative(s, q, LINK1)
    # 8 cm along the reference's own axes and 0.4 rad about a tilted axis, in the reference frame
    target = pin.SE3(start.rotation @ pin.exp3(np.array([0.2, -0.3, 0.1])), start.translation + [0.05, -0.04, 0.05])
    ctrl.tasks["grasp"].set_target(target)
    task = ctrl.tasks["grasp"]
    for _ in range(400):
        out = ctrl.step(q)
        assert out.result.ok, out.result.status
        q = out.q_next
    reached = _relative(s, q, LINK1)
    assert np.linalg.norm(reached.translation - target.translation) < 1e-4
    assert np.linalg.norm(pin.log3(target.rotation @ reached.rotation.T)) < 1e-3
    assert task.position_error < 1e-4 and task.orientation_error < 1e-3  # what the task reports agrees



def test_a_far_target_is_saturated_as_a_frame_tasks_is_and_still_reached():
    """max_position_error / max_rotation_error (as the frame task's): the error the QP sees is at most the
    saturation (tanh), what the task reports is the true error, and the target 8 cm / 0.4 rad away is still
    reached."""
    ctrl = _controller([_relative_task(reference=LINK1, max_position_error=0.01, max_rotation_error=0.05),
                        {"name": "posture", "type": "configuration", "weights": 1e-3, "priority": 2}])
    s, q = ctrl.scene, ctrl.scene.named_configuration("default")
    start = _relative(s, q, LINK1)
    target = pin.SE3(start.rotation @ pin.exp3(np.array([0.2, -0.3, 0.1])), start.translation + [0.05, -0.04, 0.05])
    task = ctrl.tasks["grasp"]
    task.set_target(target)
    out = ctrl.step(q)
    assert np.linalg.norm(task.error[:3]) <= 0.01 and np.linalg.norm(task.error[3:]) <= 0.05
    assert task.position_error == pytest.approx(np.linalg.norm([0.05, -0.04, 0.05]), rel=1e-9)
    for _ in range(1500):
        out = ctrl.step(q)
        assert out.result.ok, out.result.status
        q = out.q_next
    reached = _relative(s, q, LINK1)
    assert np.linalg.norm(reached.translation - target.translation) < 1e-4
    assert np.linalg.norm(pin.log3(target.rotation @ reached.rotation.T)) < 1e-3

def test_default_target_holds_the_grasp_while_a_lower_priority_task_moves_the_common_joints():
    """Joints 1-3 move link 3 and the hand alike: the relative pose does not change while they turn."""
    ctrl = _controller([_relative_task(), {"name": "posture", "type": "configuration", "priority": 2}])
    s, q = ctrl.scene, ctrl.scene.named_configuration("default")
    start = _relative(s, q)
    goal = q[:7].copy()
    goal[0] += 0.5  # turn the base joint
    ctrl.tasks["posture"].set_target(goal)
    for _ in range(200):
        out = ctrl.step(q)
        assert out.result.ok, out.result.status
        q = out.q_next
    assert abs(q[0] - goal[0]) < 1e-3
    held = _relative(s, q)
    assert np.linalg.norm(held.translation - start.translation) < 1e-6
    assert np.linalg.norm(pin.log3(start.rotation.T @ held.rotation)) < 1e-6


def test_jacobian_is_the_derivative_of_the_error_far_from_the_target():
    s = scene("panda")
    group = s.group("arm")
    rng = np.random.default_rng(5)
    data = s.model.createData()
    for _ in range(4):
        q = s.random_configuration(rng, group)
        # the target 0.5-2.5 rad and ~0.5 m from the relative pose at q: the log map's curvature matters,
        # the exact Jlog3 follows it
        axis = rng.normal(size=3)
        offset = pin.SE3(pin.exp3(axis / np.linalg.norm(axis) * rng.uniform(0.5, 2.5)), rng.normal(size=3) * 0.3)
        target = _relative(s, q) * offset
        task = RelativeFrameTask(Robot(s, group), HAND, REFERENCE, target, position_cost=[1, 2, 3])

        def error(qq):
            pin.computeJointJacobians(s.model, data, qq)
            pin.updateFramePlacements(s.model, data)
            task.update(qq, data)
            return task.error.copy()

        expected = finite_difference(s, group.v_indices, q, error)
        e = error(q)
        assert 0.5 - 1e-9 < np.linalg.norm(e[3:]) < 2.5 + 1e-9  # far from the target
        # central differences: O(step^2) truncation and the round-off of log3 / step, which grows toward
        # pi (the angle comes from the trace): measured <= 1.4e-9 over 200 configurations below 2.5 rad,
        # 3e-6 at 3.13 rad
        np.testing.assert_allclose(task.jacobian, expected, atol=1e-7)
        np.testing.assert_allclose(task.jacobian[:, :3], 0.0, atol=1e-12)  # joints 1-3 move both frames alike


@pytest.mark.parametrize("keys, message", [
    ({"reference": ""}, r"tasks\[0\]\.reference: required"),
    ({"reference": HAND}, r"tasks\[0\]\.reference: 'panda_hand_tcp' is the task's frame itself"),
    ({"reference": "no_such_link"}, r"reference: unknown frame 'no_such_link'"),
    ({"position_cost": -1.0}, r"tasks\[0\]\.position_cost: expected a finite number >= 0"),
    ({"orientation_cost": [1, 2]}, r"tasks\[0\]\.orientation_cost: expected one number or 3 values"),
    ({"weights": 1.0}, r"tasks\[0\]\.weights: does not apply to type 'relative_frame'"),
])
def test_bad_keys_are_refused_by_name(keys, message):
    with pytest.raises(InvalidInputError, match=message):
        _controller([_relative_task(**keys)])


def test_bad_targets_are_refused_and_the_old_target_kept():
    ctrl = _controller([_relative_task()])
    task = ctrl.tasks["grasp"]
    before = task.target
    for bad in (np.full((4, 4), np.nan), np.eye(3), "pose", np.diag([1.0, 1.0, -1.0, 1.0])):
        with pytest.raises(InvalidInputError, match="grasp.target"):
            task.set_target(bad)
    assert task.target == before
    assert RelativeFrameTask.goal == "pose"
