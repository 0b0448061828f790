"""OInK hard limits."""

from .acceleration_limit import AccelerationLimit, brake_barriers_for
from .following_error_limit import FollowingErrorLimit
from .limit import Bounds, Limit
from .position_limit import PositionLimit
from .velocity_limit import VelocityLimit

__all__ = ["AccelerationLimit", "Bounds", "FollowingErrorLimit", "Limit", "PositionLimit", "VelocityLimit", "brake_barriers_for"]
