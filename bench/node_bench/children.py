"""The child processes' entry points, which bench_node.py's main() dispatches its ``--child-node`` (the
node; ROS arguments after its own, e.g. an arm's namespace and remaps, go to rclpy), ``--child-mock`` (the mock
robot), ``--child-mock-arms`` (``--arms N``'s N-arm mock) and ``--child-server`` (variant "external"'s ~/solve_ik
server) command lines to, and the node classes of the ~/solve_ik handling variants."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np

from .process_stats import start_tracemalloc_from_env, tracemalloc_report
from .tick_recorder import TickRecorder

#: the entry script the bench spawns as ``[sys.executable, BENCH_NODE, "--child-...", ...]``: its main()
#: runs the entry points below (and its IK worker re-imports it as ``__mp_main__``, see VARIANTS)
BENCH_NODE = str(Path(__file__).resolve().parents[1] / "bench_node.py")


# ------------------------------------------------------------------------- service-handling variants
#: --variants: how the node (child process) handles ~/solve_ik, to find out what disturbs the loop.
#: Applied by the node class the child builds (variant_node_class: its ~/solve_ik server a SolveIKServer subclass),
#: and for "nosolve" by replacing SimpleIK.solve in the IK worker process (which ``spawn`` starts by importing
#: bench_node.py as ``__mp_main__``). Only for measurements.
VARIANTS = {
    "full": "the node as shipped",
    "reject": "~/solve_ik answers NOT_READY at once: rclpy take/decode/encode/send only",
    "parse": "parse the request (seed, goal frames) then answer NOT_READY: no worker",
    "nopipe": "parse + response; the seed is answered without the worker",
    "nosolve": "as shipped, but the worker process answers the seed without solving (pipe + pickling)",
    "normal_priority": "as shipped but node.loop_priority: 0 (the loop thread at normal priority, as where "
                       "SCHED_FIFO is not permitted)",
    "external": "the node serves no ~/solve_ik; a separate bench process serves /ik_controller/solve_ik with "
                "SimpleIK (shipped options, seed: the start pose): the floor of moving the service out of the "
                "node's process",
}
VARIANT_ENV = "BENCH_NODE_VARIANT"
MOCK_PRIORITY_ENV = "BENCH_MOCK_PRIORITY"  # --mock-priority, for the mock's child process


def _variant_result(q_seed, n_goals: int):
    from roboplan_ik_ros.core.simple_ik import IKResult

    return IKResult(True, np.array(q_seed, dtype=float), np.zeros(n_goals), np.zeros(n_goals), message="bench")


def variant_node_class(name: str):
    """The node class of variant ``name`` (see VARIANTS): IKControllerNode, or a subclass whose ~/solve_ik server
    (``solve_ik_server_class``, ``solve_path_server_class``) is a SolveIKServer subclass that replaces one part of
    the service (the answer: ``handle_request``; the solve: ``solve``), or none at all."""
    if name not in VARIANTS:
        raise SystemExit(f"unknown variant {name!r}: expected one of {sorted(VARIANTS)}")
    from roboplan_ik_interfaces.srv import SolveIK
    from roboplan_ik_ros.node.ik_controller import IKControllerNode
    from roboplan_ik_ros.node.solve_ik_service import SolveIKServer

    class RejectingServer(SolveIKServer):
        def handle_request(self, request, response):
            self.count_call()
            response.error_code, response.message = SolveIK.Response.NOT_READY, "bench: rejected"
            return response

    class ParsingServer(SolveIKServer):
        def handle_request(self, request, response):
            self.count_call()
            self.parse(request)
            response.error_code, response.message = SolveIK.Response.NOT_READY, "bench: parsed"
            return response

    class SeedServer(SolveIKServer):
        def solve(self, goals, q_seed, options, inline=None):
            return _variant_result(q_seed, len(goals))

    class NoServer:
        calls = failures = fallback_solves = 0
        worker = None

        def __init__(self, *a, **kw) -> None:
            pass

        def destroy(self) -> None:
            pass

        stop_worker = destroy

    class NoPathServer:  # ~/solve_path lends ~/solve_ik's state: off with it
        calls = 0
        busy = False

        def __init__(self, *a, **kw) -> None:
            pass

        def destroy(self, *a) -> None:
            pass

    servers = {"reject": (RejectingServer, IKControllerNode.solve_path_server_class),
               "parse": (ParsingServer, IKControllerNode.solve_path_server_class),
               "nopipe": (SeedServer, IKControllerNode.solve_path_server_class),
               "external": (NoServer, NoPathServer)}
    if name not in servers:  # the node as shipped ("nosolve" replaces the worker process's solver instead)
        return IKControllerNode

    class VariantNode(IKControllerNode):
        solve_ik_server_class, solve_path_server_class = servers[name]

    return VariantNode


def run_child_server(config: str) -> None:
    """Variant "external": /ik_controller/solve_ik served by this process (SimpleIK in its thread)."""
    import rclpy
    import yaml as _yaml

    from roboplan_ik_interfaces.srv import SolveIK
    from roboplan_ik_ros.core.config import load_config
    from roboplan_ik_ros.core.model.scene import Scene
    from roboplan_ik_ros.core.simple_ik import FrameGoal, SimpleIK
    from roboplan_ik_ros.node.spin import make_executor, spin_until_shutdown
    from roboplan_ik_ros.sim.mock_robot import load_robot
    from roboplan_ik_ros.node.message_conversions import se3_from_pose

    urdf, srdf, pkgs, _ = load_robot("panda")
    scene = Scene(urdf, srdf, pkgs)
    solver = SimpleIK(scene, load_config(_yaml.safe_load(Path(config).read_text())).simple_ik)
    q_seed = scene.named_configuration("default", scene.neutral())

    def on_request(request, response):
        goals = [FrameGoal(g.tip_frame, se3_from_pose(g.pose.pose)) for g in request.goals]
        result = solver.solve(goals, q_seed)
        response.success = bool(result.success)
        response.error_code = SolveIK.Response.SUCCESS if result.success else SolveIK.Response.NO_SOLUTION
        response.solution.position = result.q.tolist()
        return response

    rclpy.init()
    node = rclpy.create_node("bench_external_solve_ik")
    node.create_service(SolveIK, "/ik_controller/solve_ik", on_request)
    executor = make_executor()
    executor.add_node(node)
    spin_until_shutdown(executor)
    node.destroy_node()
    rclpy.try_shutdown()


def _patch_worker_solver() -> None:
    """In the IK worker process of variant "nosolve": SimpleIK.solve answers the seed at once."""
    from roboplan_ik_ros.core import simple_ik

    simple_ik.SimpleIK.solve = lambda self, goals, q_seed, options=None: _variant_result(q_seed, len(goals))


# ------------------------------------------------------------------------- child: the node
def run_child(config: str, stats_out: str, capacity: int, spawned_at: float) -> None:
    """The node process: spins the node; the bench process configures and activates it over the
    lifecycle services, as a lifecycle manager does (see ``manage_startup``)."""
    t_main = time.time()
    tracing = start_tracemalloc_from_env()
    import rclpy
    from rclpy.parameter import Parameter

    from roboplan_ik_ros.node.spin import make_executor, spin_until_shutdown

    t_imported = time.time()
    node_class = variant_node_class(os.environ.get(VARIANT_ENV, "full"))
    rclpy.init()
    node = node_class(parameter_overrides=[Parameter("config_file", value=config)])
    t_created = time.time()
    ticks = TickRecorder(capacity)  # every tick of the run (the node's own statistics keep the last 4096)
    node.tick_observer = ticks
    executor = make_executor()
    executor.add_node(node)
    startup = {"interpreter_s": t_main - spawned_at, "imports_s": t_imported - t_main,
               "create_s": t_created - t_imported}
    try:
        spin_until_shutdown(executor)
    except KeyboardInterrupt:  # the bench's SIGINT, raised here after rclpy's handler shut the context down
        pass
    # no tick recorded while the statistics are collected: the node's own end of process (as ik_controller.main),
    # a controlled stop if still active (the context is gone: nothing is sent); an inactive node's ticks are unseen
    node.stop_for_exit("the benchmark ended")
    tracemalloc_result = tracemalloc_report(tracing)
    times = node.configure_times  # configure's work and its time getting /robot_description(_semantic)
    if times is not None:
        startup.update(descriptions_s=times.descriptions_s, configure_start=times.started,
                       configure_s=times.duration_s)
    else:
        startup.update(descriptions_s=0.0)
    loop = node.loop
    service = node.solve_ik_server
    Path(stats_out).write_text(json.dumps({
        **ticks.as_json(),
        "counts": ({**vars(loop.counts), "guard_cuts": loop.guard_cuts, "joint_states_rejected": loop.joint_states_rejected}
                   if loop is not None else {}),
        "service": ({"calls": service.calls, "failures": service.failures,
                     "fallback_solves": getattr(service, "fallback_solves", 0),
                     "worker": getattr(service, "worker", None) is not None} if service is not None else {}),
        "startup": startup,
        "tracemalloc": tracemalloc_result,
    }))
    node.destroy_node()
    executor.shutdown()
    rclpy.try_shutdown()


# ------------------------------------------------------------------------- child: the mock robot
def timed_mock_class():
    """MockRobot that also records when it publishes /joint_states (in joint_states trigger mode a
    late robot makes a late tick: this tells the two apart) and when each latency sample was taken."""
    from roboplan_ik_ros.sim.mock_robot import MockRobot

    class TimedMock(MockRobot):
        def __init__(self, *a, capacity: int, **kw):
            self.js_times = np.zeros(capacity)
            self.n_js = 0
            super().__init__(*a, **kw)
            self.lat_times = np.zeros(len(self.latencies))  # when each latency sample was taken

        def _drive_step(self) -> None:
            super()._drive_step()
            if self.n_js < len(self.js_times) and self._last_js_time > -np.inf:
                self.js_times[self.n_js] = self._last_js_time
                self.n_js += 1

        def _received(self, values, names=None):
            n = self.n_latencies
            out = super()._received(values, names)
            if self.n_latencies > n:
                self.lat_times[n] = time.perf_counter()
            return out

    return TimedMock


def run_child_mock(rate: float, out: str, capacity: int, robot: str = "panda") -> None:
    """The mock robot (the Panda; Baxter for config x) in its own process (as a robot driver is): the
    benchmark's own Python (goal stream, service client) does not delay its /joint_states. Writes its
    timings to ``out`` (npz)."""
    import rclpy
    from rclpy.parameter import Parameter

    from roboplan_ik_ros.node.spin import make_executor, spin_until_shutdown

    rclpy.init()
    priority = int(os.environ.get(MOCK_PRIORITY_ENV, "0"))
    mock = timed_mock_class()("mock_robot", capacity=capacity, parameter_overrides=[
        Parameter("rate_hz", value=rate), Parameter("robot", value=robot), Parameter("rt_priority", value=priority)])
    if priority > 0:  # this (main) thread runs the executor: the command callbacks (as mock_robot.main)
        from roboplan_ik_ros.node.loop_thread import set_fifo_priority

        why_not = set_fifo_priority(priority)
        if why_not:
            print(f"mock robot: SCHED_FIFO {priority} refused: {why_not}", flush=True)
    executor = make_executor()
    executor.add_node(mock)
    spin_until_shutdown(executor)
    n = mock.n_latencies
    with open(out, "wb") as f:
        np.savez(f, latencies=mock.latencies[:n], lat_times=mock.lat_times[:n], js_times=mock.js_times[:mock.n_js],
                 commands=mock.commands)
    mock.destroy_node()
    executor.shutdown()
    rclpy.try_shutdown()


def run_child_mock_arms(rate: float, out: str, capacity: int, n_arms: int) -> None:
    """``--arms N``: the N-arm mock (sim/mock_arms.py: the Panda in /arm1 ... /armN, one process, one executor, one
    drive thread), each arm timed as :func:`run_child_mock`'s. Writes every arm's timings to ``out`` (npz, keys
    suffixed ``_1`` ... ``_N``)."""
    from functools import partial

    import rclpy
    from rclpy.parameter import Parameter

    from roboplan_ik_ros.node.spin import make_executor, spin_until_shutdown
    from roboplan_ik_ros.sim.mock_arms import MockArms, arm_namespaces

    rclpy.init()
    priority = int(os.environ.get(MOCK_PRIORITY_ENV, "0"))
    arms = MockArms(arm_namespaces(n_arms), make_arm=partial(timed_mock_class(), capacity=capacity),
                    parameter_overrides=[Parameter("rate_hz", value=rate), Parameter("robot", value="panda"),
                                         Parameter("rt_priority", value=priority)])
    if priority > 0:  # this (main) thread runs the executor: every arm's command callbacks (as mock_arms.spin_arms)
        from roboplan_ik_ros.node.loop_thread import set_fifo_priority

        why_not = set_fifo_priority(priority)
        if why_not:
            print(f"mock arms: SCHED_FIFO {priority} refused: {why_not}", flush=True)
    executor = make_executor()
    for arm in arms.arms:
        executor.add_node(arm)
    arms.start()
    spin_until_shutdown(executor)
    arrays = {}
    for k, mock in enumerate(arms.arms, start=1):
        n = mock.n_latencies
        arrays.update({f"latencies_{k}": mock.latencies[:n], f"lat_times_{k}": mock.lat_times[:n],
                       f"js_times_{k}": mock.js_times[:mock.n_js], f"commands_{k}": mock.commands})
    with open(out, "wb") as f:
        np.savez(f, **arrays)
    arms.destroy()
    executor.shutdown()
    rclpy.try_shutdown()
