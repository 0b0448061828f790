"""Oracle: OInK's fast path against a plain implementation of the formulation (H, c, N_k, the rows).

The reference below recomputes everything from a fresh pinocchio Data, with the formulas of the
RoboPlan OInK formulation written out literally (np.linalg.inv, np.cross, explicit sums), and takes
only the user's inputs (targets, weights, gains, limits) from the task/limit/barrier objects. The
objective is ``1/2 sum_k ||W_k (J_k N_k dq + alpha_k e_k)||^2 + ...`` expanded, so c carries
``+alpha N^T J^T W^2 e`` with J the task's signed Jacobian (-frame Jacobian, -I): the sign that makes
-H^{-1} c move toward the target (the formulation's one-line "c = sum -alpha N^T J^T W^T W e" reads
with J unsigned).

H and c must agree to 1e-10 (relative to max(1, |H|, |c|)): the same sums in another order, and the
projector through a Cholesky solve instead of an explicit inverse. dq: the reference solves its QP
(or slack problem) with a fresh, stateless ``daqp.solve``; the fast path with its kept, warm-started
workspace. With DAQP both are the exact optimum of the same active set (rows hold to 1e-9), so they
agree to round-off amplified by H's conditioning: 1e-8 rad (measured <= 3e-9). With OSQP the fast
path stops once its residuals are below eps_abs + eps_rel * (the largest of |H dq|, |c|, |A^T y|) with
eps = 1e-6; the slack problem's multipliers reach rho_1 = 100, so the dual residual may be ~1e-4, and
dq is off by up to ~ residual / lambda_min(H) (>= ~0.05 away from singularities: the posture weight
on the frame task's nullspace), exact on the box (clipped). Measured on these seeded samples: at most
4.3e-4 rad (config d); the tolerance is 5e-4 rad, a fraction of a near-target step (which 2e-3 was
not: a wrong step of that size passed).
The geometry query (coal) is checked to its own tolerance, see _reference_self_collision.
"""

from __future__ import annotations

import math

import daqp
import numpy as np
import pinocchio as pin
import pytest

from models import scene
from roboplan_ik_ros.core import (
    AccelerationLimit,
    ConfigurationTask,
    FrameTask,
    Oink,
    PositionBarrier,
    PositionLimit,
    SelfCollisionBarrier,
    VelocityLimit,
)

TIP = "panda_hand_tcp"
DT = 0.01
SLACK_QUADRATIC_LENGTH = 0.1  # [m] rho_2 = rho_1 / this (solver.py)
PRIMAL_TOL = 1e-9  # DAQP: rows hold to this (as in solver.py)


@pytest.fixture(scope="module")
def panda():
    return scene("panda")


