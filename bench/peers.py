"""Solver adapters: ours (roboplan_ik_ros.core), RoboPlan (C++ bindings) and pink.

Every adapter talks to the benchmark in group joint values (``Robot.joints`` order, one scalar per
joint) and pin.SE3 targets; conversions happen outside the timed region.

SimpleIK adapters: ``solve(T_goal, seed_values) -> (values, claimed_success, iterations|None, seconds)``
where ``seconds`` is time.perf_counter() around the solver call only.

OInK adapters (closed loop, own state): ``set_target(T)``; ``step() -> seconds`` times the solve plus
enforce-barriers (pink: Configuration.update(q) + solve_ik, since pink has no enforce step and computes
its kinematics in update); integration is done after the timer stops; ``values()`` = current state.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pinocchio as pin

from common import Robot

SIMPLE_KEYS = ("max_iters", "max_time", "max_restarts", "step_size", "damping", "max_linear_error_norm",
               "max_angular_error_norm", "check_collisions", "fast_return")


def roboplan_collision_pairs(robot: Robot) -> str:
    """What RoboPlan's Scene checks for this robot (see :func:`_roboplan_scene`)."""
    if "<disable_collisions" in robot.spec.srdf_xml:
        return "SRDF disable_collisions"
    return "all pairs minus parent-child links (its allowAdjacentLinkCollisions; the SRDF disables none)"


def collision_pairs_line(robot: Robot) -> str:
    """One line: which collision pairs each solver checks for this robot."""
    how = "; ".join(n.split(":")[0] + ":" + n.split(":")[1] for n in robot.notes if "disabled" in n) or \
        "SRDF disable_collisions"
    return (f"collision pairs: checker, ours and pink: the core Scene's, {len(robot.geom.collisionPairs)} pairs "
            f"({how}); roboplan: its own Scene's, {roboplan_collision_pairs(robot)}")


def _roboplan_scene(robot: Robot):
    """RoboPlan's Scene of the robot, with its own collision pairs: the SRDF's disabled pairs or, when the
    SRDF disables none (Kinova), its own ``allowAdjacentLinkCollisions`` (every configuration of such a
    robot collides otherwise); the checker uses the core's pairs (adjacent + always colliding disabled)."""
    import roboplan.core as rc

    s = robot.spec
    scene = rc.Scene(s.name, rc.loadUrdfSceneDescriptionFromXml(s.urdf_xml, list(s.package_paths)))
    if s.srdf_xml.strip():
        scene.importSrdf(s.srdf_xml)
    if "<disable_collisions" not in s.srdf_xml:
        scene.allowAdjacentLinkCollisions()
    names, ref = scene.getJointNames(), robot.ref_joint_values()
    q = scene.getCurrentJointPositions()
    for n in names:  # reference configuration for the joints outside the group (e.g. fingers)
        if n in ref:
            q[scene.getJointPositionIndices([n])[0]] = ref[n]
    scene.setJointPositions(q)
    return scene, np.asarray(scene.getJointPositionIndices(robot.joints))


def _roboplan_add_obstacle(scene, rc, o) -> None:
    """A core Obstacle (world frame) into a RoboPlan Scene (no capsules there: a cylinder of the
    same radius and length + 2 radius, which contains the capsule)."""
    T = o.T_frame_obstacle.homogeneous
    color = np.array([0.8, 0.5, 0.2, 1.0])
    if o.shape == "box":
        scene.addBoxGeometry(o.name, "universe", rc.Box(*o.dims), T, color)
    elif o.shape == "sphere":
        scene.addSphereGeometry(o.name, "universe", rc.Sphere(o.dims[0]), T, color)
    elif o.shape == "cylinder":
        scene.addCylinderGeometry(o.name, "universe", rc.Cylinder(o.dims[0], o.dims[1]), T, color)
    elif o.shape == "capsule":
        scene.addCylinderGeometry(o.name, "universe", rc.Cylinder(o.dims[0], o.dims[1] + 2 * o.dims[0]), T, color)
    else:
        raise ValueError(f"bench: obstacle shape {o.shape!r} not wired for RoboPlan")


