"""``~/solve_ik`` round trip from a client on the same machine, while the node's loop runs at 500 Hz.

For each run: the mock Panda and the ``ik_controller`` node (shipped ``config/panda.yaml``, timer trigger,
``--rate``) in processes of their own, configured and activated over the lifecycle services, a 50 Hz pose
goal stream on ``~/ee/target_pose`` from this process (the loop tracks a circle, as in bench_node), and a
**separate client process** that calls ``/ik_controller/solve_ik`` ``--calls`` times, one call at a time
(a planner's pattern), with a random pause of 0-``--gap-ms`` between calls (so the calls sample every
phase of the control period). Each request is an *easy goal*: an explicit seed (SRDF "default") and the
TCP pose of a configuration within 0.15 rad per joint of it (one PoseGoal; SimpleIK solves it in ~0.1 ms).

Timed with ``time.perf_counter()`` (CLOCK_MONOTONIC: one clock for every process on Linux):

* client: the request handed to ``call_async`` -> the response seen by its executor (round trip);
* node (``--trace``, patched in the node process only: a few perf_counter calls): the service callback's
  entry, the end of the wait for the tick gap, of the parsing, of the solve (worker round trip or
  in-thread solve) and the callback's return; the response's way back to the client is the rest.
* the node's own tick durations in the client's window (p50 / p99), to see what the service costs the loop.

``--trees NAME=PATH[:VARIANT],...`` runs the node from other checkouts of the project (e.g. the code before a change,
``git archive`` of a commit with the compiled kernels copied in), interleaved: round 1 of every tree,
then round 2, ... (the machine's speed drifts between runs). Prints a table per tree and the ratios of
the medians to the first tree. Targets (issue 20): median <= 1 ms, p99 <= 3 ms. Never asserts.

    python bench/bench_service.py [--calls 2000] [--rounds 2] [--trees before=/tmp/before,after=.] [--trace]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
TARGETS = {"median_ms": 1.0, "p99_ms": 3.0}
TRACE_ENV = "BENCH_SERVICE_TRACE"
STAGES = ("dds_in", "gap_wait", "parse", "solve", "respond", "dds_out")


# ------------------------------------------------------------------------- child: the node (any tree)
def run_node(tree: str, config: str, stats: str, capacity: int, spawned_at: float) -> None:
    """The node process of ``tree``: its own bench_node.run_child (so its own roboplan_ik_ros), with the
    service stages timed when TRACE_ENV names an output file."""
    sys.path.insert(0, str(Path(tree) / "bench"))
    import bench_node  # noqa: E402 - its common.py puts the tree's package first on sys.path

    out = os.environ.get(TRACE_ENV)
    if out:
        records = _patch_trace()
        try:
            bench_node.run_child(config, stats, capacity, spawned_at)
        finally:
            Path(out).write_text(json.dumps(records))
    else:
        bench_node.run_child(config, stats, capacity, spawned_at)


def _patch_trace() -> list:
    """Wrap the service's steps (whichever of them this tree has) to record perf_counter stamps per request.
    Patched in place, not subclassed (IKControllerNode.solve_ik_server_class), so that trees from before that seam
    (their steps named _on_request, _solve) are timed the same way."""
    from roboplan_ik_ros.node import ik_controller
    try:
        from roboplan_ik_ros.node import solve_ik_service as service
    except ImportError:  # a tree from before node/service.py was named solve_ik_service.py
        from roboplan_ik_ros.node import service

    records: list[dict] = []
    current: dict = {}
    pc = time.perf_counter

    def wrap(cls, name, key):
        f = getattr(cls, name, None)
        if f is None:
            return

        def wrapped(*a, **kw):
            try:
                return f(*a, **kw)
            finally:
                current[key] = pc()
        setattr(cls, name, wrapped)

    server = service.SolveIKServer
    request_step = "handle_request" if hasattr(server, "handle_request") else "_on_request"
    on_request = getattr(server, request_step)

    def traced(self, request, response):
        current.clear()
        current["enter"] = pc()
        try:
            return on_request(self, request, response)
        finally:
            current["exit"] = pc()
            records.append(dict(current))

    setattr(server, request_step, traced)
    wrap(ik_controller.IKControllerNode, "_wait_for_tick_gap", "gap")
    wrap(server, "parse", "parsed")
    wrap(server, "solve" if hasattr(server, "handle_request") else "_solve", "solved")
    return records


# ------------------------------------------------------------------------- child: the client
def easy_requests(n: int, seed: int):
    """n SolveIK requests: explicit seed (SRDF default), the TCP pose of a configuration near it."""
    import pinocchio as pin

    from roboplan_ik_interfaces.msg import PoseGoal
    from roboplan_ik_interfaces.srv import SolveIK
    from sensor_msgs.msg import JointState

    from roboplan_ik_ros.core.model.scene import Scene
    from roboplan_ik_ros.node.message_conversions import pose_from_se3
    from roboplan_ik_ros.sim.mock_robot import load_robot

    urdf, srdf, pkgs, _ = load_robot("panda")
    scene = Scene(urdf, srdf, pkgs)
    q0 = scene.named_configuration("default", scene.neutral())
    arm = [f"panda_joint{k}" for k in range(1, 8)]
    idx = [scene.model.joints[scene.model.getJointId(j)].idx_q for j in arm]
    lo, hi = scene.model.lowerPositionLimit, scene.model.upperPositionLimit
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        q = q0.copy()
        q[idx] = np.clip(q0[idx] + rng.uniform(-0.15, 0.15, 7), lo[idx] + 0.05, hi[idx] - 0.05)
        T: pin.SE3 = scene.frame_pose(q, "panda_hand_tcp")
        req = SolveIK.Request()
        g = PoseGoal(tip_frame="panda_hand_tcp")
        g.pose.header.frame_id = "panda_link0"
        pose_from_se3(T, g.pose.pose)
        req.goals = [g]
        req.seed = JointState(name=arm, position=[float(q0[i]) for i in idx])
        out.append(req)
    return out


def run_client(out: str, calls: int, warmup: int, gap_ms: float, seed: int) -> None:
    import rclpy

    from roboplan_ik_interfaces.srv import SolveIK
    from roboplan_ik_ros.node.spin import make_executor

    requests = easy_requests(200, seed)
    rclpy.init()
    node = rclpy.create_node("bench_service_client")
    client = node.create_client(SolveIK, "/ik_controller/solve_ik")
    executor = make_executor()
    executor.add_node(node)
    if not client.wait_for_service(timeout_sec=30.0):
        raise SystemExit("~/solve_ik did not appear within 30 s")
    rng = random.Random(seed)
    sent, done, codes = [], [], {}
    pc = time.perf_counter
    for k in range(warmup + calls):
        req = requests[k % len(requests)]
        t0 = pc()
        future = client.call_async(req)
        deadline = t0 + 10.0
        while not future.done() and pc() < deadline:
            executor.spin_once(timeout_sec=0.5)
        t1 = pc()
        res = future.result() if future.done() else None
        if k >= warmup:
            sent.append(t0)
            done.append(t1 if res is not None else float("nan"))
            code = -1 if res is None else int(res.error_code)
            codes[code] = codes.get(code, 0) + 1
        time.sleep(rng.uniform(0.0, gap_ms / 1000.0))
    Path(out).write_text(json.dumps({"sent": sent, "done": done, "codes": codes, "warmup": warmup}))
    node.destroy_node()
    executor.shutdown()
    rclpy.try_shutdown()


# ------------------------------------------------------------------------- one run
def bench_run(name: str, tree: Path, variant: str, rnd: int, args, tmp: Path) -> dict:
    import pinocchio as pin
    import rclpy
    import yaml
    from geometry_msgs.msg import PoseStamped
    from sensor_msgs.msg import JointState

    from roboplan_ik_interfaces.msg import ControllerStatus
    from roboplan_ik_ros.demo import circle_path
    from roboplan_ik_ros.node.message_conversions import pose_from_se3
    from roboplan_ik_ros.node.spin import make_executor, spin_until_shutdown

    from node_bench.configs import node_config, start_pose
    from node_bench.processes import _wait, manage_startup, stop_processes

    tag = f"{name}_{rnd}"
    data = node_config(args.config, "timer", args.rate, variant or "full")  # config variants (gc_auto, ...)
    box = next(b for b in data["barriers"] if b["type"] == "position")
    cfg = tmp / f"cfg_{tag}.yaml"
    cfg.write_text(yaml.safe_dump(data))
    capacity = int((args.calls * 0.004 + 120) * args.rate)
    stats, trace, client_out = tmp / f"stats_{tag}.json", tmp / f"trace_{tag}.json", tmp / f"client_{tag}.json"
    mock_log = open(tmp / f"mock_{tag}.log", "w")
    node_log_path = tmp / f"node_{tag}.log"
    node_log = open(node_log_path, "w")
    mock = subprocess.Popen([sys.executable, str(HERE / "bench_node.py"), "--child-mock", repr(float(args.rate)),
                             str(tmp / f"mock_{tag}.npz"), str(capacity)], stdout=mock_log, stderr=subprocess.STDOUT)
    executor = make_executor()
    aux = rclpy.create_node(f"bench_service_aux_{tag}")
    executor.add_node(aux)
    seen = {"js": 0, "status": None}
    js_sub = aux.create_subscription(JointState, "/joint_states", lambda m: seen.__setitem__("js", seen["js"] + 1), 10)
    aux.create_subscription(ControllerStatus, "/ik_controller/status", lambda m: seen.__setitem__("status", m.mode), 10)
    goal_pub = aux.create_publisher(PoseStamped, "/ik_controller/ee/target_pose", 10)
    stop = threading.Event()
    spinner = threading.Thread(target=spin_until_shutdown, args=(executor, stop), daemon=True)
    spinner.start()
    node = client = None
    streaming = threading.Event()
    try:
        _wait(lambda: seen["js"] > 10, 30.0, "mock /joint_states", [(mock, tmp / f"mock_{tag}.log")])
        aux.destroy_subscription(js_sub)
        env = dict(os.environ)
        env.pop(TRACE_ENV, None)
        env["BENCH_NODE_VARIANT"] = variant  # bench_node's service variants ("reject": the floor)
        if args.trace:
            env[TRACE_ENV] = str(trace)
        spawned = time.time()
        node = subprocess.Popen([sys.executable, __file__, "--child-node", str(tree), str(cfg), str(stats),
                                 str(capacity), repr(spawned)], stdout=node_log, stderr=subprocess.STDOUT, env=env)
        startup = manage_startup(aux, "ik_controller", spawned, [(node, node_log_path)])
        if not startup["ok"]:
            raise RuntimeError(f"configure/activate failed:\n{node_log_path.read_text()[-3000:]}")
        _wait(lambda: seen["status"] not in (None, "inactive"), 60.0, "activation", [(node, node_log_path)])
        T0 = start_pose()
        path = circle_path(T0.translation, box["p_max"][2] - 0.05, 0.15, 1.0, 6.0)

        def goals() -> None:
            ps = PoseStamped()
            ps.header.frame_id = "panda_link0"
            t0 = time.perf_counter()
            k = 0
            while not stop.is_set():
                pose_from_se3(pin.SE3(T0.rotation, path(time.perf_counter() - t0)), ps.pose)
                goal_pub.publish(ps)
                streaming.set()
                k += 1
                time.sleep(max(0.0, t0 + k / 50.0 - time.perf_counter()))

        threading.Thread(target=goals, daemon=True).start()
        streaming.wait(5.0)
        time.sleep(2.0)  # the IK worker is up (~0.4 s after configure) and the arm is tracking
        client = subprocess.run([sys.executable, __file__, "--child-client", str(client_out), str(args.calls),
                                 str(args.warmup), repr(args.gap_ms), str(rnd)],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
        if client.returncode != 0:
            raise RuntimeError(f"client failed:\n{client.stdout[-3000:]}")
    finally:
        stop.set()
        stop_processes(node, mock)
        spinner.join(2.0)
        aux.destroy_node()
        executor.shutdown()
    c = json.loads(client_out.read_text())
    sent, done = np.array(c["sent"]), np.array(c["done"])
    rtt = (done - sent) * 1e3
    s = json.loads(stats.read_text())
    starts, durations = np.array(s["starts"]), np.array(s["durations"])
    window = (starts >= sent[0]) & (starts <= done[-1])
    row = {"tree": name, "round": rnd, "n": len(rtt), "codes": c["codes"],
           "rtt_ms": rtt.tolist(), "tick_us": (durations[window] * 1e6).tolist(),
           "service": s.get("service", {})}
    if args.trace and trace.exists():
        recs = json.loads(trace.read_text())
        row["stages_ms"] = stages(recs, sent, done)
    return row


def stages(recs: list[dict], sent: np.ndarray, done: np.ndarray) -> dict:
    """Per stage (ms) over the client's calls, matched in order (one call at a time: the last len(sent) records)."""
    recs = [r for r in recs if "enter" in r and "exit" in r][-len(sent):]
    if len(recs) != len(sent):
        return {}
    out = {k: [] for k in STAGES}
    for r, t0, t1 in zip(recs, sent, done):
        gap = r.get("gap", r["enter"])
        parsed = r.get("parsed", gap)
        solved = r.get("solved", parsed)
        out["dds_in"].append(r["enter"] - t0)
        out["gap_wait"].append(gap - r["enter"])
        out["parse"].append(parsed - gap)
        out["solve"].append(solved - parsed)
        out["respond"].append(r["exit"] - solved)
        out["dds_out"].append(t1 - r["exit"])
    return {k: (np.array(v) * 1e3).tolist() for k, v in out.items()}


