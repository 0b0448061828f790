#!/usr/bin/env python3
"""Frame goals: ``node.goal_smoothing.type`` ``max_acceleration`` against ``jerk_limited`` (issue 30), in one process.

The core's ControlLoop on the shipped panda.yaml (its tasks, barriers, limits and node: keys; only the goal
smoothing's type and jerks changed) at its rate, driving a Panda that follows every command exactly. Per
variant:

- a 20 cm step of the TCP (+y from 'default'): the goal time (the TCP within 1 mm of the goal from then on),
  the largest distance of the TCP from the straight line start -> goal, the overshoot past the goal along the
  line, and Ruckig's time-optimal duration of the target alone under the smoothing's limits;
- the same step with a 0.6 rad turn about the TCP's x axis: goal time (1 mm and 1 mrad), the line deviation, the
  overshoot past the goal (along the line, about the axis) and the largest difference of the position's and the rotation's progress (0..1) of the TCP;
- a 50 Hz goal stream along a circle of radius 8 cm (2 s per turn, two turns): the TCP's largest and rms
  distance from the latest goal over the second turn, and the overshoot after the stream's last goal;
- each scenario's peak |acceleration| / a_max and |jerk| / j_max of the joint commands (finite differences at
  the control period, as a drive sees them), Franka's bounds from panda_joint_limits.yaml.

``--jerks 50,300 100,600``: the jerk_limited variants (linear m/s^3, angular rad/s^3).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from pathlib import Path

import numpy as np
import pinocchio as pin
import yaml

REPO = Path(__file__).resolve().parents[1]
if str(REPO / "roboplan_ik_ros") not in sys.path:
    sys.path.insert(0, str(REPO / "roboplan_ik_ros"))

from ruckig import InputParameter, OutputParameter, Ruckig  # noqa: E402

from roboplan_ik_ros.core.config import load_config  # noqa: E402
from roboplan_ik_ros.core.control.control_loop import ControlLoop, LoopConfig  # noqa: E402
from roboplan_ik_ros.core.control.goal_followers import GoalSmoothingConfig  # noqa: E402
from roboplan_ik_ros.core.control.twist_follower import StreamingConfig  # noqa: E402
from roboplan_ik_ros.core.model.robots import load_example_robot  # noqa: E402
from roboplan_ik_ros.core.model.scene_config import scene_from_config  # noqa: E402

CONFIG = REPO / "roboplan_ik_ros" / "config" / "panda.yaml"
TIP = "panda_hand_tcp"
SETTLE = 1e-3  # [m] and [rad]
STEP = np.array([0.0, 0.2, 0.0])  # [m] from the start TCP (the node bench's first step)
TURN = 0.6  # [rad] about the TCP's x axis, with the step
RADIUS, PERIOD, GOAL_HZ, TURNS = 0.08, 2.0, 50.0, 2


def settings_of(node: dict, smoothing: dict) -> LoopConfig:
    keys = {f.name for f in dataclasses.fields(LoopConfig)} - {"goal_smoothing", "streaming"}
    return LoopConfig(**{k: v for k, v in node.items() if k in keys},
                      goal_smoothing=GoalSmoothingConfig(**{**node["goal_smoothing"], **smoothing}),
                      streaming=StreamingConfig(**node["streaming"]))


class Run:
    """The loop and a robot that follows every command; records the commands and the TCP poses."""

    def __init__(self, scene, data: dict, settings: LoopConfig) -> None:
        self.loop = ControlLoop(scene, load_config(data), settings)
        self.scene, self.dt, self.t = scene, self.loop.dt, 0.0
        self.q = scene.named_configuration("default")
        self.commands: list[np.ndarray] = []
        self.tcp: list[pin.SE3] = []
        self._measure()
        assert self.loop.activate(self.t) == ""

    def _measure(self) -> None:
        self.loop.state.incoming[:] = self.q
        assert self.loop.state.accept(self.t) == ""

    def tick(self, n: int = 1) -> None:
        g = self.loop.group.q_indices
        for _ in range(n):
            self.t += self.dt
            self._measure()
            res = self.loop.tick(self.t)
            assert res.publish
            self.q[g] = res.command[g]
            self.commands.append(self.q[g].copy())
            self.tcp.append(self.scene.frame_pose(self.q, TIP))

    def pose(self) -> pin.SE3:
        return self.scene.frame_pose(self.q, TIP)

    def ratios(self, first: int = 0) -> tuple[float, float]:
        c, accel = np.array(self.commands[max(0, first - 3):]), self.loop.acceleration_limit
        acc = np.abs(np.diff(c, n=2, axis=0)).max(axis=0) / self.dt**2 / accel.a_max
        jerk = np.abs(np.diff(c, n=3, axis=0)).max(axis=0) / self.dt**3 / accel.j_max
        return float(acc.max()), float(jerk.max())


def optimum(d: float, v: float, a: float, j: float, dt: float) -> float:
    """[s] Ruckig's time-optimal duration of a 1-D move of d from rest to rest."""
    otg, inp, out = Ruckig(1, dt), InputParameter(1), OutputParameter(1)
    inp.current_position, inp.target_position = [0.0], [d]
    inp.max_velocity, inp.max_acceleration, inp.max_jerk = [v], [a], [j]
    otg.update(inp, out)
    return out.trajectory.duration


