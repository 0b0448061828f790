"""Perceived-cloud collision cost: the compiled kernel's pair query and the whole barrier update with a
cloud near the arm (issue 20). Prints, asserts nothing.

Scene: the Panda with its hand lowered (the configuration of test_collision_rows' corner box), a
20 000-point cloud (seeded; 3 mm noise): a table 4 cm under the fingertips and a box 3 cm beside the hand,
voxelized at 1 and 2 cm (the perception's voxel filter) and put into the scene as the perceived cloud.
Rows per voxel size: the cloud's cells; the hand's and the forearm's (panda_link5) distance to the
cloud, one kernel pair query each (``pdk_distances``, the narrow phase alone); ``ClosestPairs.query``
(4 closest ``perceived`` pairs: broad and narrow phase) and ``CollisionBarrier.update`` (4 pairs,
rows_per_pair 5: the query and the rows) at that configuration and at 50 others around it; medians
and maxima in microseconds over ``--repeat`` calls each.

    python bench/bench_cloud.py [--repeat 200]

Uses the roboplan_ik_ros on the Python path (else this checkout's): run it with another tree's
package first on PYTHONPATH to measure that tree's kernel.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pinocchio as pin

try:
    import roboplan_ik_ros  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "roboplan_ik_ros"))

from roboplan_ik_ros.core import CollisionBarrier, Oink, Scene  # noqa: E402
from roboplan_ik_ros.core.config import PerceptionConfig  # noqa: E402
from roboplan_ik_ros.core.model.closest_pairs import ClosestPairs  # noqa: E402
from roboplan_ik_ros.core.model.perceived_cloud import CloudIngest  # noqa: E402
from roboplan_ik_ros.core.model.point_cloud import voxel_filter  # noqa: E402
from roboplan_ik_ros.core.model.robots import load_example_robot  # noqa: E402

LOWERED = np.array([0.0, 0.35, 0.0, -1.9, 0.0, 2.2, 0.785])  # the hand about 0.4 m over the floor


def timed(fn, repeat: int) -> tuple[float, float]:
    """(median, max) of ``repeat`` calls [us]."""
    fn()
    t = np.empty(repeat)
    for i in range(repeat):
        t0 = time.perf_counter()
        fn()
        t[i] = time.perf_counter() - t0
    return float(np.median(t) * 1e6), float(t.max() * 1e6)


def cloud_points(scene: Scene, q: np.ndarray, n: int, rng) -> np.ndarray:
    """A table 4 cm under the fingertips (10 cm under the hand's hull) and a box 3 cm beside the hand (+y),
    n points, 3 mm noise."""
    data, geom_data = scene.create_data()
    pin.forwardKinematics(scene.model, data, q)
    pin.updateGeometryPlacements(scene.model, data, scene.collision_model, geom_data)
    gm = scene.collision_model
    hand = gm.getGeometryId("panda_hand_0")
    pts = np.array(gm.geometryObjects[hand].geometry.points()) @ geom_data.oMg[hand].rotation.T \
        + geom_data.oMg[hand].translation
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    n_table = n * 3 // 4
    table = np.c_[rng.uniform(lo[0] - 0.3, lo[0] + 0.3, n_table), rng.uniform(lo[1] - 0.4, hi[1] + 0.4, n_table),
                  np.full(n_table, lo[2] - 0.10)]
    size = np.array([0.1, 0.1, 0.15])
    center = np.array([(lo[0] + hi[0]) / 2, hi[1] + 0.03 + size[1] / 2, lo[2] - 0.10 + size[2] / 2])
    m = n - n_table
    box = rng.uniform(-size / 2, size / 2, (m, 3))
    axis = rng.integers(0, 3, m)
    box[np.arange(m), axis] = np.where(rng.random(m) < 0.5, -1, 1) * (size / 2)[axis]
    return np.vstack([table, box + center]) + rng.normal(0.0, 0.003, (n, 3))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeat", type=int, default=200)
    p.add_argument("--points", type=int, default=20000)
    args = p.parse_args()
    r = load_example_robot("panda")
    scene = Scene(r.urdf_xml, r.srdf_xml, r.package_paths)
    q0 = scene.neutral().copy()
    q0[:7] = LOWERED
    rng = np.random.default_rng(0)
    raw = cloud_points(scene, q0, args.points, rng)
    others = []
    for _ in range(50):
        q = q0.copy()
        q[:7] += rng.uniform(-0.1, 0.1, 7)
        others.append(q)
    print(f"roboplan_ik_ros from {Path(roboplan_ik_ros.__file__).parent}")
    for voxel in (0.01, 0.02):
        cells = voxel_filter(raw, voxel)
        ingest = CloudIngest(scene, PerceptionConfig(voxel_size=voxel, octree_resolution=voxel))
        scene.set_perceived_cloud(ingest.cloud(cells))
        oink = Oink(scene, "arm")
        pairs = ClosestPairs(scene, 4, 0.2, "perceived")
        barrier = CollisionBarrier(oink, 4, 0.002, pairs="perceived", rows_per_pair=5, broad_phase_cutoff=0.2)
        assert pairs.compiled is not None, pairs.compiled_reason
        data, geom_data = oink.data, oink.geom_data
        model = scene.model

        def kinematics(q):
            pin.computeJointJacobians(model, data, q)
            pin.updateFramePlacements(model, data)
            pin.updateGeometryPlacements(model, data, scene.collision_model, geom_data)

        kinematics(q0)
        octree = scene.world.perceived.octree
        print(f"\n== voxel {voxel * 100:g} cm: {len(cells)} cells (octree resolution {octree.getResolution():g} m)")
        names = [f"{scene.collision_model.geometryObjects[int(a)].name}" for a in pairs.first]
        for link in ("panda_hand_0", "panda_link5_0"):
            k = np.array([names.index(link)], dtype=np.int64)
            out = np.zeros(1)
            med, mx = timed(lambda: pairs.distances(data, geom_data, k, 1, out), args.repeat)
            print(f"  {link:>14} <-> cloud: distance {out[0] * 1e3:7.2f} mm, one pair query median {med:8.1f} us, "
                  f"max {mx:8.1f} us")
        med, mx = timed(lambda: pairs.query(data, geom_data), args.repeat)
        res = pairs.query(data, geom_data)
        print(f"  ClosestPairs.query (4 perceived pairs): median {med:8.1f} us, max {mx:8.1f} us; "
              f"{pairs.narrow_phase_calls} narrow-phase pairs, closest {res.distance[0] * 1e3:.2f} mm")
        med, mx = timed(lambda: barrier.update(q0, data, geom_data), args.repeat)
        print(f"  CollisionBarrier.update (4 pairs x 5 rows): median {med:8.1f} us, max {mx:8.1f} us; "
              f"{barrier.rows.count} rows")
        times = []
        for q in others:
            kinematics(q)
            times.append(timed(lambda: barrier.update(q, data, geom_data), max(1, args.repeat // 20)))
        med = np.median([t[0] for t in times])
        print(f"  CollisionBarrier.update over 50 configurations around it: median of medians {med:8.1f} us, "
              f"worst max {max(t[1] for t in times):8.1f} us")


if __name__ == "__main__":
    main()
