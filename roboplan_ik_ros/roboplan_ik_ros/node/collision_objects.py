"""``~/collision_objects``: roboplan_ik_interfaces/CollisionObject messages to core obstacles, and back.

A message names one object (``id``) made of one or more shapes. Each shape becomes one
:class:`~roboplan_ik_ros.core.model.obstacles.Obstacle` named ``id`` (a single shape) or
``id/<k>`` (several), placed at ``T_frame_object * T_object_shape``. Frames (``header.frame_id``):

* ``""``, ``"world"`` or the URDF root: fixed in the world;
* a robot link: attached to it (moves with the link; ``touch_links`` may touch it);
* another robot frame: fixed in the world where that frame is when the message arrives;
* any other frame: through tf2 (looked up once, when the message arrives) where tf2_ros is
  installed; without it the object is refused saying so (as goals are, see ``goal_frames.py``).

MOVE takes ``header`` and ``pose`` and moves every shape of the object; REMOVE takes the ``id``.
Every check raises :class:`InvalidInputError` naming the field; the node refuses the message and
keeps every other object.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin
from geometry_msgs.msg import Pose
from rclpy.qos import QoSProfile, ReliabilityPolicy
from shape_msgs.msg import SolidPrimitive
from std_srvs.srv import Trigger

from roboplan_ik_interfaces.msg import CollisionObject, ObstacleStatus
from roboplan_ik_interfaces.srv import ListCollisionObjects

from ..core.errors import InvalidInputError
from ..core.model.obstacles import WORLD, Obstacle, check_obstacle, obstacle_geometry
from .goal_frames import FrameResolver
from .message_conversions import PoseError, pose_from_se3, se3_from_pose

_PRIMITIVES = {SolidPrimitive.BOX: ("box", 3), SolidPrimitive.SPHERE: ("sphere", 1),
               SolidPrimitive.CYLINDER: ("cylinder", 2)}
OBJECT_QUEUE = 100  # ~/collision_objects messages queued (reliable)
OPERATIONS = {CollisionObject.ADD: "ADD", CollisionObject.REMOVE: "REMOVE", CollisionObject.MOVE: "MOVE"}


@dataclass
class ObjectShapes:
    """What MOVE needs of an object added from the topic: its frame and each shape's pose in it."""

    frame: str  # WORLD or a robot link
    shapes: list[tuple[str, pin.SE3]]  # (obstacle name, T_object_shape)


