"""SimpleIKOptions: the options of one-shot IK, their defaults (and the measurements behind them) and checks."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import InvalidInputError, check_positive
from .goals import FrameGoal
from .methods import METHOD_TABLE
from .objectives import AxisGoal, PointGoal


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
    method: str = "dls"  # step direction, one of METHODS (a row of methods.METHOD_TABLE)
    lm_gain: float | None = None  # lambda of the lm_* methods; None: the method's default_gain (methods.py)
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
        if self.lm_gain is not None:
            return self.lm_gain
        method = METHOD_TABLE.get(self.method)
        return method.default_gain if method is not None else 0.0

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
        if not isinstance(self.method, str) or self.method not in METHOD_TABLE:
            raise InvalidInputError(f"method: expected one of {', '.join(METHOD_TABLE)}, got {self.method!r}")
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

