"""The control loop's goals: the followers of every task that takes goals (built from the follower its kind names,
:mod:`.follower_kinds`), every input that sets a task's goal (pose, twist, joints, jog, a kind's direct goal, the
configured targets), the shapers that bring each to its task jerk-limited, and their step in the tick.
A part of :class:`~.control_loop.ControlLoop` (its base class), on the loop's state."""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType

import numpy as np
import pinocchio as pin

from ..errors import InvalidInputError, as_vector
from ..oink.tasks.pose_task import as_se3
from .binding_bounds import JOINT_BOUND
from .follower_kinds import JOINT_JOG, TARGET, goal_inputs
from .following_speed import MIN_TARGET_SPEED, following_speed
from .goal_feedback import GoalJudge
from .goal_followers import GoalSmoother
from .joint_jog_follower import JointJogFollower
from .line_of_sight_shaper import LineOfSightShaper
from .loop_modes import (COMMAND_TIMEOUT, GOAL_REACH_FACTOR, INACTIVE, LEASH, RAMP_ACCELERATION_SHARE, SINGULARITY,
                         STALE, TRACKING, WAITING_FOR_GOAL)
from .singularity_scale import SingularityScale
from .target_shaper import JointTargetShaper, TargetShaper
from .twist_follower import TwistFollower, scale_joint_velocities, scale_twist


