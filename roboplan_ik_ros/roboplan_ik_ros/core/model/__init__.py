"""The robot model: URDF/SRDF scene (pinocchio + coal), joint groups, limits files, collision pairs."""

from .joint_group import JointGroup
from .scene import Scene

__all__ = ["JointGroup", "Scene"]
