"""ROS-free IK core: scene, SimpleIK and OInK on pinocchio + OSQP + coal. Imports no ROS module."""

from .errors import InvalidInputError
from .joint_group import JointGroup
from .oink import (
    AccelerationLimit,
    Barrier,
    ConfigurationTask,
    FrameTask,
    Limit,
    Oink,
    OinkResult,
    PositionBarrier,
    PositionLimit,
    SelfCollisionBarrier,
    Task,
    VelocityLimit,
    brake_barriers_for,
)
from .scene import Scene
from .simple_ik import FrameGoal, IKResult, SimpleIK, SimpleIKOptions

__all__ = [
    "AccelerationLimit", "Barrier", "ConfigurationTask", "FrameGoal", "FrameTask", "IKResult", "InvalidInputError", "JointGroup",
    "Limit", "Oink", "OinkResult", "PositionBarrier", "PositionLimit", "Scene", "SelfCollisionBarrier",
    "SimpleIK", "SimpleIKOptions", "Task", "VelocityLimit", "brake_barriers_for",
]
