"""``~/solve_ik`` objectives end to end: ``ik_controller`` and ``mock_robot`` as separate processes, the
requests from this process over DDS, the answers checked by the harness's own forward kinematics
(pinocchio on the URDF, not ``core``).

The node's config adds a standing objective (``simple_ik.objectives``: the tool's z axis points down)
to every request. The requests are solved in the node's IK worker process (the test waits for its
"ready" log line first): a point objective, a point + axis request with the standing objective turned
off, a frame relative to another link, then malformed requests (unknown frame, unknown type, bad
weight, bad bias) that answer with the field named while the node keeps running and holding still.
A bad standing objective fails configure with its key named.

No assertion is about a rate, a duration or a latency; timeouts are generous.
"""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
import pytest

from e2e import ARM, TIP, Rig, panda, write_config, rig  # noqa: F401 - rig is a fixture
from ik_objective_msg import objective_msg as _objective

WAIT = 60.0  # [s] generous timeout for something to happen
NODE = {"activation_timeout": 20.0}
DOWN = np.array([0.0, 0.0, -1.0])
STANDING = {"type": "axis", "link": TIP, "axis": [0.0, 0.0, 1.0], "direction": [0.0, 0.0, -1.0]}
POS_TOL, ROT_TOL = 1e-3, 1e-3  # the node's simple_ik thresholds (panda.yaml: the defaults)


def _frames(q7) -> dict[str, pin.SE3]:
    """World poses of the TCP, panda_link3 and panda_link7 from the oracle's URDF model."""
    p = panda()
    q = pin.neutral(p.model)
    q[p.iq] = q7
    data = p.model.createData()
    pin.framesForwardKinematics(p.model, data, q)
    return {f: data.oMf[p.model.getFrameId(f)].copy() for f in (TIP, "panda_link3", "panda_link7")}


def _angle(a, b) -> float:
    return float(np.arctan2(np.linalg.norm(np.cross(a, b)), np.dot(a, b)))


def _start(rig: Rig, objectives) -> None:
    def edit(data):
        data.setdefault("simple_ik", {})["objectives"] = objectives

    rig.start_mock()
    rig.start_ik(write_config(rig.log_dir, node=NODE, edit=edit))


def _solution(rig: Rig, res) -> np.ndarray:
    assert list(res.solution.name) == list(ARM), res.solution.name
    q7 = np.array(res.solution.position)
    rig.require(rig.panda.within_limits(q7, 1e-9), f"solution outside the joint limits: {q7}")
    return q7


