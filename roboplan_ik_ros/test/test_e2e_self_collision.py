"""The self-collision barrier of the shipped panda.yaml end to end (issue 31): ``ik_controller`` with
config/panda.yaml as shipped (its ``self_collision`` barrier kept, which every other e2e config drops) and the
mock Panda (a strict drive) as processes over DDS.

A posture goal whose straight joint path folds the arm into itself (panda_link5 into panda_link2, found with the
test's own coal distances; the hand stays well inside the workspace box on the way, so only the self-collision
barrier can stop it): the arm comes to rest where the barrier binds (its ``~/status`` value within ENGAGED of 0),
every recorded command keeps every pair of the robot at least d_min apart (the test's own coal distances of the
URDF's convex hulls, the SRDF's disabled pairs removed; less the barrier tolerance and the hulls' difference),
the strict drive sees every command within its bounds, and the return to the SRDF pose is followed.

The ee task's costs are 0 here and the posture task shares its priority, so the posture goal drives the joints
(under the ee task a posture only moves in the TCP's self-motion). No assertion is about a rate, a duration or a
latency; the timeouts are generous.
"""

from __future__ import annotations

import numpy as np

import e2e
from e2e import report, write_config
from e2e_features import WAIT, module_rig, panda_self_collision, q_full, wait_commands_still  # noqa: F401 - fixture

SHIPPED = e2e.shipped_config()
BARRIER = next(b for b in SHIPPED["barriers"] if b["name"] == "self_collision")
D_MIN = BARRIER["d_min"]  # [m]
BARRIER_TOLERANCE = SHIPPED["solver"]["barrier_tolerance"]  # [m]
HULL_TOL = 1e-3  # [m] the node builds its own convex hulls of the same meshes (another qhull run)
ENGAGED = 0.003  # [m] at rest the barrier's smallest value is within this of 0: the barrier stopped the arm
#: the fold: panda_joint4 near its lower limit, the wrist turned back (1.36 rad from the SRDF pose at most)
Q_FOLD = np.array([-0.024, -1.394, 1.34, -3.022, -0.951, 2.932, 1.764])
PATH_SAMPLES = 201


def _edit(data) -> None:
    ee = next(t for t in data["tasks"] if t["name"] == "ee")
    ee["position_cost"] = ee["orientation_cost"] = 0.0
    next(t for t in data["tasks"] if t["name"] == "posture")["priority"] = ee["priority"]


def _pair_distances(q7) -> np.ndarray:
    P = e2e.panda()
    return panda_self_collision().distances(q_full(P.model, P.iq, q7))


def _barrier_min(status) -> float:
    values = [b.value for b in status.barriers if b.name == "self_collision"]
    assert values, f"~/status has no self_collision rows: {[b.name for b in status.barriers]}"
    return min(values)


def test_a_posture_goal_that_folds_the_arm_into_itself_stops_d_min_apart(module_rig):
    rig = module_rig
    P = e2e.panda()
    oracle = panda_self_collision()
    # the goal is a fold: in collision, reached along a straight joint path that keeps the hand inside the workspace
    d_start, d_fold = _pair_distances(P.default), _pair_distances(Q_FOLD)
    assert P.within_limits(Q_FOLD) and d_start.min() > D_MIN, (Q_FOLD, d_start.min())
    worst = int(np.argmin(d_fold))
    assert d_fold[worst] < 0.0, f"the fold is not a collision: {oracle.pair_names[worst]} {d_fold[worst]:.4f} m"
    path = [P.default + s * (Q_FOLD - P.default) for s in np.linspace(0.0, 1.0, PATH_SAMPLES)]
    first = next(q for q in path if _pair_distances(q).min() < D_MIN)
    assert e2e.box_margins(P.fk(first).translation).min() > 0.05, "the workspace box would stop the fold first"

    rig.start_mock()
    rig.start_ik(write_config(rig.log_dir, node={"activation_timeout": 20.0}, drop_barriers=(), edit=_edit))
    rig.activate()
    rig.wait_mode("waiting_for_goal", WAIT, since=rig.events["activate_request"])
    t_sent = rig.send_joints(Q_FOLD)
    rig.wait(lambda: np.abs(rig.measured() - P.default).max() > 0.3, WAIT, "the arm folding")
    q_rest = wait_commands_still(rig, t_sent)
    # the test's own distances along every command since the goal
    cmds = [c for _, c in rig.commands_between(t_sent)]
    d_cmds = np.array([_pair_distances(c) for c in cmds])
    floor = np.minimum(D_MIN, d_start) - BARRIER_TOLERANCE - HULL_TOL
    k, j = np.unravel_index(int(np.argmin(d_cmds - floor)), d_cmds.shape)
    d_rest = _pair_distances(q_rest)
    report("self-collision fold", commands=len(cmds), closest_pair=oracle.pair_names[j],
           min_distance_m=float(d_cmds[k, j]), rest_distance_m=float(d_rest.min()),
           fold_left_rad=float(np.abs(q_rest - Q_FOLD).max()))
    assert d_cmds[k, j] >= floor[j], (
        f"command {k}: {oracle.pair_names[j]} {d_cmds[k, j]:.5f} m apart < d_min {D_MIN} (less tolerances)")
    st = rig.wait_status(lambda s: True, WAIT, "a status at rest")
    h_rest = _barrier_min(st)
    h_min = min(_barrier_min(s) for s in rig.status_since(t_sent))
    report("self-collision fold", status_h_rest_m=h_rest, status_h_min_m=h_min)
    assert h_min >= -BARRIER_TOLERANCE, f"~/status self_collision h {h_min:.5f} m: violated"
    assert h_rest <= ENGAGED, f"at rest the self_collision barrier is {h_rest:.4f} m from binding: not what stopped it"
    assert d_rest.min() <= D_MIN + ENGAGED + HULL_TOL, f"at rest the nearest pair is {d_rest.min():.4f} m apart"
    assert np.abs(q_rest - P.default).max() > 0.3, "the arm did not fold toward the goal"
    rig.check()

    # back to the SRDF pose: followed (the barrier lets the arm move away)
    t_back = rig.send_joints(P.default)
    rig.wait(lambda: np.abs(rig.measured() - P.default).max() < 1e-3, WAIT, "the arm back at the SRDF pose (1 mrad)")
    back = np.array([_pair_distances(c) for _, c in rig.commands_between(t_back)])
    assert (back >= floor).all(), "a pair came nearer than d_min on the way back"
    fig = rig.check()
    report("self-collision fold", **fig)
