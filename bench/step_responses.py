#!/usr/bin/env python3
"""Step responses of shaped goals (issue 30): a ``joint`` task stepped 0.8 rad on panda_joint4, a posture
(configuration task) stepped 0.5 rad on the same joint, a ``look_at`` turned 90 deg; the core's ControlLoop
at 500 Hz on a Panda that follows every command exactly, the shipped panda.yaml's limits (Franka's v/a/j from
panda_joint_limits.yaml, its node: section), no barriers.

Printed per step: overshoot (rad, or the largest pointing error after first coming within 1 deg), the time to
stay within 1 mrad, the time-optimal jerk-limited duration Ruckig computes for the same move (joint and
posture: that joint under Franka's v/a/j, the posture at its max_target_speed; look_at: the 7 joints from the
start to the configuration the loop ends at, phase-synchronized, Franka's v/a/j) and the ratio, the peak
acceleration and jerk of the command stream as a share of Franka's bounds. ``--plot PATH`` draws the three
responses (docs/figures/step_responses.png). ``--tick-cost`` times 10k ticks of a 100 Hz joint-goal stream shaped, the
same stream set on the task unshaped (what set_task_target did before) and the loop at rest (one process; p50).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
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
SETTLE = 1e-3  # [rad] "settled": within this of the goal (the pointing angle for look_at) from then on
J4 = 3  # panda_joint4's index in the group
POSTURE = dict(name="posture", type="configuration", target="default", weights=0.05, max_target_speed=0.5)
FRAME, LOOK_DISTANCE = "panda_hand_tcp", 1.0  # [m] look_at: the point ahead and the goal are this far


def build_loop(tasks: list[dict]) -> ControlLoop:
    """panda.yaml with these tasks and no barriers; its node: section's loop keys."""
    data = yaml.safe_load(CONFIG.read_text())
    data["barriers"], data["tasks"] = [], tasks
    node = data.pop("node")
    keys = {f for f in LoopConfig.__dataclass_fields__} - {"goal_smoothing", "streaming"}
    settings = LoopConfig(**{k: v for k, v in node.items() if k in keys},
                          goal_smoothing=GoalSmoothingConfig(**node["goal_smoothing"]),
                          streaming=StreamingConfig(**node["streaming"]))
    config = load_config(data)
    r = load_example_robot("panda")
    scene = scene_from_config(r.urdf_xml, r.srdf_xml, config.robot, r.package_paths)
    return ControlLoop(scene, config, settings)


def optimum(q0: np.ndarray, q1: np.ndarray, v_max, a_max, j_max, dt: float) -> float:
    """[s] Ruckig's time-optimal jerk-limited, phase-synchronized duration from rest at q0 to rest at q1."""
    n = len(q0)
    otg, inp, out = Ruckig(n, dt), InputParameter(n), OutputParameter(n)
    inp.current_position, inp.target_position = q0, q1
    inp.max_velocity = np.broadcast_to(np.asarray(v_max, dtype=float), (n,)).copy()
    inp.max_acceleration = np.broadcast_to(np.asarray(a_max, dtype=float), (n,)).copy()
    inp.max_jerk = np.broadcast_to(np.asarray(j_max, dtype=float), (n,)).copy()
    otg.update(inp, out)
    return out.trajectory.duration


class Step:
    """One step response: the loop, the robot that follows, what is recorded per tick."""

    def __init__(self, loop: ControlLoop) -> None:
        self.loop, self.t = loop, 0.0
        self.q = loop.scene.named_configuration("default")
        self.q0 = self.q.copy()
        self._measure()
        assert loop.activate(self.t) == ""
        self.commands: list[np.ndarray] = []

    def _measure(self) -> None:
        self.loop.state.incoming[:] = self.q
        assert self.loop.state.accept(self.t) == ""

    def run(self, seconds: float, record) -> np.ndarray:
        g = self.loop.group.q_indices
        values = []
        for _ in range(int(round(seconds / self.loop.dt))):
            self.t += self.loop.dt
            self._measure()
            res = self.loop.tick(self.t)
            assert res.publish
            self.q[g] = res.command[g]
            self.commands.append(self.q[g].copy())
            values.append(record(self.q))
        return np.array(values)

    def peak_ratios(self) -> tuple[float, float]:
        """Peak |acceleration| / a_max and |jerk| / j_max over the commands (finite differences at dt)."""
        c, dt, accel = np.array(self.commands), self.loop.dt, self.loop.acceleration_limit
        acc = np.abs(np.diff(c, n=2, axis=0)).max(axis=0) / dt**2 / accel.a_max
        jerk = np.abs(np.diff(c, n=3, axis=0)).max(axis=0) / dt**3 / accel.j_max
        return float(acc.max()), float(jerk.max())


