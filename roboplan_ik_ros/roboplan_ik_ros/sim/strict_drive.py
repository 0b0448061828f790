"""StrictDrive: the checks a strict robot drive (a Franka's) makes on every position command it
receives, without ROS (``mock_robot``'s ``strict_drive`` option uses it).

A drive that takes a position command stream at a fixed period ``T`` computes, per joint, from
consecutive commands ``c[k]``::

    acceleration  a[k] = (c[k] - 2 c[k-1] + c[k-2]) / T^2
    jerk          j[k] = (c[k] - 3 c[k-1] + 3 c[k-2] - c[k-3]) / T^3

and refuses the stream on the first command with ``|a| > a_max`` or ``|j| > j_max`` (libfranka's
discontinuity errors): it stops following commands until the fault is acknowledged.

The differences use the *nominal* period of the stream (what the drive is configured for), never
receive times: ``Float64MultiArray`` carries no stamp, and the delivery jitter of DDS would turn
into false accelerations. Receive times only split streams: after a gap of more than
``max_gap_periods`` periods without a command the stream has ended (the drive holds its last
command), and the next command may start a new stream *from rest* if it is within
``max_start_offset`` of the robot's position. A receive gap is ambiguous, though: the sender may
have stopped (a new stream follows) or this process may have stalled (the commands that follow,
received in a burst, continue the old stream). So the commands after a gap are read both ways
until the readings agree: as the old stream's continuation and as a new stream begun at the first
command after the gap. Once three commands have followed the gap both readings hold the same last
three commands and become one; until then a command is refused only when no reading holds. Taking the first reading that fits the
first command was not enough: a new stream that starts a few 1e-5 rad from the old stream's end
(a re-seed at a still robot's measured position) passes as a continuation at its first command
and fails at its second (jerk ~2x of the step), a false violation. A gap never creates a false
violation, and a new stream is only accepted after one (an abrupt stop is a violation whatever
follows it).

Tolerance: a command is within the bounds when its ratio ``|a| / a_max`` (``|j| / j_max``) is at
most ``1 + tolerance``; the default 1e-6 covers the rounding of the differences (about 1e-11 of
the bounds at 500 Hz for joint values of order 1 rad) and the command guard's own 1e-9 slack.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

DEFAULT_TOLERANCE = 1e-6
DEFAULT_MAX_GAP_PERIODS = 50
DEFAULT_MAX_START_OFFSET = 1e-3  # [rad or m]

_UNITS = {"acceleration": "rad/s^2", "jerk": "rad/s^3", "start": "rad"}


@dataclass(frozen=True)
class DriveViolation:
    """The first command the drive refused."""

    command_index: int  # among every command the drive received, from 0
    stream_command_index: int  # within its stream, from 0
    joint: str
    kind: str  # "acceleration" | "jerk" | "start" (a new stream too far from the robot)
    value: float  # |a| [rad/s^2], |j| [rad/s^3] or the offset [rad]
    bound: float  # a_max, j_max or max_start_offset
    gap_s: float = 0.0  # "start": the time without a command before it [s] (inf: the first command)

    @property
    def ratio(self) -> float:
        return self.value / self.bound

    def message(self) -> str:
        unit = _UNITS[self.kind]
        if self.kind == "start":
            after = "as the first command" if math.isinf(self.gap_s) else f"after {self.gap_s:.3g} s without a command"
            what = (f"starts a new stream ({after}) {self.value:.6g} {unit} away from the robot's position at "
                    f"{self.joint} (max_start_offset {self.bound:.6g} {unit}; commands lost in a stall look like this)")
        else:
            what = (f"{self.joint} {self.kind} {self.value:.6g} {unit} exceeds max_{self.kind} {self.bound:.6g} {unit} "
                    f"(ratio {self.ratio:.4g})")
        return f"command {self.command_index} (command {self.stream_command_index} of its stream): {what}"

    def as_dict(self) -> dict:
        return {"command_index": self.command_index, "stream_command_index": self.stream_command_index,
                "joint": self.joint, "kind": self.kind, "value": self.value, "bound": self.bound,
                "ratio": self.ratio, "gap_s": None if math.isinf(self.gap_s) else self.gap_s}


class _Reading:
    """One reading of the commands received: a stream's last three commands, newest first."""

    def __init__(self, q: np.ndarray, ends_moving: bool = False) -> None:
        self.h = np.tile(q, (3, 1))  # a stream starts at rest at its first command
        self.commands = 1  # of this stream
        self.counted = False  # in StrictDrive.streams (once it is the current reading)
        self.ends_moving = ends_moving  # the stream before it had not come to rest

    @property
    def moving(self) -> bool:
        return not (np.array_equal(self.h[0], self.h[1]) and np.array_equal(self.h[1], self.h[2]))

    def accept(self, q: np.ndarray) -> None:
        self.h[2] = self.h[1]
        self.h[1] = self.h[0]
        self.h[0] = q
        self.commands += 1

    def same_as(self, other: _Reading) -> bool:
        return np.array_equal(self.h, other.h)


