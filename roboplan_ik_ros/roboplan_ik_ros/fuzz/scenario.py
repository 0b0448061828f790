"""One seeded random scenario: a robot, its scene and its goals (:func:`make_scenario`).

Everything is drawn from ``numpy.random.default_rng(seed)``, so a seed replays the same scenario. Kinds:

- ``pose_reachable``: one pose step to the forward kinematics of a nearby configuration (joints within
  +-0.35 rad of the start, inside the workspace box, clear of every obstacle by d_min + ``PATH_CLEARANCE`` along
  the joint-space line): checked for overshoot and settling.
- ``pose_sequence``: two or three such steps, each from rest at the previous goal (checked), then one goal sent
  mid-motion (not checked).
- ``pose_unreachable``: a goal beyond the arm's reach (but within node.max_goal_distance).
- ``pose_through_obstacle``: a reachable goal with an obstacle (or a perceived cloud) on the straight path of
  the tool (not checked: the arm may stop at the obstacle).
- ``twist_stream``: twists at ``STREAM_RATE_HZ`` for 0.5-2 s, one or two directions, then nothing (the loop's
  command_timeout brakes the stream).
- ``joint_step``, ``joint_jog``: a joint goal (checked when verified clear), or a jog stream, on the
  joint-space variant of the config (:func:`..robots.make_config`).

The scene: the config's obstacles (panda.yaml's table), a table under the other arms (most scenarios),
0-3 random primitives (box, cylinder, sphere, a convex mesh given by its vertices) near the tool's path, and
in some scenarios a noisy perceived cloud sampled from a primitive's surface. Every obstacle is clear of the
start pose by its d_min + ``START_CLEARANCE`` (and of a checked step's path by d_min + ``PATH_CLEARANCE``).
The robot follows every command, or lags 1-5 ticks behind (a pure delay) in ``LAG_SHARE`` of the scenarios.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from ..core.model.obstacles import Obstacle
from ..core.model.scene_config import scene_from_config
from .distances import DistanceOracle
from .robots import ROBOTS, fuzz_robot, make_config, start_configuration

KINDS = ("pose_reachable", "pose_sequence", "pose_unreachable", "pose_through_obstacle", "twist_stream",
         "joint_step", "joint_jog")
JOINT_SPACE_KINDS = ("joint_step", "joint_jog")
STREAM_RATE_HZ = 100.0
LAG_SHARE = 0.3
START_CLEARANCE = 0.03  # [m] beyond d_min at the start pose
PATH_CLEARANCE = 0.10  # [m] beyond d_min along a checked step's joint-space line
TABLE_TOP = -0.01  # [m] panda.yaml's table top (z), used for the UR5's and the xArm's
LINE_SAMPLES = 12


@dataclass
class Event:
    """An input at ``t`` [s]: ``pose`` (value pin.SE3 per task: dict), ``joints`` (group q), ``twist``
    ((linear, angular) unitless, sent every 1/STREAM_RATE_HZ until ``until``), ``jog`` (group dq unitless, the
    same)."""

    t: float
    kind: str
    task: str
    value: object
    until: float = 0.0
    checked: bool = False  # a reachable, unobstructed step from rest: overshoot and settling checked
    label: str = ""


@dataclass
class Scenario:
    seed: int
    robot: str
    kind: str
    lag_ticks: int
    joint_space: bool
    q_start: np.ndarray
    obstacles: list = field(default_factory=list)  # Obstacle, added like ~/collision_objects before the goal
    cloud_points: np.ndarray | None = None  # world frame [m], the perceived cloud (set before the goal)
    cloud_source: str = ""
    events: list = field(default_factory=list)
    duration: float = 0.0
    notes: list = field(default_factory=list)

    def summary(self) -> str:
        scene = [o.shape for o in self.obstacles] + (["cloud"] if self.cloud_points is not None else [])
        return (f"{self.robot} {self.kind} lag={self.lag_ticks} scene=[{','.join(scene)}] "
                f"events={len(self.events)} T={self.duration:.1f}s")


def d_min_by_class(config) -> dict[str, float]:
    """Pair class -> d_min of the config's collision barriers (pairs: self, obstacles, perceived)."""
    out = {}
    for b in config.barriers:
        pairs = getattr(b, "pairs", "self" if b.type == "self_collision" else None)
        if b.type in ("collision", "self_collision") and pairs in ("self", "obstacles", "perceived"):
            out[pairs] = min(out.get(pairs, np.inf), float(b.d_min))
    return out


