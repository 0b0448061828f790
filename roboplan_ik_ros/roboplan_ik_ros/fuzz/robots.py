"""The fuzzed robots: their description (example-robot-data 6.0.0) and the YAML config each runs with.

The configs are the shipped ones (``config/panda.yaml``, ``ur5.yaml``, ``baxter_dual.yaml``): their tasks,
limits (velocity, acceleration and jerk where shipped), barriers and ``node:`` section. What the fuzzer adds,
because a random scene needs it and the shipped file has none:

- ``ur5.yaml`` and ``baxter_dual.yaml`` ship no obstacle barrier: panda.yaml's ``obstacles`` and ``perceived``
  collision barriers are added (same keys, d_min 0.02 m and 0.05 m); without them the arm is free to sweep
  through the random obstacles, and the fuzzer would only report that.
- The xArm7 (``xarm_description/urdf/xarm7.urdf``, which example-robot-data 6.0.0 ships, but
  ``core.model.robots.EXAMPLE_ROBOTS`` does not list and no config is shipped for) runs with ``ur5.yaml``'s
  keys, its frame ``tool0`` renamed ``link_eef`` (the xArm's flange), plus the two barriers above.
- UR5 and xArm7 ship no acceleration limit: their command streams are checked for finite values and the
  velocity bound only (``accel/jerk`` is "n/a" in the results), and Ruckig's optimum uses the velocity bound
  alone (a = j = inf).
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from ..core.model.robots import RobotDescription, example_robot_data_share, load_example_robot

CONFIG_DIR = Path(__file__).resolve().parents[2] / "config"
ROBOTS = ("panda", "ur5", "xarm7", "baxter_dual")
OBSTACLE_BARRIERS = ("obstacles", "perceived")  # panda.yaml's barrier names added where absent


@dataclass(frozen=True)
class FuzzRobot:
    """A robot and its config: ``config`` the YAML mapping without ``node:``, ``node`` that section."""

    name: str
    description: RobotDescription
    config: dict
    node: dict
    start: tuple[float, ...] | str  # the group's q, or an SRDF group_state
    config_source: str  # where the config comes from (a sentence for reports)


def _yaml(name: str) -> dict:
    return yaml.safe_load((CONFIG_DIR / name).read_text())


def _with_obstacle_barriers(data: dict) -> dict:
    panda = {b["name"]: b for b in _yaml("panda.yaml")["barriers"]}
    names = {b["name"] for b in data["barriers"]}
    data["barriers"] = [*data["barriers"], *(copy.deepcopy(panda[n]) for n in OBSTACLE_BARRIERS if n not in names)]
    return data


def _xarm7_description() -> RobotDescription:
    share = example_robot_data_share()
    robots = share / "example-robot-data" / "robots" / "xarm_description"
    return RobotDescription(name="xarm7", urdf_xml=(robots / "urdf" / "xarm7.urdf").read_text(),
                            srdf_xml=(robots / "srdf" / "xarm7.srdf").read_text(), package_paths=(str(share),),
                            group="", tip_frame="link_eef")


def _renamed_frame(data: dict, old: str, new: str) -> dict:
    for section in ("tasks", "barriers"):
        for item in data[section]:
            if item.get("frame") == old:
                item["frame"] = new
    return data


@functools.lru_cache(maxsize=None)
def fuzz_robot(name: str) -> FuzzRobot:
    """The robot ``name`` (one of :data:`ROBOTS`) with its config (a fresh copy is the caller's to change)."""
    if name == "panda":
        data, desc, start, source = _yaml("panda.yaml"), load_example_robot("panda"), "default", "config/panda.yaml"
    elif name == "ur5":
        data, desc = _with_obstacle_barriers(_yaml("ur5.yaml")), load_example_robot("ur5")
        start, source = (0.0, -1.2, 1.6, -1.97, -1.57, 0.0), "config/ur5.yaml + panda.yaml's obstacle barriers"
    elif name == "xarm7":
        data = _renamed_frame(_with_obstacle_barriers(_yaml("ur5.yaml")), "tool0", "link_eef")
        desc, start = _xarm7_description(), (0.0, -0.3, 0.0, 0.9, 0.0, 1.2, 0.0)
        source = "config/ur5.yaml's keys (frame link_eef) + panda.yaml's obstacle barriers"
    elif name == "baxter_dual":
        data, desc = _with_obstacle_barriers(_yaml("baxter_dual.yaml")), load_example_robot("baxter")
        start, source = "default", "config/baxter_dual.yaml + panda.yaml's obstacle barriers"
    else:
        raise ValueError(f"unknown fuzz robot {name!r}; valid: {', '.join(ROBOTS)}")
    node = data.pop("node", {}) or {}
    return FuzzRobot(name, desc, data, node, start, source)


def robot_config(name: str) -> tuple[dict, dict]:
    """(config mapping without node:, node: mapping), deep copies."""
    r = fuzz_robot(name)
    return copy.deepcopy(r.config), copy.deepcopy(r.node)


def start_configuration(scene, group, robot: FuzzRobot) -> np.ndarray:
    """The full q of the robot's nominal start pose."""
    if isinstance(robot.start, str):
        return scene.named_configuration(robot.start)
    q = scene.neutral()
    q[group.q_indices] = robot.start
    return q


def loop_settings(node: dict):
    """The control loop's settings (core LoopConfig) from a YAML ``node:`` section (the node's other keys,
    outputs, markers, priorities, are not the core's)."""
    import dataclasses

    from ..core.config import from_mapping
    from ..core.control.control_loop import LoopConfig
    from ..core.control.goal_followers import GoalSmoothingConfig
    from ..core.control.twist_follower import StreamingConfig

    keys = {f.name for f in dataclasses.fields(LoopConfig)} - {"goal_smoothing", "streaming"}
    return LoopConfig(**{k: v for k, v in node.items() if k in keys},
                      goal_smoothing=from_mapping(GoalSmoothingConfig, node.get("goal_smoothing"),
                                                  "node.goal_smoothing"),
                      streaming=from_mapping(StreamingConfig, node.get("streaming"), "node.streaming"))


def make_config(name: str, joint_space: bool = False):
    """(IKConfig, LoopConfig) of robot ``name``. ``joint_space``: the variant for joint goals and jogs: the
    frame tasks (frame, relative_frame) removed and the configuration task at priority 1 with target
    ``current`` (with a frame task holding its pose a joint goal only moves the null space); limits, barriers
    and the node: section as shipped."""
    from ..core.config import load_config

    data, node = robot_config(name)
    if joint_space:
        posture = [t for t in data["tasks"] if t["type"] == "configuration"]
        data["tasks"] = [{**posture[0], "target": "current", "priority": 1}]
    return load_config(data), loop_settings(node)
