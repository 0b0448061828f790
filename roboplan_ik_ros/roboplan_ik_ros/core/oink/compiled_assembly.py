"""The compiled assembly of an OInK step: kernel/oink_kernel.c, loaded with ctypes.

One C call per step (``oink_step``) does what the numpy path of :mod:`solver` does in ~100 small numpy calls: the
nullspace projectors, H and c, the rows of every barrier that uses :class:`Barrier`'s own
``constraint``/``regularization_weight``/``safe_displacement``, the box of the box limits, and the
unconstrained shortcut ``-H^{-1} c`` with its feasibility check over every row; then, when the shortcut does not
apply and the kernel has DAQP built in, the QP (:mod:`compiled_qp`). Tasks, limits and
barriers stay Python objects that fill their arrays in place (``Task.update``, ``Barrier.update``,
``Limit.bounds``): a new type is a Python file, with no change here. Objects of exactly FrameTask and
PositionBarrier (not subclasses) are updated by the kernel itself from pinocchio's Data (joint
Jacobians and frame placements read in place), with the formulas of their update() (tested equal,
including log3 near 0 and pi); FrameTask still handles a missing target in Python. The kernel reads those arrays
through pointers taken once per layout; :meth:`CompiledAssembly.refresh` checks every step that each
object still holds the same arrays (and copies its scalars: gains, damping, margins), so an object
that swaps an array makes the solver rebuild the layout instead of reading freed memory.

The library is built with the package (setup.py: ``roboplan_ik_ros.core.oink._oink_kernel``, a plain
shared library with no Python API). Without it (no C compiler at install time), :func:`load_kernel`
says why and OInK runs the numpy path: the same math, slower (tests run both against each other and
against the seed's formulas).
"""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..compiled_library import check_layout, library_path, load_library
from .compiled_qp import CompiledQp, QpFunctions, _KernelQp, bind_qp

if TYPE_CHECKING:
    from .barriers.barrier import Barrier
    from .limits.limit import Limit
    from .tasks.task import Task

_LIBRARY_STEM = "_oink_kernel"
LAYOUT_VERSION = 6  # oink_kernel.c's oink_layout_version(): the structs below and the parameter arrays

# Return codes of oink_assemble and oink_step (see oink_kernel.c; oink_step's QP codes: compiled_qp.py).
SHORTCUT_FEASIBLE = 0
NEEDS_QP = 1
VIOLATED_BARRIER = 2
H_NOT_PD = -1
NULLSPACE_NOT_PD = -2

_p = ctypes.c_void_p
_i64 = ctypes.c_int64
_f64 = ctypes.c_double


class _FrameRef(ctypes.Structure):
    _fields_ = [("J_world", _p), ("J_row_stride", _i64), ("J_col_stride", _i64), ("p", _p), ("p_stride", _i64),
                ("R", _p), ("R_row_stride", _i64), ("R_col_stride", _i64), ("columns", _p), ("support", _p)]


class _FrameTask(ctypes.Structure):
    _fields_ = [("frame", _FrameRef), ("p_target", _p), ("R_target", _p), ("max_error", _p), ("J", _p), ("e", _p),
                ("norms", _p)]


class _FramePositionBarrier(ctypes.Structure):
    _fields_ = [("frame", _FrameRef), ("rows", _i64), ("select", _p), ("offset", _p), ("h", _p), ("J", _p)]


