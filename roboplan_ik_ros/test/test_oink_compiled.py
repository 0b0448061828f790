"""The compiled assembly (core/oink/compiled_assembly.py + kernel/oink_kernel.c) against the numpy path.

Both assemble the same step from the same objects; they must give the same H, c, rows, box, dq and
status, also for objects the kernel does not know: a barrier with its own constraint(), a limit that
returns new arrays every call, a task that swaps its arrays. test_oink_oracle.py checks both paths
against the seed's formulas.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from models import scene
from roboplan_ik_ros.core import ConfigurationTask, FrameTask, Oink, PositionBarrier, PositionLimit, VelocityLimit
from roboplan_ik_ros.core.oink.barriers.barrier import Barrier
from roboplan_ik_ros.core.oink.limits.limit import Bounds, Limit
from roboplan_ik_ros.core.oink.tasks.task import Task

TIP = "panda_hand_tcp"
DT = 0.01


@pytest.fixture(scope="module")
def panda():
    return scene("panda")


def test_the_kernel_is_built_by_the_install(panda):
    """bootstrap (pip install -e) and colcon build the kernel with setup.py: the default is compiled."""
    oink = Oink(panda, "arm")
    assert oink.assembly == "compiled", oink.assembly_note
    assert Oink(panda, "arm", compiled=False).assembly == "numpy"


class SlowBox(Limit):
    """A box limit written the simplest way: new arrays at every call (the kernel copies them)."""

    name = "slow_box"

    def __init__(self, n: int, step: float) -> None:
        self.n, self.step = n, step

    def bounds(self, q):
        return Bounds(None, np.full(self.n, -self.step), np.full(self.n, self.step))


class ShiftedBox(PositionBarrier):
    """A barrier with its own rows and regularization (the kernel leaves it to Python)."""

    def constraint(self, reference=None, braking=None):
        G, up = super().constraint(reference, braking)
        up *= 0.5
        return G, up

    def regularization_weight(self) -> float:
        return 2.0 * super().regularization_weight()

    def safe_displacement(self):
        return np.full(self.group.nv, 1e-3)


class SwappingTask(Task):
    """Posture-like task that allocates new arrays in every update (a legal, if slow, task)."""

    def __init__(self, oink, q_target) -> None:
        super().__init__(oink, oink.nv, 1.0, 0.0, 2, "swapping")
        self.q_target = q_target

    def update(self, q, data) -> None:
        self.jacobian = -np.eye(self.group.nv)
        self.error = self.q_target - q[self.group.q_indices]


def _make(panda, compiled: bool, variant: str):
    """Variant "weighted": weighted_nullspace on, three priority levels with rows of weight 0 in the first
    two (a single task above the second level, two stacked above the third)."""
    weighted = variant == "weighted"
    oink = Oink(panda, "arm", 1e-6, compiled=compiled, weighted_nullspace=weighted)
    q0 = panda.named_configuration("default")
    p0 = panda.frame_pose(q0, TIP).translation
    qg = q0[oink.group.q_indices]
    tasks = [FrameTask(oink, TIP, None, 1.0, [0.0, 0.5, 0.0] if weighted else 1.0, task_gain=0.8, lm_damping=0.05)]
    if weighted:
        tasks.append(FrameTask(oink, "panda_link4", None, [0.5, 0.0, 0.5], 0.0, priority=2))
        tasks.append(ConfigurationTask(oink, qg + 0.3, 0.05, priority=3))
    else:
        tasks.append(SwappingTask(oink, qg.copy()) if variant == "swap" else ConfigurationTask(oink, qg, 0.05, priority=2))
    limits = [PositionLimit(oink), VelocityLimit(oink, DT)]
    if variant == "slow_box":
        limits.append(SlowBox(oink.nv, 0.015))
    barriers = [PositionBarrier(oink, TIP, p0 - 0.5, p0 + [0.5, 0.5, 0.07], DT)]
    if variant == "own_rows":
        barriers.append(ShiftedBox(oink, TIP, p0 - 0.4, p0 + [0.4, 0.4, 0.05], DT, name="shifted"))
    return oink, tasks, limits, barriers


@pytest.mark.parametrize("variant", ["plain", "slow_box", "own_rows", "swap", "weighted"])
def test_compiled_equals_numpy_step_by_step(panda, variant):
    runs = [_make(panda, compiled, variant) for compiled in (True, False)]
    assert runs[0][0].assembly == "compiled" and runs[1][0].assembly == "numpy"
    rng = np.random.default_rng(7)
    q = panda.named_configuration("default")
    kinds = set()
    for k in range(300):
        if k % 50 == 0:  # a jump of the target: the QP and the barrier rows come into play
            T = panda.frame_pose(q, TIP)
            T.translation = T.translation + rng.uniform(-0.25, 0.25, 3)
            for oink, tasks, _, _ in runs:
                tasks[0].set_target(T)
        if variant == "weighted" and k == 150:  # a weight set to 0 (and one to nonzero) in place, at runtime
            for oink, tasks, _, _ in runs:
                tasks[0].sqrt_weight[3:] = [0.0, 0.0, 0.3]
                tasks[1].sqrt_weight[1] = 0.2
        results = [oink.solve(q, tasks, limits, barriers) for oink, tasks, limits, barriers in runs]
        (fast, slow) = results
        assert fast.status == slow.status and fast.ok == slow.ok and fast.used_qp == slow.used_qp
        assert fast.recovering == slow.recovering
        assert fast.qp_iterations == slow.qp_iterations  # the kernel's DAQP (when built in) and the daqp module's
        np.testing.assert_allclose(fast.dq, slow.dq, rtol=0, atol=1e-10)
        a, b = runs[0][0].last_qp(), runs[1][0].last_qp()
        for x, y in zip(a, b):
            np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12)
        kinds.add("recovery" if fast.recovering else "qp" if fast.used_qp else "shortcut")
        q = panda.integrate(q, runs[0][0].scatter(fast.dq))
    assert {"qp", "shortcut"} <= kinds


@pytest.mark.parametrize("variant", ["plain", "weighted"])
def test_non_finite_inputs_fail_alike(panda, variant):
    runs = [_make(panda, compiled, variant) for compiled in (True, False)]
    q = panda.named_configuration("default")
    for oink, tasks, limits, barriers in runs:
        oink.solve(q, tasks, limits, barriers)
        tasks[0].sqrt_weight[0] = np.nan  # a weight set in place to NaN (the node validates; the core must not crash)
    fast, slow = (oink.solve(q, tasks, limits, barriers) for oink, tasks, limits, barriers in runs)
    assert not fast.ok and not slow.ok
    assert not fast.dq.any()


def test_a_limit_that_turns_into_rows_rebuilds_the_layout(panda):
    """A limit whose bounds change kind (box -> rows) gets a new layout on both paths."""

    class Switching(Limit):
        name = "switching"

        def __init__(self, n):
            self.n, self.calls = n, 0

        def bounds(self, q):
            self.calls += 1
            if self.calls < 5:
                return Bounds(None, np.full(self.n, -0.02), np.full(self.n, 0.02))
            return Bounds(np.eye(self.n)[:2], np.full(2, -0.01), np.full(2, 0.01))

    for compiled in (True, False):
        oink, tasks, limits, barriers = _make(panda, compiled, "plain")
        limits.append(Switching(oink.nv))
        q = panda.named_configuration("default")
        T = panda.frame_pose(q, TIP)
        T.translation = T.translation + [0.2, 0.0, 0.0]
        tasks[0].set_target(T)
        for _ in range(10):
            res = oink.solve(q, tasks, limits, barriers)
            assert res.ok, res.status
            q = panda.integrate(q, oink.scatter(res.dq))
        assert np.abs(res.dq[:2]).max() <= 0.01 + 1e-9  # the rows hold


@pytest.mark.parametrize("angle", [0.0, 1e-12, 1e-6, 1e-4, 0.3, 2.0, np.pi - 0.1, np.pi - 1.1e-3, np.pi - 0.9e-3,
                                   np.pi - 1e-6, np.pi - 1e-10])
def test_kernel_frame_task_equals_frame_task_update(panda, angle):
    """The kernel's FrameTask (frame Jacobian from data.J, log3, saturation) against FrameTask.update
    (pinocchio's getFrameJacobian and log3), including the rotation errors near 0 and near pi where
    log3 changes formula."""
    rng = np.random.default_rng(int(angle * 1e6) % 1000)
    for saturation in (np.inf, 0.05):
        fast, slow = (Oink(panda, "arm", compiled=c) for c in (True, False))
        tasks = [FrameTask(o, TIP, None, max_position_error=saturation, max_rotation_error=saturation)
                 for o in (fast, slow)]
        for _ in range(5):
            q = panda.random_configuration(rng, fast.group)
            axis = rng.normal(size=3)
            axis /= np.linalg.norm(axis)
            T = panda.frame_pose(q, TIP)
            target = pin.SE3(T.rotation @ pin.exp3(angle * axis), T.translation + rng.uniform(-0.2, 0.2, 3))
            for o, t in zip((fast, slow), tasks):
                t.set_target(target)
                o.solve(q, [t], [])
            a, b = tasks
            np.testing.assert_allclose(a.jacobian, b.jacobian, rtol=0, atol=1e-12)
            np.testing.assert_allclose(a.error[:3], b.error[:3], rtol=0, atol=1e-12)
            np.testing.assert_allclose(a.error[3:], b.error[3:], rtol=0, atol=1e-9)
            assert a.position_error == pytest.approx(b.position_error, abs=1e-12)
            assert a.orientation_error == pytest.approx(b.orientation_error, abs=1e-9)


def test_enforce_barriers_refuses_a_step_whose_barrier_value_is_nan(panda):
    """A NaN h after the step (a broken distance query) is a violation, not a pass."""

    class Broken(PositionBarrier):
        def evaluate(self, data, geom_data):
            h = super().evaluate(data, geom_data).copy()
            h[0] = np.nan
            return h

    oink, tasks, limits, _ = _make(panda, True, "plain")
    q = panda.named_configuration("default")
    p0 = panda.frame_pose(q, TIP).translation
    barriers = [Broken(oink, TIP, p0 - 0.5, p0 + 0.5, DT)]
    T = panda.frame_pose(q, TIP)
    T.translation = T.translation + [0.05, 0.0, 0.0]
    tasks[0].set_target(T)
    res = oink.solve(q, tasks, limits, barriers)
    assert res.ok and np.abs(res.dq).max() > 0.0
    dq_full = oink.scatter(res.dq)
    assert not oink.enforce_barriers(q, dq_full, barriers)
    assert not dq_full.any()
