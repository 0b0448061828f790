"""Soak: the ik_controller node for an hour under every input at once, sampled every second.

The node (the shipped ``ik_controller`` executable, nothing patched into its process) and the mock Panda
(``mock_robot`` as a strict drive at the control rate) run in their own processes, as in bench_node.py,
whose helpers (bench/node_bench/) this script reuses (lifecycle start-up, /proc readers, the ~/solve_ik
stream, the RSS slope). Config: the shipped config/panda.yaml (timer trigger, --rate) with its table,
plus a post beside the arm's path as a YAML obstacle and a ball sent on ~/collision_objects, so the
obstacle barrier works throughout. Inputs, all for the whole run on the shipped config's one frame task
``ee`` (so the node hands the task's target back and forth between the two streams, as it does when a
teleop and a tracker overlap; the worst case of that switching path):

* a twist stream on ~/ee/target_twist (TwistStamped, --twist-hz, stamped now): --twist-speed m/s in
  the base's x-y plane, its direction turning once every --twist-period s;
* a pose stream on ~/ee/target_pose (PoseStamped, --pose-hz): a circle of --circle-radius m in the
  x-y plane around a point ahead of the start pose, once every --circle-period s;
* a ~/solve_ik stream (--service-rate calls/s, random reachable goals; node_bench's ServiceStream).

Every second: the node process's RSS (VmRSS of /proc/<pid>/status) and its IK worker's; from the
latest /diagnostics (node.diagnostics_rate_hz): tick p50/p99/max over the node's last 4096 ticks
(~8 s at 500 Hz; every tick is in some window, so the run's max is exact; the run's p50/p99 are the
medians of the per-second values) and the on-time share between two readings: (ticks - late ticks) /
(elapsed x rate), bench_node's rule (a tick is on time when it starts at most 1.5 periods after the
previous one; a stall of n periods costs n ticks); the counters (QP failures, undelivered, guard cuts,
holds, tick errors, solve_ik calls/failures); the commands received by a reliable subscriber of
depth 1000, against the node's ticks (a command lost in transport shows as fewer commands than ticks; no DDS
message-lost event: with the rmw_fastrtps of these wheels it can deadlock this process, see
sim/mock_robot.py's LOST_EVENT_DEADLOCK); the loop thread's CPU ("control_loop",
/proc/<pid>/task/<tid>/stat); the closest obstacle distance (~/status); the load average.

The figures exclude the first --warmup s (RSS: least-squares slope in MB/min over the rest, flat
below 0.1 MB/min). Writes build/soak/soak.json (per-second series + summary), soak.png (RSS and tick
time over the run) and the node's and mock's logs; prints the table.

    python bench/soak.py [--duration 3600] [--warmup 120] [--rate 500] [--out build/soak]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import yaml

from common import REPO, fmt, machine_note, print_table  # also puts roboplan_ik_ros on sys.path
from node_bench.configs import start_pose
from node_bench.process_stats import (RSS_FLAT_MB_PER_MIN, RSS_SETTLE_S, TICK_THREAD, child_pids, cpu_seconds, rss_mb,
                                      rss_summary, thread_cpu)
from node_bench.processes import _wait, manage_startup, stop_processes
from node_bench.service_stream import ServiceStream, service_goals

NODE = "ik_controller"
MOCK = "mock_robot"
COMMAND_TOPIC = "/forward_position_controller/commands"
# beside the arm's path (the pose circle and the twist's drift from the start TCP at (0.31, 0, 0.49) m, z down)
POST = {"name": "soak_post", "shape": "box", "size": [0.06, 0.06, 0.5], "position": [0.45, 0.21, 0.25],
        "orientation": [0.0, 0.0, 0.0, 1.0], "frame": "world"}
BALL = {"id": "soak_ball", "radius": 0.05, "position": [0.52, -0.2, 0.42]}  # on ~/collision_objects
# per-second series written to the JSON (one list each)
SERIES = ("t_s", "rss_mb", "worker_rss_mb", "tick_p50_us", "tick_p99_us", "tick_max_us", "on_time_pct", "ticks",
          "late_ticks", "rate_hz", "loop_cpu_pct", "process_cpu_pct", "mock_cpu_pct", "commands", "commands_at_diag",
          "qp_failures", "undelivered", "guard_cuts", "holds", "tick_errors", "solve_sent", "solve_answered",
          "solve_ok", "solve_ik_calls", "solve_ik_failures", "closest_obstacle_m", "mode", "load1", "twist_gap_max_ms",
          "sample_ms")


def soak_config(rate: float) -> dict:
    """The shipped panda.yaml (as bench_node's config (c), timer trigger) + the post as a YAML obstacle. This
    tree's file: the venv's ament share may hold another tree's (a shared venv), with keys this code lacks."""
    data = yaml.safe_load((REPO / "roboplan_ik_ros" / "config" / "panda.yaml").read_text())
    data.setdefault("node", {}).update(control_rate_hz=float(rate), trigger="timer")
    data["obstacles"] = list(data.get("obstacles", [])) + [dict(POST)]
    return data


def ball_message():
    from geometry_msgs.msg import Pose
    from shape_msgs.msg import SolidPrimitive

    from roboplan_ik_interfaces.msg import CollisionObject

    msg = CollisionObject(id=BALL["id"], operation=CollisionObject.ADD)
    msg.header.frame_id = "world"
    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = BALL["position"]
    msg.pose.orientation.w = 1.0
    msg.primitives = [SolidPrimitive(type=SolidPrimitive.SPHERE, dimensions=[BALL["radius"]])]
    msg.primitive_poses = [Pose()]
    msg.primitive_poses[0].orientation.w = 1.0
    return msg


class Observer:
    """The bench's view of the node: latest /diagnostics values, ~/status, the command stream."""

    def __init__(self, node) -> None:
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
        from std_msgs.msg import Float64MultiArray, String

        from roboplan_ik_interfaces.msg import ControllerStatus

        self.lock = threading.Lock()
        self.diag: dict[str, str] = {}
        self.diag_stamp = float("nan")  # the node's stamp of the latest /diagnostics [s]
        self.n_diag = 0
        self.commands_at_diag = 0  # commands received when the latest /diagnostics arrived (its ticks' commands)
        self.status = None
        self.closest_min = math.inf  # since the last sample
        self.modes: dict[str, int] = {}
        self.motion_limits: dict[str, int] = {}
        self.commands = 0
        self.drive: dict = {}
        node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diag, 10)
        node.create_subscription(ControllerStatus, f"/{NODE}/status", self._on_status, 10)
        latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        node.create_subscription(String, f"/{MOCK}/drive_status", self._on_drive, latched)
        deep = QoSProfile(depth=1000, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE)
        node.create_subscription(Float64MultiArray, COMMAND_TOPIC, self._on_command, deep)  # no message-lost event

    def _on_diag(self, msg) -> None:
        for st in msg.status:
            if st.name.startswith(f"{NODE}:"):
                with self.lock:
                    self.diag = {kv.key: kv.value for kv in st.values}
                    self.diag_stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
                    self.n_diag += 1
                    self.commands_at_diag = self.commands

    def _on_status(self, msg) -> None:
        with self.lock:
            self.status = msg
            if math.isfinite(msg.closest_obstacle_distance):
                self.closest_min = min(self.closest_min, msg.closest_obstacle_distance)
            self.modes[msg.mode] = self.modes.get(msg.mode, 0) + 1
            code = msg.motion_limit or "none"
            self.motion_limits[code] = self.motion_limits.get(code, 0) + 1

    def _on_drive(self, msg) -> None:
        with self.lock:
            self.drive = json.loads(msg.data)

    def _on_command(self, msg) -> None:
        self.commands += 1

    def take(self, restart: bool = True) -> dict:
        """The latest readings; the closest-obstacle minimum restarts (``restart``)."""
        with self.lock:
            out = {"diag": dict(self.diag), "diag_stamp": self.diag_stamp, "n_diag": self.n_diag,
                   "mode": self.status.mode if self.status is not None else "",
                   "closest": self.closest_min, "commands": self.commands,
                   "commands_at_diag": self.commands_at_diag}
            if restart:
                self.closest_min = math.inf
        return out