class _KernelProblem(ctypes.Structure):
    """Mirror of ``oink_problem`` in oink_kernel.c (same field order)."""

    _fields_ = [
        ("n", _i64), ("n_tasks", _i64), ("n_levels", _i64), ("n_barriers", _i64), ("n_box", _i64), ("n_K", _i64),
        ("shortcut", _i64),
        ("level_end", _p), ("task_rows", _p), ("task_J", _p), ("task_e", _p), ("task_w", _p), ("task_params", _p),
        ("A", _p), ("b", _p), ("J_above", _p), ("JJt", _p), ("X", _p), ("N", _p), ("H", _p), ("c", _p), ("L", _p),
        ("regularization", _f64), ("extra_diagonal", _f64), ("c_offset", _p),
        ("barrier_rows", _p), ("barrier_h", _p), ("barrier_J", _p), ("barrier_G", _p), ("barrier_upper", _p),
        ("barrier_params", _p), ("barrier_weight", _p),
        ("box_lower", _p), ("box_upper", _p), ("lower", _p), ("upper", _p), ("negative_lower", _p),
        ("K", _p), ("d", _p), ("Kdq", _p), ("dq", _p), ("summary", _p),
        ("n_frame_tasks", _i64), ("frame_tasks", _p), ("n_frame_barriers", _i64), ("frame_barriers", _p),
        ("frame_J", _p), ("barrier_braking", _p), ("weighted_nullspace", _i64), ("qp", _p),
    ]


