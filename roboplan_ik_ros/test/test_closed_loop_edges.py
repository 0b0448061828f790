"""d_min at edges and corners, and pushing into an obstacle (issues 20 and 23), in the core.

1. A sweep: a Panda hand (TCP goal inside a 0.2 x 0.3 x 0.3 m box on the table, 5 cm in from an edge,
   a corner or a face, or under a table top 5 cm in from its edge, with four hand orientations) driven by a frame task with the shipped barrier
   settings (convex hulls, pairs: obstacles, 4 pairs, d_min 0.02, gain 5, safe_displacement_gain 1e-4,
   dt 0.01, position and velocity limits), 400 steps. The minimum distance over each run, from coal
   on the collision model fed by the configurations, stays >= d_min - barrier_tolerance; no QP fails;
   the arm never ends "recovering"; it stops at the barrier (the last 50 steps move the TCP < 0.1 mm).
2. The shipped panda.yaml (acceleration and jerk bounds) pushing the hand into a 0.3 m box at
   (0.55, -0.25, 0.30) with a goal at its centre: no QP failure, no hold, distance kept, every command
   within the acceleration and jerk bounds.
Prints the figures with ``pytest -s``.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from models import robot
from roboplan_ik_ros.core.config import load_config
from roboplan_ik_ros.core.control.control_loop import ControlLoop
from roboplan_ik_ros.core.model.obstacles import Obstacle
from roboplan_ik_ros.core.model.scene_config import scene_from_config
from roboplan_ik_ros.core.oink.controller import OinkController
from test_closed_loop_bounds import TIP, panda_yaml
from test_closed_loop_obstacles import drive

D_MIN, TOLERANCE = 0.02, 1e-4
BOX = Obstacle("box", "box", (0.2, 0.3, 0.3), position=(0.55, 0.0, 0.15))
START = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]
DOWN = pin.utils.rotate("x", np.pi)
GOALS = {"edge x": (0.50, 0.0, 0.25), "edge +y": (0.55, 0.10, 0.25), "edge -y": (0.55, -0.10, 0.25),
         "corner +y": (0.50, 0.10, 0.25), "corner -y": (0.50, -0.10, 0.25), "face x": (0.50, 0.0, 0.15)}
ORIENTATIONS = {"down": DOWN, "tilted about x": DOWN @ pin.utils.rotate("x", 0.5),
                "tilted about y": DOWN @ pin.utils.rotate("y", 0.5), "yawed 45 deg": DOWN @ pin.utils.rotate("z", 0.785)}


SLAB = Obstacle("slab", "box", (0.3, 0.6, 0.04), position=(0.55, 0.0, 0.10))  # a table top, its edge at x 0.40


def _controller(rows_per_pair: int, box: Obstacle = BOX):
    config = load_config(dict(
        robot=dict(group="arm", convex_hulls=True),
        solver=dict(regularization=1e-6, enforce_barriers=True, barrier_tolerance=TOLERANCE),
        tasks=[dict(name="ee", type="frame", frame=TIP, position_cost=1.0, orientation_cost=0.1)],
        limits=[dict(type="position"), dict(type="velocity")],
        barriers=[dict(name="obstacles", type="collision", pairs="obstacles", n_collision_pairs=4, d_min=D_MIN,
                       gain=5.0, safe_displacement_gain=1e-4, rows_per_pair=rows_per_pair)]))
    r = robot("panda")
    scene = scene_from_config(r.urdf_xml, r.srdf_xml, config.robot, r.package_paths, [box])
    q = scene.neutral()
    q[:7] = START
    return OinkController(scene, config, 0.01, q), q


def _run(rows_per_pair: int, goal, rotation, box: Obstacle = BOX) -> dict:
    ctl, q = _controller(rows_per_pair, box)
    scene = ctl.scene
    ctl.tasks["ee"].set_target(pin.SE3(rotation, np.array(goal)))
    data, geom_data = scene.create_data()
    gm = scene.collision_model
    pairs = [k for k, p in enumerate(gm.collisionPairs) if p.second >= scene.world.n_robot_geometries]
    closest, failures, tcp = np.inf, 0, []
    for _ in range(400):
        out = ctl.step(q)
        failures += not out.result.ok
        q = out.q_next
        pin.forwardKinematics(scene.model, data, q)
        pin.updateGeometryPlacements(scene.model, data, gm, geom_data)
        closest = min(closest, min(pin.computeDistance(gm, geom_data, k).min_distance for k in pairs))
        tcp.append(scene.frame_pose(q, TIP).translation)
    settle = float(np.linalg.norm(tcp[-1] - tcp[-50]))
    return dict(closest=closest, failures=failures, recovering=bool(out.result.recovering), settle=settle)


@pytest.mark.parametrize("rows_per_pair", [1, 5])
def test_edges_and_corners_keep_d_min(rows_per_pair):
    worst = []
    for gname, goal in GOALS.items():
        for oname, rotation in ORIENTATIONS.items():
            out = _run(rows_per_pair, goal, rotation)
            worst.append((out["closest"], gname, oname))
            where = f"{gname}, hand {oname}, rows_per_pair {rows_per_pair}"
            assert out["closest"] >= D_MIN - TOLERANCE, f"{where}: {out['closest'] * 1e3:.3f} mm"
            assert out["failures"] == 0, where
            assert not out["recovering"], where
            assert out["settle"] < 1e-4, f"{where}: still moving {out['settle'] * 1e3:.3f} mm in the last 50 steps"
    worst.sort()
    print(f"\nrows_per_pair {rows_per_pair}: closest {worst[0][0] * 1e3:.3f} mm ({worst[0][1]}, {worst[0][2]}) "
          f"over {len(worst)} runs")


@pytest.mark.parametrize("rows_per_pair", [1, 5])
def test_a_table_edge_keeps_d_min(rows_per_pair):
    """A goal under a table top, 5 cm in from its edge: the hand comes over the edge from above."""
    for oname, rotation in ORIENTATIONS.items():
        out = _run(rows_per_pair, (0.45, 0.0, 0.08), rotation, SLAB)
        where = f"table edge, hand {oname}, rows_per_pair {rows_per_pair}"
        assert out["closest"] >= D_MIN - TOLERANCE, f"{where}: {out['closest'] * 1e3:.3f} mm"
        assert out["failures"] == 0 and not out["recovering"], where
        assert out["settle"] < 1e-4, where


def test_pushing_into_a_box_brakes_without_a_failed_qp():
    data, settings = panda_yaml()
    config = load_config(data)
    r = robot("panda")
    box = Obstacle("pushed", "box", (0.3, 0.3, 0.3), position=(0.55, -0.25, 0.30))
    scene = scene_from_config(r.urdf_xml, r.srdf_xml, config.robot, r.package_paths, [*config.obstacles, box])
    loop = ControlLoop(scene, config, settings)
    start = scene.frame_pose(scene.named_configuration("default"), TIP)
    out = drive(loop, [pin.SE3(start.rotation, np.array([0.55, -0.25, 0.30]))], 2500)
    print(f"\npushing into the box: closest {out['closest'] * 1e3:.2f} mm, QP failures {loop.counts.qp_failures}, "
          f"holds {loop.counts.holds}, braking relaxations {loop.ctrl.oink.braking_relaxations}, "
          f"acc/a_max {out['acc']:.3f}, jerk/j_max {out['jerk']:.3f}")
    assert loop.counts.qp_failures == 0 and loop.counts.holds == 0
    d_min = next(b.d_min for b in config.barriers if b.name == "obstacles")
    assert out["closest"] >= d_min - TOLERANCE
    assert out["acc"] <= 1.0 + 1e-6 and out["jerk"] <= 1.0 + 1e-6
