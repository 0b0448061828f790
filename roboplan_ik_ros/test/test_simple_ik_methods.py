"""SimpleIK's methods (SimpleIKOptions.method) and error weights, as a planner meets them: every method
solves reachable goals (checked independently: FK, limits, collisions), fails cleanly on unreachable
ones, and zero error weights leave exactly those components free. test_simple_ik checks one iteration
of each method against its formula (test_one_iteration_equals_reference).

No test is timed: every solve gets a generous max_time.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from roboplan_ik_ros.core import FrameGoal, InvalidInputError, SimpleIK, SimpleIKOptions
from roboplan_ik_ros.core.simple_ik.methods import METHODS
from test_simple_ik import (MAX_TIME, POS_TOL, ROT_TOL, SOLVER_SEED, Checker,  # noqa: F401 - panda, ur5: fixtures
                            panda, random_goal_configurations, ur5)


@pytest.mark.parametrize("method", METHODS)
def test_panda_reachable_goals_every_method(panda, method):
    s, check, q0 = panda
    ik = SimpleIK(s, SimpleIKOptions(group_name="arm", max_time=MAX_TIME, seed=SOLVER_SEED, method=method))
    n, solved = 40, 0
    for q_goal in random_goal_configurations(s, "arm", q0, n, seed=3):
        goal = FrameGoal("panda_hand_tcp", check.pose(q_goal, "panda_hand_tcp"))
        res = ik.solve([goal], q0)
        assert check.valid(res.q), "outside the limits or in collision"
        assert not res.success or check.reached(res.q, [goal]), f"claimed a solution that fails the check: {res}"
        solved += res.success
    assert solved / n >= 0.95, f"{method}: solved {solved}/{n}"


@pytest.mark.parametrize("method", METHODS)
def test_ur5_reachable_goals_every_method(ur5, method):
    s, check, q0 = ur5
    ik = SimpleIK(s, SimpleIKOptions(max_time=MAX_TIME, seed=SOLVER_SEED, method=method))
    n, solved = 30, 0
    for q_goal in random_goal_configurations(s, "", q0, n, seed=4):
        goal = FrameGoal("tool0", check.pose(q_goal, "tool0"))
        res = ik.solve([goal], q0)
        assert check.valid(res.q)
        assert not res.success or check.reached(res.q, [goal])
        solved += res.success
    assert solved / n >= 0.9, f"{method}: solved {solved}/{n}"


@pytest.mark.parametrize("method", METHODS)
def test_unreachable_goal_fails_cleanly_every_method(panda, method):
    s, check, q0 = panda
    T = check.pose(q0, "panda_hand_tcp")
    T.translation = T.translation + np.array([3.0, 0.0, 0.0])
    ik = SimpleIK(s, SimpleIKOptions(group_name="arm", max_time=0.02, seed=SOLVER_SEED, method=method))
    res = ik.solve([FrameGoal("panda_hand_tcp", T)], q0)
    assert not res.success
    np.testing.assert_array_equal(res.q, q0)
    assert "no solution" in res.message
    assert res.position_errors[0] > 2.0


def test_method_per_call_overrides_the_configured_one(panda):
    """The same solver serves several methods through per-call options (shared workspace, lm_* write
    their damping into it): each call solves (a goal 0.3 rad per joint from the seed: the seeded attempt
    converges, no restart), lm_chan's iterates are its own (the per-call method is used), and dls after
    lm_chan is dls again."""
    s, check, q0 = panda
    ik = SimpleIK(s, SimpleIKOptions(group_name="arm", max_time=MAX_TIME, seed=SOLVER_SEED))
    group = s.group("arm")
    q_goal = q0.copy()
    q_goal[group.q_indices] += 0.3 * np.array([1, -1, 1, 1, -1, 1, -1])
    goal = FrameGoal("panda_hand_tcp", check.pose(q_goal, "panda_hand_tcp"))
    runs = {}
    for method in ("dls", "lm_chan", "dls"):
        opt = SimpleIKOptions(group_name="arm", max_time=MAX_TIME, seed=SOLVER_SEED, method=method,
                              max_restarts=0)
        ik.rng = np.random.default_rng(SOLVER_SEED)
        res = ik.solve([goal], q0, opt)
        assert res.success and check.reached(res.q, [goal]), f"{method}: {res.message}"
        assert check.valid(res.q)
        runs.setdefault(method, []).append(res.q.copy())
    assert np.abs(runs["lm_chan"][0] - runs["dls"][0]).max() > 1e-3, \
        "lm_chan's answer is dls's: the per-call method was not used"
    np.testing.assert_array_equal(runs["dls"][0], runs["dls"][1], "lm_chan's damping leaked into the next dls solve")


def _tip_pose_with(check: Checker, q_goal: np.ndarray, twist_local: np.ndarray) -> pin.SE3:
    """The tip's pose at q_goal moved by exp6(twist_local) in its own frame."""
    return check.pose(q_goal, "panda_hand_tcp") * pin.exp6(twist_local)