def _strides(a: np.ndarray) -> tuple[int, ...]:
    return tuple(s // a.itemsize for s in a.strides)


def native_form(obj) -> str:
    """The form the kernel updates ``obj`` in (``native_form`` in its class's own body: "frame_task",
    "position_barrier"), or "" (a subclass, which may change update(), does not inherit it; nor does a
    task with excluded joints, whose Jacobian columns the solver zeroes in Python after its update)."""
    if getattr(obj, "excluded", None) is not None:
        return ""
    return type(obj).__dict__.get("native_form", "")


class _NativeFrames:
    """FrameTask and PositionBarrier objects (exact types: a subclass may change update()) that the
    kernel updates itself, reading pinocchio's Data in place: the same formulas as their update()
    (tested against it). Holds every array the kernel reads."""

    def __init__(self, oink, tasks, barriers) -> None:
        self.scene, data, n = oink.scene, oink.data, oink.nv
        self.tasks = [t for t in tasks if native_form(t) == "frame_task"]
        self.barriers = [b for b in barriers if native_form(b) == "position_barrier"]
        self._keep = []  # pinocchio views and support masks the kernel points at
        self._task_arrays, self._barrier_arrays = [], []  # the objects' arrays it points at (refresh() checks them)
        self._J_world = data.J  # a view of Data's joint Jacobians: follows every kinematics call
        self._columns = np.ascontiguousarray(oink.group.v_indices, dtype=np.int64)
        self.task_params = [np.zeros(2) for _ in self.tasks]  # max_position_error, max_rotation_error
        self.task_structs = (_FrameTask * max(len(self.tasks), 1))()
        for k, t in enumerate(self.tasks):
            s = self.task_structs[k]
            self._frame(s.frame, data, t.frame_id)
            s.p_target, s.R_target = t.p_target.ctypes.data, t.R_target.ctypes.data
            s.max_error, s.J, s.e, s.norms = (self.task_params[k].ctypes.data, t.jacobian.ctypes.data,
                                              t.error.ctypes.data, t.norms.ctypes.data)
            self._task_arrays.append((t.jacobian, t.error, t.norms, t.p_target, t.R_target))
        self.barrier_structs = (_FramePositionBarrier * max(len(self.barriers), 1))()
        for k, b in enumerate(self.barriers):
            s = self.barrier_structs[k]
            self._frame(s.frame, data, b.frame_id)
            select, offset = b.select, b.offset
            if not (_usable(select, (b.size, 3)) and _usable(offset, (b.size,))):
                raise ValueError(f"{b.name}: select/offset must be C-contiguous float64 arrays")
            self._barrier_arrays.append((select, offset, b.value, b.jacobian))
            s.rows, s.select, s.offset, s.h, s.J = (b.size, select.ctypes.data, offset.ctypes.data,
                                                    b.value.ctypes.data, b.jacobian.ctypes.data)
        self.frame_J = np.zeros((6, n))

    def _frame(self, ref: _FrameRef, data, frame_id: int) -> None:
        placement = data.oMf[frame_id]
        p, R, J = placement.translation, placement.rotation, self._J_world
        support = self.scene.support_mask(self.scene.model.frames[frame_id].parentJoint)[self._columns]
        ref.J_world, (ref.J_row_stride, ref.J_col_stride) = J.ctypes.data, _strides(J)
        ref.p, (ref.p_stride,) = p.ctypes.data, _strides(p)
        ref.R, (ref.R_row_stride, ref.R_col_stride) = R.ctypes.data, _strides(R)
        ref.columns, ref.support = self._columns.ctypes.data, support.ctypes.data
        self._keep += [p, R, support]

    def refresh(self) -> bool:
        """Copy the tasks' saturation limits; False if an object swapped an array the kernel reads or a
        task now excludes joints (then it is updated in Python: the layout is rebuilt)."""
        for t, params, held in zip(self.tasks, self.task_params, self._task_arrays):
            if (t.jacobian is not held[0] or t.error is not held[1] or t.norms is not held[2]
                    or t.p_target is not held[3] or t.R_target is not held[4]
                    or t.excluded is not None):
                return False
            params[0] = t.max_position_error
            params[1] = t.max_rotation_error
        for b, held in zip(self.barriers, self._barrier_arrays):
            if b.select is not held[0] or b.offset is not held[1] or b.value is not held[2] or b.jacobian is not held[3]:
                return False
        return True


_kernel = None
_kernel_error = ""


def _library_path() -> Path | None:
    return library_path(Path(__file__).resolve().parent, _LIBRARY_STEM)


def _bind(lib: ctypes.CDLL):
    version = lib.oink_layout_version  # AttributeError (refused: a build older than the versions) if missing
    version.restype = ctypes.c_int64
    if version() != LAYOUT_VERSION:
        raise AttributeError(f"layout version {version()} of a stale build, expected {LAYOUT_VERSION} "
                             "(rebuild: setup.py build_ext --inplace)")
    check_layout(lib, "oink_layout", LAYOUT_STRUCTS)
    fn = lib.oink_step
    fn.argtypes = [ctypes.c_void_p]
    fn.restype = ctypes.c_int
    return fn


def load_kernel():
    """(the ctypes function oink_step, "") or (None, why it is not available)."""
    global _kernel, _kernel_error
    if _kernel is None and not _kernel_error:
        _kernel, _kernel_error = load_library(_library_path(), _LIBRARY_STEM, _bind, "OInK uses its numpy assembly",
                                              keep_gil=True)  # a call of the tick (microseconds)
    return _kernel, _kernel_error


class AccelerationBox(ctypes.Structure):
    """Mirror of ``accel_box`` in oink_kernel.c (AccelerationLimit's box, in command increments)."""

    _fields_ = [("n", _i64), ("has_jerk", _i64), ("bisection_steps", _i64), ("round_off", _f64),
                ("u1", _p), ("u2", _p), ("alpha", _p), ("delta", _p), ("V", _p), ("E", _p),
                ("d_up", _p), ("d_lo", _p), ("lo", _p), ("hi", _p)]


class AccelerationBounds(ctypes.Structure):
    """Mirror of ``accel_bounds`` in oink_kernel.c (AccelerationLimit.bounds around its box)."""

    _fields_ = [("n_bounded", _i64), ("bq_q", _p), ("bq_v", _p), ("q_min", _p), ("q_max", _p), ("offset", _p),
                ("d_up", _p), ("d_lo", _p), ("room_up", _p), ("room_lo", _p), ("lower", _p), ("upper", _p)]


# The ctypes mirrors of oink_kernel.c's structs, in its order (check_layout compares them with the build)
LAYOUT_STRUCTS = (_FrameRef, _FrameTask, _FramePositionBarrier, _KernelQp, _KernelProblem, AccelerationBox,
                  AccelerationBounds)

_acceleration_box = None


def load_acceleration_box():
    """The kernel's ``oink_acceleration_box`` (ctypes, one AccelerationBox pointer in, the number of
    non-viable joints out) and ``oink_acceleration_bounds`` (AccelerationBox, AccelerationBounds and q pointers in,
    the same count out), or None without the kernel (AccelerationLimit then uses numpy)."""
    global _acceleration_box
    if _acceleration_box is None:

        def bind(lib: ctypes.CDLL):
            _bind(lib)  # the same checks (layout version, struct layout) as the assembly's
            box, bounds = lib.oink_acceleration_box, lib.oink_acceleration_bounds
            box.argtypes, box.restype = [ctypes.c_void_p], ctypes.c_int64
            bounds.argtypes, bounds.restype = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p], ctypes.c_int64
            return box, bounds

        fn, _ = load_library(_library_path(), _LIBRARY_STEM, bind, "AccelerationLimit uses numpy", keep_gil=True)
        _acceleration_box = fn or False
    return _acceleration_box or None