def _controller(panda, config: str, qp_solver: str, assembly: str = "compiled"):
    """bench_oink's configs (a) frame + posture, (b) + box, (c) + self-collision, and (d): (a) with
    every objective term in play (task gain, LM damping, saturation, three priority levels); (w): (d) with
    weighted_nullspace and costs of 0 in both levels above the last."""
    oink = Oink(panda, "arm", 1e-6, qp_solver=qp_solver, compiled=assembly == "compiled",
                weighted_nullspace=config == "w")
    assert oink.assembly == assembly, oink.assembly_note
    q0 = panda.named_configuration("default")
    p0 = panda.frame_pose(q0, TIP).translation
    if config == "d":
        tasks = [
            FrameTask(oink, TIP, None, [1.0, 2.0, 0.5], 0.3, task_gain=0.7, lm_damping=0.1,
                      max_position_error=0.05, max_rotation_error=0.3),
            FrameTask(oink, "panda_link4", None, 0.5, 0.0, task_gain=0.9, lm_damping=0.01, priority=2),
            ConfigurationTask(oink, q0[oink.group.q_indices], np.linspace(0.01, 0.1, 7), task_gain=0.5, priority=3),
        ]
    elif config == "w":
        tasks = [
            FrameTask(oink, TIP, None, [1.0, 2.0, 0.5], [0.3, 0.0, 0.0], task_gain=0.7, lm_damping=0.1,
                      max_position_error=0.05, max_rotation_error=0.3),
            FrameTask(oink, "panda_link4", None, [0.5, 0.0, 0.5], 0.0, task_gain=0.9, lm_damping=0.01, priority=2),
            ConfigurationTask(oink, q0[oink.group.q_indices], np.linspace(0.01, 0.1, 7), task_gain=0.5, priority=3),
        ]
    else:
        tasks = [FrameTask(oink, TIP, None), ConfigurationTask(oink, q0[oink.group.q_indices], 0.05, priority=2)]
    limits = [PositionLimit(oink, 0.8 if config in "dw" else 1.0), VelocityLimit(oink, DT)]
    barriers = []
    if config in "bc":
        barriers.append(PositionBarrier(oink, TIP, p0 - 0.5, p0 + [0.5, 0.5, 0.07], DT, safety_margin=0.001))
    if config == "c":
        barriers.append(SelfCollisionBarrier(oink, 4, DT, d_min=0.02, gain=5.0, safe_displacement_gain=1e-4,
                                             broad_phase_cutoff=np.inf))
    return oink, tasks, limits, barriers


def _saturate(e, e_max):
    norm = np.linalg.norm(e)
    return e if not np.isfinite(e_max) or norm == 0.0 else e_max * np.tanh(norm / e_max) * e / norm


def _reference_task(panda, q, task):
    """(J, e, W) of a task at q, from scratch."""
    model, group = panda.model, panda.group("arm")
    iv = group.v_indices
    W = np.diag(task.sqrt_weight)
    if isinstance(task, FrameTask):
        data = model.createData()
        pin.framesForwardKinematics(model, data, q)
        T = data.oMf[task.frame_id]
        R = T.rotation
        e_pos = _saturate(task.target.translation - T.translation, task.max_position_error)
        e_rot = _saturate(R @ pin.log3(R.T @ task.target.rotation), task.max_rotation_error)
        J = -pin.computeFrameJacobian(model, data, q, task.frame_id, pin.LOCAL_WORLD_ALIGNED)[:, iv]
        return J, np.concatenate([e_pos, e_rot]), W
    q_target = q.copy()
    q_target[group.q_indices] = task.target
    return -np.eye(len(iv)), pin.difference(model, q, q_target)[iv], W


def _reference_position_barrier(panda, q, b):
    """(h, J_h) of the box rows: x/y/z lower (p - p_min), then upper (p_max - p)."""
    model = panda.model
    data = model.createData()
    J = pin.computeFrameJacobian(model, data, q, b.frame_id, pin.LOCAL_WORLD_ALIGNED)[:3, panda.group("arm").v_indices]
    p = data.oMf[b.frame_id].translation
    h = [p[a] - b.p_min[a] for a in b.axes] + [b.p_max[a] - p[a] for a in b.axes]
    J_h = [J[a] for a in b.axes] + [-J[a] for a in b.axes]
    return np.array(h), np.array(J_h)