def roboplan_octree(rc, cloud):
    """RoboPlan's OcTree of a core PerceivedCloud: the occupied leaves of our coal octree (``toBoxes()``, the
    format RoboPlan's constructor takes) at the same resolution, so both solvers see the same cells."""
    boxes = [np.asarray(b, dtype=float) for b in cloud.octree.toBoxes()]
    return rc.OcTree(boxes, float(cloud.resolution))


def _ours_scene(robot: Robot, core):
    s = robot.spec
    scene = core.Scene(s.urdf_xml, s.srdf_xml, s.package_paths)
    ref = robot.ref_joint_values()
    names = [n for n in scene.joint_names if n in ref]
    q_ref = scene.q_from_joint_positions(names, [ref[n] for n in names], scene.neutral())
    return scene, q_ref


class RoboPlanGroupJoints:
    """Group joint values (one scalar per joint, ``Robot.joints`` order) <-> RoboPlan's group positions
    (its group's q: continuous joints as (cos, sin))."""

    def __init__(self, scene, robot: Robot):
        self.scene, self.robot = scene, robot
        self.q_full = np.array(scene.getCurrentJointPositions(), dtype=float)
        self.q_group = np.asarray(scene.getJointGroupInfo(robot.spec.group).q_indices)
        # first q index of each joint (getJointPositionIndices of a list expands continuous joints to two)
        self.q_joint = np.array([scene.getJointPositionIndices([n])[0] for n in robot.joints])

    def to_full(self, values) -> np.ndarray:
        q = self.q_full.copy()
        for i, c, x in zip(self.q_joint, self.robot.continuous, values):
            if c:
                q[i], q[i + 1] = np.cos(x), np.sin(x)
            else:
                q[i] = x
        return q

    def of_full(self, q) -> np.ndarray:
        return np.array([np.arctan2(q[i + 1], q[i]) if c else q[i] for i, c in zip(self.q_joint, self.robot.continuous)])

    def to_group(self, values) -> np.ndarray:
        return self.to_full(values)[self.q_group]

    def from_group(self, q_group) -> np.ndarray:
        q = self.q_full.copy()
        q[self.q_group] = q_group
        return self.of_full(q)


# ------------------------------------------------------------------------------------ SimpleIK
class RoboPlanSimpleIk:
    def __init__(self, robot: Robot, name: str, seed: int, **options):
        import roboplan.core as rc
        import roboplan.simple_ik as rs

        self.name, self.rc = name, rc
        self.scene, self.qi = _roboplan_scene(robot)
        self.joints = RoboPlanGroupJoints(self.scene, robot)
        self.ik = rs.SimpleIk(self.scene, rs.SimpleIkOptions(group_name=robot.spec.group, **options))
        self.ik.setRngSeed(seed)
        self.tip = robot.spec.tip_frame

    def solve(self, T: pin.SE3, seed_values):
        goal = self.rc.CartesianConfiguration("", self.tip, T.homogeneous)
        start, sol = self.rc.JointConfiguration(), self.rc.JointConfiguration()
        start.positions = self.joints.to_group(seed_values)  # group positions
        t0 = time.perf_counter()
        ok = self.ik.solveIk(goal, start, sol)
        dt = time.perf_counter() - t0
        values = self.joints.from_group(np.array(sol.positions)) if len(sol.positions) else None
        return values, bool(ok), None, None, dt


