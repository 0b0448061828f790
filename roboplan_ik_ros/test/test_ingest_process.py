"""core/model/ingest_process.py (a cloud's numpy ingest in a child process, its result through shared memory):
the same points, cells, counts and refusals as the in-process CloudIngest for random clouds (layouts,
frames, configurations, an attached object, a cloud that outgrows the shared slot); a killed child is
restarted and answers the same again; stop, and the parent's death, leave no process and no /dev/shm
segment.

No test asserts a time or a rate: the timeouts only bound how long something may take to happen.
"""

from __future__ import annotations

import dataclasses
import math
import os
import signal
import subprocess
import sys

import numpy as np
import pinocchio as pin
import pytest

from conftest import wait_until
from models import robot
from roboplan_ik_ros.core import Scene
from roboplan_ik_ros.core.child_process import READY, RESTARTING, STOPPED, WorkerError
from roboplan_ik_ros.core.config import PerceptionConfig
from roboplan_ik_ros.core.errors import InvalidInputError
from roboplan_ik_ros.core.model.ingest_process import IngestProcess
from roboplan_ik_ros.core.model.obstacles import Obstacle
from roboplan_ik_ros.core.model.perceived_cloud import CloudIngest
from roboplan_ik_ros.core.model.point_cloud import PointCloudLayout, PointField
from roboplan_ik_ros.core.model.shared_cloud import MIN_CAPACITY

from test_ik_worker import alive, child_pids
from test_perceived_cloud import arm_surface, box_surface

READY_TIMEOUT = 60.0  # [s] a child interpreter importing numpy and pinocchio on a loaded machine
SHM = "/dev/shm"
ROD = Obstacle("rod", "cylinder", (0.01, 0.3), position=(0.0, 0.0, 0.25), frame="panda_hand")
CONFIGS = {  # two perception sections: every stage's options differ
    "defaults": PerceptionConfig(),
    "cropped, coarse, 2 per voxel": PerceptionConfig(voxel_size=0.03, min_points_per_voxel=2, octree_resolution=0.025,
                                                     self_filter_padding=0.01, crop_min=[-0.8, -math.inf, 0.005],
                                                     crop_max=[1.2, 0.9, math.inf], max_points=30000),
}


def fresh_scene() -> Scene:
    r = robot("panda")
    return Scene(r.urdf_xml, r.srdf_xml, r.package_paths)


def random_q(scene: Scene, rng) -> np.ndarray:
    q = scene.named_configuration("default")
    q[:7] += rng.uniform(-0.4, 0.4, 7)
    return np.clip(q, scene.model.lowerPositionLimit, scene.model.upperPositionLimit)


def rod_surface(scene: Scene, q, n: int, rng) -> np.ndarray:
    """``n`` points on the surface of ROD attached to the hand, at q (world frame)."""
    data = scene.model.createData()
    pin.framesForwardKinematics(scene.model, data, q)
    T = data.oMf[scene.model.getFrameId("panda_hand")]
    angle = rng.uniform(0, 2 * np.pi, n)
    local = np.column_stack([0.01 * np.cos(angle), 0.01 * np.sin(angle), 0.25 + rng.uniform(-0.15, 0.15, n)])
    return local @ T.rotation.T + T.translation


