"""time_parametrize: the timed waypoints stay within the velocity and acceleration limits (checked
by finite differences of the returned times, independently of the function's own helper), the path
is followed (the waypoints are unchanged and the segments straight), rest to rest, and the bounds
are reached (not a needlessly slow answer). Also on a Panda solve_path result (0.5 m line)."""

from __future__ import annotations

import numpy as np
import pytest

from roboplan_ik_ros.core import InvalidInputError, SimpleIK, SimpleIKOptions
from roboplan_ik_ros.core.simple_ik.path_timing import time_parametrize
from test_simple_ik_entry_points import TIP, _line, panda  # noqa: F401 (fixture)


def finite_difference_limits(q_path, times):
    """(segment velocities, waypoint accelerations) by finite differences, from rest to rest."""
    dt = np.diff(times)
    v = np.diff(q_path, axis=0) / dt[:, None]
    v_ext = np.vstack((np.zeros(q_path.shape[1]), v, np.zeros(q_path.shape[1])))
    interval = np.concatenate(([dt[0]], (dt[:-1] + dt[1:]) / 2, [dt[-1]]))
    return v, np.diff(v_ext, axis=0) / interval[:, None]


def check_within(q_path, timed, v_max, a_max):
    assert timed.times[0] == 0.0 and np.all(np.diff(timed.times) > 0.0)
    v, a = finite_difference_limits(q_path, timed.times)
    assert np.all(np.abs(v) <= v_max * (1 + 1e-9))
    assert np.all(np.abs(a) <= a_max * (1 + 1e-9))
    assert np.allclose(timed.accelerations, a)
    assert np.all(timed.velocities[[0, -1]] == 0.0)
    return v, a


@pytest.mark.parametrize("seed", range(5))
def test_random_polyline_within_limits_and_tight(seed):
    rng = np.random.default_rng(seed)
    q_path = np.cumsum(rng.uniform(-0.05, 0.05, (40, 7)), axis=0)
    v_max = rng.uniform(0.5, 2.5, 7)
    a_max = rng.uniform(1.0, 10.0, 7)
    timed = time_parametrize(q_path, v_max, a_max)
    v, a = check_within(q_path, timed, v_max, a_max)
    # the binding limit is reached somewhere: not slowed more than needed
    assert max(np.max(np.abs(v) / v_max), np.max(np.abs(a) / a_max)) > 0.99


def test_long_straight_joint_line_reaches_the_velocity_limit():
    q_path = np.linspace(0.0, 3.0, 301)[:, None] * np.array([1.0, -0.5])
    v_max, a_max = np.array([1.0, 1.0]), np.array([2.0, 2.0])
    timed = time_parametrize(q_path, v_max, a_max)
    v, _ = check_within(q_path, timed, v_max, a_max)
    assert np.max(np.abs(v[:, 0])) > 0.99  # cruising at the limit of joint 0 in the middle
    # a continuous trapezoid takes 3/1 + 1/2 = 3.5 s; the discrete profile (finite differences over
    # 1 cm steps) is within a few % of it (3.43 s)
    assert 3.5 * 0.95 <= timed.times[-1] <= 3.5 * 1.05


def test_repeated_waypoint_and_infinite_acceleration_limit():
    q_path = np.array([[0.0], [0.1], [0.1], [0.3]])
    timed = time_parametrize(q_path, [1.0], [np.inf])
    check_within(q_path, timed, np.array([1.0]), np.array([np.inf]))
    timed = time_parametrize(q_path, [1.0], [3.0])
    check_within(q_path, timed, np.array([1.0]), np.array([3.0]))


@pytest.mark.parametrize("args, words", [
    (([[0.0]], [1.0], [1.0]), "q_path"),
    (([[0.0], [np.nan]], [1.0], [1.0]), "q_path"),
    (([[0.0], [1.0]], [0.0], [1.0]), "v_max"),
    (([[0.0], [1.0]], [np.inf], [1.0]), "v_max"),
    (([[0.0], [1.0]], [1.0], [-1.0]), "a_max"),
])
def test_bad_input(args, words):
    with pytest.raises(InvalidInputError, match=words):
        time_parametrize(*args)


def test_panda_straight_line_timed_within_limits(panda):  # noqa: F811
    s, check, q0 = panda
    group = s.group("arm")
    ik = SimpleIK(s, SimpleIKOptions(group_name="arm", max_time=0.05, seed=1))
    res = ik.solve_path(TIP, _line(check.pose(q0, TIP), [0.3, 0.2, -0.3], 0.5, 0.01), q0, max_joint_step=0.1)
    assert res.success, res.message
    q_path = np.array([q0] + res.q_path)[:, group.q_indices]
    v_max = s.v_max[group.v_indices]
    a_max = np.full(group.nv, 5.0)
    timed = time_parametrize(q_path, v_max, a_max)
    check_within(q_path, timed, v_max, a_max)
