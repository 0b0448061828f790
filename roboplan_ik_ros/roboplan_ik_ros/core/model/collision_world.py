"""CollisionWorld: the obstacles of a scene, as extra geometry objects of its collision model.

Every obstacle becomes one pinocchio ``GeometryObject`` named ``obstacle:<name>`` after the robot's
own geometries: parent joint 0 (the universe) for a world obstacle, the link's joint for one
attached to a link (its placement is the link's placement in that joint composed with
``T_link_obstacle``). Collision pairs, added with it:

* robot geometry x obstacle, except geometries on the obstacle's own joint (they cannot move
  relative to it: the robot's fixed base against a table, the hand against a part it holds) and
  geometries of the obstacle's ``touch_links``;
* attached obstacle x world obstacle (a grasped part against the table).

Obstacles never pair with each other otherwise (two world obstacles cannot move). Adding, moving
and removing touch only the obstacle's geometry and pairs, never the robot's; :attr:`version`
counts the changes so that the holders of a ``GeometryData`` or of pair tables (solvers, the broad
phase) rebuild them before their next query. Not thread-safe: the caller serializes changes and
queries.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pinocchio as pin

from ..errors import InvalidInputError, unknown_name
from .obstacles import WORLD, Obstacle, check_obstacle, obstacle_geometry

PREFIX = "obstacle:"


class CollisionWorld:
    """The obstacles of ``model``'s collision model ``collision_model`` (the robot's geometries come first)."""

    def __init__(self, model: pin.Model, collision_model: pin.GeometryModel, package_paths: Sequence[str] = (),
                 convex_hulls: bool = True) -> None:
        self.model = model
        self.collision_model = collision_model
        self.package_paths = tuple(package_paths)
        self.convex_hulls = convex_hulls
        self.n_robot_geometries = collision_model.ngeoms
        self.obstacles: dict[str, Obstacle] = {}
        self.version = 0  # incremented by every add, move and remove
        # geometryObjects[i] copies meshes in pinocchio's Python API: read the robot's once
        objects = [collision_model.geometryObjects[i] for i in range(self.n_robot_geometries)]
        self._robot_joint = [g.parentJoint for g in objects]
        self._robot_link = [model.frames[g.parentFrame].name for g in objects]
        self.link_names = [f.name for f in model.frames if f.type == pin.FrameType.BODY]

    # ------------------------------------------------------------------ changes
    def add(self, obstacle: Obstacle, where: str = "obstacle") -> None:
        """Add ``obstacle`` (replacing one of the same name); raises :class:`InvalidInputError` naming
        the field at fault, and then changes nothing."""
        check_obstacle(obstacle, self.link_names, where)
        geometry = obstacle_geometry(obstacle, self.package_paths, self.convex_hulls, where)
        joint, frame, placement = self._attachment(obstacle)
        if obstacle.name in self.obstacles:
            self._remove_geometry(obstacle.name)
        gm = self.collision_model
        gm.addGeometryObject(pin.GeometryObject(PREFIX + obstacle.name, joint, frame, placement, geometry))
        index = gm.ngeoms - 1
        touch = set(obstacle.touch_links)
        for g in range(self.n_robot_geometries):
            if self._robot_joint[g] != joint and self._robot_link[g] not in touch:
                gm.addCollisionPair(pin.CollisionPair(g, index))
        for other_name, other in self.obstacles.items():
            if other.name != obstacle.name and other.attached != obstacle.attached:  # part in hand x table
                gm.addCollisionPair(pin.CollisionPair(gm.getGeometryId(PREFIX + other_name), index))
        self.obstacles[obstacle.name] = obstacle
        self.version += 1

    def move(self, name: str, position, quaternion_xyzw, frame: str | None = None, where: str = "obstacle") -> None:
        """Place obstacle ``name`` at a new ``T_frame_obstacle`` (in ``frame``, default its own frame)."""
        old = self._get(name)
        new = replace(old, position=tuple(position), quaternion_xyzw=tuple(quaternion_xyzw),
                      frame=old.frame if frame is None else frame)
        check_obstacle(new, self.link_names, where)
        if new.frame != old.frame:  # another parent joint: other pairs
            self.add(new, where)
            return
        _, _, placement = self._attachment(new)
        gm = self.collision_model
        gm.geometryObjects[gm.getGeometryId(PREFIX + name)].placement = placement  # a reference: set in place
        self.obstacles[name] = new
        self.version += 1

    def remove(self, name: str) -> None:
        self._get(name)
        self._remove_geometry(name)
        del self.obstacles[name]
        self.version += 1

    def clear(self) -> None:
        for name in list(self.obstacles):
            self.remove(name)

    # ------------------------------------------------------------------ queries
    def is_obstacle(self, geometry: int) -> bool:
        return geometry >= self.n_robot_geometries

    def obstacle_name(self, geometry: int) -> str:
        """The obstacle of geometry index ``geometry`` ("" for a robot geometry)."""
        if geometry < self.n_robot_geometries:
            return ""
        return self.collision_model.geometryObjects[geometry].name[len(PREFIX):]

    # ----------------------------------------------------------------- helpers
    def _get(self, name: str) -> Obstacle:
        if name not in self.obstacles:
            raise unknown_name("obstacle", name, self.obstacles)
        return self.obstacles[name]

    def _remove_geometry(self, name: str) -> None:
        self.collision_model.removeGeometryObject(PREFIX + name)  # and its collision pairs

    def _attachment(self, obstacle: Obstacle) -> tuple[int, int, pin.SE3]:
        """(parent joint, parent frame, placement in the joint frame) of an obstacle."""
        if obstacle.frame == WORLD:
            return 0, 0, obstacle.T_frame_obstacle
        if not self.model.existFrame(obstacle.frame, pin.FrameType.BODY):
            raise InvalidInputError(f"obstacle ({obstacle.name}).frame: {obstacle.frame!r} is not a robot link")
        fid = self.model.getFrameId(obstacle.frame, pin.FrameType.BODY)
        frame = self.model.frames[fid]
        return frame.parentJoint, fid, frame.placement * obstacle.T_frame_obstacle