def build_scene(robot: str, config, obstacles=(), cloud_points=None):
    """The robot's scene with the config's obstacles, then ``obstacles`` and the cloud added."""
    from ..core.model.perceived_cloud import CloudIngest

    desc = fuzz_robot(robot).description
    scene = scene_from_config(desc.urdf_xml, desc.srdf_xml, config.robot, desc.package_paths, config.obstacles)
    for o in obstacles:
        scene.add_obstacle(o)
    if cloud_points is not None:
        scene.set_perceived_cloud(CloudIngest(scene, config.perception).cloud(cloud_points))
    return scene


def frame_tasks(config) -> list:
    return [t for t in config.tasks if t.type == "frame"]


class _Builder:
    """The state of one scenario's generation (scene, oracle, rng)."""

    def __init__(self, seed: int) -> None:
        self.rng = rng = np.random.default_rng(seed)
        self.robot = str(rng.choice(ROBOTS))
        self.kind = str(rng.choice(KINDS))
        self.joint_space = self.kind in JOINT_SPACE_KINDS
        self.lag = int(rng.integers(1, 6)) if rng.random() < LAG_SHARE else 0
        self.config, self.settings = make_config(self.robot, self.joint_space)
        self.full_config = make_config(self.robot)[0] if self.joint_space else self.config
        self.d_min = d_min_by_class(self.config)
        self.scene = build_scene(self.robot, self.config)
        self.group = self.scene.group(self.config.robot.group)
        self.obstacles: list[Obstacle] = []
        self.notes: list[str] = []
        self.frames = [t.frame for t in frame_tasks(self.full_config)]
        self.q_start = self._start()

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    # -------------------------------------------------------------- checks
    def oracle(self) -> DistanceOracle:
        version = self.scene.collision_version
        if getattr(self, "_oracle_version", None) != version:
            self._oracle, self._oracle_version = DistanceOracle(self.scene, self.d_min, 0.0), version
        return self._oracle

    def clear(self, qs, clearance: float, classes=("self", "obstacles", "perceived")) -> bool:
        """Every pair of ``classes`` at least d_min + clearance apart at every q of ``qs`` (self pairs: d_min
        + 5 mm)."""
        oracle = self.oracle()
        for q in qs:
            for c, closest in oracle.closest(q, beyond=clearance).items():
                if c in classes and closest.margin < (clearance if c != "self" else 0.005):
                    return False
        return True

    def in_workspace(self, q, margin: float = 0.02) -> bool:
        for b in self.full_config.barriers:
            if b.type != "position":
                continue
            p = self.scene.frame_pose(q, b.frame).translation
            axes = np.asarray(getattr(b, "axis_selection", None) or [True] * 3, dtype=bool)
            lo, hi = np.asarray(b.p_min, float), np.asarray(b.p_max, float)
            if ((p < lo + margin) | (p > hi - margin))[axes].any():
                return False
        return True

    def perturbed(self, q0: np.ndarray, spread: float) -> np.ndarray:
        g = self.group.q_indices
        lo, hi = self.scene.model.lowerPositionLimit[g], self.scene.model.upperPositionLimit[g]
        q = q0.copy()
        q[g] = np.clip(q0[g] + self.rng.uniform(-spread, spread, len(g)), lo + 0.05, hi - 0.05)
        return q

    def line(self, q0, q1, n: int = LINE_SAMPLES):
        return [pin.interpolate(self.scene.model, q0, q1, s) for s in np.linspace(0.0, 1.0, n)]

    def _start(self) -> np.ndarray:
        nominal = start_configuration(self.scene, self.group, fuzz_robot(self.robot))
        for _ in range(10):
            q = self.perturbed(nominal, 0.1)
            if self.clear([q], START_CLEARANCE) and self.in_workspace(q):
                return q
        self.notes.append("start: the nominal pose (no perturbed one was clear)")
        return nominal

    # -------------------------------------------------------------- scene
    def add(self, obstacle: Obstacle, qs, clearance: float) -> bool:
        """Add ``obstacle`` if every q of ``qs`` keeps d_min + clearance from it."""
        self.scene.add_obstacle(obstacle)
        if self.clear(qs, clearance, ("obstacles",)):
            self.obstacles.append(obstacle)
            return True
        self.scene.remove_obstacle(obstacle.name)
        return False

    def table(self) -> None:
        if self.robot == "panda" or self.rng.random() > 0.8:
            return  # panda.yaml ships its table
        if self.robot == "baxter_dual":
            z = min(self.scene.frame_pose(self.q_start, f).translation[2] for f in self.frames)
            for drop in (0.15, 0.25, 0.35):
                top = z - drop - self.rng.uniform(0.0, 0.1)
                t = Obstacle("table", "box", (0.8, 1.4, 0.04), position=(0.75, 0.0, top - 0.02))
                if self.add(t, [self.q_start], START_CLEARANCE):
                    return
            return
        self.add(Obstacle("table", "box", (1.2, 1.2, 0.04), position=(0.35, 0.0, TABLE_TOP - 0.02)), [self.q_start],
                 START_CLEARANCE)

    def random_primitive(self, name: str, centre: np.ndarray) -> Obstacle:
        rng = self.rng
        shape = str(rng.choice(("box", "cylinder", "sphere", "mesh")))
        quat = pin.Quaternion(pin.exp3(rng.normal(size=3) * rng.uniform(0.0, 1.5)))
        xyzw = (quat.x, quat.y, quat.z, quat.w)
        if shape == "box":
            return Obstacle(name, "box", tuple(rng.uniform(0.03, 0.2, 3)), position=tuple(centre), quaternion_xyzw=xyzw)
        if shape == "cylinder":
            return Obstacle(name, "cylinder", (rng.uniform(0.02, 0.08), rng.uniform(0.1, 0.4)), position=tuple(centre),
                            quaternion_xyzw=xyzw)
        if shape == "sphere":
            return Obstacle(name, "sphere", (rng.uniform(0.03, 0.1),), position=tuple(centre))
        from scipy.spatial import ConvexHull

        points = rng.normal(size=(14, 3))
        points *= rng.uniform(0.04, 0.12) / np.linalg.norm(points, axis=1, keepdims=True)
        hull = ConvexHull(points)
        used = np.unique(hull.simplices)
        remap = np.full(len(points), -1)
        remap[used] = np.arange(len(used))
        return Obstacle(name, "mesh", vertices=points[used], triangles=remap[hull.simplices], position=tuple(centre),
                        quaternion_xyzw=xyzw)

    def near_path(self, qs) -> np.ndarray:
        """A point 0.1-0.35 m from the tool at one of ``qs``, in a random direction."""
        q = qs[int(self.rng.integers(len(qs)))]
        frame = self.frames[int(self.rng.integers(len(self.frames)))] if self.frames else None
        p = self.scene.frame_pose(q, frame).translation if frame else self.scene.frame_pose(q, self._tip()).translation
        d = self.rng.normal(size=3)
        return p + d / np.linalg.norm(d) * self.rng.uniform(0.1, 0.35)

    def _tip(self) -> str:
        return fuzz_robot(self.robot).description.tip_frame

    def clutter(self, path_qs, checked_qs) -> None:
        for k in range(int(self.rng.integers(0, 4))):
            for _ in range(8):
                o = self.random_primitive(f"clutter{k}", self.near_path(path_qs))
                if self.add(o, [self.q_start], START_CLEARANCE) and (
                        not checked_qs or self._still_clear(o, checked_qs)):
                    break

    def _still_clear(self, o: Obstacle, checked_qs) -> bool:
        if self.clear(checked_qs, PATH_CLEARANCE, ("obstacles",)):
            return True
        self.scene.remove_obstacle(o.name)
        self.obstacles.remove(o)
        return False

    def cloud(self, centre: np.ndarray, checked_qs=()) -> tuple[np.ndarray | None, str]:
        """A noisy cloud on a random primitive's surface at ``centre``, if it keeps the perceived d_min +
        clearance (inflated by the noise and the octree's cell) from the start (and a checked path)."""
        if "perceived" not in self.d_min:
            return None, ""
        rng = self.rng
        res = float(self.config.perception.octree_resolution)
        for _ in range(6):
            o = self.random_primitive("cloud_source", centre)
            if o.shape == "mesh":
                o = Obstacle("cloud_source", "sphere", (float(rng.uniform(0.04, 0.1)),), position=o.position)
            sigma = float(rng.uniform(0.0, 0.004))
            inflate = 3.0 * sigma + res
            self.scene.add_obstacle(o)
            ok = self.clear([self.q_start], START_CLEARANCE + inflate, ("obstacles",)) and (
                not checked_qs or self.clear(checked_qs, PATH_CLEARANCE + inflate, ("obstacles",)))
            self.scene.remove_obstacle(o.name)
            if ok:
                points = surface_points(o, rng, spacing=res / 2.0)
                points += np.clip(rng.normal(scale=sigma, size=points.shape), -3 * sigma, 3 * sigma) if sigma else 0.0
                return points, f"{o.shape} {np.round(o.dims, 3).tolist()} at {np.round(o.position, 3).tolist()}, " \
                               f"noise sigma {sigma * 1e3:.1f} mm"
            centre = centre + rng.normal(scale=0.05, size=3)
        return None, ""


