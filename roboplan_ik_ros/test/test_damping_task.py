"""``type: damping`` (pink's DampingTask, pymanoid's MinVelTask): the QP term cost * ||dq||^2. Beside a
frame task on the redundant Panda it shortens the steps (and the joint path) and tracking still converges."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from models import scene
from roboplan_ik_ros.core.config import load_config
from roboplan_ik_ros.core.errors import InvalidInputError
from roboplan_ik_ros.core.oink.controller import OinkController

DT = 0.01
HAND = "panda_hand_tcp"
LIMITS = [{"type": "position"}, {"type": "velocity"}]


def _controller(tasks: list[dict]) -> OinkController:
    s = scene("panda")
    cfg = load_config({"robot": {"group": "arm"}, "tasks": tasks, "limits": LIMITS})
    return OinkController(s, cfg, DT, s.named_configuration("default"))


def _goal(dp, rotation):
    s = scene("panda")
    T = s.frame_pose(s.named_configuration("default"), HAND)
    return pin.SE3(T.rotation @ pin.exp3(np.asarray(rotation, dtype=float)), T.translation + dp)


def _track(tasks: list[dict], T_goal: pin.SE3, steps: int):
    ctrl = _controller(tasks)
    ctrl.tasks["ee"].set_target(T_goal)
    q, norms, converged = ctrl.scene.named_configuration("default"), [], None
    for k in range(steps):
        out = ctrl.step(q)
        assert out.result.ok, out.result.status
        norms.append(float(np.linalg.norm(out.dq)))
        q = out.q_next
        if converged is None and np.linalg.norm(ctrl.scene.frame_pose(q, HAND).translation - T_goal.translation) < 1e-4:
            converged = k
    return q, np.array(norms), converged


FRAME = {"name": "ee", "type": "frame", "frame": HAND}


def test_damping_shortens_the_steps_and_tracking_still_converges():
    """A 2 cm goal (no limit binds): the first step is shorter with damping; a 16 cm one: the whole joint path."""
    damping = {"name": "d", "type": "damping", "cost": 0.1}
    small = _goal([0.02, -0.01, 0.01], [0.05, 0.0, 0.02])
    _, plain, _ = _track([FRAME], small, 5)
    _, damped, _ = _track([FRAME, damping], small, 5)
    assert damped[0] < 0.9 * plain[0]
    large = _goal([0.1, -0.1, 0.05], [0.2, 0.0, 0.1])
    _, plain, plain_converged = _track([FRAME], large, 500)
    q, damped, damped_converged = _track([FRAME, damping], large, 500)
    assert damped.sum() < 0.9 * plain.sum()  # measured: 0.757 vs 0.873 rad
    assert plain_converged is not None and damped_converged is not None  # within 0.1 mm, slower
    assert damped_converged > plain_converged
    T = scene("panda").frame_pose(q, HAND)
    assert np.linalg.norm(pin.log3(T.rotation.T @ large.rotation)) < 1e-6


def test_the_qp_term_is_cost_times_the_squared_step_per_joint():
    cost = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]
    T_goal = _goal([0.02, 0.0, 0.0], [0.0, 0.0, 0.0])
    plain, damped = _controller([FRAME]), _controller([FRAME, {"name": "d", "type": "damping", "cost": cost}])
    q = scene("panda").named_configuration("default")
    for ctrl in (plain, damped):
        ctrl.tasks["ee"].set_target(T_goal)
        ctrl.step(q)
    a, b = plain.oink.last_qp(), damped.oink.last_qp()
    np.testing.assert_allclose(b.H - a.H, np.diag(cost), atol=1e-12)
    np.testing.assert_allclose(b.c, a.c, atol=1e-15)  # its error is 0: no pull, only the penalty


def test_alone_it_asks_for_no_motion_and_its_cost_is_a_runtime_parameter():
    ctrl = _controller([{"name": "d", "type": "damping"}])
    task = ctrl.tasks["d"]
    np.testing.assert_allclose(task.sqrt_weight ** 2, 0.01)  # the default cost
    q = scene("panda").named_configuration("default")
    out = ctrl.step(q)
    assert out.result.ok and np.all(out.dq == 0.0)
    task.set_parameter("cost", [1, 2, 3, 4, 5, 6, 7])
    np.testing.assert_allclose(task.sqrt_weight ** 2, [1, 2, 3, 4, 5, 6, 7])
    task.hold(q)  # no target: nothing to do
    assert not hasattr(task, "set_target")


@pytest.mark.parametrize("priority, moved", [(1, False), (3, True)])
def test_at_a_tracking_tasks_priority_it_leaves_no_nullspace_below(priority, moved):
    """Documented: damping at the frame task's priority (full-rank Jacobian) blocks a priority-2 joint task;
    at the lowest priority it does not."""
    ctrl = _controller([FRAME, {"name": "elbow", "type": "joint", "joints": ["panda_joint3"], "priority": 2,
                                "task_gain": 0.1}, {"name": "d", "type": "damping", "priority": priority}])
    q = scene("panda").named_configuration("default")
    goal = q[:7].copy()
    goal[2] += 0.3
    ctrl.tasks["elbow"].set_target(goal)
    for _ in range(200):
        q = ctrl.step(q).q_next
    left = abs(q[2] - goal[2])  # [rad] of the 0.3 rad asked
    if moved:
        assert left < 1e-6
    else:
        assert left > 0.29  # measured: 0.13 mrad moved


@pytest.mark.parametrize("cost, message", [
    (-1.0, r"config\.tasks\[0\]\.cost: expected a finite number >= 0"),
    ("big", r"config\.tasks\[0\]\.cost: expected a number or a list of numbers, got 'big'"),
])
def test_a_bad_cost_is_refused_when_the_yaml_is_read(cost, message):
    with pytest.raises(InvalidInputError, match=message):
        load_config({"tasks": [{"name": "d", "type": "damping", "cost": cost}]})


def test_a_cost_list_of_the_wrong_length_is_refused_when_built():
    with pytest.raises(InvalidInputError, match=r"tasks\[0\] \(d\): d\.cost: expected 7 values"):
        _controller([{"name": "d", "type": "damping", "cost": [1.0, 2.0]}])
