"""SimpleIK: one-shot IK (several methods) with restarts and collision checks, IK along a path, and its worker process."""

from .goals import FrameGoal, IKResult
from .methods import METHOD_TABLE, METHODS, Method
from .objectives import AxisGoal, PointGoal
from .options import SimpleIKOptions
from .path import PathResult, solve_path
from .solver import SimpleIK

__all__ = ["AxisGoal", "FrameGoal", "IKResult", "METHODS", "METHOD_TABLE", "Method", "PathResult", "PointGoal", "SimpleIK",
           "SimpleIKOptions", "solve_path"]
