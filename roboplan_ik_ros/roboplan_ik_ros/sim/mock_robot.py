"""``mock_robot``: a kinematic stand-in for a ros2_control robot, for demos, tests and users
without hardware.

Publishes the URDF and SRDF once on ``/robot_description`` and ``/robot_description_semantic``
(transient local) and ``/joint_states`` at ``rate_hz``; integrates the commands it receives
(forward_command position or velocity, a single-point JointTrajectory, or a JointState), with an
optional first-order lag, clipped into the joint limits. It also measures, for every command, the
time since its latest joint_states publication (the robot's view of sensor-to-command latency).

Parameters (read-only unless marked runtime):

``robot`` (``panda``), ``srdf``
    An example robot of example-robot-data, or a URDF path (with an optional SRDF path).
``rate_hz`` (100.0)
    /joint_states rate [Hz]; the simulation steps at the same rate.
``command_type`` (``forward_command``), ``command_interface`` (``position``), ``command_topic``,
``command_joints``
    What the mock listens to: forward_command (std_msgs/Float64MultiArray, position or velocity),
    joint_trajectory (its first point) or joint_state; ``command_joints`` is the joint order of
    forward_command data (``['']`` = the robot's default group).
``initial_state`` (``default``)
    SRDF group_state of the start pose (when present).
``initial_positions`` ([] = use ``initial_state``)
    Start pose: one value per commanded joint, in command order [rad or m]. Must be inside the
    joint limits (the mock refuses to start otherwise).
``drive_thread`` (true)
    Step the simulation and publish /joint_states from a thread of the mock's own on an absolute
    schedule, as a ros2_control hardware loop does (true), or from an executor timer, which runs only
    while the node is spun and queues behind the command callbacks (false: a test that steps the
    mock by hand).
``rt_priority`` (0)
    SCHED_FIFO priority of the mock's threads, as a drive's is (0 = normal): the drive thread and the
    executor's (``main``) that receives the commands. A starved mock receives commands in bursts,
    and a strict drive then cannot see gaps in the stream.
``lag_time_constant`` (0.0, runtime)
    First-order lag of the joints behind the command [s]; 0 = the joints jump to the command.
``paused`` (false, runtime)
    Stop publishing /joint_states while true (a driver that died but keeps its topics).
``glitch_every`` (0, runtime), ``glitch_joint`` (``panda_joint7``, runtime), ``glitch_offset`` (7.0, runtime)
    Sensor glitches: every ``glitch_every``-th /joint_states message (0 = none) reports
    ``glitch_joint`` at its true position + ``glitch_offset`` [rad or m]. Only the published
    message is wrong; the simulated robot is unaffected.

``strict_drive`` (false, runtime), ``joint_limits_file``, ``command_period`` (0.002), ``max_command_gap_periods``
(50), ``max_start_offset`` (0.001), ``drive_tolerance`` (1e-6)
    A strict drive, as a Franka's: every received position command is checked against the
    acceleration and jerk bounds of ``joint_limits_file`` (MoveIt's joint_limits.yaml; '' = the
    shipped ``config/panda_joint_limits.yaml`` for the Panda), by finite differences of consecutive
    commands at the nominal ``command_period`` [s] (the controller's period: commands carry no
    stamp, and receive times would add DDS jitter). On the first violation the drive stops
    following commands (the robot holds where it is) and says so: an ERROR log naming the command
    index, the joint, the value and the bound, and the latched ``~/drive_status`` (std_msgs/String,
    JSON: ``state`` ok | faulted, the ``violation``, peak acceleration and jerk ratios per joint,
    published at once and at 5 Hz). ``~/reset_drive`` (std_srvs/Trigger) acknowledges the fault
    (the next command starts a new stream), ``~/clear_drive_peaks`` resets the peak ratios. A gap
    of more than ``max_command_gap_periods`` periods ends a stream; the next stream starts from rest
    within ``max_start_offset`` [rad] of the robot. See :mod:`.strict_drive` for the rules and the
    tolerance. Position commands only (``command_interface: position``).

Killing the process (SIGKILL) simulates a crashed driver; a new mock started with other
``initial_positions`` simulates a driver that was restarted with the robot somewhere else.

``mock_robot --arms N`` (or ``--namespaces /left,/right``) drives N arms from one process, each a
:class:`MockRobot` in its own namespace with its topics under it (:mod:`.mock_arms`); the parameters
apply to every arm.
"""

