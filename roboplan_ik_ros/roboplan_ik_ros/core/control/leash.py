"""The leash of a moving target: a task target kept within a distance and an angle of its frame's actual pose,
so that a goal the arm cannot reach does not wind the target up (:class:`~.goal_followers.GoalSmoother`,
:class:`~.pose_shaper.PoseShaper`, :class:`~.twist_follower.TwistFollower`)."""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin


def _drop_outward(v: np.ndarray, u: np.ndarray, keep: float = 0.0) -> None:
    """In place: v's component along the unit vector u down to ``keep`` (>= 0) when it is larger."""
    along = float(v @ u)
    keep = max(keep, 0.0)
    if along > keep:
        v -= (along - keep) * u


def leash_target(T_world_target: pin.SE3, T_world_frame: pin.SE3, distance: float, angle: float,
                 linear_velocity: np.ndarray, angular_velocity: np.ndarray,
                 previous_frame: tuple[np.ndarray, np.ndarray] | None = None, dt: float = 0.0) -> pin.SE3 | None:
    """The target pulled back to within ``distance`` [m] / ``angle`` [rad] of the frame (None: it is
    within), dropping in place the target velocity [m/s, rad/s, world] that points further away than
    the frame itself moves (it would wind the target up again next tick). ``previous_frame``: the
    frame's (position, rotation matrix) ``dt`` [s] before, whose difference is the frame's own velocity
    (a target held at the leash then moves on with the frame, at the leash, instead of stopping and
    catching up again); None: the frame is taken as still (the whole outward velocity is dropped)."""
    p, R = T_world_frame.translation, T_world_frame.rotation
    d = T_world_target.translation - p  # [m] world frame, frame -> target
    dist = math.sqrt(float(d @ d))
    r_frame = pin.log3(R.T @ T_world_target.rotation)  # [rad] rotation vector frame -> target, frame axes
    rot = math.sqrt(float(r_frame @ r_frame))  # the same length in world axes
    if dist <= distance and rot <= angle:
        return None
    translation, rotation = T_world_target.translation, T_world_target.rotation
    moving = previous_frame is not None and dt > 0.0
    if dist > distance:
        u = d / dist
        translation = p + distance * u
        _drop_outward(linear_velocity, u, float((p - previous_frame[0]) @ u) / dt if moving else 0.0)
    if rot > angle:
        u = (R @ r_frame) / rot  # world axes
        rotation = pin.exp3(angle * u) @ R
        _drop_outward(angular_velocity, u, float(pin.log3(R @ previous_frame[1].T) @ u) / dt if moving else 0.0)
    return pin.SE3(rotation, translation)
