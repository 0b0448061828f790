"""Command messages for ros2_control and friends, one encoder per configured output.

Each encoder owns one preallocated message and rewrites its arrays in place every tick (the
message's ``array('d')`` buffers are viewed as numpy arrays), so a tick allocates no message.
Positions are always clipped into the joint limits here, the last line of defence: the node
never publishes a position outside them.
"""

from __future__ import annotations

from array import array

import numpy as np
from builtin_interfaces.msg import Duration as DurationMsg
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from ..core.model.scene import Scene
from .node_config import OutputConfig
from .message_conversions import JointMap


def _zeros(n: int) -> array:
    return array("d", bytes(8 * n))


def _view(buf: array) -> np.ndarray:
    """A numpy view on an ``array('d')`` (writes go straight into the message)."""
    return np.frombuffer(buf, dtype=np.float64) if len(buf) else np.zeros(0)


class CommandEncoder:
    """Fills the message of one :class:`OutputConfig` from (q_next, dq, dt).

    Args:
        joints: output joint order (the config's ``joints`` or the group's joints).
    """

    def __init__(self, cfg: OutputConfig, scene: Scene, joints: list[str], dt: float) -> None:
        self.cfg = cfg
        self.joints = list(joints)
        self.map = JointMap(scene, self.joints)
        n = len(self.joints)
        # position limits per output joint (inf for unbounded/continuous)
        self.lower = scene.q_min_v[self.map.v_idx].copy()
        self.upper = scene.q_max_v[self.map.v_idx].copy()
        self.dt = dt
        if cfg.type == "forward_command":
            msg = Float64MultiArray()
            msg.layout.dim = [MultiArrayDimension(label="joints", size=n, stride=n)]
            msg.data = _zeros(n)
            self.msg_type = Float64MultiArray
            data = _view(msg.data)
            # the command is computed in the message's own buffer: no copy per tick
            velocity = cfg.interface == "velocity"
            self._pos, self._vel = (np.zeros(n), data) if velocity else (data, np.zeros(n))
        elif cfg.type == "joint_trajectory":
            msg = JointTrajectory()
            msg.joint_names = self.joints
            point = JointTrajectoryPoint()
            point.positions = _zeros(n)
            point.velocities = _zeros(n)
            msg.points = [point]
            self.msg_type = JointTrajectory
            self._pos, self._vel = _view(point.positions), _view(point.velocities)
            velocity = True
        else:
            msg = JointState()
            msg.name = self.joints
            msg.position = _zeros(n)
            msg.velocity = _zeros(n)
            self.msg_type = JointState
            self._pos, self._vel = _view(msg.position), _view(msg.velocity)
            velocity = True
        self._needs_velocity = velocity  # velocities are computed (velocity interface, trajectory, joint_state)
        self._stamped = cfg.type == "joint_state"
        self.msg = msg
        self.set_dt(dt)

    def set_dt(self, dt: float) -> None:
        """Control period [s] (velocities and the trajectory point's time_from_start)."""
        self.dt = dt
        if self.cfg.type == "joint_trajectory":
            t = self.cfg.time_from_start or dt
            sec = int(t)
            self.msg.points[0].time_from_start = DurationMsg(sec=sec, nanosec=int(round((t - sec) * 1e9)))

    def encode(self, q_next: np.ndarray, q_now: np.ndarray, stamp=None, *, hold: bool = False):
        """The message for a step from ``q_now`` to ``q_next`` (full nq) over one period.

        Positions are clipped into the limits; velocities are (clipped position - current) / dt,
        so a velocity command never leads outside the limits either. ``stamp``
        (builtin_interfaces/Time) goes into the header of JointState outputs.
        """
        pos, vel, m = self._pos, self._vel, self.map
        m.from_q(q_next, pos)
        np.maximum(pos, self.lower, out=pos)  # np.clip's result in two cheaper calls (lower <= upper)
        np.minimum(pos, self.upper, out=pos)
        if hold:
            vel.fill(0.0)
        elif self._needs_velocity:
            m.from_q(q_now, vel)
            np.subtract(pos, vel, out=vel)
            if m.has_continuous:  # shortest way around for angles
                vel[m.cont_src] = np.remainder(vel[m.cont_src] + np.pi, 2 * np.pi) - np.pi
            vel /= self.dt
        if stamp is not None and self._stamped:
            self.msg.header.stamp = stamp
        return self.msg

    def encode_hold(self, q_hold: np.ndarray, stamp=None):
        """The message that keeps the robot at ``q_hold`` (clipped into the limits), zero velocity."""
        return self.encode(q_hold, q_hold, stamp, hold=True)


def output_joints(cfg: OutputConfig, group_joints: list[str]) -> list[str]:
    return list(cfg.joints) if cfg.joints else list(group_joints)
