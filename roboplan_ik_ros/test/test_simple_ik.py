"""SimpleIK: success on random reachable goals (checked independently), limits, collisions, several
goals at once, fast_return=False, unreachable goals and input validation.

No test is timed: every solve gets a generous max_time so that a loaded machine cannot fail it.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from models import robot, scene
from roboplan_ik_ros.core import FrameGoal, InvalidInputError, Scene, SimpleIK, SimpleIKOptions

MAX_TIME = 0.05  # [s] generous: the tests check correctness, not speed
POS_TOL, ROT_TOL = 1e-3, 1e-3
GOAL_SEED = 7  # goals; the solvers use SOLVER_SEED, a different stream (a restart must not replay a goal)
SOLVER_SEED = 1234


class Checker:
    """Independent check of a solution: its own pinocchio model (FK) plus the scene's limits/collisions."""

    def __init__(self, name: str, s: Scene):
        self.model = pin.buildModelFromXML(robot(name).urdf_xml)
        self.data = self.model.createData()
        self.scene = s

    def pose(self, q: np.ndarray, frame: str) -> pin.SE3:
        pin.framesForwardKinematics(self.model, self.data, q)
        return self.data.oMf[self.model.getFrameId(frame)].copy()

    def errors(self, q: np.ndarray, frame: str, T: pin.SE3) -> tuple[float, float]:
        M = self.pose(q, frame)
        return (float(np.linalg.norm(M.translation - T.translation)),
                float(np.linalg.norm(pin.log3(T.rotation.T @ M.rotation))))

    def valid(self, q: np.ndarray) -> bool:
        return self.scene.within_limits(q) and not self.scene.in_collision(q)

    def reached(self, q: np.ndarray, goals: list[FrameGoal]) -> bool:
        for g in goals:
            pos, rot = self.errors(q, g.tip_frame, g.T_world_tip)
            if pos > POS_TOL or rot > ROT_TOL:
                return False
        return self.valid(q)


def random_goal_configurations(s: Scene, group_name: str, q_ref: np.ndarray, n: int, seed: int = GOAL_SEED):
    """n uniform random in-limit, collision-free configurations of the group (others from q_ref)."""
    rng = np.random.default_rng(seed)
    group = s.group(group_name)
    out = []
    while len(out) < n:
        q = s.random_configuration(rng, group, q_ref)
        if not s.in_collision(q):
            out.append(q)
    return out


@pytest.fixture(scope="module")
def panda():
    s = scene("panda")
    return s, Checker("panda", s), s.named_configuration("default")


@pytest.fixture(scope="module")
def ur5():
    s = scene("ur5")
    return s, Checker("ur5", s), s.neutral()


def panda_ik(s: Scene, **kw) -> SimpleIK:
    return SimpleIK(s, SimpleIKOptions(**{"group_name": "arm", "max_time": MAX_TIME, "seed": SOLVER_SEED, **kw}))


# ------------------------------------------------------------------------------------ success
def test_panda_random_reachable_goals(panda):
    s, check, q0 = panda
    ik = panda_ik(s)
    n, solved = 250, 0
    for q_goal in random_goal_configurations(s, "arm", q0, n):
        goal = FrameGoal("panda_hand_tcp", check.pose(q_goal, "panda_hand_tcp"))
        res = ik.solve([goal], q0)
        ok = check.reached(res.q, [goal])
        assert ok or not res.success, f"claimed a solution that fails the independent check: {res}"
        assert check.valid(res.q)  # within limits and collision-free, solved or not
        if res.success:
            assert res.position_errors[0] <= POS_TOL and res.orientation_errors[0] <= ROT_TOL
            np.testing.assert_array_equal(res.q[7:], q0[7:])  # fingers (outside the group) untouched
        solved += ok
    assert solved / n >= 0.99, f"solved {solved}/{n}"


def test_ur5_random_reachable_goals(ur5):
    s, check, q0 = ur5
    ik = SimpleIK(s, SimpleIKOptions(max_time=MAX_TIME, seed=SOLVER_SEED))
    n, solved = 60, 0
    for q_goal in random_goal_configurations(s, "", q0, n):
        goal = FrameGoal("tool0", check.pose(q_goal, "tool0"))
        res = ik.solve([goal], q0)
        assert check.valid(res.q)
        assert check.reached(res.q, [goal]) or not res.success
        solved += res.success
    assert solved / n >= 0.95, f"solved {solved}/{n}"


def test_solutions_within_limits_without_clamping(panda):
    """The plain clipped step (clamp_limits=False) also keeps every returned q inside the limits."""
    s, check, q0 = panda
    ik = panda_ik(s, clamp_limits=False)
    for q_goal in random_goal_configurations(s, "arm", q0, 20, seed=11):
        goal = FrameGoal("panda_hand_tcp", check.pose(q_goal, "panda_hand_tcp"))
        res = ik.solve([goal], q0)
        assert check.valid(res.q)
        assert check.reached(res.q, [goal]) == res.success


