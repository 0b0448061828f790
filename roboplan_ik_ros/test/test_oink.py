"""OInK: priorities, hard limits, barriers in closed loop, QP failure handling and the OSQP workspace."""

import numpy as np
import pinocchio as pin
import pytest

from models import scene
from roboplan_ik_ros.core import (
    ConfigurationTask,
    FrameTask,
    Oink,
    PositionBarrier,
    PositionLimit,
    SelfCollisionBarrier,
    VelocityLimit,
)

DT = 0.01
TIP = "panda_hand_tcp"


@pytest.fixture(scope="module")
def panda():
    return scene("panda")


@pytest.fixture
def q_home(panda):
    return panda.named_configuration("default")


def _shift(T, dp):
    T = T.copy()
    T.translation = T.translation + np.asarray(dp, dtype=float)
    return T


def _run(oink, q, tasks, limits, barriers, steps, on_step=None, target=None):
    """Closed loop: solve, enforce barriers, integrate. Returns the final q."""
    for k in range(steps):
        if target is not None:
            target(k)
        res = oink.solve(q, tasks, limits, barriers)
        assert res.ok, res.status
        dq = oink.scatter(res.dq)
        oink.enforce_barriers(q, dq, barriers)
        q_next = oink.scene.integrate(q, dq)
        if on_step:
            on_step(q, dq, q_next)
        q = q_next
    return q


def test_converges_to_reachable_pose(panda, q_home):
    oink = Oink(panda, "arm")
    goal = pin.SE3(pin.rpy.rpyToMatrix(np.pi, 0.2, 0.3), np.array([0.45, 0.2, 0.35]))
    ee = FrameTask(oink, TIP, goal)
    q = _run(oink, q_home, [ee], [PositionLimit(oink), VelocityLimit(oink, DT)], [], 400)
    T = panda.frame_pose(q, TIP)
    assert np.linalg.norm(T.translation - goal.translation) < 1e-4
    assert np.linalg.norm(pin.log3(T.rotation.T @ goal.rotation)) < 1e-4


@pytest.mark.parametrize("regularization, rtol", [(1e-9, 1e-5), (1e-6, 1e-2)])
def test_lower_priority_task_does_not_change_first_order_motion_of_higher(panda, q_home, regularization, rtol):
    """Exact up to the projector's damping: the leak is O(lambda / sigma_min(J)^2) of the lower task's pull."""
    oink = Oink(panda, "arm", regularization=regularization)
    ee = FrameTask(oink, TIP, _shift(panda.frame_pose(q_home, TIP), [0.05, -0.03, 0.02]))
    q_far = panda.random_configuration(np.random.default_rng(0), oink.group)
    posture = ConfigurationTask(oink, q_far[oink.group.q_indices], weights=1.0, priority=2)

    def ee_motion(tasks):
        dq = oink.solve(q_home, tasks).dq.copy()
        return -ee.jacobian @ dq  # frame twist (LOCAL_WORLD_ALIGNED) produced by dq

    alone = ee_motion([ee])
    with_posture = ee_motion([ee, posture])
    np.testing.assert_allclose(with_posture, alone, atol=rtol * np.linalg.norm(alone))
    # Same priority (weighted sum) does trade the frame task off, so the property is not vacuous.
    posture.priority = 1
    assert np.linalg.norm(ee_motion([ee, posture]) - alone) > 10 * rtol * np.linalg.norm(alone)
    # ...and the nullspace motion of the posture task is really there.
    posture.priority = 2
    dq_alone = oink.solve(q_home, [ee]).dq.copy()
    assert np.linalg.norm(oink.solve(q_home, [ee, posture]).dq - dq_alone) > 1e-3


def test_limits_hold_over_random_closed_loop(panda, q_home):
    """|dq| <= dt v_max and q inside the position limits over 2000 steps of random, often unreachable targets."""
    oink = Oink(panda, "arm")
    rng = np.random.default_rng(11)
    ee = FrameTask(oink, TIP)
    posture = ConfigurationTask(oink, q_home[oink.group.q_indices], 0.05, priority=2)
    vel = VelocityLimit(oink, DT)
    limits = [PositionLimit(oink, gain=0.5), vel]
    T_home = panda.frame_pose(q_home, TIP)
    worst = {"dq": -np.inf, "q": -np.inf, "speed_ratio": 0.0, "margin": np.inf}

    def new_target(k):
        if k % 40 == 0:
            R = pin.rpy.rpyToMatrix(*rng.uniform(-np.pi, np.pi, 3))
            ee.set_target(pin.SE3(R, T_home.translation + rng.uniform(-0.8, 0.8, 3)))

    def check(q, dq, q_next):
        v = dq[oink.group.v_indices]
        worst["dq"] = max(worst["dq"], np.max(np.abs(v) - DT * vel.v_max))
        iv = oink.group.v_indices
        x = q_next[oink.group.q_indices]
        worst["q"] = max(worst["q"], np.max(panda.q_min_v[iv] - x), np.max(x - panda.q_max_v[iv]))
        worst["speed_ratio"] = max(worst["speed_ratio"], np.max(np.abs(v) / (DT * vel.v_max)))
        worst["margin"] = min(worst["margin"], np.min(x - panda.q_min_v[iv]), np.min(panda.q_max_v[iv] - x))

    _run(oink, q_home, [ee, posture], limits, [], 2000, check, new_target)
    assert worst["dq"] <= 1e-12
    assert worst["q"] <= 1e-12
    assert worst["speed_ratio"] > 0.999  # the velocity limit did bind
    assert worst["margin"] < 1e-3  # and some joint did reach its position limit


