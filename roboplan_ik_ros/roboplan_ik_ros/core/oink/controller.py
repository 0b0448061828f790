"""OinkController: the tasks, limits and barriers of an :class:`IKConfig`, stepped once per tick."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..config import BarrierConfig, IKConfig, LimitConfig, TaskConfig
from ..errors import InvalidInputError
from . import (
    AccelerationLimit,
    Barrier,
    ConfigurationTask,
    FrameTask,
    Limit,
    Oink,
    OinkResult,
    PositionBarrier,
    PositionLimit,
    CollisionBarrier,
    SingularityBarrier,
    Task,
    VelocityLimit,
    brake_barriers_for,
)
from ..model.scene import Scene


@dataclass
class StepOutcome:
    q_next: np.ndarray  # full nq, after integration (equal to q when the step was refused)
    dq: np.ndarray  # full nv displacement applied (a reused buffer)
    result: OinkResult
    barriers_ok: bool  # False when enforce_barriers zeroed the step


class OinkController:
    """Builds OInK objects from ``config`` for control period ``dt`` [s], starting at ``q`` (full nq)."""

    def __init__(self, scene: Scene, config: IKConfig, dt: float, q: np.ndarray) -> None:
        self.scene = scene
        self.config = config
        self.dt = dt
        s = config.solver
        self.oink = Oink(
            scene, config.robot.group, s.regularization, unconstrained_shortcut=s.unconstrained_shortcut,
            eps_abs=s.eps_abs, eps_rel=s.eps_rel, max_iter=s.max_iter, barrier_slack_penalty=s.barrier_slack_penalty,
            qp_solver=s.qp_solver,
        )
        q = scene.check_configuration(q)
        self.tasks: dict[str, Task] = {}
        for k, tc in enumerate(config.tasks):
            self.tasks[tc.name] = _prefixed(f"tasks[{k}] ({tc.name})", self._make_task, tc, q)
        self.limits: list[Limit] = [
            _prefixed(f"limits[{k}] ({lc.type})", self._make_limit, lc) for k, lc in enumerate(config.limits)
        ]
        self.barriers: list[Barrier] = [
            _prefixed(f"barriers[{k}] ({bc.name})", self._make_barrier, bc) for k, bc in enumerate(config.barriers)
        ]
        self._task_list = list(self.tasks.values())
        if s.enforce_barriers:  # a row within what the barrier check accepts is on its boundary, not violated
            self.oink.boundary_tolerance = s.barrier_tolerance
        self.acceleration_limit = next((lim for lim in self.limits if isinstance(lim, AccelerationLimit)), None)
        accel = self.acceleration_limit
        if accel is not None:  # barriers are approached no faster than the arm can stop before them
            brake_barriers_for(self.oink, accel)
        self.acceleration_limit = next((lim for lim in self.limits if isinstance(lim, AccelerationLimit)), None)
        self._dq_full = np.zeros(scene.model.nv)

    # ----------------------------------------------------------------- building
    def _make_task(self, tc: TaskConfig, q: np.ndarray) -> Task:
        common = dict(task_gain=tc.task_gain, lm_damping=tc.lm_damping, priority=tc.priority, name=tc.name)
        if tc.type == "frame":
            target = self.scene.frame_pose(q, tc.frame) if self.scene.model.existFrame(tc.frame) else None
            return FrameTask(
                self.oink, tc.frame, target, tc.position_cost, tc.orientation_cost,
                max_position_error=tc.max_position_error, max_rotation_error=tc.max_rotation_error, **common,
            )
        return ConfigurationTask(self.oink, self.configured_target(tc, q), tc.weights, **common)

    def configured_target(self, tc: TaskConfig, q: np.ndarray) -> np.ndarray:
        """The group q a configuration task's ``target`` key names ("current": q's)."""
        group = self.oink.group
        if isinstance(tc.target, list):
            names = list(group.joint_names)
            if len(tc.target) != len(names):
                raise InvalidInputError(f"target: expected {len(names)} joint values ({names}), got {len(tc.target)}")
            return self.scene.q_from_joint_positions(names, tc.target, q)[group.q_indices]
        if tc.target == "current":
            return q[group.q_indices]
        return self.scene.named_configuration(tc.target, q)[group.q_indices]

    def _make_limit(self, lc: LimitConfig) -> Limit:
        if lc.type == "position":
            return PositionLimit(self.oink, lc.gain)
        if lc.type == "acceleration":
            return self._make_acceleration_limit(lc)
        return VelocityLimit(self.oink, self.dt, lc.v_max)

    def _make_acceleration_limit(self, lc: LimitConfig) -> AccelerationLimit:
        """a_max / j_max from the keys, else from the scene (robot.joint_limits_file)."""
        group = self.oink.group
        a_max = lc.a_max
        if a_max is None:
            a_max = self.scene.a_max[group.v_indices]
            missing = [group.joint_names[k] for k in np.flatnonzero(~np.isfinite(a_max))]
            if missing:
                raise InvalidInputError(f"a_max: no acceleration bound for {missing}: set a_max, or "
                                        "robot.joint_limits_file with has_acceleration_limits for them")
        j_max = self.scene.j_max[group.v_indices] if lc.j_max is None else lc.j_max
        return AccelerationLimit(self.oink, self.dt, a_max, j_max)

    def _make_barrier(self, bc: BarrierConfig) -> Barrier:
        common = dict(gain=bc.gain, safe_displacement_gain=bc.safe_displacement_gain,
                      safe_displacement_fade=bc.safe_displacement_fade,
                      safe_displacement_max_weight=bc.safe_displacement_max_weight,
                      safety_margin=bc.safety_margin, name=bc.name)
        if bc.type == "position":
            return PositionBarrier(self.oink, bc.frame, bc.p_min, bc.p_max, self.dt,
                                   axis_selection=bc.axis_selection, **common)
        if bc.type == "singularity":
            return SingularityBarrier(self.oink, bc.frame, self.dt, bc.sigma_min, **common)
        return CollisionBarrier(self.oink, bc.n_collision_pairs, self.dt, bc.d_min,
                                broad_phase_cutoff=bc.broad_phase_cutoff, pairs=bc.pairs,
                                rows_per_pair=bc.rows_per_pair, row_margin=bc.row_margin,
                                row_spacing=bc.row_spacing, **common)

    # ------------------------------------------------------------------ running
    def hold_at(self, q: np.ndarray) -> None:
        """Point every task at q, posture tasks included: the step is zero unless a barrier acts."""
        for task in self.tasks.values():
            if isinstance(task, FrameTask):
                task.set_target(self.scene.frame_pose(q, task.frame))
            else:
                task.set_target(q[self.oink.group.q_indices])

    def step(self, q: np.ndarray) -> StepOutcome:
        """Solve, enforce the barriers (if configured) and integrate. Never raises."""
        res = self.oink.solve(q, self._task_list, self.limits, self.barriers)
        dq = self.oink.scatter(res.dq, out=self._dq_full)
        ok = True
        if res.ok and self.barriers and self.config.solver.enforce_barriers:
            ok = self.oink.enforce_barriers(q, dq, self.barriers, self.config.solver.barrier_tolerance)
        return StepOutcome(self.scene.integrate(q, dq), dq, res, ok)


def _prefixed(where: str, build, *args):
    try:
        return build(*args)
    except InvalidInputError as exc:
        raise InvalidInputError(f"{where}: {exc}") from exc
