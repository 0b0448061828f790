"""The ``perception:`` section of the YAML config: the point cloud on the node's ``~/pointcloud``, each key
declared once.

Each key is declared with :func:`~..keys.key` (default, range or choices): the YAML check
(:func:`check_perception_config`, from ``IKConfig``: the declared ranges and choices, then the rules between
keys), the table of ranges (:data:`~..ranges.RANGES`, ``perception.<key>``) and the docs test
(test_section_keys_docs.py) read it. :class:`~.perceived_cloud.CloudIngest` takes the section.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import InvalidInputError, Range
from ..keys import check_declared, declared_ranges, key
from ..ranges import RANGES

ON_STALE = ("keep", "clear")


@dataclass
class PerceptionConfig:
    """``perception:`` the point cloud on the node's ``~/pointcloud`` (core: perceived_cloud.py)."""

    # [m] one point per voxel (centroid) before the octree; 0 = no voxel filter
    voxel_size: float = key(0.02, range=Range(0.0, 1.0, unit="m"))
    # a voxel with fewer points is dropped (a lone noisy point beyond a surface); 1 = every voxel kept
    min_points_per_voxel: int = key(1, range=Range(1, integer=True))
    octree_resolution: float = key(0.02, range=Range(0.001, 1.0, unit="m"))  # [m] leaf size of the coal OcTree
    # [m] points this close to the robot's collision geometry are its own
    self_filter_padding: float = key(0.03, range=Range(0.0, 1.0, unit="m"))
    crop_min: list[float] = key(factory=lambda: [-math.inf, -math.inf, -math.inf])  # [m] world frame
    crop_max: list[float] = key(factory=lambda: [math.inf, math.inf, math.inf])  # [m] world frame
    max_age: float = key(0.5, range=Range(0.0, 3600.0, lo_open=True, unit="s"))  # a cloud older (no newer) is stale
    # "keep" (the last cloud stays an obstacle) | "clear" (removed, said in ~/status)
    on_stale: str = key("keep", choices=ON_STALE)
    max_points: int = key(1000000, range=Range(1, integer=True))  # clouds with more points (width * height): refused


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
