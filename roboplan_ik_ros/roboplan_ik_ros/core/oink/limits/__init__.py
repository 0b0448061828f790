"""OInK hard limits."""

from .following_error_limit import FollowingErrorLimit
from .limit import Bounds, Limit
from .position_limit import PositionLimit
from .velocity_limit import VelocityLimit

__all__ = ["Bounds", "FollowingErrorLimit", "Limit", "PositionLimit", "VelocityLimit"]
