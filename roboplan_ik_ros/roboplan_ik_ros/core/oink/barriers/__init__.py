"""OInK control barrier functions."""

from .barrier import Barrier
from .position_barrier import PositionBarrier
from .collision_barrier import CollisionBarrier, SelfCollisionBarrier
from .singularity_barrier import SingularityBarrier
from .com_barrier import ComBarrier
from .joint_limit_barrier import JointLimitBarrier
from .sphere_barrier import SphereBarrier

__all__ = [
    "Barrier", "CollisionBarrier", "ComBarrier", "JointLimitBarrier", "PositionBarrier", "SelfCollisionBarrier",
    "SingularityBarrier", "SphereBarrier",
]
