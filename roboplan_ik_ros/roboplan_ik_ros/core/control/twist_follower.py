"""How a frame task's target follows a twist stream, once per control tick: :class:`TwistFollower`.

A twist command is the velocity of the task frame's origin and the angular velocity about it,
both in the world (model root) frame; the caller rotates a twist expressed in another frame into
the world frame when it arrives. Each tick the target's velocity moves toward the latest command
by at most ``max_linear_acceleration`` / ``max_angular_acceleration`` times the period (so the
stream starts and stops acceleration-bounded), the target integrates that velocity, and a leash
keeps it within ``leash_distance`` / ``leash_angle`` of where the frame actually is (a blocked
motion does not wind the target up; the arm does not lurch when released).

**Command timeout**: a command is followed until ``command_timeout`` after it was issued; then the
commanded velocity is zero and the target brakes at the acceleration bounds. "Issued" is the
arrival time, made earlier by the command's age on arrival when the caller knows it (its
``header.stamp``, when the clocks agree: see the node).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from ..errors import InvalidInputError, Range
from ..keys import check_declared, key
from .goal_followers import _limit_change, integrate_in_place
from .leash import leash_target

COMMAND_IN_TYPES = ("unitless", "speed_units")
# the docs rows of the key pairs (one row, one doc each)
_TWIST_SPEED = "the most a twist moves the task frame's origin and turns about it (unitless 1.0)"
_TWIST_ACCELERATION = ("how fast a streamed target's velocity changes (a stream starts, changes and stops within "
                       "this)")
_TWIST_LEASH = "a twist's target stays this close to the frame's actual pose (no wind-up when blocked)"
_SINGULARITY_RULE = "`1 <= lower < hard`"
_SINGULARITY = ("condition number of the task frame's Jacobian at which a twist toward a singularity starts slowing "
                "down, and where it reaches zero (MoveIt Servo's values); a twist away is never slowed")


@dataclass
class StreamingConfig:
    """The ``node.streaming`` keys, each declared once (core/keys.py: YAML check, runtime parameter, docs row)."""

    command_in_type: str = key(
        "unitless", choices=COMMAND_IN_TYPES, runtime=True,
        doc="twists and jogs: `unitless` (components in [-1, 1], outside refused, times the max speeds) or "
            "`speed_units` (m/s, rad/s, clipped to the max speeds, direction kept). See "
            "[Streaming inputs](../README.md#streaming-inputs-twist-command-timeout-pause)")
    max_linear_speed: float = key(0.25, range=Range(0.0, 10.0, lo_open=True, unit="m/s"), doc=_TWIST_SPEED,
                                  runtime=True)
    max_angular_speed: float = key(1.0, range=Range(0.0, 100.0, lo_open=True, unit="rad/s"), doc=_TWIST_SPEED,
                                   runtime=True)
    max_linear_acceleration: float = key(1.0, range=Range(lo_open=True, unit="m/s^2"), doc=_TWIST_ACCELERATION)
    max_angular_acceleration: float = key(4.0, range=Range(lo_open=True, unit="rad/s^2"), doc=_TWIST_ACCELERATION)
    speed_override: float = key(1.0, range=Range(0.0, 1.0), doc="scales every twist and jog", runtime=True)
    command_timeout: float = key(
        0.1, range=Range(0.0, 10.0, lo_open=True, unit="s"), runtime=True,
        doc="a twist or jog stream not renewed for this long brakes to a stop (status `command_timeout`); a message "
            "already older on arrival is refused")
    stamp_tolerance: float = key(
        0.5, range=Range(lo_open=True, unit="s"),
        doc="a nonzero `header.stamp` counts (the command's age) when it agrees with the node's clock within this; "
            "else ignored with a warning")
    leash_distance: float = key(0.02, range=Range(lo_open=True, unit="m"), doc=_TWIST_LEASH)
    leash_angle: float = key(0.1, range=Range(lo_open=True, unit="rad"), doc=_TWIST_LEASH)
    max_joint_speed: float = key(0.5, range=Range(lo_open=True, unit="rad/s or m/s"),
                                 doc="joint jogs: unitless 1.0, and the clip of `speed_units` jogs")
    joint_leash: float = key(0.05, range=Range(lo_open=True, unit="rad or m"),
                             doc="a jogged joint's target stays this close to the joint")
    # each > 0 alone, and 1 <= lower < hard together (check_singularity_thresholds): the docs state the rule
    lower_singularity_threshold: float = key(17.0, range=Range(lo_open=True), rule=_SINGULARITY_RULE,
                                             doc=_SINGULARITY)
    hard_stop_singularity_threshold: float = key(30.0, range=Range(lo_open=True), rule=_SINGULARITY_RULE,
                                                 doc=_SINGULARITY)

def check_streaming_config(cfg: StreamingConfig, path: str = "node.streaming") -> None:
    """The declared choices and ranges of the ``node.streaming`` keys, and the singularity thresholds' order."""
    check_declared(cfg, path)
    check_singularity_thresholds(cfg, path)


