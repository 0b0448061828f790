"""The control loop's safety and bound reports that mutation testing found unchecked (docs/mutation.md, core/control).

- Configure: an acceleration limit is refused for the joint whose braking reserve exceeds the leash, not only the first;
  also when the reserve overflows (inf).
- Held steps: a stop whose braking along the path crosses a barrier's floor is turned back along the rows (from the
  path's braking, or else from the hardest braking) and counted once in corrected_stops, ending within the floor;
  the two brakings are weighed, and the path's braking turned back, at the configured barrier_tolerance.
- The following leash: without an acceleration limit the following-error limit alone keeps commanded feedback's
  command within max_state_divergence of the measurement.
- Reports (binding_bounds): the acceleration a joint is held at is its increment's change (u - u1) / dt^2; a
  prismatic joint's values are in m; a step exactly on its bound is on it (tolerance 0), on either side; a joint
  resting on its lower position limit is at that limit.
- following_speed: the steady speed whose braking travel B = n_A u + (u + alpha/2)^2 / (2 alpha) + E fits in the room,
  n_A the steps an acceleration of RAMP_ACCELERATION_SHARE a_max still ramps off (acceleration_limit.py).
- SingularityScale: the probe that finds the direction toward the singularity moves the group's joints only.
"""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
import pytest

from models import scene
from roboplan_ik_ros.core.control.binding_bounds import JOINT_BOUND, VELOCITY_BOUND, binding_bounds
from roboplan_ik_ros.core.control.control_loop import HOLDING
from roboplan_ik_ros.core.control.following_speed import FOLLOWING_SPEED_MARGIN, following_speed, min_jerk
from roboplan_ik_ros.core.control.loop_modes import RAMP_ACCELERATION_SHARE
from roboplan_ik_ros.core.control.singularity_scale import SingularityScale
from roboplan_ik_ros.core.errors import InvalidInputError
from roboplan_ik_ros.core.oink import Oink, PositionLimit, VelocityLimit
from test_control_loop import TIP, SimRobot, panda  # noqa: F401 - panda is a fixture
from test_mutation_gaps_control_loop import DT, franka_limits, loop_of, panda_yaml

BARRIER_TOLERANCE = 1e-4  # [m] panda.yaml's solver.barrier_tolerance: the check's floor is -this below a face
BOUNDARY_SLIP = 1e-8  # [m] barrier_check.py: a row on its tolerance boundary may cross it by this much


def _arm_bounds(names):
    """[rad per period] per joint of ``names``: the most an increment may change in one step from a steady stream
    (u1 = u2), min(a_max dt^2, j_max dt^3) of panda_joint_limits.yaml."""
    limits = franka_limits()
    a = np.array([limits[n]["max_acceleration"] for n in names]) * DT**2
    j = np.array([limits[n]["max_jerk"] for n in names]) * DT**3
    return np.minimum(a, j)


# ----------------------------------------------------------------------------- configure
def _franka_bounds_but(panda, joint: int, a_max: float, j_max: float) -> tuple[list[float], list[float]]:
    """(a_max, j_max) per arm joint of panda_joint_limits.yaml, ``joint``'s (index in the group) replaced."""
    limits = franka_limits()
    names = panda.group("arm").joint_names
    a = [float(limits[n]["max_acceleration"]) for n in names]
    j = [float(limits[n]["max_jerk"]) for n in names]
    a[joint], j[joint] = a_max, j_max
    return a, j


def _configure_with_bounds(panda, a_max: list[float], j_max: list[float]):
    """The loop of panda.yaml (no barriers) whose acceleration limit has these bounds."""
    data = panda_yaml()
    data["barriers"] = []
    for lim in data["limits"]:
        if lim["type"] == "acceleration":
            lim.update(a_max=a_max, j_max=j_max)
    return loop_of(panda, data)


