"""Benchmark of the ik_controller node in closed loop with the mock Panda, over real DDS.

The node and the mock robot (as a robot driver would be) run in child processes of this
interpreter, started afresh for every run; this process streams a pose goal (50 Hz) around a
circle whose top touches the workspace barrier, so the node tracks a moving goal (it holds still
in ``waiting_for_goal`` until a first goal arrives; the share of ~/status samples in
tracking/recovering is printed to show it moved), and, with --load, calls ~/solve_ik.

Configs (the node section is the shipped one except for the trigger keys below and --rate):

* ``c``: the shipped config/panda.yaml (FrameTask + posture + PositionLimit + VelocityLimit +
  PositionBarrier + SelfCollisionBarrier);
* ``b``: the same without the collision barriers (self-collision and obstacles);
* ``d``: ``c`` + two walls and 20 random primitives (seeded; ``common.cell_obstacles``, as
  bench_oink's config (d)) beside the shipped table, as YAML ``obstacles:``;
* ``p``: ``c`` + a 20 000-point cloud at 15 Hz on ~/pointcloud (the shipped ``pairs: perceived`` barrier and
  ``perception:`` section): the mock depth camera (``sim/mock_camera.py``) runs as another child process,
  showing the table, the arm and a box under the goal circle (CAMERA_BOX: its top 8 cm under the circle's
  bottom, mid-leaf of the 2 cm octree), so perceived pairs are within the barrier's broad_phase_cutoff for the
  lower part of the circle. Printed: the points the node holds and the closest perceived distance (its
  ~/status), the camera process's CPU.
* ``x``: the shipped config/baxter_dual.yaml (two arms in one QP: a frame task per hand, posture, position,
  velocity and acceleration limits, the self-collision barrier) on the mock Baxter (``robot: baxter``): both
  hands' goals carry the dual-arm demo's box around its path (``demo_dual_arm.box_path``, 10 s a lap) at 50 Hz.
  Idle and busy loads only (the ~/solve_ik stream's goals are the Panda's).

Rates: ``--rate`` (one) or ``--rates 500,1000`` (every run at each, in one invocation: the rows compare;
run labels then say the rate).

Triggers: ``timer`` (the shipped default: the loop runs in its own thread "control_loop" on an
absolute schedule, commanded state feedback) and ``joint_states`` (``trigger: joint_states`` +
``state_feedback: measured``: each joint state wakes the node's "control_loop" thread for a tick;
the mock publishes at the control rate).

Loads: ``idle`` (default); with ``--load`` also ``busy`` (one core kept busy by another process,
``python -c 'while True: pass'``, started before the node) and ``service`` (a ``~/solve_ik`` stream
of --service-rate calls/s, roboplan_ik_interfaces/srv/SolveIK, random reachable Panda goals = FK of
random in-limit collision-free configurations, seeded from the node's current state).

Measured over --duration seconds after --warmup seconds of tracking:

* on time: a tick is on time when it starts at most 1.5 periods after the previous tick started
  (the node's TickStats rule). "on time %" = on-time ticks / expected ticks (window x rate), so a
  stall of n periods costs n ticks, not one; "late gaps %" = the node's own count (late gaps / gaps).
* tick p50/p99: the node's own per-tick durations (lock + ControlLoop.tick + publish + stats);
  tick CPU p50/p99: the loop thread's CPU time in the same ticks (time.thread_time): where the
  wall p99 exceeds it, the tick waited (GIL, a lock, preemption) rather than computed.
* CPU: from /proc/<pid>/task/<tid>/stat over the window, in % of one core: the loop thread (the
  thread whose OS name is "control_loop", else the busiest non-main thread, flagged "?"), the main
  (executor) thread, the whole process, and the node's
  child processes (a SimpleIK worker, if the node runs one).
* latency: joint_states-to-command age at the mock robot (timer mode: the age of the newest joint
  state when a command arrives; the timer is not synchronized with the robot, so it spans one
  joint-state period by construction and is not judged).
* start-up: this process configures and activates the node over its lifecycle services, as a
  lifecycle manager does, as soon as it sees them: "configure -> active" = the configure request
  sent -> activate's response (includes the node's wait, if any, for /robot_description over DDS
  and for a fresh /joint_states); also process start -> active (adds the interpreter, imports and
  DDS discovery of the node).

Motion (on by default; ``--no-motion`` skips it, ``--motion-only`` runs only it): config (c) as shipped
("bounded") and without its acceleration limit, goal smoothing ``max_speed`` ("unbounded"), each in a
fresh node + mock pair, from rest: a 20 cm step (its goal time: the commanded TCP within 1 mm from
then on), three step goals 10-30 cm apart, a 20 cm goal reversed after 0.3 s, and 7 s of the 50 Hz
circle stream. Every command is recorded over DDS; peak |acceleration| and |jerk| per joint from
consecutive commands at the nominal period, as ratios of config/panda_joint_limits.yaml's bounds
(Franka's), and the share of command steps over an acceleration bound.

Twist stream (on by default; ``--no-twist`` skips it, ``--twist-only`` runs only it; ``--twist-duration``,
``--twist-rates``, ``--twist-changes``): config (c), timer trigger, at 500 Hz and 1 kHz, each in a fresh node +
mock pair: a 100 Hz TwistStamped stream on ~/ee/target_twist, 0.1 m/s turning by 90 degrees every second (a
square in the base's y-z plane, free space; the tracking error), then 100 more turns every 0.35 s (a smaller
square; the latency's percentiles rest on ~110 changes per rate), then stopped. On-time share of the ticks (the rule above); input-to-command latency
from outside (the bench publishing a twist that changes the commanded velocity -> the first command whose
FK tool velocity departs from the steady one, see ``first_departure``; from rest exact, while moving an
upper bound); the steady tool-velocity tracking error (FK of the commands per control period, the last
0.5 s of each segment); peak acceleration/jerk ratios; the stop after the stream ends (at rest, ~/status
``command_timeout``).

Arms (``--arms N``, N >= 2; default 1: one node as above): N nodes, each the shipped config in its own namespace
``/armK`` (started as ``--ros-args -r __ns:=/armK`` with remaps of its absolute topics: the robot's /joint_states and
/robot_description(_semantic), its command output), against one mock process driving N arms (``mock_robot --arms
N``: one executor, one drive thread), each node tracking its own 50 Hz goal circle. Printed per node: on time, tick
p50/p99 and their CPU, the loop thread's and the process's CPU (the definitions above, ``node_figures``); per run:
the lowest on-time share, the total CPU in cores (the nodes with their IK workers + the mock; the bench's own goal
streams shown apart) and per arm. Configs b, c, d; loads idle and busy; no motion or twist runs.

Memory: the node's RSS every second (slope after 60 s, "flat" below 0.1 MB/min); ``--tracemalloc``
reports the node's top growing Python allocation sites.

Variants (``--variants``, measurement only): how the node handles ~/solve_ik, patched in the node's
process (and the IK worker's) to find out what disturbs the loop: ``full`` (as shipped), ``reject``,
``parse``, ``nopipe``, ``nosolve`` (see VARIANTS). ``--repeat N`` repeats everything, interleaved
(repetition > config > trigger > variant > load), and prints one line per (config, trigger, variant,
load) with every run's figures and the CPU per ~/solve_ik call of each thread (service run minus the
idle run of the same repetition; "other py threads" is the "solve_ik" thread plus unnamed ones).
``--loads`` picks loads (e.g. ``idle,service``) instead of ``--load``'s three.

    python bench/bench_node.py [--duration 20] [--configs bc] [--trigger both] [--load] [--json PATH]
    python bench/bench_node.py --configs b --trigger timer --loads idle,service --variants full,reject --repeat 3
    python bench/bench_node.py --arms 4 --configs c --trigger timer --duration 15 [--json PATH]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from common import machine_note, print_table, verdict, write_json  # also puts roboplan_ik_ros on sys.path
from node_bench.arms_run import bench_arms_run
from node_bench.children import (MOCK_PRIORITY_ENV, VARIANT_ENV, VARIANTS, _patch_worker_solver, run_child,
                                 run_child_mock, run_child_mock_arms, run_child_server)
from node_bench.configs import start_pose
from node_bench.motion import MOTION_VARIANTS, motion_targets, print_motion, run_motion
from node_bench.report import (issue20_targets, print_arms, print_memory, print_perceived, print_report,
                               print_variant_summary, target_rows)
from node_bench.service_stream import service_goals
from node_bench.tracking_run import bench_run
from node_bench.twist import TWIST_HZ, TWIST_QUICK_SEGMENT_S, TWIST_RATES, print_twist, run_twist, twist_targets

# The code is in node_bench/, by concern (its __init__ lists the modules); this script keeps the options,
# main and the run loop, and is the command line of every child process (main() dispatches them to
# node_bench.children; bench_service.py calls run_child from here, of whichever tree it benchmarks).

# the IK worker process of variant "nosolve" (``spawn`` starts it by importing this file as ``__mp_main__``)
if __name__ == "__mp_main__" and os.environ.get(VARIANT_ENV) == "nosolve":
    _patch_worker_solver()


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child-node":
        run_child(sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5]))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--child-server":
        run_child_server(sys.argv[2])
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--child-mock":
        run_child_mock(float(sys.argv[2]), sys.argv[3], int(sys.argv[4]), *sys.argv[5:6])
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--child-mock-arms":
        run_child_mock_arms(float(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
        return
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--duration", type=float, default=20.0, help="measured seconds per run")
    p.add_argument("--warmup", type=float, default=3.0, help="seconds of tracking before measuring")
    p.add_argument("--rate", type=float, default=500.0, help="control rate [Hz]")
    p.add_argument("--rates", help="comma-separated control rates [Hz]: every run at each, in this invocation "
                                   "(overrides --rate; motion and twist runs: the first)")
    p.add_argument("--configs", default="bc", help="any of 'b' (no collision barrier), 'c' (shipped), 'd' "
                                                   "(c + walls and 20 primitives), 'p' (c + a 20 000-point "
                                                   "cloud at 15 Hz from the mock depth camera) and 'x' (the "
                                                   "shipped baxter_dual.yaml on the mock Baxter: two arms)")
    p.add_argument("--trigger", "--mode", dest="trigger", choices=("timer", "joint_states", "both"), default="both")
    p.add_argument("--load", action="store_true",
                   help="also run each config and trigger with one core busy and with a ~/solve_ik stream")
    p.add_argument("--service-rate", type=float, default=20.0, help="[calls/s] --load's ~/solve_ik stream")
    p.add_argument("--seed", type=int, default=0, help="random ~/solve_ik goals")
    p.add_argument("--json", metavar="PATH", help="write the result rows (and the targets) as JSON")
    p.add_argument("--loads", help="comma-separated subset of idle,busy,service (default: idle, or all three "
                                   "with --load)")
    p.add_argument("--variants", default="full",
                   help="comma-separated ~/solve_ik handling variants (measurement only): " +
                        "; ".join(f"{k}: {v}" for k, v in VARIANTS.items()))
    p.add_argument("--tracemalloc", type=int, nargs="?", const=1, default=0, metavar="FRAMES",
                   help="trace the node's Python allocations (slows it: not for timing) and print the sites that "
                        "grew most after the warm-up; FRAMES of traceback per site (default 1)")
    p.add_argument("--no-motion", dest="motion", action="store_false",
                   help="skip the motion scenarios (step goals, a reversed goal, a 50 Hz stream, the goal time of a "
                        "20 cm step: peak acceleration and jerk against the drive's bounds, with and without them)")
    p.add_argument("--motion-only", action="store_true", help="only the motion scenarios")
    p.add_argument("--no-twist", dest="twist", action="store_false",
                   help="skip the twist-stream runs (100 Hz twist input at each --twist-rates: on-time share, "
                        "input-to-command latency, tool-velocity tracking error, acceleration/jerk, timeout stop)")
    p.add_argument("--twist-only", action="store_true", help="only the twist-stream runs")
    p.add_argument("--twist-duration", type=float, default=10.0,
                   help="[s] of the twist stream's square (1 s segments: tracking) per rate")
    p.add_argument("--twist-changes", type=int, default=100,
                   help=f"then this many quicker direction changes ({TWIST_QUICK_SEGMENT_S:g} s apart) for the "
                        "latency's percentiles")
    p.add_argument("--twist-rates", default=",".join(f"{r:g}" for r in TWIST_RATES),
                   help="comma-separated control rates [Hz] of the twist-stream runs")
    p.add_argument("--mock-priority", type=int, default=40,
                   help="SCHED_FIFO priority of the mock robot's drive and executor threads (its rt_priority), as a "
                        "drive's, as the e2e tests and the demo run it; 0 = normal scheduling. The default was 0 "
                        "before the mock published from a drive thread: with 40 its /joint_states were on time "
                        "99.96-99.99 %% but the node's joint_states-triggered ticks less so. Now (drive thread, the "
                        "node's other threads under SCHED_FIFO), joint_states trigger, 500 Hz: at 0 the mock's own "
                        "/joint_states were on time 96.6-99.9 %% (97.9-99.0 %% with a core busy), the node's ticks "
                        "following them; at 40, 99.85-99.99 %% and the node 98.91-99.99 %% (11 of 12 runs of (c) and (d), idle and busy, at "
                        "least 99.5 %%)")
    p.add_argument("--arms", type=int, default=1,
                   help="N >= 2: N nodes (the shipped config, namespaces /arm1 ... /armN) against one mock process "
                        "driving N arms, a table row per node and the total CPU (configs b, c, d; loads idle, busy; "
                        "no motion or twist runs); 1 = one node, as without it")
    p.add_argument("--repeat", type=int, default=1, help="repetitions (interleaved: repetition > variant > load)")
    p.add_argument("--service-pairs", type=int, default=1,
                   help="repeat the idle and service runs until there are this many pairs per config, trigger and "
                        "variant (the service verdict pools their ticks: one pair's p99 moves 20-40 %% between runs)")
    args = p.parse_args()
    os.environ[MOCK_PRIORITY_ENV] = str(args.mock_priority)
    variants = [v for v in args.variants.split(",") if v]
    if not variants or set(variants) - set(VARIANTS):
        raise SystemExit(f"--variants: any of {', '.join(VARIANTS)}")
    if not args.configs or set(args.configs) - set("bcdpx"):
        raise SystemExit("--configs: any of 'b', 'c', 'd', 'p' and 'x'")
    try:
        args.rate_list = [float(x) for x in args.rates.split(",") if x] if args.rates else [args.rate]
    except ValueError:
        raise SystemExit(f"--rates: comma-separated numbers, got {args.rates!r}")
    if not args.rate_list or min(args.rate_list) <= 0:
        raise SystemExit("--rates: rates > 0")
    args.rate = args.rate_list[0]  # motion and twist runs
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    os.environ.setdefault("ROS_DOMAIN_ID", str(1 + os.getpid() % 100))
    os.environ.setdefault("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")
    os.environ.setdefault("ROS_LOG_DIR", tempfile.mkdtemp(prefix="bench_node-log."))
    import rclpy

    triggers = ("timer", "joint_states") if args.trigger == "both" else (args.trigger,)
    loads = ("idle", "busy", "service") if args.load else ("idle",)
    if args.loads:
        loads = tuple(ld for ld in args.loads.split(",") if ld)
        if not loads or set(loads) - {"idle", "busy", "service"}:
            raise SystemExit("--loads: any of idle, busy, service")
        args.load = set(loads) != {"idle"}
    if "x" in args.configs and "service" in loads:
        raise SystemExit("--configs x: idle and busy loads only (the ~/solve_ik stream's goals are the Panda's)")
    if args.arms < 1:
        raise SystemExit("--arms: at least 1")
    if args.arms > 1:
        if set(args.configs) - set("bcd") or "service" in loads or variants != ["full"] or args.tracemalloc:
            raise SystemExit("--arms N: configs b, c, d, loads idle and busy, variant full, no --tracemalloc")
        run_arms(args, triggers, loads)
        return
    runs = [(c, t, ld, v, i, rate) for i in range(max(args.repeat, args.service_pairs if "service" in loads else 1))
            for rate in args.rate_list for c in args.configs for t in triggers for v in variants for ld in loads
            if i < args.repeat or ld in ("idle", "service")]
    svc_goals = service_goals(200, args.seed) if "service" in loads else None
    T0 = start_pose()
    print(f"[start] {machine_note()}")
    rclpy.init()
    rows = []
    motion_rows = []
    twist_rows = []
    if args.motion_only or args.twist_only:
        runs = []
    with tempfile.TemporaryDirectory(prefix="bench_node.") as tmp:
        if (args.twist and not args.motion_only) or args.twist_only:
            rates = [float(r) for r in args.twist_rates.split(",") if r]
            for k, rate in enumerate(rates):
                print(f"[bench_node twist {k + 1}/{len(rates)}] config (c), timer trigger at {rate:g} Hz: a "
                      f"{TWIST_HZ:g} Hz twist stream: a {args.twist_duration:g} s square, then {args.twist_changes} "
                      f"turns {TWIST_QUICK_SEGMENT_S:g} s apart, then stopped")
                try:
                    twist_rows.append(run_twist(2000 + k, rate, args, Path(tmp)))
                except Exception as exc:  # report, keep the other runs
                    print(f"  [twist run failed: {type(exc).__name__}: {exc}]")
        if (args.motion or args.motion_only) and not args.twist_only:
            for k, variant in enumerate(MOTION_VARIANTS):
                print(f"[bench_node motion {k + 1}/{len(MOTION_VARIANTS)}] config (c) {variant}: step goals, a reversed "
                      f"goal, a 50 Hz stream")
                try:
                    motion_rows += run_motion(1000 + k, variant, args, Path(tmp), T0)
                except Exception as exc:  # report, keep the other runs
                    print(f"  [motion run failed: {type(exc).__name__}: {exc}]")
        for k, (config, trigger, load, variant, i, rate) in enumerate(runs):
            print(f"[bench_node {k + 1}/{len(runs)}] config ({config}), trigger {trigger}, load {load}, variant "
                  f"{variant}, repetition {i + 1}: node + mock {'Baxter' if config == 'x' else 'Panda'} at {rate:g} "
                  f"Hz, {args.warmup:g} + {args.duration:g} s" + (" + mock camera" if config == "p" else ""))
            run_args = argparse.Namespace(**{**vars(args), "rate": rate})
            try:
                rows.append({**bench_run(k, config, trigger, load, run_args, Path(tmp), svc_goals, T0, variant, i),
                             "repeats": args.repeat, "multi_rate": len(args.rate_list) > 1})
            except Exception as exc:  # report, keep the other runs
                print(f"  [run failed: {type(exc).__name__}: {exc}]")
    rclpy.try_shutdown()
    print(f"[end] {machine_note()}")
    targets = target_rows(rows) + motion_targets(motion_rows)
    targets_twist = twist_targets(twist_rows)
    targets_20 = issue20_targets(rows)
    if rows:
        print_report(rows, targets, args)
        print_memory(rows)
        print_perceived(rows)
        if targets_20:
            print_table("issue 20 targets (this machine, this run)", ["target", "run", "measured", "verdict", "detail"],
                        [[t["target"], t["run"], t["measured"], verdict(t["pass"]), t["detail"]] for t in targets_20])
            print(f"issue 20 targets: {sum(t['pass'] for t in targets_20)} / {len(targets_20)} PASS")
    print_motion(motion_rows, args)
    if not rows and motion_rows:
        print_table("motion targets", ["target", "run", "measured", "verdict", "detail"],
                    [[t["target"], t["run"], t["measured"], verdict(t["pass"]), t["detail"]] for t in targets])
    if args.repeat > 1 or len(variants) > 1:
        print_variant_summary(rows, args)
    print_twist(twist_rows, targets_twist)
    write_json(args.json, [{k: v for k, v in r.items() if not k.startswith("_")} for r in rows] + motion_rows
               + twist_rows + targets + targets_twist + [{**t, "issue": 20} for t in targets_20])


def run_arms(args, triggers, loads) -> None:
    """``--arms N``: one N-arm run per (repetition, rate, config, trigger, load), interleaved in that order."""
    import rclpy

    runs = [(c, t, ld, i, rate) for i in range(args.repeat) for rate in args.rate_list for c in args.configs
            for t in triggers for ld in loads]
    T0 = start_pose()
    print(f"[start] {machine_note()}")
    rclpy.init()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_node.") as tmp:
        for k, (config, trigger, load, i, rate) in enumerate(runs):
            print(f"[bench_node arms {k + 1}/{len(runs)}] config ({config}), trigger {trigger}, load {load}, "
                  f"repetition {i + 1}: {args.arms} nodes + one mock process of {args.arms} Panda arms at {rate:g} "
                  f"Hz, {args.warmup:g} + {args.duration:g} s")
            run_args = argparse.Namespace(**{**vars(args), "rate": rate})
            try:
                rows.append(bench_arms_run(k, config, trigger, load, args.arms, run_args, Path(tmp), T0, i))
            except Exception as exc:  # report, keep the other runs
                print(f"  [run failed: {type(exc).__name__}: {exc}]")
    rclpy.try_shutdown()
    print(f"[end] {machine_note()}")
    print_arms(rows)
    write_json(args.json, rows)


if __name__ == "__main__":
    main()
