"""``exclude_joints`` (every task kind; pymanoid's exclude_dofs): the task does not use those joints (the
solver zeroes their Jacobian columns after each update), on the numpy and the compiled assembly alike."""

from __future__ import annotations

import numpy as np
import pytest

from models import scene
from roboplan_ik_ros.core.config import load_config
from roboplan_ik_ros.core.errors import InvalidInputError
from roboplan_ik_ros.core.oink.controller import OinkController
from roboplan_ik_ros.core.oink.solver import Oink

DT = 0.01
HAND = "panda_hand_tcp"
LIMITS = [{"type": "position"}, {"type": "velocity"}]


def _controller(task: dict, compiled: bool = True, more: tuple = ()) -> OinkController:
    s = scene("panda")
    cfg = load_config({"robot": {"group": "arm"}, "tasks": [task, *more], "limits": LIMITS})
    ctrl = OinkController(s, cfg, DT, s.named_configuration("default"))
    if not compiled:
        sc = cfg.solver
        ctrl.oink = Oink(s, "arm", sc.regularization, unconstrained_shortcut=sc.unconstrained_shortcut,
                         qp_solver=sc.qp_solver, compiled=False)
    return ctrl


def _goal_without_joint1(s):
    """The hand's pose at the default configuration with joints 2, 4 and 6 moved: reachable with joint 1 still."""
    q0 = s.named_configuration("default")
    q_goal = q0.copy()
    q_goal[[1, 3, 5]] += [0.25, -0.3, 0.2]
    return q0, s.frame_pose(q_goal, HAND)


def _track(ctrl, T_goal, steps=400):
    q = ctrl.scene.named_configuration("default")
    ctrl.tasks["ee"].set_target(T_goal)
    joint1 = [q[0]]
    for _ in range(steps):
        out = ctrl.step(q)
        assert out.result.ok, out.result.status
        q = out.q_next
        joint1.append(q[0])
    return q, np.array(joint1)


@pytest.mark.parametrize("compiled", [True, False])
def test_a_frame_task_excluding_joint1_reaches_its_goal_without_moving_joint1(compiled):
    s = scene("panda")
    q0, T_goal = _goal_without_joint1(s)
    ctrl = _controller({"name": "ee", "type": "frame", "frame": HAND, "exclude_joints": ["panda_joint1"]}, compiled)
    if compiled and ctrl.oink.assembly != "compiled":
        pytest.skip(f"no compiled kernel: {ctrl.oink.assembly_note}")
    q, joint1 = _track(ctrl, T_goal)
    assert np.all(joint1 == q0[0]), "joint 1 moved"  # exactly: the task has no say in it
    T = s.frame_pose(q, HAND)
    assert np.linalg.norm(T.translation - T_goal.translation) < 1e-4
    assert np.linalg.norm((T.inverse() * T_goal).rotation - np.eye(3)) < 1e-3
    if compiled:  # the kernel does not update a task with excluded joints itself: Python zeroes its columns
        assert ctrl.tasks["ee"] in ctrl.oink._layout.compiled.python_tasks


def test_without_exclusion_the_same_goal_moves_joint1_and_the_frame_task_stays_native():
    s = scene("panda")
    q0, T_goal = _goal_without_joint1(s)
    ctrl = _controller({"name": "ee", "type": "frame", "frame": HAND})
    _, joint1 = _track(ctrl, T_goal, steps=50)
    assert np.abs(joint1 - q0[0]).max() > 1e-4  # the exclusion is what holds joint 1 above
    if ctrl.oink.assembly == "compiled":
        assert ctrl.oink._layout.compiled.python_tasks == []  # the common case keeps the kernel's own update


POSTURE = {"name": "posture", "type": "configuration", "priority": 2, "weights": 0.1,
           "exclude_joints": ["panda_joint3"]}


@pytest.mark.parametrize("more", [(), (POSTURE,)], ids=["one task", "two priority levels"])
def test_compiled_and_numpy_steps_agree_with_an_exclusion(more):
    """With two levels the nullspace projector of level 1 comes from the zeroed Jacobian on both paths."""
    s = scene("panda")
    q0, T_goal = _goal_without_joint1(s)
    task = {"name": "ee", "type": "frame", "frame": HAND, "exclude_joints": ["panda_joint1", "panda_joint7"]}
    a, b = _controller(task, more=more), _controller(task, compiled=False, more=more)
    assert b.oink.assembly == "numpy"
    q = s.named_configuration("default")
    for ctrl in (a, b):
        ctrl.tasks["ee"].set_target(T_goal)
        if more:
            ctrl.tasks["posture"].set_target(q0[:7] + 0.05)
    for _ in range(20):
        out_a, out_b = a.step(q), b.step(q)
        np.testing.assert_allclose(out_a.dq, out_b.dq, atol=1e-12)
        if not more:  # the frame task alone: joints 1 and 7 have no task
            assert out_a.dq[0] == out_a.dq[6] == out_b.dq[0] == out_b.dq[6] == 0.0
        q = out_a.q_next


def test_joints_excluded_after_the_first_solve_are_honoured():
    """The kernel updated the frame task natively; excluding a joint afterwards moves it to Python."""
    s = scene("panda")
    q0, T_goal = _goal_without_joint1(s)
    ctrl = _controller({"name": "ee", "type": "frame", "frame": HAND})
    q = q0.copy()
    ctrl.step(q)  # layout built (a hold: no motion)
    ctrl.tasks["ee"].exclude_joints(["panda_joint1"])
    ctrl.tasks["ee"].set_target(T_goal)
    for _ in range(30):
        out = ctrl.step(q)
        assert out.result.ok and out.dq[0] == 0.0
        q = out.q_next
    assert np.linalg.norm(q - q0) > 1e-2


def test_a_lower_priority_task_excluding_a_joint_leaves_it_to_the_others():
    """A posture task at priority 2 that excludes joint 3 pulls every other joint toward its target, not joint 3."""
    s = scene("panda")
    q0 = s.named_configuration("default")
    ctrl = _controller({"name": "posture", "type": "configuration", "exclude_joints": ["panda_joint3"]})
    target = q0[:7] + 0.1
    ctrl.tasks["posture"].set_target(target)
    q = q0.copy()
    for _ in range(100):
        q = ctrl.step(q).q_next
    assert q[2] == q0[2]
    np.testing.assert_allclose(np.delete(q[:7], 2), np.delete(target, 2), atol=1e-6)


def test_unknown_or_all_joints_are_refused_naming_the_key_and_the_valid_joints():
    with pytest.raises(InvalidInputError, match=r"tasks\[0\] \(ee\): ee\.exclude_joints: 'panda_joint9' is not "
                                                r"a joint of group 'arm'; valid: panda_joint1, .*panda_joint7"):
        _controller({"name": "ee", "type": "frame", "frame": HAND, "exclude_joints": ["panda_joint9"]})
    every = [f"panda_joint{k}" for k in range(1, 8)]
    with pytest.raises(InvalidInputError, match=r"ee\.exclude_joints: excludes every joint of group 'arm'"):
        _controller({"name": "ee", "type": "frame", "frame": HAND, "exclude_joints": every})
    with pytest.raises(InvalidInputError, match=r"config\.tasks\[0\]\.exclude_joints: expected a list"):
        load_config({"tasks": [{"name": "ee", "type": "frame", "frame": HAND, "exclude_joints": "panda_joint1"}]})