def _reference_self_collision(panda, q, b):
    """(h, J_h) of the n closest pairs, closest first.

    Pair selection and distances are checked against an independent query of every pair, to coal's
    GJK tolerance (two queries of one pair from different starting guesses differ by up to ~1e-6 m).
    The distances and witness points used are the barrier's (coal's output: on parallel flat faces
    witness points are not even unique); the rows follow the formulation from them.
    """
    model, gm = panda.model, panda.collision_model
    data, gd = model.createData(), pin.GeometryData(gm)
    pin.computeDistances(model, data, gm, gd, q)
    pin.computeJointJacobians(model, data, q)
    iv = panda.group("arm").v_indices
    distances = np.array([r.min_distance for r in gd.distanceResults])
    res = b.pairs.result
    pairs = res.pair_index[: res.count]
    assert res.count == b.size
    np.testing.assert_allclose(res.distance[: res.count], np.sort(distances)[: b.size], rtol=0, atol=2e-6)
    np.testing.assert_allclose(distances[pairs], res.distance[: res.count], rtol=0, atol=2e-6)
    h, J_h = [], []
    for row, k in enumerate(map(int, pairs)):
        p1, p2, d = res.point1[row], res.point2[row], res.distance[row]
        if d > 0 and np.linalg.norm(p2 - p1) > 1e-9:
            n = (p2 - p1) / np.linalg.norm(p2 - p1)
        else:  # penetrating: coal's normal (or none)
            n = res.normal[row]
        J_row = np.zeros(len(iv))
        for joint, point, sign in ((gm.geometryObjects[gm.collisionPairs[k].first].parentJoint, p1, -1.0),
                                   (gm.geometryObjects[gm.collisionPairs[k].second].parentJoint, p2, 1.0)):
            if joint == 0:
                continue
            Jj = pin.getJointJacobian(model, data, joint, pin.LOCAL_WORLD_ALIGNED)[:, iv]
            r = point - data.oMi[joint].translation  # lever arm
            J_row += sign * (n @ Jj[:3] + np.cross(r, n) @ Jj[3:])
        h.append(d - b.d_min)
        J_h.append(J_row)
    return np.array(h), np.array(J_h)


def reference_qp(panda, oink, q, tasks, limits, barriers):
    """(H, c, lower, upper, G, G_upper) of the formulation at q. With ``oink.weighted_nullspace`` the
    projectors are built from the rows above whose weight is nonzero, the others dropped from J_s."""
    n, lam = oink.nv, oink.regularization
    group = panda.group("arm")
    H, c = lam * np.eye(n), np.zeros(n)
    above = []  # Jacobians of the priority levels above (their weighted rows with weighted_nullspace)
    for priority in sorted({t.priority for t in tasks}):
        if above:
            Js = np.vstack(above)
            N = np.eye(n) - Js.T @ np.linalg.inv(Js @ Js.T + lam * np.eye(len(Js))) @ Js
        else:
            N = np.eye(n)
        for t in [t for t in tasks if t.priority == priority]:
            J, e, W = _reference_task(panda, q, t)
            mu = t.lm_damping * np.linalg.norm(W @ (t.task_gain * e)) ** 2
            H += N.T @ J.T @ W.T @ W @ J @ N + mu * np.eye(n)
            c += t.task_gain * N.T @ J.T @ W.T @ W @ e
            above.append(J[np.diag(W) != 0.0] if oink.weighted_nullspace else J)
    iv, x = group.v_indices, q[group.q_indices]
    lower, upper = np.full(n, -np.inf), np.full(n, np.inf)
    for lim in limits:
        if isinstance(lim, PositionLimit):
            lower = np.maximum(lower, -lim.gain * (x - panda.q_min_v[iv]))
            upper = np.minimum(upper, lim.gain * (panda.q_max_v[iv] - x))
        else:
            lower = np.maximum(lower, -lim.dt * lim.v_max)
            upper = np.minimum(upper, lim.dt * lim.v_max)
    G, G_upper = [], []
    for b in barriers:
        h, J_h = (_reference_position_barrier if isinstance(b, PositionBarrier) else _reference_self_collision)(panda, q, b)
        norm2 = np.sum(J_h**2)
        if norm2 > 1e-12:
            H += b.safe_displacement_gain / norm2 * np.eye(n)  # dq_safe = 0
        G.append(-J_h)
        G_upper.append(b.dt * b.gain * h / (1 + np.abs(h)) - b.safety_margin)
    G = np.vstack(G) if G else np.zeros((0, n))
    return H, c, lower, upper, G, np.concatenate(G_upper) if G_upper else np.zeros(0)


