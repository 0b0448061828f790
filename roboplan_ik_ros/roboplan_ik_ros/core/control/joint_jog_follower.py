"""How a configuration task's target follows a joint jog stream, once per control tick:
:class:`JointJogFollower` (the joint-space counterpart of :class:`~.twist_follower.TwistFollower`).

Each tick the target's joint velocities move toward the latest command by at most
``max_acceleration * dt`` per joint, slow down in time to stop *at* each joint's position limit
(:func:`~.goal_followers.braking_speed`: a jog toward a limit brakes before it, it never asks past it),
and the target integrates them (manifold-correct). A leash keeps each jogged joint's target within
``joint_leash`` of the joint (a jog the QP cannot follow, e.g. a posture task held by a pose task,
does not wind up). Command timeout as the twist stream's: after ``command_timeout`` the commanded
velocity is zero and the target brakes at the bounds.
"""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin

from ..model.joint_group import JointGroup
from ..model.scene import Scene
from .twist_follower import StreamingConfig

_BOUND_ROOM = 1e-6  # [rad or m] a jogged joint this close to its limit, pushed toward it, is "at its bound"


class JointJogFollower:
    """The target (the group's q) of one configuration task under a joint-velocity stream.

    ``max_acceleration``: per joint of the group [rad/s^2 or m/s^2], or None (the target velocity
    follows the command at once; the QP's bounds still hold for the arm)."""

    def __init__(self, scene: Scene, group: JointGroup, cfg: StreamingConfig, max_acceleration=None) -> None:
        self.scene, self.group, self.cfg = scene, group, cfg
        self.max_acceleration = None if max_acceleration is None else np.asarray(max_acceleration, dtype=float)
        nv = group.nv
        self._target = scene.neutral()  # full q; only the group's entries matter
        self._step_full = np.zeros(scene.model.nv)
        self.velocity = np.zeros(nv)  # [rad/s or m/s] of the target
        self._cmd = np.zeros(nv)
        self._v_des = np.zeros(nv)
        iv = group.v_indices
        self._q_min = np.full(nv, -np.inf)  # position limits of the bounded scalar joints (group v order)
        self._q_max = np.full(nv, np.inf)
        self._bounded = np.asarray(group.bounded_v, dtype=int)
        self._q_min[self._bounded] = scene.q_min_v[iv[self._bounded]]
        self._q_max[self._bounded] = scene.q_max_v[iv[self._bounded]]
        self._q_of_bounded = group.bounded_q
        self.issued = -math.inf
        self.streaming = False
        self.timed_out = False
        self.at_bound = np.zeros(nv, dtype=bool)  # jogged toward a limit it has reached
        self._toward_upper = np.zeros(nv, dtype=bool)  # at the last step: jogged up (else down); at_bound's side
        self.leashed = False
        self._q_previous = scene.neutral()  # the leash's anchor (the configuration) at the previous step, full q
        self._anchored = False
        # per bounded joint, what the step reads every tick (views when every joint is bounded)
        b = self._bounded
        every = np.array_equal(b, np.arange(nv))
        self._b = slice(None) if every else b
        qb = self._q_of_bounded
        contiguous = len(qb) and np.array_equal(qb, np.arange(qb[0], qb[0] + len(qb)))
        self._qb = slice(int(qb[0]), int(qb[0]) + len(qb)) if contiguous else qb
        self._q_max_b, self._q_min_b = self._q_max[b], self._q_min[b]
        self._dt = math.nan  # the period the constants below are for
        self._finite_a = self._two_alpha = self._half_alpha = self._a_dt = None

    @property
    def target(self) -> np.ndarray:
        return self._target[self.group.q_indices]

    def start(self, q_group: np.ndarray, velocity: np.ndarray | None = None) -> None:
        """Continue from target ``q_group`` moving at ``velocity`` (group v; None = at rest)."""
        self._target[self.group.q_indices] = q_group
        self.velocity[:] = 0.0 if velocity is None else velocity
        self.streaming = True
        self._anchored = False

    def stop(self) -> None:
        self.streaming = False
        self._cmd.fill(0.0)
        self.issued = -math.inf
        self.at_bound.fill(False)

    def bounds_reached(self) -> list[tuple[int, str, float]]:
        """(group v index, "upper" | "lower", limit) of each joint jogged into a limit it has reached."""
        up = self._toward_upper  # the step's side: a command that came since may point elsewhere, or be 0
        return [(int(k), "upper" if up[k] else "lower", float(self._q_max[k] if up[k] else self._q_min[k]))
                for k in np.flatnonzero(self.at_bound)]

    def command(self, dq_group: np.ndarray, now: float, age: float = 0.0) -> None:
        """The latest joint velocities (group v order, already scaled), received at ``now`` [s] and
        ``age`` [s] old then."""
        self._cmd[:] = dq_group
        self.issued = now - max(0.0, age)
        self.timed_out = False

    def command_age(self, now: float) -> float:
        return now - self.issued

    def step(self, dt: float, now: float, q_actual: np.ndarray | None = None) -> np.ndarray | None:
        """Advance by ``dt`` [s]; the new target (group q), or None when not streaming.
        ``q_actual``: the configuration the step starts from (full q; the leash's anchor)."""
        if not self.streaming:
            return None
        self.timed_out = self.command_age(now) > self.cfg.command_timeout
        v_des, v, a = self._v_des, self.velocity, self.max_acceleration
        if self.timed_out:
            v_des.fill(0.0)
        else:
            v_des[:] = self._cmd
        if dt != self._dt:
            self._set_period(dt)
        q = self._target[self._qb]
        b = self._b
        room_up, room_lo = self._q_max_b - q, q - self._q_min_b
        up = self._braking_speed(np.maximum(room_up, 0.0), dt)
        lo = self._braking_speed(np.maximum(room_lo, 0.0), dt)
        pushed = v_des[b].copy()
        v_des[b] = np.minimum(np.maximum(v_des[b], -lo), up)
        self.at_bound.fill(False)
        self.at_bound[b] = ((pushed > 0.0) & (room_up <= _BOUND_ROOM)) | ((pushed < 0.0) & (room_lo <= _BOUND_ROOM))
        self._toward_upper[b] = pushed > 0.0
        if a is None:
            v[:] = v_des
        else:
            np.minimum(np.maximum(v_des, v - self._a_dt), v + self._a_dt, out=v)
        self._step_full.fill(0.0)
        self._step_full[self.group.v_indices] = v * dt
        self._target[:] = pin.integrate(self.scene.model, self._target, self._step_full)
        self.leashed = False
        if q_actual is not None:
            self._leash(q_actual, dt)
            self._q_previous[:] = q_actual
            self._anchored = True
        if self.timed_out and not v.any():
            self.streaming = False
        return self.target

    def _set_period(self, dt: float) -> None:
        """The per-period constants of the bounded joints (recomputed when the control rate changes)."""
        a = self.max_acceleration
        a_b = a[self._bounded] if a is not None else np.full(len(self._bounded), np.inf)
        self._finite_a = np.where(np.isfinite(a_b), a_b, 1.0 / (dt * dt))  # no bound: reach the limit in one step
        alpha = self._finite_a * dt * dt
        self._two_alpha, self._half_alpha = 2.0 * alpha, 0.5 * alpha
        self._alpha = alpha
        self._a_dt = None if a is None else a * dt
        self._dt = dt

    def _braking_speed(self, distance: np.ndarray, dt: float) -> np.ndarray:
        """:func:`braking_speed` of the bounded joints (no speed cap) with this period's constants."""
        return np.where(distance > self._alpha, np.sqrt(self._two_alpha * distance) - self._half_alpha, distance) / dt

    def _leash(self, q_actual: np.ndarray, dt: float) -> None:
        """Each jogged joint's target within joint_leash of the joint; its target velocity away from the
        joint down to the joint's own velocity (from the previous step's anchor): a jog the arm follows
        slower than asked holds its target at the leash, moving with the joint, at every step. A joint not
        jogged (no command, its target still) has its target where the joint is: it goes where the jogged
        joints and the other tasks take it (under a pose task, the arm's self-motion) instead of pulling
        back to where the jog started (which stopped a nullspace jog after ~0.06 rad, measured)."""
        gv, L = self.group.v_indices, self.cfg.joint_leash
        d = pin.difference(self.scene.model, q_actual, self._target)[gv]  # target ⊖ actual
        commanded = self._v_des if self.timed_out else self._cmd  # a joint jogged into its limit is still jogged
        free = (commanded == 0.0) & (self.velocity == 0.0)
        over = (np.abs(d) > L) & ~free
        if not (over.any() or d[free].any()):
            return
        self.leashed = bool(over.any())
        self._step_full.fill(0.0)
        self._step_full[gv] = np.where(free, 0.0, np.where(over, np.clip(d, -L, L), d))
        self._target[:] = pin.integrate(self.scene.model, q_actual, self._step_full)  # only the group's entries count
        outward = over & (self.velocity * d > 0.0)
        if not outward.any():
            return
        keep = np.zeros(len(d))  # the joint's own speed away from it (0: still, or no previous step)
        if self._anchored and dt > 0.0:
            v_joint = pin.difference(self.scene.model, self._q_previous, q_actual)[gv] / dt
            np.maximum(np.sign(d) * v_joint, 0.0, out=keep)
        self.velocity[outward] = (np.sign(d) * np.minimum(np.abs(self.velocity), keep))[outward]
