"""Goal shaping and following behaviour that mutation testing found unchecked (docs/mutation.md, core/control).

braking_speed: the discrete braking law, capped at the speed limit, stops within the distance.
JointJogFollower: a jogged joint's target is pulled back only beyond joint_leash, not at it.
LineOfSightShaper: a goal straight behind turns about an axis perpendicular to the line of sight (any direction);
    the range is shaped at the turn limits times the larger range (jerk included); the leash keeps the turn
    toward the axis.
PoseShaper: a diagonal step's TCP moves along the line at max_linear_speed, not sqrt(3) times it.
TargetShaper: a_max = 0 is refused; integer limits take a fractional new speed; a per-coordinate leash holds
    each coordinate at its own distance; a Euclidean leash drops the acceleration away from the anchor.
GoalSmoother (max_acceleration): a target moving at its goal brakes within the bound, overshoots and returns.
JointJogFollower without an acceleration bound: a jog keeps its speed up to the limit and stops on it.
JointJogFollower: a float32 max_acceleration ramps the jog in float64.
LineOfSightShaper: a turn about a diagonal axis is bounded by the turn speed (Euclidean); reset sets the goal;
    set_dt takes the new period for the turn and the range.
TargetShaper: a new shaper is not leashed (False). scale_twist: unitless angular components times max_angular_speed.
TargetShaper: a per-coordinate leash drops the acceleration away from the anchor too. scale_joint_velocities: a
    float32 command is scaled in float64.
Seed 4: GoalSmoother (jerk_limited) takes over a turning target with its angular velocity. JointJogFollower: on a
    group with a continuous joint only the bounded joint brakes at its limit; a stopped jog has no command (age inf).
    LineOfSightShaper: a goal on the line of sight never turns it. PoseShaper.set_dt takes the new period.
    JointTargetShaper: a goal across a continuous joint's seam takes the short way on the circle. TwistFollower: a
    stream that timed out ends with its target at rest.
Seed 5: JointJogFollower reports a joint at the limit its last step found (a product bug: the latest command's side).
    GoalSmoother (max_acceleration) snaps to a goal within _DONE and stops. LineOfSightShaper: an axis point exactly
    _MIN_RANGE from the eye still leashes. PoseShaper.continue_from is not leashed. JointTargetShaper on a one-joint
    group.
Seed 6: GoalSmoother (max_speed) steps onto a goal whose offset underflows in its norm, not past it. JointJogFollower:
    a stopped jog reports no joint at a bound, also once restarted before its next step. LineOfSightShaper: a range
    goal nearer the eye than _MIN_RANGE is shaped at the limits times _MIN_RANGE.
Seed 7: TwistFollower: a stopped twist has no command (age inf), as a stopped jog. TargetShaper: a leash that is not
    > 0 is refused.
"""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from models import scene
from roboplan_ik_ros.core import Scene
from roboplan_ik_ros.core.control.goal_followers import GoalSmoother, GoalSmoothingConfig, braking_speed
from roboplan_ik_ros.core.control.joint_jog_follower import JointJogFollower
from roboplan_ik_ros.core.control.line_of_sight_shaper import LineOfSightShaper
from roboplan_ik_ros.core.control.pose_shaper import PoseShaper
from roboplan_ik_ros.core.control.target_shaper import JointTargetShaper, TargetShaper
from roboplan_ik_ros.core.control.twist_follower import (StreamingConfig, TwistFollower, scale_joint_velocities,
                                                         scale_twist)
from test_scene import CONTINUOUS_URDF

DT = 0.002  # [s]


def _direction(p, eye) -> np.ndarray:
    d = np.asarray(p, dtype=float) - eye
    return d / np.linalg.norm(d)


# --- braking_speed ---------------------------------------------------------------------------------------------

def test_braking_speed_is_the_discrete_braking_law_capped_at_the_speed_limit():
    """a = 2 m/s^2, dt = 0.5 s: alpha = a dt^2 = 0.5 m. Below alpha the whole distance in one step (d / dt);
    above it (sqrt(2 alpha d) - alpha / 2) / dt; never more than speed_max (5 m/s). Numbers or arrays."""
    distance = np.array([0.0, 0.125, 4.0, 100.0])  # [m]
    # by hand: 0; 0.125 / 0.5; (sqrt(2 * 0.5 * 4) - 0.25) / 0.5 = 3.5; (10 - 0.25) / 0.5 = 19.5 -> 5
    assert_allclose(braking_speed(distance, 5.0, 2.0, 0.5), [0.0, 0.25, 3.5, 5.0], rtol=0, atol=1e-12)
    assert float(braking_speed(4.0, 5.0, 2.0, 0.5)) == pytest.approx(3.5, abs=1e-12)
    assert float(braking_speed(4.0, 1.0, 2.0, 0.5)) == 1.0  # the cap


def test_moving_at_the_braking_speed_stops_at_the_distance_within_the_deceleration():
    """A point 1 m from the end that moves each step (dt = 0.01 s) at braking_speed(remaining) under
    speed_max 0.8 m/s, a = 2 m/s^2: it never passes the end, slows by at most a dt per step, and arrives."""
    dt, a, remaining, speeds = 0.01, 2.0, 1.0, []
    for _ in range(2000):
        v = float(braking_speed(remaining, 0.8, a, dt))
        speeds.append(v)
        remaining -= v * dt
        assert remaining >= -1e-12
    assert remaining == pytest.approx(0.0, abs=1e-12) and max(speeds) == 0.8
    assert np.diff(speeds).min() >= -a * dt * (1 + 1e-9)  # braked within a, not stopped short


def test_the_smoothers_scalar_braking_speed_is_the_reference_law():
    """GoalSmoother's plain-float form (_braking_speed_scalar) equals braking_speed, the array form the docs
    name, on both sides of alpha = a dt^2 and at the cap."""
    from roboplan_ik_ros.core.control.goal_followers import _braking_speed_scalar

    for d in (0.0, 1e-9, 0.5 * 2.0 * 0.002**2, 2.0 * 0.002**2, 1e-3, 0.05, 3.0):
        assert _braking_speed_scalar(d, 0.8, 2.0, 0.002) == pytest.approx(float(braking_speed(d, 0.8, 2.0, 0.002)),
                                                                          rel=1e-14, abs=1e-15)


