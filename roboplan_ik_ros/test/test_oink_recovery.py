"""OInK recovery: a robot that starts outside a barrier's safe set moves back, as fast as its limits allow.

Setup as config/panda.yaml at 500 Hz (dt = 0.002 s): frame task on the TCP (target: the start
pose, i.e. hold still) with a posture task below it, position and velocity limits, the workspace
box and the self-collision barrier.
"""

from dataclasses import dataclass

import numpy as np
import pinocchio as pin
import pytest

import roboplan_ik_ros.core.oink.solver as solver_module
from models import scene
from roboplan_ik_ros.core import (
    ConfigurationTask,
    FrameTask,
    InvalidInputError,
    Oink,
    PositionBarrier,
    PositionLimit,
    SelfCollisionBarrier,
    VelocityLimit,
)

DT = 0.002  # [s]
TIP = "panda_hand_tcp"
P_MIN, P_MAX = np.array([0.2, -0.5, 0.2]), np.array([0.8, 0.5, 0.75])  # workspace box [m]
D_MIN = 0.02  # [m]
TOLERANCE = 1e-4  # [m] solver.barrier_tolerance: "inside" means h >= -TOLERANCE


@pytest.fixture(scope="module")
def panda():
    return scene("panda")


@dataclass
class Controller:
    oink: Oink
    tasks: list
    limits: list
    barriers: list  # [workspace, self_collision]

    def solve(self, q):
        return self.oink.solve(q, self.tasks, self.limits, self.barriers)


def _panda_yaml(panda, barriers=("workspace", "self_collision"), **oink_options) -> Controller:
    oink = Oink(panda, "arm", 1e-6, **oink_options)
    q_default = panda.named_configuration("default")
    tasks = [
        FrameTask(oink, TIP, None, 1.0, 1.0, max_position_error=0.1, max_rotation_error=0.5, name="ee"),
        ConfigurationTask(oink, q_default[oink.group.q_indices], 0.05, priority=2, name="posture"),
    ]
    limits = [PositionLimit(oink, 1.0), VelocityLimit(oink, DT)]
    made = {
        "workspace": lambda: PositionBarrier(oink, TIP, P_MIN, P_MAX, DT, gain=5.0, name="workspace"),
        "self_collision": lambda: SelfCollisionBarrier(
            oink, 4, DT, d_min=D_MIN, gain=5.0, safe_displacement_gain=1e-4, name="self_collision"
        ),
    }
    return Controller(oink, tasks, limits, [made[b]() for b in barriers])


def _box(panda, q):
    """(lower, upper) [rad] on the arm's dq from the URDF, independently of the limit classes."""
    group = panda.group("arm")
    iv, x = group.v_indices, q[group.q_indices]
    step = DT * panda.v_max[iv]
    return np.maximum(panda.q_min_v[iv] - x, -step), np.minimum(panda.q_max_v[iv] - x, step)


def _workspace_h(panda, q):
    """h [m] of the workspace rows (x, y, z lower, then x, y, z upper)."""
    p = panda.frame_pose(q, TIP).translation
    return np.concatenate([p - P_MIN, P_MAX - p])


def _min_distance(panda, q):
    data, geom_data = panda.create_data()
    pin.computeDistances(panda.model, data, panda.collision_model, geom_data, q)
    return min(r.min_distance for r in geom_data.distanceResults)


def _samples(panda, seed, count, accept):
    rng = np.random.default_rng(seed)
    group = panda.group("arm")
    found = []
    while len(found) < count:
        q = panda.random_configuration(rng, group)
        if accept(q):
            found.append(q)
    return found


def _step(c: Controller, q, res):
    """Enforce the barriers (as the controller does), integrate; q_next."""
    dq = c.oink.scatter(res.dq)
    assert c.oink.enforce_barriers(q, dq, c.barriers, TOLERANCE), "enforce_barriers refused a recovery step"
    return c.oink.scene.integrate(q, dq)


# Inside the safe set to within TOLERANCE: the CBF demand shrinks like h, so h -> 0 exponentially at
# rate dt * gain / (1 + |h|) = 1 % per step; from 0.2 m to 1e-4 m that takes ln(2000) * 1.2 / 0.01 ~ 910 steps.
MAX_RECOVERY_STEPS = 1000


