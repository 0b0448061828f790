"""OinkController: the tasks, limits and barriers of an :class:`IKConfig`, stepped once per tick."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..config import IKConfig
from ..errors import InvalidInputError
from ..model.scene import Scene
from .barriers.barrier import Barrier
from .kind import BuildContext, kinds
from .limits.acceleration_limit import AccelerationLimit, brake_barriers_for
from .limits.limit import Limit
from .solver import Oink, OinkResult
from .tasks.configuration_task import ConfigurationTaskConfig, configured_target
from .tasks.task import Task


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
            qp_solver=s.qp_solver, weighted_nullspace=s.weighted_nullspace,
        )
        context = BuildContext(self.oink.robot, dt, scene.check_configuration(q))
        self.tasks: dict[str, Task] = {
            tc.name: _build("tasks", k, tc.name, tc, context) for k, tc in enumerate(config.tasks)}
        self.limits: list[Limit] = [_build("limits", k, lc.type, lc, context) for k, lc in enumerate(config.limits)]
        self.barriers: list[Barrier] = [
            _build("barriers", k, bc.name, bc, context) for k, bc in enumerate(config.barriers)]
        self._task_list = list(self.tasks.values())
        if s.enforce_barriers:  # a row within what the barrier check accepts is on its boundary, not violated
            self.oink.boundary_tolerance = s.barrier_tolerance
        self.acceleration_limit = next((lim for lim in self.limits if isinstance(lim, AccelerationLimit)), None)
        if self.acceleration_limit is not None:  # barriers are approached no faster than the arm can stop before them
            brake_barriers_for(self.oink, self.acceleration_limit, self.barriers)
        self._dq_full = np.zeros(scene.model.nv)

    def configured_target(self, tc: ConfigurationTaskConfig, q: np.ndarray) -> np.ndarray:
        """The group q a configuration task's ``target`` key names ("current": q's)."""
        return configured_target(tc, self.oink.robot, q)

    # ------------------------------------------------------------------ running
    def hold_at(self, q: np.ndarray) -> None:
        """Point every task at q, posture tasks included: the step is zero unless a barrier acts."""
        for task in self.tasks.values():
            task.hold(q)

    def step(self, q: np.ndarray) -> StepOutcome:
        """Solve, enforce the barriers (if configured) and integrate. Never raises."""
        res = self.oink.solve(q, self._task_list, self.limits, self.barriers)
        dq = self.oink.scatter(res.dq, out=self._dq_full)
        ok = True
        if res.ok and self.barriers and self.config.solver.enforce_barriers:
            ok = self.oink.enforce_barriers(q, dq, self.barriers, self.config.solver.barrier_tolerance)
        return StepOutcome(self.scene.integrate(q, dq), dq, res, ok)


def _build(section: str, k: int, label: str, config, context: BuildContext):
    """The object of entry k of ``section``, built by its kind; errors are prefixed with where it is."""
    try:
        built = kinds(section)[config.type].build(config, context)
        if section == "tasks" and config.exclude_joints:  # a key of every task (TaskConfig)
            built.exclude_joints(config.exclude_joints)
        return built
    except InvalidInputError as exc:
        raise InvalidInputError(f"{section}[{k}] ({label}): {exc}") from exc
