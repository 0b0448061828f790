"""``type: joint_velocity``: the QP term cost * ||dq - v_ref dt||^2, so that alone the joints move at v_ref
(within the velocity and position limits). pink 4.4.0's JointVelocityTask steps -v_ref dt: the sign is
tested here."""

from __future__ import annotations

import numpy as np
import pytest

from models import scene
from roboplan_ik_ros.core.config import load_config
from roboplan_ik_ros.core.errors import InvalidInputError
from roboplan_ik_ros.core.oink.controller import OinkController

DT = 0.01
LIMITS = [{"type": "position"}, {"type": "velocity"}]
V_MAX = np.array([2.175, 2.175, 2.175, 2.175, 2.61, 2.61, 2.61])  # the Panda arm's URDF limits [rad/s]


def _controller(task: dict | None = None) -> OinkController:
    s = scene("panda")
    cfg = load_config({"robot": {"group": "arm"}, "tasks": [{"name": "v", "type": "joint_velocity", **(task or {})}],
                       "limits": LIMITS})
    return OinkController(s, cfg, DT, s.named_configuration("default"))


def _run(ctrl, steps: int) -> tuple[np.ndarray, list[np.ndarray]]:
    q, steps_taken = ctrl.scene.named_configuration("default"), []
    for _ in range(steps):
        out = ctrl.step(q)
        assert out.result.ok, out.result.status
        steps_taken.append(out.dq[:7].copy())
        q = out.q_next
    return q, steps_taken


def test_alone_the_joints_advance_at_the_reference_velocity():
    ctrl = _controller()
    v = np.array([0.3, -0.2, 0.5, 0.1, -0.4, 0.25, -0.6])  # [rad/s], within the limits
    ctrl.tasks["v"].set_target(v)
    q0 = ctrl.scene.named_configuration("default")
    q, _ = _run(ctrl, 50)
    np.testing.assert_allclose(q[:7] - q0[:7], 50 * DT * v, rtol=1e-5)  # along v_ref, not against it
    np.testing.assert_allclose(ctrl.tasks["v"].target, v)


def test_a_reference_above_the_velocity_limit_moves_that_joint_at_its_limit_and_the_others_at_theirs():
    ctrl = _controller()
    v = np.array([5.0, 0.0, -0.5, 0.0, 0.0, 0.0, -10.0])
    ctrl.tasks["v"].set_target(v)
    _, steps = _run(ctrl, 5)
    np.testing.assert_allclose(steps[-1], DT * np.clip(v, -V_MAX, V_MAX), rtol=1e-5, atol=1e-12)


def test_a_joint_stops_at_its_position_limit():
    ctrl = _controller()
    ctrl.tasks["v"].set_target([0.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0])  # joint 4 from -2.356 toward its -0.0698 limit
    q, _ = _run(ctrl, 200)
    assert q[3] == pytest.approx(-0.0698, abs=1e-9)


def test_by_default_and_after_hold_it_asks_for_no_motion():
    ctrl = _controller({"cost": [1, 2, 3, 4, 5, 6, 7]})
    q0 = ctrl.scene.named_configuration("default")
    assert np.all(ctrl.step(q0).dq == 0.0)
    ctrl.tasks["v"].set_target(np.full(7, 0.1))
    assert np.all(ctrl.step(q0).dq[:7] > 0.0)
    ctrl.tasks["v"].hold(q0)
    assert np.all(ctrl.step(q0).dq == 0.0) and np.all(ctrl.tasks["v"].target == 0.0)


def test_the_qp_term_is_cost_times_the_squared_velocity_error():
    cost = np.array([1, 2, 3, 4, 5, 6, 7], dtype=float)
    ctrl = _controller({"cost": cost.tolist()})
    v = np.linspace(-0.3, 0.3, 7)
    ctrl.tasks["v"].set_target(v)
    ctrl.step(ctrl.scene.named_configuration("default"))
    qp = ctrl.oink.last_qp()
    np.testing.assert_allclose(qp.H, np.diag(cost + ctrl.oink.regularization), atol=1e-15)
    np.testing.assert_allclose(qp.c, -cost * v * DT, atol=1e-15)  # minimum at dq = v dt


def test_a_goal_of_the_wrong_size_or_not_finite_is_refused_and_the_reference_kept():
    ctrl = _controller()
    task = ctrl.tasks["v"]
    task.set_target(np.full(7, 0.1))
    for bad in (np.zeros(9), [0.1, np.inf, 0, 0, 0, 0, 0], "fast"):
        with pytest.raises(InvalidInputError, match=r"v\.target"):
            task.set_target(bad)
    np.testing.assert_allclose(task.target, 0.1)


def test_a_bad_cost_is_refused_naming_the_key():
    with pytest.raises(InvalidInputError, match=r"config\.tasks\[0\]\.cost: expected a finite number >= 0"):
        load_config({"tasks": [{"name": "v", "type": "joint_velocity", "cost": -2.0}]})
    with pytest.raises(InvalidInputError, match=r"tasks\[0\] \(v\): v\.cost: expected 7 values"):
        _controller({"cost": [1.0, 2.0, 3.0]})
