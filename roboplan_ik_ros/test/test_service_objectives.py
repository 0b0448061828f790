"""``~/solve_ik`` with objectives (IKObjective), null-space terms, a bias configuration and the standing
objectives: the request conversion (node/objective_msgs.py, SolveIKServer.parse) with every malformed
field named, and requests over DDS to a SolveIKServer (in-process solver) answered and checked by FK.
An old-style request (goals only, every new field at its default) is solved as before.

No test asserts a time or a rate: the timeouts only bound how long something may take to happen.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pinocchio as pin
import pytest

from roboplan_ik_ros.core import FrameGoal, InvalidInputError
from roboplan_ik_ros.core.simple_ik import AxisGoal, PointGoal
from ik_objective_msg import objective_msg as objective
from test_service import TIP, Setup, _request

ARM = [f"panda_joint{i}" for i in range(1, 8)]
DOWN = np.array([0.0, 0.0, -1.0])


def solve_request(**kw):
    from roboplan_ik_interfaces.srv import SolveIK

    return SolveIK.Request(**kw)


@pytest.fixture(scope="module")
def setup(ros):
    s = Setup()
    yield s
    s.close()


def tool_z(s, q) -> np.ndarray:
    return s.frame_pose(q, TIP).rotation[:, 2]


def angle(a, b) -> float:
    return float(np.arctan2(np.linalg.norm(np.cross(a, b)), np.dot(a, b)))


# ----------------------------------------------------------------------------- conversion
def test_each_type_converts_to_its_goal():
    from roboplan_ik_ros.node.objective_msgs import objective_from_msg

    T = pin.SE3(pin.rpy.rpyToMatrix(0.1, 0.2, 0.3), np.array([0.1, 0.0, 0.2]))
    g = objective_from_msg(objective("frame", pose=T, relative_to="panda_link3", weights=[1.0, 1, 1, 0, 0, 0]),
                           "objectives[0]")
    assert isinstance(g, FrameGoal) and g.relative_to == "panda_link3" and g.weights == [1, 1, 1, 0, 0, 0]
    np.testing.assert_allclose(g.T_world_tip, T.homogeneous, atol=1e-12)
    g = objective_from_msg(objective("frame", pose=T, weight=2.0), "objectives[0]", [1, 1, 1, 0.5, 0.5, 0.5])
    assert g.weights == [2, 2, 2, 1, 1, 1] and g.relative_to is None  # weight x the request's error_weights
    g = objective_from_msg(objective("point", points=[[0, 0, 0.1], [0.1, 0, 0]], targets=[[0.4, 0, 0.3], [0.5, 0, 0.3]],
                                     weights=[1.0, 1.0, 0.0]), "objectives[1]")
    assert isinstance(g, PointGoal) and g.weights == [1, 1, 0] and g.weight == 1.0
    np.testing.assert_allclose(g.points_target, [[0.4, 0, 0.3], [0.5, 0, 0.3]])
    g = objective_from_msg(objective("axis", axis=[0, 0, 3], direction=[0, 0, -1], weight=0.5), "objectives[2]")
    assert isinstance(g, AxisGoal) and g.weight == 0.5
    np.testing.assert_allclose(g.axis_link, [0, 0, 1])


@pytest.mark.parametrize("make, words", [
    (lambda: objective(0), "objectives[0].type: unknown objective type 0; valid: TYPE_FRAME (1), TYPE_POINT (2), "
                           "TYPE_AXIS (3)"),
    (lambda: objective(9), "objectives[0].type: unknown objective type 9"),
    (lambda: objective("axis", axis=[0, 0, 1]), "objectives[0].direction: expected a finite nonzero 3-vector"),
    (lambda: objective("axis", axis=[0, math.nan, 1], direction=[0, 0, 1]), "objectives[0].axis: expected a finite"),
    (lambda: objective("axis", axis=[0, 0, 1], direction=[0, 0, 1], weight=-1.0),
     "objectives[0].weight: expected a finite number > 0, got -1.0"),
    (lambda: objective("axis", axis=[0, 0, 1], direction=[0, 0, 1], weight=math.inf), "objectives[0].weight"),
    (lambda: objective("axis", axis=[0, 0, 1], direction=[0, 0, 1], weights=[1.0, 1.0, 1.0]),
     "objectives[0].weights: does not apply to TYPE_AXIS"),
    (lambda: objective("axis", axis=[0, 0, 1], direction=[0, 0, 1], points=[[0, 0, 0]]),
     "objectives[0].points: does not apply to TYPE_AXIS (a field of TYPE_POINT)"),
    (lambda: objective("point", points=[[0, 0, 0]], targets=[[0, 0, 0]], pose=pin.SE3(np.eye(3), np.ones(3))),
     "objectives[0].pose: does not apply to TYPE_POINT (a field of TYPE_FRAME)"),
    (lambda: objective("point", points=[[0, 0, 0]]), "objectives[0].targets: required for type 'point'"),
    (lambda: objective("point", points=[[0, 0, 0], [1, 0, 0]], targets=[[0, 0, 0]]),
     "objectives[0].targets: expected 2 points"),
    (lambda: objective("point", points=[[0, 0, 0]], targets=[[0, math.inf, 0]]), "objectives[0].targets: expected"),
    (lambda: objective("point", points=[[0, 0, 0]], targets=[[0, 0, 0]], weights=[1.0] * 6),
     "objectives[0].weights: expected 3 finite numbers >= 0, not all 0"),
    (lambda: objective("point", points=[[0, 0, 0]], targets=[[0, 0, 0]], weights=[-1.0, 1.0, 1.0]),
     "objectives[0].weights: expected 3 finite numbers >= 0"),
    (lambda: objective("frame", weights=[1.0, 1.0]), "objectives[0].weights: expected 6 finite numbers >= 0"),
    (lambda: objective("frame", weights=[0.0] * 6), "objectives[0].weights: expected 6 finite numbers >= 0, not all 0"),
    (lambda: objective("frame", direction=[0, 0, 1]), "objectives[0].direction: does not apply to TYPE_FRAME"),
    (lambda: objective("frame", link=""), "objectives[0].link: expected the name of a frame"),
])
def test_malformed_objectives_are_named(make, words):
    from roboplan_ik_ros.node.objective_msgs import objective_from_msg

    with pytest.raises(InvalidInputError) as info:
        objective_from_msg(make(), "objectives[0]")
    assert words in str(info.value)


def test_a_far_from_unit_quaternion_is_refused():
    from roboplan_ik_ros.node.objective_msgs import objective_from_msg

    m = objective("frame")
    m.pose.orientation.w = 2.0
    with pytest.raises(InvalidInputError, match=r"objectives\[0\].pose.orientation: expected a unit quaternion"):
        objective_from_msg(m, "objectives[0]")
    m.pose.orientation.w, m.pose.position.x = 1.0, math.nan
    with pytest.raises(InvalidInputError, match=r"objectives\[0\].pose.position: expected 3 finite numbers"):
        objective_from_msg(m, "objectives[0]")


def test_null_space_fields_zero_means_configured(setup):
    """0 keeps the configured value, GAIN_OFF turns a configured term off, > 0 overrides; the bias joint
    values come back in the moving joints' order."""
    from roboplan_ik_interfaces.srv import SolveIK
    from sensor_msgs.msg import JointState

    srv = setup.srv
    base = srv.solver.options
    configured = replace(base, joint_limit_gain=0.3, joint_limit_ps=0.01, joint_limit_pi=0.25, manipulability_gain=2.0,
                         bias_configuration=[0.0] * 7, bias_gain=0.2)
    srv.solver.options = configured
    try:
        T = setup.scene.frame_pose(setup.q0, TIP)
        _, _, o = srv.parse(_request(T))  # an old client: every new field at its default
        assert (o.joint_limit_gain, o.joint_limit_ps, o.joint_limit_pi, o.manipulability_gain, o.bias_gain) == (
            0.3, 0.01, 0.25, 2.0, 0.2)
        assert o.bias_configuration == [0.0] * 7 and o.objectives == base.objectives
        off = SolveIK.Request.GAIN_OFF
        _, _, o = srv.parse(_request(T, joint_limit_gain=off, manipulability_gain=off, bias_gain=0.7,
                                     joint_limit_pi=0.5,
                                     bias_configuration=JointState(name=list(reversed(ARM)),
                                                                   position=[7.0, 6, 5, 4, 3, 2, 1])))
        assert (o.joint_limit_gain, o.manipulability_gain, o.bias_gain, o.joint_limit_pi) == (0.0, 0.0, 0.7, 0.5)
        assert o.bias_configuration == [1.0, 2, 3, 4, 5, 6, 7]
        # active joints: the bias names those (others may be named, unused)
        _, _, o = srv.parse(_request(T, active_joints=ARM[:3], bias_configuration=JointState(
            name=ARM[:4], position=[1.0, 2, 3, 4])))
        assert o.bias_configuration == [1.0, 2, 3]
    finally:
        srv.solver.options = base


