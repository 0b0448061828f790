#!/usr/bin/env python3
"""Per-tick cost of the streaming inputs against a pose goal: the core's ControlLoop.tick on the Panda
with the shipped config/panda.yaml (every barrier, the table, the acceleration/jerk limit, the node's
goal smoothing and streaming keys), at 500 Hz, same run, no ROS.

Scenarios (each driven at 100 Hz input, the arm moving the whole time, a simulated position-
controlled robot that follows every command exactly, measured state = last command):
  pose   a pose-goal stream: goals on a circle (r 5 cm, period 4 s, y-z plane) through the goal
         smoother (max_acceleration): the smoother and its leash act at every tick
  twist  a TwistStamped-like stream: the same circle's velocity (TwistFollower, singularity scale, leash)
  jog    a joint jog of the posture task: panda_joint1 at 0.3 sin(2 pi t / 4) rad/s (JointJogFollower)
  hold   no input after the goal was reached (the floor: the QP step alone)
The scenarios run in --rounds interleaved blocks of --ticks ticks (each after --warmup untimed ticks
from the same start), so slow phases of the shared machine hit every scenario alike. Timed: one
``loop.tick(now)`` (measurement accepted before it, untimed), and separately its ``_advance_targets``
part (what the stream adds before the QP: the followers, the leash's kinematics, the singularity scale).
Printed: p50/p99 per scenario and the ratios to ``pose`` (the figure the gap is about: twist / pose).
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np
import pinocchio as pin
import yaml

from common import machine_note, print_table, write_json

CONFIG = Path(__file__).resolve().parents[1] / "roboplan_ik_ros" / "config" / "panda.yaml"
SCENARIOS = ("pose", "twist", "jog", "hold")
RADIUS, PERIOD, INPUT_EVERY = 0.05, 4.0, 5  # [m], [s], ticks between inputs (500 Hz / 100 Hz)


def build_loop(drop=()):
    from roboplan_ik_ros.core.config import load_config
    from roboplan_ik_ros.core.control.control_loop import ControlLoop
    from roboplan_ik_ros.core.model.robots import load_example_robot
    from roboplan_ik_ros.core.model.scene_config import scene_from_config
    from roboplan_ik_ros.node.node_config import load_node_config

    data = yaml.safe_load(CONFIG.read_text())
    data["barriers"] = [b for b in data["barriers"] if b["name"] not in drop]
    config = load_config(data)
    robot = load_example_robot("panda")
    scene = scene_from_config(robot.urdf_xml, robot.srdf_xml, config.robot, robot.package_paths, config.obstacles)
    settings = load_node_config(data.get("node"))
    settings.streaming.command_in_type = "speed_units"
    return ControlLoop(scene, config, settings), scene


class Run:
    """One scenario on a fresh start: the loop activated at the SRDF default pose."""

    def __init__(self, loop, scene, q0: np.ndarray) -> None:
        self.loop, self.scene = loop, scene
        self.t = 0.0
        self.q = q0.copy()
        self._measure()
        assert loop.activate(self.t) == "", "activation failed"
        self.k = 0
        self.T0 = scene.frame_pose(self.q, "panda_hand_tcp")

    def _measure(self) -> None:
        self.loop.measurement_buffer[:] = self.q
        self.loop.accept_measurement(self.t)

    def tick(self, scenario: str, timed: list | None, timed_targets: list | None) -> None:
        loop, dt = self.loop, self.loop.dt
        self.t += dt
        self._measure()
        if self.k % INPUT_EVERY == 0:
            self._input(scenario)
        t0 = time.perf_counter()
        res = loop.tick(self.t)
        t1 = time.perf_counter()
        if timed is not None:
            timed.append(t1 - t0)
            timed_targets.append(loop.bench_advance_s)
        if res.publish:
            self.q[:] = res.command
        self.k += 1

    def _input(self, scenario: str) -> None:
        loop, t = self.loop, self.t
        phase = 2.0 * math.pi * t / PERIOD
        if scenario == "pose":
            p = self.T0.translation + RADIUS * np.array([0.0, math.cos(phase) - 1.0, math.sin(phase)])
            loop.set_pose_goal("ee", pin.SE3(self.T0.rotation, p))
        elif scenario == "twist":
            w = 2.0 * math.pi / PERIOD
            loop.set_twist("ee", RADIUS * w * np.array([0.0, -math.sin(phase), math.cos(phase)]), np.zeros(3), t)
        elif scenario == "jog":
            dq = np.zeros(7)
            dq[0] = 0.3 * math.sin(phase)
            loop.set_joint_velocities("posture", dq, t)
        elif scenario == "hold" and self.k == 0:
            loop.set_pose_goal("ee", self.T0)


def instrument(loop) -> None:
    """Time ``_advance_targets`` inside each tick (the wrapper costs ~0.2 us, in both figures)."""
    inner = loop._advance_targets

    def timed(q, now):
        t0 = time.perf_counter()
        inner(q, now)
        loop.bench_advance_s = time.perf_counter() - t0

    loop._advance_targets = timed
    loop.bench_advance_s = 0.0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ticks", type=int, default=1000, help="timed ticks per scenario and round")
    p.add_argument("--warmup", type=int, default=300, help="untimed ticks before each block")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--drop", nargs="*", default=[], metavar="BARRIER",
                   help="barriers of panda.yaml to leave out (the e2e tests drop self_collision)")
    p.add_argument("--json", help="write the rows here")
    args = p.parse_args()
    print(machine_note())
    times = {s: [] for s in SCENARIOS}
    targets = {s: [] for s in SCENARIOS}
    modes = {s: set() for s in SCENARIOS}
    for r in range(args.rounds):
        for s in SCENARIOS:
            loop, scene = build_loop(args.drop)  # a fresh loop per block: every scenario starts from rest
            instrument(loop)
            run = Run(loop, scene, scene.named_configuration("default"))
            for _ in range(args.warmup):
                run.tick(s, None, None)
            for _ in range(args.ticks):
                run.tick(s, times[s], targets[s])
            modes[s].add(loop.mode)
            code, _ = loop.motion_limit(run.t)
            if code and code != "":
                modes[s].add(f"motion_limit {code}")
    rows, out = [], []
    base = {k: np.percentile(np.asarray(times["pose"]) * 1e6, q) for k, q in (("p50", 50), ("p99", 99))}
    base_t = {k: np.percentile(np.asarray(targets["pose"]) * 1e6, q) for k, q in (("p50", 50), ("p99", 99))}
    for s in SCENARIOS:
        us, ut = np.asarray(times[s]) * 1e6, np.asarray(targets[s]) * 1e6
        p50, p99, t50, t99 = (float(np.percentile(us, 50)), float(np.percentile(us, 99)),
                              float(np.percentile(ut, 50)), float(np.percentile(ut, 99)))
        rows.append([s, f"{p50:.1f}", f"{p99:.1f}", f"{p50 / base['p50']:.2f}", f"{p99 / base['p99']:.2f}",
                     f"{t50:.1f}", f"{t99:.1f}", f"{t50 / base_t['p50']:.2f}", ", ".join(sorted(modes[s]))])
        out.append({"scenario": s, "tick_p50_us": p50, "tick_p99_us": p99, "targets_p50_us": t50,
                    "targets_p99_us": t99, "ticks": len(us)})
    dropped = f" without {', '.join(args.drop)}" if args.drop else ""
    print_table(f"ControlLoop.tick, Panda, shipped panda.yaml{dropped}, 500 Hz, {args.rounds} x {args.ticks} ticks per "
                "scenario (interleaved), same run",
                ["input", "tick p50 us", "tick p99 us", "p50 / pose", "p99 / pose", "targets p50 us",
                 "targets p99 us", "targets p50 / pose", "state at the end"], rows)
    write_json(args.json, out)


if __name__ == "__main__":
    main()
