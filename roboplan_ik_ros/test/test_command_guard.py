"""The command guard's compiled apply (core/control/compiled_control.py, kernel/control_kernel.c) against its numpy
path, the reference: the same commands, increments and cut counts, bit for bit, along random command streams that
jump, carry NaN and inf, run into the position limits, reseed, change the period and take a command back; a group
with a continuous joint keeps the numpy path and says why."""

from __future__ import annotations

import numpy as np
import pytest

from models import scene
from roboplan_ik_ros.core.control import compiled_control
from roboplan_ik_ros.core.control.command_guard import CommandGuard

needs_kernel = pytest.mark.skipif(compiled_control.LOAD_ERROR != "",
                                  reason=f"the control kernel is not built ({compiled_control.LOAD_ERROR})")
DT = 0.002


@pytest.fixture(scope="module")
def panda():
    return scene("panda")


def _same(a: CommandGuard, b: CommandGuard) -> None:
    np.testing.assert_array_equal(a.last, b.last)
    np.testing.assert_array_equal(a.u1, b.u1)
    np.testing.assert_array_equal(a.u2, b.u2)
    np.testing.assert_array_equal(a._undo[0], b._undo[0])
    np.testing.assert_array_equal(a._undo[1], b._undo[1])
    assert a.cuts == b.cuts


@needs_kernel
@pytest.mark.parametrize("bounded", [False, True], ids=["velocity", "acceleration_and_jerk"])
def test_the_compiled_and_numpy_guards_give_the_same_commands_bit_for_bit(panda, bounded):
    g = panda.group("arm")
    v_max = panda.v_max[g.v_indices]
    a_max, j_max = (10.0 * v_max, 300.0 * v_max) if bounded else (None, None)
    compiled, numpy_guard = guards = [CommandGuard(panda, g, v_max, DT, a_max, j_max, use_compiled=c) for c in (True, False)]
    assert compiled.compiled_reason == "" and numpy_guard.compiled_reason == "use_compiled=False"
    q_min, q_max = panda.q_min_v[g.v_indices], panda.q_max_v[g.v_indices]
    rng = np.random.default_rng(7 + bounded)
    seen = set()
    q0 = panda.named_configuration("default")
    for guard in guards:
        guard.reseed(q0)
    for k in range(4000):
        last = compiled.last.copy()
        q_next = last.copy()
        kind = rng.choice(["small", "jump", "limit", "nan", "inf", "fingers"])
        j = rng.integers(7)
        q_next[g.q_indices] += rng.uniform(-0.5, 0.5, 7) * v_max * DT  # within v_max dt
        if kind == "jump":
            q_next[g.q_indices[j]] += rng.choice([-1.0, 1.0]) * rng.uniform(2.0, 50.0) * v_max[j] * DT
        elif kind == "limit":  # beyond a limit the guard stands next to
            q_next[g.q_indices[j]] = rng.choice([q_min[j] - 0.01, q_max[j] + 0.01])
        elif kind in ("nan", "inf"):
            q_next[g.q_indices[j]] = np.nan if kind == "nan" else rng.choice([-np.inf, np.inf])
        elif kind == "fingers":  # joints outside the group follow q_next
            q_next[7:] = rng.uniform(0.0, 0.04, 2)
        counted = bool(rng.random() < 0.8)
        commands = [guard.apply(q_next, counted).copy() for guard in guards]
        np.testing.assert_array_equal(commands[0], commands[1])
        _same(compiled, numpy_guard)
        if kind == "limit" and np.any(commands[0][g.q_indices] == np.where(q_next[g.q_indices] < last[g.q_indices],
                                                                             q_min, q_max)):
            seen.add("clipped at a limit")
        seen.add(kind)
        if rng.random() < 0.01:  # the command never reached the robot
            for guard in guards:
                guard.undo_increments()
            seen.add("undo")
        if rng.random() < 0.01:  # a new stream next to a limit (so that steps toward it are clipped)
            q = q0.copy()
            q[g.q_indices[j]] = rng.choice([q_min[j] + 1e-5, q_max[j] - 1e-5])
            for guard in guards:
                guard.reseed(q)
            seen.add("reseed")
        if k == 2000:
            for guard in guards:
                guard.set_dt(2 * DT)
    assert {"jump", "nan", "inf", "fingers", "undo", "reseed", "clipped at a limit"} <= seen, seen
    assert compiled.cuts > 0


def test_a_group_with_a_continuous_joint_keeps_the_numpy_guard_and_says_why():
    kinova = scene("kinova")
    g = kinova.group("")
    assert len(g.continuous_q)
    guard = CommandGuard(kinova, g, kinova.v_max[g.v_indices], DT)
    assert guard.compiled_reason == ("a continuous joint in the group (its (cos, sin) needs pinocchio's difference)"
                                     if not compiled_control.LOAD_ERROR else compiled_control.LOAD_ERROR)
    q = kinova.neutral()
    guard.reseed(q)
    q_next = kinova.integrate(q, np.full(kinova.model.nv, 10.0 * DT))  # beyond v_max dt on every joint
    command = guard.apply(q_next)
    assert guard.cuts == 1
    step = kinova.difference(q, command)
    np.testing.assert_allclose(np.abs(step[g.v_indices]), kinova.v_max[g.v_indices] * DT, rtol=1e-6)


@needs_kernel
@pytest.mark.parametrize("field, wrong", [
    ("q_min", lambda a: a.astype(np.float32)),  # contiguous, another dtype
    ("q_index", lambda a: a.astype(np.int32)),
    ("max_step", lambda a: np.repeat(a, 2)[::2]),  # float64, every other element: not contiguous
], ids=["float32-values", "int32-indices", "strided-values"])
def test_the_kernels_view_refuses_an_array_of_another_dtype_or_not_contiguous_naming_it(panda, field, wrong):
    """The kernel reads each array through its bare address as contiguous float64 (values) or int64 (indices): one
    of another dtype, or a strided view, would be read as other numbers. compiled_control refuses either, naming the
    field and what it must be; the guard's own arrays are accepted (the premise)."""
    g = panda.group("arm")
    guard = CommandGuard(panda, g, panda.v_max[g.v_indices], DT)
    arrays = dict(guard._compiled[1])
    compiled_control.guard_arrays(arrays, guard.bounded_acceleration)  # the premise
    expected = "int64" if field == "q_index" else "float64"
    arrays[field] = wrong(arrays[field])
    with pytest.raises(ValueError, match=rf"^GuardArrays: {field} must be a contiguous {expected} array$"):
        compiled_control.guard_arrays(arrays, guard.bounded_acceleration)
