"""The demo's reports from a Recording: the per-segment motion table (acceleration and jerk against the
drive's bounds), the circle's table and plot, and the teleop, block and perceived-box segments' reports."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..figures import pyplot
from .recording import Recording
from .scenarios import BLOCK_SIZE, BLOCK_TOP, PERCEIVED_BOX_SIZE, PERCEIVED_SWEEP


def teleop_report(rec: Recording, scene, arm, tip, box, console) -> int:
    """The highest TCP point of the teleop segment against the box's upper face (from /joint_states)
    and the motion limits ~/status named; 1 when the face was crossed or no cause was named."""
    t0, t1 = rec.teleop_window
    q_ref = scene.named_configuration("default")
    z = [scene.frame_pose(scene.q_from_joint_positions(arm, q, q_ref), tip).translation[2]
         for t, q in zip(rec.js_t, rec.js_q) if t0 <= t <= t1]
    seen = []
    for t, code, reason in rec.motion_limits:
        if t0 <= t <= t1 + 0.5 and code and (not seen or seen[-1][0] != code):
            seen.append((code, reason))
    over = (max(z) - box.p_max[2]) if z else float("nan")
    console.print(f"teleop: highest TCP z {max(z) if z else float('nan'):.4f} m, box face {box.p_max[2]:.4f} m "
                  f"({'crossed by ' + format(over * 1e3, '.2f') + ' mm' if over > 1e-4 else 'not crossed'}); "
                  f"~/status: " + "; then ".join(f"{c} ({r})" for c, r in seen), markup=False, highlight=False)
    return 0 if z and over <= 1e-4 and any(c == "barrier" for c, _ in seen) and seen[-1][0] == "command_timeout" \
        else 1


def motion_table(rec: Recording, a_max: np.ndarray, j_max: np.ndarray, dt: float, arm, console) -> bool:
    """Per segment, the peak |acceleration| / a_max and |jerk| / j_max per joint from consecutive
    commands at the control period (as the drive computes them); True when all are <= 1."""
    from rich import box
    from rich.table import Table

    t = np.array(rec.cmd_t)
    q = np.array(rec.cmd_q)
    table = Table(title="peak acceleration / a_max and jerk / j_max per joint, from consecutive commands "
                        "(laps cross the barrier; the last segment brakes after SIGINT)", title_justify="left",
                  box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False)
    table.add_column("segment", no_wrap=True)
    table.add_column("", no_wrap=True)
    for k in range(len(arm)):
        table.add_column(f"j{k + 1}", justify="right", no_wrap=True, min_width=5)
    ok = True
    for name, t0, t1 in rec.segments:
        first, last = int(np.searchsorted(t, t0)), int(np.searchsorted(t, t1))
        c = q[max(0, first - 3):last]
        if len(c) < 4:
            continue
        acc = (np.abs(np.diff(c, n=2, axis=0)) / dt**2 / a_max).max(axis=0)
        jerk = (np.abs(np.diff(c, n=3, axis=0)) / dt**3 / j_max).max(axis=0)
        ok &= bool(acc.max() <= 1.0 + 1e-6 and jerk.max() <= 1.0 + 1e-6)
        table.add_row(name, "acc", *(f"{x:.3f}" for x in acc))
        table.add_row("", "jerk", *(f"{x:.3f}" for x in jerk), end_section=True)
    console.print(table)
    d = rec.drive
    console.print(f"strict drive (mock_robot): state {d.get('state', '?')}, {d.get('commands', 0)} commands checked in "
                  f"{d.get('streams', 0)} stream(s), last stream {'still moving' if d.get('moving') else 'at rest'}, "
                  f"peak ratios acc {max(d.get('peak_acceleration_ratio', {0: 0}).values()):.3f} / jerk "
                  f"{max(d.get('peak_jerk_ratio', {0: 0}).values()):.3f}")
    if not ok:
        console.print("a segment exceeds the bounds", style="bold red")
    return ok and d.get("state") == "ok" and not d.get("moving")


def _raw_mesh_checker(*obstacles):
    """The demo's own distance oracle: the Panda with its raw collision meshes (not the node's convex
    hulls) and ``obstacles``."""
    from ..core.model.robots import load_example_robot
    from ..core.model.scene import Scene

    rd = load_example_robot("panda")
    checker = Scene(rd.urdf_xml, rd.srdf_xml, rd.package_paths, convex_hulls=False)
    for obstacle in obstacles:
        checker.add_obstacle(obstacle)
    return checker


def _obstacle_distances(checker, js_q, arm, tip):
    """Per joint state: the least distance of any robot x obstacle pair of ``checker`` [m], and the TCP."""
    import pinocchio as pin

    gm = checker.collision_model
    pairs = [k for k, p in enumerate(gm.collisionPairs) if p.second >= checker.world.n_robot_geometries]
    data, gd = checker.model.createData(), pin.GeometryData(gm)
    q_ref = checker.named_configuration("default")
    distances, tcp = [], []
    for v in js_q:
        q = checker.q_from_joint_positions(arm, v, q_ref)
        pin.updateGeometryPlacements(checker.model, data, gm, gd, q)
        distances.append(min(pin.computeDistance(gm, gd, k).min_distance for k in pairs))
        tcp.append(checker.frame_pose(q, tip).translation)
    return np.array(distances), np.array(tcp)


def report(rec: Recording, scene, arm, tip, box, args, console) -> int:
    plt = pyplot()
    from rich.table import Table

    js_t = np.array(rec.js_t)
    js_q = np.array(rec.js_q)
    q_ref = scene.named_configuration("default")
    tcp = np.array([scene.frame_pose(scene.q_from_joint_positions(arm, v, q_ref), tip).translation for v in js_q])
    goal_t, goal_p = np.array(rec.goal_t), np.array(rec.goal_p)
    # the circle only (lead-in and laps): the reach over the block and the SIGINT stop have their own tables
    laps = [(t0, t1) for name, t0, t1 in rec.segments if name == "lead-in" or name.startswith("lap ")]
    t_from, t_to = (laps[0][0], laps[-1][1]) if laps else (goal_t[0], goal_t[-1])
    in_circle = (goal_t >= t_from) & (goal_t <= t_to)
    goal_t, goal_p = goal_t[in_circle], goal_p[in_circle]
    in_run = (js_t >= goal_t[0]) & (js_t <= goal_t[-1])
    k = np.clip(np.searchsorted(goal_t, js_t[in_run], side="right") - 1, 0, len(goal_t) - 1)
    target = goal_p[k]
    p_min, p_max = np.array(box.p_min), np.array(box.p_max)
    axes = np.flatnonzero(box.axis_selection)
    inside = ((target[:, axes] > p_min[axes] + 0.01) & (target[:, axes] < p_max[axes] - 0.01)).all(axis=1)
    err = np.linalg.norm(tcp[in_run] - target, axis=1)
    err_in = err[inside] if inside.any() else np.array([np.nan])
    margin = np.minimum(tcp[:, axes] - p_min[axes], p_max[axes] - tcp[:, axes]).min()
    reached_top = tcp[in_run, 2].max()
    lower = scene.q_min_v[[scene.model.joints[scene.model.getJointId(j)].idx_v for j in arm]]
    upper = scene.q_max_v[[scene.model.joints[scene.model.getJointId(j)].idx_v for j in arm]]
    within = bool(((js_q >= lower - 1e-9) & (js_q <= upper + 1e-9)).all())
    lat = np.array([s[0] for s in rec.service]) * 1e3
    n_ok = sum(1 for s in rec.service if s[1])
    d = rec.diagnostics
    holds = sum(1 for s in rec.status if s[1] not in ("tracking", "recovering", "waiting_for_goal"))

    t = Table(title="roboplan_ik_ros demo: ik_controller + mock Panda", title_justify="left")
    t.add_column("metric")
    t.add_column("value", justify="right")
    t.add_column("note")
    t.add_row("control rate (set / achieved)", f"{d.get('control_rate_hz (set)', '-')} / {d.get('rate_hz (achieved)', '-')} Hz",
              f"late ticks {d.get('late_ticks_pct', '-')} %")
    t.add_row("tick time p50 / p99", f"{d.get('tick_p50_us', '-')} / {d.get('tick_p99_us', '-')} us",
              f"max {d.get('tick_max_us', '-')} us (last {min(4096, len(js_t))} ticks)")
    t.add_row("tracking error p50 / p95 (goal inside box)",
              f"{np.nanmedian(err_in) * 1e3:.1f} / {np.nanpercentile(err_in, 95) * 1e3:.1f} mm",
              "TCP from /joint_states vs streamed goal (includes lag)")
    t.add_row("goal crossed box face by", f"{(goal_p[:, 2].max() - p_max[2]) * 1e3:.0f} mm",
              f"TCP reached z = {reached_top:.3f} m (box z_max {p_max[2]:.3f})")
    t.add_row("smallest barrier margin", f"{margin * 1e3:+.2f} mm", "min distance of the TCP to the box faces")
    t.add_row("joints within limits", "yes" if within else "NO", f"{len(js_q)} joint_states samples")
    t.add_row("solve_ik success", f"{n_ok} / {len(rec.service)}",
              f"latency p50 {np.median(lat):.1f} ms, max {lat.max():.1f} ms" if len(lat) else "no reply")
    t.add_row("holding (status samples)", f"{holds} / {len(rec.status)}", "")
    console.print(t)

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 5.5))
    ax1.plot(goal_p[:, 1], goal_p[:, 2], "--", color="tab:gray", label="goal")
    ax1.plot(tcp[in_run, 1], tcp[in_run, 2], color="tab:blue", label="achieved TCP")
    ax1.axhline(p_max[2], color="tab:red", lw=1, label=f"barrier z_max = {p_max[2]:.2f} m")
    ax1.axhline(p_min[2], color="tab:red", lw=1, ls=":")
    ax1.set_xlabel("y [m]")
    ax1.set_ylabel("z [m]")
    ax1.set_aspect("equal")
    ax1.legend(loc="lower right")
    ax1.set_title("end effector: target vs achieved (y-z plane)")
    rel = (js_q - lower) / (upper - lower)
    for j in range(len(arm)):
        ax2.plot(js_t - js_t[0], rel[:, j], label=arm[j].replace("panda_", ""))
    ax2.axhline(0.0, color="k", lw=1)
    ax2.axhline(1.0, color="k", lw=1)
    ax2.set_ylim(-0.05, 1.05)
    ax2.set_xlabel("time [s]")
    ax2.set_ylabel("position within limits (0 = lower, 1 = upper)")
    ax2.set_title("joints vs limits")
    ax2.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    console.print(f"plot: {args.out}")
    good = within and margin > -box.safety_margin - 2e-3 and n_ok >= 1 and len(rec.service) == args.service_calls
    return 0 if good else 1


def obstacle_report(rec: Recording, config, arm, tip, args, console) -> int:
    """The reach's smallest obstacle distance: from /joint_states with the demo's own scene (table +
    block; every pair, raw meshes) and from ~/status; a plot of the TCP path over the block."""
    plt = pyplot()
    from matplotlib.patches import Rectangle
    from rich.table import Table

    if len(rec.obstacle_window) != 2:
        console.print("[red]the reach over the block did not run[/red]")
        return 1
    checker = _raw_mesh_checker()
    js_t, js_q = np.array(rec.js_t), np.array(rec.js_q)
    t0, t1 = rec.obstacle_window
    window = (js_t >= t0) & (js_t <= t1)
    for o in [*config.obstacles, rec.block]:
        checker.add_obstacle(o)
    distances, tcp = _obstacle_distances(checker, js_q[window], arm, tip)
    d_min = next((b.d_min for b in config.barriers if b.type == "collision" and b.pairs in ("obstacles", "all")), 0.0)
    seen = [s for s in rec.obstacle_status if t0 <= s[0] <= t1 and s[1]]
    nearest = min(seen, key=lambda s: s[3]) if seen else None
    t = Table(title="reach over a block on the table (~/collision_objects)", title_justify="left")
    t.add_column("metric")
    t.add_column("value", justify="right")
    t.add_column("note")
    t.add_row("min obstacle distance (joint_states)", f"{distances.min() * 1e3:.1f} mm",
              f"d_min {d_min * 1e3:.0f} mm; {len(distances)} samples, raw meshes, every robot x obstacle pair")
    if nearest is not None:
        t.add_row("min in ~/status", f"{nearest[3] * 1e3:.1f} mm", f"{nearest[1]} <-> {nearest[2]}")
    t.add_row("TCP lowest over the block", f"z = {tcp[np.abs(tcp[:, 1]) < BLOCK_SIZE[1] / 2, 2].min():.3f} m"
              if (np.abs(tcp[:, 1]) < BLOCK_SIZE[1] / 2).any() else "-",
              f"block top z = {BLOCK_TOP:.2f} m; the goal dipped to {BLOCK_TOP - 0.01:.2f} m")
    console.print(t)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    goal_t, goal_p = np.array(rec.goal_t), np.array(rec.goal_p)
    in_goal = (goal_t >= t0) & (goal_t <= t1)
    ax.plot(goal_p[in_goal, 1], goal_p[in_goal, 2], "--", color="tab:gray", label="goal")
    ax.plot(tcp[:, 1], tcp[:, 2], color="tab:blue", label="achieved TCP")
    ax.add_patch(Rectangle((-BLOCK_SIZE[1] / 2, BLOCK_TOP - BLOCK_SIZE[2]), BLOCK_SIZE[1], BLOCK_SIZE[2],
                           color="tab:orange", alpha=0.5, label="block"))
    ax.set_ylim(BLOCK_TOP - 0.1, BLOCK_TOP + 0.15)
    ax.set_xlabel("y [m]")
    ax.set_ylabel("z [m]")
    ax.set_aspect("equal")
    ax.legend(loc="upper right")
    ax.set_title(f"reach over a block: min distance {distances.min() * 1e3:.1f} mm (d_min {d_min * 1e3:.0f} mm)")
    out = Path(args.out).with_name(Path(args.out).stem + "_obstacle.png")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    console.print(f"plot: {out}")
    return 0 if distances.min() >= d_min - 2e-3 else 1


def perceived_report(rec: Recording, config, arm, tip, a_max, j_max, dt, args, console) -> int:
    """The sweep toward the perceived box: the smallest distance to the true box (the demo's own coal
    distance, raw meshes, from /joint_states) against the barrier's d_min, ~/status's closest perceived
    point, QP failures and holds in the segment, peak acceleration and jerk ratios; a plot."""
    plt = pyplot()
    from matplotlib.patches import Rectangle
    from rich.table import Table

    if len(rec.perceived_window) != 2:
        console.print("[red]the sweep toward the perceived box did not run[/red]")
        return 1
    checker = _raw_mesh_checker(rec.perceived_box)
    t0, t1 = rec.perceived_window
    js_t, js_q = np.array(rec.js_t), np.array(rec.js_q)
    window = (js_t >= t0) & (js_t <= t1)
    distances, tcp = _obstacle_distances(checker, js_q[window], arm, tip)
    barrier = next((b for b in config.barriers if b.type == "collision" and b.pairs == "perceived"), None)
    d_min = barrier.d_min if barrier is not None else 0.0

    def counter(key: str, at: float) -> int:
        values = [int(d.get(key, 0)) for t, d in rec.diagnostics_log if t <= at]
        return values[-1] if values else 0

    qp_failures = counter("qp_failures", t1 + 0.6) - counter("qp_failures", t0)
    holds = counter("holds", t1 + 0.6) - counter("holds", t0)
    seen = [s for s in rec.perceived_status if t0 <= s[0] <= t1 and s[3]]
    nearest = min(seen, key=lambda s: s[4]) if seen else None
    cloud = max((s[2] for s in rec.perceived_status if t0 <= s[0] <= t1), default=0)
    lap_end = max((end for name, _, end in rec.segments if name.startswith("lap ")), default=-np.inf)
    laps = [s[2] for s in rec.perceived_status if s[0] <= lap_end]
    t, c = np.array(rec.cmd_t), np.array(rec.cmd_q)
    k0, k1 = int(np.searchsorted(t, t0)), int(np.searchsorted(t, t1))
    seg = c[max(0, k0 - 3):k1]
    acc = float((np.abs(np.diff(seg, n=2, axis=0)) / dt**2 / a_max).max()) if len(seg) > 3 else np.nan
    jerk = float((np.abs(np.diff(seg, n=3, axis=0)) / dt**3 / j_max).max()) if len(seg) > 3 else np.nan
    face = rec.perceived_box.T_frame_obstacle.translation[1] + PERCEIVED_BOX_SIZE[1] / 2
    table = Table(title="a box appears in the mock camera's cloud on the arm's path (~/pointcloud, pairs: perceived)",
                  title_justify="left")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_column("note")
    table.add_row("min distance to the box (joint_states)", f"{distances.min() * 1e3:.1f} mm",
                  f"d_min {d_min * 1e3:.0f} mm; the demo's coal distance to the true box, raw meshes, "
                  f"{len(distances)} samples")
    if nearest is not None:
        table.add_row("min closest perceived point in ~/status", f"{nearest[4] * 1e3:.1f} mm", nearest[3])
    table.add_row("perceived points (octree)", f"{cloud}", "the box; the table cropped, the arm self-filtered"
                  + (f"; {max(laps)} at most during the laps (the arm alone)" if laps else ""))
    table.add_row("TCP nearest the box's +y face", f"y = {tcp[:, 1].min():.3f} m",
                  f"face y = {face:.3f} m; the goal went to y = {PERCEIVED_SWEEP[1]:.2f} m")
    table.add_row("QP failures / holds in the segment", f"{qp_failures} / {holds}", "from /diagnostics")
    table.add_row("peak acc / a_max, jerk / j_max", f"{acc:.3f} / {jerk:.3f}", "commands, every joint")
    console.print(table)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 4.5))
    goal_t, goal_p = np.array(rec.goal_t), np.array(rec.goal_p)
    in_goal = (goal_t >= t0) & (goal_t <= t1)
    ax1.plot(goal_p[in_goal, 1], goal_p[in_goal, 2], "--", color="tab:gray", label="goal")
    ax1.plot(tcp[:, 1], tcp[:, 2], color="tab:blue", label="achieved TCP")
    ax1.add_patch(Rectangle((rec.perceived_box.T_frame_obstacle.translation[1] - PERCEIVED_BOX_SIZE[1] / 2, 0.0), PERCEIVED_BOX_SIZE[1], PERCEIVED_BOX_SIZE[2],
                            color="tab:orange", alpha=0.5, label="box (camera only)"))
    ax1.set_xlim(-0.4, 0.4)
    ax1.set_ylim(0.0, 0.6)
    ax1.set_xlabel("y [m]")
    ax1.set_ylabel("z [m]")
    ax1.set_aspect("equal")
    ax1.legend(loc="upper right", fontsize=8)
    ax1.set_title("a box appears in the cloud: TCP (y-z)")
    ax2.plot(js_t[window] - t0, distances * 1e3, color="tab:blue", label="arm to the true box")
    ax2.axhline(d_min * 1e3, color="tab:red", lw=1, label=f"d_min {d_min * 1e3:.0f} mm")
    ax2.set_xlabel("time in the segment [s]")
    ax2.set_ylabel("distance [mm]")
    ax2.legend(fontsize=8)
    ax2.set_title(f"min {distances.min() * 1e3:.1f} mm; QP failures {qp_failures}")
    out = Path(args.out).with_name(Path(args.out).stem + "_perceived.png")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    console.print(f"plot: {out}")
    # the barrier keeps d_min from the perceived cells (cubes of octree_resolution around noisy surface points):
    # from the true box, what the cloud resolves: half a cell, and the camera's noise (2 mm)
    floor = d_min - 0.5 * config.perception.octree_resolution - 2e-3
    good = distances.min() >= floor and qp_failures == 0 and acc <= 1.0 + 1e-6 and jerk <= 1.0 + 1e-6
    console.print(f"perceived segment: min distance to the true box {distances.min() * 1e3:.1f} mm (>= "
                  f"{floor * 1e3:.1f} mm: d_min - half a cell - noise): {'ok' if good else 'FAILED'}")
    return 0 if good else 1
