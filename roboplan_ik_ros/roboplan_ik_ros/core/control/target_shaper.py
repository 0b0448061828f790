"""How a task's target moves to a new goal: along Ruckig's time-optimal, jerk-limited trajectory, one sample
per control tick (:class:`TargetShaper` for a vector, :class:`JointTargetShaper` for a group's q).

Every goal of a joint, configuration, look_at or com task reaches its task through one of these (the control
loop's ``_advance_targets``), so the one-step QP tracks a reference a drive can follow: it starts from the
target's current position, velocity and acceleration (a goal that arrives while the target moves, a stream
of goals, continues from there: no jump), stays within the velocity, acceleration and jerk limits given
here, and arrives at rest, without overshoot, in the least time those limits allow (Ruckig: Berscheid and
Kroeger, "Jerk-limited Real-time Trajectory Generation with Arbitrary Target States", RSS 2021). A tick
costs one ``Ruckig.update``: a sample of the planned trajectory (~1 us), or a new plan when the input changed
(a new goal, the leash: ~10 us for 7 joints).

The leash keeps the target within a distance of what the task measures now (a joint's value, the point an
axis looks at), so a goal the arm cannot reach (a barrier, a joint limit, a task above) does not wind the
target up: the target waits at the leash, its velocity toward the goal dropped, and moves on as the arm does.
"""

from __future__ import annotations

import math

import numpy as np
from ruckig import InputParameter, OutputParameter, Result, Ruckig, Synchronization

from ..model.joint_group import JointGroup
from ..model.scene import Scene

_DIRECTION_FLOOR = 0.05  # a Euclidean shaper's per-axis limit is at least this share of the limit (see set_goal)


