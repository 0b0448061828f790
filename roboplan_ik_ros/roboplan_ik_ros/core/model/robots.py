"""Robot models shipped by the ``example-robot-data`` PyPI package (no download at run time)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from ..errors import unknown_name
from .resources import resolve_path


@dataclass(frozen=True)
class RobotDescription:
    """A robot's URDF/SRDF text and what is needed to load it."""

    name: str
    urdf_xml: str
    srdf_xml: str
    package_paths: tuple[str, ...]
    group: str  # default joint group ("" = every actuated joint)
    tip_frame: str  # default end-effector frame


# name -> (urdf, srdf, group, tip), paths relative to example-robot-data/robots (or a package:// URI)
EXAMPLE_ROBOTS = {
    "panda": ("panda_description/urdf/panda.urdf", "panda_description/srdf/panda.srdf", "arm", "panda_hand_tcp"),
    "ur5": ("ur_description/urdf/ur5_robot.urdf", "ur_description/srdf/ur5.srdf", "", "tool0"),
    # Kinova Jaco 2 (6 DoF, three continuous joints); its SRDF disables no collision pair
    "kinova": ("kinova_description/robots/kinova.urdf", "kinova_description/srdf/kinova.srdf", "",
               "j2s6s200_end_effector"),
    # Rethink Baxter (two 7-DoF arms): the shipped SRDF's joint names carry hpp's 'baxter/' prefix and it has
    # no arm group, so this package ships its own (groups left_arm, right_arm, both_arms; the carrying pose)
    "baxter": ("baxter_description/urdf/baxter.urdf", "package://roboplan_ik_ros/config/baxter.srdf", "both_arms",
               "left_gripper"),
    # PAL TALOS humanoid (reduced: one joint per gripper), fixed base: the pelvis (base_link) is the world origin and
    # the legs are joints outside the default group; SRDF group all_arms_torso = torso 2 + arms 2 x 7 joints,
    # group_state half_sitting (soles at z = -1.019 m), 887 collision pairs after the SRDF
    "talos": ("talos_data/robots/talos_reduced.urdf", "talos_data/srdf/talos.srdf", "all_arms_torso",
              "gripper_left_base_link"),
}


def example_robot_data_share() -> Path:
    """The folder against which ``package://example-robot-data/...`` URIs resolve."""
    for entry in sys.path:
        share = Path(entry) / "cmeel.prefix" / "share"
        if (share / "example-robot-data" / "robots").is_dir():
            return share
    raise FileNotFoundError(
        "example-robot-data is not installed: `pip install example-robot-data` (run `make test` to bootstrap)"
    )


def load_example_robot(name: str) -> RobotDescription:
    """Load one of :data:`EXAMPLE_ROBOTS` from the installed example-robot-data package."""
    if name not in EXAMPLE_ROBOTS:
        raise unknown_name("example robot", name, EXAMPLE_ROBOTS)
    urdf, srdf, group, tip = EXAMPLE_ROBOTS[name]
    share = example_robot_data_share()
    robots = share / "example-robot-data" / "robots"
    srdf_path = resolve_path(srdf, (), f"{name} SRDF") if srdf.startswith("package://") else robots / srdf
    return RobotDescription(
        name=name,
        urdf_xml=(robots / urdf).read_text(),
        srdf_xml=srdf_path.read_text(),
        package_paths=(str(share),),
        group=group,
        tip_frame=tip,
    )