@pytest.mark.parametrize("fields, words", [
    (dict(joint_limit_gain=-0.5), "joint_limit_gain: expected a finite gain > 0, 0 (the configured 0) or GAIN_OFF"),
    (dict(manipulability_gain=math.nan), "manipulability_gain: expected a finite gain > 0"),
    (dict(bias_gain=math.inf), "bias_gain: expected a finite gain > 0"),
    (dict(joint_limit_ps=-0.1), "joint_limit_ps: expected a finite distance > 0"),
    (dict(joint_limit_ps=0.5), "joint_limit_ps: expected < joint_limit_pi (0.3)"),
    (dict(joint_limit_pi=math.inf), "joint_limit_pi: expected a finite distance > 0"),
    (dict(bias_gain=0.5), "bias_gain: needs bias_configuration"),
    (dict(bias_configuration=("arm", [0.0] * 7)), "bias_configuration: given, but bias_gain is 0 (configured 0)"),
    (dict(bias_gain=0.5, bias_configuration=(ARM, [0.0] * 6)), "bias_configuration: 7 names but 6 positions"),
    (dict(bias_gain=0.5, bias_configuration=(ARM[:6], [0.0] * 6)),
     "bias_configuration: expected a value for every moving joint of group 'arm'; missing ['panda_joint7']"),
    (dict(bias_gain=0.5, bias_configuration=(ARM + ["panda_finger_joint1"], [0.0] * 8)),
     "bias_configuration.name[7]: 'panda_finger_joint1' is not a joint of group 'arm'"),
    (dict(bias_gain=0.5, bias_configuration=(ARM + ARM[:1], [0.0] * 8)),
     "bias_configuration.name[7]: 'panda_joint1' named twice"),
    (dict(bias_gain=0.5, bias_configuration=(ARM, [0.0] * 6 + [math.nan])),
     "bias_configuration.position[6] (panda_joint7): expected a finite value"),
    (dict(standing_objectives=3), "standing_objectives: expected OPTION_DEFAULT (0), OPTION_TRUE (1) or OPTION_FALSE"),
    (dict(manipulability_gain=1.0, objectives=[objective("axis", axis=[0, 0, 1], direction=[0, 0, -1])]),
     "manipulability_gain: one goal only"),
])
def test_bad_request_fields_are_invalid_request_with_the_field_named(setup, fields, words):
    from roboplan_ik_interfaces.srv import SolveIK
    from sensor_msgs.msg import JointState

    if "bias_configuration" in fields:
        names, positions = fields["bias_configuration"]
        fields["bias_configuration"] = JointState(name=ARM if names == "arm" else names, position=positions)
    res = setup.call(_request(setup.scene.frame_pose(setup.q0, TIP), max_time=0.2, **fields))
    assert not res.success and res.error_code == SolveIK.Response.INVALID_REQUEST, res.message
    assert words in res.message, res.message
    assert len(res.solution.position) == 0