from __future__ import annotations

import json
import math
import threading
import time
from pathlib import Path

import numpy as np
import rclpy
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

from ..core.errors import InvalidInputError
from ..core.model.joint_limits_file import load_joint_limits
from ..core.model.resources import resolve_path
from ..core.model.robots import EXAMPLE_ROBOTS, example_robot_data_share, load_example_robot
from ..core.model.scene import Scene
from ..node.loop_thread import LoopThread, set_fifo_priority, shorten_gil_switch_interval
from ..node.message_conversions import JointMap
from ..node.spin import spin_node_until_shutdown
from . import strict_drive as sd

LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
COMMAND_TYPES = ("forward_command", "joint_trajectory", "joint_state")
#: joint_limits_file '' means this file for these robots
DEFAULT_JOINT_LIMITS = {"panda": "package://roboplan_ik_ros/config/panda_joint_limits.yaml"}
DRIVE_STATUS_PERIOD = 0.2  # [s] ~/drive_status while the strict drive is on (and at once on a change)
COMMAND_QUEUE_DEPTH = 1000  # a mock stalled for up to 2 s at 500 Hz drops no command (the drive would see a jump)
#: Why no mock counts commands lost in transport (DDS's message-lost event): rmw_fastrtps (the pip wheels here) takes a
#: subscription's event mutex, then the DataReader's, in ``take_event`` (the EventsExecutor's thread, holding the GIL),
#: while a DDS receive thread delivering ``on_sample_lost`` takes them in the other order: a process whose commands are
#: lost in transport can deadlock (fixed upstream in rmw_fastrtps PR 890). Seen in the four-arm mock under load (its
#: executor and drive thread stopped, every node went stale, SIGINT no longer ended it) and in the e2e recorder. A lost
#: command reaches the strict drive as a step it judges like any other.
LOST_EVENT_DEADLOCK = "rmw_fastrtps take_event / on_sample_lost lock-order inversion"


def load_robot(robot: str, srdf_path: str = "") -> tuple[str, str, list[str], str]:
    """(urdf, srdf, package_paths, group) for ``robot`` = an example robot name or a URDF path."""
    if robot in EXAMPLE_ROBOTS:
        rd = load_example_robot(robot)
        return rd.urdf_xml, rd.srdf_xml, list(rd.package_paths), rd.group
    path = Path(robot)
    if not path.is_file():
        raise InvalidInputError(f"robot: {robot!r} is neither an example robot ({', '.join(EXAMPLE_ROBOTS)}) "
                                "nor a URDF file")
    srdf = Path(srdf_path).read_text() if srdf_path else ""
    try:
        pkgs = [str(example_robot_data_share())]
    except FileNotFoundError:
        pkgs = []
    return path.read_text(), srdf, [str(path.parent), *pkgs], ""


