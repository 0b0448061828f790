"""SimpleIK objectives from data (objective_config.py) and what the solver does with them beyond
test_simple_ik_objectives: the YAML's ``simple_ik.objectives`` (every type, every bad value named),
standing objectives added to every solve (their errors reported after the request's, frames
checked), per-axis point weights, and the null-space terms on objective solves.

Answers are checked with the scene's own frame placements (FK), independently of the solver's errors."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pinocchio as pin
import pytest

from models import scene
from roboplan_ik_ros.core import FrameGoal, InvalidInputError, SimpleIK, SimpleIKOptions
from roboplan_ik_ros.core.config import parse_config
from roboplan_ik_ros.core.simple_ik import AxisGoal, PointGoal
from roboplan_ik_ros.core.simple_ik.objective_config import check_objective_frames, make_objective
from test_simple_ik import SOLVER_SEED, random_goal_configurations

TIP = "panda_hand_tcp"
BASE = "tasks: [{name: ee, type: frame, frame: panda_hand_tcp}]\n"
MAX_TIME = 0.2  # [s] generous: correctness, not speed
DOWN = np.array([0.0, 0.0, -1.0])


@pytest.fixture(scope="module")
def panda():
    s = scene("panda")
    return s, s.named_configuration("default")


def ik_of(s, **kw) -> SimpleIK:
    return SimpleIK(s, SimpleIKOptions(**{"group_name": "arm", "max_time": MAX_TIME, "seed": SOLVER_SEED, **kw}))


def tool_z(s, q) -> np.ndarray:
    return s.frame_pose(q, TIP).rotation[:, 2]


def angle(a, b) -> float:
    return float(np.arctan2(np.linalg.norm(np.cross(a, b)), np.dot(a, b)))


# ----------------------------------------------------------------------------- YAML
def test_every_objective_type_from_yaml():
    cfg = parse_config(BASE + """
simple_ik:
  error_weights: [1, 1, 1, 0.5, 0.5, 0.5]
  objectives:
    - {type: axis, link: panda_hand_tcp, axis: [0, 0, 2], direction: [0, 0, -1], weight: 2.0}
    - {type: point, link: panda_hand_tcp, points: [0, 0, 0.1], targets: [0.4, 0.0, 0.3], weights: [1, 1, 0]}
    - {type: point, link: panda_hand_tcp, points: [[0, 0, 0], [0.1, 0, 0]], targets: [[0, 0, 0.2], [0.1, 0, 0.2]],
       relative_to: panda_link3}
    - {type: frame, link: panda_hand_tcp, position: [0.1, 0.0, 0.0], orientation: [0, 0, 1, 0],
       relative_to: panda_link7, weights: [1, 1, 1, 0, 0, 0]}
    - {type: frame, link: panda_hand_tcp, position: [0.5, 0.0, 0.4], weight: 3.0}