def settle_time(error: np.ndarray, dt: float, band: float = SETTLE) -> float:
    """[s] from the goal until |error| stays within ``band``."""
    far = np.flatnonzero(np.abs(error) > band)
    return (0 if far.size == 0 else far[-1] + 1) * dt


def joint_step(seconds: float = 2.0) -> dict:
    loop = build_loop([dict(name="j4", type="joint", joints=["panda_joint4"], priority=1), dict(POSTURE, priority=2)])
    s = Step(loop)
    goal = s.q0[loop.group.q_indices].copy()
    goal[J4] += 0.8
    loop.set_task_target("j4", goal)
    e = s.run(seconds, lambda q: q[J4] - goal[J4])
    accel = loop.acceleration_limit
    t_opt = optimum([0.0], [0.8], loop.guard.v_max[J4], accel.a_max[J4], accel.j_max[J4], loop.dt)
    return dict(name="joint 0.8 rad", error=e, overshoot=max(0.0, float(e.max())), settle=settle_time(e, loop.dt),
                optimum=t_opt, ratios=s.peak_ratios(), dt=loop.dt, unit="rad", step=0.8)


def posture_step(seconds: float = 2.0) -> dict:
    loop = build_loop([dict(POSTURE, priority=1)])
    s = Step(loop)
    goal = s.q0[loop.group.q_indices].copy()
    goal[J4] += 0.5
    loop.set_joint_goal("posture", goal)
    e = s.run(seconds, lambda q: q[J4] - goal[J4])
    accel = loop.acceleration_limit
    t_opt = optimum([0.0], [0.5], POSTURE["max_target_speed"], accel.a_max[J4], accel.j_max[J4], loop.dt)
    return dict(name="posture 0.5 rad", error=e, overshoot=max(0.0, float(e.max())), settle=settle_time(e, loop.dt),
                optimum=t_opt, ratios=s.peak_ratios(), dt=loop.dt, unit="rad", step=0.5)


def look_at_step(seconds: float = 2.0, keys: dict | None = None) -> dict:
    loop = build_loop([dict(name="look", type="look_at", frame=FRAME, axis="z", priority=1, **(keys or {})),
                       dict(POSTURE, priority=2)])
    s = Step(loop)
    scene = loop.scene
    T0 = scene.frame_pose(s.q0, FRAME)
    ahead = T0.rotation[:, 2]  # the hand's z axis (down at 'default')
    side = np.cross(ahead, [0.0, 1.0, 0.0])
    side /= np.linalg.norm(side)  # 90 deg from it, in the arm's vertical plane
    goal = T0.translation + LOOK_DISTANCE * side
    loop.set_task_target("look", goal)

    def angle(q):
        T = scene.frame_pose(q, FRAME)
        d = goal - T.translation
        return math.acos(float(np.clip(T.rotation[:, 2] @ d / np.linalg.norm(d), -1.0, 1.0)))

    a = s.run(seconds, angle)
    within = np.flatnonzero(a <= math.radians(1.0))
    after = float(a[within[0]:].max()) if within.size else math.inf
    accel, g = loop.acceleration_limit, loop.group.q_indices
    t_opt = optimum(s.q0[g], s.q[g], loop.guard.v_max, accel.a_max, accel.j_max, loop.dt)
    return dict(name="look_at 90 deg", error=a, overshoot=after, settle=settle_time(a, loop.dt), optimum=t_opt,
                ratios=s.peak_ratios(), dt=loop.dt, unit="rad (pointing)", step=math.pi / 2)


