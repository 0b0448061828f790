"""The control ticks: one :meth:`ControlLoop.tick <roboplan_ik_ros.core.control.control_loop.ControlLoop.tick>`
under the loop's lock and its publication, the watchdog's tick (``trigger: joint_states``), when the next tick is
due, and the command ~/solve_ik seeds from. A part of :class:`~.ik_controller.IKControllerNode` (its base
class), run in the loop thread (on a timer, or woken by /joint_states). Each tick
tells ``tick_observer``, if one is set, when it starts and ends (:mod:`.tick_observer`)."""

from __future__ import annotations

import math
import time

import numpy as np

from ..core.control.control_loop import STALE
from .command_outputs import CommandNotSent, ContextShutDown
from .tick_observer import TickObserver


class ControlTicks:
    """The ticks of :class:`~.ik_controller.IKControllerNode` (its ``loop``, ``_lock``, ``_outputs``,
    ``_stale_hold``, ``_active``)."""

    #: told of each tick's start and end (benchmarks, profilers: see :mod:`.tick_observer`); None: no one
    tick_observer: TickObserver | None = None

    def _on_watchdog(self, now: float) -> None:
        """trigger: joint_states, no measurement for a while (``now``: time.perf_counter()): tick when the
        measurements stopped (the loop reports stale)."""
        if self.loop is not None and self.loop.measurement_age(now) > self.node_cfg.state_timeout:
            self._tick(now)

    def _tick(self, t0: float) -> None:
        """One control step: the loop decides, this publishes (hot path: messages reused)."""
        if not self._active:
            return
        observer = self.tick_observer  # the same one at both ends of this tick
        if observer is not None:
            observer.tick_started(t0)
        self._last_tick_start = t0
        self._tick_gap.started()  # (see _next_tick_in)
        try:
            self._tick_locked(t0)
        except ContextShutDown:  # Ctrl-C: rclpy's signal handler invalidated the context under this tick
            self._active = False  # no later tick can publish either; destroy_node stops the thread
            self.get_logger().info("the ROS context shut down (Ctrl-C or rclpy.shutdown): the control loop stops")
        except CommandNotSent as exc:  # the next command steps from the last one sent; any other error is a
            self._log_loop_event("error", str(exc))  # fault (the session's guard: controlled stop, on_error)
        finally:
            d = time.perf_counter() - t0
            self._last_tick_us = d * 1e6
            self._stats.record(t0, d)
            self._tick_gap.ended()
            if observer is not None:
                observer.tick_ended(t0, d)

    def _tick_locked(self, t0: float) -> None:
        """The step and its publication (the loop itself never raises: ControlLoop.tick holds on errors)."""
        with self._lock:
            loop = self.loop
            t_solve = time.perf_counter()
            res = loop.tick(t0)
            self._last_solve_us = (time.perf_counter() - t_solve) * 1e6
            stale = loop.mode == STALE
            if res.publish:
                self._outputs.publish(res, loop)
                self._published(res)
            elif self._stale_hold.hold_this_tick(stale):
                self._outputs.publish_hold(loop, velocity_only=True)  # a velocity controller keeps its last velocity: zero once
            self._stale_hold.ticked(stale)

    def _published(self, res) -> None:
        """A command went out (the lock held): ~/solve_ik's default seed follows it."""
        self._snapshot(res.command)

    def _next_tick_in(self) -> float:
        """[s] until the next tick is due: inf when not ticking, 0 while a tick runs."""
        if not self._active or self.loop is None:
            return math.inf
        if self._tick_gap.running:
            return 0.0
        return self._last_tick_start + 1.0 / self.node_cfg.control_rate_hz - time.perf_counter()

    def _current_q(self) -> np.ndarray | None:
        """A copy of the latest command (else the measurement), for ~/solve_ik's default seed."""
        with self._lock:
            if self._q_snapshot is not None:
                return self._q_snapshot.copy()
            loop = self.loop
            return loop.measured_position() if loop is not None else None

    def _snapshot(self, q: np.ndarray) -> None:
        """Called with the lock held."""
        if self._q_snapshot is None:
            self._q_snapshot = q.copy()
        else:
            self._q_snapshot[:] = q
