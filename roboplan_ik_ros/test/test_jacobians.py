"""Every task and barrier Jacobian against central finite differences.

Convention checked: ``jacobian == d(error)/dq`` for tasks and ``jacobian == d(h)/dq`` for barriers,
over the group's velocity coordinates, with q moved on the manifold (``integrate``).
"""

import numpy as np
import pinocchio as pin
import pytest

from models import finite_difference, scene
from roboplan_ik_ros.core.model.closest_pairs import unit_normal
from roboplan_ik_ros.core import (ConfigurationTask, FrameTask, Oink, PositionBarrier, SelfCollisionBarrier,
                                  SingularityBarrier)

STEP = 1e-6  # [rad]


def _kinematics(oink, q):
    pin.computeJointJacobians(oink.scene.model, oink.data, q)
    pin.updateFramePlacements(oink.scene.model, oink.data)
    pin.updateGeometryPlacements(oink.scene.model, oink.data, oink.scene.collision_model, oink.geom_data)


def _finite_difference(oink, q, f, step=STEP):
    """Central differences of f(q) (a vector) along each group velocity coordinate."""
    return finite_difference(oink.scene, oink.group.v_indices, q, f, step)


@pytest.fixture(scope="module")
def panda():
    s = scene("panda")
    rng = np.random.default_rng(7)
    qs = [s.random_configuration(rng, s.group("arm")) for _ in range(5)]
    return s, qs


def test_frame_task_jacobian_is_derivative_of_pose(panda):
    s, qs = panda
    oink = Oink(s, "arm")
    task = FrameTask(oink, "panda_hand_tcp")
    for q in qs:
        T0 = s.frame_pose(q, "panda_hand_tcp")
        task.set_target(T0)  # zero error: the rotation error is exactly linear in the motion there

        def error(qq):
            _kinematics(oink, qq)
            task.update(qq, oink.data)
            return task.error.copy()

        expected = _finite_difference(oink, q, error)
        _kinematics(oink, q)
        task.update(q, oink.data)
        np.testing.assert_allclose(task.jacobian, expected, atol=1e-6)


def test_frame_task_position_jacobian_away_from_target(panda):
    s, qs = panda
    oink = Oink(s, "arm")
    target = pin.SE3(pin.rpy.rpyToMatrix(0.3, -0.2, 1.0), np.array([0.4, 0.1, 0.5]))
    task = FrameTask(oink, "panda_hand_tcp", target)

    def position_error(qq):
        _kinematics(oink, qq)
        task.update(qq, oink.data)
        return task.error[:3].copy()

    for q in qs:
        expected = _finite_difference(oink, q, position_error)
        _kinematics(oink, q)
        task.update(q, oink.data)
        np.testing.assert_allclose(task.jacobian[:3], expected, atol=1e-6)


def test_configuration_task_jacobian(panda):
    s, qs = panda
    oink = Oink(s, "arm")
    task = ConfigurationTask(oink, qs[0][oink.group.q_indices])

    def error(qq):
        task.update(qq, oink.data)
        return task.error.copy()

    for q in qs[1:]:
        np.testing.assert_allclose(task.jacobian, _finite_difference(oink, q, error), atol=1e-6)


def test_position_barrier_jacobian(panda):
    s, qs = panda
    oink = Oink(s, "arm")
    barrier = PositionBarrier(oink, "panda_hand_tcp", [-1, -1, -0.5], [1, 1, 1.5], dt=0.01,
                              axis_selection=[True, False, True])
    assert barrier.size == 4

    def h(qq):
        _kinematics(oink, qq)
        barrier.update(qq, oink.data, oink.geom_data)
        return barrier.value.copy()

    for q in qs:
        expected = _finite_difference(oink, q, h)
        h(q)
        np.testing.assert_allclose(barrier.jacobian, expected, atol=1e-6)