class LoopGoals:
    """Goal inputs and shaping, for :class:`~.control_loop.ControlLoop`, which calls :meth:`_build_followers` once
    its controller and limits are built."""

    def _build_followers(self) -> None:
        """Each goal-taking task's followers, by the follower its kind names (Task.follower; :mod:`.follower_kinds`)."""
        settings, streaming, accel = self.settings, self.settings.streaming, self._accel
        jog_accel = None if accel is None else RAMP_ACCELERATION_SHARE * accel.a_max  # per group joint
        self._goal_inputs: dict[str, tuple[str, ...]] = {}  # every task that takes goals: the inputs it accepts
        self._direct_goals: dict[str, str] = {}  # the tasks whose goals arrive on set_task_target: their form
        # frame_pose: the pose goal's smoother, the twist stream, its singularity scale, the goal's judge and reach
        self._smoothers, self._twists, self._singularity, self._judges, self._reach = {}, {}, {}, {}, {}
        self._ramps, self._jogs = {}, {}  # joint goals (posture, joint_positions); joint jog streams (posture)
        self._relative, self._points = {}, {}  # relative_pose; point and line_of_sight goals
        for name, task in self.ctrl.tasks.items():
            inputs = goal_inputs(task)
            if not inputs:
                continue
            self._goal_inputs[name] = inputs
            if TARGET in inputs:
                self._direct_goals[name] = task.goal
            follower = task.follower
            if follower == "frame_pose":
                self._smoothers[name] = GoalSmoother(settings.goal_smoothing)
                self._twists[name] = TwistFollower(streaming)
                self._singularity[name] = SingularityScale(
                    self.scene, self.group, task.frame_id, streaming.lower_singularity_threshold,
                    streaming.hard_stop_singularity_threshold, row_weights=task.sqrt_weight)
                self._judges[name] = GoalJudge()  # goal feedback (status reports)
                self._reach[name] = self.scene.arm_reach(self.group, task.frame)
            elif follower == "relative_pose":  # node.goal_smoothing, as frame goals (leashed to the relative pose)
                self._relative[name] = GoalSmoother(settings.goal_smoothing)
            elif follower in ("posture", "joint_positions"):
                self._ramps[name] = self._joint_shaper(name, leashed=follower == "joint_positions")
                if JOINT_JOG in inputs:
                    self._jogs[name] = JointJogFollower(self.scene, self.group, streaming, jog_accel)
            elif follower in ("point", "line_of_sight"):
                self._points[name] = self._point_shaper(name, line_of_sight=follower == "line_of_sight")

    def _task_config(self, name: str):
        return next(tc for tc in self.config.tasks if tc.name == name)

    def _joint_shaper(self, name: str, leashed: bool) -> JointTargetShaper:
        """The shaper of a task's joint goals: per joint at most the velocity limit and the task's
        ``max_target_speed`` (a joint task's null: the velocity limit); with an acceleration limit, its a_max and
        j_max times RAMP_ACCELERATION_SHARE (without one none: the target's velocity steps, a max-speed ramp).
        ``leashed`` (joint_positions): the target stays within the entry's ``target_leash`` of the joint; a
        posture's is not leashed (a posture below other tasks is by design reached only as far as they leave room)."""
        tc, accel = self._task_config(name), self._accel
        share = RAMP_ACCELERATION_SHARE
        a_max, j_max = (math.inf, math.inf) if accel is None else (share * accel.a_max, share * accel.j_max)
        leash = tc.target_leash if leashed else math.inf
        return JointTargetShaper(self.scene, self.group, self.dt, self._joint_target_speed(name), a_max, j_max,
                                 None if math.isinf(leash) else leash)

    def _joint_target_speed(self, name: str) -> np.ndarray:
        """[rad/s or m/s] per group joint: what a shaped joint target of task ``name`` moves at most: its
        max_target_speed, the velocity limit, and with an acceleration limit under commanded feedback the speed
        from which the joint still brakes within the following window (max_state_divergence: the QP brakes for
        its edge like a position limit, so a faster target would run ahead of the command and be caught up at
        the acceleration bounds, overshooting)."""
        speed = self._limits.v_max
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

    def _point_shaper(self, name: str, line_of_sight: bool) -> TargetShaper | LineOfSightShaper:
        """The shaper of a point goal: ``line_of_sight`` (a look_at's) turns the line of sight at max_turn_speed,
        _acceleration and _jerk, its target's direction within ``target_leash`` [rad] of the axis; else (a com's)
        it moves along a straight line at max_target_speed, _acceleration and _jerk, within ``target_leash`` [m]
        of the task's leash point (the centre of mass)."""
        tc = self._task_config(name)
        leash = None if math.isinf(tc.target_leash) else tc.target_leash
        if line_of_sight:
            return LineOfSightShaper(self.dt, tc.max_turn_speed, tc.max_turn_acceleration, tc.max_turn_jerk, leash)
        return TargetShaper(3, self.dt, tc.max_target_speed, tc.max_target_acceleration, tc.max_target_jerk,
                            euclidean=True, leash=leash)

    def _eye(self, name: str) -> np.ndarray:
        """A line_of_sight task's frame origin [m] at the last command (where its line of sight starts)."""
        pin.forwardKinematics(self.scene.model, self._fk_data, self.guard.last)
        return pin.updateFramePlacement(self.scene.model, self._fk_data,
                                        self.ctrl.tasks[name].frame_id).translation.copy()

    def _set_point_goal(self, name: str, point: np.ndarray) -> None:
        shaper = self._points[name]
        if isinstance(shaper, LineOfSightShaper):
            shaper.set_goal(point, self._eye(name))
        else:
            shaper.set_goal(point)

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

    @property
    def streaming(self) -> bool:
        """A twist, jog or velocity-reference stream drives some task's target."""
        return bool(self._velocity_stamps) or any(t.streaming for t in (*self._twists.values(), *self._jogs.values()))

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
        """Goal of any task, in its kind's form: a frame task's a pin.SE3 in the world frame (as
        :meth:`set_pose_goal`, its reach check included), a configuration task's the group's q (as
        :meth:`set_joint_goal`), and those of :attr:`direct_goals` as is ("pose" a pin.SE3 in the task's reference
        frame, "point" a world point, "joints" the group's q, "velocities" the group's v [rad/s], a stream received
        at ``now`` [s]); or raise InvalidInputError naming what was wrong. The step's limits apply as to every goal."""
        self._check_goal_allowed()
        if task_name in self._smoothers:  # a frame task
            return self.set_pose_goal(task_name, as_se3(value, f"{task_name}.target"))
        if task_name in self._jogs:  # a configuration task
            return self.set_joint_goal(task_name, as_vector(value, self.group.nq, f"{task_name}.target"))
        if task_name not in self._direct_goals:
            raise InvalidInputError(f"task {task_name!r} takes no such goal; tasks: "
                                    f"{[*self._smoothers, *self._jogs, *self._direct_goals]}")
        follower = self.ctrl.tasks[task_name].follower  # the follower it was given (_build_followers)
        if follower == "joint_positions":  # shaped (the group's q)
            self._ramps[task_name].set_goal(as_vector(value, self.group.nq, f"{task_name}.target"))
        elif follower in ("point", "line_of_sight"):  # shaped
            self._set_point_goal(task_name, as_vector(value, 3, f"{task_name}.target"))
        elif follower == "relative_pose":  # smoothed as frame goals
            self._relative[task_name].set_goal(as_se3(value, f"{task_name}.target"))
        else:  # "velocities": a reference stream, set as it arrives
            self.ctrl.tasks[task_name].set_target(value)
            self._velocity_stamps[task_name] = now
            self._stream_end.pop(task_name, None)
        self._start_tracking()

    @property
    def goal_inputs(self) -> Mapping[str, tuple[str, ...]]:
        """Task name -> the goal inputs it accepts (:mod:`.follower_kinds`: "pose", "twist", "joints", "joint_jog",
        "target"), for every task whose kind takes goals, in the configured order."""
        return MappingProxyType(self._goal_inputs)

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
        q, robot = self.guard.last, self.ctrl.oink.robot
        for name, ramp in self._ramps.items():
            if ramp.moving or (name in self._jogs and self._jogs[name].streaming):
                continue
            q_group = self._task_config(name).configured_goal(robot, q)  # None: "current"
            if q_group is not None:
                ramp.set_goal(q_group)
        for name, shaper in self._points.items():
            if shaper.moving:
                continue
            point = self._task_config(name).configured_goal(robot, q)  # a look_at's point (None: null; a com's)
            if point is not None:
                self._set_point_goal(name, point)

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
        _leash_data): the task's leash point (a com's, the centre of mass; a look_at's, a point its axis looks at)."""
        return shaper.step(task.leash_point(self._leash_data, self._point_here))

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
