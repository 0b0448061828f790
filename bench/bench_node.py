"""Benchmark of the ik_controller node in closed loop with the mock Panda, over real DDS.

The node runs in a child process (this interpreter); the mock robot runs in this process, which
also streams a pose goal around a circle whose top touches the workspace barrier. Config (b):
panda.yaml without the self_collision barrier (FrameTask + posture + PositionLimit +
VelocityLimit + PositionBarrier). Two modes by default:

* ``timer``: the default node config (500 Hz timer, commanded state feedback). Its "latency" is
  the age of the newest joint state when a command arrives (the timer is not synchronized with
  the robot, so it spans one joint-state period by construction).
* ``joint_states``: ``trigger: joint_states`` + measured feedback: the node steps on each joint
  state (the mock publishes at the control rate), so the latency is the robot's
  sensor-to-command round trip.

Measured over ``--duration`` seconds after a warm-up: achieved rate and share of late ticks
(a tick starting more than 1.5 periods after the previous one), tick time p50/p99 (the node's
own per-tick timings), joint_states-to-command latency p50/p99 (at the mock robot), node CPU %
(from /proc/<pid>/stat) and resident memory at start and end (/proc/<pid>/status).

    python bench/bench_node.py [--duration 60] [--rate 500] [--mode timer|joint_states|both] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import yaml

from common import fmt, print_table, write_json  # also puts roboplan_ik_ros on sys.path

TARGETS = {"on_time_pct": 99.5, "latency_p99_ms": 1.0, "cpu_pct": 60.0, "rss_mb": 300.0}
CLK_TCK = os.sysconf("SC_CLK_TCK")


# ------------------------------------------------------------------------- child: the node
def run_child(config: str, stats_out: str, capacity: int) -> None:
    import rclpy

    from roboplan_ik_ros.node.diagnostics import TickStats
    from roboplan_ik_ros.node.ik_controller import IKControllerNode, make_executor, spin_until_shutdown
    from rclpy.parameter import Parameter

    rclpy.init()
    node = IKControllerNode(parameter_overrides=[Parameter("config_file", value=config)])
    node._stats = TickStats(size=capacity)  # keep every tick of the run (the default keeps 4096)
    executor = make_executor()
    executor.add_node(node)
    if not node.autostart():
        print(f"bench child: {node.last_error}", file=sys.stderr)
    spin_until_shutdown(executor)
    s = node._stats
    n = min(s.count, s.size)
    order = np.argsort(s.starts[:n])
    Path(stats_out).write_text(json.dumps({
        "starts": s.starts[:n][order].tolist(), "durations": s.durations[:n][order].tolist(),
        "counts": {**vars(node.loop.counts), "guard_cuts": node.loop.guard.cuts,
                   "joint_states_rejected": node.loop.state.rejected},
        "holding": node.loop.hold_reason,
    }))
    node.destroy_node()
    executor.shutdown()
    rclpy.try_shutdown()


# ------------------------------------------------------------------------- /proc
def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime + stime


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    return float("nan")


# ------------------------------------------------------------------------- one mode
def bench_mode(mode: str, args, tmp: Path) -> dict:
    import pinocchio as pin
    import rclpy
    from geometry_msgs.msg import PoseStamped
    from rclpy.parameter import Parameter

    from roboplan_ik_ros.demo import circle_path
    from roboplan_ik_ros.node.ik_controller import default_config_file, make_executor, spin_until_shutdown
    from roboplan_ik_ros.node.mock_robot import MockRobot
    from roboplan_ik_ros.node.rosbridge import pose_from_se3

    data = yaml.safe_load(Path(default_config_file("panda")).read_text())
    data["barriers"] = [b for b in data["barriers"] if b["type"] != "self_collision"]
    node_cfg = data.setdefault("node", {})
    node_cfg.update(control_rate_hz=float(args.rate), markers={"enabled": False})
    if mode == "joint_states":
        node_cfg.update(trigger="joint_states", state_feedback="measured")
    else:
        node_cfg.update(trigger="timer", state_feedback="commanded")
    box = next(b for b in data["barriers"] if b["type"] == "position")
    config = tmp / f"bench_{mode}.yaml"
    config.write_text(yaml.safe_dump(data))
    stats_out = tmp / f"stats_{mode}.json"
    capacity = int((args.duration + args.warmup + 30) * args.rate * 1.2)

    mock = MockRobot(f"mock_robot_{mode}", parameter_overrides=[Parameter("rate_hz", value=float(args.rate))])
    executor = make_executor()
    executor.add_node(mock)
    stop = threading.Event()
    spinner = threading.Thread(target=spin_until_shutdown, args=(executor, stop), daemon=True)
    spinner.start()
    goal_node = rclpy.create_node(f"bench_goals_{mode}")
    goal_pub = goal_node.create_publisher(PoseStamped, "/ik_controller/ee/target_pose", 10)

    log = open(tmp / f"node_{mode}.log", "w")
    child = subprocess.Popen([sys.executable, __file__, "--child-node", str(config), str(stats_out), str(capacity)],
                             stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30.0
        while mock.commands < 50:
            if child.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the node did not start: see {log.name}")
            time.sleep(0.05)
        arm = [f"panda_joint{i}" for i in range(1, 8)]
        T0 = mock.scene.frame_pose(mock.q.copy(), "panda_hand_tcp")
        path = circle_path(T0.translation, box["p_max"][2] - 0.05, 0.15, 1.0, 6.0)  # top touches the box
        t0 = time.perf_counter()
        t_start = t_end = None
        cpu0 = rss0 = None
        lat0 = 0
        rss_samples = []
        next_goal = 0.0
        total = args.warmup + args.duration
        last_print = 0.0
        while (t := time.perf_counter() - t0) < total:
            if t_start is None and t >= args.warmup:
                t_start, cpu0, rss0, lat0 = time.perf_counter(), cpu_seconds(child.pid), rss_mb(child.pid), mock.n_latencies
            ps = PoseStamped()
            ps.header.frame_id = "panda_link0"
            pose_from_se3(pin.SE3(T0.rotation, path(t)), ps.pose)
            goal_pub.publish(ps)
            if t_start is not None and t - last_print >= 5.0:
                last_print = t
                rss_samples.append(rss_mb(child.pid))
                print(f"  [{mode}] {t - args.warmup:5.1f} / {args.duration:g} s", end="\r", flush=True)
            next_goal += 1.0 / 50.0
            time.sleep(max(0.0, next_goal - (time.perf_counter() - t0)))
        t_end, cpu1, rss1, lat1 = time.perf_counter(), cpu_seconds(child.pid), rss_mb(child.pid), mock.n_latencies
        print()
    finally:
        if child.poll() is None:
            child.send_signal(signal.SIGINT)
            try:
                child.wait(15.0)
            except subprocess.TimeoutExpired:
                child.kill()
        log.close()
        stop.set()
        spinner.join(2.0)
        executor.shutdown()
        mock.destroy_node()
        goal_node.destroy_node()

    stats = json.loads(stats_out.read_text())
    starts, durations = np.array(stats["starts"]), np.array(stats["durations"])
    keep = (starts >= t_start) & (starts <= t_end)
    starts, durations = starts[keep], durations[keep]
    period = 1.0 / args.rate
    gaps = np.diff(starts)
    lat = mock.latencies[lat0:lat1] * 1e3
    return {
        "mode": mode,
        "rate_set_hz": args.rate,
        "duration_s": t_end - t_start,
        "ticks": int(len(starts)),
        "rate_hz": (len(starts) - 1) / (starts[-1] - starts[0]) if len(starts) > 1 else 0.0,
        "on_time_pct": 100.0 * float(np.mean(gaps <= 1.5 * period)) if len(gaps) else 0.0,
        "late_pct": 100.0 * float(np.mean(gaps > 1.5 * period)) if len(gaps) else 100.0,
        "tick_p50_us": float(np.percentile(durations, 50) * 1e6),
        "tick_p99_us": float(np.percentile(durations, 99) * 1e6),
        "tick_max_us": float(durations.max() * 1e6),
        "latency_kind": "js->command round trip" if mode == "joint_states" else "state age at command",
        "latency_p50_ms": float(np.percentile(lat, 50)) if len(lat) else float("nan"),
        "latency_p99_ms": float(np.percentile(lat, 99)) if len(lat) else float("nan"),
        "cpu_pct": 100.0 * (cpu1 - cpu0) / (t_end - t_start),
        "rss_start_mb": rss0,
        "rss_end_mb": rss1,
        "rss_max_mb": max([rss0, rss1, *rss_samples]),
        "counts": stats["counts"],
    }


def verdict(row: dict) -> str:
    fails = []
    if row["on_time_pct"] < TARGETS["on_time_pct"]:
        fails.append("on-time")
    if row["mode"] == "joint_states" and not row["latency_p99_ms"] <= TARGETS["latency_p99_ms"]:
        fails.append("latency")
    if row["cpu_pct"] > TARGETS["cpu_pct"]:
        fails.append("cpu")
    if row["rss_max_mb"] > TARGETS["rss_mb"] or row["rss_end_mb"] - row["rss_start_mb"] > 10.0:
        fails.append("rss")
    if fails:
        return "MISS: " + ", ".join(fails)
    return "ok" if row["mode"] == "joint_states" else "ok, latency n/a*"


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child-node":
        run_child(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--duration", type=float, default=60.0, help="measured seconds per mode")
    p.add_argument("--warmup", type=float, default=3.0, help="seconds before measuring")
    p.add_argument("--rate", type=float, default=500.0, help="control rate [Hz]")
    p.add_argument("--mode", choices=("timer", "joint_states", "both"), default="both")
    p.add_argument("--json", metavar="PATH", help="write the result rows as JSON")
    args = p.parse_args()
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    os.environ.setdefault("ROS_DOMAIN_ID", str(1 + os.getpid() % 100))
    os.environ.setdefault("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")
    os.environ.setdefault("ROS_LOG_DIR", tempfile.mkdtemp(prefix="bench_node-log."))
    import rclpy

    rclpy.init()
    rows = []
    modes = ("timer", "joint_states") if args.mode == "both" else (args.mode,)
    with tempfile.TemporaryDirectory(prefix="bench_node.") as tmp:
        for mode in modes:
            print(f"[bench_node] {mode}: node + mock Panda at {args.rate:g} Hz for {args.duration:g} s")
            rows.append(bench_mode(mode, args, Path(tmp)))
    rclpy.try_shutdown()
    print_table(
        f"ik_controller node, config (b), {args.rate:g} Hz, {args.duration:g} s "
        f"(targets: >= {TARGETS['on_time_pct']} % on time, latency p99 <= {TARGETS['latency_p99_ms']} ms, "
        f"CPU <= {TARGETS['cpu_pct']:g} %, RSS <= {TARGETS['rss_mb']:g} MB and flat)",
        ["mode", "rate Hz", "on time %", "tick p50/p99 us", "latency p50/p99 ms", "latency is", "CPU %",
         "RSS start/end MB", "verdict"],
        [[r["mode"], fmt(r["rate_hz"]), fmt(r["on_time_pct"], ".2f"),
          f"{fmt(r['tick_p50_us'], '.0f')} / {fmt(r['tick_p99_us'], '.0f')}",
          f"{fmt(r['latency_p50_ms'], '.2f')} / {fmt(r['latency_p99_ms'], '.2f')}", r["latency_kind"],
          fmt(r["cpu_pct"]), f"{fmt(r['rss_start_mb'])} / {fmt(r['rss_end_mb'])}", verdict(r)] for r in rows],
    )
    if any(r["mode"] == "timer" for r in rows):
        print("* timer mode: the latency column is the age of the newest joint state when the command leaves; "
              "the timer is not synchronized with the robot, so it spans up to one period by design and the "
              "latency target is judged in joint_states mode.")
    write_json(args.json, rows)


if __name__ == "__main__":
    main()