def _int(d: dict, key: str) -> int:
    try:
        return int(d[key])
    except (KeyError, ValueError):
        return -1


def _float(d: dict, key: str) -> float:
    try:
        return float(d[key])
    except (KeyError, ValueError):
        return float("nan")


class Sampler:
    """One row of the per-second series from /proc and the observer."""

    def __init__(self, node_pid: int, mock_pid: int, obs: Observer, stream, rate: float) -> None:
        self.node_pid, self.mock_pid, self.obs, self.stream, self.rate = node_pid, mock_pid, obs, stream, rate
        self.series: dict[str, list] = {k: [] for k in SERIES}
        self._prev = None  # (perf time, loop thread CPU s, process CPU s, mock CPU s, diag stamp, ticks, late)
        self._workers: list[int] = []  # the node's child processes (its IK worker), looked up every 10 s
        self._n = 0

    def _loop_cpu(self) -> float:
        named = [c for name, c in thread_cpu(self.node_pid).values() if name == TICK_THREAD]
        return named[0] if named else float("nan")

    def sample(self, t: float, twist_gap_max: float) -> dict:
        """``twist_gap_max`` [s]: the bench's longest gap between two twists since the last sample."""
        now = time.perf_counter()
        seen = self.obs.take()
        d = seen["diag"]
        loop_cpu, proc_cpu, mock_cpu = self._loop_cpu(), cpu_seconds(self.node_pid), cpu_seconds(self.mock_pid)
        if self._n % 10 == 0:  # a scan of /proc: not every second
            self._workers = child_pids(self.node_pid)
        self._n += 1
        worker_rss = 0.0
        for pid in self._workers:
            try:
                worker_rss += rss_mb(pid)
            except (FileNotFoundError, ProcessLookupError):
                pass
        ticks, late, stamp = _int(d, "ticks"), _int(d, "late_ticks"), seen["diag_stamp"]
        row = {"t_s": round(t, 3), "rss_mb": rss_mb(self.node_pid), "worker_rss_mb": worker_rss,
               "tick_p50_us": _float(d, "tick_p50_us"), "tick_p99_us": _float(d, "tick_p99_us"),
               "tick_max_us": _float(d, "tick_max_us"), "ticks": ticks, "late_ticks": late,
               "rate_hz": _float(d, "rate_hz (achieved)"), "on_time_pct": float("nan"),
               "loop_cpu_pct": float("nan"), "process_cpu_pct": float("nan"), "mock_cpu_pct": float("nan"),
               "commands": seen["commands"], "commands_at_diag": seen["commands_at_diag"],
               "qp_failures": _int(d, "qp_failures"), "undelivered": _int(d, "undelivered"),
               "guard_cuts": _int(d, "guard_cuts"), "holds": _int(d, "holds"), "tick_errors": _int(d, "tick_errors"),
               "solve_sent": self.stream.sent, "solve_answered": self.stream.answered,
               "solve_ok": self.stream.succeeded, "solve_ik_calls": _int(d, "solve_ik_calls"),
               "solve_ik_failures": _int(d, "solve_ik_failures"),
               "closest_obstacle_m": seen["closest"] if math.isfinite(seen["closest"]) else float("nan"),
               "mode": seen["mode"], "load1": os.getloadavg()[0], "twist_gap_max_ms": 1e3 * twist_gap_max}
        if self._prev is not None:
            t0, l0, p0, m0, s0, k0, x0 = self._prev
            dt = now - t0
            row.update(loop_cpu_pct=100.0 * (loop_cpu - l0) / dt, process_cpu_pct=100.0 * (proc_cpu - p0) / dt,
                       mock_cpu_pct=100.0 * (mock_cpu - m0) / dt)
            if stamp > s0 and ticks >= k0 >= 0:  # a new /diagnostics since the last sample
                row["on_time_pct"] = min(100.0, 100.0 * ((ticks - k0) - (late - x0)) / ((stamp - s0) * self.rate))
        if self._prev is None or stamp > self._prev[4]:
            self._prev = (now, loop_cpu, proc_cpu, mock_cpu, stamp, ticks, late)
        else:  # no new /diagnostics: the on-time share waits for the next one; CPU from this sample on
            self._prev = (now, loop_cpu, proc_cpu, mock_cpu, *self._prev[4:])
        row["sample_ms"] = 1e3 * (time.perf_counter() - now)
        for k in SERIES:
            self.series[k].append(row[k])
        return row