def surface_points(o: Obstacle, rng: np.random.Generator, spacing: float) -> np.ndarray:
    """Points on the surface of a box, sphere or cylinder ``o`` (world frame), about ``spacing`` apart."""
    if o.shape == "sphere":
        r = o.dims[0]
        n = int(np.clip(4 * np.pi * r * r / spacing ** 2, 50, 6000))
        d = rng.normal(size=(n, 3))
        local = r * d / np.linalg.norm(d, axis=1, keepdims=True)
    elif o.shape == "cylinder":
        r, length = o.dims
        side, cap = 2 * np.pi * r * length, np.pi * r * r
        n = int(np.clip((side + 2 * cap) / spacing ** 2, 50, 6000))
        k_side = int(n * side / (side + 2 * cap))
        phi = rng.uniform(0, 2 * np.pi, n)
        rad = np.where(np.arange(n) < k_side, r, r * np.sqrt(rng.uniform(0, 1, n)))
        z = np.where(np.arange(n) < k_side, rng.uniform(-length / 2, length / 2, n),
                     np.where(rng.random(n) < 0.5, -length / 2, length / 2))
        local = np.column_stack([rad * np.cos(phi), rad * np.sin(phi), z])
    else:  # box
        size = np.asarray(o.dims, dtype=float)
        areas = np.array([size[1] * size[2], size[0] * size[2], size[0] * size[1]])
        n = int(np.clip(2 * areas.sum() / spacing ** 2, 50, 6000))
        axis = rng.choice(3, size=n, p=areas / areas.sum())
        local = rng.uniform(-0.5, 0.5, (n, 3)) * size
        local[np.arange(n), axis] = np.where(rng.random(n) < 0.5, -0.5, 0.5) * size[axis]
    T = o.T_frame_obstacle
    return local @ T.rotation.T + T.translation