class MockRobot(Node):
    """See the module docstring. Three keywords serve :class:`.mock_arms.MockArms` (several arms in one process):
    ``namespace_topics`` takes the absolute topic names (/joint_states, /robot_description(_semantic), an absolute
    ``command_topic``) under the node's namespace (``/arm1/joint_states``); ``external_drive`` (with
    ``drive_thread`` true) starts no drive thread: the owner's thread calls :meth:`drive_tick` every
    :attr:`drive_period` seconds;"""

    def __init__(self, node_name: str = "mock_robot", *, namespace_topics: bool = False, external_drive: bool = False,
                 **kwargs) -> None:
        super().__init__(node_name, **kwargs)
        self._namespace_topics = namespace_topics
        d = ParameterDescriptor
        robot = self.declare_parameter("robot", "panda", d(
            description=f"example robot ({', '.join(EXAMPLE_ROBOTS)}) or a URDF file path", read_only=True)).value
        srdf_path = self.declare_parameter("srdf", "", d(description="SRDF file (with a URDF path)",
                                                         read_only=True)).value
        rate = self.declare_parameter("rate_hz", 100.0, d(description="joint_states rate [Hz]", read_only=True)).value
        ctype = self.declare_parameter("command_type", "forward_command", d(
            description="forward_command | joint_trajectory | joint_state", read_only=True)).value
        self.interface = self.declare_parameter("command_interface", "position", d(
            description="position | velocity (forward_command)", read_only=True)).value
        topic = self.declare_parameter("command_topic", "/forward_position_controller/commands", d(
            read_only=True)).value
        joints = self.declare_parameter("command_joints", [""], d(
            description="joint order of forward_command data; [''] = the robot's default group", read_only=True)).value
        self.lag = self.declare_parameter("lag_time_constant", 0.0, d(
            description="first-order lag of the joints behind the command [s]; 0 = none")).value
        initial_state = self.declare_parameter("initial_state", "default", d(
            description="SRDF group_state of the initial pose (when present)", read_only=True)).value
        initial_positions = self.declare_parameter("initial_positions", [], d(
            description="start pose, one value per commanded joint in command order; [] = initial_state",
            read_only=True, dynamic_typing=True)).value
        self.declare_parameter("paused", False, d(description="stop publishing /joint_states"))
        self.glitch_every = self.declare_parameter("glitch_every", 0, d(
            description="every Nth /joint_states message carries a glitch; 0 = none")).value
        self.glitch_joint = self.declare_parameter("glitch_joint", "panda_joint7", d(
            description="joint whose published position is wrong in a glitched message")).value
        self.glitch_offset = self.declare_parameter("glitch_offset", 7.0, d(
            description="added to glitch_joint's true position in a glitched message [rad or m]")).value
        strict = self.declare_parameter("strict_drive", False, d(
            description="check every position command against the acceleration/jerk bounds; hold on the first "
                        "violation (see ~/drive_status, ~/reset_drive)")).value
        limits_file = self.declare_parameter("joint_limits_file", "", d(
            description="MoveIt joint_limits.yaml of the strict drive's bounds; '' = the shipped file of the "
                        "robot (panda)", read_only=True)).value
        command_period = self.declare_parameter("command_period", 0.002, d(
            description="the command stream's nominal period [s] (the controller's): finite differences use it",
            read_only=True)).value
        gap_periods = self.declare_parameter("max_command_gap_periods", float(sd.DEFAULT_MAX_GAP_PERIODS), d(
            description="a longer gap without commands ends a stream [periods]", read_only=True,
            dynamic_typing=True)).value
        start_offset = self.declare_parameter("max_start_offset", sd.DEFAULT_MAX_START_OFFSET, d(
            description="a new stream starts this close to the robot [rad or m]", read_only=True)).value
        self.rt_priority = self.declare_parameter("rt_priority", 0, d(
            description="SCHED_FIFO priority of the mock's drive thread and of the thread that spins it (a drive "
                        "is real-time: a starved mock receives commands in bursts, which hides gaps in the "
                        "stream); 0 = normal", read_only=True)).value
        drive_thread = self.declare_parameter("drive_thread", True, d(
            description="step and publish /joint_states from a thread of the mock's own on an absolute schedule "
                        "(true) or from an executor timer (false)", read_only=True)).value
        tolerance = self.declare_parameter("drive_tolerance", sd.DEFAULT_TOLERANCE, d(
            description="relative slack on the bounds (rounding of the differences)", read_only=True)).value
        self.add_on_set_parameters_callback(self._on_set)
        if ctype not in COMMAND_TYPES or self.interface not in ("position", "velocity"):
            raise InvalidInputError(f"command_type {ctype!r} / command_interface {self.interface!r}: valid "
                                    f"{COMMAND_TYPES} / (position, velocity)")

        urdf, srdf, pkgs, group_name = load_robot(robot, srdf_path)
        self.scene = Scene(urdf, srdf, pkgs)
        names = [j for j in joints if j] or list(self.scene.group(group_name).joint_names)
        self.command_map = JointMap(self.scene, names)
        self.q = self.scene.neutral()
        if initial_state in self.scene.srdf.group_states:
            self.q = self.scene.named_configuration(initial_state, self.q)
        self.lower = self.scene.q_min_v[self.command_map.v_idx]
        self.upper = self.scene.q_max_v[self.command_map.v_idx]
        self.v_max = self.scene.v_max[self.command_map.v_idx]
        n = len(names)
        if len(initial_positions):
            start = self._check_initial_positions(initial_positions, names)
            self.command_map.to_q(start, self.q)
        self.state_map = JointMap(self.scene, self.scene.joint_names)
        self.drive: sd.StrictDrive | None = None  # the strict drive's checker (None: no bounds known)
        self._drive_error = ""  # why there is none
        try:
            self.drive = self._make_drive(robot, limits_file, names, command_period, gap_periods, start_offset,
                                          tolerance)
        except (InvalidInputError, ValueError) as exc:
            self._drive_error = str(exc)
            if strict:
                raise InvalidInputError(f"strict_drive: {exc}") from exc
        self.strict_drive = bool(strict)
        # the default glitch joint exists on the Panda only: checked when glitches are switched on
        self._glitch_index = self.scene.joint_names.index(self.glitch_joint) \
            if self.glitch_joint in self.scene.joint_names else -1
        if self.glitch_every > 0:
            self._check_glitch_joint(self.glitch_joint)
        self._published = 0  # /joint_states messages published (glitch counter)
        self._pos = self.command_map.from_q(self.q, np.empty(n))  # joint values of the commanded joints
        self._target = self._pos.copy()
        self._vel = np.zeros(n)
        self._vel_cmd = np.zeros(n)
        self._last_cmd_time = -math.inf
        self._idle_before_command = 0.0
        self._last_js_time = -math.inf
        self.commands = 0
        self.latencies = np.zeros(1 << 16)  # [s] command receipt - latest joint_states publication
        self.n_latencies = 0

        self.create_publisher(String, self._topic("/robot_description"), LATCHED).publish(String(data=urdf))
        self.create_publisher(String, self._topic("/robot_description_semantic"), LATCHED).publish(String(data=srdf))
        self._js_pub = self.create_publisher(JointState, self._topic("/joint_states"), 10)
        self._js = JointState(name=list(self.scene.joint_names))
        self._js_values = np.empty(len(self.scene.joint_names))
        msg_type = {"forward_command": Float64MultiArray, "joint_trajectory": JointTrajectory,
                    "joint_state": JointState}[ctype]
        topic = self._topic(topic)
        # no message-lost event on it: it can deadlock this process (LOST_EVENT_DEADLOCK)
        self.create_subscription(msg_type, topic, getattr(self, f"_on_{ctype}"), COMMAND_QUEUE_DEPTH)
        self._drive_pub = self.create_publisher(String, "~/drive_status", LATCHED)
        self.create_service(Trigger, "~/reset_drive", self._on_reset_drive)
        self.create_service(Trigger, "~/clear_drive_peaks", self._on_clear_drive_peaks)
        self.create_timer(DRIVE_STATUS_PERIOD, lambda: self.strict_drive and self._publish_drive_status())
        self._publish_drive_status()
        self._dt = 1.0 / rate
        self._last_step = time.perf_counter()
        self._drive_lock = threading.Lock()  # the robot's state: the drive step against the command callbacks
        self._drive_loop: LoopThread | None = None
        #: stepped by :meth:`drive_tick` from a drive thread (its own, or with ``external_drive`` its owner's)
        self.uses_drive_thread = bool(drive_thread)
        if drive_thread and not external_drive:
            shorten_gil_switch_interval()  # the drive thread, woken for its step, waits less for a command callback
            self._drive_loop = LoopThread(self._dt, self.drive_tick, name="mock_drive", priority=self.rt_priority,
                                          on_priority=self.on_drive_priority)
            self._drive_loop.start()
        elif not drive_thread:
            self.create_timer(self._dt, self._drive_step)
        self.get_logger().info(f"mock {robot}: {n} commanded joints {names}, {ctype} ({self.interface}) on "
                               f"{topic}, {self._js_pub.topic_name} at {rate:g} Hz, lag {self.lag:g} s, "
                               f"start {np.round(self._pos, 4).tolist()}")
        if self.strict_drive:
            self.get_logger().info(f"strict drive: {self._drive_summary()}")

    def _topic(self, name: str) -> str:
        """``name`` as this mock uses it: an absolute name under the node's namespace with ``namespace_topics``
        (``/joint_states`` -> ``/arm1/joint_states``), else as given (a relative name resolves in the namespace
        anyway)."""
        if self._namespace_topics and name.startswith("/"):
            return self.get_namespace().rstrip("/") + name
        return name

    # ------------------------------------------------------------------ strict drive
    def _make_drive(self, robot, limits_file, names, period, gap_periods, start_offset, tolerance) -> sd.StrictDrive:
        if self.interface != "position":
            raise InvalidInputError("the strict drive checks position commands; command_interface is "
                                    f"{self.interface!r}")
        uri = limits_file or DEFAULT_JOINT_LIMITS.get(robot, "")
        if not uri:
            raise InvalidInputError(f"no joint_limits_file given and none shipped for robot {robot!r}")
        limits = load_joint_limits(resolve_path(uri, (), "joint_limits_file"), "joint_limits_file")
        a_max = np.array([limits.acceleration.get(n, math.inf) for n in names])
        j_max = np.array([limits.jerk.get(n, math.inf) for n in names])
        if not (np.isfinite(a_max).any() or np.isfinite(j_max).any()):
            raise InvalidInputError(f"joint_limits_file {uri!r} has no acceleration or jerk limit for any of {names}")
        self._drive_limits_source = uri
        return sd.StrictDrive(names, a_max, j_max, float(period), float(gap_periods), float(start_offset),
                              float(tolerance))

    def _drive_summary(self) -> str:
        d = self.drive
        unchecked = [n for n, a, j in zip(d.joint_names, d.a_max, d.j_max) if not (np.isfinite(a) and np.isfinite(j))]
        return (f"bounds from {self._drive_limits_source} (a_max {d.a_max.tolist()}, j_max {d.j_max.tolist()}), "
                f"command period {d.period:g} s, a stream ends after {d.max_gap:g} s without a command"
                + (f"; acceleration or jerk unchecked for {unchecked}" if unchecked else ""))

    def _publish_drive_status(self) -> None:
        status = {"strict_drive": self.strict_drive,
                  "last_command_age_s": round(time.perf_counter() - self._last_cmd_time, 4)
                  if math.isfinite(self._last_cmd_time) else None}
        if self.drive is not None:
            status.update(self.drive.status())
        else:
            status.update(state="unavailable", reason=self._drive_error)
        self._drive_pub.publish(String(data=json.dumps(status)))

    def _on_reset_drive(self, request, response):
        if self.drive is None:
            response.success, response.message = False, f"no strict drive: {self._drive_error}"
            return response
        was = self.drive.violation
        self.drive.reset()
        self._publish_drive_status()
        response.success = True
        response.message = ("fault acknowledged: the next command starts a new stream (from rest, near the robot)"
                            if was else "no fault")
        if was:
            self.get_logger().info(f"strict drive: fault acknowledged ({was.message()})")
        return response

    def _on_clear_drive_peaks(self, request, response):
        if self.drive is None:
            response.success, response.message = False, f"no strict drive: {self._drive_error}"
            return response
        self.drive.clear_peaks()
        self._publish_drive_status()
        response.success, response.message = True, "peak ratios cleared"
        return response

    def _check_initial_positions(self, values, names) -> np.ndarray:
        try:
            v = np.array([float(x) for x in values])
        except (TypeError, ValueError):
            v = np.array([math.nan])
        if len(v) != len(names) or not np.isfinite(v).all():
            raise InvalidInputError(f"initial_positions: expected {len(names)} finite numbers (one per joint of "
                                    f"{names}), got {list(values)}")
        outside = [n for n, x, lo, hi in zip(names, v, self.lower, self.upper) if not lo <= x <= hi]
        if outside:
            raise InvalidInputError(f"initial_positions: {outside} outside the joint limits")
        return v

    def _check_glitch_joint(self, name: str) -> int:
        if name not in self.scene.joint_names:
            raise InvalidInputError(f"glitch_joint: unknown joint {name!r}; valid: "
                                    f"{', '.join(self.scene.joint_names)}")
        return self.scene.joint_names.index(name)

    def _on_set(self, params) -> SetParametersResult:
        # validate everything first, then apply (a refused set changes nothing)
        updates = {}
        for p in params:
            if p.name == "lag_time_constant":
                if not (isinstance(p.value, float) and p.value >= 0.0):
                    return SetParametersResult(successful=False, reason="lag_time_constant: expected a number >= 0")
                updates["lag"] = p.value
            elif p.name == "glitch_every":
                if not (isinstance(p.value, int) and not isinstance(p.value, bool) and p.value >= 0):
                    return SetParametersResult(successful=False, reason="glitch_every: expected an integer >= 0")
                joint = next((q.value for q in params if q.name == "glitch_joint"), self.glitch_joint)
                if p.value > 0 and joint not in self.scene.joint_names:
                    return SetParametersResult(successful=False, reason=f"glitch_every: glitch_joint {joint!r} is "
                                                                        "not a joint of the robot")
                updates["glitch_every"] = p.value
            elif p.name == "glitch_joint":
                try:
                    updates["_glitch_index"] = self._check_glitch_joint(p.value)
                except InvalidInputError as exc:
                    return SetParametersResult(successful=False, reason=str(exc))
                updates["glitch_joint"] = p.value
            elif p.name == "strict_drive":
                if not isinstance(p.value, bool):
                    return SetParametersResult(successful=False, reason="strict_drive: expected true or false")
                if p.value and self.drive is None:
                    return SetParametersResult(successful=False, reason=f"strict_drive: {self._drive_error}")
                updates["strict_drive"] = p.value
            elif p.name == "glitch_offset":
                if not (isinstance(p.value, float) and math.isfinite(p.value)):
                    return SetParametersResult(successful=False, reason="glitch_offset: expected a finite number")
                updates["glitch_offset"] = p.value
        if updates.get("strict_drive") and not self.strict_drive:
            self.drive.reset()  # switched on: the next command starts a stream (near the robot, from rest)
            self.get_logger().info(f"strict drive on: {self._drive_summary()}")
        for k, v in updates.items():
            setattr(self, k, v)
        if "strict_drive" in updates:
            self._publish_drive_status()
        return SetParametersResult(successful=True)

    # ------------------------------------------------------------------ commands
    def _received(self, values, names=None) -> np.ndarray | None:
        now = time.perf_counter()
        if self.n_latencies < len(self.latencies) and math.isfinite(self._last_js_time):
            self.latencies[self.n_latencies] = now - self._last_js_time
            self.n_latencies += 1
        self.commands += 1
        self._idle_before_command = now - max(self._last_step, self._last_cmd_time)  # [s] a stall of the mock
        v = np.asarray(values, dtype=float)
        if names is not None and list(names) != self.command_map.names:
            index = {n: k for k, n in enumerate(names)}
            if any(n not in index for n in self.command_map.names):
                self.get_logger().warning(f"command without joints {self.command_map.names}: ignored",
                                       throttle_duration_sec=2.0)
                return None
            v = v[[index[n] for n in self.command_map.names]]
        if v.shape != self._target.shape or not np.isfinite(v).all():
            self.get_logger().warning(f"bad command {v.tolist()}: ignored", throttle_duration_sec=2.0)
            return None
        self._last_cmd_time = now
        return v

    def _on_forward_command(self, msg: Float64MultiArray) -> None:
        v = self._received(msg.data)
        if v is None:
            return
        if self.interface == "velocity":
            with self._drive_lock:
                self._vel_cmd[:] = v
        else:
            self._set_target(v)

    def _on_joint_trajectory(self, msg: JointTrajectory) -> None:
        if msg.points:
            v = self._received(msg.points[0].positions, msg.joint_names)
            if v is not None:
                self._set_target(v)

    def _on_joint_state(self, msg: JointState) -> None:
        v = self._received(msg.position, msg.name)
        if v is not None:
            self._set_target(v)

    def _set_target(self, v: np.ndarray) -> None:
        with self._drive_lock:
            self._set_target_locked(v)

    def _set_target_locked(self, v: np.ndarray) -> None:
        if self.strict_drive:
            drive = self.drive
            was_faulted = drive.faulted
            if not drive.check(v, self._last_cmd_time, self._pos):
                if not was_faulted:  # the first refused command: hold where the robot is, say so
                    self._target[:] = self._pos
                    lost = ""
                    if self._idle_before_command > drive.max_gap:
                        lost = (f" (this mock had not run for {self._idle_before_command:.3f} s before this command: "
                                 f"commands received in a burst after a stall hide any gap in the stream; see "
                                 f"rt_priority)")
                    self.get_logger().error(
                        f"strict drive: {drive.violation.message()}; holding, no longer following commands "
                        f"(call ~/reset_drive to acknowledge){lost}")
                    self._publish_drive_status()
                return
        np.clip(v, self.lower, self.upper, out=self._target)
        if self.lag <= 0.0:
            self._pos[:] = self._target

    # ---------------------------------------------------------------- simulation
    @property
    def drive_period(self) -> float:
        """[s] the simulation's step and /joint_states period (1 / ``rate_hz``)."""
        return self._dt

    def on_drive_priority(self, ok: bool, message: str) -> None:
        """The drive thread's report of its SCHED_FIFO request (``rt_priority``), logged."""
        if ok:
            self.get_logger().info(f"drive thread: {message}")
        else:
            self.get_logger().warning(f"drive thread: rt_priority {self.rt_priority}: {message}")

    def drive_tick(self, _start: float) -> None:
        """The drive thread's step: nothing once the ROS context is shut down (Ctrl-C before destroy_node); an
        error is logged and the next period steps again (a drive thread that died would stop the robot's
        /joint_states without a word)."""
        if not self.context.ok():
            return
        try:
            self._drive_step()
        except Exception as exc:  # noqa: BLE001 - logged; the drive keeps its schedule
            if self.context.ok():
                self.get_logger().error(f"drive step failed: {type(exc).__name__}: {exc}", throttle_duration_sec=1.0)

    def destroy_node(self) -> None:
        if self._drive_loop is not None:
            self._drive_loop.stop()
        super().destroy_node()

    def _drive_step(self) -> None:
        """One simulation step (the time since the last one) and its /joint_states."""
        with self._drive_lock:
            published = self._simulate()
        if published is not None:
            self._js.position = published
            self._js_pub.publish(self._js)
            self._last_js_time = time.perf_counter()

    def _simulate(self) -> list[float] | None:
        """Advance the joints; the values to publish (a glitch included), or None while paused."""
        now = time.perf_counter()
        dt, self._last_step = now - self._last_step, now
        if self.interface == "velocity":
            if now - self._last_cmd_time > 0.1:  # command stream stopped: stop
                self._vel_cmd[:] = 0.0
            a = 1.0 if self.lag <= 0.0 else 1.0 - math.exp(-dt / self.lag)
            self._vel += a * (self._vel_cmd - self._vel)
            np.clip(self._vel, -self.v_max, self.v_max, out=self._vel)
            self._pos += self._vel * dt
        elif self.lag > 0.0:
            self._pos += (1.0 - math.exp(-dt / self.lag)) * (self._target - self._pos)
        np.clip(self._pos, self.lower, self.upper, out=self._pos)
        self.command_map.to_q(self._pos, self.q)
        if self.get_parameter("paused").value:
            return None
        self._js.header.stamp = self.get_clock().now().to_msg()
        values = self.state_map.from_q(self.q, self._js_values)
        self._published += 1
        if self.glitch_every > 0 and self._glitch_index >= 0 and self._published % self.glitch_every == 0:
            values = values.copy()
            values[self._glitch_index] += self.glitch_offset
        return values.tolist()

    def joint_positions(self) -> dict[str, float]:
        return dict(zip(self.scene.joint_names, self.state_map.from_q(self.q, np.empty(len(self.scene.joint_names)))))


def main(args=None) -> None:
    rclpy.init(args=args)
    from .mock_arms import namespaces_from_command_line, spin_arms

    try:
        namespaces = namespaces_from_command_line(args)
    except InvalidInputError as exc:
        rclpy.logging.get_logger("mock_robot").error(str(exc))
        rclpy.try_shutdown()
        raise SystemExit(1) from exc
    if namespaces is not None:  # --arms N / --namespaces: several arms in this process
        spin_arms(namespaces, MockRobot)
        return
    try:
        node = MockRobot()
    except (InvalidInputError, OSError) as exc:
        rclpy.logging.get_logger("mock_robot").error(str(exc))
        rclpy.try_shutdown()
        raise SystemExit(1) from exc
    if node.rt_priority > 0:  # this (main) thread runs the executor: the command callbacks
        why_not = set_fifo_priority(node.rt_priority)
        if why_not:
            node.get_logger().warning(f"rt_priority {node.rt_priority}: {why_not}")
        else:
            node.get_logger().info(f"SCHED_FIFO priority {node.rt_priority}")
    spin_node_until_shutdown(node, "mock_robot")


if __name__ == "__main__":
    main()
