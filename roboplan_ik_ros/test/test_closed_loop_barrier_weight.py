"""The shipped panda.yaml in closed loop (a simulated Panda that follows every command): the table's
safe-displacement weight must not freeze the arm short of its goal.

The obstacle barrier's closest pairs are often the links near the base against the table, whose distances
no joint changes: ||J_h||^2 is rounding noise (~6e-10) and RoboPlan's weight r / ||J_h||^2 reaches ~1.7e5,
a damping of every step that leaves ~1e-6 of the tasks' pull. Scenario (the e2e look_at test's, where it
showed): a position-only frame task holds the hand while a look_at task points its z axis at a point, then
at a second point given in the hand frame, sent while the arm still moves. In RoboPlan's form (one row per
pair, no cap) the weight passes 1e4 and the arm stops short for good (1.1 degrees and 3.2 mm here; 1-4 degrees
in the e2e runs, depending on when the second point came); with the shipped ``safe_displacement_max_weight: 1.0``
it gets there. (With the shipped five rows per pair and no cap it gets there too since 2f0c480: the pairs' extra
rows hold the links' own vertices, whose Jacobians keep the stacked norm up, weight 0.42; before, the table's
corners took them, repeating each witness row's tiny Jacobian: 8e6, and a 0.6 degree freeze.)
"""

from __future__ import annotations

import numpy as np
import pytest

from models import robot
from roboplan_ik_ros.core.config import load_config
from roboplan_ik_ros.core.control.control_loop import ControlLoop
from roboplan_ik_ros.core.model.scene_config import scene_from_config

from test_closed_loop_bounds import TIP, follow_one_tick, panda_yaml

FIRST_TICKS = 1300  # [ticks at 500 Hz] the second point comes while the arm still turns toward the first
SECOND_TICKS = 2500  # the capped arm is there within 2000
CAPPED_ANGLE = 0.01  # [deg] the capped arm points at the second point within this; uncapped it stops 10x farther


def look_loop(cap: bool) -> ControlLoop:
    data, settings = panda_yaml()
    ee = data["tasks"][0]
    ee["orientation_cost"], ee["position_cost"] = 0.0, 100.0  # the hand's place only: look_at owns its axis
    # the points reach the task at once (turn limits far above the arm's), as before goals were shaped: the
    # freeze showed on that path (a shaped turn takes another, along which the uncapped arm gets there)
    data["tasks"].insert(1, {"name": "look", "type": "look_at", "frame": TIP, "axis": "z", "priority": 1,
                             "max_turn_speed": 1e3, "max_turn_acceleration": 1e6, "max_turn_jerk": float("inf")})
    obstacles = next(b for b in data["barriers"] if b["name"] == "obstacles")
    assert obstacles["safe_displacement_max_weight"] == 1.0  # what panda.yaml ships
    # RoboPlan's constant weight, which the cap is for: panda.yaml fades it out 5 cm above d_min (the table's
    # pairs stay farther here), which would take the weight out of this scenario altogether
    del obstacles["safe_displacement_fade"]
    # and the workspace's weight at RoboPlan's default gain (panda.yaml ships 0.3): the path the freeze was
    # measured on (with 0.3 the uncapped arm takes another, along which it gets there)
    next(b for b in data["barriers"] if b["name"] == "workspace")["safe_displacement_gain"] = 1.0
    if not cap:  # RoboPlan's form: no cap, the witness row alone
        del obstacles["safe_displacement_max_weight"]
        obstacles["rows_per_pair"] = 1
    config = load_config(data)
    r = robot("panda")
    scene = scene_from_config(r.urdf_xml, r.srdf_xml, config.robot, r.package_paths, list(config.obstacles))
    return ControlLoop(scene, config, settings)


def pointing_angle(scene, q, point) -> float:
    T = scene.frame_pose(q, TIP)
    u = point - T.translation
    return float(np.arccos(np.clip(T.rotation[:, 2] @ u / np.linalg.norm(u), -1.0, 1.0)))


@pytest.mark.parametrize("cap", [True, False], ids=["shipped cap", "RoboPlan uncapped"])
def test_the_tables_static_pairs_do_not_freeze_the_arm(cap):
    loop = look_loop(cap)
    scene = loop.scene
    q = scene.named_configuration("default")
    t = 0.0
    loop.state.incoming[:] = q
    assert loop.state.accept(t) == ""
    loop.activate(t)
    p0 = scene.frame_pose(q, TIP).translation.copy()
    obstacles = loop.barrier("obstacles")
    max_weight = 0.0
    for ticks, point in ((FIRST_TICKS, p0 + [0.3, 0.25, -0.35]), (SECOND_TICKS, None)):
        # the second point: 0.4 m along the hand's axis and 0.15 m aside, resolved where the hand is now
        world = scene.frame_pose(q, TIP).act(np.array([0.15, 0.0, 0.4])) if point is None else point
        loop.set_task_target("look", world, t)
        for _ in range(ticks):
            t += loop.dt
            follow_one_tick(loop, q, t)
            max_weight = max(max_weight, obstacles.regularization_weight())
    angle = np.degrees(pointing_angle(scene, q, world))
    drift = np.linalg.norm(scene.frame_pose(q, TIP).translation - p0)
    print(f"cap={cap}: angle {angle:.4f} deg, hand {drift * 1e3:.3f} mm from its place, "
          f"largest obstacle weight {max_weight:.3g}")
    if cap:
        assert max_weight <= 1.0
        assert angle < CAPPED_ANGLE and drift < 1e-4
    else:  # the scenario still shows what the cap is for (the angle depends on the path: ~1 degree here today)
        assert max_weight > 1e4
        assert angle > 10 * CAPPED_ANGLE, (f"uncapped, the arm got to {angle:.4f} deg of the point: the scenario "
                                           "no longer shows the freeze the cap prevents")


def test_an_uncapped_collision_barrier_is_noted_at_configure():
    """RoboPlan's form stays available, with a configure note saying what it risks (the node logs the notes): the
    weight is unbounded, a pair the joints barely move (this test's scenario) outweighs the tasks and stops the arm
    short of its goal, and the value that caps it."""
    capped = [n for n in look_loop(cap=True).notes if "safe_displacement_max_weight" in n]
    assert capped == []  # the shipped config caps every collision barrier (self_collision is dropped here)
    [note] = [n for n in look_loop(cap=False).notes if "safe_displacement_max_weight" in n]
    assert note.startswith("barrier 'obstacles': no safe_displacement_max_weight: its weight r/||J_h||^2 is "
                           "unbounded, and a pair whose distance the joints barely change"), note
    assert "outweighs the tasks and stops the arm short of its goal; 1.0 caps it" in note, note
