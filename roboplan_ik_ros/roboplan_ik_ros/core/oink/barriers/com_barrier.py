"""ComBarrier: keep the robot's centre of mass (all of the model's mass) inside an axis-aligned box of the
world frame: a standing robot's balance margin (the box over its support polygon) while the arms reach.

Rows per selected axis i: ``h = c_i - p_min_i`` and ``h = p_max_i - c_i`` [m], with c and dc/dq from
:class:`~..tasks.com_task.WholeBodyCom` (the mass welded to the world included). Unlike a ``com`` task
at a higher priority, which holds the centre of mass at its target, the barrier leaves it free inside
the box, so the arms reach as far as the box allows; and it is a hard row, not a cost.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin

from ...errors import Range
from ...keys import key
from ..kind import BuildContext, register
from ..tasks.com_task import WholeBodyCom
from .axis_box import AXES, AxisBox
from .barrier import Barrier, BarrierConfig

if TYPE_CHECKING:
    from ..robot import Robot



@dataclass
class ComBarrierConfig(BarrierConfig):
    """``type: com``: the centre of mass inside an axis-aligned box of the world frame."""

    # no safe-displacement term unless asked: the centre of mass moves little per radian (TALOS: |dc/dq| per
    # joint <= 0.04 m/rad), so its weight r / |J_h|^2 would outweigh every task and freeze the robot
    safe_displacement_gain: float = key(0.0, range=Range(), runtime="safe-displacement regularization gain")
    p_min: list[float] = key(factory=list)  # [m] world frame
    p_max: list[float] = key(factory=list)
    axis_selection: list[bool] = key(factory=lambda: [True, True, True])


def build_com_barrier(config: ComBarrierConfig, context: BuildContext) -> ComBarrier:
    return ComBarrier(context.robot, config.p_min, config.p_max, context.dt, axis_selection=config.axis_selection,
                      **config.barrier_keys())


class ComBarrier(Barrier):
    """Rows per selected axis i: ``h = c_i - p_min_i`` (lower) and ``h = p_max_i - c_i`` (upper).

    Args:
        p_min, p_max: box corners in the world frame [m] (finite on selected axes).
        axis_selection: which of x, y, z are constrained (a standing robot: ``[true, true, false]``).
    """

    option_defaults = {"safe_displacement_gain": ComBarrierConfig.safe_displacement_gain}  # the kind's YAML default: 0

    def __init__(
        self,
        robot: Robot,
        p_min,
        p_max,
        dt: float,
        axis_selection=(True, True, True),
        name: str = "com_box",
        **options: Any,
    ) -> None:
        box = AxisBox(p_min, p_max, axis_selection, name)
        super().__init__(robot, box.size, dt, name, **options)
        self.box = box
        self.axes, self.p_min, self.p_max = box.axes, box.p_min, box.p_max
        self.com = WholeBodyCom(robot.scene.model, robot.group.v_columns, robot.nv, name)
        self.row_names = box.row_names("com ")
        self.select, self.offset = box.select, box.offset  # h = select @ c + offset, dh/dq = select @ dc/dq
        self._c = np.zeros(3)
        self._evaluated = np.zeros(box.size)

    @property
    def position(self) -> np.ndarray:
        """The centre of mass [m] (world) at the last update (a view: copy to keep)."""
        return self.com.position

    def update(self, q: np.ndarray, data: pin.Data, geom_data: pin.GeometryData) -> None:
        self.com.update(data)
        np.dot(self.select, self.com.position, out=self.value)
        self.value += self.offset
        np.dot(self.select, self.com.jacobian, out=self.jacobian)

    def evaluate(self, data: pin.Data, geom_data: pin.GeometryData) -> np.ndarray:
        h = np.dot(self.select, self.com.evaluate(data, self._c), out=self._evaluated)  # reused by the next call
        h += self.offset
        return h

    @property
    def world_box(self) -> tuple[np.ndarray, np.ndarray]:
        return self.p_min, self.p_max

    def row_hint(self, row: int) -> str:
        axis, bound, face = self.box.face(row)
        h = float(self.value[row])
        where = (f"outside the box on {AXES[axis]}" if h < 0.0 else
                 f"{h:.4g} m inside the box face on {AXES[axis]}")
        return (f"the centre of mass is {where} ({face}[{axis}] = {bound:.4g} m) and no step within the "
                f"limits keeps the row: the group's joints cannot move it back (or brake) fast enough, or the box is "
                f"out of their reach (check p_min/p_max and the group)")


register("barriers", "com", ComBarrierConfig, build_com_barrier)
