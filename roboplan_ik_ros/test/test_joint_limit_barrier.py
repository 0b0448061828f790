"""The joint-limit barrier (``type: joint_limit``): its rows and, in closed loop on the Panda, a hand goal
that needs joint 4 folded past its margin stops the joint a margin away from its lower limit; an arm that
starts inside a margin is brought out of it, never deeper."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from models import robot
from roboplan_ik_ros.core.config import load_config
from roboplan_ik_ros.core.errors import InvalidInputError
from roboplan_ik_ros.core.model.scene_config import scene_from_config
from roboplan_ik_ros.core.oink.barriers.joint_limit_barrier import JointLimitBarrier
from roboplan_ik_ros.core.oink.controller import OinkController
from roboplan_ik_ros.core.oink.robot import Robot

HAND = "panda_hand_tcp"
DT = 0.002
TOLERANCE = 1e-4  # solver.barrier_tolerance (default)
ELBOW = 3  # panda_joint4, range [-3.0718, -0.0698]


def _controller(barriers, q=None, dt=DT):
    cfg = load_config({"robot": {"group": "arm"},
                       "tasks": [{"name": "ee", "type": "frame", "frame": HAND}],
                       "limits": [{"type": "position"}, {"type": "velocity"}],
                       "barriers": barriers})
    r = robot("panda")
    s = scene_from_config(r.urdf_xml, r.srdf_xml, cfg.robot, r.package_paths)
    q = s.named_configuration("default") if q is None else q
    return OinkController(s, cfg, dt, q), s, q.copy()


def _run(ctrl, q, ticks):
    """Step ``ticks`` times; the elbow's positions and the barrier's least h after each step."""
    elbow, h_min = [], []
    barrier = ctrl.barriers[0] if ctrl.barriers else None
    for _ in range(ticks):
        out = ctrl.step(q)
        assert out.result.ok, out.result.status
        q = out.q_next
        elbow.append(q[ELBOW])
        if barrier is not None:
            barrier.update(q, None, None)
            h_min.append(barrier.value.min())
    return q, np.array(elbow), np.array(h_min)


def test_rows_margins_and_names():
    ctrl, s, q = _controller([{"name": "jl", "type": "joint_limit", "margin_fraction": 0.1}])
    b = ctrl.barriers[0]
    lo, hi = s.q_min_v[:7], s.q_max_v[:7]
    np.testing.assert_allclose(b.margin, 0.1 * (hi - lo))
    assert b.row_names[ELBOW] == "panda_joint4 lower" and b.row_names[7 + ELBOW] == "panda_joint4 upper"
    b.update(q, None, None)
    np.testing.assert_allclose(b.value, np.concatenate([q[:7] - (lo + b.margin), (hi - b.margin) - q[:7]]))
    np.testing.assert_array_equal(b.jacobian, np.vstack([np.eye(7), -np.eye(7)]))
    # evaluate reads the configuration that the kinematics data holds (the barrier check's next q)
    q2 = q.copy()
    q2[:7] += 0.05
    pin.framesForwardKinematics(s.model, ctrl.oink.data, q2)
    h2 = b.evaluate(ctrl.oink.data, None)
    np.testing.assert_allclose(h2, b.value + 0.05 * np.concatenate([np.ones(7), -np.ones(7)]))
    assert "panda_joint4" in b.row_hint(ELBOW) and "margin_fraction" in b.row_hint(ELBOW)


def test_a_group_whose_joints_are_not_contiguous_in_q():
    _, s, q = _controller([])
    group = s.subgroup(s.group("arm"), ["panda_joint2", "panda_joint4", "panda_joint6"])  # q indices 1, 3, 5
    b = JointLimitBarrier(Robot(s, group), DT, margin_fraction=0.2)
    b.update(q, None, None)
    iq = [1, 3, 5]
    lo, hi = s.q_min_v[iq], s.q_max_v[iq]
    np.testing.assert_allclose(b.value, np.concatenate([q[iq] - (lo + 0.2 * (hi - lo)), (hi - 0.2 * (hi - lo)) - q[iq]]))
    assert b.row_names[:3] == ["panda_joint2 lower", "panda_joint4 lower", "panda_joint6 lower"]
    data = s.model.createData()
    pin.framesForwardKinematics(s.model, data, q)
    np.testing.assert_allclose(b.evaluate(data, None), b.value)


def _folded_goal(s, q):
    """The hand's pose with the elbow folded to -3.05 rad: inside its 5 % margin (lower bound -2.9217)."""
    qg = q.copy()
    qg[ELBOW] = -3.05
    return s.frame_pose(qg, HAND)


def test_a_goal_that_folds_the_elbow_stops_it_a_margin_from_its_limit():
    ctrl, s, q = _controller([])  # without the barrier the arm reaches the goal with the elbow in the margin
    ctrl.tasks["ee"].set_target(_folded_goal(s, q))
    q_free, elbow_free, _ = _run(ctrl, q, 3000)
    ctrl, s, q = _controller([{"name": "jl", "type": "joint_limit"}])
    bound = ctrl.barriers[0].q_low[ELBOW]
    assert elbow_free.min() < bound - 0.1
    ctrl.tasks["ee"].set_target(_folded_goal(s, q))
    q_end, elbow, h_min = _run(ctrl, q, 3000)
    assert h_min.min() >= -TOLERANCE  # no row of any joint beyond its margin
    assert elbow.min() >= bound - TOLERANCE
    assert q_end[ELBOW] < bound + 0.01  # it went as far as the margin lets it
    assert np.abs(q_end - q_free).max() > 0.01  # and the arm did not reach the free run's pose


def test_an_arm_that_starts_inside_a_margin_is_brought_out_never_deeper():
    _, s, q0 = _controller([])
    q0[ELBOW] = -3.0  # 0.078 rad inside the lower margin (bound -2.9217)
    ctrl, s, q = _controller([{"name": "jl", "type": "joint_limit", "gain": 5.0}], q=q0)
    bound = ctrl.barriers[0].q_low[ELBOW]
    q_end, elbow, h_min = _run(ctrl, q, 1500)  # the frame task holds the start pose: only the barrier moves it
    assert np.all(np.diff(elbow) >= -1e-9)  # never deeper into the margin
    assert elbow[-1] >= bound - TOLERANCE  # recovered (RoboPlan's max(h, 0) would hold it at -3.0)


@pytest.mark.parametrize("entry, message", [
    ({"margin_fraction": 0.5}, r"barriers\[0\].margin_fraction: expected a finite number in \[0, 0.45\], got 0.5"),
    ({"margin_fraction": -0.1}, r"barriers\[0\].margin_fraction: expected a finite number in \[0, 0.45\]"),
    ({"margin_fraction": "big"}, r"barriers\[0\].margin_fraction: expected a number, got 'big'"),
    ({"frame": HAND}, r"barriers\[0\].frame: does not apply to type 'joint_limit'"),
])
def test_bad_keys_are_refused_by_name(entry, message):
    with pytest.raises(InvalidInputError, match=message):
        _controller([{"name": "jl", "type": "joint_limit", **entry}])