class TargetShaper:
    """An n-vector target moved to its goal by Ruckig (phase-synchronized: from rest, a straight line).

    Args:
        n: the number of coordinates.
        dt: the control period [s] (one :meth:`step` per period).
        v_max, a_max, j_max: per coordinate (or one for all) [units/s, /s^2, /s^3]; a_max and j_max may be
            inf (no bound: the velocity, or the acceleration, may step).
        euclidean: the limits bound the vector's norm rather than each coordinate (a point's speed in
            m/s whatever its direction): each goal scales the per-coordinate limits by the direction to it.
        leash: None (none), or the largest distance of the target from :meth:`step`'s anchor (> 0; inf: none): per
            coordinate (a number or n), or with ``euclidean`` the norm.
    """

    def __init__(self, n: int, dt: float, v_max, a_max, j_max, *, euclidean: bool = False, leash=None) -> None:
        self.n = n
        self.euclidean = euclidean
        self.v_max, self.a_max, self.j_max = checked_limits(n, v_max, a_max, j_max)
        self.leash = None if leash is None else (float(leash) if euclidean else
                                                 np.broadcast_to(np.asarray(leash, dtype=float), (n,)).copy())
        if self.leash is not None and not np.all(np.greater(self.leash, 0.0)):
            # at 0 the per-coordinate leash would clip the offset to 0 before judging which velocity points away
            raise ValueError(f"leash: expected values > 0 (inf: no leash) or None, got {np.ravel(self.leash).tolist()}")
        self.position = np.zeros(n)  # the target now
        self.velocity = np.zeros(n)  # its velocity [units/s]
        self.goal = np.zeros(n)
        self.moving = False
        self.leashed = False  # the last step pulled the target back to its leash
        self._inp = InputParameter(n)
        self._zeros = [0.0] * n  # a target velocity and acceleration of zero (a list: see _set_limits)
        self._out = OutputParameter(n)
        self._inp.synchronization = Synchronization.Phase  # falls back to Time where a line is impossible
        self._set_limits(np.ones(n))
        self._d = np.zeros(n)  # scratch of the leash
        self.set_dt(dt)

    def set_dt(self, dt: float) -> None:
        """A new control period [s] (the state and the goal are kept; the plan is redone)."""
        self.dt = float(dt)
        self._otg = Ruckig(self.n, self.dt)
        self._out = OutputParameter(self.n)

    def set_limits(self, v_max=None, a_max=None, j_max=None, *, valid: bool = False) -> None:
        """New limits (None: kept); they apply from the next goal (a Euclidean shaper's) or the next step. Raises
        ValueError, the limits unchanged, for a v_max not finite > 0 or an a_max or j_max not > 0 (Ruckig would
        refuse them only at the next step, naming no field). ``valid``: the caller's limits are valid by
        construction (PoseShaper's per-goal scaling of its checked limits, in the tick): not checked again."""
        given = ((self.v_max, v_max), (self.a_max, a_max), (self.j_max, j_max))
        if not valid:
            given = tuple(zip((self.v_max, self.a_max, self.j_max), checked_limits(
                self.n, *(mine if value is None else value for mine, value in given))))
        for mine, value in given:
            if value is not None:
                mine[:] = value
        if not self.euclidean:
            self._set_limits(np.ones(self.n))

    def _set_limits(self, scale: np.ndarray) -> None:
        inp = self._inp
        inp.max_velocity = (self.v_max * scale).tolist()  # lists: Ruckig converts a numpy array 4x slower
        inp.max_acceleration = (self.a_max * scale).tolist()
        inp.max_jerk = (self.j_max * scale).tolist()

    def reset(self, x) -> None:
        """Target and goal := x, at rest (nothing to do until the next goal)."""
        self.continue_from(x)

    def continue_from(self, x, velocity=None, acceleration=None) -> None:
        """Take over a target at x moving at ``velocity`` (and ``acceleration``; None: 0), e.g. from a stream
        that ended: the next goal is approached from that motion, without a jump. Goal := x."""
        self.position[:] = x
        self.goal[:] = x
        self.velocity[:] = 0.0 if velocity is None else velocity
        inp = self._inp
        inp.current_position = self.position.tolist()
        inp.current_velocity = self.velocity.tolist()
        inp.current_acceleration = self._zeros if acceleration is None else np.asarray(acceleration, dtype=float).tolist()
        inp.target_position = self.goal.tolist()
        self.moving = False
        self.leashed = False

    def shift_origin(self, x) -> None:
        """The target's coordinates := x (its velocity, acceleration and goal kept): a caller that measures them
        from a new origin (JointTargetShaper's anchor) says where the target is in it."""
        self.position[:] = x
        self._inp.current_position = self.position.tolist()

    def set_goal(self, x) -> None:
        """A new goal: the target goes on from where it is and how it moves (a stream's next sample too)."""
        self.goal[:] = x
        inp = self._inp
        inp.target_position = self.goal.tolist()
        inp.target_velocity = self._zeros
        inp.target_acceleration = self._zeros
        if self.euclidean:
            # per axis the limit times |direction to the goal|: a straight line from rest moves at the limit along
            # it, never faster; an axis moving now keeps the share its velocity and acceleration use (a goal that
            # turns a moving target brakes it at the limits; the norm may then exceed them by up to sqrt(n))
            d = np.subtract(self.goal, self.position, out=self._d)
            norm = math.sqrt(float(d @ d))
            scale = np.abs(d) / norm if norm > 0.0 else np.ones(self.n)
            np.maximum(scale, np.abs(self.velocity) / self.v_max, out=scale)
            with np.errstate(divide="ignore", invalid="ignore"):
                np.maximum(scale, np.nan_to_num(np.abs(self.acceleration) / self.a_max), out=scale)
            np.clip(scale, _DIRECTION_FLOOR, 1.0, out=scale)
            self._set_limits(scale)
        self.moving = True

    def step(self, anchor: np.ndarray | None = None) -> np.ndarray | None:
        """Advance one period; the new target (a buffer of this shaper: copy to keep), or None when it is at
        rest at its goal. ``anchor``: what the task measures now (the leash's centre; None: no leash)."""
        if not self.moving:
            return None
        inp, out = self._inp, self._out
        result = self._otg.update(inp, out)
        if result not in (Result.Working, Result.Finished):
            raise RuntimeError(f"target shaping (Ruckig) failed: {result.name} from position "
                               f"{self.position.tolist()} to goal {self.goal.tolist()}")
        out.pass_to_input(inp)
        self.position[:] = out.new_position
        self.velocity[:] = out.new_velocity
        if result == Result.Finished:
            self.reset(self.goal)  # exactly at the goal, at rest
            return self.position
        self.leashed = False
        if anchor is not None and self.leash is not None:
            self._leash(anchor, self.leash)
        return self.position

    def _leash(self, anchor: np.ndarray, leash) -> None:
        """Pull the target back to within the leash of ``anchor``; drop its velocity and acceleration away
        from it (they would wind it up again next tick). Writes Ruckig's input state when it acts."""
        d = np.subtract(self.position, anchor, out=self._d)
        if self.euclidean:
            dist = math.sqrt(float(d @ d))
            if dist <= leash:
                return
            u = d / dist
            self.position[:] = anchor + leash * u
            along = float(self.velocity @ u)
            if along > 0.0:
                self.velocity -= along * u
            acceleration = np.asarray(self._inp.current_acceleration)
            along = float(acceleration @ u)
            if along > 0.0:
                acceleration = acceleration - along * u
        else:
            if float(np.max(np.abs(d) - leash)) <= 0.0:
                return
            over = np.abs(d) > leash
            np.clip(d, -leash, leash, out=d)
            np.add(anchor, d, out=self.position)
            outward = over & (self.velocity * d > 0.0)
            self.velocity[outward] = 0.0
            acceleration = np.asarray(self._inp.current_acceleration)
            acceleration[over & (acceleration * d > 0.0)] = 0.0
        inp = self._inp
        inp.current_position = self.position.tolist()
        inp.current_velocity = self.velocity.tolist()
        inp.current_acceleration = acceleration.tolist()
        self.leashed = True

    @property
    def acceleration(self) -> np.ndarray:
        """The target's acceleration now [units/s^2] (a new array)."""
        return np.asarray(self._inp.current_acceleration)


