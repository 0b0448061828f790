"""The safe-displacement weight's options (barrier.py): safe_displacement_fade and safe_displacement_max_weight.

Far from a barrier the faded weight is 0 and the step is the step without the barrier; near it the
closed loop keeps the same margins as RoboPlan's constant form; the cap keeps a tiny ||J_h||^2 from
freezing the arm; the kernel computes the same weight as numpy; the YAML keys are checked.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from models import scene
from roboplan_ik_ros.core import (ConfigurationTask, FrameTask, InvalidInputError, Oink, PositionBarrier,
                                  PositionLimit, VelocityLimit)
from roboplan_ik_ros.core.config import parse_config
from roboplan_ik_ros.core.oink.barriers.barrier import safe_displacement_fade

DT = 0.01
TIP = "panda_hand_tcp"
FADE = 0.05


@pytest.fixture(scope="module")
def panda():
    return scene("panda")


def test_fade_is_one_inside_zero_far_and_smooth_between():
    assert safe_displacement_fade(-0.01, FADE) == 1.0 and safe_displacement_fade(0.0, FADE) == 1.0
    assert safe_displacement_fade(FADE, FADE) == 0.0 and safe_displacement_fade(1.0, FADE) == 0.0
    assert safe_displacement_fade(np.inf, FADE) == 0.0 and safe_displacement_fade(np.nan, FADE) == 0.0
    assert safe_displacement_fade(FADE / 2, FADE) == pytest.approx(0.5)
    h = np.linspace(-0.01, FADE + 0.01, 6001)
    f = np.array([safe_displacement_fade(x, FADE) for x in h])
    assert np.all(np.diff(f) <= 0.0)  # never rises with the distance
    step = h[1] - h[0]
    slope = np.diff(f) / step
    assert np.max(np.abs(np.diff(f))) < 1.6 * step / FADE  # continuous: max slope 1.5 / FADE
    assert np.max(np.abs(np.diff(slope))) < 7.0 * step / FADE**2  # the slope too (6 / FADE^2 at most)
    assert abs(slope[0]) < 1e-9 and abs(slope[-1]) < 1e-9  # flat where it joins 1 and 0


def _problem(panda, compiled: bool, box: dict | None, top: float = 0.5):
    """Frame task + posture + limits, and a box of half-size 0.5 m around the tip (its top ``top`` m above)."""
    oink = Oink(panda, "arm", 1e-6, compiled=compiled)
    q0 = panda.named_configuration("default")
    p0 = panda.frame_pose(q0, TIP).translation
    tasks = [FrameTask(oink, TIP, panda.frame_pose(q0, TIP)),
             ConfigurationTask(oink, q0[oink.group.q_indices], 0.05, priority=2)]
    limits = [PositionLimit(oink), VelocityLimit(oink, DT)]
    barriers = [] if box is None else [PositionBarrier(oink, TIP, p0 - 0.5, p0 + [0.5, 0.5, top], DT, **box)]
    return oink, tasks, limits, barriers


@pytest.mark.parametrize("compiled", [True, False])
def test_far_from_the_barrier_the_step_is_the_step_without_it(panda, compiled):
    q = panda.named_configuration("default")
    runs = {name: _problem(panda, compiled, box) for name, box in
            (("none", None), ("faded", {"safe_displacement_fade": FADE}), ("constant", {}))}
    T = panda.frame_pose(q, TIP)
    T.translation = T.translation + [0.0, 0.002, 0.001]  # a step the rows (<= dt gain h / (1 + h)) leave free
    steps = {}
    for name, (oink, tasks, limits, barriers) in runs.items():
        tasks[0].set_target(T)
        res = oink.solve(q, tasks, limits, barriers)
        assert res.ok, res.status
        steps[name] = res.dq
    assert runs["faded"][3][0].regularization_weight() == 0.0
    np.testing.assert_allclose(steps["faded"], steps["none"], rtol=0, atol=1e-12)
    assert np.abs(steps["constant"] - steps["none"]).max() > 1e-3  # RoboPlan's form drags: the test is not vacuous


def _circle_into_the_top(panda, box: dict | None, steps: int = 800):
    """The tip tracks a 10 cm circle in y-z whose top is 3 cm above the box (bench_oink's (b)): per step,
    (tracking error [m], the tip's least margin to the box [m])."""
    oink, tasks, limits, barriers = _problem(panda, True, box, top=0.07)
    q = panda.named_configuration("default")
    T0 = panda.frame_pose(q, TIP)
    c = T0.translation.copy()
    errors, margins = [], []
    for k in range(steps):
        a = 2 * np.pi * k * DT / 4.0
        target = pin.SE3(T0.rotation, c + 0.1 * np.array([0.0, np.cos(a), np.sin(a)]))
        tasks[0].set_target(target)
        res = oink.solve(q, tasks, limits, barriers)
        assert res.ok, res.status
        dq = oink.scatter(res.dq)
        if barriers:
            assert oink.enforce_barriers(q, dq, barriers, 1e-4)
        q = panda.integrate(q, dq)
        p = panda.frame_pose(q, TIP).translation
        errors.append(np.linalg.norm(p - target.translation))
        margins.append(min(np.min(p - (c - 0.5)), np.min(c + [0.5, 0.5, 0.07] - p)))
    return np.array(errors), np.array(margins)


def test_circle_into_the_box_top_tracks_as_without_the_box_and_keeps_the_same_margin(panda):
    free, _ = _circle_into_the_top(panda, None)
    faded, faded_margin = _circle_into_the_top(panda, {"safe_displacement_fade": FADE, "safe_displacement_max_weight": 1.0})
    constant, constant_margin = _circle_into_the_top(panda, {})
    steady = slice(200, None)  # bench_oink's steady error: the median over the last 75 % of the steps
    assert np.median(constant[steady]) > 1e-2  # RoboPlan's form lags ~16 mm all around the circle
    assert abs(np.median(faded[steady]) - np.median(free[steady])) < 1e-5  # the faded one as without the box
    assert faded_margin.min() >= -1e-4 and constant_margin.min() >= -1e-4  # no violation
    assert abs(faded_margin.min() - constant_margin.min()) < 1e-3  # the same margin at the top (15 mm)


def test_the_cap_keeps_a_huge_weight_from_freezing_the_arm(panda):
    """r / ||J_h||^2 >> the tasks (the xArm7's 121) stops the tip; capped at 1 it moves."""
    moved = {}
    for name, box in (("constant", {"safe_displacement_gain": 200.0}),
                      ("capped", {"safe_displacement_gain": 200.0, "safe_displacement_max_weight": 1.0})):
        oink, tasks, limits, barriers = _problem(panda, True, box)
        q = panda.named_configuration("default")
        p0 = panda.frame_pose(q, TIP).translation
        T = panda.frame_pose(q, TIP)
        T.translation = p0 + [0.0, 0.05, 0.0]
        tasks[0].set_target(T)
        for _ in range(50):
            res = oink.solve(q, tasks, limits, barriers)
            q = panda.integrate(q, oink.scatter(res.dq))
        assert barriers[0].regularization_weight() == (1.0 if name == "capped" else pytest.approx(200.0 / np.vdot(
            barriers[0].jacobian, barriers[0].jacobian)))
        moved[name] = np.linalg.norm(panda.frame_pose(q, TIP).translation - p0)
    assert moved["constant"] < 0.01 and moved["capped"] > 0.03


def test_kernel_and_numpy_give_the_same_faded_and_capped_weight(panda):
    """Both paths step for step while the box top comes within the fade distance (0 < f < 1) and into it."""
    box = {"safe_displacement_fade": FADE, "safe_displacement_max_weight": 0.3}
    runs = [_problem(panda, compiled, box, top=0.07) for compiled in (True, False)]
    assert runs[0][0].assembly == "compiled" and runs[1][0].assembly == "numpy"
    q = panda.named_configuration("default")
    T0 = panda.frame_pose(q, TIP)
    fades = set()
    for k in range(300):
        a = 2 * np.pi * k * DT / 4.0
        target = pin.SE3(T0.rotation, T0.translation + 0.1 * np.array([0.0, np.cos(a), np.sin(a)]))
        results = []
        for oink, tasks, limits, barriers in runs:
            tasks[0].set_target(target)
            results.append(oink.solve(q, tasks, limits, barriers))
        fast, slow = results
        assert fast.status == slow.status and fast.used_qp == slow.used_qp
        np.testing.assert_allclose(fast.dq, slow.dq, rtol=0, atol=1e-10)
        for x, y in zip(runs[0][0].last_qp(), runs[1][0].last_qp()):
            np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12)
        w = runs[1][3][0].regularization_weight()
        fades.add("capped" if w == 0.3 else "fading" if w > 0.0 else "off")
        q = panda.integrate(q, runs[0][0].scatter(fast.dq))
    assert fades == {"off", "fading", "capped"}


def test_a_static_row_does_not_hold_the_fade():
    """A row dq cannot move (J_h row 0) is left out of h_min: it never binds."""
    s = scene("panda")
    oink = Oink(s, "arm")
    q = s.named_configuration("default")
    p0 = s.frame_pose(q, TIP).translation
    b = PositionBarrier(oink, TIP, p0 - 0.5, p0 + 0.5, DT, safe_displacement_fade=FADE)
    data = oink.data
    pin.computeJointJacobians(s.model, data, q)
    pin.updateFramePlacements(s.model, data)
    b.update(q, data, None)
    assert b.regularization_weight() == 0.0
    b.value[0] = 0.0  # on the boundary...
    assert b.regularization_weight() > 0.0
    b.jacobian[0] = 0.0  # ...but a row that does not move
    assert b.regularization_weight() == 0.0


def test_yaml_keys_reach_the_barrier_and_are_checked():
    base = "tasks: [{name: ee, type: frame, frame: panda_hand_tcp}]\n"
    cfg = parse_config(base + "barriers: [{name: b, type: position, frame: f, p_min: [0, 0, 0], p_max: [1, 1, 1], "
                              "safe_displacement_fade: 0.05, safe_displacement_max_weight: 2}]")
    assert cfg.barriers[0].safe_displacement_fade == 0.05 and cfg.barriers[0].safe_displacement_max_weight == 2.0
    cfg = parse_config(base + "barriers: [{name: b, type: singularity, frame: f, safe_displacement_fade: null}]")
    assert cfg.barriers[0].safe_displacement_fade is None and cfg.barriers[0].safe_displacement_max_weight is None
    with pytest.raises(InvalidInputError, match=r"^config.barriers\[0\].safe_displacement_fade: expected a finite number > 0 "
                                                 r"\[m\], got 0.0$"):
        parse_config(base + "barriers: [{name: b, type: singularity, frame: f, safe_displacement_fade: 0}]")
    with pytest.raises(InvalidInputError, match=r"^config.barriers\[0\].safe_displacement_max_weight: expected a finite "
                                                 r"number > 0 \[cost/rad\^2\], got -1.0$"):
        parse_config(base + "barriers: [{name: b, type: singularity, frame: f, safe_displacement_max_weight: -1}]")
    with pytest.raises(InvalidInputError, match=r"safe_displacement_fade: expected a number"):
        parse_config(base + "barriers: [{name: b, type: singularity, frame: f, safe_displacement_fade: far}]")