class OursSimpleIk:
    def __init__(self, robot: Robot, core, name: str, seed: int, **options):
        self.name, self.core, self.robot = name, core, robot
        self.scene, self.q_ref = _ours_scene(robot, core)
        self.ik = core.SimpleIK(self.scene, core.SimpleIKOptions(group_name=robot.spec.group, seed=seed, **options))
        self.tip = robot.spec.tip_frame

    def solve(self, T: pin.SE3, seed_values):
        q_seed = self.scene.q_from_joint_positions(self.robot.joints, seed_values, self.q_ref)
        goals = [self.core.FrameGoal(self.tip, T)]
        t0 = time.perf_counter()
        res = self.ik.solve(goals, q_seed)
        dt = time.perf_counter() - t0
        values = None if res.q is None else self.scene.joint_positions(res.q, self.robot.joints)
        return values, bool(res.success), res.iterations, res.restarts + 1, dt


def robot_ets(robot: Robot):
    """The Robotics Toolbox ETS of the checker's chain from the model's world to the tip frame, with the
    checker's joint limits (ValueError for a joint that is not a revolute about x, y or z)."""
    import roboticstoolbox as rtb

    m = robot.model
    frame = m.frames[robot.tip_id]
    chain = [j for j in list(m.supports[frame.parentJoint])[1:] if m.joints[j].nv > 0]
    if [m.names[j] for j in chain] != list(robot.joints):
        raise ValueError(f"the group {robot.joints} is not the chain to {robot.spec.tip_frame}")
    axes = {"JointModelRX": rtb.ET.Rx, "JointModelRY": rtb.ET.Ry, "JointModelRZ": rtb.ET.Rz}
    ets = []
    for j in list(m.supports[frame.parentJoint])[1:]:
        ets.append(rtb.ET.SE3(m.jointPlacements[j].homogeneous))
        kind = m.joints[j].shortname()
        if kind not in axes:
            raise ValueError(f"joint {m.names[j]} is a {kind}: the ETS here takes revolute x/y/z joints only")
        ets.append(axes[kind]())
    ets.append(rtb.ET.SE3(frame.placement.homogeneous))
    chain_ets = rtb.ETS(ets)
    chain_ets.qlim = np.vstack([robot.lower, robot.upper])
    return chain_ets


class RtbIkLM:
    """The Robotics Toolbox's C++ ``ETS.ik_LM`` (the seed's protocol: ilimit 30, slimit 100, tol on
    E = e^T e / 2; 5e-7 = |e| <= 1e-3, our thresholds), joint limits enforced, no collision check.
    Raises ImportError without roboticstoolbox-python, ValueError for a chain it cannot express."""

    def __init__(self, robot: Robot, name: str, method: str = "chan", tol: float = 5e-7, ilimit: int = 30,
                 slimit: int = 100):
        self.name, self.method, self.tol, self.ilimit, self.slimit = name, method, tol, ilimit, slimit
        self.ets = robot_ets(robot)

    def solve(self, T: pin.SE3, seed_values):
        Tep, q0 = T.homogeneous, np.asarray(seed_values, dtype=float)
        t0 = time.perf_counter()
        sol = self.ets.ik_LM(Tep, q0=q0, ilimit=self.ilimit, slimit=self.slimit, tol=self.tol, joint_limits=True,
                             method=self.method)
        dt = time.perf_counter() - t0
        return np.asarray(sol.q, dtype=float), bool(sol.success), int(sol.iterations), int(sol.searches), dt


