"""How a frame task's target pose moves to a new goal along Ruckig's time-optimal, jerk-limited trajectory, one
sample per control tick (:class:`PoseShaper`: ``node.goal_smoothing.type: jerk_limited``).

The target is six coordinates of one :class:`~.target_shaper.TargetShaper`: its position p [m, world] and a
rotation vector r [rad, world axes] from an anchor orientation R0, the target's rotation being ``exp3(r) R0``.
Each goal re-anchors R0 at the target's rotation now (r := 0, its angular velocity and acceleration carried
over exactly: at r = 0, dr/dt is the angular velocity), so the goal's rotation vector is the rotation from the
target to the goal. The position's limits bound its speed, acceleration and jerk in m/s, /s^2, /s^3 along the straight line
from rest to the goal, the rotation vector's in rad/s, /s^2, /s^3 about the fixed axis to it, and the two are
phase-synchronized (Ruckig falls back to time synchronization where the two profiles cannot be scaled copies of
each other): from rest the TCP moves along the straight line to the goal while the orientation turns about the
fixed axis to it, both arriving together, at rest, without overshoot, in the least time the limits allow.
A goal that arrives while the target moves (a stream of goals) is approached from that motion: no jump.
Away from r = 0 the angular velocity is the SO(3) left Jacobian times dr/dt (pinocchio's Jexp3 transposed):
exactly dr/dt along a fixed axis (a step), within |r| |dr/dt| of it otherwise (a stream re-anchors every goal,
so r stays one goal's turn).

The leash keeps the target within ``leash_distance`` / ``leash_angle`` of the frame's actual pose (as
:func:`~.leash.leash_target` does for the other smoothing types): the target's velocity and acceleration
are dropped there (the block the leash holds comes to rest) and the trajectory is replanned from the leash, so
a goal the arm cannot reach does not wind the target up. A tick costs one ``Ruckig.update`` (a sample, ~1-2 us, or a replan when a goal
came or the leash acted, ~10-20 us for six coordinates) and one exp3 and Jexp3.
"""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin

from .leash import leash_target
from .target_shaper import TargetShaper, checked_limits


def _left_jacobian(r: np.ndarray) -> np.ndarray:
    """The SO(3) left Jacobian at the rotation vector r: the world angular velocity of exp3(r) is J dr/dt."""
    return pin.Jexp3(r).T


