"""How a frame task's target follows its goal, once per control tick: :class:`GoalSmoother` (pin.SE3
targets, the ``node.goal_smoothing`` keys; ``jerk_limited`` through Ruckig, pose_shaper.py). Joint and point
goals are shaped by Ruckig too (target_shaper.py, line_of_sight_shaper.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from ..errors import Range
from ..keys import key
from .leash import leash_target
from .pose_shaper import PoseShaper

SMOOTHING = ("none", "low_pass", "max_speed", "max_acceleration", "jerk_limited")
# the docs rows of the linear and angular key pairs (one row, one doc each)
_CRUISE_SPEED = ("`max_speed`, `max_acceleration`, `jerk_limited`: the target's cruise speed; `jerk_limited` replans "
                 "the motion under way with a new value")
_ACCELERATION = "`max_acceleration`, `jerk_limited`: the target's acceleration and braking"
_JERK = ("`jerk_limited`: the target's jerk (the defaults and the shipped configs: a 20 ms ramp to the acceleration, "
         "1.4 % longer to the goal than `max_acceleration` on panda.yaml's 20 cm step). Along the line from rest the "
         "TCP's speed, acceleration and jerk stay within the linear limits in m/s whatever the direction; a stream "
         "that turns may exceed them by up to √3 (the position's three coordinates share one limit)")
_LEASH = ("with `low_pass`, `max_speed`, `max_acceleration` or `jerk_limited` the task target never gets farther "
          "than this from where the frame actually is (its pose at the step's q; `.inf`: no leash). A goal the arm "
          "cannot reach (behind a barrier, past a joint limit, out of reach) does not wind the target up: when the "
          "goal changes, the target starts from the arm, so the arm neither waits for a far target to come back nor "
          "chases it at full speed and overshoots. The target's velocity away from the frame is dropped at the leash "
          "(`jerk_limited`: the held position or rotation comes to rest there and is replanned from it).")


@dataclass
class GoalSmoothingConfig:
    """How the task target follows a new goal: at once, by a first-order low-pass, at a bounded speed,
    at a bounded speed and acceleration, braking to arrive at rest, or at a bounded speed, acceleration and
    jerk (Ruckig's time-optimal trajectory: a straight line and a fixed axis, arriving together at rest).
    The ``node.goal_smoothing`` keys, each declared once (core/keys.py: YAML check, runtime parameter, docs row)."""

    type: str = key(
        "jerk_limited", choices=SMOOTHING, runtime=True,
        doc="How frame and `relative_frame` pose goals reach their task: `none`, `low_pass` (`time_constant`), "
            "`max_speed` (`max_linear_speed`, `max_angular_speed`), `max_acceleration` (also "
            "`max_linear_acceleration`, `max_angular_acceleration`): the task target moves toward a new goal as a "
            "second-order reference that accelerates, cruises and brakes to arrive *at rest*, so a step goal or a "
            "fast-dragged marker settles without overshoot; or `jerk_limited` (also `max_linear_jerk`, "
            "`max_angular_jerk`): Ruckig's time-optimal jerk-limited trajectory, the TCP along the straight line "
            "and the orientation about the fixed axis to the goal, phase-synchronized (both arrive together, at "
            "rest, without overshoot), a goal that comes while the target moves continuing from that motion (the "
            "shipped configs; [goal shaping](#goal-shaping)). With an acceleration limit a type other than "
            "`max_acceleration` or `jerk_limited` is accepted with a configure note. Joint, configuration, look_at "
            "and com goals are shaped by Ruckig whatever this type")
    time_constant: float = key(0.1, range=Range(0.0, 60.0, lo_open=True, unit="s"),
                               doc="`low_pass`: first-order time constant of the target", runtime=True)
    max_linear_speed: float = key(0.5, range=Range(0.0, 100.0, lo_open=True, unit="m/s"),
                                  doc=_CRUISE_SPEED, runtime=True)
    max_angular_speed: float = key(1.5, range=Range(0.0, 100.0, lo_open=True, unit="rad/s"),
                                   doc=_CRUISE_SPEED, runtime=True)
    max_linear_acceleration: float = key(1.0, range=Range(lo_open=True, unit="m/s^2"), doc=_ACCELERATION)
    max_angular_acceleration: float = key(6.0, range=Range(lo_open=True, unit="rad/s^2"), doc=_ACCELERATION)
    max_linear_jerk: float = key(50.0, range=Range(lo_open=True, unit="m/s^3"), doc=_JERK)
    max_angular_jerk: float = key(300.0, range=Range(lo_open=True, unit="rad/s^3"), doc=_JERK)
    leash_distance: float = key(0.05, range=Range(lo_open=True, unit="m", inf_ok=True), doc=_LEASH)
    leash_angle: float = key(0.35, range=Range(lo_open=True, unit="rad", inf_ok=True), doc=_LEASH)

def braking_speed(distance, speed_max, accel, dt):
    """The speed [units/s] that still stops within ``distance`` decelerating at ``accel``, at most
    ``speed_max``: the discrete braking law ``(sqrt(2 a dt^2 d) - a dt^2 / 2) / dt``, and the whole
    remaining distance in one step once it is shorter than ``a dt^2`` (numbers or arrays)."""
    alpha = accel * dt * dt
    brake = np.where(distance > alpha, np.sqrt(2.0 * alpha * distance) - 0.5 * alpha, distance) / dt
    return np.minimum(brake, speed_max)


def _braking_speed_scalar(distance: float, speed_max: float, accel: float, dt: float) -> float:
    """:func:`braking_speed` of one number, in plain floats (the same operations; the tick's smoother
    calls it twice a step, where numpy's per-call cost on a 0-d array dominated)."""
    alpha = accel * dt * dt
    brake = (math.sqrt(2.0 * alpha * distance) - 0.5 * alpha if distance > alpha else distance) / dt
    return min(brake, speed_max)


def _limit_change(v: np.ndarray, v_des: np.ndarray, max_change: float, dv: np.ndarray | None = None) -> None:
    """In place: v moves toward v_des by at most max_change (Euclidean); ``dv``: a scratch buffer of v's
    shape (None: allocated)."""
    dv = np.subtract(v_des, v, out=dv)
    n = math.sqrt(float(dv @ dv))  # what np.linalg.norm computes for a vector
    if n > max_change:
        dv *= max_change / n
    v += dv


def integrate_in_place(T: pin.SE3, linear_velocity: np.ndarray, angular_velocity: np.ndarray, dt: float,
                       R_buffer: np.ndarray, p_buffer: np.ndarray) -> None:
    """``T`` := (exp3(w dt) R, p + v dt) in place (w, v in world axes [rad/s, m/s]); without rotation
    (w = 0, exp3 = I) R stays as it is. ``R_buffer`` (3x3), ``p_buffer`` (3): scratch."""
    if angular_velocity.any():
        np.multiply(angular_velocity, dt, out=p_buffer)
        np.matmul(pin.exp3(p_buffer), T.rotation, out=R_buffer)
        T.rotation = R_buffer
    np.multiply(linear_velocity, dt, out=p_buffer)
    translation = T.translation  # a view into T
    translation += p_buffer


class GoalSmoother:
    """Moves the task target toward the latest goal once per control tick.

    ``none``: the target jumps to the goal. ``low_pass``: first order with ``time_constant`` (the
    position and the rotation, separately). ``max_speed``: straight line at most
    ``max_linear_speed`` [m/s], rotation about a fixed axis at most ``max_angular_speed`` [rad/s].
    ``max_acceleration``: as max_speed, and the target's linear and angular velocity [m/s, rad/s, world
    frame] change by at most ``max_linear_acceleration`` / ``max_angular_acceleration`` per second:
    it speeds up smoothly, brakes to arrive at the goal at rest (:func:`braking_speed`) and turns
    smoothly when a goal stream changes direction. An acceleration-bounded arm follows such a
    target without overshoot; a target that jumps, it overshoots by its braking distance.
    ``jerk_limited``: as max_acceleration, and the target's jerk bounded by ``max_linear_jerk`` /
    ``max_angular_jerk`` (:class:`~.pose_shaper.PoseShaper`, Ruckig: the time-optimal trajectory, position
    and rotation phase-synchronized); its limits are read at each goal and whenever they change.
    """

    _DONE = 1e-9  # [m] and [rad]: closer than this is "reached"

    def __init__(self, cfg: GoalSmoothingConfig) -> None:
        self.cfg = cfg
        self.target: pin.SE3 | None = None  # what the task tracks now
        self.goal: pin.SE3 | None = None
        self.moving = False
        self.linear_velocity = np.zeros(3)  # [m/s] of the target (max_acceleration)
        self.angular_velocity = np.zeros(3)  # [rad/s] of the target, world frame (max_acceleration)
        # scratch of the tick (max_acceleration): the step allocates only what pinocchio returns
        self._dp, self._r, self._v_des, self._w_des, self._dv = (np.zeros(3) for _ in range(5))
        self._R = np.eye(3)
        # jerk_limited: the shaper (made at the first step, which knows dt), whether it holds the target's motion
        # now (False after a reset, a take-over or a step of another type), and whether a goal is new to it
        self._shaper: PoseShaper | None = None
        self._shaped = False
        self._new_goal = False

    def reset(self, T: pin.SE3) -> None:
        """Target and goal := T (nothing to do until the next goal)."""
        self.target = T.copy()
        self.goal = T.copy()
        self.moving = False
        self._shaped = False
        self.linear_velocity.fill(0.0)
        self.angular_velocity.fill(0.0)

    def continue_from(self, T: pin.SE3, linear_velocity: np.ndarray, angular_velocity: np.ndarray) -> None:
        """Take over a target moving at the given velocities [m/s, rad/s, world frame] (e.g. from a twist
        stream): with max_acceleration the next goal is approached from that motion, without a jump."""
        self.target = T.copy()
        self.goal = T.copy()
        self.moving = False
        self._shaped = False
        self.linear_velocity[:] = linear_velocity
        self.angular_velocity[:] = angular_velocity

    def set_goal(self, T: pin.SE3) -> None:
        if not self.moving:  # jerk_limited: the shaper starts from the target's pose and velocity (e.g. a twist's)
            self._shaped = False
        self.goal = T.copy()
        if self.cfg.type == "none" or self.target is None:
            self.target = T.copy()
        self.moving = True
        self._new_goal = True

    def step(self, dt: float, T_world_frame: pin.SE3 | None = None) -> pin.SE3 | None:
        """Advance by ``dt`` [s]; returns the new target, or None when nothing changed.
        ``T_world_frame``: where the task's frame is now (the leash's anchor; None = no leash)."""
        if not self.moving:
            return None
        if self.cfg.type == "none":
            self.moving = False
            return self.target
        if self.cfg.type == "jerk_limited":
            return self._step_shaped(dt, T_world_frame)
        self._shaped = False
        if self.cfg.type == "max_acceleration":
            self._step_accelerated(dt)
        else:
            self._step_first_order(dt)
        if T_world_frame is not None and self.moving:
            self._leash(T_world_frame)
        return self.target

    def _step_shaped(self, dt: float, T_world_frame: pin.SE3 | None) -> pin.SE3 | None:
        """jerk_limited: the shaper takes over the target's pose and velocity when it does not hold them yet, is
        given the latest goal (one per tick however many came), the limits when they changed, and is stepped."""
        cfg, shaper = self.cfg, self._shaper
        linear = (cfg.max_linear_speed, cfg.max_linear_acceleration, cfg.max_linear_jerk)
        angular = (cfg.max_angular_speed, cfg.max_angular_acceleration, cfg.max_angular_jerk)
        if shaper is None:
            shaper = self._shaper = PoseShaper(dt, linear, angular)
        elif shaper.dt != dt:
            shaper.set_dt(dt)
        if not self._shaped:
            shaper.continue_from(self.target, self.linear_velocity, self.angular_velocity)
            self._shaped, self._new_goal = True, True
        if shaper.linear != linear or shaper.angular != angular:  # runtime parameters: replan from here
            shaper.set_limits(linear, angular)
        if self._new_goal:
            shaper.set_goal(self.goal)
            self._new_goal = False
        target = shaper.step(T_world_frame, cfg.leash_distance, cfg.leash_angle)
        self.linear_velocity[:] = shaper.linear_velocity
        self.angular_velocity[:] = shaper.angular_velocity
        if target is None or not shaper.moving:  # at rest at the goal
            self.reset(self.goal)
            self._shaped = True  # the shaper is at rest there too
            return self.target if target is not None else None
        self.target = target
        return target

    def _leash(self, T_world_frame: pin.SE3) -> None:
        leashed = leash_target(self.target, T_world_frame, self.cfg.leash_distance, self.cfg.leash_angle,
                               self.linear_velocity, self.angular_velocity)
        if leashed is not None:
            self.target = leashed

    def _step_first_order(self, dt: float) -> None:
        T, G = self.target, self.goal
        dp = G.translation - T.translation
        w = pin.log3(T.rotation.T @ G.rotation)  # in the target's frame
        dist, angle = float(np.linalg.norm(dp)), float(np.linalg.norm(w))
        if dist < self._DONE and angle < self._DONE:
            self.target = G.copy()
            self.moving = False
            return
        if self.cfg.type == "low_pass":
            a = 1.0 - math.exp(-dt / self.cfg.time_constant)
            sp = sr = a
        else:
            sp = min(1.0, self.cfg.max_linear_speed * dt / dist) if dist > 0 else 1.0
            sr = min(1.0, self.cfg.max_angular_speed * dt / angle) if angle > 0 else 1.0
        self.target = pin.SE3(T.rotation @ pin.exp3(sr * w), T.translation + sp * dp)

    def _step_accelerated(self, dt: float) -> None:
        cfg, T, G = self.cfg, self.target, self.goal
        v, w, v_des, w_des = self.linear_velocity, self.angular_velocity, self._v_des, self._w_des
        dp = np.subtract(G.translation, T.translation, out=self._dp)
        R = T.rotation
        r = np.matmul(R, pin.log3(R.T @ G.rotation), out=self._r)  # rotation vector to the goal, world frame
        dist, angle = math.sqrt(float(dp @ dp)), math.sqrt(float(r @ r))
        if dist > 0.0:
            np.multiply(dp, _braking_speed_scalar(dist, cfg.max_linear_speed, cfg.max_linear_acceleration, dt) / dist,
                        out=v_des)
        else:
            v_des.fill(0.0)
        if angle > 0.0:
            np.multiply(r, _braking_speed_scalar(angle, cfg.max_angular_speed, cfg.max_angular_acceleration, dt)
                        / angle, out=w_des)
        else:
            w_des.fill(0.0)
        _limit_change(v, v_des, cfg.max_linear_acceleration * dt, self._dv)
        _limit_change(w, w_des, cfg.max_angular_acceleration * dt, self._dv)
        if (dist < self._DONE and angle < self._DONE and float(v @ v) * dt * dt < self._DONE**2
                and float(w @ w) * dt * dt < self._DONE**2):
            self.reset(G)
            return
        integrate_in_place(T, v, w, dt, self._R, self._dp)  # the target is the smoother's own copy