class TracIk:
    """TRAC-IK (PyPI ``pytracik``, KDL + SQP in C++, "Speed" mode: first solution) on the robot's URDF
    between the model's root link and the tip, with the checker's joint limits (its URDF parser
    reads some limits as 0: they are set explicitly), ``timeout`` [s], ``epsilon`` its tolerance; no
    collision check. Raises ImportError without pytracik."""

    def __init__(self, robot: Robot, name: str, timeout: float, epsilon: float = 1e-5):
        import pytracik

        self.name, self.pt = name, pytracik
        m = robot.model
        base = m.frames[1].name  # the root link (universe is frame 0)
        self.solver = pytracik.TRAC_IK(base, robot.spec.tip_frame, robot.spec.urdf_xml, timeout, epsilon,
                                       pytracik.SolveType.Speed)
        if pytracik.get_num_joints(self.solver) != len(robot.joints):
            raise ValueError(f"TRAC-IK's chain {base} -> {robot.spec.tip_frame} has "
                             f"{pytracik.get_num_joints(self.solver)} joints, the group {len(robot.joints)}")
        pytracik.set_joint_limits(self.solver, list(robot.lower), list(robot.upper))

    def solve(self, T: pin.SE3, seed_values):
        x, y, z = T.translation
        quat = pin.Quaternion(T.rotation)
        args = (np.asarray(seed_values, dtype=float), x, y, z, quat.x, quat.y, quat.z, quat.w)
        t0 = time.perf_counter()
        out = self.pt.ik(self.solver, *args)
        dt = time.perf_counter() - t0
        ok = out[0] >= 0
        return (np.asarray(out[1:]) if ok else None), bool(ok), None, None, dt


# ---------------------------------------------------------------------------------------- OInK
class OinkSetup:
    """What every closed-loop peer needs: config 'a' | 'b' | 'c' | 'e' (= c + an acceleration limit
    ``a_max`` per group joint [rad/s^2]), dt, box, posture weight, d_min."""

    def __init__(self, config, dt, box_min, box_max, posture_weight=0.05, n_pairs=4, d_min=0.02, reg=1e-6,
                 scb_safe_gain=1.0, a_max=None, label=None):
        self.config, self.dt, self.box_min, self.box_max = config, dt, box_min, box_max
        self.label = label or config  # in the peers' names: the config, or e.g. "c near" for a scenario of it
        self.a_max = a_max
        self.box = config in "bcdep"  # PositionBarrier on the tip
        self.self_collision = config in "cdep"  # SelfCollisionBarrier
        self.obstacles: list = []  # (d): core Obstacles of the cell (world frame), set by the bench
        # (p): a perceived cloud (core PerceivedCloud: world-frame points and their coal OcTree), set by the bench:
        # ours, a CollisionBarrier pairs "perceived"; RoboPlan, the same octree (its leaves) in its Scene
        self.cloud = None
        self.acceleration = config == "e"  # AccelerationLimit
        self.scb_safe_gain = scb_safe_gain  # SelfCollisionBarrier safe_displacement_gain (all peers)
        self.posture_weight, self.n_pairs, self.d_min, self.reg = posture_weight, n_pairs, d_min, reg


