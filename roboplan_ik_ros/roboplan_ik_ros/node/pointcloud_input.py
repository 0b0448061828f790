"""``~/pointcloud`` (sensor_msgs/PointCloud2) -> the scene's perceived cloud, and ``~/clear_pointcloud``.

The subscription callback only keeps the newest message (one slot; an older one not yet processed is
replaced, counted in ``dropped``). A thread of its own (``pointcloud``) ingests it
(:class:`~roboplan_ik_ros.core.model.perceived_cloud.CloudIngest`: decode, into the world frame,
crop, voxel filter, self-filter at the last command, octree), outside the loop's lock, then swaps
the new cloud into the scene under the locks (one geometry and its pairs: no tick pays for the
octree). Frames: the header's ``frame_id`` is a frame of the robot model (at the last command), the
root/``world``/``""``, or any frame tf2 knows where tf2_ros is installed (else refused saying so).

A malformed cloud (missing x/y/z, bad datatype or point step, data size, NaN with ``is_dense``, an
unknown frame, too many points) is refused: logged with the reason, counted (``refused``) and the
previous cloud stays. ``perception.max_age`` [s] after the last accepted cloud arrived, the cloud
is stale: ``on_stale: keep`` keeps it (status says ``stale``), ``clear`` removes it (status says
``cleared (stale)``). Ages are taken on arrival (this node's monotonic clock), so a sender's clock
cannot make a cloud look fresh.
"""

from __future__ import annotations

import math
import threading
import time
import traceback
from dataclasses import dataclass

import numpy as np
import pinocchio as pin
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import PointCloud2
from std_srvs.srv import Trigger

from ..core.errors import InvalidInputError
from ..core.model.closest_pairs import ClosestObstacle
from ..core.model.perceived_cloud import CloudIngest
from ..core.model.point_cloud import PointCloudLayout, PointField

THREAD_NAME = "pointcloud"


@dataclass
class PerceptionReport:
    """What ~/status and /diagnostics say about the perceived cloud."""

    state: str = "none"  # none | fresh | stale | cleared (stale) | cleared (service)
    points: int = 0  # in the octree
    age: float = math.inf  # [s] since the cloud in use arrived
    closest_link: str = ""
    closest_distance: float = math.inf  # [m] robot (or attached object) to the nearest perceived point
    received: int = 0  # clouds received
    accepted: int = 0
    refused: int = 0
    dropped: int = 0  # replaced by a newer one before they were processed
    last_refusal: str = ""
    ingest_ms: float = 0.0  # the last cloud's decode + filter + octree


def layout_of(msg: PointCloud2) -> PointCloudLayout:
    fields = [PointField(f.name, int(f.offset), int(f.datatype), int(f.count)) for f in msg.fields]
    return PointCloudLayout(fields, int(msg.width), int(msg.height), int(msg.point_step), int(msg.row_step),
                            bool(msg.is_bigendian), bool(msg.is_dense))


