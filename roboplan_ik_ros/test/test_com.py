"""The centre of mass: the ``com`` task (core/oink/tasks/com_task.py) and the ``com`` barrier
(core/oink/barriers/com_barrier.py) on TALOS (fixed base at the pelvis, group all_arms_torso: torso and
both arms, 16 joints; the legs stay at half_sitting).

Closed loop, both hands reach 0.4 m forward and 0.2 m down from half_sitting: without COM handling the
torso bends and the centre of mass leaves the box over the feet (x in [-0.06, 0.05], y in [-0.09, 0.09],
4.4 cm inside the soles' double-support rectangle); with a ``com`` barrier on that box it stays inside
while the hands get as close as the box allows; with a ``com`` task at a higher priority it stays near
where it started (and the hands get less far). No collision barriers: TALOS has 887 pairs."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin
import pytest

from models import robot, scene
from roboplan_ik_ros.core.config import load_config
from roboplan_ik_ros.core.errors import InvalidInputError
from roboplan_ik_ros.core.model.scene_config import scene_from_config
from roboplan_ik_ros.core.oink.barriers.com_barrier import ComBarrier
from roboplan_ik_ros.core.oink.controller import OinkController
from roboplan_ik_ros.core.oink.robot import Robot
from roboplan_ik_ros.core.oink.tasks.com_task import ComTask, WholeBodyCom

HANDS = ("gripper_left_base_link", "gripper_right_base_link")
BOX_MIN, BOX_MAX = np.array([-0.06, -0.09]), np.array([0.05, 0.09])  # [m] x, y over TALOS's feet
GROUP = "all_arms_torso"
DT = 0.01


def _controller(tasks: list[dict], barriers: list[dict] = ()) -> tuple[OinkController, np.ndarray]:
    cfg = load_config({"robot": {"group": GROUP}, "tasks": tasks, "barriers": list(barriers),
                       "limits": [{"type": "position"}, {"type": "velocity"}]})
    r = robot("talos")
    s = scene_from_config(r.urdf_xml, r.srdf_xml, cfg.robot, r.package_paths)
    q = s.named_configuration("half_sitting")
    return OinkController(s, cfg, DT, q), q


def _reach(com_handling: str, forward=0.4, down=0.2, steps=400):
    """Both hands' targets ``forward`` and ``down`` from half_sitting (position only, posture below them).
    Returns the COM (x, y) at every step, the hands' final distances to their targets and the controller."""
    hand_priority = 2 if com_handling == "task" else 1
    tasks = [{"name": f, "type": "frame", "frame": f, "orientation_cost": 0.0, "priority": hand_priority}
             for f in HANDS]
    tasks.append({"name": "posture", "type": "configuration", "weights": 1e-3, "priority": hand_priority + 1})
    barriers = []
    if com_handling == "task":  # hold the COM's x, y where it starts; its height is free (cost 0)
        tasks.append({"name": "balance", "type": "com", "cost": [1.0, 1.0, 0.0], "priority": 1})
    elif com_handling == "barrier":
        barriers.append({"name": "balance", "type": "com", "p_min": [*BOX_MIN, -10.0], "p_max": [*BOX_MAX, 10.0],
                         "axis_selection": [True, True, False], "gain": 5.0})
    ctrl, q = _controller(tasks, barriers)
    s = ctrl.scene
    goals = {}
    for f in HANDS:
        T = s.frame_pose(q, f)
        goals[f] = T.translation + [forward, 0.0, -down]
        ctrl.tasks[f].set_target(pin.SE3(T.rotation, goals[f]))
    com = WholeBodyCom(s.model, ctrl.oink.group.v_columns, ctrl.oink.group.nv, "test")
    path = []
    for _ in range(steps):
        out = ctrl.step(q)
        assert out.result.ok, out.result.status
        q = out.q_next
        path.append(com.at(q)[:2])
    distances = np.array([np.linalg.norm(s.frame_pose(q, f).translation - goals[f]) for f in HANDS])
    return np.array(path), distances, ctrl


def _inside(path: np.ndarray) -> bool:
    return bool(((path >= BOX_MIN) & (path <= BOX_MAX)).all())


