"""The ``robot:`` section of the YAML config: the joint group, meshes and limit overrides, each key declared once.

Each key is declared with :func:`~..keys.key`: the YAML check (:func:`~..keys.check_declared`, from
``IKConfig``), the table of ranges (:data:`~..ranges.RANGES`, ``robot.<key>``) that the Scene checks its
velocity overrides with, and the docs' table (:mod:`~..key_table`, its meaning from ``doc``) read it. What needs
the robot model (a joint's name, a position override's pair) is checked when the Scene is built
(:mod:`.scene_config`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import Range
from ..keys import declared_ranges, key
from ..ranges import RANGES


@dataclass
class RobotConfig:
    """``robot:``, each key with its docs row's meaning (docs/configuration.md's table is generated from these)."""

    group: str = key("", doc='SRDF joint group the solvers move (`""`: every actuated joint); other joints stay fixed')
    package_paths: list[str] = key(factory=list,
                                   doc="folders for `package://` mesh URIs (added to the built-in ones)")
    convex_hulls: bool = key(
        True,
        doc="replace collision meshes by their convex hulls (conservative, ~50x faster distances); `false` keeps the "
            "raw meshes, whose distances the compiled collision kernel computes as well (coal's mesh distance; a "
            "mesh it cannot read runs in Python, the reason in the barrier's configure note)")
    position_limits: dict[str, list[float]] = key(factory=dict,
                                                  doc="`joint: [lower, upper]` overriding the URDF [rad or m]")
    velocity_limits: dict[str, float] = key(factory=dict, range=Range(lo_open=True, unit="rad/s or m/s"),
                                            doc="`joint: v_max` overriding the URDF")
    joint_limits_file: str = key(
        "",
        doc="a MoveIt / ros2_control `joint_limits.yaml` (`joint_limits: <joint>: has_velocity_limits, "
            "max_velocity, has_acceleration_limits, max_acceleration, has_jerk_limits, max_jerk`, plus "
            "`has_position_limits, min_position, max_position`): a path (relative to the YAML file) or "
            "`package://pkg/path`. Velocity and position limits override the URDF; acceleration and jerk feed "
            "`limits[].type: acceleration`. `robot.position_limits`/`velocity_limits` and the limit's own "
            "`a_max`/`j_max` override the file, explicitly. Keys the node does not use (`max_effort`, ...) are "
            "noted at configure")

RANGES.update(declared_ranges("robot", RobotConfig))  # robot.velocity_limits: each value, also the Scene's check
