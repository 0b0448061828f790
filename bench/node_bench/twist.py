"""The twist-stream runs (``--twist``): a 100 Hz TwistStamped stream on ~/ee/target_twist at each control
rate: on-time share, input-to-command latency from outside, the tool-velocity tracking error, peak
acceleration and jerk, the stop after the stream ends."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import yaml

from common import fmt, print_table, verdict

from .children import BENCH_NODE
from .configs import node_config
from .motion import CommandRecorder, command_ratios, drive_bounds
from .processes import _wait, manage_startup, stop_processes


# ------------------------------------------------------------------------- twist stream: latency, tracking
#: --twist: a 100 Hz TwistStamped stream on ~/ee/target_twist (config (c) as shipped, timer trigger) at
#: each rate; the commanded velocity turns by 90 degrees every segment (a square in the base's y-z plane,
#: so the tool stays in free space), then the stream stops.
TWIST_RATES = (500.0, 1000.0)  # [Hz] control_rate_hz
TWIST_HZ = 100.0  # [Hz] the input stream
TWIST_SPEED = 0.1  # [m/s] commanded tool speed (unitless 0.4 x max_linear_speed 0.25)
TWIST_MAX_LINEAR_SPEED = 0.25  # [m/s] panda.yaml node.streaming.max_linear_speed
TWIST_DIRECTIONS = ((0.0, 1.0, 0.0), (0.0, 0.0, 1.0), (0.0, -1.0, 0.0), (0.0, 0.0, -1.0))  # base frame
TWIST_SEGMENT_S = 1.0  # [s] between direction changes of the square (tracking)
TWIST_STEADY_S = 0.5  # [s] the last part of each such segment where the tracking error is measured
# then --twist-changes quicker turns (a smaller square) for the latency's percentiles: the turn's ramp (the
# target's velocity turns by 0.14 m/s at max_linear_acceleration 1 m/s^2: 0.14 s) and the detector's 0.1 s
# steady window before the next change fit in a segment
TWIST_QUICK_SEGMENT_S = 0.35  # [s]
TWIST_TARGETS = {"on_time_pct": 99.5, "tracking_error_pct": 2.0, "peak_ratio": 1.0}


def tick_on_time(starts: np.ndarray, rate: float, t_start: float, t_end: float) -> tuple[float, float]:
    """(on time %, late gaps %) of the ticks that started in [t_start, t_end] (the node's TickStats rule, as
    bench_run: a tick is on time when it starts at most 1.5 periods after the previous one; on time % counts
    on-time ticks against the expected ticks, window x rate, so a stall of n periods costs n ticks)."""
    s = np.asarray(starts, dtype=float)
    s = s[(s >= t_start) & (s <= t_end)]
    gaps = np.diff(s)
    expected = (t_end - t_start) * rate
    on_time = int(np.sum(gaps <= 1.5 / rate))
    return (min(100.0, 100.0 * on_time / expected) if expected > 0 else 0.0,
            100.0 * float(np.mean(gaps > 1.5 / rate)) if len(gaps) else 100.0)


def first_departure(times: np.ndarray, velocity: np.ndarray, t_change: float, direction=None,
                    noise_window_s: float = 0.1, k_noise: float = 3.0, floor: float = 1e-5) -> int | None:
    """Index of the first sample at or after ``t_change`` whose velocity (rows, any unit) departs from the
    steady velocity before it by more than the noise. Steady = a straight line per component fitted to the
    samples of the ``noise_window_s`` before ``t_change`` (a slow drift of a steady motion is not a change),
    extrapolated. With ``direction`` (the change of the commanded velocity) only the deviation along it
    counts, signed (noise across it, or against it, is not the change). Noise = the 90th percentile of the
    window's residuals (one odd command period does not blind the detector); threshold = max(k_noise x
    noise, floor). None when no sample departs (or fewer than 3 samples precede t_change)."""
    times, velocity = np.asarray(times, dtype=float), np.asarray(velocity, dtype=float)
    if direction is not None:
        u = np.asarray(direction, dtype=float)
        velocity = (velocity @ (u / np.linalg.norm(u)))[:, None]
    before = (times < t_change) & (times >= t_change - noise_window_s)
    if before.sum() < 3:
        return None
    tb = times[before] - t_change
    A = np.column_stack([np.ones_like(tb), tb])
    coef, *_ = np.linalg.lstsq(A, velocity[before], rcond=None)  # (2, dims): offset, slope
    noise = float(np.percentile(np.linalg.norm(velocity[before] - A @ coef, axis=1), 90))
    threshold = max(k_noise * noise, floor)
    later = np.flatnonzero(times >= t_change)
    deviation = velocity[later] - (coef[0] + np.outer(times[later] - t_change, coef[1]))
    departed = (deviation[:, 0] if direction is not None else np.linalg.norm(deviation, axis=1)) > threshold
    return int(later[np.argmax(departed)]) if departed.any() else None


def twist_schedule(n_square: int, n_quick: int) -> list[tuple[float, float, tuple]]:
    """(start [s], duration [s], direction) of each segment of the twist run: ``n_square`` segments of
    TWIST_SEGMENT_S (the tracking error is measured in their last TWIST_STEADY_S), then ``n_quick`` of
    TWIST_QUICK_SEGMENT_S (more direction changes for the latency); directions cycle through
    TWIST_DIRECTIONS, so each run of four closes a square."""
    out, t = [], 0.0
    for k in range(n_square + n_quick):
        duration = TWIST_SEGMENT_S if k < n_square else TWIST_QUICK_SEGMENT_S
        out.append((t, duration, TWIST_DIRECTIONS[k % len(TWIST_DIRECTIONS)]))
        t += duration
    return out


def tracking_error_pct(positions: np.ndarray, dt: float, v_cmd: np.ndarray) -> tuple[float, np.ndarray]:
    """(|v - v_cmd| / |v_cmd| in %, v) with v the mean velocity of consecutive positions (rows, one per
    command at the nominal period ``dt``: the path per control period, as a drive executes it)."""
    p = np.asarray(positions, dtype=float)
    v = (p[-1] - p[0]) / ((len(p) - 1) * dt)
    return 100.0 * float(np.linalg.norm(v - v_cmd) / np.linalg.norm(v_cmd)), v


def run_twist(k: int, rate: float, args, tmp: Path) -> dict:
    """One node + mock pair at ``rate`` (config (c), timer trigger): a 100 Hz twist stream turning every
    TWIST_SEGMENT_S for ``args.twist_duration`` s, then ``args.twist_changes`` times every
    TWIST_QUICK_SEGMENT_S (:func:`twist_schedule`), then stopped. Returns the run's row."""
    import rclpy
    from geometry_msgs.msg import TwistStamped

    from roboplan_ik_interfaces.msg import ControllerStatus
    from roboplan_ik_ros.core.model.scene import Scene
    from roboplan_ik_ros.node.spin import make_executor, spin_until_shutdown
    from roboplan_ik_ros.sim.mock_robot import load_robot

    tag = f"twist_{rate:g}"
    data = node_config("c", "timer", rate)
    cfg_path = tmp / f"bench_{tag}.yaml"
    cfg_path.write_text(yaml.safe_dump(data))
    stats_out = tmp / f"stats_{tag}.json"
    n_segments = max(2, int(round(args.twist_duration / TWIST_SEGMENT_S)))
    schedule = twist_schedule(n_segments, args.twist_changes)
    total_s = schedule[-1][0] + schedule[-1][1]
    capacity = int((total_s + 60) * rate * 1.2)
    urdf, srdf, pkgs, _ = load_robot("panda")
    scene = Scene(urdf, srdf, pkgs)
    group = scene.group("arm")
    a_max, j_max = drive_bounds(group.joint_names)
    dt = 1.0 / rate
    mock_log, node_log = tmp / f"mock_{tag}.log", tmp / f"node_{tag}.log"
    mlog, nlog = open(mock_log, "w"), open(node_log, "w")
    mock = subprocess.Popen([sys.executable, BENCH_NODE, "--child-mock", repr(float(rate)),
                             str(tmp / f"mock_{tag}.npz"), str(capacity)], stdout=mlog, stderr=subprocess.STDOUT)
    executor = make_executor()
    aux = rclpy.create_node(f"bench_twist_{k}")
    executor.add_node(aux)
    twist_pub = aux.create_publisher(TwistStamped, "/ik_controller/ee/target_twist", 10)
    rec = CommandRecorder(aux)
    statuses: list[tuple[float, str, str]] = []
    aux.create_subscription(ControllerStatus, "/ik_controller/status",
                            lambda m: statuses.append((time.perf_counter(), m.motion_limit, m.motion_limit_reason)), 10)
    stop = threading.Event()
    spinner = threading.Thread(target=spin_until_shutdown, args=(executor, stop), daemon=True)
    spinner.start()
    child = None
    changes: list[tuple[float, np.ndarray]] = []  # (publish time, commanded velocity [m/s]) of each new twist
    msg = TwistStamped()
    msg.header.frame_id = "panda_link0"
    try:
        spawned_at = time.time()
        child = subprocess.Popen([sys.executable, BENCH_NODE, "--child-node", str(cfg_path), str(stats_out),
                                  str(capacity), repr(spawned_at)], stdout=nlog, stderr=subprocess.STDOUT)
        procs = [(child, node_log), (mock, mock_log)]
        startup = manage_startup(aux, "ik_controller", spawned_at, procs)
        if not startup["ok"]:
            raise RuntimeError(f"configure/activate failed: {node_log.read_text()[-2000:]}")
        _wait(lambda: twist_pub.get_subscription_count() > 0 and len(rec.times) > 100, 30.0,
              "twist subscription, commands", procs)
        time.sleep(0.3)  # a steady (resting) command stream before the first twist
        t0 = time.perf_counter()
        next_t, segment = t0, -1
        while (t := time.perf_counter()) < t0 + total_s:
            s = segment
            while s + 1 < len(schedule) and t - t0 >= schedule[s + 1][0]:
                s += 1
            if s != segment:
                segment = s
                unitless = np.array(schedule[s][2]) * TWIST_SPEED / TWIST_MAX_LINEAR_SPEED
                msg.twist.linear.x, msg.twist.linear.y, msg.twist.linear.z = (float(x) for x in unitless)
                new = True
            msg.header.stamp = aux.get_clock().now().to_msg()
            twist_pub.publish(msg)
            if new:
                changes.append((time.perf_counter(), unitless * TWIST_MAX_LINEAR_SPEED))
                new = False
            next_t += 1.0 / TWIST_HZ
            time.sleep(max(0.0, next_t - time.perf_counter()))
        t_stop = time.perf_counter()  # the last twist was published just before
        t_rest = rec.wait_rest(t_stop, timeout=8.0, still_s=0.3)
        time.sleep(0.3)
        t_end = time.perf_counter()
    finally:
        stop_processes(child, mock)
        mlog.close()
        nlog.close()
        stop.set()
        spinner.join(2.0)
        executor.shutdown()
        aux.destroy_node()
    stats = json.loads(stats_out.read_text())
    on_time_pct, late_gaps_pct = tick_on_time(np.array(stats["starts"]), rate, changes[0][0], t_rest)
    starts = np.array(stats["starts"])
    n_ticks = int(np.sum((starts >= changes[0][0]) & (starts <= t_rest)))

    times, q = rec.since(changes[0][0] - 0.2, t_end)
    tcp = np.empty((len(q), 3))
    q_full = scene.neutral()
    for i, row in enumerate(q):
        q_full[group.q_indices] = row
        tcp[i] = scene.frame_pose(q_full, "panda_hand_tcp").translation
    v_tcp = np.vstack([np.zeros((1, 3)), np.diff(tcp, axis=0) / dt])  # per command period [m/s]
    n_cmds = int(np.sum((times >= changes[0][0]) & (times <= t_rest)))
    # latency: the bench publishing a changed twist -> the bench receiving the first changed command
    latencies, undetected, from_rest = [], 0, None
    v_before = np.zeros(3)
    for n, (t_pub, v_cmd) in enumerate(changes):
        i = first_departure(times, v_tcp, t_pub, direction=v_cmd - v_before)
        v_before = v_cmd
        if i is None:
            undetected += 1
        elif n == 0:
            from_rest = times[i] - t_pub  # the first twist starts from rest: exact
        else:
            latencies.append(times[i] - t_pub)
    lat_ms = np.array(([from_rest] if from_rest is not None else []) + latencies) * 1e3
    moving_ms = np.array(latencies) * 1e3
    # the per-period tool velocity's scatter in steady motion (residual of a line over each square segment's
    # steady window, median over the segments): what a change must exceed to be seen
    scatter = []
    square = changes[:n_segments]  # the long segments (the quick ones have no steady half-second)
    for (t_pub, _), t_next in zip(square, [c[0] for c in changes[1:n_segments + 1]] + [t_stop]):
        keep = (times >= t_next - TWIST_STEADY_S) & (times < t_next)
        if keep.sum() >= 10:
            A = np.column_stack([np.ones(keep.sum()), times[keep] - t_next])
            coef, *_ = np.linalg.lstsq(A, v_tcp[keep], rcond=None)
            scatter.append(float(np.median(np.linalg.norm(v_tcp[keep] - A @ coef, axis=1))))
    velocity_noise = float(np.median(scatter)) if scatter else float("nan")
    # tracking: the last TWIST_STEADY_S of each segment (the 90-degree turn's ramp is over)
    errors, limits_seen, velocities = [], [], []  # per segment; the ~/status motion_limit codes in its steady window
    bounds = [c[0] for c in changes[1:n_segments + 1]] + [t_stop]
    for (t_pub, v_cmd), t_next in zip(square, bounds):
        keep = (times >= t_next - TWIST_STEADY_S) & (times < t_next)
        if keep.sum() >= 10:
            err, v = tracking_error_pct(tcp[keep], dt, v_cmd)
            errors.append(err)
            velocities.append(v.round(5).tolist())
            limits_seen.append(sorted({lim for t, lim, _ in statuses if t_next - TWIST_STEADY_S <= t < t_next}))
    _, q_run = rec.since(changes[0][0], t_end)
    ratios = command_ratios(q_run, dt, a_max, j_max)
    t_after, q_stop = rec.since(t_stop, t_end)
    moving = np.flatnonzero(np.abs(np.diff(q_stop, axis=0)).max(axis=1) > 1e-6) if len(q_stop) > 1 else np.array([])
    t_still = float(t_after[moving[-1] + 1]) if moving.size else t_stop  # the last command that moved
    stop_ratios = command_ratios(q_stop, dt, a_max, j_max)
    tail = q_stop[-int(0.2 * rate):]
    at_rest = bool(len(tail) > 1 and np.abs(np.diff(tail, axis=0)).max() <= 1e-6)  # rad per period, as wait_rest
    reasons = [(lim, why) for t, lim, why in statuses if t >= t_stop + 0.15]
    timeout_status = bool(reasons) and reasons[-1][0] == "command_timeout"
    return {
        "kind": "twist", "rate_set_hz": rate, "duration_s": t_rest - changes[0][0], "segments": len(changes),
        "square_segments": n_segments,
        "ticks": n_ticks, "commands": n_cmds, "on_time_pct": on_time_pct, "late_gaps_pct": late_gaps_pct,
        "latency_p50_ms": float(np.percentile(lat_ms, 50)) if lat_ms.size else float("nan"),
        "latency_p99_ms": float(np.percentile(lat_ms, 99)) if lat_ms.size else float("nan"),
        "latency_max_ms": float(lat_ms.max()) if lat_ms.size else float("nan"),
        # the first twist starts from rest: no noise, the first changed command is exact
        "latency_from_rest_ms": float(from_rest * 1e3) if from_rest is not None else float("nan"),
        "latency_moving_p50_ms": float(np.percentile(moving_ms, 50)) if moving_ms.size else float("nan"),
        "latency_moving_p99_ms": float(np.percentile(moving_ms, 99)) if moving_ms.size else float("nan"),
        "latency_moving_n": int(moving_ms.size),
        "velocity_noise_mm_s": velocity_noise * 1e3,
        "latencies_ms": lat_ms.round(3).tolist(), "undetected_changes": undetected,
        "tracking_error_max_pct": max(errors) if errors else float("nan"),
        "tracking_error_median_pct": float(np.median(errors)) if errors else float("nan"),
        "tracking_errors_pct": [round(e, 4) for e in errors], "segment_motion_limits": limits_seen,
        "segment_velocities": velocities,
        "acc_ratio": ratios["acc_ratio"], "jerk_ratio": ratios["jerk_ratio"], "over_acc_pct": ratios["over_acc_pct"],
        "stop_acc_ratio": max(stop_ratios["acc_ratio"]), "stop_jerk_ratio": max(stop_ratios["jerk_ratio"]),
        "stop_s": t_still - t_stop, "at_rest": at_rest, "timeout_status": timeout_status,
        "status_after_stop": reasons[-1][0] if reasons else "", "status_reason_after_stop": reasons[-1][1] if reasons else "", "counts": stats["counts"],
    }


