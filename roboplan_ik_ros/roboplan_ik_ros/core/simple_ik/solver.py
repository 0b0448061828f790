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

The cost of this solver is Python's: each pinocchio, numpy or BLAS call on these 6x7 matrices takes
0.1-1 us, and a solve pays every distinct call once more (1-3 us) when the caches are cold, e.g.
between a planner's other work. The common case (one goal, scalar joints in contiguous q and v
ranges) therefore runs a dedicated loop (_descend_fast) of ~12 calls per iteration:

* kinematics on a copy of the model whose root joints are placed in the goal frame, so that the
  tip's placement (a view held across solves) is T_goal^-1 T(q) itself, with no SE3 product, by one
  computeFrameJacobian over the joints that carry the tip only (the LOCAL Jacobian comes with it);
* the linear algebra in BLAS/LAPACK with positional arguments (dsyrk, dposv, dgemv, daxpy on
  J^T, which is F-ordered and passes without a copy), the step factor (step_size or the cap)
  applied by the in-place daxpy;
* the limits checked only when the step could reach them: a lower bound of the distance to the
  limits is kept across iterations and lowered by each step's 2-norm;
* one dot product rules out convergence in most iterations; the errors of the converged iteration
  are the reported ones (no second forward kinematics);
* input checks and the collision check (a pinocchio broad phase: AABB culling of the same pairs)
  kept cheap;
* with the compiled kernel (compiled_step.py, built by setup.py), the dls and lm_* step after the
  kinematics (direction, cap, limits and their active set) is one C call instead of the BLAS calls
  above, in the general loop too (without null-space terms); the Python step remains without it.
