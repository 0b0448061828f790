"""scene_from_config: the Scene of a config's robot section (limits files, explicit overrides, obstacles)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .joint_limits_file import JointLimits, load_joint_limits
from .resources import resolve_path
from .scene import Scene

if TYPE_CHECKING:
    from .robot_config import RobotConfig


def scene_from_config(urdf_xml: str, srdf_xml: str, robot: RobotConfig, package_paths=(), obstacles=()) -> Scene:
    """A Scene with the robot section's overrides (package paths are joined with ``package_paths``):
    ``robot.joint_limits_file`` first, then the explicit ``position_limits``/``velocity_limits`` keys.
    What the file says that the controller does not use is in the scene's notes. ``obstacles``
    (``IKConfig.obstacles``) are added to its collision world; an invalid one raises naming it."""
    paths = [*robot.package_paths, *package_paths]
    limits, urdf_joints = JointLimits(), set()
    if robot.joint_limits_file:
        urdf_joints = _joint_names(urdf_xml)
        limits = load_joint_limits(resolve_path(robot.joint_limits_file, paths, "robot.joint_limits_file"))
    scene = Scene(
        urdf_xml,
        srdf_xml,
        paths,
        convex_hulls=robot.convex_hulls,
        position_limits={**limits.position, **robot.position_limits},
        velocity_limits={**limits.velocity, **robot.velocity_limits},
        acceleration_limits=_known_joints(limits.acceleration, urdf_joints, limits),
        jerk_limits=_known_joints(limits.jerk, urdf_joints, limits),
    )
    scene.notes.extend(limits.notes)
    for k, obstacle in enumerate(obstacles):
        scene.add_obstacle(obstacle, f"obstacles[{k}]")
    return scene


def _joint_names(urdf_xml: str) -> set[str]:
    import xml.etree.ElementTree as ET

    try:
        return {j.get("name") for j in ET.fromstring(urdf_xml).iter("joint")}
    except ET.ParseError:
        return set()  # Scene reports the parse error


def _known_joints(bounds: dict, joints: set[str], limits: JointLimits) -> dict:
    """The file's entries for joints of this robot; the others are noted (files often cover grippers
    or other robots' joints), never silently dropped."""
    unknown = sorted(set(bounds) - joints) if joints else []
    note = f"{limits.source}: joints not in the robot model, not used: {unknown}"
    if unknown and note not in limits.notes:
        limits.notes.append(note)
    return {k: v for k, v in bounds.items() if k in joints or not joints}
