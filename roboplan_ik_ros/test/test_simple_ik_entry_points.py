"""SimpleIK's entry points beside solve. solve_nearby: no joint of the group moves more than
max_deviation from the seed (checked independently on every answer), reachable nearby goals are
solved, goals that need a larger motion fail cleanly, bad input is named. solve_global: answers pass
the feasibility callback, a callback that rejects everything fails cleanly, the search starts from
random configurations. solve_path: a straight line without joint jumps, a path leaving the workspace
stops and says where."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from models import scene
from roboplan_ik_ros.core import FrameGoal, InvalidInputError, SimpleIK, SimpleIKOptions
from test_simple_ik import MAX_TIME, SOLVER_SEED, Checker, continuous_ur5, random_goal_configurations

TIP = "panda_hand_tcp"


@pytest.fixture(scope="module")
def panda():
    s = scene("panda")
    return s, Checker("panda", s), s.named_configuration("default")


def test_nearby_goals_are_solved_within_the_deviation(panda):
    s, check, _ = panda
    group = s.group("arm")
    ik = SimpleIK(s, SimpleIKOptions(group_name="arm", max_time=MAX_TIME, seed=SOLVER_SEED))
    rng = np.random.default_rng(21)
    d, solved = 0.3, 0
    seeds = random_goal_configurations(s, "arm", s.named_configuration("default"), 30, seed=22)
    for q_seed in seeds:
        q_goal = q_seed.copy()
        q_goal[group.q_indices] += rng.uniform(-0.2, 0.2, group.nv)
        q_goal[group.q_indices] = np.clip(q_goal[group.q_indices], s.q_min_v[group.v_indices], s.q_max_v[group.v_indices])
        goal = FrameGoal(TIP, check.pose(q_goal, TIP))
        res = ik.solve_nearby([goal], q_seed, d)
        assert check.valid(res.q)
        assert np.abs(res.q[group.q_indices] - q_seed[group.q_indices]).max() <= d + 1e-12
        if res.success:
            assert check.reached(res.q, [goal])
            solved += 1
    assert solved >= 27, f"solved {solved}/30"


def test_goal_needing_a_larger_motion_fails_cleanly(panda):
    """A goal 1 rad of joint 1 away (solve finds solutions that move some joint by ~0.5 rad or more):
    solve_nearby(0.1) finds none and returns the seed."""
    s, check, q0 = panda
    group = s.group("arm")
    q_goal = q0.copy()
    q_goal[group.q_indices[0]] += 1.0
    goal = FrameGoal(TIP, check.pose(q_goal, TIP))
    ik = SimpleIK(s, SimpleIKOptions(group_name="arm", max_time=MAX_TIME, seed=SOLVER_SEED))
    assert ik.solve([goal], q0).success
    res = ik.solve_nearby([goal], q0, 0.1)
    assert not res.success and "no solution" in res.message
    np.testing.assert_array_equal(res.q, q0)


def test_nearby_does_not_change_later_solves(panda):
    """The narrowed limits belong to that call only: a plain solve afterwards may move far again."""
    s, check, q0 = panda
    group = s.group("arm")
    q_goal = q0.copy()
    q_goal[group.q_indices[0]] += 1.0
    goal = FrameGoal(TIP, check.pose(q_goal, TIP))
    ik = SimpleIK(s, SimpleIKOptions(group_name="arm", max_time=MAX_TIME, seed=SOLVER_SEED))
    assert not ik.solve_nearby([goal], q0, 0.1).success
    res = ik.solve([goal], q0)
    assert res.success and np.abs(res.q - q0).max() > 0.3


@pytest.mark.parametrize("d", [0.0, -1.0, float("nan")])
def test_bad_max_deviation(panda, d):
    s, check, q0 = panda
    ik = SimpleIK(s, SimpleIKOptions(group_name="arm"))
    with pytest.raises(InvalidInputError, match="max_deviation"):
        ik.solve_nearby([FrameGoal(TIP, check.pose(q0, TIP))], q0, d)


def test_seed_far_outside_the_limits_is_named(panda):
    s, check, q0 = panda
    q = q0.copy()
    q[3] = s.q_max_v[3] + 0.5  # panda_joint4
    ik = SimpleIK(s, SimpleIKOptions(group_name="arm"))
    with pytest.raises(InvalidInputError, match="panda_joint4.*more than max_deviation 0.1"):
        ik.solve_nearby([FrameGoal(TIP, check.pose(q0, TIP))], q, 0.1)


# ------------------------------------------------------- continuous joints (Kinova: q as cos, sin)
KINOVA_TIP = "j2s6s200_end_effector"


@pytest.fixture(scope="module")
def kinova():
    s = scene("kinova")
    return s, Checker("kinova", s)


def _deviation(s, q_from, q_to) -> np.ndarray:
    """|q_to ⊖ q_from| per group joint: the angle a continuous joint turns the short way (pin.difference)."""
    return np.abs(s.difference(q_from, q_to)[s.group("").v_indices])


def _angle(q, iq) -> float:
    return float(np.arctan2(q[iq + 1], q[iq]))


def _with_angle(q, iq, angle) -> np.ndarray:
    q = q.copy()
    q[iq], q[iq + 1] = np.cos(angle), np.sin(angle)
    return q


def test_kinova_nearby_goals_within_the_deviation(kinova):
    """Kinova (joints 1, 4, 6 continuous): seeds with joint 1 just below +pi, goals a random displacement
    of up to 0.2 rad per joint away (about half of them across pi): every answer moves no joint more
    than max_deviation from the seed, measured by pin.difference (the short way round), and is reached."""
    s, check = kinova
    group = s.group("")
    iq1 = int(group.continuous_q[0])
    ik = SimpleIK(s, SimpleIKOptions(max_time=MAX_TIME, seed=SOLVER_SEED))
    rng = np.random.default_rng(41)
    d, solved, crossed, tried = 0.3, 0, 0, 0
    for q in random_goal_configurations(s, "", s.neutral(), 60, seed=42):
        q_seed = _with_angle(q, iq1, np.pi - 0.05)
        q_goal = s.integrate(q_seed, rng.uniform(-0.2, 0.2, s.model.nv))
        s.clip_to_limits(q_goal, group)
        if s.in_collision(q_seed) or s.in_collision(q_goal):
            continue
        tried += 1
        goal = FrameGoal(KINOVA_TIP, check.pose(q_goal, KINOVA_TIP))
        res = ik.solve_nearby([goal], q_seed, d)
        assert check.valid(res.q)
        assert _deviation(s, q_seed, res.q).max() <= d + 1e-9
        if res.success:
            assert check.reached(res.q, [goal])
            solved += 1
            crossed += _angle(res.q, iq1) < 0.0  # joint 1 went past +pi (the angle wrapped to -pi)
        if tried == 25:
            break
    assert tried == 25 and solved >= 23, f"solved {solved}/{tried}"
    assert crossed >= 5, f"only {crossed} answers crossed pi"


def test_kinova_goal_needing_a_larger_turn_fails_nearby(kinova):
    """The wrist (joint 6, continuous) must turn 1 rad: solve_nearby(0.3) finds no answer and returns the
    seed, solve finds one; with max_deviation >= pi nothing bounds the continuous joints."""
    s, check = kinova
    group = s.group("")
    q0 = random_goal_configurations(s, "", s.neutral(), 1, seed=43)[0]
    iq6 = int(group.continuous_q[2])
    q_goal = _with_angle(q0, iq6, _angle(q0, iq6) + 1.0)
    goal = FrameGoal(KINOVA_TIP, check.pose(q_goal, KINOVA_TIP))
    ik = SimpleIK(s, SimpleIKOptions(max_time=0.02, seed=SOLVER_SEED))
    res = ik.solve_nearby([goal], q0, 0.3)
    assert not res.success and "no solution" in res.message
    np.testing.assert_array_equal(res.q, q0)
    assert ik.solve([goal], q0).success
    res = ik.solve_nearby([goal], q0, 1.2)
    assert res.success and check.reached(res.q, [goal]) and _deviation(s, q0, res.q).max() <= 1.2 + 1e-9


def test_kinova_nearby_restarts_stay_within_the_deviation(kinova):
    """The restarts of solve_nearby draw every joint within max_deviation of the seed, continuous joints
    included (by pin.difference, from a seed angle near -pi so that the window wraps), and cover it."""
    s, check = kinova
    group = s.group("")
    q_seed = _with_angle(s.neutral(), int(group.continuous_q[1]), -np.pi + 0.1)
    ik = SimpleIK(s, SimpleIKOptions(seed=SOLVER_SEED))
    ws = ik._nearby_workspace(ik._workspace(group, 1), q_seed, 0.4)
    rng = np.random.default_rng(44)
    dev = np.array([s.difference(q_seed, ws.random_configuration(rng, q_seed))[group.v_indices] for _ in range(500)])
    assert np.abs(dev).max() <= 0.4 + 1e-12
    assert np.all(dev.min(axis=0) < -0.3) and np.all(dev.max(axis=0) > 0.3)


def _kinova_line_start(s):
    """A bent, collision-free Kinova configuration 0.35 m from the base axis with joint 1 (the base,
    continuous) at pi - 0.1 and the wrist (joint 6, continuous) at -2.865."""
    q = s.q_from_joint_positions(list(s.group("").joint_names), [np.pi - 0.1, 3.744, 0.595, 1.271, 0.811, -2.865])
    assert not s.in_collision(q) and s.within_limits(q)
    return q


def test_kinova_straight_line_without_joint_jump(kinova):
    """A 0.3 m line at 1 cm spacing tangential to the base, so that the base joint (continuous) turns
    through pi: every waypoint reached, valid, and no joint turns more than max_joint_step between
    consecutive waypoints (pin.difference, the short way)."""
    s, check = kinova
    group = s.group("")
    q0 = _kinova_line_start(s)
    T0 = check.pose(q0, KINOVA_TIP)
    radial = np.r_[T0.translation[:2], 0.0]
    tangent = np.cross(radial, [0.0, 0.0, 1.0])  # the direction in which the base angle grows
    ik = SimpleIK(s, SimpleIKOptions(max_time=MAX_TIME, seed=SOLVER_SEED))
    poses = _line(T0, tangent, 0.3, 0.01)
    res = ik.solve_path(KINOVA_TIP, poses, q0, max_joint_step=0.1)
    assert res.success and res.fraction == 1.0, res.message
    previous = q0
    for q, T in zip(res.q_path, poses):
        assert check.reached(q, [FrameGoal(KINOVA_TIP, T)])
        assert _deviation(s, previous, q).max() <= 0.1 + 1e-9
        previous = q
    iq1 = int(group.continuous_q[0])
    assert _angle(q0, iq1) > 3.0 and _angle(res.q_path[-1], iq1) < -1.0  # the base turned through pi


def test_kinova_path_refuses_a_joint_jump(kinova):
    """Waypoint 5 turns the tool 1 rad about its axis (the continuous wrist would jump 1 rad): the path
    stops there, with the fraction and the waypoint named, the first 5 solved without a jump."""
    s, check = kinova
    q0 = _kinova_line_start(s)
    T0 = check.pose(q0, KINOVA_TIP)
    poses = _line(T0, [0.0, 0.0, 1.0], 0.04, 0.01)
    turned = pin.SE3(T0.rotation @ pin.exp3(np.array([0.0, 0.0, 1.0])), poses[-1].translation)
    poses = poses + [turned]
    ik = SimpleIK(s, SimpleIKOptions(max_time=0.02, seed=SOLVER_SEED))
    res = ik.solve_path(KINOVA_TIP, poses, q0, max_joint_step=0.1)
    assert not res.success and res.fraction == pytest.approx(5 / 6)
    assert "waypoint 5 of 6: no solution within max_joint_step 0.1" in res.message
    previous = q0
    for q in res.q_path:
        assert _deviation(s, previous, q).max() <= 0.1 + 1e-9
        previous = q


# ------------------------------------------------------------------------------- solve_global
def test_solve_global_honours_the_feasibility_callback(panda):
    """A callback that accepts only elbow-up answers (joint 4 above -2.0 rad, say) gets only such
    answers, each checked independently; the callback sees full configurations."""
    s, check, q0 = panda
    ik = SimpleIK(s, SimpleIKOptions(group_name="arm", max_time=MAX_TIME, seed=SOLVER_SEED))
    seen = []

    def feasible(q):
        seen.append(q.shape)
        return q[3] > -2.0

    solved = 0
    for q_goal in random_goal_configurations(s, "arm", q0, 15, seed=23):
        if q_goal[3] <= -2.0:
            continue
        goal = FrameGoal(TIP, check.pose(q_goal, TIP))
        res = ik.solve_global([goal], q0, feasible)
        assert check.valid(res.q)
        if res.success:
            assert res.q[3] > -2.0 and check.reached(res.q, [goal])
            solved += 1
    assert solved >= 5 and all(shape == q0.shape for shape in seen)


def test_solve_global_rejecting_everything_fails_cleanly(panda):
    s, check, q0 = panda
    ik = SimpleIK(s, SimpleIKOptions(group_name="arm", max_time=0.02, seed=SOLVER_SEED))
    goal = FrameGoal(TIP, check.pose(q0, TIP))
    res = ik.solve_global([goal], q0, lambda q: False)
    assert not res.success and "rejected by feasible" in res.message
    np.testing.assert_array_equal(res.q, q0)


def test_solve_global_does_not_start_from_the_seed(panda):
    """The seed is already a solution: solve returns it in 0 iterations, solve_global searches."""
    s, check, q0 = panda
    ik = SimpleIK(s, SimpleIKOptions(group_name="arm", max_time=MAX_TIME, seed=SOLVER_SEED))
    goal = FrameGoal(TIP, check.pose(q0, TIP))
    assert ik.solve([goal], q0).iterations == 0
    res = ik.solve_global([goal], q0)
    assert res.success and res.iterations > 0 and check.reached(res.q, [goal])


def test_solve_global_bad_callback(panda):
    s, check, q0 = panda
    ik = SimpleIK(s, SimpleIKOptions(group_name="arm"))
    with pytest.raises(InvalidInputError, match="feasible: expected a callable"):
        ik.solve_global([FrameGoal(TIP, check.pose(q0, TIP))], q0, feasible=3)


# --------------------------------------------------------------------------------- solve_path
def _line(T0: pin.SE3, direction, length: float, spacing: float) -> list[pin.SE3]:
    n = int(round(length / spacing))
    d = np.asarray(direction, dtype=float) / np.linalg.norm(direction)
    return [pin.SE3(T0.rotation, T0.translation + d * (length * k / n)) for k in range(n + 1)]


def test_straight_line_without_joint_jump(panda):
    """0.5 m straight down-and-forward line at 1 cm spacing from the default pose: every waypoint
    reached (independent FK), within the limits, collision-free, no joint moving more than
    max_joint_step between consecutive waypoints."""
    s, check, q0 = panda
    ik = SimpleIK(s, SimpleIKOptions(group_name="arm", max_time=MAX_TIME, seed=SOLVER_SEED))
    poses = _line(check.pose(q0, TIP), [0.3, 0.2, -0.3], 0.5, 0.01)
    res = ik.solve_path(TIP, poses, q0, max_joint_step=0.1)
    assert res.success and res.fraction == 1.0, res.message
    assert len(res.q_path) == len(poses) == 51
    previous = q0
    for q, T in zip(res.q_path, poses):
        assert check.reached(q, [FrameGoal(TIP, T)])
        assert np.abs(q - previous).max() <= 0.1 + 1e-12
        previous = q


def test_path_leaving_the_workspace_stops_and_reports_how_far(panda):
    s, check, q0 = panda
    ik = SimpleIK(s, SimpleIKOptions(group_name="arm", max_time=0.01, seed=SOLVER_SEED))
    poses = _line(check.pose(q0, TIP), [1.0, 0.0, 0.0], 2.0, 0.05)  # the Panda reaches ~0.85 m
    res = ik.solve_path(TIP, poses, q0, max_joint_step=0.2)
    assert not res.success and 0.0 < res.fraction < 1.0
    assert len(res.q_path) == round(res.fraction * len(poses))
    assert f"waypoint {len(res.q_path)} of {len(poses)}" in res.message
    for q, T in zip(res.q_path, poses):
        assert check.reached(q, [FrameGoal(TIP, T)])


@pytest.mark.parametrize("kwargs, words", [
    (dict(poses=[], max_joint_step=0.1), "poses: expected a non-empty list"),
    (dict(poses=None, max_joint_step=0.1), "poses: expected a non-empty list"),
    (dict(max_joint_step=0.0), "max_joint_step"),
])
def test_solve_path_bad_input(panda, kwargs, words):
    s, check, q0 = panda
    ik = SimpleIK(s, SimpleIKOptions(group_name="arm"))
    args = dict(poses=[check.pose(q0, TIP)], max_joint_step=0.1) | kwargs
    with pytest.raises(InvalidInputError, match=words):
        ik.solve_path(TIP, args["poses"], q0, args["max_joint_step"])


def test_max_deviation_option_bounds_solve(panda):
    """SimpleIKOptions.max_deviation (YAML, service) makes solve behave as solve_nearby."""
    s, check, q0 = panda
    group = s.group("arm")
    q_goal = q0.copy()
    q_goal[group.q_indices[0]] += 1.0
    goal = FrameGoal(TIP, check.pose(q_goal, TIP))
    ik = SimpleIK(s, SimpleIKOptions(group_name="arm", max_time=0.02, seed=SOLVER_SEED, max_deviation=0.1))
    assert not ik.solve([goal], q0).success
    q_near = q0.copy()
    q_near[group.q_indices] += 0.03
    res = ik.solve([FrameGoal(TIP, check.pose(q_near, TIP))], q0)
    assert res.success and np.abs(res.q - q0).max() <= 0.1 + 1e-12


# ------------------------------------------------------------------------------ active joints
def test_active_joints_only_move(panda):
    """active_joints = panda_joint1..4: goals made by moving those joints are solved, joints 5-7 (and
    the fingers) keep the seed values exactly."""
    s, check, q0 = panda
    active = [f"panda_joint{i}" for i in range(1, 5)]
    ik = SimpleIK(s, SimpleIKOptions(group_name="arm", max_time=MAX_TIME, seed=SOLVER_SEED, active_joints=active))
    rng = np.random.default_rng(31)
    solved = 0
    for _ in range(15):
        q_goal = q0.copy()
        q_goal[:4] += rng.uniform(-0.4, 0.4, 4)
        q_goal[:4] = np.clip(q_goal[:4], s.q_min_v[:4], s.q_max_v[:4])
        goal = FrameGoal(TIP, check.pose(q_goal, TIP))
        res = ik.solve([goal], q0)
        assert check.valid(res.q)
        np.testing.assert_array_equal(res.q[4:], q0[4:])
        if res.success:
            assert check.reached(res.q, [goal])
            solved += 1
    assert solved >= 13, f"solved {solved}/15"


@pytest.mark.parametrize("active, words", [
    (["panda_joint1", "panda_finger_joint1"], r"active_joints: \['panda_finger_joint1'\]; expected joints of group 'arm'"),
    ([], "active_joints: expected a non-empty list"),
    ("panda_joint1", "active_joints: expected a non-empty list"),
])
def test_bad_active_joints(panda, active, words):
    s, check, q0 = panda
    with pytest.raises(InvalidInputError, match=words):
        SimpleIK(s, SimpleIKOptions(group_name="arm")).solve(
            [FrameGoal(TIP, check.pose(q0, TIP))], q0, SimpleIKOptions(group_name="arm", active_joints=active))
