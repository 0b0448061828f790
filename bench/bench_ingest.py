"""Perceived-cloud ingest cost per stage (issue 20: off the loop thread, <= 10 ms for 20 000 points).
Prints, asserts nothing.

Input: what ``mock_camera`` publishes with its defaults (core/model/depth_camera.py): 20 000 rays
(164 x 122, 50 deg) from [1.4, -0.6, 1.3] at [0.3, 0, 0.15], a 1.2 x 1.2 m table, a 12 x 12 x 36 cm box
and the panda itself, 2 mm depth noise, NaN for misses, as the organized float32 PointCloud2 payload
(``cloud_message``'s layout). ``--clouds`` clouds are cast (the arm at its ``default`` configuration
plus up to +-0.3 rad per joint, seeded), then ingested in turn, ``--repeat`` times in all, with the
shipped perception defaults (voxel 2 cm, octree 2 cm, padding 3 cm) and the self-filter at the cloud's
configuration. Two cases: the table kept, and cropped (``crop_min`` z 0.005, as config/panda.yaml).

Stages (each timed on its own, in the order ``CloudIngest.ingest`` runs them): ``decode``
(``decode_points``), ``transform``, ``crop``, ``voxel`` (``voxel_filter``), ``self_filter``
(``SelfFilter.filter``), ``octree`` (``CloudIngest.cloud``: coal.makeOctree); ``ingest``:
``CloudIngest.ingest`` as one call (what ``pointcloud_ingest_ms`` reports); ``prepare``: what the
pointcloud thread does next, the swap (``Scene.set_perceived_cloud``) and a perceived collision
barrier's ``prepare`` (the compiled kernel's tables, its own copy of the cloud's cells); ``total``:
``ingest`` + ``prepare``.

    python bench/bench_ingest.py [--repeat 200] [--json]
    python bench/bench_ingest.py --trees /work/main/roboplan_ik_ros roboplan_ik_ros [--rounds 4]

``--trees``: the package trees to compare, each run in its own process (that tree first on
PYTHONPATH), alternating ``--rounds`` times so that both see the same load; one table side by side.
Without it: the roboplan_ik_ros on the Python path (else this checkout's).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

STAGES = ("decode", "transform", "crop", "voxel", "self_filter", "octree", "ingest", "prepare", "total")
CASES = ("table kept", "table cropped")


def camera_clouds(clouds: int, seed: int):
    """(scene, layout, [(q, payload)] * clouds): the package on the Python path's Panda scene and
    ``mock_camera``'s default clouds (see the module docstring), one per arm configuration."""
    try:
        import roboplan_ik_ros  # noqa: F401
    except ImportError:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "roboplan_ik_ros"))
    import pinocchio as pin

    from roboplan_ik_ros.core import Scene
    from roboplan_ik_ros.core.model.depth_camera import CameraBox, DepthCamera, image_size, look_at
    from roboplan_ik_ros.core.model.point_cloud import PointCloudLayout, PointField
    from roboplan_ik_ros.core.model.robots import load_example_robot

    r = load_example_robot("panda")
    scene = Scene(r.urdf_xml, r.srdf_xml, r.package_paths)
    width, height = image_size(20000)
    camera = DepthCamera(scene, look_at([1.4, -0.6, 1.3], [0.3, 0.0, 0.15]), width, height, math.radians(50.0),
                         0.002, seed)
    camera.set_boxes([CameraBox(pin.SE3(np.eye(3), np.array([0.35, 0.0, -0.03])), np.array([0.6, 0.6, 0.02])),
                      CameraBox(pin.SE3(np.eye(3), np.array([0.45, 0.0, 0.18])), np.array([0.06, 0.06, 0.18]))])
    layout = PointCloudLayout([PointField(n, 4 * k, 7, 1) for k, n in enumerate("xyz")], width, height, 12,
                              12 * width, False, False)
    rng = np.random.default_rng(seed)
    q_default = scene.named_configuration("default")
    lower, upper = scene.model.lowerPositionLimit, scene.model.upperPositionLimit
    payloads = []
    for k in range(clouds):
        q = q_default.copy()
        if k:
            q[:7] += rng.uniform(-0.3, 0.3, 7)
        q = np.clip(q, lower, upper)
        payloads.append((q, camera.render(q).astype(np.float32).tobytes()))
    return scene, layout, payloads


