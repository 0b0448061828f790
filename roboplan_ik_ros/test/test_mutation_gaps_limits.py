"""The limits' behaviour that mutation testing found unchecked (docs/mutation.md, core/oink/limits).

- AccelerationLimit's numpy path (no compiled kernel) was only compared with the kernel on random
  states: no joint exactly at rest, none just stopped or cruising, no per-joint mix of jerk bounds, and
  no command stream run through it (where pi's step meets last step's bound to round-off).
- The braking policy's travel B(w) at its two edges: P = 0 and (w + alpha) / delta an integer.
- hardest_braking_step, reset, bound_cause, VelocityLimit.set_reference and FollowingErrorLimit's bounds
  had no test that pins their result; the latter's name (reports, errors) none at all.
- A second sample (seed 1): the collapse of a moving joint in a corridor of no width (the numpy path's middle
  branch), PositionLimit on a group with continuous joints, set_velocity_bound's error at run time.
"""

from __future__ import annotations

import numpy as np
import pytest

from roboplan_ik_ros.core import InvalidInputError
from roboplan_ik_ros.core.oink import AccelerationLimit, FollowingErrorLimit, Oink, PositionLimit, VelocityLimit
from roboplan_ik_ros.core.oink.compiled_assembly import load_acceleration_box
from roboplan_ik_ros.core.oink.limits.acceleration_limit import _travel

from models import scene

DT = 0.002  # [s]
A_MAX = np.array([15.0, 7.5, 10.0, 12.5, 15.0, 20.0, 20.0])  # [rad/s^2] the Panda's
J_MAX = np.array([7500.0, 3750.0, 5000.0, 6250.0, 7500.0, 10000.0, 10000.0])  # [rad/s^3]
# per joint: some joints with a jerk bound, some without (inf): both branches of every np.where(finite)
J_MIXED = np.where(np.arange(7) % 2 == 0, J_MAX, np.inf)
JERKS = {"accel": None, "accel+jerk": J_MAX, "mixed": J_MIXED}


@pytest.fixture(scope="module")
def oink():
    return Oink(scene("panda"), "arm")


def _pair(oink, j_max):
    """(kernel, numpy) limits with the same bounds; skips when the kernel is not built. The default takes
    the kernel, compiled=False the numpy path (what the flag says, not ignored)."""
    if load_acceleration_box() is None:
        pytest.skip("the OInK kernel is not built: nothing to compare the numpy path with")
    fast = AccelerationLimit(oink, DT, A_MAX, j_max)
    slow = AccelerationLimit(oink, DT, A_MAX, j_max, compiled=False)
    assert fast._box is not None and slow._box is None
    return fast, slow


def _same_box(fast, slow, q, what):
    a, b = fast.bounds(q), slow.bounds(q)
    assert np.array_equal(a.lower, b.lower) and np.array_equal(a.upper, b.upper), (
        f"{what}: kernel box [{a.lower}, {a.upper}] != numpy box [{b.lower}, {b.upper}]")
    assert fast.nonviable == slow.nonviable, f"{what}: non-viable steps {fast.nonviable} != {slow.nonviable}"
    return a