class RoboPlanOink:
    def __init__(self, robot: Robot, setup: OinkSetup, q0_values, T0: pin.SE3):
        import roboplan.core as rc
        import roboplan.optimal_ik as ro

        self.name = f"roboplan ({setup.label})"
        self.scene, _ = _roboplan_scene(robot)
        for o in setup.obstacles:  # RoboPlan's Scene takes boxes, spheres, cylinders (and meshes)
            _roboplan_add_obstacle(self.scene, rc, o)
        if setup.cloud is not None:  # the same octree: its occupied leaves, (x, y, z, size, occupancy, threshold)
            self.scene.addOcTreeGeometry("perceived_cloud", "universe", roboplan_octree(rc, setup.cloud), np.eye(4),
                                         np.array([0.6, 0.6, 0.6, 1.0]))
        g, dt = robot.spec.group, setup.dt
        self.joints = RoboPlanGroupJoints(self.scene, robot)
        self.q = self.joints.to_full(q0_values)
        self.oink = ro.Oink(self.scene, g) if g else ro.Oink(self.scene)
        self.ee = ro.FrameTask(self.oink, self.scene, rc.CartesianConfiguration("", robot.spec.tip_frame, T0.homogeneous))
        nv = self.oink.num_variables
        posture = ro.ConfigurationTask(self.oink, self.q[self.oink.q_indices].copy(),
                                       np.full(nv, setup.posture_weight), ro.ConfigurationTaskOptions(priority=2))
        self.tasks = [self.ee, posture]
        self.limits = [ro.PositionLimit(self.oink, 1.0),
                       ro.VelocityLimit(self.oink, dt, self.scene.getVelocityLimitVectors(g)[1])]
        self.accel = None
        if setup.acceleration:  # RoboPlan's (pink's) AccelerationLimit, centred on the last velocity
            self.accel = ro.AccelerationLimit(self.oink, dt, np.asarray(setup.a_max, dtype=float))
            self.limits.append(self.accel)
        self.dt = dt
        self.barriers = []
        if setup.box:
            self.barriers.append(ro.PositionBarrier(self.oink, self.scene, robot.spec.tip_frame, setup.box_min,
                                                    setup.box_max, dt))
        if setup.self_collision:
            self.barriers.append(ro.SelfCollisionBarrier(self.oink, self.scene, dt, ro.SelfCollisionBarrierOptions(
                n_collision_pairs=setup.n_pairs, d_min=setup.d_min, safe_displacement_gain=setup.scb_safe_gain)))
        self.dq = np.zeros(nv)
        self.full = np.zeros(len(self.scene.difference(self.q, self.q)))
        self.reg, self.failures = setup.reg, 0

    def set_target(self, T: pin.SE3):
        self.ee.setTargetFrameTransform(T.homogeneous)

    def step(self) -> float:
        t0 = time.perf_counter()
        if self.accel is not None:
            self.accel.setLastVelocity(self.full[self.oink.v_indices] / self.dt)
        try:
            self.oink.solveIk(self.q, self.tasks, self.limits, self.barriers, self.dq, self.reg)
        except RuntimeError:
            self.dq[:] = 0.0
            self.failures += 1
        self.full[:] = 0.0
        self.full[self.oink.v_indices] = self.dq
        if self.barriers:
            self.oink.enforceBarriers(self.q, self.barriers, self.full, 1e-4)
        dt = time.perf_counter() - t0
        self.q = self.scene.integrate(self.q, self.full)
        return dt

    def values(self):
        return self.joints.of_full(self.q)