def summarize(series: dict[str, list], warmup: float, rate: float, diag_first: dict, diag_last: dict) -> dict:
    """The figures over the samples after ``warmup`` s (see the module docstring)."""
    s = {k: np.array(v, dtype=object if k == "mode" else float) for k, v in series.items()}
    t = s["t_s"]
    late = t >= warmup
    rss = rss_summary(t, s["rss_mb"], 0.0, float(t[-1]), settle_s=warmup)

    def col(k: str) -> np.ndarray:
        v = s[k][late]
        return v[np.isfinite(v)]

    def delta(k: str) -> int:
        v = col(k)
        v = v[v >= 0]
        return int(v[-1] - v[0]) if len(v) >= 2 else -1

    worker = col("worker_rss_mb")
    worker_slope = float(np.polyfit(t[late] / 60.0, s["worker_rss_mb"][late], 1)[0]) if late.sum() > 2 else None
    # on time over the whole window: the counters of its first and last /diagnostics readings
    k0, k1 = _int(diag_first["diag"], "ticks"), _int(diag_last["diag"], "ticks")
    x0, x1 = _int(diag_first["diag"], "late_ticks"), _int(diag_last["diag"], "late_ticks")
    span = diag_last["diag_stamp"] - diag_first["diag_stamp"]
    on_time = min(100.0, 100.0 * ((k1 - k0) - (x1 - x0)) / (span * rate)) if span > 0 and k0 >= 0 else float("nan")
    commands = delta("commands")
    c0, c1 = diag_first["commands_at_diag"], diag_last["commands_at_diag"]  # at the same /diagnostics as k0, k1
    closest = col("closest_obstacle_m")
    load = col("load1")
    return {
        "window_s": float(t[late][-1] - t[late][0]) if late.any() else 0.0,
        "rss_start_mb": float(col("rss_mb")[0]), "rss_end_mb": float(col("rss_mb")[-1]),
        "rss_max_mb": float(col("rss_mb").max()), "rss_run_max_mb": float(np.nanmax(s["rss_mb"])),
        "rss_slope_mb_per_min": rss["rss_slope_mb_per_min"], "rss_flat": rss["rss_flat"],
        "worker_rss_start_mb": float(worker[0]) if len(worker) else float("nan"),
        "worker_rss_end_mb": float(worker[-1]) if len(worker) else float("nan"),
        "worker_rss_slope_mb_per_min": worker_slope,
        "tick_p50_us": float(np.median(col("tick_p50_us"))), "tick_p99_us": float(np.median(col("tick_p99_us"))),
        "tick_p99_worst_us": float(col("tick_p99_us").max()), "tick_max_us": float(col("tick_max_us").max()),
        "on_time_pct": on_time, "ticks": k1 - k0, "late_ticks": x1 - x0,
        "on_time_worst_second_pct": float(col("on_time_pct").min()) if len(col("on_time_pct")) else float("nan"),
        "seconds_below_99_pct": int(np.sum(col("on_time_pct") < 99.0)),
        "loop_cpu_pct": float(np.mean(col("loop_cpu_pct"))), "process_cpu_pct": float(np.mean(col("process_cpu_pct"))),
        "mock_cpu_pct": float(np.mean(col("mock_cpu_pct"))),
        "commands": commands, "commands_minus_ticks": (c1 - c0) - (k1 - k0),
        "commands_per_tick": (c1 - c0) / (k1 - k0) if k1 > k0 else float("nan"),
        "twist_gap_max_ms": float(col("twist_gap_max_ms").max()),
        "bench_twist_gaps_over_50ms": int(np.sum(col("twist_gap_max_ms") > 50.0)),
        "sample_ms_max": float(col("sample_ms").max()),
        "undelivered": delta("undelivered"), "qp_failures": delta("qp_failures"),
        "qp_failures_run": _int(diag_last["diag"], "qp_failures"), "guard_cuts": delta("guard_cuts"),
        "holds": delta("holds"), "tick_errors": delta("tick_errors"),
        "solve_sent": delta("solve_sent"), "solve_answered": delta("solve_answered"), "solve_ok": delta("solve_ok"),
        "solve_ik_calls": delta("solve_ik_calls"), "solve_ik_failures": delta("solve_ik_failures"),
        "closest_obstacle_min_m": float(closest.min()) if len(closest) else float("nan"),
        "closest_obstacle_median_m": float(np.median(closest)) if len(closest) else float("nan"),
        "load1_mean": float(load.mean()), "load1_min": float(load.min()), "load1_max": float(load.max()),
    }