# --- JointJogFollower ----------------------------------------------------------------------------------------

def test_a_jog_target_is_pulled_back_only_beyond_the_joint_leash_not_at_it():
    """joint_leash 2^-5 rad, a jog of 0.5 rad/s at dt 2^-9 s (2^-10 rad a step, exact in binary) of a joint that
    does not move: after 32 steps the target is exactly at the leash (within it: not leashed, its velocity
    kept); the next step it is held at the leash (leashed)."""
    s = scene("panda")
    g = s.group("arm")
    leash, dt = 2.0**-5, 2.0**-9
    f = JointJogFollower(s, g, StreamingConfig(joint_leash=leash, command_timeout=10.0), None)  # no acceleration bound
    q = s.named_configuration("default")
    q[g.q_indices[0]] = 0.0  # panda_joint1 at 0 rad, far from its limits (+-2.9 rad)
    f.start(q[g.q_indices])
    dq = np.zeros(g.nv)
    dq[0] = 0.5
    f.command(dq, 0.0)
    for k in range(32):
        f.step(dt, (k + 1) * dt, q)
    assert f.target[0] == leash and not f.leashed and f.velocity[0] == 0.5
    f.step(dt, 33 * dt, q)
    assert f.leashed and f.target[0] == leash


# --- LineOfSightShaper ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("start", [(1.0, 0.0, 1.0), (0.0, 0.0, 2.0), (1.0, 0.0, 0.0), (0.3, -0.4, 0.5)],
                         ids=["diagonal-xz", "up", "along-x", "oblique"])
