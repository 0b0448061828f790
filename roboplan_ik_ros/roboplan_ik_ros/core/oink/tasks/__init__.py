"""OInK tasks: objectives of the IK QP."""

from .configuration_task import ConfigurationTask
from .frame_task import FrameTask
from .task import Task

__all__ = ["ConfigurationTask", "FrameTask", "Task"]