def print_summary(sm: dict, args, counters: dict, extra: dict) -> None:
    slope = sm["rss_slope_mb_per_min"]
    rows = [
        ["window (after warm-up)", f"{sm['window_s']:.0f} s (warm-up {args.warmup:g} s excluded)"],
        ["node RSS start / end / max", f"{sm['rss_start_mb']:.1f} / {sm['rss_end_mb']:.1f} / {sm['rss_max_mb']:.1f} MB"
                                       f" (whole run max {sm['rss_run_max_mb']:.1f})"],
        ["node RSS slope (least squares)", ("-" if slope is None else f"{slope:+.4f} MB/min")
         + f", flat (< {RSS_FLAT_MB_PER_MIN:g}): " + {True: "yes", False: "NO", None: "not judged"}[sm["rss_flat"]]],
        ["IK worker RSS start / end, slope", f"{fmt(sm['worker_rss_start_mb'])} / {fmt(sm['worker_rss_end_mb'])} MB, "
                                             f"{fmt(sm['worker_rss_slope_mb_per_min'], '+.4f')} MB/min"],
        ["tick p50 / p99 (median of the seconds)", f"{sm['tick_p50_us']:.0f} / {sm['tick_p99_us']:.0f} us"],
        ["tick p99 worst second / tick max", f"{sm['tick_p99_worst_us']:.0f} / {sm['tick_max_us']:.0f} us"],
        ["on time", f"{sm['on_time_pct']:.3f} % ({sm['ticks']} ticks, {sm['late_ticks']} late); worst second "
                    f"{fmt(sm['on_time_worst_second_pct'], '.1f')} %, {sm['seconds_below_99_pct']} s below 99 %"],
        ["CPU loop thread / node process / mock", f"{sm['loop_cpu_pct']:.1f} / {sm['process_cpu_pct']:.1f} / "
                                                  f"{sm['mock_cpu_pct']:.1f} % of a core"],
        ["commands received (per tick; minus ticks)", f"{sm['commands']} ({fmt(sm['commands_per_tick'], '.5f')}; "
                                                      f"{sm['commands_minus_ticks']:+d})"],
        ["undelivered (node's count)", str(sm["undelivered"])],
        ["QP failures", f"{sm['qp_failures']} (whole run {sm['qp_failures_run']})"],
        ["guard cuts / holds / tick errors", f"{sm['guard_cuts']} / {sm['holds']} / {sm['tick_errors']}"],
        ["~/solve_ik sent / answered / ok (bench)", f"{sm['solve_sent']} / {sm['solve_answered']} / {sm['solve_ok']}"
                                                    f" (error codes, whole run: {extra['codes']})"],
        ["~/solve_ik calls / failures (node)", f"{sm['solve_ik_calls']} / {sm['solve_ik_failures']}"],
        ["closest obstacle min / median", f"{sm['closest_obstacle_min_m'] * 1e3:.1f} / "
                                          f"{sm['closest_obstacle_median_m'] * 1e3:.1f} mm (d_min 20 mm)"],
        ["strict drive (mock)", f"{extra['drive'].get('state', '?')}, {extra['drive'].get('streams', '?')} streams"
                                + (f"; {(extra['drive'].get('violation') or {}).get('message', '')}"
                                   if extra['drive'].get('state') == 'faulted' else "")],
        ["bench: longest gap between twists", f"{sm['twist_gap_max_ms']:.1f} ms ({sm['bench_twist_gaps_over_50ms']} s "
                                              f"with a gap > 50 ms; sampling took at most {sm['sample_ms_max']:.1f} ms)"],
        ["load average (1 min) mean / min / max", f"{sm['load1_mean']:.2f} / {sm['load1_min']:.2f} / "
                                                  f"{sm['load1_max']:.2f}"],
    ]
    print_table(f"Soak: ik_controller at {args.rate:g} Hz, {sm.get('ran_s', args.duration):.0f} s of {args.duration:g}, twist {args.twist_hz:g} Hz + pose "
                f"{args.pose_hz:g} Hz + ~/solve_ik {args.service_rate:g}/s, obstacles", ["figure", "value"], rows)
    print("counters at the end (/diagnostics): " + ", ".join(f"{k} {v}" for k, v in counters.items()))


