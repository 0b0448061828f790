"""Goals: pose validation and frame resolution (robot model frames, else tf2_ros), joint goals.

Every target handed to the core is ``T_world_target`` with "world" the URDF root link. A goal
stamped in a frame of the robot model is composed with that frame's pose at the current
configuration (evaluated once, when the goal arrives); "" and the root link mean the root itself.
Frames outside the model go through tf2_ros when it is installed (a ``tf2_ros.Buffer``); without
it they are rejected with a message saying so.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from ..core.errors import InvalidInputError
from ..core.model.scene import Scene
from .message_conversions import PoseError, se3_from_pose, se3_from_transform

try:  # the real library where it is installed (every apt ROS 2 install); not on PyPI
    import tf2_ros  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - depends on the install
    tf2_ros = None

HAVE_TF2 = tf2_ros is not None


class GoalError(InvalidInputError):
    """A rejected goal; ``code`` is one of the ``CODE_*`` names (mapped to SolveIK error codes)."""

    INVALID = "invalid"
    UNKNOWN_FRAME = "unknown_frame"
    TRANSFORM_FAILED = "transform_failed"

    def __init__(self, message: str, code: str = INVALID) -> None:
        super().__init__(message)
        self.code = code


def joint_goal_configuration(scene: Scene, group, msg, q_ref: np.ndarray) -> np.ndarray:
    """The full q of a sensor_msgs/JointState goal for ``group`` (other joints from ``q_ref``), or
    raise InvalidInputError: names and positions must match, name joints of the group, be finite
    and inside the joint limits."""
    if not msg.name or len(msg.name) != len(msg.position):
        raise InvalidInputError(f"expected names and positions of equal length, got {len(msg.name)} "
                                f"names and {len(msg.position)} positions")
    unknown = [n for n in msg.name if n not in group.joint_names]
    if unknown:
        raise InvalidInputError(f"joints {unknown} are not in the group; valid: {list(group.joint_names)}")
    values = np.asarray(msg.position, dtype=float)
    if not np.isfinite(values).all():
        raise InvalidInputError(f"non-finite positions {values.tolist()}")
    q = scene.q_from_joint_positions(list(msg.name), values, q_ref)
    if not scene.within_limits(q, group):
        raise InvalidInputError(f"positions {dict(zip(msg.name, values.round(4).tolist()))} are outside the "
                                "joint limits")
    return q


def joint_jog_velocities(group, names, velocities) -> np.ndarray:
    """The group's joint velocities (v order, 0 for joints not named) of a jog by name, or raise
    InvalidInputError: names and velocities of equal length, joints of the group, once each, finite."""
    names, values = list(names), np.asarray(velocities, dtype=float)
    if not names or len(names) != len(values):
        raise InvalidInputError(f"expected names and velocities of equal length, got {len(names)} names and "
                                f"{len(values)} velocities")
    unknown = [n for n in names if n not in group.joint_names]
    if unknown:
        raise InvalidInputError(f"joints {unknown} are not in the group; valid: {list(group.joint_names)}")
    if len(set(names)) != len(names):
        raise InvalidInputError(f"duplicate joint names in {names}")
    if not np.isfinite(values).all():
        raise InvalidInputError(f"non-finite velocities {values.tolist()}")
    dq = np.zeros(group.nv)  # every joint of a group has one velocity (JointGroup): v index = joint index
    dq[[group.joint_names.index(n) for n in names]] = values
    return dq


class FrameResolver:
    """``T_world_frame`` for a header frame_id: a model frame (forward kinematics at q), the root,
    or (with a tf2_ros buffer) any frame TF knows.

    Uses ``scene.frame_pose`` (the scene's own data): call from one thread only.
    """

    def __init__(self, scene: Scene, root_frame: str, tf_buffer=None, tf_timeout: float = 0.0) -> None:
        self.scene = scene
        self.root_frame = root_frame
        self.tf_buffer = tf_buffer
        self.tf_timeout = tf_timeout
        self._identity_frames = {"", root_frame, "universe"}
        self.stamp_fallbacks = 0  # tf2 lookups at a message's stamp that fell back to the latest transform
        self.last_stamp_fallback = ""

    def T_world_frame(self, frame_id: str, q: np.ndarray, stamp=None) -> pin.SE3:
        """``stamp`` (builtin_interfaces/Time; None or zero: the latest): the time a tf2 lookup is made
        at, the message's ``header.stamp`` (tf2's convention); model frames are at ``q``."""
        if frame_id in self._identity_frames:
            return pin.SE3.Identity()
        if self.scene.model.existFrame(frame_id):
            return self.scene.frame_pose(q, frame_id)
        if self.tf_buffer is None:
            raise GoalError(
                f"frame {frame_id!r} is not a frame of the robot model and tf2_ros is not installed; use "
                f"'{self.root_frame}' (or '') or a robot frame, e.g. {self._examples()}",
                GoalError.UNKNOWN_FRAME,
            )
        return self.T_world_tf_frame(frame_id, stamp)

    def T_world_tf_frame(self, frame_id: str, stamp) -> pin.SE3:
        """``T_world_frame`` of a frame TF knows (needs ``tf_buffer``; model frames are not looked up here and
        no kinematics data is used: ~/pointcloud's thread calls this beside the executor's goals). tf2 at
        ``stamp`` (no wait: the buffer has it or not), else the latest transform within ``tf_timeout``,
        counted in ``stamp_fallbacks`` and said in ``last_stamp_fallback`` (the node logs it): a stamp
        newer than the buffer's last transform (tf published at a lower rate than the stream, clocks that
        disagree) must not refuse a whole stream, nor stall its callback."""
        from rclpy.duration import Duration
        from rclpy.time import Time

        if stamp is not None and (stamp.sec != 0 or stamp.nanosec != 0):
            try:
                tf = self.tf_buffer.lookup_transform(self.root_frame, frame_id, Time.from_msg(stamp))
                return se3_from_transform(tf.transform)
            except Exception as exc:  # tf2's ExtrapolationException, LookupException, ...
                at_stamp = exc
        else:
            at_stamp = None
        try:
            tf = self.tf_buffer.lookup_transform(
                self.root_frame, frame_id, Time(), timeout=Duration(seconds=self.tf_timeout)
            )
        except Exception as exc:  # tf2 raises LookupException, ExtrapolationException, ...
            raise GoalError(
                f"no transform from {frame_id!r} to {self.root_frame!r}: {exc}", GoalError.TRANSFORM_FAILED
            ) from exc
        if at_stamp is not None:
            self.stamp_fallbacks += 1
            self.last_stamp_fallback = (f"no transform from {frame_id!r} to {self.root_frame!r} at the message's "
                                        f"stamp ({at_stamp}); the latest was used")
        return se3_from_transform(tf.transform)

    def _examples(self) -> str:
        names = [f.name for f in self.scene.model.frames if f.type == pin.FrameType.BODY]
        return ", ".join(repr(n) for n in names[:6]) + (", ..." if len(names) > 6 else "")

    def resolve(self, pose_stamped, q: np.ndarray, quaternion_tolerance: float, what: str = "goal") -> pin.SE3:
        """``T_world_target`` of a geometry_msgs/PoseStamped, or raise :class:`GoalError`."""
        try:
            T_frame_target = se3_from_pose(pose_stamped.pose, quaternion_tolerance, what)
        except PoseError as exc:
            raise GoalError(str(exc), GoalError.INVALID) from exc
        return self.T_world_frame(pose_stamped.header.frame_id, q, pose_stamped.header.stamp) * T_frame_target