# numpy's RuntimeWarnings as errors: a joint without a jerk bound (delta = inf) must not make the path warn
# (inf - inf in the velocity room is masked), which the node's log would repeat
@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("jerk", list(JERKS))
@pytest.mark.parametrize("push", ["up", "down", "bang"])
def test_the_numpy_path_drives_a_stream_like_the_kernel(oink, jerk, push):
    """Full-speed approaches to the limits and reversals, every step's box from both paths: equal, never
    empty, and no step counted as non-viable (braking up to a limit puts pi's step exactly on the bound
    it met the step before: round-off, not a conflict)."""
    fast, slow = _pair(oink, JERKS[jerk])
    sc, g = oink.scene, oink.group
    q = sc.named_configuration("default")
    lo_q, hi_q = sc.q_min_v[g.v_indices], sc.q_max_v[g.v_indices]
    V = fast.V
    u1, u2 = np.zeros(7), np.zeros(7)
    for k in range(1000):  # 2 s: every joint reaches its limit from the default pose
        for lim in (fast, slow):
            lim.set_history(u1, u2)
        _, lower, upper = _same_box(fast, slow, q, f"{jerk} {push} step {k}")
        x = q[g.q_indices]
        lower = np.maximum(lower, np.maximum(-V, lo_q - x))  # with the velocity and position limits
        upper = np.minimum(upper, np.minimum(V, hi_q - x))
        assert (lower <= upper).all(), f"empty box at step {k}"
        up = push == "up" or (push == "bang" and (k // 200) % 2 == 0)
        u = upper if up else lower
        q[g.q_indices] += u
        u2, u1 = u1, u.copy()
    assert fast.nonviable == 0 and slow.nonviable == 0


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("jerk", list(JERKS))
def test_the_numpy_box_equals_the_kernel_box_on_edge_states(oink, jerk):
    """States the random comparison never draws: joints exactly at rest beside moving ones, joints that
    have just stopped (u1 = 0, u2 != 0) or cruise (u1 = u2), states beyond saving on either side, and
    following corridors narrower than the braking travel."""
    fast, slow = _pair(oink, JERKS[jerk])
    sc, g = oink.scene, oink.group
    rng = np.random.default_rng(31)
    alpha, V = fast.alpha, fast.V
    kinds = ("rest", "stopped", "cruise", "moving")
    for k in range(600):
        q = sc.named_configuration("default")
        kind = rng.choice(kinds, 7)
        u1 = rng.uniform(-1.0, 1.0, 7) * V
        u2 = u1 - rng.uniform(-1.0, 1.0, 7) * alpha
        u1[kind == "rest"] = u2[kind == "rest"] = 0.0
        u1[kind == "stopped"] = 0.0
        u2[kind == "cruise"] = u1[kind == "cruise"]
        # one joint close to a limit, heading for it (beyond saving when close and fast)
        j = rng.integers(7)
        upper = bool(k % 2)
        limit_q = (sc.q_max_v if upper else sc.q_min_v)[g.v_indices[j]]
        q[g.q_indices[j]] = limit_q - (1 if upper else -1) * rng.uniform(0.0, 0.02)
        if kind[j] != "rest":
            u1[j] = (1 if upper else -1) * abs(u1[j])
        room_up = rng.uniform(-0.01, 0.05, 7) if k % 3 == 0 else None
        room_lo = None if room_up is None else rng.permutation(room_up)
        for lim in (fast, slow):
            lim.set_following_room(room_up, room_lo)
            lim.set_history(u1, u2)
        _same_box(fast, slow, q, f"{jerk} state {k} ({list(kind)})")
    assert slow.nonviable > 0, "no state beyond saving was drawn: the collapse branch went unchecked"


def test_braking_travel_at_its_edges():
    """B(w) = n_A P + (P + alpha/2)^2 / (2 alpha) + E for P = u1 + w + g(w) > 0, E for P <= 0, with
    n_A = ceil((w + alpha) / delta) - 1: at (w + alpha) / delta = 6 exactly the policy needs 5 steps before
    it brakes at -alpha (values exact in binary)."""
    alpha, delta, E = np.array([1.0]), np.array([0.25]), np.array([0.125])
    w = np.array([0.5])  # (w + alpha) / delta = 6
    g = w[0] ** 2 / (2 * delta[0])
    P = 0.0 + w[0] + g
    expected = 5 * P + (P + alpha[0] / 2) ** 2 / (2 * alpha[0]) + E[0]
    assert _travel(np.array([0.0]), w, alpha, delta, E)[0] == pytest.approx(expected, rel=1e-15)
    # P = 0 exactly (u1 = -(w + g)): nothing left to travel beyond the easing E
    u1 = np.array([-(w[0] + g)])
    assert _travel(u1, w, alpha, delta, E)[0] == E[0]
    # no jerk bound: g = 0 and n_A = 0: the exact braking law's travel (P + alpha/2)^2 / (2 alpha)
    inf = np.array([np.inf])
    assert _travel(np.array([0.25]), w, alpha, inf, np.zeros(1))[0] == (0.75 + 0.5) ** 2 / 2.0


@pytest.mark.parametrize("compiled", [True, False], ids=["kernel", "numpy"])
def test_the_exact_braking_law_close_to_a_limit(oink, compiled):
    """No jerk bound: u <= sqrt(2 alpha d) - alpha/2 where that is >= 0, else u <= 0. At d = alpha/2 the
    joint may still step alpha/2 towards the limit; at d = alpha/8.5 (< alpha/8) a joint cruising away
    from it may slow down to a stop but not turn towards it, and is not pushed away faster either."""
    limit = AccelerationLimit(oink, DT, 10.0, compiled=compiled)
    sc, g = oink.scene, oink.group
    alpha = limit.alpha[0]
    q = sc.named_configuration("default")
    q[g.q_indices[0]] = sc.q_max_v[g.v_indices[0]] - alpha / 2
    _, _, up = limit.bounds(q)  # at rest
    assert up[0] == pytest.approx(alpha / 2, rel=1e-9)
    q[g.q_indices[0]] = sc.q_max_v[g.v_indices[0]] - alpha / 8.5
    away = np.zeros(7)
    away[0] = -alpha / 4  # cruising away from the upper limit
    limit.set_history(away, away)
    _, lo, up = limit.bounds(q)
    assert up[0] == 0.0 and lo[0] == pytest.approx(away[0] - alpha, rel=1e-12)


def test_hardest_braking_step_brakes_each_joint_by_a_max(oink):
    """Without a jerk bound, far from the limits, the hardest stop changes each joint's increment by
    a_max dt^2 towards zero, or stops it where that is less, and adds the linearization offset."""
    limit = AccelerationLimit(oink, DT, A_MAX)
    q = oink.scene.named_configuration("default")
    alpha = limit.alpha
    u1 = np.array([3.0, -3.0, 0.5, -0.5, 0.0, 1.0, -2.0]) * alpha  # fast, slow (< alpha), still
    offset = np.linspace(-1e-4, 1e-4, 7)
    limit.set_history(u1, u1, offset)
    step = limit.hardest_braking_step(q)
    expected_u = np.sign(u1) * np.maximum(np.abs(u1) - alpha, 0.0)
    np.testing.assert_allclose(step - offset, expected_u, rtol=0, atol=1e-18)


def test_reset_forgets_the_motion_and_the_offset(oink):
    """After reset() the limit is at rest and its box is the one of a new stream: +-a_max dt^2 around 0."""
    limit = AccelerationLimit(oink, DT, A_MAX)
    q = oink.scene.named_configuration("default")
    limit.set_history(np.full(7, 1e-3), np.full(7, 5e-4), np.full(7, 1e-4))
    assert not limit.at_rest
    limit.reset()
    assert limit.at_rest
    _, lo, up = limit.bounds(q)
    np.testing.assert_array_equal(up, limit.alpha)
    np.testing.assert_array_equal(lo, -limit.alpha)


def test_bound_cause_names_the_term_that_binds(oink):
    """bound_cause on states built so that one term sets the bound: the reachable window (acceleration,
    or jerk when delta < alpha), the velocity's levelling off, the braking distance to a position limit,
    the following window."""
    sc, g = oink.scene, oink.group
    q0 = sc.named_configuration("default")
    # a_max 10, j_max 1000 at 2 ms: alpha = 4e-5, delta = 8e-6 = alpha / 5
    jerky = AccelerationLimit(oink, DT, 10.0, 1000.0)
    alpha, delta = jerky.alpha[0], jerky.delta[0]
    # w_p = delta: the window's top w_p + delta; a linearization offset shifts the box, not the cause
    jerky.set_history(np.full(7, 10 * delta), np.full(7, 9 * delta), np.full(7, -delta))
    jerky.bounds(q0)
    assert 2 * delta < alpha
    assert jerky.bound_cause(0, upper=True) == "jerk"
    assert jerky.bound_cause(0, upper=False) == "jerk"
    # cruising just below v_max: levelling off under the jerk bound allows less than the window
    V = jerky.V[0]
    slack = delta / 10
    jerky.set_history(np.full(7, V - slack), np.full(7, V - slack))
    _, _, up = jerky.bounds(q0)
    assert up[0] - (V - slack) < delta
    assert jerky.bound_cause(0, upper=True) == "velocity"

    plain = AccelerationLimit(oink, DT, 10.0)  # no jerk bound: the window is +-alpha
    plain.bounds(q0)
    assert plain.bound_cause(0, upper=True) == "acceleration"
    assert plain.bound_cause(0, upper=False) == "acceleration"
    # at rest at d = 0.78125 alpha below the upper limit: the braking law allows u = sqrt(2 alpha d) - alpha/2
    # = 0.75 alpha, inside the window: the position term binds (not the acceleration, half as far again)
    q = q0.copy()
    d = 0.78125 * alpha
    q[g.q_indices[0]] = sc.q_max_v[g.v_indices[0]] - d
    _, _, up = plain.bounds(q)
    assert up[0] == pytest.approx(0.75 * alpha, rel=1e-9)
    assert plain.bound_cause(0, upper=True) == "position"
    # the same travel left before a following window's lower edge (none above), the limits far: the window
    # binds below, the window of reachable steps above
    plain.set_following_room(np.full(7, np.inf), np.full(7, d))
    _, lo, up = plain.bounds(q0)
    assert lo[0] == pytest.approx(-0.75 * alpha, rel=1e-9) and up[0] == alpha
    assert plain.bound_cause(0, upper=False) == "following"
    assert plain.bound_cause(0, upper=True) == "acceleration"
    plain.set_following_room(np.full(7, d), np.full(7, np.inf))
    _, lo, up = plain.bounds(q0)
    assert up[0] == pytest.approx(0.75 * alpha, rel=1e-9) and lo[0] == -alpha
    assert plain.bound_cause(0, upper=True) == "following"
    assert plain.bound_cause(0, upper=False) == "acceleration"


def test_velocity_limit_centres_on_the_reference_and_back(oink):
    """set_reference(r): r - dt v_max <= dq <= r + dt v_max; set_reference(None): back to +-dt v_max."""
    v_max = np.linspace(1.0, 2.2, 7)
    limit = VelocityLimit(oink, DT, v_max)
    q = oink.scene.named_configuration("default")
    step = DT * v_max
    r = np.linspace(-1e-3, 1e-3, 7)
    limit.set_reference(r)
    _, lo, up = limit.bounds(q)
    np.testing.assert_array_equal(up, r + step)
    np.testing.assert_array_equal(lo, r - step)
    limit.set_reference(None)
    _, lo, up = limit.bounds(q)
    np.testing.assert_array_equal(up, step)
    np.testing.assert_array_equal(lo, -step)


def test_following_error_limit_keeps_the_error_or_lets_it_shrink(oink):
    """|e + dq| <= max_error where that is possible, else dq may not grow the error: with e in units of
    max_error m, e = 0.5 m allows [-1.5 m, 0.5 m]; e = 2 m (beyond) [-3 m, 0]; e = -2 m [0, 3 m]."""
    m = 0.01
    limit = FollowingErrorLimit(oink, m)
    assert limit.name == "following_error_limit"  # the name reports give the bound
    q = oink.scene.named_configuration("default")
    e = np.array([0.5, -0.5, 2.0, -2.0, 0.0, 1.0, -1.0]) * m
    limit.set_following_error(e)
    _, lo, up = limit.bounds(q)
    np.testing.assert_allclose(lo, np.array([-1.5, -0.5, -3.0, 0.0, -1.0, -2.0, 0.0]) * m, rtol=1e-12)
    np.testing.assert_allclose(up, np.array([0.5, 1.5, 0.0, 3.0, 1.0, 0.0, 2.0]) * m, rtol=1e-12)
    # include(dq): a braking step outside the window widens it on both sides, one inside changes nothing
    lo, up = lo.copy(), up.copy()  # bounds() hands out the limit's own buffers
    dq = np.array([-2.0, 2.0, 1.0, -1.0, 0.0, 0.5, -0.5]) * m
    limit.include(dq)
    _, lo2, up2 = limit.last_bounds()
    np.testing.assert_allclose(lo2, np.minimum(lo, dq), rtol=0)
    np.testing.assert_allclose(up2, np.maximum(up, dq), rtol=0)
    assert (lo2 < lo).any() and (up2 > up).any()
    with pytest.raises(InvalidInputError, match="following_error_limit.max_error"):
        FollowingErrorLimit(oink, 0.0)


def test_a_joint_without_jerk_bound_follows_the_exact_braking_law(oink):
    """In a limit where some joints have a jerk bound and others none (inf), the latter brake like a limit
    without any: no easing travel E, the same bound near a position limit (to the bisection's resolution)."""
    j_max = np.where(np.isfinite(J_MIXED), 0.1 * J_MIXED, np.inf)  # a slow ramp: alpha = 10 delta, E > 0
    mixed = AccelerationLimit(oink, DT, A_MAX, j_max)
    plain = AccelerationLimit(oink, DT, A_MAX)
    free = ~np.isfinite(j_max)
    assert (mixed.E[free] == 0.0).all() and (mixed.E[~free] > 0.0).all()
    sc, g = oink.scene, oink.group
    q = sc.named_configuration("default")
    d = 0.5 * plain.alpha  # [rad] every joint this close below its upper limit, at rest: u <= alpha/2
    q[g.q_indices] = sc.q_max_v[g.v_indices] - d
    up_mixed = mixed.bounds(q).upper.copy()
    up_plain = plain.bounds(q).upper.copy()
    assert (up_plain < plain.alpha).all(), "the braking law, not the window, should bind"
    np.testing.assert_allclose(up_mixed[free], up_plain[free], rtol=0, atol=1e-9 * plain.alpha.max())


def test_names_defaults_and_the_keys_errors_name(oink):
    """Each limit's default name (reports name the bound by it) and errors that name the key."""
    assert AccelerationLimit(oink, DT, 1.0).name == "acceleration_limit"
    assert VelocityLimit(oink, DT, 1.0).name == "velocity_limit"
    assert PositionLimit(oink).name == "position_limit"
    with pytest.raises(InvalidInputError, match="acceleration_limit.v_max"):
        AccelerationLimit(oink, DT, 1.0, v_max=[1.0, 2.0])
    with pytest.raises(InvalidInputError, match="velocity_limit.v_max"):
        VelocityLimit(oink, DT, 0.0)  # > 0 required: a zero speed limit would freeze the joint
    with pytest.raises(InvalidInputError, match="position_limit.gain"):
        PositionLimit(oink, gain=0.0)
    # v_max = inf: no velocity bound for viability (allowed, here and at run time)
    limit = AccelerationLimit(oink, DT, 1.0, v_max=np.inf)
    assert np.isinf(limit.V).all()
    limit.set_velocity_bound(np.inf)
    assert np.isinf(limit.V).all()
    with pytest.raises(InvalidInputError, match=r"^acceleration_limit\.v_max: "):  # at run time too, the bound kept
        limit.set_velocity_bound([1.0, 2.0])
    assert np.isinf(limit.V).all()


def test_last_bounds_only_after_bounds(oink):
    """last_bounds(): None before any bounds() and after a braking_step (which reuses the buffer)."""
    limit = AccelerationLimit(oink, DT, A_MAX)
    q = oink.scene.named_configuration("default")
    assert limit.last_bounds() is None
    _, lo, up = limit.bounds(q)
    assert limit.last_bounds() is not None
    limit.braking_step(q)
    assert limit.last_bounds() is None


def test_braking_lookahead_is_half_the_stopping_time(oink):
    """No jerk bound: half the slowest joint's stopping time from v_max at a_max, in steps."""
    v_max = np.full(7, 2.0)
    limit = AccelerationLimit(oink, DT, A_MAX, v_max=v_max)
    t_stop = v_max / A_MAX / DT  # [steps]
    assert limit.braking_lookahead() == pytest.approx(0.5 * t_stop.max(), rel=1e-12)


def test_nearest_to_rest_is_the_reachable_step_closest_to_stopping(oink):
    """reach = u1 + [max(-alpha, w_p - delta), min(alpha, w_p + delta)] (+ offset); the step nearest to
    u = 0 in it: a fast joint slows by what the window allows, a slow one stops."""
    limit = AccelerationLimit(oink, DT, 10.0, 1000.0)  # alpha = 5 delta
    alpha, delta = limit.alpha[0], limit.delta[0]
    u1 = np.array([20, -20, 20, -20, 0.5, -0.5, 0.0]) * delta
    u2 = u1 - np.array([0, 0, 2, -2, 0, 0, 0]) * delta  # joints 2, 3 still accelerating away from rest
    offset = np.linspace(-1e-6, 1e-6, 7)
    limit.set_history(u1, u2, offset)
    expected_u = np.array([19, -19, 21, -21, 0, 0, 0]) * delta
    np.testing.assert_allclose(limit.nearest_to_rest() - offset, expected_u, rtol=0, atol=1e-18)
    assert delta < alpha


def test_braking_step_keeps_the_path_or_clips_each_joint(oink):
    """braking_step: the increment scaled uniformly as far as the bounds allow (plus the offset); a still
    joint whose box reaches exactly 0 (at its limit) does not break the uniform scale; a joint that has just
    stopped but cannot stay still (its jerk window excludes 0) leaves no uniform scale: each joint is
    clipped to its box's value nearest 0."""
    sc, g = oink.scene, oink.group
    q = sc.named_configuration("default")
    plain = AccelerationLimit(oink, DT, 10.0)
    alpha = plain.alpha[0]
    u1 = np.array([3.0, 0.0, 1.5, 0.0, 0.0, 0.0, 0.0]) * alpha
    offset = np.linspace(-1e-6, 1e-6, 7)
    plain.set_history(u1, u1, offset)
    # the box allows u1 - alpha per joint: the uniform scale is that of the faster-shrinking joint, 2/3
    np.testing.assert_allclose(plain.braking_step(q) - offset, u1 * (2.0 / 3.0), rtol=1e-12, atol=1e-20)
    q_at_limit = q.copy()
    q_at_limit[g.q_indices[1]] = sc.q_min_v[g.v_indices[1]]  # joint 1, still, exactly at its lower limit
    plain.set_history(u1, u1)
    lower = plain.bounds(q_at_limit).lower.copy()
    assert lower[1] == 0.0
    np.testing.assert_allclose(plain.braking_step(q_at_limit), u1 * (2.0 / 3.0), rtol=1e-12, atol=1e-20)

    jerky = AccelerationLimit(oink, DT, 10.0, 1000.0)  # alpha = 5 delta
    delta = jerky.delta[0]
    u1 = np.array([10.0, 0.0, 0, 0, 0, 0, 0]) * delta
    u2 = np.array([10.0, 3.0, 0, 0, 0, 0, 0]) * delta  # joint 1 just stopped from 3 delta: next u in [-4, -2] delta
    jerky.set_history(u1, u2, offset)
    _, lo, up = jerky.bounds(q)
    lo, up = lo - offset, up - offset
    assert up[1] < 0.0, "joint 1 cannot stay still: no uniform scale of the path fits"
    np.testing.assert_allclose(jerky.braking_step(q) - offset, np.clip(0.0, lo, up), rtol=0, atol=1e-18)


# ------------------------------------------------------------------- VelocityLimit from the URDF
@pytest.fixture()
def own_scene():
    """A Panda scene of this test alone (its URDF velocity limits are changed in place; models.scene is shared)."""
    from models import robot
    from roboplan_ik_ros.core.model.scene import Scene

    r = robot("panda")
    s = Scene(r.urdf_xml, r.srdf_xml, r.package_paths)
    return s, s.group("arm")


def test_velocity_limits_below_one_from_the_urdf_are_taken_as_they_are(own_scene):
    """A joint whose URDF velocity limit is finite and > 0 is usable, however small (0.5 rad/s here): the limit
    is dt v_max per step."""
    from roboplan_ik_ros.core.oink.robot import Robot

    s, g = own_scene
    s.v_max[g.v_indices] = np.linspace(0.3, 0.9, g.nv)  # [rad/s]
    limit = VelocityLimit(Robot(s, g), DT)
    np.testing.assert_array_equal(limit.v_max, np.linspace(0.3, 0.9, g.nv))


@pytest.mark.parametrize("bad", [0.0, np.inf, np.nan])
def test_a_joint_without_a_usable_urdf_velocity_limit_is_named(own_scene, bad):
    from roboplan_ik_ros.core.oink.robot import Robot

    s, g = own_scene
    s.v_max[g.v_indices[2]] = bad
    with pytest.raises(InvalidInputError, match=rf"^velocity_limit\.v_max: the URDF gives no usable velocity limit for "
                                                rf"\['{g.joint_names[2]}'\]; set v_max explicitly"):
        VelocityLimit(Robot(s, g), DT)


def test_a_v_max_of_the_wrong_length_is_refused_naming_the_key(oink):
    with pytest.raises(InvalidInputError, match=r"^velocity_limit\.v_max: "):
        VelocityLimit(oink, DT, [1.0, 2.0])


# --------------------------------------------------------------- second sample (seed 1)
@pytest.mark.parametrize("jerk", ["accel+jerk", "mixed"])
def test_a_moving_joint_in_a_corridor_of_no_width_collapses_its_box_to_one_reachable_step(oink, jerk):
    """A joint cruising at half of min(alpha, delta) per step inside a following corridor only 1e-12 wider than the
    easing travel E on both sides: under the jerk bound no step keeps both edges (the upper one needs the joint
    stopped this step, the lower one the easing that stopping takes), each side's limit lies inside the reachable
    window, and they conflict. The state is beyond saving (counted once) and the box collapses to one step between
    the two sides' limits: finite, lower == upper, reachable, and the kernel's (the numpy path's middle branch of
    the collapse, which no state reached before)."""
    fast, slow = _pair(oink, JERKS[jerk])
    q = oink.scene.named_configuration("default")
    u1 = 0.5 * np.minimum(slow.alpha, slow.delta)  # [rad per step]
    for lim in (fast, slow):
        lim.set_history(u1, u1)
        lim.set_following_room(lim.E + 1e-12, lim.E + 1e-12)
    _, lower, upper = _same_box(fast, slow, q, f"{jerk}: a corridor of no width")
    jerk_bounded = np.isfinite(slow.delta)
    assert slow.nonviable == 1
    assert np.isfinite(lower).all() and np.array_equal(lower[jerk_bounded], upper[jerk_bounded])
    assert np.all(slow.reach_lower <= lower) and np.all(upper <= slow.reach_upper)


def test_a_position_limit_leaves_the_continuous_joints_of_its_group_unbounded():
    """PositionLimit on a group with continuous joints (the Kinova's): those have no position limit, their bounds
    stay (-inf, inf); the others get gain (q_min - q) <= dq <= gain (q_max - q)."""
    s = scene("kinova")
    g = s.group("")
    limit = PositionLimit(Oink(s, ""), gain=0.5)
    continuous = np.setdiff1d(np.arange(g.nv), g.bounded_v)
    assert len(continuous) and len(g.bounded_v)  # the premise: both kinds
    q = s.neutral()
    _, lower, upper = limit.bounds(q)
    assert np.all(lower[continuous] == -np.inf) and np.all(upper[continuous] == np.inf)
    iv = g.v_indices[g.bounded_v]
    x = q[g.bounded_q]
    np.testing.assert_allclose(lower[g.bounded_v], 0.5 * (s.q_min_v[iv] - x), rtol=0.0, atol=1e-15)
    np.testing.assert_allclose(upper[g.bounded_v], 0.5 * (s.q_max_v[iv] - x), rtol=0.0, atol=1e-15)
