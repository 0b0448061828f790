"""OInK: optimal (QP-based) differential inverse kinematics."""

from .barriers import Barrier, CollisionBarrier, PositionBarrier, SelfCollisionBarrier, SingularityBarrier
from .limits import AccelerationLimit, Bounds, FollowingErrorLimit, Limit, PositionLimit, VelocityLimit, brake_barriers_for
from .solver import Oink, OinkResult
from .tasks import ConfigurationTask, FrameTask, Task

__all__ = [
    "AccelerationLimit", "Barrier", "Bounds", "CollisionBarrier", "ConfigurationTask", "FollowingErrorLimit", "FrameTask", "Limit", "Oink", "OinkResult",
    "PositionBarrier", "PositionLimit", "SelfCollisionBarrier", "SingularityBarrier", "Task", "VelocityLimit", "brake_barriers_for",
]
