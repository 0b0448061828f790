"""The last line of the control tick: every command inside the joint limits, within ``v_max * dt``
of the previous one and, when acceleration (and jerk) bounds are set, within them too (the
command increments ``u_k = q_k ⊖ q_k-1`` satisfy ``|u_k - u_k-1| <= a_max dt^2`` and
``|u_k - 2 u_k-1 + u_k-2| <= j_max dt^3``).

The QP's limits already guarantee both; the guard makes them hold whatever happens upstream
(a bug, a numerical corner) and counts every step it had to cut (the count should stay 0). A
command stream starts with :meth:`CommandGuard.reseed` at the measured position (activation,
return from stale joint states): that command equals the measurement, so the robot is not moved.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pinocchio as pin

from ..errors import InvalidInputError, check_positive
from ..model.joint_group import JointGroup
from ..model.scene import Scene
from . import compiled_control

_STEP_TOLERANCE = 1e-9  # relative slack so that a step exactly at the limit is not counted as cut


class CommandGuard:
    """Args: ``v_max`` per joint of the group [rad/s or m/s] (finite, > 0), ``dt`` [s]; ``use_compiled``: False keeps
    the numpy path where the compiled apply (compiled_control.py) could run (tests compare the two)."""

    def __init__(self, scene: Scene, group: JointGroup, v_max: np.ndarray, dt: float,
                 a_max: np.ndarray | None = None, j_max: np.ndarray | None = None, use_compiled: bool = True) -> None:
        v_max = np.asarray(v_max, dtype=float)
        if v_max.shape != (group.nv,) or not (np.isfinite(v_max) & (v_max > 0)).all():
            raise InvalidInputError(f"command guard: expected {group.nv} finite velocity limits > 0 for "
                                    f"{list(group.joint_names)}, got {v_max.tolist()}")
        self.scene = scene
        self.group = group
        self.v_max = v_max
        n = group.nv
        self.a_max = np.full(n, np.inf) if a_max is None else np.asarray(a_max, dtype=float)
        self.j_max = np.full(n, np.inf) if j_max is None else np.asarray(j_max, dtype=float)
        self.u1 = np.zeros(n)  # the last command increment (group nv) [rad or m]
        self.u2 = np.zeros(n)  # the one before
        self._undo = (np.zeros(n), np.zeros(n))  # u1, u2 before the last apply (command_not_sent)
        self._compiled = None  # the compiled apply's arrays (below), rebuilt by set_dt once there
        self.set_dt(dt)
        self.last = scene.neutral()  # the previous command (full nq)
        self.started = False
        self.cuts = 0
        gv = group.v_indices[group.bounded_v]
        self._bounded_q = group.bounded_q
        self._q_min, self._q_max = scene.q_min_v[gv], scene.q_max_v[gv]
        self._step = np.zeros(scene.model.nv)
        self._others_q = np.setdiff1d(np.arange(scene.model.nq), group.q_indices)
        # the compiled apply: a group of one-coordinate joints (q ⊖ q' = q - q'), with the kernel built
        self.compiled_reason = ("use_compiled=False" if not use_compiled else compiled_control.LOAD_ERROR
                                or ("a continuous joint in the group (its (cos, sin) needs pinocchio's difference)"
                                    if len(group.continuous_q) else ""))
        if not self.compiled_reason:
            self._q_scratch, self._q_in = np.zeros(scene.model.nq), np.zeros(scene.model.nq)
            self._q_in_address = self._q_in.ctypes.data
            self._build_compiled()

    def set_dt(self, dt: float) -> None:
        self.dt = check_positive(dt, "dt")
        self._max_step = self.v_max * self.dt * (1.0 + _STEP_TOLERANCE)
        self._max_dstep = self.a_max * self.dt**2 * (1.0 + _STEP_TOLERANCE)  # inf without a bound
        self._max_ddstep = self.j_max * self.dt**3 * (1.0 + _STEP_TOLERANCE)
        self.bounded_acceleration = bool(np.isfinite(self.a_max).any() or np.isfinite(self.j_max).any())
        if self._compiled is not None:
            self._build_compiled()

    def _build_compiled(self) -> None:
        """The kernel's view of the guard's arrays (again after set_dt: its bounds are new arrays)."""
        arrays = dict(q_index=np.ascontiguousarray(self.group.q_indices, dtype=np.int64),
                      bounded_q=np.ascontiguousarray(self._bounded_q, dtype=np.int64),
                      q_min=np.ascontiguousarray(self._q_min, dtype=float),
                      q_max=np.ascontiguousarray(self._q_max, dtype=float),
                      others_q=np.ascontiguousarray(self._others_q, dtype=np.int64), max_step=self._max_step,
                      max_dstep=self._max_dstep, max_ddstep=self._max_ddstep, u1=self.u1, u2=self.u2,
                      undo_u1=self._undo[0], undo_u2=self._undo[1], q=self._q_scratch, last=self.last)
        self._compiled = (compiled_control.guard_arrays(arrays, self.bounded_acceleration), arrays)
        self._compiled_address = ctypes.addressof(self._compiled[0])

    def reseed(self, q: np.ndarray) -> np.ndarray:
        """Start a new command stream at q (clipped into the limits); returns the command."""
        self.last[:] = q
        self._clip_to_limits(self.last)
        self.started = True
        self.u1.fill(0.0)  # a new stream starts at rest
        self.u2.fill(0.0)
        return self.last

    def undo_increments(self) -> None:
        """The last command never reached the robot: its increments are forgotten too."""
        self.u1[:], self.u2[:] = self._undo

    def apply(self, q_next: np.ndarray, counted: bool = True) -> np.ndarray:
        """The command for q_next: cut to ``v_max * dt`` from the previous command and clipped into
        the limits (counted in :attr:`cuts` when anything changed, unless ``counted`` is False: a
        deliberate stop, "the last command again", that the acceleration bounds turn into the
        hardest braking they allow). Returns the guard's buffer."""
        if not self.started:
            raise RuntimeError("CommandGuard.apply before reseed")
        if self._compiled is not None and len(q_next) == len(self._q_in):
            np.copyto(self._q_in, q_next)  # (an array's own address costs more than this copy)
            events = compiled_control.APPLY(self._compiled_address, self._q_in_address, len(self._q_in))
            if counted:
                self.cuts += events
            return self.last
        d = pin.difference(self.scene.model, self.last, q_next)[self.group.v_indices]
        cut = np.minimum(np.maximum(d, -self._max_step), self._max_step)
        if self.bounded_acceleration:
            u1, u2 = self.u1, self.u2
            np.minimum(np.maximum(cut, u1 - self._max_dstep), u1 + self._max_dstep, out=cut)
            center = 2.0 * u1 - u2
            np.minimum(np.maximum(cut, center - self._max_ddstep), center + self._max_ddstep, out=cut)
        # (cut != d).any(): np.array_equal's answer for arrays of one shape (NaN differs), without its
        # Python-level checks (the guard runs every tick)
        if (cut != d).any() or not np.isfinite(d).all():
            self.cuts += counted
            cut[~np.isfinite(cut)] = 0.0
        self._step[self.group.v_indices] = cut
        q = pin.integrate(self.scene.model, self.last, self._step)
        q[self._others_q] = q_next[self._others_q]  # joints outside the group are not commanded
        if self._clip_to_limits(q):
            self.cuts += counted
        self._undo[0][:], self._undo[1][:] = self.u1, self.u2
        self.u2[:] = self.u1
        self.u1[:] = pin.difference(self.scene.model, self.last, q)[self.group.v_indices]
        self.last[:] = q
        return self.last

    def _clip_to_limits(self, q: np.ndarray) -> bool:
        x = q[self._bounded_q]
        clipped = np.minimum(np.maximum(x, self._q_min), self._q_max)
        if not (clipped != x).any():  # np.array_equal (same shape), cheaper
            return False
        q[self._bounded_q] = clipped
        return True
