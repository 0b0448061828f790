"""PerceivedCloud and CloudIngest: a depth camera's points as an obstacle of the scene.

:class:`CloudIngest` turns one PointCloud2 payload into a :class:`PerceivedCloud`: decode (numpy),
into the world frame (``T_world_sensor``), crop to ``perception.crop_min``/``crop_max``, voxel filter
(``voxel_size``; voxels of fewer than ``min_points_per_voxel`` points dropped), remove the robot's own
points (:class:`SelfFilter`, ``self_filter_padding``, at the configuration given): the numpy stages,
:class:`~.cloud_filter.CloudFilter`, which the cloud ingest process (``ingest_process.py``) runs too;
then it builds a coal ``OcTree`` (``coal.makeOctree``, leaves of ``octree_resolution``) from the kept
points (:meth:`CloudIngest.perceived`: what stays in the caller's process when the process ran the
rest). This is the expensive part (measured in docs/configuration.md); it runs outside the control loop
and touches neither the scene's collision model nor its obstacles. The caller then swaps the cloud
into the scene (:meth:`Scene.set_perceived_cloud`, one geometry and its pairs) between two ticks. ROS-free.
"""

from __future__ import annotations

from dataclasses import dataclass

import coal
import numpy as np

from .cloud_filter import CloudFilter, FilteredCloud
from .point_cloud import PointCloudLayout, octree_cells
from .scene import Scene
from .self_filter import SelfFilter


@dataclass(frozen=True, eq=False)
class PerceivedCloud:
    """The filtered points of one cloud, in the world frame, and their octree.

    Attributes:
        points: (N, 3) float64 world frame [m] (what the octree was built from).
        resolution: octree leaf size [m].
        octree: the coal OcTree, None when no point is left (then the cloud is no obstacle).
        frame_id: the sensor frame the cloud came in.
        stamp: the cloud's time (header.stamp) [s], in the sender's clock.
        received, invalid, cropped, self_points: points in the message, dropped for NaN/inf, outside
            the crop box, on the robot (the voxel filter merges the rest into ``len(points)``).
        cells: (n, 3) centres of the octree's occupied leaves, in its ``toBoxes`` order
            (``point_cloud.octree_cells``): the compiled collision kernel's cubes, computed here (off the
            loop thread) rather than read back from the octree; None: not computed.
    """

    points: np.ndarray
    resolution: float
    octree: coal.OcTree | None
    frame_id: str = ""
    stamp: float = 0.0
    received: int = 0
    invalid: int = 0
    cropped: int = 0
    self_points: int = 0
    cells: np.ndarray | None = None

    @property
    def size(self) -> int:
        return len(self.points)


class CloudIngest:
    """Build :class:`PerceivedCloud` objects for ``scene`` with ``config`` (a ``PerceptionConfig``).
    Not thread-safe by itself: one thread ingests; :meth:`refresh_robot` (after attached objects
    changed) must not run while the scene changes."""

    def __init__(self, scene: Scene, config) -> None:
        self.scene = scene
        self.config = config
        self.self_filter = SelfFilter(scene, config.self_filter_padding)
        self.filter = CloudFilter(config)

    def refresh_robot(self) -> None:
        """Re-read the robot's (and attached objects') geometry if the scene's obstacles changed."""
        self.self_filter.refresh()

    def ingest(self, layout: PointCloudLayout, data, R_world_sensor: np.ndarray, t_world_sensor: np.ndarray,
               q: np.ndarray, frame_id: str = "", stamp: float = 0.0) -> PerceivedCloud:
        """The perceived cloud of one payload; raises :class:`InvalidInputError` for a malformed one."""
        filtered = self.filter.run(layout, data, R_world_sensor, t_world_sensor,
                                   lambda points: self.self_filter.robot_mask(points, q))
        return self.perceived(filtered, frame_id, stamp)

    def perceived(self, filtered: FilteredCloud, frame_id: str = "", stamp: float = 0.0) -> PerceivedCloud:
        """The PerceivedCloud of a filtered cloud: its octree (its cells as they came)."""
        return self.cloud(filtered.points, frame_id, stamp, cells=filtered.cells, received=filtered.received,
                          invalid=filtered.invalid, cropped=filtered.cropped, self_points=filtered.self_points)

    def cloud(self, points: np.ndarray, frame_id: str = "", stamp: float = 0.0, cells: np.ndarray | None = None,
              **counts) -> PerceivedCloud:
        """A PerceivedCloud of world-frame ``points`` as they are (no filter); ``cells``: the octree's cells
        if known (``octree_cells(points)``), else computed here."""
        points = np.ascontiguousarray(points, dtype=np.float64).reshape(-1, 3)
        resolution = float(self.config.octree_resolution)
        octree = coal.makeOctree(points, resolution) if len(points) else None
        if octree is None:
            cells = None
        elif cells is None:
            cells = octree_cells(points, resolution)
        return PerceivedCloud(points, resolution, octree, frame_id, stamp, **counts, cells=cells)
