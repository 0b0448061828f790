"""The compiled SimpleIK step and descent: kernel/simple_ik_kernel.c, loaded with ctypes.

:class:`CompiledStep`: one C call per iteration does what SimpleIK's Python step does in ~10
BLAS/LAPACK/numpy calls (the damped least-squares direction of dls and lm_*, the cap to
max_step_norm) plus ~20 per re-solve of the active set on the joint limits (active_set.py): at ~1 us
per call from Python, those calls were most of an iteration's time (TALOS torso + arm hits a limit
in most iterations). The kinematics, the error, the convergence, stall and plateau tests stay in
Python.

:class:`CompiledDescent`: one C call per attempt of the common case (one FrameGoal, scalar joints in
contiguous q and v ranges, a tip carried by scalar revolute or prismatic joints, no Jlog6, weights or
null-space terms): the kinematics of the tip's chain, log6, the tests and the step above, the whole
loop of descent.py's _descend_fast. What remained of an iteration in Python (computeFrameJacobian,
log6, the copies into the step's buffers, the tests: ~6-10 us, more with cold caches) was most of a
solve's time.

The library is built with the package (setup.py: ``roboplan_ik_ros.core.simple_ik._simple_ik_kernel``,
a plain shared library with no Python API). Without it, :func:`load_step_kernel` says why and SimpleIK
runs its Python step: the same math (test_simple_ik checks both against a plain numpy reference).
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np

from ..compiled_library import check_layout, library_path, load_library

_LIBRARY_STEM = "_simple_ik_kernel"
USE_COMPILED_STEP = True  # the compiled methods' steps in C when the kernel is built (tests switch it)
USE_COMPILED_DESCENT = True  # with the step: whole attempts in C where the chain allows (tests switch it)
_p, _i64, _f64 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_double


class _Step(ctypes.Structure):
    """Mirror of ``sik_step`` in simple_ik_kernel.c (same field order)."""

    _fields_ = [("J", _p), ("e", _p), ("x", _p), ("lo", _p), ("hi", _p), ("work", _p), ("m", _i64), ("n", _i64),
                ("lambda_", _f64), ("neg_step", _f64), ("max_step", _f64), ("clamp", _i64), ("rounds", _i64)]


_kernel = None
_kernel_error = ""


def _library_path() -> Path | None:
    return library_path(Path(__file__).resolve().parent, _LIBRARY_STEM)


class _Descent(ctypes.Structure):
    """Mirror of ``sik_descent`` in simple_ik_kernel.c (same field order)."""

    _fields_ = [("step", _p), ("q", _p), ("chain", _p), ("axes", _p), ("kinds", _p), ("q_index", _p), ("column", _p),
                ("frame", _p), ("goal", _p), ("placements", _p), ("nj", _i64), ("nq", _i64), ("invert_goal", _i64),
                ("goal_inv", _p), ("lin2", _f64), ("ang2", _f64),
                ("near", _f64), ("max_iters", _i64), ("stall_iters", _i64), ("plateau_iters", _i64),
                ("stall_factor", _f64), ("plateau_ratio", _f64), ("lambda_a", _f64), ("lambda_b", _f64),
                ("budget", _f64), ("iterations", _i64), ("status", _i64), ("position_error", _f64),
                ("orientation_error", _f64), ("bounds", _p), ("free", _i64)]


class _Bounds(ctypes.Structure):
    """Mirror of ``sik_bounds`` in simple_ik_kernel.c (same field order; collision_bounds.py fills it)."""

    _fields_ = [("nt", _i64), ("parent", _p), ("placements", _p), ("axes", _p), ("kinds", _p), ("q_index", _p),
                ("ng", _i64), ("joint", _p), ("boxes", _p), ("np", _i64), ("pairs", _p), ("margin", _f64),
                ("scratch", _p)]


def _bind(lib: ctypes.CDLL):
    check_layout(lib, "sik_layout", (_Step, _Bounds, _Descent))
    run, size, descend, bounds_free = lib.sik_step_run, lib.sik_work_size, lib.sik_descend, lib.sik_bounds_free
    run.argtypes, run.restype = [ctypes.c_void_p], ctypes.c_int64
    size.argtypes, size.restype = [ctypes.c_int64, ctypes.c_int64], ctypes.c_int64
    descend.argtypes, descend.restype = [ctypes.c_void_p], ctypes.c_int64
    bounds_free.argtypes, bounds_free.restype = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p], ctypes.c_int64
    return run, size, descend, bounds_free


def load_step_kernel():
    """(the ctypes functions (sik_step_run, sik_work_size), "") or (None, why it is not available)."""
    global _kernel, _kernel_error
    if _kernel is None and not _kernel_error:
        _kernel, _kernel_error = load_library(_library_path(), _LIBRARY_STEM, _bind, "SimpleIK uses its Python step")
    return _kernel, _kernel_error


class CompiledStep:
    """The kernel's step on fixed buffers for one (m rows, n joints) workspace: the caller copies J and e
    into ``J``, ``e``, points it at the coordinates to move (:meth:`bind`) and calls :meth:`run`."""

    def __init__(self, m: int, n: int, clamp_rounds: int) -> None:
        kernel, error = load_step_kernel()
        if kernel is None:
            raise RuntimeError(error)
        self._run, size = kernel[0], kernel[1]
        self.J, self.e = np.zeros((m, n)), np.zeros(m)
        self._work = np.zeros(int(size(m, n)))
        self._lo = self._hi = None  # held: the struct points into them
        self.x = None  # the bound coordinates (bind)
        self._constants = None  # (step_size, max_step, clamp) last configured
        s = self._step = _Step()
        s.J, s.e, s.work = self.J.ctypes.data, self.e.ctypes.data, self._work.ctypes.data
        s.m, s.n, s.rounds = m, n, clamp_rounds
        self._address = ctypes.addressof(s)

    def configure(self, lo: np.ndarray, hi: np.ndarray, damping: float, step_size: float, max_step: float,
                  clamp: bool) -> None:
        """Per solve: the limits (contiguous float arrays, held) and the step's constants."""
        s = self._step
        if lo is not self._lo or hi is not self._hi:
            self._lo, self._hi = np.ascontiguousarray(lo, dtype=float), np.ascontiguousarray(hi, dtype=float)
            s.lo, s.hi = self._lo.ctypes.data, self._hi.ctypes.data
        s.lambda_ = damping  # (also set per iteration by set_damping and by a descent: always written)
        if self._constants != (step_size, max_step, clamp):
            s.neg_step, s.max_step, s.clamp = -step_size, max_step, int(clamp)
            self._constants = (step_size, max_step, clamp)

    def set_damping(self, damping: float) -> None:
        self._step.lambda_ = damping

    def bind(self, x: np.ndarray) -> None:
        """The coordinates the next runs move in place (a contiguous float64 view, held)."""
        self.x = x
        self._step.x = x.ctypes.data

    def run(self) -> int:
        """x <- x + the capped step within the limits: 0, 1 if the limits acted, -1 if singular (x unchanged)."""
        return self._run(self._address)

    @property
    def address(self) -> int:
        """The address of the kernel's step struct (a descent runs this step)."""
        return self._address


