"""Shared code for the benchmark scripts: robot loading, the independent checker, goals, stats, output.

The checker (:class:`Robot`) checks every solver's answers on its own instance of the core's robot
model (``core.model.scene.Scene`` with ``convex_hulls=False``): the URDF's *raw* collision meshes
(exact geometry, while the solvers' default is convex hulls) and the collision pairs the node itself
checks: the SRDF's disabled pairs removed or, for an SRDF that disables none (the Kinova Jaco of
example-robot-data), adjacent and always-colliding pairs disabled as MoveIt's setup assistant does.
So every robot the node takes also benchmarks. Solvers exchange joint values with it by joint name
(one scalar per joint, in the order of the benchmarked group), never by raw configuration vectors.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import coal
import numpy as np
import pinocchio as pin

REPO = Path(__file__).resolve().parents[1]
if str(REPO / "roboplan_ik_ros") not in sys.path:  # package not necessarily installed in the venv
    sys.path.insert(0, str(REPO / "roboplan_ik_ros"))

from roboplan_ik_ros.core.model.robots import RobotDescription, example_robot_data_share, load_example_robot  # noqa: E402
from roboplan_ik_ros.core.model.scene import Scene  # noqa: E402


RobotSpec = RobotDescription  # name, urdf_xml, srdf_xml, package_paths, group, tip_frame


def _example_robot(name: str) -> RobotSpec:
    rd = load_example_robot(name)
    return rd


ALL_ROBOTS = ("panda", "ur5", "kinova")  # --robot all
# a long chain (the RTB notebook's Valkyrie table): TALOS's torso (2) + left arm (7), tip the wrist's
# tool frame; its SRDF gets this group added (the collision pairs are its own)
TALOS_TORSO_ARM = ("torso_1_joint", "torso_2_joint", *(f"arm_left_{i}_joint" for i in range(1, 8)))
EXTRA_ROBOTS = ("talos_arm",)  # not in --robot all


def _talos_torso_arm() -> RobotSpec:
    share = example_robot_data_share()
    d = share / "example-robot-data" / "robots" / "talos_data"
    group = "".join(f'<joint name="{j}"/>' for j in TALOS_TORSO_ARM)
    srdf = (d / "srdf" / "talos.srdf").read_text().replace(
        "</robot>", f'<group name="torso_left_arm">{group}</group>\n</robot>', 1)
    return RobotSpec("talos_arm", (d / "robots" / "talos_reduced.urdf").read_text(), srdf, (str(share),),
                     "torso_left_arm", "arm_left_7_link")


def add_common_args(p: argparse.ArgumentParser, robots=(*ALL_ROBOTS, "all"), default_robot="all") -> None:
    p.add_argument("--robot", choices=robots, default=default_robot)
    p.add_argument("--urdf", help="URDF path (any robot; overrides --robot)")
    p.add_argument("--srdf", default="", help="SRDF path (with --urdf)")
    p.add_argument("--group", default="", help="joint group (with --urdf; '' = all actuated joints)")
    p.add_argument("--tip", help="tip frame (with --urdf)")
    p.add_argument("--package-path", action="append", default=None,
                   help="folder against which package:// resolves (default: example-robot-data's share)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", metavar="PATH", help="write the result rows as a JSON list")


def robot_specs(args) -> list[RobotSpec]:
    if args.urdf:
        if not args.tip:
            raise SystemExit("--urdf needs --tip")
        pkg = tuple(args.package_path or [str(example_robot_data_share())])
        srdf = Path(args.srdf).read_text() if args.srdf else ""
        return [RobotSpec(Path(args.urdf).stem, Path(args.urdf).read_text(), srdf, pkg, args.group, args.tip)]
    names = list(ALL_ROBOTS) if args.robot == "all" else [args.robot]
    return [_talos_torso_arm() if n == "talos_arm" else _example_robot(n) for n in names]


def _srdf_group_joints(model: pin.Model, srdf: str, group: str) -> list[str]:
    root = ET.fromstring(srdf)
    groups = {g.get("name"): g for g in root.findall("group")}
    if group not in groups:
        raise SystemExit(f"group {group!r} not in SRDF (have {sorted(groups)})")
    out: list[str] = []
    for child in groups[group]:
        if child.tag == "joint":
            out.append(child.get("name"))
        elif child.tag == "group":
            out += _srdf_group_joints(model, srdf, child.get("name"))
        elif child.tag == "chain":  # walk from the tip link up to the base link
            base_joint = model.frames[model.getFrameId(child.get("base_link"))].parentJoint
            jid, chain = model.frames[model.getFrameId(child.get("tip_link"))].parentJoint, []
            while jid not in (0, base_joint):
                chain.append(model.names[jid])
                jid = model.parents[jid]
            out += chain[::-1]
    return out


class Robot:
    """Checker: FK, limits, collisions and distances on the raw-mesh collision model, with the collision
    pairs of the core's Scene (``notes``: the decisions it made about the SRDF)."""

    def __init__(self, spec: RobotSpec, seed: int = 12345):
        self.spec = spec
        scene = Scene(spec.urdf_xml, spec.srdf_xml, spec.package_paths, convex_hulls=False)
        self.notes = list(scene.notes)
        m = self.model = scene.model
        self.data = m.createData()
        gm = scene.collision_model
        self.geom, self.gdata = gm, pin.GeometryData(gm)
        self._hull = None
        actuated = [m.names[j] for j in range(1, m.njoints) if m.joints[j].nv > 0]
        names = _srdf_group_joints(m, spec.srdf_xml, spec.group) if spec.group else actuated
        self.joints = [n for n in names if m.existJointName(n) and m.joints[m.getJointId(n)].nv > 0]
        self.all_joints = actuated
        js = [m.joints[m.getJointId(n)] for n in self.joints]
        self.idx_q = np.array([j.idx_q for j in js])
        self.idx_v = np.array([j.idx_v for j in js])
        self.continuous = np.array([j.nq == 2 for j in js])
        lo, hi = m.lowerPositionLimit[self.idx_q], m.upperPositionLimit[self.idx_q]
        self.lower = np.where(self.continuous, -np.inf, lo)
        self.upper = np.where(self.continuous, np.inf, hi)
        self.v_max = np.array(m.velocityLimit[self.idx_v])
        self.tip_id = m.getFrameId(spec.tip_frame)
        if self.tip_id >= m.nframes:
            raise SystemExit(f"tip frame {spec.tip_frame!r} not in the model")
        self.q_ref = pin.neutral(m)
        self.ref_source = "neutral"
        if spec.srdf_xml.strip():
            pin.loadReferenceConfigurationsFromXML(m, spec.srdf_xml, False)
            if "default" in m.referenceConfigurations:
                self.q_ref, self.ref_source = m.referenceConfigurations["default"].copy(), 'SRDF "default"'
        v = self.values(self.q_ref)
        if not self.within_limits(v) or self.in_collision(v):
            try:
                self.q_ref = self.full_q(self.random_values(np.random.default_rng(seed), collision_free=True))
                self.ref_source = f"random collision-free (rng {seed}; {self.ref_source} invalid)"
            except RuntimeError as exc:  # e.g. no SRDF: adjacent links always "collide"
                self.ref_source += f" (invalid, kept: {exc})"

    # ---- joint values <-> q (q of the checker's model; non-group joints from q_ref)
    def full_q(self, values) -> np.ndarray:
        q = self.q_ref.copy()
        for iq, c, x in zip(self.idx_q, self.continuous, values):
            if c:
                q[iq], q[iq + 1] = np.cos(x), np.sin(x)
            else:
                q[iq] = x
        return q

    def values(self, q) -> np.ndarray:
        return np.array([np.arctan2(q[i + 1], q[i]) if c else q[i] for i, c in zip(self.idx_q, self.continuous)])

    def ref_joint_values(self) -> dict[str, float]:
        """Every actuated joint of the reference configuration, by name (scalar per joint)."""
        out = {}
        for n in self.all_joints:
            j = self.model.joints[self.model.getJointId(n)]
            out[n] = float(np.arctan2(self.q_ref[j.idx_q + 1], self.q_ref[j.idx_q]) if j.nq == 2
                           else self.q_ref[j.idx_q])
        return out

    def random_values(self, rng, collision_free=False, max_tries=10000) -> np.ndarray:
        for _ in range(max_tries):
            v = rng.uniform(np.where(self.continuous, -np.pi, self.lower), np.where(self.continuous, np.pi, self.upper))
            if not collision_free or not self.in_collision(v):
                return v
        raise RuntimeError(f"no collision-free configuration in {max_tries} draws (missing SRDF disabled pairs?)")

    # ---- checks
    def tip_pose(self, values) -> pin.SE3:
        pin.framesForwardKinematics(self.model, self.data, self.full_q(values))
        return self.data.oMf[self.tip_id].copy()

    def pose_errors(self, values, target: pin.SE3) -> tuple[float, float]:
        T = self.tip_pose(values)
        return (float(np.linalg.norm(T.translation - target.translation)),
                float(np.linalg.norm(pin.log3(target.rotation.T @ T.rotation))))

    def within_limits(self, values, tol=1e-9) -> bool:
        v = np.asarray(values)
        return bool(np.all(v >= self.lower - tol) and np.all(v <= self.upper + tol))

    def in_collision(self, values) -> bool:
        return bool(pin.computeCollisions(self.model, self.data, self.geom, self.gdata, self.full_q(values), True))

    def min_distance(self, values) -> float:
        """Exact smallest mesh-to-mesh distance over the active pairs (0 or less when in contact).

        Convex-hull distances are lower bounds of mesh distances, so pairs are visited in order of
        hull distance and the (slow) mesh query stops once no remaining pair can be closer.
        """
        if self._hull is None:
            self._hull = pin.buildGeomFromUrdfString(self.model, self.spec.urdf_xml, pin.COLLISION,
                                                     package_dirs=list(self.spec.package_paths))
            for go in self._hull.geometryObjects:
                if isinstance(go.geometry, coal.BVHModelBase):
                    go.geometry.buildConvexHull(False, "Qt")
                    go.geometry = go.geometry.convex
            for cp in self.geom.collisionPairs:  # same pairs, same order
                self._hull.addCollisionPair(pin.CollisionPair(cp.first, cp.second))
            self._hull_data = pin.GeometryData(self._hull)
        q = self.full_q(values)
        pin.updateGeometryPlacements(self.model, self.data, self.geom, self.gdata, q)
        pin.updateGeometryPlacements(self.model, self.data, self._hull, self._hull_data)
        lower = [pin.computeDistance(self._hull, self._hull_data, k).min_distance
                 for k in range(len(self._hull.collisionPairs))]
        best = np.inf
        for k in np.argsort(lower):
            if lower[k] >= best:
                break
            best = min(best, pin.computeDistance(self.geom, self.gdata, int(k)).min_distance)
        return float(best)