# ----------------------------------------------------------------------------- over DDS
def test_point_and_axis_objectives_are_solved(setup):
    """A point + an axis objective, no pose goal: the answer puts the TCP on the point with its z axis
    down (FK of the answer); errors one per objective."""
    from roboplan_ik_interfaces.srv import SolveIK

    s = setup.scene
    target = [0.45, 0.1, 0.3]
    req = solve_request(objectives=[objective("point", points=[[0, 0, 0]], targets=[target]),
                                    objective("axis", axis=[0, 0, 1], direction=DOWN.tolist(), weight=2.0)],
                        max_time=0.5)
    res = setup.call(req)
    assert res.success and res.error_code == SolveIK.Response.SUCCESS, res.message
    assert len(res.position_errors) == 2
    q = s.q_from_joint_positions(list(res.solution.name), list(res.solution.position), setup.q0)
    assert np.linalg.norm(s.frame_pose(q, TIP).translation - target) <= 1e-3
    assert angle(tool_z(s, q), DOWN) <= 1e-3
    # a frame relative to another link, with a pose goal for the same tip in one request
    q_goal = s.named_configuration("default")  # inside the limits (setup.q0, the neutral q, is not)
    q_goal[:7] += [0.1, 0.1, -0.1, 0.15, 0.1, -0.1, 0.2]
    T_rel = s.frame_pose(q_goal, "panda_link3").actInv(s.frame_pose(q_goal, "panda_link7"))
    res = setup.call(_request(s.frame_pose(q_goal, TIP), max_time=0.5,
                              objectives=[objective("frame", link="panda_link7", pose=T_rel,
                                                    relative_to="panda_link3")]))
    assert res.success and len(res.position_errors) == 2, res.message
    q = s.q_from_joint_positions(list(res.solution.name), list(res.solution.position), setup.q0)
    M = s.frame_pose(q, "panda_link3").actInv(s.frame_pose(q, "panda_link7"))
    assert np.linalg.norm(M.translation - T_rel.translation) <= 1e-3


