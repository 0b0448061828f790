"""IngestProcess: a point cloud's numpy ingest in a child process, its result handed back through shared
memory, so that no millisecond of it holds the node's interpreter lock (GIL). ROS-free.

The child (a :class:`~roboplan_ik_ros.core.child_process.SupervisedChild`: started, restarted on death,
stopped, never an orphan) runs :class:`~.cloud_filter.CloudFilter` - decode, into the world frame,
crop, voxel filter, self-filter, the octree's cells - on what its parent sends per cloud: the payload
(raw bytes, not pickled) and its layout, ``T_world_sensor``, and the self-filter's link geometry at
the last command (the geometry tables, sent again only when they changed: an attached object; and
each geometry's world placement). It writes the kept points and the cells into a
:class:`~.shared_cloud.SharedCloudSlot` and answers on the pipe; the parent copies them out and builds
the octree (:meth:`~.perceived_cloud.CloudIngest.perceived`: coal's, which only the node's process can
hold) before it swaps the cloud into the scene between two ticks.

What stays in the parent per cloud: the self-filter's placements (forward kinematics, one product per
geometry), sending the request (the payload's write releases the GIL), copying the result out of the
slot and ``coal.makeOctree`` (it holds the GIL: ~0.3-2 ms for 300-3000 points; measured in
bench/bench_ingest_process.py).

One request at a time; the parent grows the slot (a new segment, the old one unlinked) when a cloud may
not fit (``cloud_rows``: width * height, bounded by the payload's size), and tells the child its name
with the next request. A refused cloud
answers "invalid" with :class:`InvalidInputError`'s text, the same as in-process; an unexpected error
in the child answers "failed" (raised as ``RuntimeError``: a bug, as in-process); no answer within
``answer_timeout`` means a wedged child: killed and restarted. Until the child is ready (starting,
restarting, failed, stopped) :meth:`IngestProcess.run` raises
:class:`~roboplan_ik_ros.core.child_process.WorkerError`.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..child_process import (SupervisedChild, answer, build_or_report, child_started, preload_in_forkserver,
                             report_ready)
from ..errors import InvalidInputError
from .cloud_filter import FilteredCloud, cloud_rows
from .point_cloud import PointCloudLayout
from .shared_cloud import SharedCloudSlot

preload_in_forkserver(__name__)  # the fork server imports this module (numpy, the filter) before it forks one


@dataclass
class IngestSpec:
    """What the child needs to build its :class:`CloudFilter` (picklable): the ``perception:`` section
    (a ``PerceptionConfig``)."""

    config: object


# ------------------------------------------------------------------------------------------ child
def _ingest_main(conn, spec: IngestSpec, parent_pid: int) -> None:
    """The child process: build the filter, say "ready", answer requests until "stop" or EOF."""
    child_started(parent_pid)
    t0 = time.perf_counter()
    def build():
        from .cloud_filter import CloudFilter
        from .self_filter import robot_mask_at

        return CloudFilter(spec.config), float(spec.config.self_filter_padding), robot_mask_at

    built, value = build_or_report(conn, build)
    if not built or not report_ready(conn, t0):
        return  # the start-up failed (the parent was told why) or the parent is gone
    cloud_filter, padding, robot_mask_at = value
    slot: SharedCloudSlot | None = None
    shapes: Sequence = ()
    try:
        while True:
            try:
                msg = conn.recv()
                if msg[0] != "ingest":
                    return  # "stop"
                data = conn.recv_bytes()
            except (EOFError, OSError):
                return  # the parent closed its end or died
            _, rid, segment, layout, R_world_sensor, t_world_sensor, new_shapes, rotations, translations = msg
            started, started_cpu = time.perf_counter(), time.thread_time()

            def ingest() -> tuple:
                nonlocal slot, shapes
                if segment is not None:  # a new (bigger) slot
                    if slot is not None:
                        slot.close()
                        slot = None
                    slot = SharedCloudSlot.attach(segment)
                if new_shapes is not None:
                    shapes = new_shapes
                filtered = cloud_filter.run(layout, data, R_world_sensor, t_world_sensor,
                                            lambda points: robot_mask_at(points, shapes, rotations, translations,
                                                                         padding))
                slot.write(rid, filtered)
                return ("done", rid, time.perf_counter() - started, time.thread_time() - started_cpu)

            if not answer(conn, rid, ingest):
                return
    finally:
        if slot is not None:
            slot.close()


# ----------------------------------------------------------------------------------------- parent
class IngestProcess(SupervisedChild):
    """The cloud ingest child for ``config`` (a ``PerceptionConfig``); see the module docstring.

    Args:
        config: the ``perception:`` section the child filters with.
        on_event: ``on_event(level, message)``, from the monitor thread: ready, died, restarting, failed.
        start: start at once (in the background).
        start_method: "spawn" or "forkserver" (the node: its fork server).
        start_timeout: [s] a child that is not ready within this counts as a failed start.
        answer_timeout: [s] a request without an answer by then: the child is wedged (killed, restarted).
        restart_interval: [s] least time between two starts.
        max_start_failures: consecutive starts that end before "ready" after which it gives up (then
            the caller ingests in its own process).
    """

    label = "cloud ingest"
    process_name = "cloud_ingest"
    builds = "filter"

    def __init__(self, config, *, on_event: Callable[[str, str], None] | None = None, start: bool = True,
                 start_method: str = "spawn", start_timeout: float = 60.0, answer_timeout: float = 10.0,
                 restart_interval: float = 1.0, max_start_failures: int = 3) -> None:
        super().__init__(on_event=on_event, start_method=start_method, start_timeout=start_timeout,
                         restart_interval=restart_interval, max_start_failures=max_start_failures)
        self.config = config
        self.answer_timeout = float(answer_timeout)
        self._slot: SharedCloudSlot | None = None  # touched with _request_lock held only
        self.child_seconds = math.nan  # [s] the last cloud's filter in the child (its own clock)
        self.child_cpu_seconds = math.nan  # [s] of that, its CPU time (the rest: waiting for a CPU)
        if start:
            self.start()

    def _child_main(self):
        return _ingest_main, (IngestSpec(self.config), os.getpid())

    @property
    def segment(self) -> str | None:
        """The shared-memory segment's name (under /dev/shm), None before the first cloud or after stop."""
        slot = self._slot
        return None if slot is None else slot.name

    def stop(self, timeout: float = 1.0) -> None:
        """Stop the child (see :meth:`SupervisedChild.stop`) and unlink the shared-memory segment."""
        super().stop(timeout)
        locked = self._request_lock.acquire(timeout=timeout)  # a request that outlived its child ends first
        try:
            slot, self._slot = self._slot, None
            if slot is not None:
                slot.unlink()
                if locked:  # else the mapping is left to the garbage collector: its reader may still copy
                    slot.close()
        finally:
            if locked:
                self._request_lock.release()

    def _grow(self, rows: int) -> None:
        """A slot of at least ``rows`` rows (``_request_lock`` held): a new segment when this one is smaller
        (twice the old, so that a slowly growing cloud does not make one per cloud)."""
        slot = self._slot
        if slot is not None and slot.capacity >= rows:
            return
        bigger = SharedCloudSlot.create(max(rows, 2 * slot.capacity if slot is not None else 0))
        self._slot = bigger
        if slot is not None:  # the child is between two requests: it attaches the new one with the next
            slot.unlink()
            slot.close()

    def run(self, layout: PointCloudLayout, data, R_world_sensor: np.ndarray, t_world_sensor: np.ndarray,
            shapes_version: int, shapes: Sequence, rotations: np.ndarray, translations: np.ndarray) -> FilteredCloud:
        """:meth:`CloudFilter.run` in the child, the self-filter's ``shapes`` (read at ``shapes_version``:
        sent only when the child has not had them) placed at ``rotations`` (S, 3, 3), ``translations``
        (S, 3). Blocks for at most ``answer_timeout``. Raises InvalidInputError for a refused payload (the
        same text as in-process), WorkerError when the child cannot answer, RuntimeError when the
        filter failed in the child."""
        rows = cloud_rows(layout, memoryview(data).nbytes)
        if rows > self.config.max_points:
            rows = 0  # refused by the child before it writes anything

        def for_child(child):
            segment = None if child.sent.get("segment") == self._slot.name else self._slot.name
            new_shapes = None if child.sent.get("shapes") == shapes_version else list(shapes)
            child.sent["segment"], child.sent["shapes"] = self._slot.name, shapes_version
            return segment, new_shapes

        with self._request_lock:
            self._grow(rows)
            child, rid, (segment, new_shapes) = self._begin_request(for_child)
            message = ("ingest", rid, segment, layout, np.asarray(R_world_sensor, dtype=float),
                       np.asarray(t_world_sensor, dtype=float), new_shapes, rotations, translations)
            self._send(child, message, data)  # the payload as it is: any bytes-like object, not pickled
            reply = self._await_reply(child, rid, time.monotonic() + self.answer_timeout, "while ingesting this cloud")
            if reply is None:
                raise self._kill_wedged(child, f"the cloud ingest process (pid {child.process.pid}) did not answer "
                                               f"within {self.answer_timeout:g} s: killed")
            if reply[0] == "done":
                self.child_seconds, self.child_cpu_seconds = float(reply[2]), float(reply[3])
                return self._slot.read(rid)
            if reply[0] == "invalid":
                raise InvalidInputError(reply[2])
            raise RuntimeError(f"the cloud filter failed in the cloud ingest process: {reply[2]}")