def test_recovers_from_random_starts_outside_the_workspace(panda):
    """TCP 5-200 mm outside the box (collision-free), target = start pose: every step recovers."""
    outside = _samples(
        panda, 2024, 16,
        lambda q: 0.005 <= -_workspace_h(panda, q).min() <= 0.2 and _min_distance(panda, q) > D_MIN + 0.005,
    )
    least_gain_deep = np.inf  # least h increase of a row more than 1 mm outside [m]
    worst_loss = 0.0  # largest h decrease of any violated row [m] (second-order linearization error)
    steps = []
    for q in outside:
        c = _panda_yaml(panda)
        for k in range(MAX_RECOVERY_STEPS + 1):
            h = _workspace_h(panda, q)
            if h.min() >= -TOLERANCE:
                break
            res = c.solve(q)
            assert res.ok and res.recovering, res.status
            assert res.status.startswith("recovering: barrier "), res.status
            lower, upper = _box(panda, q)
            assert np.all(lower <= res.dq) and np.all(res.dq <= upper)  # exactly, no tolerance
            q = _step(c, q, res)
            dh = _workspace_h(panda, q) - h
            deep = h < -1e-3  # the CBF asks >= dt * gain * 1e-3 / 1.001 ~ 1e-5 m of these rows
            if deep.any():
                least_gain_deep = min(least_gain_deep, dh[deep].min())
            worst_loss = max(worst_loss, -dh[h < 0.0].min())
        steps.append(k)
    print(f"steps back inside: max {max(steps)} median {np.median(steps)}; least h gain of a row below -1 mm "
          f"{least_gain_deep:.3g} m; worst h loss of a violated row {worst_loss:.3g} m")
    assert max(steps) <= MAX_RECOVERY_STEPS
    assert least_gain_deep > 0.0  # every row more than 1 mm outside moves back, every step
    # A row that went marginally outside during the recovery (the CBF asks ~dt*gain*|h| of it) can lose
    # what the linearization misses, O(|dq|^2) with |dq| <= 5.2e-3 rad at full speed: measured <= 2e-6 m.
    assert worst_loss < 1e-5


def _z_barrier_controller(panda, gain):
    """Only a z-lower barrier at z = 0.4 m (upper face far away), so one row decides the recovery."""
    c = _panda_yaml(panda, barriers=())
    c.barriers = [PositionBarrier(c.oink, TIP, [0, 0, 0.4], [0, 0, 2.0], DT, gain=gain,
                                  axis_selection=(False, False, True), name="floor")]
    return c


def _dz_dq(panda, q):
    """d(TCP z)/dq over the arm [m/rad], straight from pinocchio."""
    model, data = panda.model, panda.model.createData()
    fid = panda.frame_id(TIP)
    J = pin.computeFrameJacobian(model, data, q, fid, pin.LOCAL_WORLD_ALIGNED)
    return J[2, panda.group("arm").v_indices]


def _below_floor(panda, seed, count):
    return _samples(
        panda, seed, count,
        lambda q: 0.005 <= 0.4 - panda.frame_pose(q, TIP).translation[2] <= 0.2 and _min_distance(panda, q) > 0.01,
    )


def test_recovery_moves_inward_as_fast_as_the_limits_allow(panda):
    """Gain 50 demands more than the limits allow: J_h dq equals max over the box of J_h dq.

    Tolerance 1e-3 relative: OSQP stops with each row within eps_abs = 1e-6, so each joint ends
    within ~1e-6 rad of its bound and J_h dq within sum_j |J_hj| 1e-6 ~ 1e-6 m of the maximum, for
    maxima >= 1e-3 m per step here. Measured: ~1e-6 relative.
    """
    worst, compared = 0.0, 0
    for q in _below_floor(panda, 7, 12):
        c = _z_barrier_controller(panda, gain=50.0)
        for _ in range(20):
            res = c.solve(q)
            assert res.ok and res.recovering, res.status
            workspace = c.oink._slack._qp
            lower, upper = _box(panda, q)
            J_h = _dz_dq(panda, q)  # h = z - 0.4
            fastest = np.maximum(J_h * lower, J_h * upper).sum()  # max over the box of J_h dq [m]
            demanded = -c.barriers[0].upper[0]
            if demanded > fastest:
                worst = max(worst, abs(J_h @ res.dq - fastest) / fastest)
                compared += 1
            q = _step(c, q, res)
            assert c.oink._slack._qp is workspace  # the slack problem's OSQP workspace is kept
    print(f"{compared} steps limited by the box; worst relative shortfall {worst:.3g}")
    assert compared >= 100
    assert worst < 1e-3