def step(scene, data, settings, turn: float) -> dict:
    run = Run(scene, data, settings)
    start = run.pose()
    goal = pin.SE3(start.rotation @ pin.exp3(np.array([turn, 0.0, 0.0])), start.translation + STEP)
    run.loop.set_pose_goal("ee", goal)
    run.tick(int(round(2.0 / run.dt)))
    p = np.array([T.translation for T in run.tcp])
    rot = np.array([np.linalg.norm(pin.log3(goal.rotation.T @ T.rotation)) for T in run.tcp])
    u = STEP / np.linalg.norm(STEP)
    along = (p - start.translation) @ u
    off = p - start.translation - np.outer(along, u)
    err = np.linalg.norm(p - goal.translation, axis=1)
    far = np.flatnonzero((err >= SETTLE) | (rot >= SETTLE))
    out = dict(goal_time=(0 if far.size == 0 else far[-1] + 1) * run.dt,
               line=float(np.linalg.norm(off, axis=1).max()),
               overshoot=float(max(0.0, (along - np.linalg.norm(STEP)).max())),
               ratios=run.ratios())
    if turn:
        axis = np.array([1.0, 0.0, 0.0])  # the turn's, in the start TCP's frame
        turned = np.array([pin.log3(start.rotation.T @ T.rotation) @ axis for T in run.tcp])
        out["rot_overshoot"] = float(max(0.0, (turned - turn).max()))  # past the goal about the turn's axis
        progress_p = along / np.linalg.norm(STEP)
        progress_r = 1.0 - rot / turn
        out["sync"] = float(np.abs(progress_p - progress_r).max())
    gs = settings.goal_smoothing
    if gs.type == "jerk_limited":
        out["optimum"] = max(optimum(np.linalg.norm(STEP), gs.max_linear_speed, gs.max_linear_acceleration,
                                     gs.max_linear_jerk, run.dt),
                             optimum(turn, gs.max_angular_speed, gs.max_angular_acceleration, gs.max_angular_jerk,
                                     run.dt) if turn else 0.0)
    return out


def circle(scene, data, settings) -> dict:
    run = Run(scene, data, settings)
    start = run.pose()
    center = start.translation
    errors = []
    goal = start
    n = int(TURNS * PERIOD * GOAL_HZ)
    for k in range(n):
        phase = 2 * math.pi * k / GOAL_HZ / PERIOD
        goal = pin.SE3(start.rotation, center + RADIUS * np.array([math.sin(phase), 1 - math.cos(phase), 0.0]))
        run.loop.set_pose_goal("ee", goal)
        while run.t + run.dt <= (k + 1) / GOAL_HZ + 1e-12:
            run.tick()
            if k >= n // TURNS:  # the second turn: the latest goal against the TCP
                errors.append(float(np.linalg.norm(run.pose().translation - goal.translation)))
    ratios = run.ratios()
    before = run.pose().translation
    first = len(run.tcp)
    run.tick(int(round(1.0 / run.dt)))
    d = goal.translation - before
    u = d / np.linalg.norm(d)
    p = np.array([T.translation for T in run.tcp[first:]])
    past = float(max(0.0, ((p - goal.translation) @ u).max()))
    e = np.array(errors)
    return dict(max=float(e.max()), rms=float(np.sqrt((e**2).mean())), overshoot=past, ratios=ratios)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--jerks", nargs="*", default=["50,300"], help="jerk_limited variants: linear,angular")
    args = p.parse_args()
    data = yaml.safe_load(CONFIG.read_text())
    node = data.pop("node")
    r = load_example_robot("panda")
    scene = scene_from_config(r.urdf_xml, r.srdf_xml, load_config(data).robot, r.package_paths)
    variants = [("max_acceleration", dict(type="max_acceleration"))]
    for pair in args.jerks:
        lin, ang = (float(x) for x in pair.split(","))
        variants.append((f"jerk_limited {lin:g}/{ang:g}",
                         dict(type="jerk_limited", max_linear_jerk=lin, max_angular_jerk=ang)))
    print(f"panda.yaml, {node['control_rate_hz']:g} Hz; goal_smoothing speeds {node['goal_smoothing']['max_linear_speed']} "
          f"m/s / {node['goal_smoothing']['max_angular_speed']} rad/s, accelerations "
          f"{node['goal_smoothing']['max_linear_acceleration']} / {node['goal_smoothing']['max_angular_acceleration']}")
    for name, smoothing in variants:
        settings = settings_of(node, smoothing)
        s = step(scene, data, settings, 0.0)
        t = step(scene, data, settings, TURN)
        c = circle(scene, data, settings)
        opt = f", time-optimal target {s['optimum']:.3f} s" if "optimum" in s else ""
        print(f"\n{name}")
        print(f"  20 cm step: goal time {s['goal_time']:.3f} s{opt}; off the line {s['line'] * 1e3:.2f} mm; "
              f"overshoot {s['overshoot'] * 1e3:.3f} mm; peak accel/jerk {s['ratios'][0]:.3f} / {s['ratios'][1]:.3f}")
        opt = f", time-optimal target {t['optimum']:.3f} s" if "optimum" in t else ""
        print(f"  20 cm + {TURN} rad: goal time {t['goal_time']:.3f} s{opt}; off the line {t['line'] * 1e3:.2f} mm; "
              f"progress position vs rotation differs by {t['sync']:.3f} at most; overshoot {t['overshoot'] * 1e3:.3f} mm "
              f"/ {t['rot_overshoot'] * 1e3:.3f} mrad; "
              f"peak accel/jerk {t['ratios'][0]:.3f} / {t['ratios'][1]:.3f}")
        print(f"  50 Hz circle r {RADIUS * 100:g} cm: TCP to the latest goal max {c['max'] * 1e3:.2f} mm, rms "
              f"{c['rms'] * 1e3:.2f} mm; overshoot after it {c['overshoot'] * 1e3:.3f} mm; peak accel/jerk "
              f"{c['ratios'][0]:.3f} / {c['ratios'][1]:.3f}")


if __name__ == "__main__":
    main()