# ------------------------------------------------------------------------- report
def pct(x, q) -> float:
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    return float(np.percentile(x, q)) if len(x) else float("nan")


def report(rows: list[dict], args) -> None:
    from common import fmt, print_table

    print_table(f"~/solve_ik round trip from a separate client process ({args.calls} calls per run after "
                f"{args.warmup} warm-up, pause 0-{args.gap_ms:g} ms; node: config ({args.config}), timer, "
                f"{args.rate:g} Hz, tracking a 50 Hz goal stream)",
                ["tree, round", "calls", "codes", "RTT p50 ms", "p90 ms", "p99 ms", "max ms", "tick p50 us", "tick p99 us"],
                [[f"{r['tree']}, {r['round']}", str(r["n"]), json.dumps(r["codes"]), fmt(pct(r["rtt_ms"], 50), ".3f"),
                  fmt(pct(r["rtt_ms"], 90), ".3f"), fmt(pct(r["rtt_ms"], 99), ".3f"), fmt(pct(r["rtt_ms"], 100), ".2f"),
                  fmt(pct(r["tick_us"], 50), ".0f"), fmt(pct(r["tick_us"], 99), ".0f")] for r in rows])
    trees = list(dict.fromkeys(r["tree"] for r in rows))
    pooled = {t: [x for r in rows if r["tree"] == t for x in r["rtt_ms"]] for t in trees}
    ticks = {t: [x for r in rows if r["tree"] == t for x in r["tick_us"]] for t in trees}
    base = trees[0]
    print_table("pooled over the rounds (ratio: to the first tree, same run)",
                ["tree", "RTT p50 ms", "p99 ms", "p50 ratio", "p99 ratio", "tick p99 us", "target p50 <= 1 ms", "p99 <= 3 ms"],
                [[t, fmt(pct(pooled[t], 50), ".3f"), fmt(pct(pooled[t], 99), ".3f"),
                  fmt(pct(pooled[t], 50) / pct(pooled[base], 50), ".2f"), fmt(pct(pooled[t], 99) / pct(pooled[base], 99), ".2f"),
                  fmt(pct(ticks[t], 99), ".0f"),
                  "PASS" if pct(pooled[t], 50) <= TARGETS["median_ms"] else "MISS",
                  "PASS" if pct(pooled[t], 99) <= TARGETS["p99_ms"] else "MISS"] for t in trees])
    traced = [r for r in rows if r.get("stages_ms")]
    if traced:
        print_table("where the time goes (ms per call; node stages from its own timestamps, client clock = node clock)",
                    ["tree, round", *[f"{k} p50" for k in STAGES], *[f"{k} p99" for k in STAGES]],
                    [[f"{r['tree']}, {r['round']}", *[fmt(pct(r["stages_ms"][k], 50), ".3f") for k in STAGES],
                      *[fmt(pct(r["stages_ms"][k], 99), ".3f") for k in STAGES]] for r in traced])


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child-node":
        run_node(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), float(sys.argv[6]))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--child-client":
        sys.path.insert(0, str(HERE))
        import common  # noqa: F401 - roboplan_ik_ros on sys.path

        run_client(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6]))
        return
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--calls", type=int, default=2000, help="measured calls per run")
    p.add_argument("--warmup", type=int, default=100, help="calls before measuring")
    p.add_argument("--gap-ms", type=float, default=2.0, help="random pause between calls: 0..this [ms]")
    p.add_argument("--rounds", type=int, default=2, help="runs per tree, interleaved")
    p.add_argument("--rate", type=float, default=500.0, help="control rate [Hz]")
    p.add_argument("--config", default="c", choices=("b", "c", "d"), help="node config (bench_node's)")
    p.add_argument("--trees", default="", help="NAME=PATH[:VARIANT],... project checkouts to run the node from "
                   "(default: this one); VARIANT: one of bench_node's service variants, e.g. 'reject' (answers "
                   "at once: the floor of rclpy and DDS)")
    p.add_argument("--trace", action="store_true", help="time the node's stages (patched in the node process)")
    p.add_argument("--json", help="write the rows here")
    args = p.parse_args()
    from common import machine_note

    import rclpy

    trees = []
    for t in filter(None, args.trees.split(",")):
        name, spec = t.split("=", 1)
        path, _, variant = spec.partition(":")
        trees.append((name, Path(path).resolve(), variant or "full"))
    trees = trees or [("this", HERE.parent, "full")]
    print(machine_note())
    rclpy.init()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_service_") as tmp:
        for rnd in range(args.rounds):
            for name, tree, variant in trees:
                print(f"  run {name}, round {rnd + 1}/{args.rounds} ...", flush=True)
                rows.append(bench_run(name, tree, variant, rnd + 1, args, Path(tmp)))
    rclpy.try_shutdown()
    report(rows, args)
    print(machine_note())
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(rows))


if __name__ == "__main__":
    main()
