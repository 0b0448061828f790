"""ControlLoop: what one control tick of the ik_controller does, without ROS.

The rules that keep a real robot safe live here, unit-testable without DDS; the ROS node only
decodes messages into it and publishes what it returns.

- **Measurements** (:class:`StateTracker`): NaN, missing joints (the decoder) and positions
  outside the joint limits by more than ``joint_limit_tolerance`` are rejected, counted and
  never followed.
- **Every command** passes the :class:`CommandGuard`: inside the joint limits and within
  ``v_max * dt`` of the previous command. The QP's limits make that hold by construction (in
  ``measured`` feedback the velocity limit is centred on the previous command), so the guard's
  cut count stays 0.
- **No goal, no motion**: activation (and every re-seed) points every task at the current
  configuration, posture tasks included, and holds the command exactly there until a goal
  arrives. The first goal (or :meth:`ControlLoop.apply_configured_targets`) lets the tasks with a
  configured target (a configuration or joint task's ``target``, a look_at's ``point``) move toward it.
- **Every joint and point goal is shaped** (:mod:`.target_shaper`, :mod:`.line_of_sight_shaper`): the
  task's target moves to it jerk-limited and time-optimal (Ruckig), so the QP tracks a reference a drive
  can follow (docs/configuration.md, "Goal shaping").
- **Stale state**: after ``state_timeout`` without an accepted measurement the loop stops
  commanding (``stale_behavior: stop``) or repeats its last command (``hold``); when
  measurements return it re-seeds: the first command equals the measured position, then it
  waits for a new goal.
- **Divergence** (``commanded`` feedback): the command never runs more than
  ``max_state_divergence`` ahead of the measurement (:class:`FollowingErrorLimit`); it waits
  for a robot that trails it instead of jumping back to the measurement.
- **Outside a barrier**: the QP's recovery step moves back toward the safe set as fast as the
  limits allow (mode ``recovering``).
- A refused step (QP failure, FK barrier check) holds the previous command (mode ``holding``).
- **Acceleration and jerk** (an ``acceleration`` limit): every command stream stays within the bounds,
  stops included. A hold, a refused step, an error in the step and :meth:`ControlLoop.stopping_tick`
  (deactivate) brake along the path at the bounds (:meth:`AccelerationLimit.braking_step`) instead of
  repeating the last command; only stale joint states (a lost robot) stop the stream at once.

Times are seconds of a monotonic clock passed in by the caller. The loop is split by concern: this file holds
the tick (which rule applies when), the lifecycle, the pause and the runtime settings; its collaborators the
rules themselves: :class:`StateTracker` the measurements, :class:`~.stream_limits.StreamLimits` the limits of the
command stream and where each step starts, :class:`~.braking.Braking` where a hold, a refused step and a
controlled stop go, :class:`CommandGuard` the last check of every command. Its bases hold the goals
(:class:`~.loop_goals.LoopGoals`: the followers each task's kind names, :mod:`.follower_kinds`, the goal inputs
and their shaping) and what callers read (:class:`~.loop_view.LoopView`: motion limits, goal feedback, barrier
rows, a read-only view); :mod:`.loop_modes` the modes and codes.
"""

from __future__ import annotations

import math
import traceback
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..config import IKConfig, load_config
from ..errors import InvalidInputError
from ..model.closest_pairs import ClosestObstacle
from ..model.scene import Scene
from ..oink.controller import OinkController, StepOutcome
from .binding_bounds import JOINT_BOUND  # noqa: F401 - re-exported: a motion-limit code callers read
from .braking import Braking
from . import compiled_control
from .command_guard import CommandGuard
from .following_speed import following_speed  # noqa: F401 - re-exported
from .loop_config import (LoopConfig, UnappliedConfigWarning, check_loop_config, load_loop_config,  # noqa: F401
                          split_node_section, unapplied_loop_keys)
from .loop_goals import LoopGoals
from .loop_modes import (COMMAND_TIMEOUT, HOLDING, INACTIVE, LEASH, LIMIT_PAUSED, MOVING_MODES,  # noqa: F401 - and
                         PAUSED, RAMP_ACCELERATION_SHARE, RECOVERING, SINGULARITY, STALE,  # re-exported: the modes
                         TRACKING, WAITING_FOR_GOAL)  # and codes callers read