def make_goals(robot: Robot, n: int, seed: int) -> tuple[list[tuple[np.ndarray, pin.SE3]], int]:
    """n goals = FK of uniform random in-limit, collision-free group configurations; also returns #drawn."""
    rng = np.random.default_rng(seed)
    goals, drawn = [], 0
    while len(goals) < n:
        v = robot.random_values(rng)
        drawn += 1
        if not robot.in_collision(v):
            goals.append((v, robot.tip_pose(v)))
        elif drawn > 10000 and not goals:
            raise SystemExit("every random configuration collides (missing SRDF disabled pairs?)")
    return goals, drawn


def time_stats(seconds) -> dict:
    us = np.asarray(seconds, dtype=float) * 1e6
    if us.size == 0:
        return {"median_us": float("nan"), "mean_us": float("nan"), "p99_us": float("nan")}
    return {"median_us": float(np.median(us)), "mean_us": float(np.mean(us)), "p99_us": float(np.percentile(us, 99))}


def machine_note() -> str:
    """One line on the machine's state now: load average and the speed of a plain Python loop (the
    yardstick of perf-notes.md: ~250 ns per iteration on a slow day)."""
    n, acc = 300_000, 0
    t0 = time.perf_counter()
    for i in range(n):
        acc += i
    ns = (time.perf_counter() - t0) / n * 1e9
    la = os.getloadavg()
    return (f"machine: {os.cpu_count()} CPUs, load average {la[0]:.2f} / {la[1]:.2f} / {la[2]:.2f} (1/5/15 min), "
            f"plain Python loop (function locals) {ns:.0f} ns/iteration")