def test_the_joint_whose_braking_reserve_exceeds_the_leash_is_refused_even_when_it_is_not_the_first(panda):
    """Braking.check_reserve: a_max dt^2 (ceil(a_max / (j_max dt)) - 1)^2 per joint must fit in
    max_state_divergence (0.1 rad). Franka's bounds reserve nothing (ceil(15 / (7500 dt)) = 1), except panda_joint3
    given a_max 4, j_max 20: ceil(100) - 1 = 99 steps, 4 dt^2 99^2 = 0.157 rad. Refused, naming panda_joint3 and the
    least j_max that fits (n_C^2 a_max dt^2 < 0.1: n_C = 79, j_max = a_max / (dt (n_C + 1)) = 25)."""
    a_max, j_max = _franka_bounds_but(panda, 2, 4.0, 20.0)
    reserve = 4.0 * DT**2 * (math.ceil(4.0 / (20.0 * DT)) - 1) ** 2
    assert reserve > 0.1 and all(a * DT**2 * max(math.ceil(a / (j * DT)) - 1, 0) ** 2 == 0.0
                                 for k, (a, j) in enumerate(zip(a_max, j_max)) if k != 2)
    expected = (rf"joint 'panda_joint3': a_max 4 and j_max 20 at 500 Hz .* braking reserves {reserve:.3g} rad or m, "
                r"more than node.max_state_divergence 0.1.*Expected j_max >= 25\b")
    with pytest.raises(InvalidInputError, match=expected):
        _configure_with_bounds(panda, a_max, j_max)


@pytest.mark.filterwarnings("ignore:overflow encountered in square:RuntimeWarning")  # AccelerationLimit's own E
def test_a_jerk_bound_whose_braking_reserve_overflows_is_refused_like_any_reserve_beyond_the_leash(panda):
    """Braking.check_reserve: a j_max so small (1e-200 rad/s^3 on panda_joint3, a_max 4) that the reserve
    a_max dt^2 (ceil(a_max / (j_max dt)) - 1)^2 overflows to inf does not fit in the leash either: refused at
    configure naming the joint and the least j_max that fits (min_jerk), as a finite reserve beyond it is. (It was let
    through as "not finite": the joint targets' following speed became NaN, and the loop failed building its joint
    shapers with a ValueError about a NaN v_max that named neither the joint nor the jerk bound.)"""
    a_max, j_max = _franka_bounds_but(panda, 2, 4.0, 1e-200)
    with np.errstate(over="ignore"):
        n_c = np.ceil(np.float64(4.0) / (1e-200 * DT)) - 1.0  # finite: 2e202 steps
        assert np.isfinite(n_c) and 4.0 * DT**2 * n_c**2 == np.inf  # the premise: the reserve overflows
    least = min_jerk(4.0, DT, 0.1)
    expected = (r"joint 'panda_joint3': a_max 4 and j_max 1e-200 at 500 Hz .* braking reserves inf rad or m, more than "
                rf"node.max_state_divergence 0.1.*Expected j_max >= {least:.4g}\b")
    with pytest.raises(InvalidInputError, match=expected):
        _configure_with_bounds(panda, a_max, j_max)


# ----------------------------------------------------------------------------- held steps
# A pose whose TCP moves toward +x (joint 5 at 1.2 rad/s) in a steady command stream (u1 = u2 = U per period), the
# workspace box's +x face at the TCP, its other faces 0.3 m away. Found by a search over poses and streams: slower
# (0.89 U), the braking along the path crosses the check's floor by so little that it can be turned back; faster
# (0.99 U), only the hardest braking (each joint at its bound) can be.
STOP_POSE = [0.322, -0.7732, -0.0853, -1.9678, 0.0081, 1.4757, 0.0393]  # [rad] panda_joint1..7
STOP_STREAM = np.array([-8.156e-5, -5.109e-5, -1.212e-5, 2.112e-4, -2.4212e-3, 1.458e-5, -2.732e-5])  # [rad/period]


def _stop_pose(panda) -> np.ndarray:
    q0 = panda.named_configuration("default")
    q0[:7] = STOP_POSE
    return q0


def _at_the_face(panda, q0: np.ndarray, barrier_tolerance: float | None = None):
    """(loop, face x [m]): panda.yaml with only the workspace barrier, its +x face at the TCP at q0, its other faces
    0.3 m away; ``barrier_tolerance``: solver.barrier_tolerance (None: panda.yaml's)."""
    tcp = panda.frame_pose(q0, TIP).translation
    face = float(tcp[0])
    data = panda_yaml()
    if barrier_tolerance is not None:
        data["solver"]["barrier_tolerance"] = barrier_tolerance
    data["barriers"] = [b for b in data["barriers"] if b["name"] == "workspace"]
    data["barriers"][0]["p_min"] = [float(x) for x in tcp - 0.3]
    data["barriers"][0]["p_max"] = [face, *(float(x) for x in tcp[1:] + 0.3)]  # [m] the TCP on the +x face
    return loop_of(panda, data), face