""")
    axis, point, points, frame, weighted = cfg.simple_ik.objectives
    assert isinstance(axis, AxisGoal) and axis.weight == 2.0 and axis.relative_to is None
    np.testing.assert_allclose(axis.axis_link, [0, 0, 1])  # normalised
    np.testing.assert_allclose(axis.direction_target, DOWN)
    assert isinstance(point, PointGoal) and point.weights == [1.0, 1.0, 0.0]
    np.testing.assert_allclose(point.points_link, [[0, 0, 0.1]])
    assert points.relative_to == "panda_link3" and np.shape(points.points_target) == (2, 3)
    assert isinstance(frame, FrameGoal) and frame.relative_to == "panda_link7" and frame.weights == [1, 1, 1, 0, 0, 0]
    np.testing.assert_allclose(frame.T_world_tip[:3, :3], pin.Quaternion(0, 0, 0, 1).toRotationMatrix(), atol=1e-12)
    np.testing.assert_allclose(frame.T_world_tip[:3, 3], [0.1, 0, 0])
    assert weighted.weights == [3.0, 3.0, 3.0, 1.5, 1.5, 1.5]  # weight x the configured error_weights
    assert parse_config(BASE).simple_ik.objectives == []


@pytest.mark.parametrize("entry, message", [
    ("{type: axs, link: a}", r"objectives\[0\].type: unknown objective type 'axs'; valid: frame, point, axis"),
    ("{link: a}", r"objectives\[0\].type: required"),
    ("{type: axis}", r"objectives\[0\].link: required"),
    ("{type: axis, link: a, axis: [0, 0, 1]}", r"objectives\[0\].direction: required for type 'axis'"),
    ("{type: axis, link: a, axis: [0, 0], direction: [0, 0, 1]}",
     r"objectives\[0\].axis: expected a finite nonzero 3-vector"),
    ("{type: axis, link: a, axis: [0, 0, 0], direction: [0, 0, 1]}", r"objectives\[0\].axis: expected a finite nonzero"),
    ("{type: axis, link: a, axis: [0, 0, 1], direction: [0, .nan, 1]}", r"objectives\[0\].direction"),
    ("{type: axis, link: a, axis: [0, 0, 1], direction: [0, 0, 1], points: [0, 0, 0]}",
     r"objectives\[0\].points: does not apply to type 'axis' \(a key of type 'point'\)"),
    ("{type: axis, link: a, axis: [0, 0, 1], direction: [0, 0, 1], weights: [1, 1, 1]}",
     r"objectives\[0\].weights: does not apply to type 'axis'"),
    ("{type: axis, link: a, axis: [0, 0, 1], direction: [0, 0, 1], weight: 0}",
     r"objectives\[0\].weight: expected a finite number > 0, got 0"),
    ("{type: axis, link: a, axis: [0, 0, 1], direction: [0, 0, 1], weight: -2}", r"objectives\[0\].weight"),
    ("{type: axis, link: a, axis: [0, 0, 1], direction: [0, 0, 1], weight: .inf}", r"objectives\[0\].weight"),
    ("{type: axis, link: a, axis: [0, 0, 1], direction: [0, 0, 1], colour: red}",
     r"objectives\[0\].colour: unknown key; valid keys: type, link, relative_to, weight"),
    ("{type: point, link: a, points: [[0, 0, 0], [1, 0, 0]], targets: [0, 0, 0]}",
     r"objectives\[0\].targets: expected 2 points"),
    ("{type: point, link: a, points: [0, 0, 0, 1], targets: [0, 0, 0]}", r"objectives\[0\].points: expected a 3-vector"),
    ("{type: point, link: a, points: [0, 0, 0], targets: [0, 0, 0], weights: [0, 0, 0]}",
     r"objectives\[0\].weights: expected 3 finite numbers >= 0, not all 0"),
    ("{type: point, link: a, points: [0, 0, 0], targets: [0, 0, 0], weights: [1, 1, 1, 1, 1, 1]}",
     r"objectives\[0\].weights: expected 3 finite numbers"),
    ("{type: frame, link: a}", r"objectives\[0\].position: required for type 'frame'"),
    ("{type: frame, link: a, position: [0, 0]}", r"objectives\[0\].position: expected 3 finite numbers"),
    ("{type: frame, link: a, position: [0, 0, 0], orientation: [0, 0, 0, 2]}",
     r"objectives\[0\].orientation: expected a unit quaternion \[x, y, z, w\]"),
    ("{type: frame, link: a, position: [0, 0, 0], orientation: [0, 0, 0, 0]}", r"objectives\[0\].orientation"),
    ("{type: frame, link: a, position: [0, 0, 0], weights: [1, 1, 1]}",
     r"objectives\[0\].weights: expected 6 finite numbers >= 0, not all 0"),
    ("{type: frame, link: a, position: [0, 0, 0], axis: [0, 0, 1]}", r"objectives\[0\].axis: does not apply"),
    ("{type: frame, link: 3, position: [0, 0, 0]}", r"objectives\[0\].link: expected the name of a frame"),
    ("axis", r"objectives\[0\]: expected a mapping"),
])
def test_bad_yaml_objectives_are_named(entry, message):
    with pytest.raises(InvalidInputError, match="config.simple_ik." + message):
        parse_config(BASE + f"simple_ik: {{objectives: [{entry}]}}")
    with pytest.raises(InvalidInputError, match="config.simple_ik.objectives: expected a list"):
        parse_config(BASE + "simple_ik: {objectives: {type: axis}}")


def test_unknown_frames_are_named_by_key(panda):
    s, _ = panda
    goals = parse_config(BASE + """
simple_ik:
  objectives:
    - {type: axis, link: panda_hand_tcp, axis: [0, 0, 1], direction: [0, 0, -1]}
    - {type: axis, link: panda_hand_tcp, axis: [0, 0, 1], direction: [0, 0, -1], relative_to: panda_link33}
