"""node/pointcloud_input.py with its cloud ingest process (no ROS graph: a stand-in node hands the subscription's
callback to the test, which calls it with sensor_msgs/PointCloud2 messages): the clouds it takes equal the
in-process CloudIngest's; a killed ingest process is restarted (logged, counted) and meanwhile the cloud in
use ages and goes stale as perception.max_age and on_stale say, no cloud ingested until it is back; destroy
leaves no process and no /dev/shm segment; a cloud that comes before the process is first ready, and every
cloud when the process cannot start, is ingested in-process, logged.

No test asserts a time or a rate: the timeouts only bound how long something may take to happen.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest

from conftest import wait_until
from roboplan_ik_ros.core.child_process import FAILED, RESTARTING, STARTING
from roboplan_ik_ros.core.config import PerceptionConfig
from roboplan_ik_ros.core.model.perceived_cloud import CloudIngest
from roboplan_ik_ros.node.pointcloud_input import PointCloudInput, layout_of
from roboplan_ik_ros.sim.mock_camera import cloud_message

from test_ik_worker import alive, child_pids
from test_ingest_process import READY_TIMEOUT, SHM, fresh_scene, random_q, world_points

ROOT = "panda_link0"


class StandInNode:
    """What PointCloudInput asks of its node: a subscription and a service (their callbacks kept)."""

    def create_subscription(self, msg_type, topic, callback, qos):
        self.on_cloud = callback

    def create_service(self, srv_type, name, callback):
        self.on_clear = callback


class Rig:
    """A PointCloudInput on a Panda scene at a fixed configuration, its logs and a reference CloudIngest."""

    def __init__(self, config: PerceptionConfig, process: dict | None) -> None:
        self.scene = fresh_scene()
        self.q = random_q(self.scene, np.random.default_rng(11))
        self.node = StandInNode()
        self.logs: list[tuple[str, str]] = []
        self.reference = CloudIngest(fresh_scene(), config)
        self.input = PointCloudInput(self.node, self.scene, config, ROOT, threading.Lock(), threading.Lock(),
                                     lambda: self.q, None, lambda: None, lambda reason: None,
                                     lambda level, text: self.logs.append((level, text)), process=process)

    def message(self, seed: int):
        points = world_points(self.scene, self.q, 3000, np.random.default_rng(seed))
        return cloud_message(points.astype(np.float32), 1000, 3, ROOT)

    def expected(self, msg):
        """The in-process ingest of ``msg`` (ROOT is the world frame)."""
        return self.reference.ingest(layout_of(msg), msg.data, np.eye(3), np.zeros(3), self.q)

    def send(self, msg) -> float:
        arrival = time.monotonic()
        self.node.on_cloud(msg)
        return arrival


@pytest.mark.parametrize("on_stale", ["keep", "clear"])
def test_a_killed_ingest_process_is_restarted_and_meanwhile_the_cloud_goes_stale_as_max_age_says(on_stale):
    config = PerceptionConfig(max_age=0.5, on_stale=on_stale)
    rig = Rig(config, {"start_method": "forkserver", "restart_interval": 0.0})
    process, report = rig.input.process, rig.input.report
    gate = threading.Event()  # holds the restart until the test has seen the cloud go stale
    try:
        assert process.wait_ready(READY_TIMEOUT), process.reason
        spawn = process._spawn
        process._spawn = lambda: (gate.wait(120.0), spawn())[1]
        first = rig.message(1)
        rig.send(first)
        wait_until(lambda: report.accepted == 1, 60.0, "the first cloud ingested")
        in_use = rig.scene.perceived_cloud
        assert report.state == "fresh" and np.array_equal(in_use.points, rig.expected(first).points)
        victim = process.pid
        os.kill(victim, signal.SIGKILL)
        wait_until(lambda: process.state == RESTARTING, 30.0, "the death noticed")
        arrival = rig.send(rig.message(2))  # while the process is dead: waits, then too old to be ingested
        stale = "stale" if on_stale == "keep" else "cleared (stale)"
        wait_until(lambda: report.state == stale, 30.0, f"the cloud {stale}")
        assert report.accepted == 1 and process.state == RESTARTING  # nothing ingested meanwhile
        assert rig.scene.perceived_cloud is (in_use if on_stale == "keep" else None)
        snapshot = rig.input.snapshot()
        assert snapshot.ingest_restarts == 1 and snapshot.ingest_process.startswith("restarting"), snapshot
        assert any(level == "warning" and "SIGKILL" in text and "restarting" in text for level, text in rig.logs)
        wait_until(lambda: time.monotonic() - arrival > config.max_age, 30.0, "the waiting cloud older than max_age")
        gate.set()
        assert process.wait_ready(READY_TIMEOUT), process.reason
        assert process.pid != victim and not alive(victim)
        wait_until(lambda: report.dropped == 1, 30.0, "the cloud that waited longer than max_age dropped")
        assert report.accepted == 1 and report.state == stale  # not made fresh by a cloud older than max_age
        third = rig.message(3)
        rig.send(third)
        wait_until(lambda: report.accepted == 2, 60.0, "a cloud ingested by the new process")
        assert report.state == "fresh" and report.lost == 0
        assert np.array_equal(rig.scene.perceived_cloud.points, rig.expected(third).points)
        assert np.array_equal(rig.scene.perceived_cloud.cells, rig.expected(third).cells)
        assert rig.input.snapshot().ingest_process == f"ready (pid {process.pid})"
    finally:
        gate.set()
        rig.input.destroy()


def test_destroy_leaves_no_ingest_process_and_no_shared_memory_segment():
    rig = Rig(PerceptionConfig(max_age=30.0), {"start_method": "forkserver"})
    process, report = rig.input.process, rig.input.report
    try:
        assert process.wait_ready(READY_TIMEOUT), process.reason
        rig.send(rig.message(4))
        wait_until(lambda: report.accepted == 1, 60.0, "the cloud ingested")
        pid, segment = process.pid, process.segment
        assert report.ingest_child_ms > 0.0  # the child filtered it
        assert alive(pid) and os.path.exists(os.path.join(SHM, segment))
    finally:
        rig.input.destroy()
    assert not alive(pid) and pid not in child_pids()
    assert not os.path.exists(os.path.join(SHM, segment))
    assert not rig.input._thread.is_alive()


def test_an_ingest_process_that_cannot_start_leaves_the_clouds_to_the_in_process_ingest_logged():
    rig = Rig(PerceptionConfig(max_age=30.0), {"start_method": "forkserver", "start_timeout": 0.0,
                                               "max_start_failures": 1})
    process, report = rig.input.process, rig.input.report
    try:
        wait_until(lambda: process.state == FAILED, 30.0, "the start to fail")
        assert any(level == "error" and "ingested in this process" in text for level, text in rig.logs), rig.logs
        msg = rig.message(5)
        rig.send(msg)
        wait_until(lambda: report.accepted == 1, 60.0, "the cloud ingested in this process")
        assert report.state == "fresh" and report.ingest_child_ms == 0.0
        assert np.array_equal(rig.scene.perceived_cloud.points, rig.expected(msg).points)
        assert rig.input.snapshot().ingest_process.startswith("failed: clouds are ingested in this process")
    finally:
        rig.input.destroy()


def test_a_cloud_before_the_process_is_first_ready_is_ingested_in_this_process_logged():
    rig = Rig(PerceptionConfig(max_age=30.0), {"start_method": "forkserver", "start": False})
    process, report = rig.input.process, rig.input.report
    gate = threading.Event()  # holds the first start back
    spawn = process._spawn
    process._spawn = lambda: (gate.wait(120.0), spawn())[1]
    try:
        process.start()
        assert process.state == STARTING
        first = rig.message(6)
        rig.send(first)
        wait_until(lambda: report.accepted == 1, 60.0, "the cloud ingested in this process")
        assert process.state == STARTING and report.ingest_child_ms == 0.0
        assert np.array_equal(rig.scene.perceived_cloud.points, rig.expected(first).points)
        assert any(level == "info" and "not ready yet" in text for level, text in rig.logs), rig.logs
        gate.set()
        assert process.wait_ready(READY_TIMEOUT), process.reason
        second = rig.message(7)
        rig.send(second)
        wait_until(lambda: report.accepted == 2, 60.0, "the cloud ingested by the process")
        assert report.ingest_child_ms > 0.0
        assert np.array_equal(rig.scene.perceived_cloud.points, rig.expected(second).points)
    finally:
        gate.set()
        rig.input.destroy()
