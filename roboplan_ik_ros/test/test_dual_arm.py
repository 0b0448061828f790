"""Two arms in one QP: the shipped baxter_dual.yaml in the core ControlLoop with a simulated Baxter that
follows every command (no ROS). Carrying a box, the hands keep their grasp within the bounds; a goal for
one hand alone moves both, the grasp held (its relative_frame task); pushed into each other (without the
grasp task), the self-collision barrier keeps the arms d_min apart."""

from __future__ import annotations

import dataclasses

import numpy as np
import pinocchio as pin
import pytest

from conftest import CONFIG_DIR
from models import robot
from roboplan_ik_ros.core.config import load_config
from roboplan_ik_ros.core.control.control_loop import ControlLoop
from roboplan_ik_ros.core.model.scene_config import scene_from_config
from roboplan_ik_ros.demo_dual_arm import arm_pairs, carry_box, closest_arm_distance, grasp_errors
from roboplan_ik_ros.node.node_config import load_node_config

BOUND_SLACK = 1e-6  # relative: rounding of the finite differences
DISTANCE_TOLERANCE = 1e-3  # [m] below d_min: the barrier's linearization over one step


@pytest.fixture(scope="module")
def baxter():
    config = load_config(CONFIG_DIR / "baxter_dual.yaml")
    r = robot("baxter")
    scene = scene_from_config(r.urdf_xml, r.srdf_xml, config.robot, r.package_paths, config.obstacles)
    return scene, config, load_node_config(config.node)


def started_loop(scene, config, settings) -> tuple[ControlLoop, np.ndarray]:
    """The loop, active at the SRDF's default pose (its measurement), and that q."""
    loop = ControlLoop(scene, config, settings)
    q = scene.named_configuration("default")
    loop.state.incoming[:] = q
    loop.state.accept(0.0)
    assert loop.activate(0.0) == ""
    return loop, q


def tick(loop: ControlLoop, q: np.ndarray, t: float) -> None:
    """One period: the robot reports q, the loop commands, the robot is there (q updated in place)."""
    loop.state.incoming[:] = q
    loop.state.accept(t)
    g = loop.group.q_indices
    q[g] = loop.tick(t).command[g]


def peak_ratios(loop: ControlLoop, commands: np.ndarray) -> tuple[float, float]:
    """Peak |acceleration| / a_max and |jerk| / j_max over every joint, from consecutive commands."""
    accel, dt = loop.acceleration_limit, loop.dt
    acc = np.abs(np.diff(commands, n=2, axis=0)) / dt**2 / accel.a_max
    jerk = np.abs(np.diff(commands, n=3, axis=0)) / dt**3 / accel.j_max
    return float(acc.max()), float(jerk.max())


def self_barrier(config):
    return next(b for b in config.barriers if b.type == "collision" and b.pairs == "self")


def test_the_shipped_config_moves_both_arms_in_one_group(baxter):
    scene, config, _ = baxter
    group = scene.group(config.robot.group)
    assert group.nv == 14 and {j.split("_")[0] for j in group.joint_names} == {"left", "right"}
    assert [t.name for t in config.tasks if t.type == "frame"] == ["left_hand", "right_hand"]
    grasp = next(t for t in config.tasks if t.type == "relative_frame")
    assert (grasp.frame, grasp.reference) == ("right_gripper", "left_gripper")
    assert len(arm_pairs(scene)) > 50  # the barrier's pairs include the arm-against-arm ones
    assert not scene.in_collision(scene.named_configuration("default"))