class CollisionObjectReader:
    """Turns messages into obstacles. ``resolver`` resolves frames outside the robot's links (model
    frames at ``q``, else tf2); ``links``: the robot's links; ``root``: the URDF root's name."""

    def __init__(self, resolver: FrameResolver, links, root: str, quaternion_tolerance: float) -> None:
        self.resolver = resolver
        self.links = set(links)
        self.root = root
        self.quaternion_tolerance = quaternion_tolerance

    def frame(self, frame_id: str, q: np.ndarray) -> tuple[str, pin.SE3]:
        """(obstacle frame, T_obstacle-frame_header-frame) of a header frame_id."""
        if frame_id in ("", WORLD, self.root, "universe"):
            return WORLD, pin.SE3.Identity()
        if frame_id in self.links:
            return frame_id, pin.SE3.Identity()
        try:  # another model frame, or tf2: fixed in the world where it is now
            return WORLD, self.resolver.T_world_frame(frame_id, q)
        except InvalidInputError as exc:
            raise InvalidInputError(f"header.frame_id: {exc}") from exc

    def pose(self, pose: Pose, what: str) -> pin.SE3:
        try:
            return se3_from_pose(pose, self.quaternion_tolerance, what)
        except PoseError as exc:
            raise InvalidInputError(str(exc)) from exc

    def shapes(self, msg: CollisionObject, q: np.ndarray) -> tuple[ObjectShapes, list[Obstacle]]:
        """The obstacles of an ADD message (raises naming the field at fault)."""
        if not msg.id:
            raise InvalidInputError("id: expected a non-empty name")
        frame, T_frame_header = self.frame(msg.header.frame_id, q)
        T_frame_object = T_frame_header * self.pose(msg.pose, "pose")
        pieces: list[tuple[str, tuple, dict, pin.SE3]] = []  # (shape, dims, extra, T_object_shape)
        _same_length(msg.primitives, msg.primitive_poses, "primitives", "primitive_poses")
        for k, (prim, pose) in enumerate(zip(msg.primitives, msg.primitive_poses)):
            if prim.type not in _PRIMITIVES:
                raise InvalidInputError(f"primitives[{k}].type: {prim.type} is not supported; expected BOX (1), "
                                        "SPHERE (2) or CYLINDER (3) (capsules: YAML obstacles)")
            shape, size = _PRIMITIVES[prim.type]
            dims = [float(d) for d in prim.dimensions]
            if len(dims) != size:
                raise InvalidInputError(f"primitives[{k}].dimensions: a {shape} takes {size} values "
                                        f"({'x, y, z' if size == 3 else 'radius' if size == 1 else 'height, radius'}), "
                                        f"got {dims}")
            if shape == "cylinder":
                dims = [dims[SolidPrimitive.CYLINDER_RADIUS], dims[SolidPrimitive.CYLINDER_HEIGHT]]
            pieces.append((shape, tuple(dims), {}, self.pose(pose, f"primitive_poses[{k}]")))
        _same_length(msg.meshes, msg.mesh_poses, "meshes", "mesh_poses")
        for k, (mesh, pose) in enumerate(zip(msg.meshes, msg.mesh_poses)):
            vertices = np.array([[p.x, p.y, p.z] for p in mesh.vertices], dtype=float).reshape(-1, 3)
            triangles = np.array([list(t.vertex_indices) for t in mesh.triangles], dtype=np.int64).reshape(-1, 3)
            pieces.append(("mesh", (), dict(vertices=vertices, triangles=triangles), self.pose(pose, f"mesh_poses[{k}]")))
        _same_length(msg.mesh_uris, msg.mesh_uri_poses, "mesh_uris", "mesh_uri_poses")
        if msg.mesh_uri_scales and len(msg.mesh_uri_scales) != len(msg.mesh_uris):
            raise InvalidInputError(f"mesh_uri_scales: expected none or one per mesh_uris entry "
                                    f"({len(msg.mesh_uris)}), got {len(msg.mesh_uri_scales)}")
        for k, (uri, pose) in enumerate(zip(msg.mesh_uris, msg.mesh_uri_poses)):
            scale = float(msg.mesh_uri_scales[k]) if msg.mesh_uri_scales else 1.0
            pieces.append(("mesh", (), dict(mesh=uri, scale=(scale,) * 3), self.pose(pose, f"mesh_uri_poses[{k}]")))
        if not pieces:
            raise InvalidInputError("primitives/meshes/mesh_uris: an ADD needs at least one shape")
        names = [msg.id] if len(pieces) == 1 else [f"{msg.id}/{k}" for k in range(len(pieces))]
        obstacles = []
        for name, (shape, dims, extra, T_object_shape) in zip(names, pieces):
            T = T_frame_object * T_object_shape
            obstacles.append(Obstacle(name, shape, dims, position=tuple(T.translation),
                                      quaternion_xyzw=tuple(pin.Quaternion(T.rotation).coeffs()), frame=frame,
                                      touch_links=tuple(msg.touch_links), **extra))
        shapes = ObjectShapes(frame, [(n, p[3]) for n, p in zip(names, pieces)])
        return shapes, obstacles

    def moved(self, msg: CollisionObject, shapes: ObjectShapes, q: np.ndarray) -> list[tuple[str, pin.SE3, str]]:
        """(obstacle name, T_frame_shape, frame) of each shape of a MOVE message's object."""
        frame, T_frame_header = self.frame(msg.header.frame_id, q)
        T_frame_object = T_frame_header * self.pose(msg.pose, "pose")
        return [(name, T_frame_object * T_object_shape, frame) for name, T_object_shape in shapes.shapes]


def _same_length(shapes, poses, a: str, b: str) -> None:
    if len(shapes) != len(poses):
        raise InvalidInputError(f"{b}: expected one pose per entry of {a} ({len(shapes)}), got {len(poses)}")


def obstacle_status(obstacle: Obstacle, source: str) -> ObstacleStatus:
    """The ~/list_collision_objects entry of an obstacle."""
    dims = list(obstacle.dims)
    return ObstacleStatus(id=obstacle.name, shape=obstacle.shape, dimensions=dims, mesh_uri=obstacle.mesh,
                          frame=obstacle.frame, pose=pose_from_se3(obstacle.T_frame_obstacle),
                          touch_links=list(obstacle.touch_links), source=source)


