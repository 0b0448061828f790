"""SimpleIK's method table (methods.py): the rows the docs list, the contract of a compiled row (its step
is the kernel's damped least squares at the row's lambda), and that a new row is a new method with
nothing else to change (validation, the solver's loops, compiled or not).

test_simple_ik checks each method's iteration against a reference (test_one_iteration_equals_reference);
test_simple_ik_methods, that each solves goals. No test is timed.
"""

from __future__ import annotations

import numpy as np
import pytest

from models import scene
from roboplan_ik_ros.core import FrameGoal, InvalidInputError, SimpleIK, SimpleIKOptions
from roboplan_ik_ros.core.simple_ik import compiled_step as compiled_kernel
from roboplan_ik_ros.core.simple_ik.methods import LM_GAIN_DEFAULTS, METHOD_TABLE, METHODS, Method
from test_simple_ik import MAX_TIME, SOLVER_SEED, random_goal_configurations


@pytest.fixture(scope="module")
def panda():
    s = scene("panda")
    return s, s.named_configuration("default")


def test_the_table_lists_the_documented_methods_in_order():
    assert METHODS == ("dls", "lm_wampler", "lm_chan", "lm_sugihara", "newton_raphson", "gauss_newton")
    assert METHODS == tuple(METHOD_TABLE) and all(METHOD_TABLE[n].name == n for n in METHODS)
    assert LM_GAIN_DEFAULTS == {"lm_wampler": 1e-4, "lm_chan": 1.0, "lm_sugihara": 1e-3}
    assert [n for n in METHODS if METHOD_TABLE[n].compiled] == ["dls", "lm_wampler", "lm_chan", "lm_sugihara"]


def test_a_bad_method_is_refused_naming_the_valid_ones():
    for bad in ("newton", "", None, ["dls"]):
        with pytest.raises(InvalidInputError, match=r"method: expected one of dls, lm_wampler, .*gauss_newton"):
            SimpleIKOptions(method=bad).validate()


class _DampingBuffers:
    """The part of a Workspace a direction reads and writes: D (damping I) and its diagonal."""

    def __init__(self, m: int, damping: float) -> None:
        self.D = damping * np.eye(m)
        self.D_diag = self.D.reshape(-1)[:: m + 1]
        self.damping = damping


@pytest.mark.parametrize("name", [n for n in METHODS if METHOD_TABLE[n].compiled])
def test_a_compiled_row_is_the_kernels_damped_least_squares(name):
    """The kernel computes J^T (J J^T + lambda I)^-1 e at the lambda it is given (dls: damping; lm_*: the
    row's lambda_k): the row's Python direction must be that step, or the compiled and Python paths differ."""
    method = METHOD_TABLE[name]
    rng = np.random.default_rng(0)
    damping, gain = 1e-3, 0.5
    for m, n in ((6, 7), (12, 7), (6, 6)):
        J = rng.standard_normal((m, n))
        e = rng.standard_normal(m)
        err = float(e @ e)
        lam = damping if method.lambda_k is None else method.lambda_k(gain, err)
        dq = method.direction(J, J.T, e, err, gain, _DampingBuffers(m, damping))
        np.testing.assert_allclose(dq, J.T @ np.linalg.solve(J @ J.T + lam * np.eye(m), e), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", [n for n in METHODS if METHOD_TABLE[n].lambda_affine is not None])
def test_a_rows_affine_damping_is_its_lambda_k(name):
    """The compiled descent computes lambda_k as a err + b (lambda_affine): bit for bit the row's lambda_k, or the
    descent and the step-by-step loop take different steps."""
    method = METHOD_TABLE[name]
    for gain in (1e-4, 0.37, 1.0, 3.0):
        a, b = method.lambda_affine(gain)
        for err in (0.0, 1e-12, 3.3e-7, 0.123456789, 2.5, 1e3):
            assert (a * err + b if a != 0.0 else b) == method.lambda_k(gain, err), (gain, err)


def test_a_new_row_is_a_new_method(panda, monkeypatch):
    """A row added to the table is accepted by the options and run by the solver; a row marked not compiled
    takes the Python step even with the kernel built: dls's direction as a Python-only row gives the same
    answers and iterations as dls with the compiled step switched off."""
    s, q0 = panda
    monkeypatch.setitem(METHOD_TABLE, "dls_python", Method("dls_python", METHOD_TABLE["dls"].direction,
                                                           "damping (constant)"))
    goals = [FrameGoal("panda_hand_tcp", s.frame_pose(q, "panda_hand_tcp"))
             for q in random_goal_configurations(s, "arm", q0, 20, seed=11)]

    def answers(method: str):
        ik = SimpleIK(s, SimpleIKOptions(group_name="arm", max_time=MAX_TIME, seed=SOLVER_SEED, method=method))
        return [(r.success, r.iterations, r.q.tolist()) for r in (ik.solve([g], q0) for g in goals)]

    new_row = answers("dls_python")
    assert sum(ok for ok, _, _ in new_row) >= 19
    monkeypatch.setattr(compiled_kernel, "USE_COMPILED_STEP", False)
    assert new_row == answers("dls")