# pinocchio's scalar joints the descent's kinematics computes: name -> (kernel kind, axis or None: the joint's own)
_JOINT_KINDS = {"JointModelRX": (0, (1.0, 0.0, 0.0)), "JointModelRY": (1, (0.0, 1.0, 0.0)),
                "JointModelRZ": (2, (0.0, 0.0, 1.0)), "JointModelRevoluteUnaligned": (3, None),
                "JointModelPX": (4, (1.0, 0.0, 0.0)), "JointModelPY": (5, (0.0, 1.0, 0.0)),
                "JointModelPZ": (6, (0.0, 0.0, 1.0)), "JointModelPrismaticUnaligned": (7, None)}
# the kernel's statuses in its order (NOT_FINITE: CompiledDescent.run_plain's goal or seed has a nan or inf)
DESCENT_STATUS = ("converged", "not converged", "stalled", "plateau", "time out", "singular system")
NOT_FINITE = len(DESCENT_STATUS)


def _placement_row(M) -> list[float]:
    """A pin.SE3 as the kernel's 12 doubles: the rotation row-major, then the translation."""
    return [*np.asarray(M.rotation).reshape(9).tolist(), *np.asarray(M.translation).tolist()]


class CompiledDescent:
    """Whole attempts in C (sik_descend) for the tip frame ``fid`` of ``model`` on a workspace's step (6 rows,
    ``n`` joints whose v indices start at ``v_start``: the group's). Build with :meth:`for_frame`, which
    says None when the chain that carries the tip has a joint the kernel does not compute."""

    def __init__(self, step: CompiledStep, chain: list, frame_row: list[float], nq: int, x_slice: slice) -> None:
        kernel, error = load_step_kernel()
        if kernel is None:
            raise RuntimeError(error)
        self._descend = kernel[2]
        self.step = step  # held: the struct points into its buffers
        nj = len(chain)
        self._chain = np.array([row for row, _, _, _, _ in chain], dtype=float).reshape(nj, 12)
        self._axes = np.array([axis for _, axis, _, _, _ in chain], dtype=float).reshape(nj, 3)
        self._kinds = np.array([kind for _, _, kind, _, _ in chain], dtype=np.int64)
        self._q_index = np.array([iq for _, _, _, iq, _ in chain], dtype=np.int64)
        self._column = np.array([col for _, _, _, _, col in chain], dtype=np.int64)
        self._frame = np.array(frame_row, dtype=float)
        self._goal = np.zeros((4, 4))  # T_goal^-1 (set_goal) or T_goal (set_goal_pose), homogeneous
        self._goal_inv = np.zeros(12)  # (the kernel's scratch)
        self._placements = np.zeros((nj, 12))
        # the attempt's configuration: the kernel's (its address is set once: cheaper than a pointer per call)
        self.q = np.zeros(nq)
        self._x = self.q[x_slice]  # the group's coordinates, which the step moves
        self.goal = None  # the T_goal^-1 set (set_goal)
        self.key = None  # what the constants were set for (the solver's business)
        self.bounds = None  # set_bounds
        d = self._d = _Descent()
        d.step, d.q, d.nq = step.address, self.q.ctypes.data, nq
        d.chain, d.axes, d.kinds = self._chain.ctypes.data, self._axes.ctypes.data, self._kinds.ctypes.data
        d.q_index, d.column, d.frame = self._q_index.ctypes.data, self._column.ctypes.data, self._frame.ctypes.data
        d.goal, d.goal_inv = self._goal.ctypes.data, self._goal_inv.ctypes.data
        d.placements, d.nj = self._placements.ctypes.data, nj
        self._address = ctypes.addressof(d)

    @classmethod
    def for_frame(cls, step: CompiledStep, model, fid: int, x_slice: slice, v_start: int) -> CompiledDescent | None:
        """The descent for frame ``fid`` moving ``q[x_slice]`` (the group's scalar joints, whose v indices start at
        ``v_start``), or None: a frame on the universe, or a joint of its chain that is not one of
        pinocchio's scalar revolute or prismatic joints (e.g. a free-flyer root, a continuous or a mimic
        joint), whose kinematics the kernel does not compute."""
        frame = model.frames[fid]
        n = x_slice.stop - x_slice.start
        chain = []
        for j in list(model.supports[frame.parentJoint])[1:]:
            joint = model.joints[j]
            kind = _JOINT_KINDS.get(joint.shortname())
            if kind is None or joint.nq != 1 or joint.nv != 1:
                return None
            axis = kind[1] if kind[1] is not None else np.asarray(joint.extract().axis, dtype=float).tolist()
            col = joint.idx_v - v_start if v_start <= joint.idx_v < v_start + n else -1
            chain.append((_placement_row(model.jointPlacements[j]), axis, kind[0], joint.idx_q, col))
        if not chain:
            return None
        return cls(step, chain, _placement_row(frame.placement), model.nq, x_slice)

    def set_goal(self, goal_inv) -> None:
        """T_goal^-1 (a pin.SE3, held: a later call with the same object costs nothing)."""
        if goal_inv is not self.goal:
            self._goal[:] = goal_inv.homogeneous
            self._d.invert_goal = 0
            self.goal = goal_inv

    def set_goal_pose(self, goal) -> None:
        """T_goal itself (a pin.SE3: copied every call, the caller's may change in place), for :meth:`run_plain`,
        which checks it and inverts it."""
        self._goal[:] = goal.homogeneous
        self._d.invert_goal = 1
        self.goal = None

    def configure(self, lin2: float, ang2: float, near: float, max_iters: int, stall_iters: int,
                  plateau_iters: int, stall_factor: float, plateau_ratio: float, lambda_a: float,
                  lambda_b: float) -> None:
        """The attempt's tests (as _descend_fast's) and the damping lambda_a err + lambda_b (b alone if a is 0);
        the step's own constants are CompiledStep.configure's."""
        d = self._d
        d.lin2, d.ang2, d.near, d.max_iters = lin2, ang2, near, max_iters
        d.stall_iters, d.plateau_iters = stall_iters, plateau_iters
        d.stall_factor, d.plateau_ratio = stall_factor, plateau_ratio
        d.lambda_a, d.lambda_b = lambda_a, lambda_b

    def run(self, q: np.ndarray, budget: float) -> tuple[int, int, float, float]:
        """One attempt on ``q`` (the full configuration; the group's joints move, in place) for at most ``budget``
        seconds (inf: none): (status, an index of DESCENT_STATUS; iterations; position and orientation
        errors at convergence)."""
        self.q[:] = q
        out = self.run_plain(budget)
        q[:] = self.q
        return out

    def run_plain(self, budget: float) -> tuple[int, int, float, float]:
        """:meth:`run` on :attr:`q` itself (the caller writes the start there and reads the answer); after
        :meth:`set_goal_pose`, NOT_FINITE (nothing run) if the goal or q has a nan or inf."""
        d, step = self._d, self.step
        if step.x is not self._x:  # (the step-by-step loops bind their own)
            step.bind(self._x)
        d.budget = budget
        status = self._descend(self._address)
        return status, d.iterations, d.position_error, d.orientation_error

    def set_bounds(self, bounds) -> None:
        """The collision bounds (collision_bounds.CollisionBounds, held) the kernel tests a converged q against
        (:attr:`free`), or None."""
        if bounds is not self.bounds:
            self.bounds = bounds
            self._d.bounds = None if bounds is None else bounds.address

    @property
    def free(self) -> bool:
        """After a converged run with bounds: True if the bounds prove the answer free of collision."""
        return bool(self._d.free)