""").simple_ik.objectives
    with pytest.raises(InvalidInputError, match=r"simple_ik.objectives\[1\].relative_to: unknown frame 'panda_link33'"):
        check_objective_frames(goals, s.frame_id, "simple_ik.objectives")
    # SimpleIK itself refuses them at construction (its warm-up solve binds the standing objectives)
    with pytest.raises(InvalidInputError, match=r"objectives\[1\].relative_to: unknown frame 'panda_link33'"):
        ik_of(s, objectives=goals)
    with pytest.raises(InvalidInputError, match=r"objectives\[0\]: expected a FrameGoal, PointGoal or AxisGoal"):
        SimpleIKOptions(objectives=["up"]).validate()


# ----------------------------------------------------------------------------- standing objectives
def test_standing_objectives_join_every_solve(panda):
    """simple_ik.objectives ("the tool points down") joins every solve: a point goal alone then ends with the
    tool pointing down, the errors list it last; without it the same goal leaves the tool where the descent
    put it."""
    s, q0 = panda
    standing = [make_objective("objectives[0]", "axis", TIP, axis=[0, 0, 1], direction=DOWN.tolist())]
    ik = ik_of(s, objectives=standing)
    targets = [[0.45, 0.1, 0.3], [0.35, -0.2, 0.45], [0.55, 0.2, 0.2]]
    for p in targets:
        res = ik.solve([PointGoal(TIP, [0, 0, 0], p)], q0)
        assert res.success, res.message
        assert len(res.position_errors) == 2 and res.orientation_errors[1] <= 1e-3
        assert np.linalg.norm(s.frame_pose(res.q, TIP).translation - p) <= 1e-3
        assert angle(tool_z(s, res.q), DOWN) <= 1e-3
    # a world FrameGoal request takes the objective loop too, and must reach both
    T = pin.SE3(pin.rpy.rpyToMatrix(np.pi, 0.0, 0.3), np.array([0.4, 0.0, 0.35]))  # tool z down
    res = ik.solve([FrameGoal(TIP, T)], q0)
    assert res.success and len(res.position_errors) == 2, res.message
    # without the standing objective, a point goal from the default pose does not keep the tool down
    plain = ik_of(s).solve([PointGoal(TIP, [0, 0, 0], targets[1])], q0)
    assert plain.success and angle(tool_z(s, plain.q), DOWN) > 0.01
    # a standing objective that conflicts with a request's goal: no solution, the seed back, both errors named
    up = pin.SE3(np.eye(3), np.array([0.4, 0.0, 0.5]))  # tool z up
    res = ik.solve([FrameGoal(TIP, up)], q0, replace(ik.options, max_time=0.02))
    assert not res.success and "no solution" in res.message
    np.testing.assert_array_equal(res.q, q0)
    assert len(res.orientation_errors) == 2 and res.orientation_errors[0] > 3.0  # at the seed: the tool down


def test_point_weights_free_a_coordinate(panda):
    """weights [1, 1, 0]: the point lands on the vertical line through the target, at any height (its z
    is free and left out of the convergence test)."""
    s, q0 = panda
    ik = ik_of(s)
    target = np.array([0.5, 0.15, 2.0])  # 2 m high: unreachable, but only x and y count
    res = ik.solve([PointGoal(TIP, [0, 0, 0], target, weights=[1.0, 1.0, 0.0])], q0)
    assert res.success, res.message
    p = s.frame_pose(res.q, TIP).translation
    assert np.linalg.norm(p[:2] - target[:2]) <= 1e-3 and p[2] < 1.5
    # the reported error is the true one, the free z included (as for masked FrameGoals)
    assert res.position_errors[0] == pytest.approx(np.linalg.norm(p - target), abs=1e-9)
    with pytest.raises(InvalidInputError, match=r"goals\[0\].weights: expected 3 finite numbers"):
        ik.solve([PointGoal(TIP, [0, 0, 0], target, weights=[1.0, 1.0])], q0)


def test_frame_weight_scales_and_masks(panda):
    """A frame objective with weights [0, 0, 0, 1, 1, 1] is orientation only: the tool's orientation is
    reached wherever its position ends; [1, 1, 1, 0, 0, 0] position only."""
    s, q0 = panda
    ik = ik_of(s)
    R = pin.rpy.rpyToMatrix(np.pi, 0.0, 0.5)
    orientation_only = make_objective("o", "frame", TIP, position=[5.0, 0.0, 0.0],  # far: ignored (weight 0)
                                      orientation=pin.Quaternion(R).coeffs().tolist(), weights=[0, 0, 0, 1, 1, 1])
    res = ik.solve([orientation_only], q0)
    assert res.success, res.message
    assert np.linalg.norm(pin.log3(R.T @ s.frame_pose(res.q, TIP).rotation)) <= 1e-3
    position_only = make_objective("p", "frame", TIP, position=[0.4, 0.2, 0.4], orientation=[1, 0, 0, 0],
                                   weights=[1, 1, 1, 0, 0, 0], weight=2.0)
    assert position_only.weights == [2, 2, 2, 0, 0, 0]
    res = ik.solve([position_only], q0)
    assert res.success, res.message
    assert np.linalg.norm(s.frame_pose(res.q, TIP).translation - [0.4, 0.2, 0.4]) <= 1e-3


# ----------------------------------------------------------------------------- null-space terms on objectives
def test_null_space_terms_with_objectives(panda):
    """Joint-limit avoidance and a bias configuration act on objective solves too (projected into the
    stacked objective Jacobian's null space): the objectives are still reached, and over the same goals
    the answers are pulled toward the bias and away from the limits; manipulability with one objective."""
    s, q0 = panda
    group = s.group("arm")
    lo, hi = s.q_min_v[group.v_indices], s.q_max_v[group.v_indices]
    configs = random_goal_configurations(s, "arm", q0, 12, seed=77)
    goals = [[PointGoal(TIP, [0, 0, 0], s.frame_pose(q, TIP).translation), AxisGoal(TIP, [0, 0, 1], tool_z(s, q))]
             for q in configs]
    bias = q0[:7].tolist()
    runs = {"plain": {}, "bias": {"bias_configuration": bias, "bias_gain": 0.5},
            "limits": {"joint_limit_gain": 0.5, "joint_limit_pi": 0.4}}
    results = {}
    for name, kw in runs.items():
        ik = ik_of(s, **kw)
        out = []
        for g in goals:
            res = ik.solve(g, q0)
            assert res.success, (name, res.message)
            assert np.linalg.norm(s.frame_pose(res.q, TIP).translation - g[0].points_target) <= 1e-3
            assert angle(tool_z(s, res.q), g[1].direction_target) <= 1e-3
            out.append(res.q[:7])
        results[name] = np.array(out)
    dist_bias = {n: float(np.mean(np.linalg.norm(r - q0[:7], axis=1))) for n, r in results.items()}
    margin = {n: float(np.mean(np.min(np.minimum(r - lo, hi - r), axis=1))) for n, r in results.items()}
    assert dist_bias["bias"] < dist_bias["plain"], dist_bias
    assert margin["limits"] > margin["plain"], margin
    res = ik_of(s, manipulability_gain=5.0).solve([goals[0][0]], q0)
    assert res.success, res.message


def test_standing_objectives_hold_along_solve_path(panda):
    """solve_path's waypoints are solves too: with "tool down" standing, every waypoint's answer keeps it."""
    s, q0 = panda
    ik = ik_of(s, objectives=[AxisGoal(TIP, [0, 0, 1], DOWN)])
    T0 = s.frame_pose(q0, TIP)
    poses = [pin.SE3(T0.rotation, T0.translation + np.array([0.2, 0.1, -0.1]) * k / 20) for k in range(21)]
    res = ik.solve_path(TIP, poses, q0, 0.1)
    assert res.success and res.fraction == 1.0, res.message
    for q, T in zip(res.q_path, poses):
        assert np.linalg.norm(s.frame_pose(q, TIP).translation - T.translation) <= 1e-3
        assert angle(tool_z(s, q), DOWN) <= 1e-3


@pytest.mark.parametrize("method", ["dls", "lm_chan"])
def test_objective_solves_take_the_same_steps_compiled_or_not(panda, monkeypatch, method):
    """The objectives loop runs the compiled step (dls and lm_*, scalar joints, no null-space terms) or the
    Python step: the same iterations and answers (to rounding) on 20 point + axis goals, every one reached."""
    from roboplan_ik_ros.core.simple_ik import compiled_step as compiled_kernel

    s, q0 = panda
    configs = random_goal_configurations(s, "arm", q0, 20, seed=91)
    goals = [[PointGoal(TIP, [0, 0, 0], s.frame_pose(q, TIP).translation), AxisGoal(TIP, [0, 0, 1], tool_z(s, q))]
             for q in configs]
    answers = {}
    for compiled in (True, False):
        monkeypatch.setattr(compiled_kernel, "USE_COMPILED_STEP", compiled)
        ik = ik_of(s, method=method)
        answers[compiled] = [ik.solve(g, q0) for g in goals]
    same = 0
    for a, b, g in zip(answers[True], answers[False], goals):
        assert a.success and b.success, (a.message, b.message)
        for r in (a, b):
            assert np.linalg.norm(s.frame_pose(r.q, TIP).translation - g[0].points_target) <= 1e-3
            assert angle(tool_z(s, r.q), g[1].direction_target) <= 1e-3
        same += a.iterations == b.iterations and np.abs(a.q - b.q).max() < 1e-9
    assert same >= 18, f"{same}/20 solves alike"  # (20/20 measured; a few may part on rounding near a test)
