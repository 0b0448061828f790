"""OInK control barrier functions."""

from .barrier import Barrier
from .position_barrier import PositionBarrier
from .self_collision_barrier import SelfCollisionBarrier

__all__ = ["Barrier", "PositionBarrier", "SelfCollisionBarrier"]