def fmt(x, spec=".1f") -> str:
    if x is None or (isinstance(x, float) and np.isnan(x)):
        return "-"
    return format(x, spec)


def print_table(title: str, columns: list[str], rows: list[list[str]]) -> None:
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        print(f"\n{title}\n" + " | ".join(columns))
        for r in rows:
            print(" | ".join(r))
        return
    t = Table(title=title, title_justify="left")
    for i, c in enumerate(columns):
        t.add_column(c, justify="left" if i == 0 else "right", no_wrap=i == 0)
    for r in rows:
        t.add_row(*r)
    Console(width=160).print(t)


def print_ratios(title: str, pairs: list[tuple[str, str, float, float]]) -> None:
    """pairs: (label, metric, ours, peer) -> prints ours/peer."""
    print(title)
    for label, metric, ours, peer in pairs:
        r = ours / peer if peer and np.isfinite(peer) and np.isfinite(ours) else float("nan")
        # two decimals, or three significant digits below 0.1 (a 0.003x ratio is not "0.00")
        print(f"  {label:<44} {metric:<14} ours/peer = {fmt(r, '.2f' if not np.isfinite(r) or abs(r) >= 0.1 else '.3g')}"
              f"  ({fmt(ours)} vs {fmt(peer)})")


def write_json(path: str | None, rows: list[dict]) -> None:
    if path:
        Path(path).write_text(json.dumps(rows, indent=1, default=float))
        print(f"wrote {len(rows)} rows to {path}")


