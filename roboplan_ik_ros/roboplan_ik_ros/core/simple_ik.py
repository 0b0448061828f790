"""SimpleIK: one-shot IK by damped least squares with random restarts and collision checks.

Per iteration, for the stacked goals: ``e = log6(T_goal^-1 T(q))`` (LOCAL frame of each tip, 6 per
goal), ``J`` the matching LOCAL frame Jacobians (optionally premultiplied by Jlog6, the exact
derivative of log6), ``dq = -J^T (J J^T + damping I)^-1 e`` and ``q <- clip(q ⊕ step_size dq)``
into the position limits. Convergence is tested on the true position and orientation errors of
every goal. A converged q is checked for self-collision; a failed attempt restarts from a random
configuration inside the limits, until ``max_restarts`` or ``max_time``. With
``fast_return=False`` the search continues until ``max_time`` and returns the solution closest to
the seed.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin
from scipy.linalg.lapack import dposv

from .errors import InvalidInputError, check_positive
from .oink.tasks.frame_task import as_se3
from .scene import Scene


@dataclass
class SimpleIKOptions:
    """Options of :class:`SimpleIK` (defaults from RoboPlan's SimpleIK except where noted)."""

    group_name: str = ""
    max_iters: int = 100  # per attempt
    max_time: float = 0.005  # [s] for the whole solve
    max_restarts: int = 2  # random restarts after the seeded attempt (ignored when fast_return=False)
    step_size: float = 0.25  # fraction of the DLS step applied per iteration
    damping: float = 0.001  # lambda of the DLS
    max_linear_error_norm: float = 0.001  # [m]
    max_angular_error_norm: float = 0.001  # [rad]
    check_collisions: bool = True
    fast_return: bool = True
    use_log_jacobian: bool = False  # premultiply J by Jlog6 (exact Newton direction); not in RoboPlan
    seed: int | None = None  # of the restart RNG

    def validate(self) -> None:
        for name in ("max_iters",):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise InvalidInputError(f"{name}: expected an integer >= 1, got {v!r}")
        if isinstance(self.max_restarts, bool) or not isinstance(self.max_restarts, (int, np.integer)) or self.max_restarts < 0:
            raise InvalidInputError(f"max_restarts: expected an integer >= 0, got {self.max_restarts!r}")
        for name in ("max_time", "step_size", "max_linear_error_norm", "max_angular_error_norm"):
            check_positive(getattr(self, name), name)
        check_positive(self.damping, "damping", allow_zero=True)


@dataclass
class FrameGoal:
    """Reach ``T_world_tip`` (pin.SE3 or 4x4, model world frame) with frame ``tip_frame``."""

    tip_frame: str
    T_world_tip: object


@dataclass
class IKResult:
    success: bool
    q: np.ndarray  # full nq; the seed when no solution was found
    position_errors: np.ndarray = field(default_factory=lambda: np.zeros(0))  # [m] per goal
    orientation_errors: np.ndarray = field(default_factory=lambda: np.zeros(0))  # [rad] per goal
    iterations: int = 0
    restarts: int = 0
    message: str = ""


class SimpleIK:
    """Damped-least-squares IK on ``scene`` for the joint group of ``options.group_name``."""

    def __init__(self, scene: Scene, options: SimpleIKOptions | None = None) -> None:
        self.options = options or SimpleIKOptions()
        self.options.validate()
        self.scene = scene
        self.group = scene.group(self.options.group_name)
        self.data, self.geom_data = scene.create_data()
        self.rng = np.random.default_rng(self.options.seed)

    # ------------------------------------------------------------------ public
    def solve(self, goals: Sequence[FrameGoal], q_seed: np.ndarray, options: SimpleIKOptions | None = None) -> IKResult:
        """Solve for every goal at once from ``q_seed`` (full nq). Bad input raises InvalidInputError."""
        opt = options or self.options
        if options is not None:
            opt.validate()
        group = self.scene.group(opt.group_name) if opt.group_name != self.group.name else self.group
        if not goals:
            raise InvalidInputError("goals: expected at least one FrameGoal")
        frame_ids = [self.scene.frame_id(g.tip_frame) for g in goals]
        targets = [as_se3(g.T_world_tip, f"goals[{k}].T_world_tip") for k, g in enumerate(goals)]
        q_seed = self.scene.check_configuration(q_seed, "q_seed")
        deadline = time.perf_counter() + opt.max_time
        best: np.ndarray | None = None
        best_dist = np.inf
        iterations = attempt = 0
        q = q_seed.copy()
        self.scene.clip_to_limits(q, group)
        last_reason = "no attempt"
        while True:
            converged, iters, timed_out = self._descend(q, frame_ids, targets, group, opt, deadline)
            iterations += iters
            if converged:
                if opt.check_collisions and self._in_collision(q):
                    last_reason = "converged in collision"
                else:
                    dist = float(np.linalg.norm(pin.difference(self.scene.model, q_seed, q)[group.v_indices]))
                    if dist < best_dist:
                        best, best_dist = q.copy(), dist
                    if opt.fast_return:
                        break
            else:
                last_reason = "time out" if timed_out else f"not converged in {opt.max_iters} iterations"
            if time.perf_counter() >= deadline or (opt.fast_return and attempt >= opt.max_restarts):
                break
            attempt += 1
            q = self.scene.random_configuration(self.rng, group, q_seed)
        if best is None:
            pos, rot = self._errors(q_seed, frame_ids, targets)
            return IKResult(False, q_seed.copy(), pos, rot, iterations, attempt,
                            f"no solution after {attempt + 1} attempts ({last_reason})")
        pos, rot = self._errors(best, frame_ids, targets)
        return IKResult(True, best, pos, rot, iterations, attempt, "solved")

    # --------------------------------------------------------------- internals
    def _errors(self, q: np.ndarray, frame_ids: list[int], targets: list[pin.SE3]) -> tuple[np.ndarray, np.ndarray]:
        pin.framesForwardKinematics(self.scene.model, self.data, q)
        pos = np.array([np.linalg.norm(self.data.oMf[f].translation - T.translation) for f, T in zip(frame_ids, targets)])
        rot = np.array([np.linalg.norm(pin.log3(T.rotation.T @ self.data.oMf[f].rotation)) for f, T in zip(frame_ids, targets)])
        return pos, rot

    def _in_collision(self, q: np.ndarray) -> bool:
        cm = self.scene.collision_model
        if not cm.collisionPairs:
            return False
        return bool(pin.computeCollisions(self.scene.model, self.data, cm, self.geom_data, q, True))

    def _descend(self, q, frame_ids, targets, group, opt: SimpleIKOptions, deadline: float) -> tuple[bool, int, bool]:
        """DLS iterations on q in place; returns (converged, iterations, timed_out)."""
        model, data = self.scene.model, self.data
        ng = len(frame_ids)
        e = np.empty(6 * ng)
        J = np.empty((6 * ng, group.nv))
        dq_full = np.zeros(model.nv)
        damping = np.eye(6 * ng) * opt.damping
        v_idx = group.v_indices
        lin2, ang2 = opt.max_linear_error_norm**2, opt.max_angular_error_norm**2
        for it in range(opt.max_iters):
            pin.computeJointJacobians(model, data, q)
            pin.updateFramePlacements(model, data)
            converged = True
            for k, (fid, T_goal) in enumerate(zip(frame_ids, targets)):
                T_cur = data.oMf[fid]
                dp = T_cur.translation - T_goal.translation
                dR = T_goal.rotation.T @ T_cur.rotation
                T_err = T_goal.actInv(T_cur)  # T_goal^-1 T_cur
                e[6 * k : 6 * k + 6] = pin.log6(T_err).vector
                if converged and (dp @ dp > lin2 or _angle2(dR) > ang2):
                    converged = False
                Jk = pin.getFrameJacobian(model, data, fid, pin.LOCAL)[:, v_idx]
                J[6 * k : 6 * k + 6] = pin.Jlog6(T_err) @ Jk if opt.use_log_jacobian else Jk
            if converged:
                return True, it, False
            if time.perf_counter() >= deadline:
                return False, it, True
            _, y, info = dposv(J @ J.T + damping, e)
            if info != 0:
                return False, it + 1, False
            dq_full[v_idx] = -opt.step_size * (J.T @ y)
            q[:] = pin.integrate(model, q, dq_full)
            self.scene.clip_to_limits(q, group)
        # the last step may have converged
        pos, rot = self._errors(q, frame_ids, targets)
        return bool((pos**2 <= lin2).all() and (rot**2 <= ang2).all()), opt.max_iters, False


def _angle2(R: np.ndarray) -> float:
    """Squared rotation angle of R [rad^2]."""
    cos = min(1.0, max(-1.0, (np.trace(R) - 1.0) / 2.0))
    return float(np.arccos(cos) ** 2)
