"""time_parametrize: the trajectory a joint_trajectory_controller plays from the returned times and
velocities (its cubic per segment, evaluated by the independent checker jtc_spline at dense samples)
stays within the velocity and acceleration limits everywhere, not only at the points; it passes
through the waypoints, rests at both ends, never overshoots a waypoint (each joint is monotonic
between two waypoints), and is not needlessly slow (a limit is nearly reached). On Panda
solve_path results with the shipped joint_limits.yaml: a 0.5 m line and a path with a sharp corner.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from jtc_spline import limit_ratios, sample
from roboplan_ik_ros.core import InvalidInputError, SimpleIK, SimpleIKOptions
from roboplan_ik_ros.core.model.joint_limits_file import load_joint_limits
from roboplan_ik_ros.core.simple_ik.path_timing import spline_peaks, time_parametrize
from test_simple_ik_entry_points import TIP, _line, panda  # noqa: F401 (fixture)

LIMITS = Path(__file__).resolve().parents[1] / "config" / "panda_joint_limits.yaml"
TOL = 1e-9  # relative, floating-point rounding


def check_within(q_path, timed, v_max, a_max, per_segment: int = 200):
    """The controller's cubic (positions + velocities, no accelerations) within the limits at dense
    samples; through the waypoints; rest to rest; no overshoot. Returns the (velocity, acceleration)
    ratios per joint."""
    q_path = np.asarray(q_path)
    assert timed.times[0] == 0.0 and np.all(np.diff(timed.times) > 0.0)
    assert timed.velocities.shape == q_path.shape
    assert np.all(timed.velocities[[0, -1]] == 0.0)
    r_v, r_a = limit_ratios(timed.times, q_path, timed.velocities, None, v_max, a_max, per_segment)
    assert np.all(r_v <= 1.0 + TOL), r_v
    assert np.all(r_a <= 1.0 + TOL), r_a
    t, q, _, _ = sample(timed.times, q_path, timed.velocities, None, per_segment)
    ends = np.arange(len(q_path) - 1) * (per_segment + 1)
    assert np.allclose(q[ends], q_path[:-1]) and np.allclose(q[-1], q_path[-1])
    q_seg = q.reshape(len(q_path) - 1, per_segment + 1, -1)
    lo = np.minimum(q_path[:-1], q_path[1:])[:, None, :]
    hi = np.maximum(q_path[:-1], q_path[1:])[:, None, :]
    assert np.all(q_seg >= lo - 1e-12) and np.all(q_seg <= hi + 1e-12)  # no overshoot
    return r_v, r_a


@pytest.mark.parametrize("seed", range(5))
def test_random_polyline_within_limits_and_tight(seed):
    rng = np.random.default_rng(seed)
    q_path = np.cumsum(rng.uniform(-0.05, 0.05, (40, 7)), axis=0)  # reversals everywhere
    v_max = rng.uniform(0.5, 2.5, 7)
    a_max = rng.uniform(1.0, 10.0, 7)
    timed = time_parametrize(q_path, v_max, a_max)
    r_v, r_a = check_within(q_path, timed, v_max, a_max)
    # the binding limit is reached somewhere: not slowed more than needed
    assert max(r_v.max(), np.sqrt(r_a.max())) > 0.99


def test_long_straight_joint_line_cruises_near_the_velocity_limit():
    q_path = np.linspace(0.0, 3.0, 301)[:, None] * np.array([1.0, -0.5])
    v_max, a_max = np.array([1.0, 1.0]), np.array([2.0, 2.0])
    timed = time_parametrize(q_path, v_max, a_max)
    r_v, _ = check_within(q_path, timed, v_max, a_max)
    assert r_v[0] > 0.97  # cruising at (nearly) the limit of joint 0 in the middle
    # a continuous trapezoid takes 3/1 + 1/2 = 3.5 s; the cubic through 1 cm steps ramps at 60 % of
    # a_max (module docstring: headroom for the kinks), 3.89 s
    assert 3.5 <= timed.times[-1] <= 3.5 * 1.15


def test_repeated_waypoint_reversal_and_infinite_acceleration_limit():
    q_path = np.array([[0.0], [0.1], [0.1], [0.3], [0.2]])
    timed = time_parametrize(q_path, [1.0], [np.inf])
    check_within(q_path, timed, np.array([1.0]), np.array([np.inf]))
    timed = time_parametrize(q_path, [1.0], [3.0])
    check_within(q_path, timed, np.array([1.0]), np.array([3.0]))
    assert timed.velocities[2, 0] == 0.0 and timed.velocities[3, 0] == 0.0  # stops at the pause and the turn
    assert np.diff(timed.times)[1] == pytest.approx(1e-3)  # the pause: a short rest


def test_one_segment_is_the_rest_to_rest_cubic_at_its_acceleration_limit():
    """Two waypoints 1 rad apart, v_max 1, a_max 2: the cubic 3 s^2 - 2 s^3 peaks at 6 / T^2 in
    acceleration and 1.5 / T in velocity, so the least duration is sqrt(3) s."""
    timed = time_parametrize([[0.0], [1.0]], [1.0], [2.0])
    check_within(np.array([[0.0], [1.0]]), timed, np.array([1.0]), np.array([2.0]))
    assert timed.times[-1] == pytest.approx(np.sqrt(3.0), rel=1e-9)


def test_a_path_that_starts_at_its_seed_starts_at_once():
    """solve_path's first waypoint is often the seed's own pose: that still segment is a 1 ms rest,
    not a long wait, and the next segment starts from rest (the old timing gave it 1 ns and a
    velocity there: a jump)."""
    q_path = np.vstack((np.zeros(2), np.linspace(0.0, 0.5, 51)[:, None] * np.array([1.0, 0.3])))
    timed = time_parametrize(q_path, [1.0, 1.0], [5.0, 5.0])
    check_within(q_path, timed, np.array([1.0, 1.0]), np.array([5.0, 5.0]))
    assert timed.times[1] == pytest.approx(1e-3) and np.all(timed.velocities[1] == 0.0)


def test_the_checker_reproduces_the_controllers_polynomials():
    """jtc_spline itself: from rest to rest over T, the cubic is 3 s^2 - 2 s^3 and the quintic (zero
    end accelerations) the minimum-jerk 10 s^3 - 15 s^4 + 6 s^5 (s = t / T); both pass through the
    points with the given end velocities and accelerations."""
    T, d = 2.0, 0.7
    s = np.linspace(0.0, 1.0, 201)
    t, q, qd, qdd = sample([0.0, T], [[0.0], [d]], [[0.0], [0.0]], None, per_segment=200)
    assert np.allclose(q[:, 0], d * (3 * s**2 - 2 * s**3)) and np.allclose(qd[:, 0], d * (6 * s - 6 * s**2) / T)
    assert np.allclose(qdd[:, 0], d * (6 - 12 * s) / T**2) and np.allclose(t, s * T)
    _, q, qd, qdd = sample([0.0, T], [[0.0], [d]], [[0.0], [0.0]], [[0.0], [0.0]], per_segment=200)
    assert np.allclose(q[:, 0], d * (10 * s**3 - 15 * s**4 + 6 * s**5))
    assert np.allclose(qdd[:, 0], d * (60 * s - 180 * s**2 + 120 * s**3) / T**2)
    _, q, qd, qdd = sample([0.0, T], [[0.1], [d]], [[0.3], [-0.2]], [[1.0], [-0.5]], per_segment=200)
    assert np.allclose([q[0, 0], q[-1, 0], qd[0, 0], qd[-1, 0], qdd[0, 0], qdd[-1, 0]], [0.1, d, 0.3, -0.2, 1.0, -0.5])


def test_spline_peaks_match_dense_sampling():
    """The exact peaks the timing relies on agree with the independent checker's samples."""
    rng = np.random.default_rng(7)
    dq = rng.uniform(-0.1, 0.1, (30, 3))
    dt = rng.uniform(0.01, 0.1, 30)
    v = rng.uniform(-2.0, 2.0, (31, 3))
    times = np.concatenate(([0.0], np.cumsum(dt)))
    q = np.vstack((np.zeros(3), np.cumsum(dq, axis=0)))
    peak_v, peak_a = spline_peaks(dq, dt, v)
    for k in range(30):
        _, _, qd, qdd = sample(times[k:k + 2], q[k:k + 2], v[k:k + 2], None, per_segment=20000)
        assert np.allclose(np.abs(qd).max(axis=0), peak_v[k], rtol=1e-6)
        assert np.allclose(np.abs(qdd).max(axis=0), peak_a[k], rtol=1e-9)


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


