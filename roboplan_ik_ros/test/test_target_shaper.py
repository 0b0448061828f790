"""The goal shapers on their own: TargetShaper (a vector, Ruckig), JointTargetShaper (a group's q) and
LineOfSightShaper (a look_at's point): time-optimal within their limits, continuous under a stream of goals,
held at their leash by a target that cannot follow."""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
import pytest
from ruckig import InputParameter, OutputParameter, Ruckig

from models import scene
from roboplan_ik_ros.core.control.line_of_sight_shaper import LineOfSightShaper
from roboplan_ik_ros.core.control.target_shaper import JointTargetShaper, TargetShaper

DT = 0.002
V, A, J = 1.5, 6.0, 3000.0  # per coordinate [units/s, /s^2, /s^3]
TOL = 1e-9  # round-off on the finite differences


def run(shaper, ticks: int, anchor=None) -> np.ndarray:
    """The targets of ``ticks`` steps (the last target repeated once it is at rest)."""
    out, last = [], shaper.position.copy()
    for _ in range(ticks):
        x = shaper.step(anchor)
        last = last if x is None else x.copy()
        out.append(last)
    return np.array(out)


def differences(x: np.ndarray, start: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-tick velocity, acceleration and jerk of a sampled target that started at rest at ``start``."""
    x = np.vstack([start, start, start, x])
    return (np.abs(np.diff(x, 1, axis=0)) / DT, np.abs(np.diff(x, 2, axis=0)) / DT**2,
            np.abs(np.diff(x, 3, axis=0)) / DT**3)


def ruckig_duration(x0, x1, v, a, j) -> float:
    n = len(x0)
    otg, inp, out = Ruckig(n, DT), InputParameter(n), OutputParameter(n)
    inp.current_position, inp.target_position = list(x0), list(x1)
    inp.max_velocity, inp.max_acceleration, inp.max_jerk = [v] * n, [a] * n, [j] * n
    otg.update(inp, out)
    return out.trajectory.duration


def test_a_step_arrives_at_rest_in_ruckigs_time_within_the_limits_without_overshoot():
    s = TargetShaper(2, DT, V, A, J)
    s.reset([0.0, 0.0])
    assert s.step() is None  # no goal: no motion
    goal = np.array([0.8, -0.3])
    s.set_goal(goal)
    x = run(s, 1000)
    arrived = int(np.flatnonzero(np.all(x == goal, axis=1))[0]) + 1
    assert abs(arrived * DT - ruckig_duration([0, 0], goal, V, A, J)) <= DT  # the time-optimal duration
    assert not s.moving and np.array_equal(s.position, goal)
    # phase-synchronized: a straight line, never past the goal
    progress = x @ goal / (goal @ goal)
    assert np.allclose(np.outer(progress, goal), x, atol=1e-9) and progress.max() <= 1.0 + 1e-12
    v, a, j = differences(x, np.zeros(2))
    assert v.max() <= V + TOL and a.max() <= A + 1e-6 and j.max() <= J * (1 + 1e-6)


def test_a_stream_of_goals_moves_the_target_continuously():
    """A goal every 5 ticks along a sine (each a new target position of the same Ruckig state): velocity,
    acceleration and jerk of the target stay within the limits throughout, and it ends at the last goal."""
    s = TargetShaper(1, DT, V, A, J)
    s.reset([0.0])
    xs = []
    for k in range(1000):
        if k % 5 == 0:
            s.set_goal([0.4 * math.sin(2 * math.pi * k * DT)])
        x = s.step()
        xs.append(s.position.copy() if x is None else x.copy())
    xs += list(run(s, 500))
    v, a, j = differences(np.array(xs), np.zeros(1))
    assert v.max() <= V + TOL and a.max() <= A + 1e-6 and j.max() <= J * (1 + 1e-6)
    assert np.array_equal(s.position, s.goal) and not s.moving


def test_the_leash_holds_the_target_near_what_does_not_follow_and_it_goes_on_from_there():
    leash = 0.05
    s = TargetShaper(3, DT, V, A, J, euclidean=True, leash=leash)
    s.reset(np.zeros(3))
    goal = np.array([0.6, 0.0, 0.8])
    s.set_goal(goal)
    stuck = np.zeros(3)  # what the task measures: it does not move
    x = run(s, 1000, stuck)
    assert np.linalg.norm(x, axis=1).max() <= leash + 1e-12 and s.leashed and s.moving
    assert np.isclose(np.linalg.norm(s.position), leash)
    assert s.velocity @ (goal / np.linalg.norm(goal)) <= 1e-12  # no velocity away from the anchor: no wind-up
    free = run(s, 2000)  # released: it goes on to the goal from the leash
    assert np.array_equal(free[-1], goal) and not s.moving
    assert np.linalg.norm(np.diff(np.vstack([x[-1], free]), axis=0), axis=1).max() <= V * DT + TOL


def test_euclidean_limits_bound_the_speed_along_any_direction():
    s = TargetShaper(3, DT, V, A, J, euclidean=True)
    s.reset(np.zeros(3))
    goal = np.array([1.0, 1.0, 1.0])  # per-axis limits would move it sqrt(3) times faster
    s.set_goal(goal)
    x = run(s, 2000)
    speed = np.linalg.norm(np.diff(np.vstack([np.zeros(3), x]), axis=0), axis=1) / DT
    assert speed.max() <= V + TOL and speed.max() >= 0.99 * V and np.array_equal(x[-1], goal)


def test_a_joint_target_moves_on_from_a_goal_that_changes_midway():
    panda = scene("panda")
    group = panda.group("arm")
    shaper = JointTargetShaper(panda, group, DT, 1.0, 5.0, 2000.0)
    start = panda.named_configuration("default")[group.q_indices]
    shaper.reset(start)
    first = start + np.array([0.3, -0.1, 0.0, 0.05, 0.0, 0.0, -0.2])
    shaper.set_goal(first)
    targets = [shaper.step().copy() for _ in range(100)]
    second = start - 0.1  # turns around while moving
    shaper.set_goal(second)
    while shaper.moving:
        targets.append(shaper.step().copy())
    v, a, j = differences(np.array(targets), start)
    assert v.max() <= 1.0 + TOL and a.max() <= 5.0 + 1e-6 and j.max() <= 2000.0 * (1 + 1e-6)
    assert np.array_equal(shaper.target, second) and np.array_equal(shaper.goal, second)


def _direction(p, eye):
    d = p - eye
    return d / np.linalg.norm(d)


def test_a_line_of_sight_turns_about_a_fixed_axis_at_most_its_turn_limits():
    speed, accel, jerk = 2.0, 10.0, 500.0
    s = LineOfSightShaper(DT, speed, accel, jerk)
    eye = np.array([0.3, 0.0, 0.5])
    s.reset(eye + [0.0, 0.0, -1.0], eye)
    goal = eye + [0.5, 0.0, 0.0]  # 90 deg, at half the range
    s.set_goal(goal, eye)
    points = run(s, 3000)
    assert np.array_equal(points[-1], goal) and not s.moving
    u = np.array([_direction(p, eye) for p in points])
    assert np.abs(u[:, 1]).max() <= 1e-12  # in the plane of the two directions: about a fixed axis
    angle = np.arctan2(u[:, 0], -u[:, 2])  # from the start direction toward the goal's
    turned = np.diff(np.concatenate([[0.0, 0.0, 0.0], angle]))
    assert turned.min() >= -1e-12 and angle.max() <= math.pi / 2 + 1e-9  # monotone, never past the goal
    assert np.abs(turned).max() / DT <= speed + 1e-6 and np.abs(np.diff(turned)).max() / DT**2 <= accel + 1e-3
    arrived = int(np.flatnonzero(np.all(points == goal, axis=1))[0]) + 1
    assert arrived * DT <= ruckig_duration([0.0], [math.pi / 2], speed, accel, jerk) + DT


def test_a_line_of_sight_goal_that_changes_midway_turns_on_without_a_jump():
    speed, accel, jerk = 2.0, 10.0, 500.0
    s = LineOfSightShaper(DT, speed, accel, jerk)
    eye = np.zeros(3)
    s.reset([1.0, 0.0, 0.0], eye)
    s.set_goal([0.0, 1.0, 0.0], eye)
    points = list(run(s, 150))
    s.set_goal([0.0, 0.0, 1.0], eye)  # now up: a new axis, mid-turn
    points += list(run(s, 2000))
    u = np.array([_direction(p, eye) for p in points])
    rate = np.array([np.linalg.norm(pin.log3(_rotation_between(u[k], u[k + 1]))) for k in range(len(u) - 1)]) / DT
    assert rate.max() <= math.sqrt(3) * speed  # the documented bound while a moving target turns to a new goal
    w = np.array([np.cross(u[k], u[k + 1]) / DT for k in range(len(u) - 1)])  # angular velocity of the direction
    assert np.linalg.norm(np.diff(w, axis=0), axis=1).max() / DT <= math.sqrt(3) * accel  # no jump in the turn rate
    assert np.allclose(points[-1], [0.0, 0.0, 1.0], atol=1e-12)


def _rotation_between(a, b):
    w = np.cross(a, b)
    s, c = np.linalg.norm(w), float(a @ b)
    return pin.exp3(w / s * math.atan2(s, c)) if s > 1e-15 else np.eye(3)


def test_a_line_of_sight_held_by_its_leash_waits_near_the_axis():
    s = LineOfSightShaper(DT, 2.0, 10.0, 500.0, leash=0.2)
    eye = np.zeros(3)
    s.reset([1.0, 0.0, 0.0], eye)
    s.set_goal([0.0, 1.0, 0.0], eye)
    axis_point = np.array([1.0, 0.0, 0.0])  # the axis does not turn
    for _ in range(1000):
        p = s.step(axis_point)
    assert math.isclose(math.acos(_direction(p, eye) @ [1.0, 0.0, 0.0]), 0.2, abs_tol=1e-9)
    assert s.leashed and s.moving
    for _ in range(2000):  # released: on to the goal
        s.step()
    assert np.allclose(s.position, [0.0, 1.0, 0.0], atol=1e-12) and not s.moving


# --- target_shaper.py's whole-module mutation round (docs/mutation.md) ---------------------------------------

def _targets_to_rest(shaper, ticks: int = 5000) -> list[np.ndarray]:
    """The targets of a JointTargetShaper's steps (without a leash's centre) until it is at rest."""
    targets = []
    for _ in range(ticks):
        target = shaper.step()
        if target is None:
            break
        targets.append(target.copy())
    return targets


def test_a_joint_target_shaper_of_a_group_not_at_the_start_of_q_moves_its_joints_to_the_goal():
    """A contiguous group whose q does not start at index 0 (panda_joint4 and 5: q[3:5]) writes its targets into
    its own q entries: both joints arrive exactly at the goal within the speed limit."""
    s = scene("panda")
    g = s.subgroup(s.group("arm"), ["panda_joint4", "panda_joint5"])
    assert list(g.q_indices) == [3, 4]  # the premise
    start = s.named_configuration("default")[g.q_indices]
    goal = start + np.array([0.3, -0.2])
    shaper = JointTargetShaper(s, g, DT, 1.0, 10.0, 500.0)
    shaper.reset(start)
    shaper.set_goal(goal)
    targets = _targets_to_rest(shaper)
    assert not shaper.moving and np.array_equal(targets[-1], goal) and np.array_equal(shaper.target, goal)
    v, _, _ = differences(np.array(targets), start)
    assert v.max() <= 1.0 + TOL


@pytest.mark.parametrize("velocity", [None, np.full(7, 0.1)])
def test_a_joint_target_shaper_taken_over_at_a_configuration_has_its_goal_there(velocity):
    """reset / continue_from: target and goal := the configuration (whatever velocity it is taken over with)."""
    panda = scene("panda")
    group = panda.group("arm")
    shaper = JointTargetShaper(panda, group, DT, 1.0, 5.0, 2000.0)
    q = panda.named_configuration("default")[group.q_indices] + 0.1
    shaper.continue_from(q, velocity)
    assert np.array_equal(shaper.target, q) and np.array_equal(shaper.goal, q)


def test_a_leashed_joint_target_shaper_stepped_without_a_configuration_moves_free_to_its_goal():
    """step() without q: no leash's centre, so no leash (leash 1 mrad, which would hold it at the start)."""
    panda = scene("panda")
    group = panda.group("arm")
    shaper = JointTargetShaper(panda, group, DT, 1.0, 5.0, 2000.0, leash=0.001)
    start = panda.named_configuration("default")[group.q_indices]
    goal = start + 0.2
    shaper.reset(start)
    shaper.set_goal(goal)
    targets = _targets_to_rest(shaper)
    assert not shaper.moving and np.array_equal(targets[-1], goal) and not shaper.leashed


