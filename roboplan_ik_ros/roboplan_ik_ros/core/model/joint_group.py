"""A named subset of the model's joints that a solver moves; all other joints stay fixed."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class JointGroup:
    """Joints a solver controls, with their indices in the full configuration and velocity vectors.

    Only 1-DoF joints are supported (revolute, prismatic, continuous). A continuous joint has
    nq = 2 (cos, sin) and nv = 1, so q and v indices differ: always move with ``Scene.integrate``.
    """

    name: str
    joint_names: tuple[str, ...]
    joint_ids: np.ndarray  # pinocchio joint ids
    q_indices: np.ndarray  # indices into the full q (len = group nq)
    v_indices: np.ndarray  # indices into the full v (len = group nv)
    bounded_v: np.ndarray  # indices into the *group* v of joints with position limits (nq == 1)
    bounded_q: np.ndarray  # matching indices into the full q
    continuous_q: np.ndarray  # full-q index of the cos coordinate of each continuous joint (sin follows)

    @property
    def v_columns(self) -> slice | np.ndarray:
        """Selector of the group's columns in a full-model Jacobian: a slice when contiguous (cheaper)."""
        v = self.v_indices
        if len(v) and np.array_equal(v, np.arange(v[0], v[0] + len(v))):
            return slice(int(v[0]), int(v[0]) + len(v))
        return v

    @property
    def nq(self) -> int:
        return len(self.q_indices)

    @property
    def nv(self) -> int:
        return len(self.v_indices)

    def __repr__(self) -> str:
        return f"JointGroup({self.name!r}, joints={list(self.joint_names)})"
