"""Config (p): the mock depth camera as a child process, and what the node holds of its cloud (the
~/status samples of the window)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import yaml


#: config (p): the mock camera's box (world frame) [m]: under the goal circle (whose bottom is 4 cm under
#: the start TCP (0.307, 0, 0.487): z 0.45), its top at z 0.37 (8 cm under it; perceived d_min 0.05) and its
#: faces mid-leaf of the 2 cm octree
CAMERA_BOX_SIZE = (0.2, 0.3, 0.37)
CAMERA_BOX_POSITION = (0.31, 0.0, 0.185)
CAMERA_RATE_HZ = 15.0
CAMERA_POINTS = 20000


def camera_command(rate: float = CAMERA_RATE_HZ, points: int = CAMERA_POINTS) -> list[str]:
    """Config (p)'s mock depth camera as a child process (its defaults: the camera pose, the table, 2 mm noise;
    the box shown from the start)."""
    params = {"rate_hz": float(rate), "points": int(points), "box_visible": "true",
              "box_size": "[" + ", ".join(repr(float(v)) for v in CAMERA_BOX_SIZE) + "]",
              "box_position": "[" + ", ".join(repr(float(v)) for v in CAMERA_BOX_POSITION) + "]"}
    cmd = [sys.executable, "-m", "roboplan_ik_ros.sim.mock_camera", "--ros-args"]
    for k, v in params.items():
        cmd += ["-p", f"{k}:={v}"]
    return cmd


def perceived_cutoff() -> float:
    """broad_phase_cutoff [m] of the shipped ``pairs: perceived`` barrier (its default when unset)."""
    from roboplan_ik_ros.core.oink.barriers.collision_barrier import CollisionBarrierConfig
    from roboplan_ik_ros.node.ik_controller import default_config_file

    data = yaml.safe_load(Path(default_config_file("panda")).read_text())
    b = next((b for b in data["barriers"] if b.get("pairs") == "perceived"), {})
    return float(b.get("broad_phase_cutoff", CollisionBarrierConfig(name="", type="collision").broad_phase_cutoff))


def perceived_summary(samples: list[tuple[int, float, float, str]]) -> dict:
    """~/status samples of the window (perceived points, closest perceived distance [m], cloud age [s], state):
    the points the node holds, how near the arm came to them and the share of samples within the perceived
    barrier's broad_phase_cutoff (its pairs then have rows)."""
    if not samples:
        return {"n": 0}
    pts = np.array([x[0] for x in samples])
    dist = np.array([x[1] for x in samples])
    age = np.array([x[2] for x in samples])
    states: dict[str, int] = {}
    for x in samples:
        states[x[3]] = states.get(x[3], 0) + 1
    finite = dist[np.isfinite(dist)]
    cutoff = perceived_cutoff()
    return {"n": len(samples), "points_min": int(pts.min()), "points_median": float(np.median(pts)),
            "points_max": int(pts.max()),
            "closest_min_mm": float(finite.min() * 1e3) if finite.size else float("nan"),
            "closest_median_mm": float(np.median(finite) * 1e3) if finite.size else float("nan"),
            "within_cutoff_pct": 100.0 * float(np.mean(dist <= cutoff)), "cutoff_m": cutoff,
            "age_median_ms": float(np.median(age[np.isfinite(age)]) * 1e3) if np.isfinite(age).any() else float("nan"),
            "states": states}