def test_position_only_weights(panda):
    """error_weights [1,1,1,0,0,0]: the goal's position is reached whatever its orientation (here an
    orientation the arm cannot take there is not required); the reported orientation error is the true one."""
    s, check, q0 = panda
    ik = SimpleIK(s, SimpleIKOptions(group_name="arm", max_time=MAX_TIME, seed=SOLVER_SEED,
                                     error_weights=[1.0, 1.0, 1.0, 0.0, 0.0, 0.0]))
    rng = np.random.default_rng(11)
    solved = 0
    goals = random_goal_configurations(s, "arm", q0, 20, seed=6)
    for q_goal in goals:
        T = check.pose(q_goal, "panda_hand_tcp")
        T.rotation = pin.exp3(rng.uniform(-np.pi, np.pi, 3)) @ T.rotation  # any orientation
        res = ik.solve([FrameGoal("panda_hand_tcp", T)], q0)
        assert check.valid(res.q)
        if res.success:
            pos, rot = check.errors(res.q, "panda_hand_tcp", T)
            assert pos <= POS_TOL
            assert res.position_errors[0] == pytest.approx(pos, abs=1e-9)
            assert res.orientation_errors[0] == pytest.approx(rot, abs=1e-6)
            solved += 1
    assert solved >= 19, f"solved {solved}/20"


def test_orientation_only_weights(ur5):
    s, check, q0 = ur5
    ik = SimpleIK(s, SimpleIKOptions(max_time=MAX_TIME, seed=SOLVER_SEED, error_weights=[0, 0, 0, 1, 1, 1]))
    solved = 0
    for q_goal in random_goal_configurations(s, "", q0, 20, seed=8):
        T = check.pose(q_goal, "tool0")
        T.translation = T.translation + np.array([5.0, 0.0, 0.0])  # unreachable position: must not matter
        res = ik.solve([FrameGoal("tool0", T)], q0)
        assert check.valid(res.q)
        if res.success:
            pos, rot = check.errors(res.q, "tool0", T)
            assert rot <= ROT_TOL and pos > 3.0  # (UR5 reach < 1 m: the 5 m offset stays >= 3 m)
            solved += 1
    assert solved == 20


def test_free_rotation_about_tip_z(panda):
    """error_weights [1,1,1,1,1,0]: a goal turned about its own z axis by any angle is reached with
    the tip's z axis and position, the angle about z left free (a symmetric tool)."""
    s, check, q0 = panda
    ik = SimpleIK(s, SimpleIKOptions(group_name="arm", max_time=MAX_TIME, seed=SOLVER_SEED,
                                     error_weights=[1.0, 1.0, 1.0, 1.0, 1.0, 0.0]))
    solved = 0
    for k, q_goal in enumerate(random_goal_configurations(s, "arm", q0, 20, seed=9)):
        T = _tip_pose_with(check, q_goal, np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.3 * k - 3.0]))
        res = ik.solve([FrameGoal("panda_hand_tcp", T)], q0)
        assert check.valid(res.q)
        if res.success:
            M = check.pose(res.q, "panda_hand_tcp")
            assert np.linalg.norm(M.translation - T.translation) <= POS_TOL
            z_angle = np.arccos(np.clip(M.rotation[:, 2] @ T.rotation[:, 2], -1.0, 1.0))
            assert z_angle <= ROT_TOL * 1.0001
            solved += 1
    assert solved >= 19, f"solved {solved}/20"


