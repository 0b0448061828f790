"""The barrier check of one step: q ⊕ dq against every barrier's rows, by forward kinematics (``Oink``'s
``enforce_barriers``, ``correct_step`` and ``step_margin``; the math: docs/formulation.md, ``enforce_barriers``).

The QP keeps each row to first order; what the linearization misses (a normal turning over an edge, a witness
point jumping between corners, a cloud's nearest cell changing under a link) is checked here at the step's end:
a row that holds may end at most the tolerance outside its safe set, a violated one may not get deeper but by
_RECOVERY_SLIP, and a pair that was not tracked may not end inside d_min. A step that fails is shortened, then
corrected (as SQP's second-order correction), else refused.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pinocchio as pin

from .barriers.barrier import _MIN_JACOBIAN_NORM2, Barrier

_STEP_SCALES = (0.5, 0.25, 0.125)  # enforce_barriers: the shorter steps tried when a step fails its check
_CORRECTIONS = 2  # enforce_barriers: second-order corrections tried once no shorter step passes
_CORRECTION_MARGIN = 1e-7  # [m] a corrected row aims this far above its floor (what the linearization misses)
# [m] a row at its tolerance boundary may cross it by this much: what the linearization misses of a step that
# holds it to first order (1e-10 to 4.5e-9 m measured on a workspace box's face); without it every step of an arm
# resting on the face at h = -tolerance was refused, and the hold braked along the path, unchecked
_BOUNDARY_SLIP = 1e-8
_RECOVERY_SLIP = 1e-5  # [m] a row violated at q may get worse by this much per step: the distance between convex hulls is only piecewise smooth (a recovery step that holds a row to first order was measured to lose 7.5e-6 m)


class BarrierCheck:
    """The barrier check, a part of :class:`~.solver.Oink` (its base class): it reads the solver's kinematics
    buffers (``scene``, ``data``, ``geom_data``), the group's columns (``_v_columns``), the last solve's box
    (``_layout``) and ``boundary_tolerance``, and counts ``shortened_steps`` and ``corrected_steps``."""

    def enforce_barriers(
        self, q: np.ndarray, dq_full: np.ndarray, barriers: Sequence[Barrier], tolerance: float = 1e-4
    ) -> bool:
        """Forward-kinematics check of q ⊕ dq_full against every barrier's rows of the last solve.

        A row that holds at q (h >= -tolerance) may end at most ``tolerance`` outside its safe set; a row
        violated by more than that at q may get worse by at most _RECOVERY_SLIP (1e-5 m) per step: a
        recovery step moves it back to first order, so the violation never creeps deeper, step after
        step. When the step fails the check, shorter steps are tried (each clipped into the box limits:
        the step stays within the velocity and acceleration bounds): the check fails on what the
        linearization misses (a normal turning over an edge, a witness point jumping between corners),
        which shrinks with the square of the step. When no shorter step passes either, the step is corrected
        (:meth:`_correct_step`): a row that the linearization let through at first order (a cloud's nearest cell
        changing under a link that slides along it) refuses every shorter step too. ``dq_full`` holds the accepted
        step (in place); if none passes it is zeroed and False is returned. Call after :meth:`solve` at the same q.
        """
        if not barriers:
            return True
        if self._check_step(q, dq_full, barriers, tolerance):
            return True
        lay = self._layout
        full = self._v_columns
        step = dq_full[full].copy()
        for scale in _STEP_SCALES:
            np.multiply(step, scale, out=self._dq_scaled)
            if lay is not None:
                np.clip(self._dq_scaled, lay.lower, lay.upper, out=self._dq_scaled)
            dq_full[full] = self._dq_scaled
            if self._check_step(q, dq_full, barriers, tolerance):
                self.shortened_steps += 1
                return True
        dq_full[full] = step
        if self.correct_step(q, dq_full, barriers, tolerance):
            self.corrected_steps += 1
            return True
        dq_full.fill(0.0)
        return False

    def correct_step(self, q: np.ndarray, dq_full: np.ndarray, barriers: Sequence[Barrier],
                     tolerance: float = 1e-4) -> bool:
        """True if q ⊕ dq_full passes the barrier check as it is or after :meth:`_correct_step` (dq_full then holds
        the corrected step); False with dq_full unchanged. For a stop's step (a braking step in the box limits of
        the last :meth:`solve` at the same q): a stop must be no less safe than the step it replaces."""
        if not barriers or self._check_step(q, dq_full, barriers, tolerance):
            return True
        return self._correct_step(q, dq_full, dq_full[self._v_columns].copy(), barriers, tolerance)

    def _correct_step(self, q: np.ndarray, dq_full: np.ndarray, step: np.ndarray, barriers: Sequence[Barrier],
                      tolerance: float) -> bool:
        """A second-order correction of a step the check refused (as in SQP): each tracked row that ends below its
        target at q ⊕ dq (:func:`_correction_target`: its check floor, a violated row where it is) is lifted back
        along its gradient at q, the least-norm change of the step that brings the linearized rows to
        ``target + _CORRECTION_MARGIN``, clipped into the box limits, checked again (up to _CORRECTIONS times).
        True with ``dq_full`` holding the corrected step; False with it holding ``step`` (a pair the rows did not
        track, a NaN or a row whose gradient is 0 are not corrected). Call after a failed :meth:`_check_step` of
        ``step`` (its kinematics are where the rows are evaluated)."""
        lay = self._layout
        full = self._v_columns
        trial = step.copy()
        for _ in range(_CORRECTIONS):
            rows, deficits = [], []
            for b in barriers:  # _check_step left the kinematics at the last trial step
                h_next = b.evaluate(self.data, self.geom_data)
                if not b.untracked_floor(self.boundary_tolerance) >= 0.0:
                    dq_full[full] = step
                    return False
                deficit = _correction_target(b.measured_value, tolerance) - h_next
                if np.isnan(deficit).any():
                    dq_full[full] = step
                    return False
                for i in np.flatnonzero(deficit > -_CORRECTION_MARGIN):
                    rows.append(b.jacobian[i])
                    deficits.append(deficit[i] + _CORRECTION_MARGIN)
            if not rows:
                break
            J = np.array(rows)
            if np.min(np.einsum("ij,ij->i", J, J)) <= _MIN_JACOBIAN_NORM2:
                break
            trial += np.linalg.lstsq(J, np.array(deficits), rcond=1e-8)[0]  # least norm (rows may be dependent)
            if lay is not None:
                np.clip(trial, lay.lower, lay.upper, out=trial)
            dq_full[full] = trial
            if self._check_step(q, dq_full, barriers, tolerance):
                return True
        dq_full[full] = step
        return False

    def step_margin(self, q: np.ndarray, dq_full: np.ndarray, barriers: Sequence[Barrier],
                    tolerance: float = 1e-4) -> float:
        """[m] How far q ⊕ dq_full stays above the floors of :meth:`enforce_barriers`' check, the least over every
        row and every untracked pair (>= 0: the check accepts it; NaN counts as -inf). Call after :meth:`solve`
        at the same q; for choosing among stops (not the tick's step: the check exits early)."""
        model, data = self.scene.model, self.data
        pin.framesForwardKinematics(model, data, pin.integrate(model, q, dq_full))
        if any(b.needs_geometry for b in barriers):
            pin.updateGeometryPlacements(model, data, self.scene.collision_model, self.geom_data)
        margin = math.inf
        for b in barriers:
            h_next = b.evaluate(data, self.geom_data)
            margin = min(margin, b.untracked_floor(self.boundary_tolerance))
            h = b.measured_value
            if len(h_next):
                slack = h_next - _check_floor(h, tolerance)
                worst = float(np.min(np.where(np.isnan(slack), -np.inf, slack)))
                margin = min(margin, worst)
        return -math.inf if math.isnan(margin) else margin

    def _check_step(self, q: np.ndarray, dq_full: np.ndarray, barriers: Sequence[Barrier], tolerance: float) -> bool:
        model, data = self.scene.model, self.data
        q_next = pin.integrate(model, q, dq_full)
        pin.framesForwardKinematics(model, data, q_next)
        for b in barriers:
            if b.needs_geometry:
                pin.updateGeometryPlacements(model, data, self.scene.collision_model, self.geom_data)
                break
        for b in barriers:  # b.measured_value still holds h at q (evaluate returns another array)
            h_next = b.evaluate(data, self.geom_data)
            if not b.untracked_floor(self.boundary_tolerance) >= 0.0:  # a pair the rows did not track ended inside d_min
                return False
            if np.count_nonzero(np.greater_equal(h_next, -tolerance)) == len(h_next):
                continue  # every row inside its safe set (up to tolerance): nothing can be violated
            h = b.measured_value
            if np.count_nonzero(~(h_next >= _check_floor(h, tolerance))):  # NaN: violated
                return False
            if h.min(initial=np.inf) < -tolerance and not self._recovers(b, h < -tolerance, h, h_next, dq_full):
                return False  # (the common tick, no row violated, allocates nothing here)
        return True

    def _recovers(self, b: Barrier, violated: np.ndarray, h: np.ndarray, h_next: np.ndarray,
                  dq_full: np.ndarray) -> bool:
        """A violated row may lose _RECOVERY_SLIP only on a step that moves it back to first order (J_h dq > 0):
        one that holds it there (sliding along the boundary of the recovery's ``G dq <= 0``) may not end deeper,
        or the violation creeps (1 um a step measured: 0.3 mm while a twist pushed an arm along a cloud)."""
        back = b.jacobian[violated] @ dq_full[self._v_columns]
        return not np.any((back <= 0.0) & (h_next[violated] < h[violated]))


def _correction_target(h: np.ndarray, tolerance: float) -> np.ndarray:
    """Per row, what a corrected step aims at (+ _CORRECTION_MARGIN): a row that holds the tolerance boundary, a
    violated one where it is (a correction uses neither the boundary's nor the recovery's slip: a violation does
    not creep deeper)."""
    return np.where(h >= -tolerance, -tolerance, h)


def _check_floor(h: np.ndarray, tolerance: float) -> np.ndarray:
    """Per row, the least h the barrier check accepts at the next step from h at this one: a row that holds
    (h >= -tolerance) may end ``tolerance`` (+ _BOUNDARY_SLIP) outside its safe set, a violated one may lose
    _RECOVERY_SLIP."""
    return np.where(h >= -tolerance, -tolerance - _BOUNDARY_SLIP, h - _RECOVERY_SLIP)


def most_violated_row(barriers: Sequence[Barrier], boundary: float = 0.0) -> tuple[Barrier, int] | None:
    """(barrier, row) with the least h among the rows dq = 0 violates (upper < 0), or None; rows with
    -boundary <= h < 0 are on their boundary, not violated."""
    worst: tuple[Barrier, int] | None = None
    for b in barriers:
        if b.upper.min(initial=np.inf) < 0.0:
            violated = (b.upper < 0.0) & ~((b.value >= -boundary) & (b.value < 0.0))
            if not violated.any():
                continue
            k = int(np.argmin(np.where(violated, b.value, np.inf)))
            if worst is None or b.value[k] < worst[0].value[worst[1]]:
                worst = (b, k)
    return worst
