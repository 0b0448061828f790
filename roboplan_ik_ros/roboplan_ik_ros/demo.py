"""Demo: the ik_controller node driving the mock Panda along a path that leaves the workspace box,
then reaching over a block put on the table at run time.

    python -m roboplan_ik_ros.demo            (what `make demo` runs; about 30 s)

Starts ``mock_robot`` (as a strict drive: it refuses any command beyond the acceleration and jerk
bounds of the config's joint_limits_file, as a Franka would) and ``ik_controller`` (autostart) as
child processes with this interpreter, streams a pose goal around a vertical circle whose top
crosses the upper face of the workspace barrier box, calls ``~/solve_ik`` a few times meanwhile,
stops the controller with SIGINT while the arm moves (it brakes to rest), then prints a table
(achieved rate, tick time, tracking error, smallest barrier margin, service success and latency),
the peak acceleration and jerk per joint and segment as ratios of the bounds, and saves a plot
(target vs achieved TCP path; joints vs limits). Before the stop (unless --no-obstacle-segment)
it adds a block on the table over ``~/collision_objects`` (an RViz marker on ``~/markers``) and
streams a goal over it and back that dips into it: a second table and plot give the smallest
obstacle distance (from /joint_states, raw meshes) against d_min. Before that (skip it with
--no-perceived-segment) a mock depth camera (``mock_camera``, started with the others: the table and the
arm at 15 Hz on ``~/pointcloud``) shows a box on the arm's path, and the goal sweeps straight through
it: the ``pairs: perceived`` barrier stops the arm in front of it (a table and a plot: the distance to
the true box against d_min, QP failures, acceleration and jerk). Then (unless --no-teleop-segment) a
teleop segment: a scripted 100 Hz twist stream on ``~/ee/target_twist`` pushes the tool up into the
box's upper face and holds it there, then stops; the line printed gives the highest TCP point against
the face and the ``~/status`` motion limits seen (barrier, then command_timeout). A strict-drive fault
fails the demo loudly. Exit status 0 when everything checked out.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .figures import pyplot


# ------------------------------------------------------------------------- processes
def ros_environment() -> None:
    """Isolating defaults for a standalone run (variables already set win)."""
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    os.environ.setdefault("ROS_DOMAIN_ID", str(random.randint(1, 100)))
    os.environ.setdefault("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")
    os.environ.setdefault("ROS_LOG_DIR", tempfile.mkdtemp(prefix="roboplan_ik_demo-log."))


class Child:
    """A node in a child process of this interpreter (``python -m module --ros-args -p k:=v``)."""

    def __init__(self, module: str, params: dict, log_path: Path) -> None:
        args = [sys.executable, "-m", module, "--ros-args"]
        for k, v in params.items():
            value = str(v).lower() if isinstance(v, bool) else str(v)
            args += ["-p", f"{k}:={value}"]
        self.log_path = log_path
        self._log = open(log_path, "w")
        self.proc = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT)
        self.pid = self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, timeout: float = 5.0) -> None:
        if self.alive():
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()

    def tail(self, n: int = 15) -> str:
        try:
            return "\n".join(self.log_path.read_text().splitlines()[-n:])
        except OSError:
            return ""


def default_config() -> str:
    from .node.ik_controller import default_config_file

    return default_config_file("panda")


# ------------------------------------------------------------------------- recording
@dataclass
class Recording:
    js_t: list = field(default_factory=list)
    js_q: list = field(default_factory=list)  # arm joint values
    goal_t: list = field(default_factory=list)
    goal_p: list = field(default_factory=list)
    status: list = field(default_factory=list)  # (t, mode, hold_reason, min barrier value)
    diagnostics: dict = field(default_factory=dict)
    service: list = field(default_factory=list)  # (latency s, success, code, message)
    cmd_t: list = field(default_factory=list)  # command receipt times [s since the origin]
    cmd_q: list = field(default_factory=list)  # commands (arm joints)
    drive: dict = field(default_factory=dict)  # the mock's latest ~/drive_status
    drive_faults: list = field(default_factory=list)  # every faulted ~/drive_status
    segments: list = field(default_factory=list)  # (name, t_from, t_to) [s since the origin]
    obstacle_window: tuple = ()  # (t0, t1) of the reach over the block (demo time)
    block: object = None  # the block's core Obstacle
    obstacle_status: list = field(default_factory=list)  # (t, closest obstacle, link, distance) from ~/status
    motion_limits: list = field(default_factory=list)  # (t, motion_limit, motion_limit_reason) from ~/status
    teleop_window: tuple = ()  # (t0, t1) of the teleop segment (demo time)
    diagnostics_log: list = field(default_factory=list)  # (t, the node's /diagnostics values)
    perceived_status: list = field(default_factory=list)  # (t, state, points, link, distance) from ~/status
    perceived_window: tuple = ()  # (t0, t1) of the sweep toward the perceived box (demo time)
    perceived_box: object = None  # the camera's box (a core Obstacle)


def circle_path(start: np.ndarray, p_max_z: float, radius: float, lead_in: float, period: float):
    """Goal position at time t: lead-in from ``start`` to the circle's bottom, then around a vertical
    circle in the y-z plane whose top is 5 cm above ``p_max_z``."""
    center = np.array([start[0], start[1], p_max_z + 0.05 - radius])
    bottom = center - [0.0, 0.0, radius]

    def at(t: float) -> np.ndarray:
        if t < lead_in:
            s = 0.5 - 0.5 * np.cos(np.pi * t / lead_in)
            return start + s * (bottom - start)
        a = 2 * np.pi * (t - lead_in) / period
        return center + radius * np.array([0.0, np.sin(a), -np.cos(a)])

    return at


def run(args) -> int:
    ros_environment()
    import pinocchio as pin
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray
    from geometry_msgs.msg import PoseStamped
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray, String

    from roboplan_ik_interfaces.msg import ControllerStatus, PoseGoal
    from roboplan_ik_interfaces.srv import SolveIK

    from .core.config import load_config
    from .core.model.joint_limits_file import load_joint_limits
    from .core.model.resources import resolve_path
    from .core.model.robots import load_example_robot
    from .core.model.scene import Scene
    from .node.spin import make_executor, spin_until_shutdown
    from .node.message_conversions import pose_from_se3

    console = Console()
    out_dir = Path(args.out).resolve().parent
    out_dir.mkdir(parents=True, exist_ok=True)
    config = load_config(args.config)
    limits_uri = config.robot.joint_limits_file or "package://roboplan_ik_ros/config/panda_joint_limits.yaml"
    limits = load_joint_limits(resolve_path(limits_uri, (), "robot.joint_limits_file"))
    bounds = (np.array([limits.acceleration.get(f"panda_joint{i}", np.inf) for i in range(1, 8)]),
              np.array([limits.jerk.get(f"panda_joint{i}", np.inf) for i in range(1, 8)]))
    box = next((b for b in config.barriers if b.type == "position"), None)
    if box is None:
        console.print("[red]the config has no position barrier: nothing to cross[/red]")
        return 1
    rd = load_example_robot("panda")
    scene = Scene(rd.urdf_xml, rd.srdf_xml, rd.package_paths)
    arm = [f"panda_joint{i}" for i in range(1, 8)]
    tip = config.tasks[0].frame
    ns = "ik_controller"
    rec = Recording()

    rclpy.init()
    node = rclpy.create_node("roboplan_ik_demo")
    executor = make_executor()
    executor.add_node(node)
    stop = threading.Event()

    def spin():
        spin_until_shutdown(executor, stop)

    t_origin = time.perf_counter()

    def on_js(msg: JointState):
        index = {n: k for k, n in enumerate(msg.name)}
        if all(n in index for n in arm):
            rec.js_t.append(time.perf_counter() - t_origin)
            rec.js_q.append([msg.position[index[n]] for n in arm])

    def on_status(msg: ControllerStatus):
        margin = min((b.value for b in msg.barriers if b.name == box.name), default=np.nan)
        rec.status.append((time.perf_counter() - t_origin, msg.mode, msg.hold_reason, margin))
        rec.obstacle_status.append((time.perf_counter() - t_origin, msg.closest_obstacle, msg.closest_obstacle_link,
                                    msg.closest_obstacle_distance))
        rec.motion_limits.append((time.perf_counter() - t_origin, msg.motion_limit, msg.motion_limit_reason))
        if hasattr(msg, "perceived_points"):
            rec.perceived_status.append((time.perf_counter() - t_origin, msg.perception_state, msg.perceived_points,
                                         msg.closest_perceived_link, msg.closest_perceived_distance))

    def on_diag(msg: DiagnosticArray):
        for st in msg.status:
            if st.name.startswith(f"{ns}:"):
                rec.diagnostics = {kv.key: kv.value for kv in st.values}
                rec.diagnostics_log.append((time.perf_counter() - t_origin, rec.diagnostics))

    def on_command(msg: Float64MultiArray):
        rec.cmd_t.append(time.perf_counter() - t_origin)
        rec.cmd_q.append(list(msg.data))

    def on_drive(msg: String):
        rec.drive = json.loads(msg.data)
        if rec.drive.get("state") == "faulted":
            rec.drive_faults.append(rec.drive)

    command_topic = (config.node.get("outputs") or [{}])[0].get("topic", "/forward_position_controller/commands")
    node.create_subscription(Float64MultiArray, command_topic, on_command,
                             QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE))
    node.create_subscription(String, "/mock_robot/drive_status", on_drive,
                             QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                                        durability=DurabilityPolicy.TRANSIENT_LOCAL))
    node.create_subscription(JointState, "/joint_states", on_js, 50)
    node.create_subscription(ControllerStatus, f"/{ns}/status", on_status, 10)
    node.create_subscription(DiagnosticArray, "/diagnostics", on_diag, 10)
    goal_pub = node.create_publisher(PoseStamped, f"/{ns}/ee/target_pose", 10)
    srv = node.create_client(SolveIK, f"/{ns}/solve_ik")
    threading.Thread(target=spin, daemon=True).start()

    control_rate = float(config.node.get("control_rate_hz", 500.0))
    children = [
        Child("roboplan_ik_ros.sim.mock_robot", {"rate_hz": 250.0, "strict_drive": True, "rt_priority": 40,
                                                  "joint_limits_file": limits_uri,
                                                  "command_period": 1.0 / control_rate}, out_dir / "mock_robot.log"),
        Child("roboplan_ik_ros.node.ik_controller", {"autostart": True, "config_file": args.config},
              out_dir / "ik_controller.log"),
    ]
    if args.perceived_segment:  # a fixed depth camera: the table and the arm from the start, the box when told
        rec.perceived_box = perceived_box(scene.frame_pose(scene.named_configuration("default"), tip))
        children.append(Child("roboplan_ik_ros.sim.mock_camera", {
            "topic": f"/{ns}/pointcloud", "box_size": list(PERCEIVED_BOX_SIZE),
            "box_position": [float(v) for v in rec.perceived_box.T_frame_obstacle.translation]}, out_dir / "mock_camera.log"))
    ok = True
    try:
        with Progress(TextColumn("[bold]{task.description}"), BarColumn(), TimeElapsedColumn(),
                      console=console, transient=False) as progress:
            task = progress.add_task("starting mock_robot and ik_controller", total=None)
            deadline = time.monotonic() + 30.0
            while time.monotonic() < deadline and not (
                    rec.status and rec.status[-1][1] != "inactive" and rec.js_q and goal_pub.get_subscription_count()):
                if not all(c.alive() for c in children):
                    raise RuntimeError("a child process exited:\n" + "\n".join(c.tail() for c in children))
                time.sleep(0.02)
            if not rec.status or rec.status[-1][1] == "inactive":
                raise RuntimeError("ik_controller did not become active within 30 s:\n" + children[1].tail())
            assert srv.wait_for_service(timeout_sec=10.0)
            q0 = scene.q_from_joint_positions(arm, rec.js_q[-1], scene.named_configuration("default"))
            T0 = scene.frame_pose(q0, tip)
            lead_in, period = 2.0, args.period
            path = circle_path(T0.translation, box.p_max[2], args.radius, lead_in, period)
            total = lead_in + args.loops * period
            progress.update(task, description="tracking the moving goal", total=total, completed=0)
            service_times = list(np.linspace(lead_in, total - 0.5, args.service_calls))
            rng = np.random.default_rng(0)
            pending = []
            t_start = time.perf_counter()
            next_goal = 0.0
            t0_rel = t_start - t_origin
            rec.segments.append(("lead-in", t0_rel, t0_rel + lead_in))
            for k in range(args.loops):
                rec.segments.append((f"lap {k + 1}", t0_rel + lead_in + k * period,
                                     t0_rel + lead_in + (k + 1) * period))
            while (t := time.perf_counter() - t_start) < total:
                if rec.drive_faults:
                    raise RuntimeError(f"the strict drive FAULTED: {rec.drive_faults[0]['violation']['message']}")
                p = path(t)
                ps = PoseStamped()
                ps.header.frame_id = ""
                pose_from_se3(pin.SE3(T0.rotation, p), ps.pose)
                goal_pub.publish(ps)
                rec.goal_t.append(time.perf_counter() - t_origin)
                rec.goal_p.append(p)
                if service_times and t >= service_times[0]:
                    service_times.pop(0)
                    pending.append(_call_service(srv, scene, arm, tip, rng, rec, PoseGoal, SolveIK, pose_from_se3))
                progress.update(task, completed=t)
                next_goal += 1.0 / args.goal_rate
                time.sleep(max(0.0, next_goal - (time.perf_counter() - t_start)))
            progress.update(task, completed=total, description="done")
            deadline = time.monotonic() + 5.0
            while any(not f.done() for f in pending) and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(0.6)  # one more /diagnostics message
            if args.perceived_segment:
                sweep_toward_perceived_box(node, ns, goal_pub, T0, rec, progress, t_origin)
                rec.segments.append(("perceived box (camera)", *rec.perceived_window))
                if rec.drive_faults:
                    raise RuntimeError(f"the strict drive FAULTED: {rec.drive_faults[0]['violation']['message']}")
            if args.obstacle_segment:
                reach_over_block(node, ns, goal_pub, T0, rec, progress, t_origin)
                rec.segments.append(("reach over block", *rec.obstacle_window))
                if rec.drive_faults:
                    raise RuntimeError(f"the strict drive FAULTED: {rec.drive_faults[0]['violation']['message']}")
            if args.teleop_segment:
                teleop_into_the_box(node, ns, rec, progress, t_origin)
                rec.segments.append(("teleop: twist into the box", *rec.teleop_window))
                if rec.drive_faults:
                    raise RuntimeError(f"the strict drive FAULTED: {rec.drive_faults[0]['violation']['message']}")
            # a stop while moving: the goal runs on, the controller gets SIGINT (as Ctrl-C) and brakes
            p_far = path(total - 0.2 * period)
            ps = PoseStamped()
            pose_from_se3(pin.SE3(T0.rotation, p_far), ps.pose)
            goal_pub.publish(ps)
            time.sleep(0.3)
            t_sig = time.perf_counter() - t_origin
            children[1].stop()
            rec.segments.append(("SIGINT stop", t_sig, time.perf_counter() - t_origin + 0.5))
            time.sleep(0.5)  # the drive's next status has seen the braking commands
            if rec.drive_faults:
                raise RuntimeError(f"the strict drive FAULTED: {rec.drive_faults[0]['violation']['message']}")
    except Exception as exc:  # noqa: BLE001 - report whatever broke the run
        console.print("demo failed:", style="red")
        console.print(str(exc), markup=False, highlight=False)
        ok = False
    finally:
        for c in reversed(children):
            c.stop()
        stop.set()
        time.sleep(0.1)
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
    if rec.drive_faults:
        v = rec.drive_faults[0]["violation"]
        console.print(f"STRICT DRIVE FAULT: the mock refused a command beyond the bounds: {v['message']}",
                      style="bold red", markup=False, highlight=False)
        return 1
    if not ok or not rec.js_q:
        return 1
    a_max, j_max = bounds
    good = motion_table(rec, a_max, j_max, 1.0 / control_rate, arm, console)
    status = report(rec, scene, arm, tip, box, args, console) if good else 1
    if args.perceived_segment:
        status |= perceived_report(rec, config, arm, tip, a_max, j_max, 1.0 / control_rate, args, console)
    if args.obstacle_segment:
        status |= obstacle_report(rec, config, arm, tip, args, console)
    if args.teleop_segment:
        status |= teleop_report(rec, scene, arm, tip, box, console)
    return status


def teleop_into_the_box(node, ns, rec, progress, t_origin, push: float = 4.0) -> None:
    """A SpaceMouse held up: a 100 Hz TwistStamped (unitless 1.0 x max_linear_speed along the base's z)
    for ``push`` seconds, into the box's upper face (it stops there: the status says which barrier),
    then nothing: the stream times out and the arm brakes to rest."""
    from geometry_msgs.msg import TwistStamped

    pub = node.create_publisher(TwistStamped, f"/{ns}/ee/target_twist", 10)
    deadline = time.monotonic() + 10.0
    while pub.get_subscription_count() == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    msg = TwistStamped()
    msg.header.frame_id = ""
    msg.twist.linear.z = 1.0
    task = progress.add_task("teleop: a twist stream pushing into the box's upper face", total=push + 1.0)
    t_start = time.perf_counter()
    rec.teleop_window = (t_start - t_origin,)
    next_t = 0.0
    while (t := time.perf_counter() - t_start) < push + 1.0:
        if t < push:
            msg.header.stamp = node.get_clock().now().to_msg()
            pub.publish(msg)
        progress.update(task, completed=t)
        next_t += 0.01
        time.sleep(max(0.0, next_t - (time.perf_counter() - t_start)))
    rec.teleop_window = (rec.teleop_window[0], time.perf_counter() - t_origin)
    node.destroy_publisher(pub)


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


def _call_service(srv, scene, arm, tip, rng, rec, PoseGoal, SolveIK, pose_from_se3):
    """A SolveIK request for the TCP pose of a random collision-free configuration."""
    group = scene.group("arm")
    while True:
        q = scene.random_configuration(rng, group, scene.named_configuration("default"))
        if not scene.in_collision(q) and 0.3 < scene.frame_pose(q, tip).translation[2]:
            break
    g = PoseGoal(tip_frame=tip)
    pose_from_se3(scene.frame_pose(q, tip), g.pose.pose)
    t0 = time.perf_counter()
    future = srv.call_async(SolveIK.Request(goals=[g]))

    def done(f):
        r = f.result()
        rec.service.append((time.perf_counter() - t0, r.success, r.error_code, r.message))

    future.add_done_callback(done)
    return future


def _raw_mesh_checker(*obstacles):
    """The demo's own distance oracle: the Panda with its raw collision meshes (not the node's convex
    hulls) and ``obstacles``."""
    from .core.model.robots import load_example_robot
    from .core.model.scene import Scene

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


# ------------------------------------------------------------------ reach over an obstacle
#: the block put on the table for the reach (world frame, centred on its pose) [m]
BLOCK_SIZE = (0.12, 0.12, 0.31)
BLOCK_TOP = 0.30


def block_obstacle(T0):
    """The block (a core Obstacle) under the TCP's start x, on the table (top face at BLOCK_TOP)."""
    from .core.model.obstacles import Obstacle

    return Obstacle("block", "box", BLOCK_SIZE, position=(float(T0.translation[0]), 0.0, BLOCK_TOP - BLOCK_SIZE[2] / 2))