def _tcp_x_after(panda, group, q0: np.ndarray, u: np.ndarray) -> float:
    """[m] the TCP's x at q0 ⊕ u (u: the group's increment)."""
    dq = np.zeros(panda.model.nv)
    dq[group.v_indices] = u
    return float(panda.frame_pose(panda.integrate(q0, dq), TIP).translation[0])


def _held_tick(loop, q0: np.ndarray, u: np.ndarray, monkeypatch):
    """Activated at q0 with a pose goal 5 cm beyond the face, the stream so far two equal increments u (steady
    speed), then one tick whose QP fails (after solving, so the rows and the box of q0 are as a real failure leaves
    them): its TickResult."""
    loop.state.incoming[:] = q0
    assert loop.state.accept(0.0) == "" and loop.activate(0.0) == ""
    T0 = loop.scene.frame_pose(q0, TIP)
    loop.set_pose_goal("ee", pin.SE3(T0.rotation, T0.translation + np.array([0.05, 0.0, 0.0])))
    loop.guard.u1[:] = u  # the stream so far: two equal increments (steady speed)
    loop.guard.u2[:] = u
    loop.state.incoming[:] = q0
    assert loop.state.accept(DT) == ""
    oink = loop.ctrl.oink
    solve = oink.solve

    def failing(*args, **kwargs):
        solve(*args, **kwargs)  # the rows and the box of this q, as a real failure leaves them
        return oink._fail("QP failed: test")

    monkeypatch.setattr(oink, "solve", failing)
    return loop.tick(DT)


@pytest.mark.parametrize("share, tolerance", [(0.89, None), (0.99, None), (0.2, 1e-5)],
                         ids=["path-braking-corrected", "hardest-braking-corrected", "path-braking-corrected-1e-5"])
def test_a_held_step_whose_braking_crosses_the_floor_is_turned_back_and_counted_once(panda, monkeypatch, share,
                                                                                     tolerance):
    """A QP failure holds (the solve runs at q, then reports failure): the hold brakes, and a stop must be no less
    safe than the step it replaces (Braking.safest_from). Braking along the path (every increment scaled by one factor,
    each dropping by at most min(a_max dt^2, j_max dt^3)) would end beyond the face by more than the tolerance, so
    the stop is turned back along the barrier rows within the box limits: the command ends within the check's floor
    (x <= face + tolerance), every increment within the acceleration and jerk bounds, and the tick counts one
    corrected stop (LoopCounters.corrected_stops), no hardest stop. At 0.89 U it is the braking along the path that
    is turned back: it differs from it by a multiple of the face row's gradient (the TCP's x Jacobian at q: the
    least-norm change), but for the joint that sets the braking's scale, held at its bound. ``tolerance``:
    solver.barrier_tolerance (None: panda.yaml's, 1e-4). At 1e-5 and 0.2 U the braking along the path ends beyond the
    face by more than 1e-5 but less than 1e-4: it is turned back to the configured floor, as at 0.89 U to the
    default's (a check at 1e-4 would let it through as it is)."""
    q0, u = _stop_pose(panda), share * STOP_STREAM
    loop, face = _at_the_face(panda, q0, barrier_tolerance=tolerance)
    assert loop.config.solver.barrier_tolerance == (BARRIER_TOLERANCE if tolerance is None else tolerance)
    tolerance = loop.config.solver.barrier_tolerance
    g = loop.group
    # the premise: braking along the path ends beyond the floor
    step = _arm_bounds(g.joint_names)
    s = max(float(np.max(1.0 - step / np.abs(u))), 0.0)
    x_path = _tcp_x_after(panda, g, q0, s * u)
    assert x_path > face + tolerance + BOUNDARY_SLIP, (s, x_path - face)

    res = _held_tick(loop, q0, u, monkeypatch)
    c = loop.counts
    assert c.tick_errors == 0 and c.qp_failures == 1, loop.hold_reason
    assert loop.mode == HOLDING and loop.hold_reason == "QP failed: test"
    assert (c.corrected_stops, c.hardest_stops) == (1, 0)
    x = panda.frame_pose(res.command, TIP).translation[0]
    assert x <= face + tolerance + BOUNDARY_SLIP, x - face
    u_stop = res.command[g.q_indices] - q0[g.q_indices]
    assert np.all(np.abs(u_stop - u) <= step * (1 + 1e-9) + 1e-15), (u_stop - u) / step
    if share < 0.99:  # the braking along the path turned back
        binding = int(np.argmax(1.0 - step / np.abs(u)))  # the joint whose bound sets the path's scale s
        J_x = pin.computeFrameJacobian(panda.model, panda.model.createData(), q0, panda.model.getFrameId(TIP),
                                       pin.LOCAL_WORLD_ALIGNED)[0, g.v_indices]
        d = u_stop - s * u
        assert abs(d[binding]) <= 1e-12 * step[binding], d / step
        free = np.arange(7) != binding
        c = float(d[free] @ J_x[free]) / float(J_x[free] @ J_x[free])
        assert c < 0.0  # back from the face
        np.testing.assert_allclose(d[free], c * J_x[free], rtol=0.0, atol=1e-6 * float(np.abs(d).max()))


