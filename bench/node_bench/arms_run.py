"""``--arms N``: N ik_controller nodes, each the shipped config in its own namespace ``/armK``, against one mock
process driving N arms (sim/mock_arms.py, ``--child-mock-arms``), each node tracking its own 50 Hz goal circle
under a load (idle, busy); per node the figures of :mod:`.node_figures` (the single node's definitions), the mock
process's CPU and the total over the window.

Each node is started as a user would start it in a namespace (``--ros-args -r __ns:=/armK`` plus remaps of the
absolute topics it uses: ``/joint_states`` and ``/robot_description(_semantic)`` from its robot, its config's
command outputs; see :func:`arm_ros_args`). /diagnostics stays shared, as on a real cell (each node's status
there is named by its node)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import yaml

from .children import BENCH_NODE
from .configs import node_config
from .node_figures import js_on_time_pct, loop_thread, tick_figures
from .process_stats import children_cpu, cpu_seconds, machine_busy_seconds, rss_mb, thread_cpu
from .processes import _wait, stop_processes

NODE_NAME = "ik_controller"
GOAL_RATE_HZ = 50.0  # each arm's goal stream, as the single node's run
#: activate requests per node (each row says how many it took): the node's activate waits ``activation_timeout``
#: (5 s) for a valid /joint_states. Three refusals in a row were seen while the N-arm mock had frozen (the deadlock
#: in mock_arms' docstring, since avoided); a node still at normal priority beside the active nodes' SCHED_FIFO
#: loops can also miss it on a loaded machine
ACTIVATE_ATTEMPTS = 6


def start_nodes(aux, names: list[str], spawned_at: list[float], procs) -> list[dict]:
    """Configure all the nodes ``/<name>`` at once over their lifecycle services, then activate them at once (as
    a cell's launch file with autostart brings its nodes up), asking again for those whose activate failed, up
    to ACTIVATE_ATTEMPTS requests each (see there). Returns per node the start-up times (as
    ``processes.manage_startup``'s, the configure and activate calls shared) and ``activate_attempts``."""
    from lifecycle_msgs.msg import Transition
    from lifecycle_msgs.srv import ChangeState

    clients = [aux.create_client(ChangeState, f"/{name}/change_state") for name in names]
    try:
        found = [None] * len(names)

        def all_found() -> bool:
            for i, c in enumerate(clients):
                if found[i] is None and c.service_is_ready():
                    found[i] = time.time()
            return all(t is not None for t in found)

        _wait(all_found, 60.0, "the nodes' change_state", procs)

        def change(indices: list[int], transition: int, what: str) -> dict[int, bool]:
            futures = {i: clients[i].call_async(ChangeState.Request(transition=Transition(id=transition)))
                       for i in indices}
            _wait(lambda: all(f.done() for f in futures.values()), 60.0, what, procs)
            return {i: bool(f.result().success) for i, f in futures.items()}

        t0 = time.time()
        configured = change(list(range(len(names))), Transition.TRANSITION_CONFIGURE, "configure")
        t1 = time.time()
        failed = [names[i] for i, ok in configured.items() if not ok]
        if failed:
            raise RuntimeError(f"configure failed: {failed}")
        attempts, active_at = [0] * len(names), [None] * len(names)
        pending = list(range(len(names)))
        while pending and max(attempts[i] for i in pending) < ACTIVATE_ATTEMPTS:
            result = change(pending, Transition.TRANSITION_ACTIVATE, "activate")
            now = time.time()
            for i, ok in result.items():
                attempts[i] += 1
                if ok:
                    active_at[i] = now
            pending = [i for i in pending if active_at[i] is None]
        if pending:
            raise RuntimeError(f"activate failed {ACTIVATE_ATTEMPTS} times: {[names[i] for i in pending]}")
    finally:
        for c in clients:
            aux.destroy_client(c)
    return [{"ok": True, "found_s": found[i] - spawned_at[i], "configure_call_s": t1 - t0,
             "activate_call_s": active_at[i] - t1, "configure_to_active_s": active_at[i] - t0,
             "process_to_active_s": active_at[i] - spawned_at[i], "activate_attempts": attempts[i]}
            for i in range(len(names))]


def arm_namespace(k: int) -> str:
    """Arm k's namespace (k from 1), as ``mock_robot --arms N`` names them (sim/mock_arms.arm_namespaces)."""
    return f"/arm{k}"


def arm_ros_args(namespace: str, data: dict) -> list[str]:
    """The node's ROS arguments for the arm in ``namespace``, config ``data``: the namespace (its ~/ topics, its
    services, its lifecycle) and remaps of the absolute topics it uses under it: the robot's /joint_states (the
    config's ``joint_states_topic``) and /robot_description(_semantic), and every command output's topic."""
    from roboplan_ik_ros.node.node_config import NodeConfig, OutputConfig

    node = data.get("node") or {}
    outputs = node.get("outputs") or [{}]
    topics = ["/robot_description", "/robot_description_semantic",
              node.get("joint_states_topic", NodeConfig.joint_states_topic),
              *(o.get("topic", OutputConfig.topic) for o in outputs)]
    args = ["--ros-args", "-r", f"__ns:={namespace}"]
    for topic in topics:
        args += ["-r", f"{topic}:={namespace}/{topic.lstrip('/')}"]
    return args


def stop_nodes(children: list[subprocess.Popen], timeout: float = 60.0) -> None:
    """SIGINT every node at once (each then brakes, stops its loop and writes its statistics), SIGKILL those still
    running after ``timeout`` [s]. One after the other (``stop_processes``), a node stopping at normal priority
    beside the others' real-time loops outlived its 20 s and was killed before writing its ticks (four arms on
    the loaded machine); a second SIGINT is not sent (it would interrupt that writing)."""
    running = [c for c in children if c.poll() is None]
    for child in running:
        child.send_signal(signal.SIGINT)
    deadline = time.monotonic() + timeout
    for child in running:
        try:
            child.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def _node_counters(pid: int) -> tuple:
    """(perf_counter time, per-thread CPU, process CPU s, its children's CPU s, RSS MB) of a node process now. Each
    process's CPU is taken over its own interval between two such readings (reading N processes takes a while
    on a loaded machine: the last one read is read later than the first)."""
    return time.perf_counter(), thread_cpu(pid), cpu_seconds(pid), children_cpu(pid), rss_mb(pid)


def _timed_cpu(pid: int) -> tuple[float, float]:
    """(perf_counter time, CPU seconds) of process ``pid`` now."""
    return time.perf_counter(), cpu_seconds(pid)


def _cpu_pct(before: tuple[float, float], after: tuple[float, float]) -> float:
    """% of one core between two (time, CPU seconds) readings."""
    return 100.0 * (after[1] - before[1]) / (after[0] - before[0])


def bench_arms_run(k: int, config: str, trigger: str, load: str, n_arms: int, args, tmp: Path, T0,
                   repeat: int = 0) -> dict:
    """One run: the N-arm mock, N nodes, N goal circles for ``args.warmup`` + ``args.duration`` s; the run's row
    (``nodes``: one dict per node; the mock's, the goal streams' and the total CPU)."""
    import pinocchio as pin
    import rclpy
    from geometry_msgs.msg import PoseStamped
    from sensor_msgs.msg import JointState

    from roboplan_ik_interfaces.msg import ControllerStatus
    from roboplan_ik_ros.demo import circle_path
    from roboplan_ik_ros.node.message_conversions import pose_from_se3
    from roboplan_ik_ros.node.spin import make_executor, spin_until_shutdown

    tag = f"arms{n_arms}_{config}_{trigger}_{load}_{repeat}"
    data = node_config(config, trigger, args.rate)
    box = next(b for b in data["barriers"] if b["type"] == "position")
    cfg_path = tmp / f"bench_{tag}.yaml"
    cfg_path.write_text(yaml.safe_dump(data))
    # every tick of the run, start-up included
    capacity = int((args.duration + args.warmup + 60 + 15 * n_arms) * args.rate * 1.2)
    namespaces = [arm_namespace(i) for i in range(1, n_arms + 1)]

    busy = None
    if load == "busy":  # started first: the nodes start and run on a machine with one core taken
        busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    mock_out, mock_log = tmp / f"mock_{tag}.npz", tmp / f"mock_{tag}.log"
    mlog = open(mock_log, "w")
    mock = subprocess.Popen([sys.executable, BENCH_NODE, "--child-mock-arms", repr(float(args.rate)), str(mock_out),
                             str(capacity), str(n_arms)], stdout=mlog, stderr=subprocess.STDOUT)
    executor = make_executor()
    aux = rclpy.create_node(f"bench_arms_{k}")
    executor.add_node(aux)
    goal_pubs = [aux.create_publisher(PoseStamped, f"{ns}/{NODE_NAME}/ee/target_pose", 10) for ns in namespaces]
    counting = {"on": False}
    modes: list[dict[str, int]] = [{} for _ in namespaces]
    seen_status: list[str | None] = [None] * n_arms
    js_seen = [0] * n_arms

    def on_status(i: int, msg) -> None:
        seen_status[i] = msg.mode
        if counting["on"]:
            modes[i][msg.mode] = modes[i].get(msg.mode, 0) + 1

    def on_js(i: int, msg) -> None:
        js_seen[i] += 1

    for i, ns in enumerate(namespaces):
        aux.create_subscription(ControllerStatus, f"{ns}/{NODE_NAME}/status", lambda m, i=i: on_status(i, m), 10)
    js_subs = [aux.create_subscription(JointState, f"{ns}/joint_states", lambda m, i=i: on_js(i, m), 10)
               for i, ns in enumerate(namespaces)]
    stop = threading.Event()
    spinner = threading.Thread(target=spin_until_shutdown, args=(executor, stop), daemon=True)
    spinner.start()

    logs = [open(tmp / f"node_{tag}_{i + 1}.log", "w") for i in range(n_arms)]
    node_logs = [Path(f.name) for f in logs]
    stats_out = [tmp / f"stats_{tag}_{i + 1}.json" for i in range(n_arms)]
    children: list[subprocess.Popen] = []
    label = f"({config}) {trigger}, {load}, {n_arms} arms"
    try:
        _wait(lambda: min(js_seen) > 10, 30.0, "the mock arms' /joint_states", [(mock, mock_log)])
        for sub in js_subs:  # the mock is up; no need to decode N x 500 messages/s here
            aux.destroy_subscription(sub)
        spawned_at = []
        for i, ns in enumerate(namespaces):  # all at once: the imports overlap, as a cell's launch file starts them
            spawned_at.append(time.time())
            children.append(subprocess.Popen(
                [sys.executable, BENCH_NODE, "--child-node", str(cfg_path), str(stats_out[i]), str(capacity),
                 repr(spawned_at[i]), *arm_ros_args(ns, data)], stdout=logs[i], stderr=subprocess.STDOUT))
        try:
            startups = start_nodes(aux, [f"{ns.strip('/')}/{NODE_NAME}" for ns in namespaces], spawned_at,
                                   list(zip(children, node_logs)))
        except RuntimeError as exc:
            raise RuntimeError(f"{exc}; the nodes' logs end with:\n" + "\n".join(
                f"{ns}: {log.read_text()[-1500:]}" for ns, log in zip(namespaces, node_logs))) from exc
        _wait(lambda: all(s not in (None, "inactive") for s in seen_status), 60.0, "the nodes' activation",
              list(zip(children, node_logs)))
        path = circle_path(T0.translation, box["p_max"][2] - 0.05, 0.15, 1.0, 6.0)  # top touches the box
        ps = PoseStamped()
        ps.header.frame_id = "panda_link0"
        t0 = time.perf_counter()
        t_start = None
        next_goal = 0.0
        total = args.warmup + args.duration
        last_print = 0.0
        while (t := time.perf_counter() - t0) < total:
            if t_start is None and t >= args.warmup:
                t_start = time.perf_counter()
                mock0, bench0 = _timed_cpu(mock.pid), _timed_cpu(os.getpid())
                machine0 = (t_start, machine_busy_seconds())
                before = [_node_counters(c.pid) for c in children]
                counting["on"] = True
            pose_from_se3(pin.SE3(T0.rotation, path(t)), ps.pose)
            for pub in goal_pubs:  # every arm its own stream of the same circle
                pub.publish(ps)
            if t_start is not None and t - last_print >= 5.0:
                last_print = t
                print(f"  [{label}] {t - args.warmup:5.1f} / {args.duration:g} s", end="\r", flush=True)
            next_goal += 1.0 / GOAL_RATE_HZ
            time.sleep(max(0.0, next_goal - (time.perf_counter() - t0)))
        t_end = time.perf_counter()
        mock1, machine1, bench1 = _timed_cpu(mock.pid), (t_end, machine_busy_seconds()), _timed_cpu(os.getpid())
        after = [_node_counters(c.pid) for c in children]
        counting["on"] = False
        print()
    finally:
        stop_nodes(children)  # the nodes first: they must not see the robot vanish
        stop_processes(mock)
        if busy is not None:
            busy.kill()
            busy.wait()
        for f in logs:
            f.close()
        mlog.close()
        stop.set()
        spinner.join(2.0)
        executor.shutdown()
        aux.destroy_node()

    window = t_end - t_start
    nodes = []
    if mock_out.exists():
        with np.load(mock_out) as m:
            js_times = [m[f"js_times_{i + 1}"] for i in range(n_arms)]
    else:  # the mock outlived its stop's time bound (killed: nothing written); the nodes' figures stand
        print(f"  [the mock wrote no timings (exit code {mock.returncode}): robot js on time not known]")
        js_times = [None] * n_arms
    for i, ns in enumerate(namespaces):
        if not stats_out[i].exists():
            raise RuntimeError(f"{ns}: the node wrote no statistics (exit code {children[i].returncode}); its log "
                               f"ends with:\n{node_logs[i].read_text()[-3000:]}")
        stats = json.loads(stats_out[i].read_text())
        ticks = tick_figures(stats, t_start, t_end, args.rate)
        (n0, thr0, proc0, kids0, rss0), (n1, thr1, proc1, kids1, rss1) = before[i], after[i]
        span = n1 - n0  # [s] this node's CPU interval (~ the window)
        cpu = {tid: (thr1[tid][0], thr1[tid][1] - thr0[tid][1]) for tid in thr1 if tid in thr0}
        pid = children[i].pid
        main_cpu = cpu.get(pid, ("", float("nan")))[1]
        loop_tid, loop_how = loop_thread(cpu, pid)
        loop_cpu = cpu[loop_tid][1]
        n_status = sum(modes[i].values())
        nodes.append({
            "arm": i + 1, "namespace": ns,
            **{key: value for key, value in ticks.items() if not key.startswith("_")},
            "robot_js_on_time_pct": js_on_time_pct(js_times[i], t_start, t_end, args.rate)
            if js_times[i] is not None else float("nan"),
            "loop_thread": loop_how,
            "loop_cpu_pct": 100.0 * loop_cpu / span,
            "main_cpu_pct": 100.0 * main_cpu / span,
            "process_cpu_pct": 100.0 * (proc1 - proc0) / span,
            "children_cpu_pct": 100.0 * sum(kids1[c] - kids0[c] for c in kids1 if c in kids0) / span,
            "n_children": len(kids1),
            "rss_start_mb": rss0, "rss_end_mb": rss1,
            "moving_pct": 100.0 * (modes[i].get("tracking", 0) + modes[i].get("recovering", 0)) / n_status
            if n_status else 0.0,
            "modes": modes[i],
            "counts": stats["counts"],
            "startup": startups[i],
        })
    mock_cpu_pct = _cpu_pct(mock0, mock1)
    nodes_cpu_pct = sum(n["process_cpu_pct"] + n["children_cpu_pct"] for n in nodes)
    return {
        "kind": "arms", "arms": n_arms, "config": config, "trigger": trigger, "load": load, "repeat": repeat,
        "rate_set_hz": args.rate, "duration_s": window,
        "nodes": nodes,
        "min_on_time_pct": min(n["on_time_pct"] for n in nodes),
        "nodes_cpu_pct": nodes_cpu_pct,  # the node processes and their children (the IK workers)
        "mock_cpu_pct": mock_cpu_pct,
        "total_cpu_cores": (nodes_cpu_pct + mock_cpu_pct) / 100.0,
        "cpu_cores_per_arm": (nodes_cpu_pct + mock_cpu_pct) / 100.0 / n_arms,
        "goal_stream_cpu_pct": _cpu_pct(bench0, bench1),  # this process (the N goal streams), not counted
        # every process of the machine (/proc/stat), this run's and others' (a shared machine: other work ran beside)
        "machine_busy_cores": _cpu_pct(machine0, machine1) / 100.0,
        "machine_cores": os.cpu_count(),
    }