def test_recovery_step_is_the_barrier_step_when_the_limits_allow_it(panda):
    """Gain 5: the box allows the CBF rate, so the exact penalty gives the slack nothing: J_h dq >= demand."""
    worst, compared = -np.inf, 0
    for q in _below_floor(panda, 8, 8):
        c = _z_barrier_controller(panda, gain=5.0)
        for _ in range(20):
            res = c.solve(q)
            assert res.ok and res.recovering, res.status
            lower, upper = _box(panda, q)
            J_h = _dz_dq(panda, q)
            demanded = -c.barriers[0].upper[0]
            if demanded < 0.5 * np.maximum(J_h * lower, J_h * upper).sum():
                worst = max(worst, demanded - J_h @ res.dq)
                compared += 1
            q = _step(c, q, res)
    print(f"{compared} steps; worst rate below the CBF demand {worst:.3g} m")
    assert compared >= 100
    assert worst < 1e-6  # OSQP's eps_abs on the row


def test_goal_pulling_outward_still_moves_inward(panda):
    """TCP ~5 cm above the box with its target 30 cm higher still: it comes back in and stays in."""
    [q] = _samples(
        panda, 5, 1,
        lambda q: 0.03 <= -_workspace_h(panda, q)[5] <= 0.07 and _workspace_h(panda, q)[:5].min() > 0.05
        and _min_distance(panda, q) > D_MIN + 0.01,
    )
    c = _panda_yaml(panda)
    T = panda.frame_pose(q, TIP)
    T.translation = T.translation + [0.0, 0.0, 0.3]
    c.tasks[0].set_target(T)
    free = _panda_yaml(panda, barriers=())
    free.tasks[0].set_target(T)
    assert _dz_dq(panda, q) @ free.solve(q).dq > 1e-3  # without the barrier the TCP goes up: not vacuous
    h_top = [_workspace_h(panda, q)[5]]
    for _ in range(MAX_RECOVERY_STEPS):
        res = c.solve(q)
        assert res.ok, res.status
        q = _step(c, q, res)
        h_top.append(_workspace_h(panda, q)[5])
    h_top, gain = np.array(h_top), np.diff(h_top)
    assert np.all(gain[h_top[:-1] < -1e-3] > 0.0)  # every step while more than 1 mm outside moves it down
    assert np.all(gain[h_top[:-1] < 0.0] > -1e-5)  # and none loses more than the linearization error
    first_in = int(np.argmax(h_top >= -TOLERANCE))
    assert h_top[first_in] >= -TOLERANCE and np.all(h_top[first_in:] >= -TOLERANCE)  # back in, stays in


def test_self_collision_start_inside_d_min_recovers(panda):
    """Two links closer than d_min (TCP well inside the box): the pair's distance grows back to d_min."""
    starts = _samples(
        panda, 7, 3, lambda q: 0.0 < _min_distance(panda, q) < 0.015 and _workspace_h(panda, q).min() > 0.01
    )
    data, geom_data = panda.create_data()
    gains = []  # h increase per step of the pairs closer than d_min - TOLERANCE [m]
    for q in starts:
        c = _panda_yaml(panda)
        first = c.solve(q)
        assert first.ok and first.recovering and "barrier 'self_collision'" in first.status, first.status
        pairs = c.barriers[1]
        for _ in range(MAX_RECOVERY_STEPS):
            res = c.solve(q)
            assert res.ok, res.status
            h = pairs.value.copy()  # h = d - d_min of the tracked pairs at q [m]
            q = _step(c, q, res)
            pin.framesForwardKinematics(panda.model, data, q)
            pin.updateGeometryPlacements(panda.model, data, panda.collision_model, geom_data)
            gains.extend(pairs.evaluate(data, geom_data)[h < -TOLERANCE] - h[h < -TOLERANCE])  # same pairs
            if _min_distance(panda, q) >= D_MIN - TOLERANCE:
                break
        assert _min_distance(panda, q) >= D_MIN - TOLERANCE
    gains = np.array(gains)
    print(f"{len(gains)} pair-steps; h fell in {np.sum(gains <= 0)}, worst {gains.min():.3g} m")
    # The linearized step never moves a violated pair closer; the distance between convex hulls is
    # only piecewise smooth, so a step can still lose a few 1e-5 m (measured: once, 6e-6 m).
    assert np.mean(gains > 0.0) > 0.99 and gains.min() > -TOLERANCE


