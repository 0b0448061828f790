"""``ik_controller``: the OInK control loop and the SimpleIK service as a ROS 2 lifecycle node.

Lifecycle:
    (created)   listen to the latched /robot_description(_semantic), keeping the newest (descriptions.py).
    configure   URDF/SRDF (parameter, else the newest received, else wait for the latched topics),
                YAML config, scene, control loop,
                SimpleIK, publishers, subscriptions, ``~/solve_ik``, ``~/solve_path``, runtime parameters.
    activate    seed from a fresh /joint_states; every target at the current pose; the robot holds
                still until a goal arrives; start the loop.
    deactivate  stop the loop, brake to rest within the acceleration/jerk bounds (commands at the
                control period, bounded time), publish one hold command.
    SIGINT/SIGTERM  the same controlled stop while the node is active, then exit.
    cleanup     release everything (back to unconfigured); shutdown likewise.

What a tick does, and every safety rule, is :class:`~roboplan_ik_ros.core.control.control_loop.ControlLoop`
(ROS-free; the hold commands sent besides its steps while the joint states are stale:
:class:`~roboplan_ik_ros.core.control.stale_hold.StaleHold`); this node decodes messages into it and publishes
what it returns. The loop runs in
its own thread, on a timer (``trigger: timer``) or woken by the /joint_states callback (``trigger: joint_states``);
goals and parameters run in the executor's thread, status, markers and diagnostics in a thread of their own
(``report_thread.py``), ``~/solve_ik`` in another (see ``solve_ik_service.py``), ``~/solve_path`` in another
(``solve_path_service.py``). One lock
serializes every access to the loop. This file wires the node (lifecycle, configure, inputs); its parts are
its base classes: the ticks :class:`~.control_ticks.ControlTicks`, the runtime parameter sets
:class:`~.parameter_handling.ParameterHandling`, status, markers and diagnostics :class:`~.node_reports.NodeReports`,
the URDF/SRDF configure takes :class:`~.configure_inputs.ConfigureInputs` (with the config file's default and
:class:`~.configure_inputs.ConfigureError`), the ``autostart`` parameter :class:`~.autostart.Autostart`, the
threads' scheduling outcomes :class:`~.thread_scheduling.ThreadScheduling`, and what follows a change of the
scene's obstacles or perceived cloud :class:`~.scene_updates.SceneUpdates`.
"""

from __future__ import annotations

import threading
import time
import traceback
from pathlib import Path

import numpy as np
import rclpy
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.executors import ExternalShutdownException
from rclpy.lifecycle import LifecycleState, TransitionCallbackReturn
from rclpy.qos import qos_profile_sensor_data
from rclpy.wait_for_message import wait_for_message
from sensor_msgs.msg import JointState, PointCloud2
from visualization_msgs.msg import MarkerArray

from roboplan_ik_interfaces.msg import ControllerStatus

from ..core.config import IKConfig, load_config
from ..core.control.control_loop import STALE, ControlLoop
from ..core.control.follower_kinds import POSE
from ..core.control.stale_hold import StaleHold
from ..core.model.scene_config import scene_from_config
from ..core.errors import InvalidInputError
from ..core.simple_ik.worker import WorkerSpec, start_forkserver
from ..core.simple_ik.objective_config import check_objective_frames
from ..core.simple_ik.solver import SimpleIK
from .descriptions import LATCHED, LatchedDescriptions
from .diagnostics import DiagnosticsReporter, TickStats
from .goal_frames import HAVE_TF2, FrameResolver, tf2_ros
from .goal_inputs import GoalInputs
from .log_throttle import LogThrottle
from .collision_objects import CollisionObjectReader, CollisionObjectsEndpoint
from .loop_thread import (BorrowedThreadPriority, LoopThread, SharedThreadPriority, TickGap, WokenLoopThread,
                          shorten_gil_switch_interval)