def _corner(T0):
    """0.15 m straight down, then 0.15 m sideways: a 90 degree corner of the tip path."""
    down = _line(T0, [0.0, 0.0, -1.0], 0.15, 0.01)
    return down + _line(down[-1], [0.0, 1.0, 0.0], 0.15, 0.01)[1:]


@pytest.mark.parametrize("shape", ["line", "corner"])
def test_panda_paths_timed_within_the_joint_limits_file(panda, shape):  # noqa: F811
    s, check, q0 = panda
    group = s.group("arm")
    ik = SimpleIK(s, SimpleIKOptions(group_name="arm", max_time=0.05, seed=1))
    T0 = check.pose(q0, TIP)
    poses = _line(T0, [0.3, 0.2, -0.3], 0.5, 0.01) if shape == "line" else _corner(T0)
    res = ik.solve_path(TIP, poses, q0, max_joint_step=0.1)
    assert res.success, res.message
    q_path = np.array([q0] + res.q_path)[:, group.q_indices]
    limits = load_joint_limits(LIMITS)
    v_max = s.v_max[group.v_indices]
    a_max = np.array([limits.acceleration[j] for j in group.joint_names])
    timed = time_parametrize(q_path, v_max, a_max)
    r_v, r_a = check_within(q_path, timed, v_max, a_max)
    assert max(r_v.max(), np.sqrt(r_a.max())) > 0.99
