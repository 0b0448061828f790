"""The singularity barrier in closed loop (panda.yaml + ``type: singularity`` on the hand, no ROS):
a goal beyond the arm's reach drives the elbow toward straight; with the barrier the hand's smallest
singular value stays above the bound, and from a configuration already below it the arm moves away
when asked (the barrier bounds only the approach)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pinocchio as pin
import pytest
import yaml

from conftest import CONFIG_DIR
from models import robot
from roboplan_ik_ros.core.config import load_config
from roboplan_ik_ros.core.control.control_loop import ControlLoop, LoopConfig
from roboplan_ik_ros.core.control.goal_followers import GoalSmoothingConfig
from roboplan_ik_ros.core.control.twist_follower import StreamingConfig
from roboplan_ik_ros.core.model.scene_config import scene_from_config

TIP = "panda_hand_tcp"
SIGMA_MIN = 0.06


def _config(with_barrier: bool) -> tuple[dict, LoopConfig]:
    data = yaml.safe_load((CONFIG_DIR / "panda.yaml").read_text())
    # far from the workspace box and obstacles: only the singularity matters here
    data["barriers"] = [b for b in data["barriers"] if b["type"] == "position"]
    for b in data["barriers"]:
        b["p_min"], b["p_max"] = [-2.0, -2.0, -1.0], [2.0, 2.0, 2.5]
    if with_barrier:
        data["barriers"].append({"name": "singularity", "type": "singularity", "frame": TIP, "sigma_min": SIGMA_MIN})
    node = data.pop("node")
    keys = {f.name for f in dataclasses.fields(LoopConfig)} - {"goal_smoothing", "streaming"}
    return data, LoopConfig(**{k: v for k, v in node.items() if k in keys},
                            goal_smoothing=GoalSmoothingConfig(**node["goal_smoothing"]),
                            streaming=StreamingConfig(**node["streaming"]))


def _sigma_min(scene, q) -> float:
    data = scene.model.createData()
    J = pin.computeFrameJacobian(scene.model, data, q, scene.model.getFrameId(TIP), pin.LOCAL)[:, :7]
    return float(np.linalg.svd(J, compute_uv=False)[-1])


def _run(with_barrier: bool, q0, goal_of, ticks: int):
    r = robot("panda")
    data, settings = _config(with_barrier)
    config = load_config(data)
    scene = scene_from_config(r.urdf_xml, r.srdf_xml, config.robot, r.package_paths)
    loop = ControlLoop(scene, config, settings)
    q, t = q0(scene), 0.0
    loop.state.incoming[:] = q
    assert loop.state.accept(t) == ""
    loop.activate(t)
    loop.set_pose_goal("ee", goal_of(scene, q))
    sigmas = []
    for _ in range(ticks):
        t += loop.dt
        loop.state.incoming[:] = q
        assert loop.state.accept(t) == ""
        res = loop.tick(t)
        q[loop.group.q_indices] = res.command[loop.group.q_indices]
        sigmas.append(_sigma_min(scene, q))
    return np.array(sigmas), loop, scene, q


def _default(scene):
    return scene.named_configuration("default")


def _beyond_reach(scene, q):  # 1.5 m out along the hand's x-y direction: the elbow straightens
    T = scene.frame_pose(q, TIP)
    p = T.translation.copy()
    p[:2] += 1.5 * p[:2] / np.linalg.norm(p[:2])
    return pin.SE3(T.rotation, p)


def test_a_goal_beyond_reach_stops_at_the_singularity_bound():
    free, _, _, _ = _run(False, _default, _beyond_reach, 2000)
    guarded, loop, _, _ = _run(True, _default, _beyond_reach, 2000)
    print(f"\ngoal 1.5 m beyond reach: sigma_min without the barrier {free.min():.4f}, with it {guarded.min():.4f} "
          f"(bound {SIGMA_MIN})")
    assert free.min() < SIGMA_MIN  # the scenario does reach toward the singularity
    assert guarded.min() >= SIGMA_MIN - 1e-3
    assert loop.counts.qp_failures == 0 and loop.guard.cuts == 0


def test_from_below_the_bound_the_arm_moves_away():
    """Start where sigma_min is below the bound (elbow almost straight): the barrier is violated, the
    QP recovers (never holds) and a goal back toward the body raises sigma_min above the bound."""
    def near_singular(scene):
        q = _default(scene)
        q[3] = -0.5  # sigma_min 0.005 at this elbow angle (Panda)
        return q

    def closer_in(scene, q):
        T = scene.frame_pose(q, TIP)
        return pin.SE3(T.rotation, T.translation * np.array([0.7, 0.7, 1.0]))

    sigmas, loop, _, _ = _run(True, near_singular, closer_in, 2500)
    print(f"\nfrom sigma_min {sigmas[0]:.4f}: after 5 s {sigmas[-1]:.4f} (bound {SIGMA_MIN}), "
          f"QP failures {loop.counts.qp_failures}")
    assert sigmas[0] < SIGMA_MIN and sigmas[-1] > SIGMA_MIN
    assert loop.counts.qp_failures == 0
