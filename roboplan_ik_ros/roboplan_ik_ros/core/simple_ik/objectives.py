"""SimpleIK objectives beyond a world frame pose: points on a link, a link axis, and goals relative to another link.

Klamp't's IKObjective family (``ik.objective(link, ref=..., local=..., world=...)``):

* :class:`PointGoal`: points ``p_link`` (link frame) onto target points (reference frame), 3 rows each;
* :class:`AxisGoal`: a unit axis ``a_link`` (link frame) along a unit direction (reference frame), 3 rows
  ``R a_link - d`` of rank 2 (rotation about the axis is free);
* ``relative_to``: the reference frame is another frame of the model, moving with q (None: the world),
  also on :class:`~roboplan_ik_ros.core.simple_ik.goals.FrameGoal`.

Each bound objective (``bind``) computes its stacked error ``e`` and its Jacobian ``de/dq`` (group v
columns) after ``computeJointJacobians`` and ``updateFramePlacements`` on the solver's data. With
``R_ref, t_ref`` the reference frame's world placement and ``w_ref, w_link`` the world angular velocities:

* point: ``e = R_ref^T (p_w - t_ref) - p_target``, ``p_w = t_link + R_link p_link``;
  ``de = R_ref^T (dp_w - dt_ref + [p_w - t_ref]x w_ref)``, ``dp_w = v_link - [R_link p_link]x w_link``
  (v, w of LOCAL_WORLD_ALIGNED Jacobians);
* axis: ``e = R_ref^T R_link a_link - d``; ``de = -R_ref^T [R_link a_link]x (w_link - w_ref)``;
* relative frame: ``e = log6(T_target^-1 T_ref^-1 T_link)``; ``de = Jlog6(T_err) (J_link - Ad(T_link^-1 T_ref) J_ref)``
  (LOCAL Jacobians).

test_simple_ik_objectives checks every Jacobian against finite differences.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from ..errors import InvalidInputError, check_positive

_LOCAL = pin.ReferenceFrame.LOCAL
_LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED


def _skew(v: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def as_points(value, name: str) -> np.ndarray:
    """value as an (n, 3) finite float array (one 3-vector or a list of them), or InvalidInputError."""
    try:
        a = np.array(value, dtype=float)
    except (TypeError, ValueError):
        a = None
    if a is not None and a.shape == (3,):
        a = a[None, :]
    if a is None or a.ndim != 2 or a.shape[1] != 3 or len(a) == 0 or not np.all(np.isfinite(a)):
        raise InvalidInputError(f"{name}: expected a 3-vector or a list of finite 3-vectors [m], got {value!r}")
    return a


def as_direction(value, name: str) -> np.ndarray:
    """value as a finite 3-vector of norm > 0, normalised, or InvalidInputError."""
    try:
        a = np.array(value, dtype=float)
    except (TypeError, ValueError):
        a = None
    if a is None or a.shape != (3,) or not np.all(np.isfinite(a)) or np.linalg.norm(a) < 1e-9:
        raise InvalidInputError(f"{name}: expected a finite nonzero 3-vector (a direction; normalised), got {value!r}")
    return a / np.linalg.norm(a)


@dataclass
class PointGoal:
    """Bring the points ``points_link`` (frame ``link_frame``'s coordinates [m]) onto ``points_target``
    (coordinates in ``relative_to``'s frame, the world's if None [m]); one 3-vector or a list of them
    (as many targets as points). ``weight`` (> 0) scales the objective's squared error; ``weights``
    (None: all 1) weighs the x, y, z components of each point's error in ``relative_to``'s frame (the
    world's if None), >= 0, not all 0: a 0 leaves that coordinate free (``[1, 1, 0]``: the point on a
    vertical line) and out of the convergence test."""

    link_frame: str
    points_link: object
    points_target: object
    relative_to: str | None = None
    weight: float = 1.0
    weights: Sequence[float] | None = None


@dataclass
class AxisGoal:
    """Align the unit axis ``axis_link`` (frame ``link_frame``'s coordinates) with the unit direction
    ``direction_target`` (in ``relative_to``'s frame, the world's if None); both normalised. 2 DOF: the
    rotation about the axis and the position stay free. ``weight`` (> 0) scales the squared error."""

    link_frame: str
    axis_link: object
    direction_target: object
    relative_to: str | None = None
    weight: float = 1.0


def check_objective_weight(w, name: str) -> float:
    return check_positive(w, name)


def check_axis_weights(w, name: str) -> np.ndarray:
    """w as 3 finite numbers >= 0, not all 0 (the x, y, z weights of a point's error), or InvalidInputError."""
    try:
        a = np.array(w, dtype=float)
        ok = a.shape == (3,) and not any(isinstance(x, (bool, np.bool_)) for x in w)
    except (TypeError, ValueError):
        a, ok = None, False
    if not ok or not np.all(np.isfinite(a)) or np.any(a < 0.0) or not np.any(a > 0.0):
        raise InvalidInputError(f"{name}: expected 3 finite numbers >= 0, not all 0 (weights of the point's x, y, z "
                                f"error in the reference frame; 0: that coordinate is free), got {w!r}")
    return a


class BoundObjective:
    """An objective with its frame ids resolved: ``rows`` error rows; ``compute`` fills e and J."""

    rows: int
    fid: int  # the link frame's id (the manipulability null-space term reads its Jacobian)
    sqrt_weights: np.ndarray  # per row, applied by the solver (W^1/2 e, W^1/2 J)

    def compute(self, model: pin.Model, data: pin.Data, vs, e: np.ndarray, J: np.ndarray) -> None:
        raise NotImplementedError

    def errors(self, e: np.ndarray) -> tuple[float, float]:
        """(position [m], orientation [rad]) errors from this objective's (unweighted) rows e, components
        with a zero weight left out (the convergence test)."""
        raise NotImplementedError

    def true_errors(self, e: np.ndarray) -> tuple[float, float]:
        """The errors reported in IKResult: every component, the free ones included (as the world
        FrameGoal loops report them)."""
        return self.errors(e)


class _BoundPoints(BoundObjective):
    def __init__(self, fid: int, ref: int | None, p_link: np.ndarray, p_target: np.ndarray, weight: float,
                 axis_weights: np.ndarray | None = None):
        self.fid, self.ref, self.p_link, self.p_target = fid, ref, p_link, p_target
        self.rows = 3 * len(p_link)
        w = np.ones(3) if axis_weights is None else axis_weights
        self.sqrt_weights = np.tile(np.sqrt(weight * w), len(p_link))
        self.mask = None if axis_weights is None or np.all(w > 0.0) else (w > 0.0).astype(float)

    def compute(self, model, data, vs, e, J) -> None:
        T = data.oMf[self.fid]
        Jl = pin.getFrameJacobian(model, data, self.fid, _LWA)[:, vs]
        if self.ref is not None:
            Tr = data.oMf[self.ref]
            Rr_T, tr = Tr.rotation.T, Tr.translation
            Jr = pin.getFrameJacobian(model, data, self.ref, _LWA)[:, vs]
        for i, (pl, pt) in enumerate(zip(self.p_link, self.p_target)):
            r = T.rotation @ pl
            p_w = T.translation + r
            Jp = Jl[:3] - _skew(r) @ Jl[3:]  # dp_w/dq
            rows = slice(3 * i, 3 * i + 3)
            if self.ref is None:
                e[rows] = p_w - pt
                J[rows] = Jp
            else:
                d = p_w - tr
                e[rows] = Rr_T @ d - pt
                J[rows] = Rr_T @ (Jp - Jr[:3] + _skew(d) @ Jr[3:])

    def errors(self, e) -> tuple[float, float]:
        if self.mask is None and self.rows == 3:  # one point (the common case): no temporaries
            return math.sqrt(float(e.dot(e))), 0.0
        e3 = e.reshape(-1, 3) if self.mask is None else e.reshape(-1, 3) * self.mask
        return math.sqrt(float(np.max(np.einsum("ij,ij->i", e3, e3)))), 0.0

    def true_errors(self, e) -> tuple[float, float]:
        e3 = e.reshape(-1, 3)
        return math.sqrt(float(np.max(np.einsum("ij,ij->i", e3, e3)))), 0.0


class _BoundAxis(BoundObjective):
    rows = 3

    def __init__(self, fid: int, ref: int | None, a_link: np.ndarray, d_target: np.ndarray, weight: float):
        self.fid, self.ref, self.a_link, self.d_target = fid, ref, a_link, d_target
        self._d = tuple(float(x) for x in d_target)
        self.sqrt_weights = np.full(3, math.sqrt(weight))

    def compute(self, model, data, vs, e, J) -> None:
        a_w = data.oMf[self.fid].rotation @ self.a_link
        Jw = pin.getFrameJacobian(model, data, self.fid, _LWA)[3:, vs]
        if self.ref is None:
            e[:] = a_w - self.d_target
            J[:] = -_skew(a_w) @ Jw
        else:
            Rr_T = data.oMf[self.ref].rotation.T
            Jw = Jw - pin.getFrameJacobian(model, data, self.ref, _LWA)[3:, vs]
            e[:] = Rr_T @ a_w - self.d_target
            J[:] = -Rr_T @ _skew(a_w) @ Jw

    def errors(self, e) -> tuple[float, float]:
        # the angle between the axis in the reference frame (unit), a = e + d, and d: atan2(|a x d|, a.d),
        # in floats (np.cross costs ~30 us per call on these 3-vectors, most of an iteration)
        d0, d1, d2 = self._d
        e0, e1, e2 = e.tolist()
        a0, a1, a2 = e0 + d0, e1 + d1, e2 + d2
        c0, c1, c2 = a1 * d2 - a2 * d1, a2 * d0 - a0 * d2, a0 * d1 - a1 * d0
        return 0.0, math.atan2(math.sqrt(c0 * c0 + c1 * c1 + c2 * c2), a0 * d0 + a1 * d1 + a2 * d2)


class _BoundFrame(BoundObjective):
    """A FrameGoal relative to another frame (the world's FrameGoals take the solver's own loops)."""

    rows = 6

    def __init__(self, fid: int, ref: int | None, T_target_inv: pin.SE3, weights: Sequence[float]):
        self.fid, self.ref, self.Tinv = fid, ref, T_target_inv
        w = np.asarray(weights, dtype=float)
        self.sqrt_weights = np.sqrt(w)
        self.mask = (w > 0.0).astype(float)
        self.translation_full = bool(np.all(w[:3] > 0.0))
        self._T_err = pin.SE3.Identity()

    def compute(self, model, data, vs, e, J) -> None:
        T = data.oMf[self.fid]
        Jl = pin.getFrameJacobian(model, data, self.fid, _LOCAL)[:, vs]
        if self.ref is None:
            T_rel, Jrel = T, Jl
        else:
            Tr = data.oMf[self.ref]
            T_rel = Tr.actInv(T)
            Jr = pin.getFrameJacobian(model, data, self.ref, _LOCAL)[:, vs]
            Jrel = Jl - T.actInv(Tr).toActionMatrix() @ Jr
        self._T_err = T_err = self.Tinv * T_rel
        e[:] = pin.log6(T_err).vector
        J[:] = pin.Jlog6(T_err) @ Jrel
        self._t = T_err.translation.copy()

    def errors(self, e) -> tuple[float, float]:
        em = e * self.mask
        p = float(np.linalg.norm(self._t)) if self.translation_full else float(np.linalg.norm(em[:3]))
        return p, float(np.linalg.norm(em[3:]))

    def true_errors(self, e) -> tuple[float, float]:
        return float(np.linalg.norm(self._t)), float(np.linalg.norm(e[3:]))  # |t|, |log3(R_err)|


def bind(goal, k: int | str, frame_id, default_weights: Sequence[float], inverse_target) -> BoundObjective:
    """goal ``k`` (PointGoal, AxisGoal or a FrameGoal; ``k`` its index in ``goals`` or its label, e.g.
    ``"objectives[0]"``) with its frames resolved by ``frame_id(name)`` (raises for unknown frames);
    InvalidInputError names the bad field (``goals[2].relative_to: unknown frame ...``)."""
    name = f"goals[{k}]" if not isinstance(k, str) else k

    def resolve(frame, field_name: str) -> int:
        try:
            return frame_id(frame)
        except InvalidInputError as exc:
            raise InvalidInputError(f"{name}.{field_name}: {exc}") from None

    ref = None if goal.relative_to is None else resolve(goal.relative_to, "relative_to")
    if isinstance(goal, PointGoal):
        p_link = as_points(goal.points_link, f"{name}.points_link")
        p_target = as_points(goal.points_target, f"{name}.points_target")
        if len(p_link) != len(p_target):
            raise InvalidInputError(f"{name}.points_target: expected {len(p_link)} points (one per points_link), "
                                    f"got {len(p_target)}")
        axis_weights = None if goal.weights is None else check_axis_weights(goal.weights, f"{name}.weights")
        return _BoundPoints(resolve(goal.link_frame, "link_frame"), ref, p_link, p_target,
                            check_objective_weight(goal.weight, f"{name}.weight"), axis_weights)
    if isinstance(goal, AxisGoal):
        return _BoundAxis(resolve(goal.link_frame, "link_frame"), ref, as_direction(goal.axis_link, f"{name}.axis_link"),
                          as_direction(goal.direction_target, f"{name}.direction_target"),
                          check_objective_weight(goal.weight, f"{name}.weight"))
    w = default_weights if goal.weights is None else goal.weights
    return _BoundFrame(resolve(goal.tip_frame, "tip_frame"), ref, inverse_target(goal.T_world_tip, k), w)