def plot(series: dict[str, list], warmup: float, summary: dict, path: Path, title: str) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("[soak] matplotlib is not installed: no plot")
        return False
    t = np.array(series["t_s"], dtype=float) / 60.0
    rss = np.array(series["rss_mb"], dtype=float)
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(11, 7), sharex=True)
    ax1.plot(t, rss, lw=1.0, label="node RSS (VmRSS, every 1 s)")
    late = t >= warmup / 60.0
    slope = summary["rss_slope_mb_per_min"]
    if slope is not None and late.sum() > 2:
        a, b = np.polyfit(t[late], rss[late], 1)
        ax1.plot(t[late], a * t[late] + b, "k--", lw=1.0, label=f"least squares after warm-up: {a:+.4f} MB/min")
    lo, hi = np.nanmin(rss), np.nanmax(rss)
    ax1.set_ylim(lo - max(2.0, 0.1 * (hi - lo)), hi + max(2.0, 0.1 * (hi - lo)))
    ax1.set_ylabel("RSS [MB]")
    ax1.legend(loc="lower right")
    for k, style in (("tick_max_us", dict(lw=0.5, color="0.75", label="max")),
                     ("tick_p99_us", dict(lw=1.0, color="C3", label="p99")),
                     ("tick_p50_us", dict(lw=1.0, color="C0", label="p50"))):
        ax2.plot(t, np.array(series[k], dtype=float), **style)
    ax2.set_yscale("log")
    ax3 = ax2.twinx()  # what else ran on the machine: explains most tick-time bumps
    ax3.plot(t, np.array(series["load1"], dtype=float), lw=0.8, ls=":", color="C2")
    ax3.set_ylabel("load average (1 min), dotted", color="C2")
    ax3.set_ylim(0, max(4.0, 1.1 * float(np.nanmax(np.array(series["load1"], dtype=float)))))
    ax2.set_ylabel("tick [us] (node's last 4096 ticks)")
    ax2.set_xlabel("time since activation [min]")
    ax2.legend(loc="upper right")
    for ax in (ax1, ax2):
        ax.axvspan(0, warmup / 60.0, color="0.92", lw=0)
        ax.grid(alpha=0.3)
    ax1.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "-C", str(REPO), "log", "-1", "--format=%h %s"], capture_output=True, text=True)
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        return out.stdout.strip()[:100] + (" (with uncommitted changes)" if dirty else "")
    except OSError:
        return "?"


