"""AccelerationLimit: its box keeps every command stream within the acceleration, jerk, velocity
and position bounds, and is never empty (viability), whatever the stream does inside it."""

from __future__ import annotations

import numpy as np
import pytest

from roboplan_ik_ros.core import InvalidInputError
from roboplan_ik_ros.core.oink import AccelerationLimit, Oink

from models import scene

FRANKA_A = np.array([15.0, 7.5, 10.0, 12.5, 15.0, 20.0, 20.0])
FRANKA_J = np.array([7500.0, 3750.0, 5000.0, 6250.0, 7500.0, 10000.0, 10000.0])
REL = 1e-9  # round-off allowance of the checks (relative to the bound)


@pytest.fixture(scope="module")
def oink():
    return Oink(scene("panda"), "arm")


def _run(oink, limit, policy, steps, rng, q0=None):
    """Drive a command stream by ``policy(lower, upper, k) -> u`` inside the limit's box (plus the
    velocity box and position limits); check every bound at every step. Returns the stream."""
    sc, g = oink.scene, oink.group
    q = sc.named_configuration("default") if q0 is None else q0.copy()
    x = q[g.q_indices].copy()  # the arm's 7 revolute joints: q and v indices coincide
    lo_q, hi_q = sc.q_min_v[g.v_indices], sc.q_max_v[g.v_indices]
    u1, u2 = np.zeros(oink.nv), np.zeros(oink.nv)
    dt, A, J, V = limit.dt, limit.a_max, limit.j_max, limit.v_max
    xs = [x.copy()]
    for k in range(steps):
        limit.set_history(u1, u2)
        q[g.q_indices] = x
        _, lower, upper = limit.bounds(q)
        lower = np.maximum(lower, np.maximum(-V * dt, lo_q - x))  # VelocityLimit, PositionLimit
        upper = np.minimum(upper, np.minimum(V * dt, hi_q - x))
        assert (lower <= upper + 1e-15).all(), f"empty box at step {k}: {lower} > {upper}"
        assert limit.nonviable == 0
        u = np.clip(policy(lower, upper, k, rng), lower, upper)
        acc = (u - u1) / dt**2
        jerk = (u - 2 * u1 + u2) / dt**3
        assert (np.abs(acc) <= A * (1 + REL) + 1e-6).all(), f"acceleration {acc} at step {k}"
        assert (np.abs(jerk) <= J * (1 + REL) + 1e-3).all(), f"jerk {jerk} at step {k}"
        x = x + u
        assert (x <= hi_q + 1e-12).all() and (x >= lo_q - 1e-12).all()
        u2, u1 = u1, u
        xs.append(x.copy())
    return np.array(xs)


def _push_up(lower, upper, k, rng):
    return upper


def _push_down(lower, upper, k, rng):
    return lower


