"""SimpleIK: one-shot IK by damped least squares (or another method) with random restarts and collision checks.

``method`` replaces the DLS step below by Levenberg-Marquardt with Wampler, Chan or Sugihara damping,
Newton-Raphson or Gauss-Newton (see _direction); ``error_weights`` (and FrameGoal.weights) weight or
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

Several goals, Jlog6, continuous joints or scattered indices take the general loop (_descend_general),
which does the same arithmetic. test_simple_ik checks both against a plain numpy implementation of
the iteration.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pinocchio as pin
from scipy.linalg.blas import daxpy, ddot, dgemv, dnrm2, dsyrk
from scipy.linalg.lapack import dposv

from ..errors import InvalidInputError, check_positive
from ..model.joint_group import JointGroup
from ..oink.tasks.frame_task import as_se3
from ..model.scene import Scene, collision_check_data
from .objectives import AxisGoal, BoundObjective, PointGoal
from .objectives import bind as bind_objective
from .null_space import Manipulability, joint_limit_gradient, project_into_null_space
from .compiled_step import CompiledStep, load_step_kernel

_LOCAL = pin.ReferenceFrame.LOCAL
_STALL_FACTOR = 0.5  # stall_iters: the squared error must drop below this fraction of its reference
_PLATEAU_RATIO = 0.98  # plateau_iters: an iteration is flat if the squared error drops by less than 2 %
_CLAMP_ROUNDS = 3  # clamp_limits: re-solves per iteration when the re-solved step hits other limits
_FLOAT64 = np.dtype(np.float64)
USE_COMPILED_STEP = True  # dls and lm_* steps of the fast loop in C when the kernel is built (tests switch it)
_PINV_RCOND = 1e-10  # newton_raphson, gauss_newton: singular values below this fraction of the largest are cut
# SimpleIKOptions.method: the step direction dq (J dq ~ e, then q <- q - step_size dq), see _direction
METHODS = ("dls", "lm_wampler", "lm_chan", "lm_sugihara", "newton_raphson", "gauss_newton")
_DLS, _LM_WAMPLER, _LM_CHAN, _LM_SUGIHARA, _NEWTON_RAPHSON, _GAUSS_NEWTON = range(len(METHODS))
# lm_gain when None: Chan's lambda 1.0 (the Robotics Toolbox's k); Sugihara's w_n = 0.01 l^2 for l ~ 0.3 m
# links; Wampler's constant 1e-4 (the best constant measured, also dls's default damping: with the
# defaults lm_wampler takes dls's steps through the generic LM code, a check of both in the benchmark)
LM_GAIN_DEFAULTS = {"lm_wampler": 1e-4, "lm_chan": 1.0, "lm_sugihara": 1e-3}


@dataclass
class SimpleIKOptions:
    """Options of :class:`SimpleIK` (names, meanings and defaults of RoboPlan's SimpleIK except below).

    Measurements behind the choices: 1000 collision-free reachable goals (FK of random in-limit
    configurations) on Panda (group "arm", tip "panda_hand_tcp", from the SRDF "default" state) and
    UR5 (tip "tool0", from neutral), iterations per solved goal counted with an unbounded time
    budget (the time-independent measure of the work), success then checked at max_time = 5 ms with
    check_collisions on, verified independently (1 mm, 1 mrad, limits, collisions).

    Changed defaults:

    * ``step_size`` 0.25 -> 1.0: the full DLS (Gauss-Newton) step converges quadratically near the
      goal, whereas 0.25 shrinks the error by only 0.75 per iteration: median 28-30 iterations per
      solve instead of 7 (Panda) and 10 (UR5). ``max_step_norm`` keeps the full step safe far away.
    * ``damping`` 1e-3 -> 1e-4: 500 goals per robot and goal seed (0, 1), both values interleaved in
      random order in the same run, 5 ms, collisions on: success 99.8/100 -> 100/100 % (Panda),
      100/100 -> 100/100 (UR5), 99.8/99.6 -> 100/99.8 (Kinova); mean iterations per goal 11.6/13.1 ->
      10.4/12.7, 16.8/18.5 -> 17.8/17.2, 11.9/13.9 -> 10.0/10.5; median time within +-7 %, mean time
      Kinova -14/-19 %. (RoboPlan's choice, 1e-3, is kept by ``damping: 0.001``.)
    * ``max_restarts`` 2 -> 100: three attempts leave 12-16 % of reachable goals unsolved (RoboPlan's
      own SimpleIk with its defaults: 94 % Panda, 86 % UR5 in the same run), because a random
      restart converges only ~40 % of the time. With stall detection a failed attempt costs ~15
      iterations, so ``max_time`` is the effective bound (5 ms never reaches 100 restarts); 100 only
      bounds the work when max_time is raised.

    Added options (not in RoboPlan):

    * ``max_step_norm`` [rad or m, 2-norm of the joint step per iteration; inf = no cap]. Default
      1.5: iterations per goal p99.5 101 (Panda) / 122 (UR5) against 111 / 198 with 0.75, 134 / 102
      with 2.0 and 160 / 280 without a cap (mean 11.4 / 16.9 against 19.1 / 31.8 without).
    * ``stall_iters``: abandon an attempt whose squared error has not halved within this many
      iterations (catches oscillation; 0 = off). Default 10 (6 and 15 measured no better).
    * ``plateau_iters``: abandon an attempt whose squared error dropped by less than 2 % in this
      many consecutive iterations (a local minimum, typically against a joint limit; 0 = off).
      Default 2: Panda iterations p99.5 137 -> 106, mean 13.8 -> 12.4 (at max_step_norm 1).
    * ``clamp_limits``: joints that would leave their limits are clamped and the others re-solved
      (False: the step is only clipped into the limits). Panda: mean 11.4 iterations against 23.2
      clipped, p99.5 101 against 243, CPU time per goal p99.5 -25 % despite the costlier steps.
    * ``use_log_jacobian``: premultiply J by Jlog6 (exact Newton direction for the log6 error);
      measured no better, off.
    * ``seed``: of the restart RNG (None: fresh entropy).

    Restarts are uniform inside the limits, except that a revolute joint whose range spans more than
    one turn is drawn in the one-turn window at the middle of its range (same poses, farther from
    the limits): UR5 iterations per goal mean 15.5-16.9 against 16.9-21.2, p99.5 109-143 against
    122-214 over three goal sets of 1000 (Panda has no such joint).
    """

    group_name: str = ""
    max_iters: int = 100  # per attempt
    max_time: float = 0.005  # [s] for the whole solve
    max_restarts: int = 100  # random restarts after the seeded attempt (ignored when fast_return=False)
    step_size: float = 1.0  # fraction of the DLS step applied per iteration
    damping: float = 1e-4  # lambda of the DLS (RoboPlan: 1e-3; see "Changed defaults")
    max_linear_error_norm: float = 0.001  # [m]
    max_angular_error_norm: float = 0.001  # [rad]
    check_collisions: bool = True
    fast_return: bool = True
    max_step_norm: float = 1.5  # [rad or m] 2-norm cap of the joint step per iteration; inf = no cap
    stall_iters: int = 10  # abandon an attempt whose squared error has not halved in this many iterations
    plateau_iters: int = 2  # abandon an attempt after this many consecutive iterations with < 2 % progress
    clamp_limits: bool = True  # active set on the limits (re-solve the free joints) instead of clipping
    use_log_jacobian: bool = False  # premultiply J by Jlog6 (exact Newton direction)
    seed: int | None = None  # of the restart RNG
    method: str = "dls"  # step direction, one of METHODS (see _direction)
    lm_gain: float | None = None  # lambda of the lm_* methods; None: LM_GAIN_DEFAULTS[method]
    error_weights: list[float] = field(default_factory=lambda: [1.0] * 6)  # W of the 6 log6 components, >= 0
    # null-space terms (redundant arms; see null_space.py); a gain of 0 turns its term off
    joint_limit_gain: float = 0.0  # k_sigma [rad per iteration] of the joint-limit avoidance Sigma
    joint_limit_ps: float = 0.0  # [rad or m] minimum approach to a limit (Sigma = 1 there)
    joint_limit_pi: float = 0.3  # [rad or m] influence distance: Sigma acts closer than this to a limit
    manipulability_gain: float = 0.0  # k_m [rad per iteration per unit of dm/dq] (one goal only)
    max_deviation: float = math.inf  # [rad or m] no joint moves more than this from the seed (see solve_nearby)
    bias_configuration: list[float] | None = None  # group joint values (continuous: angles) the null space pulls toward
    bias_gain: float = 0.0  # [1 per iteration] fraction of (bias - q) added per iteration, projected (0: off)
    active_joints: list[str] | None = None  # the group's joints that move (None: all); the others keep the seed
    # standing objectives (FrameGoal, PointGoal, AxisGoal) added to the goals of every solve, e.g. "the tool
    # points down" for every planner query (YAML simple_ik.objectives, objective_config.py); labelled
    # objectives[k] in errors, their errors reported after the request's goals
    objectives: list = field(default_factory=list)

    def resolved_lm_gain(self) -> float:
        """lm_gain, or the method's default (0.0 for the methods without one)."""
        return self.lm_gain if self.lm_gain is not None else LM_GAIN_DEFAULTS.get(self.method, 0.0)

    def validate(self) -> None:
        """Raise InvalidInputError naming the first bad option."""
        if not isinstance(self.group_name, str):
            raise InvalidInputError(f"group_name: expected a string, got {self.group_name!r}")
        for name, lowest in (("max_iters", 1), ("max_restarts", 0), ("stall_iters", 0), ("plateau_iters", 0)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lowest:
                raise InvalidInputError(f"{name}: expected an integer >= {lowest}, got {v!r}")
        for name in ("max_time", "step_size", "max_linear_error_norm", "max_angular_error_norm"):
            check_positive(getattr(self, name), name)
        check_positive(self.damping, "damping", allow_zero=True)
        check_positive(self.max_step_norm, "max_step_norm", allow_inf=True)
        check_positive(self.max_deviation, "max_deviation", allow_inf=True)
        for name in ("check_collisions", "fast_return", "clamp_limits", "use_log_jacobian"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise InvalidInputError(f"{name}: expected true or false, got {getattr(self, name)!r}")
        if self.seed is not None and (isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer))):
            raise InvalidInputError(f"seed: expected an integer or None, got {self.seed!r}")
        if self.active_joints is not None and (
                isinstance(self.active_joints, (str, bytes)) or not isinstance(self.active_joints, (list, tuple))
                or not self.active_joints or not all(isinstance(j, str) for j in self.active_joints)):
            raise InvalidInputError(f"active_joints: expected a non-empty list of joint names or None, "
                                    f"got {self.active_joints!r}")
        check_positive(self.bias_gain, "bias_gain", allow_zero=True)
        if self.bias_gain > 0.0 and self.bias_configuration is None:
            raise InvalidInputError("bias_gain: needs bias_configuration (the group's joint values to pull toward)")
        if self.bias_configuration is not None:
            b = self.bias_configuration
            try:
                ok = not isinstance(b, (str, bytes)) and len(b) > 0 and all(
                    not isinstance(x, (bool, np.bool_)) and math.isfinite(float(x)) for x in b)
            except (TypeError, ValueError):
                ok = False
            if not ok:
                raise InvalidInputError(f"bias_configuration: expected a list of finite joint values, got {b!r}")
        for name in ("joint_limit_gain", "manipulability_gain", "joint_limit_ps"):
            check_positive(getattr(self, name), name, allow_zero=True)
        check_positive(self.joint_limit_pi, "joint_limit_pi")
        if not self.joint_limit_ps < self.joint_limit_pi:
            raise InvalidInputError(f"joint_limit_ps: expected < joint_limit_pi ({self.joint_limit_pi:g}), "
                                    f"got {self.joint_limit_ps!r}")
        if self.method not in METHODS:
            raise InvalidInputError(f"method: expected one of {', '.join(METHODS)}, got {self.method!r}")
        if self.lm_gain is not None:
            check_positive(self.lm_gain, "lm_gain")
        check_error_weights(self.error_weights, "error_weights")
        if isinstance(self.objectives, (str, bytes)) or not isinstance(self.objectives, (list, tuple)):
            raise InvalidInputError(f"objectives: expected a list of FrameGoal, PointGoal or AxisGoal, "
                                    f"got {self.objectives!r}")
        for k, g in enumerate(self.objectives):
            if not isinstance(g, (FrameGoal, PointGoal, AxisGoal)):
                raise InvalidInputError(f"objectives[{k}]: expected a FrameGoal, PointGoal or AxisGoal, "
                                        f"got {type(g).__name__}")


def check_error_weights(w, name: str) -> None:
    """InvalidInputError naming ``name`` unless w is 6 finite numbers >= 0, not all 0."""
    ok = isinstance(w, (list, tuple, np.ndarray)) and len(w) == 6
    if ok:
        try:
            ok = all(not isinstance(x, (bool, np.bool_)) and math.isfinite(float(x)) and float(x) >= 0.0 for x in w)
        except (TypeError, ValueError):
            ok = False
    if not ok or not any(float(x) > 0.0 for x in w):
        raise InvalidInputError(f"{name}: expected 6 finite numbers >= 0, not all 0 (weights of the tip's "
                                f"error [vx, vy, vz, wx, wy, wz] in its own frame), got {w!r}")


@dataclass
class FrameGoal:
    """Reach ``T_world_tip`` (pin.SE3 or 4x4, model world frame) with frame ``tip_frame``; ``weights``:
    this goal's 6 error weights (as SimpleIKOptions.error_weights; None: the options'). With
    ``relative_to`` (a frame name), ``T_world_tip`` is the tip's pose in that frame, which moves with q
    (objectives.py)."""

    tip_frame: str
    T_world_tip: object
    weights: Sequence[float] | None = None
    relative_to: str | None = None


@dataclass
class IKResult:
    success: bool
    q: np.ndarray  # full nq; the seed when no solution was found
    position_errors: np.ndarray = field(default_factory=lambda: np.zeros(0))  # [m] per goal
    orientation_errors: np.ndarray = field(default_factory=lambda: np.zeros(0))  # [rad] per goal
    iterations: int = 0
    restarts: int = 0
    message: str = ""


class _Workspace:
    """Buffers, limits and index views for one (group, number of goals), built once and reused."""

    def __init__(self, scene: Scene, group: JointGroup, n_goals: int, lo: np.ndarray | None = None,
                 hi: np.ndarray | None = None, rows: int | None = None) -> None:
        """``lo``, ``hi`` (group v order): limits narrower than the scene's (solve_nearby); ``rows``: the
        stacked error rows of objectives (objectives.py; default 6 per FrameGoal)."""
        model = scene.model
        self.group = group
        nv, m = group.nv, 6 * n_goals if rows is None else rows
        self.e = np.empty(m)  # stacked errors and Jacobians (several goals)
        self.J = np.empty((m, nv))
        self.D = np.zeros((m, m))  # damping * I (the lm_* methods set their lambda per iteration)
        self.D_diag = self.D.reshape(-1)[:: m + 1]  # view on D's diagonal
        self.damping = 0.0
        # error_weights (set_weights): W = diag(sw^2) per stacked component; J and e are row-scaled by sw
        self.weights: tuple = (1.0,) * 6
        self.sw = np.ones(m)
        self.sw_col = self.sw[:, None]
        self.mask = np.ones(m)  # 1.0 where the weight is > 0, per stacked component
        self.weighted = False  # some weight != 1
        self.masked = False  # some weight == 0
        self.translation_full = [True] * n_goals  # per goal: no zero weight among its translation components
        self.Jw, self.ew = np.empty((m, nv)), np.empty(m)  # weighted J and e
        self.manipulability: Manipulability | None = None  # built on first use (manipulability_gain)
        self.q_bias: np.ndarray | None = None  # full q of bias_configuration (set per solve with bias_gain)
        self.dq_full = np.zeros(model.nv)
        iv = group.v_indices
        self.scene_lo = scene.q_min_v[iv].copy()  # per group v: -inf/inf for unbounded joints
        self.scene_hi = scene.q_max_v[iv].copy()
        # Fast path: scalar joints whose q and v indices are contiguous ranges -> q[qs] is a view
        # on which the step is a plain addition (no pin.integrate, no fancy indexing).
        iq = group.q_indices
        contiguous = (
            len(iq) == nv and len(group.continuous_q) == 0
            and np.array_equal(iq, np.arange(iq[0], iq[0] + nv)) and np.array_equal(iv, np.arange(iv[0], iv[0] + nv))
        )
        self.qs = slice(int(iq[0]), int(iq[0]) + nv) if contiguous else None
        self.vs = slice(int(iv[0]), int(iv[0]) + nv) if contiguous else iv
        self.all_v = contiguous and nv == model.nv  # the group's J is the whole frame Jacobian
        self.nv = nv
        self.clamped, self.free, self.d_c = np.empty(nv), np.empty(nv), np.empty(nv)  # _clamped_step's buffers
        self.inside, self.Jf = np.empty(nv), np.empty((m, nv))
        self._compiled: CompiledStep | None = None  # compiled_step()
        # margin(): distance of the group's q to its limits, min of [q - lo; hi - q] = P q - c_lohi, one
        # dgemv (exact: one nonzero per row of P = [I; -I], so each entry is a single rounded difference)
        self.P = np.asfortranarray(np.vstack([np.eye(nv), -np.eye(nv)]))
        self.bounded_v = group.bounded_v  # group-v indices of the bounded joints
        self.bounded_q = group.bounded_q  # their full-q indices
        self.revolute_bounded = np.array([model.joints[int(group.joint_ids[k])].shortname().startswith("JointModelR")
                                          for k in group.bounded_v], dtype=bool)
        self.set_limits(self.scene_lo if lo is None else lo, self.scene_hi if hi is None else hi)
        self.n_bounded = len(self.bounded_q)
        bq = self.bounded_q
        contiguous_bq = len(bq) > 0 and np.array_equal(bq, np.arange(bq[0], bq[0] + len(bq)))
        self.bounded_qs = slice(int(bq[0]), int(bq[0]) + len(bq)) if contiguous_bq else bq
        free = np.setdiff1d(np.arange(nv), group.bounded_v)
        joints = [model.joints[int(group.joint_ids[k])] for k in free]
        self.unbounded = [(j.idx_q, j.nq == 2) for j in joints]
        # restarts draw each unbounded joint in center +- half (an angle; solve_nearby: the seed's +- max_deviation)
        self.unbounded_center, self.unbounded_half = [0.0] * len(joints), [math.pi] * len(joints)
        # General path (continuous joints or scattered indices; qs is None): the limits apply to each joint's
        # limit coordinate x_v (group v order), kept across the iterations of an attempt (start_attempt,
        # step_general): a scalar joint's position; a continuous joint's angle from the seed, its displacement
        # pin.difference(seed, q) (solve_nearby's bounds; its lo, hi are -inf, inf otherwise).
        self.q_of_v = np.array([model.joints[int(j)].idx_q for j in group.joint_ids], dtype=int)
        self.cont_v = np.array([k for k, j in enumerate(group.joint_ids) if model.joints[int(j)].nq == 2], dtype=int)
        self.cont_q = self.q_of_v[self.cont_v]  # their cos coordinates (sin follows)
        self.seed_cos, self.seed_sin = np.ones(len(self.cont_v)), np.zeros(len(self.cont_v))
        self.deviation_bounded = False  # some continuous joint has a finite deviation bound
        self.x_v, self.x_next, self.dq_group = np.zeros(nv), np.zeros(nv), np.zeros(nv)

    def compiled_step(self) -> CompiledStep | None:
        """The compiled step on this workspace's sizes (built once), or None without the kernel."""
        if self._compiled is None and USE_COMPILED_STEP and load_step_kernel()[0] is not None:
            self._compiled = CompiledStep(len(self.e), self.nv, _CLAMP_ROUNDS)
        return self._compiled if USE_COMPILED_STEP else None

    def set_limits(self, lo: np.ndarray, hi: np.ndarray) -> None:
        """The position limits of the search (group v order, limit coordinates: see x_v; the scene's, or
        narrower for solve_nearby)."""
        self.lo, self.hi = lo, hi
        self.limited = bool(np.any(np.isfinite(lo)) or np.any(np.isfinite(hi)))
        self.c_lohi = np.concatenate([lo, -hi])
        finite = np.abs(np.concatenate([self.scene_lo, self.scene_hi]))
        finite = finite[np.isfinite(finite)]
        # bound of the rounding in q + factor dq and in the step length (|q| <= the largest finite limit)
        self.margin_slack = 1e-12 + 8.0 * float(np.spacing(finite.max() if len(finite) else 1.0))
        self.bounded_lo = lo[self.bounded_v]
        self.bounded_hi = hi[self.bounded_v]
        # Random restarts: uniform inside the limits, except that a revolute joint whose range spans
        # more than one turn (UR5: +-2 pi) is drawn in the one-turn window at the middle of its range:
        # the same poses, but far from its limits, where attempts end stuck against them
        wide = self.revolute_bounded & (self.bounded_hi - self.bounded_lo > 2 * np.pi)
        mid = 0.5 * (self.bounded_lo + self.bounded_hi)
        self.sample_lo = np.where(wide, mid - np.pi, self.bounded_lo)
        self.sample_hi = np.where(wide, mid + np.pi, self.bounded_hi)
        self.sample_width = self.sample_hi - self.sample_lo

    def limit_coordinates(self, q: np.ndarray) -> np.ndarray:
        """(nv,) the group's limit coordinates at q (see x_v): positions of the scalar joints, 0 for the continuous
        ones (their angle from the seed q is 0)."""
        x = q[self.q_of_v]
        x[self.cont_v] = 0.0
        return x

    def set_nearby(self, q_seed: np.ndarray, max_deviation: float) -> None:
        """solve_nearby: the search limits (set_limits) are already narrowed to the seed +- max_deviation;
        this centres the restarts of the unbounded joints there too and sets the continuous joints' seed
        angles, from which their deviation is measured (pin.difference)."""
        c, s = q_seed[self.cont_q], q_seed[self.cont_q + 1]
        norm = np.hypot(c, s)
        self.seed_cos, self.seed_sin = c / norm, s / norm
        self.deviation_bounded = len(self.cont_v) > 0 and max_deviation < math.pi
        for k, (iq, continuous) in enumerate(self.unbounded):
            center = math.atan2(q_seed[iq + 1], q_seed[iq]) if continuous else float(q_seed[iq])
            self.unbounded_center[k] = center
            self.unbounded_half[k] = min(max_deviation, math.pi)

    def start_attempt(self, q: np.ndarray) -> None:
        """x_v at q, the start of an attempt on the general path: continuous joints at their angle from the seed."""
        x = self.x_v
        np.take(q, self.q_of_v, out=x)
        if len(self.cont_v):
            if self.deviation_bounded:  # atan2 of (seed^-1 q)'s sin and cos: pin.difference(seed, q) of the joint
                c, s = q[self.cont_q], q[self.cont_q + 1]
                x[self.cont_v] = np.arctan2(self.seed_cos * s - self.seed_sin * c, self.seed_cos * c + self.seed_sin * s)
            else:  # unbounded: the value does not matter (lo, hi are -inf, inf)
                x[self.cont_v] = 0.0

    def step_general(self, model: pin.Model, q: np.ndarray, dq: np.ndarray, J: np.ndarray, e: np.ndarray,
                     neg_step: float, max_step: float, clamp: bool) -> None:
        """q <- q ⊕ dq (group v order, in place; dq too) with the step kept inside the limits [lo, hi] of the
        limit coordinates x_v (start_attempt): the active set of _clamped_step (clamp) or a clip, as the
        fast path does on q itself; continuous joints integrate (cos, sin)."""
        x, t = self.x_v, self.x_next
        np.add(x, dq, out=t)
        if self.limited and self.margin(t) < 0.0:
            if clamp:
                _clamped_step(x, t, J, e, neg_step, self.lo, self.hi, max_step, self)
            else:
                np.minimum(t, self.hi, out=t)
                np.maximum(t, self.lo, out=t)
            np.subtract(t, x, out=dq)
        self.x_v, self.x_next = t, x
        self.dq_full[self.vs] = dq
        q[:] = pin.integrate(model, q, self.dq_full)
        self.clip(q)  # (rounding: q + (t - x) may differ from t by an ulp)

    def step_compiled(self, model: pin.Model, q: np.ndarray, compiled: CompiledStep) -> bool:
        """step_general's move by the compiled kernel, which moves x_v (bound to it) in place: q <- q ⊕ (its
        change); False if the step's system was singular (q unchanged)."""
        x_old = self.x_next
        np.copyto(x_old, self.x_v)
        if compiled.run() < 0:
            return False
        np.subtract(self.x_v, x_old, out=self.dq_group)
        self.dq_full[self.vs] = self.dq_group
        q[:] = pin.integrate(model, q, self.dq_full)
        self.clip(q)  # (rounding, as step_general)
        return True

    def margin(self, x: np.ndarray) -> float:
        """min over the group's joints of the distance of x to their limits (negative: outside; inf: no limits)."""
        return min(dgemv(1.0, self.P, x, -1.0, self.c_lohi).tolist()) if self.nv else math.inf

    def set_weights(self, weights) -> None:
        """Error weights (validated): 6 for every goal, or one row of 6 per goal."""
        key = tuple(float(x) for x in np.ravel(weights))
        if key != self.weights:
            w = np.asarray(key)
            w = np.tile(w, len(self.sw) // 6) if len(w) == 6 else w
            self.sw[:] = np.sqrt(w)
            self.mask[:] = w > 0.0
            self.weighted, self.masked = bool(np.any(w != 1.0)), bool(np.any(w == 0.0))
            self.translation_full = [bool(np.all(w[6 * k : 6 * k + 3] > 0.0)) for k in range(len(w) // 6)]
            self.weights = key

    def set_damping(self, damping: float) -> None:
        if damping != self.damping:
            self.D[np.diag_indices_from(self.D)] = damping
            self.damping = damping

    def random_configuration(self, rng: np.random.Generator, q_ref: np.ndarray) -> np.ndarray:
        """Uniform in the limits (one turn for wider revolute joints), an angle in [-pi, pi] if unbounded."""
        q = q_ref.copy()
        x = rng.random(self.n_bounded)  # = rng.uniform(sample_lo, sample_hi), bit for bit, 6x faster
        x *= self.sample_width
        x += self.sample_lo
        q[self.bounded_qs] = x
        for k, (iq, continuous) in enumerate(self.unbounded):
            center, half = self.unbounded_center[k], self.unbounded_half[k]
            angle = rng.uniform(center - half, center + half)
            if continuous:
                q[iq], q[iq + 1] = math.cos(angle), math.sin(angle)
            else:
                q[iq] = angle
        return q

    def clip(self, q: np.ndarray) -> None:
        """Clip the group's bounded joints into their limits, in place."""
        if self.qs is not None:  # contiguous scalar joints: on the view (lo, hi are -inf, inf if unbounded)
            qg = q[self.qs]
            np.maximum(qg, self.lo, out=qg)
            np.minimum(qg, self.hi, out=qg)
        else:
            q[self.bounded_q] = np.minimum(np.maximum(q[self.bounded_q], self.bounded_lo), self.bounded_hi)


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
        self._workspaces: dict[tuple[str, int], _Workspace] = {}
        self._nearby_workspaces: dict[tuple[str, int], _Workspace] = {}  # solve_nearby's (limits set per call)
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
        return self._solve(goals, q_seed, options, None)

    def solve_path(self, tip_frame: str, poses: Sequence, q_seed: np.ndarray, max_joint_step: float,
                   options: SimpleIKOptions | None = None):
        """IK along a list of tip poses, each waypoint within ``max_joint_step`` of the previous one:
        :func:`~roboplan_ik_ros.core.simple_ik.path.solve_path` (returns a PathResult)."""
        from .path import solve_path  # (path.py builds on this module)

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
        if any(not isinstance(g, FrameGoal) or g.relative_to is not None for g in goals):
            objectives = self._bind_objectives(goals, opt, n_request)
        for k, g in enumerate(goals if objectives is None else ()):
            label = k if k < n_request else f"objectives[{k - n_request}]"
            try:
                frame_ids.append(self._frame_id(g.tip_frame))
            except InvalidInputError as exc:
                raise InvalidInputError(f"{_goal_label(label)}.tip_frame: {exc}") from None
            if g.weights is not None:
                check_error_weights(g.weights, f"{_goal_label(label)}.weights")
            inv_targets.append(_inverse_target(g.T_world_tip, label))
        q_seed = self._check_seed(q_seed)
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
            ws.weights = None  # (set_weights refills sw for the next FrameGoal solve on this workspace)
        elif any(g.weights is not None for g in goals):
            ws.set_weights([opt.error_weights if g.weights is None else g.weights for g in goals])
        else:
            ws.set_weights(opt.error_weights)
        consts = _constants(opt)
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
    def _warm_up(self) -> None:
        """One small solve, so that the first real one does not pay the one-time costs (measured
        ~1.3 ms: workspace, first pinocchio/LAPACK/collision calls, interpreter warm-up)."""
        model, data = self.scene.model, self.data
        frame = model.names[int(self.group.joint_ids[-1])]  # the joint frame of the group's last joint
        q = self.scene.neutral()
        pin.framesForwardKinematics(model, data, q)
        T = data.oMf[model.getFrameId(frame)] * pin.SE3(pin.exp3(np.array([0.0, 0.0, 0.05])), np.full(3, 0.01))
        opt = replace(self.options, max_time=0.01, max_restarts=0, fast_return=True)
        self.solve([FrameGoal(frame, T)], q, opt)  # seeded attempt only: the restart RNG is not used

    def _nearby_workspace(self, ws: _Workspace, q_seed: np.ndarray, max_deviation: float) -> _Workspace:
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
            nearby = self._nearby_workspaces[key] = _Workspace(self.scene, ws.group, len(ws.e) // 6, lo, hi,
                                                               rows=len(ws.e))
        else:
            nearby.set_limits(lo, hi)
        nearby.set_nearby(q_seed, max_deviation)
        return nearby

    def _check_null_space(self, opt: SimpleIKOptions, ws: _Workspace, n_goals: int, q_seed: np.ndarray) -> None:
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

    def _workspace(self, group: JointGroup, n_goals: int, rows: int | None = None) -> _Workspace:
        """The workspace of (group, n_goals) FrameGoals, or with ``rows`` stacked objective rows."""
        key = (group.name, n_goals) if rows is None else (group.name, n_goals, rows)
        ws = self._workspaces.get(key)
        if ws is None or ws.group is not group:
            ws = self._workspaces[key] = _Workspace(self.scene, group, n_goals, rows=rows)
        return ws

    def _bind_objectives(self, goals, opt: SimpleIKOptions, n_request: int | None = None) -> list[BoundObjective]:
        """Every goal as a BoundObjective (objectives.py), or InvalidInputError naming the bad goal (goals
        from ``n_request`` on are the options' standing objectives, labelled objectives[k])."""
        bound = []
        n_request = len(goals) if n_request is None else n_request
        for k, g in enumerate(goals):
            label = k if k < n_request else f"objectives[{k - n_request}]"
            if not isinstance(g, (FrameGoal, PointGoal, AxisGoal)):
                raise InvalidInputError(f"{_goal_label(label)}: expected a FrameGoal, PointGoal or AxisGoal, "
                                        f"got {type(g).__name__}")
            if isinstance(g, FrameGoal) and g.weights is not None:
                check_error_weights(g.weights, f"{_goal_label(label)}.weights")
            bound.append(bind_objective(g, label, self._frame_id, opt.error_weights, _inverse_target))
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

    def _check_seed(self, q_seed) -> np.ndarray:
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

    def _in_collision(self, q: np.ndarray) -> bool:
        """Self-collision or contact with an obstacle of the scene (its obstacles of now)."""
        if self._geometry_version != self.scene.collision_structure_version:
            self.geom_data = collision_check_data(self.scene.collision_model)
            self._collision_manager = _collision_manager(self.scene, self.geom_data)
            self._has_collision_pairs = len(self.scene.collision_model.collisionPairs) > 0
            self._geometry_version = self.scene.collision_structure_version
        if not self._has_collision_pairs:
            return False
        if self._collision_manager is not None:
            return bool(pin.computeCollisions(self.scene.model, self.data, self._collision_manager, q, True))
        return bool(pin.computeCollisions(self.scene.model, self.data, self.scene.collision_model, self.geom_data,
                                          q, True))

    def _descend(self, q, frame_ids, inv_targets, ws: _Workspace, opt: SimpleIKOptions, deadline: float,
                 consts: _Constants | None = None):
        """DLS iterations on q in place; returns (status, iterations, errors): status "converged" or why
        not, errors the (position, orientation) error arrays at the converged q (None otherwise)."""
        c = consts or _constants(opt)
        if (len(frame_ids) == 1 and ws.qs is not None and not opt.use_log_jacobian and not ws.weighted
                and not c.null_space):
            views = self._goal_frame_placement(frame_ids[0], inv_targets[0])
            if views is not None:
                return self._descend_fast(q, frame_ids[0], views, ws, opt, deadline, c)
        return self._descend_general(q, frame_ids, inv_targets, ws, opt, deadline, c)

    def _objective_errors(self, q: np.ndarray, objectives: list[BoundObjective],
                          ws: _Workspace) -> tuple[np.ndarray, np.ndarray]:
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

    def _descend_objectives(self, q, objectives: list[BoundObjective], ws: _Workspace, opt: SimpleIKOptions,
                            deadline: float, c: _Constants):
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
        compiled = ws.compiled_step() if method <= _LM_SUGIHARA and not c.null_space else None  # as _descend_general
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
            if err < _STALL_FACTOR * ref_err:
                ref_err, ref_it = err, it
            elif it - ref_it >= c.stall_iters:
                return "stalled", it, None
            if err > _PLATEAU_RATIO * prev_err:
                flat += 1
                if flat >= c.plateau_iters:
                    return "plateau", it, None
            else:
                flat = 0
            prev_err = err
            if time.perf_counter() >= deadline:
                return "time out", it, None
            if compiled is not None:  # the step below, in C (compiled_step.py)
                if not _compiled_step(compiled, J, ew, method, c.gain, err, qg, ws, model, q):
                    return "singular system", it + 1, None
                continue
            dq = _direction(method, J, J.T, ew, err, c.gain, ws)
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
                    _back_into_limits(clamp, x, qg, J, ew, neg_step, lo, hi, max_step, ws)
            else:
                dq *= factor
                ws.step_general(model, q, dq, J, ew, neg_step, max_step, clamp)
        return "not converged", max_iters, None  # pragma: no cover (the loop always returns)

    def _null_space_motion(self, q: np.ndarray, J: np.ndarray, fid: int, ws: _Workspace,
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

    def _descend_fast(self, q, fid: int, views: tuple, ws: _Workspace, opt: SimpleIKOptions, deadline: float,
                      c: _Constants):
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
        T_err, t = views
        qg = q[ws.qs]  # view on the group's q
        margin = min(dgemv(1.0, P, qg, -1.0, c_lohi).tolist())  # distance to the limits (a lower bound later)
        if margin < 0.0:  # a seed outside the limits
            ws.clip(q)
            margin = 0.0
        # dls and lm_*: the whole step (direction, cap, limits) in one call of the compiled kernel
        compiled = ws.compiled_step() if method <= _LM_SUGIHARA else None
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
                stall_ref, ref_it = _STALL_FACTOR * err, it
            elif it - ref_it >= stall_iters:
                return "stalled", it, None
            if err > flat_ref:
                flat += 1
                if flat >= plateau_iters:
                    return "plateau", it, None
            else:
                flat = 0
            flat_ref = _PLATEAU_RATIO * err
            if perf_counter() >= deadline:
                return "time out", it, None
            if sliced:
                J = J[:, vs]
            if compiled is not None:  # the same step as below, in C (compiled_step.py)
                copyto(Jc, J)
                copyto(ec, e)
                if method != _DLS:
                    set_damping(_lm_lambda(method, gain, err))
                if run_step() < 0:
                    return "singular system", it + 1, None
                continue
            # dq = -step_size J^T (J J^T + damping I)^-1 e capped to max_step_norm, as in _descend_general
            dq = _direction(method, J, J.T, e, err, gain, ws)
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
                _back_into_limits(clamp, x, qg, J, e, neg_step, lo, hi, max_step, ws)
                margin = 0.0  # a joint is on its limit
        return "not converged", max_iters, None  # pragma: no cover (the loop always returns)

    def _descend_general(self, q, frame_ids, inv_targets, ws: _Workspace, opt: SimpleIKOptions, deadline: float,
                         c: _Constants):
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
        compiled = ws.compiled_step() if method <= _LM_SUGIHARA and not null_space else None
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
                    if _weighted_reached(T_err.translation, e, ws, 0, lin2, ang2, near):
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
                        if converged and not _weighted_reached(T_err.translation, ek, ws, k, lin2, ang2, near):
                            converged = False
                    else:
                        err_k = ek.dot(ek)
                        if converged and not (err_k <= near and _reached(T_err, ek, lin2, ang2)):
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
            if err < _STALL_FACTOR * ref_err:
                ref_err, ref_it = err, it
            elif it - ref_it >= stall_iters:
                return "stalled", it, None
            if err > _PLATEAU_RATIO * prev_err:
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
                if not _compiled_step(compiled, J, e, method, gain, err, qg, ws, model, q):
                    return "singular system", it + 1, None
                continue
            # dq = -step_size * direction, capped to max_step_norm (the factor is applied with the step)
            dq = _direction(method, J, J.T, e, err, gain, ws)
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
                    _back_into_limits(clamp, x, qg, J, e, neg_step, lo, hi, max_step, ws)
                    margin = 0.0  # a joint is on its limit
            else:  # general path (continuous joints, scattered indices): the limits on x_v (_Workspace)
                dq *= factor
                ws.step_general(model, q, dq, J, e, neg_step, max_step, clamp)
        return "not converged", max_iters, None  # pragma: no cover (the loop always returns)


class _Constants:
    """Per-solve numbers derived from the options (computed once per solve, not per attempt)."""

    __slots__ = ("lin2", "ang2", "near", "neg_step", "step2", "max_step", "max_step2", "stall_iters", "plateau_iters",
                 "method", "gain", "null_space")

    def __init__(self, opt: SimpleIKOptions) -> None:
        self.lin2, self.ang2 = opt.max_linear_error_norm**2, opt.max_angular_error_norm**2
        self.near = _near_bound(self.lin2, opt.max_angular_error_norm)  # |log6|^2 above which a goal is not reached
        self.neg_step, self.step2, self.max_step = -opt.step_size, opt.step_size**2, opt.max_step_norm
        self.max_step2 = self.max_step * self.max_step
        self.stall_iters = opt.stall_iters or opt.max_iters + 1
        self.plateau_iters = opt.plateau_iters or opt.max_iters + 1
        self.method, self.gain = METHODS.index(opt.method), opt.resolved_lm_gain()
        self.null_space = opt.joint_limit_gain > 0.0 or opt.manipulability_gain > 0.0 or opt.bias_gain > 0.0


_CONSTANTS: dict[tuple, _Constants] = {}


def _constants(opt: SimpleIKOptions) -> _Constants:
    """_Constants(opt), cached by the option values they depend on."""
    key = (opt.max_linear_error_norm, opt.max_angular_error_norm, opt.step_size, opt.max_step_norm,
           opt.stall_iters, opt.plateau_iters, opt.max_iters, opt.method, opt.lm_gain, opt.joint_limit_gain > 0.0 or
           opt.manipulability_gain > 0.0 or opt.bias_gain > 0.0)
    c = _CONSTANTS.get(key)
    if c is None:
        if len(_CONSTANTS) >= 64:
            _CONSTANTS.clear()
        c = _CONSTANTS[key] = _Constants(opt)
    return c


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


def _goal_label(k: int | str) -> str:
    """"goals[k]" for a request's goal k, the label itself (e.g. "objectives[0]") for a standing objective."""
    return k if isinstance(k, str) else f"goals[{k}]"


def _inverse_target(T, k: int | str) -> pin.SE3:
    """T_goal^-1 of goal k (a pin.SE3 or a 4x4 matrix; k its index or its label, e.g. "objectives[0]"), or
    InvalidInputError (as_se3's checks)."""
    if type(T) is pin.SE3:
        Tinv = T.inverse()  # a new SE3: the caller's goal is never aliased
        # A pin.SE3 always holds a rotation: check finiteness only. T^-1's translation -R^T t is finite
        # iff R and t are (a non-finite entry makes every product it enters non-finite, 0 * inf = nan).
        t = Tinv.translation
        if math.isfinite(ddot(t, t)):  # (an overflow to inf falls back to as_se3, which accepts it)
            return Tinv
    return as_se3(T, f"{k}.T_world_tip" if isinstance(k, str) else f"goals[{k}].T_world_tip").inverse()


def _reached(T_err: pin.SE3, e: np.ndarray, lin2: float, ang2: float) -> bool:
    """True if the true position and orientation errors are within the (squared) thresholds."""
    t = T_err.translation
    w = e[3:]
    return bool(t @ t <= lin2 and w @ w <= ang2)


def _weighted_reached(t: np.ndarray, e: np.ndarray, ws: _Workspace, k: int, lin2: float, ang2: float,
                      near: float) -> bool:
    """Convergence of goal k under its error weights: the true errors (as _reached) unless a weight is 0; then the
    components with a zero weight are left out: the orientation error is |mask * log3| and the position
    error |t| (the true one) while every translation weight is > 0, else |mask * v| (log6's translation
    part, which is the position error once the orientation is reached)."""
    mask = ws.mask[6 * k : 6 * k + 6]  # goal k's
    if not ws.masked or mask.min() > 0.0:
        return bool(e.dot(e) <= near and t.dot(t) <= lin2 and e[3:].dot(e[3:]) <= ang2)
    em = e * mask
    p2 = t.dot(t) if ws.translation_full[k] else em[:3].dot(em[:3])
    return bool(p2 <= lin2 and em[3:].dot(em[3:]) <= ang2)


def _direction(method: int, J: np.ndarray, Jt: np.ndarray, e: np.ndarray, err: float, gain: float,
               ws: _Workspace) -> np.ndarray | None:
    """Step direction dq (``J dq ~ e``; the caller applies ``-step_size dq``) on the weighted
    ``J = W^1/2 J``, ``e = W^1/2 e`` (``err = e^T W e = 2 E``), None if singular; ``e`` is kept.

    * dls: ``J^T (J J^T + D)^-1 e``, D = damping I (ws.D, set per solve). BLAS on ``Jt = J^T``
      (F-ordered when J is C-ordered: no copy): dsyrk fills the upper triangle dposv reads.

    * lm_*: ``(J^T W J + W_n)^-1 J^T W e`` with ``W_n = lambda_k I``, computed as the equal
      ``J^T (J J^T + lambda_k I)^-1 e`` (m x m, m = 6 per goal <= nv): Wampler ``lambda_k = gain``
      (constant), Chan ``gain * E``, Sugihara ``E + gain``. ws.D holds lambda_k, so that the clamped
      re-solve at the limits (_clamped_step) uses the same damping.
    * newton_raphson: ``pinv(J) e``; gauss_newton: ``pinv(J^T W J) J^T W e`` (the same step in exact
      arithmetic; GN's normal matrix squares the condition number, so its cut-off drops more
      directions near a singularity). Both cut singular values below 1e-10 of the largest.
    """
    if method == _DLS:
        _, y, info = dposv(dsyrk(1.0, Jt, 1.0, ws.D, 1), e, 0, 1, 0)
        return dgemv(1.0, Jt, y) if info == 0 else None
    if method == _NEWTON_RAPHSON:
        return np.linalg.pinv(J, _PINV_RCOND) @ e
    if method == _GAUSS_NEWTON:
        return np.linalg.pinv(Jt @ J, _PINV_RCOND, hermitian=True) @ dgemv(1.0, Jt, e)
    lam = _lm_lambda(method, gain, err)
    ws.D_diag.fill(lam)
    ws.damping = math.nan  # the next solve's set_damping refills D
    _, y, info = dposv(dsyrk(1.0, Jt, 1.0, ws.D, 1), e, 0, 1, 0)
    return dgemv(1.0, Jt, y) if info == 0 else None


def _compiled_step(compiled: CompiledStep, J: np.ndarray, e: np.ndarray, method: int, gain: float, err: float,
                   qg: np.ndarray | None, ws: _Workspace, model: pin.Model, q: np.ndarray) -> bool:
    """One dls / lm_* step in C on the (weighted) J and e: on ``qg`` (the group's q view, scalar joints) or
    through the workspace's limit coordinates (continuous joints, solve_nearby); False: a singular system."""
    np.copyto(compiled.J, J)
    np.copyto(compiled.e, e)
    if method != _DLS:
        compiled.set_damping(_lm_lambda(method, gain, err))
    if qg is not None:
        return compiled.run() >= 0
    return ws.step_compiled(model, q, compiled)


def _lm_lambda(method: int, gain: float, err: float) -> float:
    """lambda_k of the lm_* methods at the weighted squared error ``err`` = 2 E: Wampler ``gain``, Chan
    ``gain E``, Sugihara ``E + gain``."""
    return gain if method == _LM_WAMPLER else gain * 0.5 * err if method == _LM_CHAN else 0.5 * err + gain


def _near_bound(lin2: float, max_angle: float) -> float:
    """Upper bound of |log6(T_err)|^2 when the position error is <= sqrt(lin2) and the angle <= max_angle.

    log6 = (v, w) with w = log3(R_goal^T R), |w| = the orientation error, and v = V(w)^-1 t where
    t = R_goal^T (p - p_goal), |t| = the position error. The largest singular value of V(w)^-1 is
    (theta/2) / sin(theta/2) for theta = |w| <= pi, so |v| <= |t| (theta/2) / sin(theta/2). A larger
    |log6|^2 proves that the goal is not reached; a smaller one is checked exactly by _reached.
    """
    theta = min(max_angle, math.pi)
    gain = (theta / 2.0) / math.sin(theta / 2.0) if theta > 0.0 else 1.0
    return (lin2 * gain * gain + theta * theta) * (1.0 + 1e-9)


def _back_into_limits(clamp: bool, x, qg, J, e, neg_step, lo, hi, max_step, ws: _Workspace) -> None:
    """``qg`` (= x + the step, some joint outside [lo, hi]; in place) back inside: the clamped re-solve
    of :func:`_clamped_step`, or a plain clip when ``clamp`` is off."""
    if clamp:
        _clamped_step(x, qg, J, e, neg_step, lo, hi, max_step, ws)
    else:
        np.minimum(qg, hi, out=qg)
        np.maximum(qg, lo, out=qg)


def _clamped_step(x, target, J, e, neg_step, lo, hi, max_step, ws: _Workspace) -> None:
    """``target`` (= x + the DLS step, outside [lo, hi]; in place) with the coordinates that left [lo, hi]
    clamped and the others re-solved.

    The step should change the error by ``rhs = neg_step e`` (``J dq ~ rhs``). A clamped joint moves
    exactly onto its bound (``d_c``); the free joints solve ``J_f d_f ~ rhs - J d_c`` by DLS (zero
    columns of J for the clamped joints, hence ``d_f = 0`` there), capped to ``max_step``. New
    violations join the clamped set (at most _CLAMP_ROUNDS re-solves); the result is clipped, so it is
    always inside. Masks are 0/1 floats (float-only numpy loops are the cheap ones).
    """
    minimum, maximum, subtract = np.minimum, np.maximum, np.subtract
    clamped, free, d_c, D, inside, Jf = ws.clamped, ws.free, ws.d_c, ws.D, ws.inside, ws.Jf
    Jft = Jf.T  # J_f^T (F-ordered view): J with the clamped joints' columns zeroed
    maximum(minimum(target, hi, out=inside), lo, out=inside)
    np.not_equal(inside, target, out=clamped)  # 1.0 for the joints out of range (the caller found one)
    for rnd in range(_CLAMP_ROUNDS):
        if rnd:
            maximum(minimum(target, hi, out=inside), lo, out=inside)
            np.not_equal(inside, target, out=free)  # (free as scratch) the newly violated joints
            if dnrm2(free) == 0.0:
                return  # inside: done
            maximum(clamped, free, out=clamped)
        subtract(1.0, clamped, out=free)
        subtract(inside, x, out=d_c)
        d_c *= clamped  # known motion of the clamped joints, 0 for the free ones
        np.multiply(J, free, out=Jf)
        b = dgemv(-1.0, J, d_c, neg_step, e)  # rhs - J d_c, rhs = neg_step e (e is not overwritten)
        _, y, info = dposv(dsyrk(1.0, Jft, 1.0, D, 1), b, 0, 1, 1)  # (J_f J_f^T + D)^-1 (rhs - J d_c)
        if info != 0:
            target[:] = inside
            return
        d_f = dgemv(1.0, Jft, y)
        norm = dnrm2(d_f)
        np.add(x, d_c, out=target)
        daxpy(d_f, target, a=max_step / norm if norm > max_step else 1.0)  # target = x + d_c + d_f (capped)
    minimum(target, hi, out=target)
    maximum(target, lo, out=target)
