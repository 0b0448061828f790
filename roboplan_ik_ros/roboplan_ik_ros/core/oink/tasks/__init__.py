"""OInK tasks: objectives of the IK QP."""

# imported first, registered first: "unknown type" errors list the two basic kinds first
from .configuration_task import ConfigurationTask
from .frame_task import FrameTask
from .com_task import ComTask
from .look_at_task import LookAtTask
from .relative_frame_task import RelativeFrameTask
from .task import Task

__all__ = ["ComTask", "ConfigurationTask", "FrameTask", "LookAtTask", "RelativeFrameTask", "Task"]
