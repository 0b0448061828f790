"""``type: joint`` (pymanoid's DOF task): some of the group's joints driven to target values, e.g. a
redundant arm's elbow placed while a frame task holds the hand."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from models import scene
from roboplan_ik_ros.core.config import load_config
from roboplan_ik_ros.core.errors import InvalidInputError
from roboplan_ik_ros.core.oink.controller import OinkController
from roboplan_ik_ros.core.oink.tasks.joint_task import JointTask

DT = 0.01
HAND = "panda_hand_tcp"
LIMITS = [{"type": "position"}, {"type": "velocity"}]


def _controller(tasks: list[dict], robot: str = "panda", group: str = "arm", q=None) -> OinkController:
    s = scene(robot)
    cfg = load_config({"robot": {"group": group}, "tasks": tasks, "limits": LIMITS})
    return OinkController(s, cfg, DT, s.named_configuration("default") if q is None else q)


def _pose_error(s, q, T_ref) -> tuple[float, float]:
    T = s.frame_pose(q, HAND)
    angle = np.linalg.norm(pin.log3(T.rotation.T @ T_ref.rotation))
    return float(np.linalg.norm(T.translation - T_ref.translation)), float(angle)


@pytest.mark.parametrize("joint_task", [{"priority": 2, "task_gain": 0.05}, {"weights": 0.01, "task_gain": 0.1}],
                         ids=["priority 2", "weighted"])
def test_the_elbow_reaches_its_target_while_the_frame_task_holds_the_hand(joint_task):
    """What the kind is for: the Panda's self-motion places joint 3 (upper arm roll) at a target, the hand still.
    A low task_gain keeps each self-motion step small (task_gain 1 asks for the 0.4 rad in one step, and the
    hand drifts by the linearization's second order: 35-70 mm at priority 2, measured)."""
    s = scene("panda")
    q0 = s.named_configuration("default")
    ctrl = _controller([{"name": "ee", "type": "frame", "frame": HAND},
                        {"name": "elbow", "type": "joint", "joints": ["panda_joint3"], **joint_task}])
    T_hand = s.frame_pose(q0, HAND)
    goal = q0[:7].copy()
    goal[2] += 0.4
    goal[[0, 1]] += 1.0  # other joints of the goal: not the task's, not used
    ctrl.tasks["elbow"].set_target(goal)
    q, worst = q0.copy(), (0.0, 0.0)
    for _ in range(400):
        out = ctrl.step(q)
        assert out.result.ok, out.result.status
        q = out.q_next
        worst = tuple(max(a, b) for a, b in zip(worst, _pose_error(s, q, T_hand)))
    assert abs(q[2] - goal[2]) < 1e-3  # the joint is there ...
    assert worst[0] < 3e-3 and worst[1] < 2e-3  # ... and the hand never left (first order: the frame task corrects)
    assert np.all(_pose_error(s, q, T_hand) < np.array([1e-5, 1e-4]))
    assert abs(q[0] - goal[0]) > 0.5  # joint 1 was not sent to the goal's value


def test_alone_the_listed_joints_reach_their_targets_and_the_others_do_not_move():
    s = scene("panda")
    q0 = s.named_configuration("default")
    ctrl = _controller([{"name": "j", "type": "joint", "joints": ["panda_joint4", "panda_joint2"],
                         "target": [-2.0, 0.3], "weights": [1.0, 2.0]}])
    task = ctrl.tasks["j"]
    assert task.joints == ("panda_joint4", "panda_joint2")
    np.testing.assert_array_equal(task.jacobian[:, [3, 1]], -np.eye(2))
    q = q0.copy()
    for _ in range(300):
        q = ctrl.step(q).q_next
    np.testing.assert_allclose(q[[3, 1]], [-2.0, 0.3], atol=1e-6)
    np.testing.assert_array_equal(np.delete(q, [1, 3]), np.delete(q0, [1, 3]))  # no say in them: dq = 0 exactly


def test_targets_from_the_start_a_group_state_and_hold():
    s = scene("panda")
    q_start = s.named_configuration("default")
    q_start[1] += 0.2
    ctrl = _controller([{"name": "now", "type": "joint", "joints": ["panda_joint2"]},
                        {"name": "state", "type": "joint", "joints": ["panda_joint2"], "target": "default"}],
                       q=q_start)
    assert ctrl.tasks["now"].target[1] == q_start[1]
    assert ctrl.tasks["state"].target[1] == s.named_configuration("default")[1]
    q = q_start.copy()
    q[1] += 0.5
    ctrl.tasks["now"].hold(q)
    ctrl.tasks["now"].update(q, None)
    assert ctrl.tasks["now"].error[0] == 0.0


def test_a_continuous_joint_takes_the_short_way_across_pi():
    """Kinova joint 1 is continuous (cos, sin): from 3.0 rad to -3.0 rad is 0.28 rad forward, through pi."""
    s = scene("kinova")
    q = s.q_from_joint_positions(["j2s6s200_joint_1"], [3.0], s.neutral())
    ctrl = _controller([{"name": "j", "type": "joint", "joints": ["j2s6s200_joint_1"], "target": [-3.0]}],
                       robot="kinova", group="", q=q)
    task = ctrl.tasks["j"]
    task.update(q, None)
    assert task.error[0] == pytest.approx(2 * np.pi - 6.0)
    angles = []
    for _ in range(200):
        out = ctrl.step(q)
        assert out.result.ok, out.result.status
        q = out.q_next
        angles.append(s.joint_positions(q, ["j2s6s200_joint_1"])[0])
    assert angles[-1] == pytest.approx(-3.0, abs=1e-6)
    assert max(abs(a) for a in angles) > 3.1  # through pi, not back through 0


def test_the_jacobian_of_a_continuous_joint_is_the_derivative_of_its_error():
    s = scene("kinova")
    group = s.group("")
    ctrl = _controller([{"name": "j", "type": "joint", "joints": ["j2s6s200_joint_1", "j2s6s200_joint_2"],
                         "target": [2.5, 3.5]}], robot="kinova", group="", q=s.neutral())
    task = ctrl.tasks["j"]
    rng = np.random.default_rng(3)
    for _ in range(3):
        q = s.random_configuration(rng, group)
        task.update(q, None)
        J = task.jacobian.copy()
        fd = np.zeros_like(J)
        for k, v in enumerate(group.v_indices):
            dv = np.zeros(s.model.nv)
            dv[v] = 1e-6
            task.update(s.integrate(q, dv), None)
            plus = task.error.copy()
            task.update(s.integrate(q, -dv), None)
            fd[:, k] = (plus - task.error) / 2e-6
        np.testing.assert_allclose(J, fd, atol=1e-6)


@pytest.mark.parametrize("entry, message", [
    ({}, r"config\.tasks\[0\]\.joints: required for a joint task"),
    ({"joints": ["panda_joint2", "panda_joint2"]}, r"config\.tasks\[0\]\.joints: 'panda_joint2' is listed twice"),
    ({"joints": ["panda_joint2"], "target": [0.1, 0.2]}, r"config\.tasks\[0\]\.target: 2 values for 1 joints"),
    ({"joints": ["panda_joint2"], "weights": [1, 2]}, r"config\.tasks\[0\]\.weights: 2 values for 1 joints"),
    ({"joints": ["panda_joint2"], "weights": -1.0}, r"config\.tasks\[0\]\.weights: expected a finite number >= 0"),
    ({"joints": "panda_joint2"}, r"config\.tasks\[0\]\.joints: expected a list"),
])
def test_bad_keys_are_refused_when_the_yaml_is_read(entry, message):
    with pytest.raises(InvalidInputError, match=message):
        load_config({"tasks": [{"name": "j", "type": "joint", **entry}]})


@pytest.mark.parametrize("entry, message", [
    ({"joints": ["panda_finger_joint1"]}, r"tasks\[0\] \(j\): j\.joints: 'panda_finger_joint1' is not a joint of "
                                          r"group 'arm'; valid: panda_joint1, .*panda_joint7"),
    ({"joints": ["nope"], "target": [0.0]}, r"j\.joints: 'nope' is not a joint of group 'arm'"),
    ({"joints": ["panda_joint2"], "target": "ready"}, r"j\.target: unknown SRDF group_state 'ready'; valid: 'default'"),
])
def test_names_the_robot_does_not_have_are_refused_when_built(entry, message):
    with pytest.raises(InvalidInputError, match=message):
        _controller([{"name": "j", "type": "joint", **entry}])


def test_a_goal_of_the_wrong_size_or_not_finite_is_refused_and_the_target_kept():
    ctrl = _controller([{"name": "j", "type": "joint", "joints": ["panda_joint2"]}])
    task: JointTask = ctrl.tasks["j"]
    before = task.target.copy()
    for bad in (np.zeros(3), np.full(7, np.nan)):
        with pytest.raises(InvalidInputError, match=r"j\.target"):
            task.set_target(bad)
    np.testing.assert_array_equal(task.target, before)
