"""One closed-loop run (``bench_run``): the node and the mock robot (and config (p)'s camera) in child
processes, this process streaming the 50 Hz goal circle under a load (idle, busy, service); the run's row:
ticks on time, tick durations and CPU, latency at the mock, the threads' CPU, start-up, memory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import yaml

from .children import BENCH_NODE, VARIANT_ENV
from .configs import dual_arm_goals, node_config
from .node_figures import js_on_time_pct, loop_thread, tick_figures
from .perceived import camera_command, perceived_summary
from .process_stats import RSS_SETTLE_S, TRACEMALLOC_ENV, RssRecorder, _counters, cpu_seconds
from .processes import _wait, manage_startup, stop_processes
from .service_stream import ServiceStream


def publish_errors(node_log: Path) -> list[str]:
    """The node's log lines about a command whose publish raised (each counts in ``undelivered``)."""
    try:
        return [ln.strip() for ln in node_log.read_text().splitlines() if "publishing the command failed" in ln]
    except FileNotFoundError:
        return []


def bench_run(k: int, config: str, trigger: str, load: str, args, tmp: Path, svc_goals, T0,
              variant: str = "full", repeat: int = 0) -> dict:
    import pinocchio as pin
    import rclpy
    from geometry_msgs.msg import PoseStamped
    from sensor_msgs.msg import JointState

    from roboplan_ik_interfaces.msg import ControllerStatus
    from roboplan_ik_ros.demo import circle_path
    from roboplan_ik_ros.node.spin import make_executor, spin_until_shutdown
    from roboplan_ik_ros.node.message_conversions import pose_from_se3

    tag = f"{config}_{trigger}_{load}_{variant}_{repeat}"
    data = node_config(config, trigger, args.rate, variant)
    box = next((b for b in data["barriers"] if b["type"] == "position"), None)  # None: config x
    cfg_path = tmp / f"bench_{tag}.yaml"
    cfg_path.write_text(yaml.safe_dump(data))
    stats_out = tmp / f"stats_{tag}.json"
    capacity = int((args.duration + args.warmup + 60) * args.rate * 1.2)

    busy = None
    if load == "busy":  # started first: the node starts and runs on a machine with one core taken
        busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    mock_out = tmp / f"mock_{tag}.npz"
    mock_log = tmp / f"mock_{tag}.log"
    mlog = open(mock_log, "w")
    mock = subprocess.Popen([sys.executable, BENCH_NODE, "--child-mock", repr(float(args.rate)), str(mock_out),
                             str(capacity), "baxter" if config == "x" else "panda"], stdout=mlog,
                            stderr=subprocess.STDOUT)
    camera = None
    if config == "p":  # the mock depth camera: a 20 000-point cloud at 15 Hz on /ik_controller/pointcloud
        camera = subprocess.Popen(camera_command(), stdout=mlog, stderr=subprocess.STDOUT)
    server = None
    if variant == "external":  # serves /ik_controller/solve_ik instead of the node
        server = subprocess.Popen([sys.executable, BENCH_NODE, "--child-server", str(cfg_path)],
                                  stdout=mlog, stderr=subprocess.STDOUT)
    executor = make_executor()
    aux = rclpy.create_node(f"bench_aux_{k}")
    executor.add_node(aux)
    if config == "x":  # both hands carry the dual-arm demo's box
        goal_pubs = [aux.create_publisher(PoseStamped, f"/ik_controller/{hand}/target_pose", 10)
                     for hand in ("left_hand", "right_hand")]
    else:
        goal_pubs = [aux.create_publisher(PoseStamped, "/ik_controller/ee/target_pose", 10)]
    modes: dict[str, int] = {}
    counting = {"on": False}
    seen = {"status": None, "js": 0, "perceived_points": 0}
    perceived: list[tuple[int, float, float, str]] = []  # (points, closest distance, age, state) in the window

    def on_status(msg) -> None:
        seen["status"] = msg.mode
        seen["perceived_points"] = getattr(msg, "perceived_points", 0)
        if counting["on"]:
            modes[msg.mode] = modes.get(msg.mode, 0) + 1
            if hasattr(msg, "perceived_points"):
                perceived.append((int(msg.perceived_points), float(msg.closest_perceived_distance),
                                  float(msg.perceived_age), str(msg.perception_state)))

    def on_js(msg) -> None:
        seen["js"] += 1

    aux.create_subscription(ControllerStatus, "/ik_controller/status", on_status, 10)
    js_sub = aux.create_subscription(JointState, "/joint_states", on_js, 10)
    stream = None
    if load == "service":
        tip, poses = svc_goals
        stream = ServiceStream(aux, args.service_rate, tip, poses, "panda_link0")
    stop = threading.Event()
    spinner = threading.Thread(target=spin_until_shutdown, args=(executor, stop), daemon=True)
    spinner.start()

    node_log = tmp / f"node_{tag}.log"
    log = open(node_log, "w")
    child = rss = None
    label = f"({config}) {trigger}, {load}" + (f", {variant}" if variant != "full" else "")
    try:
        _wait(lambda: seen["js"] > 10, 30.0, "mock robot /joint_states", [(mock, mock_log)])
        aux.destroy_subscription(js_sub)  # the mock is up; no need to decode 500 messages/s here
        spawned_at = time.time()
        env = {**os.environ, VARIANT_ENV: variant}
        if args.tracemalloc:  # first snapshot once the RSS slope is fitted (start-up ~5 s + warm-up + settle)
            env[TRACEMALLOC_ENV] = f"{5.0 + args.warmup + min(RSS_SETTLE_S, args.duration / 3):.0f},{args.tracemalloc}"
        child = subprocess.Popen([sys.executable, BENCH_NODE, "--child-node", str(cfg_path), str(stats_out),
                                  str(capacity), repr(spawned_at)], stdout=log, stderr=subprocess.STDOUT, env=env)
        rss = RssRecorder(child.pid).start()
        startup = manage_startup(aux, "ik_controller", spawned_at, [(child, node_log)])
        if not startup["ok"]:
            raise RuntimeError(f"configure/activate failed; the node's log ends with:\n{node_log.read_text()[-3000:]}")
        _wait(lambda: seen["status"] not in (None, "inactive"), 60.0, "the node's activation", [(child, node_log)])
        if camera is not None:  # the window starts with the cloud in the scene
            _wait(lambda: seen["perceived_points"] > 0, 60.0, "a perceived cloud in ~/status",
                  [(child, node_log), (camera, mock_log)])
        if stream is not None and not stream.start():
            raise RuntimeError("~/solve_ik did not appear within 10 s")
        goals = dual_arm_goals() if config == "x" else None
        if goals is None:
            path = circle_path(T0.translation, box["p_max"][2] - 0.05, 0.15, 1.0, 6.0)  # top touches the box
        t0 = time.perf_counter()
        t_start = None
        next_goal = 0.0
        total = args.warmup + args.duration
        last_print = 0.0
        ps = PoseStamped()
        ps.header.frame_id = "" if goals is not None else "panda_link0"  # "": the model's root frame
        while (t := time.perf_counter() - t0) < total:
            if t_start is None and t >= args.warmup:
                t_start, rss0, thr0, proc0, kids0, mock0 = _counters(child.pid, mock.pid)
                camera0 = cpu_seconds(camera.pid) if camera is not None else 0.0
                counting["on"] = True
                if stream is not None:
                    stream.counting = True
            for pub, T in zip(goal_pubs, goals(t) if goals is not None else [pin.SE3(T0.rotation, path(t))]):
                pose_from_se3(T, ps.pose)
                pub.publish(ps)
            if t_start is not None and t - last_print >= 5.0:
                last_print = t
                print(f"  [{label}] {t - args.warmup:5.1f} / {args.duration:g} s", end="\r", flush=True)
            next_goal += 1.0 / 50.0
            time.sleep(max(0.0, next_goal - (time.perf_counter() - t0)))
        t_end, rss1, thr1, proc1, kids1, mock1 = _counters(child.pid, mock.pid)
        camera1 = cpu_seconds(camera.pid) if camera is not None else 0.0
        counting["on"] = False
        if stream is not None:
            stream.counting = False
            stream.stop()
            time.sleep(0.2)  # answers in flight
        print()
    finally:
        if rss is not None:
            rss.stop()
        stop_processes(child, camera, mock, server)  # the node first: it must not see the robot vanish
        if busy is not None:
            busy.kill()
            busy.wait()
        log.close()
        mlog.close()
        stop.set()
        spinner.join(2.0)
        executor.shutdown()
        aux.destroy_node()

    if not stats_out.exists():
        raise RuntimeError(f"the node wrote no statistics (exit code {child.returncode}); its log ends with:\n"
                           + node_log.read_text()[-3000:])
    stats = json.loads(stats_out.read_text())
    ticks = tick_figures(stats, t_start, t_end, args.rate)  # the definitions: node_figures.py
    if ticks["ticks"] < 0.5 * (t_end - t_start) * args.rate:
        print(f"  [{label}: only {ticks['ticks']} ticks in the window; the node's log ends with:]\n"
              + node_log.read_text()[-3000:])
    window = t_end - t_start
    with np.load(mock_out) as m:
        lat = m["latencies"][(m["lat_times"] >= t_start) & (m["lat_times"] <= t_end)] * 1e3
        js = m["js_times"]

    # CPU of the threads over the window (threads present at both ends)
    cpu = {tid: (thr1[tid][0], thr1[tid][1] - thr0[tid][1]) for tid in thr1 if tid in thr0}
    main_cpu = cpu.get(child.pid, ("", float("nan")))[1]
    loop_tid, loop_how = loop_thread(cpu, child.pid)
    loop_cpu = cpu[loop_tid][1]
    top_threads = sorted(((name, c) for _, (name, c) in cpu.items()), key=lambda x: -x[1])[:6]
    # Python threads other than the main and the loop thread: the ~/solve_ik thread (named for the OS) and
    # unnamed ones (Python 3.11 does not name its threads for the OS), e.g. the IK worker's monitor thread
    pool_cpu = sum(c for tid, (name, c) in cpu.items() if name in (cpu.get(child.pid, ("python",))[0], "solve_ik")
                   and tid not in (child.pid, loop_tid))
    kids_cpu = sum(kids1[c] - kids0[c] for c in kids1 if c in kids0)

    svc = None
    if stream is not None:
        sl = np.array(stream.latencies) * 1e3
        svc = {"rate_set": args.service_rate, "sent": stream.sent, "answered": stream.answered,
               "succeeded": stream.succeeded, "codes": stream.codes,
               "response_p50_ms": float(np.percentile(sl, 50)) if sl.size else float("nan"),
               "response_p99_ms": float(np.percentile(sl, 99)) if sl.size else float("nan"),
               "node": stats.get("service", {})}
    n_status = sum(modes.values())
    return {
        "config": config, "trigger": trigger, "load": load, "variant": variant, "repeat": repeat,
        "rate_set_hz": args.rate,
        "duration_s": window,
        **{k: ticks[k] for k in ("ticks", "rate_hz", "expected_ticks", "on_time_pct", "late_gaps_pct")},
        "robot_js_on_time_pct": js_on_time_pct(js, t_start, t_end, args.rate),
        **{k: ticks[k] for k in ("gap_p99_ms", "gap_max_ms", "tick_p50_us", "tick_p99_us", "tick_max_us")},
        "_durations": ticks["_durations"],  # [s] the window's tick durations, for the pooled figures (not written)
        **{k: ticks[k] for k in ("tick_cpu_p50_us", "tick_cpu_p99_us")},
        "latency_kind": "js->command round trip" if trigger == "joint_states" else "state age at command",
        "latency_p50_ms": float(np.percentile(lat, 50)) if len(lat) else float("nan"),
        "latency_p99_ms": float(np.percentile(lat, 99)) if len(lat) else float("nan"),
        "loop_thread": loop_how,
        "loop_cpu_pct": 100.0 * loop_cpu / window,
        "main_cpu_pct": 100.0 * main_cpu / window,
        "process_cpu_pct": 100.0 * (proc1 - proc0) / window,
        "children_cpu_pct": 100.0 * kids_cpu / window,
        "pool_cpu_pct": 100.0 * pool_cpu / window,
        "mock_cpu_pct": 100.0 * (mock1 - mock0) / window,
        "camera_cpu_pct": 100.0 * (camera1 - camera0) / window if camera is not None else None,
        "tick_cpu_sum_pct": ticks["tick_cpu_sum_pct"],  # a lower bound of loop_cpu_pct (node_figures.py)
        "perceived": perceived_summary(perceived) if camera is not None else None,
        "n_children": len(kids1),
        "top_threads": [(name, 100.0 * c / window) for name, c in top_threads],
        **rss.summary(t_start, t_end),
        "publish_errors": publish_errors(node_log),
        "tracemalloc": stats.get("tracemalloc"),
        "moving_pct": 100.0 * (modes.get("tracking", 0) + modes.get("recovering", 0)) / n_status if n_status else 0.0,
        "modes": modes,
        "counts": stats["counts"],
        "startup": {**stats["startup"], **startup,
                    "own_s": startup["configure_to_active_s"] - stats["startup"]["descriptions_s"]},
        "service": svc,
    }