def reference_dq(H, c, lower, upper, G, G_upper, penalty):
    """The QP's solution, or the slack problem's when a barrier row is violated at dq = 0 (fresh DAQP)."""
    n, k = len(c), len(G_upper)
    if k == 0 or G_upper.min() >= 0.0:
        x, _, flag, _ = daqp.solve(H, c, G, np.concatenate([upper, G_upper]), np.concatenate([lower, np.full(k, -1e30)]),
                                  primal_tol=PRIMAL_TOL)
        assert flag == 1
        return x
    Hs = np.block([[H, np.zeros((n, k))], [np.zeros((k, n)), penalty / SLACK_QUADRATIC_LENGTH * np.eye(k)]])
    f = np.concatenate([c, np.full(k, penalty)])
    A = np.hstack([G, -np.eye(k)])
    bu = np.concatenate([upper, np.maximum(-G_upper, 0.0), G_upper])
    bl = np.concatenate([lower, np.zeros(k), np.full(k, -1e30)])
    x, _, flag, _ = daqp.solve(Hs, f, A, bu, bl, primal_tol=PRIMAL_TOL)
    assert flag == 1
    return x[:n]


def _random_state(panda, rng, tasks):
    """A random configuration inside the limits; targets within ~0.3 m / 0.5 rad of the frames there,
    or (half the time) within 3 mm / 0.01 rad, where often no limit binds."""
    group = panda.group("arm")
    q = panda.random_configuration(rng, group)
    reach = 0.3 if rng.random() < 0.5 else 0.003
    for t in tasks:
        if isinstance(t, FrameTask):
            T = panda.frame_pose(q, t.frame)
            R = T.rotation @ pin.exp3(rng.uniform(-1.0, 1.0, 3) * min(0.5, 3 * reach))
            t.set_target(pin.SE3(R, T.translation + rng.uniform(-reach, reach, 3)))
    return q


@pytest.mark.parametrize("assembly", ["compiled", "numpy"])
@pytest.mark.parametrize("qp_solver, dq_tol", [("daqp", 1e-8), ("osqp", 5e-4)])
@pytest.mark.parametrize("config", ["a", "b", "c", "d", "w"])
def test_fast_path_equals_the_reference(panda, config, qp_solver, dq_tol, assembly):
    """Both assemblies (the compiled kernel, the numpy path) against the reference."""
    oink, tasks, limits, barriers = _controller(panda, config, qp_solver, assembly)
    rng = np.random.default_rng(100 + ord(config))
    worst = {"H": 0.0, "c": 0.0, "box": 0.0, "rows": 0.0, "dq": 0.0}
    counts = {"shortcut": 0, "qp": 0, "recovery": 0}
    samples = 30 if config == "c" else 60
    for _ in range(samples):
        q = _random_state(panda, rng, tasks)
        for step in range(3):  # a few closed-loop steps: warm starts in play
            res = oink.solve(q, tasks, limits, barriers)
            if not res.ok:
                assert "cannot recover" in res.status or "infeasible limits" in res.status, res.status
                break
            fast = oink.last_qp()
            H, c, lower, upper, G, G_upper = reference_qp(panda, oink, q, tasks, limits, barriers)
            scale = max(1.0, np.abs(H).max(), np.abs(c).max())
            worst["H"] = max(worst["H"], np.abs(fast.H - H).max() / scale)
            worst["c"] = max(worst["c"], np.abs(fast.c - c).max() / scale)
            worst["box"] = max(worst["box"], np.abs(fast.lower - lower).max(), np.abs(fast.upper - upper).max())
            if len(G):
                worst["rows"] = max(worst["rows"], np.abs(fast.G - G).max(), np.abs(fast.G_upper - G_upper).max())
                assert np.all(fast.G_lower == -np.inf)
            dq = reference_dq(H, c, lower, upper, G, G_upper, oink.barrier_slack_penalty)
            worst["dq"] = max(worst["dq"], np.abs(res.dq - dq).max())
            counts["recovery" if res.recovering else "qp" if res.used_qp else "shortcut"] += 1
            q = panda.integrate(q, oink.scatter(res.dq))
    print(f"config {config} {qp_solver} {assembly}: {counts}; worst {worst}")
    assert worst["H"] <= 1e-10 and worst["c"] <= 1e-10
    assert worst["box"] <= 1e-12 and worst["rows"] <= 1e-10
    assert worst["dq"] <= dq_tol
    assert counts["qp"] + counts["recovery"] >= 10  # the QP solvers were compared, not only the shortcut
    if config in "bc":
        assert counts["recovery"] >= 10


