"""YAML configuration of the IK core: robot, solver, tasks, limits, barriers and SimpleIK options.

Parsed into dataclasses with explicit checks: an unknown key, a wrong type or a bad value raises
:class:`InvalidInputError` naming the key's path (``tasks[0].position_cost``) and what is valid.
The ``robot``, ``solver`` and ``perception`` sections' keys are declared once, each in its own module
(:mod:`.model.robot_config`, :mod:`.oink.solver_config`, :mod:`.model.perception_config`, with
:func:`.keys.key`), and checked here against those declarations (the error names the key: ``solver.max_iter``).
The ``node`` section is kept as a mapping: its control-loop keys are parsed by
:func:`.control.loop_config.load_loop_config` (``ControlLoop.from_config``; the node uses it too), the
ROS-only keys by the ROS layer (``node/node_config.py``), with the same checks.
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
from .keys import check_declared
from .model.perception_config import PerceptionConfig, check_perception_config
from .model.robot_config import RobotConfig
from .oink.barriers.barrier import BarrierConfig
from .oink.kind import SECTIONS, foreign_key_error, kind_of, kinds
from .oink.limits.limit import LimitConfig
from .oink.solver_config import SolverConfig
from .oink.tasks.task import TaskConfig
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
class IKConfig:
    robot: RobotConfig = field(default_factory=RobotConfig)
    solver: SolverConfig = field(default_factory=SolverConfig)
    # entries of the registered kinds (oink/kind.py): one config dataclass per YAML type, after parsing
    tasks: list[Any] = field(default_factory=list)
    limits: list[Any] = field(default_factory=list)
    barriers: list[Any] = field(default_factory=list)
    # world obstacles and objects attached to links (core.model.obstacles.Obstacle after parsing)
    obstacles: list[Any] = field(default_factory=list)
    simple_ik: Any = None  # SimpleIKOptions after parsing; group_name defaults to robot.group
    perception: PerceptionConfig = field(default_factory=PerceptionConfig)
    node: dict[str, Any] = field(default_factory=dict)  # loop keys: control/loop_config.py; the rest: the node

    def __post_init__(self) -> None:
        check_declared(self.robot, "robot")
        check_declared(self.solver, "solver")
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
        for section in SECTIONS:
            setattr(self, section, [_parse_kind(section, item, f"config.{section}[{k}]")
                                    for k, item in enumerate(getattr(self, section))])
        for section in ("tasks", "barriers"):
            seen = set()
            for k, item in enumerate(getattr(self, section)):
                if item.name in seen:
                    raise InvalidInputError(f"{section}[{k}].name: duplicate name {item.name!r}; names must be unique")
                seen.add(item.name)
        for section in SECTIONS:
            for kind in kinds(section).values():
                same = [k for k, item in enumerate(getattr(self, section)) if isinstance(item, kind.config)
                        and item.type == kind.type]
                if kind.unique and len(same) > 1:
                    raise InvalidInputError(f"{section}[{same[1]}]: a second {kind.type} {section[:-1]}; expected at most one")
        accel = any(lim.type == "acceleration" for lim in self.limits)
        position = [lim for lim in self.limits if lim.type == "position"]
        if accel and any(lim.gain != 1.0 for lim in position):
            raise InvalidInputError(
                f"limits: a position limit gain of {position[0].gain:g} with an acceleration limit; expected 1.0 "
                "(the acceleration limit plans braking to the joint limit itself, which a gain < 1 would forbid)")
        if not self.tasks:
            raise InvalidInputError("tasks: expected at least one task")
        check_perception_config(self.perception)
        self.obstacles = _parse_obstacles(self.obstacles)

    def needs_srdf(self) -> bool:
        """Whether the config names what only the SRDF defines: a joint group (``robot.group``,
        ``simple_ik.group_name``) or a group_state (a task's target by name: :meth:`TaskConfig.srdf_states`). The
        node waits for the semantic description then, and fails without one."""
        return bool(self.robot.group or self.simple_ik.group_name) or any(t.srdf_states() for t in self.tasks)


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


def _parse_kind(section: str, item: Any, path: str) -> Any:
    """One ``tasks``/``limits``/``barriers`` entry as its kind's config dataclass (oink/kind.py), checked."""
    if dataclasses.is_dataclass(item) and not isinstance(item, type):  # built in code
        item.validate(path)
        return item
    if not isinstance(item, Mapping):
        raise InvalidInputError(f"{path}: expected a mapping, got {type(item).__name__} {item!r}")
    if "type" not in item:
        raise InvalidInputError(f"{path}.type: required; valid: {', '.join(kinds(section))}")
    kind = kind_of(section, item["type"], path)
    for key in item:
        if key not in kind.keys():
            raise foreign_key_error(section, kind, key, path)
    config = from_mapping(kind.config, item, path)
    config.validate(path)
    return config


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
