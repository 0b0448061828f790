"""roboplan_ik_interfaces/msg/IKObjective -> a SimpleIK goal (FrameGoal, PointGoal or AxisGoal).

The message carries the fields of every type; the converter passes only the current type's fields
to :func:`~roboplan_ik_ros.core.simple_ik.objective_config.make_objective` (the YAML's checks), after
refusing a value in another type's field (an identity pose, no points and zero vectors are the
defaults). Errors name the request's field: ``objectives[1].direction: expected a finite nonzero
3-vector ...``. Frames are checked by the caller against the scene (UNKNOWN_FRAME).
"""

from __future__ import annotations

from collections.abc import Sequence

from roboplan_ik_interfaces.msg import IKObjective

from ..core.errors import InvalidInputError
from ..core.simple_ik.objective_config import make_objective

TYPES = {IKObjective.TYPE_FRAME: "frame", IKObjective.TYPE_POINT: "point", IKObjective.TYPE_AXIS: "axis"}
_TYPE_NAMES = ", ".join(f"TYPE_{name.upper()} ({code})" for code, name in TYPES.items())
_FIELDS = {"frame": ("pose", "weights"), "point": ("points", "targets", "weights"), "axis": ("axis", "direction")}
_MSG_NAMES = {"position": "pose.position", "orientation": "pose.orientation"}


def _xyz(v) -> list[float]:
    return [v.x, v.y, v.z]


def _given(msg: IKObjective) -> dict[str, bool]:
    """Which type-specific fields hold something other than their default."""
    p, o = msg.pose.position, msg.pose.orientation
    return {
        "pose": any(x != 0.0 for x in (p.x, p.y, p.z, o.x, o.y, o.z)) or o.w != 1.0,
        "points": len(msg.points) > 0,
        "targets": len(msg.targets) > 0,
        "axis": any(x != 0.0 for x in _xyz(msg.axis)),
        "direction": any(x != 0.0 for x in _xyz(msg.direction)),
        "weights": len(msg.weights) > 0,
    }


def objective_from_msg(msg: IKObjective, path: str, error_weights: Sequence[float] | None = None):
    """The goal of one IKObjective (``path``: its name in the request, e.g. ``objectives[0]``), or
    InvalidInputError naming the field and what it expects."""
    kind = TYPES.get(msg.type)
    if kind is None:
        raise InvalidInputError(f"{path}.type: unknown objective type {msg.type}; valid: {_TYPE_NAMES}")
    for name, given in _given(msg).items():
        if given and name not in _FIELDS[kind]:
            owner = next(t for t, names in _FIELDS.items() if name in names)
            raise InvalidInputError(f"{path}.{name}: does not apply to TYPE_{kind.upper()} (a field of "
                                    f"TYPE_{owner.upper()}); leave it at its default")
    weight = msg.weight if msg.weight != 0.0 else 1.0  # 0: the default weight; negative or non-finite: refused
    kwargs = {}
    if kind == "frame":
        p, o = msg.pose.position, msg.pose.orientation
        kwargs = {"position": [p.x, p.y, p.z], "orientation": [o.x, o.y, o.z, o.w]}
    elif kind == "point":
        kwargs = {"points": [_xyz(v) for v in msg.points] or None, "targets": [_xyz(v) for v in msg.targets] or None}
    else:
        kwargs = {"axis": _xyz(msg.axis), "direction": _xyz(msg.direction)}
    if len(msg.weights):
        kwargs["weights"] = list(msg.weights)
    return make_objective(path, kind, msg.link, msg.relative_to or None, weight, error_weights=error_weights,
                          field_names=_MSG_NAMES, **kwargs)
