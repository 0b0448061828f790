"""The collision barrier's rows: several per close pair, so that d_min holds at edges and corners.

One row per pair (RoboPlan's form) holds only the pair's current closest points. When a link comes
over an obstacle's edge, or lies nearly parallel to a face, the closest point jumps between
features from one step to the next (two corners of the hand, two corners of a box), and the
feature that is not the closest this step moves in unconstrained: d_min ends up halved.

Here each of the closest pairs gets up to ``rows_per_pair`` rows, all with the pair's unit normal n
(from geometry 1 to geometry 2) and the witness points p1, p2:

- row 0: the witness row, h = d - d_min, a = p1, b = p2;
- then the vertices of either geometry (a convex hull's points, a box's corners) whose lower bound
  of distance is within ``margin`` of d: a vertex v of geometry 1 is at least ``n.(p2 - v)`` from
  geometry 2 (geometry 2 lies beyond the plane through p2 normal to n, for convex geometry), a vertex w of
  geometry 2 at least ``n.(w - p1)`` from geometry 1. Its row: that bound minus d_min, with a = v, b = p2
  (or a = p1, b = w). Each bound is >= d, so an extra row is never more violated than the witness row.
  Vertices closer than ``spacing`` to a point already used on the same geometry are skipped, lowest
  bound first (bounds compared in steps of ``1 / ROW_ORDER_STEPS`` m, ties by geometry then vertex
  index: the vertices of a face parallel to the other geometry tie up to rounding, which differs
  between numpy and the kernel, and must not decide which of them get rows).

Every row's Jacobian is ``n^T (dp_b/dq - dp_a/dq)`` with the normal held fixed, as the witness row's
(the class docstring of :class:`CollisionBarrier`). ``rows_per_pair = 1`` is RoboPlan's exact form.
The compiled kernel (kernel/pair_distance_kernel.cpp, pdk_rows) writes the same rows; this module is
its Python path.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from ...model.closest_pairs import ClosestPairs, PairDistances
from ...model.compiled_pairs import row_vertices

ROW_ORDER_STEPS = 1e9  # [1/m] vertex bounds are ordered by floor(bound * this); kernel: kRowOrderSteps


@dataclass
class CollisionRows:
    """Per-row data of the last update (rows ``[:count]`` used)."""

    pair: np.ndarray  # (m,) int64: index into the pairs found (PairDistances rows), -1 unused
    a: np.ndarray  # (m, 3) point on geometry 1, world frame [m]
    b: np.ndarray  # (m, 3) point on geometry 2, world frame [m]
    normal: np.ndarray  # (m, 3) unit normal from geometry 1 to geometry 2
    count: int = 0

    @classmethod
    def zeros(cls, m: int) -> CollisionRows:
        return cls(np.full(m, -1, dtype=np.int64), np.zeros((m, 3)), np.zeros((m, 3)), np.zeros((m, 3)))


class RowVertices:
    """The local vertices of each geometry of a pair set (read once per build of its tables)."""

    def __init__(self, pairs: ClosestPairs) -> None:
        self.local = {int(g): row_vertices(pairs.object(int(g)).geometry) for g in pairs.geometries}

    def world(self, geom_data: pin.GeometryData, geometry: int) -> np.ndarray:
        local = self.local[geometry]
        if not len(local):
            return local
        M = geom_data.oMg[geometry]
        return local @ M.rotation.T + M.translation


def python_rows(
    pairs: ClosestPairs,
    found: PairDistances,
    vertices: RowVertices,
    geom_data: pin.GeometryData,
    rows_per_pair: int,
    margin: float,
    spacing: float,
    d_min: float,
    J: np.ndarray,
    support1: np.ndarray,
    support2: np.ndarray,
    out: CollisionRows,
    value: np.ndarray,
    jacobian: np.ndarray,
) -> int:
    """Fill ``out``, ``value`` (h) and ``jacobian`` (dh/dq over the group's columns J, 6 x n world-frame
    joint Jacobians) for the pairs in ``found``; support1/support2: per found row, the 0/1 support of
    geometry 1's / 2's joint over those columns. Returns the number of rows used."""
    m = len(value)
    value.fill(np.inf)
    jacobian.fill(0.0)
    out.pair.fill(-1)
    rows = 0

    def emit(f: int, a: np.ndarray, b: np.ndarray, n: np.ndarray, h: float) -> None:
        nonlocal rows
        out.pair[rows], out.a[rows], out.b[rows], out.normal[rows] = f, a, b, n
        value[rows] = h - d_min
        jacobian[rows] = (n @ J[:3] + np.cross(b, n) @ J[3:]) * support2[f]
        jacobian[rows] -= (n @ J[:3] + np.cross(a, n) @ J[3:]) * support1[f]
        rows += 1

    for f in range(found.count):
        if rows >= m:
            break
        k = int(found.pair_index[f])
        d, p1, p2, n = float(found.distance[f]), found.point1[f], found.point2[f], found.normal[f]
        emit(f, p1, p2, n, d)
        if rows_per_pair <= 1 or not n.any():
            continue
        v1 = vertices.world(geom_data, int(pairs.first[k]))
        v2 = vertices.world(geom_data, int(pairs.second[k]))
        bound1 = (p2 - v1) @ n  # vertices of geometry 1: at least this far from geometry 2
        bound2 = (v2 - p1) @ n
        candidates = [(math.floor(float(bound1[i]) * ROW_ORDER_STEPS), 0, int(i), float(bound1[i]))
                      for i in np.flatnonzero(bound1 <= d + margin)]
        candidates += [(math.floor(float(bound2[i]) * ROW_ORDER_STEPS), 1, int(i), float(bound2[i]))
                       for i in np.flatnonzero(bound2 <= d + margin)]
        candidates.sort()
        chosen = ([p1], [p2])
        extra = 0
        for _, side, i, bound in candidates:
            if extra + 1 >= rows_per_pair or rows >= m:
                break
            v = (v1 if side == 0 else v2)[i]
            if any(float((c - v) @ (c - v)) < spacing * spacing for c in chosen[side]):
                continue
            chosen[side].append(v)
            emit(f, v, p2, n, bound) if side == 0 else emit(f, p1, v, n, bound)
            extra += 1
    out.count = rows
    return rows
