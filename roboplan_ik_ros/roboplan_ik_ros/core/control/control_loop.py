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

Times are seconds of a monotonic clock passed in by the caller.
"""

from __future__ import annotations

import math
import traceback
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

import numpy as np
import pinocchio as pin

from .binding_bounds import (ACCELERATION_BOUND, BOUND_CODES, FOLLOWING_ERROR, JOINT_BOUND,  # noqa: F401 - codes
                             VELOCITY_BOUND, binding_bounds)
from .command_guard import CommandGuard
from .goal_feedback import LIMITED, OUT_OF_REACH, TRADEOFF, GoalJudge, GoalVerdict
from ..config import IKConfig, load_config
from ..oink.controller import OinkController, StepOutcome
from ..errors import InvalidInputError, as_vector
from .goal_followers import GoalSmoother
from .loop_config import (LoopConfig, UnappliedConfigWarning, check_loop_config, load_loop_config, split_node_section,
                          unapplied_loop_keys)
from .line_of_sight_shaper import LineOfSightShaper
from .target_shaper import JointTargetShaper, TargetShaper
from .joint_jog_follower import JointJogFollower
from .singularity_scale import SingularityScale
from .twist_follower import TwistFollower, scale_joint_velocities, scale_twist
from ..oink import AccelerationLimit, ConfigurationTask, FollowingErrorLimit, FrameTask, VelocityLimit
from ..oink.tasks.com_task import ComTask
from ..oink.tasks.joint_target_task import JointTargetTask
from ..oink.tasks.joint_task import JointTask, configured_joint_target
from ..oink.tasks.look_at_task import LookAtTask
from ..oink.tasks.pose_task import as_se3
from ..oink.tasks.relative_frame_task import RelativeFrameTask
from ..model.closest_pairs import ClosestObstacle
from ..model.scene import Scene
from .state_tracker import StateTracker

# Modes (the strings of roboplan_ik_interfaces/msg/ControllerStatus MODE_*).
INACTIVE = "inactive"
WAITING_FOR_GOAL = "waiting_for_goal"
TRACKING = "tracking"
RECOVERING = "recovering"
HOLDING = "holding"
PAUSED = "paused"
STALE = "stale"
MOVING_MODES = (TRACKING, RECOVERING)

# Why the arm moves slower than a stream asks (ControllerStatus MOTION_LIMIT_*; "" = nothing limits it).
COMMAND_TIMEOUT = "command_timeout"
LIMIT_PAUSED = "paused"
LEASH = "leash"  # a stream's target is held at its leash and no joint bound holds the step (task weights, damping)
# JOINT_BOUND, VELOCITY_BOUND, ACCELERATION_BOUND, FOLLOWING_ERROR: binding_bounds.py (a jogged joint at its
# limit, or what holds a step whose target is at the leash)
SINGULARITY = "singularity"
BARRIER = "barrier"  # the step is bounded by barrier rows (the node reads them from the step's outcome)
# With an acceleration limit, a shaped joint target (configuration and joint tasks) accelerates, brakes and jerks
# at this share of each joint's a_max and j_max (the arm follows it with the rest to spare for the other tasks).
RAMP_ACCELERATION_SHARE = 0.5
GOAL_REACH_FACTOR = 2.0  # default max_goal_distance: this times the arm's reach from its first joint
BINDING_SLACK = 1e-5  # [rad] a barrier row binds when the step could move at most this further along it


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


class ControlLoop:
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
        nv = scene.model.nv
        self._gv = self.group.v_indices
        self._others_q = np.setdiff1d(np.arange(scene.model.nq), self.group.q_indices)
        self._fk_data = scene.model.createData()  # goal checks (the caller's thread)
        self._leash_data = scene.model.createData()  # the frames' poses for the goal smoothers' leash (the tick)
        self._diff = np.zeros(nv)
        self._dq_brake = np.zeros(nv)
        self._dq_stop = np.zeros(nv)  # _safest_stop_from's hardest braking
        self._room_up = np.zeros(len(self._gv))  # travel left to the following-error leash [rad or m]
        self._room_lo = np.zeros(len(self._gv))
        self.dt = 1.0 / settings.control_rate_hz
        self._build(self.dt, scene.neutral())
        self._check_braking_reserve()
        oink = self.ctrl.oink
        self.notes.append(f"OInK: {oink.assembly} assembly, qp_solver {oink.qp_solver}"
                          + (f" ({oink.assembly_note})" if oink.assembly_note else ""))
        for b in self.ctrl.barriers:
            if hasattr(b, "compiled_reason"):
                self.notes.append(f"barrier {b.name!r}: collision distances "
                                  + (f"in Python ({b.compiled_reason})" if not b.compiled else "compiled")
                                  + f", {b.rows_per_pair} row(s) per pair")
                if b.safe_displacement_gain > 0.0 and b.safe_displacement_max_weight is None:
                    self.notes.append(
                        f"barrier {b.name!r}: no safe_displacement_max_weight: its weight r/||J_h||^2 is unbounded, "
                        "and a pair whose distance the joints barely change (a link near the base against a table: "
                        "||J_h||^2 ~ 1e-9) outweighs the tasks and stops the arm short of its goal; 1.0 caps it "
                        "(config/panda.yaml)")
        accel = self._accel
        self.guard = CommandGuard(scene, self.group, self._guard_v_max(), self.dt,
                                  None if accel is None else accel.a_max, None if accel is None else accel.j_max)
        self._smoothers = {n: GoalSmoother(settings.goal_smoothing) for n, t in self.ctrl.tasks.items()
                           if isinstance(t, FrameTask)}
        self._twists = {n: TwistFollower(settings.streaming) for n in self._smoothers}
        st = settings.streaming
        self._singularity = {n: SingularityScale(scene, self.group, self.ctrl.tasks[n].frame_id,
                                                 st.lower_singularity_threshold, st.hard_stop_singularity_threshold,
                                                 row_weights=self.ctrl.tasks[n].sqrt_weight)
                             for n in self._smoothers}
        # why each task's latest stream stopped (kept until its next input: the status says why it is still)
        self._stream_end: dict[str, str] = {}
        self.paused = False
        self._resume_pending = False
        self._stream_limit: dict[str, str] = {}  # per task: the motion limit of its stream at the last tick
        self._leash_cause = ""  # the code the last motion_limit() gave a target held at the leash ("" = none)
        self._sampled_limit = ""  # the sampled code (barrier or a leash cause) at the last note_motion_limit
        # every joint goal (configuration and joint tasks) and point goal (look_at, com) reaches its task through
        # a jerk-limited shaper (target_shaper.py); the leash's anchors are computed where the tick needs them
        self._ramps = {n: self._joint_shaper(n, t) for n, t in self.ctrl.tasks.items() if isinstance(t, JointTargetTask)}
        self._points = {n: self._point_shaper(n) for n, t in self.ctrl.tasks.items()
                        if isinstance(t, (LookAtTask, ComTask))}
        self._point_here = np.zeros(3)  # the look_at's or com's measured point at the tick's q (the leash's anchor)
        # relative_frame pose goals: node.goal_smoothing, as frame goals (leashed to the measured relative pose)
        self._relative = {n: GoalSmoother(settings.goal_smoothing) for n, t in self.ctrl.tasks.items()
                          if isinstance(t, RelativeFrameTask)}
        jog_accel = None if accel is None else RAMP_ACCELERATION_SHARE * accel.a_max  # per group joint
        self._jogs = {n: JointJogFollower(scene, self.group, settings.streaming, jog_accel)
                      for n, t in self.ctrl.tasks.items() if isinstance(t, ConfigurationTask)}
        # the other tasks whose kind takes a goal (Task.goal), on set_task_target: joint, point and relative pose
        # goals through the followers above; a "velocities" goal is a reference set as it arrives, a stream zeroed
        # after streaming.command_timeout without a newer one (time of the latest here)
        self._direct_goals = {n: t.goal for n, t in self.ctrl.tasks.items()
                              if getattr(t, "goal", "") and n not in self._smoothers and n not in self._jogs}
        self._velocity_stamps: dict[str, float] = {}
        if accel is not None and settings.goal_smoothing.type not in ("max_acceleration", "jerk_limited"):
            self.notes.append(
                f"node.goal_smoothing.type {settings.goal_smoothing.type!r} with an acceleration limit: a pose goal "
                "that jumps is reached at the acceleration bounds and overshot by the braking distance; "
                "'jerk_limited' or 'max_acceleration' brakes the target into the goal instead")
        self._reach = {n: scene.arm_reach(self.group, t.frame)
                       for n, t in self.ctrl.tasks.items() if isinstance(t, FrameTask)}
        self._judges = {n: GoalJudge() for n in self._smoothers}  # goal feedback (status reports)
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
        """The OinkController for period dt, the velocity limits the guard uses, the following-error limit."""
        ctrl = OinkController(self.scene, self.config, dt, q)
        velocity = [lim for lim in ctrl.limits if isinstance(lim, VelocityLimit)]
        if not velocity:
            try:
                velocity = [VelocityLimit(ctrl.oink, dt)]
            except InvalidInputError as exc:
                raise InvalidInputError(f"limits: no velocity limit configured, and {exc}") from exc
            ctrl.limits.append(velocity[0])
            self.notes.append("limits: no velocity limit configured: using the URDF's (commands never "
                              "move faster than v_max)")
        self._velocity_limits = velocity
        accel = [lim for lim in ctrl.limits if isinstance(lim, AccelerationLimit)]
        if len(accel) > 1:
            raise InvalidInputError("limits: more than one acceleration limit; expected at most one (it bounds the "
                                    "command stream, whose history it keeps)")
        self._accel = accel[0] if accel else None
        if self._accel is not None:  # viability under the jerk bound uses the velocity bound the commands keep
            self._accel.set_velocity_bound(np.min([lim.v_max for lim in velocity], axis=0))
        self._following = FollowingErrorLimit(ctrl.oink, self.settings.max_state_divergence)
        self._base_limits = list(ctrl.limits)
        self.ctrl = ctrl
        self._apply_feedback_limits()

    def _check_braking_reserve(self) -> None:
        """Refuse an acceleration limit whose braking reserve E (the travel its braking policy counts for
        easing the acceleration back to zero: a_max dt^2 (ceil(a_max / (j_max dt)) - 1)^2, per joint) does
        not fit in the following leash: under commanded feedback a joint could never start moving (its
        corridor of +-max_state_divergence is narrower than what the policy reserves), and a jerk ramp that
        long (a_max / j_max) makes the one-step tasks overshoot and oscillate around their goals anyway."""
        accel = self._accel
        if accel is None or not np.isfinite(accel.E).all():
            return
        k = int(np.argmax(accel.E))
        leash = self.settings.max_state_divergence
        if accel.E[k] >= leash:
            joint = self.group.joint_names[k]
            a_max, j_max = float(accel.a_max[k]), float(accel.j_max[k])
            raise InvalidInputError(
                f"limits (acceleration): joint {joint!r}: a_max {a_max:g} and j_max {j_max:g} at {1 / self.dt:g} Hz "
                f"take {a_max / j_max:.3g} s to reach a_max, and braking reserves {accel.E[k]:.3g} rad or m, more than "
                f"node.max_state_divergence {leash:g}: the joint could not start moving within its following leash. "
                f"Expected j_max >= {_min_jerk(a_max, self.dt, leash):.4g} (or a larger max_state_divergence)")

    def _guard_v_max(self) -> np.ndarray:
        return np.min([lim.v_max for lim in self._velocity_limits], axis=0)

    def _apply_feedback_limits(self) -> None:
        if self.settings.state_feedback == "commanded":
            self.ctrl.limits = [*self._base_limits, self._following]
            for lim in self._velocity_limits:
                lim.set_reference(None)
        else:
            self.ctrl.limits = list(self._base_limits)

    def _task_config(self, name: str):
        return next(tc for tc in self.config.tasks if tc.name == name)

    def _joint_shaper(self, name: str, task) -> JointTargetShaper:
        """The shaper of a joint-target task's goals: per joint at most the velocity limit and the task's
        ``max_target_speed`` (a joint task's null: the velocity limit); with an acceleration limit, its a_max and
        j_max times RAMP_ACCELERATION_SHARE (without one none: the target's velocity steps, a max-speed ramp).
        A joint task's target stays within ``target_leash`` of the joint; a configuration task's is not leashed
        (a posture below other tasks is by design reached only as far as they leave room)."""
        tc, accel = self._task_config(name), self._accel
        share = RAMP_ACCELERATION_SHARE
        a_max, j_max = (math.inf, math.inf) if accel is None else (share * accel.a_max, share * accel.j_max)
        leash = getattr(tc, "target_leash", math.inf) if isinstance(task, JointTask) else math.inf
        return JointTargetShaper(self.scene, self.group, self.dt, self._joint_target_speed(name), a_max, j_max,
                                 None if math.isinf(leash) else leash)

    def _joint_target_speed(self, name: str) -> np.ndarray:
        """[rad/s or m/s] per group joint: what a shaped joint target of task ``name`` moves at most: its
        max_target_speed, the velocity limit, and with an acceleration limit under commanded feedback the speed
        from which the joint still brakes within the following window (max_state_divergence: the QP brakes for
        its edge like a position limit, so a faster target would run ahead of the command and be caught up at
        the acceleration bounds, overshooting)."""
        speed = self._guard_v_max()
        tc = self._task_config(name)
        if tc.max_target_speed is not None:
            speed = np.minimum(speed, tc.max_target_speed)
        accel = self._accel
        if accel is not None and self.settings.state_feedback == "commanded":
            speed = np.minimum(speed, following_speed(accel.a_max, accel.j_max, self.dt,
                                                      self.settings.max_state_divergence))
        return np.maximum(speed, MIN_TARGET_SPEED)  # a window too narrow to move in: the target crawls

    def _refresh_joint_target_speeds(self) -> None:
        """After a change of state_feedback or max_state_divergence: the shaped joint targets' speeds."""
        for name, ramp in self._ramps.items():
            ramp.set_speed(self._joint_target_speed(name))

    def _point_shaper(self, name: str) -> TargetShaper | LineOfSightShaper:
        """The shaper of a point goal: a look_at's turns its line of sight at max_turn_speed, _acceleration and
        _jerk, its target's direction within ``target_leash`` [rad] of the axis; a com's moves along a straight
        line at max_target_speed, _acceleration and _jerk, within ``target_leash`` [m] of the centre of mass."""
        tc = self._task_config(name)
        leash = None if math.isinf(tc.target_leash) else tc.target_leash
        if isinstance(self.ctrl.tasks[name], LookAtTask):
            return LineOfSightShaper(self.dt, tc.max_turn_speed, tc.max_turn_acceleration, tc.max_turn_jerk, leash)
        return TargetShaper(3, self.dt, tc.max_target_speed, tc.max_target_acceleration, tc.max_target_jerk,
                            euclidean=True, leash=leash)

    def _eye(self, name: str) -> np.ndarray | None:
        """A look_at task's frame origin [m] at the last command (None for another task)."""
        task = self.ctrl.tasks[name]
        if not isinstance(task, LookAtTask):
            return None
        pin.forwardKinematics(self.scene.model, self._fk_data, self.guard.last)
        return pin.updateFramePlacement(self.scene.model, self._fk_data, task.frame_id).translation.copy()

    def _set_point_goal(self, name: str, point: np.ndarray) -> None:
        shaper = self._points[name]
        if isinstance(shaper, LineOfSightShaper):
            shaper.set_goal(point, self._eye(name))
        else:
            shaper.set_goal(point)

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

    def _retarget_all(self) -> None:
        """Every follower at its task's current target (set by hold_at); no stream; wait for an input."""
        for name, smoother in self._smoothers.items():
            smoother.reset(self.ctrl.tasks[name].target)
            self._twists[name].stop()
        for name, ramp in self._ramps.items():
            ramp.reset(self.ctrl.tasks[name].target)
        for jog in self._jogs.values():
            jog.stop()
        for name, smoother in self._relative.items():
            smoother.reset(self.ctrl.tasks[name].target)
        for name, shaper in self._points.items():
            if isinstance(shaper, LineOfSightShaper):
                shaper.reset(self.ctrl.tasks[name].target, self._eye(name))
            else:
                shaper.reset(self.ctrl.tasks[name].target)
        self._velocity_stamps.clear()  # hold_at zeroed their references
        self._stream_end.clear()
        self._awaiting_goal = True

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
    def set_rate(self, hz: float) -> None:
        """New control rate: rebuild the solver objects (limits and barriers depend on dt), keep targets."""
        old = self.ctrl
        ratio = (1.0 / hz) / self.dt
        self.dt = 1.0 / hz
        self.settings.control_rate_hz = float(hz)
        self._build(self.dt, self.guard.last)
        for name, task in self.ctrl.tasks.items():
            target = getattr(old.tasks[name], "target", None)  # a task kind without a target (damping) has none
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
        self._apply_feedback_limits()
        self._refresh_joint_target_speeds()

    def set_max_state_divergence(self, value: float) -> None:
        self.settings.max_state_divergence = float(value)
        self._following.max_error = float(value)
        self._refresh_joint_target_speeds()

    # ------------------------------------------------------------------ goals
    def _check_goal_allowed(self) -> None:
        if self.mode == INACTIVE:
            raise InvalidInputError("the controller is not active (goals start from the current pose on activate)")
        if self.mode == STALE:
            raise InvalidInputError("joint states are stale: the robot's pose is unknown; send the goal when it "
                                    "reports again")
        if self.paused or self._resume_pending:
            raise InvalidInputError("the controller is paused (~/pause): inputs are ignored until it is resumed"
                                    if self.paused else "the controller is resuming from a pause: inputs are "
                                    "accepted once the arm is at rest")

    def set_pose_goal(self, task_name: str, T_world_target: pin.SE3) -> None:
        """Goal of a frame task (``T_world_target`` in the model's world frame), or raise."""
        self._check_goal_allowed()
        limit = self.settings.max_goal_distance or GOAL_REACH_FACTOR * self._reach[task_name]
        pin.forwardKinematics(self.scene.model, self._fk_data, self.guard.last)
        base = self._fk_data.oMi[int(self.group.joint_ids[0])].translation
        distance = float(np.linalg.norm(T_world_target.translation - base))
        if distance > limit:
            raise InvalidInputError(
                f"goal position {np.round(T_world_target.translation, 4).tolist()} is {distance:.4g} m from the arm's "
                f"first joint {self.group.joint_names[0]!r}; the arm reaches {self._reach[task_name]:.3g} m and goals "
                f"farther than {limit:.3g} m are refused (node.max_goal_distance)")
        smoother, twist = self._smoothers[task_name], self._twists[task_name]
        if twist.streaming:  # a pose goal takes over a twist stream: continue from its target and velocity
            smoother.continue_from(twist.target, twist.linear_velocity, twist.angular_velocity)
            twist.stop()
        self._stream_end.pop(task_name, None)
        smoother.set_goal(T_world_target)
        self._start_tracking()

    def set_twist(self, task_name: str, linear, angular, now: float, age: float = 0.0,
                  R_world_command: np.ndarray | None = None) -> None:
        """A twist of a frame task's frame (``linear`` of its origin, ``angular`` about it, in the
        frame whose orientation in the world is ``R_world_command``; None = the world), received at
        ``now`` [s] and ``age`` [s] old then; scaled by ``streaming`` (command_in_type, max speeds,
        speed_override). Raise InvalidInputError on a refused command."""
        self._check_goal_allowed()
        if task_name not in self._twists:
            raise InvalidInputError(f"task {task_name!r} is not a frame task; frame tasks: {list(self._twists)}")
        timeout = self.settings.streaming.command_timeout
        if age > timeout:
            raise InvalidInputError(f"the twist is {age:.3f} s old on arrival (header.stamp), more than "
                                    f"command_timeout {timeout:g} s: ignored")
        v, w = scale_twist(self.settings.streaming, linear, angular)
        if R_world_command is not None:
            v, w = R_world_command @ v, R_world_command @ w
        twist, smoother = self._twists[task_name], self._smoothers[task_name]
        if not twist.streaming:  # continue from where the target is and how it moves (a pose goal, a stop)
            moving = smoother.moving and smoother.cfg.type in ("max_acceleration", "jerk_limited")
            twist.start(smoother.target if smoother.target is not None else self.ctrl.tasks[task_name].target,
                        smoother.linear_velocity if moving else None, smoother.angular_velocity if moving else None)
            smoother.moving = False
        twist.command(v, w, now, age)
        self._stream_end.pop(task_name, None)
        self._start_tracking()

    def motion_limit(self, now: float) -> tuple[str, str]:
        """(code, text) of why a stream is not followed as asked: paused, a timed-out stream (the
        command's age), a jogged joint at its limit, a singularity, a target held at the leash (the joint
        bounds the step sits on, :meth:`binding_bounds`, else LEASH); ("", "") otherwise. Barriers binding
        the step are the caller's to add (they are in the step's outcome)."""
        self._leash_cause = ""
        if self.paused or self._resume_pending:
            return LIMIT_PAUSED, self.hold_reason
        for name, follower in (*self._twists.items(), *self._jogs.items()):
            if follower.streaming and follower.command_age(now) > self.settings.streaming.command_timeout:
                return COMMAND_TIMEOUT, self._timeout_text(name, follower.command_age(now), "braking to a stop")
        for name, text in self._stream_end.items():
            return COMMAND_TIMEOUT, text
        for name, jog in self._jogs.items():
            if jog.streaming and jog.at_bound.any():
                limits = ", ".join(f"{self.group.joint_names[k]} at its {side} limit {value:.4f}"
                                   for k, side, value in jog.bounds_reached())
                return JOINT_BOUND, (f"task {name!r}: joint bound: {limits}; "
                                     "the jog toward it stops there")
        for name, twist in self._twists.items():
            sing = self._singularity[name]
            if twist.streaming and sing.value < 1.0:
                return SINGULARITY, (f"task {name!r}: near a singularity: the Jacobian's condition number is "
                                     f"{sing.kappa:.1f} (lower_singularity_threshold {sing.lower:g}, hard stop "
                                     f"{sing.hard:g}): the twist toward it is scaled by {sing.value:.2f} (away: "
                                     "not scaled)")
        st = self.settings.streaming
        for name, twist in self._twists.items():
            if twist.streaming and twist.leashed:
                return self._held_at_leash(name, f"the frame cannot follow the twist (its target is held "
                                                 f"{st.leash_distance:g} m / {st.leash_angle:g} rad from it)")
        for name, jog in self._jogs.items():
            if jog.streaming and jog.leashed:
                return self._held_at_leash(name, f"the joints cannot follow the jog (its target is held "
                                                 f"{st.joint_leash:g} rad from them)")
        return "", ""

    def _held_at_leash(self, name: str, what: str) -> tuple[str, str]:
        """(code, text) of a stream whose target is held at the leash: the joint bounds the last step
        sits on (binding_bounds: which joint, its value and bound), else LEASH."""
        hits = self.binding_bounds()
        code = hits[0].code if hits else LEASH
        self._leash_cause = code
        if not hits:
            return LEASH, (f"task {name!r}: {what}; no joint limit, velocity or acceleration bound holds this step "
                           "(the task is traded against the others: task weights and priorities, regularization, "
                           "the barriers' soft terms)")
        return code, f"task {name!r}: {what}: " + "; ".join(f"{h.code} {h.text}" for h in hits)

    @property
    def leash_cause(self) -> str:
        """The code the last :meth:`motion_limit` gave a stream held at its leash ("" if it gave another)."""
        return self._leash_cause

    def binding_bounds(self):
        """The joint bounds the last step sits on (:func:`binding_bounds`); [] unless it moved the arm."""
        out = self.last_outcome
        if self.mode not in MOVING_MODES or out is None or not (out.result.ok and out.barriers_ok):
            return []
        return binding_bounds(self.scene, self.group, self.ctrl.limits, self._q_start, out.result.dq, self.dt,
                              self.ctrl.oink.constraint_tolerance)

    def barrier_rows(self) -> list[tuple[str, list[str], np.ndarray, np.ndarray]]:
        """Each barrier's (name, row names, h [m], binding at the last step); [] before a step ran from the
        current pose. Binding: the step could move at most BINDING_SLACK [rad] further along the row's
        direction (slack / ||G_row||; an absolute slack would call a row binding whose G and bound are both
        tiny: a base link's distance, whose braking bound shrinks with |J_h|). For reports, not the tick."""
        out = self.last_outcome
        if out is None:
            return []
        dq = out.result.dq if out.result.ok else None
        rows = []
        for b in self.ctrl.barriers:
            binding = np.zeros(b.size, dtype=bool)
            if dq is not None:
                with np.errstate(invalid="ignore"):
                    norm = np.linalg.norm(b.G, axis=1)
                    binding = (b.upper - b.G @ dq <= BINDING_SLACK * norm) & (norm > 0.0)
            rows.append((b.name, list(b.row_names), b.value.copy(), binding))
        return rows

    def goal_feedback(self, now: float, barriers=None) -> list[GoalVerdict]:
        """Per frame task, whether its goal is reachable or what stops the arm short of it and how far
        (:mod:`.goal_feedback`), judged from the last command increment at ``now`` [s] (the caller's status
        rate: call it regularly, its stall clock needs samples). ``barriers``: :meth:`barrier_rows`, if the
        caller has them. No verdict for a task under a twist stream (:meth:`motion_limit` reports it), or while
        the loop holds (``hold_reason``) or waits for a first goal."""
        judging = self.mode in MOVING_MODES and not self._awaiting_goal and self.last_outcome is not None
        model, data, q = self.scene.model, self._feedback_data, self.guard.last
        verdicts, kinematics = [], False
        for name, smoother in self._smoothers.items():
            judge = self._judges[name]
            if not judging or self._twists[name].streaming or smoother.goal is None:
                judge.reset()
                verdicts.append(GoalVerdict(name))
                continue
            if not kinematics:
                pin.computeJointJacobians(model, data, q)  # forward kinematics included
                kinematics = True
            task = self.ctrl.tasks[name]
            T_world_frame = pin.updateFramePlacement(model, data, task.frame_id)
            J = pin.getFrameJacobian(model, data, task.frame_id, pin.LOCAL_WORLD_ALIGNED)
            judge.weights = task.sqrt_weight
            verdict, distance, angle = judge.judge(now, T_world_frame, smoother.goal,
                                                   J[:, self._gv] @ self.guard.u1 / self.dt)
            if verdict != LIMITED:
                verdicts.append(GoalVerdict(name, verdict, distance=distance, angle=angle))
                continue
            code, at, reason = self._goal_limit(name, smoother.goal,
                                                self.barrier_rows() if barriers is None else barriers)
            verdicts.append(GoalVerdict(name, LIMITED, code, at, reason, distance, angle))
        return verdicts

    def _goal_limit(self, name: str, T_world_goal: pin.SE3, barriers) -> tuple[str, tuple[str, ...], str]:
        """(cause, the barriers' or joints' names, sentence) of a goal the arm stalled short of; forward
        kinematics at the last command in ``self._feedback_data``."""
        rows = [(b, row_names[k], float(h[k])) for b, row_names, h, binding in barriers
                for k in np.flatnonzero(binding)]
        if rows:
            return BARRIER, tuple(dict.fromkeys(b for b, _, _ in rows)), (
                "barrier rows bind the step: " + ", ".join(f"{b!r} {row} (h = {h:.4f} m)" for b, row, h in rows))
        hits = self.binding_bounds()
        stops = [h for h in hits if h.code == JOINT_BOUND]  # the other bounds delay a motion, never end it
        first = int(self.group.joint_ids[0])
        distance = float(np.linalg.norm(T_world_goal.translation - self._feedback_data.oMi[first].translation))
        if distance > self._reach[name]:
            return OUT_OF_REACH, (), (f"the goal is {distance:.3f} m from the arm's first joint "
                                      f"{self.group.joint_names[0]!r}, which reaches {self._reach[name]:.3f} m at most")
        if stops:
            return JOINT_BOUND, tuple(h.joint for h in stops), "; ".join(h.text for h in stops)
        task = self.ctrl.tasks[name]
        J = pin.getFrameJacobian(self.scene.model, self._feedback_data, task.frame_id, pin.LOCAL_WORLD_ALIGNED)
        sv = np.linalg.svd(task.sqrt_weight[:, None] * J[:, self._gv], compute_uv=False)
        sv = sv[sv > 0.0]  # the directions the task weighs
        kappa = float(sv[0] / sv[-1]) if sv.size else math.inf
        threshold = self.settings.streaming.lower_singularity_threshold
        if kappa >= threshold:
            return SINGULARITY, (), (f"the arm is near a singularity (the frame Jacobian's condition number "
                                     f"{kappa:.1f} >= lower_singularity_threshold {threshold:g}): at full stretch the "
                                     "goal is likely out of reach")
        return TRADEOFF, (), ("no barrier row or joint position limit binds the step: the goal is traded against the "
                              "other tasks, the regularization or the barriers' soft terms (condition number "
                              f"{kappa:.1f})")

    @property
    def streaming(self) -> bool:
        """A twist, jog or velocity-reference stream drives some task's target."""
        return bool(self._velocity_stamps) or any(t.streaming for t in (*self._twists.values(), *self._jogs.values()))

    def _count_limit(self, code: str) -> None:
        self.counts.motion_limits[code] = self.counts.motion_limits.get(code, 0) + 1

    def note_motion_limit(self, code: str) -> None:
        """Count an episode of a motion limit known only from the step's solution, sampled by the caller
        (the node's status and diagnostics rates): ``code`` is what it reports now, :meth:`motion_limit`'s
        or BARRIER (barrier rows bound a stream's step: the caller reads them from the step's outcome).
        Counted: BARRIER, and what held a target at the leash (the code :meth:`motion_limit` just gave it);
        the other codes are counted by the tick."""
        sampled = code if code == BARRIER or (code and code == self._leash_cause) else ""
        if sampled and sampled != self._sampled_limit:
            self._count_limit(sampled)
        self._sampled_limit = sampled

    def _note_stream_limit(self, name: str, code: str) -> None:
        """Count an episode when task ``name``'s stream enters motion limit ``code`` ("" = none; LEASH is
        counted by its cause, when sampled: :meth:`note_motion_limit`)."""
        if code and code != LEASH and self._stream_limit.get(name) != code:
            self._count_limit(code)
        self._stream_limit[name] = code

    def _timeout_text(self, name: str, age: float, what: str) -> str:
        return (f"task {name!r}: command timeout: the latest command is {age:.3f} s old (command_timeout "
                f"{self.settings.streaming.command_timeout:g} s): {what}")

    def set_joint_goal(self, task_name: str, q_group: np.ndarray) -> None:
        """Goal of a configuration task (the group's q, inside the limits), or raise."""
        self._check_goal_allowed()
        ramp, jog = self._ramps[task_name], self._jogs[task_name]
        if jog.streaming:  # a joint goal takes over a jog: continue from its target and velocity
            ramp.continue_from(jog.target, jog.velocity)
            jog.stop()
        self._stream_end.pop(task_name, None)
        ramp.set_goal(q_group)
        self._start_tracking()

    def set_joint_velocities(self, task_name: str, dq_group: np.ndarray, now: float, age: float = 0.0) -> None:
        """A joint jog of a configuration task: velocities of the group's joints (group v order; 0 for
        joints not jogged), received at ``now`` [s] and ``age`` [s] old then; scaled by ``streaming``
        (command_in_type, max_joint_speed, speed_override). Raise InvalidInputError on a refused command."""
        self._check_goal_allowed()
        if task_name not in self._jogs:
            raise InvalidInputError(f"task {task_name!r} is not a configuration task; configuration tasks: "
                                    f"{list(self._jogs)}")
        timeout = self.settings.streaming.command_timeout
        if age > timeout:
            raise InvalidInputError(f"the jog is {age:.3f} s old on arrival (header.stamp), more than "
                                    f"command_timeout {timeout:g} s: ignored")
        dq = scale_joint_velocities(self.settings.streaming, dq_group)
        jog, ramp = self._jogs[task_name], self._ramps[task_name]
        if not jog.streaming:
            jog.start(ramp.target, ramp.velocity.copy() if ramp.moving and self._accel is not None else None)
            ramp.reset(ramp.target)  # the jog drives the target now
        jog.command(dq, now, age)
        self._stream_end.pop(task_name, None)
        self._start_tracking()

    def set_task_target(self, task_name: str, value, now: float = 0.0) -> None:
        """Goal of a task whose kind takes its target as is (:attr:`direct_goals`: "pose" a pin.SE3 in the task's
        reference frame, "point" a world point, "joints" the group's q, "velocities" the group's v [rad/s], a
        stream received at ``now`` [s]), or raise InvalidInputError. The step's limits apply as to every goal."""
        self._check_goal_allowed()
        kind = self._direct_goals.get(task_name)
        if kind is None:
            raise InvalidInputError(f"task {task_name!r} takes no such goal; tasks with direct goals: "
                                    f"{list(self._direct_goals)}")
        if task_name in self._ramps:  # joint goals: shaped (the group's q)
            self._ramps[task_name].set_goal(as_vector(value, self.group.nq, f"{task_name}.target"))
        elif task_name in self._points:  # point goals: shaped
            self._set_point_goal(task_name, as_vector(value, 3, f"{task_name}.target"))
        elif task_name in self._relative:  # relative poses: smoothed as frame goals
            self._relative[task_name].set_goal(as_se3(value, f"{task_name}.target"))
        else:
            self.ctrl.tasks[task_name].set_target(value)
        if kind == "velocities":
            self._velocity_stamps[task_name] = now
            self._stream_end.pop(task_name, None)
        self._start_tracking()

    @property
    def direct_goals(self) -> Mapping[str, str]:
        """Task name -> the goal its kind takes ("pose", "point", "joints", "velocities"), for the tasks whose
        goals arrive on :meth:`set_task_target` (frame and configuration tasks have their own inputs); joint and
        point goals are shaped there as every other goal."""
        return MappingProxyType(self._direct_goals)

    def apply_configured_targets(self) -> None:
        """Let every task with a configured target (a configuration or joint task's ``target``, a look_at's
        ``point``) move toward it, shaped as any goal, without another goal; again after a first goal: the
        configured targets of the tasks that are at rest."""
        self._check_goal_allowed()
        if not self._start_tracking():
            self._apply_configured_targets()

    def _start_tracking(self) -> bool:
        """The first goal since activation: the configured targets take effect too. Whether it was the first."""
        if not self._awaiting_goal:
            return False
        self._awaiting_goal = False
        self._apply_configured_targets()
        if self.mode == WAITING_FOR_GOAL:
            self.mode, self.hold_reason = TRACKING, ""
        return True

    def _apply_configured_targets(self) -> None:
        """Each task at rest with a configured target (not "current"; a look_at's point not null) gets it as
        its goal, through its shaper; a task that is moving to a goal keeps it."""
        q = self.guard.last
        for name, ramp in self._ramps.items():
            tc = self._task_config(name)
            if ramp.moving or tc.target == "current" or (name in self._jogs and self._jogs[name].streaming):
                continue
            if isinstance(self.ctrl.tasks[name], ConfigurationTask):
                ramp.set_goal(self.ctrl.configured_target(tc, q))
            else:
                ramp.set_goal(configured_joint_target(tc, self.ctrl.oink.robot, q))
        for name, shaper in self._points.items():
            point = getattr(self._task_config(name), "point", None)  # look_at's (com has no configured target)
            if point is not None and not shaper.moving:
                self._set_point_goal(name, as_vector(point, 3, f"{name}.point"))

    def goal(self, task_name: str):
        """The latest goal of a task (pin.SE3 for frame tasks, group q for joint-target tasks, a world point
        for look_at and com tasks)."""
        if task_name in self._smoothers:
            return self._smoothers[task_name].goal
        if task_name in self._points:
            return self._points[task_name].goal.copy()
        if task_name in self._relative:
            return self._relative[task_name].goal
        return self._ramps[task_name].goal

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
        q_next = self._braked(guard.last)
        self.mode, self.hold_reason = HOLDING, "stopping (deactivate)"
        return TickResult(True, guard.apply(q_next), self._previous)

    def closest_obstacle(self) -> tuple[str, str, float]:
        """(obstacle, robot link, signed distance [m]) nearest at the last command (the measured state
        before the first): ("", "", inf) without obstacles. For status reports, not the tick."""
        q = self.guard.last if self.active else self.state.measured
        return self._closest_obstacle.query(q)

    # ------------------------------------------------------------------ read-only view (for the node)
    # What a caller (the node, status reports, benchmarks) reads of the loop, without reaching into
    # its parts (the guard, the controller, the state tracker). Same locking rule as every method.
    @property
    def tasks(self) -> Mapping[str, object]:
        """Task name -> task (FrameTask, ConfigurationTask), read-only."""
        return MappingProxyType(self.ctrl.tasks)

    @property
    def barriers(self) -> tuple:
        """The barriers, in configuration order."""
        return tuple(self.ctrl.barriers)

    def barrier(self, name: str):
        """The barrier called ``name`` (KeyError if none)."""
        for b in self.ctrl.barriers:
            if b.name == name:
                return b
        raise KeyError(f"no barrier {name!r}; configured: {[b.name for b in self.ctrl.barriers]}")

    @property
    def command_started(self) -> bool:
        """A command stream exists (a command was made since activation)."""
        return self.guard.started

    def last_command(self) -> np.ndarray:
        """A copy of the last command (full q)."""
        return self.guard.last.copy()

    def measured_position(self) -> np.ndarray | None:
        """A copy of the last accepted measurement (full q), None before the first."""
        return self.state.measured.copy() if self.state.has_measurement else None

    def measurement_age(self, now: float) -> float:
        """[s] since the last accepted measurement (inf before the first)."""
        return self.state.age(now)

    @property
    def measurement_buffer(self) -> np.ndarray:
        """Where a decoder writes the next measurement (full q) before :meth:`accept_measurement`."""
        return self.state.incoming

    def accept_measurement(self, now: float) -> str:
        """Take the measurement in :attr:`measurement_buffer` received at ``now``; "" or why it was refused."""
        return self.state.accept(now)

    def reject_measurement(self, reason: str) -> None:
        """A measurement that could not be decoded (counted, kept as the last rejection)."""
        self.state.reject(reason)

    def count_goal_rejected(self) -> None:
        self.counts.goals_rejected += 1

    def count_collision_object_refused(self) -> None:
        self.counts.collision_objects_refused += 1

    @property
    def guard_cuts(self) -> int:
        """Steps the last-line guard had to cut (stays 0: a non-zero count is a bug upstream)."""
        return self.guard.cuts

    @property
    def joint_states_rejected(self) -> int:
        return self.state.rejected

    def expect_collision_prepare(self) -> None:
        """Call with the loop's lock held, right after changing the scene's obstacles, when
        :meth:`prepare_collisions` follows outside the lock: the ticks in between keep their tables."""
        for b in self.ctrl.barriers:
            expect = getattr(b, "expect_prepare", None)
            if expect is not None:
                expect()

    def prepare_collisions(self) -> None:
        """After the scene's obstacles changed, build the collision barriers' pair tables here (the thread
        that changed them, where they cannot change meanwhile) for the next tick to swap in."""
        for b in self.ctrl.barriers:
            prepare = getattr(b, "prepare", None)
            if prepare is not None:
                prepare()
        self._closest_obstacle.prepare()  # the status report's tables too (queried under the loop's lock)

    def braking_time_bound(self) -> float:
        """[s] A generous bound on a stop from any velocity within the bounds: twice the slowest joint's
        v_max/a_max + a_max/j_max, + 0.1 s (1 s without finite acceleration bounds)."""
        accel = self._accel
        if accel is None:
            return 1.0
        v_max = self.guard.v_max
        with np.errstate(divide="ignore", invalid="ignore"):
            t = (np.nan_to_num(v_max / accel.a_max, posinf=0.0)
                 + np.nan_to_num(accel.a_max / accel.j_max, nan=0.0, posinf=0.0))
        bound = 2.0 * float(t.max()) + 0.1
        return bound if np.isfinite(bound) else 1.0

    @property
    def acceleration_limit(self):
        """The configured AccelerationLimit (None without one)."""
        return self._accel

    @property
    def at_rest(self) -> bool:
        """The command stream is still (no increment in the last two commands)."""
        return not (self.guard.u1.any() or self.guard.u2.any())

    def _braked(self, q: np.ndarray) -> np.ndarray:
        """q ⊕ the acceleration limit's braking step at q (its history set for this tick)."""
        dq = self.ctrl.oink.scatter(self._accel.braking_step(q), out=self._dq_brake)
        return self.scene.integrate(q, dq)

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
        q = self._start_state()
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
            q_next = self._safest_stop_from(q)
        elif not out.barriers_ok:
            self.counts.barrier_refusals += 1
            self._hold("the barrier check refused the step (dq = 0)")
            q_next = self._safest_stop_from(q)
        elif self._awaiting_goal:
            q_next = self._stop_from(q)
            self.hold_reason = "waiting for a goal (holding the current pose)"
            if out.result.recovering:
                self.hold_reason += f"; {out.result.status}: a goal starts the recovery"
        else:
            self._moving(out)
        return TickResult(True, guard.apply(q_next), self._previous)

    def _paused_tick(self, q: np.ndarray) -> TickResult:
        """Brake along the path (hold without an acceleration limit); resuming re-targets once at rest."""
        q_next = self._stop_from(q)
        result = TickResult(True, self.guard.apply(q_next), self._previous)
        if self._resume_pending and self.at_rest:
            self._resume_pending = False
            self.ctrl.hold_at(self.guard.last)
            self._retarget_all()
            self.mode, self.hold_reason = WAITING_FOR_GOAL, "resumed: waiting for a goal (holding the current pose)"
        return result

    def _stop_from(self, q: np.ndarray) -> np.ndarray:
        """Where a hold goes from the step's start q: the previous command, or with an acceleration
        limit the braking step (zero once at rest)."""
        if self._accel is None:
            return self._previous
        return self._braked(q)

    def _safest_stop_from(self, q: np.ndarray) -> np.ndarray:
        """Where a hold goes from q when the step failed. A stop is a motion too (with an acceleration limit the
        arm brakes over many ticks), and it must be no less safe than what it replaces: the braking along the
        path (:meth:`_stop_from`) when the barrier check accepts it, else that braking corrected back along the
        failing rows' gradients within the box limits (:meth:`Oink.correct_step`), else the hardest braking joint by
        joint (corrected the same way if it fails the check) when that ends farther above the check's floors
        (:meth:`Oink.step_margin`; it brakes every joint at its bound, where the path's braking brakes all at the
        pace of the slowest)."""
        q_brake = self._stop_from(q)
        barriers, accel = self.ctrl.barriers, self._accel
        if accel is None or not barriers:  # the previous command again: no motion of the stream
            return q_brake
        oink, tolerance = self.ctrl.oink, self.config.solver.barrier_tolerance
        margin = oink.step_margin(q, self._dq_brake, barriers, tolerance)
        if margin >= 0.0:
            return q_brake
        # the path's braking crosses a floor (an arm sliding along a curved surface brakes straight on, into it):
        # turned back along the rows' gradients within the box limits, it brakes along the surface
        dq = self._dq_stop
        dq[:] = self._dq_brake
        if oink.correct_step(q, dq, barriers, tolerance):
            self.counts.corrected_stops += 1
            return self.scene.integrate(q, dq)
        dq = oink.scatter(accel.hardest_braking_step(q), out=self._dq_stop)
        hardest = oink.step_margin(q, dq, barriers, tolerance)
        if hardest < 0.0 and oink.correct_step(q, dq, barriers, tolerance):
            self.counts.corrected_stops += 1
            return self.scene.integrate(q, dq)
        if hardest <= margin:
            return q_brake
        self.counts.hardest_stops += 1
        return self.scene.integrate(q, dq)

    def _start_state(self) -> np.ndarray:
        """The configuration this step linearizes at (full nq, a reused buffer)."""
        q, measured, last, accel = self._q_start, self.state.measured, self.guard.last, self._accel
        if self.settings.state_feedback == "commanded":
            q[:] = last
            q[self._others_q] = measured[self._others_q]  # e.g. gripper fingers: never commanded here
            self._diff[:] = pin.difference(self.scene.model, measured, last)
            self._following.set_following_error(self._diff[self._gv])  # commanded ⊖ measured
            self.ctrl.oink.set_barrier_reference(None)
            if accel is not None:
                # the leash is braked for like a position limit (it moves with the robot: conservative)
                e, err = self._following.max_error, self._diff[self._gv]
                if np.isfinite(e):
                    np.subtract(e, err, out=self._room_up)
                    np.add(e, err, out=self._room_lo)
                    accel.set_following_room(self._room_up, self._room_lo)
                accel.set_history(self.guard.u1, self.guard.u2)
                self._following.include(accel.nearest_to_rest())  # a moving joint brakes, never jumps
        else:
            q[:] = measured
            self._diff[:] = pin.difference(self.scene.model, measured, last)
            offset = self._diff[self._gv]  # previous command ⊖ measured
            for lim in self._velocity_limits:
                lim.set_reference(offset)
            self.ctrl.oink.set_barrier_reference(offset)  # barriers bound the command's approach, as the box does
            if accel is not None:
                accel.set_following_room(None)
                accel.set_history(self.guard.u1, self.guard.u2, offset)
        return q

    def _advance_targets(self, q: np.ndarray, now: float) -> None:
        tasks, dt, model, data = self.ctrl.tasks, self.dt, self.scene.model, self._leash_data
        kinematics = False
        for name, smoother in self._smoothers.items():
            twist = self._twists[name]
            if not (smoother.moving or twist.streaming):
                continue
            if not kinematics:  # the leash's anchor (and, for twists, the singularity scale's Jacobian) at q
                if any(t.streaming for t in self._twists.values()):
                    pin.computeJointJacobians(model, data, q)  # forward kinematics included
                else:
                    pin.forwardKinematics(model, data, q)
                kinematics = True
            T_world_frame = pin.updateFramePlacement(model, data, tasks[name].frame_id)
            if twist.streaming:
                scale = 1.0
                if not twist.timed_out and twist.command_age(now) <= self.settings.streaming.command_timeout:
                    sing = self._singularity[name]
                    sing.row_weights = self.ctrl.tasks[name].sqrt_weight  # the live task's (a rate change rebuilds it)
                    scale = sing.scale(q, *twist.commanded, data=data)
                target = twist.step(dt, now, T_world_frame, scale)
                self._note_stream_limit(name, COMMAND_TIMEOUT if twist.timed_out else SINGULARITY if scale < 1.0
                                        else LEASH if twist.leashed else "")
                if not twist.streaming:  # timed out and braked to rest: the target stays there
                    self._end_stream(name, twist, smoother, target, now)
            else:
                target = smoother.step(dt, T_world_frame)
            if target is not None:
                tasks[name].set_target(target)
        for name, ramp in self._ramps.items():
            jog = self._jogs.get(name)
            if jog is not None and jog.streaming:
                target = jog.step(dt, now, q)
                self._note_stream_limit(name, COMMAND_TIMEOUT if jog.timed_out else JOINT_BOUND if jog.at_bound.any()
                                        else LEASH if jog.leashed else "")
                if not jog.streaming:
                    self._end_stream(name, jog, ramp, target, now)
            else:
                target = ramp.step(q)  # q: the leash's centre (a joint task's)
            if target is not None:
                tasks[name].set_target(target)
        for name, smoother in self._relative.items():
            if not smoother.moving:
                continue
            if not kinematics:  # the leash's anchor at q
                pin.forwardKinematics(model, data, q)
                kinematics = True
            task = tasks[name]
            pin.updateFramePlacement(model, data, task.frame_id)
            pin.updateFramePlacement(model, data, task.reference_id)
            target = smoother.step(dt, task.relative_pose(data))
            if target is not None:
                task.set_target(target)
        for name, shaper in self._points.items():
            if not shaper.moving:
                continue
            if shaper.leash is None:
                target = shaper.step()
            else:
                if not kinematics:  # the leash's anchor at q
                    pin.forwardKinematics(model, data, q)
                    kinematics = True
                target = self._leashed_point_step(tasks[name], shaper)
            if target is not None:
                tasks[name].set_target(target)
        if self._velocity_stamps:
            self._expire_velocity_goals(now)

    def _leashed_point_step(self, task, shaper):
        """A point shaper's step with its leash's anchor from the joint placements at the tick's q (in
        _leash_data): a com's, the centre of mass; a look_at's, a point its axis looks at (1 m ahead)."""
        data, here = self._leash_data, self._point_here
        if isinstance(task, ComTask):
            return shaper.step(task.com.evaluate(data, here))
        T = pin.updateFramePlacement(self.scene.model, data, task.frame_id)
        np.dot(T.rotation, task.axis, out=here)
        here += T.translation
        return shaper.step(here)

    def _expire_velocity_goals(self, now: float) -> None:
        """A velocity reference older than command_timeout is zeroed (no newer command: no motion)."""
        timeout = self.settings.streaming.command_timeout
        for name, stamp in list(self._velocity_stamps.items()):
            if now - stamp > timeout:
                task = self.ctrl.tasks[name]
                task.hold(self.guard.last)
                del self._velocity_stamps[name]
                self._stream_end[name] = self._timeout_text(name, now - stamp, "its velocity reference is zero")
                self.counts.stream_timeouts += 1
                self.log("warning", self._stream_end[name])

    def _end_stream(self, name: str, follower, goal_follower, target, now: float) -> None:
        """A stream that timed out and braked to rest: say so, and keep the target where it stopped."""
        self._stream_end[name] = self._timeout_text(name, follower.command_age(now), "stopped")
        self.counts.stream_timeouts += 1
        self.log("warning", self._stream_end[name])
        goal_follower.reset(target)
        follower.stop()

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


FOLLOWING_SPEED_MARGIN = 0.97  # following_speed keeps this share of the cruise speed the window allows
MIN_TARGET_SPEED = 1e-6  # [rad/s or m/s] a shaped joint target's speed limit is never below this (Ruckig needs > 0)


def following_speed(a_max: np.ndarray, j_max: np.ndarray, dt: float, room: float) -> np.ndarray:
    """[rad/s or m/s] per joint: FOLLOWING_SPEED_MARGIN of the steady speed u/dt whose braking travel under the
    acceleration limit's policy (acceleration_limit.py: ``B = n_A u + (u + alpha/2)^2 / (2 alpha) + E``, n_A for
    an acceleration of RAMP_ACCELERATION_SHARE a_max still ramping off) fits in ``room`` [rad or m]."""
    alpha = a_max * dt * dt
    delta = j_max * dt ** 3
    with np.errstate(divide="ignore", invalid="ignore"):
        n_c = np.where(np.isfinite(delta), np.maximum(np.ceil(alpha / delta) - 1.0, 0.0), 0.0)
        n_a = np.where(np.isfinite(delta),
                       np.maximum(np.ceil((1.0 + RAMP_ACCELERATION_SHARE) * alpha / delta) - 1.0, 0.0), 0.0)
    E = alpha * n_c ** 2
    b = alpha * (1.0 + 2.0 * n_a)  # u^2 + b u + c = 0
    c = alpha * alpha / 4.0 + 2.0 * alpha * (E - room)
    u = 0.5 * (-b + np.sqrt(np.maximum(b * b - 4.0 * c, 0.0)))
    return FOLLOWING_SPEED_MARGIN * np.maximum(u, 0.0) / dt


def _min_jerk(a_max: float, dt: float, leash: float) -> float:
    """The least j_max whose braking reserve a_max dt^2 (ceil(a_max / (j_max dt)) - 1)^2 is below ``leash``."""
    alpha = a_max * dt * dt
    n_c = max(int(math.floor(math.sqrt(leash / alpha))) if alpha > 0 else 0, 0)  # n_c^2 alpha < leash
    while n_c > 0 and alpha * n_c * n_c >= leash:
        n_c -= 1
    return a_max / (dt * (n_c + 1))  # ceil(a/(j dt)) - 1 <= n_c  <=>  a/(j dt) <= n_c + 1
