"""Which configuration the control loop steps from: its own commands or the measured joint states.

``commanded``: the loop integrates its own output (smooth, independent of measurement noise and
delay) and resynchronizes to the measurement when the two diverge by more than
``max_divergence`` on any joint of the group (the robot did not follow: a collision, a stop, a
controller switch). ``measured``: every step starts from the latest /joint_states.

Times are seconds of a monotonic clock, passed in by the caller (testable without ROS).
"""

from __future__ import annotations

import numpy as np

from ..core.joint_group import JointGroup
from ..core.scene import Scene


class StateTracker:
    def __init__(self, scene: Scene, group: JointGroup, mode: str, max_divergence: float) -> None:
        self.scene = scene
        self.group = group
        self.mode = mode
        self.max_divergence = max_divergence
        nq = scene.model.nq
        self.measured = scene.neutral()  # full nq; joints never measured keep neutral values
        self.commanded = self.measured.copy()
        self.measured_time = -np.inf  # monotonic [s] of the last valid measurement
        self.has_measurement = False
        self._fresh = False  # a measurement arrived since the last step
        self.resyncs = 0
        self._group_v = group.v_indices
        self._others_q = np.setdiff1d(np.arange(nq), group.q_indices)  # e.g. gripper fingers
        self._step_q = np.empty(nq)

    # --------------------------------------------------------------- input
    def measurement_buffer(self) -> np.ndarray:
        """The array a decoder writes a new measurement into (then call :meth:`on_measurement`)."""
        return self.measured

    def on_measurement(self, now: float) -> None:
        """A valid measurement was written into :attr:`measured` at time ``now``."""
        self.measured_time = now
        self._fresh = True
        if not self.has_measurement:
            self.has_measurement = True
            self.commanded[:] = self.measured

    def age(self, now: float) -> float:
        """Seconds since the last valid measurement (inf if none)."""
        return now - self.measured_time

    def divergence(self) -> float:
        """Largest |measured - commanded| over the group's joints [rad or m]."""
        d = self.scene.difference(self.commanded, self.measured)[self._group_v]
        return float(np.abs(d).max()) if len(d) else 0.0

    # ---------------------------------------------------------------- step
    def reset(self) -> None:
        """Commanded := measured (activation, mode switch, after a hold)."""
        self.commanded[:] = self.measured
        self._fresh = False

    def current(self) -> np.ndarray:
        """The configuration to step from (a reused buffer: read it before the next call).

        In commanded mode a fresh measurement that diverges by more than ``max_divergence``
        resynchronizes the commanded state first (counted in :attr:`resyncs`). Joints outside the
        group always come from the measurement.
        """
        q = self._step_q
        if self.mode == "measured":
            q[:] = self.measured
        else:
            if self._fresh and self.divergence() > self.max_divergence:
                self.commanded[:] = self.measured
                self.resyncs += 1
            q[:] = self.commanded
            q[self._others_q] = self.measured[self._others_q]
        self._fresh = False
        return q

    def commit(self, q_next: np.ndarray) -> None:
        """The step's result, now commanded."""
        self.commanded[:] = q_next

    def hold_configuration(self) -> np.ndarray:
        """Where the robot should stay when holding: the last command (the measurement before the
        first command)."""
        return self.commanded