def world_points(scene: Scene, q, n: int, rng, rod: bool = False) -> np.ndarray:
    """A scene's worth of points: on the arm, on two boxes, scattered (and on the rod), NaN for a tenth."""
    parts = [arm_surface(scene, q, n // 4, rng), box_surface([0.5, 0.2, 0.3], [0.2, 0.1, 0.3], n // 4, rng),
             box_surface([0.35, 0.0, -0.03], [1.2, 1.2, 0.04], n // 4, rng)]
    if rod:
        parts.append(rod_surface(scene, q, n // 8, rng))
    parts.append(rng.uniform(-1.0, 1.2, (n - sum(len(p) for p in parts), 3)))
    points = np.vstack(parts)[rng.permutation(n)]
    points[rng.random(n) < 0.1] = np.nan
    return points


def random_payload(points_world: np.ndarray, rng) -> tuple[PointCloudLayout, bytes, np.ndarray, np.ndarray]:
    """(layout, data, R_world_sensor, t_world_sensor): the points in a random sensor frame, in one of three
    layouts: x, y, z float32 with a padded point and organized rows; float64 big-endian in one row; float32
    fields out of order (no (N, 3) view: one field at a time)."""
    R = pin.Quaternion(*rng.normal(size=4)).normalized().matrix()
    t = rng.uniform(-1.0, 1.0, 3)
    sensor = (points_world - t) @ R  # R^T (p - t)
    n = len(sensor)
    kind = int(rng.integers(3))
    if kind == 0:  # float32 x, y, z at 0, 4, 8 of a 16-byte point; organized, padded rows
        height = next(h for h in (4, 3, 2, 1) if n % h == 0)
        width = n // height
        row_step = 16 * width + 8
        grid = np.zeros((height, row_step), dtype=np.uint8)
        cells = np.zeros((height, width, 4), dtype="<f4")
        cells[..., :3] = sensor.reshape(height, width, 3)
        grid[:, :16 * width] = cells.view(np.uint8).reshape(height, 16 * width)
        fields = [PointField(c, 4 * k, 7, 1) for k, c in enumerate("xyz")] + [PointField("rgb", 12, 7, 1)]
        return PointCloudLayout(fields, width, height, 16, row_step, False, False), grid.tobytes(), R, t
    if kind == 1:  # float64 big-endian, one row
        data = sensor.astype(">f8").tobytes()
        fields = [PointField(c, 8 * k, 8, 1) for k, c in enumerate("xyz")]
        return PointCloudLayout(fields, n, 1, 24, 24 * n, True, False), data, R, t
    point = np.dtype({"names": ["z", "x", "y"], "formats": ["<f4"] * 3, "offsets": [0, 4, 8], "itemsize": 12})
    rows = np.zeros(n, dtype=point)
    rows["x"], rows["y"], rows["z"] = sensor[:, 0], sensor[:, 1], sensor[:, 2]
    fields = [PointField("z", 0, 7, 1), PointField("x", 4, 7, 1), PointField("y", 8, 7, 1)]
    return PointCloudLayout(fields, n, 1, 12, 12 * n, False, False), rows.tobytes(), R, t


def through(process: IngestProcess, ingest: CloudIngest, layout, data, R, t, q):
    """The process path as the node runs it: placements here, the filter in the child, the octree here."""
    sf = ingest.self_filter
    rotations, translations = sf.placements(q, sf.shapes)
    return ingest.perceived(process.run(layout, data, R, t, sf.version, sf.shapes, rotations, translations))


def assert_same(mine, reference) -> None:
    assert np.array_equal(mine.points, reference.points), (mine.size, reference.size)
    assert (mine.cells is None) == (reference.cells is None)
    if reference.cells is not None:
        assert np.array_equal(mine.cells, reference.cells), (len(mine.cells), len(reference.cells))
    assert (mine.received, mine.invalid, mine.cropped, mine.self_points) == \
        (reference.received, reference.invalid, reference.cropped, reference.self_points)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_the_process_gives_the_in_process_ingests_points_cells_counts_and_refusals(name):
    config = CONFIGS[name]
    rng = np.random.default_rng(sum(map(ord, name)))
    scene = fresh_scene()
    ingest = CloudIngest(scene, config)
    process = IngestProcess(config)
    without_rod = CloudIngest(fresh_scene(), config)
    segments, self_points, rod_points = set(), 0, 0
    try:
        assert process.wait_ready(READY_TIMEOUT), process.reason
        sizes = [300, 2500, 5000, 25000, 800, 3000, 1200, 4000]  # 5000 and 25000 outgrow the slot (4096, 8192 rows)
        for k, n in enumerate(sizes):
            rod = k >= 5
            if k == 5:  # an attached object: the child must get the new tables
                scene.add_obstacle(ROD)
                ingest.refresh_robot()
            q = random_q(scene, rng)
            layout, data, R, t = random_payload(world_points(scene, q, n, rng, rod), rng)
            reference = ingest.ingest(layout, data, R, t, q)
            mine = through(process, ingest, layout, data, R, t, q)
            assert_same(mine, reference)
            segments.add(process.segment)
            self_points += reference.self_points
            if rod:  # what the rod's tables remove: a child with the old tables would keep them
                rod_points += reference.self_points - without_rod.ingest(layout, data, R, t, q).self_points
        assert self_points > 0 and rod_points > 0  # the self-filter had work, the rod's part of it
        assert len(segments) >= 2 and process.starts == 1  # the slot grew; one child did it all
        # refusals: the same text from the child
        q = random_q(scene, rng)
        layout, data, R, t = random_payload(world_points(scene, q, 400, rng), rng)
        bad = [(dataclasses.replace(layout, row_step=layout.row_step + 1), data),  # data size
               (dataclasses.replace(layout, fields=[f for f in layout.fields if f.name != "z"]), data),
               (dataclasses.replace(layout, is_dense=True), data),  # NaN in a dense cloud
               (dataclasses.replace(layout, width=config.max_points + 1, height=1), data)]  # too many points
        for bad_layout, bad_data in bad:
            with pytest.raises(InvalidInputError) as theirs:
                through(process, ingest, bad_layout, bad_data, R, t, q)
            with pytest.raises(InvalidInputError) as ours:
                ingest.ingest(bad_layout, bad_data, R, t, q)
            assert str(theirs.value) == str(ours.value)
        assert_same(through(process, ingest, layout, data, R, t, q), ingest.ingest(layout, data, R, t, q))
    finally:
        process.stop()


def test_a_killed_ingest_process_is_restarted_and_its_successor_gives_the_same_cloud():
    config = CONFIGS["defaults"]
    rng = np.random.default_rng(7)
    scene = fresh_scene()
    scene.add_obstacle(ROD)
    ingest = CloudIngest(scene, config)
    events = []
    process = IngestProcess(config, restart_interval=0.0, on_event=lambda level, msg: events.append((level, msg)))
    try:
        assert process.wait_ready(READY_TIMEOUT), process.reason
        q = random_q(scene, rng)
        layout, data, R, t = random_payload(world_points(scene, q, 6000, rng, rod=True), rng)
        assert_same(through(process, ingest, layout, data, R, t, q), ingest.ingest(layout, data, R, t, q))
        victim = process.pid
        os.kill(victim, signal.SIGKILL)
        wait_until(lambda: process.crashes == 1, 30.0, "the death noticed")
        assert process.state != READY or process.pid != victim
        assert process.wait_ready(READY_TIMEOUT), process.reason
        assert process.pid != victim and not alive(victim)
        assert any(level == "warning" and "SIGKILL" in msg and "restarting" in msg for level, msg in events), events
        # the new child gets the slot's name and the self-filter's tables anew (the rod's points removed)
        q = random_q(scene, rng)
        layout, data, R, t = random_payload(world_points(scene, q, 3000, rng, rod=True), rng)
        assert_same(through(process, ingest, layout, data, R, t, q), ingest.ingest(layout, data, R, t, q))
    finally:
        process.stop()


def test_a_request_to_a_dead_child_fails_with_worker_error_naming_the_restart():
    config = CONFIGS["defaults"]
    scene = fresh_scene()
    ingest = CloudIngest(scene, config)
    process = IngestProcess(config, restart_interval=3600.0)  # no restart: the request meets the dead child
    try:
        assert process.wait_ready(READY_TIMEOUT), process.reason
        victim = process.pid
        os.kill(victim, signal.SIGKILL)
        wait_until(lambda: process.state == RESTARTING, 30.0, "the death noticed")
        rng = np.random.default_rng(3)
        q = random_q(scene, rng)
        layout, data, R, t = random_payload(world_points(scene, q, 500, rng), rng)
        with pytest.raises(WorkerError, match="restarting"):
            through(process, ingest, layout, data, R, t, q)
    finally:
        process.stop()


def test_stop_leaves_no_child_and_no_shared_memory_segment():
    config = CONFIGS["defaults"]
    scene = fresh_scene()
    ingest = CloudIngest(scene, config)
    process = IngestProcess(config)
    assert process.wait_ready(READY_TIMEOUT), process.reason
    rng = np.random.default_rng(5)
    q = random_q(scene, rng)
    layout, data, R, t = random_payload(world_points(scene, q, 2000, rng), rng)
    through(process, ingest, layout, data, R, t, q)
    pid, segment = process.pid, process.segment
    assert pid in child_pids() and os.path.exists(os.path.join(SHM, segment))
    process.stop()
    assert process.state == STOPPED and not alive(pid)
    assert not os.path.exists(os.path.join(SHM, segment)) and process.segment is None
    with pytest.raises(WorkerError, match="stopped"):
        through(process, ingest, layout, data, R, t, q)
    process.stop()  # idempotent
    assert process.state == STOPPED


PARENT = """
import sys, time
import numpy as np
from roboplan_ik_ros.core.config import PerceptionConfig
from roboplan_ik_ros.core.model.ingest_process import IngestProcess
from roboplan_ik_ros.core.model.point_cloud import PointCloudLayout, PointField

if __name__ == "__main__":
    p = IngestProcess(PerceptionConfig())
    assert p.wait_ready(60.0), p.reason
    points = np.random.default_rng(0).uniform(-1, 1, (MIN_ROWS, 3)).astype("<f4")
    layout = PointCloudLayout([PointField(c, 4 * k, 7, 1) for k, c in enumerate("xyz")], len(points), 1, 12,
                              12 * len(points))
    p.run(layout, points.tobytes(), np.eye(3), np.zeros(3), 0, [], np.zeros((0, 3, 3)), np.zeros((0, 3)))
    print(p.pid, p.segment, flush=True)
    time.sleep(600)
"""


def test_a_killed_parent_leaves_no_child_and_no_shared_memory_segment():
    """SIGKILL: no atexit, no stop(). The child sees its parent gone and exits; multiprocessing's resource
    tracker (it ends when the parent and the child are gone) unlinks the segment the parent created."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    parent = subprocess.Popen([sys.executable, "-c", PARENT.replace("MIN_ROWS", str(MIN_CAPACITY // 2))],
                              stdout=subprocess.PIPE, text=True, env=env)
    try:
        line = parent.stdout.readline().split()
        assert len(line) == 2, f"the parent did not start its ingest process (exit {parent.poll()})"
        child, segment = int(line[0]), line[1]
        assert alive(child) and os.path.exists(os.path.join(SHM, segment))
        parent.send_signal(signal.SIGKILL)
        parent.wait(30.0)
        wait_until(lambda: not alive(child), 30.0, "the orphaned ingest process to exit")
        wait_until(lambda: not os.path.exists(os.path.join(SHM, segment)), 30.0, "the segment to be unlinked")
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        parent.stdout.close()
