"""The point-cloud ingest in its own process against in-process (issue 32: <= 10 ms for 20 000 points, off
the node's process). Prints, asserts nothing.

Input: ``mock_camera``'s default 20 000-ray clouds (bench_ingest.py's ``camera_clouds``: the table, a box and
the arm, ``--clouds`` arm configurations), the shipped perception defaults, the self-filter at each cloud's
configuration; two cases, the table kept and cropped (``crop_min`` z 0.005, as config/panda.yaml). The two
paths alternate cloud by cloud, ``--repeat`` clouds each, after two warm-up rounds:

* ``in-process`` (before): ``CloudIngest.ingest`` in this thread, what the ``pointcloud`` thread did per
  cloud: ``wall`` and this thread's CPU time (``node_cpu``: time it ran Python or numpy, so held the GIL).
* ``process`` (after): what ``PointCloudInput`` does now. In this process: the self-filter's placements
  (``placements``), ``IngestProcess.run`` (``run``: sending the payload, the wait, copying the result out of
  shared memory; ``run_cpu`` is this thread's CPU time in it, the wait excluded) and the octree
  (``octree``: ``CloudIngest.perceived``, coal.makeOctree, which holds the GIL); ``wall`` and ``node_cpu`` of
  the three. In the child: ``child`` (decode to cells and the write to shared memory, its own clock) and
``child_cpu`` (its CPU time in that: on a loaded machine the wall time is also the wait for a CPU).

``probe_late`` (both paths): a thread of this process that sleeps to 1 ms deadlines (as a 1 kHz tick)
during the ingests; how late it woke [ms], p99 and max over the run: what holding the GIL (or the CPU)
does to a tick; for the process path also by the phase its deadline fell in (``_run``: while this thread
waited for the child; ``_octree``).
The swap into the scene and the barriers' tables after it are the same in both paths (bench_ingest.py's
``prepare``) and not timed here.

    python bench/bench_ingest_process.py [--repeat 200] [--clouds 20] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import threading
import time

import numpy as np

from bench_ingest import camera_clouds

CASES = ("table kept", "table cropped")
IN_PROCESS = ("wall", "node_cpu", "probe_late")
PROCESS = ("wall", "node_cpu", "placements", "run", "run_cpu", "octree", "child", "child_cpu", "probe_late",
           "probe_late_run", "probe_late_octree")


class TickProbe:
    """A thread that sleeps to 1 ms deadlines and records how late it woke [ms]."""

    def __init__(self) -> None:
        self.late: list[tuple[float, float]] = []  # (deadline [s, perf_counter], how late [ms])
        self._stop = False
        self._thread = threading.Thread(target=self._run, name="probe", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        deadline = time.perf_counter()
        while not self._stop:
            deadline += 1e-3
            delay = deadline - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            now = time.perf_counter()
            self.late.append((deadline, (now - deadline) * 1e3))
            if now - deadline > 1e-3:
                deadline = now  # missed: start again from now

    def take(self, start: float = -math.inf, end: float = math.inf) -> list[float]:
        """How late it woke [ms] for the deadlines in [start, end); forgets every sample."""
        late, self.late = self.late, []
        return [ms for deadline, ms in late if start <= deadline < end]

    def stop(self) -> None:
        self._stop = True
        self._thread.join()


def measure(clouds: int, repeat: int, seed: int) -> dict:
    scene, layout, payloads = camera_clouds(clouds, seed)
    import roboplan_ik_ros
    from roboplan_ik_ros.core.config import PerceptionConfig
    from roboplan_ik_ros.core.model.ingest_process import IngestProcess
    from roboplan_ik_ros.core.model.perceived_cloud import CloudIngest

    results = {"tree": str(roboplan_ik_ros.__file__), "points": layout.width * layout.height}
    R, t = np.eye(3), np.zeros(3)
    probe = TickProbe()
    for case, crop_z in zip(CASES, (-math.inf, 0.005)):
        config = PerceptionConfig(crop_min=[-math.inf, -math.inf, crop_z])
        ingest = CloudIngest(scene, config)
        process = IngestProcess(config)
        if not process.wait_ready(120.0):
            raise SystemExit(f"the ingest process did not start: {process.reason}")
        sf = ingest.self_filter
        before = {s: [] for s in IN_PROCESS}
        after = {s: [] for s in PROCESS}
        kept = []
        for i in range(repeat + 2):  # two warm-up rounds
            q, data = payloads[i % clouds]
            w0, c0 = time.perf_counter(), time.thread_time()
            reference = ingest.ingest(layout, data, R, t, q)
            w1, c1 = time.perf_counter(), time.thread_time()
            time.sleep(0.003)  # the probe's late wakes recorded
            late_before = probe.take(w0, w1)
            w2, c2 = time.perf_counter(), time.thread_time()
            rotations, translations = sf.placements(q, sf.shapes)
            w3, c3 = time.perf_counter(), time.thread_time()
            filtered = process.run(layout, data, R, t, sf.version, sf.shapes, rotations, translations)
            w4, c4 = time.perf_counter(), time.thread_time()
            cloud = ingest.perceived(filtered)
            w5, c5 = time.perf_counter(), time.thread_time()
            time.sleep(0.003)
            samples = list(probe.late)
            late_after = probe.take(w2, w5)
            late_run = [ms for deadline, ms in samples if w3 <= deadline < w4]
            late_octree = [ms for deadline, ms in samples if w4 <= deadline < w5]
            if cloud.size != reference.size or not np.array_equal(cloud.points, reference.points):
                raise SystemExit("the process path's cloud differs from the in-process one")
            if i < 2:
                continue
            for key, value in zip(IN_PROCESS[:2], (w1 - w0, c1 - c0)):
                before[key].append(value * 1e3)
            before["probe_late"] += late_before
            for key, value in zip(PROCESS[:8], (w5 - w2, c5 - c2, w3 - w2, w4 - w3, c4 - c3, w5 - w4,
                                                process.child_seconds, process.child_cpu_seconds)):
                after[key].append(value * 1e3)
            after["probe_late"] += late_after
            after["probe_late_run"] += late_run
            after["probe_late_octree"] += late_octree
            kept.append(cloud.size)
        process.stop()
        results[case] = {"in-process": before, "process": after, "kept": float(np.mean(kept))}
    probe.stop()
    return results


def table(result: dict) -> str:
    lines = [f"roboplan_ik_ros from {result['tree']}; {result['points']} rays per cloud"]
    for case in CASES:
        r = result[case]
        lines.append(f"\n{case}: {r['kept']:.0f} points kept (mean)")
        lines.append(f"  {'[ms]':<22} {'median':>8} {'p95':>8} {'max':>8}")
        for path, keys in (("in-process", IN_PROCESS), ("process", PROCESS)):
            for key in keys:
                x = np.asarray(r[path][key])
                if not len(x):
                    lines.append(f"  {path + ' ' + key:<22} {'-':>8}")
                    continue
                stat = "p99" if key.startswith("probe_late") else "p95"
                high = np.percentile(x, 95 if stat == "p95" else 99)
                lines.append(f"  {path + ' ' + key:<22} {np.median(x):8.3f} {high:8.3f} {x.max():8.3f}"
                             + ("   (p99 in the p95 column)" if stat == "p99" else ""))
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeat", type=int, default=200, help="clouds per path and case")
    p.add_argument("--clouds", type=int, default=20, help="distinct clouds (arm configurations)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print the samples as JSON")
    args = p.parse_args()
    result = measure(args.clouds, args.repeat, args.seed)
    print(json.dumps(result) if args.json else table(result))


if __name__ == "__main__":
    main()
