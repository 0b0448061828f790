"""The demo's run: starts the child processes, subscribes to what it records, streams the circle (with
~/solve_ik calls meanwhile), drives the other scenarios in turn, stops the controller with SIGINT while the
arm moves, then prints the reports."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import numpy as np

from .processes import Child, ros_environment
from .recording import Recording
from .reports import motion_table, obstacle_report, perceived_report, report, teleop_report
from .scenarios import (PERCEIVED_BOX_SIZE, circle_path, perceived_box, reach_over_block, sweep_toward_perceived_box,
                        teleop_into_the_box)


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

    from ..core.config import load_config
    from ..core.model.joint_limits_file import load_joint_limits
    from ..core.model.resources import resolve_path
    from ..core.model.robots import load_example_robot
    from ..core.model.scene import Scene
    from ..node.spin import make_executor, spin_until_shutdown
    from ..node.message_conversions import pose_from_se3

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
