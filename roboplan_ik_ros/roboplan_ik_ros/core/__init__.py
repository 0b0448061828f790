"""ROS-free IK core: scene, SimpleIK and OInK on pinocchio + OSQP + coal. Imports no ROS module.

Layout: ``model/`` (the robot: scene, SRDF, joint groups, limits files, ``scene_from_config``), ``oink/`` (the QP step:
tasks, limits, barriers, solver, and ``controller`` that builds them from a config),
``simple_ik/`` (one-shot IK and its worker process), ``control/`` (the per-tick loop around OInK),
``config.py`` (the YAML schema) and ``errors.py``.
"""

from .errors import InvalidInputError
from .model.joint_group import JointGroup
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
    CollisionBarrier,
    SelfCollisionBarrier,
    SingularityBarrier,
    Task,
    VelocityLimit,
    brake_barriers_for,
)
from .model.obstacles import Obstacle
from .model.scene import Scene
from .simple_ik import FrameGoal, IKResult, SimpleIK, SimpleIKOptions

__all__ = [
    "AccelerationLimit", "Barrier", "ConfigurationTask", "FrameGoal", "FrameTask", "IKResult", "InvalidInputError", "JointGroup",
    "Limit", "Oink", "OinkResult", "Obstacle", "PositionBarrier", "PositionLimit", "Scene", "SelfCollisionBarrier", "CollisionBarrier", "SingularityBarrier",
    "SimpleIK", "SimpleIKOptions", "Task", "VelocityLimit", "brake_barriers_for",
]
