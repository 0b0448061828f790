"""The ``perception:`` section of the YAML config: the point cloud on the node's ``~/pointcloud``, each key
declared once.

Each key is declared with :func:`~..keys.key` (default, range or choices, meaning): the YAML check
(:func:`check_perception_config`, from ``IKConfig``: the declared ranges and choices, then the rules between
keys), the table of ranges (:data:`~..ranges.RANGES`, ``perception.<key>``) and the docs' table
(:mod:`~..key_table`, its meaning from ``doc``) read it. :class:`~.perceived_cloud.CloudIngest` takes the section.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import InvalidInputError, Range
from ..keys import check_declared, declared_ranges, key
from ..ranges import RANGES

ON_STALE = ("keep", "clear")
_CROP_BOX = ("[m] world-frame box; points outside are dropped (e.g. `crop_min: [-.inf, -.inf, 0.005]` drops a table "
             "that is already a configured obstacle)")  # crop_min and crop_max: one row


@dataclass
class PerceptionConfig:
    """``perception:`` the point cloud on the node's ``~/pointcloud`` (core: perceived_cloud.py), each key with its
    docs row's meaning (docs/configuration.md's table is generated from these)."""

    voxel_size: float = key(0.02, range=Range(0.0, 1.0, unit="m"),
                            doc="one point (centroid) per voxel before the octree; 0: none")
    min_points_per_voxel: int = key(
        1, range=Range(1, integer=True),
        doc="a voxel with fewer points is dropped (PCL's minimum points per voxel: a camera's lone noisy point a voxel "
            "in front of a surface); > 1 needs `voxel_size` > 0")
    octree_resolution: float = key(0.02, range=Range(0.001, 1.0, unit="m"), doc="the octree's leaf size")
    self_filter_padding: float = key(
        0.03, range=Range(0.0, 1.0, unit="m"),
        doc="points this close to the robot's collision geometry (convex hulls: their faces pushed out by it) are "
            "the robot's")
    crop_min: list[float] = key(factory=lambda: [-math.inf, -math.inf, -math.inf], doc=_CROP_BOX)
    crop_max: list[float] = key(factory=lambda: [math.inf, math.inf, math.inf], doc=_CROP_BOX)
    max_age: float = key(0.5, range=Range(0.0, 3600.0, lo_open=True, unit="s"),
                         doc="a cloud older than this (no newer one) is stale")
    on_stale: str = key("keep", choices=ON_STALE,
                        doc="`keep` (the last cloud stays an obstacle) or `clear` (removed, said in `~/status`)")
    max_points: int = key(1000000, range=Range(1, integer=True),
                          doc="clouds with more points (width x height) are refused")

RANGES.update(declared_ranges("perception", PerceptionConfig))  # perception.<key>


def check_perception_config(p: PerceptionConfig, path: str = "perception") -> PerceptionConfig:
    """The declared ranges and choices of the ``perception:`` section, then its rules between keys (errors
    name the key)."""
    check_declared(p, path)
    n = p.min_points_per_voxel
    if n > 1 and not p.voxel_size > 0:
        raise InvalidInputError(f"{path}.min_points_per_voxel: {n} needs voxels; expected voxel_size > 0 "
                                f"(got {p.voxel_size}) or min_points_per_voxel 1")
    for name in ("crop_min", "crop_max"):
        values = getattr(p, name)
        if len(values) != 3 or any(math.isnan(v) for v in values):
            raise InvalidInputError(f"{path}.{name}: expected [x, y, z] [m] (.inf / -.inf: unbounded), got {values}")
    if any(lo >= hi for lo, hi in zip(p.crop_min, p.crop_max)):
        raise InvalidInputError(f"{path}.crop_min: {p.crop_min}; expected below crop_max {p.crop_max} on every axis")
    return p