def measure(clouds: int, repeat: int, seed: int) -> dict:
    """{case: {stage: [ms per call]}, plus counts} for the package on the Python path."""
    scene, layout, payloads = camera_clouds(clouds, seed)
    import roboplan_ik_ros

    from roboplan_ik_ros.core import CollisionBarrier, Oink
    from roboplan_ik_ros.core.config import PerceptionConfig
    from roboplan_ik_ros.core.model.perceived_cloud import CloudIngest
    from roboplan_ik_ros.core.model.point_cloud import crop_points, decode_points, transform_points, voxel_filter

    R, t = np.eye(3), np.zeros(3)
    results = {"tree": str(Path(roboplan_ik_ros.__file__).parent)}
    for case, crop_z in zip(CASES, (-math.inf, 0.005)):
        config = PerceptionConfig(crop_min=[-math.inf, -math.inf, crop_z])
        ingest = CloudIngest(scene, config)
        oink = Oink(scene, "arm")
        barrier = CollisionBarrier(oink, 4, 0.05, pairs="perceived", rows_per_pair=5, broad_phase_cutoff=0.2)
        lo, hi = np.asarray(config.crop_min, dtype=float), np.asarray(config.crop_max, dtype=float)
        times = {s: [] for s in STAGES}
        counts = []
        for i in range(repeat + 2):  # two warm-up rounds
            q, data = payloads[i % clouds]
            t0 = time.perf_counter()
            decoded = decode_points(layout, data)
            t1 = time.perf_counter()
            world = transform_points(R, t, decoded.points)
            t2 = time.perf_counter()
            inside = crop_points(world, lo, hi)
            t3 = time.perf_counter()
            merged = voxel_filter(inside, config.voxel_size)
            t4 = time.perf_counter()
            kept, removed = ingest.self_filter.filter(merged, q)
            t5 = time.perf_counter()
            ingest.cloud(kept)
            t6 = time.perf_counter()
            cloud = ingest.ingest(layout, data, R, t, q)
            t7 = time.perf_counter()
            scene.set_perceived_cloud(cloud)
            barrier.prepare()
            t8 = time.perf_counter()
            barrier.update(q, oink.data, oink.geom_data)  # the tick swaps the tables in (not timed)
            if i < 2:
                continue
            for s, d in zip(STAGES, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5, t7 - t6, t8 - t7,
                                     t8 - t6)):
                times[s].append(d * 1e3)
            counts.append((len(decoded.points), len(inside), len(merged), removed, cloud.size))
        c = np.mean(counts, axis=0)
        results[case] = {"times": times, "valid": c[0], "in_crop": c[1], "voxels": c[2], "on_robot": c[3],
                         "kept": c[4], "compiled": barrier.pairs.compiled is not None}
        scene.set_perceived_cloud(None)
    return results


def table(runs: list[dict], labels: list[str]) -> str:
    lines = []
    for case in CASES:
        r0 = runs[0][case]
        lines.append(f"\n{case}: {r0['valid']:.0f} valid points, {r0['in_crop']:.0f} in the crop box, "
                     f"{r0['voxels']:.0f} voxels, {r0['on_robot']:.0f} on the robot, {r0['kept']:.0f} kept "
                     f"(means over the clouds; compiled kernel: {r0['compiled']})")
        for label, run in zip(labels[1:], runs[1:]):
            r = run[case]
            lines.append(f"  {label}: {r['voxels']:.0f} voxels, {r['on_robot']:.0f} on the robot, {r['kept']:.0f} kept")
        head = f"  {'stage [ms]':<12}" + "".join(f" | {label[-24:]:>24}" for label in labels)
        lines.append(head)
        lines.append(f"  {'':<12}" + "".join(f" | {'median':>11} {'p95':>12}" for _ in labels))
        for s in STAGES:
            cells = []
            for run in runs:
                x = np.asarray(run[case]["times"][s])
                cells.append(f" | {np.median(x):11.3f} {np.percentile(x, 95):12.3f}")
            lines.append(f"  {s:<12}" + "".join(cells))
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeat", type=int, default=200, help="ingests per case (per round with --trees)")
    p.add_argument("--clouds", type=int, default=20, help="distinct clouds (arm configurations)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print the samples as JSON")
    p.add_argument("--trees", nargs="+", help="package trees (directories holding roboplan_ik_ros) to compare")
    p.add_argument("--rounds", type=int, default=4, help="with --trees: alternating runs per tree")
    args = p.parse_args()
    if not args.trees:
        result = measure(args.clouds, args.repeat, args.seed)
        if args.json:
            print(json.dumps(result))
        else:
            print(f"roboplan_ik_ros from {result['tree']}" + table([result], ["this tree"]))
        return
    merged: list[dict | None] = [None] * len(args.trees)
    for _ in range(args.rounds):
        for k, tree in enumerate(args.trees):
            env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(tree).resolve()),
                                                               os.environ.get("PYTHONPATH", "")]))
            out = subprocess.run([sys.executable, __file__, "--json", "--repeat", str(args.repeat), "--clouds",
                                  str(args.clouds), "--seed", str(args.seed)], env=env, check=True,
                                 capture_output=True, text=True).stdout
            run = json.loads(out.strip().splitlines()[-1])
            if merged[k] is None:
                merged[k] = run
            else:
                for case in CASES:
                    for s in STAGES:
                        merged[k][case]["times"][s] += run[case]["times"][s]
    n = args.rounds * args.repeat
    print(f"{args.rounds} alternating rounds x {args.repeat} ingests per tree and case ({n} samples each)"
          + table(merged, [str(Path(tree).resolve()) for tree in args.trees]))


if __name__ == "__main__":
    main()
