"""SphereBarrier: keep a frame's origin inside or outside a sphere (pink's BodySphericalBarrier family).

One row, with p the frame's origin, c the sphere's centre (both in the world frame), d = |p - c| and r the
radius [m]:

    inside:  h = r - d,   dh/dq = -n^T (J_p - J_c)
    outside: h = d - r,   dh/dq = +n^T (J_p - J_c)

with n = (p - c) / d and J_p, J_c the LOCAL_WORLD_ALIGNED linear Jacobians of the two points over the
group. The centre is ``center`` [m] in the coordinates of ``center_frame``: the world frame by default
(a fixed point, J_c = 0), or a frame of the robot model, which the centre then moves with (a point at
offset o of frame f moves at ``v_f + w_f x (R_f o)``: J_c = J_f,lin - [R_f o]x J_f,ang). h is a distance in
metres, unlike pink's squared one (``d^2 - d_min^2``), so that ``safety_margin`` and the barrier
tolerance mean metres here as for the other barriers. Where p = c the normal is undefined: the row is
zeroed (as the collision barrier does for coincident witness points); there ``inside`` holds with
h = r, and ``outside`` is violated by r with no direction to recover along.
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
from .barrier import Barrier, BarrierConfig

if TYPE_CHECKING:
    from ..robot import Robot

_MIN_DISTANCE = 1e-9  # [m] below it the normal is undefined: the row is zeroed


@dataclass
class SphereBarrierConfig(BarrierConfig):
    """``type: sphere``: a frame's origin inside (``inside: true``) or outside (``false``) a sphere."""

    # no safe-displacement term unless asked: its weight r / |dh/dq|^2 grows without bound where the frame
    # cannot move along the normal, which would freeze the arm
    safe_displacement_gain: float = key(0.0, range=Range(), runtime="safe-displacement regularization gain")
    frame: str = key("")
    radius: Union[float, None] = key(None, range=Range(lo_open=True, unit="m"), runtime="sphere radius [m]")
    center: list[float] = key(factory=lambda: [0.0, 0.0, 0.0])  # [m] in center_frame's coordinates
    center_frame: str = key("")  # "" = the world frame; a robot frame: the centre moves with it
    inside: Union[bool, None] = key(None)  # true: keep the frame inside; false: outside (required)

    def validate(self, path: str) -> None:
        super().validate(path)
        if not self.frame:
            raise InvalidInputError(f"{path}.frame: required for a sphere barrier")
        if self.radius is None:
            raise InvalidInputError(f"{path}.radius: required for a sphere barrier; expected a finite number > 0 [m]")
        if self.inside is None:
            raise InvalidInputError(f"{path}.inside: required for a sphere barrier; expected true (keep the frame "
                                    f"inside the sphere) or false (outside)")


def build_sphere_barrier(config: SphereBarrierConfig, context: BuildContext) -> SphereBarrier:
    return SphereBarrier(context.robot, config.frame, config.center, config.radius, config.inside, context.dt,
                         center_frame=config.center_frame or None, **config.barrier_keys())