def test_seed_outside_limits_is_clipped(panda):
    s, check, q0 = panda
    q_goal = random_goal_configurations(s, "arm", q0, 1, seed=3)[0]
    goal = FrameGoal("panda_hand_tcp", check.pose(q_goal, "panda_hand_tcp"))
    q_seed = q0.copy()
    q_seed[3] = 1.0  # panda_joint4 is in [-3.07, -0.07]
    res = panda_ik(s).solve([goal], q_seed)
    assert res.success and check.reached(res.q, [goal])


def test_two_goals_at_once(panda):
    s, check, q0 = panda
    ik = panda_ik(s)
    samples = random_goal_configurations(s, "arm", q0, 10, seed=5)
    solved = 0
    for q_goal in samples:
        goals = [FrameGoal("panda_hand_tcp", check.pose(q_goal, "panda_hand_tcp")),
                 FrameGoal("panda_link4", check.pose(q_goal, "panda_link4"))]
        res = ik.solve(goals, q0)
        assert check.valid(res.q)
        assert res.position_errors.shape == res.orientation_errors.shape == (2,)
        if res.success:
            assert check.reached(res.q, goals)
            solved += 1
    assert solved >= 9, f"solved {solved}/10"


def test_continuous_joint_general_path():
    """A model whose group has a continuous joint (nq != nv) takes the general integrate path."""
    urdf = robot("ur5").urdf_xml.replace('<joint name="wrist_3_joint" type="revolute">',
                                         '<joint name="wrist_3_joint" type="continuous">', 1)
    s = Scene(urdf, robot("ur5").srdf_xml, robot("ur5").package_paths)
    assert s.model.nq == 7 and s.model.nv == 6
    ik = SimpleIK(s, SimpleIKOptions(max_time=MAX_TIME, seed=SOLVER_SEED))
    model, data = s.model, s.model.createData()
    q0 = s.neutral()
    solved = 0
    for q_goal in random_goal_configurations(s, "", q0, 15, seed=9):
        T = s.frame_pose(q_goal, "tool0")
        res = ik.solve([FrameGoal("tool0", T)], q0)
        assert s.within_limits(res.q) and not s.in_collision(res.q)
        if res.success:
            pin.framesForwardKinematics(model, data, res.q)
            M = data.oMf[model.getFrameId("tool0")]
            assert np.linalg.norm(M.translation - T.translation) <= POS_TOL
            assert np.linalg.norm(pin.log3(T.rotation.T @ M.rotation)) <= ROT_TOL
            np.testing.assert_allclose(res.q[5] ** 2 + res.q[6] ** 2, 1.0, atol=1e-9)  # (cos, sin) stays unit
            solved += 1
    assert solved >= 13, f"solved {solved}/15"


# -------------------------------------------------------------------------------- fast_return
def test_fast_return_false_is_at_least_as_near_to_the_seed(panda):
    s, check, q0 = panda
    group = s.group("arm")
    # a goal the seeded attempt reaches, so both modes start from the same first solution
    for q_goal in random_goal_configurations(s, "arm", q0, 20, seed=13):
        goal = FrameGoal("panda_hand_tcp", check.pose(q_goal, "panda_hand_tcp"))
        fast = panda_ik(s).solve([goal], q0)
        if fast.success and fast.restarts == 0:
            break
    else:
        pytest.fail("no goal reached by the seeded attempt")
    slow = panda_ik(s, fast_return=False, max_time=0.02).solve([goal], q0)
    assert slow.success and check.reached(slow.q, [goal])
    assert slow.restarts > 0  # it kept searching
    dist = lambda q: np.linalg.norm(s.difference(q0, q)[group.v_indices])  # noqa: E731
    assert dist(slow.q) <= dist(fast.q) + 1e-12


def test_fast_return_false_finds_a_solution_after_failed_seed_attempt(panda):
    s, check, q0 = panda
    goals = random_goal_configurations(s, "arm", q0, 40, seed=17)
    ik = panda_ik(s, fast_return=False, max_time=0.01)
    for q_goal in goals[:5]:
        goal = FrameGoal("panda_hand_tcp", check.pose(q_goal, "panda_hand_tcp"))
        res = ik.solve([goal], q0)
        assert check.valid(res.q)
        assert not res.success or check.reached(res.q, [goal])


