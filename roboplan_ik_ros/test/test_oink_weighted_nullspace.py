"""solver.weighted_nullspace: the priority levels' projectors from the rows with a nonzero weight only.

The Panda with a position-only frame task on the hand (orientation_cost 0, priority 1) and a posture task
(priority 2) whose target turns joint 7, which only rotates the hand: the position task leaves that
direction (and 3 others) free. RoboPlan's projector of the unweighted Jacobians takes all 6 of the hand's
directions from the posture task; with the option it takes the 3 of the position. How far the posture task
then gets: ``residual`` below, the part of its error in the nullspace of the hand's position Jacobian (the
exact projector at the final q): what a strict priority lets it correct. Measured (dt 0.01, hand target
5 cm away, joint 7 asked for +0.5 rad): with panda.yaml's workspace barrier, after 300 steps, 0.47 rad
off and 2.7e-10 rad on; with no barrier the unweighted projector's damping leaks (lambda cancels: see the
solver's docstring) and the posture task still gets there, slower: after 30 steps 0.061 rad off, 1.2e-16
rad on (the velocity limit alone paces it). The hand's position error is below 1.2e-6 m in all four.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from models import scene
from roboplan_ik_ros.core import ConfigurationTask, FrameTask, InvalidInputError, Oink, PositionLimit, VelocityLimit
from roboplan_ik_ros.core.config import load_config, parse_config
from roboplan_ik_ros.core.oink.controller import OinkController

TIP = "panda_hand_tcp"
DT = 0.01
HAND_SHIFT = np.array([0.05, 0.0, -0.05])  # [m] the hand's target from its start position
WRIST_TURN = 0.5  # [rad] the posture target's joint 7 from the start


@pytest.fixture(scope="module")
def panda():
    return scene("panda")


def _controller(panda, weighted: bool, barrier: bool) -> OinkController:
    q0 = panda.named_configuration("default")
    group = panda.group("arm")
    posture = q0[group.q_indices].copy()
    posture[6] += WRIST_TURN
    config = {
        "robot": {"group": "arm"},
        "solver": {"weighted_nullspace": weighted},
        "tasks": [
            {"name": "hand", "type": "frame", "frame": TIP, "orientation_cost": 0.0},
            {"name": "posture", "type": "configuration", "target": posture.tolist(), "weights": 0.05, "priority": 2},
        ],
        "limits": [{"type": "position"}, {"type": "velocity"}],
        "barriers": [{"name": "workspace", "type": "position", "frame": TIP, "p_min": [0.2, -0.5, 0.2],
                      "p_max": [0.8, 0.5, 0.75], "gain": 5.0}] if barrier else [],  # panda.yaml's
    }
    ctrl = OinkController(panda, load_config(config), DT, q0)
    T0 = panda.frame_pose(q0, TIP)
    ctrl.tasks["hand"].set_target(pin.SE3(T0.rotation, T0.translation + HAND_SHIFT))
    return ctrl


def _run(panda, ctrl: OinkController, steps: int):
    """(q, hand position error [m], posture residual in the position task's nullspace [rad]) after ``steps``."""
    q = panda.named_configuration("default")
    for _ in range(steps):
        out = ctrl.step(q)
        assert out.result.ok and out.barriers_ok, out.result.status
        q = out.q_next
    hand, posture = ctrl.tasks["hand"], ctrl.tasks["posture"]
    position_error = np.linalg.norm(hand.target.translation - panda.frame_pose(q, TIP).translation)
    group = panda.group("arm")
    data = panda.model.createData()
    J = pin.computeFrameJacobian(panda.model, data, q, hand.frame_id, pin.LOCAL_WORLD_ALIGNED)[:3, group.v_indices]
    N = np.eye(group.nv) - np.linalg.pinv(J) @ J  # exact: the directions the position task leaves free
    error = pin.difference(panda.model, q, panda.q_from_joint_positions(group.joint_names, posture.target, q))
    return q, position_error, np.linalg.norm(N @ error[group.v_indices])


@pytest.mark.parametrize("barrier", [True, False], ids=["workspace-barrier", "no-barrier"])
def test_a_position_only_task_leaves_the_wrist_to_the_posture_task(panda, barrier):
    off, on = (_controller(panda, weighted, barrier) for weighted in (False, True))
    assert not off.oink.weighted_nullspace and on.oink.weighted_nullspace
    steps = 300 if barrier else 30
    _, off_position, off_residual = _run(panda, off, steps)
    q, on_position, on_residual = _run(panda, on, steps)
    print(f"barrier {barrier}, {steps} steps: posture residual off {off_residual:.3g} rad, on {on_residual:.3g} rad; "
          f"hand position error off {off_position:.3g} m, on {on_position:.3g} m")
    assert on_position < 1e-5 and off_position < 1e-5  # the top task converges either way
    assert on_residual < 1e-6  # the posture task reaches its target in every direction the hand's position leaves free
    wrist = panda.group("arm").q_indices[6]
    assert abs(q[wrist] - (panda.named_configuration("default")[wrist] + WRIST_TURN)) < 1e-6
    if barrier:  # the barrier's safe-displacement weight (~0.8 on H's diagonal) stops the damped projector's leak
        assert off_residual > 0.4
    else:  # only lambda resists: the leak gets the posture task there, slower
        assert off_residual > 1e-2


def test_without_a_zero_weight_the_option_changes_nothing(panda):
    """Every row weighted: the mask keeps every row, so H, c and dq are those of RoboPlan's form, to the bit."""
    q = panda.named_configuration("default")
    from roboplan_ik_ros.core.compiled_library import kernels_disabled

    for compiled in (False,) if kernels_disabled() else (True, False):  # (ROBOPLAN_NO_COMPILE: no kernel)
        runs = []
        for weighted in (False, True):
            oink = Oink(panda, "arm", 1e-6, compiled=compiled, weighted_nullspace=weighted)
            T = panda.frame_pose(q, TIP)
            tasks = [FrameTask(oink, TIP, pin.SE3(T.rotation, T.translation + HAND_SHIFT), 1.0, [0.1, 0.2, 0.3]),
                     FrameTask(oink, "panda_link4", None, 0.5, 0.2, priority=2),
                     ConfigurationTask(oink, q[oink.group.q_indices], [0.05] * 6 + [0.0], priority=3)]  # last level
            limits = [PositionLimit(oink), VelocityLimit(oink, DT)]
            runs.append((oink, oink.solve(q, tasks, limits)))
        (a, res_a), (b, res_b) = runs
        assert a.assembly == b.assembly == ("compiled" if compiled else "numpy")
        assert res_a.ok and res_b.ok
        np.testing.assert_array_equal(res_a.dq, res_b.dq)
        np.testing.assert_array_equal(a.H, b.H)
        np.testing.assert_array_equal(a.c, b.c)


def test_the_key_is_checked_and_reaches_the_solver(panda):
    with pytest.raises(InvalidInputError, match="config.solver.weighted_nullspace: expected true or false"):
        parse_config("tasks: [{name: ee, type: frame, frame: panda_hand_tcp}]\nsolver: {weighted_nullspace: 1}")
    assert parse_config("tasks: [{name: ee, type: frame, frame: panda_hand_tcp}]").solver.weighted_nullspace is False
    with pytest.raises(AttributeError):  # fixed at construction: the layouts and the kernel are built for it
        Oink(panda, "arm").weighted_nullspace = True


def _reference_dq(hand, posture, lam: float, rows: str) -> np.ndarray:
    """The unconstrained optimum of the module docstring's objective for a priority-1 task ``hand`` and a
    priority-2 task ``posture`` (both updated at q), written out with numpy: the projector from J_s = M J
    (``rows="mask"``, M = diag(W != 0)), J_s = W J (``"W"``) or J_s = J (``"all"``, RoboPlan's form)."""
    w = hand.sqrt_weight
    J = hand.jacobian
    Js = {"mask": J * (w != 0.0)[:, None], "W": J * w[:, None], "all": J}[rows]
    n = J.shape[1]
    N = np.eye(n) - Js.T @ np.linalg.solve(Js @ Js.T + lam * np.eye(Js.shape[0]), Js)
    A = np.vstack([w[:, None] * J, posture.sqrt_weight[:, None] * (posture.jacobian @ N)])
    b = np.concatenate([w * hand.error * hand.task_gain, posture.sqrt_weight * posture.error * posture.task_gain])
    return -np.linalg.solve(A.T @ A + lam * np.eye(n), A.T @ b)


#: the hand task's row costs: zero, small and unit weights mixed, so that the mask, W and RoboPlan's
#: unweighted rows give three different projectors
POSITION_COST, ORIENTATION_COST = [1.0, 1e-2, 0.0], [0.0, 1e-4, 0.5]


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "numpy"])
def test_the_solvers_step_is_the_masked_projectors_optimum(panda, compiled):
    """The solver itself (both assemblies) against the formula written out here: its dq with
    weighted_nullspace is the unconstrained optimum with J_s = M J, at configurations away from 'default'."""
    rng = np.random.default_rng(7)
    q_default = panda.named_configuration("default")
    checked = 0
    for _ in range(3):
        oink = Oink(panda, "arm", 1e-6, compiled=compiled, weighted_nullspace=True)
        assert oink.assembly == ("compiled" if compiled else "numpy")
        q = q_default.copy()
        q[oink.group.q_indices] += rng.uniform(-0.3, 0.3, oink.nv)
        T = panda.frame_pose(q, TIP)
        hand = FrameTask(oink, TIP, pin.SE3(T.rotation @ pin.exp3(rng.uniform(-0.2, 0.2, 3)),
                                            T.translation + rng.uniform(-0.05, 0.05, 3)), POSITION_COST,
                         ORIENTATION_COST)
        target = q[oink.group.q_indices] + rng.uniform(-0.5, 0.5, oink.nv)
        posture = ConfigurationTask(oink, target, 0.05, priority=2)
        res = oink.solve(q, [hand, posture], [])  # no limit: the QP's optimum is the unconstrained one
        assert res.ok, res.status
        mask, W, unweighted = (_reference_dq(hand, posture, oink.regularization, rows) for rows in ("mask", "W", "all"))
        scale = np.abs(mask).max()
        # the reference tells the three forms apart by far more than the tolerance below
        assert np.abs(mask - W).max() > 1e-3 * scale and np.abs(mask - unweighted).max() > 1e-3 * scale
        np.testing.assert_allclose(res.dq, mask, rtol=0.0, atol=1e-7 * scale,
                                   err_msg=f"{oink.assembly}: the solver's step is not the masked projector's")
        checked += 1
    assert checked == 3


