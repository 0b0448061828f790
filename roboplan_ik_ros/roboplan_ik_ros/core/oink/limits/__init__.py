"""OInK hard limits."""

from .limit import Bounds, Limit
from .position_limit import PositionLimit
from .velocity_limit import VelocityLimit

__all__ = ["Bounds", "Limit", "PositionLimit", "VelocityLimit"]
