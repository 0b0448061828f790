"""Conversions between ROS messages and the core's arrays: joint states <-> q, Pose <-> pin.SE3.

Joint values in messages are one scalar per named joint (an angle for continuous joints); the
core's configuration q is the full pinocchio vector (cos/sin pairs for continuous joints).
Index maps are built once per joint-name list and reused, so decoding a message in the control
loop does no Python loop over joints.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pinocchio as pin
from geometry_msgs.msg import Pose
from sensor_msgs.msg import PointCloud2, PointField

from ..core.errors import InvalidInputError
from ..core.model.scene import Scene


class JointMap:
    """Maps between per-joint scalar values (in ``names`` order) and the full configuration q."""

    def __init__(self, scene: Scene, names: Sequence[str]) -> None:
        self.names = list(names)
        scalar_src, scalar_q, cont_src, cont_q, v_idx = [], [], [], [], []
        for k, name in enumerate(self.names):
            if name not in scene.joint_names:
                valid = ", ".join(scene.joint_names)
                raise InvalidInputError(f"unknown joint {name!r}; valid: {valid}")
            jm = scene.model.joints[scene.model.getJointId(name)]
            v_idx.append(jm.idx_v)
            if jm.nq == 1:
                scalar_src.append(k)
                scalar_q.append(jm.idx_q)
            else:
                cont_src.append(k)
                cont_q.append(jm.idx_q)
        as_int = lambda x: np.asarray(x, dtype=np.intp)  # noqa: E731
        self.scalar_src, self.scalar_q = as_int(scalar_src), as_int(scalar_q)
        self.cont_src, self.cont_q = as_int(cont_src), as_int(cont_q)
        self.v_idx = as_int(v_idx)
        self.has_continuous = len(cont_src) > 0

    def to_q(self, values: np.ndarray, q_out: np.ndarray) -> None:
        """Write per-joint ``values`` (names order) into the full configuration ``q_out``."""
        q_out[self.scalar_q] = values[self.scalar_src]
        if self.has_continuous:
            angles = values[self.cont_src]
            q_out[self.cont_q] = np.cos(angles)
            q_out[self.cont_q + 1] = np.sin(angles)

    def from_q(self, q: np.ndarray, out: np.ndarray) -> np.ndarray:
        """Per-joint values (names order) of the full configuration ``q``, written into ``out``."""
        out[self.scalar_src] = q[self.scalar_q]
        if self.has_continuous:
            out[self.cont_src] = np.arctan2(q[self.cont_q + 1], q[self.cont_q])
        return out


class JointStateDecoder:
    """Validates sensor_msgs/JointState messages and writes them into q.

    ``required`` joints must be present with finite positions; other joints of the model are taken
    when present and finite (e.g. gripper fingers outside the controlled group), and extra names
    that are not in the model are ignored. A bad message is rejected as a whole.
    """

    def __init__(self, scene: Scene, required: Sequence[str]) -> None:
        self.scene = scene
        self.required = tuple(required)
        self._cached_names: list[str] | None = None
        self._map: JointMap | None = None
        self._src = np.zeros(0, dtype=np.intp)  # message index per mapped joint
        self._error = ""

    def _build(self, names: list[str]) -> None:
        self._cached_names = list(names)
        index = {}
        for k, n in enumerate(names):
            index.setdefault(n, k)
        missing = [j for j in self.required if j not in index]
        if missing:
            self._error = f"missing joints {missing} (message has {list(names)})"
            self._map = None
            return
        known = [n for n in index if n in self.scene.joint_names]
        self._map = JointMap(self.scene, known)
        self._src = np.asarray([index[n] for n in known], dtype=np.intp)
        self._values = np.empty(len(known))
        self._error = ""

    def decode(self, names: list[str], positions, q_out: np.ndarray) -> str:
        """Write the message's joints into ``q_out``; returns "" or why the message was rejected
        (``q_out`` is untouched then)."""
        if names != self._cached_names:
            self._build(names)
        if self._map is None:
            return self._error
        pos = np.frombuffer(positions, dtype=np.float64) if not isinstance(positions, np.ndarray) else positions
        if len(pos) != len(names):
            return f"{len(names)} names but {len(pos)} positions"
        values = np.take(pos, self._src, out=self._values)
        if not np.isfinite(values).all():
            bad = [self._map.names[k] for k in np.flatnonzero(~np.isfinite(values))]
            return f"non-finite positions for {bad}"
        self._map.to_q(values, q_out)
        return ""


# ----------------------------------------------------------------------------- poses
class PoseError(InvalidInputError):
    """A pose message that is not a valid rigid transform."""


def se3_from_pose(pose: Pose, quaternion_tolerance: float = 0.01, what: str = "pose") -> pin.SE3:
    """A geometry_msgs/Pose as pin.SE3, or raise :class:`PoseError`.

    Rejects NaN/inf, a zero quaternion, and a quaternion whose norm differs from 1 by more than
    ``quaternion_tolerance``; a quaternion within the tolerance is normalized.
    """
    p, o = pose.position, pose.orientation
    v = np.array([p.x, p.y, p.z, o.x, o.y, o.z, o.w])
    if not np.isfinite(v).all():
        raise PoseError(f"{what}: non-finite value (position {v[:3].tolist()}, orientation xyzw {v[3:].tolist()})")
    norm = float(np.linalg.norm(v[3:]))
    if norm < 1e-9:
        raise PoseError(f"{what}: zero quaternion (orientation x=y=z=w=0); expected a unit quaternion")
    if abs(norm - 1.0) > quaternion_tolerance:
        raise PoseError(
            f"{what}: quaternion norm {norm:.6g} is not 1 (tolerance {quaternion_tolerance:g}); "
            "send a normalized quaternion"
        )
    x, y, z, w = v[3:] / norm
    R = pin.Quaternion(w, x, y, z).toRotationMatrix()
    return pin.SE3(R, v[:3])


def pose_from_se3(T: pin.SE3, out: Pose | None = None) -> Pose:
    """pin.SE3 -> geometry_msgs/Pose."""
    out = out if out is not None else Pose()
    t = T.translation
    q = pin.Quaternion(T.rotation)
    out.position.x, out.position.y, out.position.z = float(t[0]), float(t[1]), float(t[2])
    out.orientation.x, out.orientation.y, out.orientation.z, out.orientation.w = (
        float(q.x), float(q.y), float(q.z), float(q.w))
    return out


def se3_from_transform(tf) -> pin.SE3:
    """geometry_msgs/Transform -> pin.SE3."""
    t, r = tf.translation, tf.rotation
    R = pin.Quaternion(r.w, r.x, r.y, r.z).normalized().toRotationMatrix()
    return pin.SE3(R, np.array([t.x, t.y, t.z]))


def root_frame_name(scene: Scene) -> str:
    """Name of the URDF root link: the frame every pose of the core is expressed in ("world")."""
    for f in scene.model.frames:
        if f.parentJoint == 0 and f.type == pin.FrameType.BODY:
            return f.name
    return "universe"



# ----------------------------------------------------------------------------- point clouds
def xyz_cloud(points: np.ndarray, width: int, height: int, frame_id: str, is_dense: bool) -> PointCloud2:
    """(height * width, 3) points [m] as a sensor_msgs/PointCloud2 of x, y, z float32 (``is_dense`` false: an
    organized cloud whose NaN points are pixels without a return)."""
    msg = PointCloud2(height=height, width=width, is_bigendian=False, point_step=12, row_step=12 * width,
                      is_dense=is_dense,
                      fields=[PointField(name=n, offset=4 * k, datatype=PointField.FLOAT32, count=1)
                              for k, n in enumerate("xyz")])
    msg.header.frame_id = frame_id
    msg.data = np.ascontiguousarray(points, dtype=np.float32).tobytes()
    return msg
