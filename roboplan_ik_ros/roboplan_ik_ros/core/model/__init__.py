"""The robot model: URDF/SRDF scene (pinocchio + coal), joint groups, limits files, collision pairs."""

from .joint_group import JointGroup
from .obstacles import Obstacle
from .scene import Scene

__all__ = ["JointGroup", "Obstacle", "Scene"]
