"""The ``com`` task and the ``com``, ``joint_limit`` and ``sphere`` barriers end to end (issue 31): one
``ik_controller`` process for the module and the mock Panda (a strict drive), over DDS; every command checked by
the harness.

The config (panda.yaml, self-collision dropped as in every e2e config but test_e2e_self_collision.py): the ee
task's costs 0 (``solver.weighted_nullspace``: its rows leave their directions to the others), a ``com`` task on
the horizontal plane (cost [1, 1, 0], priority 1), the posture below, and three more barriers:

- ``com``: the centre of mass at most COM_X_ROOM beyond its start along x (the other axes not selected);
- ``joint_limit``: every joint MARGIN_FRACTION of its span inside its limits;
- ``sphere``: the TCP inside a ball of SPHERE_RADIUS around where it starts.

1. a ``com`` goal on ``~/com/target_point`` 3 cm forward and 2 cm sideways: the centre of mass (the test's own,
   of the whole model: the links welded to the world included) reaches the sideways goal and stops at the
   com barrier's face forward, never beyond it;
2. a posture goal of panda_joint7 past its margin: the joint stops at the margin, never beyond it;
3. with the com task's cost set to 0 at run time (``tasks.com.cost``), a posture goal that swings the arm about
   panda_joint1: the TCP stops on the sphere's surface, never outside it.

No assertion is about a rate, a duration or a latency; the timeouts are generous.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

import e2e
from e2e import ROOT_FRAME, TIP, report, write_config
from e2e_features import WAIT, module_rig, publisher, q_full, wait_commands_still  # noqa: F401 - fixture

COM_X_ROOM = 0.01  # [m] the com barrier's face ahead of the start's centre of mass
COM_GOAL = np.array([0.03, 0.02, 0.0])  # [m] the com goal from the start's centre of mass
MARGIN_FRACTION = 0.1
JOINT7_GOAL = 2.8  # [rad] inside panda_joint7's limit (2.8973), beyond its margin
SPHERE_RADIUS = 0.1  # [m]
JOINT1_SWING = 0.8  # [rad]
BARRIER_TOL = e2e.shipped_config()["solver"]["barrier_tolerance"]  # [m] or [rad]: the step check's slack
ENGAGED = 2e-3  # [m] or [rad]: at rest a binding barrier is within this of its bound


def com(q7) -> np.ndarray:
    """The centre of mass of the whole model [m, world]: pinocchio's joints' bodies and the bodies welded to the
    world (``model.inertias[0]``, which ``pin.centerOfMass`` leaves out)."""
    P = e2e.panda()
    model = P.model
    data = model.createData()
    pin.forwardKinematics(model, data, q_full(model, P.iq, q7))
    masses = np.array([model.inertias[i].mass for i in range(model.njoints)])
    points = np.array([data.oMi[i].act(model.inertias[i].lever) for i in range(model.njoints)])
    return masses @ points / masses.sum()


def _start_com() -> np.ndarray:
    return com(e2e.panda().default)


def _sphere_center() -> np.ndarray:
    P = e2e.panda()
    return P.fk(P.default).translation


def _joint7_bound() -> float:
    P = e2e.panda()
    return float(P.upper[6] - MARGIN_FRACTION * (P.upper[6] - P.lower[6]))


def _edit(data) -> None:
    ee = next(t for t in data["tasks"] if t["name"] == "ee")
    ee["position_cost"] = ee["orientation_cost"] = 0.0
    data["solver"]["weighted_nullspace"] = True
    data["tasks"].insert(1, {"name": "com", "type": "com", "cost": [1.0, 1.0, 0.0], "priority": 1})
    big = 10.0  # [m] the unselected axes' faces
    data["barriers"] += [
        {"name": "com_box", "type": "com", "p_min": [-big, -big, -big],
         "p_max": [float(_start_com()[0] + COM_X_ROOM), big, big], "axis_selection": [True, False, False]},
        {"name": "joint_margins", "type": "joint_limit", "margin_fraction": MARGIN_FRACTION},
        {"name": "ball", "type": "sphere", "frame": TIP, "radius": SPHERE_RADIUS, "inside": True,
         "center": [float(x) for x in _sphere_center()]}]


def _start(rig) -> None:
    if rig.ik is None:
        rig.start_mock()
        rig.start_ik(write_config(rig.log_dir, node={"activation_timeout": 20.0}, edit=_edit))
        rig.activate()
        rig.wait_mode("waiting_for_goal", WAIT, since=rig.events["activate_request"])


def test_a_com_goal_is_reached_sideways_and_stopped_at_the_com_barrier_forward(module_rig):
    from geometry_msgs.msg import PointStamped

    rig = module_rig
    _start(rig)
    pub = publisher(rig, PointStamped, "com/target_point")
    c0 = com(rig.measured())
    assert np.abs(c0 - _start_com()).max() < 1e-9
    goal = c0 + COM_GOAL
    x_face = _start_com()[0] + COM_X_ROOM
    msg = PointStamped()
    msg.header.frame_id = ROOT_FRAME
    msg.point.x, msg.point.y, msg.point.z = (float(v) for v in goal)
    t0 = rig.rec.commands[-1][0]
    pub.publish(msg)
    rig.wait(lambda: abs(com(rig.measured())[1] - goal[1]) < 1e-3, WAIT, "the centre of mass at the goal's y (1 mm)")
    q_rest = wait_commands_still(rig, t0, span=1e-5)
    xs = np.array([com(c)[0] for _, c in rig.commands_between(t0)])
    c_rest = com(q_rest)
    report("com goal and com barrier", com_y_error_m=float(c_rest[1] - goal[1]), com_x_beyond_face_m=float(xs.max() - x_face),
           com_x_rest_from_face_m=float(c_rest[0] - x_face))
    assert xs.max() <= x_face + BARRIER_TOL, f"the centre of mass {xs.max() - x_face:.4g} m beyond the com barrier"
    assert c_rest[0] >= x_face - ENGAGED, f"at rest the centre of mass is {x_face - c_rest[0]:.4g} m short of the face"
    assert abs(c_rest[1] - goal[1]) < 1e-3
    rig.check()


def test_a_posture_goal_past_a_joint_margin_stops_at_the_margin(module_rig):
    rig = module_rig
    _start(rig)
    bound = _joint7_bound()
    q0 = rig.measured()
    goal = q0.copy()
    goal[6] = JOINT7_GOAL
    assert rig.panda.within_limits(goal) and JOINT7_GOAL > bound + 0.1
    t0 = rig.send_joints(goal)
    rig.wait(lambda: rig.measured()[6] > bound - 0.05, WAIT, "panda_joint7 near its margin")
    q_rest = wait_commands_still(rig, t0, span=1e-5)
    q7 = np.array([c[6] for _, c in rig.commands_between(t0)])
    report("joint_limit barrier", joint7_max_beyond_margin_rad=float(q7.max() - bound),
           joint7_rest_from_margin_rad=float(q_rest[6] - bound))
    assert q7.max() <= bound + BARRIER_TOL, f"panda_joint7 {q7.max() - bound:.4g} rad beyond its margin"
    assert q_rest[6] >= bound - ENGAGED, f"at rest panda_joint7 is {bound - q_rest[6]:.4g} rad short of its margin"
    rig.check()


def test_a_swing_about_the_base_stops_the_tcp_on_the_keep_in_sphere(module_rig):
    rig = module_rig
    _start(rig)
    res = rig.set_param("tasks.com.cost", [0.0, 0.0, 0.0])
    assert res.successful, res.reason
    P = rig.panda
    center = _sphere_center()
    q0 = rig.measured()
    goal = q0.copy()
    goal[0] += JOINT1_SWING
    assert np.linalg.norm(P.fk(goal).translation - center) > 2 * SPHERE_RADIUS  # the goal is far outside the ball
    t0 = rig.send_joints(goal)
    rig.wait(lambda: np.linalg.norm(P.fk(rig.measured()).translation - center) > SPHERE_RADIUS - 0.02, WAIT,
             "the TCP near the sphere's surface")
    q_rest = wait_commands_still(rig, t0, span=1e-5)
    d = np.array([np.linalg.norm(P.fk(c).translation - center) for _, c in rig.commands_between(t0)])
    d_rest = float(np.linalg.norm(P.fk(q_rest).translation - center))
    report("sphere barrier", tcp_max_beyond_surface_m=float(d.max() - SPHERE_RADIUS),
           tcp_rest_from_surface_m=d_rest - SPHERE_RADIUS, joint1_swung_rad=float(q_rest[0] - q0[0]))
    assert d.max() <= SPHERE_RADIUS + BARRIER_TOL, f"the TCP {d.max() - SPHERE_RADIUS:.4g} m outside the sphere"
    assert d_rest >= SPHERE_RADIUS - ENGAGED, f"at rest the TCP is {SPHERE_RADIUS - d_rest:.4g} m inside the surface"
    rig.check()
