"""CloudFilter: the numpy stages of a point cloud's ingest, from a PointCloud2 payload to the points a
perceived cloud's octree is built from and that octree's occupied cells.

Decode (``decode_points``), into the world frame (``T_world_sensor``), crop to
``perception.crop_min``/``crop_max``, voxel filter (``voxel_size``, ``min_points_per_voxel``), remove
the robot's own points (a ``robot_mask`` given per cloud: :class:`~.self_filter.SelfFilter` in-process,
:func:`~.self_filter.robot_mask_at` on the tables and placements sent to the ingest process) and the
octree's cells (``point_cloud.octree_cells``). Only numpy: the same code runs in the node's process
(:class:`~.perceived_cloud.CloudIngest`, the reference and the fallback) and in the cloud ingest process
(``ingest_process.py``), which hands the result back through shared memory. ROS-free.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError
from .point_cloud import PointCloudLayout, crop_points, decode_points, octree_cells, transform_points, voxel_filter


@dataclass(frozen=True, eq=False)
class FilteredCloud:
    """What :meth:`CloudFilter.run` gives.

    Attributes:
        points: (N, 3) float64 world frame [m], the robot's own removed (what the octree is built from).
        cells: (n, 3) centres of the octree's occupied leaves at ``octree_resolution``, in its
            ``toBoxes`` order (``octree_cells(points)``); (0, 3) when no point is left.
        received, invalid, cropped, self_points: points in the message, dropped for NaN/inf, outside
            the crop box, on the robot (the voxel filter merges the rest into ``len(points)``).
    """

    points: np.ndarray
    cells: np.ndarray
    received: int = 0
    invalid: int = 0
    cropped: int = 0
    self_points: int = 0


def cloud_rows(layout: PointCloudLayout, n_bytes: int) -> int:
    """The most rows a :class:`FilteredCloud` of a payload of ``n_bytes`` with ``layout`` can have: its
    points (width * height, which a valid payload's ``n_bytes // point_step`` bounds too); 0 when the
    layout's sizes are not positive integers (refused)."""
    values = (layout.width, layout.height, layout.point_step)
    if any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v <= 0 for v in values):
        return 0
    return min(int(layout.width) * int(layout.height), int(n_bytes) // int(layout.point_step))


class CloudFilter:
    """The numpy stages of an ingest with ``config`` (a ``PerceptionConfig``); see the module docstring."""

    def __init__(self, config) -> None:
        self.config = config
        self._lower = np.asarray(config.crop_min, dtype=float)
        self._upper = np.asarray(config.crop_max, dtype=float)

    def run(self, layout: PointCloudLayout, data, R_world_sensor: np.ndarray, t_world_sensor: np.ndarray,
            robot_mask: Callable[[np.ndarray], np.ndarray]) -> FilteredCloud:
        """The filtered points and cells of one payload; ``robot_mask(points)`` -> (N,) True for the robot's
        own points (world frame). Raises :class:`InvalidInputError` for a malformed payload."""
        n = layout.width * layout.height if isinstance(layout.width, int) and isinstance(layout.height, int) else 0
        if n > self.config.max_points:
            raise InvalidInputError(f"width * height: {layout.width} * {layout.height} = {n} points; expected at most "
                                    f"perception.max_points = {self.config.max_points}")
        decoded = decode_points(layout, data)
        world = transform_points(R_world_sensor, t_world_sensor, decoded.points)
        inside = crop_points(world, self._lower, self._upper)
        cropped = len(world) - len(inside)
        merged = voxel_filter(inside, self.config.voxel_size, self.config.min_points_per_voxel)
        on_robot = robot_mask(merged)
        removed = int(np.count_nonzero(on_robot))
        kept = np.compress(~on_robot, merged, axis=0) if removed else merged
        kept = np.ascontiguousarray(kept, dtype=np.float64).reshape(-1, 3)
        cells = octree_cells(kept, float(self.config.octree_resolution)) if len(kept) else np.zeros((0, 3))
        return FilteredCloud(kept, cells, received=decoded.received, invalid=decoded.invalid, cropped=cropped,
                             self_points=removed)