def test_a_held_stop_takes_the_braking_that_ends_higher_above_the_floor_at_the_configured_tolerance(panda, monkeypatch):
    """Braking.safest_from weighs the braking along the path against the hardest braking (each joint toward rest at its
    bound, min(a_max dt^2, j_max dt^3) from the steady stream) by how far each ends above the check's floor at
    solver.barrier_tolerance, here 1e-5 (a tenth of panda.yaml's). At 0.99 U both end beyond the face by more than
    that and neither is turned back within it (no corrected stop); the hardest braking ends farther beyond (the
    premise, computed), so the stop is the braking along the path (q0 ⊕ s u): no hardest stop is counted."""
    tolerance = 1e-5  # [m]
    q0, u = _stop_pose(panda), 0.99 * STOP_STREAM
    loop, face = _at_the_face(panda, q0, barrier_tolerance=tolerance)
    g = loop.group
    step = _arm_bounds(g.joint_names)
    s = max(float(np.max(1.0 - step / np.abs(u))), 0.0)
    u_hardest = np.sign(u) * np.maximum(np.abs(u) - step, 0.0)
    x_path, x_hardest = _tcp_x_after(panda, g, q0, s * u), _tcp_x_after(panda, g, q0, u_hardest)
    assert face + tolerance + BOUNDARY_SLIP < x_path < x_hardest, (x_path - face, x_hardest - face)  # the premise

    res = _held_tick(loop, q0, u, monkeypatch)
    c = loop.counts
    assert c.tick_errors == 0 and c.qp_failures == 1, loop.hold_reason
    assert (c.corrected_stops, c.hardest_stops) == (0, 0)
    u_stop = res.command[g.q_indices] - q0[g.q_indices]
    np.testing.assert_allclose(u_stop, s * u, rtol=0.0, atol=1e-12 * float(np.abs(u).max()))


# ----------------------------------------------------------------------------- the following leash
def test_without_an_acceleration_limit_the_following_error_limit_keeps_the_command_within_the_leash(panda):
    """state_feedback commanded (panda.yaml's), no acceleration limit (whose braking for the leash would hold the
    command too): the following-error limit alone keeps every command within max_state_divergence (0.1 rad) of the
    measurement of its tick, for a robot that trails its commands (first-order lag 1 s) on a 1.5 rad posture goal.
    The command does lead by more than half the leash (it waits for the robot there)."""
    data = panda_yaml()
    data["barriers"] = []
    data["limits"] = [lim for lim in data["limits"] if lim["type"] != "acceleration"]
    loop = loop_of(panda, data)
    assert loop.acceleration_limit is None and loop.settings.state_feedback == "commanded"
    sim = SimRobot(loop, panda.named_configuration("default"), lag=1.0)
    assert loop.activate(sim.t) == ""
    goal = sim.q[loop.group.q_indices].copy()
    goal[0] += 1.5  # [rad] panda_joint1
    loop.set_joint_goal("posture", goal)
    sim.tick(1000)
    e = loop.settings.max_state_divergence
    assert 0.5 * e < sim.max_lead <= e + 1e-9, (sim.max_lead, e)