def test_standing_objectives_and_their_opt_out(setup):
    """The configured standing objective (tool down) joins a request; standing_objectives OPTION_FALSE
    leaves it out (the pose goal with the tool up is then solvable)."""
    from roboplan_ik_interfaces.srv import SolveIK

    srv, s = setup.srv, setup.scene
    base = srv.solver.options
    srv.solver.options = replace(base, objectives=[AxisGoal(TIP, [0, 0, 1], DOWN)])
    try:
        res = setup.call(solve_request(objectives=[objective("point", points=[[0, 0, 0]], targets=[[0.4, -0.1, 0.35]])],
                                       max_time=0.5))
        assert res.success and len(res.position_errors) == 2, res.message
        q = s.q_from_joint_positions(list(res.solution.name), list(res.solution.position), setup.q0)
        assert angle(tool_z(s, q), DOWN) <= 1e-3
        up = pin.SE3(np.eye(3), np.array([0.4, 0.0, 0.5]))
        res = setup.call(_request(up, max_time=0.05))
        assert res.error_code == SolveIK.Response.NO_SOLUTION, res.message
        res = setup.call(_request(up, max_time=0.5, standing_objectives=SolveIK.Request.OPTION_FALSE))
        assert res.success and len(res.position_errors) == 1, res.message
    finally:
        srv.solver.options = base


def test_unknown_frames_answer_unknown_frame_and_the_server_keeps_answering(setup):
    from roboplan_ik_interfaces.srv import SolveIK

    for obj, words in ((objective("axis", link="panda_hand_tip", axis=[0, 0, 1], direction=[0, 0, -1]),
                        "objectives[0].link: unknown frame 'panda_hand_tip'"),
                       (objective("point", points=[[0, 0, 0]], targets=[[0.4, 0, 0.4]], relative_to="map"),
                        "objectives[0].relative_to: unknown frame 'map'")):
        res = setup.call(solve_request(objectives=[obj]))
        assert res.error_code == SolveIK.Response.UNKNOWN_FRAME and words in res.message, res.message
    res = setup.call(solve_request(objectives=[objective(0)]))
    assert res.error_code == SolveIK.Response.INVALID_REQUEST and "objectives[0].type" in res.message
    res = setup.call(solve_request())
    assert res.error_code == SolveIK.Response.INVALID_REQUEST and "at least one goal or objective" in res.message
    res = setup.call(solve_request(objectives=[objective("point", points=[[0, 0, 0]], targets=[[0.4, 0, 0.4]])],
                                   max_time=0.5))
    assert res.success, res.message


def test_position_only_and_orientation_only_frames(setup):
    """TYPE_FRAME masks over a request: orientation only (the pose's position far away, weight 0 there)
    plus position only for another link, each reached by FK; the free components are not constrained."""
    s = setup.scene
    q_goal = s.named_configuration("default")
    q_goal[:7] += [0.2, -0.1, 0.1, 0.2, 0.1, 0.1, -0.2]
    T_tip, T_link4 = s.frame_pose(q_goal, TIP), s.frame_pose(q_goal, "panda_link4")
    far = pin.SE3(T_tip.rotation, np.array([3.0, 0.0, 0.0]))  # only its orientation counts
    res = setup.call(solve_request(objectives=[
        objective("frame", pose=far, weights=[0.0, 0, 0, 1, 1, 1]),
        objective("frame", link="panda_link4", pose=pin.SE3(np.eye(3), T_link4.translation),
                  weights=[1.0, 1, 1, 0, 0, 0]),
        # panda_link2's origin stays on the shoulder: always met, but it makes this the objectives loop
        objective("point", link="panda_link2", points=[[0, 0, 0]],
                  targets=[s.frame_pose(q_goal, "panda_link2").translation])], max_time=0.5))
    assert res.success and len(res.position_errors) == 3, res.message
    q = s.q_from_joint_positions(list(res.solution.name), list(res.solution.position), setup.q0)
    assert np.linalg.norm(pin.log3(T_tip.rotation.T @ s.frame_pose(q, TIP).rotation)) <= 1e-3
    assert np.linalg.norm(s.frame_pose(q, "panda_link4").translation - T_link4.translation) <= 1e-3
    assert res.position_errors[0] > 2.0  # the true (free) position error of the orientation-only objective
