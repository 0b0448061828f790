"""LookAtTask: point an axis of a frame at a point of the world (a camera on the wrist looking at a part),
optionally from a given distance.

World frame throughout. a = R axis (the frame's axis, unit), d = p_target - p (p the frame's origin),
r = |d|, u = d / r (the line of sight), w = a x u, s = |w| = sin(theta), c = a . u = cos(theta).

Pointing error (3,) [rad]: the rotation vector that turns a onto u, ``phi = theta w / s`` (theta =
atan2(s, c), the angle between the axis and the line of sight): 0 only when the axis points at the
target. (RoboPlan's LookAtTask uses ``a x u`` = sin(theta) n instead: it also vanishes when the axis
points straight away (theta = pi), and beyond 90 degrees, where sin decreases with theta, the step that
shrinks it turns the axis further away, to theta = pi. phi's only zero is theta = 0 and its size is the
angle itself, as FrameTask's rotation error.) ``phi`` is perpendicular to a: a rotation about the axis
itself is free.

Distance error (optional, 1,) [m]: ``r_target - r``.

Jacobian (derived here; v, omega: the world-aligned velocity of the frame's origin and its angular
velocity, ``J^LWA dq``): ``da = omega x a``, ``dd = -v``, ``du = -(I - u u^T) v / r``, so

    dw = [u]x [a]x omega - [a]x (I - u u^T) v / r
    dc = w . omega - a^T (I - u u^T) v / r
    dphi = f dw + g w (w^T dw) - w dc,   f = theta / s,  g = (c - f) / s^2  (-> 1 and -2/3 as theta -> 0)

(from ``dphi = d(f w)``, ``ds = w^T dw / s``, ``dtheta = c ds - s dc``), and ``d(r_target - r) = u^T v``.
At theta = pi exactly (w = 0, c < 0) the direction is undefined: phi = pi n for a fixed n perpendicular
to a, and its Jacobian that of a rotation of the frame, ``-(I - a a^T) J_omega``. A target at the frame's
origin (r < 1e-6) asks nothing (zero rows). W = diag(sqrt(pointing_cost) I3, sqrt(distance_cost)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

import numpy as np
import pinocchio as pin

from ...errors import InvalidInputError, Range, as_vector, unknown_name
from ...ranges import check_key
from ...keys import key
from ..kind import BuildContext, register
from .task import Task, TaskConfig

if TYPE_CHECKING:
    from ..robot import Robot

AXES = {"x": (1.0, 0.0, 0.0), "y": (0.0, 1.0, 0.0), "z": (0.0, 0.0, 1.0),
        "-x": (-1.0, 0.0, 0.0), "-y": (0.0, -1.0, 0.0), "-z": (0.0, 0.0, -1.0)}
_MIN_DISTANCE = 1e-6  # [m] a target closer than this to the frame's origin gives no direction
_HOLD_DISTANCE = 1.0  # [m] hold() puts the target this far along the axis when no distance is asked


def axis_vector(axis, what: str) -> np.ndarray:
    """``axis`` ("x", "-z", ... or 3 numbers in the frame) as a unit 3-vector, or raise naming ``what``."""
    if isinstance(axis, str):
        if axis not in AXES:
            raise InvalidInputError(f"{what}: unknown axis {axis!r}; expected one of {', '.join(AXES)} or 3 numbers")
        return np.array(AXES[axis])
    v = as_vector(axis, 3, what)
    norm = float(np.linalg.norm(v))
    if not norm > 1e-9:
        raise InvalidInputError(f"{what}: expected a nonzero 3-vector, got {v.tolist()}")
    return v / norm


@dataclass
class LookAtTaskConfig(TaskConfig):
    """``type: look_at``: a frame's axis pointing at a world point; goals (points) on ``~/<task>/target_point``."""

    frame: str = key("")
    axis: Union[str, list[float]] = key("z")  # x, y, z, -x, -y, -z or 3 numbers, in the frame
    point: Union[list[float], None] = key(None)  # [m] world; null: ahead along the axis at the start (hold still)
    pointing_cost: float = key(1.0, range=Range(unit="cost/rad"), runtime="pointing cost (angle axis / line of sight)")
    distance: Union[float, None] = key(None, range=Range(lo_open=True, unit="m"))  # null: any distance
    distance_cost: float = key(1.0, range=Range(unit="cost/m"), runtime="distance cost (with distance set)")
    # a goal turns the line of sight to the point jerk-limited, about a fixed axis (core/control/line_of_sight_shaper.py)
    max_turn_speed: float = key(4.0, range=Range(lo_open=True, unit="rad/s"))
    max_turn_acceleration: float = key(20.0, range=Range(lo_open=True, unit="rad/s^2"))
    max_turn_jerk: float = key(1000.0, range=Range(lo_open=True, unit="rad/s^3", inf_ok=True))
    target_leash: float = key(0.2, range=Range(lo_open=True, unit="rad", inf_ok=True))  # target direction to axis

    def validate(self, path: str) -> None:
        super().validate(path)
        if not self.frame:
            raise InvalidInputError(f"{path}.frame: required for a look_at task")
        axis_vector(self.axis, f"{path}.axis")
        if self.point is not None:
            as_vector(self.point, 3, f"{path}.point")

    def configured_goal(self, robot: Robot, q: np.ndarray) -> np.ndarray | None:
        """``point`` [m, world]; None when null."""
        return None if self.point is None else as_vector(self.point, 3, f"{self.name}.point")