class StrictDrive:
    """Checks position command streams of ``joint_names`` against ``a_max``/``j_max`` per joint
    (``inf`` = unchecked) at the nominal ``period`` [s]. Not thread-safe."""

    def __init__(self, joint_names: Sequence[str], a_max, j_max, period: float,
                 max_gap_periods: float = DEFAULT_MAX_GAP_PERIODS,
                 max_start_offset: float = DEFAULT_MAX_START_OFFSET, tolerance: float = DEFAULT_TOLERANCE) -> None:
        self.joint_names = list(joint_names)
        n = len(self.joint_names)
        self.a_max = np.broadcast_to(np.asarray(a_max, dtype=float), (n,)).copy()
        self.j_max = np.broadcast_to(np.asarray(j_max, dtype=float), (n,)).copy()
        for name, v in (("a_max", self.a_max), ("j_max", self.j_max)):
            if not (v > 0).all() or np.isnan(v).any():
                raise ValueError(f"strict drive: {name} must be > 0 per joint (inf = unchecked), got {v.tolist()}")
        for name, v in (("period", period), ("max_gap_periods", max_gap_periods),
                        ("max_start_offset", max_start_offset), ("tolerance", tolerance)):
            if not (v > 0 and math.isfinite(v)):
                raise ValueError(f"strict drive: {name} must be a finite number > 0, got {v!r}")
        self.period = float(period)
        self.max_gap = float(max_gap_periods) * self.period  # [s]
        self.max_start_offset = float(max_start_offset)
        self.tolerance = float(tolerance)
        self._inv_a = 1.0 / self.a_max  # 0 where unchecked
        self._inv_j = 1.0 / self.j_max
        self._acc = np.zeros(n)
        self._jerk = np.zeros(n)
        self.peak_acceleration_ratio = np.zeros(n)
        self.peak_jerk_ratio = np.zeros(n)
        self.violation: DriveViolation | None = None
        self.commands = 0  # every command received
        self.streams = 0  # streams started
        self.unbraked_stream_ends = 0  # streams that ended (a gap, then a new stream) while still moving
        self._t_last = -math.inf
        #: the readings of the commands received so far, oldest first: one, or after a gap also the
        #: new stream begun at the first command after it (until the readings agree or one fails)
        self._readings: list[_Reading] = []

    # ------------------------------------------------------------------ state
    @property
    def faulted(self) -> bool:
        return self.violation is not None

    @property
    def stream_commands(self) -> int:
        """Commands of the current stream (its oldest reading)."""
        return self._readings[0].commands if self._readings else 0

    @property
    def moving(self) -> bool:
        """The current stream's last three commands differ (not at rest)."""
        return bool(self._readings) and self._readings[0].moving

    def reset(self) -> None:
        """Acknowledge the fault: the next command starts a new stream (near the robot, from rest)."""
        self.violation = None
        self._readings.clear()

    def clear_peaks(self) -> None:
        self.peak_acceleration_ratio.fill(0.0)
        self.peak_jerk_ratio.fill(0.0)

    # ------------------------------------------------------------------ the check
    def check(self, q_cmd, t: float, q_robot) -> bool:
        """Check the command ``q_cmd`` received at ``t`` [s, monotonic] with the robot at ``q_robot``:
        True to follow it; False when the drive is (now) faulted (:attr:`violation` says why)."""
        index = self.commands
        self.commands += 1
        if self.faulted:
            return False
        q = np.asarray(q_cmd, dtype=float)
        gap_s = t - self._t_last if self._readings else math.inf
        gap = gap_s > self.max_gap
        self._t_last = t
        kept: list[_Reading] = []  # the readings that hold with this command, oldest first
        ratios = {}  # reading -> its (acceleration, jerk) ratios at this command
        refused: DriveViolation | None = None  # the oldest reading's violation
        was_moving = self.moving  # before this command: where the old stream stood at the gap
        for reading in self._readings:
            violation, ratios[reading] = self._continuation(q, reading, index)
            if violation is None:
                reading.accept(q)
                kept.append(reading)
            elif refused is None:
                refused = violation
        if gap:  # a new stream may start here, from rest, near the robot
            offset = np.abs(q - np.asarray(q_robot, dtype=float))
            j = int(offset.argmax())
            if offset[j] <= self.max_start_offset:
                kept.append(_Reading(q, ends_moving=was_moving))
            elif not kept:
                refused = DriveViolation(index, 0, self.joint_names[j], "start", float(offset[j]),
                                         self.max_start_offset, gap_s)
        if not kept:
            if self._readings:
                self._update_peaks(*ratios[self._readings[0]])
            return self._fault(refused)
        current = kept[0]
        if current in ratios:
            self._update_peaks(*ratios[current])
        if not current.counted:  # a new stream: the first command, or the old stream ended at a gap
            current.counted = True
            self.streams += 1
            self.unbraked_stream_ends += current.ends_moving
        # the readings merge once they hold the same last three commands (the third command after the gap)
        self._readings = [r for k, r in enumerate(kept) if not any(r.same_as(o) for o in kept[:k])]
        return True

    def _continuation(self, q: np.ndarray, reading: _Reading, index: int):
        """(the violation of ``q`` as the next command of ``reading`` or None, (acceleration ratios,
        jerk ratios))."""
        h, T = reading.h, self.period
        np.subtract(q, 2.0 * h[0], out=self._acc)
        self._acc += h[1]
        np.subtract(q, 3.0 * h[0], out=self._jerk)
        self._jerk += 3.0 * h[1] - h[2]
        r_acc = np.abs(self._acc) * (self._inv_a / T**2)
        r_jerk = np.abs(self._jerk) * (self._inv_j / T**3)
        if not np.isfinite(q).all():
            r_acc[~np.isfinite(q)] = np.inf
        limit = 1.0 + self.tolerance
        ja, jj = int(r_acc.argmax()), int(r_jerk.argmax())
        if r_acc[ja] <= limit and r_jerk[jj] <= limit:
            return None, (r_acc, r_jerk)
        if r_acc[ja] >= r_jerk[jj]:
            return DriveViolation(index, reading.commands, self.joint_names[ja], "acceleration",
                                  float(abs(self._acc[ja]) / T**2), float(self.a_max[ja])), (r_acc, r_jerk)
        return DriveViolation(index, reading.commands, self.joint_names[jj], "jerk",
                              float(abs(self._jerk[jj]) / T**3), float(self.j_max[jj])), (r_acc, r_jerk)

    def _update_peaks(self, r_acc: np.ndarray, r_jerk: np.ndarray) -> None:
        np.maximum(self.peak_acceleration_ratio, r_acc, out=self.peak_acceleration_ratio)
        np.maximum(self.peak_jerk_ratio, r_jerk, out=self.peak_jerk_ratio)

    def _fault(self, violation: DriveViolation) -> bool:
        self.violation = violation
        self._readings.clear()
        return False

    def status(self) -> dict:
        """What the drive reports (``mock_robot``'s ``~/drive_status``), JSON-ready."""
        def ratios(r):
            return {n: round(float(x), 6) for n, x in zip(self.joint_names, r)}

        return {
            "state": "faulted" if self.faulted else "ok",
            "violation": None if self.violation is None else {**self.violation.as_dict(),
                                                              "message": self.violation.message()},
            "commands": self.commands, "streams": self.streams, "stream_commands": self.stream_commands,
            "moving": self.moving, "unbraked_stream_ends": self.unbraked_stream_ends,
            "peak_acceleration_ratio": ratios(self.peak_acceleration_ratio),
            "peak_jerk_ratio": ratios(self.peak_jerk_ratio),
            "command_period": self.period, "max_gap_s": self.max_gap, "tolerance": self.tolerance,
        }
