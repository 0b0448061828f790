"""SimpleIK: one-shot IK by damped least squares (or another method) with random restarts and collision checks.

``method`` replaces the DLS step below by Levenberg-Marquardt with Wampler, Chan or Sugihara damping,
Newton-Raphson or Gauss-Newton (a row of methods.py's table); ``error_weights`` (and FrameGoal.weights) weight or
free the six error components; the null-space terms (null_space.py) add joint-limit avoidance and
manipulability maximisation; solve_nearby bounds the motion from the seed (continuous joints by the
angle pin.difference measures). Everything else below
(cap, active set on the limits, stall/plateau, restarts, collision check) is shared by every method.

Per iteration, for the stacked goals: ``e = log6(T_goal^-1 T(q))`` (LOCAL frame of each tip, 6 per
goal), ``J`` the matching LOCAL frame Jacobians (optionally premultiplied by Jlog6, the exact
derivative of log6), ``dq = -step_size J^T (J J^T + damping I)^-1 e`` and ``q <- q ⊕ dq``, kept
inside the position limits. Convergence is tested on the true position and orientation errors of
every goal. A converged q is checked for self-collision; a failed attempt restarts from a random
configuration inside the limits, until ``max_restarts`` or ``max_time``. With
``fast_return=False`` the search continues until ``max_time`` and returns the solution closest to
the seed.

On top of the plain DLS step (each switchable through its option, see :class:`SimpleIKOptions`):

* the joint step is capped to ``max_step_norm``, so that the full (``step_size`` 1) step cannot
  throw q across the workspace where J is nearly singular or the goal far;
* the joint limits are an active set (``clamp_limits``): a joint whose step would leave its range
  goes onto its limit and the other joints are re-solved for the rest of the error. Clipping the
  step instead leaves a residual that the next iterations push straight back into the limit: that
  stall against the limits ended most failed attempts of the plain scheme;
* an attempt that makes no progress is abandoned early (``stall_iters``, ``plateau_iters``) so that
  the time budget goes to new random restarts instead of to iterations that cannot converge;
* restarts draw a revolute joint whose range exceeds one turn within one turn around the middle of
  its range (the same poses, away from the limits).

The common request (one FrameGoal with a pin.SE3 target, the solver's own options, a chain the compiled
descent computes) takes _solve_plain: every attempt in the descent's buffer, the checks of goal and seed in the
kernel, and the collision bounds (collision_bounds.py) proving most answers free in the kernel: 24 profiled
calls per one-attempt UR5 solve against 98 before the descent. With cold caches each call costs 5-10x its
warm time: interleaved with the benchmark's peers, the UR5's median solve went from 106-109 to 31-34 us
(docs/benchmarks.md, "SimpleIK against its peers").

This module is the driver (SimpleIK: the request's checks, attempts and restarts); the rest of SimpleIK is one
concept per module: descent.py (the iterations of one attempt: Descent, SimpleIK's base class),
collision_check.py (the collision check of an answer: CollisionCheck, its other base class), options.py
(SimpleIKOptions and its checks), goals.py (FrameGoal, IKResult), methods.py (the table of step methods),
workspace.py (the per-solve buffers and limits), active_set.py (the step at the joint limits), convergence.py
(when an attempt ends), compiled_step.py (the C step and descent), null_space.py, objectives.py, and path.py
(IK along a path, above this module).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np
import pinocchio as pin
from scipy.linalg.blas import ddot

from ..errors import InvalidInputError, check_positive
from ..model.joint_group import JointGroup
from ..model.scene import Scene, collision_check_data
from .collision_bounds import CollisionBounds
from .collision_check import CollisionCheck, _collision_manager
from .compiled_step import DESCENT_STATUS, NOT_FINITE, CompiledDescent, load_step_kernel
from .convergence import constants
from .descent import Descent, _configure_descent
from .goals import FrameGoal, IKResult, goal_label, inverse_target
from .null_space import Manipulability
from .objectives import AxisGoal, BoundObjective, PointGoal
from .objectives import bind as bind_objective
from .options import SimpleIKOptions, check_error_weights
from .path import PathResult, solve_path
from .workspace import Workspace

_FLOAT64 = np.dtype(np.float64)


class SimpleIK(Descent, CollisionCheck):
    """One-shot IK on ``scene`` for the joint group of ``options.group_name`` (``options.method``'s step)."""

    def __init__(self, scene: Scene, options: SimpleIKOptions | None = None) -> None:
        self.options = options or SimpleIKOptions()
        self.options.validate()
        self.scene = scene
        self.group = scene.group(self.options.group_name)
        self.data, self.geom_data = scene.model.createData(), collision_check_data(scene.collision_model)
        self._collision_manager = _collision_manager(scene, self.geom_data)
        self._has_collision_pairs = len(scene.collision_model.collisionPairs) > 0  # as geom_data
        self._geometry_version = scene.collision_structure_version  # both remade when obstacles come or go
        # (a moved obstacle is read from the model's placement by both: checked)
        self.rng = np.random.default_rng(self.options.seed)
        kernel, why = load_step_kernel()
        # which step dls and lm_* run: "compiled" (compiled_step.py) or "python" (step_note says why)
        self.step, self.step_note = ("compiled", "") if kernel is not None else ("python", why)
        self._workspaces: dict[tuple[str, int], Workspace] = {}
        self._nearby_workspaces: dict[tuple[str, int], Workspace] = {}  # solve_nearby's (limits set per call)
        self._frame_ids: dict[str, int] = {}
        self._placements: dict[int, pin.SE3] = {}  # held views data.oMf[fid] (follow the kinematics calls)
        self._nq = self.scene.model.nq
        # Single goal: the iterations run on a copy of the model whose root joints are placed in the goal
        # frame (premultiplied by T_goal^-1), so that its oMf[tip] is T_goal^-1 T(q) itself: no SE3
        # product per iteration. LOCAL Jacobians do not depend on the world frame; collision checks
        # and reported errors use the scene's model.
        model = scene.model
        self._goal_model = pin.Model(model)
        self._goal_data = self._goal_model.createData()
        self._root_joints = [(j, pin.SE3(model.jointPlacements[j])) for j in range(1, model.njoints)
                             if model.parents[j] == 0]
        self._goal_model_Tinv: pin.SE3 | None = None  # the T_goal^-1 the goal model is placed for
        self._goal_placements: dict[int, tuple | None] = {}  # held views _goal_data.iMf[0], its translation
        self._plain_plans: dict[str, tuple] = {}  # _solve_plain's per tip frame (_plain_plan)
        self._bounds: CollisionBounds | None = None  # _collision_bounds, for the scene's collision_version of:
        self._bounds_version = -1
        self._warm_up()

    # ------------------------------------------------------------------ public
    def solve(self, goals: Sequence[FrameGoal], q_seed: np.ndarray, options: SimpleIKOptions | None = None) -> IKResult:
        """Solve for every goal at once from ``q_seed`` (full nq). Bad input raises InvalidInputError.

        The first attempt starts from ``q_seed`` (clipped into the limits), the next ones from random
        configurations of the group inside the limits (joints outside the group keep their seed
        values). A returned solution is within the limits, within the error thresholds for every
        goal and, with ``check_collisions``, free of self-collision. Without a solution, ``q`` is
        the seed and ``message`` tells how the attempts ended.
        """
        if options is None:  # the common request: its own lean path (_solve_plain), or None to take the general one
            res = self._solve_plain(goals, q_seed)
            if res is not None:
                return res
        return self._solve(goals, q_seed, options, None)

    def solve_path(self, tip_frame: str, poses: Sequence, q_seed: np.ndarray, max_joint_step: float,
                   options: SimpleIKOptions | None = None) -> PathResult:
        """IK along a list of tip poses, each waypoint within ``max_joint_step`` of the previous one:
        :func:`~roboplan_ik_ros.core.simple_ik.path.solve_path` (returns a PathResult)."""
        return solve_path(self, tip_frame, poses, q_seed, max_joint_step, options)

    def solve_global(self, goals: Sequence[FrameGoal], q_seed: np.ndarray,
                     feasible: Callable[[np.ndarray], bool] | None = None,
                     options: SimpleIKOptions | None = None) -> IKResult:
        """:meth:`solve` from random configurations only (q_seed gives the joints outside the group and
        the "nearest" of fast_return=False), restarting until an answer is within the limits, the
        thresholds, collision-free (``check_collisions``) and accepted by ``feasible(q)`` (a copy of
        the full q; True = accept), or ``max_time`` / ``max_restarts`` (Klamp't's solve_global with
        a feasibility test). A callback's exception propagates."""
        if feasible is not None and not callable(feasible):
            raise InvalidInputError(f"feasible: expected a callable q -> bool or None, got {feasible!r}")
        return self._solve(goals, q_seed, options, None, feasible=feasible, global_start=True)

    def solve_nearby(self, goals: Sequence[FrameGoal], q_seed: np.ndarray, max_deviation: float,
                     options: SimpleIKOptions | None = None) -> IKResult:
        """:meth:`solve` with no joint of the group moving more than ``max_deviation`` [rad or m] from
        ``q_seed``: the limits become ``[max(lo, seed - d), min(hi, seed + d)]`` for the search, the
        restarts included (Klamp't's solve_nearby). A continuous joint's motion is its angle from the
        seed the short way round (pin.difference, <= pi; max_deviation >= pi leaves it free). A seed
        farther than ``max_deviation`` outside a limit is refused. (``solve`` does the same when the
        options' ``max_deviation`` is finite; this argument overrides it.)"""
        check_positive(max_deviation, "max_deviation")
        return self._solve(goals, q_seed, options, max_deviation)

    def _solve(self, goals, q_seed, options: SimpleIKOptions | None, max_deviation: float | None,
               feasible: Callable[[np.ndarray], bool] | None = None, global_start: bool = False) -> IKResult:
        opt = options or self.options
        if options is not None:
            opt.validate()
        group = self.scene.group(opt.group_name) if opt.group_name != self.group.name else self.group
        if opt.active_joints is not None:
            group = self.scene.subgroup(group, opt.active_joints)
        if isinstance(goals, FrameGoal):
            goals = [goals]
        if not goals:
            raise InvalidInputError("goals: expected at least one FrameGoal")
        if isinstance(goals, (PointGoal, AxisGoal)):
            goals = [goals]
        n_request = len(goals)
        if opt.objectives:  # the standing objectives, labelled objectives[k]
            goals = [*goals, *opt.objectives]
        frame_ids, inv_targets = [], []
        objectives: list[BoundObjective] | None = None
        goal_weights = False  # some FrameGoal has its own weights
        for g in goals:  # (a loop: any() over a generator costs ~1 us per solve)
            if not isinstance(g, FrameGoal) or g.relative_to is not None:
                objectives = self._bind_objectives(goals, opt, n_request)
                break
            if g.weights is not None:
                goal_weights = True
        for k, g in enumerate(goals if objectives is None else ()):
            label = k if k < n_request else f"objectives[{k - n_request}]"
            try:
                frame_ids.append(self._frame_id(g.tip_frame))
            except InvalidInputError as exc:
                raise InvalidInputError(f"{goal_label(label)}.tip_frame: {exc}") from None
            if g.weights is not None:
                check_error_weights(g.weights, f"{goal_label(label)}.weights")
            inv_targets.append(inverse_target(g.T_world_tip, label))
        q_seed = self.check_seed(q_seed)
        deadline = time.perf_counter() + opt.max_time
        if objectives is None:
            ws = self._workspace(group, len(goals))
        else:
            ws = self._workspace(group, len(goals), sum(o.rows for o in objectives))
        if max_deviation is None and opt.max_deviation < math.inf:
            max_deviation = opt.max_deviation
        if max_deviation is not None:
            ws = self._nearby_workspace(ws, q_seed, max_deviation)
        if opt.joint_limit_gain > 0.0 or opt.manipulability_gain > 0.0 or opt.bias_gain > 0.0:
            self._check_null_space(opt, ws, len(goals), q_seed)
        ws.set_damping(opt.damping)
        if objectives is not None:  # each objective carries its own row weights
            ws.sw[:] = np.concatenate([o.sqrt_weights for o in objectives])
            ws.forget_weights()  # (set_weights refills sw for the next FrameGoal solve on this workspace)
        elif goal_weights:
            ws.set_weights([opt.error_weights if g.weights is None else g.weights for g in goals])
        else:
            ws.set_weights(opt.error_weights)
        consts = constants(opt)
        best: np.ndarray | None = None
        best_errors = None
        best_dist = math.inf
        iterations = attempt = 0
        q = ws.random_configuration(self.rng, q_seed) if global_start else q_seed.copy()
        if ws.qs is None:  # (the scalar-joint loops clip the seed when they find it outside the limits)
            ws.clip(q)
        reasons: dict[str, int] = {}  # how the failed attempts ended
        stop = ""
        while True:
            # the first attempt runs to its end (converged, max_iters, stalled): max_time bounds the restarts, so
            # a machine busy elsewhere (a preempted thread) cannot fail a solve before its first step
            until = math.inf if attempt == 0 else deadline
            status, iters, errors = self._descend(q, frame_ids, inv_targets, ws, opt, until, consts, objectives)
            iterations += iters
            if status == "converged":
                if opt.check_collisions and self._in_collision(q):
                    status = "converged in collision"
                elif feasible is not None and not feasible(q.copy()):
                    status = "rejected by feasible"
                elif opt.fast_return:
                    best, best_errors = q, errors
                    break
                else:
                    dist = float(np.linalg.norm(pin.difference(self.scene.model, q_seed, q)[group.v_indices]))
                    if dist < best_dist:
                        best, best_errors, best_dist = q, errors, dist
            if status != "converged":
                reasons[status] = reasons.get(status, 0) + 1
            if time.perf_counter() >= deadline:
                stop = f"max_time {opt.max_time:g} s reached"
                break
            if opt.fast_return and attempt >= opt.max_restarts:
                stop = f"max_restarts {opt.max_restarts} reached"
                break
            attempt += 1
            q = ws.random_configuration(self.rng, q_seed)  # a new array: best is never overwritten
        if best is None:
            if objectives is None:
                pos, rot = self._errors(q_seed, frame_ids, inv_targets)
            else:
                pos, rot = self._objective_errors(q_seed, objectives, ws)
            why = ", ".join(f"{n} {r}" for r, n in reasons.items())
            return IKResult(False, q_seed.copy(), pos, rot, iterations, attempt,
                            f"no solution after {attempt + 1} attempts, {iterations} iterations ({why}); {stop}")
        return IKResult(True, best, best_errors[0], best_errors[1], iterations, attempt, "solved")

    # --------------------------------------------------------------- internals
    def _solve_plain(self, goals, q_seed) -> IKResult | None:
        """_solve for the common request, in fewer calls (each costs several times more with cold caches, e.g. a
        planner's between its other work): one FrameGoal (a pin.SE3 target, no weights, no relative_to),
        the solver's own options, fast_return, unit error weights, no objectives, null-space terms, Jlog6,
        subgroup or deviation bound, and a tip whose chain the compiled descent computes. Every attempt
        runs in the descent's own buffer: the goal and the seed are checked (finite) by the kernel, the
        answer is copied out once. The same attempts, draws and results as _solve. None (nothing done,
        no random draw) when the request is not such a request or its goal or seed is not finite (then
        _solve says why)."""
        if type(goals) not in (list, tuple) or len(goals) != 1:
            return None
        g = goals[0]
        if (type(g) is not FrameGoal or g.relative_to is not None or g.weights is not None
                or type(g.tip_frame) is not str):
            return None
        T = g.T_world_tip
        if type(T) is not pin.SE3 or type(q_seed) is not np.ndarray or q_seed.dtype is not _FLOAT64 or \
                q_seed.shape != (self._nq,):
            return None
        opt = self.options
        if (opt.objectives or opt.active_joints is not None or opt.group_name != self.group.name
                or opt.max_deviation < math.inf or opt.joint_limit_gain > 0.0 or opt.manipulability_gain > 0.0
                or opt.bias_gain > 0.0 or opt.use_log_jacobian or not opt.fast_return):
            return None
        plan = self._plain_plans.get(g.tip_frame)
        if plan is None:
            plan = self._plain_plans[g.tip_frame] = self._plain_plan(g.tip_frame)
        fid, ws, descent = plan
        if descent is None or descent is not ws.compiled_descent(self.scene.model, fid):  # (tests switch it off)
            return None
        c = constants(opt)
        method = c.method
        if not method.compiled or (method.lambda_k is not None and method.lambda_affine is None):
            return None
        ws.set_damping(opt.damping)
        ws.set_weights(opt.error_weights)
        if ws.weighted:
            return None
        _configure_descent(descent, ws, opt, c)
        descent.set_goal_pose(T)
        check = opt.check_collisions
        descent.set_bounds(self._collision_bounds() if check else None)
        q = descent.q
        q[:] = q_seed
        deadline = time.perf_counter() + opt.max_time
        status, iters, pos, rot = descent.run_plain(math.inf)  # (the first attempt runs to its end, as in _solve)
        if status == NOT_FINITE:
            return None
        iterations = attempt = 0
        reasons: dict[str, int] = {}
        while True:
            iterations += iters
            if status == 0:  # collision-free if not checked, proven by the bounds, or by the exact check
                if not check or descent.free or not self._in_collision(q):
                    return IKResult(True, q.copy(), np.array([pos]), np.array([rot]), iterations, attempt, "solved")
                why = "converged in collision"
            else:
                why = f"not converged in {opt.max_iters} iterations" if status == 1 else DESCENT_STATUS[status]
            reasons[why] = reasons.get(why, 0) + 1
            if time.perf_counter() >= deadline:
                stop = f"max_time {opt.max_time:g} s reached"
                break
            if attempt >= opt.max_restarts:
                stop = f"max_restarts {opt.max_restarts} reached"
                break
            attempt += 1
            ws.random_configuration(self.rng, q_seed, out=q)
            status, iters, pos, rot = descent.run_plain(deadline - time.perf_counter())
        pos, rot = self._errors(q_seed, [fid], [T.inverse()])
        why = ", ".join(f"{n} {r}" for r, n in reasons.items())
        return IKResult(False, q_seed.copy(), pos, rot, iterations, attempt,
                        f"no solution after {attempt + 1} attempts, {iterations} iterations ({why}); {stop}")

    def _plain_plan(self, tip_frame) -> tuple[int, Workspace | None, CompiledDescent | None]:
        """(frame id, workspace, compiled descent or None) of _solve_plain's requests for ``tip_frame``; (-1, None,
        None) for a frame the scene does not have (_solve raises)."""
        try:
            fid = self._frame_id(tip_frame)
        except InvalidInputError:
            return -1, None, None
        ws = self._workspace(self.group, 1)
        return fid, ws, ws.compiled_descent(self.scene.model, fid)

    def _warm_up(self) -> None:
        """One small solve, so that the first real one does not pay the one-time costs (measured
        ~1.3 ms: workspace, first pinocchio/LAPACK/collision calls, interpreter warm-up), and the collision
        bounds (0.3-0.9 ms to build on Panda)."""
        self._collision_bounds()
        model, data = self.scene.model, self.data
        frame = model.names[int(self.group.joint_ids[-1])]  # the joint frame of the group's last joint
        q = self.scene.neutral()
        pin.framesForwardKinematics(model, data, q)
        T = data.oMf[model.getFrameId(frame)] * pin.SE3(pin.exp3(np.array([0.0, 0.0, 0.05])), np.full(3, 0.01))
        opt = replace(self.options, max_time=0.01, max_restarts=0, fast_return=True)
        self.solve([FrameGoal(frame, T)], q, opt)  # seeded attempt only: the restart RNG is not used

    def _nearby_workspace(self, ws: Workspace, q_seed: np.ndarray, max_deviation: float) -> Workspace:
        """A workspace whose limits are ws's intersected with q_seed +- max_deviation."""
        x = ws.limit_coordinates(q_seed)  # a continuous joint's deviation from the seed is 0 there
        lo, hi = np.maximum(ws.lo, x - max_deviation), np.minimum(ws.hi, x + max_deviation)
        if max_deviation >= math.pi:  # every angle of a continuous joint is within pi of the seed's
            lo[ws.cont_v], hi[ws.cont_v] = -math.inf, math.inf
        empty = np.flatnonzero(lo > hi)
        if len(empty):
            j = ws.group.joint_names[int(empty[0])]
            raise InvalidInputError(f"q_seed: joint {j} at {x[empty[0]]:g} is more than max_deviation "
                                    f"{max_deviation:g} outside its limits [{ws.lo[empty[0]]:g}, {ws.hi[empty[0]]:g}]")
        key = (ws.group.name, len(ws.e) // 6, len(ws.e))
        nearby = self._nearby_workspaces.get(key)
        if nearby is None or nearby.group is not ws.group:
            nearby = self._nearby_workspaces[key] = Workspace(self.scene, ws.group, len(ws.e) // 6, lo, hi,
                                                               rows=len(ws.e))
        else:
            nearby.set_limits(lo, hi)
        nearby.set_nearby(q_seed, max_deviation)
        return nearby

    def _check_null_space(self, opt: SimpleIKOptions, ws: Workspace, n_goals: int, q_seed: np.ndarray) -> None:
        """The null-space terms' requirements, or InvalidInputError naming the option."""
        if opt.bias_gain > 0.0:
            if len(opt.bias_configuration) != ws.nv:
                raise InvalidInputError(f"bias_configuration: expected {ws.nv} values (group {ws.group.name!r}: "
                                        f"{list(ws.group.joint_names)}), got {len(opt.bias_configuration)}")
            # the full q of the bias (angles of continuous joints as cos, sin), for pin.difference per iteration
            ws.q_bias = self.scene.q_from_joint_positions(ws.group.joint_names, opt.bias_configuration, q_seed)
        if opt.manipulability_gain > 0.0:
            if n_goals != 1:
                raise InvalidInputError(f"manipulability_gain: one goal only (the manipulability of its tip), "
                                        f"got {n_goals} goals")
            if ws.manipulability is None:
                ws.manipulability = Manipulability(self.scene.model, ws.group)

    def _workspace(self, group: JointGroup, n_goals: int, rows: int | None = None) -> Workspace:
        """The workspace of (group, n_goals) FrameGoals, or with ``rows`` stacked objective rows."""
        key = (group.name, n_goals) if rows is None else (group.name, n_goals, rows)
        ws = self._workspaces.get(key)
        if ws is None or ws.group is not group:
            ws = self._workspaces[key] = Workspace(self.scene, group, n_goals, rows=rows)
        return ws

    def _bind_objectives(self, goals, opt: SimpleIKOptions, n_request: int | None = None) -> list[BoundObjective]:
        """Every goal as a BoundObjective (objectives.py), or InvalidInputError naming the bad goal (goals
        from ``n_request`` on are the options' standing objectives, labelled objectives[k])."""
        bound = []
        n_request = len(goals) if n_request is None else n_request
        for k, g in enumerate(goals):
            label = k if k < n_request else f"objectives[{k - n_request}]"
            if not isinstance(g, (FrameGoal, PointGoal, AxisGoal)):
                raise InvalidInputError(f"{goal_label(label)}: expected a FrameGoal, PointGoal or AxisGoal, "
                                        f"got {type(g).__name__}")
            if isinstance(g, FrameGoal) and g.weights is not None:
                check_error_weights(g.weights, f"{goal_label(label)}.weights")
            bound.append(bind_objective(g, label, self._frame_id, opt.error_weights, inverse_target))
        return bound

    def _frame_id(self, name) -> int:
        fid = self._frame_ids.get(name) if isinstance(name, str) else None
        if fid is None:
            fid = self._frame_ids[name] = self.scene.frame_id(name)  # raises for an unknown frame
        return fid

    def check_seed(self, q_seed) -> np.ndarray:
        """q_seed as a finite float vector of size nq (q_seed itself if it is one; solve copies it), or
        raise (Scene.check_configuration)."""
        if type(q_seed) is np.ndarray and q_seed.dtype is _FLOAT64 and q_seed.shape == (self._nq,):
            if math.isfinite(ddot(q_seed, q_seed)):  # any nan or inf (or an overflow: the slow check) fails
                return q_seed
        return self.scene.check_configuration(q_seed, "q_seed")