@pytest.mark.parametrize("method", ["dls", "lm_chan", "gauss_newton"])
def test_positive_weights_keep_the_full_pose(panda, method):
    """Weights without a zero change the path, not the answer: the full pose within the thresholds."""
    s, check, q0 = panda
    ik = SimpleIK(s, SimpleIKOptions(group_name="arm", max_time=MAX_TIME, seed=SOLVER_SEED, method=method,
                                     error_weights=[4.0, 4.0, 4.0, 0.25, 0.25, 0.25]))
    solved = 0
    for q_goal in random_goal_configurations(s, "arm", q0, 20, seed=10):
        goal = FrameGoal("panda_hand_tcp", check.pose(q_goal, "panda_hand_tcp"))
        res = ik.solve([goal], q0)
        assert check.valid(res.q)
        assert not res.success or check.reached(res.q, [goal])
        solved += res.success
    assert solved >= 19, f"solved {solved}/20"


def test_weights_apply_to_every_goal(panda):
    """Two goals, position only: both positions reached, orientations free."""
    s, check, q0 = panda
    ik = SimpleIK(s, SimpleIKOptions(group_name="arm", max_time=MAX_TIME, seed=SOLVER_SEED,
                                     error_weights=[1.0, 1.0, 1.0, 0.0, 0.0, 0.0]))
    solved = 0
    for q_goal in random_goal_configurations(s, "arm", q0, 10, seed=12):
        T1 = check.pose(q_goal, "panda_hand_tcp") * pin.exp6(np.array([0, 0, 0, 0.5, 0.2, 0.1]))
        T2 = check.pose(q_goal, "panda_link4") * pin.exp6(np.array([0, 0, 0, -0.4, 0.3, 0.0]))
        res = ik.solve([FrameGoal("panda_hand_tcp", T1), FrameGoal("panda_link4", T2)], q0)
        assert check.valid(res.q)
        if res.success:
            assert check.errors(res.q, "panda_hand_tcp", T1)[0] <= POS_TOL
            assert check.errors(res.q, "panda_link4", T2)[0] <= POS_TOL
            solved += 1
    assert solved >= 9, f"solved {solved}/10"


def test_per_goal_weights(panda):
    """FrameGoal.weights: the hand's full pose and only link 4's position (its orientation free), in
    one solve; a goal without weights takes the options' error_weights."""
    s, check, q0 = panda
    ik = SimpleIK(s, SimpleIKOptions(group_name="arm", max_time=MAX_TIME, seed=SOLVER_SEED))
    solved = 0
    for q_goal in random_goal_configurations(s, "arm", q0, 10, seed=15):
        T1 = check.pose(q_goal, "panda_hand_tcp")
        T2 = check.pose(q_goal, "panda_link4") * pin.exp6(np.array([0, 0, 0, 0.6, -0.3, 0.2]))  # unreachable turn
        res = ik.solve([FrameGoal("panda_hand_tcp", T1),
                        FrameGoal("panda_link4", T2, weights=[1.0, 1.0, 1.0, 0.0, 0.0, 0.0])], q0)
        assert check.valid(res.q)
        if res.success:
            assert check.reached(res.q, [FrameGoal("panda_hand_tcp", T1)])
            assert check.errors(res.q, "panda_link4", T2)[0] <= POS_TOL
            assert res.orientation_errors[1] > 0.1  # the free orientation was not reached (and is reported)
            solved += 1
    assert solved >= 9, f"solved {solved}/10"


@pytest.mark.parametrize("weights", [[1.0] * 5, [0.0] * 6, [1, 1, 1, 1, 1, -1]])
def test_bad_per_goal_weights_name_the_goal(panda, weights):
    s, check, q0 = panda
    ik = SimpleIK(s, SimpleIKOptions(group_name="arm"))
    goals = [FrameGoal("panda_hand_tcp", check.pose(q0, "panda_hand_tcp")),
             FrameGoal("panda_link4", check.pose(q0, "panda_link4"), weights=weights)]
    with pytest.raises(InvalidInputError, match=r"goals\[1\].weights: expected 6 finite numbers >= 0"):
        ik.solve(goals, q0)