class PoseShaper:
    """A frame target (pin.SE3, world) moved to its goal by Ruckig; see the module docstring.

    Args:
        dt: the control period [s] (one :meth:`step` per period).
        linear: (v_max, a_max, j_max) of the position [m/s, m/s^2, m/s^3] along the line to the goal (a stream
            that turns: up to sqrt(3) of them in norm, see :meth:`_plan`).
        angular: (v_max, a_max, j_max) of the rotation [rad/s, rad/s^2, rad/s^3] about the axis to the goal.
    """

    def __init__(self, dt: float, linear, angular) -> None:
        self.linear = tuple(float(x) for x in linear)
        self.angular = tuple(float(x) for x in angular)
        v, a, j = (np.repeat([self.linear[k], self.angular[k]], 3) for k in range(3))
        self._shaper = TargetShaper(6, dt, v, a, j)  # per-coordinate limits set per goal (set_goal)
        self._R0 = np.eye(3)  # the anchor orientation: the target's rotation is exp3(x[3:]) R0
        self.target = pin.SE3.Identity()  # the target now (this object is updated in place)
        self.goal = pin.SE3.Identity()
        self.linear_velocity = np.zeros(3)  # [m/s] of the target, world
        self.angular_velocity = np.zeros(3)  # [rad/s] of the target, world
        self.leashed = False  # the last step pulled the target back to its leash
        self._x = np.zeros(6)  # the goal's / a new start's coordinates (scratch)
        self._d, self._scale, self._limit = np.zeros(6), np.ones(6), np.zeros((3, 6))  # scratch of _plan
        self._set_block_limits()

    @property
    def moving(self) -> bool:
        return self._shaper.moving

    @property
    def dt(self) -> float:
        return self._shaper.dt

    def set_dt(self, dt: float) -> None:
        """A new control period [s]: the state and the goal are kept, the plan is redone."""
        self._shaper.set_dt(dt)

    def set_limits(self, linear, angular) -> None:
        """New (v_max, a_max, j_max) of the position and the rotation; a moving target replans from where it is.
        Raises ValueError (the limits unchanged) for limits no shaper takes."""
        previous = self.linear, self.angular
        self.linear = tuple(float(x) for x in linear)
        self.angular = tuple(float(x) for x in angular)
        try:
            self._set_block_limits()
        except ValueError:
            self.linear, self.angular = previous
            raise
        if self.moving:
            self.set_goal(self.goal)

    def _set_block_limits(self) -> None:
        """The per-coordinate limits of the two blocks, checked (ValueError naming the limit that no shaper takes):
        _plan hands them, scaled by (0, 1], to the shaper unchecked."""
        self._v_max, self._a_max, self._j_max = checked_limits(
            6, *(np.repeat([self.linear[k], self.angular[k]], 3) for k in range(3)))

    def reset(self, T: pin.SE3) -> None:
        """Target and goal := T, at rest."""
        self.continue_from(T)

    def continue_from(self, T: pin.SE3, linear_velocity=None, angular_velocity=None) -> None:
        """Take over a target at T moving at these velocities [m/s, rad/s, world] (None: at rest), e.g. from a
        twist stream: the next goal is approached from that motion, without a jump. Goal := T."""
        self._R0[:] = T.rotation
        self.target.rotation = T.rotation
        self.target.translation = T.translation
        self.goal.rotation = T.rotation
        self.goal.translation = T.translation
        x = self._x
        x[:3] = T.translation
        x[3:] = 0.0
        velocity = np.zeros(6)
        if linear_velocity is not None:
            velocity[:3] = linear_velocity
        if angular_velocity is not None:
            velocity[3:] = angular_velocity
        self.linear_velocity[:] = velocity[:3]
        self.angular_velocity[:] = velocity[3:]
        self._shaper.continue_from(x, velocity)
        self.leashed = False

    def _reanchor(self, acceleration: np.ndarray | None = None) -> None:
        """R0 := the target's rotation, r := 0, keeping the world velocity and acceleration (``acceleration``:
        6, world; None: the shaper's own, carried to the world by the left Jacobian)."""
        s = self._shaper
        if acceleration is None:
            acceleration = s.acceleration  # a new array
            r = s.position[3:]
            if r.any():
                acceleration[3:] = _left_jacobian(r) @ acceleration[3:]
        self._R0[:] = self.target.rotation
        x = self._x
        x[:3] = self.target.translation
        x[3:] = 0.0
        velocity = np.concatenate((self.linear_velocity, self.angular_velocity))
        s.continue_from(x, velocity, acceleration)  # its goal := x until _plan gives it the goal in this anchor

    def set_goal(self, T_goal: pin.SE3) -> None:
        """A new goal (world): the target goes on from where it is and how it moves."""
        self.goal.rotation = T_goal.rotation
        self.goal.translation = T_goal.translation
        self._reanchor()
        self._plan()

    def _plan(self) -> None:
        """Ruckig's goal := self.goal in the coordinates of the current anchor. Each block's three coordinates
        share one limit: its limit times ``max(|d|_inf / |d|, |v|_inf / |v|)`` (d to the goal, v now): from
        rest the line's limiting coordinate, phase-synchronized, moves the block at exactly its limit along the
        line. (Scaling each coordinate by its own share of the direction, as a Euclidean TargetShaper does,
        starves the coordinates a turning stream brakes: on a 50 Hz circle of 8 cm the target lagged twice as
        far and surged to 1.4x the stream's speed.) A stream that turns may exceed the norm by up to sqrt(3)."""
        s, x, scale = self._shaper, self._x, self._scale
        x[:3] = self.goal.translation
        x[3:] = pin.log3(self.goal.rotation @ self._R0.T)  # world axes: goal = exp3(x[3:]) R0
        d = np.subtract(x, s.position, out=self._d)
        for block in (slice(0, 3), slice(3, 6)):
            scale[block] = max(_axis_share(d[block]), _axis_share(s.velocity[block])) or 1.0
        v, a, j = self._limit
        s.set_limits(v_max=np.multiply(self._v_max, scale, out=v), a_max=np.multiply(self._a_max, scale, out=a),
                     j_max=np.multiply(self._j_max, scale, out=j), valid=True)  # checked limits x (0, 1]
        s.set_goal(x)

    def step(self, T_world_frame: pin.SE3 | None = None, leash_distance: float = math.inf,
             leash_angle: float = math.inf) -> pin.SE3 | None:
        """Advance one period; the new target (:attr:`target`, updated in place), or None when it is at rest at
        its goal. ``T_world_frame``: where the task's frame is now (the leash's anchor; None: no leash)."""
        s = self._shaper
        if not s.moving:
            return None
        x = s.step()
        self.leashed = False
        if not s.moving:  # arrived: exactly the goal, at rest, anchored there
            self.reset(self.goal)
            return self.target
        r = x[3:]
        self.target.translation = x[:3]
        self.linear_velocity[:] = s.velocity[:3]
        if r.any():
            self.target.rotation = pin.exp3(r) @ self._R0
            np.matmul(_left_jacobian(r), s.velocity[3:], out=self.angular_velocity)
        else:
            self.target.rotation = self._R0
            self.angular_velocity[:] = s.velocity[3:]
        if T_world_frame is not None:
            self._leash(T_world_frame, leash_distance, leash_angle)
        return self.target

    def _leash(self, T_world_frame: pin.SE3, distance: float, angle: float) -> None:
        """The target pulled back to within ``distance`` [m] / ``angle`` [rad] of the frame
        (:func:`~.leash.leash_target`) and, in the block (position, rotation) the leash holds, brought
        to rest there and replanned from it. (Dropping only the velocity away from the frame, as the other types
        do, is not enough here: the replanned coordinates do not head straight for the goal, and a blocked
        target drifted along the leash at 0.1 m/s.)"""
        T = self.target
        leashed = leash_target(T, T_world_frame, distance, angle, self.linear_velocity, self.angular_velocity)
        if leashed is None:
            return
        acceleration = self._shaper.acceleration  # a new array
        r = self._shaper.position[3:]
        if r.any():
            acceleration[3:] = _left_jacobian(r) @ acceleration[3:]
        if not np.array_equal(leashed.translation, T.translation):
            self.linear_velocity.fill(0.0)
            acceleration[:3] = 0.0
        if not np.array_equal(leashed.rotation, T.rotation):
            self.angular_velocity.fill(0.0)
            acceleration[3:] = 0.0
        T.rotation = leashed.rotation
        T.translation = leashed.translation
        self._reanchor(acceleration)
        self._plan()
        self.leashed = True


def _axis_share(v: np.ndarray) -> float:
    """|v|_inf / |v|, the largest coordinate's share of the vector's length: in [1/sqrt(3), 1], 0 for v = 0."""
    norm = math.sqrt(float(v @ v))
    return float(np.abs(v).max()) / norm if norm > 0.0 else 0.0
