"""The limits that bound the control loop's command stream, and the references each step's start sets on them.

- **Velocity**: the configured velocity limits, or the URDF's when none is configured: no command moves faster
  than v_max (the :class:`~.command_guard.CommandGuard` checks the same bound).
- **Acceleration and jerk**: at most one acceleration limit; it keeps the stream's history (the last two
  increments), from which every step, hold and stop brakes within the bounds.
- **Following error** (``commanded`` feedback): the command never runs more than ``max_state_divergence`` ahead
  of the measurement (:class:`FollowingErrorLimit`); the acceleration limit brakes for that leash like for a
  position limit.
- ``measured`` feedback: each step starts at the measurement, and the velocity limits and barriers bound the
  command's approach from the previous command (their reference: previous command ⊖ measured).
"""

from __future__ import annotations

import ctypes
import operator

import numpy as np
import pinocchio as pin

from ..errors import InvalidInputError
from ..model.joint_group import JointGroup
from ..model.scene import Scene
from ..oink import AccelerationLimit, FollowingErrorLimit, VelocityLimit
from ..oink.controller import OinkController
from . import compiled_control


class StreamLimits:
    """The velocity limits, the acceleration limit (None without one) and the following-error limit of one
    controller build (``ctrl``: rebuilt with it), which of them the QP gets under each state feedback
    (:meth:`apply_feedback`), and where each step linearizes (:meth:`start_state`). Says in ``notes`` what it
    decided (the URDF's velocity limit). ``use_compiled``: False keeps the numpy start where the compiled one
    (compiled_control.py, commanded feedback) could run (tests compare the two)."""

    def __init__(self, scene: Scene, group: JointGroup, ctrl: OinkController, dt: float, max_state_divergence: float,
                 notes: list[str], use_compiled: bool = True) -> None:
        velocity = [lim for lim in ctrl.limits if isinstance(lim, VelocityLimit)]
        if not velocity:
            try:
                velocity = [VelocityLimit(ctrl.oink, dt)]
            except InvalidInputError as exc:
                raise InvalidInputError(f"limits: no velocity limit configured, and {exc}") from exc
            ctrl.limits.append(velocity[0])
            notes.append("limits: no velocity limit configured: using the URDF's (commands never "
                         "move faster than v_max)")
        self.velocity: list[VelocityLimit] = velocity
        accel = [lim for lim in ctrl.limits if isinstance(lim, AccelerationLimit)]
        if len(accel) > 1:
            raise InvalidInputError("limits: more than one acceleration limit; expected at most one (it bounds the "
                                    "command stream, whose history it keeps)")
        self.accel: AccelerationLimit | None = accel[0] if accel else None
        if self.accel is not None:  # viability under the jerk bound uses the velocity bound the commands keep
            self.accel.set_velocity_bound(self.v_max)
        self.following = FollowingErrorLimit(ctrl.oink, max_state_divergence)
        self._base = list(ctrl.limits)
        self._ctrl, self._scene = ctrl, scene
        self._gv = group.v_indices
        self._others_q = np.setdiff1d(np.arange(scene.model.nq), group.q_indices)
        self._diff = np.zeros(scene.model.nv)
        self._room_up = np.zeros(len(self._gv))  # travel left to the following-error leash [rad or m]
        self._room_lo = np.zeros(len(self._gv))
        # commanded feedback's start in one C call (compiled_control.py): a group of one-coordinate joints
        # (the arrays it was built for, its StreamStartArrays' address, the struct, the arrays kept)
        self._compiled_start = None
        self.compiled_reason = ("use_compiled=False" if not use_compiled else compiled_control.LOAD_ERROR
                                or ("a continuous joint in the group" if len(group.continuous_q) else ""))
        self._q_index = np.ascontiguousarray(group.q_indices, dtype=np.int64)
        self._offset = np.zeros(len(self._gv))  # previous command - measured (the compiled start's)

    @property
    def v_max(self) -> np.ndarray:
        """[rad/s or m/s] per group joint: the tightest of the velocity limits (what the commands keep)."""
        return np.min([lim.v_max for lim in self.velocity], axis=0)

    def apply_feedback(self, state_feedback: str) -> None:
        """The QP's limits under ``state_feedback``: with ``commanded`` the following-error limit too (and the
        velocity limits centred on the step's start, the last command)."""
        if state_feedback == "commanded":
            self._ctrl.limits = [*self._base, self.following]
            for lim in self.velocity:
                lim.set_reference(None)
        else:
            self._ctrl.limits = list(self._base)

    def start_state(self, q: np.ndarray, measured: np.ndarray, last: np.ndarray, u1: np.ndarray, u2: np.ndarray,
                    state_feedback: str) -> np.ndarray:
        """Write into ``q`` (full nq) the configuration the step linearizes at, and set the limits' references for
        it: ``commanded``, the last command (the joints outside the group measured) with the following error
        commanded ⊖ measured; ``measured``, the measurement with the previous command's offset from it. ``u1``,
        ``u2``: the stream's last two increments (the acceleration limit's history). Returns ``q``."""
        accel, oink = self.accel, self._ctrl.oink
        if state_feedback == "commanded" and not self.compiled_reason:
            compiled_control.STREAM_START(self._stream_start(q, measured, last, u1, u2), len(q))
            oink.set_barrier_reference(None)
            return q
        self._diff[:] = pin.difference(self._scene.model, measured, last)
        offset = self._diff[self._gv]  # previous command ⊖ measured
        if state_feedback == "commanded":
            q[:] = last
            q[self._others_q] = measured[self._others_q]  # e.g. gripper fingers: never commanded here
            self.following.set_following_error(offset)
            oink.set_barrier_reference(None)
            if accel is not None:
                # the leash is braked for like a position limit (it moves with the robot: conservative)
                e = self.following.max_error
                if np.isfinite(e):
                    np.subtract(e, offset, out=self._room_up)
                    np.add(e, offset, out=self._room_lo)
                    accel.set_following_room(self._room_up, self._room_lo)
                accel.set_history(u1, u2)
                self.following.include(accel.nearest_to_rest())  # a moving joint brakes, never jumps
        else:
            q[:] = measured
            for lim in self.velocity:
                lim.set_reference(offset)
            oink.set_barrier_reference(offset)  # barriers bound the command's approach, as the box does
            if accel is not None:
                accel.set_following_room(None)
                accel.set_history(u1, u2, offset)
        return q

    def _stream_start(self, q: np.ndarray, measured: np.ndarray, last: np.ndarray, u1: np.ndarray,
                      u2: np.ndarray) -> int:
        """The address of the compiled start's StreamStartArrays over these arrays (built again when one of them is
        another array than the last call's)."""
        given = (q, measured, last, u1, u2)
        built = self._compiled_start
        if built is None or not all(map(operator.is_, built[0], given)):
            accel, following = self.accel, self.following
            of_accel = (lambda name: None) if accel is None else (lambda name: getattr(accel, name))
            arrays = dict(q_index=self._q_index, others_q=np.ascontiguousarray(self._others_q, dtype=np.int64),
                          measured=measured, last=last, q=q, offset=self._offset,
                          follow_lower=following._lower, follow_upper=following._upper,
                          room_up=of_accel("_room_up"), room_lo=of_accel("_room_lo"),
                          u1_in=None if accel is None else u1, u2_in=None if accel is None else u2,
                          u1=of_accel("u1"), u2=of_accel("u2"), accel_offset=of_accel("offset"),
                          reach_lower=of_accel("reach_lower"), reach_upper=of_accel("reach_upper"),
                          rest=of_accel("_rest"), alpha=of_accel("alpha"), delta=of_accel("delta"))
            struct = compiled_control.stream_start_arrays(arrays, following.max_error)
            built = self._compiled_start = (given, ctypes.addressof(struct), struct, arrays)
        built[2].max_error = self.following.max_error  # set at run time (ControlLoop.set_max_state_divergence)
        return built[1]