def test_a_fractional_jerk_bound_replaces_an_integer_one():
    """Limits given as integers (as a YAML may give them), then a jerk bound of 150.5: j_max is 150.5."""
    s = TargetShaper(1, DT, 1, 4, 100)
    s.set_limits(j_max=150.5)
    assert np.array_equal(s.j_max, [150.5])


@pytest.mark.parametrize("field, value", [("v_max", 0.0), ("v_max", math.inf), ("a_max", 0.0), ("j_max", -1.0),
                                          ("v_max", math.nan)])
def test_limits_set_at_run_time_that_no_shaper_takes_are_refused_naming_them_and_change_nothing(field, value):
    """set_limits (a joint target's set_speed, a look_at's range) checks what the constructor checks: a zero, negative,
    NaN or (for v_max) infinite limit is refused at once, naming it, and the shaper keeps its limits and goes on to
    its goal (Ruckig would have refused it at the next step, naming no field)."""
    s = TargetShaper(2, DT, V, A, J)
    s.set_goal(np.array([0.1, -0.2]))
    with pytest.raises(ValueError, match=field if field == "v_max" else "a_max, j_max"):
        s.set_limits(**{field: value})
    assert np.array_equal(s.v_max, [V, V]) and np.array_equal(s.a_max, [A, A]) and np.array_equal(s.j_max, [J, J])
    np.testing.assert_allclose(run(s, 2000)[-1], [0.1, -0.2], atol=TOL)