def _bang_bang(period):
    def policy(lower, upper, k, rng):
        return upper if (k // period) % 2 == 0 else lower
    return policy


def _random(lower, upper, k, rng):
    return rng.uniform(lower, upper)


@pytest.mark.parametrize("jerk", [False, True], ids=["accel", "accel+jerk"])
@pytest.mark.parametrize("rate", [500.0, 1000.0, 100.0])
@pytest.mark.parametrize("policy", [_push_up, _push_down, _bang_bang(37), _bang_bang(150), _random],
                         ids=["up", "down", "bang37", "bang150", "random"])
def test_streams_stay_within_every_bound(oink, jerk, rate, policy):
    """Full-speed approaches of every joint to its limits, reversals and random streams: the box is
    never empty, acceleration and jerk stay bounded, the limits are never crossed."""
    rng = np.random.default_rng(3)
    dt = 1.0 / rate
    limit = AccelerationLimit(oink, dt, FRANKA_A, FRANKA_J if jerk else None)
    xs = _run(oink, limit, policy, int(4.0 / dt), rng)
    sc, g = oink.scene, oink.group
    if policy is _push_up:  # it got close to the upper limits and stopped there
        assert (sc.q_max_v[g.v_indices] - xs[-1] < 0.02).all()


@pytest.mark.parametrize("jerk_scale", [0.05, 0.3, 1.0])
def test_low_jerk_bounds(oink, jerk_scale):
    """Jerk bounds that take many steps to reach a_max (delta << alpha) keep the box non-empty too."""
    rng = np.random.default_rng(5)
    dt = 0.002
    limit = AccelerationLimit(oink, dt, FRANKA_A, FRANKA_J * jerk_scale)
    for policy in (_push_up, _bang_bang(60), _random):
        _run(oink, limit, policy, 1500, rng)


def test_braking_step_stops_along_the_path(oink):
    """From full speed the controlled stop keeps the direction (uniform scale) and reaches rest
    within the bounds."""
    rng = np.random.default_rng(0)
    dt = 0.002
    limit = AccelerationLimit(oink, dt, FRANKA_A, FRANKA_J)
    direction = np.array([0.3, -0.2, 0.1, 0.4, -0.1, 0.2, 0.05])
    target = lambda lower, upper, k, rng: direction  # noqa: E731 - accelerate towards a point far away
    sc, g = oink.scene, oink.group
    q = sc.named_configuration("default")
    u1, u2 = np.zeros(7), np.zeros(7)
    for k in range(60):
        limit.set_history(u1, u2)
        _, lo, up = limit.bounds(q)
        u = np.clip(target(lo, up, k, rng), lo, up)
        q[g.q_indices] += u
        u2, u1 = u1, u
    moving = u1.copy()
    steps = 0
    while np.abs(u1).max() > 0.0 and steps < 1000:
        limit.set_history(u1, u2)
        u = limit.braking_step(q).copy()
        assert (np.abs(u - u1) <= limit.alpha * (1 + REL)).all()
        assert (np.abs(u - 2 * u1 + u2) <= limit.delta * (1 + REL) + 1e-15).all()
        if np.abs(u).max() > 1e-9:
            cos = u @ moving / np.linalg.norm(u) / np.linalg.norm(moving)
            assert cos > 0.999, "the stop left the path"
        q[g.q_indices] += u
        u2, u1 = u1, u
        steps += 1
    assert steps < 1000 and not u1.any()
    limit.set_history(u1, u2)
    assert limit.at_rest or not limit.braking_step(q).any()


def test_no_jerk_bound_is_the_exact_braking_law(oink):
    """Without a jerk bound the upper bound near a limit is sqrt(2 alpha d) - alpha/2."""
    dt = 0.002
    limit = AccelerationLimit(oink, dt, 10.0)
    sc, g = oink.scene, oink.group
    q = sc.named_configuration("default")
    a = limit.alpha[0]
    u1 = np.zeros(7)
    u1[0] = 40 * a  # moving up fast
    # the distance at which the braking law allows exactly u1: the middle of the acceleration box
    # [u1 - a, u1 + a], so the law (not the box) is the upper bound, a away from either edge
    d = (u1[0] + a / 2) ** 2 / (2 * a)
    q[g.q_indices[0]] = sc.q_max_v[g.v_indices[0]] - d
    limit.set_history(u1, u1)
    _, lo, up = limit.bounds(q)
    braking = np.sqrt(2 * a * d) - a / 2
    assert u1[0] - a < braking < u1[0] + a  # the braking branch binds, not the box
    assert up[0] == pytest.approx(braking, rel=1e-12)


def test_outside_the_viable_set_it_brakes_as_hard_as_allowed(oink):
    """A state no bound can save (e.g. a limit changed at run time) brakes at a_max and is counted."""
    limit = AccelerationLimit(oink, 0.002, 10.0)
    sc, g = oink.scene, oink.group
    q = sc.named_configuration("default")
    q[g.q_indices[0]] = sc.q_max_v[g.v_indices[0]] - 0.001
    u1 = np.zeros(7)
    u1[0] = limit.alpha[0] * 40
    limit.set_history(u1, u1)
    _, lo, up = limit.bounds(q)
    assert lo[0] == up[0] == pytest.approx(u1[0] - limit.alpha[0], rel=1e-12)
    assert limit.nonviable == 1


@pytest.mark.parametrize("compiled", [True, False], ids=["kernel", "numpy"])
def test_a_joint_at_rest_may_always_stay_at_rest(oink, compiled):
    """A slow jerk ramp (a_max 4, j_max 20 rad/s^3: 0.2 s) makes the braking policy reserve 0.157 rad even from
    rest; in a corridor narrower than that (a following leash of +-0.1 rad) the box used to exclude 0 and the
    conflict's fallback stepped every joint at rest at -delta, then on: a still arm drifted 2.9 rad in 5 s
    waiting for a goal. At rest the box contains 0 (here [0, 0]: the conflict is counted); a moving joint
    keeps the fallback."""
    limit = AccelerationLimit(oink, 0.002, 4.0, 20.0, compiled=compiled)
    if compiled and limit._box is None:
        pytest.skip("the OInK kernel is not built")
    assert limit.E.max() == pytest.approx(0.157, abs=1e-3)
    q = oink.scene.named_configuration("default")
    limit.set_following_room(np.full(7, 0.1), np.full(7, 0.1))
    limit.set_history(np.zeros(7), np.zeros(7))
    _, lo, up = limit.bounds(q)
    assert (lo == 0.0).all() and (up == 0.0).all() and limit.nonviable == 1  # (steps are counted)
    limit.set_following_room(None)  # a wide corridor: at rest the box spans 0 with room both ways
    _, lo, up = limit.bounds(q)
    assert (lo < 0.0).all() and (up > 0.0).all()


def test_rejects_bad_bounds(oink):
    with pytest.raises(InvalidInputError, match="a_max"):
        AccelerationLimit(oink, 0.002, [1.0, 2.0])
    with pytest.raises(InvalidInputError, match="a_max"):
        AccelerationLimit(oink, 0.002, 0.0)
    with pytest.raises(InvalidInputError, match="j_max"):
        AccelerationLimit(oink, 0.002, 1.0, -1.0)


@pytest.mark.parametrize("jerk", [False, True], ids=["accel", "accel+jerk"])
def test_the_kernel_box_equals_the_numpy_box(oink, jerk):
    """The C kernel's box (oink_acceleration_box) against the numpy path: random histories, near and
    far from the limits, inside and outside the viable set, with a following-error window."""
    fast = AccelerationLimit(oink, 0.002, FRANKA_A, FRANKA_J if jerk else None)
    slow = AccelerationLimit(oink, 0.002, FRANKA_A, FRANKA_J if jerk else None, compiled=False)
    if fast._box is None:
        pytest.skip("the OInK kernel is not built")
    sc, g = oink.scene, oink.group
    rng = np.random.default_rng(3)
    worst, nonviable = 0.0, 0
    kept = sc.named_configuration("default")  # a buffer written in place, as the solver's q (the kernel keeps its address)
    for k in range(400):
        q = sc.named_configuration("default")
        if k % 4 < 2:
            kept[:] = q
            q = kept
        j = rng.integers(7)
        q[g.q_indices[j]] = (sc.q_max_v if k % 2 else sc.q_min_v)[g.v_indices[j]] - np.sign(k % 2 - 0.5) * rng.uniform(0, 0.05)
        u1 = rng.uniform(-1.0, 1.0, 7) * fast.V
        u2 = u1 - rng.uniform(-1.0, 1.0, 7) * fast.alpha
        room = rng.uniform(-0.01, 0.2, 7) if k % 3 == 0 else None
        offset = rng.uniform(-1e-3, 1e-3, 7) if k % 5 == 0 else None
        for lim in (fast, slow):
            lim.set_following_room(room, None if room is None else room[::-1].copy())
            lim.set_history(u1, u2, offset)
        a, b = fast.bounds(q), slow.bounds(q)
        worst = max(worst, np.abs(a.lower - b.lower).max(), np.abs(a.upper - b.upper).max())
        assert fast.nonviable == slow.nonviable
    nonviable = slow.nonviable
    print(f"jerk {jerk}: worst |kernel - numpy| {worst:.1e}; {nonviable} of 400 states not viable")
    assert worst <= 1e-15 and 0 < nonviable < 400


@pytest.mark.parametrize("given", [lambda q: q.astype(np.float32), lambda q: np.repeat(q, 2)[::2]],
                         ids=["float32", "strided"])
def test_the_bounds_of_a_q_the_kernel_cannot_read_are_those_of_its_values(oink, given):
    """The one-call kernel reads q through its address, as contiguous float64. A q of another dtype or strided takes
    the numpy glue around the kernel's box instead: the bounds of the same values as float64 (read by the kernel, a
    float32 q's bytes would be other numbers). The joints move toward their upper limits, 2 cm away, so the bounds
    depend on q."""
    limit = AccelerationLimit(oink, 0.002, FRANKA_A, FRANKA_J)
    if limit._box is None:
        pytest.skip("the OInK kernel is not built")
    sc, g = oink.scene, oink.group
    q = sc.named_configuration("default")
    q[g.q_indices] = sc.q_max_v[g.v_indices] - 0.02
    u1 = 0.5 * limit.V
    limit.set_history(u1, u1)
    q_given = given(q)
    given_bounds = limit.bounds(q_given)
    lower, upper = given_bounds.lower.copy(), given_bounds.upper.copy()
    _, lower64, upper64 = limit.bounds(np.ascontiguousarray(q_given, dtype=np.float64))
    np.testing.assert_allclose(lower, lower64, rtol=0.0, atol=1e-15)
    np.testing.assert_allclose(upper, upper64, rtol=0.0, atol=1e-15)
    assert np.all(upper < u1 + limit.alpha)  # the premise: the position limits bind
