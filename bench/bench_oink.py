#!/usr/bin/env python3
"""OInK closed-loop benchmark: ours vs RoboPlan Oink vs pink (daqp, osqp), same run.

Scenario: --steps control steps at dt = --dt (default 2000 x 0.01 s). The tip tracks a circle of
radius --radius (0.1 m) in the world y-z plane, centred at the tip's start position, period --period
(4 s), orientation fixed at the start orientation:
    target_k = c + r (0, cos(2 pi k dt / T), sin(2 pi k dt / T)),  k = 0 .. steps-1
so the first target is r away from the start (a short transient, excluded from "steady").
Start = SRDF "default" state (Panda); robots without one (UR5) start at --start or a fixed elbow-up pose.
Configs:
  (a) FrameTask (pos/rot cost 1) + ConfigurationTask (priority 2, weight 0.05, target = start)
      + PositionLimit (gain 1) + VelocityLimit (URDF v_max); regularization 1e-6
  (b) (a) + PositionBarrier on the tip: box c +- 0.5 m except z_max = c_z + r - --cut (cuts the top
      3 cm of the circle)
  (c) (b) + SelfCollisionBarrier (4 closest pairs, d_min 0.02, safe_displacement_gain --scb-safe-gain, 1e-4)
Barrier gains are the libraries' common defaults (gain 1, safe_displacement_gain 1); pink's class-K
function is linear (h) where RoboPlan/ours use h/(1+|h|).
Each step: set target, solve, enforce barriers (ours/RoboPlan, tolerance 1e-4), integrate.
Timed: solve + enforce only (pink: Configuration.update + solve_ik; pink has no enforce step);
integration excluded for every peer. Each peer runs its whole loop in turn (warm caches, as in a controller process that runs only that
solver); --interleave alternates them step by step instead.
Metrics (checker = own pinocchio FK + raw-mesh collision model, see common.py):
  track error = |p_tip(after step k) - target_k|; steady = median over the last 75 % of steps,
  max = max over the same window; q-lim = steps with a joint outside limits (1e-9);
  dq = steps with |dq| > dt v_max + 1e-9; box = steps with the tip outside the box by > 1e-4 m;
  coll = steps with closest mesh distance < d_min - 1e-3; margins = smallest over all steps.
"""

from __future__ import annotations

import argparse
import traceback

import numpy as np
import pinocchio as pin

from common import Robot, add_common_args, fmt, import_core, print_ratios, print_table, robot_specs, time_stats, write_json
from peers import OinkSetup, OursOink, PinkOink, RoboPlanOink, pink_solvers

UR5_START = [0.0, -1.57, 1.57, -1.57, -1.57, 0.0]


def make_peers(robot, setup, q0, T0, core, core_err, pink_have) -> list:
    makers = []
    if core is not None:
        makers.append(("ours", lambda: OursOink(robot, core, setup, q0, T0)))
    makers.append(("roboplan", lambda: RoboPlanOink(robot, setup, q0, T0)))
    for s in pink_have:
        makers.append((f"pink+{s}", lambda s=s: PinkOink(robot, setup, q0, T0, s)))
    peers = []
    for name, make in makers:
        try:
            peers.append(make())
        except Exception as exc:  # report precisely, keep the other peers running
            print(f"  [{name} ({setup.config}) failed to build: {type(exc).__name__}: {exc}]")
            traceback.print_exc(limit=-2)
    return peers


def _schedule(peers, n_steps: int, sequential: bool):
    """(step, peer) pairs: interleaved step by step in rotating order, or each peer's whole loop in turn."""
    if sequential:
        return ((k, p) for p in peers for k in range(n_steps))
    return ((k, p) for k in range(n_steps) for p in peers[k % len(peers):] + peers[: k % len(peers)])


def run_config(robot, setup, q0, T0, targets, core, core_err, pink_have, sequential=True) -> list[dict]:
    peers = make_peers(robot, setup, q0, T0, core, core_err, pink_have)
    traj = {p.name: [] for p in peers}
    times = {p.name: [] for p in peers}
    dead = {}
    for k, p in _schedule(peers, len(targets), sequential):
        if p.name in dead:
            continue
        try:
            p.set_target(targets[k])
            times[p.name].append(p.step())
            traj[p.name].append(np.array(p.values(), dtype=float))
        except Exception as exc:
            dead[p.name] = f"step {k}: {type(exc).__name__}: {exc}"
            print(f"  [{p.name} crashed at {dead[p.name]}]")
            traceback.print_exc(limit=-2)
    return [metrics(robot, setup, p, q0, targets, traj[p.name], times[p.name], dead.get(p.name)) for p in peers]