def test_without_com_handling_the_reach_takes_the_com_out_of_the_box():
    path, distances, _ = _reach("none")
    assert path[:, 0].max() > BOX_MAX[0] + 0.03  # measured 0.104 m
    assert not _inside(path)
    assert distances.max() < 0.1  # measured 0.063 m: the torso bent forward for it


def test_a_com_barrier_keeps_it_in_the_box_and_the_hands_get_as_close_as_the_box_allows():
    free_path, free_distances, _ = _reach("none")
    path, distances, ctrl = _reach("barrier")
    assert _inside(path)  # every step
    assert path[-1, 0] > BOX_MAX[0] - 0.005  # the COM at the box's front face (measured 0.0492 m)
    assert (distances > free_distances + 0.1).all()  # balance costs reach (0.245 m vs 0.063 m)
    held_path, held_distances, _ = _reach("task")
    assert (distances < held_distances - 0.05).all()  # the box lets the hands further than holding the COM (0.335 m)
    barrier = ctrl.barriers[0]
    assert barrier.row_names == ["com x lower", "com y lower", "com x upper", "com y upper"]


def test_a_com_task_at_a_higher_priority_keeps_it_near_its_start():
    path, distances, ctrl = _reach("task")
    assert _inside(path)
    start = path[0]
    # the priority is exact until joint limits bind (then the box QP trades a little of it): measured 0.012 m
    assert np.abs(path - start).max() < 0.02
    assert (distances > 0.2).all()


def test_the_com_task_reaches_a_goal_point():
    ctrl, q = _controller([{"name": "balance", "type": "com", "cost": [1.0, 1.0, 0.0]},
                           {"name": "posture", "type": "configuration", "weights": 1e-3, "priority": 2}])
    task = ctrl.tasks["balance"]
    start = task.com.at(q)
    # the height is free (cost 0): its 0.5 m asks nothing; sideways, the arms' joint 2 (at half_sitting they
    # hang beside the body) reach their limits beyond ~1 cm
    goal = start + [0.02, 0.005, 0.5]
    task.set_target(goal)
    for _ in range(300):
        out = ctrl.step(q)
        assert out.result.ok, out.result.status
        q = out.q_next
    reached = task.com.at(q)
    # the posture below it leaks through the damped nullspace (regularization 1e-6): measured 3e-6 m
    np.testing.assert_allclose(reached[:2], goal[:2], atol=2e-5)
    assert np.linalg.norm(task.error) < 2e-5 and task.error[2] == 0.0


def test_the_com_is_that_of_all_the_mass_as_on_a_free_flyer_model():
    """Pinocchio's centerOfMass leaves out the mass welded to the world (TALOS's pelvis, 13.5 kg): the
    kinds add it back, and match a floating-base model of the same URDF (base at the origin)."""
    s = scene("talos")
    full = pin.buildModelFromXML(robot("talos").urdf_xml, pin.JointModelFreeFlyer())
    data = full.createData()
    group = s.group(GROUP)
    com = WholeBodyCom(s.model, group.v_columns, group.nv, "test")
    # every <link>'s <inertial><mass> in the URDF, summed from the XML (pinocchio not involved)
    urdf_mass = sum(float(m.get("value")) for m in ET.fromstring(robot("talos").urdf_xml).findall("./link/inertial/mass"))
    assert urdf_mass > 0.0
    assert com.total_mass == pytest.approx(urdf_mass, rel=1e-12)
    rng = np.random.default_rng(2)
    q = s.named_configuration("half_sitting")
    for _ in range(3):
        q_full = np.concatenate([[0, 0, 0, 0, 0, 0, 1], q])
        expected = pin.centerOfMass(full, data, q_full)
        np.testing.assert_allclose(com.at(q), expected, atol=1e-12)
        J_full = pin.jacobianCenterOfMass(full, data, q_full)[:, 6:]
        s_data = s.model.createData()
        pin.computeJointJacobians(s.model, s_data, q)
        com.update(s_data)
        np.testing.assert_allclose(com.position, expected, atol=1e-12)
        np.testing.assert_allclose(com.jacobian, J_full[:, group.v_indices], atol=1e-12)
        q = s.random_configuration(rng, group)