# ------------------------------------------------------------------------------- unreachable
def test_unreachable_goal_returns_the_seed(panda):
    s, check, q0 = panda
    T = check.pose(q0, "panda_hand_tcp")
    T.translation = T.translation + np.array([10.0, 0.0, 0.0])
    res = panda_ik(s, max_time=0.02).solve([FrameGoal("panda_hand_tcp", T)], q0)
    assert not res.success
    np.testing.assert_array_equal(res.q, q0)
    assert res.message and "no solution" in res.message
    assert res.position_errors[0] > 9.0


# -------------------------------------------------------------------------------- bad input
def test_unknown_frame_lists_valid_frames(panda):
    s, _, q0 = panda
    with pytest.raises(InvalidInputError, match=r"unknown frame 'no_such_frame'.*valid:.*'panda_hand_tcp'"):
        panda_ik(s).solve([FrameGoal("no_such_frame", pin.SE3.Identity())], q0)


def test_wrong_seed_size(panda):
    s, _, q0 = panda
    with pytest.raises(InvalidInputError, match="q_seed"):
        panda_ik(s).solve([FrameGoal("panda_hand_tcp", pin.SE3.Identity())], q0[:5])


def test_nan_seed(panda):
    s, _, q0 = panda
    q = q0.copy()
    q[2] = np.nan
    with pytest.raises(InvalidInputError, match="q_seed"):
        panda_ik(s).solve([FrameGoal("panda_hand_tcp", pin.SE3.Identity())], q)


def test_nan_in_goal(panda):
    s, _, q0 = panda
    T = np.eye(4)
    T[0, 3] = np.nan
    with pytest.raises(InvalidInputError, match=r"goals\[0\]\.T_world_tip.*non-finite"):
        panda_ik(s).solve([FrameGoal("panda_hand_tcp", T)], q0)


def test_non_rotation_matrix(panda):
    s, _, q0 = panda
    T = np.eye(4)
    T[:3, :3] *= 2.0
    with pytest.raises(InvalidInputError, match=r"goals\[1\]\.T_world_tip.*rotation"):
        panda_ik(s).solve([FrameGoal("panda_hand_tcp", np.eye(4)), FrameGoal("panda_link4", T)], q0)
    with pytest.raises(InvalidInputError, match="rotation"):
        panda_ik(s).solve([FrameGoal("panda_hand_tcp", np.diag([1.0, 1.0, -1.0, 1.0]))], q0)  # reflection


def test_bad_goal_shape_and_empty_goals(panda):
    s, _, q0 = panda
    with pytest.raises(InvalidInputError, match="4x4"):
        panda_ik(s).solve([FrameGoal("panda_hand_tcp", np.eye(3))], q0)
    with pytest.raises(InvalidInputError, match="goals"):
        panda_ik(s).solve([], q0)
    with pytest.raises(InvalidInputError, match=r"goals\[0\]"):
        panda_ik(s).solve([np.eye(4)], q0)


@pytest.mark.parametrize("field, value", [
    ("max_iters", 0), ("max_iters", 2.5), ("max_restarts", -1), ("max_time", 0.0), ("max_time", -1.0),
    ("step_size", 0.0), ("damping", -1.0), ("damping", np.nan), ("max_linear_error_norm", 0.0),
    ("max_angular_error_norm", -1e-3), ("max_step_norm", 0.0), ("stall_iters", -1), ("plateau_iters", -2),
    ("fast_return", "yes"), ("seed", 1.5),
])
def test_bad_options_name_the_option(panda, field, value):
    s, _, q0 = panda
    with pytest.raises(InvalidInputError, match=field):
        SimpleIK(s, SimpleIKOptions(group_name="arm", **{field: value}))
    ik = panda_ik(s)  # the same check for options passed to solve()
    with pytest.raises(InvalidInputError, match=field):
        ik.solve([FrameGoal("panda_hand_tcp", pin.SE3.Identity())], q0,
                 SimpleIKOptions(group_name="arm", **{field: value}))


def test_unknown_group(panda):
    s, _, _ = panda
    with pytest.raises(InvalidInputError, match=r"unknown joint group 'legs'.*'arm'"):
        SimpleIK(s, SimpleIKOptions(group_name="legs"))


def test_options_per_call_and_zero_damping(panda):
    """Options passed to solve() override the solver's, including another damping (workspace reuse)."""
    s, check, q0 = panda
    ik = panda_ik(s)
    q_goal = random_goal_configurations(s, "arm", q0, 1, seed=21)[0]
    goal = FrameGoal("panda_hand_tcp", check.pose(q_goal, "panda_hand_tcp"))
    for damping in (0.0, 0.1, 0.001):
        res = ik.solve([goal], q0, SimpleIKOptions(group_name="arm", damping=damping, max_time=MAX_TIME))
        assert check.valid(res.q)
        assert not res.success or check.reached(res.q, [goal])