* with the kernel, when every joint that carries the tip is one of pinocchio's scalar revolute or
  prismatic joints (Panda, UR5, TALOS's torso and arm), the whole attempt of this loop is one C call
  (_descend_compiled, CompiledDescent): the kernel's own kinematics of that chain, log6, the same
  tests and the compiled step. The Python loop above was ~6-10 us per iteration (its ~12 calls), the
  C one is well under 1 us. The loop in Python remains for the other chains and without the kernel.
* the common request (one FrameGoal with a pin.SE3 target, the solver's own options, such a chain)
  takes _solve_plain: every attempt in the descent's buffer, the checks of goal and seed in the
  kernel, and the collision bounds (collision_bounds.py) proving most answers free in the kernel:
  24 profiled calls per one-attempt UR5 solve against 98 before the descent. With cold caches each
  call costs 5-10x its warm time: interleaved with the benchmark's peers, the UR5's median solve went
  from 106-109 to 31-34 us (docs/benchmarks.md, "SimpleIK against its peers").

Several goals, Jlog6, continuous joints or scattered indices take the general loop (_descend_general),
which does the same arithmetic. test_simple_ik checks both against a plain numpy implementation of
the iteration.

This module is the driver (SimpleIK: attempts, restarts, the iteration loops, the collision check); the
rest of SimpleIK is one concept per module: options.py (SimpleIKOptions and its checks), goals.py
(FrameGoal, IKResult), methods.py (the table of step methods), workspace.py (the per-solve buffers and
limits), active_set.py (the step at the joint limits), convergence.py (when an attempt ends),
compiled_step.py (the C step), null_space.py, objectives.py, and path.py (IK along a path, above this
module).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np
import pinocchio as pin
from scipy.linalg.blas import daxpy, ddot, dgemv, dnrm2

from ..errors import InvalidInputError, check_positive
from ..model.joint_group import JointGroup
from ..model.scene import Scene, collision_check_data
from . import collision_bounds
from .collision_bounds import CollisionBounds
from .compiled_step import DESCENT_STATUS, NOT_FINITE, CompiledDescent, load_step_kernel
from .convergence import PLATEAU_RATIO, STALL_FACTOR, Constants, constants, reached, weighted_reached
from .goals import FrameGoal, IKResult, goal_label, inverse_target
from .methods import run_compiled_step
from .null_space import Manipulability, joint_limit_gradient, project_into_null_space
from .objectives import AxisGoal, BoundObjective, PointGoal
from .objectives import bind as bind_objective
from .options import SimpleIKOptions, check_error_weights
from .active_set import back_into_limits
from .path import PathResult, solve_path
from .workspace import Workspace

_LOCAL = pin.ReferenceFrame.LOCAL
_FLOAT64 = np.dtype(np.float64)


class SimpleIK:
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
            if objectives is None:
                status, iters, errors = self._descend(q, frame_ids, inv_targets, ws, opt, until, consts)
            else:
                status, iters, errors = self._descend_objectives(q, objectives, ws, opt, until, consts)
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
        name = ("manipulability_gain" if opt.manipulability_gain > 0.0 else
                "joint_limit_gain" if opt.joint_limit_gain > 0.0 else "bias_gain")
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

    def _placement(self, fid: int) -> pin.SE3:
        """data.oMf[fid], a view that follows every later kinematics call on self.data (fetched once)."""
        M = self._placements.get(fid)
        if M is None:
            M = self._placements[fid] = self.data.oMf[fid]
        return M

    def _goal_frame_placement(self, fid: int, Tinv: pin.SE3) -> tuple[pin.SE3, np.ndarray] | None:
        """The goal model placed for ``Tinv`` and held views of its iMf[0] (= T_goal^-1 T(q) after its
        computeFrameJacobian for fid) and of that placement's translation, or None for a frame on the
        universe (the root joints do not carry it)."""
        views = self._goal_placements.get(fid, 0)
        if views == 0:
            if self.scene.model.frames[fid].parentJoint == 0:
                views = None
            else:  # computeFrameJacobian leaves the universe-to-frame placement in iMf[0]
                M = self._goal_data.iMf[0]
                views = (M, M.translation)
            self._goal_placements[fid] = views
        if views is not None and self._goal_model_Tinv is not Tinv:  # once per solve (Tinv is held)
            for j, placement in self._root_joints:
                self._goal_model.jointPlacements[j] = Tinv * placement
            self._goal_model_Tinv = Tinv
        return views

    def check_seed(self, q_seed) -> np.ndarray:
        """q_seed as a finite float vector of size nq (q_seed itself if it is one; solve copies it), or
        raise (Scene.check_configuration)."""
        if type(q_seed) is np.ndarray and q_seed.dtype is _FLOAT64 and q_seed.shape == (self._nq,):
            if math.isfinite(ddot(q_seed, q_seed)):  # any nan or inf (or an overflow: the slow check) fails
                return q_seed
        return self.scene.check_configuration(q_seed, "q_seed")

    def _errors(self, q: np.ndarray, frame_ids: list[int], inv_targets: list[pin.SE3]) -> tuple[np.ndarray, np.ndarray]:
        """Position [m] and orientation [rad] error of every goal at q."""
        model, data = self.scene.model, self.data
        pin.forwardKinematics(model, data, q)
        pos, rot = np.empty(len(frame_ids)), np.empty(len(frame_ids))
        for k, (fid, Tinv) in enumerate(zip(frame_ids, inv_targets)):
            T_err = Tinv * pin.updateFramePlacement(model, data, fid)
            t, w = T_err.translation, pin.log3(T_err.rotation)
            pos[k], rot[k] = math.sqrt(t @ t), math.sqrt(w @ w)
        return pos, rot

    def _refresh_geometry(self) -> None:
        """geom_data and the broad phase for the collision model of now (remade when obstacles came or went)."""
        if self._geometry_version != self.scene.collision_structure_version:
            self.geom_data = collision_check_data(self.scene.collision_model)
            self._collision_manager = _collision_manager(self.scene, self.geom_data)
            self._has_collision_pairs = len(self.scene.collision_model.collisionPairs) > 0
            self._geometry_version = self.scene.collision_structure_version

    def _collision_bounds(self) -> CollisionBounds | None:
        """The boxes that prove most answers free of collision in the kernel (collision_bounds.py), for the
        scene's obstacles of now (rebuilt when one is added, moved or removed), or None."""
        version = self.scene.collision_version
        if version != self._bounds_version:
            self._refresh_geometry()
            self._bounds = CollisionBounds.build(self.scene.model, self.scene.collision_model, self.geom_data)
            self._bounds_version = version
        return self._bounds if collision_bounds.USE_COLLISION_BOUNDS else None

    def _in_collision(self, q: np.ndarray) -> bool:
        """Self-collision or contact with an obstacle of the scene (its obstacles of now)."""
        self._refresh_geometry()
        if not self._has_collision_pairs:
            return False
        if self._collision_manager is not None:
            return bool(pin.computeCollisions(self.scene.model, self.data, self._collision_manager, q, True))
        return bool(pin.computeCollisions(self.scene.model, self.data, self.scene.collision_model, self.geom_data,
                                          q, True))

    def _descend(self, q, frame_ids, inv_targets, ws: Workspace, opt: SimpleIKOptions, deadline: float,
                 consts: Constants | None = None):
        """DLS iterations on q in place; returns (status, iterations, errors): status "converged" or why
        not, errors the (position, orientation) error arrays at the converged q (None otherwise)."""
        c = consts or constants(opt)
        if (len(frame_ids) == 1 and ws.qs is not None and not opt.use_log_jacobian and not ws.weighted
                and not c.null_space):
            method = c.method
            if method.compiled and (method.lambda_k is None or method.lambda_affine is not None):
                descent = ws.compiled_descent(self.scene.model, frame_ids[0])
                if descent is not None:
                    return self._descend_compiled(descent, q, inv_targets[0], ws, opt, deadline, c)
            views = self._goal_frame_placement(frame_ids[0], inv_targets[0])
            if views is not None:
                return self._descend_fast(q, frame_ids[0], views, ws, opt, deadline, c)
        return self._descend_general(q, frame_ids, inv_targets, ws, opt, deadline, c)

    def _objective_errors(self, q: np.ndarray, objectives: list[BoundObjective],
                          ws: Workspace) -> tuple[np.ndarray, np.ndarray]:
        """Position [m] and orientation [rad] error of every objective at q (objectives.py's errors)."""
        model, data = self.scene.model, self.data
        pin.computeJointJacobians(model, data, q)
        pin.updateFramePlacements(model, data)
        pos, rot = np.empty(len(objectives)), np.empty(len(objectives))
        r = 0
        for k, o in enumerate(objectives):
            e, J = ws.e[r : r + o.rows], ws.J[r : r + o.rows]
            o.compute(model, data, ws.vs, e, J)
            pos[k], rot[k] = o.true_errors(e)
            r += o.rows
        return pos, rot

    def _descend_objectives(self, q, objectives: list[BoundObjective], ws: Workspace, opt: SimpleIKOptions,
                            deadline: float, c: Constants):
        """_descend_general's iteration on stacked objectives (objectives.py): the same step (method,
        damping, cap), limits (active set), stall/plateau/time checks; converged when every objective's
        position and orientation errors are within the thresholds. The null-space terms are projected
        into the null space of the stacked (weighted) objective Jacobian; the manipulability is that of
        the one objective's link frame (_check_null_space allows it with one objective only)."""
        model, data = self.scene.model, self.data
        lo, hi, qs, vs = ws.lo, ws.hi, ws.qs, ws.vs
        lin, ang = opt.max_linear_error_norm, opt.max_angular_error_norm
        neg_step, step2, max_step, max_step2 = c.neg_step, c.step2, c.max_step, c.max_step2
        clamp, max_iters, method = opt.clamp_limits, opt.max_iters, c.method
        e, J, sw, sw_col = ws.e, ws.J, ws.sw, ws.sw_col
        ew = ws.ew
        qg = q[qs] if qs is not None else None
        if qg is not None and ws.margin(qg) < 0.0:
            ws.clip(q)
        if qg is None:
            ws.start_attempt(q)
        compiled = ws.compiled_step() if method.compiled and not c.null_space else None  # as _descend_general
        if compiled is not None:
            compiled.configure(lo, hi, ws.damping, opt.step_size, max_step, clamp)
            compiled.bind(qg if qg is not None else ws.x_v)
        ref_err, ref_it = math.inf, 0
        prev_err, flat = math.inf, 0
        pos, rot = np.empty(len(objectives)), np.empty(len(objectives))  # the errors of this iteration
        for it in range(max_iters + 1):
            pin.computeJointJacobians(model, data, q)
            pin.updateFramePlacements(model, data)
            converged, r = True, 0
            for k, o in enumerate(objectives):
                ek = e[r : r + o.rows]
                o.compute(model, data, vs, ek, J[r : r + o.rows])
                pos[k], rot[k] = o.errors(ek)
                converged = converged and pos[k] <= lin and rot[k] <= ang
                r += o.rows
            if converged:  # report the true errors (free components included), as the FrameGoal loops do
                r = 0
                for k, o in enumerate(objectives):
                    pos[k], rot[k] = o.true_errors(e[r : r + o.rows])
                    r += o.rows
                return "converged", it, (pos, rot)
            np.multiply(e, sw, out=ew)  # W^1/2 e, W^1/2 J
            np.multiply(J, sw_col, out=J)
            err = float(ew.dot(ew))
            if it == max_iters:
                return f"not converged in {max_iters} iterations", it, None
            if err < STALL_FACTOR * ref_err:
                ref_err, ref_it = err, it
            elif it - ref_it >= c.stall_iters:
                return "stalled", it, None
            if err > PLATEAU_RATIO * prev_err:
                flat += 1
                if flat >= c.plateau_iters:
                    return "plateau", it, None
            else:
                flat = 0
            prev_err = err
            if time.perf_counter() >= deadline:
                return "time out", it, None
            if compiled is not None:  # the step below, in C (compiled_step.py)
                if not run_compiled_step(compiled, method, J, ew, c.gain, err, qg, ws, model, q):
                    return "singular system", it + 1, None
                continue
            dq = method.direction(J, J.T, ew, err, c.gain, ws)
            if dq is None:
                return "singular system", it + 1, None
            if c.null_space:  # the task step plus the projected null-space terms, then the cap (as _descend_general)
                dq = neg_step * dq + self._null_space_motion(q, J, objectives[0].fid, ws, opt)
                n2 = dq.dot(dq)
                factor = 1.0 if n2 <= max_step2 else max_step / math.sqrt(n2)
            else:
                n2 = dq.dot(dq)
                factor = neg_step if n2 * step2 <= max_step2 else -max_step / math.sqrt(n2)
            if qg is not None:
                x = qg.copy()
                daxpy(dq, qg, a=factor)
                if ws.margin(qg) < 0.0:
                    back_into_limits(clamp, x, qg, J, ew, neg_step, lo, hi, max_step, ws)
            else:
                dq *= factor
                ws.step_general(model, q, dq, J, ew, neg_step, max_step, clamp)
        return "not converged", max_iters, None  # pragma: no cover (the loop always returns)

    def _null_space_motion(self, q: np.ndarray, J: np.ndarray, fid: int, ws: Workspace,
                           opt: SimpleIKOptions) -> np.ndarray:
        """(I - J^+ J) (k_sigma Sigma + k_m grad m + k_b (q_bias ⊖ q)) at q (null_space.py), J the step's
        (weighted) Jacobian; self.data holds q's joint Jacobians. Sigma acts on the joints with position
        limits (the scene's, not solve_nearby's box; continuous joints have none to avoid), the bias by
        pin.difference (a continuous joint turns the short way to its bias angle)."""
        g = np.zeros(ws.nv)
        if opt.joint_limit_gain > 0.0:
            x = q[ws.qs] if ws.qs is not None else ws.x_v  # (x_v: continuous joints' entries meet infinite limits)
            g += opt.joint_limit_gain * joint_limit_gradient(x, ws.scene_lo, ws.scene_hi, opt.joint_limit_ps,
                                                             opt.joint_limit_pi)
        if opt.manipulability_gain > 0.0:
            J_world = pin.getFrameJacobian(self.scene.model, self.data, fid, pin.ReferenceFrame.WORLD)[:, ws.vs]
            g += opt.manipulability_gain * ws.manipulability.value_and_gradient(J_world)[1]
        if opt.bias_gain > 0.0:
            g += opt.bias_gain * pin.difference(self.scene.model, q, ws.q_bias)[ws.group.v_indices]
        return project_into_null_space(J, g)

    def _descend_compiled(self, descent: CompiledDescent, q, Tinv: pin.SE3, ws: Workspace, opt: SimpleIKOptions,
                          deadline: float, c: Constants):
        """_descend_fast's loop, the whole attempt in one call of the compiled kernel (compiled_step.py): its
        own kinematics of the tip's chain, log6, the same tests and the compiled step; the same statuses."""
        _configure_descent(descent, ws, opt, c)
        descent.set_goal(Tinv)
        budget = math.inf if deadline == math.inf else deadline - time.perf_counter()
        status, iters, pos, rot = descent.run(q, budget)
        if status == 0:
            return "converged", iters, (np.array([pos]), np.array([rot]))
        if status == 1:
            return f"not converged in {opt.max_iters} iterations", iters, None
        return DESCENT_STATUS[status], iters, None

    def _descend_fast(self, q, fid: int, views: tuple, ws: Workspace, opt: SimpleIKOptions, deadline: float,
                      c: Constants):
        """_descend_general's iteration for the common case (one goal, scalar joints in contiguous q and
        v ranges, no Jlog6), in fewer Python statements, which are most of an iteration's cost: one
        kinematics call on the goal model per iteration, computeFrameJacobian, which visits only the
        joints that carry the tip (TALOS: 9 of 32) and leaves ``T_err`` (a held view of its iMf[0]) =
        T_goal^-1 T(q) (``t`` its translation); BLAS/LAPACK called with positional arguments, the limits
        checked only when the step could reach them."""
        model, data = self._goal_model, self._goal_data
        computeFrameJacobian, log6, perf_counter, sqrt = pin.computeFrameJacobian, pin.log6, time.perf_counter, math.sqrt
        lo, hi, vs, nv, sliced = ws.lo, ws.hi, ws.vs, ws.nv, not ws.all_v
        P, c_lohi, slack = ws.P, ws.c_lohi, ws.margin_slack
        lin2, ang2, near, neg_step, max_step = c.lin2, c.ang2, c.near, c.neg_step, c.max_step
        step_size, clamp, max_iters = opt.step_size, opt.clamp_limits, opt.max_iters
        stall_iters, plateau_iters = c.stall_iters, c.plateau_iters
        method, gain = c.method, c.gain
        direction, lambda_k = method.direction, method.lambda_k
        T_err, t = views
        qg = q[ws.qs]  # view on the group's q
        margin = min(dgemv(1.0, P, qg, -1.0, c_lohi).tolist())  # distance to the limits (a lower bound later)
        if margin < 0.0:  # a seed outside the limits
            ws.clip(q)
            margin = 0.0
        # dls and lm_*: the whole step (direction, cap, limits) in one call of the compiled kernel
        compiled = ws.compiled_step() if method.compiled else None
        if compiled is not None:
            compiled.configure(lo, hi, ws.damping, step_size, max_step, clamp)
            compiled.bind(qg)
            Jc, ec, run_step, set_damping, copyto = compiled.J, compiled.e, compiled.run, compiled.set_damping, np.copyto
        stall_ref, ref_it = math.inf, 0  # stall: err must drop below half the error at ref_it
        flat_ref, flat = math.inf, 0  # plateau: err above 98 % of the previous error is a flat iteration
        for it in range(max_iters + 1):
            # the LOCAL Jacobian of the tip from the joints that carry it only (not the whole model), and
            # T_err (a held view of iMf[0], the universe-to-tip placement that pass leaves) = T_goal^-1 T(q)
            J = computeFrameJacobian(model, data, q, fid, _LOCAL)
            e = log6(T_err).vector
            err = ddot(e, e)
            if err <= near:
                p2, r2 = ddot(t, t), ddot(e, e, 3, 3, 1, 3, 1)  # |translation|^2, |e[3:]|^2
                if p2 <= lin2 and r2 <= ang2:
                    return "converged", it, (np.array([sqrt(p2)]), np.array([sqrt(r2)]))
            if it == max_iters:
                return f"not converged in {max_iters} iterations", it, None
            if err < stall_ref:
                stall_ref, ref_it = STALL_FACTOR * err, it
            elif it - ref_it >= stall_iters:
                return "stalled", it, None
            if err > flat_ref:
                flat += 1
                if flat >= plateau_iters:
                    return "plateau", it, None
            else:
                flat = 0
            flat_ref = PLATEAU_RATIO * err
            if perf_counter() >= deadline:
                return "time out", it, None
            if sliced:
                J = J[:, vs]
            if compiled is not None:  # the same step as below, in C (compiled_step.py)
                copyto(Jc, J)
                copyto(ec, e)
                if lambda_k is not None:
                    set_damping(lambda_k(gain, err))
                if run_step() < 0:
                    return "singular system", it + 1, None
                continue
            # dq = -step_size J^T (J J^T + damping I)^-1 e capped to max_step_norm, as in _descend_general
            dq = direction(J, J.T, e, err, gain, ws)
            if dq is None:
                return "singular system", it + 1, None
            norm = dnrm2(dq)
            if step_size * norm <= max_step:
                factor, step_len = neg_step, step_size * norm + slack
            else:
                factor, step_len = -max_step / norm, max_step + slack
            if step_len < margin:  # |step| bounds every joint's motion: no limit reachable
                daxpy(dq, qg, nv, factor)  # in place: qg += factor dq
                margin -= step_len
                continue
            x = qg.copy()
            daxpy(dq, qg, nv, factor)
            margin = min(dgemv(1.0, P, qg, -1.0, c_lohi).tolist())  # exact; < 0 iff a joint left its range
            if margin < 0.0:
                back_into_limits(clamp, x, qg, J, e, neg_step, lo, hi, max_step, ws)
                margin = 0.0  # a joint is on its limit
        return "not converged", max_iters, None  # pragma: no cover (the loop always returns)

    def _descend_general(self, q, frame_ids, inv_targets, ws: Workspace, opt: SimpleIKOptions, deadline: float,
                         c: Constants):
        """_descend for any goals and joints: stacked goals, Jlog6, continuous joints or scattered indices."""
        model, data = self.scene.model, self.data
        computeJointJacobians, updateFramePlacement = pin.computeJointJacobians, pin.updateFramePlacement
        getFrameJacobian, log6, Jlog6 = pin.getFrameJacobian, pin.log6, pin.Jlog6
        perf_counter, sqrt = time.perf_counter, math.sqrt
        lo, hi, qs, vs, all_v = ws.lo, ws.hi, ws.qs, ws.vs, ws.all_v
        single = len(frame_ids) == 1
        fid0, Tinv0 = frame_ids[0], inv_targets[0]
        M0 = self._placement(fid0)  # T(q)
        lin2, ang2, near = c.lin2, c.ang2, c.near
        neg_step, step2, max_step, max_step2 = c.neg_step, c.step2, c.max_step, c.max_step2
        clamp, max_iters = opt.clamp_limits, opt.max_iters
        # a zero weight leaves some log6 components free: the exact derivative of the others is Jlog6 J
        use_jlog = opt.use_log_jacobian or ws.masked
        stall_iters, plateau_iters = c.stall_iters, c.plateau_iters
        method, gain, weighted, sw, sw_col = c.method, c.gain, ws.weighted, ws.sw, ws.sw_col
        direction = method.direction
        null_space = c.null_space
        qg = q[qs] if qs is not None else None  # view on the group's q (fast path)
        margin_of, margin_slack = ws.margin, ws.margin_slack
        margin = margin_of(qg) if qg is not None else 0.0
        if margin < 0.0:  # a seed outside the limits
            ws.clip(q)
            margin = 0.0
        if qg is None:
            ws.start_attempt(q)
        # dls and lm_* without null-space terms: the step in one call of the compiled kernel, on q's view
        # (scalar joints) or on the limit coordinates x_v (continuous joints: then integrated)
        compiled = ws.compiled_step() if method.compiled and not null_space else None
        if compiled is not None:
            compiled.configure(lo, hi, ws.damping, opt.step_size, max_step, clamp)
            compiled.bind(qg if qg is not None else ws.x_v)
        ref_err, ref_it = math.inf, 0  # stall detection
        prev_err, flat = math.inf, 0  # plateau detection
        for it in range(max_iters + 1):
            computeJointJacobians(model, data, q)  # also the joint placements
            if single:
                updateFramePlacement(model, data, fid0)  # M0 follows
                T_err = Tinv0 * M0  # T_goal^-1 T(q)
                e = log6(T_err).vector
                if weighted:
                    if weighted_reached(T_err.translation, e, ws, 0, lin2, ang2, near):
                        t, w = T_err.translation, e[3:]
                        return "converged", it, (np.array([sqrt(t.dot(t))]), np.array([sqrt(w.dot(w))]))
                    e = np.multiply(e, sw, out=ws.ew)
                    err = e.dot(e)
                else:
                    err = e.dot(e)
                    if err <= near:
                        t, w = T_err.translation, e[3:]
                        p2, r2 = t.dot(t), w.dot(w)
                        if p2 <= lin2 and r2 <= ang2:
                            return "converged", it, (np.array([sqrt(p2)]), np.array([sqrt(r2)]))
            else:
                e, J = ws.e, ws.J
                converged, err = True, 0.0
                for k, (fid, Tinv) in enumerate(zip(frame_ids, inv_targets)):
                    T_err = Tinv * updateFramePlacement(model, data, fid)
                    ek = e[6 * k : 6 * k + 6]
                    ek[:] = log6(T_err).vector
                    if weighted:
                        if converged and not weighted_reached(T_err.translation, ek, ws, k, lin2, ang2, near):
                            converged = False
                    else:
                        err_k = ek.dot(ek)
                        if converged and not (err_k <= near and reached(T_err, ek, lin2, ang2)):
                            converged = False
                        err += err_k
                    Jk = getFrameJacobian(model, data, fid, _LOCAL)[:, vs]
                    if use_jlog:
                        np.matmul(Jlog6(T_err), Jk, out=J[6 * k : 6 * k + 6])
                    else:
                        J[6 * k : 6 * k + 6] = Jk
                if converged:
                    return "converged", it, self._errors(q, frame_ids, inv_targets)
                if weighted:  # W^1/2 e and W^1/2 J
                    e = np.multiply(e, sw, out=ws.ew)
                    err = e.dot(e)
                    np.multiply(J, sw_col, out=J)
            if it == max_iters:
                return f"not converged in {max_iters} iterations", it, None
            if err < STALL_FACTOR * ref_err:
                ref_err, ref_it = err, it
            elif it - ref_it >= stall_iters:
                return "stalled", it, None
            if err > PLATEAU_RATIO * prev_err:
                flat += 1
                if flat >= plateau_iters:
                    return "plateau", it, None
            else:
                flat = 0
            prev_err = err
            if perf_counter() >= deadline:
                return "time out", it, None
            if single:
                J = getFrameJacobian(model, data, fid0, _LOCAL)
                if not all_v:
                    J = J[:, vs]
                if use_jlog:
                    J = Jlog6(T_err) @ J
                if weighted:
                    J = np.multiply(J, sw_col, out=ws.Jw)
            if compiled is not None:  # the same step as below, in C (compiled_step.py)
                if not run_compiled_step(compiled, method, J, e, gain, err, qg, ws, model, q):
                    return "singular system", it + 1, None
                continue
            # dq = -step_size * direction, capped to max_step_norm (the factor is applied with the step)
            dq = direction(J, J.T, e, err, gain, ws)
            if dq is None:
                return "singular system", it + 1, None
            if null_space:  # the task step plus the projected null-space terms, then the cap
                dq = neg_step * dq + self._null_space_motion(q, J, fid0, ws, opt)
                n2 = dq.dot(dq)
                factor = 1.0 if n2 <= max_step2 else max_step / sqrt(n2)
            else:
                n2 = dq.dot(dq)
                factor = neg_step if n2 * step2 <= max_step2 else -max_step / sqrt(n2)
            if qg is not None:  # fast path: q[qs] += dq within [lo, hi]
                # |factor dq| (2-norm) bounds every joint's motion: while it is below the distance to the
                # limits (margin, a lower bound kept across iterations), the step cannot leave them.
                step_len = abs(factor) * sqrt(n2) + margin_slack
                if step_len < margin:
                    daxpy(dq, qg, a=factor)  # in place: qg += factor dq
                    margin -= step_len
                    continue
                x = qg.copy()
                daxpy(dq, qg, a=factor)
                margin = margin_of(qg)  # exact; < 0 iff a joint left its range
                if margin < 0.0:
                    back_into_limits(clamp, x, qg, J, e, neg_step, lo, hi, max_step, ws)
                    margin = 0.0  # a joint is on its limit
            else:  # general path (continuous joints, scattered indices): the limits on x_v (Workspace)
                dq *= factor
                ws.step_general(model, q, dq, J, e, neg_step, max_step, clamp)
        return "not converged", max_iters, None  # pragma: no cover (the loop always returns)


def _collision_manager(scene: Scene, geom_data: pin.GeometryData):
    """pinocchio's naive broad phase on the scene's collision model, or None if this build has none.

    It tests the same active pairs as ``computeCollisions(model, data, geom_model, geom_data, q)``
    (pair list, active flags, disabled objects) but skips, for free, every pair whose axis-aligned
    bounding boxes do not overlap: 2-4x faster on Panda and UR5 (the AABB bounds each convex hull,
    so no colliding pair is skipped; the scene uses no security margin). It also beats pinocchio's
    other broad phases on TALOS's 887 pairs (interleaved, 300 converged SimpleIK candidates: 18.4 us
    against 25.6 us for the dynamic AABB tree; 300 random configurations: 18.4 against 22.0 us).
    """
    cls = getattr(pin, "BroadPhaseManager_NaiveCollisionManager", None)
    if cls is None or any(r.security_margin != 0.0 for r in geom_data.collisionRequests):
        return None
    return cls(scene.model, scene.collision_model, geom_data)


def _configure_descent(descent: CompiledDescent, ws: Workspace, opt: SimpleIKOptions, c: Constants) -> None:
    """The compiled descent's constants for ``opt`` (set again only when the constants or the method's damping
    changed) and its step's bounds and damping."""
    method = c.method
    lam = (0.0, ws.damping) if method.lambda_k is None else method.lambda_affine(c.gain)
    key = descent.key
    if key is None or key[0] is not c or key[1] != lam:
        descent.configure(c.lin2, c.ang2, c.near, opt.max_iters, c.stall_iters, c.plateau_iters, STALL_FACTOR,
                          PLATEAU_RATIO, *lam)
        descent.key = (c, lam)
    descent.step.configure(ws.lo, ws.hi, ws.damping, opt.step_size, c.max_step, opt.clamp_limits)
