"""IK along a Cartesian path (a list of tip poses a planner wants to follow), one waypoint after the
other, each seeded from the previous solution by :meth:`SimpleIK.solve_nearby`: no joint moves more
than ``max_joint_step`` between consecutive waypoints (MoveIt's jump threshold idea, as an absolute
bound on every joint; a continuous joint's motion is the angle pin.difference measures, the short way
round), so a path never jumps to another IK branch. The search stops at the first
waypoint without such a solution; the result tells how far along the path it got.

This module sits above the solver: it calls any :class:`NearbySolver` (SimpleIK is one) and imports
nothing of solver.py, which imports it for ``SimpleIK.solve_path``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

import numpy as np

from ..errors import InvalidInputError, check_positive
from .goals import FrameGoal, IKResult
from .options import SimpleIKOptions


class NearbySolver(Protocol):
    """What path planning needs of a one-shot IK solver (:class:`~.solver.SimpleIK` is one)."""

    options: SimpleIKOptions  # used when solve_path is given no options

    def check_seed(self, q_seed) -> np.ndarray:
        """q_seed as a finite float vector of size nq, or InvalidInputError."""

    def solve_nearby(self, goals: Sequence[FrameGoal], q_seed: np.ndarray, max_deviation: float,
                     options: SimpleIKOptions | None = None) -> IKResult:
        """A solution with no joint more than ``max_deviation`` from ``q_seed``."""


@dataclass
class PathResult:
    success: bool  # every waypoint solved
    fraction: float  # solved waypoints / waypoints (0 .. 1)
    q_path: list[np.ndarray] = field(default_factory=list)  # full nq per solved waypoint, in order
    message: str = ""


def solve_path(ik: NearbySolver, tip_frame: str, poses: Sequence, q_seed: np.ndarray, max_joint_step: float,
               options: SimpleIKOptions | None = None) -> PathResult:
    """Solve ``tip_frame`` at each of ``poses`` (pin.SE3 or 4x4, model world frame) in order, from
    ``q_seed`` (full nq): waypoint k by ``ik.solve_nearby`` from waypoint k-1's solution with
    ``max_deviation = max_joint_step`` [rad or m], fast_return. Bad input raises InvalidInputError."""
    check_positive(max_joint_step, "max_joint_step")
    if isinstance(poses, (str, bytes)) or not isinstance(poses, Sequence) or len(poses) == 0:
        raise InvalidInputError(f"poses: expected a non-empty list of poses, got {poses!r}")
    opt = replace(options or ik.options, fast_return=True)
    q = ik.check_seed(q_seed).copy()
    q_path: list[np.ndarray] = []
    for k, T in enumerate(poses):
        res = ik.solve_nearby([FrameGoal(tip_frame, T)], q, max_joint_step, opt)
        if not res.success:
            return PathResult(False, k / len(poses), q_path,
                              f"waypoint {k} of {len(poses)}: no solution within max_joint_step "
                              f"{max_joint_step:g} of waypoint {k - 1 if k else 'seed'} ({res.message})")
        q = res.q
        q_path.append(q)
    return PathResult(True, 1.0, q_path, f"{len(poses)} waypoints solved")
