"""CollisionWorld: the obstacles of a scene, as extra geometry objects of its collision model.

Every obstacle becomes one pinocchio ``GeometryObject`` named ``obstacle:<name>`` after the robot's
own geometries: parent joint 0 (the universe) for a world obstacle, the link's joint for one
attached to a link (its placement is the link's placement in that joint composed with
``T_link_obstacle``). Collision pairs, added with it:

* robot geometry x obstacle, except geometries on the obstacle's own joint (they cannot move
  relative to it: the robot's fixed base against a table, the hand against a part it holds) and
  geometries of the obstacle's ``touch_links``;
* attached obstacle x world obstacle (a grasped part against the table).

Obstacles never pair with each other otherwise (two world obstacles cannot move). The perceived
cloud (:meth:`set_perceived`, a coal OcTree built from a depth camera's points, see
``perceived_cloud.py``) is one more world geometry, ``perceived:cloud``, paired like a world obstacle
(every robot geometry off joint 0, and the attached objects) but kept apart from :attr:`obstacles`: the
collision barriers tell the two sets apart (``pairs: obstacles`` / ``pairs: perceived``). Adding, moving
and removing touch only the obstacle's geometry and pairs, never the robot's; :attr:`version`
counts the changes so that the holders of pair tables (the broad phase) rebuild them before their
next query, and :attr:`structure_version` the adds and removes, after which a ``GeometryData``
must be remade (a move changes only a placement of the model, which the geometry data reads). Not thread-safe: the caller serializes changes and
queries.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pinocchio as pin

from ..errors import InvalidInputError, unknown_name
from .obstacles import WORLD, Obstacle, check_obstacle, obstacle_geometry

PREFIX = "obstacle:"
PERCEIVED = "perceived:cloud"  # the geometry object of the perceived cloud


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
        self.perceived = None  # the PerceivedCloud in the model (perceived_cloud.py), or None
        self.version = 0  # incremented by every add, move and remove
        self.structure_version = 0  # incremented by every add and remove (geometry data must be remade)
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
        if obstacle.attached and self._has_perceived_geometry():  # part in hand x perceived cloud
            gm.addCollisionPair(pin.CollisionPair(gm.getGeometryId(PERCEIVED), index))
        self.obstacles[obstacle.name] = obstacle
        self.version += 1
        self.structure_version += 1

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
        self.structure_version += 1

    def clear(self) -> None:
        for name in list(self.obstacles):
            self.remove(name)

    def set_perceived(self, cloud) -> None:
        """Replace the perceived cloud (a ``PerceivedCloud``; None: none). Its ``octree`` (None for a
        cloud with no point left) becomes geometry ``perceived:cloud`` on joint 0, paired with every robot
        geometry that can move and every attached object. Cheap (the octree is built by the caller):
        one geometry and its pairs; the broad phase's tables are rebuilt by their holders."""
        gm = self.collision_model
        if self._has_perceived_geometry():
            gm.removeGeometryObject(PERCEIVED)  # and its collision pairs
        self.perceived = cloud
        if cloud is not None and cloud.octree is not None:
            gm.addGeometryObject(pin.GeometryObject(PERCEIVED, 0, 0, pin.SE3.Identity(), cloud.octree))
            index = gm.ngeoms - 1
            for g in range(self.n_robot_geometries):
                if self._robot_joint[g] != 0:
                    gm.addCollisionPair(pin.CollisionPair(g, index))
            for name, obstacle in self.obstacles.items():
                if obstacle.attached:
                    gm.addCollisionPair(pin.CollisionPair(gm.getGeometryId(PREFIX + name), index))
        self.version += 1
        self.structure_version += 1

    # ------------------------------------------------------------------ queries
    def is_obstacle(self, geometry: int) -> bool:
        """True for an obstacle's geometry and the perceived cloud's (not the robot's)."""
        return geometry >= self.n_robot_geometries

    def perceived_geometries(self) -> list[int]:
        """Geometry indices of the perceived cloud (none or one)."""
        gm = self.collision_model
        return [gm.getGeometryId(PERCEIVED)] if self._has_perceived_geometry() else []

    def obstacle_name(self, geometry: int) -> str:
        """The obstacle of geometry index ``geometry`` ("" for a robot geometry; ``perceived:cloud``
        for the perceived cloud)."""
        if geometry < self.n_robot_geometries:
            return ""
        name = self.collision_model.geometryObjects[geometry].name
        return name[len(PREFIX):] if name.startswith(PREFIX) else name

    # ----------------------------------------------------------------- helpers
    def _has_perceived_geometry(self) -> bool:
        return self.perceived is not None and self.perceived.octree is not None

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