def test_position_barrier_keeps_frame_in_box_while_target_is_outside(panda, q_home):
    oink = Oink(panda, "arm")
    p0 = panda.frame_pose(q_home, TIP).translation
    p_min, p_max = p0 - [0.2, 0.2, 0.2], p0 + [0.2, 0.2, 0.05]
    ee = FrameTask(oink, TIP, _shift(panda.frame_pose(q_home, TIP), [0.1, 0.0, 0.3]), max_position_error=0.1)
    box = PositionBarrier(oink, TIP, p_min, p_max, DT, gain=5.0)
    heights = []
    q = _run(oink, q_home, [ee], [PositionLimit(oink), VelocityLimit(oink, DT)], [box], 400,
             lambda q, dq, qn: heights.append(panda.frame_pose(qn, TIP).translation))
    heights = np.array(heights)
    assert np.all(heights <= p_max + 1e-4) and np.all(heights >= p_min - 1e-4)
    assert heights[-1, 2] > p_max[2] - 0.005  # it went as far as the box allows


def _min_distance(s, q):
    data, gd = s.create_data()
    pin.computeDistances(s.model, data, s.collision_model, gd, q)
    return min(r.min_distance for r in gd.distanceResults)


def test_self_collision_barrier_keeps_distance_while_target_drives_into_the_arm(panda, q_home):
    """Target behind the base, inside the arm: the closest pair stays >= d_min - 2 mm."""
    oink = Oink(panda, "arm")
    d_min = 0.02
    target = pin.SE3(panda.frame_pose(q_home, TIP).rotation, np.array([-0.1, 0.0, 0.3]))
    ee = FrameTask(oink, TIP, target, orientation_cost=0.0, max_position_error=0.1)
    barrier = SelfCollisionBarrier(oink, n_collision_pairs=4, dt=DT, d_min=d_min, gain=5.0,
                                   safe_displacement_gain=0.01)
    distances = []
    _run(oink, q_home, [ee], [PositionLimit(oink), VelocityLimit(oink, DT)], [barrier], 500,
         lambda q, dq, qn: distances.append(_min_distance(panda, qn)))
    assert min(distances) >= d_min - 2e-3
    without = Oink(panda, "arm")  # the same target without the barrier does collide: the test is not vacuous
    ee2 = FrameTask(without, TIP, target, orientation_cost=0.0, max_position_error=0.1)
    dist2 = []
    _run(without, q_home, [ee2], [PositionLimit(without), VelocityLimit(without, DT)], [], 500,
         lambda q, dq, qn: dist2.append(_min_distance(panda, qn)))
    assert min(dist2) < d_min - 2e-3


def test_conflicting_limits_give_zero_step_and_status(panda, q_home):
    oink = Oink(panda, "arm")
    q = q_home.copy()
    q[3] = panda.q_min_v[3] - 0.5  # joint 4 far outside its limit: the return exceeds dt * v_max
    res = oink.solve(q, [FrameTask(oink, TIP)], [PositionLimit(oink), VelocityLimit(oink, DT)])
    assert not res.ok and np.all(res.dq == 0.0)
    assert "infeasible limits: joint 'panda_joint4'" in res.status


def test_nan_configuration_gives_zero_step(panda, q_home):
    oink = Oink(panda, "arm")
    q = q_home.copy()
    q[0] = np.nan
    res = oink.solve(q, [FrameTask(oink, TIP)])
    assert not res.ok and np.all(res.dq == 0.0) and "invalid configuration" in res.status


