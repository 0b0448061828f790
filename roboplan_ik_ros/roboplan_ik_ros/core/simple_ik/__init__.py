"""SimpleIK: one-shot damped least squares IK with restarts and collision checks (and its worker process)."""

from .solver import FrameGoal, IKResult, SimpleIK, SimpleIKOptions

__all__ = ["FrameGoal", "IKResult", "SimpleIK", "SimpleIKOptions"]
