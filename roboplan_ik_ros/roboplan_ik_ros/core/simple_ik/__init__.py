"""SimpleIK: one-shot IK (several methods) with restarts and collision checks, IK along a path, and its worker process."""

from .path import PathResult, solve_path
from .solver import FrameGoal, IKResult, SimpleIK, SimpleIKOptions

__all__ = ["FrameGoal", "IKResult", "PathResult", "SimpleIK", "SimpleIKOptions", "solve_path"]