def _reference_loop(panda, rows: str, orientation_cost: float, steps: int = 400):
    """The priority-2 posture task against a priority-1 frame task (position cost 1, ``orientation_cost``)
    holding the start pose; steps of the unconstrained optimum, at most 0.02 rad per joint: the solver's own
    (``rows="solver"``: weighted_nullspace, no limit; test_the_solvers_step_is_the_masked_projectors_optimum
    checks it is J_s = M J) or the projector built here from J_s = W J (``rows="W"``, the form not taken).
    Returns (the hand's turn from its start orientation [rad], its position error [m])."""
    oink = Oink(panda, "arm", 1e-6, weighted_nullspace=rows == "solver")
    lam = oink.regularization
    q = panda.named_configuration("default")
    T0 = panda.frame_pose(q, TIP)
    hand = FrameTask(oink, TIP, T0, 1.0, orientation_cost)
    target = q[oink.group.q_indices].copy()
    target[6] += WRIST_TURN
    posture = ConfigurationTask(oink, target, 0.05, priority=2)
    data = panda.model.createData()
    for _ in range(steps):
        pin.computeJointJacobians(panda.model, data, q)
        pin.updateFramePlacements(panda.model, data)
        if rows == "solver":
            res = oink.solve(q, [hand, posture], [])
            assert res.ok, res.status
            dq = np.clip(res.dq, -0.02, 0.02)
        else:
            hand.update(q, data)
            posture.update(q, data)
            dq = np.clip(_reference_dq(hand, posture, lam, "W"), -0.02, 0.02)
        q = panda.integrate(q, oink.scatter(dq))
    T = panda.frame_pose(q, TIP)
    return np.linalg.norm(pin.log3(T0.rotation.T @ T.rotation)), np.linalg.norm(T0.translation - T.translation)


def test_the_mask_keeps_every_nonzero_cost_strict_where_the_weights_would_not(panda):
    """Why J_s = M J and not W J (solver.py's docstring quotes these numbers): with W, a row of cost w is
    damped as by lambda / w, and the posture task turns the hand against a small orientation cost; the
    solver's steps keep it."""
    turn = {(rows, w): _reference_loop(panda, rows, w) for rows in ("solver", "W") for w in (1e-2, 1e-4)}
    for (rows, w), (angle, position) in turn.items():
        print(f"J_s = {rows} J, orientation cost {w:g}: hand turned {angle:.3g} rad, position error {position:.3g} m")
    assert turn["W", 1e-4][0] > 0.3 and turn["solver", 1e-4][0] < 2e-3
    assert turn["W", 1e-2][0] > 10 * turn["solver", 1e-2][0]
    assert turn["W", 1e-2][1] > 5 * turn["solver", 1e-2][1]
