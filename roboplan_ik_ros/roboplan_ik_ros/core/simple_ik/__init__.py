"""SimpleIK: one-shot IK (several methods) with restarts and collision checks, IK along a path, and its worker process."""

from .objectives import AxisGoal, PointGoal
from .path import PathResult, solve_path
from .solver import FrameGoal, IKResult, SimpleIK, SimpleIKOptions

__all__ = ["AxisGoal", "FrameGoal", "IKResult", "PathResult", "PointGoal", "SimpleIK", "SimpleIKOptions", "solve_path"]