@pytest.mark.parametrize("grasp_task", [True, False], ids=["grasp_task", "hand_tasks_alone"])
def test_carrying_a_box_keeps_the_grasp_within_the_bounds(baxter, grasp_task):
    """The demo's carry (10 s around a tilted 15 cm circle, yawing 10 deg, 50 Hz goals per hand); with the
    grasp task the error is ~0.02 mm, with the hands' tasks alone ~3 mm (the goal smoothing's lag)."""
    scene, config, settings = baxter
    if not grasp_task:
        config = dataclasses.replace(config, tasks=[t for t in config.tasks if t.type != "relative_frame"])
    rec, loop = carry_box(scene, config, settings, duration=10.0)
    pos, rot = grasp_errors(rec)
    assert pos.max() < 5e-3 and rot.max() < np.deg2rad(2.0), (pos.max(), np.rad2deg(rot.max()))
    # the box went around: the hands moved well beyond the grasp error
    travel = max(np.linalg.norm(T.translation - rec.left[0].translation) for T in rec.left)
    assert travel > 0.1
    commands = np.array(rec.command)
    acc, jerk = peak_ratios(loop, commands)
    assert acc <= 1.0 + BOUND_SLACK and jerk <= 1.0 + BOUND_SLACK, (acc, jerk)
    d_min = self_barrier(config).d_min
    assert closest_arm_distance(scene, loop.group, commands)[0] >= d_min - DISTANCE_TOLERANCE
    assert loop.counts.qp_failures == 0 and loop.counts.holds == 0 and loop.guard_cuts == 0


def test_a_goal_for_one_hand_moves_both_and_the_grasp_holds(baxter):
    """Only the left hand gets goals (5 cm up): the right hand's goal stays, the grasp outweighs both, so both
    hands rise about halfway (measured: 26 and 24 mm) and the box keeps its shape (0.23 mm)."""
    scene, config, settings = baxter
    loop, q = started_loop(scene, config, settings)
    T_left, T_right = scene.frame_pose(q, "left_gripper"), scene.frame_pose(q, "right_gripper")
    left, right = [], []
    for k in range(1500):  # 3 s: the goal rises for 1 s (50 Hz), then stays
        t = (k + 1) * loop.dt
        if k % 10 == 0:
            loop.set_pose_goal("left_hand", pin.SE3(T_left.rotation, T_left.translation + [0.0, 0.0, 0.05 * min(t, 1.0)]))
        tick(loop, q, t)
        left.append(scene.frame_pose(q, "left_gripper"))
        right.append(scene.frame_pose(q, "right_gripper"))
    moved_left, moved_right = left[-1].translation - T_left.translation, right[-1].translation - T_right.translation
    assert moved_left[2] > 0.01 and moved_right[2] > 0.01  # both hands went up (the box tilts a little)
    grasp = T_left.inverse() * T_right
    errors = [pin.log6(grasp.inverse() * (L.inverse() * R)) for L, R in zip(left, right)]
    assert max(np.linalg.norm(e.linear) for e in errors) < 1e-3
    assert max(np.linalg.norm(e.angular) for e in errors) < np.deg2rad(0.1)


def test_hands_pushed_into_each_other_stop_d_min_apart(baxter):
    """Without the grasp task, both goals at the box's centre: the arms meet, the barrier keeps every arm-arm
    pair d_min apart."""
    scene, config, settings = baxter
    config = dataclasses.replace(config, tasks=[t for t in config.tasks if t.type != "relative_frame"])
    loop, q = started_loop(scene, config, settings)
    T_left, T_right = scene.frame_pose(q, "left_gripper"), scene.frame_pose(q, "right_gripper")
    centre = 0.5 * (T_left.translation + T_right.translation)
    commands = []
    for k in range(2000):  # 4 s: 3 s of approach at 50 Hz goals, then the goals stay at the centre
        t = (k + 1) * loop.dt
        if k % 10 == 0:
            s = min(t / 3.0, 1.0)
            loop.set_pose_goal("left_hand", pin.SE3(T_left.rotation, T_left.translation + s * (centre - T_left.translation)))
            loop.set_pose_goal("right_hand", pin.SE3(T_right.rotation,
                                                     T_right.translation + s * (centre - T_right.translation)))
        tick(loop, q, t)
        commands.append(q[loop.group.q_indices].copy())
    commands = np.array(commands)
    d_min = self_barrier(config).d_min
    closest, pair = closest_arm_distance(scene, loop.group, commands, every=5)
    assert closest >= d_min - DISTANCE_TOLERANCE, pair
    gap = np.linalg.norm(scene.frame_pose(q, "left_gripper").translation - scene.frame_pose(q, "right_gripper").translation)
    assert gap < 0.1  # the hands did come together: the barrier, not the goals, kept them apart
    acc, jerk = peak_ratios(loop, commands)
    assert acc <= 1.0 + BOUND_SLACK and jerk <= 1.0 + BOUND_SLACK, (acc, jerk)
    assert loop.counts.qp_failures == 0