# ----------------------------------------------------------------------------- reports
def test_a_prismatic_joint_at_its_velocity_limit_is_reported_in_metres():
    """binding_bounds (unit "m" for a joint moving along an axis): group arm_and_hand, the finger's prismatic joint
    (URDF type prismatic, 0.2 m/s) at its velocity bound says m/s, the revolute panda_joint1 beside it rad/s."""
    s = scene("panda")
    group = s.group("arm_and_hand")
    names = list(group.joint_names)
    finger, joint1 = names.index("panda_finger_joint1"), names.index("panda_joint1")
    lim = VelocityLimit(Oink(s, "arm_and_hand"), DT)
    q = s.named_configuration("default")
    b = lim.bounds(q)
    dq = np.zeros(group.nv)
    dq[finger], dq[joint1] = b.upper[finger], b.lower[joint1]
    hits = {h.joint: h for h in binding_bounds(s, group, [lim], q, dq, DT, 1e-12)}
    assert set(hits) == {"panda_finger_joint1", "panda_joint1"}
    assert hits["panda_finger_joint1"].code == VELOCITY_BOUND
    assert hits["panda_finger_joint1"].text == ("panda_finger_joint1 at its velocity limit (v +0.2000 m/s, v_max "
                                                "0.2000 m/s)")
    assert hits["panda_joint1"].text == "panda_joint1 at its velocity limit (v -2.1750 rad/s, v_max 2.1750 rad/s)"


def test_a_step_exactly_on_its_bound_is_on_it_at_zero_tolerance_on_either_side():
    """binding_bounds: the joints whose dq sits *within* tolerance of a bound: with tolerance 0 a dq equal to the
    bound (a step clipped into the box) is on it, at the upper bound as at the lower one; a joint 1e-12 inside is
    not."""
    s = scene("panda")
    group = s.group("arm")
    lim = VelocityLimit(Oink(s, "arm"), DT)
    q = s.named_configuration("default")
    b = lim.bounds(q)
    dq = np.zeros(7)
    dq[2], dq[4], dq[6] = b.upper[2], b.lower[4], b.upper[6] - 1e-12
    hits = binding_bounds(s, group, [lim], q, dq, DT, 0.0)
    assert sorted(h.joint for h in hits) == ["panda_joint3", "panda_joint5"], hits
    assert all(h.code == VELOCITY_BOUND for h in hits)


def test_a_joint_resting_on_its_lower_position_limit_is_reported_at_that_limit():
    """binding_bounds: a joint whose step sits on its lower bound only is at its lower limit, whatever the sign of its
    dq (the sign decides only for a joint pinned on both bounds). panda_joint4 at q_min, still (dq = 0: the position
    limit's lower bound there is 0, its upper one q_max - q_min): the report names the lower limit and its value."""
    s = scene("panda")
    group = s.group("arm")
    k = list(group.joint_names).index("panda_joint4")
    iv = int(group.v_indices[k])
    q = s.named_configuration("default")
    q[group.q_indices[k]] = s.q_min_v[iv]
    lim = PositionLimit(Oink(s, "arm"))
    lim.bounds(q)
    hits = binding_bounds(s, group, [lim], q, np.zeros(group.nv), DT, 1e-9)
    assert [(h.code, h.joint) for h in hits] == [(JOINT_BOUND, "panda_joint4")], hits
    q_min = f"{s.q_min_v[iv]:.4f}"
    assert hits[0].text == f"panda_joint4 at its lower position limit (q {q_min} rad, limit {q_min} rad)"


# ----------------------------------------------------------------------------- following_speed
def _braking_travel(u, alpha, delta):
    """following_speed's docstring: B = n_A u + (u + alpha/2)^2 / (2 alpha) + E, with (acceleration_limit.py)
    n_A = ceil((w + alpha) / delta) - 1 for an acceleration w = RAMP_ACCELERATION_SHARE alpha still ramping off,
    E = alpha n_C^2, n_C = ceil(alpha / delta) - 1 (both 0 without a jerk bound)."""
    if math.isfinite(delta):
        n_a = max(math.ceil((RAMP_ACCELERATION_SHARE * alpha + alpha) / delta) - 1, 0)
        n_c = max(math.ceil(alpha / delta) - 1, 0)
    else:
        n_a = n_c = 0
    return n_a * u + (u + alpha / 2.0) ** 2 / (2.0 * alpha) + alpha * n_c**2


