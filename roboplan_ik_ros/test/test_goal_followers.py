"""How frame-task targets follow goals: GoalSmoother (poses; joint and point goals: test_target_shaper.py)."""

import math

import numpy as np
import pinocchio as pin

from roboplan_ik_ros.core.control.goal_followers import GoalSmoother, GoalSmoothingConfig


def _goal():
    return pin.SE3(pin.rpy.rpyToMatrix(0.0, 0.0, 1.0), np.array([0.5, 0.0, 0.0]))


def test_smoother_none_jumps():
    s = GoalSmoother(GoalSmoothingConfig(type="none"))
    s.reset(pin.SE3.Identity())
    assert s.step(0.002) is None
    s.set_goal(_goal())
    assert np.allclose(s.step(0.002).homogeneous, _goal().homogeneous)
    assert s.step(0.002) is None


def test_smoother_max_speed():
    s = GoalSmoother(GoalSmoothingConfig(type="max_speed", max_linear_speed=0.5, max_angular_speed=1.0))
    s.reset(pin.SE3.Identity())
    s.set_goal(_goal())
    T = s.step(0.1)
    assert np.isclose(np.linalg.norm(T.translation), 0.05)
    assert np.isclose(np.linalg.norm(pin.log3(T.rotation)), 0.1)
    for _ in range(20):
        T = s.step(0.1) or T
    assert np.allclose(T.homogeneous, _goal().homogeneous) and not s.moving


def test_smoother_low_pass():
    s = GoalSmoother(GoalSmoothingConfig(type="low_pass", time_constant=0.1))
    s.reset(pin.SE3.Identity())
    s.set_goal(_goal())
    T = s.step(0.1)
    assert np.isclose(T.translation[0], 0.5 * (1 - math.exp(-1.0)))


def test_the_leash_keeps_the_target_near_a_frame_that_does_not_follow():
    """The frame stays at the identity (blocked) while the goal is 0.5 m and 1 rad away: the target
    stops at leash_distance / leash_angle from the frame and stops accelerating away; a frame that
    follows is never pulled on."""
    cfg = GoalSmoothingConfig(type="max_acceleration", leash_distance=0.05, leash_angle=0.2)
    s = GoalSmoother(cfg)
    s.reset(pin.SE3.Identity())
    s.set_goal(_goal())
    for _ in range(2000):
        T = s.step(0.002, pin.SE3.Identity())
    assert np.isclose(np.linalg.norm(T.translation), 0.05) and np.isclose(np.linalg.norm(pin.log3(T.rotation)), 0.2)
    assert np.allclose(s.linear_velocity, 0.0) and np.allclose(s.angular_velocity, 0.0)  # no wind-up
    assert s.moving  # still on its way (the goal is kept)
    # the frame released: the target moves on from the leash, not from far away, and arrives
    free = GoalSmoother(cfg)
    free.reset(pin.SE3.Identity())
    free.set_goal(_goal())
    for _ in range(3000):
        T = free.step(0.002, free.target) or T  # a frame exactly at the target: the leash never acts
    assert np.allclose(T.homogeneous, _goal().homogeneous) and not free.moving


def test_an_infinite_leash_changes_nothing():
    T = {}
    for leash in (math.inf, 0.05):
        s = GoalSmoother(GoalSmoothingConfig(type="max_speed", leash_distance=leash, leash_angle=leash))
        s.reset(pin.SE3.Identity())
        s.set_goal(_goal())
        for _ in range(10):
            T[leash] = s.step(0.1, pin.SE3.Identity())
    assert np.allclose(T[math.inf].homogeneous, _goal().homogeneous)
    assert np.isclose(np.linalg.norm(T[0.05].translation), 0.05)