def metrics(robot, setup, peer, q0, targets, traj, times, crash) -> dict:
    n = len(traj)
    start = len(targets) // 4
    err, box_m, dist = [], [], []
    for v, T in zip(traj, targets):
        p = robot.tip_pose(v).translation
        err.append(np.linalg.norm(p - T.translation))
        box_m.append(min(np.min(p - setup.box_min), np.min(setup.box_max - p)))
        if setup.config == "c" or not setup.skip_dist:
            dist.append(robot.min_distance(v))
    err, box_m, dist = np.array(err), np.array(box_m), np.array(dist)
    qs = np.array([q0] + traj)
    dq = np.abs(qs[1:] - qs[:-1])
    dq = np.where(robot.continuous, np.abs((dq + np.pi) % (2 * np.pi) - np.pi), dq)
    steady = err[start:] if n > start else err
    barrier_box, barrier_col = setup.config in "bc", setup.config == "c"
    return {"name": peer.name, "robot": robot.spec.name, "n": n, "config": setup.config,
            "success_rate": (n - peer.failures) / len(targets), **time_stats(times),
            "track_steady_mm": 1e3 * float(np.median(steady)) if n else None,
            "track_max_mm": 1e3 * float(np.max(steady)) if n else None,
            "qlim_violations": int(sum(not robot.within_limits(v) for v in traj)),
            "dq_violations": int(np.sum(np.any(dq > setup.dt * robot.v_max + 1e-9, axis=1))),
            "dq_max_excess": float(np.max(dq - setup.dt * robot.v_max)) if n else None,
            "box_violations": int(np.sum(box_m < -1e-4)) if barrier_box else None,
            "coll_violations": int(np.sum(dist < setup.d_min - 1e-3)) if barrier_col else None,
            "box_margin_mm": 1e3 * float(box_m.min()) if n else None,
            "coll_margin_mm": 1e3 * float(dist.min() - setup.d_min) if dist.size else None,
            "solver_failures": peer.failures, "crash": crash}


def run_robot(spec, args, core, core_err, pink_have) -> list[dict]:
    robot = Robot(spec)
    if args.start:
        q0 = np.array([float(x) for x in args.start.split(",")])
    elif robot.ref_source.startswith("SRDF") or spec.name != "ur5":
        q0 = robot.values(robot.q_ref)
    else:
        q0 = np.array(UR5_START)
    T0 = robot.tip_pose(q0)
    c, r, w = T0.translation, args.radius, 2 * np.pi / args.period
    targets = [pin.SE3(T0.rotation, c + r * np.array([0.0, np.cos(w * k * args.dt), np.sin(w * k * args.dt)]))
               for k in range(args.steps)]
    box_min = c - 0.5
    box_max = c + np.array([0.5, 0.5, r - args.cut])
    print(f"\n== {spec.name}: start {np.round(q0, 4).tolist()}, tip {spec.tip_frame} at {np.round(c, 4).tolist()}; "
          f"circle r={r} m in y-z, period {args.period} s, {args.steps} steps x {args.dt} s; "
          f"box z_max = c_z + {r - args.cut:.3f} m")
    rows = []
    for cfg in args.configs:
        setup = OinkSetup(cfg, args.dt, box_min, box_max, scb_safe_gain=args.scb_safe_gain)
        setup.skip_dist = args.fast
        rows += run_config(robot, setup, q0, T0, targets, core, core_err, pink_have, not args.interleave)
    cols = ["peer", "median µs", "p99 µs", "steady mm", "max mm", "q-lim", "dq", "box", "coll", "box margin mm",
            "coll margin mm", "QP fails"]
    print_table(f"OInK closed loop — {spec.name} (timed: solve + enforce; integrate excluded)", cols,
                [[r["name"] + (" CRASHED" if r["crash"] else ""), fmt(r["median_us"]), fmt(r["p99_us"]),
                  fmt(r["track_steady_mm"], ".4f"), fmt(r["track_max_mm"], ".4f"), str(r["qlim_violations"]),
                  str(r["dq_violations"]), fmt(r["box_violations"], "d"), fmt(r["coll_violations"], "d"),
                  fmt(r["box_margin_mm"], ".2f"), fmt(r["coll_margin_mm"], ".2f"), str(r["solver_failures"])]
                 for r in rows])
    pairs = []
    for cfg in args.configs:
        ours = next((r for r in rows if r["name"] == f"ours ({cfg})"), None)
        for r in rows:
            if ours and r["config"] == cfg and r is not ours:
                pairs.append((f"{spec.name} ({cfg}) vs {r['name']}", "median step", ours["median_us"], r["median_us"]))
    if pairs:
        print_ratios("ratios:", pairs)
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_args(p, default_robot="panda")
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--dt", type=float, default=0.01)
    p.add_argument("--radius", type=float, default=0.1)
    p.add_argument("--period", type=float, default=4.0)
    p.add_argument("--cut", type=float, default=0.03, help="[m] box top below the circle's top")
    p.add_argument("--configs", default="abc")
    p.add_argument("--start", help="comma-separated start joint values (group order)")
    p.add_argument("--scb-safe-gain", type=float, default=1e-4,
                   help="SelfCollisionBarrier safe_displacement_gain for every peer (library default 1.0 makes the "
                        "r/||J||^2 term outweigh tracking: every peer then stays at the start, 100 mm behind)")
    p.add_argument("--interleave", action="store_true",
                   help="interleave the peers step by step (rotating order) instead of running each peer's whole "
                        "loop in turn; every peer then runs with cold caches, Python ones lose 2-5x")
    p.add_argument("--fast", action="store_true", help="measure mesh distances only for config (c)")
    args = p.parse_args()
    core, core_err = import_core()
    if core is None:
        print(f"[ours skipped: roboplan_ik_ros.core not importable: {core_err}]")
    pink_have, note = pink_solvers()
    if note:
        print(f"[{note}]")
    rows = []
    for spec in robot_specs(args):
        rows += run_robot(spec, args, core, core_err, pink_have)
    write_json(args.json, rows)


if __name__ == "__main__":
    main()