@pytest.mark.parametrize("a_max, j_max, dt, room", [(15.0, 1000.0, 0.002, 0.1), (4.0, 200.0, 0.004, 0.05),
                                                    (10.0, math.inf, 0.002, 0.1), (10.0, 1.0e4, 0.002, 0.1)],
                         ids=["n_A-11", "n_A-7", "no-jerk-bound", "n_A-0"])
def test_the_following_speed_brakes_within_the_room_counting_the_ramp_of_the_acceleration(a_max, j_max, dt, room):
    """following_speed = FOLLOWING_SPEED_MARGIN u / dt, u the steady increment whose braking travel B(u) (n_A steps
    at u while an acceleration of half a_max ramps off, then braking at a_max, then the reserve E) is the room:
    found by bisection on B, which increases with u. n_A-0: a jerk bound with j_max dt >= (1 + RAMP_ACCELERATION_SHARE)
    a_max ramps any acceleration off within the step: no step of ramp is counted."""
    alpha, delta = a_max * dt * dt, j_max * dt**3
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _braking_travel(mid, alpha, delta) <= room else (lo, mid)
    expected = FOLLOWING_SPEED_MARGIN * lo / dt
    got = following_speed(np.array([a_max]), np.array([j_max]), dt, room)
    assert got.shape == (1,)
    assert got[0] == pytest.approx(expected, rel=1e-9)


# ----------------------------------------------------------------------------- singularity scale
def test_the_singularity_probe_moves_the_groups_joints_only():
    """SingularityScale: which sign of u_min moves toward the singularity is found by probing kappa at q + eps v_min
    over the group's joints; the others stay fixed (JointGroup). A group without panda_joint4 (scene.subgroup), at a
    pose where kappa of its 6 x 6 Jacobian is ~150 (lower 100, hard 300): of the twists along +u_min and -u_min, the
    one whose joint motion raises kappa (brute force: kappa at q +- 1e-4 v_min) is scaled by (hard - kappa) /
    (hard - lower), the other followed as asked."""
    s = scene("panda")
    arm = s.group("arm")
    g = s.subgroup(arm, [j for j in arm.joint_names if j != "panda_joint4"])
    fid = s.model.getFrameId(TIP)
    q = s.named_configuration("default")
    q[:7] = [0.47, -0.76, 1.0, -2.26, -0.32, 1.38, 0.24]

    def jacobian(qq):
        return pin.computeFrameJacobian(s.model, s.model.createData(), qq, fid, pin.LOCAL_WORLD_ALIGNED)[:, g.v_indices]

    def kappa(qq):
        S = np.linalg.svd(jacobian(qq), compute_uv=False)
        return S[0] / S[-1]

    U, S, Vt = np.linalg.svd(jacobian(q))
    k0, u_min, v_min = S[0] / S[-1], U[:, -1], Vt[-1]
    assert 100.0 < k0 < 300.0, k0
    probe = np.zeros(s.model.nv)
    probe[g.v_indices] = 1e-4 * v_min
    k_plus, k_minus = kappa(s.integrate(q, probe)), kappa(s.integrate(q, -probe))
    assert abs(k_plus - k_minus) > 1e-4 * k0, (k_plus, k_minus)  # far enough apart to tell
    plus_toward = k_plus > k_minus
    lower, hard = 100.0, 300.0
    sc = SingularityScale(s, g, fid, lower=lower, hard=hard)
    for sign in (1.0, -1.0):
        twist = 0.05 * sign * u_min
        toward = (sign > 0) == plus_toward
        value = sc.scale(q, twist[:3], twist[3:])
        assert sc.kappa == pytest.approx(k0, rel=1e-9)
        if toward:
            assert value == pytest.approx((hard - k0) / (hard - lower), rel=1e-9), sign
        else:
            assert value == 1.0, sign
