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
        self._pos = np.zeros(n)
        self._vel = np.zeros(n)
        self.dt = dt
        if cfg.type == "forward_command":
            msg = Float64MultiArray()
            msg.layout.dim = [MultiArrayDimension(label="joints", size=n, stride=n)]
            msg.data = _zeros(n)
            self._out = _view(msg.data)
            self.msg_type = Float64MultiArray
        elif cfg.type == "joint_trajectory":
            msg = JointTrajectory()
            msg.joint_names = self.joints
            point = JointTrajectoryPoint()
            point.positions = _zeros(n)
            point.velocities = _zeros(n)
            msg.points = [point]
            self._out = _view(point.positions)
            self._out_vel = _view(point.velocities)
            self.msg_type = JointTrajectory
        else:
            msg = JointState()
            msg.name = self.joints
            msg.position = _zeros(n)
            msg.velocity = _zeros(n)
            self._out = _view(msg.position)
            self._out_vel = _view(msg.velocity)
            self.msg_type = JointState
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
        pos, vel = self._pos, self._vel
        self.map.from_q(q_next, pos)
        np.clip(pos, self.lower, self.upper, out=pos)
        if hold:
            vel[:] = 0.0
        elif self.cfg.interface == "velocity" or self.cfg.type != "forward_command":
            self.map.from_q(q_now, vel)
            np.subtract(pos, vel, out=vel)
            if self.map.has_continuous:  # shortest way around for angles
                vel[self.map.cont_src] = np.remainder(vel[self.map.cont_src] + np.pi, 2 * np.pi) - np.pi
            vel /= self.dt
        if self.cfg.type == "forward_command":
            self._out[:] = vel if self.cfg.interface == "velocity" else pos
        else:
            self._out[:] = pos
            self._out_vel[:] = vel
            if stamp is not None and self.cfg.type == "joint_state":
                self.msg.header.stamp = stamp
        return self.msg

    def encode_hold(self, q_hold: np.ndarray, stamp=None):
        """The message that keeps the robot at ``q_hold`` (clipped into the limits), zero velocity."""
        return self.encode(q_hold, q_hold, stamp, hold=True)


def output_joints(cfg: OutputConfig, group_joints: list[str]) -> list[str]:
    return list(cfg.joints) if cfg.joints else list(group_joints)