def test_normal_path_is_unchanged_inside_the_safe_sets(panda, monkeypatch):
    """Inside both barriers the result is bitwise that of a solver whose recovery cannot trigger."""
    inside = _samples(
        panda, 11, 12, lambda q: _workspace_h(panda, q).min() > 0.0 and _min_distance(panda, q) > D_MIN + 0.002
    )
    rng = np.random.default_rng(12)
    used_qp = 0
    for q in inside:
        c, ref = _panda_yaml(panda), _panda_yaml(panda)
        for oink in (c.oink, ref.oink):
            oink.osqp_settings["adaptive_rho_interval"] = 25  # deterministic OSQP (default: timing based)
        for _ in range(3):  # same sequence for both: warm starts included
            T = panda.frame_pose(q, TIP)
            T.translation = T.translation + rng.uniform(-0.5, 0.5, 3)
            c.tasks[0].set_target(T)
            ref.tasks[0].set_target(T)
            res = c.solve(q)
            with monkeypatch.context() as m:
                m.setattr(solver_module, "most_violated_row", lambda barriers, boundary=0.0: None)
                expected = ref.solve(q)
            assert res.ok and not res.recovering, res.status
            assert np.array_equal(res.dq, expected.dq) and res.status == expected.status
            used_qp += res.used_qp
        assert c.oink._slack._qp is None  # the slack workspace was never set up
    assert used_qp >= 10  # the QP (not only the unconstrained shortcut) was compared


def test_unrecoverable_position_barrier_row_names_the_box(panda):
    """A box around a frame fixed to the base: no joint moves it back, and the hint speaks of the box."""
    c = _panda_yaml(panda, barriers=())
    box = PositionBarrier(c.oink, "panda_link0", [0.1, -1.0, -1.0], [1.0, 1.0, 1.0], DT, name="base_box")
    res = c.oink.solve(panda.named_configuration("default"), c.tasks, c.limits, [box])
    assert not res.ok and np.all(res.dq == 0.0)
    assert "cannot recover; barrier 'base_box' row 'x lower' cannot be satisfied within the joint limits" in res.status
    assert "frame 'panda_link0' is outside the box on x" in res.status
    assert "d_min" not in res.status and "SRDF" not in res.status


