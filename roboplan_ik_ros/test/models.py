"""Robot models for the core tests, loaded once per test session."""

from __future__ import annotations

import functools

import numpy as np

from roboplan_ik_ros.core import Scene
from roboplan_ik_ros.core.model.robots import RobotDescription, load_example_robot


@functools.lru_cache(maxsize=None)
def robot(name: str) -> RobotDescription:
    return load_example_robot(name)


@functools.lru_cache(maxsize=None)
def scene(name: str) -> Scene:
    r = robot(name)
    return Scene(r.urdf_xml, r.srdf_xml, r.package_paths)


def finite_difference(scene: Scene, v_indices, q, f, step: float = 1e-6):
    """Central differences of ``f(q)`` (a vector) along each velocity coordinate of ``v_indices`` (a joint
    group's): the Jacobian to check an analytic one against, one column per coordinate."""
    cols = []
    for k in v_indices:
        dv = np.zeros(scene.model.nv)
        dv[k] = step
        cols.append((f(scene.integrate(q, dv)) - f(scene.integrate(q, -dv))) / (2 * step))
    return np.array(cols).T