def _pose_goals(b: _Builder, q: np.ndarray) -> dict:
    return {t.name: b.scene.frame_pose(q, t.frame) for t in frame_tasks(b.full_config)}


def _reachable(b: _Builder, q0: np.ndarray, spread: float = 0.35, min_step: float = 0.03):
    """A goal configuration near q0 clear along the joint-space line (None if 30 draws fail)."""
    tip = b.frames[0] if b.frames else b._tip()
    p0 = b.scene.frame_pose(q0, tip).translation
    for _ in range(30):
        q1 = b.perturbed(q0, spread)
        if np.linalg.norm(b.scene.frame_pose(q1, tip).translation - p0) < min_step:
            continue
        line = b.line(q0, q1)
        if all(b.in_workspace(q) for q in line) and b.clear(line, PATH_CLEARANCE):
            return q1
    return None


def _smoother_time(b: _Builder, T0: pin.SE3, T1: pin.SE3) -> float:
    from .invariants import optimal_duration

    gs = b.settings.goal_smoothing
    steps = [np.linalg.norm(T1.translation - T0.translation), np.linalg.norm(pin.log3(T1.rotation @ T0.rotation.T))]
    return optimal_duration(steps, [gs.max_linear_speed, gs.max_angular_speed],
                            [gs.max_linear_acceleration, gs.max_angular_acceleration])


