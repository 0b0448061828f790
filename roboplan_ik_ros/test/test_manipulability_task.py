"""The manipulability task (``type: manipulability``): its gradient equals finite differences (every
``axes``, a group listed out of the model's joint order, a singular configuration), and in closed loop on the
Panda it raises m from a near-singular start while a frame task holds the hand, then settles (no dither)."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from models import robot, scene
from roboplan_ik_ros.core.config import load_config
from roboplan_ik_ros.core.errors import InvalidInputError
from roboplan_ik_ros.core.model.scene_config import scene_from_config
from roboplan_ik_ros.core.oink.controller import OinkController
from roboplan_ik_ros.core.oink.robot import Robot
from roboplan_ik_ros.core.oink.tasks.manipulability_task import ManipulabilityTask

HAND = "panda_hand_tcp"
DT = 0.002
STEP = 1e-6


def _m_and_gradient(task, s, q):
    data = s.model.createData()
    pin.computeJointJacobians(s.model, data, q)
    pin.updateFramePlacements(s.model, data)
    task.update(q, data)
    return task.manipulability, -task.jacobian[0].copy()


def _finite_difference(task, s, q):
    g = []
    for k in task.group.v_indices:
        dv = np.zeros(s.model.nv)
        dv[k] = STEP
        g.append((_m_and_gradient(task, s, s.integrate(q, dv))[0] - _m_and_gradient(task, s, s.integrate(q, -dv))[0])
                 / (2 * STEP))
    return np.array(g)


@pytest.mark.parametrize("axes", ["all", "position", "orientation"])
@pytest.mark.parametrize("shuffled", [False, True])
def test_gradient_equals_finite_differences(axes, shuffled):
    s = scene("panda")
    group = s.group("arm")
    if shuffled:  # the group's columns out of the model's order (an SRDF may list them so): the bracket sum
        # must follow the model's (Scene.subgroup sorts, so the group is made directly)
        group = s._make_group("shuffled", ["panda_joint3", "panda_joint1", "panda_joint7", "panda_joint2",
                                           "panda_joint5", "panda_joint4", "panda_joint6"])
        assert list(group.v_indices) == [2, 0, 6, 1, 4, 3, 5]
    task = ManipulabilityTask(Robot(s, group), HAND, DT, axes=axes)
    rng = np.random.default_rng(5)
    for _ in range(4):
        q = s.random_configuration(rng, group)
        m, g = _m_and_gradient(task, s, q)
        J = pin.computeFrameJacobian(s.model, s.model.createData(), q, s.model.getFrameId(HAND), pin.LOCAL)
        rows = {"all": slice(0, 6), "position": slice(0, 3), "orientation": slice(3, 6)}[axes]
        Ja = J[rows][:, group.v_indices]
        assert m == pytest.approx(np.sqrt(np.linalg.det(Ja @ Ja.T)), rel=1e-9)
        np.testing.assert_allclose(g, _finite_difference(task, s, q), atol=1e-8, rtol=1e-6)


def test_gradient_at_a_singular_configuration_points_out_of_it():
    s = scene("panda")
    task = ManipulabilityTask(Robot(s, s.group("arm")), HAND, DT)
    q = s.named_configuration("default")
    q[5] = 0.0  # not singular yet; find the elbow angle where m is smallest (the stretched arm)
    elbows = np.linspace(-0.9, -0.1, 801)
    ms = []
    for x in elbows:
        q[3] = x
        ms.append(_m_and_gradient(task, s, q)[0])
    q[3] = elbows[int(np.argmin(ms))]
    m, g = _m_and_gradient(task, s, q)
    assert m < 2e-4 and np.linalg.norm(g) > 0.01  # defined at (nearly) det = 0: prod of the other singular values
    dq = np.zeros(s.model.nv)
    dq[:7] = 1e-3 * g / np.linalg.norm(g)
    assert _m_and_gradient(task, s, s.integrate(q, dq))[0] > m + 1e-5


def _run(tasks, q7, ticks):
    cfg = load_config({"robot": {"group": "arm"}, "tasks": tasks,
                       "limits": [{"type": "position"}, {"type": "velocity"}]})
    r = robot("panda")
    s = scene_from_config(r.urdf_xml, r.srdf_xml, cfg.robot, r.package_paths)
    q = s.named_configuration("default")
    q[:7] = q7
    ctrl = OinkController(s, cfg, DT, q)
    T0 = s.frame_pose(q, HAND)
    task = ctrl.tasks["m"]
    ms, steps, drift, turn = [], [], [], []
    for _ in range(ticks):
        out = ctrl.step(q)
        assert out.result.ok, out.result.status
        q = out.q_next
        ms.append(task.manipulability)
        steps.append(np.abs(out.dq).max())
        T = s.frame_pose(q, HAND)
        drift.append(np.linalg.norm(T.translation - T0.translation))
        turn.append(np.linalg.norm(pin.log3(T0.rotation.T @ T.rotation)))
    return np.array(ms), np.array(steps), np.array(drift), np.array(turn)


def test_below_a_frame_task_it_raises_m_in_the_self_motion_and_the_hand_stays_put():
    near_singular = [0.02, -1.1, -2.09, -0.43, -1.97, 1.55, 0.12]  # m = 0.0008
    ms, steps, drift, turn = _run([{"name": "ee", "type": "frame", "frame": HAND},
                                   {"name": "m", "type": "manipulability", "frame": HAND, "priority": 2}],
                                  near_singular, 2500)
    assert ms[0] < 1e-3 and ms[-1] > 10 * ms[0]
    assert drift.max() < 2e-4 and turn.max() < 1e-4  # [m], [rad]: the hand's pose is held
    assert steps.max() <= 1e-3 + 1e-9  # at most 1 / (2 sqrt(lm_damping)) per step


@pytest.mark.parametrize("lm_damping", [None, 0.0])
def test_beside_a_position_task_m_rises_and_settles_at_its_maximum(lm_damping):
    stretched = [0.0, -0.785398, 0.0, -0.55, 0.0, 1.5707, 0.785398]  # the elbow almost straight: m = 0.0076
    entry = {"name": "m", "type": "manipulability", "frame": HAND}
    if lm_damping is not None:
        entry["lm_damping"] = lm_damping
    ms, steps, drift, _ = _run([{"name": "ee", "type": "frame", "frame": HAND, "position_cost": 100.0,
                                 "orientation_cost": 0.0}, entry], stretched, 2500)
    assert ms[0] < 0.008 and ms[-1] > 0.09  # the hand turns and the elbow bends
    assert drift.max() < 1e-5  # the hand's position stays put
    v_step = 2.175 * DT  # the velocity limit of joints 1-4 per step
    if lm_damping is None:  # the default damping turns the ask into a gradient step at the maximum: it settles
        assert steps[-100:].max() < 0.05 * v_step and np.all(np.diff(steps[-100:]) <= 0.0)  # shrinking steps
    else:  # without it, the least-squares step rate dt / |dm/dq| dithers around the maximum at the velocity limit
        assert steps[-100:].min() > 0.5 * v_step


def test_rate_cost_and_runtime_parameters():
    s = scene("panda")
    task = ManipulabilityTask(Robot(s, s.group("arm")), HAND, DT, cost=4.0, rate=0.5)
    q = s.named_configuration("default")
    _m_and_gradient(task, s, q)
    assert task.error[0] == pytest.approx(0.5 * DT) and task.sqrt_weight[0] == pytest.approx(2.0)
    task.set_parameter("cost", 9.0)
    task.set_parameter("rate", 0.0)
    _m_and_gradient(task, s, q)
    assert task.error[0] == 0.0 and task.sqrt_weight[0] == pytest.approx(3.0)
    task.hold(q)  # no target: nothing to point anywhere


BASE = {"robot": {"group": "arm"}}


@pytest.mark.parametrize("entry, message", [
    ({}, r"tasks\[0\].frame: required for a manipulability task"),
    ({"frame": HAND, "axes": "xyz"}, r"tasks\[0\].axes: unknown axes 'xyz'; valid: all, position, orientation"),
    ({"frame": HAND, "rate": -1.0}, r"tasks\[0\].rate: expected a finite number >= 0"),
    ({"frame": HAND, "cost": "high"}, r"tasks\[0\].cost: expected a number, got 'high'"),
    ({"frame": HAND, "weights": 1.0}, r"tasks\[0\].weights: does not apply to type 'manipulability'"),
])
def test_bad_keys_are_refused_by_name(entry, message):
    with pytest.raises(InvalidInputError, match=message):
        load_config({**BASE, "tasks": [{"name": "m", "type": "manipulability", **entry}]})


def test_too_few_joints_for_the_axes_is_refused():
    s = scene("panda")
    few = Robot(s, s.subgroup(s.group("arm"), ["panda_joint1", "panda_joint2", "panda_joint4", "panda_joint6"]))
    with pytest.raises(InvalidInputError, match=r"m.axes: 'all' takes the manipulability of 6 rows.*4 joints"):
        ManipulabilityTask(few, HAND, DT, name="m")
    ManipulabilityTask(few, HAND, DT, axes="position")  # 3 rows: fine
    with pytest.raises(InvalidInputError, match="frame"):
        ManipulabilityTask(few, "no_such_frame", DT, axes="position")
