"""OInK tasks: objectives of the IK QP."""

from .configuration_task import ConfigurationTask
from .frame_task import FrameTask
from .manipulability_task import ManipulabilityTask
from .task import Task

__all__ = ["ConfigurationTask", "FrameTask", "ManipulabilityTask", "Task"]
