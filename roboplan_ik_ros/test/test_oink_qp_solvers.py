"""solver.qp_solver: DAQP and OSQP solve the same QPs (hard and slack problems) to the same dq.

Both backends of two Oink objects solve the step at the same q with the same targets (bench_oink's
configs a/b/c on the Panda, random configurations inside the limits, random targets near and far,
a few closed-loop steps each so that warm starts are in play). Random configurations often put the
TCP outside the workspace box or two links inside d_min: those steps are recovery (slack) problems.

Tolerance: DAQP's dq is the exact optimum (rows hold to 1e-9). OSQP stops once its residuals are below
eps_abs + eps_rel * (the largest of |H dq|, |c|, |A^T y|), eps = 1e-6; the slack problem's multipliers
reach rho_1 = 100, so its dual residual may be ~1e-4, and dq is off by up to residual / lambda_min(H)
(>= ~0.05 away from singularities: the posture weight on the frame task's nullspace); the box holds
exactly in both (clipped). Measured on these seeded samples (see the printout): at most 1.9e-4 rad
(config b); the tolerance is 5e-4 rad per joint, below a near-target step (2e-3 was not). Where OSQP
reports "solved inaccurate" or stops at max_iter (a recovery step is then still used if its iterate
keeps every row, see solver.py, else it fails) its tolerance does not hold: those steps are counted,
not compared (at most 5 %).
"""

import numpy as np
import pinocchio as pin
import pytest

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
from roboplan_ik_ros.core.config import SolverConfig, from_mapping

TIP = "panda_hand_tcp"
DT = 0.01
DQ_TOL = 5e-4  # [rad], see the module docstring


@pytest.fixture(scope="module")
def panda():
    return scene("panda")


def _controller(panda, config, qp_solver):
    oink = Oink(panda, "arm", 1e-6, qp_solver=qp_solver)
    q0 = panda.named_configuration("default")
    p0 = panda.frame_pose(q0, TIP).translation
    tasks = [FrameTask(oink, TIP, None), ConfigurationTask(oink, q0[oink.group.q_indices], 0.05, priority=2)]
    limits = [PositionLimit(oink), VelocityLimit(oink, DT)]
    barriers = []
    if config in "bc":
        barriers.append(PositionBarrier(oink, TIP, p0 - 0.5, p0 + [0.5, 0.5, 0.07], DT))
    if config == "c":
        barriers.append(SelfCollisionBarrier(oink, 4, DT, d_min=0.02, safe_displacement_gain=1e-4))
    return oink, tasks, limits, barriers


@pytest.mark.parametrize("config", ["a", "b", "c"])
def test_daqp_and_osqp_give_the_same_step(panda, config):
    both = {s: _controller(panda, config, s) for s in ("daqp", "osqp")}
    rng = np.random.default_rng(7 + ord(config))
    worst, compared, recovery, skipped, failed = 0.0, 0, 0, 0, 0
    for _ in range(40 if config == "c" else 80):
        q = panda.random_configuration(rng, panda.group("arm"))
        T = panda.frame_pose(q, TIP)
        reach = 0.3 if rng.random() < 0.5 else 0.003
        T = pin.SE3(T.rotation @ pin.exp3(rng.uniform(-0.5, 0.5, 3)), T.translation + rng.uniform(-reach, reach, 3))
        for oink, tasks, _, _ in both.values():
            tasks[0].set_target(T)
        for _ in range(4):
            res = {s: c[0].solve(q, *c[1:]) for s, c in both.items()}
            a, b = res["daqp"], res["osqp"]
            if not a.ok:  # DAQP is exact: OSQP fails too, for the same reason (conflicting limits, a stuck row)
                assert not b.ok and a.status.split(":")[0] == b.status.split(":")[0], (a.status, b.status)
                failed += 1
                break
            if not b.ok:  # OSQP at max_iter on a slack problem, its iterate outside the rows: dq = 0
                assert a.recovering and "maximum iterations reached" in b.status, b.status
                skipped += 1
                q = panda.integrate(q, both["daqp"][0].scatter(a.dq))
                continue
            assert a.recovering == b.recovering
            assert a.used_qp == b.used_qp  # the shortcut is shared code
            if a.used_qp:
                if "inaccurate" in b.status or "maximum iterations" in b.status:
                    skipped += 1
                else:
                    worst = max(worst, np.abs(a.dq - b.dq).max())
                    compared += 1
                    recovery += a.recovering
            else:
                assert np.array_equal(a.dq, b.dq)
            q = panda.integrate(q, both["daqp"][0].scatter(a.dq))
    print(f"config {config}: {compared} QPs compared ({recovery} recovery), {skipped} OSQP steps not solved to "
          f"tolerance (DAQP solved them), {failed} failures (both); worst |dq_daqp - dq_osqp| {worst:.3g} rad")
    assert worst <= DQ_TOL
    assert compared >= 100 and skipped <= compared // 20
    if config in "bc":
        assert recovery >= 30


def test_qp_solver_is_checked_and_read_from_the_config(panda):
    with pytest.raises(InvalidInputError, match="qp_solver: expected one of daqp, osqp"):
        Oink(panda, "arm", qp_solver="quadprog")
    assert from_mapping(SolverConfig, {"qp_solver": "osqp"}, "config.solver").qp_solver == "osqp"
    assert SolverConfig().qp_solver == "daqp"


def test_osqp_direct_calls_equal_the_public_api(panda, monkeypatch):
    """OsqpWorkspace's calls to osqp's compiled solver give bit-identical steps (hard and slack
    problems, warm starts included) to osqp.OSQP's public update/solve."""
    from roboplan_ik_ros.core.oink import osqp_workspace

    def run(public: bool):
        if public:  # as with an osqp whose OSQP class has no compiled solver to call
            monkeypatch.setattr(osqp_workspace, "_DIRECT_CALLS", ("no_such_call",))
        oink, tasks, limits, barriers = _controller(panda, "b", "osqp")
        rng = np.random.default_rng(3)
        steps, kinds = [], set()
        for _ in range(30):
            q = panda.random_configuration(rng, panda.group("arm"))
            T = panda.frame_pose(q, TIP)
            tasks[0].set_target(pin.SE3(T.rotation, T.translation + rng.uniform(-0.3, 0.3, 3)))
            for _ in range(3):
                res = oink.solve(q, tasks, limits, barriers)
                steps.append((res.ok, res.status, res.dq.copy()))
                kinds.add("recovery" if res.recovering else "qp" if res.used_qp else "shortcut")
                q = panda.integrate(q, oink.scatter(res.dq))
        direct = oink._qp.direct if oink._qp is not None else None
        monkeypatch.undo()
        return steps, kinds, direct

    fast, kinds, direct = run(public=False)
    slow, _, public_direct = run(public=True)
    assert direct is True and public_direct is False
    assert {"qp", "recovery"} <= kinds
    for (ok_a, status_a, dq_a), (ok_b, status_b, dq_b) in zip(fast, slow):
        assert ok_a == ok_b and status_a == status_b and np.array_equal(dq_a, dq_b)