def make_scenario(seed: int) -> Scenario:
    """The scenario of ``seed`` (deterministic)."""
    b = _Builder(seed)
    rng, q0, events, t = b.rng, b.q_start, [], 0.2
    cloud, cloud_source = None, ""
    checked_lines: list = []
    path_qs = [q0]
    rigid = b.robot == "baxter_dual"  # the grasp couples the hands: goals move both, rigidly; not checked
    b.table()
    if b.kind in ("pose_reachable", "pose_sequence", "pose_through_obstacle"):
        n_steps = int(rng.integers(2, 4)) if b.kind == "pose_sequence" else 1
        q = q0
        for k in range(n_steps):
            q1 = q if rigid else _reachable(b, q)
            if q1 is None:
                b.notes.append(f"step {k}: no clear reachable goal found")
                break
            goals = _pose_goals(b, q1)
            if rigid:
                goals = _rigid_move(_pose_goals(b, q), rng)
            T0, T1 = _pose_goals(b, q), goals
            t_opt = max(_smoother_time(b, T0[n], T1[n]) for n in T1)
            checked = not rigid and b.kind != "pose_through_obstacle"
            events.append(Event(t, "pose", "", goals, checked=checked, label=f"pose step {k}"))
            if checked:
                checked_lines += b.line(q, q1)
            if rigid:
                b.note("baxter_dual: the hands' goals move rigidly (a carried box); not checked")
            t += 1.5 * t_opt + 2.0
            path_qs.append(q1)
            q = q1
        if b.kind == "pose_sequence" and events:  # one more goal sent while the arm moves toward the last
            q2 = b.perturbed(q, 0.3)
            events.append(Event(t - 1.2 - 0.5 * rng.random(), "pose", "", _pose_goals(b, q2) if not rigid
                                else _rigid_move(_pose_goals(b, q), rng), label="pose goal mid-motion"))
            events.sort(key=lambda e: e.t)
            t = max(t, events[-1].t + 3.0)
        if b.kind == "pose_through_obstacle" and events:
            tip = b.frames[0]
            mid = 0.5 * (b.scene.frame_pose(q0, tip).translation + b.scene.frame_pose(path_qs[-1], tip).translation)
            if rng.random() < 0.35:
                cloud, cloud_source = b.cloud(mid)
            else:
                for _ in range(10):
                    o = b.random_primitive("blocker", mid + rng.normal(scale=0.02, size=3))
                    if b.add(o, [q0, path_qs[-1]], 0.02):
                        break
            events[-1].label = "pose step through an obstacle"
    elif b.kind == "pose_unreachable":
        for tc in frame_tasks(b.full_config):
            T = b.scene.frame_pose(q0, tc.frame)
            base = _first_joint_position(b.scene, b.group, q0)
            d = rng.normal(size=3)
            d[2] = abs(d[2])
            reach = b.scene.arm_reach(b.group, tc.frame)
            goal = pin.SE3(T.rotation @ pin.exp3(rng.normal(scale=0.3, size=3)),
                           base + d / np.linalg.norm(d) * reach * rng.uniform(1.05, 1.6))
            events.append(Event(t, "pose", "", {tc.name: goal}, label="unreachable pose goal"))
        t += 4.0
    elif b.kind == "twist_stream":
        tasks = [tc.name for tc in frame_tasks(b.full_config)]
        for k in range(int(rng.integers(1, 3))):
            until = t + rng.uniform(0.5, 2.0)
            lin = rng.uniform(-1, 1, 3) * rng.uniform(0.3, 1.0)
            ang = rng.uniform(-1, 1, 3) * rng.uniform(0.0, 0.5)
            events.append(Event(t, "twist", str(rng.choice(tasks)), (lin, ang), until=until, label=f"twist {k}"))
            t = until
        t += 1.5
    elif b.kind == "joint_step":
        q1 = _reachable(b, q0, spread=0.6, min_step=0.0)
        g = b.group.q_indices
        checked = q1 is not None
        if q1 is None:
            q1 = b.perturbed(q0, 0.6)
            b.notes.append("joint goal: not verified clear (not checked)")
        else:
            checked_lines += b.line(q0, q1)
        speed = _max_target_speed(b.config)
        events.append(Event(t, "joints", _configuration_task(b.config), q1[g].copy(), checked=checked,
                            label="joint step"))
        path_qs.append(q1)
        t += 1.5 * (np.abs(q1[g] - q0[g]).max() / speed + 0.5) + 2.0
    elif b.kind == "joint_jog":
        n = len(b.group.v_indices)
        for k in range(int(rng.integers(1, 3))):
            until = t + rng.uniform(0.5, 2.0)
            dq = rng.uniform(-1, 1, n) * (rng.random(n) < 0.6)
            events.append(Event(t, "jog", _configuration_task(b.config), dq, until=until, label=f"jog {k}"))
            t = until
        t += 1.5
    b.clutter(path_qs, checked_lines)
    if cloud is None and b.kind != "pose_through_obstacle" and rng.random() < 0.3:
        cloud, cloud_source = b.cloud(b.near_path(path_qs), checked_lines)
    return Scenario(seed, b.robot, b.kind, b.lag, b.joint_space, q0, b.obstacles, cloud, cloud_source, events,
                    duration=t, notes=b.notes)


def _first_joint_position(scene, group, q) -> np.ndarray:
    data = scene.model.createData()
    pin.forwardKinematics(scene.model, data, q)
    return data.oMi[int(group.joint_ids[0])].translation.copy()


def _rigid_move(goals: dict, rng: np.random.Generator) -> dict:
    """Every goal moved by one rigid motion about their centre (a carried box): up to 8 cm, 0.15 rad."""
    centre = np.mean([T.translation for T in goals.values()], axis=0)
    R = pin.exp3(rng.normal(size=3) / np.sqrt(3) * rng.uniform(0.0, 0.15))
    shift = rng.uniform(-0.08, 0.08, 3)
    return {n: pin.SE3(R @ T.rotation, centre + R @ (T.translation - centre) + shift) for n, T in goals.items()}


def _configuration_task(config) -> str:
    return next(t.name for t in config.tasks if t.type == "configuration")


def _max_target_speed(config) -> float:
    return float(next(t.max_target_speed for t in config.tasks if t.type == "configuration"))
