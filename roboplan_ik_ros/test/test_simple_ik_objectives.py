"""SimpleIK objectives (objectives.py): points on a link, a link axis, goals relative to another link.

Every Jacobian matches central finite differences of its error; reachable objectives (targets from the
forward kinematics of random in-limit, collision-free configurations) are solved on Panda within the
limits and collision-free, checked independently from the scene's frame placements; unreachable ones
fail cleanly (the seed back, a message); bad input is named."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from models import scene
from roboplan_ik_ros.core import FrameGoal, InvalidInputError, SimpleIK, SimpleIKOptions
from roboplan_ik_ros.core.simple_ik import AxisGoal, PointGoal
from roboplan_ik_ros.core.simple_ik.objectives import bind
from roboplan_ik_ros.core.simple_ik.goals import inverse_target
from test_simple_ik import MAX_TIME, SOLVER_SEED, Checker, continuous_ur5, random_goal_configurations

TIP = "panda_hand_tcp"
REF = "panda_link3"  # a reference link that moves with q
POS_TOL, ROT_TOL = 1e-3, 1e-3  # the solver's default thresholds (as test_simple_ik)
POINTS = [[0.0, 0.0, 0.0], [0.05, 0.0, 0.0], [0.0, 0.04, 0.02]]  # on the hand [m]


@pytest.fixture(scope="module")
def panda():
    s = scene("panda")
    return s, Checker("panda", s), s.named_configuration("default")


def ik_of(s, **kw) -> SimpleIK:
    return SimpleIK(s, SimpleIKOptions(**{"group_name": "arm", "max_time": MAX_TIME, "seed": SOLVER_SEED, **kw}))


def point_in(s, q, frame: str, p_link, ref: str | None) -> np.ndarray:
    """p_link (frame's coordinates) in ref's coordinates (the world's if None), from the scene's FK."""
    p_w = s.frame_pose(q, frame).act(np.asarray(p_link, dtype=float))
    return p_w if ref is None else s.frame_pose(q, ref).actInv(p_w)


def axis_in(s, q, frame: str, a_link, ref: str | None) -> np.ndarray:
    a_w = s.frame_pose(q, frame).rotation @ (np.asarray(a_link, dtype=float) / np.linalg.norm(a_link))
    return a_w if ref is None else s.frame_pose(q, ref).rotation.T @ a_w


def goals_for(s, q_goal) -> dict:
    rng = np.random.default_rng(5)
    T_rel = s.frame_pose(q_goal, REF).actInv(s.frame_pose(q_goal, TIP))
    return {
        "point world": PointGoal(TIP, POINTS[0], point_in(s, q_goal, TIP, POINTS[0], None)),
        "points relative": PointGoal(TIP, POINTS, [point_in(s, q_goal, TIP, p, REF) for p in POINTS], relative_to=REF),
        "axis world": AxisGoal(TIP, [0.3, 0.0, 1.0], axis_in(s, q_goal, TIP, [0.3, 0.0, 1.0], None)),
        "axis relative": AxisGoal(TIP, [0.0, 1.0, 0.0], axis_in(s, q_goal, TIP, [0.0, 1.0, 0.0], REF), relative_to=REF),
        "frame relative": FrameGoal(TIP, T_rel, relative_to=REF),
        "frame relative masked": FrameGoal(TIP, T_rel, weights=[1, 1, 1, 0, 0, 1.0], relative_to=REF),
        "weighted point": PointGoal(TIP, rng.normal(size=3) * 0.05, point_in(s, q_goal, TIP, [0, 0, 0.0], None) + 0.0,
                                    weight=2.0),
    }


# ----------------------------------------------------------------------------- Jacobians
@pytest.mark.parametrize("kind", ["point world", "points relative", "axis world", "axis relative", "frame relative"])
def test_jacobian_matches_finite_differences(panda, kind):
    s, _, q0 = panda
    model, data = s.model, s.model.createData()
    group = s.group("arm")
    vs = group.v_indices
    h = 1e-6
    for q_goal, q in zip(random_goal_configurations(s, "arm", q0, 4, seed=31),
                         random_goal_configurations(s, "arm", q0, 4, seed=32)):
        o = bind(goals_for(s, q_goal)[kind], 0, s.frame_id, [1.0] * 6, inverse_target)

        def error(x):
            pin.computeJointJacobians(model, data, x)
            pin.updateFramePlacements(model, data)
            e, J = np.empty(o.rows), np.empty((o.rows, len(vs)))
            o.compute(model, data, vs, e, J)
            return e, J

        _, J = error(q)
        J_fd = np.empty_like(J)
        for j, iv in enumerate(vs):
            dv = np.zeros(model.nv)
            dv[iv] = h
            J_fd[:, j] = (error(pin.integrate(model, q, dv))[0] - error(pin.integrate(model, q, -dv))[0]) / (2 * h)
        np.testing.assert_allclose(J, J_fd, atol=1e-6, rtol=1e-5)


# ----------------------------------------------------------------------------- behaviour
def reached(s, q, goal) -> bool:
    """The goal's own criterion, from the scene's FK (independent of objectives.py)."""
    if isinstance(goal, PointGoal):
        targets = np.atleast_2d(goal.points_target)
        got = [point_in(s, q, goal.link_frame, p, goal.relative_to) for p in np.atleast_2d(goal.points_link)]
        return max(np.linalg.norm(g - t) for g, t in zip(got, targets)) <= POS_TOL
    if isinstance(goal, AxisGoal):
        a = axis_in(s, q, goal.link_frame, goal.axis_link, goal.relative_to)
        d = np.asarray(goal.direction_target) / np.linalg.norm(goal.direction_target)
        return np.arctan2(np.linalg.norm(np.cross(a, d)), a @ d) <= ROT_TOL
    T_rel = s.frame_pose(q, goal.relative_to).actInv(s.frame_pose(q, goal.tip_frame))
    err = pin.log6(goal.T_world_tip.actInv(T_rel)).vector
    if goal.weights is not None:
        err = err * (np.asarray(goal.weights) > 0)
    return np.linalg.norm(err[:3]) <= POS_TOL * 1.01 and np.linalg.norm(err[3:]) <= ROT_TOL


@pytest.mark.parametrize("method", ["dls", "lm_chan", "newton_raphson"])
@pytest.mark.parametrize("kind", ["point world", "points relative", "axis world", "axis relative", "frame relative",
                                  "frame relative masked", "point + axis"])
def test_reachable_objectives_are_solved(panda, kind, method):
    s, check, q0 = panda
    ik = ik_of(s, method=method)
    n, solved = 12, 0
    for q_goal in random_goal_configurations(s, "arm", q0, n, seed=41):
        g = goals_for(s, q_goal)
        goals = [g["point world"], g["axis world"]] if kind == "point + axis" else [g[kind]]
        res = ik.solve(goals, q0)
        assert check.valid(res.q)  # within the limits and collision-free, solved or not
        if res.success:
            assert all(reached(s, res.q, goal) for goal in goals), f"{kind}: claimed a solution that is not one"
            assert res.position_errors.shape == (len(goals),)
            np.testing.assert_array_equal(res.q[7:], q0[7:])  # fingers (outside the group) untouched
            solved += 1
        else:
            np.testing.assert_array_equal(res.q, q0)
    assert solved >= n - 1, f"{kind} ({method}): solved {solved}/{n}"


@pytest.mark.parametrize("method", ["dls", "lm_sugihara"])
def test_objectives_compiled_and_python_steps_solve_alike(panda, method, monkeypatch):
    """The objectives loop with and without the compiled step kernel: the same answers (up to rounding:
    within 1e-9, the same iterations) on points-relative and point + axis goals, all reached and valid."""
    from roboplan_ik_ros.core.simple_ik import compiled_step as compiled_kernel

    s, check, q0 = panda
    cases = []
    for q_goal in random_goal_configurations(s, "arm", q0, 10, seed=43):
        g = goals_for(s, q_goal)
        cases += [[g["points relative"]], [g["point world"], g["axis world"]]]
    answers = {}
    for compiled in (True, False):
        monkeypatch.setattr(compiled_kernel, "USE_COMPILED_STEP", compiled)
        ik = ik_of(s, method=method, max_time=1.0)
        answers[compiled] = [ik.solve(goals, q0) for goals in cases]
    same = 0
    for a, b, goals in zip(answers[True], answers[False], cases):
        assert a.success and b.success and check.valid(a.q) and check.valid(b.q)
        assert all(reached(s, a.q, goal) for goal in goals)
        same += a.iterations == b.iterations and np.abs(a.q - b.q).max() < 1e-9
    assert same >= len(cases) - 2, f"{same}/{len(cases)} solves alike"


def test_solve_nearby_with_objectives_keeps_the_deviation(panda):
    s, _, q0 = panda
    group = s.group("arm")
    q_goal = q0.copy()
    q_goal[group.q_indices] += 0.05
    goal = PointGoal(TIP, POINTS, [point_in(s, q_goal, TIP, p, None) for p in POINTS])
    res = ik_of(s).solve_nearby([goal], q0, 0.1)
    assert res.success and reached(s, res.q, goal)
    assert np.abs(res.q[group.q_indices] - q0[group.q_indices]).max() <= 0.1 + 1e-12


def test_unreachable_objectives_fail_cleanly(panda):
    s, check, q0 = panda
    ik = ik_of(s, max_time=0.05)
    far = PointGoal(TIP, [0, 0, 0], [2.5, 0.0, 0.5])  # 2.5 m away: beyond Panda's ~0.86 m reach
    res = ik.solve([far], q0)
    assert not res.success and "no solution" in res.message
    np.testing.assert_array_equal(res.q, q0)
    assert res.position_errors[0] > 1.0
    # two points on the hand farther apart than they are: no rigid motion reaches both
    apart = PointGoal(TIP, POINTS[:2], [[0.4, 0.0, 0.4], [0.4, 0.3, 0.4]])
    res = ik.solve([apart], q0)
    assert not res.success and check.valid(res.q)
    np.testing.assert_array_equal(res.q, q0)
    # the hand's pose relative to panda_link3 moved by 2 cm and 0.2 rad about z: joints 4-7 (4 DOF) cannot
    T_rel = s.frame_pose(q0, REF).actInv(s.frame_pose(q0, TIP)) * pin.SE3(pin.exp3(np.array([0.0, 0.0, 0.2])),
                                                                         np.array([0.02, 0.0, 0.0]))
    res = ik.solve([FrameGoal(TIP, T_rel, relative_to=REF)], q0)
    assert not res.success and "no solution" in res.message
    np.testing.assert_array_equal(res.q, q0)
    np.testing.assert_allclose([res.position_errors[0], res.orientation_errors[0]], [0.02, 0.2], rtol=1e-9)


def test_bad_objectives_are_named(panda):
    s, _, q0 = panda
    ik = ik_of(s)
    cases = [
        (PointGoal(TIP, POINTS, POINTS[:2]), "goals[0].points_target"),
        (PointGoal(TIP, [0, 0], [0, 0, 0]), "goals[0].points_link"),
        (PointGoal(TIP, [0, 0, 0], [0, np.nan, 0]), "goals[0].points_target"),
        (PointGoal(TIP, [0, 0, 0], [0, 0, 0], weight=0.0), "goals[0].weight"),
        (AxisGoal(TIP, [0, 0, 0], [0, 0, 1]), "goals[0].axis_link"),
        (AxisGoal(TIP, [0, 0, 1], "up"), "goals[0].direction_target"),
        (AxisGoal(TIP, [0, 0, 1], [0, 0, 1], relative_to="no_such_frame"), "no_such_frame"),
        (FrameGoal(TIP, pin.SE3.Identity(), weights=[1, 1], relative_to=REF), "goals[0].weights"),
        ("not a goal", "goals[0]"),
    ]
    for goal, name in cases:
        with pytest.raises(InvalidInputError, match=name.replace("[", r"\[").replace("]", r"\]")):
            ik.solve([goal], q0)
    with pytest.raises(InvalidInputError, match="manipulability_gain: one goal only"):
        ik.solve([PointGoal(TIP, [0, 0, 0], [0.4, 0, 0.4]), AxisGoal(TIP, [0, 0, 1], [0, 0, -1])], q0,
                 SimpleIKOptions(group_name="arm", manipulability_gain=1.0))


def test_plain_frame_goals_still_take_their_loops(panda):
    """A world FrameGoal (relative_to None) is unchanged: the same answer as before this module, and
    after objective solves on the same solver (shared workspaces) too."""
    s, check, q0 = panda
    q_goal = random_goal_configurations(s, "arm", q0, 1, seed=51)[0]
    goal = FrameGoal(TIP, check.pose(q_goal, TIP))
    a = ik_of(s).solve([goal], q0)
    ik = ik_of(s)
    g = goals_for(s, q_goal)
    ik.solve([g["frame relative"], g["point world"], g["axis world"], g["weighted point"]], q0)
    ik.rng = np.random.default_rng(SOLVER_SEED)
    b = ik.solve([goal], q0)
    assert a.success and b.success
    np.testing.assert_array_equal(a.q, b.q)


def test_objectives_on_a_continuous_joint():
    """UR5 with a continuous wrist_3 (q as cos/sin: the loop's integrate path): point + axis goals from the
    forward kinematics of random configurations are solved, the answers valid and the criteria met."""
    s = continuous_ur5()
    check = Checker("ur5", s)
    ik = SimpleIK(s, SimpleIKOptions(max_time=MAX_TIME, seed=SOLVER_SEED))
    q0 = s.neutral()
    n, solved = 12, 0
    for q_goal in random_goal_configurations(s, "", q0, n, seed=61):
        goals = [PointGoal("tool0", [0.0, 0.0, 0.05], point_in(s, q_goal, "tool0", [0.0, 0.0, 0.05], None)),
                 AxisGoal("tool0", [1.0, 0.0, 0.0], axis_in(s, q_goal, "tool0", [1.0, 0.0, 0.0], "base_link"),
                          relative_to="base_link")]
        res = ik.solve(goals, q0)
        assert check.valid(res.q)
        if res.success:
            assert all(reached(s, res.q, g) for g in goals)
            solved += 1
    assert solved >= n - 1, f"solved {solved}/{n}"
