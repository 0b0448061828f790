"""What a caller (the node, status reports, benchmarks) reads of the control loop: why a stream is not followed as
asked, the bounds and barrier rows a step sits on, the goal feedback, and a read-only view of its parts (the
tasks, barriers, guard and state tracker), plus the counters a caller bumps. A part of
:class:`~.control_loop.ControlLoop` (its base class); the same locking rule as every loop method."""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType

import numpy as np
import pinocchio as pin

from .binding_bounds import JOINT_BOUND, binding_bounds
from .goal_feedback import LIMITED, OUT_OF_REACH, TRADEOFF, GoalVerdict
from .loop_modes import BARRIER, BINDING_SLACK, COMMAND_TIMEOUT, LEASH, LIMIT_PAUSED, MOVING_MODES, SINGULARITY


class LoopView:
    """Reports and the read-only view of :class:`~.control_loop.ControlLoop`."""

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
