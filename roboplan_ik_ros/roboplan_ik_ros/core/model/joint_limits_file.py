"""MoveIt's ``joint_limits.yaml`` (the ros2_control ``joint_limits`` keys), the file robot packages
ship beside their SRDF::

    joint_limits:
      panda_joint1:
        has_velocity_limits: true
        max_velocity: 2.175          # [rad/s or m/s]
        has_acceleration_limits: true
        max_acceleration: 15.0       # [rad/s^2 or m/s^2]
        has_jerk_limits: true
        max_jerk: 7500.0             # [rad/s^3 or m/s^3]

Also read: ``has_position_limits``/``min_position``/``max_position``, ``has_deceleration_limits``/
``max_deceleration`` (the braking bound is the smaller of acceleration and deceleration). Keys a
kinematic controller has no use for (effort, soft limits, MoveIt's default scaling factors) are
accepted and reported in :attr:`JointLimits.notes`; any other key is an error that names it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ..errors import InvalidInputError, check_positive

_USED = {
    "has_position_limits": bool, "min_position": float, "max_position": float,
    "has_velocity_limits": bool, "max_velocity": float,
    "has_acceleration_limits": bool, "max_acceleration": float,
    "has_deceleration_limits": bool, "max_deceleration": float,
    "has_jerk_limits": bool, "max_jerk": float,
}
_NOT_USED = {  # accepted, reported once
    "has_effort_limits": bool, "max_effort": float, "angle_wraps": bool, "has_soft_limits": bool,
    "k_position": float, "k_velocity": float, "soft_lower_limit": float, "soft_upper_limit": float,
}
_TOP_NOT_USED = ("default_velocity_scaling_factor", "default_acceleration_scaling_factor")


@dataclass
class JointLimits:
    """Limits per joint name, only those the file enables (``has_*: true``)."""

    source: str = ""
    position: dict[str, tuple[float, float]] = field(default_factory=dict)
    velocity: dict[str, float] = field(default_factory=dict)
    acceleration: dict[str, float] = field(default_factory=dict)  # min(max_acceleration, max_deceleration)
    jerk: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def load_joint_limits(path: str | Path, what: str = "robot.joint_limits_file") -> JointLimits:
    """Read and check a joint_limits.yaml file; errors name ``what``, the joint and the key."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise InvalidInputError(f"{what}: cannot read {str(path)!r}: {exc.strerror}") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InvalidInputError(f"{what}: {str(path)!r} is not valid YAML: {exc}") from exc
    return parse_joint_limits(data, f"{what} ({path})", source=str(path))


def parse_joint_limits(data, what: str = "joint_limits", source: str = "") -> JointLimits:
    if not isinstance(data, Mapping) or not isinstance(data.get("joint_limits"), Mapping):
        raise InvalidInputError(f"{what}: expected a mapping with a 'joint_limits:' mapping of joints")
    out = JointLimits(source=source)
    unknown_top = [k for k in data if k != "joint_limits" and k not in _TOP_NOT_USED]
    if unknown_top:
        raise InvalidInputError(f"{what}: unknown key(s) {unknown_top}; valid: joint_limits, "
                                f"{', '.join(_TOP_NOT_USED)}")
    unused_top = [k for k in data if k in _TOP_NOT_USED]
    if unused_top:
        out.notes.append(f"{what}: {', '.join(unused_top)} are MoveIt planning defaults, not used by the controller")
    unused: set[str] = set()
    for joint, entry in data["joint_limits"].items():
        path = f"{what}: joint_limits.{joint}"
        if not isinstance(entry, Mapping):
            raise InvalidInputError(f"{path}: expected a mapping of limit keys, got {entry!r}")
        values = {}
        for key, value in entry.items():
            kind = _USED.get(key) or _NOT_USED.get(key)
            if kind is None:
                raise InvalidInputError(f"{path}.{key}: unknown key; valid: {', '.join([*_USED, *_NOT_USED])}")
            values[key] = _checked(value, kind, f"{path}.{key}")
            if key in _NOT_USED:
                unused.add(key)
        _collect(out, str(joint), values, path)
    if unused:
        out.notes.append(f"{what}: {', '.join(sorted(unused))} not used (a kinematic controller)")
    return out


def _checked(value, kind, path: str):
    if kind is bool:
        if not isinstance(value, bool):
            raise InvalidInputError(f"{path}: expected true or false, got {value!r}")
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise InvalidInputError(f"{path}: expected a number, got {value!r}")
    return float(value)


def _positive(values: dict, key: str, path: str) -> float:
    if key not in values:
        raise InvalidInputError(f"{path}.{key}: required when has_{key[4:]}_limits is true")
    return check_positive(values[key], f"{path}.{key}")


def _collect(out: JointLimits, joint: str, v: dict, path: str) -> None:
    if v.get("has_position_limits"):
        for key in ("min_position", "max_position"):
            if key not in v:
                raise InvalidInputError(f"{path}.{key}: required when has_position_limits is true")
        lo, hi = v["min_position"], v["max_position"]
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise InvalidInputError(f"{path}: expected finite min_position < max_position, got [{lo}, {hi}]")
        out.position[joint] = (lo, hi)
    if v.get("has_velocity_limits"):
        out.velocity[joint] = _positive(v, "max_velocity", path)
    a = _positive(v, "max_acceleration", path) if v.get("has_acceleration_limits") else math.inf
    if v.get("has_deceleration_limits"):
        a = min(a, _positive(v, "max_deceleration", path))
    if math.isfinite(a):
        out.acceleration[joint] = a
    if v.get("has_jerk_limits"):
        out.jerk[joint] = _positive(v, "max_jerk", path)