def build_look_at_task(config: LookAtTaskConfig, context: BuildContext) -> LookAtTask:
    """The task, aimed at ``point``, or (none given) at a point ahead along the axis at the start."""
    scene = context.robot.scene
    if not scene.model.existFrame(config.frame):
        raise InvalidInputError(f"frame: {unknown_name('frame', config.frame, scene.frame_names)}")
    task = LookAtTask(context.robot, config.frame, config.point, config.axis, config.pointing_cost,
                      config.distance, config.distance_cost, task_gain=config.task_gain,
                      lm_damping=config.lm_damping, priority=config.priority, name=config.name)
    if config.point is None:
        task.hold(context.q)
    return task


def _cross(x, y) -> list[float]:
    """x x y of two 3-sequences of floats."""
    return [x[1] * y[2] - x[2] * y[1], x[2] * y[0] - x[0] * y[2], x[0] * y[1] - x[1] * y[0]]


class LookAtTask(Task):
    """Point ``axis`` of ``frame`` at a world point (module docstring).

    Args:
        target: the point [m] in the world frame; None: ahead along the axis at the first update.
        axis: "x", "y", "z", "-x", "-y", "-z" or a 3-vector in the frame (normalized).
        pointing_cost: [cost]/[rad] on the angle between the axis and the line of sight.
        distance: [m] the distance to keep from the point (a 4th row); None: any distance (3 rows).
        distance_cost: [cost]/[m] of that row.
    """

    goal = "point"  # set_target(np.ndarray (3,)) in the world frame
    follower = "line_of_sight"  # a goal turns the line of sight to it (core/control/follower_kinds.py)

    def __init__(
        self,
        robot: Robot,
        frame: str,
        target=None,
        axis="z",
        pointing_cost: float = 1.0,
        distance: float | None = None,
        distance_cost: float = 1.0,
        task_gain: float = 1.0,
        lm_damping: float = 0.0,
        priority: int = 1,
        name: str | None = None,
    ) -> None:
        name = name or f"{frame}_look_at"
        if distance is not None:
            distance = check_key(distance, "tasks[look_at].distance", f"{name}.distance")
        super().__init__(robot, 3 if distance is None else 4, task_gain, lm_damping, priority, name)
        self.frame = frame
        self.frame_id = robot.scene.frame_id(frame)
        self.axis = axis_vector(axis, f"{name}.axis")  # in the frame
        self.distance = distance
        self.sqrt_weight[:3] = math.sqrt(check_key(pointing_cost, "tasks[look_at].pointing_cost", f"{name}.pointing_cost"))
        if distance is not None:
            self.sqrt_weight[3] = math.sqrt(check_key(distance_cost, "tasks[look_at].distance_cost", f"{name}.distance_cost"))
        self._columns = robot.group.v_columns
        self._axis = tuple(self.axis.tolist())
        self._L = np.zeros((self.error.size, 6))  # jacobian = L J^LWA (rows: phi, then the distance)
        self.angle = 0.0  # theta [rad] at the last update
        self.range = 0.0  # r [m] at the last update
        self._data: pin.Data | None = None
        self._target = np.zeros(3)
        self._target_xyz = (0.0, 0.0, 0.0)  # the same as floats (the tick's arithmetic is on floats)
        self._targeted = False
        if target is not None:
            self.set_target(target)

    @property
    def target(self) -> np.ndarray | None:
        """The point [m] in the world frame (None: ahead along the axis at the next update)."""
        return self._target.copy() if self._targeted else None

    def set_target(self, point) -> None:
        """New point (3,) [m] to look at, in the world frame."""
        self._target[:] = as_vector(point, 3, f"{self.name}.target")
        self._target_xyz = tuple(self._target.tolist())
        self._targeted = True

    def _ahead(self, placement: pin.SE3) -> np.ndarray:
        """The point the axis looks at now, at the asked distance (else the current one, else 1 m)."""
        p = placement.translation
        if self.distance is not None:
            r = self.distance
        else:
            r = float(np.linalg.norm(self._target - p)) if self._targeted else 0.0
            r = r if r > 1e-3 else _HOLD_DISTANCE
        return p + r * (placement.rotation @ self.axis)

    def update(self, q: np.ndarray, data: pin.Data) -> None:
        if data is not self._data:  # views of data.oMf[frame]: they follow every later kinematics call
            placement = data.oMf[self.frame_id]
            self._p, self._R, self._data = placement.translation, placement.rotation, data
        if not self._targeted:
            self.set_target(self._ahead(data.oMf[self.frame_id]))
        # 3-vector algebra on floats (a numpy call per 3-vector costs more than its arithmetic), then one
        # product: every row is L [v; omega] = L J^LWA dq, L (m x 6)
        R = self._R.tolist()
        a = [row[0] * self._axis[0] + row[1] * self._axis[1] + row[2] * self._axis[2] for row in R]
        d = [t - p for t, p in zip(self._target_xyz, self._p.tolist())]
        r = self.range = math.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
        if r < _MIN_DISTANCE:  # no line of sight: ask nothing
            self.error.fill(0.0)
            self.jacobian.fill(0.0)
            self.angle = 0.0
            return
        u = [x / r for x in d]
        w = _cross(a, u)
        s, c = math.sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]), a[0] * u[0] + a[1] * u[1] + a[2] * u[2]
        theta = self.angle = math.atan2(s, c)
        if s < 1e-12 and c < 0.0:  # pointing straight away: rotate about any axis perpendicular to a
            n = _cross(a, (1.0, 0.0, 0.0) if abs(a[0]) < 0.9 else (0.0, 1.0, 0.0))
            scale = math.pi / math.sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2])
            phi = [scale * x for x in n]
            L = [[0.0, 0.0, 0.0] + [a[i] * a[j] - (i == j) for j in range(3)] for i in range(3)]  # -(I - a a^T) omega
        else:
            # dw = K [v; omega], K = [(w u^T - [a]x) / r | a u^T - c I]   ([a]x (I - u u^T) = [a]x - w u^T)
            Sa = ((0.0, -a[2], a[1]), (a[2], 0.0, -a[0]), (-a[1], a[0], 0.0))
            K = [[(w[i] * u[j] - Sa[i][j]) / r for j in range(3)] + [a[i] * u[j] - c * (i == j) for j in range(3)]
                 for i in range(3)]
            # dc = cw [v; omega], cw = [(c u - a) / r, w]   (a^T (I - u u^T) = a^T - c u^T)
            cw = [(c * u[j] - a[j]) / r for j in range(3)] + w
            if s > 1e-12:
                f = theta / s
                g = (c - f) / (s * s)
            else:  # aligned: the limits of f and g
                f, g = 1.0, -2.0 / 3.0
            phi = [f * x for x in w]
            # dphi = f dw + w (g w^T dw - dc)
            row = [g * (w[0] * K[0][j] + w[1] * K[1][j] + w[2] * K[2][j]) - cw[j] for j in range(6)]
            L = [[f * K[i][j] + w[i] * row[j] for j in range(6)] for i in range(3)]
        if self.distance is not None:
            L.append(u + [0.0, 0.0, 0.0])  # d(r_target - r) = u^T v
            phi.append(self.distance - r)
        self.error[:] = phi
        self._L[:] = L
        J = pin.getFrameJacobian(self.scene.model, data, self.frame_id, pin.LOCAL_WORLD_ALIGNED)
        np.dot(self._L, J[:, self._columns], out=self.jacobian)

    def hold(self, q: np.ndarray) -> None:
        pin.framesForwardKinematics(self.scene.model, self.scene.data, q)
        self.set_target(self._ahead(self.scene.data.oMf[self.frame_id]))

    def leash_point(self, data: pin.Data, out: np.ndarray) -> np.ndarray:
        """A point the axis looks at: 1 m ahead of the frame along it (the direction is what the leash bounds)."""
        T = pin.updateFramePlacement(self.scene.model, data, self.frame_id)
        np.dot(T.rotation, self.axis, out=out)
        out += T.translation
        return out

    def set_parameter(self, name: str, value: Any) -> None:
        if name == "pointing_cost":
            self.sqrt_weight[:3] = math.sqrt(float(value))
        elif name == "distance_cost":
            if self.distance is not None:
                self.sqrt_weight[3] = math.sqrt(float(value))
        else:
            super().set_parameter(name, value)


register("tasks", "look_at", LookAtTaskConfig, build_look_at_task)