def reach_over_block(node, ns, goal_pub, T0, rec, progress, t_origin, duration: float = 5.0) -> None:
    """Add a block on the table (CollisionObject on ~/collision_objects, shown on ~/markers), then
    stream a goal from one side of it to the other along an arc that dips 1 cm under the block's
    top (the obstacle barrier keeps the hand d_min above it), and back."""
    import pinocchio as pin
    from geometry_msgs.msg import PoseStamped
    from shape_msgs.msg import SolidPrimitive

    from roboplan_ik_interfaces.msg import CollisionObject

    from .node.message_conversions import pose_from_se3

    pub = node.create_publisher(CollisionObject, f"/{ns}/collision_objects", 10)
    deadline = time.monotonic() + 10.0
    while pub.get_subscription_count() == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    block = rec.block = block_obstacle(T0)
    msg = CollisionObject(id=block.name, operation=CollisionObject.ADD)
    msg.header.frame_id = ""
    pose_from_se3(block.T_frame_obstacle, msg.pose)
    msg.primitives = [SolidPrimitive(type=SolidPrimitive.BOX, dimensions=list(BLOCK_SIZE))]
    msg.primitive_poses = [pose_from_se3(pin.SE3.Identity())]
    pub.publish(msg)
    x = float(T0.translation[0])
    side, z_side, z_dip = 0.25, BLOCK_TOP + 0.06, BLOCK_TOP - 0.01  # the goal dips 1 cm into the block

    def at(s: float) -> np.ndarray:  # s in [0, 1]: +side -> -side over the block -> +side
        u = 1.0 - abs(2.0 * s - 1.0)  # 0 -> 1 -> 0: there and back
        y = side * np.cos(np.pi * u)
        z = z_side + (z_dip - z_side) * np.sin(np.pi * u) ** 2
        return np.array([x, y, z])

    task = progress.add_task("reaching over a block on the table", total=duration + 2.0)
    t_start = time.perf_counter()
    rec.obstacle_window = (t_start - t_origin,)
    while (t := time.perf_counter() - t_start) < duration + 2.0:
        s = min(max(t - 1.0, 0.0) / duration, 1.0)  # 1 s at the start side, the reach, 1 s back at it
        ps = PoseStamped()
        pose_from_se3(pin.SE3(T0.rotation, at(s)), ps.pose)
        goal_pub.publish(ps)
        rec.goal_t.append(time.perf_counter() - t_origin)
        rec.goal_p.append(at(s))
        progress.update(task, completed=t)
        time.sleep(0.02)
    rec.obstacle_window = (rec.obstacle_window[0], time.perf_counter() - t_origin)
    node.destroy_publisher(pub)


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