class OursOink:
    """``qp_solver``: None = the Oink's default (and the only choice before ``solver.qp_solver`` existed).
    ``rows_per_pair``: of both collision barriers; None = CollisionBarrier's default (1, RoboPlan's form),
    and the name says nothing; else the name says "rpp<n>". ``weighted_nullspace``: Oink's option (the
    name says "wns"; False is RoboPlan's form and passes nothing, as before the option existed)."""

    def __init__(self, robot: Robot, core, setup: OinkSetup, q0_values, T0: pin.SE3, qp_solver: str | None = None,
                 rows_per_pair: int | None = None, fade: tuple[float, float | None] | None = None,
                 weighted_nullspace: bool = False):
        rpp = f" rpp{rows_per_pair}" if rows_per_pair is not None else ""
        # fade: (safe_displacement_fade [m], safe_displacement_max_weight) of every barrier; None = RoboPlan's form
        shape = f" fade{1e3 * fade[0]:g}mm" + (f" cap{fade[1]:g}" if fade[1] is not None else "") if fade else ""
        wns = " wns" if weighted_nullspace else ""
        self.name = (f"ours+{qp_solver}" if qp_solver else "ours") + f"{rpp}{shape}{wns} ({setup.label})"
        rows = {} if rows_per_pair is None else {"rows_per_pair": rows_per_pair}
        if fade:
            rows.update(safe_displacement_fade=fade[0], safe_displacement_max_weight=fade[1])
        box_shape = {k: v for k, v in rows.items() if k.startswith("safe_displacement")}
        self.robot = robot
        self.scene, q_ref = _ours_scene(robot, core)
        self.q = self.scene.q_from_joint_positions(robot.joints, q0_values, q_ref)
        g, dt, tip = robot.spec.group, setup.dt, robot.spec.tip_frame
        extra = {"qp_solver": qp_solver} if qp_solver else {}
        if weighted_nullspace:
            extra["weighted_nullspace"] = True
        self.oink = core.Oink(self.scene, group_name=g, regularization=setup.reg, **extra)
        self.ee = core.FrameTask(self.oink, tip, target=T0)
        group = self.scene.group(g)
        posture = core.ConfigurationTask(self.oink, self.q[np.asarray(group.q_indices)].copy(),
                                         weights=setup.posture_weight, priority=2)
        self.tasks = [self.ee, posture]
        self.limits = [core.PositionLimit(self.oink, gain=1.0), core.VelocityLimit(self.oink, dt)]
        self.accel = None
        if setup.acceleration:  # centred on the last two increments; barrier rows brake within it too
            self.accel = core.AccelerationLimit(self.oink, dt, setup.a_max)
            self.limits.append(self.accel)
            core.brake_barriers_for(self.oink, self.accel)
            self._u1, self._u2 = np.zeros(self.oink.nv), np.zeros(self.oink.nv)
        self.barriers = []
        if setup.box:
            self.barriers.append(core.PositionBarrier(self.oink, tip, setup.box_min, setup.box_max, dt, **box_shape))
        if setup.self_collision:
            self.barriers.append(core.SelfCollisionBarrier(self.oink, n_collision_pairs=setup.n_pairs, dt=dt,
                                                           d_min=setup.d_min,
                                                           safe_displacement_gain=setup.scb_safe_gain, **rows))
        if setup.obstacles:  # the core's Scene and its obstacle barrier (as panda.yaml's 'obstacles')
            for o in setup.obstacles:
                self.scene.add_obstacle(o)
            self.barriers.append(core.CollisionBarrier(self.oink, n_collision_pairs=setup.n_pairs, dt=dt,
                                                       d_min=setup.d_min, safe_displacement_gain=setup.scb_safe_gain,
                                                       pairs="obstacles", name="obstacles", **rows))
        if setup.cloud is not None:  # the scene's perceived cloud and its barrier (as panda.yaml's 'perceived')
            self.scene.set_perceived_cloud(setup.cloud)
            self.barriers.append(core.CollisionBarrier(self.oink, n_collision_pairs=setup.n_pairs, dt=dt,
                                                       d_min=setup.d_min, safe_displacement_gain=setup.scb_safe_gain,
                                                       pairs="perceived", name="perceived", **rows))
        self.failures = 0

    def set_target(self, T: pin.SE3):
        self.ee.set_target(T)

    def step(self) -> float:
        t0 = time.perf_counter()
        if self.accel is not None:
            self.accel.set_history(self._u1, self._u2)
        res = self.oink.solve(self.q, self.tasks, self.limits, self.barriers)
        dq_full = self.oink.scatter(res.dq)
        if self.barriers:
            self.oink.enforce_barriers(self.q, dq_full, self.barriers, tolerance=1e-4)
        dt = time.perf_counter() - t0
        if self.accel is not None:
            self._u2[:] = self._u1
            self._u1[:] = dq_full[self.oink.group.v_columns]  # the step applied (after enforce)
        self.failures += not res.ok
        self.q = self.scene.integrate(self.q, dq_full)
        return dt

    def values(self):
        return self.scene.joint_positions(self.q, self.robot.joints)


