"""SimpleIK's null-space terms: the manipulability gradient against finite differences, Sigma against
its formula, and the solver with each term on (goals still reached within the limits, the term
doing what it is for: farther from the limits, higher manipulability than without it)."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from models import scene
from roboplan_ik_ros.core import FrameGoal, InvalidInputError, SimpleIK, SimpleIKOptions
from roboplan_ik_ros.core.simple_ik.null_space import Manipulability, joint_limit_gradient, project_into_null_space
from test_simple_ik import MAX_TIME, SOLVER_SEED, Checker, random_goal_configurations

TIP = "panda_hand_tcp"


@pytest.fixture(scope="module")
def panda():
    s = scene("panda")
    return s, Checker("panda", s), s.named_configuration("default")


def manipulability_at(s, q, fid, group) -> float:
    """sqrt(det(J J^T)) of the LOCAL frame Jacobian, computed plainly."""
    data = s.model.createData()
    J = pin.computeFrameJacobian(s.model, data, q, fid, pin.ReferenceFrame.LOCAL)[:, group.v_indices]
    return float(np.sqrt(np.linalg.det(J @ J.T)))


@pytest.mark.parametrize("name, group_name, tip", [("panda", "arm", TIP), ("panda", "arm", "panda_link6"),
                                                   ("ur5", "", "tool0")])
def test_manipulability_gradient_matches_finite_differences(name, group_name, tip):
    s = scene(name)
    group = s.group(group_name)
    fid = s.frame_id(tip)
    manip = Manipulability(s.model, group)
    rng = np.random.default_rng(3)
    q0 = s.neutral()
    h = 1e-6
    for _ in range(20):
        q = s.random_configuration(rng, group, q0)
        data = s.model.createData()
        pin.computeJointJacobians(s.model, data, q)
        pin.updateFramePlacements(s.model, data)
        J_world = pin.getFrameJacobian(s.model, data, fid, pin.ReferenceFrame.WORLD)[:, group.v_indices]
        m, grad = manip.value_and_gradient(J_world)
        assert m == pytest.approx(manipulability_at(s, q, fid, group), rel=1e-9, abs=1e-12)
        fd = np.empty(group.nv)
        for i, iq in enumerate(group.q_indices):
            qp, qm = q.copy(), q.copy()
            qp[iq] += h
            qm[iq] -= h
            fd[i] = (manipulability_at(s, qp, fid, group) - manipulability_at(s, qm, fid, group)) / (2 * h)
        np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-8)
        if name == "panda" and tip == TIP:
            assert np.abs(grad).max() > 1e-3  # not trivially zero


def test_joint_limit_gradient_formula():
    lo, hi = np.array([-1.0, -1.0, -1.0, -np.inf]), np.array([1.0, 1.0, 1.0, np.inf])
    x = np.array([-0.9, 0.0, 0.95, 5.0])
    ps, pi = 0.05, 0.3
    g = joint_limit_gradient(x, lo, hi, ps, pi)
    np.testing.assert_allclose(g, [(0.1 - 0.3) ** 2 / 0.25 ** 2, 0.0, -(0.05 - 0.3) ** 2 / 0.25 ** 2, 0.0])
    assert g[0] > 0 > g[2]  # pushes away from the nearby limit


def test_projection_leaves_the_task_unchanged():
    rng = np.random.default_rng(0)
    J, g = rng.standard_normal((6, 7)), rng.standard_normal(7)
    n = project_into_null_space(J, g)
    np.testing.assert_allclose(J @ n, 0.0, atol=1e-12)
    assert np.linalg.norm(n) > 0.1


def _solve_all(ik, check, goals, q0):
    out = []
    for T in goals:
        res = ik.solve([FrameGoal(TIP, T)], q0)
        assert check.valid(res.q)
        if res.success:
            pos, rot = check.errors(res.q, TIP, T)
            assert pos <= 1e-3 and rot <= 1e-3
        out.append(res)
    return out


def test_joint_limit_avoidance_keeps_solutions_farther_from_the_limits(panda):
    s, check, q0 = panda
    group = s.group("arm")
    lo, hi = s.q_min_v[group.v_indices], s.q_max_v[group.v_indices]
    goals = [check.pose(q, TIP) for q in random_goal_configurations(s, "arm", q0, 40, seed=13)]
    base = dict(group_name="arm", max_time=MAX_TIME, seed=SOLVER_SEED)
    plain = _solve_all(SimpleIK(s, SimpleIKOptions(**base)), check, goals, q0)
    avoid = _solve_all(SimpleIK(s, SimpleIKOptions(**base, joint_limit_gain=0.5, joint_limit_pi=0.3)),
                       check, goals, q0)
    assert sum(r.success for r in avoid) >= 38

    def margin(res):
        x = res.q[group.q_indices]
        return float(np.min(np.minimum(x - lo, hi - x)))
    both = [(margin(a), margin(p)) for a, p in zip(avoid, plain) if a.success and p.success]
    near_plain = sum(mp < 0.1 for _, mp in both)
    near_avoid = sum(ma < 0.1 for ma, _ in both)
    assert near_avoid < near_plain, (near_avoid, near_plain)


def test_manipulability_gain_raises_manipulability(panda):
    s, check, q0 = panda
    group = s.group("arm")
    fid = s.frame_id(TIP)
    goals = [check.pose(q, TIP) for q in random_goal_configurations(s, "arm", q0, 40, seed=14)]
    base = dict(group_name="arm", max_time=MAX_TIME, seed=SOLVER_SEED)
    plain = _solve_all(SimpleIK(s, SimpleIKOptions(**base)), check, goals, q0)
    manip = _solve_all(SimpleIK(s, SimpleIKOptions(**base, manipulability_gain=10.0)), check, goals, q0)
    assert sum(r.success for r in manip) >= 38
    pairs = [(manipulability_at(s, a.q, fid, group), manipulability_at(s, p.q, fid, group))
             for a, p in zip(manip, plain) if a.success and p.success]
    assert np.mean([a for a, _ in pairs]) > 1.05 * np.mean([p for _, p in pairs]), pairs[:5]


@pytest.mark.parametrize("field, value", [("joint_limit_gain", -1.0), ("manipulability_gain", np.nan),
                                          ("joint_limit_pi", 0.0), ("joint_limit_ps", 0.5)])
def test_bad_null_space_options(panda, field, value):
    s, _, _ = panda
    with pytest.raises(InvalidInputError, match=field):
        SimpleIK(s, SimpleIKOptions(group_name="arm", **{field: value}))


def test_manipulability_with_several_goals_is_refused(panda):
    s, check, q0 = panda
    ik = SimpleIK(s, SimpleIKOptions(group_name="arm", manipulability_gain=1.0))
    T = check.pose(q0, TIP)
    with pytest.raises(InvalidInputError, match="manipulability_gain: one goal"):
        ik.solve([FrameGoal(TIP, T), FrameGoal("panda_link4", check.pose(q0, "panda_link4"))], q0)


def test_bias_configuration_pulls_solutions_toward_it(panda):
    """bias_gain with bias_configuration = the SRDF default: answers nearer to it than without (the
    seeds are random, so the plain answers land anywhere on the self-motion manifold)."""
    s, check, q0 = panda
    group = s.group("arm")
    bias = q0[group.q_indices]
    goals = [check.pose(q, TIP) for q in random_goal_configurations(s, "arm", q0, 30, seed=16)]
    seeds = random_goal_configurations(s, "arm", q0, 30, seed=17)
    base = dict(group_name="arm", max_time=MAX_TIME, seed=SOLVER_SEED)
    plain = SimpleIK(s, SimpleIKOptions(**base))
    biased = SimpleIK(s, SimpleIKOptions(**base, bias_gain=0.5, bias_configuration=list(bias)))
    d_plain, d_bias = [], []
    for T, q_seed in zip(goals, seeds):
        a, p = biased.solve([FrameGoal(TIP, T)], q_seed), plain.solve([FrameGoal(TIP, T)], q_seed)
        assert check.valid(a.q) and (not a.success or check.reached(a.q, [FrameGoal(TIP, T)]))
        if a.success and p.success:
            d_bias.append(np.linalg.norm(a.q[group.q_indices] - bias))
            d_plain.append(np.linalg.norm(p.q[group.q_indices] - bias))
    assert len(d_bias) >= 27
    assert np.mean(d_bias) < 0.95 * np.mean(d_plain), (np.mean(d_bias), np.mean(d_plain))


@pytest.mark.parametrize("kwargs, words", [
    (dict(bias_gain=0.5), "bias_gain: needs bias_configuration"),
    (dict(bias_gain=0.5, bias_configuration=[0.0, float("nan")]), "bias_configuration: expected a list of finite"),
    (dict(bias_gain=-0.5, bias_configuration=[0.0] * 7), "bias_gain"),
])
def test_bad_bias_options(panda, kwargs, words):
    s, _, _ = panda
    with pytest.raises(InvalidInputError, match=words):
        SimpleIK(s, SimpleIKOptions(group_name="arm", **kwargs))


def test_bias_of_the_wrong_size_names_the_group(panda):
    """Refused when the solver is built (its warm-up solve) and when passed to solve()."""
    s, check, q0 = panda
    bad = SimpleIKOptions(group_name="arm", bias_gain=0.5, bias_configuration=[0.0] * 6)
    with pytest.raises(InvalidInputError, match=r"bias_configuration: expected 7 values \(group 'arm'"):
        SimpleIK(s, bad)
    with pytest.raises(InvalidInputError, match=r"bias_configuration: expected 7 values \(group 'arm'"):
        SimpleIK(s, SimpleIKOptions(group_name="arm")).solve([FrameGoal(TIP, check.pose(q0, TIP))], q0, bad)


# ------------------------------------------------------- continuous joints (Kinova: q as cos, sin)
KINOVA_TIP = "j2s6s200_end_effector"
POSITION_ONLY = [1.0, 1.0, 1.0, 0.0, 0.0, 0.0]  # 3 DOF of 6 joints: a 3-dimensional null space


@pytest.fixture(scope="module")
def kinova():
    s = scene("kinova")
    return s, Checker("kinova", s)


def test_null_space_terms_on_continuous_joints(kinova):
    """With J = 0 (the projection is the identity) the null-space motion is the raw term: the bias turns
    a continuous joint the short way (from -3.1 to +3.1 rad: -0.083 rad, not +6.2), scalar joints by
    bias - q; joint-limit avoidance acts on the bounded joints only (Sigma's formula), 0 on the
    continuous ones (no limit to avoid) at any angle."""
    s, _ = kinova
    group = s.group("")
    names = list(group.joint_names)
    bias = [3.1, 3.0, 1.0, 3.1, 1.0, -3.1]
    q = s.q_from_joint_positions(names, [-3.1, 0.85, 2.0, 3.0, 5.7, 0.5])  # joints 2 and 5 near their limits
    ik = SimpleIK(s, SimpleIKOptions(seed=SOLVER_SEED))
    ws = ik._workspace(group, 1)
    fid = s.frame_id(KINOVA_TIP)
    bias_opt = SimpleIKOptions(bias_gain=0.5, bias_configuration=bias)
    ik._check_null_space(bias_opt, ws, 1, q)
    g = ik._null_space_motion(q, np.zeros((6, 6)), fid, ws, bias_opt)
    short = lambda a: (a + np.pi) % (2 * np.pi) - np.pi  # noqa: E731
    expected = 0.5 * (np.array(bias) - np.array([-3.1, 0.85, 2.0, 3.0, 5.7, 0.5]))
    expected[[0, 3, 5]] = short(2.0 * expected[[0, 3, 5]]) * 0.5  # joints 1, 4, 6: continuous
    np.testing.assert_allclose(g, expected, atol=1e-12)
    assert abs(g[0]) < 0.05  # the short way
    ws.start_attempt(q)
    limit_opt = SimpleIKOptions(joint_limit_gain=0.5, joint_limit_pi=0.3)
    g = ik._null_space_motion(q, np.zeros((6, 6)), fid, ws, limit_opt)
    lo, hi = s.q_min_v[group.v_indices], s.q_max_v[group.v_indices]
    x = s.joint_positions(q, names)
    expected = np.zeros(6)
    b = group.bounded_v
    expected[b] = 0.5 * joint_limit_gradient(x[b], lo[b], hi[b], 0.0, 0.3)
    np.testing.assert_allclose(g, expected, atol=1e-12)
    assert g[1] > 0.0 and g[4] < 0.0 and np.all(g[[0, 3, 5]] == 0.0)  # joints 1, 4, 6: continuous


@pytest.mark.parametrize("term", [dict(joint_limit_gain=0.5), dict(manipulability_gain=1.0),
                                  dict(bias_gain=0.5, bias_configuration=[3.1, 3.0, 1.0, 3.1, 1.0, -3.1])])
def test_null_space_terms_solve_on_the_kinova(kinova, term):
    """Each term on the Kinova (three continuous joints), position-only goals (a 3-dimensional null
    space): the goals are reached, the answers valid."""
    s, check = kinova
    q0 = s.neutral()
    goals = [check.pose(q, KINOVA_TIP) for q in random_goal_configurations(s, "", q0, 15, seed=51)]
    seeds = random_goal_configurations(s, "", q0, 15, seed=52)
    ik = SimpleIK(s, SimpleIKOptions(max_time=MAX_TIME, seed=SOLVER_SEED, error_weights=POSITION_ONLY, **term))
    solved = 0
    for T, q_seed in zip(goals, seeds):
        res = ik.solve([FrameGoal(KINOVA_TIP, T)], q_seed)
        assert check.valid(res.q)
        if res.success:
            p = check.pose(res.q, KINOVA_TIP).translation
            assert np.linalg.norm(p - T.translation) <= 1e-3
            solved += 1
    assert solved >= 14, f"solved {solved}/15"


def test_bias_pulls_continuous_joints_the_short_way(kinova):
    """Position-only goals on the Kinova, bias angles at +-3.1 rad for the continuous joints: answers end
    nearer to the bias (by the wrapped angle, pin.difference) than without the bias."""
    s, check = kinova
    group = s.group("")
    names = list(group.joint_names)
    bias = [3.1, 3.0, 1.0, -3.1, 3.0, 3.1]
    q_bias = s.q_from_joint_positions(names, bias)
    q0 = s.neutral()
    goals = [check.pose(q, KINOVA_TIP) for q in random_goal_configurations(s, "", q0, 20, seed=53)]
    seeds = random_goal_configurations(s, "", q0, 20, seed=54)
    base = dict(max_time=MAX_TIME, seed=SOLVER_SEED, error_weights=POSITION_ONLY)
    plain = SimpleIK(s, SimpleIKOptions(**base))
    biased = SimpleIK(s, SimpleIKOptions(**base, bias_gain=0.5, bias_configuration=bias))
    d_plain, d_bias = [], []
    for T, q_seed in zip(goals, seeds):
        goal = FrameGoal(KINOVA_TIP, T)
        a, p = biased.solve([goal], q_seed), plain.solve([goal], q_seed)
        if a.success and p.success:
            d_bias.append(np.linalg.norm(s.difference(q_bias, a.q)[group.v_indices]))
            d_plain.append(np.linalg.norm(s.difference(q_bias, p.q)[group.v_indices]))
    assert len(d_bias) >= 18
    assert np.mean(d_bias) < 0.8 * np.mean(d_plain), (np.mean(d_bias), np.mean(d_plain))
