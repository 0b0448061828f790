"""The inputs of the configured tasks as ROS endpoints, decoded into the :class:`ControlLoop`.

Per task, the endpoints of the goal inputs its kind's follower accepts (``ControlLoop.goal_inputs``,
core/control/follower_kinds.py): ``pose`` ``~/<task>/target_pose`` (geometry_msgs/PoseStamped) and ``twist``
``~/<task>/target_twist`` (TwistStamped), a frame task's; ``joints`` ``~/<task>/target_joints`` and ``joint_jog``
``~/<task>/target_joint_velocities`` (sensor_msgs/JointState) and, where control_msgs is installed,
``~/<task>/joint_jog``, a configuration task's; ``target``, a goal in the form of the kind's ``goal``:
``~/<task>/target_pose`` (a pose in the task's reference frame, relative_frame), ``~/<task>/target_point``
(geometry_msgs/PointStamped: com, look_at), ``~/<task>/target_joints`` or ``~/<task>/target_joint_velocities``
(JointState). And the services ``~/pause`` (std_srvs/SetBool) and ``~/apply_configured_targets`` (Trigger).

Each callback decodes and checks its message, then hands the input to the loop under the node's
lock. A bad input changes nothing: it is rejected (counted in the loop, logged throttled, kept as
the last rejection for diagnostics) and the robot keeps doing what it did.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import numpy as np
from geometry_msgs.msg import PointStamped, PoseStamped, TwistStamped
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_srvs.srv import SetBool, Trigger

from ..core.control.control_loop import ControlLoop
from ..core.control.follower_kinds import JOINT_JOG, JOINTS, POSE, TARGET, TWIST
from ..core.errors import InvalidInputError
from .goal_frames import FrameResolver, joint_goal_configuration, joint_jog_velocities
from .message_conversions import PoseError, se3_from_pose
from .node_config import NodeConfig

try:  # what MoveIt Servo and ros2_control users send; not a PyPI wheel (apt installs have it)
    from control_msgs.msg import JointJog  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - depends on the install
    JointJog = None

GOAL_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE)
STREAM_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE)  # the newest command counts


class GoalInputs:
    """The endpoints of the module docstring for ``loop`` on ``node``. ``is_active()``: the node is
    active; ``log(level, message)``: throttled logging; ``on_rejected(text)``: a rejection happened;
    ``on_goal_set()``: a pose goal was taken (markers)."""

    def __init__(self, node, loop: ControlLoop, lock: threading.Lock, resolver: FrameResolver, cfg: NodeConfig,
                 is_active: Callable[[], bool], log: Callable[[str, str], None],
                 on_rejected: Callable[[str], None], on_goal_set: Callable[[], None]) -> None:
        self.node = node
        self.loop = loop
        self._lock = lock
        self._resolver = resolver
        self.cfg = cfg
        self._is_active = is_active
        self._log = log
        self._on_rejected = on_rejected
        self._on_goal_set = on_goal_set

    def create_endpoints(self) -> None:
        """Subscriptions and services on the node (call inside its configured session)."""
        node = self.node
        for name, inputs in self.loop.goal_inputs.items():
            for goal_input in inputs:
                for topic, msg_type, callback, qos in self._endpoints(name, goal_input):
                    node.create_subscription(msg_type, f"~/{name}/{topic}", callback, qos)
        if JointJog is None and any(JOINT_JOG in inputs for inputs in self.loop.goal_inputs.values()):
            node.get_logger().info("control_msgs is not installed: no ~/<task>/joint_jog (control_msgs/JointJog); "
                                   "jog with sensor_msgs/JointState velocities on ~/<task>/target_joint_velocities")
        node.create_service(Trigger, "~/apply_configured_targets", self.on_apply_configured_targets)
        node.create_service(SetBool, "~/pause", self.on_pause)

    def _endpoints(self, name: str, goal_input: str) -> list[tuple[str, type, Callable, QoSProfile]]:
        """(topic under ~/<name>/, message type, callback, QoS) of each subscription of task ``name``'s goal input
        (core/control/follower_kinds.py); a ``target`` input's topic follows the form of the kind's goal."""
        if goal_input == POSE:
            return [("target_pose", PoseStamped, lambda m: self.on_pose_goal(name, m), GOAL_QOS)]
        if goal_input == TWIST:
            return [("target_twist", TwistStamped, lambda m: self.on_twist(name, m), STREAM_QOS)]
        if goal_input == JOINTS:
            return [("target_joints", JointState, lambda m: self.on_joint_goal(name, m), GOAL_QOS)]
        if goal_input == JOINT_JOG:
            jogs = [("target_joint_velocities", JointState, lambda m: self.on_joint_jog(name, m, m.velocity),
                     STREAM_QOS)]
            if JointJog is not None:
                jogs.append(("joint_jog", JointJog, lambda m: self.on_joint_jog(name, m, m.velocities), STREAM_QOS))
            return jogs
        if goal_input == TARGET:
            goal = self.loop.direct_goals[name]
            topic, msg_type, callback = {
                "pose": ("target_pose", PoseStamped, self.on_direct_pose),
                "point": ("target_point", PointStamped, self.on_direct_point),
                "joints": ("target_joints", JointState, self.on_direct_joints),
                "velocities": ("target_joint_velocities", JointState, self.on_direct_velocities),
            }[goal]
            return [(topic, msg_type, lambda m: callback(name, m), STREAM_QOS if goal == "velocities" else GOAL_QOS)]
        raise ValueError(f"task {name!r}: goal input {goal_input!r} has no endpoint; expected one of "
                         f"{POSE}, {TWIST}, {JOINTS}, {JOINT_JOG}, {TARGET}")

    def reject(self, topic: str, reason: str) -> None:
        with self._lock:
            if self.loop is not None:
                self.loop.count_goal_rejected()
        self._on_rejected(f"{topic}: {reason}")
        self._log("error", f"rejected goal on {topic}: {reason}")

    def _note_stamp_fallback(self, topic: str, fallbacks_before: int) -> None:
        """A tf2 lookup at a message's stamp that fell back to the latest transform: said (throttled)."""
        if self._resolver.stamp_fallbacks != fallbacks_before:
            self._log("warning", f"{topic}: {self._resolver.last_stamp_fallback}")

    def on_pose_goal(self, task_name: str, msg: PoseStamped) -> None:
        topic = f"~/{task_name}/target_pose"
        try:
            if not self._is_active():
                raise InvalidInputError("the controller is not active (goals start from the current pose on activate)")
            with self._lock:
                q = self.loop.last_command()
            # outside the lock: a tf2 lookup (at header.stamp, else the latest) may wait up to tf_timeout
            fallbacks = self._resolver.stamp_fallbacks
            T = self._resolver.resolve(msg, q, self.cfg.quaternion_tolerance, topic)
            self._note_stamp_fallback(topic, fallbacks)
            with self._lock:
                self.loop.set_pose_goal(task_name, T)
        except InvalidInputError as exc:  # GoalError too
            self.reject(topic, str(exc))
            return
        self._on_goal_set()

    def on_joint_goal(self, task_name: str, msg: JointState) -> None:
        topic = f"~/{task_name}/target_joints"
        try:
            with self._lock:
                if not self._is_active():
                    raise InvalidInputError("the controller is not active")
                q_ref = self.loop.last_command()
                q_ref[self.loop.group.q_indices] = self.loop.goal(task_name)
                q = joint_goal_configuration(self.loop.scene, self.loop.group, msg, q_ref)
                self.loop.set_joint_goal(task_name, q[self.loop.group.q_indices])
        except InvalidInputError as exc:
            self.reject(topic, str(exc))

    def _direct(self, task_name: str, topic: str, target) -> None:
        """Hand a decoded goal of a direct-goal task (``target(q)`` at the last command) to the loop."""
        try:
            if not self._is_active():
                raise InvalidInputError("the controller is not active (goals start from the current pose on activate)")
            with self._lock:
                q = self.loop.last_command()
            value = target(q)  # outside the lock: a tf2 lookup may wait up to tf_timeout
            with self._lock:
                self.loop.set_task_target(task_name, value, time.perf_counter())
        except InvalidInputError as exc:  # GoalError too
            self.reject(topic, str(exc))

    def on_direct_pose(self, task_name: str, msg: PoseStamped) -> None:
        """A pose goal of a task whose target is a pose in its own reference frame (``goal_frame``, e.g.
        relative_frame's reference: header.frame_id must name it or be empty) or in the world frame."""
        topic = f"~/{task_name}/target_pose"
        reference = self.loop.tasks[task_name].goal_frame  # Task.goal_frame: "" the world frame

        def target(q):
            if reference:
                if msg.header.frame_id not in ("", reference):
                    raise InvalidInputError(f"header.frame_id {msg.header.frame_id!r}: expected {reference!r} (the "
                                            "task's reference frame: the target is the pose relative to it) or ''")
                try:
                    return se3_from_pose(msg.pose, self.cfg.quaternion_tolerance, "pose")
                except PoseError as exc:
                    raise InvalidInputError(str(exc)) from exc
            return self._resolver.resolve(msg, q, self.cfg.quaternion_tolerance, topic)

        self._direct(task_name, topic, target)

    def on_direct_point(self, task_name: str, msg: PointStamped) -> None:
        """A point goal (com, look_at): geometry_msgs/PointStamped in any robot frame (tf2 frames when installed)."""
        topic = f"~/{task_name}/target_point"

        def target(q):
            p = np.array([msg.point.x, msg.point.y, msg.point.z])
            if not np.isfinite(p).all():
                raise InvalidInputError(f"point: non-finite coordinates {p.tolist()}")
            T = self._resolver.T_world_frame(msg.header.frame_id, q, msg.header.stamp)
            return T.act(p)

        self._direct(task_name, topic, target)

    def on_direct_joints(self, task_name: str, msg: JointState) -> None:
        """Joint positions by name for a task of joint goals (joints not named keep their current values)."""
        self._direct(task_name, f"~/{task_name}/target_joints", lambda q: joint_goal_configuration(
            self.loop.scene, self.loop.group, msg, q)[self.loop.group.q_indices])

    def on_direct_velocities(self, task_name: str, msg: JointState) -> None:
        """Joint velocities by name [rad/s or m/s] for a velocity-reference task (joints not named: 0); a stream,
        zeroed after streaming.command_timeout without a newer message."""
        self._direct(task_name, f"~/{task_name}/target_joint_velocities",
                     lambda q: joint_jog_velocities(self.loop.group, msg.name, msg.velocity))

    def _twist_age(self, task_name: str, stamp, topic: str = "") -> float:
        """[s] a twist is already old on arrival: 0 without a stamp (header.stamp zero) or when the
        stamp and this node's clock disagree by more than ``streaming.stamp_tolerance`` (throttled
        warning: then only the arrival time counts), else now - stamp (>= 0)."""
        if stamp.sec == 0 and stamp.nanosec == 0:
            return 0.0
        age = (self.node.get_clock().now().nanoseconds - (stamp.sec * 1_000_000_000 + stamp.nanosec)) * 1e-9
        tolerance = self.cfg.streaming.stamp_tolerance
        if abs(age) > tolerance:
            self._log("warning", f"{topic or f'~/{task_name}/target_twist'}: header.stamp is {age:+.3f} s from this "
                                            f"node's clock (more than streaming.stamp_tolerance {tolerance:g} s): "
                                            "the clocks disagree; the command timeout is judged on arrival only")
            return 0.0
        return max(0.0, age)

    def on_twist(self, task_name: str, msg: TwistStamped) -> None:
        topic = f"~/{task_name}/target_twist"
        now = time.perf_counter()
        try:
            if not self._is_active():
                raise InvalidInputError("the controller is not active (streams start from the current pose on activate)")
            age = self._twist_age(task_name, msg.header.stamp)
            linear = np.array([msg.twist.linear.x, msg.twist.linear.y, msg.twist.linear.z])
            angular = np.array([msg.twist.angular.x, msg.twist.angular.y, msg.twist.angular.z])
            with self._lock:
                q = self.loop.last_command()
            # outside the lock: a tf2 lookup (at header.stamp; zero: the latest) may wait up to tf_timeout
            fallbacks = self._resolver.stamp_fallbacks
            R_world_command = self._resolver.T_world_frame(msg.header.frame_id, q, msg.header.stamp).rotation
            self._note_stamp_fallback(topic, fallbacks)
            with self._lock:
                self.loop.set_twist(task_name, linear, angular, now, age, R_world_command)
        except InvalidInputError as exc:  # GoalError too
            self.reject(topic, str(exc))

    def on_joint_jog(self, task_name: str, msg, velocities) -> None:
        """sensor_msgs/JointState (``velocity``) or control_msgs/JointJog (``velocities``; its
        ``displacements`` and ``duration`` are not supported: refused when set) by joint name."""
        topic = f"~/{task_name}/{'target_joint_velocities' if isinstance(msg, JointState) else 'joint_jog'}"
        now = time.perf_counter()
        try:
            if not self._is_active():
                raise InvalidInputError("the controller is not active")
            if not isinstance(msg, JointState) and (len(msg.displacements) or msg.duration):
                raise InvalidInputError("JointJog displacements/duration are not supported; send velocities")
            age = self._twist_age(task_name, msg.header.stamp, topic)
            dq = joint_jog_velocities(self.loop.group, msg.joint_names if hasattr(msg, "joint_names") else msg.name,
                                      velocities)
            with self._lock:
                self.loop.set_joint_velocities(task_name, dq, now, age)
        except InvalidInputError as exc:
            self.reject(topic, str(exc))

    def on_pause(self, request: SetBool.Request, response: SetBool.Response) -> SetBool.Response:
        """data true: brake to a stop and refuse inputs; false: resume (from the current pose)."""
        try:
            with self._lock:
                if not self._is_active():
                    raise InvalidInputError("the controller is not active")
                if request.data:
                    self.loop.pause()
                else:
                    self.loop.resume()
        except InvalidInputError as exc:
            response.success, response.message = False, str(exc)
            return response
        response.success = True
        response.message = ("paused: braking to a stop; inputs are refused until resumed" if request.data else
                            "resumed: every target restarts at the current pose once at rest; send a new input")
        return response

    def on_apply_configured_targets(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        try:
            with self._lock:
                if not self._is_active():
                    raise InvalidInputError("the controller is not active")
                self.loop.apply_configured_targets()
        except InvalidInputError as exc:
            response.success, response.message = False, str(exc)
            return response
        response.success, response.message = True, ("the configured targets (configuration and joint tasks' "
                                                    "target, look_at's point) take effect, shaped")
        return response
