"""Barrier behaviour that mutation testing found unchecked (docs/mutation.md, core/oink/barriers).

Barrier.constraint is the row the QP gets when the compiled assembly is not used: its safety margin and
its braking bound had no test that pins the result (the kernel's rows are checked elsewhere).
"""

from __future__ import annotations

import numpy as np
import pytest

from models import scene
from roboplan_ik_ros.core.oink.barriers.joint_limit_barrier import JointLimitBarrier
from roboplan_ik_ros.core.oink.robot import Robot

DT = 0.002  # [s]
GAIN = 0.5


@pytest.fixture(scope="module")
def panda():
    s = scene("panda")
    return s, Robot(s, s.group("arm"))


def _row_bound(h, margin):
    """The barrier row's bound without braking: dt gain h / (1 + |h|) - safety margin (Barrier's docstring)."""
    return DT * GAIN * h / (1.0 + np.abs(h)) - margin


def test_the_safety_margin_tightens_every_row(panda):
    s, robot = panda
    q = s.named_configuration("default")
    loose = JointLimitBarrier(robot, DT, gain=GAIN)
    tight = JointLimitBarrier(robot, DT, gain=GAIN, safety_margin=0.01)
    for b in (loose, tight):
        b.update(q, None, None)
    G0, up0 = (a.copy() for a in loose.constraint())
    G1, up1 = tight.constraint()
    np.testing.assert_array_equal(G0, G1)
    np.testing.assert_allclose(up0, _row_bound(loose.value, 0.0), rtol=1e-12)
    np.testing.assert_allclose(up1, _row_bound(tight.value, 0.01), rtol=1e-12)
    assert (up1 < up0).all()


def test_braking_caps_the_approach_per_step(panda):
    """With braking [lag, alpha per joint] a row's bound is at most the approach still braked within h:
    b = (-a k + sqrt(a^2 (k^2 - 1) + 8 a h)) / 2, k = 1 + 2 lag, a = |J_h| alpha; the cap binds where h is
    small against the rate term, and then the bound is exactly b."""
    s, robot = panda
    q = s.named_configuration("default")
    g = robot.group
    b = JointLimitBarrier(robot, DT, gain=1e3)  # a fast rate term: the braking cap binds
    q[g.q_indices[0]] = s.q_max_v[g.v_indices[0]] - b.margin[0] - 1e-4  # joint 0 1e-4 rad from its barrier
    b.update(q, None, None)
    _, free = (a.copy() for a in b.constraint())
    alpha = np.full(robot.nv, 1e-5)
    lag = 2.0
    _, capped = b.constraint(braking=np.concatenate([[lag], alpha]))
    h = b.value
    a = np.abs(b.jacobian) @ alpha
    k = 1.0 + 2.0 * lag
    cap = 0.5 * (-a * k + np.sqrt(a * a * (k * k - 1.0) + 8.0 * a * h))
    np.testing.assert_allclose(capped, np.minimum(free, np.maximum(cap, 0.0)), rtol=1e-12)
    row = int(np.argmin(h))
    assert capped[row] < free[row], "the braking cap should bind on the row near its barrier"