from .report_thread import ReportThread
from .guarded_node import GuardedLifecycleNode
from .session import Session
from .spin import make_executor, spin_until_shutdown, stop_on_signals
from .markers import HAVE_INTERACTIVE_MARKERS, InteractiveTargets, MarkerCache
from .node_config import NodeConfig, load_node_config, other_threads_priority, watchdog_period
from .node_reports import NodeReports
from .parameter_handling import ParameterHandling
from .configure_inputs import ConfigureError, ConfigureInputs, default_config_file, description_package_paths
from .configure_times import ConfigureTimes
from .autostart import Autostart
from .thread_scheduling import ThreadScheduling
from .scene_updates import SceneUpdates
from .control_ticks import ControlTicks
from .command_outputs import CommandOutputs
from .parameters import RuntimeParameters, barrier_specs, loop_specs, task_specs
from .message_conversions import JointStateDecoder, root_frame_name
from .solve_path_service import SolvePathServer
from .pointcloud_input import PointCloudInput
from .solve_ik_service import SolveIKServer


#: Parameters declared by the constructor (the launch file passes these).
CONSTRUCTOR_PARAMETERS = (
    "config_file", "robot_description", "robot_description_semantic", "description_timeout",
    "package_paths", "autostart",
)

DESCRIPTION_TOPICS = ("robot_description", "robot_description_semantic")
_SUCCESS, _FAILURE, _ERROR = (TransitionCallbackReturn.SUCCESS, TransitionCallbackReturn.FAILURE,
                               TransitionCallbackReturn.ERROR)
#: [s] how long retiring a session waits for its callbacks running in other threads (a tick: ms; a
#: ~/solve_ik or ~/solve_path request told to stop: the solver's current iteration)
_RETIRE_TIMEOUT = 10.0
_ACK_TIMEOUT = 1.0  # [s] a controlled stop waits this long for the subscribers to acknowledge its commands