_qp_functions: QpFunctions | None = None
_qp_error = ""
NO_DAQP = ("{stem} was built without DAQP's C sources (make bootstrap fetches them into build/daqp-<version>: "
           "scripts/fetch_daqp_sources.sh; or set $ROBOPLAN_DAQP_SOURCES and rebuild); the QP runs in the daqp "
           "Python module (same results, slower)")


def load_qp() -> tuple[QpFunctions | None, str]:
    """(the kernel's QP functions, "") or (None, why the daqp Python module solves the QP): no kernel, or a kernel
    built without DAQP's C sources."""
    global _qp_functions, _qp_error
    if _qp_functions is None and not _qp_error:

        def bind(lib: ctypes.CDLL) -> QpFunctions:
            _bind(lib)  # the same checks (layout version, struct layout) as the assembly's
            return bind_qp(lib)

        functions, why = load_library(_library_path(), _LIBRARY_STEM, bind, "the QP runs in the daqp Python module",
                                      keep_gil=True)  # as the assembly's (the same call of the tick)
        if functions is not None and not functions.available():
            functions, why = None, NO_DAQP.format(stem=_LIBRARY_STEM)
        _qp_functions, _qp_error = functions, why
    return _qp_functions, _qp_error


def _usable(a: np.ndarray, shape: tuple) -> bool:
    return isinstance(a, np.ndarray) and a.dtype == np.float64 and a.flags.c_contiguous and a.shape == shape


def _pointers(arrays) -> np.ndarray:
    return np.array([a.ctypes.data for a in arrays], dtype=np.uintp)