class JointTargetShaper:
    """A group's joint target (its q, size group nq) moved to a joint goal by a :class:`TargetShaper` in the
    group's velocity coordinates (one per joint: a continuous joint by its angle), relative to an anchor
    configuration that each goal moves to the current target (manifold-correct for continuous joints).

    Args:
        v_max, a_max, j_max: per group joint (or one for all) [rad/s or m/s, /s^2, /s^3].
        leash: None, or per group joint (or one) [rad or m]: the target stays this close to the joint
            (:meth:`step`'s ``q``).
    """

    def __init__(self, scene: Scene, group: JointGroup, dt: float, v_max, a_max, j_max, leash=None) -> None:
        self.scene = scene
        self.group = group
        self._shaper = TargetShaper(group.nv, dt, v_max, a_max, j_max, leash=leash)
        self._anchor = scene.neutral()  # full q: the shaper's coordinates are displacements from it
        self._target = scene.neutral()  # full q; only the group's entries matter
        self._goal = scene.neutral()
        self._vector = len(group.continuous_q) == 0  # q = anchor + x (no continuous joint): no pin.integrate
        self._step_full = np.zeros(scene.model.nv)
        self._dq = np.zeros(group.nv)
        self._here = np.zeros(group.nv)  # q ⊖ anchor (the leash's centre)
        gq = group.q_indices  # a slice when contiguous: the tick's writes are views, not copies
        self._gq = slice(int(gq[0]), int(gq[0]) + len(gq)) if len(gq) and np.array_equal(
            gq, np.arange(gq[0], gq[0] + len(gq))) else gq

    @property
    def target(self) -> np.ndarray:
        """The group's q the task tracks now."""
        return self._target[self.group.q_indices]

    @property
    def goal(self) -> np.ndarray:
        return self._goal[self.group.q_indices]

    @property
    def moving(self) -> bool:
        return self._shaper.moving

    @property
    def leashed(self) -> bool:
        return self._shaper.leashed

    @property
    def velocity(self) -> np.ndarray:
        """[rad/s or m/s] of the target, group v order (a view: copy to keep)."""
        return self._shaper.velocity

    @property
    def limits(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(v_max, a_max, j_max) per group joint."""
        s = self._shaper
        return s.v_max, s.a_max, s.j_max

    def set_dt(self, dt: float) -> None:
        self._shaper.set_dt(dt)

    def set_speed(self, v_max) -> None:
        """New speed limits per group joint [rad/s or m/s]."""
        self._shaper.set_limits(v_max=v_max)

    def _reanchor(self) -> None:
        """Anchor := the current target: the shaper's position is 0 there (its velocity and acceleration kept)."""
        self._anchor[:] = self._target
        self._shaper.shift_origin(np.zeros(self.group.nv))

    def reset(self, q_group: np.ndarray) -> None:
        """Target and goal := q_group, at rest."""
        self.continue_from(q_group)

    def continue_from(self, q_group: np.ndarray, velocity: np.ndarray | None = None) -> None:
        """Take over a target moving at ``velocity`` (group v; e.g. from a joint jog): the next goal is
        approached from that motion, without a jump."""
        g = self.group.q_indices
        self._target[g] = q_group
        self._goal[g] = q_group
        self._anchor[:] = self._target
        self._shaper.continue_from(np.zeros(self.group.nv), velocity)

    def set_goal(self, q_group: np.ndarray) -> None:
        """A new goal (the group's q): the target goes on from where it is and how it moves."""
        self._goal[self.group.q_indices] = q_group
        self._reanchor()
        self._shaper.set_goal(self._displacement(self._goal))

    def _displacement(self, q_full: np.ndarray) -> np.ndarray:
        """q_full ⊖ anchor over the group's joints (group v)."""
        if self._vector:
            return np.subtract(q_full[self.group.q_indices], self._anchor[self.group.q_indices], out=self._dq)
        return self.scene.difference(self._anchor, q_full)[self.group.v_indices]

    def step(self, q: np.ndarray | None = None) -> np.ndarray | None:
        """Advance one period; the new target (group q), or None when it is at rest at its goal. ``q``: the
        full configuration the step starts from (the leash's centre; None: no leash)."""
        s = self._shaper
        if not s.moving:
            return None
        anchor = None
        if q is not None and s.leash is not None:
            anchor = self._here
            anchor[:] = self._displacement(q)
        x = s.step(anchor)
        g = self.group.q_indices
        if not s.moving:  # arrived: exactly the goal, the anchor there
            self._target[g] = self._goal[g]
            self._anchor[:] = self._target
            s.reset(np.zeros(self.group.nv))
        elif isinstance(self._gq, slice) and self._vector:
            np.add(self._anchor[self._gq], x, out=self._target[self._gq])
        elif self._vector:
            self._target[g] = self._anchor[g] + x
        else:
            self._step_full[self.group.v_indices] = x
            self._target[:] = self.scene.integrate(self._anchor, self._step_full)
        return self.target


def checked_limits(n: int, v_max, a_max, j_max) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(v_max, a_max, j_max) as n-vectors (new arrays), or ValueError naming the one that is not a shaper's limit."""
    v, a, j = (np.broadcast_to(np.asarray(x, dtype=float), (n,)).copy() for x in (v_max, a_max, j_max))
    if not (np.isfinite(v).all() and (v > 0).all()):
        raise ValueError(f"v_max: expected finite values > 0, got {v.tolist()}")
    if not ((a > 0).all() and (j > 0).all()):
        raise ValueError(f"a_max, j_max: expected values > 0 (or inf), got {a.tolist()}, {j.tolist()}")
    return v, a, j