def test_a_euclidean_target_exactly_at_its_leash_is_not_pulled_back():
    """The leash pulls back only a target beyond it: a step that ends exactly the leash from the anchor keeps
    its velocity and is not leashed (the twin shaper without a leash tells where the step ends)."""
    free = TargetShaper(1, DT, V, A, J, euclidean=True)
    free.reset([0.0])
    free.set_goal([1.0])
    for _ in range(50):
        free.step()
    end = free.step().copy()
    assert end[0] > 0.0 and math.sqrt(end[0] * end[0]) == end[0]  # the premise: the distance is exactly end

    held = TargetShaper(1, DT, V, A, J, euclidean=True, leash=float(end[0]))
    held.reset([0.0])
    held.set_goal([1.0])
    for _ in range(50):
        held.step()
    x = held.step(np.zeros(1))
    assert np.array_equal(x, end) and np.array_equal(held.velocity, free.velocity) and held.leashed is False


def test_moving_and_leashed_are_false_at_rest_and_after_a_step_without_a_leash():
    """moving and leashed are bools: False once reset, and leashed False after a step the leash did not act on."""
    s = TargetShaper(2, DT, V, A, J, leash=0.1)
    s.reset([0.0, 0.0])
    assert s.moving is False and s.leashed is False
    s.set_goal([1.0, 0.0])
    s.step()
    assert s.moving is True and s.leashed is False


@pytest.mark.parametrize("speed, share", [(0.4, 0.8), (0.8, 1.0)])
def test_a_euclidean_goal_moves_a_moving_target_at_the_limits_times_the_share_its_motion_uses_at_most_the_limits(
        speed, share):
    """v_max 0.5: a target moving along x at ``speed`` gets a goal along y. The x axis keeps the share of the
    limits its velocity uses (speed / v_max, at most 1: a target faster than the limit brakes to it), the y axis
    its direction's (1): the target moves as a per-coordinate shaper with those limits."""
    v_max, a_max, j_max = 0.5, 2.0, 100.0
    s = TargetShaper(2, DT, v_max, a_max, j_max, euclidean=True)
    reference = TargetShaper(2, DT, [share * v_max, v_max], [share * a_max, a_max], [share * j_max, j_max])
    for shaper in (s, reference):
        shaper.continue_from([0.0, 0.0], [speed, 0.0])
        shaper.set_goal([0.0, 1.0])
    assert np.array_equal(run(s, 3000), run(reference, 3000))

