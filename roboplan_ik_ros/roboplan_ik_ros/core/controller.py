"""OinkController: the tasks, limits and barriers of an :class:`IKConfig`, stepped once per tick."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .config import BarrierConfig, IKConfig, LimitConfig, RobotConfig, TaskConfig
from .errors import InvalidInputError
from .oink import (
    Barrier,
    ConfigurationTask,
    FrameTask,
    Limit,
    Oink,
    OinkResult,
    PositionBarrier,
    PositionLimit,
    SelfCollisionBarrier,
    Task,
    VelocityLimit,
)
from .scene import Scene


def scene_from_config(urdf_xml: str, srdf_xml: str, robot: RobotConfig, package_paths=()) -> Scene:
    """A Scene with the robot section's overrides (package paths are joined with ``package_paths``)."""
    return Scene(
        urdf_xml,
        srdf_xml,
        [*robot.package_paths, *package_paths],
        convex_hulls=robot.convex_hulls,
        position_limits=robot.position_limits,
        velocity_limits=robot.velocity_limits,
    )


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
        return VelocityLimit(self.oink, self.dt, lc.v_max)

    def _make_barrier(self, bc: BarrierConfig) -> Barrier:
        common = dict(gain=bc.gain, safe_displacement_gain=bc.safe_displacement_gain,
                      safety_margin=bc.safety_margin, name=bc.name)
        if bc.type == "position":
            return PositionBarrier(self.oink, bc.frame, bc.p_min, bc.p_max, self.dt,
                                   axis_selection=bc.axis_selection, **common)
        return SelfCollisionBarrier(self.oink, bc.n_collision_pairs, self.dt, bc.d_min,
                                    broad_phase_cutoff=bc.broad_phase_cutoff, **common)

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
