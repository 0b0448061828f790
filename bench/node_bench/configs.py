"""The node configs the bench runs (b, c, d, x; (p) is (c) with perceived.py's camera) and the goals it
streams to them: the Panda's start pose (the goal circle's centre) and config (x)'s two hands."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml


# ------------------------------------------------------------------------- configs
def node_config(config: str, trigger: str, rate: float, variant: str = "full") -> dict:
    from roboplan_ik_ros.node.ik_controller import default_config_file

    data = yaml.safe_load(Path(default_config_file("baxter_dual" if config == "x" else "panda")).read_text())
    if config == "b":
        data["barriers"] = [b for b in data["barriers"] if b["type"] not in ("self_collision", "collision")]
    if config == "d":
        data["obstacles"] = node_cell_obstacles(data)
    node_cfg = data.setdefault("node", {})
    node_cfg["control_rate_hz"] = float(rate)
    if trigger == "joint_states":
        node_cfg.update(trigger="joint_states", state_feedback="measured")
    else:
        node_cfg.update(trigger="timer")  # state_feedback as shipped (commanded)
    if variant == "normal_priority":
        node_cfg["loop_priority"] = 0
    return data


def node_cell_obstacles(data: dict, seed: int = 0) -> list[dict]:
    """Config (d)'s cell as YAML obstacles: the shipped table, then common.cell_obstacles' walls and
    20 primitives kept clear of this bench's goal circle (from the Panda's default pose)."""
    import pinocchio as pin

    from common import Robot, _example_robot, cell_obstacles
    from roboplan_ik_ros import core
    from roboplan_ik_ros.demo import circle_path

    robot = Robot(_example_robot("panda"))
    q0 = robot.values(robot.q_ref)
    T0 = robot.tip_pose(q0)
    box = next(b for b in data["barriers"] if b["name"] == "workspace")
    path = circle_path(T0.translation, box["p_max"][2] - 0.05, 0.15, 1.0, 6.0)
    targets = [pin.SE3(T0.rotation, path(t)) for t in np.arange(0.0, 7.0, 0.02)]
    out = list(data.get("obstacles", []))
    for o in cell_obstacles(core, seed, robot, q0, targets)[1:]:  # the table is the shipped one
        item = {"name": o.name, "shape": o.shape, "position": [float(v) for v in o.position],
                "orientation": [float(v) for v in o.quaternion_xyzw]}
        if o.shape == "box":
            item["size"] = [float(v) for v in o.dims]
        else:
            item["radius"] = float(o.dims[0])
            if len(o.dims) > 1:
                item["length"] = float(o.dims[1])
        out.append(item)
    return out


def dual_arm_goals(lap: float = 10.0):
    """Config x: t -> (left, right) hand goals carrying the dual-arm demo's box around its path, one lap per
    ``lap`` seconds (from the mock Baxter's start pose, SRDF "default")."""
    import pinocchio as pin

    from roboplan_ik_ros.core.model.scene import Scene
    from roboplan_ik_ros.demo_dual_arm import box_path
    from roboplan_ik_ros.sim.mock_robot import load_robot

    urdf, srdf, pkgs, _ = load_robot("baxter")
    scene = Scene(urdf, srdf, pkgs)
    q = scene.named_configuration("default")
    T_left, T_right = scene.frame_pose(q, "left_gripper"), scene.frame_pose(q, "right_gripper")
    T_box0 = pin.SE3(T_left.rotation, 0.5 * (T_left.translation + T_right.translation))
    grasp = T_box0.inverse() * T_left, T_box0.inverse() * T_right
    path = box_path(T_box0, lap)

    def at(t: float):
        T_box = path(t % lap)
        return T_box * grasp[0], T_box * grasp[1]

    return at


def start_pose():
    """Tip pose of the mock's start configuration (SRDF "default", as MockRobot's initial_state)."""
    from roboplan_ik_ros.core.model.scene import Scene
    from roboplan_ik_ros.sim.mock_robot import load_robot

    urdf, srdf, pkgs, _ = load_robot("panda")
    scene = Scene(urdf, srdf, pkgs)
    return scene.frame_pose(scene.named_configuration("default", scene.neutral()), "panda_hand_tcp")
