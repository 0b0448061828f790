"""``~/pointcloud`` (sensor_msgs/PointCloud2) -> the scene's perceived cloud, and ``~/clear_pointcloud``.

The subscription callback only keeps the newest message (one slot; an older one not yet processed is
replaced, counted in ``dropped``). A thread of its own (``pointcloud``) takes it, outside the loop's
lock: the numpy work (decode, into the world frame, crop, voxel filter, self-filter at the last
command, the octree's cells) runs in the cloud ingest process
(:class:`~roboplan_ik_ros.core.model.ingest_process.IngestProcess`, started with this input at
configure, stopped with it), so that none of it holds the node's GIL; the thread sends it the payload,
``T_world_sensor`` and the self-filter's link geometry at the last command, waits, builds the octree
from the points it hands back through shared memory and swaps the new cloud into the scene under the
locks (one geometry and its pairs: no tick pays for the octree). What stays in this process per cloud:
the forward kinematics of the frame and of the self-filter, the octree (``coal.makeOctree``) and the
swap (``pointcloud_ingest_node_cpu_ms`` in /diagnostics: this thread's CPU time per cloud).

While the process restarts (it died or was killed: logged, counted in ``ingest_restarts``) the newest
cloud waits for it; the cloud in use ages and goes stale as ``perception.max_age`` and ``on_stale``
say (nothing is ingested meanwhile: a cloud that crashed the process is not retried here), and a
cloud that waited longer than ``max_age`` is not ingested (counted in ``dropped``). A cloud the
process took and did not answer for (it died with it) is lost (logged, counted in ``lost``). Until
the process is ready for the first time (0.3-3 s after configure), and for good if it cannot be
started (``max_start_failures`` starts in a row), clouds are ingested in this thread with
:class:`~roboplan_ik_ros.core.model.perceived_cloud.CloudIngest` (the same code; logged).

Frames: the header's ``frame_id`` is a frame of the robot model (at the last command), the
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

from ..core.child_process import FAILED, READY, STARTING, WorkerError
from ..core.errors import InvalidInputError
from ..core.model.closest_pairs import ClosestObstacle
from ..core.model.ingest_process import IngestProcess
from ..core.model.perceived_cloud import CloudIngest
from ..core.model.point_cloud import PointCloudLayout, PointField

THREAD_NAME = "pointcloud"
_PROCESS = {"start_method": "forkserver"}  # the ingest process's options: forked from the node's fork server


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
    dropped: int = 0  # replaced by a newer one before they were processed, or waited longer than max_age
    lost: int = 0  # taken by an ingest process that died (or was killed as wedged) before it answered
    last_refusal: str = ""
    ingest_ms: float = 0.0  # the last cloud's decode + filter + octree, wall time from its start to the swap
    ingest_child_ms: float = 0.0  # of that, the ingest process's filter (0: ingested in this process)
    ingest_node_cpu_ms: float = 0.0  # this process's CPU time for the last cloud (the pointcloud thread)
    ingest_process: str = ""  # the ingest process: "ready (pid N)", "starting", "restarting: ...", ...
    ingest_restarts: int = 0  # times the ingest process died and was restarted


def layout_of(msg: PointCloud2) -> PointCloudLayout:
    fields = [PointField(f.name, int(f.offset), int(f.datatype), int(f.count)) for f in msg.fields]
    return PointCloudLayout(fields, int(msg.width), int(msg.height), int(msg.point_step), int(msg.row_step),
                            bool(msg.is_bigendian), bool(msg.is_dense))


class PointCloudInput:
    """See the module docstring. ``lock``: the control loop's; ``scene_lock``: the in-process SimpleIK's;
    ``current_q()``: the last command; ``tf_lookup(frame_id, stamp)`` -> pin.SE3 or raises (None: no tf2);
    ``on_change()`` after the cloud changed (markers); ``on_refused(reason)``; ``log(level, text)``.
    ``process``: keyword arguments of :class:`IngestProcess` (default: the fork server's, started here in
    the background); None: no process, every cloud is ingested in this process."""

    def __init__(self, node, scene, config, root: str, lock, scene_lock, current_q, tf_lookup, on_change,
                 on_refused, log, expect_prepare=lambda: None, on_fault=None, process: dict | None = _PROCESS) -> None:
        self.node, self.scene, self.config, self.root = node, scene, config, root
        self.lock, self.scene_lock, self.current_q = lock, scene_lock, current_q
        self.tf_lookup, self.on_change, self.on_refused, self.log = tf_lookup, on_change, on_refused, log
        self.expect_prepare = expect_prepare  # under the locks, right after the cloud changed (before on_change)
        # on_fault(what, exc, trace): an unexpected error of the processing thread (a bug: the obstacles it
        # keeps may be wrong) ends like any callback's, counted and in a controlled stop; None: logged only
        self.on_fault = on_fault
        self.ingest = CloudIngest(scene, config)  # the self-filter's tables, the octree; the fallback
        self._data = scene.model.createData()
        self._closest = ClosestObstacle(scene, "perceived")
        self.report = PerceptionReport()
        self._arrival = -math.inf  # monotonic time the cloud in use arrived
        self._pending: tuple[PointCloud2, float] | None = None
        self._wake = threading.Condition()
        self._stop = False
        self._said_in_process = False  # logged that a cloud came before the process was first ready
        self.process = self._start_process(process)  # its events notify _wake: after it
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
    def _start_process(self, options: dict | None) -> IngestProcess | None:
        if options is None:
            return None
        try:
            return IngestProcess(self.config, on_event=self._on_process_event, **options)
        except Exception as exc:  # noqa: BLE001 - e.g. no shared memory: ingest here instead
            self.log("error", f"~/pointcloud: cannot start the cloud ingest process ({type(exc).__name__}: {exc}); "
                              "clouds are ingested in this process")
            return None

    def _on_process_event(self, level: str, message: str) -> None:
        """The ingest process became ready, died, restarts or failed (its monitor thread)."""
        if level == "error":  # it could not start: FAILED
            message += "; clouds are ingested in this process from now on"
        self.log(level, f"~/pointcloud: {message}")
        with self._wake:  # a cloud may wait for it
            self._wake.notify()

    def _can_ingest(self) -> bool:
        """A cloud can be taken now: the process is ready, or it is not yet (its first start) or could not
        start (then this thread ingests it), or there is none. Not while it restarts."""
        process = self.process
        return process is None or process.state in (READY, STARTING, FAILED)

    def _run(self) -> None:
        period = min(0.1, self.config.max_age / 2)
        while True:
            with self._wake:
                while not self._stop and not (self._pending is not None and self._can_ingest()):
                    self._wake.wait(period)
                    if not (self._pending is not None and self._can_ingest()):
                        break  # a timeout, or the process not ready yet: check the age
                if self._stop:
                    return
                item = None
                if self._pending is not None and self._can_ingest():
                    item, self._pending = self._pending, None
                    if time.monotonic() - item[1] > self.config.max_age:  # it waited for the process: stale
                        self.report.dropped += 1
                        item = None
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
        t0, cpu0 = time.perf_counter(), time.thread_time()
        child_ms = 0.0
        try:
            q = self.current_q()
            if q is None:
                q = self.scene.neutral()
            T = self._T_world_sensor(msg.header.frame_id, q, msg.header.stamp)
            with self.lock:  # attached objects may have changed (their geometry is read, not copied)
                self.ingest.refresh_robot()
            stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
            process = self.process
            state = None if process is None else process.state
            if state == STARTING and not self._said_in_process:  # (FAILED: its monitor said so)
                self._said_in_process = True
                self.log("info", "~/pointcloud: the cloud ingest process is not ready yet: clouds are ingested in "
                                 "this process until it is")
            if state not in (STARTING, FAILED, None):  # ready (or it died just now: then WorkerError)
                try:
                    cloud = self._ingest_by_process(process, msg, T, q, stamp)
                except WorkerError as exc:  # it died with this cloud (or just before it): restarting
                    self.report.lost += 1
                    self.log("warning", f"~/pointcloud: cloud not ingested ({msg.width}x{msg.height} points): {exc}")
                    return
                child_ms = process.child_seconds * 1e3
            else:
                cloud = self.ingest.ingest(layout_of(msg), msg.data, T.rotation, T.translation, q,
                                           msg.header.frame_id, stamp)
        except InvalidInputError as exc:
            reason = f"~/pointcloud: cloud refused ({msg.width}x{msg.height} points, frame {msg.header.frame_id!r}): {exc}"
            self.report.refused += 1
            self.report.last_refusal = reason
            self.on_refused(reason)
            return
        self.report.ingest_ms = (time.perf_counter() - t0) * 1e3
        self.report.ingest_child_ms = child_ms
        self._swap(cloud, "fresh", arrival)
        self.report.accepted += 1  # after the swap: a reader that sees the count sees the cloud in use and "fresh"
        self.report.ingest_node_cpu_ms = (time.thread_time() - cpu0) * 1e3

    def _ingest_by_process(self, process: IngestProcess, msg: PointCloud2, T: pin.SE3, q: np.ndarray, stamp: float):
        """The cloud filtered by the ingest process, its octree built here."""
        self_filter = self.ingest.self_filter  # its tables as refresh_robot left them (this thread's)
        shapes = self_filter.shapes
        rotations, translations = self_filter.placements(q, shapes)
        filtered = process.run(layout_of(msg), msg.data, T.rotation, T.translation, self_filter.version, shapes,
                               rotations, translations)
        return self.ingest.perceived(filtered, msg.header.frame_id, stamp)

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
        r.ingest_process, r.ingest_restarts = self._process_state()
        q = self.current_q()
        if q is not None and r.points:
            with self.lock:  # the collision model must not change during the query
                _, r.closest_link, r.closest_distance = self._closest.query(q)
        return r

    def _process_state(self) -> tuple[str, int]:
        """(what the ingest process is doing, its restarts) for the report."""
        process = self.process
        if process is None:
            return "none: clouds are ingested in this process", 0
        state = process.state
        if state == READY:
            text = f"ready (pid {process.pid})"
        elif state == FAILED:
            text = f"failed: clouds are ingested in this process ({process.reason})"
        else:
            text = f"{state}: {process.reason}" if process.reason else state
        return text, process.crashes

    def points(self) -> np.ndarray:
        cloud = self.scene.perceived_cloud
        return np.zeros((0, 3)) if cloud is None else cloud.points

    def destroy(self) -> None:
        """End the thread, then the ingest process (and its shared memory)."""
        with self._wake:
            self._stop = True
            self._wake.notify()
        self._thread.join(timeout=5.0)  # the subscription and the service belong to the node's session
        if self.process is not None:
            self.process.stop()