from .loop_view import LoopView
from .state_tracker import StateTracker
from .stream_limits import StreamLimits

@dataclass
class LoopCounters:
    goals_rejected: int = 0
    holds: int = 0  # times the loop entered a hold or a stale stop
    reseeds: int = 0  # command streams started at the measured position
    qp_failures: int = 0  # ticks
    barrier_refusals: int = 0  # ticks
    hardest_stops: int = 0  # held ticks that braked joint by joint: the check refused the braking along the path
    corrected_stops: int = 0  # held ticks whose braking the check refused until turned back along the barrier rows
    tick_errors: int = 0  # ticks whose step raised (held; logged with the traceback)
    undelivered: int = 0  # commands the caller could not send (command_not_sent): the next step starts before them
    collision_objects_refused: int = 0  # obstacles from the node's topic refused as malformed (reason logged)
    stream_timeouts: int = 0  # twist streams stopped by command_timeout
    # episodes of each stream motion limit (a task entering it): command_timeout, joint_bound, singularity,
    # paused; and, sampled by the caller (note_motion_limit: they are read off the step's solution), barrier
    # and the cause of a target held at the leash (joint_bound, velocity_bound, acceleration_bound,
    # following_error, leash)
    motion_limits: dict = field(default_factory=dict)


@dataclass
class TickResult:
    """``publish``: False while stale with ``stale_behavior: stop``. ``command`` and ``previous``
    (full nq) are buffers of the loop: read them before the next tick."""

    publish: bool
    command: np.ndarray
    previous: np.ndarray


LogFn = Callable[[str, str], None]  # (level: "info" | "warning" | "error", message)


REST_INCREMENT = 1e-12  # [rad or m per period] a command increment this small is still (at_rest)


