"""How a look_at task's point moves to a new goal: the line of sight turns, jerk-limited, about a fixed axis.

A look_at goal is a direction more than a point: a camera 1 m from a part turns the same 90 deg whether the
new point is 0.3 m or 3 m away. So the target point is shaped in coordinates about an eye ``e`` (the frame's
origin when the goal arrived at rest): its direction ``u = exp3(phi) b`` (b: the direction when the goal
arrived, phi a rotation vector shaped by a :class:`~.target_shaper.TargetShaper` at the turn limits [rad/s,
rad/s^2, rad/s^3], Euclidean: the turn rate whatever its axis) and its range ``r`` (shaped at the same limits
times the larger of the two ranges, in m). From rest phi moves along a line: the axis turns about a fixed
axis, at most the turn limits, and arrives at rest. A goal that arrives while the line of sight turns
re-anchors b at the current direction with phi's rate carried over (``phi' = Jl(phi) phi'``: the world angular
velocity of the direction), so a stream of goals turns it without a jump.

The leash: the target's direction stays within an angle of the axis's (seen from e), so an axis that cannot
turn further (a joint limit, a barrier) does not wind the target up.
"""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin

from .target_shaper import TargetShaper

_MIN_RANGE = 1e-6  # [m] a point closer than this to the eye gives no direction


class LineOfSightShaper:
    """A look_at target point (world, [m]) moved to its goal by turning its line of sight from the eye.

    Args:
        dt: the control period [s].
        turn_speed, turn_acceleration, turn_jerk: the line of sight's limits [rad/s, rad/s^2, rad/s^3] (jerk
            may be inf).
        leash: None, or the largest angle [rad] between the target's direction and the axis's (from the eye).
    """

    def __init__(self, dt: float, turn_speed: float, turn_acceleration: float, turn_jerk: float,
                 leash: float | None = None) -> None:
        self.limits = (float(turn_speed), float(turn_acceleration), float(turn_jerk))
        self._turn = TargetShaper(3, dt, *self.limits, euclidean=True)
        self._range = TargetShaper(1, dt, *self.limits)
        self.leash = leash
        self.eye = np.zeros(3)  # [m] world
        self._base = np.array([0.0, 0.0, 1.0])  # b: the direction at phi = 0
        self.position = np.zeros(3)  # the target point now [m] world
        self.goal = np.zeros(3)
        self.leashed = False
        self._u = np.zeros(3)

    @property
    def moving(self) -> bool:
        return self._turn.moving or self._range.moving

    def set_dt(self, dt: float) -> None:
        self._turn.set_dt(dt)
        self._range.set_dt(dt)

    def reset(self, point, eye) -> None:
        """Target and goal := point, seen from ``eye`` (the frame's origin), at rest."""
        self.eye[:] = eye
        self.position[:] = point
        self.goal[:] = point
        d = self.position - self.eye
        r = float(np.linalg.norm(d))
        self._base[:] = d / r if r > _MIN_RANGE else (0.0, 0.0, 1.0)
        self._turn.reset(np.zeros(3))
        self._range.reset([r])
        self.leashed = False

    def set_goal(self, point, eye) -> None:
        """A new goal point; ``eye``: the frame's origin now (used when the target is at rest: a motion keeps
        its eye)."""
        if not self.moving:
            self.reset(self.position, eye)
        self._reanchor()
        self.goal[:] = point
        r0, r1 = float(self._range.position[0]), float(np.linalg.norm(self.goal - self.eye))
        scale = max(r0, r1, _MIN_RANGE)  # the range changes no faster than the point turns at that distance
        speed, acceleration, jerk = self.limits
        self._range.set_limits(speed * scale, acceleration * scale, jerk * scale, valid=True)  # checked x range > 0
        self._range.set_goal([r1])
        self._aim_turn()

    def _aim_turn(self) -> None:
        """phi's goal: the rotation vector turning the base b onto the goal's direction (seen from the eye)."""
        d = self.goal - self.eye
        r1 = float(np.linalg.norm(d))
        phi = np.zeros(3)
        if r1 > _MIN_RANGE:
            b = self._base
            axis = np.cross(b, d / r1)
            s, c = float(np.linalg.norm(axis)), float(b @ d) / r1
            if s > 1e-12:
                phi = axis * (math.atan2(s, c) / s)
            elif c < 0.0:  # straight behind: turn about any axis perpendicular to b
                n = np.cross(b, (1.0, 0.0, 0.0) if abs(b[0]) < 0.9 else (0.0, 1.0, 0.0))
                phi = n * (math.pi / float(np.linalg.norm(n)))
        self._turn.set_goal(phi)

    def _rates(self) -> tuple[np.ndarray, np.ndarray]:
        """The direction's world angular velocity and acceleration (Jl(phi) phi', Jl(phi) phi'')."""
        turn = self._turn
        Jl = pin.exp3(turn.position) @ pin.Jexp3(turn.position)
        return Jl @ turn.velocity, Jl @ turn.acceleration

    def _reanchor(self) -> None:
        """b := the current direction, phi := 0, phi's rate and acceleration carried over as world ones."""
        turn = self._turn
        if not turn.position.any():
            return
        velocity, acceleration = self._rates()
        self._base[:] = pin.exp3(turn.position) @ self._base
        turn.continue_from(np.zeros(3), velocity, acceleration)

    def step(self, axis_point: np.ndarray | None = None) -> np.ndarray | None:
        """Advance one period; the new target point (a buffer: copy to keep), or None at rest at the goal.
        ``axis_point``: a point the axis looks at now (the leash's anchor; None: no leash)."""
        if not self.moving:
            return None
        self._turn.step()
        self._range.step()
        if not self.moving:
            self.position[:] = self.goal  # exactly the goal, at rest
            return self.position
        np.dot(pin.exp3(self._turn.position), self._base, out=self._u)
        self.leashed = False
        if axis_point is not None and self.leash is not None:
            self._leash(axis_point)
        np.multiply(self._u, float(self._range.position[0]), out=self.position)
        self.position += self.eye
        return self.position

    def _leash(self, axis_point: np.ndarray) -> None:
        """The direction back to within ``leash`` of the axis's (seen from the eye), its turn away dropped."""
        a = axis_point - self.eye
        norm = float(np.linalg.norm(a))
        if norm < _MIN_RANGE:
            return
        a /= norm
        w = np.cross(a, self._u)
        s, c = float(np.linalg.norm(w)), float(a @ self._u)
        if math.atan2(s, c) <= self.leash or s < 1e-12:
            return
        n = w / s  # the axis that turns a toward the target's direction
        self._u[:] = pin.exp3(n * self.leash) @ a
        velocity, acceleration = self._rates()
        for v in (velocity, acceleration):
            along = float(v @ n)
            if along > 0.0:
                v -= along * n
        self._base[:] = self._u
        self._turn.continue_from(np.zeros(3), velocity, acceleration)
        self._aim_turn()
        self.leashed = True
