"""Base class of OInK tasks: a residual ``J dq + alpha e`` to drive to zero, weighted by W."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin

from ...errors import InvalidInputError, Range
from ...keys import check_declared, key
from ...ranges import check_key
from ..kind import declare_ranges

if TYPE_CHECKING:
    from ..robot import Robot


@dataclass
class TaskConfig:
    """The YAML keys every task kind has (``tasks:`` entries); a kind's config dataclass adds its own."""

    name: str
    type: str
    priority: int = key(1)  # 1 = highest; lower priorities act in the nullspace of higher ones
    task_gain: float = key(1.0, range=Range(0.0, 1.0, lo_open=True), runtime="share of the task error corrected per step")
    lm_damping: float = key(0.0, range=Range(), runtime="Levenberg-Marquardt damping factor")
    exclude_joints: list[str] = key(factory=list)  # joints of the group the task does not use (zero Jacobian columns)
    given_keys: frozenset = field(default=frozenset(), repr=False, compare=False)  # keys set in the YAML

    def validate(self, path: str) -> None:
        """Check the keys' ranges and the kind's own rules (an InvalidInputError naming the key under ``path``)."""
        check_declared(self, path)

    def configured_goal(self, robot: Robot, q: np.ndarray) -> Any:
        """The goal this entry's keys configure at configuration q (full nq), in the form of its kind's
        :attr:`Task.goal` (a configuration or joint task's ``target``, a look_at's ``point``): what the control
        loop's ``apply_configured_targets`` hands to the task's follower. None: no configured goal (the default;
        a ``target: current``, a null point)."""
        return None

    def srdf_states(self) -> tuple[str, ...]:
        """The SRDF group_states this entry's keys name (a ``target`` given by name; () by default: none). The
        node waits for the semantic description (robot_description_semantic) when an entry names one."""
        return ()


def named_state(target: Any) -> tuple[str, ...]:
    """The SRDF group_state a joint ``target`` key names: ``(name,)``, or () for "current" or joint values."""
    return (target,) if isinstance(target, str) and target != "current" else ()


declare_ranges("tasks", TaskConfig)


class Task(ABC):
    """A task contributes ``1/2 || W (J N dq + alpha e) ||^2 + mu/2 ||dq||^2`` to the QP objective.

    Subclasses fill :attr:`error` (shape (m,)) and :attr:`jacobian` (shape (m, nv_group)) in
    :meth:`update`; the Jacobian carries the sign that makes ``J dq = -alpha e`` move toward the
    target (``J = -d(measured)/dq``). :attr:`sqrt_weight` is the diagonal of W (sqrt of the costs).

    A task may leave some of the group's joints alone (:meth:`exclude_joints`, the ``exclude_joints``
    key, pymanoid's ``exclude_dofs``): the solver zeroes their columns of :attr:`jacobian` after every
    update, so the task neither moves them nor counts their motion (their step comes from the other
    tasks and the regularization alone).

    Args:
        task_gain: alpha in (0, 1], the share of the error corrected in one step (low-pass gain).
        lm_damping: Levenberg-Marquardt factor; mu = lm_damping * ||W alpha e||^2 [cost].
        priority: integer >= 1; 1 is highest. Lower priorities act in the nullspace of higher ones.
    """

    # True for a kind whose error is the displacement it asks of this step (a reference refreshed at every
    # update: damping, low acceleration, joint velocity), not a function of q driven to zero: its Jacobian is
    # minus a selection of the group's joints (J dq + e = reference - dq), not d(error)/dq (test_kinds.py
    # checks that form instead of finite differences).
    step_reference = False

    # The goal this kind takes (:meth:`set_target`'s value; the node's topic): "" none, "pose" (pin.SE3 in the
    # world frame, or in ``goal_frame`` when set), "point" (world point, (3,)), "joints" (the group's q),
    # "velocities" (the group's v [rad/s or m/s]: a stream)
    goal = ""
    goal_frame = ""
    # The target set_target last took (the kind's own form: pin.SE3, a point, q, ...); None for a kind without one
    # (damping) and until a target is set
    target = None
    # The follower the control loop gives this kind's goals, by name; it decides the goal inputs the kind accepts
    # (the loop's methods, the node's topics). "" takes no goals. The names and what each asks of a kind:
    # core/control/follower_kinds.py ("frame_pose", "relative_pose", "posture", "joint_positions", "point",
    # "line_of_sight", "velocities").
    follower = ""

    def __init__(self, robot: Robot, m: int, task_gain: float, lm_damping: float, priority: int, name: str) -> None:
        gain = check_key(task_gain, "tasks[].task_gain", f"{name}.task_gain")
        if isinstance(priority, bool) or not isinstance(priority, (int, np.integer)) or priority < 1:
            raise InvalidInputError(f"{name}.priority: expected an integer >= 1 (1 = highest), got {priority!r}")
        self.name = name
        self.task_gain = gain
        self.lm_damping = check_key(lm_damping, "tasks[].lm_damping", f"{name}.lm_damping")
        self.priority = int(priority)
        self.scene = robot.scene  # model, frames and limits
        self.group = robot.group  # the joints dq moves
        self.error = np.zeros(m)
        self.jacobian = np.zeros((m, robot.nv))
        self.sqrt_weight = np.ones(m)
        self.excluded: np.ndarray | None = None  # the group's v indices the task does not use (None: none)

    @abstractmethod
    def update(self, q: np.ndarray, data: pin.Data) -> None:
        """Fill :attr:`error` and :attr:`jacobian` at q; ``data`` holds joint Jacobians and frames at q."""

    def exclude_joints(self, joint_names: Sequence[str]) -> None:
        """Do not use the group's joints ``joint_names`` (an empty list: use every joint), from the next
        solve on (the controller sets the ``exclude_joints`` key when it builds the task)."""
        names = list(self.group.joint_names)
        unknown = [j for j in joint_names if j not in names]
        if unknown:
            raise InvalidInputError(f"{self.name}.exclude_joints: {unknown[0]!r} is not a joint of group "
                                    f"{self.group.name!r}; valid: {', '.join(names)}")
        columns = sorted({names.index(j) for j in joint_names})
        if len(columns) == len(names):
            raise InvalidInputError(f"{self.name}.exclude_joints: excludes every joint of group {self.group.name!r}; "
                                    "expected at least one joint left for the task")
        self.excluded = np.array(columns, dtype=np.intp) if columns else None

    def hold(self, q: np.ndarray) -> None:
        """Point the task's target at configuration q (full nq), so that it asks for no motion there; a
        task without a target (damping, ...) has nothing to do."""

    def leash_point(self, data: pin.Data, out: np.ndarray) -> np.ndarray:
        """For a kind whose goals are world points (follower "point" or "line_of_sight"): the point [m, world] its
        target is leashed to, from the joint placements in ``data`` (forward kinematics at the tick's q), written
        into ``out`` (3,) and returned."""
        raise NotImplementedError(f"{type(self).__name__} ({self.name!r}) takes no point goals")

    @property
    def position_error(self) -> float:
        """[m] |position error| at the last update, for reports; 0 for a kind without a pose."""
        return 0.0

    @property
    def orientation_error(self) -> float:
        """[rad] |rotation error| at the last update, for reports; 0 for a kind without a pose."""
        return 0.0

    def set_parameter(self, name: str, value: Any) -> None:
        """A runtime parameter of this task's kind changed (already checked against its range)."""
        setattr(self, name, float(value))
