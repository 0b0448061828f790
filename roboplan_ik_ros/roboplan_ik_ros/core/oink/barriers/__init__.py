"""OInK control barrier functions."""

from .barrier import Barrier
from .position_barrier import PositionBarrier
from .collision_barrier import CollisionBarrier, SelfCollisionBarrier
from .singularity_barrier import SingularityBarrier
from .com_barrier import ComBarrier

__all__ = ["Barrier", "CollisionBarrier", "ComBarrier", "PositionBarrier", "SelfCollisionBarrier", "SingularityBarrier"]
