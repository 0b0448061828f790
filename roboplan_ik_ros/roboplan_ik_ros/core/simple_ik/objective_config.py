"""SimpleIK objectives from plain data: the YAML's ``simple_ik.objectives`` and ``~/solve_ik``'s IKObjective.

One spec, two sources: a mapping from the YAML (``{type: axis, link: panda_hand_tcp, axis: [0, 0, 1],
direction: [0, 0, -1]}``) and the ROS request (node/objective_msgs.py turns an IKObjective message
into the same keyword arguments) both go through :func:`make_objective`, which checks every value
and names the bad field with what is expected. Frames are checked against the robot by
:func:`check_objective_frames` (needs the scene).

Keys (units and frames):

* ``type``: ``frame`` (6 DOF: the link frame's pose), ``point`` (3 per point) or ``axis`` (2 DOF);
* ``link``: the moving frame, any frame of the robot model;
* ``relative_to``: the frame the targets are expressed in, any frame of the model, moving with q
  (``None`` or ``""``: the model's world frame);
* ``weight`` (> 0, default 1): scales the objective's squared error against the others';
* frame: ``position`` [m] (3) and ``orientation`` (unit quaternion ``[x, y, z, w]``, default identity) of the
  link frame in ``relative_to``; ``weights``: 6 weights >= 0 of its error ``[vx, vy, vz, wx, wy, wz]`` in
  the link frame (None: ``simple_ik.error_weights``; ``[1, 1, 1, 0, 0, 0]``: position only,
  ``[0, 0, 0, 1, 1, 1]``: orientation only);
* point: ``points`` [m] (one 3-vector or a list, in the link frame) onto ``targets`` [m] (as many, in
  ``relative_to``); ``weights``: 3 weights >= 0 of each point's x, y, z error in ``relative_to`` (None: all 1);
* axis: ``axis`` (link frame) along ``direction`` (``relative_to``), both nonzero 3-vectors, normalised.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pinocchio as pin

from ..errors import InvalidInputError
from .objectives import AxisGoal, PointGoal, check_axis_weights, check_objective_weight, as_points, as_direction
from .goals import FrameGoal
from .options import check_error_weights

OBJECTIVE_TYPES = ("frame", "point", "axis")
COMMON_KEYS = ("type", "link", "relative_to", "weight")
TYPE_KEYS = {
    "frame": ("position", "orientation", "weights"),
    "point": ("points", "targets", "weights"),
    "axis": ("axis", "direction"),
}
REQUIRED_KEYS = {"frame": ("position",), "point": ("points", "targets"), "axis": ("axis", "direction")}
QUATERNION_TOLERANCE = 1e-3  # | |q| - 1 | above this is refused (a typo, not a rounding); below, normalised


def _vector(value, size: int, path: str, what: str) -> np.ndarray:
    try:
        a = np.array(value, dtype=float)
        ok = a.shape == (size,) and not any(isinstance(x, (bool, np.bool_)) for x in value)
    except (TypeError, ValueError):
        a, ok = None, False
    if not ok or not np.all(np.isfinite(a)):
        raise InvalidInputError(f"{path}: expected {size} finite numbers ({what}), got {value!r}")
    return a


def _quaternion(value, path: str) -> np.ndarray:
    """[x, y, z, w] normalised, or InvalidInputError (zero, far from unit, non-finite, not 4 numbers)."""
    q = _vector(value, 4, path, "a unit quaternion [x, y, z, w]")
    n = float(np.linalg.norm(q))
    if abs(n - 1.0) > QUATERNION_TOLERANCE:
        raise InvalidInputError(f"{path}: expected a unit quaternion [x, y, z, w] (norm within "
                                f"{QUATERNION_TOLERANCE:g} of 1), got norm {n:g}: {list(value)!r}")
    return q / n


def make_objective(path: str, type: str, link: str, relative_to: str | None = None, weight: float = 1.0,
                   position=None, orientation=None, points=None, targets=None, axis=None, direction=None,
                   weights=None, error_weights: Sequence[float] | None = None,
                   field_names: Mapping[str, str] | None = None):
    """A FrameGoal, PointGoal or AxisGoal from checked values; InvalidInputError names ``path``'s bad
    field. ``None`` means "not given" for every optional field; a field of another type is refused.
    ``error_weights``: the configured 6 weights a frame objective's ``weight`` scales when it has no
    ``weights`` of its own (default: all 1). ``field_names``: how the source calls a key in messages
    (e.g. ``{"position": "pose.position"}`` for an IKObjective message)."""
    names = field_names or {}

    def at(key: str) -> str:
        return f"{path}.{names.get(key, key)}"

    if type not in OBJECTIVE_TYPES:
        raise InvalidInputError(f"{at('type')}: unknown objective type {type!r}; valid: {', '.join(OBJECTIVE_TYPES)}")
    given = {k for k, v in (("position", position), ("orientation", orientation), ("points", points),
                            ("targets", targets), ("axis", axis), ("direction", direction),
                            ("weights", weights)) if v is not None}
    for key in sorted(given - set(TYPE_KEYS[type])):
        owner = next(t for t, keys in TYPE_KEYS.items() if key in keys)
        raise InvalidInputError(f"{at(key)}: does not apply to type {type!r} (a key of type {owner!r}); "
                                f"keys of {type!r}: {', '.join(COMMON_KEYS + TYPE_KEYS[type])}")
    for key in REQUIRED_KEYS[type]:
        if key not in given:
            raise InvalidInputError(f"{at(key)}: required for type {type!r}")
    if not isinstance(link, str) or not link:
        raise InvalidInputError(f"{at('link')}: expected the name of a frame of the robot model, got {link!r}")
    if relative_to is not None and not isinstance(relative_to, str):
        raise InvalidInputError(f"{at('relative_to')}: expected a frame name (empty: the world), got {relative_to!r}")
    relative_to = relative_to or None
    weight = check_objective_weight(weight, at("weight"))
    if type == "point":
        p_link = as_points(points, at("points"))
        p_target = as_points(targets, at("targets"))
        if len(p_link) != len(p_target):
            raise InvalidInputError(f"{at('targets')}: expected {len(p_link)} points (one per point of 'points'), "
                                    f"got {len(p_target)}")
        w = None if weights is None else check_axis_weights(weights, at("weights")).tolist()
        return PointGoal(link, p_link, p_target, relative_to=relative_to, weight=weight, weights=w)
    if type == "axis":
        return AxisGoal(link, as_direction(axis, at("axis")), as_direction(direction, at("direction")),
                        relative_to=relative_to, weight=weight)
    t = _vector(position, 3, at("position"), "[m]")
    x, y, z, w = _quaternion([0.0, 0.0, 0.0, 1.0] if orientation is None else orientation, at("orientation"))
    T = pin.SE3(pin.Quaternion(w, x, y, z).toRotationMatrix(), t).homogeneous  # a 4x4 array: picklable, exact
    if weights is not None:
        check_error_weights(weights, at("weights"))
        w6 = [weight * float(v) for v in weights]
    elif weight != 1.0:
        base = error_weights if error_weights is not None else [1.0] * 6
        w6 = [weight * float(v) for v in base]
    else:
        w6 = None  # the options' error_weights at solve time
    return FrameGoal(link, T, weights=w6, relative_to=relative_to)


def objective_from_mapping(mapping, path: str, error_weights: Sequence[float] | None = None):
    """One ``simple_ik.objectives`` entry (a YAML mapping) as a goal; unknown keys and bad values are
    named (``config.simple_ik.objectives[0].axis: ...``)."""
    if not isinstance(mapping, Mapping):
        raise InvalidInputError(f"{path}: expected a mapping with type, link, ..., got {mapping!r}")
    valid = COMMON_KEYS + tuple(k for keys in TYPE_KEYS.values() for k in keys if k != "weights") + ("weights",)
    for key in mapping:
        if key not in valid:
            raise InvalidInputError(f"{path}.{key}: unknown key; valid keys: {', '.join(dict.fromkeys(valid))}")
    for key in ("type", "link"):
        if key not in mapping:
            raise InvalidInputError(f"{path}.{key}: required (type: one of {', '.join(OBJECTIVE_TYPES)}; link: a "
                                    f"frame of the robot model)")
    if not isinstance(mapping["type"], str):
        raise InvalidInputError(f"{path}.type: expected one of {', '.join(OBJECTIVE_TYPES)}, got {mapping['type']!r}")
    return make_objective(path, error_weights=error_weights, **dict(mapping))


def objectives_from_config(items, path: str, error_weights: Sequence[float] | None = None) -> list:
    """The ``simple_ik.objectives`` list as goals."""
    if items is None:
        return []
    if not isinstance(items, list):
        raise InvalidInputError(f"{path}: expected a list of objectives, got {items!r}")
    return [objective_from_mapping(m, f"{path}[{k}]", error_weights) for k, m in enumerate(items)]


def check_objective_frames(goals: Sequence, frame_id: Callable[[str], int], path: str) -> None:
    """Every goal's ``link`` and ``relative_to`` is a frame of the model (``frame_id`` raises for an unknown
    one), or InvalidInputError ``<path>[k].link: unknown frame ...`` (the spec's key names)."""
    for k, g in enumerate(goals):
        link = g.tip_frame if isinstance(g, FrameGoal) else g.link_frame
        for key, name in (("link", link), ("relative_to", g.relative_to)):
            if name is None:
                continue
            try:
                frame_id(name)
            except InvalidInputError as exc:
                raise InvalidInputError(f"{path}[{k}].{key}: {exc}") from None


__all__ = ["OBJECTIVE_TYPES", "check_objective_frames", "make_objective", "objective_from_mapping",
           "objectives_from_config"]
