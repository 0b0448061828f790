"""OInK control barrier functions."""

from .barrier import Barrier
from .position_barrier import PositionBarrier
from .collision_barrier import CollisionBarrier, SelfCollisionBarrier

__all__ = ["Barrier", "CollisionBarrier", "PositionBarrier", "SelfCollisionBarrier"]