def core_qp_solvers(core) -> tuple[list[str], str]:
    """QP backends of our OInK when the core has the ``solver.qp_solver`` key, and its default.

    Detected, not assumed: the key must be a field of ``core.config.SolverConfig`` and a keyword of
    ``core.Oink``. Before it exists: ``([], "")`` (one "ours" row, the solver's built-in QP).
    """
    import dataclasses
    import inspect

    if core is None:
        return [], ""
    try:
        from roboplan_ik_ros.core.config import SolverConfig

        fields = {f.name: f for f in dataclasses.fields(SolverConfig)}
        params = inspect.signature(core.Oink.__init__).parameters
    except Exception:  # mid-edit
        return [], ""
    if "qp_solver" not in fields or "qp_solver" not in params:
        return [], ""
    default = fields["qp_solver"].default
    return ["daqp", "osqp"], (default if isinstance(default, str) else "")


def verdict(ok) -> str:
    """PASS / MISS / '-' (not measured) for a target."""
    if ok is None:
        return "-"
    return "PASS" if ok else "MISS"


def import_core():
    """Our core package, or (None, reason) while it is not importable."""
    try:
        from roboplan_ik_ros import core

        for attr in ("Scene", "SimpleIK", "Oink"):
            getattr(core, attr)
        return core, ""
    except Exception as exc:  # not written yet / mid-edit
        return None, f"{type(exc).__name__}: {exc}"