# ---------------------------------------------------------------- acceleration limit and barrier braking
def _reference_travel(u1: float, w: float, alpha: float, delta: float, E: float) -> float:
    """B(w) of acceleration_limit.py, written out: the braking policy's peak increment P after the
    acceleration ramps down (by delta per step) and its travel at -alpha from there."""
    g = max(w, 0.0) ** 2 / (2.0 * delta) if math.isfinite(delta) else 0.0
    steps = max(math.ceil((w + alpha) / delta - 1e-12) - 1, 0) if math.isfinite(delta) else 0
    P = u1 + w + g
    if P <= 0.0:
        return E
    return steps * P + (P + alpha / 2.0) ** 2 / (2.0 * alpha) + E


def _reference_room(u1, w_lo, w_hi, d, alpha, delta, E) -> float:
    """Largest w in [w_lo, w_hi] whose travel fits in d (upper side)."""
    if not math.isfinite(d):
        return math.inf
    if not math.isfinite(delta):  # the exact braking law
        u_max = math.sqrt(2.0 * alpha * max(d, 0.0)) - alpha / 2.0 if d >= alpha / 8.0 else 0.0
        return u_max - u1
    if _reference_travel(u1, w_hi, alpha, delta, E) <= d:
        return math.inf
    a, b = w_lo, w_hi
    for _ in range(200):
        m = 0.5 * (a + b)
        a, b = (m, b) if _reference_travel(u1, m, alpha, delta, E) <= d else (a, m)
    return a


def reference_acceleration_box(panda, q, lim):
    """(lower, upper) of the AccelerationLimit at q, joint by joint from its module docstring; None
    where the history cannot brake before a limit any more (a state the loop never reaches)."""
    group = panda.group("arm")
    lower, upper = np.zeros(lim.nv), np.zeros(lim.nv)
    for j in range(lim.nv):
        alpha, delta, V, E = lim.alpha[j], lim.delta[j], lim.V[j], lim.E[j]
        u1, w_p, r = lim.u1[j], lim.u1[j] - lim.u2[j], lim.offset[j]
        w_lo, w_hi = max(-alpha, w_p - delta), min(alpha, w_p + delta)
        lo, hi = w_lo, w_hi
        if math.isfinite(delta):  # u1 + w + w^2 / (2 delta) <= V, and mirrored
            hi = min(hi, -delta + math.sqrt(delta**2 + 2.0 * delta * max(V - u1, 0.0)))
            lo = max(lo, delta - math.sqrt(delta**2 + 2.0 * delta * max(V + u1, 0.0)))
        x = q[group.q_indices[j]] + r  # the previous command
        iv = group.v_indices[j]
        hi = min(hi, _reference_room(u1, w_lo, w_hi, panda.q_max_v[iv] - x, alpha, delta, E))
        lo = max(lo, -_reference_room(-u1, -w_hi, -w_lo, x - panda.q_min_v[iv], alpha, delta, E))
        if lo > hi + 1e-9 * alpha:
            return None  # the state is not viable (it cannot brake in time): no box to compare
        lower[j], upper[j] = u1 + lo + r, u1 + max(hi, lo) + r
    return lower, upper