def tick_cost(ticks: int = 10000) -> tuple[float, float, float]:
    """[us] p50 of one tick with a 100 Hz stream of joint goals (the shaper replans on each goal and samples
    every tick), p50 of its shaping part (``_advance_targets``), and p50 of a tick of the same loop at rest."""
    loop = build_loop([dict(name="j4", type="joint", joints=["panda_joint4"], priority=1), dict(POSTURE, priority=2)])
    s = Step(loop)
    base = s.q0[loop.group.q_indices].copy()
    g = loop.group.q_indices
    shaping = []
    advance = loop._advance_targets

    def timed_advance(q, now):
        t0 = time.perf_counter()
        advance(q, now)
        shaping.append(time.perf_counter() - t0)

    loop._advance_targets = timed_advance

    def timed(n, goal_every, shaped=True):
        out = np.zeros(n)
        for k in range(n):
            if goal_every and k % goal_every == 0:
                goal = base.copy()
                goal[J4] += 0.3 * math.sin(2 * math.pi * k * loop.dt)  # a 1 Hz stream of goals at 100 Hz
                if shaped:
                    loop.set_task_target("j4", goal)
                else:  # before shaping: set_task_target set the task's target as it came
                    loop.ctrl.tasks["j4"].set_target(goal)
            s.t += loop.dt
            s._measure()
            t0 = time.perf_counter()
            res = loop.tick(s.t)
            out[k] = time.perf_counter() - t0
            s.q[g] = res.command[g]
        return float(np.median(out)) * 1e6

    streaming = timed(ticks, 5)
    part = float(np.median(shaping)) * 1e6
    s.run(2.0, lambda q: 0.0)  # come to rest
    still = timed(ticks, 0)
    s.run(2.0, lambda q: 0.0)
    unshaped = timed(ticks, 5, shaped=False)
    return streaming, part, still, unshaped


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--plot", type=Path, help="write the step responses here (PNG)")
    p.add_argument("--tick-cost", action="store_true", help="also time 10k ticks with and without shaping")
    args = p.parse_args()
    results = [joint_step(), posture_step(), look_at_step()]
    print(f"{'step':16s} {'overshoot':>12s} {'settle 1mrad':>13s} {'optimum':>8s} {'ratio':>6s} {'accel/a_max':>12s} "
          f"{'jerk/j_max':>11s}")
    for r in results:
        over = (f"{math.degrees(r['overshoot']):.3f} deg" if r["name"].startswith("look") else
                f"{r['overshoot'] * 1e3:.3f} mrad")
        print(f"{r['name']:16s} {over:>12s} {r['settle']:>11.3f} s {r['optimum']:>6.3f} s {r['settle'] / r['optimum']:>6.2f} "
              f"{r['ratios'][0]:>12.3f} {r['ratios'][1]:>11.3f}")
    print("look_at overshoot: the largest pointing error after first coming within 1 deg")
    if args.tick_cost:
        streaming, part, still, unshaped = tick_cost()
        print(f"tick p50: {streaming:.1f} us with a shaped 100 Hz joint-goal stream, of which _advance_targets "
              f"{part:.1f} us; {unshaped:.1f} us with the goals set on the task unshaped (as before); {still:.1f} us "
              "at rest")
    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, axes = plt.subplots(2, 3, figsize=(13, 6.4), sharex=True)
        for col, r in enumerate(results):
            t = np.arange(1, len(r["error"]) + 1) * r["dt"]
            look = r["name"].startswith("look")
            progress = 1.0 - r["error"] / r["step"] if look else 1.0 + r["error"] / r["step"]  # 0 -> 1
            top, bottom = axes[0, col], axes[1, col]
            top.plot(t, progress, label="response")
            top.axhline(1.0, color="grey", lw=0.5)
            top.set_title(r["name"])
            bottom.semilogy(t, np.maximum(np.abs(r["error"]), 1e-9), label="|error| [rad]")
            bottom.axhline(SETTLE, color="r", lw=0.8, label="1 mrad")
            bottom.set_ylim(1e-7, 2.0)
            bottom.set_xlabel("t [s]")
            for ax in (top, bottom):
                ax.axvline(r["optimum"], color="k", ls=":", label=f"time-optimal {r['optimum']:.3f} s")
                ax.axvline(r["settle"], color="g", ls="--", label=f"within 1 mrad {r['settle']:.3f} s")
                ax.set_xlim(0, 1.5)
                ax.legend(loc="lower right" if ax is top else "upper right", fontsize=8)
        axes[0, 0].set_ylabel("fraction of the step")
        axes[1, 0].set_ylabel("|error| (look_at: pointing angle)")
        fig.suptitle("Shaped step goals, Panda, panda.yaml limits (Franka v/a/j), 500 Hz, robot follows every command")
        fig.tight_layout()
        args.plot.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(args.plot, dpi=110)
        print(f"wrote {args.plot}")


if __name__ == "__main__":
    main()