# --------------------------------------------------------- a box that appears in the camera's cloud
#: the box the mock camera shows on request (world frame, on the table under the TCP's start x) [m]
PERCEIVED_BOX_SIZE = (0.12, 0.12, 0.40)
PERCEIVED_SWEEP = (0.35, -0.35, 0.30)  # the goal's y from, y to, and z [m]: straight through the box


def perceived_box(T0):
    """The camera's box (a core Obstacle, for the demo's own distances): on the table, under the start TCP."""
    from .core.model.obstacles import Obstacle

    # its +y face (the side the arm comes from) at y = 0.07, mid-leaf of a 2 cm octree: a face on a leaf
    # boundary jumps by a leaf between noisy clouds (README, "Perceived obstacles")
    return Obstacle("camera_box", "box", PERCEIVED_BOX_SIZE,
                    position=(float(T0.translation[0]), 0.01, PERCEIVED_BOX_SIZE[2] / 2))


def _set_camera_box(node, visible: bool) -> None:
    """mock_camera's runtime parameter box_visible (SetParameters: any rclpy version)."""
    from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
    from rcl_interfaces.srv import SetParameters

    client = node.create_client(SetParameters, "/mock_camera/set_parameters")
    try:
        if not client.wait_for_service(timeout_sec=10.0):
            raise RuntimeError("mock_camera's parameter service did not appear within 10 s")
        value = ParameterValue(type=ParameterType.PARAMETER_BOOL, bool_value=visible)
        future = client.call_async(SetParameters.Request(parameters=[Parameter(name="box_visible", value=value)]))
        deadline = time.monotonic() + 10.0
        while not future.done() and time.monotonic() < deadline:
            time.sleep(0.01)
        if not (future.done() and future.result().results[0].successful):
            raise RuntimeError(f"mock_camera refused box_visible := {visible}")
    finally:
        node.destroy_client(client)


