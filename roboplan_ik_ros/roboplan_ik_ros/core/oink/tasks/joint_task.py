"""JointTask: drive some of the group's joints to target values (pymanoid's DOF task)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

import numpy as np
import pinocchio as pin

from ...errors import InvalidInputError, Range, as_vector
from ...ranges import check_key
from ...keys import key
from ..kind import BuildContext, register
from .joint_target_task import JointTargetTask
from .task import TaskConfig, named_state

if TYPE_CHECKING:
    from ..robot import Robot


@dataclass
class JointTaskConfig(TaskConfig):
    """``type: joint``: named joints of the group to target values; goals: the group's q, of which only
    those joints are used."""

    joints: list[str] = key(factory=list)  # required: the group's joints the task drives
    target: Union[str, list[float]] = key("current")  # "current", an SRDF group_state, or one value per listed joint
    weights: Union[float, list[float]] = key(1.0, range=Range(unit="cost/rad"), size=-1)  # scalar or per listed joint
    # a goal's target moves there jerk-limited (core/control/target_shaper.py): at most this speed per joint (null:
    # the joint's velocity limit), the acceleration and jerk a share of the acceleration limit's
    max_target_speed: Union[float, None] = key(None, range=Range(lo_open=True, unit="rad/s"))
    target_leash: float = key(0.1, range=Range(lo_open=True, unit="rad", inf_ok=True))  # target-to-joint; .inf = none

    def validate(self, path: str) -> None:
        super().validate(path)
        if not self.joints:
            raise InvalidInputError(f"{path}.joints: required for a joint task: a list of joints of the group")
        twice = sorted({j for j in self.joints if self.joints.count(j) > 1})
        if twice:
            raise InvalidInputError(f"{path}.joints: {twice[0]!r} is listed twice; expected each joint once")
        for name in ("target", "weights"):
            value = getattr(self, name)
            if isinstance(value, list) and len(value) != len(self.joints):
                raise InvalidInputError(f"{path}.{name}: {len(value)} values for {len(self.joints)} joints "
                                        f"{self.joints}; expected one per joint (or "
                                        f"{'a group_state name' if name == 'target' else 'one number'})")

    def configured_goal(self, robot: Robot, q: np.ndarray) -> np.ndarray | None:
        """The group q ``target`` names (:func:`configured_joint_target`); None for "current"."""
        return None if self.target == "current" else configured_joint_target(self, robot, q)

    def srdf_states(self) -> tuple[str, ...]:
        return named_state(self.target)


def configured_joint_target(config: JointTaskConfig, robot: Robot, q: np.ndarray) -> np.ndarray:
    """The group q that the ``target`` key names at configuration q (full nq; "current" and the joints not
    listed: q's)."""
    if isinstance(config.target, list):
        for j in config.joints:  # before q_from_joint_positions, whose error would not name the key
            _check_joint(robot, j, f"{config.name}.joints")
        q_target = robot.scene.q_from_joint_positions(config.joints, config.target, q)
    elif config.target == "current":
        q_target = q
    else:
        try:
            q_target = robot.scene.named_configuration(config.target, q)
        except InvalidInputError as exc:
            raise InvalidInputError(f"{config.name}.target: {exc}; or 'current', or one value per joint") from exc
    return q_target[robot.group.q_indices]


def build_joint_task(config: JointTaskConfig, context: BuildContext) -> JointTask:
    """The task, aimed at the configured target (default: the joints' values at the start)."""
    return JointTask(context.robot, config.joints, configured_joint_target(config, context.robot, context.q),
                     config.weights, task_gain=config.task_gain, lm_damping=config.lm_damping,
                     priority=config.priority, name=config.name)


def _check_joint(robot: Robot, joint: str, path: str) -> int:
    """The group v index of ``joint`` (InvalidInputError naming ``path`` and the group's joints if none)."""
    names = robot.group.joint_names
    if joint not in names:
        raise InvalidInputError(f"{path}: {joint!r} is not a joint of group {robot.group.name!r}; "
                                f"valid: {', '.join(names)}")
    return names.index(joint)


class JointTask(JointTargetTask):
    """Error ``e_i = (q_target ⊖ q)`` at each listed joint i [rad or m] (``pin.difference``: a continuous
    joint by its angle), Jacobian ``-S`` with S the selection of those joints' columns (one row each).

    Args:
        joints: names of the group's joints the task drives (each once).
        q_target: target of the group's joints, size group nq; only the listed joints' values are used.
        weights: cost per listed joint (scalar or one each) [cost]/[rad]; W = diag(sqrt(weights)).
    """

    follower = "joint_positions"  # joint goals, shaped within target_leash (core/control/follower_kinds.py)

    def __init__(
        self,
        robot: Robot,
        joints: Sequence[str],
        q_target,
        weights=1.0,
        task_gain: float = 1.0,
        lm_damping: float = 0.0,
        priority: int = 1,
        name: str = "joint",
    ) -> None:
        joints = list(joints)
        if not joints or len(set(joints)) != len(joints):
            raise InvalidInputError(f"{name}.joints: expected a non-empty list of distinct joints, got {joints}")
        rows = [_check_joint(robot, j, f"{name}.joints") for j in joints]
        super().__init__(robot, len(joints), q_target, task_gain, lm_damping, priority, name)
        self.joints = tuple(joints)
        w = as_vector(check_key(weights, "tasks[joint].weights", f"{name}.weights", size=-1), len(joints),
                      f"{name}.weights")
        self.sqrt_weight[:] = np.sqrt(w)
        self.jacobian[np.arange(len(rows)), rows] = -1.0
        self._v = robot.group.v_indices[rows]  # each row's index in a full-model v

    def update(self, q: np.ndarray, data: pin.Data) -> None:
        np.take(pin.difference(self.scene.model, q, self._q_target_full), self._v, out=self.error)


register("tasks", "joint", JointTaskConfig, build_joint_task)