class PointCloudInput:
    """See the module docstring. ``lock``: the control loop's; ``scene_lock``: the in-process SimpleIK's;
    ``current_q()``: the last command; ``tf_lookup(frame_id, stamp)`` -> pin.SE3 or raises (None: no tf2);
    ``on_change()`` after the cloud changed (markers); ``on_refused(reason)``; ``log(level, text)``."""

    def __init__(self, node, scene, config, root: str, lock, scene_lock, current_q, tf_lookup, on_change,
                 on_refused, log, expect_prepare=lambda: None, on_fault=None) -> None:
        self.node, self.scene, self.config, self.root = node, scene, config, root
        self.lock, self.scene_lock, self.current_q = lock, scene_lock, current_q
        self.tf_lookup, self.on_change, self.on_refused, self.log = tf_lookup, on_change, on_refused, log
        self.expect_prepare = expect_prepare  # under the locks, right after the cloud changed (before on_change)
        # on_fault(what, exc, trace): an unexpected error of the processing thread (a bug: the obstacles it
        # keeps may be wrong) ends like any callback's, counted and in a controlled stop; None: logged only
        self.on_fault = on_fault
        self.ingest = CloudIngest(scene, config)
        self._data = scene.model.createData()
        self._closest = ClosestObstacle(scene, "perceived")
        self.report = PerceptionReport()
        self._arrival = -math.inf  # monotonic time the cloud in use arrived
        self._pending: tuple[PointCloud2, float] | None = None
        self._wake = threading.Condition()
        self._stop = False
        self._thread = threading.Thread(target=self._run, name=THREAD_NAME, daemon=True)
        self._thread.start()
        node.create_subscription(PointCloud2, "~/pointcloud", self._on_message, qos_profile_sensor_data)
        node.create_service(Trigger, "~/clear_pointcloud", self._on_clear)

    # ------------------------------------------------------------------ executor thread
    def _on_message(self, msg: PointCloud2) -> None:
        with self._wake:
            self.report.received += 1
            if self._pending is not None:
                self.report.dropped += 1
            self._pending = (msg, time.monotonic())
            self._wake.notify()

    def _on_clear(self, request, response):
        n = self._swap(None, "cleared (service)")
        response.success = True
        response.message = f"perceived cloud cleared ({n} points); the next cloud on ~/pointcloud replaces it"
        return response

    # ------------------------------------------------------------------ processing thread
    def _run(self) -> None:
        period = min(0.1, self.config.max_age / 2)
        while True:
            with self._wake:
                while self._pending is None and not self._stop:
                    self._wake.wait(period)
                    if self._pending is None:
                        break  # a timeout: check the age
                if self._stop:
                    return
                item, self._pending = self._pending, None
            try:
                if item is not None:
                    self._process(*item)
                self._check_age()
            except Exception as exc:  # noqa: BLE001 - a bug must not end the thread silently
                if self.on_fault is None:
                    self.log("error", f"~/pointcloud: unexpected {type(exc).__name__}: {exc}")
                else:
                    self.on_fault("~/pointcloud processing thread", exc, traceback.format_exc())

    def _process(self, msg: PointCloud2, arrival: float) -> None:
        t0 = time.perf_counter()
        try:
            q = self.current_q()
            if q is None:
                q = self.scene.neutral()
            T = self._T_world_sensor(msg.header.frame_id, q, msg.header.stamp)
            with self.lock:  # attached objects may have changed (their geometry is read, not copied)
                self.ingest.refresh_robot()
            stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
            cloud = self.ingest.ingest(layout_of(msg), msg.data, T.rotation, T.translation, q,
                                       msg.header.frame_id, stamp)
        except InvalidInputError as exc:
            reason = f"~/pointcloud: cloud refused ({msg.width}x{msg.height} points, frame {msg.header.frame_id!r}): {exc}"
            self.report.refused += 1
            self.report.last_refusal = reason
            self.on_refused(reason)
            return
        self.report.ingest_ms = (time.perf_counter() - t0) * 1e3
        self.report.accepted += 1
        self._swap(cloud, "fresh", arrival)

    def _T_world_sensor(self, frame_id: str, q: np.ndarray, stamp) -> pin.SE3:
        model = self.scene.model
        if frame_id in ("", "world", "universe", self.root):
            return pin.SE3.Identity()
        if model.existFrame(frame_id):
            pin.framesForwardKinematics(model, self._data, q)
            return self._data.oMf[model.getFrameId(frame_id)].copy()
        if self.tf_lookup is None:
            raise InvalidInputError(f"header.frame_id: {frame_id!r} is not a frame of the robot model and tf2_ros is "
                                    f"not installed; expected {self.root!r} or a robot frame")
        try:
            return self.tf_lookup(frame_id, stamp)
        except Exception as exc:  # noqa: BLE001 - tf2's errors, GoalError
            raise InvalidInputError(f"header.frame_id: {exc}") from exc

    def _check_age(self) -> None:
        r = self.report
        if r.state not in ("fresh", "stale"):
            return
        if time.monotonic() - self._arrival <= self.config.max_age:
            return
        if self.config.on_stale == "clear":
            self._swap(None, "cleared (stale)", self._arrival)
            self.log("warning", f"~/pointcloud: no cloud for {self.config.max_age:g} s (perception.max_age): "
                                "the perceived cloud is cleared (perception.on_stale: clear)")
        elif r.state == "fresh":
            r.state = "stale"
            self.log("warning", f"~/pointcloud: no cloud for {self.config.max_age:g} s (perception.max_age): the "
                                "last one stays an obstacle (perception.on_stale: keep)")

    def _swap(self, cloud, state: str, arrival: float | None = None) -> int:
        """Put ``cloud`` (None: none) in the scene between two ticks; returns the old cloud's size."""
        with self.lock, self.scene_lock:
            old = self.scene.perceived_cloud
            self.scene.set_perceived_cloud(cloud)
            self.expect_prepare()
        self.report.state = state
        self.report.points = 0 if cloud is None else cloud.size
        if arrival is not None:
            self._arrival = arrival
        self.on_change()  # the barriers' tables first (the ticks wait for them), then the status report's
        with self.scene_lock:  # here rather than under the loop's lock in snapshot()
            self._closest.prepare()
        return 0 if old is None else old.size

    # ------------------------------------------------------------------ reports (executor thread)
    def snapshot(self) -> PerceptionReport:
        """A copy of the report with the age and the closest perceived point at the last command."""
        r = PerceptionReport(**vars(self.report))
        r.age = time.monotonic() - self._arrival if r.state in ("fresh", "stale") else math.inf
        q = self.current_q()
        if q is not None and r.points:
            with self.lock:  # the collision model must not change during the query
                _, r.closest_link, r.closest_distance = self._closest.query(q)
        return r

    def points(self) -> np.ndarray:
        cloud = self.scene.perceived_cloud
        return np.zeros((0, 3)) if cloud is None else cloud.points

    def destroy(self) -> None:
        with self._wake:
            self._stop = True
            self._wake.notify()
        self._thread.join(timeout=5.0)  # the subscription and the service belong to the node's session
