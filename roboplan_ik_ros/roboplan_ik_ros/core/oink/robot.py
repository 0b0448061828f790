"""Robot: what a task, limit or barrier is built against (the scene and the joint group the QP moves)."""

from __future__ import annotations

from typing import NamedTuple

from ..model.joint_group import JointGroup
from ..model.scene import Scene


class Robot(NamedTuple):
    """The scene (model, frames, limits, collision geometry) and the joint group whose displacement dq
    the QP solves for. Kinds read it when they are built and keep what they need; none keeps the solver."""

    scene: Scene
    group: JointGroup

    @property
    def nv(self) -> int:
        """Size of dq (the group's velocity dimension)."""
        return self.group.nv