class CollisionObjectsEndpoint:
    """The node's ``~/collision_objects`` topic and its ``~/list_collision_objects`` and
    ``~/clear_collision_objects`` services, applying changes to the control loop's scene.

    ``lock``: the node's control-loop lock (changes happen between ticks); ``scene_lock``: the
    in-process SimpleIK's (the ``~/solve_ik`` fallback reads the same collision model);
    ``on_change()``: called after every change (worker sync, markers). Frames are resolved outside
    the locks (a tf2 lookup may wait). A malformed message is refused: logged with the reason,
    counted in ``collision_objects_refused`` and ``last_rejection``; the other objects stay.
    """

    def __init__(self, node, loop, reader: CollisionObjectReader, lock, scene_lock, current_q, on_change,
                 on_refused) -> None:
        self.node, self.loop, self.reader = node, loop, reader
        self.scene = loop.scene
        self.lock, self.scene_lock = lock, scene_lock
        self.current_q, self.on_change, self.on_refused = current_q, on_change, on_refused
        self.config_names = set(self.scene.obstacles)  # the YAML obstacles
        self.objects: dict[str, ObjectShapes] = {}  # added from the topic, by id
        qos = QoSProfile(depth=OBJECT_QUEUE, reliability=ReliabilityPolicy.RELIABLE)  # none dropped in a burst
        self.handles = [
            ("subscription", node.create_subscription(CollisionObject, "~/collision_objects", self._on_message, qos)),
            ("service", node.create_service(ListCollisionObjects, "~/list_collision_objects", self._on_list)),
            ("service", node.create_service(Trigger, "~/clear_collision_objects", self._on_clear)),
        ]

    # ------------------------------------------------------------------ topic
    def _on_message(self, msg: CollisionObject) -> None:
        try:
            self.apply(msg)
        except InvalidInputError as exc:
            self.on_refused(f"~/collision_objects: object {msg.id!r} ({OPERATIONS.get(msg.operation, msg.operation)}) "
                            f"refused: {exc}")

    def apply(self, msg: CollisionObject) -> None:
        """Apply one message, or raise InvalidInputError (then nothing changed)."""
        op = OPERATIONS.get(msg.operation)
        if op is None:
            raise InvalidInputError(f"operation: {msg.operation} is unknown; expected ADD (0), REMOVE (1) or MOVE (2)")
        if not msg.id:
            raise InvalidInputError("id: expected a non-empty name")
        q = self.current_q()
        if q is None:
            q = self.scene.neutral()
        if op == "ADD":
            shapes, obstacles = self.reader.shapes(msg, q)  # outside the locks: tf2 may wait
            for obstacle in obstacles:  # every shape checked (meshes read) before anything changes
                check_and_build(obstacle, self.scene, f"shape {obstacle.name!r}")
            with self.lock, self.scene_lock:
                old_shapes = self.objects.get(msg.id)
                old = [self.scene.obstacles[n] for n in
                       ([n for n, _ in old_shapes.shapes] if old_shapes else [msg.id]) if n in self.scene.obstacles]
                self._remove(msg.id)
                try:
                    for obstacle in obstacles:
                        self.scene.add_obstacle(obstacle, f"shape {obstacle.name!r}")
                except InvalidInputError:  # checked above, so not expected: put the old object back
                    for obstacle in obstacles:
                        if obstacle.name in self.scene.obstacles:
                            self.scene.remove_obstacle(obstacle.name)
                    for obstacle in old:
                        self.scene.add_obstacle(obstacle)
                    if old_shapes is not None:
                        self.objects[msg.id] = old_shapes
                    raise
                self.objects[msg.id] = shapes
                self.config_names.discard(msg.id)
                self.loop.expect_collision_prepare()
        elif op == "REMOVE":
            with self.lock, self.scene_lock:
                if not self._remove(msg.id):
                    raise InvalidInputError(f"id: no object {msg.id!r}; known: {sorted(self._ids())}")
                self.loop.expect_collision_prepare()
        else:
            shapes = self.objects.get(msg.id)
            if shapes is None and msg.id in self.config_names and msg.id in self.scene.obstacles:
                shapes = ObjectShapes(self.scene.obstacles[msg.id].frame, [(msg.id, pin.SE3.Identity())])
            if shapes is None:
                raise InvalidInputError(f"id: no object {msg.id!r} to move; known: {sorted(self._ids())}")
            moves = self.reader.moved(msg, shapes, q)
            with self.lock, self.scene_lock:
                for name, T, frame in moves:
                    self.scene.move_obstacle(name, T.translation, pin.Quaternion(T.rotation).coeffs(), frame)
                if msg.id in self.objects:
                    self.objects[msg.id].frame = moves[0][2]
                self.loop.expect_collision_prepare()
        self.on_change()

    def _ids(self) -> set[str]:
        return set(self.objects) | (self.config_names & set(self.scene.obstacles))

    def _remove(self, object_id: str) -> bool:
        """Remove an object's shapes (a topic object, or a YAML obstacle by name); called with the locks."""
        shapes = self.objects.pop(object_id, None)
        if shapes is not None:
            for name, _ in shapes.shapes:
                if name in self.scene.obstacles:
                    self.scene.remove_obstacle(name)
            return True
        if object_id in self.scene.obstacles:
            self.scene.remove_obstacle(object_id)
            self.config_names.discard(object_id)
            return True
        return False

    # --------------------------------------------------------------- services
    def _on_list(self, request, response):
        with self.lock:
            obstacles = list(self.scene.obstacles.values())
            config = set(self.config_names)
        response.objects = [obstacle_status(o, "config" if o.name in config else "topic") for o in obstacles]
        return response

    def _on_clear(self, request, response):
        with self.lock, self.scene_lock:
            ids = list(self.objects)
            for object_id in ids:
                self._remove(object_id)
            self.loop.expect_collision_prepare()
        self.on_change()
        response.success = True
        response.message = (f"removed {len(ids)} object(s) added on ~/collision_objects"
                            + (f" ({', '.join(ids)})" if ids else "")
                            + "; the configured obstacles stay (remove one with operation REMOVE and its name)")
        return response


def check_and_build(obstacle: Obstacle, scene, where: str) -> None:
    """Check an obstacle against the scene's links and build its geometry (reads meshes), so that a
    message with one bad shape changes nothing."""
    check_obstacle(obstacle, scene.world.link_names, where)
    obstacle_geometry(obstacle, scene.world.package_paths, scene.world.convex_hulls, where)
