"""OInK: optimal (QP-based) differential inverse kinematics."""

from .barriers import Barrier, PositionBarrier, SelfCollisionBarrier
from .limits import Bounds, Limit, PositionLimit, VelocityLimit
from .solver import Oink, OinkResult
from .tasks import ConfigurationTask, FrameTask, Task

__all__ = [
    "Barrier", "Bounds", "ConfigurationTask", "FrameTask", "Limit", "Oink", "OinkResult",
    "PositionBarrier", "PositionLimit", "SelfCollisionBarrier", "Task", "VelocityLimit",
]