class IKControllerNode(ParameterHandling, NodeReports, ConfigureInputs, Autostart, ThreadScheduling, SceneUpdates,
                      ControlTicks, GuardedLifecycleNode):
    """See the module docstring. ``last_error`` holds the reason of the last failed transition. For observers
    (benchmarks, profilers): ``tick_observer`` (:mod:`.tick_observer`), ``configure_times``
    (:mod:`.configure_times`), :attr:`solve_ik_server`."""

    #: the classes serving ~/solve_ik and ~/solve_path, built by each configure: a subclass of the node may name
    #: others (the benchmarks' variants measure the service's parts with SolveIKServer subclasses,
    #: bench/node_bench/children.py)
    solve_ik_server_class: type[SolveIKServer] = SolveIKServer
    solve_path_server_class: type[SolvePathServer] = SolvePathServer

    def __init__(self, node_name: str = "ik_controller", **kwargs) -> None:
        super().__init__(node_name, **kwargs)
        d = ParameterDescriptor
        self.declare_parameter("config_file", "", d(
            description="YAML config file (robot, solver, tasks, limits, barriers, simple_ik, node); "
                        "'' = the packaged panda.yaml"))
        self.declare_parameter("robot_description", "", d(
            description="URDF text; '' = wait for the /robot_description topic (transient local)"))
        self.declare_parameter("robot_description_semantic", "", d(
            description="SRDF text; '' = wait for /robot_description_semantic"))
        self.declare_parameter("description_timeout", 10.0, d(
            description="seconds configure waits for /robot_description [s]", dynamic_typing=True))
        self.declare_parameter("package_paths", [""], d(
            description="extra folders against which package:// mesh URIs resolve"))
        self.declare_parameter("autostart", False, d(
            description="configure and activate at start (no lifecycle manager needed)", read_only=True))
        self._params: RuntimeParameters | None = None  # the runtime parameters of the current configure
        self.add_on_set_parameters_callback(self._validate_parameters)
        self.add_post_set_parameters_callback(self._apply_parameters)
        self.last_error = ""
        self._lock = threading.Lock()  # every access to the control loop
        self._throttle = LogThrottle()
        with self.building(self.node_session):
            # listens while unconfigured, so configure need not wait for DDS discovery (descriptions.py)
            self._descriptions = LatchedDescriptions(self, DESCRIPTION_TOPICS)
        self._configured: Session | None = None  # what configure made (retired by cleanup, shutdown, error)
        self.configure_times: ConfigureTimes | None = None  # the last configure's (kept after a failed one)
        self._activation: Session | None = None  # what activate made (retired by deactivate)
        self._clear()

    @property
    def solve_ik_server(self) -> SolveIKServer | None:
        """The ``~/solve_ik`` server of the current configure (None unconfigured): its request counters."""
        return self._service

    # ================================================================== lifecycle
    def _clear(self) -> None:
        """Forget every configured resource (does not destroy them: see :meth:`_release`)."""
        self.config: IKConfig | None = None
        self.node_cfg: NodeConfig | None = None
        self.scene = None
        self.group = None
        self.loop: ControlLoop | None = None
        self.simple_ik: SimpleIK | None = None
        self._ik_worker_spec: WorkerSpec | None = None
        self._service: SolveIKServer | None = None
        self._paths: SolvePathServer | None = None
        self._collision_objects: CollisionObjectsEndpoint | None = None
        self._perception: PointCloudInput | None = None
        self._decoder: JointStateDecoder | None = None
        self._outputs: CommandOutputs | None = None
        self._loop_thread: LoopThread | WokenLoopThread | None = None
        self._diag: DiagnosticsReporter | None = None
        self._status_pub = None
        self._marker_pub = None
        self._markers: MarkerCache | None = None  # ~/markers' content, rebuilt by the part that changed
        self._perceived_pub = None  # ~/perceived_cloud (sensor_msgs/PointCloud2), with the markers
        self._perceived_dirty = False
        self._interactive: InteractiveTargets | None = None
        self._resolver: FrameResolver | None = None
        self._tf_listener = None
        self._frame_tasks: list[str] = []
        self._active = False
        self._stale_hold: StaleHold | None = None  # the holds sent besides the loop's steps while stale
        self._last_solve_us = 0.0
        self._last_tick_us = 0.0
        self._last_tick_start = -np.inf
        self._stats = TickStats()
        self._tick_gap = TickGap()  # the end of each tick (see _wait_for_tick_gap)
        self._last_rejection = ""
        self._markers_dirty = False
        self._q_snapshot: np.ndarray | None = None
        self.loop_scheduling = "not running"  # how the ticks are scheduled (diagnostics), set on activate
        # node.other_threads_priority: each of the node's other threads takes it as it starts; the executor's
        # thread while active
        self._other_threads = SharedThreadPriority(0)
        self._executor_priority: BorrowedThreadPriority | None = None

    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._configured = Session("configured", self.on_fault)
        self.configure_times = ConfigureTimes()
        try:
            with self.building(self._configured), self.configure_times.configuring():
                self._configure()
        except (ConfigureError, InvalidInputError) as exc:
            return self._transition_failed("configure", str(exc))
        except Exception as exc:  # a bug: still fail cleanly and say where
            self.get_logger().error(f"configure: unexpected {type(exc).__name__}:\n{traceback.format_exc()}")
            return self._transition_failed("configure", f"unexpected error: {exc!r}")
        self.last_error = ""
        cfg = self.node_cfg
        self.get_logger().info(
            f"configured: group {self.group.name or '(all joints)'} {list(self.group.joint_names)}, "
            f"tasks {list(self.loop.tasks)}, {len(self.config.limits)} limits, barriers "
            f"{[b.name for b in self.loop.barriers]}, {cfg.control_rate_hz:g} Hz ({cfg.trigger}), "
            f"state feedback {cfg.state_feedback}, stale joint states: {cfg.stale_behavior}, outputs "
            f"{[(o.type, o.interface, o.topic) for o in cfg.outputs]}"
        )
        return _SUCCESS

    def _transition_failed(self, what: str, reason: str) -> TransitionCallbackReturn:
        self.last_error = f"{what} failed: {reason}"
        self.get_logger().error(self.last_error)
        self._release()
        return _FAILURE

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        try:
            return self._activate(state)
        except Exception:  # noqa: BLE001 - on_error stops what started and releases
            return self.transition_error("activate")

    def _activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        cfg, loop = self.node_cfg, self.loop

        def fresh() -> bool:
            return loop.measurement_age(time.perf_counter()) <= cfg.state_timeout

        if not fresh():  # seed from a current measurement, not one from before a deactivate
            self.get_logger().info(
                f"activate: waiting up to {cfg.activation_timeout:g} s for {cfg.joint_states_topic}")
            deadline = time.monotonic() + cfg.activation_timeout
            while not fresh() and time.monotonic() < deadline:
                ok, msg = wait_for_message(JointState, self, cfg.joint_states_topic,
                                           time_to_wait=max(0.0, deadline - time.monotonic()))
                if ok:
                    self._on_joint_states(msg)
        with self._lock:
            reason = loop.activate(time.perf_counter())
            if not reason:
                self._snapshot(loop.last_command())
        if reason:
            reason = (f"no valid {cfg.joint_states_topic} within {cfg.activation_timeout:g} s "
                      f"(needs joints {list(self.group.joint_names)})")
            if self._last_rejection:
                reason += f"; last rejected message: {self._last_rejection}"
            self.last_error = f"activate failed: {reason}"
            self.get_logger().error(self.last_error)
            return _FAILURE
        self._stats.reset(1.0 / cfg.control_rate_hz)
        self._markers_dirty = True
        if self._interactive is not None:  # placed once; dragging them sends goals
            self._interactive.set_targets([(n, loop.tasks[n].target) for n in self._frame_tasks])
        ret = super().on_activate(state)  # enables the lifecycle (command) publishers
        self._active = True
        self._stale_hold.restart()
        activation = self._activation = Session("active", self.on_fault)
        if self._other_threads.priority > 0:  # the executor's thread (this one) holds the GIL too
            self._executor_priority = BorrowedThreadPriority(self._other_threads.priority)
            why_not = self._executor_priority.apply_here()
            self._on_other_threads_priority(
                not why_not, f"executor: {why_not or f'SCHED_FIFO priority {self._other_threads.priority}'}")
        self.loop_scheduling = "normal" if cfg.loop_priority == 0 else f"SCHED_FIFO {cfg.loop_priority} requested"
        tick = activation.guard(self._tick, "control tick")
        if cfg.trigger == "timer":
            self._loop_thread = LoopThread(1.0 / cfg.control_rate_hz, tick, priority=cfg.loop_priority,
                                           on_priority=self._on_loop_priority)
        else:  # woken by /joint_states (_on_joint_states); without them it ticks the staleness watchdog
            self._loop_thread = WokenLoopThread(
                tick, activation.guard(self._on_watchdog, "staleness watchdog"),
                watchdog_period(1.0 / cfg.control_rate_hz, cfg.state_timeout), priority=cfg.loop_priority,
                on_priority=self._on_loop_priority)
        self._loop_thread.start()
        self.last_error = ""
        self.get_logger().info("active: holding the current pose until a goal arrives")
        return ret

    def _stop_loop(self) -> None:
        """Retire the activation (no tick starts, the one running ends), then stop its thread."""
        self._active = False
        activation, self._activation = self._activation, None
        if activation is not None:
            running = activation.retire(_RETIRE_TIMEOUT)
            if running:
                self.get_logger().error(f"the control loop did not stop within {_RETIRE_TIMEOUT:g} s: {running}")
        if self._executor_priority is not None:  # the executor's thread back at its own priority
            self._executor_priority.restore()
            self._executor_priority = None
        if self._loop_thread is not None:
            self._loop_thread.stop()
            self._loop_thread = None

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        cause = self.error_cause
        try:
            self._controlled_stop("deactivate" if not cause else f"error ({cause})")
            with self._lock:
                self.loop.deactivate()
            ret = super().on_deactivate(state)
        except Exception:  # noqa: BLE001 - on_error releases what is left
            return self.transition_error("deactivate")
        if cause:
            self.last_error = f"stopped after an error: {cause}"
            self.get_logger().error(f"{self.last_error}; braked to rest; error transition (on_error: release, "
                                    "back to unconfigured)")
            return _ERROR
        self.get_logger().info("inactive: control loop stopped, braked to rest, hold command sent")
        return ret

    def _controlled_stop(self, why: str) -> None:
        """Stop the loop and brake the command stream to rest within the acceleration/jerk bounds
        (:meth:`CommandOutputs.brake_to_rest`), then publish one hold command (zero velocity on velocity
        outputs; while stale only that: the robot is lost, and with ``stale_behavior: stop`` nothing else
        is sent) and wait for the subscribers to acknowledge."""
        self._stop_loop()
        loop, outputs = self.loop, self._outputs
        if loop is None or outputs is None:
            return
        outputs.brake_to_rest(loop, self._lock, self._last_tick_start + loop.dt, why, self._published)
        stale = loop.mode == STALE
        if self._stale_hold.hold_at_stop(stale) and self.context.ok():
            try:
                with self._lock:
                    outputs.publish_hold(loop, velocity_only=stale)
            except Exception as exc:  # noqa: BLE001 - e.g. the context shut down meanwhile
                self.get_logger().error(f"{why}: the hold command failed: {type(exc).__name__}: {exc}")
        outputs.wait_acked(_ACK_TIMEOUT)

    def stop_for_exit(self, why: str) -> None:
        """The process is ending (SIGINT/SIGTERM): a controlled stop if active."""
        if self._active:
            self.get_logger().info(f"{why}: stopping the robot before exiting")
            self._controlled_stop(why)

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        cause = self.error_cause
        try:
            self._release()
        except Exception:  # noqa: BLE001
            return self.transition_error("cleanup")
        if cause:
            self.last_error = f"released after an error: {cause}"
            self.get_logger().error(f"{self.last_error}; error transition (back to unconfigured)")
            return _ERROR
        self.get_logger().info("cleaned up")
        return _SUCCESS

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        try:
            if self._active:
                self._controlled_stop("shutdown")
            self._release()
        except Exception:  # noqa: BLE001
            return self.transition_error("shutdown")
        return _SUCCESS

    def on_error(self, state: LifecycleState) -> TransitionCallbackReturn:
        """After a transition returned ERROR (or raised): stop if still moving, release everything, back
        to unconfigured. Never raises (rclpy would leave the node in ErrorProcessing for good)."""
        try:
            if self._active:
                self._controlled_stop("error")
        except Exception:  # noqa: BLE001
            self.get_logger().error(f"error: the controlled stop failed:\n{traceback.format_exc()}")
        try:
            self._release()
        except Exception:  # noqa: BLE001
            self.get_logger().error(f"error: releasing failed:\n{traceback.format_exc()}")
            self._clear()
        self.get_logger().error(f"error processing done: unconfigured ({self.last_error or 'see above'}); "
                                "configure again to resume")
        return _SUCCESS

    def destroy_node(self) -> None:
        try:
            if self._active:  # e.g. rclpy shut down under an active node: brake while the context allows
                self._controlled_stop("destroy")
            self._release()  # no loop thread, worker process, service thread or helper node outlives the node
            self.node_session.retire(_RETIRE_TIMEOUT)
        except Exception:  # noqa: BLE001 - destroying must end
            self.get_logger().error(f"destroy_node: releasing failed:\n{traceback.format_exc()}")
        super().destroy_node()

    # ================================================================== configure
    def _param(self, name: str):
        return self.get_parameter(name).value

    def _configure(self) -> None:
        path = self._param("config_file") or default_config_file()
        try:
            config = load_config(Path(path))  # a file, whatever its suffix
            node_cfg = load_node_config(config.node)
        except InvalidInputError as exc:
            raise ConfigureError(f"config_file {path!r}: {exc}") from exc
        with self.configure_times.getting_descriptions():
            urdf = self._description("robot_description", self._param("description_timeout"))
            needs_srdf = config.needs_srdf()
            srdf = self._description("robot_description_semantic",
                                     self._param("description_timeout") if needs_srdf else 1.0, required=needs_srdf)
        package_paths = [*(p for p in self._param("package_paths") if p), *description_package_paths()]
        try:
            scene = scene_from_config(urdf, srdf, config.robot, package_paths, config.obstacles)
        except InvalidInputError as exc:
            raise ConfigureError(f"config_file {path!r}: {exc}") from exc
        loop = ControlLoop(scene, config, node_cfg, self._log_loop_event)
        for note in [*getattr(scene, "notes", []), *loop.notes]:
            self.get_logger().info(note)
        group = loop.group
        try:  # every simple_ik key, group defaulting to robot.group; the standing objectives' frames named by key
            check_objective_frames(config.simple_ik.objectives, scene.frame_id, "simple_ik.objectives")
            self.simple_ik = SimpleIK(scene, config.simple_ik)
        except InvalidInputError as exc:
            text = str(exc)
            raise ConfigureError(f"config_file {path!r}: {'' if text.startswith('simple_ik.') else 'simple_ik.'}"
                                 f"{text}") from exc
        self.get_logger().info(f"SimpleIK: {self.simple_ik.step} step"
                               + (f" ({self.simple_ik.step_note})" if self.simple_ik.step_note else ""))
        # ~/solve_ik runs SimpleIK in a worker process with its own scene: off the loop's interpreter (GIL)
        self._ik_worker_spec = WorkerSpec.from_robot_config(urdf, srdf, config.robot, package_paths,
                                                            self.simple_ik.options)
        self.config, self.node_cfg, self.scene, self.group, self.loop = config, node_cfg, scene, group, loop
        self._decoder = JointStateDecoder(scene, group.joint_names)
        try:
            self._outputs = CommandOutputs(self, node_cfg, loop)
        except InvalidInputError as exc:
            raise ConfigureError(f"config_file {path!r}: {exc}") from exc
        self._stale_hold = StaleHold(self._outputs.velocity)
        self._root = root_frame_name(scene)
        self._frame_tasks = [n for n, inputs in loop.goal_inputs.items() if POSE in inputs]  # world pose goals
        self._setup_frames()
        self._setup_ros_entities()
        self._setup_parameters()
        shorten_gil_switch_interval()  # the ticks wait less for the GIL while SimpleIK runs in its worker thread

    def _setup_frames(self) -> None:
        tf_buffer = None
        if HAVE_TF2:
            tf_buffer = tf2_ros.Buffer()
            self._tf_listener = tf2_ros.TransformListener(tf_buffer, self)
        else:
            self.get_logger().info(
                f"tf2_ros is not installed: goals must be stamped in a frame of the robot model "
                f"(e.g. {self._root!r}); other frames are rejected")
        self._resolver = FrameResolver(self.scene, self._root, tf_buffer, self.node_cfg.tf_timeout)

    def _setup_ros_entities(self) -> None:
        """Publishers, subscriptions, services and timers (called inside the configured session: each
        belongs to it, see :meth:`GuardedLifecycleNode.building`)."""
        cfg, session = self.node_cfg, self._configured
        self._outputs.create_publishers()
        self._status_pub = self.create_publisher(ControllerStatus, "~/status", 10)
        self.create_subscription(JointState, cfg.joint_states_topic, self._on_joint_states, qos_profile_sensor_data)
        self._inputs = GoalInputs(self, self.loop, self._lock, self._resolver, cfg, lambda: self._active,
                                  self._log_loop_event, self._note_rejection, self._on_goal_set)
        self._inputs.create_endpoints()
        self._other_threads = SharedThreadPriority(other_threads_priority(cfg), self._on_other_threads_priority)
        # its own thread and helper node (and a worker process), guarded by the same session
        self._service = self.solve_ik_server_class(
            self, self.scene, self.simple_ik, self._resolver, cfg.quaternion_tolerance, self._current_q,
            worker_spec=self._ik_worker_spec, wait_for_gap=self._wait_for_tick_gap, guard=session.guard,
            next_tick_in=self._next_tick_in, on_thread_start=self._other_threads.apply_here)
        session.own("~/solve_ik", self._service.destroy)
        # its own thread and a private scene built from the worker's spec: a long path blocks nothing
        self._paths = self.solve_path_server_class(self._service, self._ik_worker_spec)
        # a path in flight ends within its max_time
        session.own("~/solve_path", lambda paths=self._paths: paths.destroy(5.0 if self.context.ok() else 0.5))
        reader = CollisionObjectReader(self._resolver, self.scene.link_names, self._root, cfg.quaternion_tolerance)
        self._collision_objects = CollisionObjectsEndpoint(
            self, self.loop, reader, self._lock, self._service.scene_lock, self._current_q,
            self._on_obstacles_changed, self._on_collision_object_refused)
        # ~/pointcloud: ingested in a thread of its own, swapped into the scene between two ticks
        tf_lookup = self._resolver.T_world_tf_frame if HAVE_TF2 else None
        self._perception = PointCloudInput(
            self, self.scene, self.config.perception, self._root, self._lock, self._service.scene_lock,
            self._current_q, tf_lookup, self._on_perceived_changed, self._on_pointcloud_refused, self._log_loop_event,
            self.loop.expect_collision_prepare, lambda what, exc, trace: self.on_fault("configured", what, exc, trace))
        # its thread stays at normal priority: the octree it builds holds the GIL whatever its priority, and a starved
        # thread drops stale clouds (newest wins) instead of taking a core
        session.own("~/pointcloud thread", self._perception.destroy)
        self._diag = DiagnosticsReporter(self, "control loop", self._diagnostics_report, 1.0 / cfg.diagnostics_rate_hz,
                                         own_timer=False)
        session.own("diagnostics", self._diag.destroy)
        if cfg.markers.enabled:
            self._marker_pub = self.create_publisher(MarkerArray, "~/markers", LATCHED)
            self._markers = MarkerCache(self._root, cfg.markers.scale)
            self._markers_dirty = True
            if self._perception is not None:
                self._perceived_pub = self.create_publisher(PointCloud2, "~/perceived_cloud", LATCHED)
                self._perceived_dirty = True
            if cfg.markers.interactive:
                if HAVE_INTERACTIVE_MARKERS:
                    self._interactive = InteractiveTargets(
                        self, f"{self.get_fully_qualified_name()}/targets", self._root, cfg.markers.scale,
                        self._inputs.on_pose_goal)
                    session.own("interactive markers", self._interactive.shutdown)
                else:
                    self.get_logger().info(
                        "interactive_markers is not installed: no 6-DOF RViz targets (goal and barrier "
                        "markers are on ~/markers; send goals on ~/<task>/target_pose)")
        # the reports in a thread of their own, not the executor's (which runs the ticks with trigger: joint_states);
        # owned last, so stopped first: before the publishers it uses are destroyed
        jobs = [(1.0 / cfg.status_rate_hz, session.guard(self._publish_status, "reporting thread (~/status)"))]
        if not self._diag.has_own_timer:
            jobs.append((1.0 / cfg.diagnostics_rate_hz,
                         session.guard(self._diag.publish, "reporting thread (/diagnostics)")))
        reports = ReportThread(jobs, running=self.context.ok,
                               on_start=lambda: self._other_threads.apply_here("reporting"))
        reports.start()
        session.own("status thread", reports.stop)

    def _setup_parameters(self) -> None:
        nv = self.group.nv
        specs = loop_specs(self.node_cfg, self._apply_rate, self._apply_feedback,
                           lambda v: self.loop.set_max_state_divergence(v))
        for tc in self.config.tasks:
            specs += task_specs(tc, lambda n: self.loop.tasks[n], nv)
        for bc in self.config.barriers:
            specs += barrier_specs(bc, lambda n: self.loop.barrier(n))
        self._params = RuntimeParameters(self, specs)
        try:
            self._params.declare()
        except Exception as exc:  # an override from the command line/launch that is refused
            raise ConfigureError(f"parameter override refused: {exc}") from exc

    def _release(self) -> None:
        """Destroy everything configure created (safe on a partial configure and when called twice):
        the activation first, then the configured session is retired (no callback of it starts; those
        running in other threads end, ~/solve_ik's and ~/solve_path's told to stop first) and destroyed."""
        self._stop_loop()
        configured, self._configured = self._configured, None
        if configured is not None:
            if self._service is not None:
                self._service.close()  # requests in flight answer NOT_READY now instead of finishing
            running = configured.retire(_RETIRE_TIMEOUT)
            if running:
                self.get_logger().error(f"release: still running after {_RETIRE_TIMEOUT:g} s: {running}; "
                                        "releasing anyway")
            configured.destroy(self.get_logger().error)
        if self._params is not None:
            self._params.undeclare()
            self._params = None
        self._tf_listener = None
        self._clear()

    # ================================================================== inputs
    def _log_loop_event(self, level: str, message: str) -> None:
        """Log ``message`` unless the same kind was logged recently (one call site per severity:
        rclpy refuses a severity change at one call site)."""
        if not self._throttle.should_log(message, time.monotonic()):
            return
        logger = self.get_logger()
        if level == "error":
            logger.error(message)
        elif level == "warning":
            logger.warning(message)
        else:
            logger.info(message)

    def _on_joint_states(self, msg: JointState) -> None:
        loop = self.loop
        if loop is None:
            return
        now = time.perf_counter()
        with self._lock:
            reason = self._decoder.decode(msg.name, msg.position, loop.measurement_buffer)
            if reason:
                loop.reject_measurement(reason)
            else:
                reason = loop.accept_measurement(now)
        if reason:
            self._last_rejection = f"{self.node_cfg.joint_states_topic}: {reason}"
            self._log_loop_event("warning", f"ignored a joint_states message: {reason}")
            return
        if self._active and self.node_cfg.trigger == "joint_states" and \
                now - self._last_tick_start > 0.5 / self.node_cfg.control_rate_hz:
            thread = self._loop_thread
            if thread is not None:
                thread.wake()  # the tick runs in the loop thread, the executor goes on

    def _note_rejection(self, text: str) -> None:
        self._last_rejection = text

    def _on_goal_set(self) -> None:
        self._markers_dirty = True


def main(args=None) -> None:
    from rclpy.signals import SignalHandlerOptions

    start_forkserver()  # the ~/solve_ik workers' and the cloud ingest's parent, before any thread (see its docstring)
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    stop = threading.Event()
    signals = stop_on_signals(stop)
    node = IKControllerNode()
    executor = make_executor()
    executor.add_node(node)
    try:
        if node.get_parameter("autostart").value:
            node.schedule_autostart()  # runs once the executor spins
        spin_until_shutdown(executor, stop, on_error=node.on_escaped_error)
        node.stop_for_exit(signals[0] if signals else "rclpy shut down")
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        executor.shutdown()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()
