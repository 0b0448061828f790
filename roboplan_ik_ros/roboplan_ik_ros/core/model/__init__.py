"""The robot model: URDF/SRDF scene (pinocchio + coal), joint groups, limits files, collision pairs, and the scene
of a config's robot section (scene_config.py)."""

from .joint_group import JointGroup
from .obstacles import Obstacle
from .scene import Scene
from .scene_config import scene_from_config

__all__ = ["JointGroup", "Obstacle", "Scene", "scene_from_config"]