@pytest.mark.parametrize("which", ["task", "barrier"])
def test_jacobian_is_the_derivative_far_from_the_target(which):
    s = scene("talos")
    group = s.group(GROUP)
    rng = np.random.default_rng(4)
    data = s.model.createData()
    for _ in range(3):
        q = s.random_configuration(rng, group)
        if which == "task":
            obj = ComTask(Robot(s, group), [0.3, -0.2, 0.1], cost=[1.0, 2.0, 0.5])
        else:
            obj = ComBarrier(Robot(s, group), [-0.06, -0.09, -1.0], [0.05, 0.09, 0.0], DT)

        def value(qq):
            pin.computeJointJacobians(s.model, data, qq)
            if which == "task":
                obj.update(qq, data)
                return obj.error.copy()
            obj.update(qq, data, None)
            return obj.value.copy()

        step = 1e-6
        expected = np.zeros((len(value(q)), group.nv))
        for k, iv in enumerate(group.v_indices):
            dv = np.zeros(s.model.nv)
            dv[iv] = step
            expected[:, k] = (value(s.integrate(q, dv)) - value(s.integrate(q, -dv))) / (2 * step)
        value(q)
        assert np.abs(expected).max() > 0.01
        np.testing.assert_allclose(obj.jacobian, expected, atol=1e-9)  # measured 4e-11
        if which == "barrier":  # evaluate() from placements alone agrees with update()
            pin.framesForwardKinematics(s.model, data, q)
            np.testing.assert_allclose(obj.evaluate(data, None), obj.value, atol=1e-12)


def test_a_zero_cost_axis_is_not_part_of_the_task():
    s = scene("talos")
    group = s.group(GROUP)
    task = ComTask(Robot(s, group), [1.0, 1.0, 1.0], cost=[1.0, 1.0, 0.0])
    data = s.model.createData()
    q = s.named_configuration("half_sitting")
    pin.computeJointJacobians(s.model, data, q)
    task.update(q, data)
    assert task.error[2] == 0.0 and not task.jacobian[2].any() and task.jacobian[:2].any()
    task.set_parameter("cost", [0.0, 1.0, 1.0])  # at runtime too
    task.update(q, data)
    assert task.error[0] == 0.0 and not task.jacobian[0].any() and task.error[2] != 0.0
    np.testing.assert_allclose(task.sqrt_weight, [0.0, 1.0, 1.0])


@pytest.mark.parametrize("section, entry, message", [
    ("tasks", {"name": "c", "type": "com", "cost": -1.0}, r"tasks\[0\]\.cost: expected a finite number >= 0"),
    ("tasks", {"name": "c", "type": "com", "cost": [1, 1]}, r"tasks\[0\]\.cost: expected one number or 3 values"),
    ("tasks", {"name": "c", "type": "com", "frame": "x"}, r"tasks\[0\]\.frame: does not apply to type 'com'"),
    ("barriers", {"name": "b", "type": "com", "p_min": [0, 0, 0], "p_max": [1, 1]}, r"b\.p_max: expected 3 values"),
    ("barriers", {"name": "b", "type": "com", "p_min": [0.1, 0, 0], "p_max": [0, 1, 1]},
     r"b: expected finite p_min < p_max"),
    ("barriers", {"name": "b", "type": "com", "p_min": [0, 0, 0], "p_max": [1, 1, 1], "axis_selection": [False] * 3},
     r"b\.axis_selection: expected 3 booleans with at least one true"),
])
def test_bad_keys_are_refused_by_name(section, entry, message):
    tasks = [entry] if section == "tasks" else [{"name": "posture", "type": "configuration"}]
    barriers = [entry] if section == "barriers" else []
    with pytest.raises(InvalidInputError, match=message):
        _controller(tasks, barriers)


def test_bad_goal_points_are_refused_and_the_old_target_kept():
    s = scene("talos")
    task = ComTask(Robot(s, s.group(GROUP)), [0.0, 0.0, -0.1])
    for bad in ([0.0, np.nan, 0.0], [1.0, 2.0], "here", np.inf):
        with pytest.raises(InvalidInputError, match="com.target"):
            task.set_target(bad)
    np.testing.assert_array_equal(task.target, [0.0, 0.0, -0.1])
    assert ComTask.goal == "point"
