"""Robot scene: kinematic model, joint groups, limits and collision model from URDF/SRDF.

Frames: every pose is ``T_world_frame`` (pinocchio ``oMf``), where "world" is the URDF root.
The scene's own ``data`` serves its convenience queries; each solver creates its own data with
:meth:`Scene.create_data` so that solvers can run in different threads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import coal
import numpy as np
import pinocchio as pin

from ..errors import InvalidInputError, as_vector, check_positive, unknown_name
from ..keys import declared_range
from .collision_world import CollisionWorld
from .joint_group import JointGroup
from .obstacles import Obstacle
from .robot_config import RobotConfig
from .srdf import Srdf, SrdfGroup, parse_srdf

_UNBOUNDED = 1e10  # |limit| above this counts as "no position limit"
# Without SRDF disable_collisions, a pair in collision in at least this fraction of the random
# configurations is disabled (MoveIt setup assistant's "Always" rule).
_ALWAYS_COLLIDING_FRACTION = 0.95
_COLLISION_SAMPLES = 300
_COLLISION_SEED = 0  # fixed: the disabled pairs are the same on every start
_LISTED_NAMES = 10  # names shown in notes and errors before "(and N more)"
_VELOCITY_LIMIT = declared_range(RobotConfig, "velocity_limits")  # [rad/s or m/s] an override's v_max: robot: declares it


def _quoted(names: Sequence[str], limit: int = _LISTED_NAMES) -> str:
    """'a', 'b', ... (and N more)."""
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown + (f" (and {len(names) - limit} more)" if len(names) > limit else "")


def collision_check_data(collision_model: pin.GeometryModel) -> pin.GeometryData:
    """``pin.GeometryData`` for collision checks (``computeCollisions``): its requests compute contacts.

    pinocchio makes them with ``enable_contact = False``, and coal's box-box test without contact misses
    some deep overlaps: a 25 cm rod attached to the Panda's hand, through a 10 cm world box (distance
    -6 cm) was "no collision" (test_attached_box_collision.py). With contacts it is found. Cost
    (Panda + table, 3000 random configurations, 340 in collision, interleaved in one process on the
    loaded 2-core VM): SimpleIK's check (naive broad phase) min/median 4.79/7.48 -> 5.69/8.42 us,
    ``computeCollisions`` over every pair 23.5/34.4 -> 24.4/31.0 us (within the noise)."""
    geom_data = pin.GeometryData(collision_model)
    for request in geom_data.collisionRequests:
        request.enable_contact = True
    return geom_data


class Scene:
    """A robot model built from URDF (and optional SRDF) text.

    Args:
        urdf_xml: URDF text.
        srdf_xml: SRDF text ("" for none): joint groups, group states, disabled collision pairs.
        package_paths: folders against which ``package://`` mesh URIs resolve.
        convex_hulls: replace collision meshes by their convex hulls (conservative; distance queries
            become GJK on convex sets, about 50x faster than mesh-to-mesh).
        position_limits: ``{joint: (lower, upper)}`` overriding the URDF [rad or m].
        velocity_limits: ``{joint: v_max}`` overriding the URDF [rad/s or m/s].
        acceleration_limits, jerk_limits: ``{joint: bound}`` [rad/s^2, rad/s^3 or m/...] (the URDF has
            none): :attr:`a_max` and :attr:`j_max` per velocity index, inf where not given.

    Without ``disable_collisions`` in the SRDF, collision pairs of adjacent links and pairs that collide
    in (nearly) every configuration are disabled, as MoveIt's setup assistant would. ``notes`` lists
    such decisions, one short line each, for the log.
    """

    def __init__(
        self,
        urdf_xml: str,
        srdf_xml: str = "",
        package_paths: Sequence[str] = (),
        *,
        convex_hulls: bool = True,
        position_limits: Mapping[str, Sequence[float]] | None = None,
        velocity_limits: Mapping[str, float] | None = None,
        acceleration_limits: Mapping[str, float] | None = None,
        jerk_limits: Mapping[str, float] | None = None,
    ) -> None:
        if not isinstance(urdf_xml, str) or not urdf_xml.strip():
            raise InvalidInputError("robot_description: the URDF is empty; expected URDF XML text")
        try:
            self.model: pin.Model = pin.buildModelFromXML(urdf_xml)
        except Exception as exc:  # pinocchio raises ValueError/RuntimeError depending on the fault
            raise InvalidInputError(f"robot_description: cannot parse URDF: {exc}") from exc
        self.srdf: Srdf = parse_srdf(srdf_xml or "")
        # Decisions a user should see in the log (skipped joints, disabled collision pairs), one line each.
        self.notes: list[str] = []
        self.package_paths = tuple(str(p) for p in package_paths)
        self.joint_names: tuple[str, ...] = tuple(
            self.model.names[j] for j in range(1, self.model.njoints) if self.model.joints[j].nv > 0
        )
        self._init_limits(position_limits or {}, velocity_limits or {})
        self.a_max = self._per_velocity_index(acceleration_limits or {}, "acceleration_limits")
        self.j_max = self._per_velocity_index(jerk_limits or {}, "jerk_limits")
        self._init_collisions(urdf_xml, srdf_xml or "", convex_hulls)
        # obstacles (world or attached to links) after the robot's geometries: see CollisionWorld
        self.world = CollisionWorld(self.model, self.collision_model, self.package_paths, convex_hulls)
        self._note_joints_without_dof_in_groups()
        self.data = self.model.createData()
        self.collision_data = collision_check_data(self.collision_model)
        self._collision_data_version = self.world.structure_version
        self._groups: dict[str, JointGroup] = {}

    # ------------------------------------------------------------------ limits
    def _init_limits(self, position_limits: Mapping, velocity_limits: Mapping) -> None:
        model = self.model
        nv = model.nv
        # Per velocity index: position limits of 1-DoF joints with nq == 1 (±inf otherwise).
        self.q_min_v = np.full(nv, -np.inf)
        self.q_max_v = np.full(nv, np.inf)
        self.q_index_of_v = np.full(nv, -1, dtype=int)
        for j in range(1, model.njoints):
            jm = model.joints[j]
            if jm.nq == 1 and jm.nv == 1:
                iq, iv = jm.idx_q, jm.idx_v
                self.q_index_of_v[iv] = iq
                lo, hi = model.lowerPositionLimit[iq], model.upperPositionLimit[iq]
                if abs(lo) < _UNBOUNDED and abs(hi) < _UNBOUNDED and lo < hi:
                    self.q_min_v[iv], self.q_max_v[iv] = lo, hi
        self.v_max = np.array(model.velocityLimit, dtype=float)
        for name, bounds in position_limits.items():
            jid = self._joint_id(name)
            iv = model.joints[jid].idx_v
            if self.q_index_of_v[iv] < 0:
                raise InvalidInputError(f"position_limits.{name}: joint has no scalar position (continuous?)")
            lo, hi = as_vector(bounds, 2, f"position_limits.{name}")
            if not lo < hi:
                raise InvalidInputError(f"position_limits.{name}: expected lower < upper, got [{lo}, {hi}]")
            self.q_min_v[iv], self.q_max_v[iv] = lo, hi
            model.lowerPositionLimit[self.q_index_of_v[iv]] = lo
            model.upperPositionLimit[self.q_index_of_v[iv]] = hi
        for name, v in velocity_limits.items():
            jid = self._joint_id(name)
            self.v_max[model.joints[jid].idx_v] = _VELOCITY_LIMIT.check(v, f"velocity_limits.{name}")

    def _per_velocity_index(self, bounds: Mapping[str, float], what: str) -> np.ndarray:
        out = np.full(self.model.nv, np.inf)
        for name, value in bounds.items():
            out[self.model.joints[self._joint_id(name)].idx_v] = check_positive(value, f"{what}.{name}")
        return out

    # --------------------------------------------------------------- collisions
    def _init_collisions(self, urdf_xml: str, srdf_xml: str, convex_hulls: bool) -> None:
        self.collision_model: pin.GeometryModel = self._load_collision_geometry(urdf_xml, convex_hulls)
        self.collision_model.addAllCollisionPairs()  # every pair of geometries on different joints
        if not self.collision_model.collisionPairs:
            return
        if self.srdf.has_disable_collisions:
            self._remove_srdf_disabled_pairs(srdf_xml)
        else:
            self._auto_disable_pairs("SRDF has no disable_collisions" if srdf_xml.strip() else "no SRDF")

    def _load_collision_geometry(self, urdf_xml: str, convex_hulls: bool) -> pin.GeometryModel:
        try:
            gm = pin.buildGeomFromUrdfString(self.model, urdf_xml, pin.COLLISION, package_dirs=list(self.package_paths))
        except Exception as exc:
            raise InvalidInputError(
                f"robot_description: cannot load the collision geometry ({exc}); package_paths={list(self.package_paths)}"
            ) from exc
        if convex_hulls:
            for geom in gm.geometryObjects:
                if isinstance(geom.geometry, coal.BVHModelBase):
                    # qhull's hull ("Qt": triangulated facets); buildConvexRepresentation would keep the
                    # mesh's own vertices and faces and misses collisions of non-convex meshes (UR5).
                    geom.geometry.buildConvexHull(False, "Qt")
                    geom.geometry = geom.geometry.convex
        return gm

    def _remove_srdf_disabled_pairs(self, srdf_xml: str) -> None:
        try:
            pin.removeCollisionPairsFromXML(self.model, self.collision_model, srdf_xml, False)
        except Exception as exc:
            raise InvalidInputError(f"robot_description_semantic: cannot apply disabled pairs: {exc}") from exc
        links = set(self.link_names)
        unknown = [f"{a}/{b}" for a, b in self.srdf.disabled_collisions if a not in links or b not in links]
        if unknown:  # pinocchio skips them silently
            self.notes.append(
                f"SRDF: ignored {len(unknown)} disable_collisions naming links that URDF robot "
                f"{self.model.name!r} does not have: {_quoted(unknown)}"
            )

    def _auto_disable_pairs(self, why: str) -> None:
        """Disable what MoveIt's setup assistant disables as "Adjacent" and "Always": without it
        every configuration is in collision. ``why`` starts the notes."""
        adjacent = self._adjacent_pairs()
        self._remove_pairs(adjacent)
        names = self._link_pair_names(adjacent)
        self.notes.append(f"{why}: disabled {len(names)} collision pairs of adjacent links: {_quoted(names)}")
        always = self._always_colliding_pairs()
        self._remove_pairs(always)
        names = self._link_pair_names(always)
        self.notes.append(
            f"{why}: disabled {len(names)} collision pairs in collision in >= {_ALWAYS_COLLIDING_FRACTION:.0%} of "
            f"{_COLLISION_SAMPLES} random configurations" + (f": {_quoted(names)}" if names else "")
        )

    def _adjacent_pairs(self) -> list[tuple[int, int]]:
        """Geometry pairs on adjacent joints: one joint is the parent of the other, where joints
        without collision geometry are skipped (as MoveIt's adjacency skips links without geometry).
        Geometries on the same joint are never paired (``addAllCollisionPairs``)."""
        gm = self.collision_model
        joint_of = [g.parentJoint for g in gm.geometryObjects]
        with_geometry = set(joint_of)
        parent = {j: self._parent_with_geometry(j, with_geometry) for j in with_geometry}
        pairs = []
        for p in gm.collisionPairs:
            j1, j2 = joint_of[p.first], joint_of[p.second]
            if parent[j1] == j2 or parent[j2] == j1:
                pairs.append((p.first, p.second))
        return pairs

    def _parent_with_geometry(self, joint: int, with_geometry: set[int]) -> int:
        """The nearest ancestor of ``joint`` that carries collision geometry (0, the universe, if none)."""
        parent = self.model.parents[joint]
        while parent != 0 and parent not in with_geometry:
            parent = self.model.parents[parent]
        return parent

    def _always_colliding_pairs(self) -> list[tuple[int, int]]:
        """Active pairs in collision in >= _ALWAYS_COLLIDING_FRACTION of _COLLISION_SAMPLES seeded random
        configurations. A pair is dropped from the checks once it has been free too often."""
        gm = self.collision_model
        data, geom_data = self.model.createData(), pin.GeometryData(gm)
        samples = self._random_configurations(np.random.default_rng(_COLLISION_SEED), _COLLISION_SAMPLES)
        max_free = round(_COLLISION_SAMPLES * (1 - _ALWAYS_COLLIDING_FRACTION))  # samples a pair may be free in
        free = np.zeros(len(gm.collisionPairs), dtype=int)
        candidates = list(range(len(gm.collisionPairs)))
        for q in samples:
            pin.computeCollisions(self.model, data, gm, geom_data, q, False)  # active pairs only
            for k in candidates:
                if not geom_data.collisionResults[k].isCollision():
                    free[k] += 1
                    if free[k] > max_free:  # can no longer reach the fraction
                        geom_data.deactivateCollisionPair(k)
            candidates = [k for k in candidates if free[k] <= max_free]
            if not candidates:
                break
        return [(gm.collisionPairs[k].first, gm.collisionPairs[k].second) for k in candidates]

    def _random_configurations(self, rng: np.random.Generator, count: int) -> np.ndarray:
        """``count`` configurations (rows) with every 1-DoF joint uniform in its position limits, or in
        [-pi, pi] if it has none (continuous, unbounded); multi-DoF joints (floating base, spherical)
        stay at neutral."""
        qs = np.tile(pin.neutral(self.model), (count, 1))
        scalar_v = np.flatnonzero(self.q_index_of_v >= 0)
        lower = np.where(np.isfinite(self.q_min_v[scalar_v]), self.q_min_v[scalar_v], -np.pi)
        upper = np.where(np.isfinite(self.q_max_v[scalar_v]), self.q_max_v[scalar_v], np.pi)
        qs[:, self.q_index_of_v[scalar_v]] = rng.uniform(lower, upper, (count, len(scalar_v)))
        continuous_q = [jm.idx_q for jm in self.model.joints[1:] if jm.nq == 2 and jm.nv == 1]  # (cos, sin)
        angles = rng.uniform(-np.pi, np.pi, (count, len(continuous_q)))
        qs[:, continuous_q] = np.cos(angles)
        qs[:, [iq + 1 for iq in continuous_q]] = np.sin(angles)
        return qs

    def _remove_pairs(self, pairs: Sequence[tuple[int, int]]) -> None:
        for first, second in pairs:
            self.collision_model.removeCollisionPair(pin.CollisionPair(first, second))

    def _link_pair_names(self, pairs: Sequence[tuple[int, int]]) -> list[str]:
        """'link1/link2' per geometry pair (the links the geometries belong to), without repeats."""
        geoms, frames = self.collision_model.geometryObjects, self.model.frames
        names = [f"{frames[geoms[a].parentFrame].name}/{frames[geoms[b].parentFrame].name}" for a, b in pairs]
        return list(dict.fromkeys(names))

    def create_data(self) -> tuple[pin.Data, pin.GeometryData]:
        """New (model data, geometry data) for a solver that must not share buffers. The geometry data
        fits the collision model of now: after :attr:`collision_structure_version` changes (an obstacle
        added or removed), make a new one with ``pin.GeometryData(scene.collision_model)``."""
        return self.model.createData(), pin.GeometryData(self.collision_model)

    # --------------------------------------------------------------- obstacles
    @property
    def collision_version(self) -> int:
        """Changes whenever an obstacle is added, moved or removed."""
        return self.world.version

    @property
    def collision_structure_version(self) -> int:
        """Changes whenever an obstacle is added or removed: a GeometryData made before is stale."""
        return self.world.structure_version

    @property
    def obstacles(self) -> dict[str, Obstacle]:
        return self.world.obstacles

    def add_obstacle(self, obstacle: Obstacle, where: str = "obstacle") -> None:
        """Add (or replace) an obstacle; raises naming the field at fault (see :class:`CollisionWorld`)."""
        self.world.add(obstacle, where)

    def move_obstacle(self, name: str, position, quaternion_xyzw, frame: str | None = None) -> None:
        self.world.move(name, position, quaternion_xyzw, frame)

    def remove_obstacle(self, name: str) -> None:
        self.world.remove(name)

    def clear_obstacles(self) -> None:
        self.world.clear()

    @property
    def perceived_cloud(self):
        """The perceived cloud in the collision model (``PerceivedCloud``), or None."""
        return self.world.perceived

    def set_perceived_cloud(self, cloud) -> None:
        """Replace the perceived cloud (None: remove it); see :meth:`CollisionWorld.set_perceived`."""
        self.world.set_perceived(cloud)

    # ------------------------------------------------------------------- names
    def _joint_id(self, name: str) -> int:
        if name not in self.joint_names:
            raise unknown_name("joint", name, self.joint_names)
        return self.model.getJointId(name)

    def frame_id(self, name: str) -> int:
        """Pinocchio id of frame ``name``; raises listing the valid frames."""
        if not isinstance(name, str) or not self.model.existFrame(name):
            raise unknown_name("frame", name, [f.name for f in self.model.frames])
        return self.model.getFrameId(name)

    @property
    def frame_names(self) -> list[str]:
        return [f.name for f in self.model.frames]

    @property
    def link_names(self) -> list[str]:
        """The URDF links (pinocchio BODY frames)."""
        return [f.name for f in self.model.frames if f.type == pin.FrameType.BODY]

    def _srdf_mismatch(self, kind: str, name: str, group: str, valid: Sequence[str]) -> InvalidInputError:
        """Error for a joint or link of SRDF group ``group`` that the URDF does not have."""
        return InvalidInputError(
            f"SRDF group {group!r}: the SRDF (robot {self.srdf.robot_name!r}) names {kind} {name!r}, which the "
            f"URDF (robot {self.model.name!r}) does not have; robot_description and robot_description_semantic "
            f"probably describe different robots. URDF {kind}s: {_quoted(list(valid))}"
        )

    def _link_frame_id(self, link: str, group: str) -> int:
        """Frame id of URDF link ``link``, named by SRDF group ``group``."""
        if not self.model.existFrame(link, pin.FrameType.BODY):
            raise self._srdf_mismatch("link", link, group, self.link_names)
        return self.model.getFrameId(link, pin.FrameType.BODY)

    @property
    def group_names(self) -> list[str]:
        return ["", *self.srdf.groups]

    # ------------------------------------------------------------------ groups
    def group(self, name: str = "") -> JointGroup:
        """The joint group ``name`` from the SRDF; "" is every actuated joint."""
        if name not in self._groups:
            joints = self.joint_names if name == "" else self._resolve_group(name, set())
            self._groups[name] = self._make_group(name, joints)
        return self._groups[name]

    def subgroup(self, group: JointGroup, joints: Sequence[str]) -> JointGroup:
        """The joints ``joints`` of ``group`` as a group of their own (model order; cached), or
        InvalidInputError naming the joints that are not in ``group`` and listing its joints."""
        unknown = [j for j in joints if j not in group.joint_names]
        if unknown or not joints:
            raise InvalidInputError(f"active_joints: {unknown if unknown else 'empty'}; expected joints of group "
                                    f"{group.name!r}: {list(group.joint_names)}")
        wanted = set(joints)
        names = [j for j in group.joint_names if j in wanted]
        key = f"{group.name}[{','.join(names)}]"
        if key not in self._groups:
            self._groups[key] = self._make_group(key, names)
        return self._groups[key]

    def _resolve_group(self, name: str, seen: set[str]) -> list[str]:
        if name not in self.srdf.groups:
            raise unknown_name("joint group", name, self.group_names)
        if name in seen:
            raise InvalidInputError(f"SRDF group {name!r} includes itself")
        seen.add(name)
        grp = self.srdf.groups[name]
        skipped = self._joints_without_dof(grp)  # noted at construction
        joints: list[str] = []
        for j in grp.joints:
            if j in skipped:
                continue
            if j not in self.joint_names:
                raise self._srdf_mismatch("joint", j, name, self.joint_names)
            joints.append(j)
        for link in grp.links:
            fid = self._link_frame_id(link, name)
            joint = self.model.names[self.model.frames[fid].parentJoint]
            if joint in self.joint_names:
                joints.append(joint)
        for base, tip in grp.chains:
            joints += self._chain_joints(base, tip, name)
        for sub in grp.subgroups:
            joints += self._resolve_group(sub, seen)
        # unique, in model order
        wanted = set(joints)
        return [j for j in self.joint_names if j in wanted]

    def _chain_joints(self, base: str, tip: str, group: str) -> list[str]:
        base_joint = self.model.frames[self._link_frame_id(base, group)].parentJoint
        j = self.model.frames[self._link_frame_id(tip, group)].parentJoint
        chain = []
        while j not in (0, base_joint):
            chain.append(self.model.names[j])
            j = self.model.parents[j]
        if j != base_joint:
            raise InvalidInputError(f"SRDF group {group!r}: {base!r} is not an ancestor of {tip!r}")
        return chain[::-1]

    def _joints_without_dof(self, group: SrdfGroup) -> dict[str, str]:
        """The group's joints that move nothing, with why: URDF fixed joints (pinocchio merges them into
        frames of type FIXED_JOINT, as MoveIt SRDFs list e.g. 'world_joint') and joints with nv == 0."""
        skipped = {}
        for j in group.joints:
            if self.model.existFrame(j, pin.FrameType.FIXED_JOINT):
                skipped[j] = "fixed"
            elif self.model.existJointName(j) and self.model.joints[self.model.getJointId(j)].nv == 0:
                skipped[j] = "nv = 0"
        return skipped

    def _note_joints_without_dof_in_groups(self) -> None:
        for group in self.srdf.groups.values():
            skipped = self._joints_without_dof(group)
            if skipped:
                listed = ", ".join(f"{j!r} ({why})" for j, why in skipped.items())
                self.notes.append(f"SRDF group {group.name!r}: skipped joints without a degree of freedom: {listed}")

    def _make_group(self, name: str, joints: Sequence[str]) -> JointGroup:
        if not joints:
            raise InvalidInputError(f"joint group {name!r} has no actuated joint")
        ids, q_idx, v_idx, bounded_v, bounded_q, continuous_q = [], [], [], [], [], []
        for jname in joints:
            jid = self.model.getJointId(jname)
            jm = self.model.joints[jid]
            if jm.nv != 1 or jm.nq not in (1, 2):
                raise InvalidInputError(
                    f"joint group {name!r}: joint {jname!r} has nq={jm.nq}, nv={jm.nv}; "
                    "only revolute, prismatic and continuous joints are supported"
                )
            ids.append(jid)
            if np.isfinite(self.q_min_v[jm.idx_v]):
                bounded_v.append(len(v_idx))
                bounded_q.append(jm.idx_q)
            if jm.nq == 2:
                continuous_q.append(jm.idx_q)
            q_idx += range(jm.idx_q, jm.idx_q + jm.nq)
            v_idx.append(jm.idx_v)
        as_int = lambda x: np.asarray(x, dtype=int)  # noqa: E731
        return JointGroup(
            name, tuple(joints), as_int(ids), as_int(q_idx), as_int(v_idx),
            as_int(bounded_v), as_int(bounded_q), as_int(continuous_q),
        )

    def support_mask(self, joint: int) -> np.ndarray:
        """(nv,) 1.0 at every velocity index that moves joint ``joint`` (its supporting joints; the
        universe, joint 0, is moved by none), else 0.0."""
        model = self.model
        mask = np.zeros(model.nv)
        for a in model.supports[joint][1:]:
            mask[model.joints[a].idx_v : model.joints[a].idx_v + model.joints[a].nv] = 1.0
        return mask

    # ----------------------------------------------------------- configurations
    def check_configuration(self, q, what: str = "q") -> np.ndarray:
        """``q`` as a finite float vector of size nq, or raise."""
        return as_vector(q, self.model.nq, what)

    def neutral(self) -> np.ndarray:
        """Pinocchio's neutral configuration (scalar joints at 0), except that a joint whose limits
        exclude 0 is at the middle of its limits, as in MoveIt's default state (clipping 0 into the
        limits would put it on a limit; on the Jaco that folds the arm into itself)."""
        q = pin.neutral(self.model)
        iv = np.flatnonzero(np.isfinite(self.q_min_v))
        iq = self.q_index_of_v[iv]
        lower, upper = self.q_min_v[iv], self.q_max_v[iv]
        q[iq] = np.where((q[iq] < lower) | (q[iq] > upper), 0.5 * (lower + upper), q[iq])
        return q

    def named_configuration(self, state: str, q_ref: np.ndarray | None = None) -> np.ndarray:
        """Configuration of an SRDF ``group_state`` (other joints from ``q_ref`` or neutral)."""
        if state not in self.srdf.group_states:
            raise unknown_name("SRDF group_state", state, self.srdf.group_states)
        values = self.srdf.group_states[state]
        names = [n for n in values if n in self.joint_names]
        return self.q_from_joint_positions(names, [values[n] for n in names], q_ref)

    def integrate(self, q: np.ndarray, dq: np.ndarray) -> np.ndarray:
        """q ⊕ dq (dq of size nv, a displacement, not a velocity)."""
        return pin.integrate(self.model, q, dq)

    def difference(self, q0: np.ndarray, q1: np.ndarray) -> np.ndarray:
        """q1 ⊖ q0: the displacement v with q0 ⊕ v = q1."""
        return pin.difference(self.model, q0, q1)

    def random_configuration(
        self, rng: np.random.Generator, group: JointGroup | None = None, q_ref: np.ndarray | None = None
    ) -> np.ndarray:
        """Uniform random configuration inside the limits for the group's joints (others from q_ref)."""
        group = group or self.group("")
        q = self.neutral() if q_ref is None else np.array(q_ref, dtype=float)
        iv = group.v_indices[group.bounded_v]
        q[group.bounded_q] = rng.uniform(self.q_min_v[iv], self.q_max_v[iv])
        free = np.setdiff1d(np.arange(group.nv), group.bounded_v)
        for k in free:  # unbounded scalar or continuous joints: an angle in [-pi, pi]
            jm = self.model.joints[int(group.joint_ids[k])]
            angle = rng.uniform(-np.pi, np.pi)
            if jm.nq == 2:
                q[jm.idx_q], q[jm.idx_q + 1] = np.cos(angle), np.sin(angle)
            else:
                q[jm.idx_q] = angle
        return q

    def clip_to_limits(self, q: np.ndarray, group: JointGroup) -> None:
        """Clip the group's bounded joints into their position limits, in place."""
        iv = group.v_indices[group.bounded_v]
        q[group.bounded_q] = np.clip(q[group.bounded_q], self.q_min_v[iv], self.q_max_v[iv])

    def within_limits(self, q: np.ndarray, group: JointGroup | None = None, tol: float = 1e-9) -> bool:
        """True if every bounded joint (of the group, default all) is inside its limits (± tol)."""
        group = group or self.group("")
        iv = group.v_indices[group.bounded_v]
        x = q[group.bounded_q]
        return bool(np.all(x >= self.q_min_v[iv] - tol) and np.all(x <= self.q_max_v[iv] + tol))

    def joint_positions(self, q: np.ndarray, names: Sequence[str]) -> np.ndarray:
        """One value per named joint: position for scalar joints, angle for continuous joints."""
        out = np.empty(len(names))
        for k, name in enumerate(names):
            jm = self.model.joints[self._joint_id(name)]
            out[k] = q[jm.idx_q] if jm.nq == 1 else np.arctan2(q[jm.idx_q + 1], q[jm.idx_q])
        return out

    def q_from_joint_positions(
        self, names: Sequence[str], positions: Sequence[float], q_ref: np.ndarray | None = None
    ) -> np.ndarray:
        """Full q from per-joint values (angles for continuous joints); others from q_ref or neutral."""
        if len(names) != len(positions):
            raise InvalidInputError(f"joint positions: {len(names)} names but {len(positions)} positions")
        values = as_vector(positions, len(names), "joint positions")
        q = self.neutral() if q_ref is None else np.array(q_ref, dtype=float)
        for name, value in zip(names, values):
            jm = self.model.joints[self._joint_id(name)]
            if jm.nq == 1:
                q[jm.idx_q] = value
            else:
                q[jm.idx_q], q[jm.idx_q + 1] = np.cos(value), np.sin(value)
        return q

    # ----------------------------------------------------------------- queries
    def arm_reach(self, group, frame: str) -> float:
        """[m] An upper bound of the distance from ``group``'s first joint to ``frame``: the sum of the
        joint-to-joint offsets along the chain (and the frame's own offset from its joint)."""
        model = self.model
        fid = self.frame_id(frame)
        root = int(group.joint_ids[0])
        reach = float(np.linalg.norm(model.frames[fid].placement.translation))
        j = model.frames[fid].parentJoint
        while j > root:
            reach += float(np.linalg.norm(model.jointPlacements[j].translation))
            j = model.parents[j]
        return reach

    def frame_pose(self, q: np.ndarray, frame: str) -> pin.SE3:
        """T_world_frame at q."""
        fid = self.frame_id(frame)
        pin.framesForwardKinematics(self.model, self.data, q)
        return self.data.oMf[fid].copy()

    def in_collision(self, q: np.ndarray) -> bool:
        """True if any active collision pair intersects at q."""
        if not self.collision_model.collisionPairs:
            return False
        if self._collision_data_version != self.world.structure_version:
            self.collision_data = collision_check_data(self.collision_model)
            self._collision_data_version = self.world.structure_version
        return bool(pin.computeCollisions(self.model, self.data, self.collision_model, self.collision_data, q, True))
