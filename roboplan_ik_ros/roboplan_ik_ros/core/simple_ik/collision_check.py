"""SimpleIK's collision check of a converged q: pinocchio's broad phase on the scene's collision model (remade
when obstacles come or go) and the collision bounds the kernel proves most answers free with
(collision_bounds.py), for :class:`~.solver.SimpleIK` (its base class :class:`CollisionCheck`)."""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from ..model.scene import Scene, collision_check_data
from . import collision_bounds
from .collision_bounds import CollisionBounds


class CollisionCheck:
    """The collision check, a part of :class:`~.solver.SimpleIK` (its base class): it reads the solver's
    ``scene`` and ``data`` and keeps ``geom_data``, ``_collision_manager``, ``_has_collision_pairs``,
    ``_geometry_version`` (set in SimpleIK.__init__) and the bounds ``_bounds``, ``_bounds_version`` current."""

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
