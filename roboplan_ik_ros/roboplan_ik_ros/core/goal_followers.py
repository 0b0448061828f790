"""How a task's target follows its goal, once per control tick: :class:`GoalSmoother` for frame
tasks (pin.SE3 targets), :class:`JointGoalRamp` for configuration tasks (joint targets).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from .joint_group import JointGroup
from .scene import Scene


@dataclass
class GoalSmoothingConfig:
    """How the task target follows a new goal: at once, by a first-order low-pass, or at a bounded speed."""

    type: str = "none"  # none | low_pass | max_speed
    time_constant: float = 0.1  # [s] low_pass
    max_linear_speed: float = 0.5  # [m/s] max_speed
    max_angular_speed: float = 1.5  # [rad/s] max_speed


class GoalSmoother:
    """Moves the task target toward the latest goal once per control tick.

    ``none``: the target jumps to the goal. ``low_pass``: first order with ``time_constant`` (the
    position and the rotation, separately). ``max_speed``: straight line at most
    ``max_linear_speed`` [m/s], rotation about a fixed axis at most ``max_angular_speed`` [rad/s].
    """

    _DONE = 1e-9  # [m] and [rad]: closer than this is "reached"

    def __init__(self, cfg: GoalSmoothingConfig) -> None:
        self.cfg = cfg
        self.target: pin.SE3 | None = None  # what the task tracks now
        self.goal: pin.SE3 | None = None
        self.moving = False

    def reset(self, T: pin.SE3) -> None:
        """Target and goal := T (nothing to do until the next goal)."""
        self.target = T.copy()
        self.goal = T.copy()
        self.moving = False

    def set_goal(self, T: pin.SE3) -> None:
        self.goal = T.copy()
        if self.cfg.type == "none" or self.target is None:
            self.target = T.copy()
        self.moving = True

    def step(self, dt: float) -> pin.SE3 | None:
        """Advance by ``dt`` [s]; returns the new target, or None when nothing changed."""
        if not self.moving:
            return None
        if self.cfg.type == "none":
            self.moving = False
            return self.target
        T, G = self.target, self.goal
        dp = G.translation - T.translation
        w = pin.log3(T.rotation.T @ G.rotation)  # in the target's frame
        dist, angle = float(np.linalg.norm(dp)), float(np.linalg.norm(w))
        if dist < self._DONE and angle < self._DONE:
            self.target = G.copy()
            self.moving = False
            return self.target
        if self.cfg.type == "low_pass":
            a = 1.0 - math.exp(-dt / self.cfg.time_constant)
            sp = sr = a
        else:
            sp = min(1.0, self.cfg.max_linear_speed * dt / dist) if dist > 0 else 1.0
            sr = min(1.0, self.cfg.max_angular_speed * dt / angle) if angle > 0 else 1.0
        self.target = pin.SE3(T.rotation @ pin.exp3(sr * w), T.translation + sp * dp)
        return self.target


class JointGoalRamp:
    """Moves a configuration task's target toward its goal by at most ``max_speed * dt`` per joint
    and tick (manifold-correct for continuous joints). Targets and goals are the group's q."""

    def __init__(self, scene: Scene, group: JointGroup, max_speed: float) -> None:
        self.scene = scene
        self.group = group
        self.max_speed = max_speed  # [rad/s or m/s]
        self._target = scene.neutral()  # full q; only the group's entries matter
        self._goal = self._target.copy()
        self._step_full = np.zeros(scene.model.nv)
        self.moving = False

    @property
    def target(self) -> np.ndarray:
        return self._target[self.group.q_indices]

    @property
    def goal(self) -> np.ndarray:
        return self._goal[self.group.q_indices]

    def reset(self, q_group: np.ndarray) -> None:
        """Target and goal := q_group (nothing to do until the next goal)."""
        self._target[self.group.q_indices] = q_group
        self._goal[self.group.q_indices] = q_group
        self.moving = False

    def set_goal(self, q_group: np.ndarray) -> None:
        self._goal[self.group.q_indices] = q_group
        self.moving = True

    def step(self, dt: float) -> np.ndarray | None:
        """Advance by ``dt`` [s]; the new target (group q), or None when nothing changed."""
        if not self.moving:
            return None
        d = pin.difference(self.scene.model, self._target, self._goal)[self.group.v_indices]
        limit = self.max_speed * dt
        if np.abs(d).max(initial=0.0) <= limit:
            self._target[self.group.q_indices] = self._goal[self.group.q_indices]
            self.moving = False
        else:
            self._step_full[self.group.v_indices] = np.minimum(np.maximum(d, -limit), limit)
            self._target[:] = pin.integrate(self.scene.model, self._target, self._step_full)
        return self.target
