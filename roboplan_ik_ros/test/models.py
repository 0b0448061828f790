"""Robot models for the core tests, loaded once per test session."""

from __future__ import annotations

import functools

from roboplan_ik_ros.core import Scene
from roboplan_ik_ros.core.model.robots import RobotDescription, load_example_robot


@functools.lru_cache(maxsize=None)
def robot(name: str) -> RobotDescription:
    return load_example_robot(name)


@functools.lru_cache(maxsize=None)
def scene(name: str) -> Scene:
    r = robot(name)
    return Scene(r.urdf_xml, r.srdf_xml, r.package_paths)