# ------------------------------------------------------------------------------- config (d): the cell
def cell_obstacles(core, seed: int, robot, q0, targets) -> list:
    """A table (top 1 cm under the base plane), a back wall, a side wall and 20 random primitives
    (boxes, spheres, cylinders, capsules; ``seed``) around the arm, as core Obstacles in the world
    frame. A primitive that would come within 5 cm of the robot along the scenario (the start and
    every 50th target's reference pose is not known before the run: the start pose and the tip's
    circle, swept by a 10 cm sphere) is drawn again, so the scene is the same on every run and
    starts collision-free."""
    from roboplan_ik_ros.core.model.obstacles import Obstacle

    rng = np.random.default_rng(seed)
    out = [Obstacle("table", "box", (1.2, 1.2, 0.04), position=(0.35, 0.0, -0.03)),
           Obstacle("wall_back", "box", (0.04, 1.4, 1.2), position=(-0.5, 0.0, 0.55)),
           Obstacle("wall_side", "box", (1.2, 0.04, 1.2), position=(0.35, 0.8, 0.55))]
    check = _ObstacleChecker(robot.spec, out)  # the scene so far (raw meshes)
    tips = np.array([T.translation for T in targets[::50]])
    k = 0
    while k < 20:
        shape = ("box", "sphere", "cylinder", "capsule")[k % 4]
        dims = {"box": tuple(rng.uniform(0.03, 0.1, 3)), "sphere": (float(rng.uniform(0.02, 0.06)),)}.get(
            shape, (float(rng.uniform(0.02, 0.05)), float(rng.uniform(0.05, 0.15))))
        angle, radius = rng.uniform(-np.pi, np.pi), rng.uniform(0.35, 0.85)
        position = np.array([radius * np.cos(angle), radius * np.sin(angle), rng.uniform(0.05, 0.9)])
        o = Obstacle(f"clutter_{k}", shape, tuple(float(d) for d in dims), position=tuple(position))
        if np.min(np.linalg.norm(tips - position, axis=1)) < 0.15 or check.min_distance(q0, robot, [o]) < 0.05:
            continue
        out.append(o)
        k += 1
    return out


class _ObstacleChecker:
    """Distances robot x obstacles with a core Scene built on the raw meshes (no convex hulls) and
    pinocchio/coal queries over every pair (no broad phase): the bench's own check."""

    def __init__(self, spec, obstacles) -> None:
        from roboplan_ik_ros.core.model.scene import Scene

        self.scene = Scene(spec.urdf_xml, spec.srdf_xml, list(spec.package_paths), convex_hulls=False)
        for o in obstacles:
            self.scene.add_obstacle(o)
        self.data = self.scene.model.createData()

    def min_distance(self, values, robot, extra=()) -> float:
        import pinocchio as pin

        scene = self.scene
        for o in extra:
            scene.add_obstacle(o)
        try:
            names = [n for n in robot.joints]
            q = scene.q_from_joint_positions(names, list(values), scene.neutral())
            gd = pin.GeometryData(scene.collision_model)
            pin.updateGeometryPlacements(scene.model, self.data, scene.collision_model, gd, q)
            robot_geoms = scene.world.n_robot_geometries
            pairs = [k for k, p in enumerate(scene.collision_model.collisionPairs) if p.second >= robot_geoms
                     and (not extra or scene.world.obstacle_name(p.second) in {o.name for o in extra})]
            return min((pin.computeDistance(scene.collision_model, gd, k).min_distance for k in pairs), default=np.inf)
        finally:
            for o in extra:
                scene.remove_obstacle(o.name)


def obstacle_checker(setup, robot) -> _ObstacleChecker:
    """The checker of a setup's obstacles (built once per setup)."""
    checker = getattr(setup, "_obstacle_checker", None)
    if checker is None:
        checker = setup._obstacle_checker = _ObstacleChecker(robot.spec, setup.obstacles)
    return checker
