"""A box attached to the hand whose rod passes right through a world box: the collision checks that decide
(``Scene.in_collision``, SimpleIK's check of its answers) must see it.

Found end to end (test_e2e_obstacle_features.py): ``~/solve_ik`` answered a goal that pushes a 25 cm rod
attached to panda_hand 6 cm into a 10 cm wall with ``success`` (coal's distance for that pair: -6 cm).
pinocchio's GeometryData builds its collision requests with ``enable_contact = False``, and coal's
box-box collision test without contact answers "no collision" at this configuration (a thin box through
a box, their axes parallel within 1e-4 rad, as an object attached to a hand turned down is against an
axis-aligned wall); with ``enable_contact`` it answers "collision", as its distance does.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from models import robot
from roboplan_ik_ros.core import Obstacle, Scene, SimpleIK, SimpleIKOptions
from roboplan_ik_ros.core.simple_ik import FrameGoal

TIP = "panda_hand_tcp"


def _scene_with_rod_through_wall():
    r = robot("panda")
    s = Scene(r.urdf_xml, r.srdf_xml, r.package_paths)
    q = s.named_configuration("default")
    T_hand = s.frame_pose(q, "panda_hand")
    rod_centre = T_hand.act(np.array([0.2, 0.0, 0.04]))
    along = T_hand.rotation[:, 0]
    # the wall's centre 2.5 cm beyond the rod's centre: the rod (x from -0.125 to 0.125) runs through it
    s.add_obstacle(Obstacle("wall", "box", (0.1, 0.1, 0.1), position=tuple(rod_centre + along * 0.025)))
    s.add_obstacle(Obstacle("rod", "box", (0.25, 0.02, 0.02), position=(0.2, 0.0, 0.04), frame="panda_hand"))
    return s, q


def _rod_wall_distance(s: Scene, q) -> float:
    gm = s.collision_model
    data, gd = s.model.createData(), pin.GeometryData(gm)
    pin.updateGeometryPlacements(s.model, data, gm, gd, q)
    a, b = gm.getGeometryId("obstacle:wall"), gm.getGeometryId("obstacle:rod")
    k = next(i for i, p in enumerate(gm.collisionPairs) if {p.first, p.second} == {a, b})
    return pin.computeDistance(gm, gd, k).min_distance


def test_scene_in_collision_sees_a_rod_through_a_wall():
    s, q = _scene_with_rod_through_wall()
    assert _rod_wall_distance(s, q) < -0.05
    assert s.in_collision(q)


def test_simple_ik_does_not_answer_with_the_rod_in_the_wall():
    s, q = _scene_with_rod_through_wall()
    T = s.frame_pose(q, TIP)
    result = SimpleIK(s, SimpleIKOptions(group_name="arm", max_time=0.2, seed=1)).solve([FrameGoal(TIP, T)], q)
    # the goal fixes the hand, and so the rod, in the wall: no answer can be clear of it
    assert not result.success, result.message