class SphereBarrier(Barrier):
    """``h = r - |p - c|`` (inside) or ``|p - c| - r`` (outside), one row (module docstring).

    Args:
        frame: the frame whose origin p is kept inside or outside.
        center: the centre [m] in ``center_frame``'s coordinates (the world frame if None).
        radius: r [m] > 0.
        inside: True keeps p inside the sphere, False outside.
        center_frame: a frame of the robot model that the centre moves with; None: the world frame.
    """

    option_defaults = {"safe_displacement_gain": 0.0}  # no safe-displacement term unless asked

    def __init__(
        self,
        robot: Robot,
        frame: str,
        center,
        radius: float,
        inside: bool,
        dt: float,
        center_frame: str | None = None,
        name: str | None = None,
        **options: Any,
    ) -> None:
        name = name or f"{frame}_sphere"
        super().__init__(robot, 1, dt, name, **options)
        if not isinstance(inside, (bool, np.bool_)):
            raise InvalidInputError(f"{name}.inside: expected true or false, got {inside!r}")
        self.frame = frame
        self.frame_id = robot.scene.frame_id(frame)
        self.center = as_vector(center, 3, f"{name}.center")
        self.center_frame = center_frame
        self.center_frame_id = None if center_frame is None else robot.scene.frame_id(center_frame)
        self.radius = check_key(radius, "barriers[sphere].radius", f"{name}.radius")
        self.inside = bool(inside)
        self._sign = -1.0 if self.inside else 1.0  # dh/dd
        self.row_names = ["inside" if self.inside else "outside"]
        self._columns = robot.group.v_columns
        self.distance = 0.0  # d at the last update [m]
        self._offset = np.zeros(3)  # p - c
        self._center = np.zeros(3)  # c in the world frame
        self._normal = np.zeros(3)
        self._lever, self._moment = np.zeros(3), np.zeros(3)  # c - the centre frame's origin; lever x normal
        self._evaluated = np.zeros(1)

    def _center_in_world(self, data: pin.Data) -> np.ndarray:
        """c in the world frame, from ``data``'s frame placements (in place into self._center)."""
        if self.center_frame_id is None:
            return self.center
        placement = data.oMf[self.center_frame_id]
        np.dot(placement.rotation, self.center, out=self._center)
        self._center += placement.translation
        return self._center

    def _distance(self, data: pin.Data) -> float:
        """d = |p - c| at ``data``'s frame placements (p - c into self._offset)."""
        np.subtract(data.oMf[self.frame_id].translation, self._center_in_world(data), out=self._offset)
        return float(np.sqrt(self._offset @ self._offset))

    def _h(self, d: float) -> float:
        return self.radius - d if self.inside else d - self.radius

    def update(self, q: np.ndarray, data: pin.Data, geom_data: pin.GeometryData) -> None:
        d = self.distance = self._distance(data)
        self.value[0] = self._h(d)
        row = self.jacobian[0]
        if d < _MIN_DISTANCE:  # the normal is undefined
            row.fill(0.0)
            return
        np.multiply(self._offset, self._sign / d, out=self._normal)  # dh/dp
        model = self.scene.model
        J = pin.getFrameJacobian(model, data, self.frame_id, pin.LOCAL_WORLD_ALIGNED)
        np.dot(self._normal, J[:3, self._columns], out=row)
        if self.center_frame_id is not None:
            Jc = pin.getFrameJacobian(model, data, self.center_frame_id, pin.LOCAL_WORLD_ALIGNED)
            # the centre's velocity v_f + w_f x a, a = R_f o: n^T (v_f + w_f x a) = n^T v_f + (a x n)^T w_f
            a = self._lever
            np.subtract(self._center, data.oMf[self.center_frame_id].translation, out=a)
            (a0, a1, a2), (n0, n1, n2) = a, self._normal
            self._moment[:] = (a1 * n2 - a2 * n1, a2 * n0 - a0 * n2, a0 * n1 - a1 * n0)  # a x n (np.cross: ~10x slower)
            row -= np.dot(self._normal, Jc[:3, self._columns])
            row -= np.dot(self._moment, Jc[3:, self._columns])

    def evaluate(self, data: pin.Data, geom_data: pin.GeometryData) -> np.ndarray:
        self._evaluated[0] = self._h(self._distance(data))
        return self._evaluated

    def row_hint(self, row: int) -> str:
        point = f"[{', '.join(f'{x:.4g}' for x in self.center)}]"
        where = f"the sphere of radius {self.radius:.4g} m around {point} " + (
            "(world)" if self.center_frame is None else f"in frame {self.center_frame!r}")
        if self.inside:
            return (f"frame {self.frame!r} cannot stay inside {where} within the joint limits: enlarge the radius or "
                    f"move the centre")
        if self.distance < _MIN_DISTANCE:
            return (f"frame {self.frame!r} is at the centre of {where}, where no direction leads out: move the "
                    f"centre or shrink the radius")
        return f"frame {self.frame!r} cannot stay outside {where} within the joint limits: shrink the radius"


register("barriers", "sphere", SphereBarrierConfig, build_sphere_barrier)