def check_singularity_thresholds(cfg: StreamingConfig, path: str = "node.streaming") -> None:
    """The one rule between two streaming keys: 1 <= lower_singularity_threshold < hard_stop_singularity_threshold."""
    if not cfg.hard_stop_singularity_threshold > cfg.lower_singularity_threshold >= 1.0:
        raise InvalidInputError(f"{path}.hard_stop_singularity_threshold: expected 1 <= lower_singularity_threshold "
                                f"< hard_stop_singularity_threshold, got {cfg.lower_singularity_threshold!r} and "
                                f"{cfg.hard_stop_singularity_threshold!r}")


def scale_twist(cfg: StreamingConfig, linear: np.ndarray, angular: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The commanded (linear [m/s], angular [rad/s]) of a raw twist under ``command_in_type``, the
    max speeds and ``speed_override``; raise InvalidInputError on non-finite or (unitless) out of
    [-1, 1] components. The direction is kept when a speed is clipped to its maximum."""
    linear, angular = np.asarray(linear, dtype=float), np.asarray(angular, dtype=float)
    if not (np.isfinite(linear).all() and np.isfinite(angular).all()):
        raise InvalidInputError(f"non-finite twist: linear {linear.tolist()}, angular {angular.tolist()}")
    if cfg.command_in_type == "unitless":
        if np.abs(linear).max() > 1.0 or np.abs(angular).max() > 1.0:
            raise InvalidInputError(f"command_in_type unitless: components must be in [-1, 1], got linear "
                                    f"{linear.tolist()}, angular {angular.tolist()}")
        v, w = linear * cfg.max_linear_speed, angular * cfg.max_angular_speed
    else:
        v, w = linear.copy(), angular.copy()
    for vec, vmax in ((v, cfg.max_linear_speed), (w, cfg.max_angular_speed)):
        n = float(np.linalg.norm(vec))
        if n > vmax:
            vec *= vmax / n
    return v * cfg.speed_override, w * cfg.speed_override


def scale_joint_velocities(cfg: StreamingConfig, velocities: np.ndarray) -> np.ndarray:
    """Joint jog velocities [rad/s or m/s] under ``command_in_type``, ``max_joint_speed`` and
    ``speed_override`` (a vector over more than one joint is scaled as a whole: its direction is kept);
    raise InvalidInputError on non-finite or (unitless) out of [-1, 1] values."""
    dq = np.asarray(velocities, dtype=float)
    if not np.isfinite(dq).all():
        raise InvalidInputError(f"non-finite joint velocities {dq.tolist()}")
    if cfg.command_in_type == "unitless":
        if np.abs(dq).max(initial=0.0) > 1.0:
            raise InvalidInputError(f"command_in_type unitless: velocities must be in [-1, 1], got {dq.tolist()}")
        dq = dq * cfg.max_joint_speed
    else:
        peak = float(np.abs(dq).max(initial=0.0))
        dq = dq * (cfg.max_joint_speed / peak) if peak > cfg.max_joint_speed else dq.copy()
    return dq * cfg.speed_override


class TwistFollower:
    """The target of one frame task under a twist stream (see the module docstring).

    :meth:`start` hands it the target (and the target's velocity) to continue from; :meth:`command`
    sets the latest twist; :meth:`step` advances one tick. It is :attr:`streaming` from ``start``
    until the target is at rest after its last command timed out (or :meth:`stop`)."""

    _REST = 1e-12  # [m/s]^2, [rad/s]^2: "still"

    def __init__(self, cfg: StreamingConfig) -> None:
        self.cfg = cfg
        self.target: pin.SE3 | None = None
        self.linear_velocity = np.zeros(3)  # [m/s] of the target, world frame
        self.angular_velocity = np.zeros(3)  # [rad/s] of the target, world frame
        self._v_cmd = np.zeros(3)  # the latest command (scaled), world frame
        self._w_cmd = np.zeros(3)
        self._v_des = np.zeros(3)  # what this tick accelerates toward
        self._w_des = np.zeros(3)
        self.issued = -math.inf  # [s] when the latest command was issued (caller's clock)
        self.streaming = False
        self.timed_out = False  # the latest command is older than command_timeout
        self.leashed = False  # the last step pulled the target back to the leash
        self._p_previous = np.zeros(3)  # [m] the leash's anchor (the frame) at the previous step, world frame
        self._R_previous = np.eye(3)
        self._anchored = False  # _p_previous/_R_previous hold the previous step's anchor
        self._dv, self._p_step, self._R_step = np.zeros(3), np.zeros(3), np.eye(3)  # scratch of the tick

    def start(self, T: pin.SE3, linear_velocity=None, angular_velocity=None) -> None:
        """Continue from target ``T`` moving at the given velocities (world frame; None = at rest)."""
        self.target = T.copy()
        self.linear_velocity[:] = 0.0 if linear_velocity is None else linear_velocity
        self.angular_velocity[:] = 0.0 if angular_velocity is None else angular_velocity
        self.streaming = True
        self._anchored = False

    def stop(self) -> None:
        """Forget the stream (the caller takes the target and its velocity over)."""
        self.streaming = False
        self._v_cmd.fill(0.0)
        self._w_cmd.fill(0.0)
        self.issued = -math.inf

    def command(self, linear: np.ndarray, angular: np.ndarray, now: float, age: float = 0.0) -> None:
        """The latest twist (already scaled, world frame), received at ``now`` [s] and already ``age``
        [s] old then (>= 0)."""
        self._v_cmd[:] = linear
        self._w_cmd[:] = angular
        self.issued = now - max(0.0, age)
        self.timed_out = False

    def command_age(self, now: float) -> float:
        """[s] since the latest command was issued (inf: none)."""
        return now - self.issued

    @property
    def commanded(self) -> tuple[np.ndarray, np.ndarray]:
        """The latest command (linear [m/s], angular [rad/s], world frame)."""
        return self._v_cmd, self._w_cmd

    def step(self, dt: float, now: float, T_world_frame: pin.SE3 | None = None,
             speed_scale: float = 1.0) -> pin.SE3 | None:
        """Advance by ``dt`` [s] at time ``now``; the new target, or None when not streaming.
        ``T_world_frame``: where the task's frame is now (the leash's anchor; None = no leash).
        ``speed_scale`` in [0, 1]: the command is followed this much (e.g. near a singularity)."""
        if not self.streaming:
            return None
        cfg = self.cfg
        self.timed_out = self.command_age(now) > cfg.command_timeout
        if self.timed_out:
            self._v_des.fill(0.0)
            self._w_des.fill(0.0)
        else:
            np.multiply(self._v_cmd, speed_scale, out=self._v_des)
            np.multiply(self._w_cmd, speed_scale, out=self._w_des)
        v, w = self.linear_velocity, self.angular_velocity
        _limit_change(v, self._v_des, cfg.max_linear_acceleration * dt, self._dv)
        _limit_change(w, self._w_des, cfg.max_angular_acceleration * dt, self._dv)
        # the target is this follower's own copy (start copies it, the leash makes a new one)
        integrate_in_place(self.target, v, w, dt, self._R_step, self._p_step)
        self.leashed = False
        if T_world_frame is not None:
            self._leash(T_world_frame, dt)
            self._p_previous[:] = T_world_frame.translation
            self._R_previous[:] = T_world_frame.rotation
            self._anchored = True
        if self.timed_out and float(v @ v) < self._REST and float(w @ w) < self._REST:
            v.fill(0.0)
            w.fill(0.0)
            self.streaming = False
        return self.target

    def _leash(self, T_world_frame: pin.SE3, dt: float) -> None:
        """As GoalSmoother's leash (:func:`~.leash.leash_target`), keeping the frame's own
        velocity: a twist the arm follows slower than asked (a velocity or acceleration bound) holds
        its target at the leash, moving with the frame, at every step."""
        previous = (self._p_previous, self._R_previous) if self._anchored else None
        leashed = leash_target(self.target, T_world_frame, self.cfg.leash_distance, self.cfg.leash_angle,
                               self.linear_velocity, self.angular_velocity, previous, dt)
        if leashed is not None:
            self.target = leashed
            self.leashed = True
