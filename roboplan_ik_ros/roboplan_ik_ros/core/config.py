"""YAML configuration of the IK core: robot, solver, tasks, limits, barriers and SimpleIK options.

Parsed into dataclasses with explicit checks: an unknown key, a wrong type or a bad value raises
:class:`InvalidInputError` naming the key's path (``tasks[0].position_cost``) and what is valid.
The ``node`` section is kept as a mapping for the ROS layer, which validates it the same way.
"""

from __future__ import annotations

import dataclasses
import math
import re
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union, get_args, get_origin, get_type_hints

import yaml

from .errors import InvalidInputError
from .ranges import check_key
from .simple_ik.objective_config import objectives_from_config
from .simple_ik.options import SimpleIKOptions

Number = float


def from_mapping(cls, mapping: Any, path: str):
    """Build dataclass ``cls`` from ``mapping``, checking keys and value types."""
    if mapping is None:
        mapping = {}
    if not isinstance(mapping, Mapping):
        raise InvalidInputError(f"{path}: expected a mapping, got {type(mapping).__name__} {mapping!r}")
    hints = get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls) if f.name != "given_keys"]
    kwargs = {}
    for key, value in mapping.items():
        if key not in names:
            raise InvalidInputError(f"{path}.{key}: unknown key; valid keys: {', '.join(names)}")
        kwargs[key] = _check_type(value, hints[key], f"{path}.{key}")
    try:
        obj = cls(**kwargs)
        if hasattr(obj, "given_keys"):
            obj.given_keys = frozenset(kwargs)
    except TypeError as exc:  # a required key is missing
        required = [f.name for f in dataclasses.fields(cls)
                    if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        raise InvalidInputError(f"{path}: missing required key(s); required: {', '.join(required)}") from exc
    return obj


def _check_type(value: Any, hint: Any, path: str) -> Any:
    origin = get_origin(hint)
    if hint is Any:
        return value
    if origin is Union or origin is types.UnionType:
        options = get_args(hint)
        if value is None and type(None) in options:
            return None
        for opt in options:
            if opt is type(None):
                continue
            try:
                return _check_type(value, opt, path)
            except InvalidInputError:
                pass
        raise InvalidInputError(f"{path}: expected {' or '.join(_describe(o) for o in options)}, got {value!r}")
    if hint is bool:
        if not isinstance(value, bool):
            raise InvalidInputError(f"{path}: expected true or false, got {value!r}")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
            raise InvalidInputError(f"{path}: expected a number, got {value!r}")
        return float(value)
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidInputError(f"{path}: expected an integer, got {value!r}")
        return value
    if hint is str:
        if not isinstance(value, str):
            raise InvalidInputError(f"{path}: expected a string, got {value!r}")
        return value
    if origin is list:
        if not isinstance(value, list):
            raise InvalidInputError(f"{path}: expected a list, got {value!r}")
        (item,) = get_args(hint)
        return [_check_type(v, item, f"{path}[{k}]") for k, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, Mapping):
            raise InvalidInputError(f"{path}: expected a mapping, got {value!r}")
        _, item = get_args(hint)
        return {str(k): _check_type(v, item, f"{path}.{k}") for k, v in value.items()}
    if dataclasses.is_dataclass(hint):
        return from_mapping(hint, value, path)
    raise TypeError(f"unsupported type hint {hint} at {path}")  # a programming error, not input


def _describe(hint: Any) -> str:
    """What a type hint accepts, in words for error messages."""
    words = {bool: "true or false", float: "a number", int: "an integer", str: "a string", type(None): "null"}
    if hint in words:
        return words[hint]
    if get_origin(hint) is list:
        inner = _describe(get_args(hint)[0])
        return "a list of " + {"a number": "numbers", "an integer": "integers", "a string": "strings"}.get(inner, inner)
    return "a mapping"


# ----------------------------------------------------------------------- sections
@dataclass
class RobotConfig:
    group: str = ""  # SRDF joint group; "" = every actuated joint
    package_paths: list[str] = field(default_factory=list)
    convex_hulls: bool = True
    position_limits: dict[str, list[float]] = field(default_factory=dict)  # joint -> [lower, upper]
    velocity_limits: dict[str, float] = field(default_factory=dict)  # joint -> v_max
    # MoveIt joint_limits.yaml: velocity/position override the URDF, acceleration/jerk feed the
    # acceleration limit; the keys above override the file. Relative paths: from the YAML's folder.
    joint_limits_file: str = ""


@dataclass
class SolverConfig:
    regularization: float = 1e-6
    unconstrained_shortcut: bool = True
    eps_abs: float = 1e-6
    eps_rel: float = 1e-6
    max_iter: int = 4000
    enforce_barriers: bool = True
    barrier_tolerance: float = 1e-4  # [m]
    barrier_slack_penalty: float = 100.0  # [cost/m] recovery from outside a barrier: linear penalty of the slack
    qp_solver: str = "daqp"  # "daqp" | "osqp": solves the QP when the unconstrained optimum is infeasible


@dataclass
class TaskConfig:
    name: str
    type: str  # "frame" | "configuration"
    priority: int = 1
    task_gain: float = 1.0
    lm_damping: float = 0.0
    # frame
    frame: str = ""
    position_cost: Union[float, list[float]] = 1.0
    orientation_cost: Union[float, list[float]] = 1.0
    max_position_error: float = math.inf
    max_rotation_error: float = math.inf
    # configuration
    target: Union[str, list[float]] = "current"  # "current", an SRDF group_state, or joint values
    weights: Union[float, list[float]] = 1.0
    max_target_speed: float = 0.5  # [rad/s] the target moves toward a new goal at most this fast per joint
    given_keys: frozenset = field(default=frozenset(), repr=False, compare=False)  # keys set in the YAML


@dataclass
class LimitConfig:
    type: str  # "position" | "velocity" | "acceleration"
    gain: float = 1.0  # position
    v_max: Union[None, float, list[float]] = None  # velocity; None = URDF (or robot.joint_limits_file)
    # acceleration: [rad/s^2] / [rad/s^3], scalar or per group joint; None = robot.joint_limits_file
    # (a_max required there or here; j_max: none where the file gives none); .inf = no jerk bound
    a_max: Union[None, float, list[float]] = None
    j_max: Union[None, float, list[float]] = None
    given_keys: frozenset = field(default=frozenset(), repr=False, compare=False)  # keys set in the YAML


@dataclass
class BarrierConfig:
    name: str
    type: str  # "position" | "collision" | "singularity" ("self_collision": a collision barrier with pairs: self)
    gain: float = 1.0
    safe_displacement_gain: float = 1.0
    safe_displacement_fade: Union[float, None] = None  # [m] weight 0 from this h_min on; None: RoboPlan's constant
    safe_displacement_max_weight: Union[float, None] = None  # [cost/rad^2] cap of the weight; None: none (RoboPlan)
    safety_margin: float = 0.0
    # position
    frame: str = ""
    p_min: list[float] = field(default_factory=list)
    p_max: list[float] = field(default_factory=list)
    axis_selection: list[bool] = field(default_factory=lambda: [True, True, True])
    # collision
    pairs: str = "self"  # "self" (robot x robot) | "obstacles" (robot x obstacles) | "perceived" (x the cloud) | "all"
    n_collision_pairs: int = 0
    d_min: float = 0.02
    broad_phase_cutoff: float = 0.2
    rows_per_pair: int = 5  # rows per close pair (a face's four corners and the witness): its witness points and its nearest other vertices (1: RoboPlan's form)
    row_margin: float = 0.01  # [m] a vertex gets a row when its distance bound is within this of the pair's distance
    row_spacing: float = 0.01  # [m] ... and it is this far from the points already used on its geometry
    # singularity (and frame): the smallest singular value of the frame's Jacobian allowed
    sigma_min: float = 0.02
    given_keys: frozenset = field(default=frozenset(), repr=False, compare=False)  # keys set in the YAML


@dataclass
class PerceptionConfig:
    """``perception:`` the point cloud on the node's ``~/pointcloud`` (core: perceived_cloud.py)."""

    voxel_size: float = 0.02  # [m] one point per voxel (centroid) before the octree; 0 = no voxel filter
    octree_resolution: float = 0.02  # [m] leaf size of the coal OcTree
    self_filter_padding: float = 0.03  # [m] points this close to the robot's collision geometry are its own
    crop_min: list[float] = field(default_factory=lambda: [-math.inf, -math.inf, -math.inf])  # [m] world frame
    crop_max: list[float] = field(default_factory=lambda: [math.inf, math.inf, math.inf])  # [m] world frame
    max_age: float = 0.5  # [s] a cloud older than this (no newer one) is stale
    on_stale: str = "keep"  # "keep" (the last cloud stays an obstacle) | "clear" (removed, said in ~/status)
    max_points: int = 1000000  # clouds with more points (width * height) are refused


@dataclass
class IKConfig:
    robot: RobotConfig = field(default_factory=RobotConfig)
    solver: SolverConfig = field(default_factory=SolverConfig)
    tasks: list[TaskConfig] = field(default_factory=list)
    limits: list[LimitConfig] = field(default_factory=list)
    barriers: list[BarrierConfig] = field(default_factory=list)
    # world obstacles and objects attached to links (core.model.obstacles.Obstacle after parsing)
    obstacles: list[Any] = field(default_factory=list)
    simple_ik: Any = None  # SimpleIKOptions after parsing; group_name defaults to robot.group
    perception: PerceptionConfig = field(default_factory=PerceptionConfig)
    node: dict[str, Any] = field(default_factory=dict)  # validated by the ROS layer

    def __post_init__(self) -> None:
        raw = self.simple_ik or {}
        if isinstance(raw, Mapping):
            raw = dict(raw)
            standing = raw.pop("objectives", None)  # mappings: parsed below (objective_config.py)
            self.simple_ik = from_mapping(SimpleIKOptions, {"group_name": self.robot.group, **raw}, "config.simple_ik")
            self.simple_ik.objectives = objectives_from_config(standing, "config.simple_ik.objectives",
                                                               self.simple_ik.error_weights)
            try:
                self.simple_ik.validate()
            except InvalidInputError as exc:
                raise InvalidInputError(f"config.simple_ik.{exc}") from exc
        for kind, items in (("tasks", self.tasks), ("barriers", self.barriers)):
            seen = set()
            for k, item in enumerate(items):
                if item.name in seen:
                    raise InvalidInputError(f"{kind}[{k}].name: duplicate name {item.name!r}; names must be unique")
                seen.add(item.name)
        for k, t in enumerate(self.tasks):
            if t.type not in TASK_TYPES:
                raise InvalidInputError(f"tasks[{k}].type: unknown type {t.type!r}; valid: {', '.join(TASK_TYPES)}")
            _check_keys_apply(t.given_keys, t.type, _TASK_KEYS, f"tasks[{k}]")
            if t.type == "frame" and not t.frame:
                raise InvalidInputError(f"tasks[{k}].frame: required for a frame task")
            for key in ("task_gain", "lm_damping", "max_target_speed"):
                check_key(getattr(t, key), f"tasks[].{key}", f"tasks[{k}].{key}")
            for key in ("position_cost", "orientation_cost"):
                check_key(getattr(t, key), f"tasks[].{key}", f"tasks[{k}].{key}", size=3)
            check_key(t.weights, "tasks[].weights", f"tasks[{k}].weights", size=-1)  # length: the group's (at build)
        for k, lim in enumerate(self.limits):
            if lim.type not in LIMIT_TYPES:
                raise InvalidInputError(f"limits[{k}].type: unknown type {lim.type!r}; valid: {', '.join(LIMIT_TYPES)}")
            _check_keys_apply(lim.given_keys, lim.type, _LIMIT_KEYS, f"limits[{k}]")
        accel = [k for k, lim in enumerate(self.limits) if lim.type == "acceleration"]
        if len(accel) > 1:
            raise InvalidInputError(f"limits[{accel[1]}]: a second acceleration limit; expected at most one")
        position = [lim for lim in self.limits if lim.type == "position"]
        if accel and any(lim.gain != 1.0 for lim in position):
            raise InvalidInputError(
                f"limits: a position limit gain of {position[0].gain:g} with an acceleration limit; expected 1.0 "
                "(the acceleration limit plans braking to the joint limit itself, which a gain < 1 would forbid)")
        for k, b in enumerate(self.barriers):
            if b.type not in BARRIER_TYPES:
                raise InvalidInputError(
                    f"barriers[{k}].type: unknown type {b.type!r}; valid: {', '.join(BARRIER_TYPES)}"
                )
            if b.type == "self_collision":  # the name before obstacles: a collision barrier on the robot's pairs
                if "pairs" in b.given_keys and b.pairs != "self":
                    raise InvalidInputError(f"barriers[{k}].pairs: type 'self_collision' covers pairs 'self' only; "
                                            f"use type 'collision' for pairs {b.pairs!r}")
                b.type = "collision"
            _check_keys_apply(b.given_keys, b.type, _BARRIER_KEYS, f"barriers[{k}]")
            for key in ("gain", "safe_displacement_gain", "safety_margin"):
                check_key(getattr(b, key), f"barriers[].{key}", f"barriers[{k}].{key}")
            for key in ("safe_displacement_fade", "safe_displacement_max_weight"):  # null: RoboPlan's form
                if getattr(b, key) is not None:
                    setattr(b, key, check_key(getattr(b, key), f"barriers[].{key}", f"barriers[{k}].{key}"))
            if b.type == "singularity" and "safe_displacement_gain" not in b.given_keys:
                # no safe-displacement term unless asked: its weight r / |dh/dq|^2 grows without bound where
                # sigma_min is flat (|dh/dq| ~ 0.01-0.1), which would damp every motion far from a singularity
                b.safe_displacement_gain = 0.0
            if b.type == "collision" and b.pairs not in COLLISION_PAIRS:
                raise InvalidInputError(f"barriers[{k}].pairs: unknown pair set {b.pairs!r}; valid: "
                                        f"{', '.join(COLLISION_PAIRS)}")
        if not self.tasks:
            raise InvalidInputError("tasks: expected at least one task")
        check_perception_config(self.perception)
        self.obstacles = _parse_obstacles(self.obstacles)


def _parse_obstacles(items: list) -> list:
    """The ``obstacles`` list as Obstacle objects (shape and key checks; frames and meshes are checked
    against the robot when the scene takes them)."""
    from .model.obstacles import Obstacle, obstacle_from_mapping

    out, seen = [], set()
    for k, item in enumerate(items):
        obstacle = item if isinstance(item, Obstacle) else obstacle_from_mapping(item, f"obstacles[{k}]")
        if not obstacle.name:
            raise InvalidInputError(f"obstacles[{k}].name: required (a unique name)")
        if obstacle.name in seen:
            raise InvalidInputError(f"obstacles[{k}].name: duplicate name {obstacle.name!r}; names must be unique")
        seen.add(obstacle.name)
        out.append(obstacle)
    return out


ON_STALE = ("keep", "clear")


def check_perception_config(p: PerceptionConfig, path: str = "perception") -> PerceptionConfig:
    """Range and choice checks of the ``perception:`` section (errors name the key)."""
    for key in ("voxel_size", "octree_resolution", "self_filter_padding", "max_age"):
        check_key(getattr(p, key), f"perception.{key}", f"{path}.{key}")
    if p.on_stale not in ON_STALE:
        raise InvalidInputError(f"{path}.on_stale: unknown value {p.on_stale!r}; valid: {', '.join(ON_STALE)}")
    if p.max_points < 1:
        raise InvalidInputError(f"{path}.max_points: expected an integer >= 1, got {p.max_points}")
    for key in ("crop_min", "crop_max"):
        values = getattr(p, key)
        if len(values) != 3 or any(math.isnan(v) for v in values):
            raise InvalidInputError(f"{path}.{key}: expected [x, y, z] [m] (.inf / -.inf: unbounded), got {values}")
    if any(lo >= hi for lo, hi in zip(p.crop_min, p.crop_max)):
        raise InvalidInputError(f"{path}.crop_min: {p.crop_min}; expected below crop_max {p.crop_max} on every axis")
    return p


TASK_TYPES = ("frame", "configuration")
LIMIT_TYPES = ("position", "velocity", "acceleration")
BARRIER_TYPES = ("position", "collision", "singularity", "self_collision")
COLLISION_PAIRS = ("self", "obstacles", "perceived", "all")
# Keys that only one type uses: setting them on another type is an error, never silently ignored.
_TASK_KEYS = {
    "frame": ("frame", "position_cost", "orientation_cost", "max_position_error", "max_rotation_error"),
    "configuration": ("target", "weights", "max_target_speed"),
}
_LIMIT_KEYS = {"position": ("gain",), "velocity": ("v_max",), "acceleration": ("a_max", "j_max")}
_BARRIER_KEYS = {
    "position": ("frame", "p_min", "p_max", "axis_selection"),
    "collision": ("pairs", "n_collision_pairs", "d_min", "broad_phase_cutoff", "rows_per_pair", "row_margin",
                  "row_spacing"),
    "singularity": ("frame", "sigma_min"),
}


def _check_keys_apply(given: frozenset, kind: str, specific: dict[str, tuple[str, ...]], path: str) -> None:
    for other, keys in specific.items():
        if other == kind:
            continue
        for key in keys:
            if key in given and key not in specific[kind]:
                raise InvalidInputError(f"{path}.{key}: does not apply to type {kind!r} (it is a key of type "
                                        f"{other!r}); remove it")


def load_config(source: str | Path | Mapping) -> IKConfig:
    """Parse a YAML file (a path, whatever its suffix) or an already-loaded mapping."""
    if isinstance(source, Mapping):
        return from_mapping(IKConfig, source, "config")
    try:
        text = Path(source).read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidInputError(f"config_file: cannot read {str(source)!r}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:  # a binary file; its bytes are not shown
        raise InvalidInputError(f"config_file: cannot read {str(source)!r}: not UTF-8 text (byte {exc.start}); "
                                "expected a YAML file") from exc
    return parse_config(text, Path(source).resolve().parent)


def parse_config(text: str, base_dir: str | Path | None = None) -> IKConfig:
    """Parse YAML text; relative file paths in it are taken from ``base_dir`` (default: the working
    directory). A text that is not YAML, or not a mapping, is refused without quoting it: the message
    reaches the log and /rosout, and the file may be anything (a key, a password file)."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InvalidInputError(f"config: invalid YAML{_yaml_error_text(exc)}; expected a mapping of the YAML "
                                "sections robot, solver, tasks, ...") from exc
    if data is not None and not isinstance(data, Mapping):
        raise InvalidInputError(f"config: expected a mapping of the YAML sections robot, solver, tasks, ..., got a "
                                f"{'list' if isinstance(data, list) else 'scalar'}")
    config = from_mapping(IKConfig, data, "config")
    path = config.robot.joint_limits_file
    if path and base_dir is not None and "://" not in path and not Path(path).is_absolute():
        config.robot.joint_limits_file = str(Path(base_dir) / path)
    return config


def _yaml_error_text(exc: yaml.YAMLError) -> str:
    """Where and what a YAML error is, without the snippet of the text that ``str(exc)`` quotes: the
    line and column, yaml's problem and context with any name taken from the text (an alias, a tag)
    replaced by '...' (token names such as '<stream end>' and single characters are kept)."""
    if isinstance(exc, yaml.reader.ReaderError):  # character: its code point (str input) or a byte
        code = exc.character if isinstance(exc.character, int) else ord(exc.character[:1] or "\0")
        return f" at character {exc.position + 1}: unacceptable character #x{code:04x}"
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    problem, context = (_QUOTED.sub(_keep_token, getattr(exc, key, None) or "") for key in ("problem", "context"))
    return where + (f": {problem}" if problem else "") + (f" ({context})" if context else "")


_QUOTED = re.compile(r"'([^']*)'|\"([^\"]*)\"")


def _keep_token(match: re.Match) -> str:
    inner = match.group(1) if match.group(1) is not None else match.group(2)
    return match.group(0) if len(inner) <= 2 or re.fullmatch(r"<[a-z ]+>", inner) else "'...'"
