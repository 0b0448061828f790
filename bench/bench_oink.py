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
  (d) (c) + a cell: a table, two walls and 20 random primitives (seeded, --obstacle-seed; see
      common.cell_obstacles), in the core's Scene with our obstacle barrier (CollisionBarrier pairs
      "obstacles", 4 closest pairs, d_min 0.02) and added to RoboPlan's Scene (addBox/Sphere/
      CylinderGeometry; a capsule as its bounding cylinder) whose SelfCollisionBarrier is all it has:
      the obs column (steps closer than d_min - 1 mm to an obstacle, checker: raw meshes) shows
      whether a peer's barrier keeps clear of them. pink is not run for (d).
  (e) (c) + AccelerationLimit (a_max per joint: the Panda's from config/panda_joint_limits.yaml, else
      --a-max for every joint; no jerk bound: RoboPlan's has none). RoboPlan's AccelerationLimit is
      fed the last velocity (setLastVelocity), ours the last two increments (set_history) and its
      barrier rows brake within the bound (brake_barriers_for). pink is not run for (e).
Near obstacles (--near-configs, default "cdp"; Panda only): (c) and (d) again from a start with the hand low
  (NEAR_START: TCP 16 cm over the base plane), a table 7 cm under the TCP and a box 19 cm beside it
  (+y): the circle runs into both, and at least five pairs of each collision barrier are within its
  broad_phase_cutoff (0.2 m) all along (printed: pairs within the cutoff at the start and min/median/max
  over the run, self pairs for (c) and (d), obstacle pairs for (d); the obstacles are in (d) only). Ours
  runs twice, rows_per_pair 1 (RoboPlan's form, the class default the rows above use) and the config's
  default (CollisionBarrierConfig.rows_per_pair), same run; the ratio lines compare each with RoboPlan and the two
  with each other. Targets (both rows_per_pair, hot and paced): (d near) <= 0.15x RoboPlan, (p near) <= 0.3x.
  (p near) = (c near) + the same table and box as a perceived cloud instead of primitives: NEAR_CLOUD_POINTS
  points on their visible faces (2 mm noise, seeded), voxel-filtered at 2 cm into a coal OcTree (the shipped
  perception's voxel_size and octree_resolution); ours: the core Scene's perceived cloud and a CollisionBarrier
  pairs "perceived" (4 pairs, d_min 0.02); RoboPlan: the same octree's leaves (rc.OcTree from toBoxes(), same
  resolution) added to its Scene (addOcTreeGeometry), its SelfCollisionBarrier the only barrier (4 pairs: robot
  and octree pairs together). The obs columns are then the cloud: steps closer than d_min - 1 mm to it and the
  smallest margin (the solvers' convex hulls against the octree, every step, coal). pink is not run for (p).
Barrier gains are the libraries' common defaults (gain 1, safe_displacement_gain 1); pink's class-K
function is linear (h) where RoboPlan/ours use h/(1+|h|).
Each step: set target, solve, enforce barriers (ours/RoboPlan, tolerance 1e-4), integrate.
Timed: solve + enforce only (pink: Configuration.update + solve_ik; pink has no enforce step);
integration excluded for every peer. Two timings, both by default (--hot / --paced: only one):
  hot    each peer runs its whole loop back to back (warm caches, as in a process that runs only that
         solver); --interleave alternates the peers step by step instead.
  paced  each peer runs its whole loop at one step per --pace-ms (2 ms = the node's 500 Hz), sleeping
         between steps on an absolute schedule (as node/loop_thread.py does): caches go cold between
         steps, as in the node. The scenario (dt, targets) is the same as the hot loop's, so the
         trajectories are identical (checked; the table says so) and only the step times differ.
Ours: with the core's solver.qp_solver key (daqp | osqp), one row per backend (--qp-solver picks one);
before that key exists, one "ours" row (the solver's built-in QP).
--weighted-nullspace: ours again with solver.weighted_nullspace on ("wns" rows), same run; every cost of
the scenario is nonzero, so the trajectory is the same and the row times the mask's overhead.
Targets (same run, median step ours / RoboPlan, hot and paced): (a) <= 1.5x, (b) <= 0.8x, (c) <= 0.3x,
(d) <= 0.3x, (e) <= 0.3x; near obstacles (below) (d near) <= 0.15x, (p near) <= 0.3x.
Metrics (checker = own pinocchio FK + raw-mesh collision model, see common.py):
  track error = |p_tip(after step k) - target_k|; steady = median over the last 75 % of steps,
  max = max over the same window; q-lim = steps with a joint outside limits (1e-9);
  dq = steps with |dq| > dt v_max + 1e-9; box = steps with the tip outside the box by > 1e-4 m;
  coll = steps with closest mesh distance < d_min - 1e-3; margins = smallest over all steps;
  acc/a_max = peak |second difference of q| / (a_max dt^2) over all steps ((e) only).
"""

from __future__ import annotations

import argparse
import time
import traceback

import numpy as np
import pinocchio as pin

from common import (Robot, add_common_args, cell_obstacles, obstacle_checker, core_qp_solvers, fmt, import_core, machine_note, print_ratios, print_table,
                    robot_specs, time_stats, verdict, write_json)
from peers import OinkSetup, OursOink, PinkOink, RoboPlanOink, collision_pairs_line, pink_solvers

UR5_START = [0.0, -1.57, 1.57, -1.57, -1.57, 0.0]
TARGETS = {"a": 1.5, "b": 0.8, "c": 0.3, "d": 0.3, "e": 0.3}  # (b) 0.8x since "A cell at full rate" (was 2x)
# near obstacles ("A cell at full rate"): ours with every rows_per_pair run (RoboPlan's form 1 and the config's
# default) against RoboPlan, hot and paced
NEAR_TARGETS = {"d": 0.15, "p": 0.3}
OWN_C_TARGET = 1.5  # (d) <= 1.5x our own (c) when RoboPlan's barrier ignores the obstacles  # median step ours / RoboPlan, same run, hot and paced
TIMINGS = ("hot", "paced")
FAR_FROM_BOX = 0.05  # [m] "far mm": median error over steady steps whose target is this far inside the box
NEAR_START = [0.0, 0.2, 0.0, -2.3, 0.0, 2.5, 0.785]  # Panda: the hand low, TCP at (0.53, 0, 0.16) m
NEAR_CLOUD_POINTS = 20000  # (p near): points of the perceived cloud before the voxel filter
NEAR_CLOUD_VOXEL = 0.02  # [m] voxel filter and octree resolution (panda.yaml's perception defaults)


def make_peers(robot, setup, q0, T0, core, core_err, pink_have, qp_solvers=(None,), rows_per_pair=(None,),
               fades=(None,), weighted=(False,)) -> list:
    makers = []
    if core is not None:
        for qs in qp_solvers:
            for rpp in rows_per_pair:
                for fade in fades:
                    for wns in weighted:
                        makers.append((f"ours+{qs}" if qs else "ours",
                                       lambda qs=qs, rpp=rpp, fade=fade, wns=wns: OursOink(
                                           robot, core, setup, q0, T0, qs, rows_per_pair=rpp, fade=fade,
                                           weighted_nullspace=wns)))
    makers.append(("roboplan", lambda: RoboPlanOink(robot, setup, q0, T0)))
    for s in ([] if setup.acceleration or setup.obstacles or setup.cloud is not None else pink_have):
        makers.append((f"pink+{s}", lambda s=s: PinkOink(robot, setup, q0, T0, s)))
    peers = []
    for name, make in makers:
        try:
            peers.append(make())
        except Exception as exc:  # report precisely, keep the other peers running
            print(f"  [{name} ({setup.label}) failed to build: {type(exc).__name__}: {exc}]")
            traceback.print_exc(limit=-2)
    return peers


def _schedule(peers, n_steps: int, sequential: bool):
    """(step, peer) pairs: interleaved step by step in rotating order, or each peer's whole loop in turn."""
    if sequential:
        return ((k, p) for p in peers for k in range(n_steps))
    return ((k, p) for k in range(n_steps) for p in peers[k % len(peers):] + peers[: k % len(peers)])


def run_loop(robot, setup, q0, T0, targets, core, core_err, pink_have, qp_solvers, timing, args, rows_per_pair=(None,)):
    """One timing ("hot" | "paced") of every peer from fresh solver objects: {name: (peer, traj, times, crash)}."""
    fades = (None,) if not getattr(args, "fade", 0.0) or not (setup.box or setup.self_collision) else \
        (None, (args.fade, args.fade_max_weight))
    weighted = (False, True) if getattr(args, "weighted_nullspace", False) else (False,)
    peers = make_peers(robot, setup, q0, T0, core, core_err, pink_have, qp_solvers, rows_per_pair, fades, weighted)
    traj = {p.name: [] for p in peers}
    times = {p.name: [] for p in peers}
    dead = {}
    pace = args.pace_ms * 1e-3
    paced = timing == "paced"
    next_start = {}
    for k, p in _schedule(peers, len(targets), paced or not args.interleave):
        if p.name in dead:
            continue
        if paced:  # absolute schedule, re-based after falling more than one period behind (as LoopThread)
            now = time.perf_counter()
            t_next = next_start.get(p.name, now)
            if t_next > now:
                time.sleep(t_next - now)
            elif now - t_next > pace:
                t_next = now
            next_start[p.name] = t_next + pace
        try:
            p.set_target(targets[k])
            times[p.name].append(p.step())
            traj[p.name].append(np.array(p.values(), dtype=float))
        except Exception as exc:
            dead[p.name] = f"step {k}: {type(exc).__name__}: {exc}"
            print(f"  [{p.name} ({timing}) crashed at {dead[p.name]}]")
            traceback.print_exc(limit=-2)
    return {p.name: (p, traj[p.name], times[p.name], dead.get(p.name)) for p in peers}


def run_config(robot, setup, q0, T0, targets, core, core_err, pink_have, args, qp_solvers=(None,),
               rows_per_pair=(None,), trajectories: dict | None = None) -> list[dict]:
    """Rows (one per peer and timing). Quality metrics come from the first timing's trajectory; the
    other timing's rows reuse them when its trajectory is the same (else they are computed again).
    ``trajectories``: filled with each peer's first-timing joint values per step, by name."""
    rows, first = [], {}
    for timing in args.timings:
        runs = run_loop(robot, setup, q0, T0, targets, core, core_err, pink_have, qp_solvers, timing, args,
                        rows_per_pair)
        for name, (peer, traj, times, crash) in runs.items():
            ref = first.get(name)
            same = (ref is not None and len(ref[1]) == len(traj) and
                    (not traj or float(np.max(np.abs(np.array(ref[1]) - np.array(traj)))) <= 1e-9))
            if same:
                row = {**ref[0], **time_stats(times), "n": len(traj), "crash": crash,
                       "solver_failures": peer.failures}
            else:
                row = metrics(robot, setup, peer, q0, targets, traj, times, crash)
            row.update(timing=timing, same_traj_as=(ref[0]["timing"] if same else None))
            if ref is None:
                first[name] = (row, traj)
                if trajectories is not None:
                    trajectories[name] = traj
            rows.append(row)
    return rows


def metrics(robot, setup, peer, q0, targets, traj, times, crash) -> dict:
    n = len(traj)
    start = len(targets) // 4
    err, box_m, dist = [], [], []
    for v, T in zip(traj, targets):
        p = robot.tip_pose(v).translation
        err.append(np.linalg.norm(p - T.translation))
        box_m.append(min(np.min(p - setup.box_min), np.min(setup.box_max - p)))
        if setup.self_collision or not setup.skip_dist:
            dist.append(robot.min_distance(v))
    err, box_m, dist = np.array(err), np.array(box_m), np.array(dist)
    qs = np.array([q0] + traj)
    dq = np.abs(qs[1:] - qs[:-1])
    dq = np.where(robot.continuous, np.abs((dq + np.pi) % (2 * np.pi) - np.pi), dq)
    steady = err[start:] if n > start else err
    # far / near the box: steady steps whose target is more / less than FAR_FROM_BOX inside it; near, the error
    # is measured to the target clamped into the box (what the barrier lets the tip reach)
    inside = np.array([min(np.min(T.translation - setup.box_min), np.min(setup.box_max - T.translation))
                       for T in targets[:n]])
    clamped = np.array([np.linalg.norm(robot.tip_pose(v).translation - np.clip(T.translation, setup.box_min,
                                                                                setup.box_max))
                        for v, T in zip(traj, targets)])
    far = (inside >= FAR_FROM_BOX)[start:] if n > start else inside >= FAR_FROM_BOX
    near_err = (clamped[start:] if n > start else clamped)[~far]
    barrier_box, barrier_col = setup.box, setup.self_collision
    obst = np.array([obstacle_checker(setup, robot).min_distance(v, robot) for v in traj]) if setup.obstacles else np.zeros(0)
    if setup.cloud is not None:  # (p): the obs columns are the cloud
        obst = cloud_distances(robot, setup, traj)
    acc = np.abs(np.diff(qs, n=2, axis=0)).max(axis=0) / (setup.dt**2 * setup.a_max) if setup.a_max is not None and n > 1 else None
    return {"name": peer.name, "robot": robot.spec.name, "n": n, "config": setup.config,
            "success_rate": (n - peer.failures) / len(targets), **time_stats(times),
            "track_steady_mm": 1e3 * float(np.median(steady)) if n else None,
            "track_max_mm": 1e3 * float(np.max(steady)) if n else None,
            "track_far_mm": 1e3 * float(np.median(steady[far])) if far.any() else None,
            "track_near_mm": 1e3 * float(np.median(near_err)) if near_err.size else None,
            "qlim_violations": int(sum(not robot.within_limits(v) for v in traj)),
            "dq_violations": int(np.sum(np.any(dq > setup.dt * robot.v_max + 1e-9, axis=1))),
            "dq_max_excess": float(np.max(dq - setup.dt * robot.v_max)) if n else None,
            "box_violations": int(np.sum(box_m < -1e-4)) if barrier_box else None,
            "coll_violations": int(np.sum(dist < setup.d_min - 1e-3)) if barrier_col else None,
            "box_margin_mm": 1e3 * float(box_m.min()) if n else None,
            "coll_margin_mm": 1e3 * float(dist.min() - setup.d_min) if dist.size else None,
            "acc_peak_ratio": None if acc is None else float(acc.max()),
            "obst_violations": int(np.sum(obst < setup.d_min - 1e-3)) if obst.size else None,
            "obst_margin_mm": 1e3 * float(obst.min() - setup.d_min) if obst.size else None,
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
    print(collision_pairs_line(robot))
    a_max = acceleration_bounds(robot, core, args.a_max)
    rows = []
    for cfg in args.configs:
        setup = OinkSetup(cfg, args.dt, box_min, box_max, scb_safe_gain=args.scb_safe_gain,
                          a_max=a_max if cfg == "e" else None)
        setup.skip_dist = args.fast
        if cfg == "d":
            setup.obstacles = cell_obstacles(core, args.obstacle_seed, robot, q0, targets)
        rows += run_config(robot, setup, q0, T0, targets, core, core_err, pink_have, args, args.qp_solvers)
    print_results(spec.name, rows, args)
    if args.near_configs:
        rows += run_near(robot, core, core_err, pink_have, args)
    return rows


def circle_targets(T0: pin.SE3, args) -> list[pin.SE3]:
    c, r, w = T0.translation, args.radius, 2 * np.pi / args.period
    return [pin.SE3(T0.rotation, c + r * np.array([0.0, np.cos(w * k * args.dt), np.sin(w * k * args.dt)]))
            for k in range(args.steps)]


def cloud_distances(robot, setup, traj_values) -> np.ndarray:
    """Per step: the smallest distance of the robot (the solvers' convex hulls) to ``setup.cloud`` (coal, every
    robot x cloud pair of the core's perceived pair set)."""
    from roboplan_ik_ros.core.model.closest_pairs import ClosestPairs
    from peers import _ours_scene

    core = import_core()[0]
    scene, q_ref = _ours_scene(robot, core)
    scene.set_perceived_cloud(setup.cloud)
    pairs = ClosestPairs(scene, 1, np.inf, "perceived")
    data, geom_data = scene.create_data()
    out = np.empty(len(traj_values))
    for i, values in enumerate(traj_values):
        q = scene.q_from_joint_positions(robot.joints, values, q_ref)
        pin.forwardKinematics(scene.model, data, q)
        pin.updateGeometryPlacements(scene.model, data, scene.collision_model, geom_data)
        out[i] = min(pairs.distance(geom_data, k).min_distance for k in range(len(pairs.first)))
    return out


def near_cloud(core, robot, obstacles, n: int = NEAR_CLOUD_POINTS, voxel: float = NEAR_CLOUD_VOXEL, seed: int = 0):
    """(p near): a core PerceivedCloud of ``n`` points on the faces of the box ``obstacles`` but their bottoms
    (2 mm noise, seeded; points split by face area), voxel-filtered and octree'd at ``voxel``."""
    from peers import _ours_scene
    from roboplan_ik_ros.core.config import PerceptionConfig
    from roboplan_ik_ros.core.model.perceived_cloud import CloudIngest
    from roboplan_ik_ros.core.model.point_cloud import voxel_filter

    rng = np.random.default_rng(seed)
    faces = []  # (area, obstacle, axis, sign)
    for o in obstacles:
        d = np.asarray(o.dims, dtype=float)
        for axis in range(3):
            for sign in (-1.0, 1.0):
                if not (axis == 2 and sign < 0):
                    faces.append((float(np.prod(np.delete(d, axis))), o, axis, sign))
    areas = np.array([f[0] for f in faces])
    counts = rng.multinomial(n, areas / areas.sum())
    pts = []
    for (_, o, axis, sign), m in zip(faces, counts):
        half = np.asarray(o.dims, dtype=float) / 2
        local = rng.uniform(-half, half, (m, 3))
        local[:, axis] = sign * half[axis]
        T = o.T_frame_obstacle
        pts.append(local @ T.rotation.T + T.translation)
    raw = np.vstack(pts) + rng.normal(0.0, 0.002, (n, 3))
    scene, _ = _ours_scene(robot, core)
    ingest = CloudIngest(scene, PerceptionConfig(voxel_size=voxel, octree_resolution=voxel))
    return ingest.cloud(voxel_filter(raw, voxel)), len(raw)


def near_obstacles(core, c: np.ndarray) -> list:
    """A table whose top is 7 cm under the TCP at ``c`` (from 25 cm in front of the base on, not under it)
    and a box whose face is 19 cm beside it (+y), standing on the table."""
    top = c[2] - 0.068
    return [core.Obstacle("near_table", "box", (0.6, 1.2, 0.04), position=(0.55, 0.0, top - 0.02)),
            core.Obstacle("near_box", "box", (0.2, 0.1, 0.3), position=(c[0], c[1] + 0.24, top + 0.15))]


def pairs_within_cutoff(robot, core, setup, traj_values, every: int = 10) -> dict[str, tuple]:
    """Per collision barrier of ``setup`` ("self", and "obstacles" with obstacles): pairs whose distance
    (the solvers' convex hulls, coal) is within the barrier's broad_phase_cutoff, at the start and
    (min, median, max) over every ``every``-th step: (cutoff, start, min, median, max)."""
    from roboplan_ik_ros.core.model.closest_pairs import ClosestPairs
    from peers import _ours_scene

    scene, q_ref = _ours_scene(robot, core)
    for o in setup.obstacles:
        scene.add_obstacle(o)
    if setup.cloud is not None:
        scene.set_perceived_cloud(setup.cloud)
    cutoff = _default_cutoff(core)
    data, geom_data = scene.create_data()
    out = {}
    for pair_set in ("self",) + (("obstacles",) if setup.obstacles else ()) + (
            ("perceived",) if setup.cloud is not None else ()):
        pairs = ClosestPairs(scene, 1, cutoff, pair_set)
        counts = []
        for values in traj_values[::every]:
            q = scene.q_from_joint_positions(robot.joints, values, q_ref)
            pin.forwardKinematics(scene.model, data, q)
            pin.updateGeometryPlacements(scene.model, data, scene.collision_model, geom_data)
            counts.append(sum(pairs.distance(geom_data, k).min_distance <= cutoff for k in range(len(pairs.first))))
        out[pair_set] = (cutoff, counts[0], min(counts), float(np.median(counts)), max(counts))
    return out


def _default_cutoff(core) -> float:
    import inspect

    return float(inspect.signature(core.CollisionBarrier).parameters["broad_phase_cutoff"].default)


def run_near(robot, core, core_err, pink_have, args) -> list[dict]:
    """The near-obstacles rows (module docstring): (c) and (d) from NEAR_START, ours with rows_per_pair 1 and
    the config's default."""
    if robot.spec.name != "panda" or core is None:
        print(f"[near obstacles: {'no near start for ' + robot.spec.name if core is not None else 'no core'}; skipped]")
        return []
    from roboplan_ik_ros.core.oink.barriers.collision_barrier import CollisionBarrierConfig

    default_rpp = CollisionBarrierConfig(name="", type="collision").rows_per_pair
    q0 = np.array(NEAR_START)
    T0 = robot.tip_pose(q0)
    c = T0.translation
    targets = circle_targets(T0, args)
    box_min, box_max = c - 0.5, c + np.array([0.5, 0.5, args.radius - args.cut])
    obstacles = near_obstacles(core, c)
    print(f"\n== {robot.spec.name} near obstacles: start {NEAR_START}, tip at {np.round(c, 4).tolist()}; "
          f"{', '.join(f'{o.name} {o.shape} {o.dims} at {np.round(o.position, 3).tolist()}' for o in obstacles)} "
          f"((d) as primitives, (p) as a cloud); ours with rows_per_pair 1 and {default_rpp} (the config's default)")
    rows = []
    for cfg in args.near_configs:
        setup = OinkSetup(cfg, args.dt, box_min, box_max, scb_safe_gain=args.scb_safe_gain, label=f"{cfg} near")
        setup.skip_dist = args.fast
        if cfg == "d":
            setup.obstacles = obstacles
        if cfg == "p":
            setup.cloud, n_raw = near_cloud(core, robot, obstacles)
            print(f"  (p near) cloud: {n_raw} points on the faces of {', '.join(o.name for o in obstacles)} -> "
                  f"{len(setup.cloud.points)} cells of {NEAR_CLOUD_VOXEL * 100:g} cm (coal OcTree; RoboPlan: the same "
                  f"{len(setup.cloud.octree.toBoxes())} leaves)")
        trajectories = {}
        cfg_rows = run_config(robot, setup, q0, T0, targets, core, core_err, pink_have, args, args.qp_solvers,
                              rows_per_pair=(1, default_rpp), trajectories=trajectories)
        ours = next(name for name in trajectories if name.startswith("ours") and f" rpp{default_rpp} " in name)
        within = pairs_within_cutoff(robot, core, setup, [q0] + trajectories[ours])  # along ours' run
        for pair_set, (cutoff, start, lo, med, hi) in within.items():
            print(f"  ({cfg} near) {pair_set} pairs within broad_phase_cutoff {cutoff:g} m: start {start}, "
                  f"over the run min {lo} / median {med:g} / max {hi}")
        for r in cfg_rows:
            r.update(scenario="near", pairs_within_cutoff={k: v[1:] for k, v in within.items()})
        rows += cfg_rows
    print_results(f"{robot.spec.name} near obstacles", rows, args)
    for t in args.timings:
        pairs = []
        for r in rows:
            if r["timing"] == t and r["name"].startswith("ours") and f" rpp{default_rpp} " in r["name"]:
                one = next((o for o in rows if o["timing"] == t and o["name"] == r["name"].replace(
                    f" rpp{default_rpp} ", " rpp1 ")), None)
                if one:
                    pairs.append((f"{r['name']} vs rpp1", "median step", r["median_us"], one["median_us"]))
        if pairs:
            print_ratios(f"rows_per_pair {default_rpp} vs 1 ({t}):", pairs)
    return rows


def acceleration_bounds(robot, core, a_max_default: float) -> np.ndarray:
    """a_max per group joint [rad/s^2]: the shipped joint_limits.yaml for the Panda, else the default."""
    values = np.full(len(robot.joints), a_max_default)
    if robot.spec.name == "panda" and core is not None:
        from roboplan_ik_ros.core.model.joint_limits_file import load_joint_limits
        from roboplan_ik_ros.core.model.resources import resolve_path

        limits = load_joint_limits(resolve_path("package://roboplan_ik_ros/config/panda_joint_limits.yaml"))
        values = np.array([limits.acceleration.get(j, a_max_default) for j in robot.joints])
    return values


def _row(rows, name, config, timing):
    return next((r for r in rows if r["name"] == name and r["config"] == config and r["timing"] == timing), None)


def print_results(robot_name: str, rows: list[dict], args) -> None:
    timings = args.timings
    names = list(dict.fromkeys(r["name"] for r in rows))
    cols = ["peer"]
    for t in timings:
        cols += [f"{t} med µs", f"{t} p99 µs"]
    if len(timings) == 2:
        cols.append("paced/hot")
    cols += ["steady mm", "max mm", "far mm", "near mm", "q-lim", "dq", "box", "coll", "obs", "box mrg mm", "coll mrg mm", "obs mrg mm",
             "acc/a_max", "QP fails"]
    table = []
    for name in names:
        cfg = next(r["config"] for r in rows if r["name"] == name)
        by_t = {t: _row(rows, name, cfg, t) for t in timings}
        q = next(r for r in by_t.values() if r is not None)
        crashed = [t for t, r in by_t.items() if r is not None and r["crash"]]
        line = [name + (f" CRASHED ({', '.join(crashed)})" if crashed else "")]
        for t in timings:
            r = by_t[t]
            line += [fmt(r and r["median_us"]), fmt(r and r["p99_us"])]
        if len(timings) == 2:
            h, p = by_t["hot"], by_t["paced"]
            line.append(fmt(p["median_us"] / h["median_us"], ".2f") if h and p and h["median_us"] else "-")
        diff = [t for t, r in by_t.items() if r is not None and r is not q and r.get("same_traj_as") is None]
        line += [fmt(q["track_steady_mm"], ".4f") + ("†" if diff else ""), fmt(q["track_max_mm"], ".4f"),
                 fmt(q.get("track_far_mm"), ".4f"), fmt(q.get("track_near_mm"), ".4f"),
                 str(q["qlim_violations"]), str(q["dq_violations"]), fmt(q["box_violations"], "d"),
                 fmt(q["coll_violations"], "d"), fmt(q.get("obst_violations"), "d"), fmt(q["box_margin_mm"], ".2f"),
                 fmt(q["coll_margin_mm"], ".2f"), fmt(q.get("obst_margin_mm"), ".2f"),
                 fmt(q.get("acc_peak_ratio"), ".2f"), str(q["solver_failures"])]
        table.append(line)
    pace = f"paced = 1 step / {args.pace_ms:g} ms, sleeping between steps" if "paced" in timings else ""
    print_table(f"OInK closed loop — {robot_name} (timed: solve + enforce; integrate excluded; "
                f"hot = back to back{'; ' + pace if pace else ''}; quality columns: {timings[0]} run)", cols, table)
    if any(r.get("same_traj_as") is None and r["timing"] != timings[0] for r in rows):
        print("† this peer's trajectory differed between the timings; its quality columns are from the "
              f"{timings[0]} run (JSON has both)")
    elif len(timings) == 2:
        print("hot and paced trajectories are identical for every peer (max |Δq| <= 1e-9): quality columns hold "
              "for both")
    for t in timings:
        pairs = []
        for cfg in dict.fromkeys(r["config"] for r in rows):
            for ours in (r for r in rows if r["config"] == cfg and r["timing"] == t and r["name"].startswith("ours")):
                for r in rows:
                    if r["config"] == cfg and r["timing"] == t and not r["name"].startswith("ours"):
                        pairs.append((f"{robot_name} {ours['name']} vs {r['name']}", "median step",
                                      ours["median_us"], r["median_us"]))
        if pairs:
            print_ratios(f"ratios ({t}):", pairs)


def target_rows(rows: list[dict], args) -> list[dict]:
    """One row per robot, config, timing and ours variant: ours/RoboPlan median step vs its target."""
    out = []
    for robot_name in dict.fromkeys(r["robot"] for r in rows):
        rr = [r for r in rows if r["robot"] == robot_name and not r.get("scenario")]
        for t in args.timings:
            for cfg in args.configs:
                same = [r for r in rr if r["config"] == cfg and r["timing"] == t]
                rp = next((r for r in same if r["name"].startswith("roboplan")), None)
                peers = {r["name"].split(" (")[0]: r["median_us"] for r in same if not r["name"].startswith("ours")}
                for ours in (r for r in same if r["name"].startswith("ours")):
                    ratio = None
                    if rp and not rp["crash"] and not ours["crash"] and rp["median_us"] > 0:
                        ratio = ours["median_us"] / rp["median_us"]
                    out.append({"target": f"OInK step ({cfg}) ours/RoboPlan <= {TARGETS[cfg]:g}x", "robot": robot_name,
                                "timing": t, "config": cfg, "ours": ours["name"].split(" (")[0],
                                "ours_median_us": ours["median_us"], "peers_median_us": peers, "ratio": ratio,
                                "limit": TARGETS[cfg],
                                "pass": None if ratio is None or (cfg == "d" and getattr(
                                    args, "roboplan_sees_obstacles", None) is False) else ratio <= TARGETS[cfg]})
                    own_c = next((r for r in rr if r["config"] == "c" and r["timing"] == t
                                  and r["name"].split(" (")[0] == ours["name"].split(" (")[0]), None)
                    if cfg == "d" and own_c is not None:  # the target only if RoboPlan's barrier ignores obstacles
                        ratio_c = ours["median_us"] / own_c["median_us"] if own_c["median_us"] else None
                        sees = getattr(args, "roboplan_sees_obstacles", None)
                        out.append({"target": f"OInK step (d) ours/ours (c) <= {OWN_C_TARGET:g}x", "robot": robot_name,
                                    "timing": t, "config": "d/c", "ours": ours["name"].split(" (")[0],
                                    "ours_median_us": ours["median_us"],
                                    "peers_median_us": {"ours (c)": own_c["median_us"]}, "ratio": ratio_c,
                                    "limit": OWN_C_TARGET,
                                    "pass": None if ratio_c is None or sees is not False else ratio_c <= OWN_C_TARGET})
    out += near_target_rows(rows, args)
    return out


def near_target_rows(rows: list[dict], args) -> list[dict]:
    """The near-obstacles targets (NEAR_TARGETS): one row per config, timing and ours variant."""
    out = []
    near = [r for r in rows if r.get("scenario") == "near"]
    for robot_name in dict.fromkeys(r["robot"] for r in near):
        for t in args.timings:
            for cfg, limit in NEAR_TARGETS.items():
                same = [r for r in near if r["robot"] == robot_name and r["config"] == cfg and r["timing"] == t]
                rp = next((r for r in same if r["name"].startswith("roboplan")), None)
                for ours in (r for r in same if r["name"].startswith("ours")):
                    ratio = None
                    if rp and not rp["crash"] and not ours["crash"] and rp["median_us"] > 0:
                        ratio = ours["median_us"] / rp["median_us"]
                    out.append({"target": f"OInK step ({cfg} near) ours/RoboPlan <= {limit:g}x", "robot": robot_name,
                                "timing": t, "config": f"{cfg} near", "ours": ours["name"].split(" (")[0],
                                "ours_median_us": ours["median_us"],
                                "peers_median_us": {} if rp is None else {"roboplan": rp["median_us"]},
                                "ratio": ratio, "limit": limit, "pass": None if ratio is None else ratio <= limit})
    return out


def roboplan_barrier_sees_obstacles(core) -> tuple[bool | None, str]:
    """Does RoboPlan's SelfCollisionBarrier keep clear of geometry added to its Scene? A ball 12 cm under
    the Panda's TCP, a goal 25 cm down, 300 steps: the smallest robot x ball distance (raw meshes)
    against d_min, for RoboPlan and ours. (True/False/None if it could not run, a sentence)."""
    from common import _ObstacleChecker, _example_robot

    try:
        robot = Robot(_example_robot("panda"))
        q0 = robot.values(robot.q_ref)
        T0 = robot.tip_pose(q0)
        c = T0.translation
        ball = core.Obstacle("ball", "sphere", (0.05,), position=tuple(c + [0.0, 0.0, -0.12]))
        checker = _ObstacleChecker(robot.spec, [ball])
        setup = OinkSetup("d", 0.01, c - 0.5, c + 0.5, scb_safe_gain=1e-4)
        setup.obstacles = [ball]
        goal = pin.SE3(T0.rotation, c + [0.0, 0.0, -0.25])
        closest = {}
        for peer in (RoboPlanOink(robot, setup, q0, T0), OursOink(robot, core, setup, q0, T0)):
            d = np.inf
            for _ in range(300):
                peer.set_target(goal)
                peer.step()
                d = min(d, checker.min_distance(peer.values(), robot))
            closest[peer.name.split(" ")[0]] = d
    except Exception as exc:  # a peer missing or broken: no verdict
        return None, f"could not check whether RoboPlan's barrier covers obstacles: {type(exc).__name__}: {exc}"
    sees = closest["roboplan"] >= setup.d_min - 1e-3
    return sees, (f"RoboPlan's SelfCollisionBarrier {'covers' if sees else 'IGNORES'} geometry added to its Scene: "
                  f"a goal 13 cm into a ball, smallest distance {closest['roboplan'] * 1e3:.1f} mm (ours "
                  f"{closest['ours'] * 1e3:.1f} mm, d_min {setup.d_min * 1e3:.0f} mm); target "
                  + ("(d) <= 0.3x RoboPlan" if sees else f"(d) <= {OWN_C_TARGET:g}x our (c)"))


def print_targets(targets: list[dict]) -> None:
    peer_names = list(dict.fromkeys(n for t in targets for n in t["peers_median_us"]))
    print_table("OInK targets (median step, same run; ratio = ours / RoboPlan)",
                ["target", "robot", "timing", "ours", "ours µs", *[f"{n} µs" for n in peer_names], "ratio",
                 "verdict"],
                [[t["target"], t["robot"], t["timing"], t["ours"], fmt(t["ours_median_us"]),
                  *[fmt(t["peers_median_us"].get(n)) for n in peer_names],
                  fmt(t["ratio"], ".3f") + "x" if t["ratio"] is not None else "-", verdict(t["pass"])]
                 for t in targets])
    judged = [t for t in targets if t["pass"] is not None]
    n_pass = sum(bool(t["pass"]) for t in judged)
    info = len(targets) - len(judged)
    print(f"OInK targets: {n_pass} / {len(judged)} PASS" + (f" ({info} rows '-': not measured, or information "
                                                           "only)" if info else ""))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_args(p, default_robot="panda")
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--dt", type=float, default=0.01)
    p.add_argument("--radius", type=float, default=0.1)
    p.add_argument("--period", type=float, default=4.0)
    p.add_argument("--cut", type=float, default=0.03, help="[m] box top below the circle's top")
    p.add_argument("--configs", default="abcde")
    p.add_argument("--near-configs", default="cdp",
                   help="configs run again near obstacles (module docstring; '' = none)")
    p.add_argument("--obstacle-seed", type=int, default=0, help="seed of config (d)'s 20 random primitives")
    p.add_argument("--a-max", type=float, default=10.0,
                   help="[rad/s^2] (e): every joint's acceleration bound for robots without a shipped joint_limits.yaml")
    p.add_argument("--start", help="comma-separated start joint values (group order)")
    p.add_argument("--scb-safe-gain", type=float, default=1e-4,
                   help="SelfCollisionBarrier safe_displacement_gain for every peer (library default 1.0 makes the "
                        "r/||J||^2 term outweigh tracking: every peer then stays at the start, 100 mm behind)")
    p.add_argument("--interleave", action="store_true",
                   help="hot loop: interleave the peers step by step (rotating order) instead of running each peer's "
                        "whole loop in turn; every peer then runs with cold caches, Python ones lose 2-5x")
    timing = p.add_mutually_exclusive_group()
    timing.add_argument("--paced", action="store_true", help="only the paced timing (default: hot loop and paced)")
    timing.add_argument("--hot", action="store_true", help="only the hot loop (default: hot loop and paced)")
    p.add_argument("--pace-ms", type=float, default=2.0, help="[ms] paced: one step per this period (500 Hz = 2)")
    p.add_argument("--qp-solver", choices=("daqp", "osqp", "both"), default=None,
                   help="our QP backend (the core's solver.qp_solver key; default: both, one row each). "
                        "Only where the core has that key")
    p.add_argument("--fast", action="store_true", help="measure mesh distances only for config (c)")
    p.add_argument("--fade", type=float, default=0.05,
                   help="[m] configs with barriers: ours again with every barrier's safe_displacement_fade at this "
                        "(and --fade-max-weight), same run (0 = no such rows)")
    p.add_argument("--fade-max-weight", type=float, default=None,
                   help="[cost/rad^2] those rows' safe_displacement_max_weight (default: none)")
    p.add_argument("--weighted-nullspace", action="store_true",
                   help="ours again with solver.weighted_nullspace on (rows named 'wns'), same run. The scenario's "
                        "costs are all nonzero: the trajectory is the same, the time is the mask's")
    args = p.parse_args()
    args.timings = ("paced",) if args.paced else ("hot",) if args.hot else TIMINGS
    print(f"[start] {machine_note()}")
    core, core_err = import_core()
    if core is None:
        print(f"[ours skipped: roboplan_ik_ros.core not importable: {core_err}]")
    backends, default_backend = core_qp_solvers(core)
    if backends:
        args.qp_solvers = backends if args.qp_solver in (None, "both") else [args.qp_solver]
        print(f"[ours: solver.qp_solver present (default {default_backend or '?'}): rows for "
              f"{', '.join(args.qp_solvers)}]")
    else:
        if args.qp_solver is not None and core is not None:
            raise SystemExit("--qp-solver: this core has no solver.qp_solver key yet (SolverConfig / Oink "
                             "keyword); run without it")
        args.qp_solvers = (None,)
    pink_have, note = pink_solvers()
    if note:
        print(f"[{note}]")
    rows = []
    for spec in robot_specs(args):
        rows += run_robot(spec, args, core, core_err, pink_have)
    if "d" in args.configs and core is not None:
        args.roboplan_sees_obstacles, probe = roboplan_barrier_sees_obstacles(core)
        print(f"[(d): {probe}]")
    targets = target_rows(rows, args)
    print(f"[end] {machine_note()}")
    print_targets(targets)
    write_json(args.json, rows + targets)


if __name__ == "__main__":
    main()
