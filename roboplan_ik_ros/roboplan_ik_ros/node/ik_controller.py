"""``ik_controller``: the OInK control loop and the SimpleIK service as a ROS 2 lifecycle node.

Lifecycle:
    configure   URDF/SRDF (parameter, else the latched topics), YAML config, scene, controller,
                SimpleIK, publishers, subscriptions, ``~/solve_ik``, runtime parameters.
    activate    seed from /joint_states, targets := current poses (hold still), start the loop.
    deactivate  stop the loop, publish one hold command.
    cleanup     release everything (back to unconfigured); shutdown likewise.

The loop is a timer callback (or, with ``trigger: joint_states``, the joint-state callback):
state -> goal smoothing -> ``OinkController.step`` (QP, limits, barriers, enforce_barriers,
integrate) -> limit guard -> one message per output. Bad input never moves the robot: the loop
holds (same position, zero velocity) and says why in ``~/status`` and ``/diagnostics``.

All callbacks except ``~/solve_ik`` share the node's default (mutually exclusive) callback group.
``~/solve_ik`` has its own group and runs SimpleIK in a worker thread, awaited by an async
callback, so the executor keeps ticking while a request is solved.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import traceback
from pathlib import Path

import numpy as np
import rclpy
from geometry_msgs.msg import PoseStamped
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.executors import ExternalShutdownException
from rclpy.lifecycle import LifecycleNode, LifecycleState, TransitionCallbackReturn
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from rclpy.wait_for_message import wait_for_message
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from visualization_msgs.msg import MarkerArray

from roboplan_ik_interfaces.msg import BarrierStatus, ControllerStatus, TaskStatus

from ..core.config import IKConfig, load_config
from ..core.controller import OinkController, scene_from_config
from ..core.errors import InvalidInputError
from ..core.oink import FrameTask
from ..core.simple_ik import SimpleIK, SimpleIKOptions
from . import diagnostics as diag
from .diagnostics import DiagnosticsReporter, TickStats
from .goals import HAVE_TF2, FrameResolver, GoalError, GoalSmoother, tf2_ros
from .markers import HAVE_INTERACTIVE_MARKERS, InteractiveTargets, box_marker, goal_markers
from .node_config import NodeConfig, load_node_config
from .outputs import CommandEncoder, output_joints
from .parameters import ParamSpec, barrier_specs, loop_specs, task_specs
from .rosbridge import JointStateDecoder, root_frame_name
from .service import SolveIKServer
from .state import StateTracker

#: Parameters declared by the constructor (the launch file passes these).
CONSTRUCTOR_PARAMETERS = (
    "config_file", "robot_description", "robot_description_semantic", "description_timeout",
    "package_paths", "autostart",
)

LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
GOAL_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE)
_SUCCESS, _FAILURE = TransitionCallbackReturn.SUCCESS, TransitionCallbackReturn.FAILURE
_SWITCH_INTERVAL = 0.0001  # [s] GIL hand-over while SimpleIK runs in its worker thread


def default_config_file(robot: str = "panda") -> str:
    """The packaged ``config/<robot>.yaml`` (ament share directory, else the source tree)."""
    try:
        from ament_index_python.packages import get_package_share_directory

        path = Path(get_package_share_directory("roboplan_ik_ros")) / "config" / f"{robot}.yaml"
        if path.is_file():
            return str(path)
    except Exception:  # not installed through ament: fall back to the source tree
        pass
    return str(Path(__file__).resolve().parents[2] / "config" / f"{robot}.yaml")


def description_package_paths() -> list[str]:
    """Folders where ``package://`` URIs may resolve: every ``<prefix>/share`` of AMENT_PREFIX_PATH
    and the example-robot-data share (the demo robots)."""
    paths = [str(Path(p) / "share") for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
    try:
        from ..core.robots import example_robot_data_share

        paths.append(str(example_robot_data_share()))
    except (ImportError, FileNotFoundError):
        pass
    return paths


class ConfigureError(Exception):
    """A configure step failed; the message is the reason shown to the user."""


class IKControllerNode(LifecycleNode):
    """See the module docstring. ``last_error`` holds the reason of the last failed transition."""

    def __init__(self, node_name: str = "ik_controller", **kwargs) -> None:
        super().__init__(node_name, **kwargs)
        d = ParameterDescriptor
        self.declare_parameter("config_file", "", d(
            description="YAML config (robot, solver, tasks, limits, barriers, simple_ik, node); "
                        "'' = the packaged panda.yaml"))
        self.declare_parameter("robot_description", "", d(
            description="URDF text; '' = wait for the /robot_description topic (transient local)"))
        self.declare_parameter("robot_description_semantic", "", d(
            description="SRDF text; '' = wait for /robot_description_semantic"))
        self.declare_parameter("description_timeout", 10.0, d(
            description="seconds configure waits for /robot_description [s]"))
        self.declare_parameter("package_paths", [""], d(
            description="extra folders against which package:// mesh URIs resolve"))
        self.declare_parameter("autostart", False, d(
            description="configure and activate at start (no lifecycle manager needed)", read_only=True))
        self._specs: dict[str, ParamSpec] = {}
        self.add_on_set_parameters_callback(self._validate_parameters)
        self.add_post_set_parameters_callback(self._apply_parameters)
        self.last_error = ""
        self._state_lock = threading.Lock()
        self._clear()

    # ================================================================== lifecycle
    def _clear(self) -> None:
        """Forget every configured resource (does not destroy them: see :meth:`_release`)."""
        self.config: IKConfig | None = None
        self.node_cfg: NodeConfig | None = None
        self.scene = None
        self.group = None
        self.ctrl: OinkController | None = None
        self.simple_ik: SimpleIK | None = None
        self._service: SolveIKServer | None = None
        self._state: StateTracker | None = None
        self._decoder: JointStateDecoder | None = None
        self._encoders: list[CommandEncoder] = []
        self._cmd_pubs = []
        self._entities = []  # (kind, handle) destroyed on release
        self._timer = None
        self._status_timer = None
        self._diag: DiagnosticsReporter | None = None
        self._status_pub = None
        self._marker_pub = None
        self._interactive: InteractiveTargets | None = None
        self._resolver: FrameResolver | None = None
        self._tf_listener = None
        self._smoothers: list[tuple[FrameTask, GoalSmoother, str]] = []
        self._active = False
        self._holding, self._hold_reason = True, "unconfigured"
        self._last_outcome = None
        self._last_solve_us = 0.0
        self._last_tick_us = 0.0
        self._last_tick_start = -np.inf
        self._stats = TickStats()
        self._counts = dict.fromkeys(("joint_states_rejected", "goals_rejected", "qp_failures", "barrier_refusals",
                                      "holds"), 0)
        self._last_rejection = ""
        self._markers_dirty = False
        self._q_snapshot: np.ndarray | None = None
        self._stamp_needed = False

    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        try:
            self._configure()
        except (ConfigureError, InvalidInputError) as exc:
            return self._transition_failed("configure", str(exc))
        except Exception as exc:  # a bug: still fail cleanly and say where
            self.get_logger().error(f"configure: unexpected {type(exc).__name__}:\n{traceback.format_exc()}")
            return self._transition_failed("configure", f"unexpected error: {exc!r}")
        self.last_error = ""
        self.get_logger().info(
            f"configured: group {self.group.name or '(all joints)'} {list(self.group.joint_names)}, "
            f"tasks {list(self.ctrl.tasks)}, {len(self.ctrl.limits)} limits, barriers "
            f"{[b.name for b in self.ctrl.barriers]}, {self.node_cfg.control_rate_hz:g} Hz, "
            f"state feedback {self.node_cfg.state_feedback}, outputs "
            f"{[(o.type, o.interface, o.topic) for o in self.node_cfg.outputs]}"
        )
        return _SUCCESS

    def _transition_failed(self, what: str, reason: str) -> TransitionCallbackReturn:
        self.last_error = f"{what} failed: {reason}"
        self.get_logger().error(self.last_error)
        self._release()
        return _FAILURE

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        cfg = self.node_cfg

        def fresh() -> bool:
            return self._state.age(time.perf_counter()) <= cfg.state_timeout

        if not fresh():  # seed from a current measurement, not one from before a deactivate
            self.get_logger().info(
                f"activate: waiting up to {cfg.activation_timeout:g} s for {cfg.joint_states_topic}")
            deadline = time.monotonic() + cfg.activation_timeout
            while not fresh() and time.monotonic() < deadline:
                ok, msg = wait_for_message(JointState, self, cfg.joint_states_topic,
                                           time_to_wait=max(0.0, deadline - time.monotonic()))
                if ok:
                    self._on_joint_states(msg)
        if not fresh():
            reason = (f"no valid {cfg.joint_states_topic} within {cfg.activation_timeout:g} s "
                      f"(needs joints {list(self.group.joint_names)})")
            if self._last_rejection:
                reason += f"; last rejected message: {self._last_rejection}"
            self.last_error = f"activate failed: {reason}"
            self.get_logger().error(self.last_error)
            return _FAILURE
        self._state.reset()
        q = self._state.commanded
        self.ctrl.hold_at(q)
        for task, smoother, _ in self._smoothers:
            smoother.reset(task.target)
        self._snapshot(q)
        self._stats.reset(1.0 / cfg.control_rate_hz)
        self._holding, self._hold_reason = False, ""
        self._markers_dirty = True
        if self._interactive is not None:  # placed once; dragging them sends goals
            self._interactive.set_targets([(n, task.target) for task, _, n in self._smoothers])
        ret = super().on_activate(state)  # enables the lifecycle (command) publishers
        self._active = True
        self._timer.reset()
        self.last_error = ""
        self.get_logger().info("active: holding the current pose until a goal arrives")
        return ret

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._timer.cancel()
        self._active = False
        self._publish_hold("inactive")
        ret = super().on_deactivate(state)
        self.get_logger().info("inactive: control loop stopped, hold command sent")
        return ret

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._release()
        self.get_logger().info("cleaned up")
        return _SUCCESS

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        if self._active and self._timer is not None:
            self._timer.cancel()
            self._publish_hold("shutting down")
        self._release()
        return _SUCCESS

    def on_error(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._release()
        return _SUCCESS

    def autostart(self) -> bool:
        """configure -> activate (the ``autostart`` parameter); False if a transition failed."""
        if self.trigger_configure() != _SUCCESS:
            return False
        return self.trigger_activate() == _SUCCESS

    # ================================================================== configure
    def _param(self, name: str):
        return self.get_parameter(name).value

    def _configure(self) -> None:
        path = self._param("config_file") or default_config_file()
        try:
            config = load_config(path)
            node_cfg = load_node_config(config.node)
        except InvalidInputError as exc:
            raise ConfigureError(f"config_file {path!r}: {exc}") from exc
        urdf = self._description("robot_description", self._param("description_timeout"))
        needs_srdf = bool(config.robot.group) or any(
            t.type == "configuration" and isinstance(t.target, str) and t.target != "current" for t in config.tasks)
        srdf = self._description("robot_description_semantic",
                                 self._param("description_timeout") if needs_srdf else 1.0, required=needs_srdf)
        extra = [p for p in self._param("package_paths") if p]
        scene = scene_from_config(urdf, srdf, config.robot, [*extra, *description_package_paths()])
        group = scene.group(config.robot.group)
        dt = 1.0 / node_cfg.control_rate_hz
        ctrl = OinkController(scene, config, dt, scene.neutral())
        sik = config.simple_ik
        self.simple_ik = SimpleIK(scene, SimpleIKOptions(
            group_name=config.robot.group, max_iters=sik.max_iters, max_time=sik.max_time,
            max_restarts=sik.max_restarts, step_size=sik.step_size, damping=sik.damping,
            max_linear_error_norm=sik.max_linear_error_norm, max_angular_error_norm=sik.max_angular_error_norm,
            check_collisions=sik.check_collisions, fast_return=sik.fast_return, seed=sik.seed))
        self.config, self.node_cfg, self.scene, self.group, self.ctrl = config, node_cfg, scene, group, ctrl
        self._state = StateTracker(scene, group, node_cfg.state_feedback, node_cfg.max_state_divergence)
        self._decoder = JointStateDecoder(scene, group.joint_names)
        for k, out in enumerate(node_cfg.outputs):
            try:
                self._encoders.append(CommandEncoder(out, scene, output_joints(out, list(group.joint_names)), dt))
            except InvalidInputError as exc:
                raise ConfigureError(f"config_file {path!r}: node.outputs[{k}].joints: {exc}") from exc
        self._stamp_needed = any(o.type == "joint_state" for o in node_cfg.outputs)
        self._root = root_frame_name(scene)
        self._setup_frames()
        self._setup_ros_entities()
        self._setup_parameters()
        if sys.getswitchinterval() > _SWITCH_INTERVAL:
            sys.setswitchinterval(_SWITCH_INTERVAL)

    def _description(self, name: str, timeout: float, required: bool = True) -> str:
        """Parameter ``name`` if set, else the latched topic ``/name`` (waiting up to ``timeout``)."""
        text = self._param(name)
        if text:
            return text
        topic = f"/{name}"
        self.get_logger().info(f"waiting up to {timeout:g} s for {topic} (or set the {name!r} parameter)")
        ok, msg = wait_for_message(String, self, topic, qos_profile=LATCHED, time_to_wait=timeout)
        if ok and msg.data:
            return msg.data
        if required:
            raise ConfigureError(
                f"no {'URDF' if name == 'robot_description' else 'SRDF'}: nothing on {topic} within {timeout:g} s "
                f"and the {name!r} parameter is empty; start a robot_state_publisher (or the mock_robot) or "
                f"set the parameter")
        self.get_logger().info(f"no SRDF on {topic}: continuing without one (no joint groups or named states)")
        return ""

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
        self._smoothers = [
            (task, GoalSmoother(self.node_cfg.goal_smoothing), name)
            for name, task in self.ctrl.tasks.items() if isinstance(task, FrameTask)
        ]

    def _keep(self, kind: str, handle):
        self._entities.append((kind, handle))
        return handle

    def _setup_ros_entities(self) -> None:
        cfg = self.node_cfg
        for enc in self._encoders:
            self._cmd_pubs.append(self._keep("lifecycle_publisher",
                                             self.create_lifecycle_publisher(enc.msg_type, enc.cfg.topic, 10)))
        self._status_pub = self._keep("publisher", self.create_publisher(ControllerStatus, "~/status", 10))
        self._keep("subscription", self.create_subscription(
            JointState, cfg.joint_states_topic, self._on_joint_states, qos_profile_sensor_data))
        for name, task in self.ctrl.tasks.items():
            if isinstance(task, FrameTask):
                self._keep("subscription", self.create_subscription(
                    PoseStamped, f"~/{name}/target_pose", lambda m, n=name: self._on_pose_goal(n, m), GOAL_QOS))
            else:
                self._keep("subscription", self.create_subscription(
                    JointState, f"~/{name}/target_joints", lambda m, n=name: self._on_joint_goal(n, m), GOAL_QOS))
        self._service = SolveIKServer(self, self.scene, self.simple_ik, self._resolver, cfg.quaternion_tolerance,
                                      self._current_q)
        self._timer = self._keep("timer", self.create_timer(self._loop_period(), self._on_timer, autostart=False))
        self._status_timer = self._keep("timer", self.create_timer(1.0 / cfg.status_rate_hz, self._publish_status))
        self._diag = DiagnosticsReporter(self, "control loop", self._diagnostics_report, 1.0 / cfg.diagnostics_rate_hz)
        if cfg.markers.enabled:
            self._marker_pub = self._keep("publisher", self.create_publisher(MarkerArray, "~/markers", LATCHED))
            self._markers_dirty = True
            if cfg.markers.interactive:
                if HAVE_INTERACTIVE_MARKERS:
                    self._interactive = InteractiveTargets(
                        self, f"{self.get_fully_qualified_name()}/targets", self._root, cfg.markers.scale,
                        lambda name, ps: self._on_pose_goal(name, ps))
                else:
                    self.get_logger().info(
                        "interactive_markers is not installed: no 6-DOF RViz targets (goal and barrier "
                        "markers are on ~/markers; send goals on ~/<task>/target_pose)")

    def _loop_period(self) -> float:
        cfg = self.node_cfg
        if cfg.trigger == "joint_states":  # the timer only watches for stale joint states
            return max(1.0 / cfg.control_rate_hz, min(0.05, cfg.state_timeout / 4.0))
        return 1.0 / cfg.control_rate_hz

    def _setup_parameters(self) -> None:
        nv = self.group.nv
        specs = loop_specs(self.node_cfg, self._apply_rate, self._apply_feedback)
        for tc in self.config.tasks:
            specs += task_specs(tc, lambda n: self.ctrl.tasks[n], nv)
        for bc in self.config.barriers:
            specs += barrier_specs(bc, lambda n: next(b for b in self.ctrl.barriers if b.name == n))
        self._specs = {s.name: s for s in specs}
        try:
            params = self.declare_parameters("", [(s.name, s.value, s.descriptor) for s in specs])
        except Exception as exc:  # an override from the command line/launch that is refused
            raise ConfigureError(f"parameter override refused: {exc}") from exc
        for p in params:  # overrides given at start-up take effect like a runtime set
            if p.value != self._specs[p.name].value:
                self._specs[p.name].apply(p.value)

    def _release(self) -> None:
        """Destroy everything configure created (safe on a partial configure)."""
        if self._timer is not None:
            self._timer.cancel()
        if self._service is not None:
            self._service.destroy()
        if self._interactive is not None:
            self._interactive.shutdown()
        if self._diag is not None:
            self._diag.destroy()
        for kind, handle in reversed(self._entities):
            if kind == "lifecycle_publisher":
                self.destroy_lifecycle_publisher(handle)
            else:
                getattr(self, f"destroy_{kind}")(handle)
        for name in list(self._specs):
            if self.has_parameter(name):
                self.undeclare_parameter(name)
        self._specs = {}
        self._tf_listener = None
        self._clear()

    # ================================================================== parameters
    def _validate_parameters(self, params) -> SetParametersResult:
        for p in params:
            spec = self._specs.get(p.name)
            if spec is not None:
                reason = spec.validate(p.value)
                if reason:
                    return SetParametersResult(successful=False, reason=f"{p.name}: {reason}")
            elif p.name == "description_timeout" and not (isinstance(p.value, float) and p.value > 0):
                return SetParametersResult(successful=False, reason="description_timeout: expected a number > 0 [s]")
        return SetParametersResult(successful=True)

    def _apply_parameters(self, params) -> None:
        for p in params:
            spec = self._specs.get(p.name)
            if spec is not None and self.ctrl is not None:
                spec.apply(p.value)
                spec.value = p.value

    def _apply_rate(self, hz: float) -> None:
        """New control rate: rebuild the controller (limits and barriers depend on dt), keep targets."""
        if hz == self.node_cfg.control_rate_hz:
            return
        self.node_cfg.control_rate_hz = float(hz)
        dt = 1.0 / hz
        old = self.ctrl
        self.ctrl = OinkController(self.scene, self.config, dt, self._state.commanded)
        for name, task in self.ctrl.tasks.items():
            target = old.tasks[name].target
            if target is not None:
                task.set_target(target)
        self._smoothers = [(self.ctrl.tasks[n], sm, n) for _, sm, n in self._smoothers]
        for enc in self._encoders:
            enc.set_dt(dt)
        self._timer.timer_period_ns = int(self._loop_period() * 1e9)
        self._stats.reset(dt)
        self.get_logger().info(f"control rate: {hz:g} Hz")

    def _apply_feedback(self, mode: str) -> None:
        if self.node_cfg.trigger == "joint_states" and mode != "measured":
            self.get_logger().warning("trigger 'joint_states' steps on measurements: state_feedback stays 'measured'")
            return
        self.node_cfg.state_feedback = mode
        self._state.mode = mode
        self._state.reset()

    # ================================================================== inputs
    def _on_joint_states(self, msg: JointState) -> None:
        st = self._state
        if st is None:
            return
        buf = st.measurement_buffer()
        reason = self._decoder.decode(msg.name, msg.position, buf)
        if reason:
            self._counts["joint_states_rejected"] += 1
            self._last_rejection = f"{self.node_cfg.joint_states_topic}: {reason}"
            self.get_logger().warning(f"ignored a joint_states message: {reason}", throttle_duration_sec=2.0)
            return
        now = time.perf_counter()
        st.on_measurement(now)
        if self._active and self.node_cfg.trigger == "joint_states" and \
                now - self._last_tick_start > 0.5 / self.node_cfg.control_rate_hz:
            self._tick(now)

    def _reject_goal(self, topic: str, reason: str) -> None:
        self._counts["goals_rejected"] += 1
        self._last_rejection = f"{topic}: {reason}"
        self.get_logger().error(f"rejected goal on {topic}: {reason}", throttle_duration_sec=1.0)

    def _on_pose_goal(self, task_name: str, msg: PoseStamped) -> None:
        topic = f"~/{task_name}/target_pose"
        if not self._active:
            self._reject_goal(topic, "the controller is not active (goals start from the current pose on activate)")
            return
        try:
            T = self._resolver.resolve(msg, self._state.commanded, self.node_cfg.quaternion_tolerance, topic)
        except GoalError as exc:
            self._reject_goal(topic, str(exc))
            return
        for task, smoother, name in self._smoothers:
            if name == task_name:
                smoother.set_goal(T)
        self._markers_dirty = True

    def _on_joint_goal(self, task_name: str, msg: JointState) -> None:
        topic = f"~/{task_name}/target_joints"
        if not self._active:
            self._reject_goal(topic, "the controller is not active")
            return
        task = self.ctrl.tasks[task_name]
        group = self.group
        try:
            if not msg.name or len(msg.name) != len(msg.position):
                raise InvalidInputError(f"expected names and positions of equal length, got {len(msg.name)} "
                                        f"names and {len(msg.position)} positions")
            unknown = [n for n in msg.name if n not in group.joint_names]
            if unknown:
                raise InvalidInputError(f"joints {unknown} are not in the group; valid: {list(group.joint_names)}")
            values = np.asarray(msg.position, dtype=float)
            if not np.isfinite(values).all():
                raise InvalidInputError(f"non-finite positions {values.tolist()}")
            q_ref = self._state.commanded.copy()
            q_ref[group.q_indices] = task.target
            q = self.scene.q_from_joint_positions(list(msg.name), values, q_ref)
            if not self.scene.within_limits(q, group):
                raise InvalidInputError(f"positions {dict(zip(msg.name, values.round(4).tolist()))} are outside "
                                        "the joint limits")
        except InvalidInputError as exc:
            self._reject_goal(topic, str(exc))
            return
        task.set_target(q[group.q_indices])

    # ================================================================== control loop
    def _on_timer(self) -> None:
        now = time.perf_counter()
        if self.node_cfg.trigger == "joint_states":
            if self._state.age(now) > self.node_cfg.state_timeout:
                self._tick(now)  # holds and reports
            return
        self._tick(now)

    def _tick(self, t0: float) -> None:
        """One control step (hot path: no per-joint Python loop, messages reused)."""
        cfg, st = self.node_cfg, self._state
        self._last_tick_start = t0
        age = st.age(t0)
        if age > cfg.state_timeout:
            self._hold(f"no valid {cfg.joint_states_topic} for "
                       f"{'ever' if not np.isfinite(age) else f'{age:.2f} s'} (state_timeout {cfg.state_timeout:g} s)")
            self._publish_hold_command()
            self._record(t0)
            return
        q = st.current()
        dt = 1.0 / cfg.control_rate_hz
        for task, smoother, _ in self._smoothers:
            target = smoother.step(dt)
            if target is not None:
                task.set_target(target)
        t_solve = time.perf_counter()
        out = self.ctrl.step(q)
        self._last_solve_us = (time.perf_counter() - t_solve) * 1e6
        self._last_outcome = out
        if not out.result.ok:
            self._counts["qp_failures"] += 1
            self._hold(out.result.status)
        elif not out.barriers_ok:
            self._counts["barrier_refusals"] += 1
            self._hold("barrier check refused the step (dq = 0)")
        elif self._holding:
            self._resume()
        q_next = out.q_next
        self.scene.clip_to_limits(q_next, self.group)  # guard; the QP already keeps the limits
        st.commit(q_next)
        stamp = self.get_clock().now().to_msg() if self._stamp_needed else None
        for enc, pub in zip(self._encoders, self._cmd_pubs):
            pub.publish(enc.encode(q_next, q, stamp))
        self._snapshot(q_next)
        self._record(t0)

    def _record(self, t0: float) -> None:
        d = time.perf_counter() - t0
        self._last_tick_us = d * 1e6
        self._stats.record(t0, d)

    def _hold(self, reason: str) -> None:
        if not self._holding or reason != self._hold_reason:
            self._counts["holds"] += 1
            self.get_logger().warning(f"holding still: {reason}", throttle_duration_sec=2.0)
        self._holding, self._hold_reason = True, reason

    def _resume(self) -> None:
        self.get_logger().info(f"resumed (was holding: {self._hold_reason})", throttle_duration_sec=2.0)
        self._holding, self._hold_reason = False, ""

    def _publish_hold_command(self) -> None:
        q = self._state.hold_configuration()
        stamp = self.get_clock().now().to_msg() if self._stamp_needed else None
        for enc, pub in zip(self._encoders, self._cmd_pubs):
            pub.publish(enc.encode_hold(q, stamp))

    def _publish_hold(self, reason: str) -> None:
        self._holding, self._hold_reason = True, reason
        if self._state is not None and self._state.has_measurement:
            self._publish_hold_command()

    def _current_q(self) -> np.ndarray | None:
        """A copy of the latest commanded (else measured) configuration, for the service thread side."""
        with self._state_lock:
            if self._q_snapshot is not None:
                return self._q_snapshot.copy()
        st = self._state
        return st.measured.copy() if st is not None and st.has_measurement else None

    def _snapshot(self, q: np.ndarray) -> None:
        with self._state_lock:
            if self._q_snapshot is None:
                self._q_snapshot = q.copy()
            else:
                self._q_snapshot[:] = q

    # ================================================================== status
    def _publish_status(self) -> None:
        if self.ctrl is None:
            return
        msg = ControllerStatus()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.header.frame_id = self._root
        msg.tick_time_us = float(self._last_tick_us)
        msg.solve_time_us = float(self._last_solve_us)
        out = self._last_outcome
        msg.qp_status = out.result.status if out is not None else ""
        msg.holding = bool(self._holding or not self._active)
        msg.hold_reason = self._hold_reason if self._active else (self._hold_reason or "inactive")
        for name, task in self.ctrl.tasks.items():
            ts = TaskStatus(name=name, error_norm=float(np.linalg.norm(task.error)))
            if isinstance(task, FrameTask):
                ts.position_error, ts.orientation_error = task.position_error, task.orientation_error
            msg.tasks.append(ts)
        dq = out.result.dq if out is not None else None
        for b in self.ctrl.barriers:
            active = np.zeros(b.size, dtype=bool)
            if dq is not None and out.result.ok:
                with np.errstate(invalid="ignore"):
                    active = b.G @ dq >= b.upper - 1e-6
            for k in range(b.size):
                if np.isfinite(b.value[k]):
                    msg.barriers.append(BarrierStatus(name=b.name, detail=b.row_names[k],
                                                      value=float(b.value[k]), active=bool(active[k])))
        self._status_pub.publish(msg)
        if self._markers_dirty and self._marker_pub is not None:
            self._publish_markers()

    def _publish_markers(self) -> None:
        self._markers_dirty = False
        arr = MarkerArray()
        scale = self.node_cfg.markers.scale
        for k, (task, smoother, name) in enumerate(self._smoothers):
            goal = smoother.goal if smoother.goal is not None else task.target
            if goal is not None:
                arr.markers.append(goal_markers(name, goal, self._root, scale, k))
        for k, b in enumerate(self.ctrl.barriers):
            if hasattr(b, "p_min"):
                arr.markers.append(box_marker(b.name, b.p_min, b.p_max, self._root, k))
        self._marker_pub.publish(arr)

    def loop_summary(self) -> dict[str, float]:
        return self._stats.summary()

    def _diagnostics_report(self):
        s = self._stats.summary()
        if self.ctrl is None:
            return diag.WARN, "unconfigured", []
        if not self._active:
            level, message = diag.WARN, "inactive"
        elif self._holding:
            level, message = diag.WARN, f"holding: {self._hold_reason}"
        elif s["late_pct"] > 1.0:
            level, message = diag.WARN, f"{s['late_pct']:.1f} % of ticks late"
        else:
            level, message = diag.OK, "running"
        values = [
            ("control_rate_hz (set)", f"{self.node_cfg.control_rate_hz:g}"),
            ("rate_hz (achieved)", f"{s['rate_hz']:.1f}"),
            ("tick_p50_us", f"{s['tick_p50_us']:.0f}"),
            ("tick_p99_us", f"{s['tick_p99_us']:.0f}"),
            ("tick_max_us", f"{s['tick_max_us']:.0f}"),
            ("late_ticks_pct", f"{s['late_pct']:.2f}"),
            ("state_feedback", self.node_cfg.state_feedback),
            ("state_resyncs", str(self._state.resyncs)),
            ("qp_status", self._last_outcome.result.status if self._last_outcome is not None else ""),
            *((k, str(v)) for k, v in self._counts.items()),
            ("solve_ik_calls", str(self._service.calls)),
            ("solve_ik_failures", str(self._service.failures)),
            ("last_rejection", self._last_rejection),
        ]
        return level, message, values


def make_executor(context=None):
    """rclpy.experimental.EventsExecutor where present (much cheaper per callback), else the
    SingleThreadedExecutor."""
    try:
        from rclpy.experimental import EventsExecutor

        return EventsExecutor(context=context)
    except ImportError:  # older rclpy
        return rclpy.executors.SingleThreadedExecutor(context=context)


def spin_until_shutdown(executor, stop=None) -> None:
    """Run callbacks until rclpy shuts down (Ctrl-C) or ``stop`` (a threading.Event) is set.

    Loops on ``spin_once``: with this rclpy build, ``EventsExecutor.spin()`` never fires timers
    (checked here), while ``spin_once`` does, in any thread.
    """
    context = executor.context if hasattr(executor, "context") else None
    try:
        while rclpy.ok(context=context) and not (stop is not None and stop.is_set()):
            executor.spin_once(timeout_sec=0.1)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass


def main(args=None) -> None:
    rclpy.init(args=args)
    node = IKControllerNode()
    executor = make_executor()
    executor.add_node(node)
    try:
        if node.get_parameter("autostart").value and not node.autostart():
            node.get_logger().error(f"autostart: {node.last_error}; waiting for lifecycle transitions")
        spin_until_shutdown(executor)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        executor.shutdown()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()
