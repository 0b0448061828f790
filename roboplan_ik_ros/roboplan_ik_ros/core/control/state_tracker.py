"""The measured joint state: validated, timestamped, never followed when it is implausible.

A measurement is written by a decoder into :attr:`StateTracker.incoming` (full nq) and then
offered with :meth:`StateTracker.accept`. It is rejected as a whole when a joint of the group is
outside its position limits by more than ``limit_tolerance`` (a glitch, a wrong driver, a units
mix-up), or any coordinate is not a finite number; within the tolerance it is clipped into the
limits (encoders overshoot a little).
Times are seconds of a monotonic clock passed in by the caller (testable without ROS).
"""

from __future__ import annotations

import ctypes

import numpy as np

from ..errors import check_positive
from ..model.joint_group import JointGroup
from ..model.scene import Scene
from . import compiled_control


class StateTracker:
    """``use_compiled``: False keeps the numpy checks where the control kernel's could run (tests compare the two)."""

    def __init__(self, scene: Scene, group: JointGroup, limit_tolerance: float, rest_tolerance: float = 5e-4,
                 use_compiled: bool = True) -> None:
        self.scene = scene
        self.group = group
        self.limit_tolerance = check_positive(limit_tolerance, "joint_limit_tolerance", allow_zero=True)
        self.measured = scene.neutral()  # full nq; joints never measured keep neutral values
        self.incoming = self.measured.copy()  # a decoder's scratch buffer
        self.measured_time = -np.inf  # monotonic [s] of the last accepted measurement
        self.rejected = 0
        self.last_rejection = ""
        # every bounded scalar joint of the model is clipped; the group's are also checked
        bounded_v = np.flatnonzero(np.isfinite(scene.q_min_v) & (scene.q_index_of_v >= 0))
        self._all_q = scene.q_index_of_v[bounded_v]
        self._all_min, self._all_max = scene.q_min_v[bounded_v], scene.q_max_v[bounded_v]
        gv = group.v_indices[group.bounded_v]
        self._group_q = group.bounded_q
        self._group_min = scene.q_min_v[gv] - self.limit_tolerance
        self._group_max = scene.q_max_v[gv] + self.limit_tolerance
        self._group_names = [group.joint_names[k] for k in group.bounded_v]
        # rest: since when every measured group coordinate stayed within rest_tolerance of the measurement
        # that started the run (preallocated: accept() runs per /joint_states message)
        self.rest_tolerance = rest_tolerance  # [rad or m]
        self._rest_q = np.asarray(group.q_indices, dtype=np.intp)
        self._rest_anchor = np.zeros(len(self._rest_q))
        self._rest_now = np.zeros(len(self._rest_q))
        self._rest_diff = np.zeros(len(self._rest_q))
        self.still_since = np.inf  # monotonic [s]; inf: no run yet (restart_rest_clock)
        # a measurement the checks take, in one call of the control kernel (one it refuses: the numpy path says why)
        self._compiled = None
        if use_compiled and compiled_control.STATE_ACCEPT is not None:
            as_index = lambda a: np.ascontiguousarray(a, dtype=np.int64)  # noqa: E731
            self._compiled_arrays = dict(
                checked_q=as_index(self._group_q), checked_min=np.ascontiguousarray(self._group_min, dtype=float),
                checked_max=np.ascontiguousarray(self._group_max, dtype=float), clipped_q=as_index(self._all_q),
                clipped_min=np.ascontiguousarray(self._all_min, dtype=float),
                clipped_max=np.ascontiguousarray(self._all_max, dtype=float), rest_q=as_index(self._rest_q),
                incoming=self.incoming, measured=self.measured, rest_anchor=self._rest_anchor,
                rest_now=self._rest_now, rest_diff=self._rest_diff)
            self._compiled = compiled_control.state_accept_arrays(self._compiled_arrays)
            self._compiled_address = ctypes.addressof(self._compiled)

    @property
    def has_measurement(self) -> bool:
        return np.isfinite(self.measured_time)

    def age(self, now: float) -> float:
        """Seconds since the last accepted measurement (inf if none)."""
        return now - self.measured_time

    def accept(self, now: float) -> str:
        """Take :attr:`incoming` as the measurement at ``now``; returns "" or why it was rejected
        (then :attr:`measured` is unchanged and ``incoming`` is restored from it)."""
        c = self._compiled
        if c is not None:
            c.rest_tolerance, c.now, c.still_since = self.rest_tolerance, now, self.still_since
            if compiled_control.STATE_ACCEPT(self._compiled_address) == 0:
                self.measured_time, self.still_since = now, c.still_since
                return ""
        x = self.incoming[self._group_q]
        inside = (x >= self._group_min) & (x <= self._group_max)  # False for NaN too
        if not inside.all():
            k = int(np.flatnonzero(~inside)[0])
            if not np.isfinite(x[k]):
                reason = f"{self._group_names[k]} = {x[k]:.6g}: expected a finite position"
            else:
                reason = (f"{self._group_names[k]} = {x[k]:.6g} is outside its limits "
                          f"[{self._group_min[k] + self.limit_tolerance:.6g}, "
                          f"{self._group_max[k] - self.limit_tolerance:.6g}] "
                          f"by more than joint_limit_tolerance {self.limit_tolerance:g}")
            self.reject(reason)
            return reason
        q = self.incoming
        if not np.isfinite(q).all():  # a joint outside the group (a finger): its geometry is placed from it too
            k = int(np.flatnonzero(~np.isfinite(q))[0])
            model = self.scene.model
            name = next(model.names[j] for j in range(1, model.njoints)
                        if model.idx_qs[j] <= k < model.idx_qs[j] + model.nqs[j])
            reason = f"{name} (configuration coordinate {k}) = {q[k]:.6g}: expected a finite position"
            self.reject(reason)
            return reason
        q[self._all_q] = np.minimum(np.maximum(q[self._all_q], self._all_min), self._all_max)
        self.measured[:] = q
        self.measured_time = now
        np.take(q, self._rest_q, out=self._rest_now)
        np.subtract(self._rest_now, self._rest_anchor, out=self._rest_diff)
        np.abs(self._rest_diff, out=self._rest_diff)
        if not np.isfinite(self.still_since) or self._rest_diff.max() > self.rest_tolerance:
            self._rest_anchor[:] = self._rest_now  # a new run starts at this measurement
            self.still_since = now
        return ""

    def restart_rest_clock(self) -> None:
        """Count rest only from the next accepted measurement on (after an outage: what came before says
        nothing about the robot now)."""
        self.still_since = np.inf

    def rest_duration(self) -> float:
        """[s] how long the measurements have shown every group coordinate within ``rest_tolerance``: from
        the one that started the run to the latest (0 before a run). Time without a measurement does not
        count: it says nothing about the robot (a starved subscriber's robot may still be moving)."""
        return max(0.0, self.measured_time - self.still_since) if np.isfinite(self.still_since) else 0.0

    def reject(self, reason: str) -> None:
        """Count a rejected measurement (also those a decoder refused) and forget its values."""
        self.rejected += 1
        self.last_rejection = reason
        self.incoming[:] = self.measured