def twist_targets(rows: list[dict]) -> list[dict]:
    out = []
    for r in rows:
        run = f"twist stream, {r['rate_set_hz']:g} Hz"
        peak = max(max(r["acc_ratio"]), max(r["jerk_ratio"]))
        for target, measured, ok, detail in (
                (f"on time >= {TWIST_TARGETS['on_time_pct']:g} %", f"{r['on_time_pct']:.2f} %",
                 r["on_time_pct"] >= TWIST_TARGETS["on_time_pct"], f"{r['ticks']} ticks, late gaps {r['late_gaps_pct']:.2f} %"),
                (f"tool-velocity tracking error <= {TWIST_TARGETS['tracking_error_pct']:g} %",
                 f"{r['tracking_error_max_pct']:.3f} % (worst segment)",
                 r["tracking_error_max_pct"] <= TWIST_TARGETS["tracking_error_pct"],
                 f"median {r['tracking_error_median_pct']:.3f} % over {len(r['tracking_errors_pct'])} segments"),
                (f"peak acceleration and jerk <= {TWIST_TARGETS['peak_ratio']:g}x of the bounds",
                 f"{max(r['acc_ratio']):.3f}x / {max(r['jerk_ratio']):.3f}x", peak <= TWIST_TARGETS["peak_ratio"] + 1e-6,
                 f"guard_cuts {r['counts'].get('guard_cuts', '-')}"),
                ("stream stop ends at rest, status command_timeout", f"at rest {r['stop_s']:.2f} s after the last twist, "
                 f"status '{r['status_after_stop']}'", r["at_rest"] and r["timeout_status"],
                 f"stop peaks {r['stop_acc_ratio']:.3f}x / {r['stop_jerk_ratio']:.3f}x")):
            out.append({"target": target, "run": run, "measured": measured, "pass": bool(ok), "detail": detail})
    return out


