"""PositionBarrier: keep a frame's origin inside an axis-aligned box of the world frame."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin

from ...keys import key
from ..kind import BuildContext, register
from .axis_box import AXES, AxisBox
from .barrier import Barrier, BarrierConfig

if TYPE_CHECKING:
    from ..robot import Robot



@dataclass
class PositionBarrierConfig(BarrierConfig):
    """``type: position``: a frame's origin inside an axis-aligned box of the world frame."""

    frame: str = key("")
    p_min: list[float] = key(factory=list)  # [m] world frame
    p_max: list[float] = key(factory=list)
    axis_selection: list[bool] = key(factory=lambda: [True, True, True])


def build_position_barrier(config: PositionBarrierConfig, context: BuildContext) -> PositionBarrier:
    return PositionBarrier(context.robot, config.frame, config.p_min, config.p_max, context.dt,
                           axis_selection=config.axis_selection, **config.barrier_keys())


class PositionBarrier(Barrier):
    """Rows per selected axis i: ``h = p_i - p_min_i`` (lower) and ``h = p_max_i - p_i`` (upper).

    Args:
        frame: frame whose origin is kept in the box.
        p_min, p_max: box corners in the world frame [m] (finite on selected axes).
        axis_selection: which of x, y, z are constrained.
    """

    native_form = "position_barrier"  # the compiled assembly updates this exact class itself (compiled_assembly.py)

    def __init__(
        self,
        robot: Robot,
        frame: str,
        p_min,
        p_max,
        dt: float,
        axis_selection=(True, True, True),
        name: str | None = None,
        **options: Any,
    ) -> None:
        name = name or f"{frame}_box"
        box = AxisBox(p_min, p_max, axis_selection, name)
        super().__init__(robot, box.size, dt, name, **options)
        self.box = box
        self.axes, self.p_min, self.p_max = box.axes, box.p_min, box.p_max
        self.frame = frame
        self.frame_id = robot.scene.frame_id(frame)
        self.row_names = box.row_names()
        self.select, self.offset = box.select, box.offset  # h = select @ p + offset, dh/dq = select @ J_linear
        self._columns = robot.group.v_columns
        self._data: pin.Data | None = None  # whose frame placement self._p views
        self._evaluated = np.zeros(box.size)

    def _position(self, data: pin.Data) -> np.ndarray:
        """View of the frame's origin in ``data`` (it follows every later kinematics call)."""
        if data is not self._data:
            self._p, self._data = data.oMf[self.frame_id].translation, data
        return self._p

    def update(self, q: np.ndarray, data: pin.Data, geom_data: pin.GeometryData) -> None:
        np.dot(self.select, self._position(data), out=self.value)
        self.value += self.offset
        J = pin.getFrameJacobian(self.scene.model, data, self.frame_id, pin.LOCAL_WORLD_ALIGNED)
        np.dot(self.select, J[:3, self._columns], out=self.jacobian)

    def evaluate(self, data: pin.Data, geom_data: pin.GeometryData) -> np.ndarray:
        h = np.dot(self.select, self._position(data), out=self._evaluated)  # a buffer reused by the next call
        h += self.offset
        return h

    @property
    def world_box(self) -> tuple[np.ndarray, np.ndarray]:
        return self.p_min, self.p_max

    def row_hint(self, row: int) -> str:
        axis, bound, face = self.box.face(row)
        h = float(self.value[row])
        if h < 0.0:
            return (
                f"frame {self.frame!r} is outside the box on {AXES[axis]} ({face}[{axis}] = {bound:.4g} m) and "
                f"no step within the joint limits moves it inward: the box may be too small or not reachable within "
                f"the joint limits (check p_min/p_max)"
            )
        return (
            f"frame {self.frame!r} is {h:.4g} m inside the box face on {AXES[axis]} ({face}[{axis}] = "
            f"{bound:.4g} m) and no step within the limits' boxes (position, velocity, acceleration) keeps the "
            f"row: the frame approaches the face faster than the bounds let it brake, or the box is out of reach "
            f"(check p_min/p_max)"
        )


register("barriers", "position", PositionBarrierConfig, build_position_barrier)
