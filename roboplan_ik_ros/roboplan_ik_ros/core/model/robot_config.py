"""The ``robot:`` section of the YAML config: the joint group, meshes and limit overrides, each key declared once.

Each key is declared with :func:`~..keys.key`: the YAML check (:func:`~..keys.check_declared`, from
``IKConfig``), the table of ranges (:data:`~..ranges.RANGES`, ``robot.<key>``) that the Scene checks its
velocity overrides with, and the docs test (test_section_keys_docs.py) read it. What needs the robot model
(a joint's name, a position override's pair) is checked when the Scene is built (:mod:`.scene_config`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import Range
from ..keys import declared_ranges, key
from ..ranges import RANGES


@dataclass
class RobotConfig:
    """``robot:`` (see docs/configuration.md for each key)."""

    group: str = key("")  # SRDF joint group; "" = every actuated joint
    package_paths: list[str] = key(factory=list)
    convex_hulls: bool = key(True)
    position_limits: dict[str, list[float]] = key(factory=dict)  # joint -> [lower, upper]
    velocity_limits: dict[str, float] = key(factory=dict, range=Range(lo_open=True, unit="rad/s or m/s"))  # joint -> v_max
    # MoveIt joint_limits.yaml: velocity/position override the URDF, acceleration/jerk feed the
    # acceleration limit; the keys above override the file. Relative paths: from the YAML's folder.
    joint_limits_file: str = key("")


RANGES.update(declared_ranges("robot", RobotConfig))  # robot.velocity_limits: each value, also the Scene's check
