"""The shipped ur5.yaml's workspace barrier adds no weight away from its faces (issue 30, item 0): with its
safe_displacement_fade the steps toward a goal in the middle of the box are the steps of the same barrier rows
without the safe-displacement weight, where RoboPlan's constant weight (r / ||J_h||^2 ~ 1, the frame task's
scale) dragged each of them."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import yaml

from conftest import CONFIG_DIR
from models import robot
from roboplan_ik_ros.core.control.control_loop import ControlLoop

Q_START = np.array([0.0, -1.2, 1.5, -1.9, -1.57, 0.0])  # [rad] the tool 14 cm above the box's floor (z 0.05)
TICKS = 400


def _tool_path(data: dict, goal_offset: np.ndarray) -> tuple[np.ndarray, float]:
    """The tool0 positions the loop commands toward the start + ``goal_offset`` [m], and the least h of the box."""
    r = robot("ur5")
    loop = ControlLoop.from_config(data, r.urdf_xml, r.srdf_xml, r.package_paths)
    model, d = loop.scene.model, loop.scene.model.createData()
    fid = model.getFrameId("tool0")
    q = Q_START.copy()
    pin.framesForwardKinematics(model, d, q)
    T = d.oMf[fid].copy()
    goal = pin.SE3(T.rotation, T.translation + goal_offset)
    t = 0.0
    loop.state.incoming[:] = q
    assert loop.state.accept(t) == ""
    loop.activate(t)
    loop.set_pose_goal(next(iter(loop.tasks)), goal)
    path, g = [], loop.group.q_indices
    for _ in range(TICKS):
        t += loop.dt
        loop.state.incoming[:] = q
        assert loop.state.accept(t) == ""
        q[g] = loop.tick(t).command[g]
        pin.framesForwardKinematics(model, d, q)
        path.append(d.oMf[fid].translation.copy())
    path = np.array(path)
    return path, float(np.linalg.norm(path[-1] - goal.translation))


def test_far_from_its_faces_the_workspace_barrier_changes_no_step():
    shipped = yaml.safe_load((CONFIG_DIR / "ur5.yaml").read_text())
    workspace = next(b for b in shipped["barriers"] if b["name"] == "workspace")
    fade = workspace["safe_displacement_fade"]
    without = yaml.safe_load((CONFIG_DIR / "ur5.yaml").read_text())  # the same rows, no weight at all
    next(b for b in without["barriers"] if b["name"] == "workspace")["safe_displacement_gain"] = 0.0
    offset = np.array([0.0, 0.1, 0.1])  # stays > fade from the faces z = p_min, p_max
    path, error = _tool_path(shipped, offset)
    reference, reference_error = _tool_path(without, offset)
    z_lo, z_hi = workspace["p_min"][2], workspace["p_max"][2]
    assert np.min(np.minimum(path[:, 2] - z_lo, z_hi - path[:, 2])) > fade  # the scene stays beyond the fade
    assert np.max(np.abs(path - reference)) < 1e-9
    assert error < 1e-3 and reference_error < 1e-3  # both reach the goal


def test_without_the_fade_the_constant_weight_drags_the_same_motion():
    """What the fade is for: RoboPlan's constant weight slows the same motion (each step shorter)."""
    shipped = yaml.safe_load((CONFIG_DIR / "ur5.yaml").read_text())
    constant = yaml.safe_load((CONFIG_DIR / "ur5.yaml").read_text())
    next(b for b in constant["barriers"] if b["name"] == "workspace").pop("safe_displacement_fade")
    for data in (shipped, constant):  # a goal that jumps: the QP paces the motion (a shaped goal paces it alone)
        data["node"]["goal_smoothing"] = {"type": "none"}
    offset = np.array([0.0, 0.1, 0.1])
    path, _ = _tool_path(shipped, offset)
    dragged, _ = _tool_path(constant, offset)
    early = TICKS // 8
    assert np.linalg.norm(dragged[early] - path[-1]) > np.linalg.norm(path[early] - path[-1]) + 1e-3
