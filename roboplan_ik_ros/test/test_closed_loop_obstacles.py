"""The shipped panda.yaml (its table and obstacle barrier, the workspace box dropped so that nothing
else stops the arm) in closed loop with a simulated Panda: a goal under the table top drives the
hand into the table at full speed, and a goal through a box on the table sweeps the arm into it.
The minimum distance (coal, every tick) stays >= d_min, no QP fails, the guard never cuts, and every
command stays within Franka's acceleration and jerk bounds. Prints the figures (``pytest -s``)."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from models import robot
from roboplan_ik_ros.core.config import load_config
from roboplan_ik_ros.core.control.control_loop import ControlLoop
from roboplan_ik_ros.core.model.obstacles import Obstacle
from roboplan_ik_ros.core.model.scene_config import scene_from_config

from test_closed_loop_bounds import TIP, follow_one_tick, panda_yaml

TOLERANCE = 1e-4  # [m] solver.barrier_tolerance: the step's linearization error that enforce_barriers accepts


def obstacle_loop(extra: list[Obstacle] = ()) -> tuple[ControlLoop, float]:
    data, settings = panda_yaml()
    data["barriers"] = [b for b in data["barriers"] if b["name"] != "workspace"]
    config = load_config(data)
    r = robot("panda")
    scene = scene_from_config(r.urdf_xml, r.srdf_xml, config.robot, r.package_paths, [*config.obstacles, *extra])
    d_min = next(b.d_min for b in config.barriers if b.name == "obstacles")
    return ControlLoop(scene, config, settings), d_min


def obstacle_distance(scene, data, geom_data, pairs) -> float:
    pin.updateGeometryPlacements(scene.model, data, scene.collision_model, geom_data)
    return min(pin.computeDistance(scene.collision_model, geom_data, k).min_distance for k in pairs)


def drive(loop: ControlLoop, goals: list[pin.SE3], ticks: int, perceived=None) -> dict:
    """Tick toward each goal in turn; the robot follows every command exactly. ``perceived(q)``:
    (name, link, distance) of the perceived cloud (``closest_perceived``: its minimum)."""
    scene = loop.scene
    q = scene.named_configuration("default")
    g = loop.group.q_indices
    data, geom_data = scene.create_data()
    robot_geoms = scene.world.n_robot_geometries
    pairs = [k for k, p in enumerate(scene.collision_model.collisionPairs) if p.second >= robot_geoms]
    t, commands, closest, closest_perceived = 0.0, [], np.inf, np.inf
    loop.state.incoming[:] = q
    assert loop.state.accept(t) == ""
    loop.activate(t)
    for goal in goals:
        loop.set_pose_goal("ee", goal)
        for _ in range(ticks):
            t += loop.dt
            follow_one_tick(loop, q, t)
            commands.append(q[g].copy())
            pin.forwardKinematics(scene.model, data, q)
            closest = min(closest, obstacle_distance(scene, data, geom_data, pairs))
            if perceived is not None:
                closest_perceived = min(closest_perceived, perceived(q)[2])
    c = np.array(commands)
    accel = loop.acceleration_limit
    return dict(
        closest=closest, q=q, closest_perceived=closest_perceived,
        acc=(np.abs(np.diff(c, n=2, axis=0)).max(axis=0) / loop.dt**2 / accel.a_max).max(),
        jerk=(np.abs(np.diff(c, n=3, axis=0)).max(axis=0) / loop.dt**3 / accel.j_max).max(),
    )


def test_goal_under_the_table_stops_the_hand_at_d_min():
    loop, d_min = obstacle_loop()
    start = loop.scene.frame_pose(loop.scene.named_configuration("default"), TIP)
    goal = pin.SE3(start.rotation, np.array([0.5, 0.1, -0.1]))  # 9 cm under the table top
    out = drive(loop, [goal], 2500)
    tcp_z = loop.scene.frame_pose(out["q"], TIP).translation[2]
    print(f"\ngoal 9 cm under the table: min obstacle distance {out['closest'] * 1e3:.2f} mm (d_min "
          f"{d_min * 1e3:.0f} mm), TCP stopped at z = {tcp_z * 1e3:.1f} mm, peak acc/a_max {out['acc']:.3f}, "
          f"jerk/j_max {out['jerk']:.3f}, QP failures {loop.counts.qp_failures}, holds {loop.counts.holds}")
    assert out["closest"] >= d_min - TOLERANCE
    assert out["closest"] < d_min + 0.005, "the arm never came near the table: the test cannot fail"
    assert loop.counts.qp_failures == 0 and loop.guard.cuts == 0
    assert out["acc"] <= 1.0 + 1e-6 and out["jerk"] <= 1.0 + 1e-6


@pytest.mark.parametrize("box_height", [0.25])
def test_sweep_through_a_box_on_the_table_keeps_d_min(box_height):
    box = Obstacle("box", "box", (0.1, 0.1, box_height), position=(0.45, 0.0, box_height / 2 - 0.01))
    loop, d_min = obstacle_loop([box])
    start = loop.scene.frame_pose(loop.scene.named_configuration("default"), TIP)
    left = pin.SE3(start.rotation, np.array([0.45, 0.25, 0.15]))
    right = pin.SE3(start.rotation, np.array([0.45, -0.25, 0.15]))  # straight through the box
    out = drive(loop, [left, right, left], 1500)
    print(f"\nsweep through a {box_height * 100:.0f} cm box: min obstacle distance {out['closest'] * 1e3:.2f} mm "
          f"(d_min {d_min * 1e3:.0f} mm), peak acc/a_max {out['acc']:.3f}, jerk/j_max {out['jerk']:.3f}, "
          f"QP failures {loop.counts.qp_failures}")
    assert out["closest"] >= d_min - TOLERANCE
    assert out["closest"] < d_min + 0.005, "the arm never came near the box: the test cannot fail"
    assert loop.counts.qp_failures == 0 and loop.guard.cuts == 0
    assert out["acc"] <= 1.0 + 1e-6 and out["jerk"] <= 1.0 + 1e-6
