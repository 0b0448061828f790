"""A conservative collision test for SimpleIK's answers, computed by the compiled kernel (compiled_step.py).

Each geometry of the collision pairs is enclosed in an oriented box: its local axis-aligned bounding box
(coal's ``aabb_local``, in the geometry's own frame; around a convex hull, a mesh or a primitive), placed by
the forward kinematics of the joints that carry it. When every pair's boxes are separated (the 15 axes of
the separating-axis test) by more than ``MARGIN`` plus the pairs' security margin, no pair collides, and the
exact check (pinocchio's broad phase and coal's narrow phase, ~3 us warm, 10-15 us with cold caches) is not
needed; boxes that overlap prove nothing, and the exact check decides. On random collision-free
configurations the boxes prove 95 % of the UR5's and 93 % of the Panda's free (the pairs that overlap most:
UR5 forearm / ee_link, Panda link2 / link5).

The kernel computes the proof when an attempt converges (sik_descend), so that most answers pay no
collision call from Python at all. Built from the scene's collision model of now: SimpleIK rebuilds it when
an obstacle is added, moved or removed (``Scene.collision_version``). A geometry carried by a joint the
kernel's kinematics does not compute (not a scalar revolute or prismatic joint) leaves no bounds: every
answer takes the exact check.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pinocchio as pin

from .compiled_step import _JOINT_KINDS, _Bounds, _placement_row, load_step_kernel

MARGIN = 1e-4  # [m] boxes closer than this count as overlapping (coal's tolerances are far below)
USE_COLLISION_BOUNDS = True  # SimpleIK tests its answers against the bounds first (tests switch it)
_p, _i64, _f64 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_double


class CollisionBounds:
    """The boxes of ``geom_model``'s active pairs (``geom_data``'s flags) on ``model``'s joints. Build with
    :meth:`build`, which says None when the kernel is not built or a joint is not one it computes."""

    def __init__(self, joints: list, boxes: list, pairs: list, margin: float) -> None:
        kernel, error = load_step_kernel()
        if kernel is None:
            raise RuntimeError(error)
        self._free = kernel[3]
        nt, ng = len(joints), len(boxes)
        self._parent = np.array([j[0] for j in joints], dtype=np.int64)
        self._placements = np.array([j[1] for j in joints], dtype=float).reshape(nt, 12)
        self._axes = np.array([j[2] for j in joints], dtype=float).reshape(nt, 3)
        self._kinds = np.array([j[3] for j in joints], dtype=np.int64)
        self._q_index = np.array([j[4] for j in joints], dtype=np.int64)
        self._joint = np.array([b[0] for b in boxes], dtype=np.int64)
        self._boxes = np.array([b[1] for b in boxes], dtype=float).reshape(ng, 15)
        self._pairs = np.array(pairs, dtype=np.int64).reshape(len(pairs), 2)
        self._scratch = np.zeros(12 * (nt + ng))
        b = self._b = _Bounds()
        b.nt, b.parent, b.placements = nt, self._parent.ctypes.data, self._placements.ctypes.data
        b.axes, b.kinds, b.q_index = self._axes.ctypes.data, self._kinds.ctypes.data, self._q_index.ctypes.data
        b.ng, b.joint, b.boxes = ng, self._joint.ctypes.data, self._boxes.ctypes.data
        b.np, b.pairs, b.margin, b.scratch = len(pairs), self._pairs.ctypes.data, margin, self._scratch.ctypes.data
        self.address = ctypes.addressof(b)
        self.n_pairs = len(pairs)

    @classmethod
    def build(cls, model: pin.Model, geom_model: pin.GeometryModel, geom_data: pin.GeometryData
              ) -> CollisionBounds | None:
        """The bounds of the active pairs, or None (no kernel; a geometry on a joint the kernel does not compute;
        no active pair)."""
        if load_step_kernel()[0] is None:
            return None
        objects = geom_model.geometryObjects
        active = [(int(p.first), int(p.second)) for k, p in enumerate(geom_model.collisionPairs)
                  if geom_data.activeCollisionPairs[k] and not objects[int(p.first)].disableCollision
                  and not objects[int(p.second)].disableCollision]
        if not active:
            return None
        margin = MARGIN + max(0.0, max(float(r.security_margin) for r in geom_data.collisionRequests))
        index: dict[int, int] = {}  # model joint -> its index in the list (parents first)
        joints: list = []

        def joint_index(j: int) -> int | None:  # -1 for the universe, None if not computable
            if j == 0:
                return -1
            if j in index:
                return index[j]
            parent = joint_index(int(model.parents[j]))
            joint = model.joints[j]
            kind = _JOINT_KINDS.get(joint.shortname())
            if parent is None or kind is None or joint.nq != 1 or joint.nv != 1:
                return None
            axis = kind[1] if kind[1] is not None else np.asarray(joint.extract().axis, dtype=float).tolist()
            joints.append((parent, _placement_row(model.jointPlacements[j]), axis, kind[0], joint.idx_q))
            index[j] = len(joints) - 1
            return index[j]

        box_of: dict[int, int] = {}  # geometry -> its box
        boxes: list = []
        for g in sorted({g for pair in active for g in pair}):
            obj = objects[g]
            j = joint_index(int(obj.parentJoint))
            if j is None:
                return None
            obj.geometry.computeLocalAABB()
            aabb = obj.geometry.aabb_local
            lo, hi = np.asarray(aabb.min_, dtype=float), np.asarray(aabb.max_, dtype=float)
            centre = pin.SE3(np.eye(3), 0.5 * (lo + hi))
            boxes.append((j, _placement_row(obj.placement * centre) + (0.5 * (hi - lo)).tolist()))
            box_of[g] = len(boxes) - 1
        return cls(joints, boxes, [(box_of[a], box_of[b]) for a, b in active], margin)

    def free(self, q: np.ndarray) -> bool:
        """True if the boxes prove ``q`` (the full configuration, float64) free of collision (the kernel's
        test, for tests)."""
        q = np.ascontiguousarray(q, dtype=float)
        base = np.array(_placement_row(pin.SE3.Identity()))
        return bool(self._free(self.address, q.ctypes.data, base.ctypes.data))