def test_osqp_workspace_is_kept_and_matches_unconstrained_shortcut(panda, q_home):
    # compiled=False: the daqp module's Model (oink._qp); the kernel's own DAQP workspace is kept alike
    # (test_oink_compiled_qp.py: the warm starts it shares with this Model)
    oink = Oink(panda, "arm", unconstrained_shortcut=False, compiled=False)
    ref = Oink(panda, "arm")
    goal = _shift(panda.frame_pose(q_home, TIP), [0.001, 0.0, -0.001])
    tasks, tasks_ref = [FrameTask(oink, TIP, goal)], [FrameTask(ref, TIP, goal)]
    limits = [VelocityLimit(oink, DT)]
    oink.solve(q_home, tasks, limits)
    workspace = oink._qp
    assert workspace is not None
    for _ in range(5):
        res = oink.solve(q_home, tasks, limits)
        assert res.used_qp and oink._qp is workspace  # updated, not set up again
    expected = ref.solve(q_home, tasks_ref, [VelocityLimit(ref, DT)])
    assert not expected.used_qp  # nothing binds: the shortcut answered
    np.testing.assert_allclose(res.dq, expected.dq, atol=1e-6)


def test_binding_velocity_limit_goes_through_osqp(panda, q_home):
    oink = Oink(panda, "arm")
    ee = FrameTask(oink, TIP, _shift(panda.frame_pose(q_home, TIP), [0.3, 0.0, 0.0]))
    vel = VelocityLimit(oink, DT)
    res = oink.solve(q_home, [ee], [vel])
    assert res.ok and res.used_qp
    assert np.max(np.abs(res.dq) - DT * vel.v_max) <= 1e-12
    assert np.isclose(np.max(np.abs(res.dq) / (DT * vel.v_max)), 1.0, atol=1e-4)  # saturated


def _leaving_through_the_top(panda, q_home, limits):
    """A box whose top face is 0.1 mm above the tip, solved at q_home, and a step (the base turning 0.02 rad,
    shoulder back and elbow out 0.01 rad) whose tip leaves it through that face while moving along it (y)."""
    oink = Oink(panda, "arm")
    p0 = panda.frame_pose(q_home, TIP).translation
    box = PositionBarrier(oink, TIP, p0 - 0.1, p0 + [0.1, 0.1, 0.0001], DT)
    assert oink.solve(q_home, [FrameTask(oink, TIP)], limits(oink), [box]).ok
    dq = np.zeros(panda.model.nv)
    dq[0], dq[1], dq[3] = 0.02, -0.01, 0.01
    p1 = panda.frame_pose(panda.integrate(q_home, dq), TIP).translation
    assert p1[2] > p0[2] + 0.002 and abs(p1[1] - p0[1]) > 0.003, "the step leaves through the top, sideways"
    return oink, box, dq, p0, p1


def test_a_step_leaving_a_barrier_is_corrected_back_onto_it_keeping_its_motion_along_it(panda, q_home):
    """enforce_barriers' second-order correction: no shorter step stays inside (1/8 of it still rises 1 mm),
    the row's gradient lifts the step back to the face, its motion along the face kept."""
    oink, box, dq, p0, p1 = _leaving_through_the_top(panda, q_home, lambda oink: [])
    assert oink.enforce_barriers(q_home, dq, [box], 1e-4)
    assert oink.corrected_steps == 1 and oink.shortened_steps == 0
    p = panda.frame_pose(panda.integrate(q_home, dq), TIP).translation
    assert p[2] <= p0[2] + 0.0001 + 1e-4  # on the face, within the tolerance
    assert (p[1] - p0[1]) / (p1[1] - p0[1]) > 0.5  # and still moving along it


def test_a_violating_step_the_limits_do_not_let_the_correction_fix_is_zeroed(panda, q_home):
    """The box limits pin the step (moving at dq with no jerk left): neither a correction nor a shorter step
    stays inside them and the box: the step is refused, zeroed."""
    from roboplan_ik_ros.core.oink.limits.acceleration_limit import AccelerationLimit

    dq_box = np.zeros(7)
    dq_box[0], dq_box[1], dq_box[3] = 0.02, -0.01, 0.01

    def pinned(oink):
        accel = AccelerationLimit(oink, DT, a_max=1e3, j_max=1e-9)
        accel.set_history(dq_box, dq_box)
        return [accel]

    oink, box, dq, _, _ = _leaving_through_the_top(panda, q_home, pinned)
    assert not oink.enforce_barriers(q_home, dq, [box], 1e-4)
    assert np.all(dq == 0.0) and oink.corrected_steps == 0


def test_unsatisfiable_barrier_row_is_named_in_the_status():
    """UR5: wrist_2_link and ee_link hulls are 0.0198 m apart in every pose; d_min 0.02 cannot hold."""
    ur5 = scene("ur5")
    oink = Oink(ur5)
    q = np.array([0.0, -1.0, 1.2, 0.0, 0.0, 0.0])
    barrier = SelfCollisionBarrier(oink, n_collision_pairs=2, dt=DT, d_min=0.02)
    res = oink.solve(q, [FrameTask(oink, "tool0")], [VelocityLimit(oink, DT)], [barrier])
    assert not res.ok and np.all(res.dq == 0.0)
    assert "row 'wrist_2_link_0 <-> ee_link_0' cannot be satisfied within the joint limits" in res.status