def test_a_goal_straight_behind_turns_the_line_of_sight_about_a_perpendicular_axis(start):
    """The goal is the start mirrored through the eye: the direction turns pi rad about one fixed axis
    perpendicular to it (the points stay in a plane through the eye containing the start direction), at
    the start's range, and arrives at rest exactly at the goal. Any start direction (e.g. along (1, 0, 1))."""
    eye = np.array([0.1, 0.2, 0.3])
    start = eye + np.array(start)
    goal = 2 * eye - start
    r = float(np.linalg.norm(start - eye))
    s = LineOfSightShaper(DT, 2.0, 10.0, 500.0)  # [rad/s, rad/s^2, rad/s^3]
    s.reset(start, eye)
    s.set_goal(goal, eye)
    points = []
    for _ in range(3000):
        p = s.step()
        if p is None:
            break
        points.append(p.copy())
    assert not s.moving and np.array_equal(points[-1], goal)
    points = np.array(points)
    b = _direction(start, eye)
    u = (points - eye) / r
    assert_allclose(np.linalg.norm(points - eye, axis=1), r, rtol=1e-9)  # the range is kept
    normal = np.cross(b, u[len(u) // 2])
    normal /= np.linalg.norm(normal)
    assert np.abs(u @ normal).max() <= 1e-9  # one plane: a fixed axis perpendicular to b
    angle = np.arccos(np.clip(u @ b, -1.0, 1.0))
    assert np.diff(angle).min() >= -1e-9 and angle[-1] == pytest.approx(math.pi)  # monotone, half a turn


def test_the_range_is_shaped_at_the_turn_limits_times_the_larger_range():
    """Turn limits 0.5 rad/s, 2 rad/s^2, 10 rad/s^3; a goal on the same line of sight from 2 m to 4 m: the range
    moves at most 0.5 * 4 = 2 m/s, 8 m/s^2 and 40 m/s^3, and arrives in the time optimum for those (v j >= a^2
    and a cruise: T = D / v + v / a + a / j = 1 + 0.25 + 0.2 = 1.45 s)."""
    s = LineOfSightShaper(DT, 0.5, 2.0, 10.0)
    eye = np.zeros(3)
    s.reset([0.0, 0.0, 2.0], eye)
    s.set_goal([0.0, 0.0, 4.0], eye)
    ranges = [2.0, 2.0, 2.0]
    for _ in range(1500):
        p = s.step()
        if p is None:
            break
        assert p[0] == 0.0 and p[1] == 0.0  # along the line of sight
        ranges.append(float(p[2]))
    assert not s.moving and ranges[-1] == 4.0
    r = np.array(ranges)
    assert np.abs(np.diff(r)).max() / DT <= 2.0 + 1e-9
    assert np.abs(np.diff(r, 2)).max() / DT**2 <= 8.0 + 1e-6
    assert np.abs(np.diff(r, 3)).max() / DT**3 <= 40.0 * (1 + 1e-6)
    arrived = (len(r) - 3) * DT
    assert arrived == pytest.approx(1.45, abs=2 * DT)


def test_a_line_of_sight_pulled_to_its_leash_keeps_turning_toward_the_axis_at_its_rate():
    """A turn about z from x to y cruising at 1 rad/s; the axis then looks 0.5 rad ahead of the target (leash
    0.2 rad): the target's direction jumps to 0.2 rad behind the axis and, its turn being toward the axis (not
    away from it: nothing to drop), goes on turning at 1 rad/s (2 mrad a step)."""
    speed, leash = 1.0, 0.2
    s = LineOfSightShaper(DT, speed, 10.0, 500.0, leash=leash)
    eye = np.zeros(3)
    s.reset([1.0, 0.0, 0.0], eye)
    s.set_goal([0.0, 1.0, 0.0], eye)
    for _ in range(300):  # 0.6 s: at cruise since 0.12 s (v / a + a / j), 0.06 + 0.48 = 0.54 rad of 1.57
        p = s.step()
    theta = math.atan2(p[1], p[0])
    assert theta == pytest.approx(0.54, abs=1e-6)
    axis_point = np.array([math.cos(theta + 0.5), math.sin(theta + 0.5), 0.0])  # [m] the axis looks ahead
    p = s.step(axis_point)
    assert s.leashed
    held = math.atan2(p[1], p[0])
    assert held == pytest.approx(theta + 0.5 - leash, abs=1e-9) and abs(p[2]) <= 1e-12
    p = s.step(axis_point)
    assert not s.leashed
    assert (math.atan2(p[1], p[0]) - held) / DT == pytest.approx(speed, rel=1e-3)


# --- PoseShaper ----------------------------------------------------------------------------------------------

def test_a_diagonal_pose_step_moves_along_the_line_at_the_linear_speed_not_faster():
    """A 1 m step along (1, 1, 1) / sqrt(3), 0.5 m/s, 1 m/s^2, 50 m/s^3: the TCP cruises at 0.5 m/s along the line
    (per-axis limits of 0.5 m/s each would move it sqrt(3) times faster) and arrives at rest."""
    s = PoseShaper(DT, (0.5, 1.0, 50.0), (1.5, 6.0, 300.0))
    start = pin.SE3(np.eye(3), np.array([0.3, 0.0, 0.5]))
    s.reset(start)
    goal = pin.SE3(np.eye(3), start.translation + np.ones(3) / math.sqrt(3.0))
    s.set_goal(goal)
    p = [start.translation.copy()]
    for _ in range(3000):
        T = s.step()
        if T is None:
            break
        p.append(T.translation.copy())
    assert_array_equal(p[-1], goal.translation)
    speed = np.linalg.norm(np.diff(np.array(p), axis=0), axis=1) / DT
    assert speed.max() <= 0.5 * (1 + 1e-9) and speed.max() >= 0.99 * 0.5


# --- TargetShaper --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("a_max, j_max", [(0.0, 100.0), (10.0, 0.0), ([10.0, 0.0], 100.0)],
                         ids=["a_max-zero", "j_max-zero", "a_max-one-zero"])
def test_target_shaper_refuses_a_zero_acceleration_or_jerk_bound(a_max, j_max):
    """a_max and j_max must be > 0 (or inf) on every coordinate: a zero bound could never start the target."""
    with pytest.raises(ValueError, match="a_max, j_max: expected values > 0"):
        TargetShaper(2, DT, 1.0, a_max, j_max)


@pytest.mark.parametrize("euclidean, leash", [(False, 0.0), (False, [0.1, 0.0]), (False, math.nan), (True, 0.0),
                                             (True, -0.1)],
                         ids=["zero", "one-zero", "nan", "euclidean-zero", "euclidean-negative"])
def test_target_shaper_refuses_a_leash_that_is_not_positive(euclidean, leash):
    """leash: None, or > 0 on every coordinate (inf: none; the tasks' target_leash keys take only such values). At 0
    the per-coordinate leash clipped the offset to 0 before judging which velocity points away from the anchor, so it
    dropped none of them (seed 7)."""
    TargetShaper(2, DT, 1.0, 10.0, 100.0, euclidean=euclidean, leash=math.inf)  # the premise: inf is taken
    with pytest.raises(ValueError, match=r"^leash: expected values > 0"):
        TargetShaper(2, DT, 1.0, 10.0, 100.0, euclidean=euclidean, leash=leash)


def test_integer_limits_take_a_fractional_new_speed():
    """Limits given as integers (1 m/s, 4 m/s^2, 100 m/s^3, as a YAML may give them), then a new speed of 0.5 m/s:
    v_max is 0.5 and a 2 m step cruises at 0.5 m/s, arriving at rest."""
    s = TargetShaper(1, DT, 1, 4, 100)
    s.set_limits(v_max=0.5)
    assert_array_equal(s.v_max, [0.5])
    s.reset([0.0])
    s.set_goal([2.0])
    x = [0.0]
    while s.moving:
        x.append(float(s.step()[0]))
    assert x[-1] == 2.0
    speed = np.abs(np.diff(x)) / DT
    assert speed.max() <= 0.5 + 1e-9 and speed.max() >= 0.99 * 0.5


def test_a_per_coordinate_leash_holds_each_coordinate_at_its_own_distance():
    """leash [0.05, 0.2] (per coordinate) from an anchor that does not move, goal [1, -1]: each coordinate waits
    at its own leash (0.05 and -0.2), its velocity away from the anchor dropped."""
    s = TargetShaper(2, DT, 1.5, 6.0, 3000.0, leash=[0.05, 0.2])
    s.reset([0.0, 0.0])
    s.set_goal([1.0, -1.0])
    anchor = np.zeros(2)
    for _ in range(500):
        x = s.step(anchor)
        assert abs(x[0]) <= 0.05 + 1e-12 and abs(x[1]) <= 0.2 + 1e-12
    assert s.leashed and s.moving
    assert_allclose(s.position, [0.05, -0.2], rtol=0, atol=1e-12)
    assert s.velocity[0] <= 0.0 and s.velocity[1] >= 0.0


def test_a_euclidean_leash_drops_the_acceleration_away_from_the_anchor():
    """A Euclidean shaper accelerating (at most 0.5 m/s^2) from its anchor toward a far goal, leash 0.01 m:
    at every leashed step neither its velocity nor its acceleration points away from the anchor (they would
    wind it up again next tick)."""
    s = TargetShaper(3, DT, 1.0, 0.5, 50.0, euclidean=True, leash=0.01)
    s.reset(np.zeros(3))
    s.set_goal([0.6, 0.0, 0.8])
    anchor, leashed = np.zeros(3), 0
    for _ in range(400):
        x = s.step(anchor)
        if s.leashed:
            leashed += 1
            u = x / np.linalg.norm(x)
            assert np.linalg.norm(x) == pytest.approx(0.01, abs=1e-12)
            assert s.velocity @ u <= 1e-12 and s.acceleration @ u <= 1e-12
    assert leashed > 100


# --- GoalSmoother (max_acceleration) -------------------------------------------------------------------------

def test_a_max_acceleration_target_moving_at_its_goal_brakes_within_the_bound_before_it_rests():
    """max_acceleration, 1 m/s^2, dt 2 ms: a target taken over at its goal but moving at 1 cm/s is not stopped
    dead (a velocity change of 0.01 m/s > a dt = 0.002 m/s): its velocity changes by at most a dt a tick, it
    overshoots by about its braking distance v^2 / 2a = 50 um, comes back and arrives at rest exactly at the goal."""
    a, v0 = 1.0, 0.01
    s = GoalSmoother(GoalSmoothingConfig(type="max_acceleration", max_linear_speed=0.5, max_linear_acceleration=a))
    T = pin.SE3(np.eye(3), np.array([0.3, 0.0, 0.5]))
    s.continue_from(T, np.array([v0, 0.0, 0.0]), np.zeros(3))
    s.set_goal(T)
    previous, farthest = np.array([v0, 0.0, 0.0]), 0.0
    for _ in range(5000):
        if s.step(DT) is None:
            break
        assert np.linalg.norm(s.linear_velocity - previous) <= a * DT * (1 + 1e-9)
        previous = s.linear_velocity.copy()
        farthest = max(farthest, float(np.linalg.norm(s.target.translation - T.translation)))
    assert not s.moving and not s.linear_velocity.any()
    assert_array_equal(s.target.translation, T.translation)
    assert 0.5 * v0**2 / (2 * a) <= farthest <= 1.5 * v0**2 / (2 * a)


# --- JointJogFollower: no acceleration bound -----------------------------------------------------------------

def test_a_jog_without_an_acceleration_bound_keeps_its_speed_up_to_the_limit_and_stops_on_it():
    """max_acceleration None (the velocity may step): a jog of 0.5 rad/s (1 mrad a step at 2 ms) from 10.5 mrad
    below panda_joint1's upper limit is not braked early: 10 steps at 0.5 rad/s, then the remaining 0.5 mrad in one
    step (0.25 rad/s), on the limit; then it stays there, at its bound, at rest."""
    s = scene("panda")
    g = s.group("arm")
    f = JointJogFollower(s, g, StreamingConfig(command_timeout=10.0), None)
    upper = float(s.q_max_v[g.v_indices[0]])
    q = s.named_configuration("default")[g.q_indices]
    q[0] = upper - 0.0105
    f.start(q)
    dq = np.zeros(g.nv)
    dq[0] = 0.5
    f.command(dq, 0.0)
    speeds = []
    for k in range(13):
        f.step(DT, (k + 1) * DT)
        speeds.append(float(f.velocity[0]))
    assert_allclose(speeds, [0.5] * 10 + [0.25, 0.0, 0.0], rtol=0, atol=1e-9)
    assert f.target[0] == pytest.approx(upper, abs=1e-12)
    assert f.at_bound[0] and f.bounds_reached() == [(0, "upper", upper)]



def _jog_pushed_onto_its_upper_limit():
    """A Panda arm jog started with panda_joint1 on its upper limit and one step commanded toward it at 0.5 rad/s:
    (the follower, the start [rad], that limit [rad], the command it stepped)."""
    s = scene("panda")
    g = s.group("arm")
    f = JointJogFollower(s, g, StreamingConfig(command_timeout=10.0), None)
    upper = float(s.q_max_v[g.v_indices[0]])
    q = s.named_configuration("default")[g.q_indices]
    q[0] = upper
    f.start(q)
    dq = np.zeros(g.nv)
    dq[0] = 0.5
    f.command(dq, 0.0)
    f.step(DT, DT)
    assert f.bounds_reached() == [(0, "upper", upper)]  # the premise: on it, pushed toward it
    return f, q, upper, dq


@pytest.mark.parametrize("new_command", [0.0, -0.5], ids=["released", "reversed"])
def test_a_jog_at_its_limit_is_reported_at_that_limit_until_the_next_step_whatever_command_came_since(new_command):
    """bounds_reached reports what the last step found (at_bound is the step's): panda_joint1 jogged up onto its
    upper limit is "upper" at q_max even after a new command (released: 0, or reversed) arrives and before the next
    step takes it (the node reads motion_limit between ticks: it named the lower limit, -2.8973 rad, for a joint on
    its upper one). The next step, moving away, reports no bound."""
    f, q, upper, dq = _jog_pushed_onto_its_upper_limit()
    dq[0] = new_command
    f.command(dq, DT)
    assert f.bounds_reached() == [(0, "upper", upper)]
    f.step(DT, 2 * DT)
    assert f.bounds_reached() == []

def test_a_float32_max_acceleration_ramps_the_jog_in_double_precision():
    """max_acceleration is taken as float64 whatever its dtype: a float32 array (2.1 rad/s^2, not exact in binary)
    ramps the jog's target exactly as the same values in float64 (a_max dt in float32 would round the ramp's
    velocity step to float32)."""
    s = scene("panda")
    g = s.group("arm")
    a32 = np.full(g.nv, 2.1, dtype=np.float32)
    followers = [JointJogFollower(s, g, StreamingConfig(command_timeout=10.0), a) for a in (a32, a32.astype(float))]
    q = s.named_configuration("default")[g.q_indices]
    dq = np.full(g.nv, 0.5)  # [rad/s] every joint, far from its limits within the 10 steps
    for f in followers:
        f.start(q)
        f.command(dq, 0.0)
    for k in range(10):
        t32, t64 = (f.step(DT, (k + 1) * DT).copy() for f in followers)
        assert_array_equal(t32, t64)
    assert_array_equal(followers[0].velocity, followers[1].velocity)


# --- LineOfSightShaper: the turn rate whatever its axis; reset -----------------------------------------------

def test_a_turn_about_a_diagonal_axis_is_bounded_by_the_turn_speed_not_per_coordinate():
    """Turn limits 1 rad/s, 10 rad/s^2, 500 rad/s^3 (Euclidean: the rate whatever its axis). The line of sight
    turns 90 deg from x about the axis (0, 1, 1) / sqrt(2) (to (0, 1, -1) / sqrt(2)): the angle between
    consecutive directions is at most 1 rad/s * dt and cruises at it (a per-coordinate bound would turn it
    sqrt(2) times faster); the turn takes the time optimum T = pi/2 / v + v / a + a / j = 1.6908 s."""
    speed, acc, jerk = 1.0, 10.0, 500.0
    s = LineOfSightShaper(DT, speed, acc, jerk)
    eye = np.array([0.1, -0.2, 0.4])
    s.reset(eye + [1.0, 0.0, 0.0], eye)
    s.set_goal(eye + np.array([0.0, 1.0, -1.0]) / math.sqrt(2.0), eye)
    u = [np.array([1.0, 0.0, 0.0])]
    for _ in range(2000):
        p = s.step()
        if p is None:
            break
        u.append(_direction(p, eye))
    u = np.array(u)
    assert not s.moving
    assert_allclose(u[-1], np.array([0.0, 1.0, -1.0]) / math.sqrt(2.0), rtol=0, atol=1e-12)
    rate = np.arctan2(np.linalg.norm(np.cross(u[:-1], u[1:]), axis=1), np.einsum("ij,ij->i", u[:-1], u[1:])) / DT
    assert rate.max() <= speed * (1 + 1e-6) and rate.max() >= 0.99 * speed
    assert (len(u) - 1) * DT == pytest.approx(math.pi / 2 / speed + speed / acc + acc / jerk, abs=2 * DT)


def test_a_line_of_sight_reset_sets_the_goal_to_the_point_too():
    """reset: "Target and goal := point, seen from eye, at rest": afterwards the goal is that point (not the
    previous goal, not undefined) and a step has nothing to do."""
    s = LineOfSightShaper(DT, 1.0, 10.0, 500.0)
    s.reset([0.0, 0.0, 1.0], np.zeros(3))
    s.set_goal([1.0, 0.0, 0.0], np.zeros(3))
    s.step()
    point, eye = np.array([0.4, -0.3, 1.2]), np.array([0.1, 0.1, 0.1])
    s.reset(point, eye)
    assert_array_equal(s.goal, point)
    assert_array_equal(s.position, point)
    assert not s.moving and s.step() is None


def test_a_line_of_sight_shaper_set_to_a_new_period_moves_as_one_built_for_it():
    """set_dt: the turn and the range both take the new period. A shaper built at 2 ms and set to 4 ms moves a goal
    that turns the line of sight and changes its range exactly as a shaper built at 4 ms, step by step."""
    limits = (1.0, 10.0, 500.0)  # [rad/s, rad/s^2, rad/s^3]
    changed, built = LineOfSightShaper(DT, *limits), LineOfSightShaper(2 * DT, *limits)
    changed.set_dt(2 * DT)
    eye = np.array([0.1, -0.2, 0.4])
    for s in (changed, built):
        s.reset(eye + [1.0, 0.0, 0.0], eye)
        s.set_goal(eye + [0.0, 1.5, 0.5], eye)
    steps = 0
    for steps in range(1000):
        a, b = changed.step(), built.step()
        if a is None or b is None:
            break
        assert_array_equal(a, b)
    assert a is None and b is None and steps > 100  # both at rest at the goal, in the same number of steps


# --- TargetShaper: a new shaper is not leashed ---------------------------------------------------------------

def test_a_new_target_shaper_is_not_leashed():
    """leashed: "the last step pulled the target back to its leash", a bool (JointTargetShaper.leashed -> bool):
    a shaper that has not stepped yet was not pulled back, leashed is False."""
    s = TargetShaper(2, DT, 1.0, 4.0, 100.0, leash=0.1)
    assert s.leashed is False


# --- scale_twist: unitless ----------------------------------------------------------------------------------

@pytest.mark.parametrize("max_angular_speed", [2.0, 0.5])
def test_a_unitless_twist_is_the_components_times_the_max_speeds(max_angular_speed):
    """command_in_type unitless: components in [-1, 1] times max_linear_speed [m/s] / max_angular_speed [rad/s]
    (README): linear 0.5 at 0.2 m/s is 0.1 m/s; angular -0.5 at 2 (0.5) rad/s is -1 (-0.25) rad/s."""
    cfg = StreamingConfig(command_in_type="unitless", max_linear_speed=0.2, max_angular_speed=max_angular_speed)
    v, w = scale_twist(cfg, np.array([0.5, 0.0, 0.0]), np.array([0.0, 0.0, -0.5]))
    assert_allclose(v, [0.1, 0.0, 0.0], rtol=0, atol=1e-15)
    assert_allclose(w, [0.0, 0.0, -0.5 * max_angular_speed], rtol=0, atol=1e-15)


# --- seed 3 (docs/mutation.md) -------------------------------------------------------------------------------

def test_a_per_coordinate_leash_drops_the_acceleration_away_from_the_anchor():
    """As the Euclidean leash: a per-coordinate shaper (leash [0.05, 0.2]) accelerating from its anchor toward
    [1, -1]: at every leashed step no coordinate held at its leash keeps a velocity or an acceleration pointing away
    from the anchor (they would wind it up again next tick)."""
    leash = np.array([0.05, 0.2])
    s = TargetShaper(2, DT, 1.5, 6.0, 3000.0, leash=leash)
    s.reset([0.0, 0.0])
    s.set_goal([1.0, -1.0])
    anchor, leashed = np.zeros(2), 0
    for _ in range(500):
        x = s.step(anchor)
        if s.leashed:
            leashed += 1
            held = np.abs(x) >= leash - 1e-12
            assert held.any()
            assert (s.velocity * x)[held].max() <= 1e-12 and (s.acceleration * x)[held].max() <= 1e-12
    assert leashed > 100


def test_a_float32_joint_jog_command_is_scaled_in_float64():
    """scale_joint_velocities takes any real array and works in float64: a float32 command (unitless, and in speed
    units) gives the float64 product of its values with max_joint_speed and speed_override, not a float32 one."""
    dq32 = np.array([0.1, -0.3, 0.0], dtype=np.float32)
    for unit in ("unitless", "speed_units"):
        cfg = StreamingConfig(command_in_type=unit, max_joint_speed=0.7, speed_override=0.3)
        out = scale_joint_velocities(cfg, dq32)
        factor = cfg.max_joint_speed if unit == "unitless" else 1.0
        assert out.dtype == np.float64, unit
        assert_array_equal(out, dq32.astype(np.float64) * factor * cfg.speed_override)


# --- seed 4 (docs/mutation.md) -------------------------------------------------------------------------------

def test_a_jerk_limited_smoother_takes_over_a_turning_target_with_its_angular_velocity():
    """GoalSmoother.continue_from (a twist stream handing over, loop_goals.set_pose_goal) with jerk_limited: the
    shaper starts from the target's angular velocity too, not from rest. A target turning about z at half
    max_angular_speed, a goal further along that turn: after one step the angular velocity is within the
    acceleration bound's change (max_angular_acceleration dt) of the handed-over one."""
    cfg = GoalSmoothingConfig(type="jerk_limited")
    s = GoalSmoother(cfg)
    start = pin.SE3(np.eye(3), np.array([0.3, 0.0, 0.5]))
    w = np.array([0.0, 0.0, 0.5 * cfg.max_angular_speed])  # [rad/s] world
    s.continue_from(start, np.zeros(3), w)
    s.set_goal(pin.SE3(pin.exp3(np.array([0.0, 0.0, 0.3])), start.translation))
    assert s.step(DT) is not None
    assert np.linalg.norm(s.angular_velocity - w) <= cfg.max_angular_acceleration * DT
    assert np.linalg.norm(s.linear_velocity) <= cfg.max_linear_acceleration * DT  # the premise: no linear motion


def test_a_jog_of_a_group_with_a_continuous_joint_brakes_only_the_bounded_joint_at_its_limit():
    """JointJogFollower on a group whose first joint is continuous (no position limit, nq 2) and whose second is
    at its upper limit, both jogged upward (no acceleration bound: the velocity is the command): the continuous
    joint turns at the commanded speed, the bounded one stays on its limit and alone is reported there."""
    s = Scene(CONTINUOUS_URDF)
    g = s.group("")
    assert list(g.bounded_v) == [1]  # the premise: j_cont unbounded, j_rev bounded
    upper = float(s.q_max_v[g.v_indices[1]])
    f = JointJogFollower(s, g, StreamingConfig(command_timeout=10.0), None)
    q = s.q_from_joint_positions(["j_cont", "j_rev"], [0.0, upper])
    f.start(q[g.q_indices])
    speed = 0.5  # [rad/s]
    f.command(np.array([speed, speed]), 0.0)
    target = q.copy()
    target[g.q_indices] = f.step(DT, DT)
    assert_allclose(s.joint_positions(target, ["j_cont", "j_rev"]), [speed * DT, upper], rtol=0, atol=1e-14)
    assert f.bounds_reached() == [(1, "upper", upper)]


def _stream_follower(kind: str, cfg: StreamingConfig):
    """(a new follower of ``kind``, "jog" or "twist", where it starts, a command of it at ``now``: 0.1 per axis)."""
    if kind == "jog":
        s = scene("panda")
        g = s.group("arm")
        return (JointJogFollower(s, g, cfg, None), s.named_configuration("default")[g.q_indices],
                lambda f, now: f.command(np.full(g.nv, 0.1), now))
    return TwistFollower(cfg), pin.SE3.Identity(), lambda f, now: f.command(np.full(3, 0.1), np.zeros(3), now)


@pytest.mark.parametrize("kind", ["jog", "twist"])
def test_a_stopped_stream_has_no_command_its_age_is_infinite_and_a_restart_without_one_times_out(kind):
    """JointJogFollower.stop and TwistFollower.stop forget the command: its age is inf, as a new follower's (no
    command), so a stream started again without a command is timed out at its first step and ends (at rest:
    nothing to brake)."""
    cfg = StreamingConfig(command_timeout=0.1)
    assert _stream_follower(kind, cfg)[0].command_age(1.0) == math.inf  # the premise: a new one has none
    f, start, command = _stream_follower(kind, cfg)
    f.start(start)
    command(f, 0.0)
    f.step(DT, DT)
    assert f.command_age(DT) == DT  # the premise: a command, DT old
    f.stop()
    assert f.command_age(1.0) == math.inf
    f.start(f.target)
    f.step(DT, 1.0)
    assert f.timed_out and not f.streaming


def test_a_goal_on_the_line_of_sight_changes_only_the_range_and_never_turns_it():
    """A look_at goal on the start's own line of sight (nearer or farther: only the range changes): the direction
    stays the start's, every point on that ray (a direction cosine that rounds to just below 1 is still straight
    ahead, not behind), for random eyes, directions and ranges."""
    rng = np.random.default_rng(4)
    s = LineOfSightShaper(DT, 2.0, 10.0, 500.0)  # [rad/s, rad/s^2, rad/s^3]
    worst = 0.0  # [m] the farthest a point got from the start's ray
    for _ in range(24):
        eye, u = rng.normal(size=3), rng.normal(size=3)
        u /= np.linalg.norm(u)
        r0, r1 = rng.uniform(0.2, 2.0, size=2)
        s.reset(eye + r0 * u, eye)
        s.set_goal(eye + r1 * u, eye)
        for _ in range(5000):
            p = s.step()
            if p is None:
                break
            d = p - eye
            worst = max(worst, float(np.linalg.norm(np.cross(d, u))), -float(d @ u))
        assert not s.moving
    assert worst <= 1e-9


def test_a_pose_shaper_set_to_a_new_period_moves_as_one_built_for_it():
    """PoseShaper.set_dt (GoalSmoother calls it when the control rate changes): a shaper built at 2 ms and set to
    4 ms moves a step in position and rotation exactly as one built at 4 ms, step by step, to the goal."""
    linear, angular = (0.5, 1.0, 50.0), (1.5, 6.0, 300.0)  # (v, a, j) [m/s..., rad/s...]
    changed, built = PoseShaper(DT, linear, angular), PoseShaper(2 * DT, linear, angular)
    changed.set_dt(2 * DT)
    assert changed.dt == built.dt
    start = pin.SE3(np.eye(3), np.array([0.3, 0.0, 0.5]))
    goal = pin.SE3(pin.exp3(np.array([0.2, -0.1, 0.3])), start.translation + np.array([0.1, -0.05, 0.02]))
    for s in (changed, built):
        s.reset(start)
        s.set_goal(goal)
    steps = 0
    for steps in range(2000):
        a, b = changed.step(), built.step()
        if a is None or b is None:
            break
        assert_array_equal(a.homogeneous, b.homogeneous)
    assert a is None and b is None and steps > 50  # both at rest at the goal, in the same number of steps


def test_a_joint_goal_across_the_seam_of_a_continuous_joint_takes_the_short_way_on_the_circle():
    """JointTargetShaper on a group with a continuous joint (its q is (cos, sin): pin.integrate from the anchor):
    from 3.0 rad to -3.0 rad the short way is 0.28 rad through pi. Every target is on the unit circle, its angle
    increases monotonically past pi, and it arrives exactly at the goal; the bounded joint moves to its goal too."""
    s = Scene(CONTINUOUS_URDF)
    g = s.group("")
    names = ["j_cont", "j_rev"]
    start, goal = s.q_from_joint_positions(names, [3.0, 0.0]), s.q_from_joint_positions(names, [-3.0, 0.5])
    shaper = JointTargetShaper(s, g, DT, 1.0, 10.0, 500.0)
    shaper.reset(start[g.q_indices])
    shaper.set_goal(goal[g.q_indices])
    q, turned = start.copy(), []
    for _ in range(5000):
        target = shaper.step()
        if target is None:
            break
        q[g.q_indices] = target
        assert abs(math.hypot(q[0], q[1]) - 1.0) <= 1e-12
        turned.append(float(s.difference(start, q)[0]))  # [rad] j_cont's turn from the start
    assert not shaper.moving and len(turned) > 10
    assert np.diff(turned).min() >= -1e-12 and turned[-1] == pytest.approx(2 * math.pi - 6.0, abs=1e-12)
    assert_allclose(s.joint_positions(q, names), [-3.0, 0.5], rtol=0, atol=1e-12)


def test_a_twist_stream_that_timed_out_and_braked_to_rest_ends_with_its_target_at_rest():
    """TwistFollower: after its last command times out the target brakes within the acceleration limits and the
    stream ends once still; the target's velocities it then reports (what a pose goal would continue from) are
    zero, linear and angular."""
    cfg = StreamingConfig(command_timeout=0.1)
    f = TwistFollower(cfg)
    f.start(pin.SE3(np.eye(3), np.array([0.3, 0.0, 0.5])))
    f.command(np.array([0.1, 0.0, 0.0]), np.array([0.0, 0.0, 0.5]), 0.0)
    t = 0.0
    while f.streaming and t < 2.0:
        t += DT
        f.step(DT, t)
    assert not f.streaming and t > cfg.command_timeout and f.timed_out
    assert_array_equal(f.linear_velocity, np.zeros(3))
    assert_array_equal(f.angular_velocity, np.zeros(3))


# --- seed 5 (docs/mutation.md) -------------------------------------------------------------------------------

def test_a_max_acceleration_target_within_the_done_distance_of_its_goal_snaps_to_it_and_stops():
    """GoalSmoother (max_acceleration): a goal half of _DONE (1 nm) from the target at rest is "reached" at the first
    step, whose move (the whole distance in one step, shorter than a dt^2) is below _DONE too: the target is exactly
    the goal, at rest, and the smoother stops moving (it does not creep on at the step's speed)."""
    cfg = GoalSmoothingConfig(type="max_acceleration")
    s = GoalSmoother(cfg)
    start = pin.SE3(np.eye(3), np.array([0.3, 0.0, 0.5]))
    s.reset(start)
    offset = 0.5 * GoalSmoother._DONE  # [m]
    assert offset < cfg.max_linear_acceleration * DT**2  # the premise: the braking law moves it in one step
    goal = pin.SE3(np.eye(3), start.translation + np.array([offset, 0.0, 0.0]))
    s.set_goal(goal)
    assert s.step(DT) is not None
    assert not s.moving
    assert_array_equal(s.target.homogeneous, goal.homogeneous)
    assert not s.linear_velocity.any() and not s.angular_velocity.any()


def _leashed_turn(axis_point) -> LineOfSightShaper:
    """A turn about z from x toward y, leash 0.2 rad, stepped once with ``axis_point`` as the leash's anchor (the
    eye at the origin: the axis looks straight up, pi/2 from the target's direction)."""
    s = LineOfSightShaper(DT, 1.0, 10.0, 500.0, leash=0.2)
    eye = np.zeros(3)
    s.reset([1.0, 0.0, 0.0], eye)
    s.set_goal([0.0, 1.0, 0.0], eye)
    s.step(np.asarray(axis_point, dtype=float))
    return s


def test_an_axis_point_exactly_the_least_range_from_the_eye_leashes_the_line_of_sight_only_a_closer_one_not():
    """LineOfSightShaper: only a point *closer* than _MIN_RANGE to the eye gives no direction. An axis point exactly
    _MIN_RANGE above the eye still holds the target's direction at the leash (0.2 rad from straight up); one a float
    closer leaves it unleashed."""
    from roboplan_ik_ros.core.control.line_of_sight_shaper import _MIN_RANGE

    at = np.array([0.0, 0.0, _MIN_RANGE])
    assert float(np.linalg.norm(at)) == _MIN_RANGE  # the premise: exactly at it
    s = _leashed_turn(at)
    assert s.leashed
    assert math.acos(float(_direction(s.position, s.eye)[2])) == pytest.approx(0.2, abs=1e-9)
    assert not _leashed_turn([0.0, 0.0, math.nextafter(_MIN_RANGE, 0.0)]).leashed


def test_a_pose_shaper_taking_over_a_motion_is_not_leashed():
    """PoseShaper.continue_from (a twist handing over) starts a new motion: ``leashed`` (the last step pulled the
    target back) is False, also right after a step that was leashed (the premise: a frame 1 m away, leash 1 cm)."""
    s = PoseShaper(DT, (0.5, 1.0, 50.0), (1.5, 6.0, 300.0))
    start = pin.SE3(np.eye(3), np.array([0.3, 0.0, 0.5]))
    s.reset(start)
    s.set_goal(pin.SE3(np.eye(3), start.translation + np.array([0.1, 0.0, 0.0])))
    s.step(pin.SE3(np.eye(3), start.translation - np.array([1.0, 0.0, 0.0])), 0.01, 0.1)
    assert s.leashed
    s.continue_from(start, np.array([0.05, 0.0, 0.0]), np.zeros(3))
    assert not s.leashed


def test_a_joint_target_shaper_of_a_one_joint_group_moves_its_joint_to_the_goal():
    """JointTargetShaper on a one-joint group (a joint task's active_joints, Scene.subgroup): panda_joint4 from the
    default configuration 0.3 rad up, at 1 rad/s, 10 rad/s^2, 500 rad/s^3: every target within the joint's move,
    arriving exactly at the goal."""
    s = scene("panda")
    g = s.subgroup(s.group("arm"), ["panda_joint4"])
    assert g.nq == 1  # the premise
    start = s.named_configuration("default")[g.q_indices]
    goal = start + 0.3
    shaper = JointTargetShaper(s, g, DT, 1.0, 10.0, 500.0)
    shaper.reset(start)
    shaper.set_goal(goal)
    targets = []
    for _ in range(2000):
        target = shaper.step()
        if target is None:
            break
        targets.append(float(target[0]))
    assert not shaper.moving and len(targets) > 10
    assert np.diff(targets).min() >= 0.0 and np.diff(targets).max() <= 1.0 * DT * (1 + 1e-9)
    assert targets[-1] == goal[0]



# --- seed 6 (docs/mutation.md) -------------------------------------------------------------------------------

def test_a_max_speed_target_whose_offset_underflows_in_its_norm_steps_onto_the_goal_not_past_it():
    """GoalSmoother (max_speed): a goal 1e-170 m from the target (its square underflows: the distance reads 0) and
    turned 0.5 rad. The turn is not done, so the step is not the snap at _DONE; the translation, whose distance is
    "0", takes the whole offset in that step: the target's x is the goal's, not beyond it."""
    s = GoalSmoother(GoalSmoothingConfig(type="max_speed"))
    s.reset(pin.SE3.Identity())
    offset = 1e-170  # [m]
    assert float(np.linalg.norm([offset, 0.0, 0.0])) == 0.0  # the premise: the norm underflows
    goal = pin.SE3(pin.exp3(np.array([0.0, 0.0, 0.5])), np.array([offset, 0.0, 0.0]))
    s.set_goal(goal)
    target = s.step(DT)
    assert s.moving  # the premise: still turning
    assert target.translation[0] == offset and not target.translation[1:].any()


def test_a_stopped_jog_reports_no_joint_at_a_bound_also_once_restarted_before_its_next_step():
    """JointJogFollower: a jog on its limit reports it (bounds_reached); stop() ends the stream and with it what its
    steps found: no joint is reported after it, nor after start() (a new stream, e.g. a jog after a pause, which the
    node's status reads before the next tick) until a step finds a limit again."""
    f, q, upper, dq = _jog_pushed_onto_its_upper_limit()
    f.stop()
    assert f.bounds_reached() == []
    f.start(q)
    assert f.bounds_reached() == []
    f.command(dq, 2 * DT)
    f.step(DT, 3 * DT)
    assert f.bounds_reached() == [(0, "upper", upper)]  # found again by the step


def test_a_range_goal_nearer_the_eye_than_the_least_range_is_shaped_at_the_limits_times_the_least_range():
    """LineOfSightShaper: the range is shaped at the turn limits times the larger of the two ranges, but never times
    less than _MIN_RANGE (nearer, a point gives no direction): from the eye (range 0) to a goal 0.4 _MIN_RANGE above
    it, the target follows, along the line of sight, the trajectory of a TargetShaper at the limits times _MIN_RANGE
    (times 0.4 _MIN_RANGE it would arrive later)."""
    from roboplan_ik_ros.core.control.line_of_sight_shaper import _MIN_RANGE

    limits = (1.0, 5.0, 50.0)  # [rad/s, rad/s^2, rad/s^3]
    s = LineOfSightShaper(DT, *limits)
    eye = np.zeros(3)
    s.reset(eye, eye)
    r1 = 0.4 * _MIN_RANGE  # [m]
    s.set_goal([0.0, 0.0, r1], eye)
    reference = TargetShaper(1, DT, *(x * _MIN_RANGE for x in limits))
    reference.reset([0.0])
    reference.set_goal([r1])
    points, ranges = [], []
    for _ in range(5000):
        p, x = s.step(), reference.step()
        if p is None or x is None:
            assert p is None and x is None, "arrived at different steps"
            break
        points.append(p.copy())
        ranges.append(float(x[0]))
    points = np.array(points)
    assert len(points) > 10 and points[-1, 2] == r1
    assert not points[:, :2].any()  # along the line of sight
    assert_allclose(points[:, 2], ranges, rtol=1e-12, atol=0.0)


# --- seed 8 (docs/mutation.md) -------------------------------------------------------------------------------

def test_a_max_speed_target_moves_a_goal_without_rotation_along_the_line_at_the_linear_speed_keeping_its_rotation():
    """GoalSmoother (max_speed): a goal that differs from the target only in its position (no rotation between them:
    log3 gives exactly 0) moves the target max_linear_speed dt along the line per step, its rotation unchanged: the
    angular step is skipped for a zero angle (dividing by it failed)."""
    cfg = GoalSmoothingConfig(type="max_speed")
    s = GoalSmoother(cfg)
    start = pin.SE3(np.eye(3), np.array([0.3, 0.0, 0.5]))
    s.reset(start)
    offset = np.array([0.0, 0.03, -0.04])  # [m] 0.05 m: many steps at 0.5 m/s
    s.set_goal(pin.SE3(np.eye(3), start.translation + offset))
    target = s.step(DT)
    assert target is not None and s.moving
    step = cfg.max_linear_speed * DT  # [m]
    assert_allclose(target.translation, start.translation + step * offset / np.linalg.norm(offset), rtol=0, atol=1e-15)
    assert_array_equal(target.rotation, np.eye(3))


def test_a_max_acceleration_goal_turned_exactly_the_done_angle_away_is_not_reached_yet():
    """GoalSmoother (max_acceleration): only a goal *closer* than _DONE (and a step below it) is reached. A goal turned
    exactly _DONE rad from the target at rest (its computed angle is _DONE to the bit) is turned toward, at most
    max_angular_acceleration dt^2 in the first step (1e-4 rad/s^2: 0.4 _DONE), not snapped to; one a float
    closer is snapped to at once."""
    cfg = GoalSmoothingConfig(type="max_acceleration", max_angular_acceleration=1e-4)
    start = pin.SE3(np.eye(3), np.array([0.3, 0.0, 0.5]))
    done = GoalSmoother._DONE
    assert cfg.max_angular_acceleration * DT**2 < done  # the premise: the first step is below _DONE
    for angle, reached in ((done, False), (math.nextafter(done, 0.0), True)):
        goal = pin.SE3(pin.exp3(np.array([angle, 0.0, 0.0])), start.translation)
        assert float(np.linalg.norm(pin.log3(goal.rotation))) == angle  # the premise: the angle computed is exact
        s = GoalSmoother(cfg)
        s.reset(start)
        s.set_goal(goal)
        target = s.step(DT).copy()
        assert s.moving is not reached, angle
        if reached:
            assert_array_equal(target.homogeneous, goal.homogeneous)
        else:
            turned = float(np.linalg.norm(pin.log3(target.rotation)))
            assert 0.0 < turned <= cfg.max_angular_acceleration * DT**2 * (1 + 1e-9), turned
