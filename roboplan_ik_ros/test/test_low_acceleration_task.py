"""``type: low_acceleration`` (pink's LowAccelerationTask): the QP term cost * ||dq - dq_prev||^2 with
dq_prev = q ⊖ q of the task's previous update (the previous step under commanded feedback). A step goal's
command changes less from step to step, and the arm still converges (with damping: at rest)."""

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
FRAME = {"name": "ee", "type": "frame", "frame": HAND}
LOW_ACCELERATION = {"name": "a", "type": "low_acceleration", "cost": 1.0}
DAMPING = {"name": "d", "type": "damping", "cost": 0.1}


def _controller(tasks: list[dict]) -> OinkController:
    s = scene("panda")
    cfg = load_config({"robot": {"group": "arm"}, "tasks": tasks, "limits": LIMITS})
    return OinkController(s, cfg, DT, s.named_configuration("default"))


def _step_goal(tasks: list[dict], dp, steps: int):
    """Closed loop toward the start pose shifted by dp: (max |dq_k - dq_k-1| from rest, final q, last dq)."""
    ctrl = _controller(tasks)
    s = ctrl.scene
    q = s.named_configuration("default")
    T0 = s.frame_pose(q, HAND)
    ctrl.tasks["ee"].set_target(pin.SE3(T0.rotation, T0.translation + np.asarray(dp)))
    previous, jump = np.zeros(s.model.nv), 0.0
    for _ in range(steps):
        out = ctrl.step(q)
        assert out.result.ok, out.result.status
        jump = max(jump, float(np.abs(out.dq - previous).max()))
        previous = out.dq.copy()
        q = out.q_next
    error = float(np.linalg.norm(s.frame_pose(q, HAND).translation - (T0.translation + dp)))
    return jump, error, previous


def test_a_step_goal_changes_the_command_less_from_step_to_step_and_still_converges():
    dp = [0.05, 0.0, 0.0]
    plain, plain_error, _ = _step_goal([FRAME], dp, 600)
    smooth, smooth_error, _ = _step_goal([FRAME, LOW_ACCELERATION], dp, 600)
    assert smooth < 0.5 * plain  # measured: 0.0093 vs 0.0261 rad (the first step hits the velocity box)
    assert plain_error < 1e-6 and smooth_error < 1e-6  # slowly without damping (measured: 28 um after 300 steps)
    damped, _, _ = _step_goal([FRAME, DAMPING], dp, 300)  # the same with damping on both sides
    both, both_error, last = _step_goal([FRAME, DAMPING, LOW_ACCELERATION], dp, 300)
    assert both < 0.5 * damped  # measured: 0.0084 vs 0.0251 rad
    assert both_error < 1e-9 and np.abs(last).max() < 1e-9  # there, at rest


def test_without_damping_the_self_motion_goes_on_and_damping_stops_it():
    """The documented pairing: nothing slows the motion the frame task leaves free but damping."""
    dp = [0.1, -0.1, 0.05]
    _, error, last = _step_goal([FRAME, LOW_ACCELERATION], dp, 600)
    assert np.abs(last).max() > 1e-4 and error > 1e-4  # still moving (measured: 2.3 mrad per step, 1.8 mm off)
    _, error, last = _step_goal([FRAME, LOW_ACCELERATION, DAMPING], dp, 600)
    assert np.abs(last).max() < 1e-9 and error < 1e-9


def test_its_error_is_the_previous_step_and_alone_it_repeats_it():
    ctrl = _controller([{"name": "a", "type": "low_acceleration", "cost": [1, 2, 3, 4, 5, 6, 7]}])
    task, s = ctrl.tasks["a"], ctrl.scene
    q0 = s.named_configuration("default")
    out = ctrl.step(q0)  # first update: no previous step, so no motion asked
    assert out.result.ok and np.all(task.error == 0.0) and np.all(out.dq == 0.0)
    step = np.array([0.01, -0.02, 0.0, 0.015, 0.0, 0.0, -0.01, 0.0, 0.0])
    q1 = s.integrate(q0, step)
    out = ctrl.step(q1)  # the task saw q0, then q1: dq_prev = q1 ⊖ q0
    np.testing.assert_allclose(task.error, step[:7], atol=1e-15)
    np.testing.assert_allclose(out.dq[:7], step[:7], rtol=1e-5)  # cost / (cost + regularization) of it
    task.hold(q1)  # at rest at q1
    out = ctrl.step(q1)
    assert np.all(task.error == 0.0) and np.all(out.dq == 0.0)


def test_the_qp_term_is_cost_times_the_squared_change_of_the_step():
    cost = np.array([1, 2, 3, 4, 5, 6, 7], dtype=float)
    plain, smooth = _controller([FRAME]), _controller([FRAME, {**LOW_ACCELERATION, "cost": cost.tolist()}])
    s = scene("panda")
    q0 = s.named_configuration("default")
    step = np.full(s.model.nv, 0.01)
    for ctrl in (plain, smooth):
        ctrl.step(q0)
        ctrl.step(s.integrate(q0, step))
    a, b = plain.oink.last_qp(), smooth.oink.last_qp()
    np.testing.assert_allclose(b.H - a.H, np.diag(cost), atol=1e-12)
    np.testing.assert_allclose(b.c - a.c, -cost * step[:7], atol=1e-12)  # the gradient pulls dq toward dq_prev


def test_a_bad_cost_is_refused_naming_the_key():
    with pytest.raises(InvalidInputError, match=r"config\.tasks\[0\]\.cost: expected a finite number >= 0"):
        load_config({"tasks": [{"name": "a", "type": "low_acceleration", "cost": [1.0, -1.0]}]})
    with pytest.raises(InvalidInputError, match=r"tasks\[0\] \(a\): a\.cost: expected 7 values"):
        _controller([{"name": "a", "type": "low_acceleration", "cost": [1.0, 2.0]}])