class CompiledAssembly:
    """The kernel's view of one solver layout. Build with :meth:`build` (None when some object's
    arrays do not suit the kernel: then the numpy path serves that layout)."""

    @classmethod
    def build(cls, fn, n: int, levels, nullspace_rows: int, K: np.ndarray, d: np.ndarray, box: list[Limit],
              box_arrays, barriers: list[Barrier], outputs: dict, oink=None,
              all_barriers: list[Barrier] = (), barrier_braking: np.ndarray | None = None,
              weighted_nullspace: bool = False, qp: CompiledQp | None = None) -> CompiledAssembly | None:
        tasks = [t for level in levels for t in level]
        for t in tasks:
            m = len(t.error)
            if not (_usable(t.jacobian, (m, n)) and _usable(t.error, (m,)) and _usable(t.sqrt_weight, (m,))):
                return None
        for b in barriers:
            if not (_usable(b.value, (b.size,)) and _usable(b.jacobian, (b.size, n)) and _usable(b.G, (b.size, n))
                    and _usable(b.upper, (b.size,))):
                return None
        for lo, up in box_arrays:
            if not (_usable(lo, (n,)) and _usable(up, (n,))):
                return None
        for name, a in outputs.items():
            if not isinstance(a, np.ndarray) or a.dtype != np.float64 or not a.flags.c_contiguous:
                raise ValueError(f"kernel output {name} must be a C-contiguous float64 array")
        native = _NativeFrames(oink, tasks, all_barriers) if oink is not None else None
        return cls(fn, n, levels, tasks, nullspace_rows, K, d, box, box_arrays, barriers, outputs, native,
                   barrier_braking, weighted_nullspace, qp)

    def __init__(self, fn, n, levels, tasks, nullspace_rows, K, d, box, box_arrays, barriers, outputs,
                 native: _NativeFrames | None = None, barrier_braking: np.ndarray | None = None,
                 weighted_nullspace: bool = False, qp: CompiledQp | None = None) -> None:
        self._fn = fn
        self.qp = qp  # the layout's QP, which oink_step solves when asked (run's solve_qp) and the shortcut fails
        # (1 + n): lag steps (< 0: off) and per-joint braking alpha of the barrier rows (Oink.barrier_braking)
        if barrier_braking is None:
            barrier_braking = np.concatenate([[-1.0], np.zeros(n)])
        if not _usable(barrier_braking, (n + 1,)):
            raise ValueError("barrier_braking must be a C-contiguous float64 array of 1 + n values")
        self._barrier_braking = barrier_braking
        self.native = native
        native_ids = {id(o) for o in (native.tasks + native.barriers)} if native else set()
        self.tasks = tasks
        self.python_tasks = [t for t in tasks if id(t) not in native_ids]  # updated in Python each step
        self.barriers = barriers
        self.updated_barriers = [b for b in barriers if id(b) not in native_ids]  # updated in Python each step
        self.frame_tasks = native.tasks if native else []
        self.box = box
        # What the kernel points at, held here so that it outlives the layout's use of it.
        self._task_arrays = [(t, t.jacobian, t.error, t.sqrt_weight) for t in tasks]
        self._barrier_arrays = [(b, b.value, b.jacobian, b.G, b.upper) for b in barriers]
        self._box_arrays = [list(pair) for pair in box_arrays]  # the arrays the kernel reads, per box limit
        self._box_stage = [(np.zeros(n), np.zeros(n)) for _ in box]  # for a limit that returns other arrays
        rows_above = max(nullspace_rows, 1)
        self._level_end = np.cumsum([len(level) for level in levels]).astype(np.int64)
        self._task_rows = np.array([len(t.error) for t in tasks], dtype=np.int64)
        self._task_ptrs = [_pointers(col) for col in zip(*[(J, e, w) for _, J, e, w in self._task_arrays])] \
            if tasks else [np.zeros(0, np.uintp)] * 3
        self.task_params = np.zeros(2 * max(len(tasks), 1))
        self._J_above = np.zeros((rows_above, n))
        self._JJt = np.zeros((rows_above, rows_above))
        self._X = np.zeros((rows_above, n))
        self._N = np.zeros((n, n))
        self._L = np.zeros((n, n))
        self.c_offset = np.zeros(n)
        self._barrier_rows = np.array([b.size for b in barriers] or [0], dtype=np.int64)
        if barriers:
            self._barrier_ptrs = [_pointers(col) for col in zip(*[arrs[1:] for arrs in self._barrier_arrays])]
        else:
            self._barrier_ptrs = [np.zeros(1, np.uintp)] * 4
        self.barrier_params = np.zeros(5 * max(len(barriers), 1))
        self.barrier_weight = np.zeros(max(len(barriers), 1))
        self._box_ptrs = [_pointers(col) for col in zip(*self._box_arrays)] if box else [np.zeros(1, np.uintp)] * 2
        self.summary = np.array([np.inf, 0.0])  # least barrier bound, box conflict (1.0) of the last run
        self._outputs = outputs  # H, c, A, b, lower, upper, negative_lower, Kdq, dq: the solver's buffers
        self._K, self._d = K, d
        o = outputs
        self.problem = _KernelProblem(
            n=n, n_tasks=len(tasks), n_levels=len(levels), n_barriers=len(barriers), n_box=len(box), n_K=len(K),
            shortcut=1,
            level_end=self._level_end.ctypes.data, task_rows=self._task_rows.ctypes.data,
            task_J=self._task_ptrs[0].ctypes.data, task_e=self._task_ptrs[1].ctypes.data,
            task_w=self._task_ptrs[2].ctypes.data, task_params=self.task_params.ctypes.data,
            A=o["A"].ctypes.data, b=o["b"].ctypes.data, J_above=self._J_above.ctypes.data,
            JJt=self._JJt.ctypes.data, X=self._X.ctypes.data, N=self._N.ctypes.data,
            H=o["H"].ctypes.data, c=o["c"].ctypes.data, L=self._L.ctypes.data,
            regularization=0.0, extra_diagonal=0.0, c_offset=self.c_offset.ctypes.data,
            barrier_rows=self._barrier_rows.ctypes.data,
            barrier_h=self._barrier_ptrs[0].ctypes.data, barrier_J=self._barrier_ptrs[1].ctypes.data,
            barrier_G=self._barrier_ptrs[2].ctypes.data, barrier_upper=self._barrier_ptrs[3].ctypes.data,
            barrier_params=self.barrier_params.ctypes.data, barrier_weight=self.barrier_weight.ctypes.data,
            box_lower=self._box_ptrs[0].ctypes.data, box_upper=self._box_ptrs[1].ctypes.data,
            lower=o["lower"].ctypes.data, upper=o["upper"].ctypes.data,
            negative_lower=o["negative_lower"].ctypes.data,
            K=K.ctypes.data, d=d.ctypes.data, Kdq=o["Kdq"].ctypes.data, dq=o["dq"].ctypes.data,
            summary=self.summary.ctypes.data,
            n_frame_tasks=len(native.tasks) if native else 0,
            frame_tasks=ctypes.addressof(native.task_structs) if native else None,
            n_frame_barriers=len(native.barriers) if native else 0,
            frame_barriers=ctypes.addressof(native.barrier_structs) if native else None,
            frame_J=native.frame_J.ctypes.data if native else None,
            barrier_braking=barrier_braking.ctypes.data,
            weighted_nullspace=int(bool(weighted_nullspace)),
            qp=None,
        )
        self._address = ctypes.addressof(self.problem)

    def refresh(self) -> bool:
        """Copy the objects' scalars for this step; False if an object no longer holds the arrays the
        kernel points at (rebuild the layout)."""
        params = self.task_params
        i = 0
        for t, J, e, w in self._task_arrays:
            if t.jacobian is not J or t.error is not e or t.sqrt_weight is not w:
                return False
            params[i] = t.task_gain
            params[i + 1] = t.lm_damping
            i += 2
        params = self.barrier_params
        i = 0
        for b, h, J, G, up in self._barrier_arrays:
            if b.value is not h or b.jacobian is not J or b.G is not G or b.upper is not up:
                return False
            params[i] = b.dt * b.gain
            params[i + 1] = b.safety_margin
            params[i + 2] = b.safe_displacement_gain
            fade, cap = b.safe_displacement_fade, b.safe_displacement_max_weight
            params[i + 3] = 0.0 if fade is None else fade
            params[i + 4] = np.inf if cap is None else cap
            i += 5
        return self.native is None or self.native.refresh()

    def set_box_bounds(self, k: int, lower: np.ndarray, upper: np.ndarray) -> None:
        """The bounds box limit k returned this step: read in place when they are the arrays the kernel
        points at, else copied into staging arrays that it then points at (raises ValueError on a bad shape)."""
        held = self._box_arrays[k]
        if lower is held[0] and upper is held[1]:
            return
        stage = self._box_stage[k]
        np.copyto(stage[0], lower)
        np.copyto(stage[1], upper)
        if held[0] is not stage[0]:
            held[0], held[1] = stage
            self._box_ptrs[0][k] = stage[0].ctypes.data
            self._box_ptrs[1][k] = stage[1].ctypes.data

    def run(self, regularization: float, extra_diagonal: float, shortcut: bool, solve_qp: bool = False) -> int:
        """One assembly (after the tasks, barriers and box limits were updated at q); with ``solve_qp`` (and a
        layout QP) also the QP when the assembly needs one. A return code above or compiled_qp's."""
        p = self.problem
        p.regularization = regularization
        p.extra_diagonal = extra_diagonal
        p.shortcut = shortcut
        p.qp = self.qp.address if solve_qp and self.qp is not None else None
        return self._fn(self._address)