def test_self_collision_barrier_jacobian(panda):
    """d(distance)/dq of the tracked pairs; GJK's own precision (~1e-7 m) sets the step and tolerance."""
    s, _ = panda
    oink = Oink(s, "arm")
    barrier = SelfCollisionBarrier(oink, n_collision_pairs=4, dt=0.01, broad_phase_cutoff=np.inf)
    rng = np.random.default_rng(3)
    checked = 0
    while checked < 5:
        q = s.random_configuration(rng, oink.group)
        _kinematics(oink, q)
        barrier.update(q, oink.data, oink.geom_data)
        if s.in_collision(q) or barrier.value.min() < 0.01:  # witness points must be well defined
            continue

        def h(qq):
            pin.framesForwardKinematics(s.model, oink.data, qq)
            pin.updateGeometryPlacements(s.model, oink.data, s.collision_model, oink.geom_data)
            return barrier.evaluate(oink.data, oink.geom_data).copy()  # evaluate reuses its array

        expected = _finite_difference(oink, q, h, step=1e-4)
        np.testing.assert_allclose(barrier.jacobian, expected, atol=2e-3, rtol=2e-2)
        checked += 1


def test_normal_undefined_when_witness_points_coincide():
    """Coincident witness points give a zero normal, hence a zero Jacobian row (no NaN)."""
    p = np.array([0.1, 0.2, 0.3])
    garbage = np.array([1e-300, 0.0, 0.0])  # coal leaves the normal unset for some pairs
    assert np.all(unit_normal(0.0, p, p, garbage) == 0.0)
    np.testing.assert_allclose(unit_normal(0.5, p, p + [0, 0, 0.5], garbage), [0, 0, 1])
    np.testing.assert_allclose(unit_normal(-0.01, p, p, np.array([0.0, 1.0, 0.0])), [0, 1, 0])


@pytest.mark.parametrize("robot, group, frame", [("panda", "arm", "panda_hand_tcp"), ("ur5", "", "tool0")])
def test_singularity_barrier_jacobian(robot, group, frame):
    """d(sigma_min)/dq from the body-frame Lie brackets against finite differences of the SVD, at
    random configurations and at near-singular ones (sigma_min < 0.01, where it changes fastest: the
    first three such of a seeded random scan)."""
    s = scene(robot)
    oink = Oink(s, group)
    barrier = SingularityBarrier(oink, frame, dt=0.01, sigma_min=0.02)
    rng = np.random.default_rng(3)
    qs = [s.random_configuration(rng, s.group(group)) for _ in range(6)]
    near = []
    for _ in range(5000):
        q = s.random_configuration(rng, s.group(group))
        _kinematics(oink, q)
        barrier.update(q, oink.data, oink.geom_data)
        if barrier.sigma[-1] < 0.01:
            near.append(q)
            if len(near) == 3:
                break
    assert len(near) == 3, "fewer than 3 near-singular configurations in the scan"
    qs += near

    def h(qq):
        _kinematics(oink, qq)
        barrier.update(qq, oink.data, oink.geom_data)
        return barrier.value.copy()

    checked = checked_near = 0
    for q in qs:
        h(q)
        if barrier.sigma.size > 1 and barrier.sigma[-2] - barrier.sigma[-1] < 1e-3:
            continue  # a repeated smallest singular value: not differentiable there
        expected = _finite_difference(oink, q, h)
        h(q)
        np.testing.assert_allclose(barrier.jacobian, expected, atol=1e-6)
        _kinematics(oink, q)  # evaluate (placements only, as the barrier check calls it) agrees with update
        pin.framesForwardKinematics(s.model, oink.data, q)
        assert np.isclose(barrier.evaluate(oink.data, oink.geom_data)[0], barrier.value[0])
        checked += 1
        checked_near += any(q is n for n in near)
        if any(q is n for n in near):
            assert barrier.sigma[-1] < 0.01, barrier.sigma  # near-singular indeed
    assert checked >= 7 and checked_near >= 2, (checked, checked_near)
