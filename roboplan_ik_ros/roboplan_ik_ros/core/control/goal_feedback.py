"""Goal feedback: whether a frame task's goal is reachable, or what stops the arm short of it and how far.

Judged at the status rate (not per tick) from what the last steps show. A goal the frame is short of
(its error above :data:`REACHED_DISTANCE` / :data:`REACHED_ANGLE`) is *limited* when

- the frame is still: its velocity over the last command increment below :data:`STALL_SPEED` /
  :data:`STALL_ANGULAR_SPEED` at every sample for :data:`STALL_TIME` (a goal stream included); or
- it makes no progress: since the goal arrived, its best distance and angle to it improved by no more
  than :data:`PROGRESS_SHARE` of themselves (at least the REACHED_* tolerances) for :data:`PROGRESS_TIME`
  (an arm that moves without getting nearer: sliding along a barrier, or chattering at full stretch).

Anything else is *reachable* (reached, or still on its way). A limited goal gets its cause from the
last step's solution, in this order:

- ``barrier``: barrier rows bind the last step (which barriers, which rows, their h);
- ``out_of_reach``: the goal is farther from the arm's first joint than the arm reaches;
- ``joint_bound``, ``following_error``, ``velocity_bound``, ``acceleration_bound``: joints whose step
  sits on a bound (:func:`~.binding_bounds.binding_bounds`);
- ``tradeoff``: nothing binds: the step trades the goal against the other tasks, the regularization or
  the barriers' soft terms, or the arm is at a singularity (a local minimum of the task error).

The distance and angle left [m, rad] are the frame's error to the goal now, along the axes the task
weighs: where a limited arm stops (it is stalled there), what a reachable one still has to go.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

# Verdicts (roboplan_ik_interfaces/msg/TaskStatus GOAL_*).
GOAL_NONE = ""  # no verdict: not a frame task, no goal, a twist stream drives it, or the loop holds
REACHABLE = "reachable"
LIMITED = "limited"
# Causes of a limited goal besides the MOTION_LIMIT_* codes of binding_bounds.py and "barrier".
OUT_OF_REACH = "out_of_reach"
TRADEOFF = "tradeoff"

REACHED_DISTANCE = 1e-3  # [m] a frame closer to its goal than this (and REACHED_ANGLE) has reached it
REACHED_ANGLE = 1e-2  # [rad]
STALL_SPEED = 1e-3  # [m/s] a frame slower than this (and STALL_ANGULAR_SPEED) over the last increment is still
STALL_ANGULAR_SPEED = 1e-2  # [rad/s]
STALL_TIME = 0.2  # [s] still at every sample for this long, short of the goal: limited
PROGRESS_TIME = 1.0  # [s] no progress toward the goal for this long, short of it: limited
PROGRESS_SHARE = 0.05  # an improvement of the best distance (angle) by less than this share is no progress


@dataclass(frozen=True)
class GoalVerdict:
    """One frame task's goal feedback. ``limited_at``: the barriers' or the joints' names."""

    task: str
    verdict: str = GOAL_NONE
    limited_by: str = ""
    limited_at: tuple[str, ...] = ()
    reason: str = ""
    distance: float = 0.0  # [m] left to the goal (along the weighted axes)
    angle: float = 0.0  # [rad]

    def text(self) -> str:
        """One line for /diagnostics."""
        if not self.verdict:
            return "no goal"
        left = f"{self.distance * 1e3:.1f} mm / {self.angle:.3f} rad from the goal"
        if self.verdict == REACHABLE:
            return f"reachable ({left})"
        return f"limited by {self.limited_by}: stops {left}; {self.reason}"


@dataclass
class GoalJudge:
    """The clocks of one frame task's goal: since when its frame is still short of the goal, and since when
    it last got nearer to it (reset by a new goal)."""

    weights: np.ndarray = field(default_factory=lambda: np.ones(6))  # > 0: the axes the task weighs
    stalled_since: float | None = None
    goal: pin.SE3 | None = None  # the goal the progress clock is about (compared by identity)
    best: tuple[float, float] = (math.inf, math.inf)  # [m, rad] the nearest the frame came to it
    progress_at: float = 0.0  # [s] when ``best`` last improved

    def reset(self) -> None:
        self.stalled_since, self.goal = None, None

    def judge(self, now: float, T_world_frame: pin.SE3, T_world_goal: pin.SE3, velocity: np.ndarray) -> tuple[
            str, float, float]:
        """(verdict, distance [m], angle [rad]) at ``now`` [s]; ``velocity``: the frame's [m/s, rad/s]
        over the last command increment (LOCAL_WORLD_ALIGNED, 6). ``T_world_goal``: the same object while
        the goal is the same (a new object restarts the progress clock)."""
        error = np.empty(6)  # world-aligned, as the task's (FrameTask.update)
        error[:3] = T_world_goal.translation - T_world_frame.translation
        error[3:] = pin.log3(T_world_goal.rotation @ T_world_frame.rotation.T)
        on = self.weights > 0.0
        distance = math.sqrt(float(np.sum(error[:3][on[:3]] ** 2)))
        angle = math.sqrt(float(np.sum(error[3:][on[3:]] ** 2)))
        if T_world_goal is not self.goal:
            self.goal, self.best, self.progress_at = T_world_goal, (distance, angle), now
        elif (self.best[0] - distance > max(REACHED_DISTANCE, PROGRESS_SHARE * self.best[0])
              or self.best[1] - angle > max(REACHED_ANGLE, PROGRESS_SHARE * self.best[1])):
            self.best, self.progress_at = (distance, angle), now
        if distance <= REACHED_DISTANCE and angle <= REACHED_ANGLE:
            self.stalled_since = None
            return REACHABLE, distance, angle
        speed = math.sqrt(float(np.sum(velocity[:3][on[:3]] ** 2)))
        angular_speed = math.sqrt(float(np.sum(velocity[3:][on[3:]] ** 2)))
        if speed < STALL_SPEED and angular_speed < STALL_ANGULAR_SPEED:
            self.stalled_since = now if self.stalled_since is None else self.stalled_since
        else:
            self.stalled_since = None
        stalled = self.stalled_since is not None and now - self.stalled_since >= STALL_TIME
        return (LIMITED if stalled or now - self.progress_at >= PROGRESS_TIME else REACHABLE), distance, angle