def test_objectives_through_the_running_node(rig):
    from roboplan_ik_interfaces.srv import SolveIK
    from sensor_msgs.msg import JointState

    _start(rig, [STANDING])
    rig.activate()
    rig.wait_mode("waiting_for_goal", WAIT, since=rig.events["activate_request"])
    rig.wait(lambda: "IK worker process ready" in rig.ik.log(), WAIT, "the node's IK worker process ready")
    client = rig.node.create_client(SolveIK, f"/{rig.ik.name}/solve_ik")

    def call(**fields):
        return rig.call(client, SolveIK.Request(**fields), WAIT, "~/solve_ik")

    # 1. a point objective alone: the standing objective adds "tool down"
    target = np.array([0.45, 0.1, 0.3])
    res = call(objectives=[_objective("point", points=[[0, 0, 0]], targets=[target])], max_time=0.5)
    assert res.success and res.error_code == SolveIK.Response.SUCCESS, res.message
    assert len(res.position_errors) == 2  # the point, then the standing axis
    T = _frames(_solution(rig, res))[TIP]
    assert np.linalg.norm(T.translation - target) <= POS_TOL
    assert _angle(T.rotation[:, 2], DOWN) <= ROT_TOL

    # 2. two points + an axis, the standing objective turned off: the tool's y axis along world x, the
    #    TCP and a point 5 cm along the tool's y on a horizontal segment; weight 2 on the axis
    res = call(objectives=[_objective("point", points=[[0, 0, 0], [0, 0.05, 0]],
                                      targets=[[0.4, -0.05, 0.45], [0.45, -0.05, 0.45]]),
                           _objective("axis", axis=[0, 0, 1], direction=[0, 0, 1], weight=2.0)],
               standing_objectives=SolveIK.Request.OPTION_FALSE, max_time=0.5)
    assert res.success and len(res.position_errors) == 2, res.message
    T = _frames(_solution(rig, res))[TIP]
    assert np.linalg.norm(T.translation - [0.4, -0.05, 0.45]) <= POS_TOL
    assert np.linalg.norm(T.act(np.array([0, 0.05, 0])) - [0.45, -0.05, 0.45]) <= POS_TOL
    assert _angle(T.rotation[:, 2], [0, 0, 1]) <= ROT_TOL  # up: only possible without the standing objective

    # 3. panda_link7 relative to panda_link3 (a pose the arm can take: from the oracle's FK), with the
    #    standing objective and a bias configuration for the null space
    q_ref = rig.panda.default + [0.1, 0.2, -0.1, 0.25, 0.1, 0.05, 0.2]
    F = _frames(q_ref)
    T_rel = F["panda_link3"].actInv(F["panda_link7"])
    res = call(objectives=[_objective("frame", link="panda_link7", pose=T_rel, relative_to="panda_link3")],
               bias_configuration=JointState(name=list(ARM), position=rig.panda.default.tolist()), bias_gain=0.3,
               max_time=0.5)
    assert res.success and len(res.position_errors) == 2, res.message
    F = _frames(_solution(rig, res))
    M = F["panda_link3"].actInv(F["panda_link7"])
    assert np.linalg.norm(M.translation - T_rel.translation) <= POS_TOL
    assert np.linalg.norm(pin.log3(T_rel.rotation.T @ M.rotation)) <= ROT_TOL
    assert _angle(F[TIP].rotation[:, 2], DOWN) <= ROT_TOL

    # 4. malformed requests: the field named, the node alive, answering and holding still
    bad = [
        (dict(objectives=[_objective("axis", link="panda_hand_tip", axis=[0, 0, 1], direction=[0, 0, -1])]),
         SolveIK.Response.UNKNOWN_FRAME, "objectives[0].link: unknown frame 'panda_hand_tip'"),
        (dict(objectives=[_objective("point", points=[[0, 0, 0]], targets=[[0.4, 0, 0.4]], relative_to="map")]),
         SolveIK.Response.UNKNOWN_FRAME, "objectives[0].relative_to: unknown frame 'map'"),
        (dict(objectives=[_objective(7)]), SolveIK.Response.INVALID_REQUEST, "objectives[0].type: unknown objective"),
        (dict(objectives=[_objective("axis", axis=[0, 0, 1], direction=[0, 0, 1], weight=-1.0)]),
         SolveIK.Response.INVALID_REQUEST, "objectives[0].weight: expected a finite number > 0"),
        (dict(objectives=[_objective("point", points=[[0, 0, 0], [0, 0, 1]], targets=[[0.4, 0, 0.4]])]),
         SolveIK.Response.INVALID_REQUEST, "objectives[0].targets: expected 2 points"),
        (dict(objectives=[_objective("point", points=[[0, 0, 0]], targets=[[0.4, math.nan, 0.4]])]),
         SolveIK.Response.INVALID_REQUEST, "objectives[0].targets: expected"),
        (dict(objectives=[_objective("frame", weights=[1.0, 1.0, 1.0])]), SolveIK.Response.INVALID_REQUEST,
         "objectives[0].weights: expected 6 finite numbers >= 0"),
        (dict(objectives=[_objective("point", points=[[0, 0, 0]], targets=[[0.4, 0, 0.4]])], bias_gain=0.5,
              bias_configuration=JointState(name=list(ARM[:6]), position=[0.0] * 6)),
         SolveIK.Response.INVALID_REQUEST, "missing ['panda_joint7']"),
        (dict(objectives=[_objective("point", points=[[0, 0, 0]], targets=[[0.4, 0, 0.4]])], joint_limit_gain=-3.0),
         SolveIK.Response.INVALID_REQUEST, "joint_limit_gain: expected a finite gain > 0"),
    ]
    for fields, code, words in bad:
        res = call(**fields)
        assert not res.success and res.error_code == code and words in res.message, (words, res.message)
    rig.require(rig.ik.alive, "the node died")
    res = call(objectives=[_objective("point", points=[[0, 0, 0]], targets=[target])], max_time=0.5)
    assert res.success, res.message
    assert rig.last_status().mode == "waiting_for_goal"  # no request moved the robot
    rig.check()


def test_a_bad_standing_objective_fails_configure_with_its_key(rig):
    _start(rig, [STANDING, {**STANDING, "relative_to": "panda_link33"}])
    assert not rig.configure()
    rig.wait(lambda: "simple_ik.objectives[1].relative_to: unknown frame 'panda_link33'" in rig.ik.log(), WAIT,
             "the configure error naming the key")
    rig.require(rig.ik.alive, "the node died")
