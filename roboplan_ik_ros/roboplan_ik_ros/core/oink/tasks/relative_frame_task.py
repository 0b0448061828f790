"""RelativeFrameTask: drive the pose of a frame in another robot frame (two hands on one part, a tool
held in the other hand) to a target pose T_reference_target.

Measured: ``T_rf = T_r^-1 T_f`` (r = ``reference``, f = ``frame``, both world poses from the model).
Error (6,), everything in the REFERENCE frame's axes:

    e_pos = p_target - p_rf                   [m]   p_rf = R_r^T (p_f - p_r)
    e_rot = log3(R_target R_rf^T)             [rad] R_rf = R_r^T R_f

(``e_rot`` is the rotation that takes the frame's orientation to the target's, as a rotation vector
in the reference frame: the relative analogue of FrameTask's world-aligned ``log3(R_target R^T)``.)

Jacobian (derived here; v, w are the world-aligned velocity of a frame's origin and its angular
velocity, ``J^LWA dq``; d = p_f - p_r):

    d p_rf = R_r^T (v_f - v_r - w_r x d)      the velocity of f's origin relative to the point of r's
                                              body that coincides with it, in r's axes
    d R_rf = [w_rel]x R_rf,  w_rel = R_r^T (w_f - w_r)
    E = R_target R_rf^T  =>  dE = E [-w_rel]x  (a right perturbation by -w_rel)

so ``J_pos = -R_r^T (J_v,f - J_v,r + [d]x J_w,r)`` and ``J_rot = -Jlog3(E) R_r^T (J_w,f - J_w,r)``: the
exact derivative of the error (finite differences agree at any error, not only near the target).
Joints that move both frames (those on the common part of the two chains) cancel. W = diag(sqrt(position_cost)
per reference axis, sqrt(orientation_cost) per reference axis). The target defaults to the relative
pose at the start: the task holds the grasp until a goal comes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

import numpy as np
import pinocchio as pin

from ...errors import InvalidInputError, Range, unknown_name
from ...keys import key
from ..kind import BuildContext, register
from .pose_task import PoseTask
from .task import TaskConfig

if TYPE_CHECKING:
    from ..robot import Robot


@dataclass
class RelativeFrameTaskConfig(TaskConfig):
    """``type: relative_frame``: the pose of ``frame`` in robot frame ``reference``; goals (poses in
    ``reference``) on ``~/<task>/target_pose``."""

    frame: str = key("")
    reference: str = key("")
    position_cost: Union[float, list[float]] = key(1.0, range=Range(unit="cost/m"), size=3,
                                                   runtime="position cost (x, y, z of the reference frame)")
    orientation_cost: Union[float, list[float]] = key(1.0, range=Range(unit="cost/rad"), size=3,
                                                      runtime="orientation cost (x, y, z of the reference frame)")
    max_position_error: float = key(math.inf)  # [m] tanh saturation of the error; .inf = none
    max_rotation_error: float = key(math.inf)  # [rad]

    def validate(self, path: str) -> None:
        super().validate(path)
        if not self.frame:
            raise InvalidInputError(f"{path}.frame: required for a relative_frame task")
        if not self.reference:
            raise InvalidInputError(f"{path}.reference: required for a relative_frame task (the robot frame "
                                    f"the pose of {self.frame!r} is taken in)")
        if self.reference == self.frame:
            raise InvalidInputError(f"{path}.reference: {self.reference!r} is the task's frame itself; expected "
                                    f"another frame of the robot")


def build_relative_frame_task(config: RelativeFrameTaskConfig, context: BuildContext) -> RelativeFrameTask:
    """The task, aimed at the relative pose at the starting configuration (hold the grasp until a goal)."""
    scene = context.robot.scene
    for which in ("frame", "reference"):
        name = getattr(config, which)
        if not scene.model.existFrame(name):
            raise InvalidInputError(f"{which}: {unknown_name('frame', name, scene.frame_names)}")
    task = RelativeFrameTask(context.robot, config.frame, config.reference, None, config.position_cost,
                             config.orientation_cost, task_gain=config.task_gain, lm_damping=config.lm_damping,
                             priority=config.priority, name=config.name, max_position_error=config.max_position_error,
                             max_rotation_error=config.max_rotation_error)
    task.hold(context.q)
    return task


def _skew(v: np.ndarray, out: np.ndarray) -> np.ndarray:
    """[v]x into ``out`` (3, 3)."""
    out[0, 1], out[0, 2], out[1, 2] = -v[2], v[1], -v[0]
    out[1, 0], out[2, 0], out[2, 1] = v[2], -v[1], v[0]
    return out


class RelativeFrameTask(PoseTask):
    """Track ``T_reference_target`` with the pose of ``frame`` in ``reference`` (module docstring).

    Args:
        frame, reference: two distinct frames of the robot model.
        target: T_reference_target (pin.SE3 or 4x4); None: the relative pose at the first update.
        position_cost, orientation_cost: scalars or per-axis 3-vectors along the reference frame's
            axes ([cost]/[m], [cost]/[rad]).
    """

    # goal "pose" (PoseTask): set_target(T_reference_target), a pose in the reference frame
    follower = "relative_pose"  # pose goals smoothed as a frame task's (core/control/follower_kinds.py)

    def __init__(
        self,
        robot: Robot,
        frame: str,
        reference: str,
        target=None,
        position_cost=1.0,
        orientation_cost=1.0,
        task_gain: float = 1.0,
        lm_damping: float = 0.0,
        priority: int = 1,
        name: str | None = None,
        max_position_error: float = math.inf,
        max_rotation_error: float = math.inf,
    ) -> None:
        name = name or f"{frame}_in_{reference}"
        super().__init__(robot, "relative_frame", target, position_cost, orientation_cost, task_gain, lm_damping,
                         priority, name, max_position_error, max_rotation_error)
        self.frame, self.reference = frame, reference
        self.goal_frame = reference  # pose goals are given in it (the node: header.frame_id)
        self.frame_id = robot.scene.frame_id(frame)
        self.reference_id = robot.scene.frame_id(reference)
        if self.frame_id == self.reference_id:
            raise InvalidInputError(f"{name}.reference: {reference!r} is the task's frame itself")
        self._columns = robot.group.v_columns
        self._J_pos, self._J_rot = self.jacobian[:3], self.jacobian[3:]
        n = robot.nv
        self._J_lin, self._J_ang = np.zeros((3, n)), np.zeros((3, n))  # relative velocity, world axes
        self._J_tmp = np.zeros((3, n))
        self._d, self._skew_d = np.zeros(3), np.zeros((3, 3))
        self._p_rf, self._R_rf, self._E = np.zeros(3), np.zeros((3, 3)), np.zeros((3, 3))
        self._data: pin.Data | None = None  # whose frame placements the views below follow
        self.target = target

    def relative_pose(self, data: pin.Data) -> pin.SE3:
        """T_reference_frame from the placements in ``data``."""
        return data.oMf[self.reference_id].actInv(data.oMf[self.frame_id])

    def update(self, q: np.ndarray, data: pin.Data) -> None:
        if data is not self._data:  # views of data.oMf: they follow every later kinematics call
            T_r, T_f = data.oMf[self.reference_id], data.oMf[self.frame_id]
            self._p_r, self._R_r, self._p_f, self._R_f = T_r.translation, T_r.rotation, T_f.translation, T_f.rotation
            self._data = data
        if self._target is None:
            self.target = self.relative_pose(data)
        model, cols = self.scene.model, self._columns
        J_f = pin.getFrameJacobian(model, data, self.frame_id, pin.LOCAL_WORLD_ALIGNED)
        J_r = pin.getFrameJacobian(model, data, self.reference_id, pin.LOCAL_WORLD_ALIGNED)
        R_rT = self._R_r.T
        # relative velocity of f w.r.t. r's body, world axes: v_f - v_r - w_r x d and w_f - w_r
        np.subtract(self._p_f, self._p_r, out=self._d)
        np.subtract(J_f[:3, cols], J_r[:3, cols], out=self._J_lin)
        self._J_lin += np.dot(_skew(self._d, self._skew_d), J_r[3:, cols], out=self._J_tmp)
        np.subtract(J_f[3:, cols], J_r[3:, cols], out=self._J_ang)
        # the relative pose and the error, in the reference frame
        np.dot(R_rT, self._d, out=self._p_rf)
        np.dot(R_rT, self._R_f, out=self._R_rf)
        np.subtract(self.p_target, self._p_rf, out=self._e_pos)
        np.dot(self.R_target, self._R_rf.T, out=self._E)
        self._e_rot[:] = pin.log3(self._E)
        self._saturate()
        # J = d(error)/dq
        np.dot(R_rT, self._J_lin, out=self._J_pos)
        np.negative(self._J_pos, out=self._J_pos)
        np.dot(R_rT, self._J_ang, out=self._J_tmp)
        np.dot(pin.Jlog3(self._E), self._J_tmp, out=self._J_rot)
        np.negative(self._J_rot, out=self._J_rot)

    def hold(self, q: np.ndarray) -> None:
        pin.framesForwardKinematics(self.scene.model, self.scene.data, q)
        self.set_target(self.relative_pose(self.scene.data))


register("tasks", "relative_frame", RelativeFrameTaskConfig, build_relative_frame_task)
