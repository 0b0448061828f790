"""The motion scenarios (``--motion``): config (c) with and without its acceleration bounds, from rest:
step goals, a reversed goal and a 50 Hz goal stream; every command recorded over DDS, peak acceleration
and jerk per joint as ratios of the drive's bounds, the goal time of a step."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import yaml

from common import fmt, print_table

from .children import BENCH_NODE
from .configs import node_config
from .processes import _wait, manage_startup, stop_processes


# ------------------------------------------------------------------------- motion: acceleration and jerk
#: --motion variants of config (c): "bounded" as shipped; "unbounded": no acceleration limit and goal
#: smoothing max_speed instead of max_acceleration (the velocity-only behaviour before the bounds)
MOTION_VARIANTS = ("bounded", "unbounded")
STEP_OFFSETS = ([0.0, 0.2, 0.0], [0.1, 0.05, -0.1], [0.0, -0.1, 0.05], [0.0, 0.0, 0.0])  # [m] from the start TCP
REVERSE_AFTER_S = 0.3
SETTLE_M = 1e-3  # [m] goal time: the commanded TCP within this of the goal from then on


def drive_bounds(joints) -> tuple[np.ndarray, np.ndarray]:
    """(a_max, j_max) per joint [rad/s^2, rad/s^3] from config/panda_joint_limits.yaml, what the node's
    acceleration limit is configured with (Franka's documented bounds)."""
    from roboplan_ik_ros.core.model.joint_limits_file import load_joint_limits
    from roboplan_ik_ros.node.ik_controller import default_config_file

    limits = load_joint_limits(Path(default_config_file("panda")).parent / "panda_joint_limits.yaml")
    return (np.array([limits.acceleration[j] for j in joints]), np.array([limits.jerk[j] for j in joints]))


def command_ratios(commands: np.ndarray, dt: float, a_max: np.ndarray, j_max: np.ndarray) -> dict:
    """Peak |acceleration| and |jerk| per joint as ratios of the bounds, from consecutive commands
    (rows) at the nominal period ``dt`` (what a drive computes), and the share of command steps where
    some joint is over its acceleration bound."""
    q = np.asarray(commands, dtype=float)
    if len(q) < 4:
        return {"n": len(q), "acc_ratio": [float("nan")] * q.shape[1], "jerk_ratio": [float("nan")] * q.shape[1],
                "over_acc_pct": float("nan")}
    acc = np.abs(np.diff(q, 2, axis=0)) / dt**2 / a_max
    jerk = np.abs(np.diff(q, 3, axis=0)) / dt**3 / j_max
    return {"n": len(q), "acc_ratio": acc.max(axis=0).tolist(), "jerk_ratio": jerk.max(axis=0).tolist(),
            "over_acc_pct": 100.0 * float(np.mean(np.any(acc > 1.0 + 1e-9, axis=1)))}


def goal_time(times: np.ndarray, tcp: np.ndarray, goal: np.ndarray, t_sent: float, tol: float = SETTLE_M) -> float:
    """Seconds from ``t_sent`` until the commanded TCP positions (rows, at ``times``) stay within ``tol``
    of ``goal`` (nan if they never settle)."""
    far = np.linalg.norm(tcp - goal, axis=1) >= tol
    if far[-1]:
        return float("nan")
    last_far = np.flatnonzero(far)
    return float(times[last_far[-1] + 1] - t_sent) if last_far.size else 0.0


class CommandRecorder:
    """Keeps every command on the forward_command topic with its receive time (reliable, deep queue)."""

    def __init__(self, node, topic: str = "/forward_position_controller/commands") -> None:
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        from std_msgs.msg import Float64MultiArray

        self.times: list[float] = []
        self.values: list[np.ndarray] = []
        self.sub = node.create_subscription(Float64MultiArray, topic, self._on, QoSProfile(
            depth=1000, reliability=ReliabilityPolicy.RELIABLE))

    def _on(self, msg) -> None:
        self.times.append(time.perf_counter())
        self.values.append(np.array(msg.data))

    def since(self, t0: float, t1: float = np.inf) -> tuple[np.ndarray, np.ndarray]:
        n = len(self.times)
        idx = [k for k in range(n) if t0 <= self.times[k] <= t1]
        return np.array([self.times[k] for k in idx]), np.array([self.values[k] for k in idx])

    def wait_rest(self, since: float, timeout: float = 8.0, still_s: float = 0.25, tol: float = 1e-6) -> float:
        """Block until the commands after ``since`` stopped moving (every joint within ``tol`` rad per
        command for ``still_s``); returns that time (or ``since + timeout``)."""
        deadline = since + timeout
        while time.perf_counter() < deadline:
            time.sleep(0.05)
            t, q = self.since(since)
            if len(q) < 10 or t[-1] - t[0] < still_s:
                continue
            moving = np.flatnonzero(np.abs(np.diff(q, axis=0)).max(axis=1) > tol)
            last_move = t[moving[-1] + 1] if moving.size else t[0]
            if t[-1] - last_move >= still_s:
                return float(t[-1])
        return deadline


def motion_config(variant: str, rate: float) -> dict:
    data = node_config("c", "timer", rate)
    if variant == "unbounded":
        data["limits"] = [lim for lim in data["limits"] if lim["type"] != "acceleration"]
        data["node"].setdefault("goal_smoothing", {})["type"] = "max_speed"
    return data


def run_motion(k: int, variant: str, args, tmp: Path, T0) -> list[dict]:
    """One node + mock pair with config (c) ``variant``: the motion scenarios in sequence, each from rest.
    Returns one row per scenario (peak acceleration/jerk ratios per joint; goal time for the step)."""
    import pinocchio as pin
    import rclpy
    from geometry_msgs.msg import PoseStamped

    from roboplan_ik_ros.core.model.scene import Scene
    from roboplan_ik_ros.demo import circle_path
    from roboplan_ik_ros.node.spin import make_executor, spin_until_shutdown
    from roboplan_ik_ros.sim.mock_robot import load_robot
    from roboplan_ik_ros.node.message_conversions import pose_from_se3

    tag = f"motion_{variant}"
    data = motion_config(variant, args.rate)
    box = next(b for b in data["barriers"] if b["type"] == "position")
    cfg_path = tmp / f"bench_{tag}.yaml"
    cfg_path.write_text(yaml.safe_dump(data))
    capacity = int(120 * args.rate)
    urdf, srdf, pkgs, _ = load_robot("panda")
    scene = Scene(urdf, srdf, pkgs)
    group = scene.group("arm")
    a_max, j_max = drive_bounds(group.joint_names)
    dt = 1.0 / args.rate
    mock_log, node_log = open(tmp / f"mock_{tag}.log", "w"), open(tmp / f"node_{tag}.log", "w")
    mock = subprocess.Popen([sys.executable, BENCH_NODE, "--child-mock", repr(float(args.rate)),
                             str(tmp / f"mock_{tag}.npz"), str(capacity)], stdout=mock_log, stderr=subprocess.STDOUT)
    executor = make_executor()
    aux = rclpy.create_node(f"bench_motion_{k}")
    executor.add_node(aux)
    goal_pub = aux.create_publisher(PoseStamped, "/ik_controller/ee/target_pose", 10)
    rec = CommandRecorder(aux)
    stop = threading.Event()
    spinner = threading.Thread(target=spin_until_shutdown, args=(executor, stop), daemon=True)
    spinner.start()
    child = None
    rows: list[dict] = []

    def send(p) -> float:
        ps = PoseStamped()
        ps.header.frame_id = "panda_link0"
        pose_from_se3(pin.SE3(T0.rotation, np.asarray(p, dtype=float)), ps.pose)
        goal_pub.publish(ps)
        return time.perf_counter()

    def tcp_of(q_cmd: np.ndarray) -> np.ndarray:
        q = scene.neutral()
        out = np.empty((len(q_cmd), 3))
        for i, row in enumerate(q_cmd):
            q[group.q_indices] = row
            out[i] = scene.frame_pose(q, "panda_hand_tcp").translation
        return out

    def add(scenario: str, t0: float, t1: float, **extra) -> None:
        _, q = rec.since(t0, t1)
        rows.append({"kind": "motion", "variant": variant, "scenario": scenario, "duration_s": t1 - t0,
                     **command_ratios(q, dt, a_max, j_max), **extra})

    try:
        spawned_at = time.time()
        child = subprocess.Popen([sys.executable, BENCH_NODE, "--child-node", str(cfg_path), str(tmp / f"stats_{tag}.json"),
                                  str(capacity), repr(spawned_at)], stdout=node_log, stderr=subprocess.STDOUT)
        startup = manage_startup(aux, "ik_controller", spawned_at, [(child, tmp / f"node_{tag}.log")])
        if not startup["ok"]:
            raise RuntimeError(f"configure/activate failed: {(tmp / f'node_{tag}.log').read_text()[-2000:]}")
        _wait(lambda: goal_pub.get_subscription_count() > 0 and len(rec.times) > 50, 30.0, "goal subscription, commands",
              [(child, tmp / f"node_{tag}.log")])
        c = T0.translation
        # 1. a 20 cm step from rest: goal time and peaks
        goal = c + np.array(STEP_OFFSETS[0])
        t0 = send(goal)
        t1 = rec.wait_rest(t0)
        t, q = rec.since(t0, t1)
        add("step 20 cm (goal time)", t0, t1, goal_time_s=goal_time(t, tcp_of(q), goal, t0))
        # 2. step goals 10-30 cm apart, each from rest
        t_first = None
        for off in STEP_OFFSETS[1:]:
            t0 = send(c + np.array(off))
            t_first = t_first if t_first is not None else t0
            t1 = rec.wait_rest(t0)
        add(f"steps 10-30 cm ({len(STEP_OFFSETS) - 1})", t_first, t1)
        # 3. a goal reversed after 0.3 s (back to the start pose)
        t0 = send(c + np.array(STEP_OFFSETS[0]))
        time.sleep(REVERSE_AFTER_S)
        send(c)
        t1 = rec.wait_rest(t0 + REVERSE_AFTER_S)
        add(f"reversed after {REVERSE_AFTER_S:g} s", t0, t1)
        # 4. a 50 Hz goal stream along the bench's circle (top 5 cm above the workspace box)
        path = circle_path(c, box["p_max"][2] - 0.05, 0.15, 1.0, 6.0)
        t0 = time.perf_counter()
        while (t := time.perf_counter() - t0) < 1.0 + 6.0:
            send(path(t))
            time.sleep(max(0.0, 0.02 - (time.perf_counter() - t0 - t)))
        t1 = time.perf_counter()
        add("50 Hz goal stream (circle)", t0, t1)
        send(c)
        rec.wait_rest(t1)
    finally:
        stop_processes(child, mock)
        mock_log.close()
        node_log.close()
        stop.set()
        spinner.join(2.0)
        executor.shutdown()
        aux.destroy_node()
    stats = tmp / f"stats_{tag}.json"
    counts = json.loads(stats.read_text())["counts"] if stats.exists() else {}
    for r in rows:
        r["counts"] = counts
    return rows


def motion_targets(rows: list[dict]) -> list[dict]:
    """Bounded: every scenario's peak acceleration and jerk <= 1.0x of the bounds; goal time ratio shown."""
    out = []
    for r in rows:
        if r["variant"] != "bounded":
            continue
        peak = max(max(r["acc_ratio"]), max(r["jerk_ratio"]))
        out.append({"target": "peak acceleration and jerk <= 1.0x of the bounds", "run": f"motion: {r['scenario']}",
                    "measured": f"{max(r['acc_ratio']):.3f}x / {max(r['jerk_ratio']):.3f}x", "pass": bool(peak <= 1.0 + 1e-6),
                    "detail": f"guard_cuts {r['counts'].get('guard_cuts', '-')}, qp_failures "
                              f"{r['counts'].get('qp_failures', '-')}"})
    return out


def print_motion(rows: list[dict], args) -> None:
    if not rows:
        return
    fmt_j = lambda xs: " ".join(f"{x:.2f}" for x in xs)  # noqa: E731
    print_table(f"Command streams at {args.rate:g} Hz vs the drive's bounds (config/panda_joint_limits.yaml: Franka's "
                "a_max 15/7.5/10/12.5/15/20/20 rad/s^2, j_max 500 a_max rad/s^3), from consecutive commands over "
                "DDS; bounded = config (c) as shipped, unbounded = no acceleration limit and goal smoothing max_speed",
                ["scenario", "config", "commands", "peak accel / a_max, joints 1-7", "max", "peak jerk / j_max, joints 1-7",
                 "max", "steps over a_max %", "goal time s"],
                [[r["scenario"], r["variant"], str(r["n"]), fmt_j(r["acc_ratio"]), f"{max(r['acc_ratio']):.2f}",
                  fmt_j(r["jerk_ratio"]), f"{max(r['jerk_ratio']):.2f}", f"{r['over_acc_pct']:.1f}",
                  fmt(r.get("goal_time_s"), ".2f")] for r in rows])
    times = {r["variant"]: r.get("goal_time_s") for r in rows if "goal_time_s" in r}
    if times.get("bounded") and times.get("unbounded"):
        print(f"20 cm step to {SETTLE_M * 1e3:g} mm (commanded TCP): {times['bounded']:.2f} s with the bounds, "
              f"{times['unbounded']:.2f} s without: x{times['bounded'] / times['unbounded']:.2f}")
