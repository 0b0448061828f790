"""ComTask: drive the robot's centre of mass (all of the model's mass) to a target point of the world.

The centre of mass and its Jacobian come from pinocchio (``jacobianCenterOfMass`` on the joint Jacobians
the solver has computed). Pinocchio leaves out the mass fixed to the world (``model.inertias[0]``: the
root link of a fixed-base model and the links welded to it; on TALOS, whose root is the pelvis, 13.5 of
its 90.3 kg), so :class:`WholeBodyCom` adds it back:

    c = (m_0 c_0 + m_moving c_moving) / M,    dc/dq = (m_moving / M) J_moving,    M = m_0 + m_moving.

(On a model whose legs are joints outside the group, their mass moves with them and is in m_moving;
their columns are simply not the group's.)

Error (3,) ``e = c_target - c(q)`` [m] in the world frame, Jacobian ``-dc/dq``; W = diag(sqrt(cost)) per
world axis. An axis with cost 0 is not part of the task: its row is 0 (error and Jacobian), so at a
high priority it does not hold the lower priorities back (a zero row constrains nothing in the
nullspace; a balance task usually leaves the height free: ``cost: [1, 1, 0]``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

import numpy as np
import pinocchio as pin

from ...errors import InvalidInputError, Range, as_vector
from ...ranges import check_key
from ...keys import key
from ..kind import BuildContext, register
from .task import Task, TaskConfig

if TYPE_CHECKING:
    from ..robot import Robot


class WholeBodyCom:
    """The centre of mass of all of a model's mass and its Jacobian over a group's columns (world frame).

    :meth:`update` needs the joint Jacobians at q in ``data`` (``computeJointJacobians``);
    :meth:`evaluate` only the joint placements (``forwardKinematics``)."""

    def __init__(self, model: pin.Model, columns, nv: int, what: str) -> None:
        self.model = model
        fixed = model.inertias[0]  # the bodies welded to the world (pinocchio's COM leaves them out)
        self.fixed_moment = fixed.mass * np.array(fixed.lever)  # m_0 c_0 [kg m], world frame
        self.moving_mass = pin.computeTotalMass(model)
        self.total_mass = fixed.mass + self.moving_mass
        if not self.total_mass > 0.0:
            raise InvalidInputError(f"{what}: the robot model has no mass (no <inertial> in the URDF); a centre of "
                                    f"mass needs one")
        self._share = self.moving_mass / self.total_mass
        self._columns = columns
        self.position = np.zeros(3)  # c [m], world frame
        self.jacobian = np.zeros((3, nv))  # dc/dq over the group

    def _combine(self, c_moving: np.ndarray, out: np.ndarray) -> np.ndarray:
        np.multiply(c_moving, self.moving_mass, out=out)
        out += self.fixed_moment
        out /= self.total_mass
        return out

    def update(self, data: pin.Data) -> None:
        """c and dc/dq at the configuration whose joint Jacobians ``data`` holds."""
        if self.moving_mass > 0.0:
            pin.jacobianCenterOfMass(self.model, data, True)  # from data.J (no kinematics pass); fills data.com[0]
            np.multiply(data.Jcom[:, self._columns], self._share, out=self.jacobian)
            self._combine(data.com[0], self.position)
        else:  # everything is welded to the world
            np.divide(self.fixed_moment, self.total_mass, out=self.position)

    def evaluate(self, data: pin.Data, out: np.ndarray) -> np.ndarray:
        """c into ``out`` at the configuration whose joint placements ``data`` holds."""
        if self.moving_mass > 0.0:
            return self._combine(pin.centerOfMass(self.model, data, pin.KinematicLevel.POSITION, False), out)
        return np.divide(self.fixed_moment, self.total_mass, out=out)

    def at(self, q: np.ndarray) -> np.ndarray:
        """c at configuration q (a new array; not for the control tick)."""
        data = self.model.createData()
        pin.forwardKinematics(self.model, data, q)
        return self.evaluate(data, np.zeros(3))


@dataclass
class ComTaskConfig(TaskConfig):
    """``type: com``: the centre of mass in the world frame; goals (points) on ``~/<task>/target_point``."""

    cost: Union[float, list[float]] = key(1.0, range=Range(unit="cost/m"), size=3,
                                          runtime="centre-of-mass cost (world x, y, z; 0 frees the axis)")
    # a goal's point moves there along a straight line, jerk-limited (core/control/target_shaper.py)
    max_target_speed: float = key(0.1, range=Range(lo_open=True, unit="m/s"))
    max_target_acceleration: float = key(0.5, range=Range(lo_open=True, unit="m/s^2"))
    max_target_jerk: float = key(5.0, range=Range(lo_open=True, unit="m/s^3", inf_ok=True))
    target_leash: float = key(0.05, range=Range(lo_open=True, unit="m", inf_ok=True))  # target to centre of mass


def build_com_task(config: ComTaskConfig, context: BuildContext) -> ComTask:
    """The task, aimed at the centre of mass at the starting configuration (hold it until a goal)."""
    task = ComTask(context.robot, None, config.cost, task_gain=config.task_gain, lm_damping=config.lm_damping,
                   priority=config.priority, name=config.name)
    task.hold(context.q)
    return task


class ComTask(Task):
    """Track a world point with the centre of mass of the whole model (module docstring).

    Args:
        target: the target point [m] in the world frame; None: the centre of mass at the first update.
        cost: scalar or per world axis [cost]/[m]; 0 frees that axis (its row is zero).
    """

    goal = "point"  # set_target(np.ndarray (3,)) in the world frame
    follower = "point"  # a goal moves the target along a straight line (core/control/follower_kinds.py)

    def __init__(
        self,
        robot: Robot,
        target=None,
        cost=1.0,
        task_gain: float = 1.0,
        lm_damping: float = 0.0,
        priority: int = 1,
        name: str = "com",
    ) -> None:
        super().__init__(robot, 3, task_gain, lm_damping, priority, name)
        self.com = WholeBodyCom(robot.scene.model, robot.group.v_columns, robot.nv, name)
        self._set_cost(as_vector(check_key(cost, "tasks[com].cost", f"{name}.cost", size=3), 3, f"{name}.cost"))
        self._target = np.zeros(3)
        self._targeted = False
        if target is not None:
            self.set_target(target)

    def _set_cost(self, cost: np.ndarray) -> None:
        np.sqrt(cost, out=self.sqrt_weight)
        self._free = cost == 0.0  # axes that are not part of the task

    @property
    def target(self) -> np.ndarray | None:
        """The target point [m] in the world frame (None: the centre of mass at the next update)."""
        return self._target.copy() if self._targeted else None

    def set_target(self, point) -> None:
        """New target point (3,) [m] in the world frame."""
        self._target[:] = as_vector(point, 3, f"{self.name}.target")
        self._targeted = True

    @property
    def position(self) -> np.ndarray:
        """The centre of mass [m] (world) at the last update (a view: copy to keep)."""
        return self.com.position

    def update(self, q: np.ndarray, data: pin.Data) -> None:
        com = self.com
        com.update(data)
        if not self._targeted:
            self.set_target(com.position)
        np.subtract(self._target, com.position, out=self.error)
        np.negative(com.jacobian, out=self.jacobian)
        if self._free.any():
            self.error[self._free] = 0.0
            self.jacobian[self._free] = 0.0

    def hold(self, q: np.ndarray) -> None:
        self.set_target(self.com.at(q))

    def leash_point(self, data: pin.Data, out: np.ndarray) -> np.ndarray:
        """The centre of mass."""
        return self.com.evaluate(data, out)

    def set_parameter(self, name: str, value: Any) -> None:
        if name == "cost":
            self._set_cost(np.broadcast_to(np.asarray(value, dtype=float), (3,)).copy())
        else:
            super().set_parameter(name, value)


register("tasks", "com", ComTaskConfig, build_com_task)