def reference_braking_rows(oink, G, G_upper, barriers):
    """The rows' bounds with braking: min(CBF bound, b(h)) - margin, b the larger root of
    (s + a_h/2)^2 + 2 a_h lag s = 2 a_h h for rows with h >= 0."""
    lag, alpha = oink.barrier_braking[0], oink.barrier_braking[1:]
    out, i = G_upper.copy(), 0
    for b in barriers:
        for row in range(b.size):
            h, a_h = b.value[row], float(np.abs(G[i]) @ alpha)
            if h >= 0.0 and math.isfinite(h) and a_h > 0.0:
                # s^2 + s a_h (1 + 2 lag) + a_h^2 / 4 - 2 a_h h = 0
                B, C = a_h * (1.0 + 2.0 * lag), a_h**2 / 4.0 - 2.0 * a_h * h
                root = max((-B + math.sqrt(B * B - 4.0 * C)) / 2.0, 0.0)
                out[i] = min(G_upper[i] + b.safety_margin, root) - b.safety_margin
            i += 1
    return out


@pytest.mark.parametrize("assembly", ["compiled", "numpy"])
@pytest.mark.parametrize("jerk", [True, False], ids=["jerk", "no-jerk"])
def test_acceleration_limit_and_barrier_braking_equal_the_reference(panda, jerk, assembly):
    """Config (c) with an AccelerationLimit (random histories, near and far from the joint limits)
    and barrier braking: the box and the rows against the formulas, dq against the reference QP."""
    oink, tasks, limits, barriers = _controller(panda, "c", "daqp", assembly)
    a_max = np.array([15.0, 7.5, 10.0, 12.5, 15.0, 20.0, 20.0])
    accel = AccelerationLimit(oink, DT, a_max, a_max * 500.0 if jerk else None)
    limits = [*limits, accel]
    oink.set_barrier_braking(0.5 * accel.alpha, 1.0 if jerk else 0.0)
    rng = np.random.default_rng(7)
    group = panda.group("arm")
    worst_box = worst_rows = worst_dq = 0.0
    near_limit = 0
    for _ in range(40):
        q = _random_state(panda, rng, tasks)
        if rng.random() < 0.5:  # a joint close to a limit
            j = rng.integers(7)
            iv = group.v_indices[j]
            q[group.q_indices[j]] = panda.q_max_v[iv] - rng.uniform(0.0, 0.05)
            near_limit += 1
        for _ in range(100):  # a viable history (one that can still brake before the limits)
            u1 = rng.uniform(-0.5, 0.5, 7) * accel.V
            u2 = u1 - rng.uniform(-1.0, 1.0, 7) * accel.alpha
            accel.set_history(u1, u2)
            box = reference_acceleration_box(panda, q, accel)
            if box is not None:
                break
        lower, upper = box
        res = oink.solve(q, tasks, limits, barriers)
        if not res.ok or res.status.startswith("braking"):  # the formulation's QP is infeasible here
            continue
        fast = oink.last_qp()
        H, c, box_lo, box_up, G, G_upper = reference_qp(panda, oink, q, tasks, limits[:2], barriers)
        box_lo, box_up = np.maximum(box_lo, lower), np.minimum(box_up, upper)
        G_upper = reference_braking_rows(oink, G, G_upper, barriers)
        worst_box = max(worst_box, np.abs(fast.lower - box_lo).max(), np.abs(fast.upper - box_up).max())
        worst_rows = max(worst_rows, np.abs(fast.G_upper - G_upper).max())
        dq = reference_dq(H, c, box_lo, box_up, G, G_upper, oink.barrier_slack_penalty)
        worst_dq = max(worst_dq, np.abs(res.dq - dq).max())
    print(f"jerk {jerk} {assembly}: worst box {worst_box:.2e} rows {worst_rows:.2e} dq {worst_dq:.2e}; "
          f"{near_limit} near a limit")
    assert worst_box <= 1e-12 and worst_rows <= 1e-10 and worst_dq <= 1e-8