def sweep_toward_perceived_box(node, ns, goal_pub, T0, rec, progress, t_origin, sweep: float = 3.0,
                               hold: float = 1.5) -> None:
    """The goal to one side of where the box will be; the camera shows the box (only its cloud knows it);
    then the goal sweeps straight through it to the other side, stays, and comes back. The arm stops in
    front of the box (the ``pairs: perceived`` barrier) and returns. The box is hidden again after."""
    import pinocchio as pin
    from geometry_msgs.msg import PoseStamped

    from .node.message_conversions import pose_from_se3

    x = float(T0.translation[0])
    y_from, y_to, z = PERCEIVED_SWEEP

    def publish(y: float) -> None:
        p = np.array([x, y, z])
        ps = PoseStamped()
        pose_from_se3(pin.SE3(T0.rotation, p), ps.pose)
        goal_pub.publish(ps)
        rec.goal_t.append(time.perf_counter() - t_origin)
        rec.goal_p.append(p)

    def points() -> int:
        return rec.perceived_status[-1][2] if rec.perceived_status else 0

    task = progress.add_task("a box appears in the camera's cloud on the arm's path", total=2 * sweep + hold + 2.0)
    t_start = time.perf_counter()
    while time.perf_counter() - t_start < 2.0:  # to the start side
        publish(y_from)
        progress.update(task, completed=time.perf_counter() - t_start)
        time.sleep(0.02)
    before = points()
    _set_camera_box(node, True)
    deadline = time.monotonic() + 10.0
    while points() < before + 50 and time.monotonic() < deadline:  # the box is in the node's cloud
        publish(y_from)
        time.sleep(0.02)
    if points() < before + 50:
        raise RuntimeError(f"the camera's box did not reach the node's cloud within 10 s ({points()} points)")
    t0 = time.perf_counter()
    rec.perceived_window = (t0 - t_origin,)
    while (t := time.perf_counter() - t0) < 2 * sweep + hold:
        s = min(t / sweep, 1.0) if t < sweep + hold else max(0.0, 1.0 - (t - sweep - hold) / sweep)
        publish(y_from + (y_to - y_from) * (0.5 - 0.5 * np.cos(np.pi * s)))
        progress.update(task, completed=2.0 + t)
        time.sleep(0.02)
    deadline = time.perf_counter() + 1.0
    while time.perf_counter() < deadline:  # settle at the start side
        publish(y_from)
        time.sleep(0.02)
    rec.perceived_window = (rec.perceived_window[0], time.perf_counter() - t_origin)
    _set_camera_box(node, False)
    deadline = time.monotonic() + 5.0
    while points() >= before + 50 and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.6)  # one more /diagnostics message


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


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dual-arm", action="store_true",
                   help="the dual-arm demo instead: Baxter's hands carry a box in one QP (demo_dual_arm.py; no ROS)")
    p.add_argument("--config", default=None,
                   help="YAML config (default: the packaged panda.yaml; baxter_dual.yaml with --dual-arm)")
    p.add_argument("--duration", type=float, default=10.0, help="--dual-arm: seconds along the box's path")
    p.add_argument("--no-grasp-task", dest="grasp_task", action="store_false",
                   help="--dual-arm: without the config's relative_frame (grasp) task: the hands' tasks alone")
    p.add_argument("--loops", type=int, default=2, help="laps around the circle")
    p.add_argument("--period", type=float, default=8.0, help="seconds per lap")
    p.add_argument("--radius", type=float, default=0.2, help="circle radius [m]")
    p.add_argument("--goal-rate", type=float, default=50.0, help="goal stream rate [Hz]")
    p.add_argument("--service-calls", type=int, default=5)
    p.add_argument("--out", default=None,
                   help="plot file (PNG; default build/demo/roboplan_ik_demo.png, roboplan_ik_dual_arm.png)")
    p.add_argument("--no-obstacle-segment", dest="obstacle_segment", action="store_false",
                   help="skip the reach over a block on the table (added on ~/collision_objects)")
    p.add_argument("--no-perceived-segment", dest="perceived_segment", action="store_false",
                   help="skip the mock depth camera and the sweep toward a box that appears in its cloud")
    p.add_argument("--no-teleop-segment", dest="teleop_segment", action="store_false",
                   help="skip the twist stream that pushes into the box's upper face")
    args = p.parse_args(argv)
    if args.dual_arm:
        from . import demo_dual_arm

        args.config = args.config or demo_dual_arm.default_config()
        args.out = args.out or "build/demo/roboplan_ik_dual_arm.png"
        return demo_dual_arm.run(args)
    args.config = args.config or default_config()
    args.out = args.out or "build/demo/roboplan_ik_demo.png"
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