def _ros_args(params: dict) -> list[str]:
    out = ["--ros-args"]
    for k, v in params.items():
        out += ["-p", f"{k}:={v}"]
    return out


def run(args) -> int:
    import pinocchio as pin
    import rclpy
    from geometry_msgs.msg import PoseStamped, TwistStamped

    from roboplan_ik_interfaces.msg import CollisionObject
    from roboplan_ik_ros.node.message_conversions import pose_from_se3
    from roboplan_ik_ros.node.spin import make_executor, spin_until_shutdown

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cfg_path = out / "soak_config.yaml"
    data = soak_config(args.rate)
    cfg_path.write_text(yaml.safe_dump(data, sort_keys=False))
    max_linear_speed = float(data["node"]["streaming"]["max_linear_speed"])  # unitless twists scale by it
    T0 = start_pose()
    center = T0.translation + np.array(args.circle_center)
    svc_goals = service_goals(200, args.seed)
    meta = {"commit": git_commit(), "argv": sys.argv, "args": vars(args), "started_utc": time.strftime(
        "%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "machine_start": machine_note(), "config": str(cfg_path),
        "ros_domain_id": os.environ.get("ROS_DOMAIN_ID"), "rmw": os.environ.get("RMW_IMPLEMENTATION")}
    print(f"[soak] {meta['commit']}; {meta['machine_start']}")
    rclpy.init()
    executor = make_executor()
    aux = rclpy.create_node("soak_bench")
    executor.add_node(aux)
    obs = Observer(aux)
    twist_pub = aux.create_publisher(TwistStamped, f"/{NODE}/ee/target_twist", 10)
    pose_pub = aux.create_publisher(PoseStamped, f"/{NODE}/ee/target_pose", 10)
    from rclpy.qos import QoSProfile, ReliabilityPolicy

    obj_pub = aux.create_publisher(CollisionObject, f"/{NODE}/collision_objects",
                                   QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
    stream = ServiceStream(aux, args.service_rate, *svc_goals, "panda_link0")
    stream.counting = True
    stop = threading.Event()
    spinner = threading.Thread(target=spin_until_shutdown, args=(executor, stop), daemon=True)
    spinner.start()
    node_log, mock_log = open(out / "node.log", "w"), open(out / "mock.log", "w")
    mock = subprocess.Popen([sys.executable, "-m", "roboplan_ik_ros.sim.mock_robot", *_ros_args(
        {"rate_hz": float(args.rate), "strict_drive": "true", "command_period": 1.0 / args.rate,
         # as test/e2e.py: a starved mock publishes /joint_states late (the node goes stale) and takes its commands
         # in bursts, so its strict drive sees no gap between a stream and the re-seeded one after it
         "rt_priority": 40})],
        stdout=mock_log, stderr=subprocess.STDOUT)
    child = None
    sampler = None
    diag_first = diag_last = None
    counters: dict = {}
    status = 1
    t_act = None
    try:
        _wait(lambda: bool(obs.drive) or aux.count_publishers("/joint_states") > 0, 60.0, "the mock robot",
                 [(mock, out / "mock.log")])
        spawned_at = time.time()
        child = subprocess.Popen([sys.executable, "-m", "roboplan_ik_ros.node.ik_controller",
                                  *_ros_args({"config_file": str(cfg_path)})],
                                 stdout=node_log, stderr=subprocess.STDOUT)
        procs = [(child, out / "node.log"), (mock, out / "mock.log")]
        startup = manage_startup(aux, NODE, spawned_at, procs)
        if not startup["ok"]:
            raise RuntimeError(f"configure/activate failed: {(out / 'node.log').read_text()[-3000:]}")
        t_act = time.perf_counter()
        meta["startup"] = startup
        print(f"[soak] node active ({startup['process_to_active_s']:.1f} s after start); streams on for "
              f"{args.duration:g} s")
        obj_pub.publish(ball_message())
        if not stream.start():
            raise RuntimeError("~/solve_ik did not appear within 10 s")
        sampler = Sampler(child.pid, mock.pid, obs, stream, args.rate)
        twist, pose = TwistStamped(), PoseStamped()
        twist.header.frame_id = pose.header.frame_id = "panda_link0"
        unitless = args.twist_speed / max_linear_speed
        k, next_t, next_sample, last_print = 0, t_act, t_act + 1.0, t_act
        last_twist, gap_max = None, 0.0
        pose_every = max(1, int(round(args.twist_hz / args.pose_hz)))
        while (now := time.perf_counter()) < t_act + args.duration:
            t = now - t_act
            if not (child.poll() is None and mock.poll() is None):
                raise RuntimeError(f"a process exited: node {child.poll()}, mock {mock.poll()}")
            a = 2.0 * math.pi * t / args.twist_period
            twist.twist.linear.x, twist.twist.linear.y = unitless * math.cos(a), unitless * math.sin(a)
            twist.header.stamp = aux.get_clock().now().to_msg()
            twist_pub.publish(twist)
            if last_twist is not None:
                gap_max = max(gap_max, now - last_twist)
            last_twist = now
            if k % pose_every == 0:
                b = 2.0 * math.pi * t / args.circle_period
                p = center + args.circle_radius * np.array([math.cos(b), math.sin(b), 0.0])
                pose_from_se3(pin.SE3(T0.rotation, p), pose.pose)
                pose.header.stamp = twist.header.stamp
                pose_pub.publish(pose)
            if k % int(args.twist_hz) == 0 and t < 10.0:
                obj_pub.publish(ball_message())  # ADD replaces: resent for the first seconds (discovery)
            k += 1
            if now >= next_sample:
                row = sampler.sample(t, gap_max)
                gap_max = 0.0
                next_sample += 1.0
                if diag_first is None and t >= args.warmup and row["ticks"] >= 0:
                    diag_first = obs.take(restart=False)
                if now - last_print >= args.print_every:
                    last_print = now
                    print(f"[soak] {t:7.0f} s  RSS {row['rss_mb']:.1f} MB  tick p50/p99/max {row['tick_p50_us']:.0f}/"
                          f"{row['tick_p99_us']:.0f}/{row['tick_max_us']:.0f} us  on time {row['on_time_pct']:.2f} %  "
                          f"loop CPU {row['loop_cpu_pct']:.0f} %  qp_failures {row['qp_failures']}  "
                          f"undelivered {row['undelivered']}  solve_ik {row['solve_ik_calls']}"
                          f"  closest {row['closest_obstacle_m'] * 1e3:.0f} mm  {row['mode']}  load {row['load1']:.2f}",
                          flush=True)
            next_t += 1.0 / args.twist_hz
            time.sleep(max(0.0, next_t - time.perf_counter()))
        stream.stop()
        time.sleep(1.0)  # answers in flight; one more /diagnostics
        diag_last = obs.take()
        counters = {key: diag_last["diag"].get(key) for key in (
            "ticks", "late_ticks", "qp_failures", "undelivered", "guard_cuts", "holds", "reseeds", "tick_errors",
            "goals_rejected", "joint_states_rejected", "barrier_refusals", "collision_objects_refused",
            "stream_timeouts", "acceleration_nonviable", "solve_ik_calls", "solve_ik_failures", "obstacles",
            "loop_scheduling")}
        status = 0
    except KeyboardInterrupt:
        print("[soak] interrupted: the figures cover the run so far")
        diag_last = obs.take()
        status = 0
    except Exception as exc:  # a process died, a start-up failed: say so, keep what was sampled
        meta["error"] = f"{type(exc).__name__}: {exc}"
        print(f"[soak] FAILED: {meta['error']}")
        diag_last = obs.take()
    finally:
        stream.stop()
        stop_processes(child, mock)
        node_log.close()
        mock_log.close()
        drive = dict(obs.drive)
        stop.set()
        spinner.join(2.0)
        executor.shutdown()
        aux.destroy_node()
        rclpy.try_shutdown()
    if sampler is None or len(sampler.series["t_s"]) < 3:
        print("[soak] no samples")
        return 1
    if diag_first is None:  # a run shorter than the warm-up: judge what there is
        print(f"[soak] the run ended before the warm-up ({args.warmup:g} s): the figures include it")
        args.warmup = 0.0
        diag_first = {"diag": {"ticks": sampler.series["ticks"][0], "late_ticks": sampler.series["late_ticks"][0]},
                      "diag_stamp": float("nan"), "commands_at_diag": sampler.series["commands_at_diag"][0]}
    meta.update(machine_end=machine_note(), ended_utc=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                node_exit=child.returncode if child is not None else None, drive=drive,
                solve_ik_codes=dict(stream.codes),
                modes=obs.modes, motion_limits=obs.motion_limits, counters=counters,
                node_log_warnings=sum(("WARN" in ln or "ERROR" in ln) for ln in (out / "node.log").read_text(
                    errors="replace").splitlines()))
    summary = summarize(sampler.series, args.warmup, args.rate, diag_first, diag_last)
    print(f"[soak] {meta['machine_end']}")
    summary["ran_s"] = float(sampler.series["t_s"][-1])
    print_summary(summary, args, counters, {"drive": drive,
                                            "codes": dict(stream.codes)})
    print(f"modes (~/status samples): {obs.modes}; motion_limit codes: {obs.motion_limits}; "
          f"node log WARN/ERROR lines: {meta['node_log_warnings']}")
    (out / "soak.json").write_text(json.dumps({"meta": meta, "summary": summary, "series": sampler.series},
                                              default=float))
    slope = summary["rss_slope_mb_per_min"]
    ran_s = float(sampler.series["t_s"][-1])  # less than --duration when the run ended early
    title = (f"ik_controller soak at {args.rate:g} Hz, {ran_s / 60:.3g} min (warm-up {args.warmup:g} s shaded), "
             f"commit {meta['commit'].split()[0]}\nafter warm-up: RSS slope "
             + ("-" if slope is None else f"{slope:+.4f}") + f" MB/min, tick p50/p99 {summary['tick_p50_us']:.0f}/"
             f"{summary['tick_p99_us']:.0f} us (max {summary['tick_max_us'] / 1e3:.1f} ms), on time "
             f"{summary['on_time_pct']:.2f} %, commands minus ticks {summary['commands_minus_ticks']:+d}, "
             f"QP failures {summary['qp_failures']}, "
             f"load {summary['load1_mean']:.1f}")
    if plot(sampler.series, args.warmup, summary, out / "soak.png", title):
        print(f"[soak] wrote {out / 'soak.json'} and {out / 'soak.png'}")
    return status


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--duration", type=float, default=3600.0, help="[s] from activation, warm-up included")
    p.add_argument("--warmup", type=float, default=RSS_SETTLE_S, help="[s] left out of the figures")
    p.add_argument("--rate", type=float, default=500.0, help="control rate [Hz] (the mock publishes at it too)")
    p.add_argument("--twist-hz", type=float, default=100.0)
    p.add_argument("--twist-speed", type=float, default=0.05, help="[m/s]")
    p.add_argument("--twist-period", type=float, default=20.0, help="[s] per turn of the twist's direction")
    p.add_argument("--pose-hz", type=float, default=50.0)
    p.add_argument("--circle-radius", type=float, default=0.06, help="[m]")
    p.add_argument("--circle-period", type=float, default=8.0, help="[s]")
    p.add_argument("--circle-center", type=float, nargs=3, default=[0.1, 0.0, -0.05],
                   help="[m] from the start TCP (0.31, 0, 0.49)")
    p.add_argument("--service-rate", type=float, default=20.0, help="~/solve_ik calls/s")
    p.add_argument("--seed", type=int, default=0, help="random ~/solve_ik goals")
    p.add_argument("--print-every", type=float, default=60.0, help="[s] progress lines")
    p.add_argument("--out", default=str(REPO / "build" / "soak"), help="output directory")
    args = p.parse_args()
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    os.environ.setdefault("ROS_DOMAIN_ID", str(1 + os.getpid() % 100))
    os.environ.setdefault("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")
    os.environ.setdefault("ROS_LOG_DIR", tempfile.mkdtemp(prefix="soak-log."))
    sys.exit(run(args))


if __name__ == "__main__":
    main()