class PinkOink:
    """pink on a model reduced to the group (other joints locked at the reference configuration).

    pink has no task priorities: the posture task is summed with cost sqrt(w) (pink squares its costs,
    RoboPlan/ours use sqrt(w) in W), i.e. the same quadratic weight but no nullspace projection.
    Collision model: convex hulls (pink requires convex geometry for its distance Jacobians).
    """

    def __init__(self, robot: Robot, setup: OinkSetup, q0_values, T0: pin.SE3, solver: str):
        import coal
        import pink
        from pink import barriers, limits, tasks

        self.pink, self.solver, self.dt = pink, solver, setup.dt
        self.name = f"pink+{solver} ({setup.label})"
        m, s = robot.model, robot.spec
        gm = pin.buildGeomFromUrdfString(m, s.urdf_xml, pin.COLLISION, package_dirs=list(s.package_paths))
        for go in gm.geometryObjects:
            if isinstance(go.geometry, coal.BVHModelBase):
                go.geometry.buildConvexHull(False, "Qt")
                go.geometry = go.geometry.convex
        for cp in robot.geom.collisionPairs:
            gm.addCollisionPair(pin.CollisionPair(cp.first, cp.second))
        locked = [m.getJointId(n) for n in robot.all_joints if n not in robot.joints]
        self.model, gm = pin.buildReducedModel(m, gm, locked, robot.q_ref) if locked else (m, gm)
        jids = [self.model.getJointId(n) for n in robot.joints]
        self.idx_q = np.array([self.model.joints[j].idx_q for j in jids])
        self.continuous = np.array([self.model.joints[j].nq == 2 for j in jids])
        self.q = pin.neutral(self.model)
        values = np.asarray(q0_values, dtype=float)
        self.q[self.idx_q] = np.where(self.continuous, np.cos(values), values)  # continuous: (cos, sin)
        self.q[self.idx_q[self.continuous] + 1] = np.sin(values[self.continuous])
        cfg = setup.config
        self.conf = pink.Configuration(self.model, self.model.createData(), self.q,
                                       collision_model=gm if cfg == "c" else None,
                                       collision_data=pin.GeometryData(gm) if cfg == "c" else None)
        self.ee = tasks.FrameTask(s.tip_frame, position_cost=1.0, orientation_cost=1.0)
        self.ee.set_target(T0)
        posture = tasks.PostureTask(cost=float(np.sqrt(setup.posture_weight)))
        posture.set_target(self.q.copy())
        self.tasks = [self.ee, posture]
        self.limits = [limits.ConfigurationLimit(self.model, config_limit_gain=1.0), limits.VelocityLimit(self.model)]
        self.barriers = []
        if cfg in "bc":
            self.barriers.append(barriers.PositionBarrier(s.tip_frame, p_min=setup.box_min, p_max=setup.box_max,
                                                          gain=1.0, safe_displacement_gain=1.0))
        if cfg == "c":
            self.barriers.append(barriers.SelfCollisionBarrier(setup.n_pairs, gain=1.0, d_min=setup.d_min,
                                                               safe_displacement_gain=setup.scb_safe_gain))
        self.reg, self.failures = setup.reg, 0
        warnings.filterwarnings("ignore", module="qpsolvers")

    def set_target(self, T: pin.SE3):
        self.ee.set_target(T)

    def step(self) -> float:
        t0 = time.perf_counter()
        self.conf.update(self.q)
        try:
            v = self.pink.solve_ik(self.conf, self.tasks, self.dt, solver=self.solver, damping=self.reg,
                                   limits=self.limits, barriers=self.barriers or None, safety_break=False)
        except Exception:  # NoSolutionFound
            v = np.zeros(self.model.nv)
            self.failures += 1
        dt = time.perf_counter() - t0
        self.q = pin.integrate(self.model, self.q, v * self.dt)
        return dt

    def values(self):
        c, i = self.continuous, self.idx_q
        return np.where(c, np.arctan2(self.q[np.where(c, i + 1, i)], self.q[i]), self.q[i])


def pink_solvers() -> tuple[list[str], str]:
    """Installed pink QP backends among daqp/osqp, and a note for the missing ones."""
    try:
        import pink  # noqa: F401
        import qpsolvers
    except ImportError as exc:
        return [], f"pink not installed ({exc}); skipping pink rows"
    have = [s for s in ("daqp", "osqp") if s in qpsolvers.available_solvers]
    missing = [s for s in ("daqp", "osqp") if s not in have]
    return have, (f"qpsolvers backend(s) not installed: {', '.join(missing)}" if missing else "")