class ControlLoop(LoopGoals, LoopView):
    """The tasks, limits and barriers of ``config`` stepped by the rules of the module docstring.

    Call :meth:`activate` once a measurement is in, then :meth:`tick` every control period.
    Not thread-safe: the caller serializes calls (the node holds one lock around them).
    """

    def __init__(self, scene: Scene, config: IKConfig, settings: LoopConfig, log: LogFn | None = None) -> None:
        check_loop_config(settings)
        self.scene = scene
        self.config = config
        self.settings = settings
        self._closest_obstacle = ClosestObstacle(scene)
        self.log: LogFn = log or (lambda level, message: None)
        self.group = scene.group(config.robot.group)
        self.state = StateTracker(scene, self.group, settings.joint_limit_tolerance, settings.reseed_tolerance)
        self.counts = LoopCounters()
        self.notes: list[str] = []  # decisions worth a log line at configure
        self._note_unapplied_node_keys(config, settings)
        self.mode = INACTIVE
        self.hold_reason = "inactive"
        self.last_outcome: StepOutcome | None = None
        self._awaiting_goal = True
        self._reseed_pending = True
        self._q_start = scene.neutral()
        self._previous = scene.neutral()
        self._gv = self.group.v_indices
        self._fk_data = scene.model.createData()  # goal checks (the caller's thread)
        self._leash_data = scene.model.createData()  # the frames' poses for the goal smoothers' leash (the tick)
        self.dt = 1.0 / settings.control_rate_hz
        self._build(self.dt, scene.neutral())
        self._braking.check_reserve(self.group.joint_names, self.dt, settings.max_state_divergence)
        oink = self.ctrl.oink
        self.notes.append(f"OInK: {oink.assembly} assembly, qp_solver {oink.qp_solver}"
                          + (f" ({oink.assembly_note})" if oink.assembly_note else ""))
        for b in self.ctrl.barriers:
            self.notes += b.configure_notes()
        accel = self._accel
        self.guard = CommandGuard(scene, self.group, self._limits.v_max, self.dt,
                                  None if accel is None else accel.a_max, None if accel is None else accel.j_max)
        if compiled_control.LOAD_ERROR:  # no control kernel: its three parts in numpy
            self.notes.append(f"control loop: command guard, step start and measurement checks in numpy "
                              f"({compiled_control.LOAD_ERROR})")
        elif self.guard.compiled_reason:  # a continuous joint: the guard and the commanded step's start in numpy
            self.notes.append(f"control loop: command guard and step start in numpy ({self.guard.compiled_reason})")
        # every goal (pose, joint and point goals, streams) reaches its task through the follower its kind names
        # (follower_kinds.py): joint and point goals through a jerk-limited shaper (target_shaper.py); the leash's
        # anchors are computed where the tick needs them
        self._build_followers()
        self._point_here = np.zeros(3)  # the point task's leash point at the tick's q (the leash's anchor)
        # why each task's latest stream stopped (kept until its next input: the status says why it is still)
        self._stream_end: dict[str, str] = {}
        self.paused = False
        self._resume_pending = False
        self._stream_limit: dict[str, str] = {}  # per task: the motion limit of its stream at the last tick
        self._leash_cause = ""  # the code the last motion_limit() gave a target held at the leash ("" = none)
        self._sampled_limit = ""  # the sampled code (barrier or a leash cause) at the last note_motion_limit
        # a "velocities" goal is a reference set as it arrives, a stream zeroed after streaming.command_timeout
        # without a newer one (time of the latest here)
        self._velocity_stamps: dict[str, float] = {}
        if accel is not None and settings.goal_smoothing.type not in ("max_acceleration", "jerk_limited"):
            self.notes.append(
                f"node.goal_smoothing.type {settings.goal_smoothing.type!r} with an acceleration limit: a pose goal "
                "that jumps is reached at the acceleration bounds and overshot by the braking distance; "
                "'jerk_limited' or 'max_acceleration' brakes the target into the goal instead")
        self._feedback_data = scene.model.createData()

    @classmethod
    def from_config(cls, config, urdf_xml: str, srdf_xml: str, package_paths=(), log: LogFn | None = None,
                    overrides: Mapping | None = None) -> ControlLoop:
        """The loop a YAML config describes (a path, a mapping or an IKConfig), as the node builds it: the scene of
        its ``robot:`` section (joint limits file: acceleration and jerk bounds; explicit limits; ``obstacles:``)
        and the loop keys of its ``node:`` section (:func:`.loop_config.load_loop_config`, with ``overrides`` over
        them). The node section's other keys (the ROS node's) are named in the loop's notes, not used."""
        from ..model.scene_config import scene_from_config

        if isinstance(config, Mapping):
            config = load_config(config)
        elif not isinstance(config, IKConfig):
            config = load_config(Path(config))
        settings = load_loop_config(config, overrides=overrides)
        scene = scene_from_config(urdf_xml, srdf_xml, config.robot, package_paths, config.obstacles)
        loop = cls(scene, config, settings, log)
        _, ros_keys = split_node_section(config.node)
        if ros_keys:
            loop.notes.append(f"node: {', '.join(ros_keys)}: keys of the ROS node (node/node_config.py checks "
                              "them), not used by the core ControlLoop")
        loop.notes[:0] = list(getattr(scene, "notes", []))
        return loop

    def _note_unapplied_node_keys(self, config: IKConfig, settings: LoopConfig) -> None:
        """A config whose ``node:`` section sets loop keys that ``settings`` does not hold: said (a note and
        a warning), never silently dropped."""
        keys = unapplied_loop_keys(config.node, settings)
        if keys:
            text = (f"{', '.join(keys)}: set in the config's node: section, not applied (the LoopConfig given "
                    "differs); ControlLoop.from_config or load_loop_config(config) applies the YAML's")
            self.notes.append(text)
            warnings.warn(text, UnappliedConfigWarning, stacklevel=3)

    # ------------------------------------------------------------------ building
    def _build(self, dt: float, q: np.ndarray) -> None:
        """The OinkController for period dt, the limits of its command stream and its stops."""
        ctrl = OinkController(self.scene, self.config, dt, q)
        self._limits = StreamLimits(self.scene, self.group, ctrl, dt, self.settings.max_state_divergence, self.notes)
        self._accel = self._limits.accel  # None without an acceleration limit
        self._braking = Braking(self.scene, ctrl, self._accel, self.config.solver.barrier_tolerance, self.counts)
        self.ctrl = ctrl
        self._limits.apply_feedback(self.settings.state_feedback)

    # ------------------------------------------------------------------ lifecycle
    def activate(self, now: float) -> str:
        """Start commanding from the current measurement; returns "" or why not."""
        if self.state.age(now) > self.settings.state_timeout:
            return "no valid joint state received within state_timeout"
        self._reseed()
        return ""

    def deactivate(self) -> None:
        self.mode, self.hold_reason = INACTIVE, "inactive"
        self.paused = self._resume_pending = False
        self._reseed_pending = True

    @property
    def active(self) -> bool:
        return self.mode != INACTIVE

    @property
    def holding(self) -> bool:
        return self.mode not in MOVING_MODES

    def _reseed(self, q: np.ndarray | None = None) -> None:
        """A new command stream at ``q`` (default: the measured position); every target there; wait for a goal."""
        cmd = self.guard.reseed(self.state.measured if q is None else q)
        self.ctrl.hold_at(cmd)
        self._retarget_all()
        self._reseed_pending = False
        self.last_outcome = None  # no step from this pose yet: nothing to report about it
        self.counts.reseeds += 1
        self.mode, self.hold_reason = WAITING_FOR_GOAL, "waiting for a goal (holding the current pose)"
        self.log("info", f"command stream (re)started at {'the measured position' if q is None else 'the last command'}; "
                         "holding it until a goal arrives")
        if self.paused:  # a re-seed (joint states back after stale) keeps a pause
            self.mode, self.hold_reason = PAUSED, "paused (~/pause): inputs are refused until resumed"

    def _near_last_command(self) -> bool:
        """The measured group joints are within max_state_divergence of the last command."""
        gq = self.group.q_indices
        return bool(np.abs(self.state.measured[gq] - self.guard.last[gq]).max() <= self.settings.max_state_divergence)

    # ------------------------------------------------------------------ pause
    def pause(self) -> None:
        """Brake to a stop within the bounds and refuse every input until :meth:`resume` (again while
        paused or resuming: paused)."""
        if self.mode in (INACTIVE, STALE):
            raise InvalidInputError(f"the controller is {self.mode}: nothing to pause")
        if self.paused:
            return
        self.paused, self._resume_pending = True, False
        for follower in (*self._twists.values(), *self._jogs.values()):
            follower.stop()
        for name in self._velocity_stamps:  # velocity references: zero
            self.ctrl.tasks[name].hold(self.guard.last)
        self._velocity_stamps.clear()
        self.mode, self.hold_reason = PAUSED, "paused (~/pause): braking to a stop; inputs are refused until resumed"
        self._count_limit(LIMIT_PAUSED)
        self.log("info", "paused: braking to a stop")

    def resume(self) -> None:
        """Leave the pause: once at rest every target is the current pose (no jump to a goal that moved
        meanwhile) and the loop waits for a new input."""
        if not self.paused:
            return
        self.paused, self._resume_pending = False, True
        self.hold_reason = "resuming: waiting to be at rest, then for a new input"
        self.log("info", "resumed: the targets restart at the current pose once at rest")

    # ------------------------------------------------------------------ runtime settings
    def rate_change_refusal(self, hz: float) -> str:
        """Why control rate ``hz`` cannot be taken now ("" when it can). A drive runs at one command period: with
        acceleration bounds, a new period under a moving command stream is a step in the velocity it sees (the
        same increment per command, at another rate), so the rate changes only at rest or while inactive."""
        if float(hz) == self.settings.control_rate_hz or self._accel is None or not self.active or self.at_rest:
            return ""
        return ("refused while the arm moves: with acceleration bounds the drive's command period must not change "
                "under a moving command stream (a velocity step); set it with the arm at rest or the node inactive")

    def set_rate(self, hz: float) -> None:
        """New control rate: rebuild the solver objects (limits and barriers depend on dt), keep targets. Raise
        InvalidInputError when :meth:`rate_change_refusal` refuses it."""
        refusal = self.rate_change_refusal(hz)
        if refusal:
            raise InvalidInputError(f"control_rate_hz {float(hz):g}: {refusal}")
        old = self.ctrl
        ratio = (1.0 / hz) / self.dt
        self.dt = 1.0 / hz
        self.settings.control_rate_hz = float(hz)
        self._build(self.dt, self.guard.last)
        for name, task in self.ctrl.tasks.items():
            target = old.tasks[name].target
            if target is not None:
                task.set_target(target)
        self.guard.set_dt(self.dt)
        for shaper in (*self._ramps.values(), *self._points.values()):
            shaper.set_dt(self.dt)
        self._refresh_joint_target_speeds()  # the following window's speed depends on the period
        self.guard.u1 *= ratio  # the same velocities, in increments of the new period
        self.guard.u2 *= ratio

    def set_state_feedback(self, mode: str) -> None:
        """Switch feedback without a jump: the command stream continues from the last command."""
        self.settings.state_feedback = mode
        self._limits.apply_feedback(mode)
        self._refresh_joint_target_speeds()

    def set_max_state_divergence(self, value: float) -> None:
        self.settings.max_state_divergence = float(value)
        self._limits.following.max_error = float(value)
        self._refresh_joint_target_speeds()

    # ------------------------------------------------------------------ the tick
    def tick(self, now: float) -> TickResult:
        """One control step at time ``now`` [s]. Never raises: an exception inside the step (a bug in
        a task, limit or barrier, say) holds the last command, like a failed QP, with the error as
        the hold reason; the next tick tries again."""
        try:
            return self._tick(now)
        except Exception as exc:  # noqa: BLE001 - the loop must outlive any error of one step
            self.counts.tick_errors += 1
            self.log("error", f"the control step raised (holding the last command):\n{traceback.format_exc()}")
            self._hold(f"internal error in the control step: {type(exc).__name__}: {exc}")
            guard = self.guard
            if not guard.started:
                return TickResult(False, guard.last, guard.last)
            self._previous[:] = guard.last
            # the guard's own bounds turn "the last command again" into the hardest braking they allow
            return TickResult(True, guard.apply(self._previous, counted=False), self._previous)

    def stopping_tick(self) -> TickResult:
        """A controlled-stop step (deactivate): brake along the path within the bounds, whatever the
        goals; call once per period until :attr:`at_rest`. Without an acceleration limit the robot
        stops at once: the command repeats. Publishes nothing while stale (the stream has already
        stopped: a driver that restarted elsewhere must not be driven from the old pose)."""
        guard = self.guard
        if self.mode in (INACTIVE, STALE) or not guard.started:  # stale: the robot is lost, nothing to brake
            return TickResult(False, guard.last, guard.last)
        self._previous[:] = guard.last
        if self._accel is None:
            return TickResult(True, guard.last, guard.last)
        self._accel.set_history(guard.u1, guard.u2)
        q_next = self._braking.braked(guard.last)
        self.mode, self.hold_reason = HOLDING, "stopping (deactivate)"
        return TickResult(True, guard.apply(q_next), self._previous)

    def expect_collision_prepare(self) -> None:
        """Call with the loop's lock held, right after changing the scene's obstacles, when
        :meth:`prepare_collisions` follows outside the lock: the ticks in between keep their tables."""
        for b in self.ctrl.barriers:
            b.expect_prepare()

    def prepare_collisions(self) -> None:
        """After the scene's obstacles changed, build the collision barriers' pair tables here (the thread
        that changed them, where they cannot change meanwhile) for the next tick to swap in."""
        for b in self.ctrl.barriers:
            b.prepare()
        self._closest_obstacle.prepare()  # the status report's tables too (queried under the loop's lock)

    def braking_time_bound(self) -> float:
        """[s] A generous bound on a stop from any velocity within the bounds (:meth:`Braking.time_bound`)."""
        return self._braking.time_bound(self.guard.v_max)

    @property
    def acceleration_limit(self):
        """The configured AccelerationLimit (None without one)."""
        return self._accel

    @property
    def at_rest(self) -> bool:
        """The command stream is still: the last two commands' increments within REST_INCREMENT (round-off: a
        converged goal was seen to leave increments of 3e-21 rad toggling forever, never exactly 0)."""
        guard = self.guard
        return bool(np.abs(guard.u1).max(initial=0.0) <= REST_INCREMENT
                    and np.abs(guard.u2).max(initial=0.0) <= REST_INCREMENT)

    def command_not_sent(self, result: TickResult) -> None:
        """``result`` (this loop's last tick) never reached the robot (its publish failed): the next
        step is checked against, and starts from, ``result.previous``, the last command the robot got.
        (A hold or a reseed has ``previous is command``: nothing to take back.)"""
        self.counts.undelivered += 1
        if result.previous is not result.command:
            self.guard.last[:] = result.previous
            self.guard.undo_increments()

    def _tick(self, now: float) -> TickResult:
        s, guard = self.settings, self.guard
        if self.mode == INACTIVE:
            return TickResult(False, guard.last, guard.last)
        age = self.state.age(now)
        if age > s.state_timeout:
            reason = (f"no valid joint states for {'ever' if math.isinf(age) else f'{age:.2f} s'} (state_timeout "
                      f"{s.state_timeout:g} s): {'stopped commanding' if s.stale_behavior == 'stop' else 'holding'}")
            if self.mode != STALE:
                self.counts.holds += 1
                self.log("warning", reason)
                self.state.restart_rest_clock()
            self.mode, self.hold_reason = STALE, reason
            self._reseed_pending = True
            return TickResult(s.stale_behavior == "hold", guard.last, guard.last)
        if self._reseed_pending:
            if self.mode == STALE and self.state.rest_duration() < s.reseed_settle_time:
                # Back from an outage: the first measurements may be older than commands still on their way
                # to the drive (a stalled driver process works off its queue), or show a lagging robot still
                # moving toward the last command. A re-seed there steps back from the drive's last command (an
                # acceleration step). Wait until the robot is still, then start from where it is.
                self.hold_reason = (f"joint states are back: waiting for the robot to be still (every joint "
                                    f"within {s.reseed_tolerance:g} for {s.reseed_settle_time:g} s) before re-seeding")
                return TickResult(s.stale_behavior == "hold", guard.last, guard.last)
            if (self.mode == STALE and s.stale_behavior == "hold" and guard.started
                    and self._near_last_command()):
                # hold: the stream never ended (the last command was repeated), and the still robot is within
                # max_state_divergence of it (its tracking error): the stream goes on from there. A re-seed at
                # the measurement would be a step within a running stream.
                self._reseed(guard.last.copy())
            else:  # stop: the stream ended reseed_settle_time ago at least; a new one starts, from rest, where
                self._reseed()  # the robot is (a driver that restarted elsewhere included)
            return TickResult(True, guard.last, guard.last)
        self._previous[:] = guard.last
        guard = self.guard
        q = self._limits.start_state(self._q_start, self.state.measured, guard.last, guard.u1, guard.u2,
                                     s.state_feedback)
        if self.paused or self._resume_pending:
            return self._paused_tick(q)
        if not self._awaiting_goal:
            self._advance_targets(q, now)
        out = self.ctrl.step(q)
        self.last_outcome = out
        q_next = out.q_next
        if not out.result.ok:
            self.counts.qp_failures += 1
            self._hold(out.result.status)
            q_next = self._braking.safest_from(q, self._previous)
        elif not out.barriers_ok:
            self.counts.barrier_refusals += 1
            self._hold("the barrier check refused the step (dq = 0)")
            q_next = self._braking.safest_from(q, self._previous)
        elif self._awaiting_goal:
            q_next = self._braking.from_start(q, self._previous)
            self.hold_reason = "waiting for a goal (holding the current pose)"
            if out.result.recovering:
                self.hold_reason += f"; {out.result.status}: a goal starts the recovery"
        else:
            self._moving(out)
        return TickResult(True, guard.apply(q_next), self._previous)

    def _paused_tick(self, q: np.ndarray) -> TickResult:
        """Brake along the path (hold without an acceleration limit); resuming re-targets once at rest."""
        q_next = self._braking.from_start(q, self._previous)
        result = TickResult(True, self.guard.apply(q_next), self._previous)
        if self._resume_pending and self.at_rest:
            self._resume_pending = False
            self.ctrl.hold_at(self.guard.last)
            self._retarget_all()
            self.last_outcome = None  # no step from this pose yet (as after a re-seed): nothing to report about it
            self.mode, self.hold_reason = WAITING_FOR_GOAL, "resumed: waiting for a goal (holding the current pose)"
        return result

    def _hold(self, reason: str) -> None:
        if self.mode != HOLDING:
            self.counts.holds += 1
            self.log("warning", f"holding still: {reason}")
        self.mode, self.hold_reason = HOLDING, reason

    def _moving(self, out: StepOutcome) -> None:
        mode = RECOVERING if out.result.recovering else TRACKING
        if mode != self.mode:
            if mode == RECOVERING:
                self.log("warning", out.result.status)
            elif self.mode == HOLDING:
                self.log("info", f"resumed (was holding: {self.hold_reason})")
        self.mode = mode
        self.hold_reason = out.result.status if mode == RECOVERING else ""
