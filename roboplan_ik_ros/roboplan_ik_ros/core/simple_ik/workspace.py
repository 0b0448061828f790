"""Workspace: SimpleIK's per-(group, goals) buffers, limits and index views, built once and reused across solves."""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
from scipy.linalg.blas import dgemv

from ..model.joint_group import JointGroup
from ..model.scene import Scene
from . import compiled_step as compiled_kernel
from .active_set import CLAMP_ROUNDS, clamped_step
from .compiled_step import CompiledDescent, CompiledStep
from .null_space import Manipulability


class Workspace:
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
        self._weights_list: list | None = None  # the last list given to set_weights (a copy)
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
        self.clamped, self.free, self.d_c = np.empty(nv), np.empty(nv), np.empty(nv)  # clamped_step's buffers
        self.inside, self.Jf = np.empty(nv), np.empty((m, nv))
        self._compiled: CompiledStep | None = None  # compiled_step()
        self._descents: dict[int, CompiledDescent | None] = {}  # compiled_descent(), per tip frame
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
        use = compiled_kernel.USE_COMPILED_STEP
        if self._compiled is None and use and compiled_kernel.load_step_kernel()[0] is not None:
            self._compiled = CompiledStep(len(self.e), self.nv, CLAMP_ROUNDS)
        return self._compiled if use else None

    def compiled_descent(self, model: pin.Model, fid: int) -> CompiledDescent | None:
        """Whole attempts in C for tip frame ``fid`` on this workspace's step (the fast path's workspaces: one
        goal, contiguous scalar joints), built once per frame; None without the kernel or for a chain it
        does not compute (CompiledDescent.for_frame)."""
        if not compiled_kernel.USE_COMPILED_DESCENT or self.qs is None or len(self.e) != 6:
            return None
        descent = self._descents.get(fid, 0)
        if descent == 0:
            step = self.compiled_step()
            descent = None if step is None else CompiledDescent.for_frame(step, model, fid, self.qs, self.vs.start)
            self._descents[fid] = descent
        return descent if descent is None or compiled_kernel.USE_COMPILED_STEP else None

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
        limit coordinates x_v (start_attempt): the active set of clamped_step (clamp) or a clip, as the
        fast path does on q itself; continuous joints integrate (cos, sin)."""
        x, t = self.x_v, self.x_next
        np.add(x, dq, out=t)
        if self.limited and self.margin(t) < 0.0:
            if clamp:
                clamped_step(x, t, J, e, neg_step, self.lo, self.hi, max_step, self)
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
        if type(weights) is list and weights == self._weights_list:  # the options' 6, unchanged (every solve)
            return
        key = tuple(float(x) for x in np.ravel(weights))
        flat = type(weights) is list and len(weights) == 6 and all(type(x) in (float, int) for x in weights)
        self._weights_list = list(weights) if flat else None
        if key != self.weights:
            w = np.asarray(key)
            w = np.tile(w, len(self.sw) // 6) if len(w) == 6 else w
            self.sw[:] = np.sqrt(w)
            self.mask[:] = w > 0.0
            self.weighted, self.masked = bool(np.any(w != 1.0)), bool(np.any(w == 0.0))
            self.translation_full = [bool(np.all(w[6 * k : 6 * k + 3] > 0.0)) for k in range(len(w) // 6)]
            self.weights = key

    def forget_weights(self) -> None:
        """sw was overwritten (objectives' own row weights): the next set_weights refills it."""
        self.weights = self._weights_list = None

    def set_damping(self, damping: float) -> None:
        if damping != self.damping:
            self.D[np.diag_indices_from(self.D)] = damping
            self.damping = damping

    def random_configuration(self, rng: np.random.Generator, q_ref: np.ndarray,
                             out: np.ndarray | None = None) -> np.ndarray:
        """Uniform in the limits (one turn for wider revolute joints), an angle in [-pi, pi] if unbounded: a new
        array, or ``out`` (the same draws)."""
        if out is None:
            q = q_ref.copy()
        else:
            q = out
            q[:] = q_ref
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