def test_enforce_barriers_lets_violated_rows_slip_by_at_most_the_recovery_slip(panda, monkeypatch):
    """At q the TCP is 5 cm above the box. A step that lifts it further (to first order: the slip is for
    what a step that moves it back loses to curvature) is corrected back to where the row is, by less than the
    recovery slip (1e-5 m) or by more (never deeper: a violation does not creep, step after step), or zeroed
    when no correction is tried; one that pushes a satisfied row outside is corrected back onto its floor;
    one that lowers it passes unchanged."""
    [q] = _samples(panda, 5, 1, lambda q: 0.03 <= -_workspace_h(panda, q)[5] <= 0.07
                   and _workspace_h(panda, q)[:5].min() > 0.05)
    c = _panda_yaml(panda, barriers=("workspace",))
    c.solve(q)  # barrier values at q
    J_z = _dz_dq(panda, q)
    up = c.oink.scatter(J_z / (J_z @ J_z))  # lifts the TCP by ~1 m per unit

    def passes(dq_full):
        dq_full = dq_full.copy()
        return c.oink.enforce_barriers(q, dq_full, c.barriers, TOLERANCE), dq_full

    h_z = _workspace_h(panda, q)[5]
    for k, lift in enumerate((0.5e-5, 3.0 * TOLERANCE), start=1):  # within the slip, beyond it
        ok, dq = passes(lift * up)  # deeper to first order: corrected
        assert ok and c.oink.corrected_steps == k
        assert h_z - 1e-9 <= _workspace_h(panda, panda.integrate(q, dq))[5] <= h_z + 1e-6  # where it was, not deeper
    from roboplan_ik_ros.core.oink import barrier_check
    monkeypatch.setattr(barrier_check, "_CORRECTIONS", 0)
    ok, dq = passes(3.0 * TOLERANCE * up)
    assert not ok and not dq.any()  # however much it is shortened
    monkeypatch.undo()
    down = -3.0 * TOLERANCE * up
    ok, dq = passes(down)
    assert ok and np.array_equal(dq, down)
    h_x_lower = _workspace_h(panda, q)[0]
    J_x = pin.computeFrameJacobian(panda.model, panda.model.createData(), q, panda.frame_id(TIP),
                                   pin.LOCAL_WORLD_ALIGNED)[0, panda.group("arm").v_indices]
    ok, dq = passes(c.oink.scatter(-(h_x_lower + 0.01) * J_x / (J_x @ J_x)))  # x lower: inside -> 1 cm out
    assert ok and _workspace_h(panda, panda.integrate(q, dq))[0] >= -TOLERANCE - 1e-8  # corrected onto the floor


def test_enforce_barriers_shortens_a_step_that_ends_outside(panda):
    """A step that ends 0.5 mm outside a satisfied row is shortened (not zeroed, nor corrected) when a shorter
    one stays inside: the tick still moves (what the linearization misses shrinks with the square of the step)."""
    [q] = _samples(panda, 5, 1, lambda q: _workspace_h(panda, q).min() > 0.05)
    c = _panda_yaml(panda, barriers=("workspace",))
    c.solve(q)
    workspace = c.barriers[0]
    h_x_lower = _workspace_h(panda, q)[0]
    J_x = pin.computeFrameJacobian(panda.model, panda.model.createData(), q, panda.frame_id(TIP),
                                   pin.LOCAL_WORLD_ALIGNED)[0, panda.group("arm").v_indices]
    dq = c.oink.scatter(-(h_x_lower + 5.0 * TOLERANCE) * J_x / (J_x @ J_x))  # to first order 0.5 mm out
    shortened, corrected = c.oink.shortened_steps, c.oink.corrected_steps
    out = dq.copy()
    ok = c.oink.enforce_barriers(q, out, c.barriers, TOLERANCE)
    assert ok and (c.oink.corrected_steps, c.oink.shortened_steps) == (corrected, shortened + 1)
    assert 0.0 < np.linalg.norm(out) < np.linalg.norm(dq)
    assert workspace.evaluate(c.oink.data, c.oink.geom_data).min() >= -TOLERANCE


def test_barrier_slack_penalty_must_be_positive(panda):
    for bad in (0.0, -1.0, np.nan):
        with pytest.raises(InvalidInputError, match="barrier_slack_penalty"):
            Oink(panda, "arm", barrier_slack_penalty=bad)


def test_barrier_row_hint_inside_the_box_says_how_far_and_why():
    """A row that no step satisfies while the frame is inside the box (it approaches faster than the bounds
    let it brake): the hint gives the distance to the face, not "at the box"."""
    from roboplan_ik_ros.core.oink.barriers.axis_box import AxisBox

    b = PositionBarrier.__new__(PositionBarrier)  # only the fields the hint reads
    b.__dict__.update(box=AxisBox(np.full(3, -1.0), np.full(3, 1.0), (True, True, True), "b"), frame="panda_hand",
                      value=np.array([0.5, 0.5, 0.5, 0.5, 0.3564, 0.5]))
    hint = b.row_hint(4)  # 'y upper'
    assert "0.3564 m inside the box face on y (p_max[1] = 1 m)" in hint and "brake" in hint, hint
    assert "is at the box" not in hint
