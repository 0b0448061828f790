"""SimpleIK: success on random reachable goals (checked independently), limits, collisions, several
goals at once, fast_return=False, unreachable goals, input validation, and one iteration against a
plain reference implementation of the formulation (so that speed work cannot change the math).

No test is timed: max_restarts ends every solve (MAX_TIME is never reached), so a success count does
not depend on the machine; fast_return=False runs to its max_time, a generous one.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pinocchio as pin
import pytest

from models import robot, scene
from roboplan_ik_ros.core import FrameGoal, InvalidInputError, Scene, SimpleIK, SimpleIKOptions
from roboplan_ik_ros.core.simple_ik import compiled_step as compiled_kernel
from roboplan_ik_ros.core.simple_ik.compiled_step import load_step_kernel
from roboplan_ik_ros.core.simple_ik.active_set import CLAMP_ROUNDS

MAX_TIME = 10.0  # [s] never reached: max_restarts (100) ends a solve, so no outcome depends on the machine
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
    slow = panda_ik(s, fast_return=False, max_time=0.2).solve([goal], q0)  # generous: restarts happen
    assert slow.success and check.reached(slow.q, [goal])
    assert slow.restarts > 0  # it kept searching
    dist = lambda q: np.linalg.norm(s.difference(q0, q)[group.v_indices])  # noqa: E731
    assert dist(slow.q) <= dist(fast.q) + 1e-12


def test_fast_return_false_finds_a_solution_after_failed_seed_attempt(panda):
    """Goals the seeded attempt alone does not reach (max_restarts 0 fails): with fast_return=False
    the restarts find a solution. max_time 0.5 s is a generous budget for that (a restart takes ~1 ms);
    the search runs to it."""
    s, check, q0 = panda
    seeded_only = panda_ik(s, max_restarts=0)
    hard = []
    for q_goal in random_goal_configurations(s, "arm", q0, 40, seed=17):
        goal = FrameGoal("panda_hand_tcp", check.pose(q_goal, "panda_hand_tcp"))
        if not seeded_only.solve([goal], q0).success:
            hard.append(goal)
            if len(hard) == 2:
                break
    assert len(hard) == 2, "fewer than 2 goals that the seeded attempt misses"
    ik = panda_ik(s, fast_return=False, max_time=0.5)
    for goal in hard:
        res = ik.solve([goal], q0)
        assert res.success and res.restarts > 0 and check.reached(res.q, [goal]), res


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


def test_max_time_bounds_the_restarts_not_the_first_attempt(panda):
    """A budget that runs out before the first iteration (a thread preempted on a busy machine, here
    max_time 1 ns) still gets the descent from the seed: a goal 3 cm away is solved, with no restart;
    an unreachable one fails after that single attempt."""
    s, check, q0 = panda
    T = check.pose(q0, "panda_hand_tcp")
    T.translation = T.translation + np.array([0.03, -0.02, 0.01])
    for method in ("dls", "lm_wampler", "newton_raphson"):
        res = panda_ik(s, max_time=1e-9, method=method).solve([FrameGoal("panda_hand_tcp", T)], q0)
        assert res.success and res.restarts == 0 and res.iterations > 0, (method, res)
        assert check.reached(res.q, [FrameGoal("panda_hand_tcp", T)])
    T.translation = T.translation + np.array([10.0, 0.0, 0.0])
    res = panda_ik(s, max_time=1e-9).solve([FrameGoal("panda_hand_tcp", T)], q0)
    assert not res.success and res.restarts == 0 and "max_time" in res.message


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


@pytest.mark.parametrize("where", ["translation nan", "translation inf", "rotation nan"])
def test_non_finite_se3_goal(panda, where):
    s, _, q0 = panda
    T = s.frame_pose(q0, "panda_hand_tcp")
    if where == "rotation nan":
        R = T.rotation.copy()
        R[1, 2] = np.nan
        T.rotation = R
    else:
        t = T.translation.copy()
        t[1] = np.nan if where == "translation nan" else np.inf
        T.translation = t
    with pytest.raises(InvalidInputError, match=r"goals\[0\]\.T_world_tip.*non-finite"):
        panda_ik(s).solve([FrameGoal("panda_hand_tcp", T)], q0)


def test_seed_outside_limits_two_goals(panda):
    """The general loop (several goals) also starts from the seed clipped into the limits."""
    s, check, q0 = panda
    q_goal = random_goal_configurations(s, "arm", q0, 1, seed=3)[0]
    goals = [FrameGoal("panda_hand_tcp", check.pose(q_goal, "panda_hand_tcp")),
             FrameGoal("panda_link4", check.pose(q_goal, "panda_link4"))]
    q_seed = q0.copy()
    q_seed[3] = 1.0  # panda_joint4 is in [-3.07, -0.07]
    res = panda_ik(s).solve(goals, q_seed)
    assert res.success and check.reached(res.q, goals), res  # q_goal reaches both: a solution exists


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
    ("fast_return", "yes"), ("seed", 1.5), ("method", "bfgs"), ("method", None), ("lm_gain", 0.0),
    ("lm_gain", -1.0), ("error_weights", [1.0] * 5), ("error_weights", [0.0] * 6), ("error_weights", [1.0] * 5 + [-1.0]),
    ("error_weights", [1.0] * 5 + [math.nan]), ("error_weights", "ones"),
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
        assert res.success and check.reached(res.q, [goal]), (damping, res)


# ------------------------------------------------------------- one iteration vs the formulation
def reference_step(s: Scene, group_name: str, q: np.ndarray, goals: list[FrameGoal], opt: SimpleIKOptions):
    """q after one SimpleIK iteration, written plainly (numpy.linalg, fresh arrays, its own pinocchio calls).

    Returns (q_new, capped, limited): whether the step cap and the limit handling were active.
    Formulation: e = log6(T_goal^-1 T(q)) and J the LOCAL frame Jacobian of each goal (stacked; J
    premultiplied by Jlog6(T_goal^-1 T(q)) with use_log_jacobian), dq = -step_size J^T (J J^T +
    damping I)^-1 e, scaled to |dq| = max_step_norm if longer; then the position limits: clipped
    (clamp_limits False) or an active set (joints leaving their range go onto their limit, the free
    joints are re-solved for rhs - J d_c with rhs = -step_size e, at most CLAMP_ROUNDS times, then
    clipped). Scalar joints step q directly; a group with a continuous joint bounds the displacement
    and integrates.

    Other methods and error_weights, in the Robotics Toolbox's n x n form (the solver uses the equal
    m x m form): W = diag(error_weights per goal) (a zero weight implies Jlog6), E = e^T W e / 2,
    lm_*: dq = -step_size (J^T W J + lambda I_n)^-1 J^T W e with lambda = gain (Wampler), gain E (Chan),
    E + gain (Sugihara); newton_raphson: -step_size pinv(W^1/2 J) W^1/2 e; gauss_newton: -step_size
    pinv(J^T W J) J^T W e; the clamped re-solve damps with lambda (lm_*) or damping.
    """
    model = s.model
    data = model.createData()
    group = s.group(group_name)
    iv = group.v_indices
    es, Js = [], []
    for g in goals:
        fid = model.getFrameId(g.tip_frame)
        pin.framesForwardKinematics(model, data, q)
        T_err = g.T_world_tip.inverse() * data.oMf[fid]
        J = pin.computeFrameJacobian(model, data, q, fid, pin.ReferenceFrame.LOCAL)[:, iv]
        es.append(pin.log6(T_err).vector)
        masked = min(opt.error_weights) == 0.0
        Js.append(pin.Jlog6(T_err) @ J if opt.use_log_jacobian or masked else J)
    e, J = np.concatenate(es), np.vstack(Js)
    m, n = len(e), J.shape[1]
    w = np.tile(np.asarray(opt.error_weights, dtype=float), len(goals))
    W = np.diag(w)
    E = 0.5 * e @ W @ e
    gain = opt.resolved_lm_gain()
    damping = opt.damping
    if opt.method == "dls":  # (m x m: damping 0 with n > m is allowed)
        Jw, ew = np.sqrt(w)[:, None] * J, np.sqrt(w) * e
        dq = -opt.step_size * Jw.T @ np.linalg.solve(Jw @ Jw.T + damping * np.eye(m), ew)
    elif opt.method.startswith("lm_"):
        damping = {"lm_wampler": gain, "lm_chan": gain * E, "lm_sugihara": E + gain}[opt.method]
        dq = -opt.step_size * np.linalg.solve(J.T @ W @ J + damping * np.eye(n), J.T @ W @ e)
    elif opt.method == "newton_raphson":
        dq = -opt.step_size * np.linalg.pinv(np.sqrt(w)[:, None] * J, 1e-10) @ (np.sqrt(w) * e)
    else:
        dq = -opt.step_size * np.linalg.pinv(J.T @ W @ J, 1e-10) @ (J.T @ W @ e)
    J, e = np.sqrt(w)[:, None] * J, np.sqrt(w) * e  # the clamped re-solve below works on W^1/2 J, W^1/2 e
    capped = np.linalg.norm(dq) > opt.max_step_norm
    if capped:
        dq *= opt.max_step_norm / np.linalg.norm(dq)
    lo, hi = s.q_min_v[iv], s.q_max_v[iv]  # -inf/inf for unbounded joints
    scalar = len(group.continuous_q) == 0
    x = q[group.q_indices] if scalar else np.zeros(len(iv))  # continuous joints: bounds on the displacement
    if not scalar:
        xb = q[group.bounded_q]
        lo, hi = lo.copy(), hi.copy()
        lo[group.bounded_v] -= xb
        hi[group.bounded_v] -= xb
    target = x + dq
    limited = bool(np.any(target < lo) or np.any(target > hi))
    if limited and opt.clamp_limits:
        rhs = -opt.step_size * e
        clamped = np.zeros(len(x), dtype=bool)
        for _ in range(CLAMP_ROUNDS):
            inside = np.clip(target, lo, hi)
            violated = inside != target
            if not violated.any():
                break
            clamped |= violated
            d_c = np.where(clamped, inside - x, 0.0)
            Jf = np.where(clamped, 0.0, J)  # the clamped joints' columns zeroed
            d_f = Jf.T @ np.linalg.solve(Jf @ Jf.T + damping * np.eye(m), rhs - J @ d_c)
            if np.linalg.norm(d_f) > opt.max_step_norm:
                d_f *= opt.max_step_norm / np.linalg.norm(d_f)
            target = x + d_f + d_c
    target = np.clip(target, lo, hi)
    q_new = q.copy()
    if scalar:
        q_new[group.q_indices] = target
    else:
        v = np.zeros(model.nv)
        v[iv] = target
        q_new = pin.integrate(model, q, v)
        q_new[group.bounded_q] = np.clip(q_new[group.bounded_q], s.q_min_v[iv][group.bounded_v],
                                         s.q_max_v[iv][group.bounded_v])
    return q_new, capped, limited


def solver_step(ik: SimpleIK, q: np.ndarray, goals: list[FrameGoal], opt: SimpleIKOptions) -> np.ndarray | None:
    """q after exactly one iteration of the solver's own loop (max_iters 1: step, then stop); None if
    the goal was reached after that iteration (a near goal with some error weights 0)."""
    opt = replace(opt, max_iters=1, stall_iters=0, plateau_iters=0)
    group = ik.scene.group(opt.group_name)
    ws = ik._workspace(group, len(goals))
    ws.set_damping(opt.damping)
    ws.set_weights(opt.error_weights)
    fids = [ik.scene.frame_id(g.tip_frame) for g in goals]
    q = q.copy()
    status, iters, _ = ik._descend(q, fids, [g.T_world_tip.inverse() for g in goals], ws, opt, math.inf)
    if status == "converged" and min(opt.error_weights) == 0.0:
        return None
    assert (status, iters) == ("not converged in 1 iterations", 1), status
    return q


def continuous_ur5() -> Scene:
    urdf = robot("ur5").urdf_xml.replace('<joint name="wrist_3_joint" type="revolute">',
                                         '<joint name="wrist_3_joint" type="continuous">', 1)
    return Scene(urdf, robot("ur5").srdf_xml, robot("ur5").package_paths)


@pytest.mark.parametrize("model, variant", [
    ("panda", {}),
    ("panda", {"clamp_limits": False}),
    ("panda", {"use_log_jacobian": True}),
    ("panda", {"damping": 0.1, "step_size": 0.25, "max_step_norm": math.inf}),
    # no damping: clipped limits (an active set with more clamped joints than the redundancy is singular)
    ("panda", {"damping": 0.0, "max_step_norm": 0.3, "clamp_limits": False}),
    ("panda-two-goals", {}),
    ("panda-finger", {}),  # a tip moved by a joint outside the group: the loop on the group's columns only
    ("ur5", {}),
    ("ur5-continuous", {}),
    ("ur5-continuous", {"clamp_limits": False}),
    ("panda", {"method": "lm_wampler"}),
    ("panda", {"method": "lm_chan"}),
    ("panda", {"method": "lm_sugihara", "lm_gain": 0.01}),
    ("panda", {"method": "newton_raphson"}),
    ("panda", {"method": "gauss_newton"}),
    ("panda", {"method": "lm_chan", "clamp_limits": False}),
    ("panda-two-goals", {"method": "lm_chan"}),
    ("ur5", {"method": "lm_chan"}),
    ("ur5", {"method": "newton_raphson"}),
    ("ur5-continuous", {"method": "lm_sugihara"}),
    ("panda", {"error_weights": [2.0, 2.0, 2.0, 0.5, 0.5, 0.5]}),
    ("panda", {"method": "lm_chan", "error_weights": [1.0, 1.0, 1.0, 0.0, 0.0, 0.0]}),
    ("panda-two-goals", {"method": "gauss_newton", "error_weights": [1.0, 1.0, 1.0, 1.0, 1.0, 0.0]}),
    ("ur5", {"error_weights": [0.0, 0.0, 0.0, 1.0, 1.0, 1.0]}),
])
@pytest.mark.parametrize("compiled", [True, False], ids=["compiled-step", "python-step"])
def test_one_iteration_equals_reference(model, variant, compiled, monkeypatch):
    """The solver's iteration (buffers, BLAS, held views, limit shortcuts; dls and lm_* through the compiled
    kernel, or its Python step) against reference_step: 200 random configurations and goals (near and far,
    so that the cap and the limits act), to 1e-10."""
    monkeypatch.setattr(compiled_kernel, "USE_COMPILED_STEP", compiled)
    s = continuous_ur5() if model == "ur5-continuous" else scene(model.split("-")[0])
    panda_model = model.startswith("panda")
    group_name = "arm" if panda_model else ""
    q0 = s.named_configuration("default") if panda_model else s.neutral()
    tips = {"panda-two-goals": ["panda_hand_tcp", "panda_link4"], "panda-finger": ["panda_leftfinger"],
            "panda": ["panda_hand_tcp"]}.get(model, ["tool0"])
    opt = SimpleIKOptions(group_name=group_name, seed=SOLVER_SEED, **variant)
    ik = SimpleIK(s, opt)
    rng = np.random.default_rng(GOAL_SEED)
    group = s.group(group_name)
    capped = limited = reached = 0
    for k in range(200):
        q = s.random_configuration(rng, group, q0)
        q_goal = s.random_configuration(rng, group, q0)
        if k % 2:  # a near goal: a small step, the plain DLS step without cap
            q_goal = s.integrate(q, 0.05 * s.difference(q, q_goal))
        goals = [FrameGoal(t, s.frame_pose(q_goal, t)) for t in tips]
        q_ref, c, lim = reference_step(s, group_name, q, goals, opt)
        q_new = solver_step(ik, q, goals, opt)
        if q_new is None:
            reached += 1
            continue
        # (gauss_newton: J^T J squares the condition number, so the rounding differences grow)
        np.testing.assert_allclose(q_new, q_ref, rtol=0, atol=1e-8 if opt.method == "gauss_newton" else 1e-10,
                                   err_msg=f"configuration {k}: {q.tolist()}")
        capped += c
        limited += lim
    assert reached <= 50, f"{reached} of 200 goals reached in one iteration: too few steps compared"
    # (lm_chan, lm_sugihara: the damping E is large far from the goal, so the steps are short)
    if opt.max_step_norm < math.inf and opt.method not in ("lm_chan", "lm_sugihara"):
        assert capped >= 10, f"the step cap acted in only {capped} cases"
    if panda_model:
        assert limited >= 10, f"the limits acted in only {limited} cases"


def test_compiled_step_is_built():
    """The bootstrap builds the step kernel (setup.py), so the tests above check it, not only the Python step."""
    kernel, why = load_step_kernel()
    assert kernel is not None, why


def test_without_the_kernel_simple_ik_says_so_and_solves(panda, monkeypatch):
    """No built library (no C compiler at install): SimpleIK.step is "python", step_note says why (the node
    logs it at configure), and solves still succeed through the Python step."""
    from roboplan_ik_ros.core.simple_ik import compiled_step

    monkeypatch.setattr(compiled_step, "_kernel", None)
    monkeypatch.setattr(compiled_step, "_kernel_error", "")
    monkeypatch.setattr(compiled_step, "_library_path", lambda: None)
    s, check, q0 = panda
    ik = panda_ik(s)
    assert ik.step == "python" and "_simple_ik_kernel is not built" in ik.step_note
    goal = FrameGoal("panda_hand_tcp", check.pose(random_goal_configurations(s, "arm", q0, 1, seed=62)[0],
                                                  "panda_hand_tcp"))
    res = ik.solve([goal], q0)
    assert res.success and check.reached(res.q, [goal])
    assert all(ws._compiled is None for ws in ik._workspaces.values())


@pytest.mark.parametrize("method", ["dls", "lm_chan"])
def test_compiled_and_python_steps_solve_alike(panda, method, monkeypatch):
    """Whole solves with and without the kernel: the same answers on 30 Panda goals (the same iterations, up
    to rounding: answers within 1e-9), both valid."""
    s, check, q0 = panda
    goals = [FrameGoal("panda_hand_tcp", check.pose(q, "panda_hand_tcp"))
             for q in random_goal_configurations(s, "arm", q0, 30, seed=61)]
    answers = {}
    for compiled in (True, False):
        monkeypatch.setattr(compiled_kernel, "USE_COMPILED_STEP", compiled)
        ik = panda_ik(s, method=method, max_time=1.0)
        answers[compiled] = [ik.solve([g], q0) for g in goals]
    same = 0
    for a, b, g in zip(answers[True], answers[False], goals):
        assert a.success and b.success and check.reached(a.q, [g]) and check.reached(b.q, [g])
        same += a.iterations == b.iterations and np.abs(a.q - b.q).max() < 1e-9
    assert same >= 27, f"{same}/30 solves alike"


def talos_torso_left_arm() -> Scene:
    """TALOS (example-robot-data's talos_reduced, its SRDF's 887 collision pairs) with a group of the torso
    and the left arm (bench_simple_ik's long chain)."""
    from roboplan_ik_ros.core.model.robots import example_robot_data_share

    share = example_robot_data_share()
    d = share / "example-robot-data" / "robots" / "talos_data"
    joints = ["torso_1_joint", "torso_2_joint", *(f"arm_left_{i}_joint" for i in range(1, 8))]
    srdf = (d / "srdf" / "talos.srdf").read_text().replace(
        "</robot>", '<group name="torso_left_arm">' + "".join(f'<joint name="{j}"/>' for j in joints)
        + "</group>\n</robot>", 1)
    return Scene((d / "robots" / "talos_reduced.urdf").read_text(), srdf, (str(share),))


def test_broad_phase_follows_obstacles():
    """TALOS (887 pairs, the broad phase): a box added far away, then moved onto every 5th configuration's wrist,
    then removed:
    the solver's check agrees with Scene.in_collision every time (the broad phase reads the obstacle's
    placement of now and is rebuilt when obstacles come or go)."""
    from roboplan_ik_ros.core import Obstacle

    s = talos_torso_left_arm()
    ik = SimpleIK(s, SimpleIKOptions(group_name="torso_left_arm", seed=SOLVER_SEED))
    rng = np.random.default_rng(GOAL_SEED)
    qs = [q for q in (s.random_configuration(rng, ik.group, s.neutral()) for _ in range(300))
          if not s.in_collision(q)][:60]
    s.add_obstacle(Obstacle("box", "box", (0.15, 0.15, 0.15), position=(5.0, 0.0, 0.0)))
    hits = 0  # configurations free of self-collision that hit the box
    try:
        for k, q in enumerate(qs):
            if k % 5 == 0:  # moved onto this configuration's wrist: it hits that one, maybe others
                s.move_obstacle("box", s.frame_pose(q, "arm_left_7_link").translation, (0, 0, 0, 1))
            expected = s.in_collision(q)
            assert ik._in_collision(q) == expected, k
            hits += expected
    finally:
        s.remove_obstacle("box")
    assert len(qs) == 60 and 12 <= hits <= 57, hits
    assert all(ik._in_collision(q) == s.in_collision(q) for q in qs[:10])


@pytest.mark.parametrize("name", ["panda", "ur5", "talos"])
def test_collision_check_equals_plain_pinocchio(name):
    """The solver's collision check (a broad phase when available) agrees with Scene.in_collision
    (pinocchio's computeCollisions over every active pair) on random configurations (TALOS: 887 pairs)."""
    s = talos_torso_left_arm() if name == "talos" else scene(name)
    group_name = {"panda": "arm", "talos": "torso_left_arm"}.get(name, "")
    ik = SimpleIK(s, SimpleIKOptions(group_name=group_name, seed=SOLVER_SEED))
    rng = np.random.default_rng(GOAL_SEED)
    q0 = s.named_configuration("default") if name == "panda" else s.neutral()
    colliding = 0
    n = 500 if name == "talos" else 2000
    for _ in range(n):
        q = s.random_configuration(rng, ik.group, q0)
        expected = s.in_collision(q)
        assert ik._in_collision(q) == expected, q.tolist()
        colliding += expected
    assert 20 <= colliding <= n - 20  # both outcomes were exercised


# ---------------------------------------------------------------- the compiled descent (whole attempts in C)
def every_joint_kind_chain() -> Scene:
    """A chain of every scalar joint kind the compiled descent computes: revolute about x, y, z and an unaligned
    axis, prismatic along x, y, z and an unaligned axis (links 0.2 m apart, tilted), tip frame "tip"."""
    kinds = [("revolute", "1 0 0"), ("revolute", "0 1 0"), ("revolute", "0 0 1"), ("revolute", "0 0.6 0.8"),
             ("prismatic", "1 0 0"), ("prismatic", "0 1 0"), ("prismatic", "0 0 1"), ("prismatic", "0.48 0.6 0.64")]
    links = ['<link name="l0"/>']
    joints = []
    for k, (kind, axis) in enumerate(kinds):
        links.append(f'<link name="l{k + 1}"/>')
        limit = "-2.5" if kind == "revolute" else "-0.3"
        joints.append(f'<joint name="j{k + 1}" type="{kind}"><parent link="l{k}"/><child link="l{k + 1}"/>'
                      f'<origin xyz="0.05 0.02 0.2" rpy="0.3 -0.2 0.1"/><axis xyz="{axis}"/>'
                      f'<limit lower="{limit}" upper="{limit[1:]}" effort="1" velocity="1"/></joint>')
    links.append('<link name="tip"/>')
    joints.append('<joint name="tip_joint" type="fixed"><parent link="l8"/><child link="tip"/>'
                  '<origin xyz="0.1 0 0.05" rpy="0 0.4 0"/></joint>')
    return Scene(f'<robot name="kinds">{"".join(links)}{"".join(joints)}</robot>')


@pytest.mark.kernel
@pytest.mark.parametrize("variant", [{}, {"clamp_limits": False}, {"method": "lm_chan"}])
def test_descent_kinematics_of_every_joint_kind(variant):
    """The descent's own kinematics (forward kinematics, LOCAL Jacobian, log6) on every scalar joint kind, one
    iteration against reference_step (pinocchio's kinematics, numpy's algebra): 200 configurations and
    goals, near and far, to 1e-10; the descent is the path taken."""
    s = every_joint_kind_chain()
    opt = SimpleIKOptions(seed=SOLVER_SEED, **variant)
    ik = SimpleIK(s, opt)
    ws = ik._workspace(ik.group, 1)
    assert ws.compiled_descent(s.model, s.frame_id("tip")) is not None
    rng = np.random.default_rng(GOAL_SEED)
    q0 = s.neutral()
    capped = limited = 0
    for k in range(200):
        q = s.random_configuration(rng, ik.group, q0)
        q_goal = s.random_configuration(rng, ik.group, q0)
        if k % 2:
            q_goal = s.integrate(q, 0.05 * s.difference(q, q_goal))
        goals = [FrameGoal("tip", s.frame_pose(q_goal, "tip"))]
        q_ref, c, lim = reference_step(s, "", q, goals, opt)
        q_new = q.copy()  # one iteration (a near goal may be reached by it: the step is the same)
        status, iters, _ = ik._descend(q_new, [s.frame_id("tip")], [goals[0].T_world_tip.inverse()], ws,
                                       replace(opt, max_iters=1, stall_iters=0, plateau_iters=0), math.inf)
        assert iters == 1 and status in ("converged", "not converged in 1 iterations"), status
        np.testing.assert_allclose(q_new, q_ref, rtol=0, atol=1e-10, err_msg=f"configuration {k}: {q.tolist()}")
        capped += c
        limited += lim
    # (lm_chan: the damping E is large far from the goal, so its steps are short)
    assert limited >= 10 and (capped >= 10 or opt.method == "lm_chan"), (capped, limited)


@pytest.mark.parametrize("name, method", [("panda", "dls"), ("panda", "lm_chan"), ("ur5", "dls"),
                                          ("ur5", "lm_sugihara")])
def test_compiled_descent_solves_as_the_step_loop(name, method, monkeypatch):
    """Whole solves with the attempts in C (compiled descent) and with the loop in Python around the compiled
    step (pinocchio's kinematics): the same answers on 30 goals (the same iterations, answers within 1e-9, up
    to rounding), both valid; the descent was taken."""
    s = scene(name)
    check = Checker(name, s)
    group_name = "arm" if name == "panda" else ""
    q0 = s.named_configuration("default") if name == "panda" else s.neutral()
    tip = "panda_hand_tcp" if name == "panda" else "tool0"
    goals = [FrameGoal(tip, check.pose(q, tip)) for q in random_goal_configurations(s, group_name, q0, 30, seed=63)]
    answers = {}
    for descent in (True, False):
        monkeypatch.setattr(compiled_kernel, "USE_COMPILED_DESCENT", descent)
        ik = SimpleIK(s, SimpleIKOptions(group_name=group_name, seed=SOLVER_SEED, max_time=1.0, method=method))
        answers[descent] = [ik.solve([g], q0) for g in goals]
        ws = ik._workspace(ik.group, 1)
        assert (ws.compiled_descent(s.model, s.frame_id(tip)) is not None) == descent
    same = 0
    for a, b, g in zip(answers[True], answers[False], goals):
        assert a.success and b.success and check.reached(a.q, [g]) and check.reached(b.q, [g])
        same += a.iterations == b.iterations and np.abs(a.q - b.q).max() < 1e-9
    assert same >= 27, f"{same}/30 solves alike"


@pytest.mark.kernel
@pytest.mark.parametrize("name", ["panda", "ur5"])
def test_plain_requests_answer_as_the_general_path(name):
    """The common request (one FrameGoal, the solver's own options) takes _solve_plain; the same request with the
    options passed takes _solve. Both give the same answers, iterations, restarts, errors and messages on 40
    goals: reachable ones, unreachable ones (restarts until max_restarts), seeds outside the limits, a goal
    SE3 changed in place between solves."""
    s = scene(name)
    check = Checker(name, s)
    group_name = "arm" if name == "panda" else ""
    q0 = s.named_configuration("default") if name == "panda" else s.neutral()
    tip = "panda_hand_tcp" if name == "panda" else "tool0"
    opt = SimpleIKOptions(group_name=group_name, seed=SOLVER_SEED, max_time=MAX_TIME, max_restarts=20)
    plain, general = SimpleIK(s, opt), SimpleIK(s, opt)
    assert plain._solve_plain([FrameGoal(tip, s.frame_pose(q0, tip))], q0) is not None
    T = pin.SE3.Identity()  # one object changed in place for every goal
    hi = s.q_max_v[s.group(group_name).v_indices]
    for k, q in enumerate(random_goal_configurations(s, group_name, q0, 40, seed=64)):
        M = check.pose(q, tip)
        T.rotation, T.translation = M.rotation, M.translation + (np.array([5.0, 0.0, 0.0]) if k % 8 == 3 else 0.0)
        q_seed = q0.copy()
        if k % 5 == 1:  # a seed outside the limits (clipped first)
            q_seed[s.group(group_name).q_indices[1]] = hi[1] + 0.5
        a = plain.solve([FrameGoal(tip, T)], q_seed)
        b = general.solve([FrameGoal(tip, T)], q_seed, opt)
        assert (a.success, a.iterations, a.restarts, a.message) == (b.success, b.iterations, b.restarts, b.message), k
        np.testing.assert_array_equal(a.q, b.q)
        np.testing.assert_array_equal(a.position_errors, b.position_errors)
        np.testing.assert_array_equal(a.orientation_errors, b.orientation_errors)
        assert a.success == (k % 8 != 3), (k, a.message)
        if a.success:
            assert check.reached(a.q, [FrameGoal(tip, T)])
        else:
            assert "max_restarts 20 reached" in a.message