def print_twist(rows: list[dict], targets: list[dict]) -> None:
    if not rows:
        return
    print_table(f"Twist stream: {TWIST_HZ:g} Hz TwistStamped on ~/ee/target_twist, {TWIST_SPEED:g} m/s turning 90 deg "
                f"every {TWIST_SEGMENT_S:g} s (a square in the base y-z plane), then every {TWIST_QUICK_SEGMENT_S:g} s, "
                "then stopped; config (c), timer trigger",
                ["control rate Hz", "s", "ticks", "on time %", "latency from rest ms", "latency moving p50/p99 ms (n)",
                 "tool velocity scatter mm/s", "changes detected",
                 "tracking error median/max %", "peak accel / jerk x bound", "stop: at rest after s", "status after stop"],
                [[fmt(r["rate_set_hz"], ".0f"), fmt(r["duration_s"], ".1f"), str(r["ticks"]), fmt(r["on_time_pct"], ".2f"),
                  fmt(r["latency_from_rest_ms"], ".2f"),
                  f"{fmt(r['latency_moving_p50_ms'], '.2f')} / {fmt(r['latency_moving_p99_ms'], '.2f')} "
                  f"({r['latency_moving_n']})",
                  fmt(r["velocity_noise_mm_s"], ".2f"),
                  f"{r['segments'] - r['undetected_changes']} / {r['segments']}",
                  f"{fmt(r['tracking_error_median_pct'], '.3f')} / {fmt(r['tracking_error_max_pct'], '.3f')}",
                  f"{max(r['acc_ratio']):.3f} / {max(r['jerk_ratio']):.3f}", fmt(r["stop_s"], ".2f"),
                  r["status_after_stop"] or "-"] for r in rows])
    print("latency (measured from outside): the bench publishes a twist that changes the commanded velocity and "
          "timestamps it; every command on /forward_position_controller/commands is timestamped on receipt and "
          "turned into a tool velocity by FK (consecutive commands at the nominal period); the first command "
          "whose tool velocity, along the change of the commanded velocity, departs from the steady velocity (a line "
          "fitted to the 0.1 s before the change, extrapolated) by more than 3x that window's 90th-percentile "
          "residual (at least 1e-5 m/s) is the one that reflects the twist. It includes two DDS hops (twist in, "
          "command out), the node's twist callback, the wait for the next tick (up to one control period, by "
          "construction) and the tick. From rest (the first twist) the commands are constant, so the first changed "
          "command is exact; while moving, the per-period tool velocity scatters (column 'scatter', median "
          "residual) and the response (the target's velocity turns at max_linear_acceleration, the QP follows "
          "within the joint acceleration bounds) must grow above it first: those figures are upper bounds. "
          "tracking error = |v - v_cmd| / |v_cmd| of the commanded "
          "tool's mean velocity (FK of the commands, per control period) over the last "
          f"{TWIST_STEADY_S:g} s of each segment.")
    print_table("twist stream targets", ["target", "run", "measured", "verdict", "detail"],
                [[t["target"], t["run"], t["measured"], verdict(t["pass"]), t["detail"]] for t in targets])
