"""Runtime ROS parameters of the controller: gains, weights, rate, state feedback, smoothing.

Each parameter is a :class:`ParamSpec`: its initial value (from the YAML config), a descriptor
(description, range), a validator that returns the reason a value is refused ("" = accept) and
an ``apply`` that changes the live controller. The node validates in its on-set callback and
applies in its post-set callback, so ``ros2 param set`` either takes effect or is refused with
the reason. Names: ``control_rate_hz``, ``state_feedback``, ``tasks.<task>.<field>``,
``barriers.<barrier>.<field>``, ``goal_smoothing.<field>``, ``streaming.<field>``.
:func:`unknown_parameter_reason` says why a set of an undeclared name is refused (the closest names,
the valid ones under its prefix).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from rcl_interfaces.msg import ParameterDescriptor, ParameterType

from ..core.control.loop_config import LoopConfig
from ..core.errors import Range
from ..core.keys import choice_reason, runtime_fields
from ..core.oink.kind import runtime_keys
from ..core.ranges import RANGES
from .node_config import trigger_feedback_reason


#: The node's own parameter (not a YAML key): how long configure waits for the robot description.
DESCRIPTION_TIMEOUT = Range(lo_open=True, unit="s", inf_ok=True)


@dataclass
class ParamSpec:
    name: str
    value: Any
    descriptor: ParameterDescriptor
    validate: Callable[[Any], str]
    apply: Callable[[Any], None]


def _descriptor(description: str, ptype: int, *, dynamic: bool = False) -> ParameterDescriptor:
    """``dynamic``: accept one number or an array (checked by the validator instead of the type).
    Double parameters also accept integers (``ros2 param set ... control_rate_hz 250``): rclpy's type
    check is replaced by the validator's. No ``floating_point_range``: rclpy would refuse with its own
    text (and closed bounds only) before the validator, whose reason is the YAML loader's."""
    dynamic = dynamic or ptype == ParameterType.PARAMETER_DOUBLE
    return ParameterDescriptor(description=description, type=ptype, dynamic_typing=dynamic)


def range_check(key: str, size: int | None = None) -> Callable[[Any], str]:
    """Validator of the parameter of YAML key ``key`` (``node.state_timeout``, ``tasks[].task_gain``): its
    range in :data:`~..core.ranges.RANGES`, the YAML loader's, with the same reason text. ``size``: see
    :meth:`~..core.errors.Range.reason`."""
    rng = RANGES[key]
    return lambda value: rng.reason(value, size)


def _in_words(key: str) -> str:
    return RANGES[key].describe()


def choice_check(valid: tuple[str, ...]) -> Callable[[Any], str]:
    return lambda value: choice_reason(value, valid)


def _double_or_array(value: Any) -> tuple[Any, int]:
    """YAML scalar -> (float, DOUBLE); list -> (list of floats, DOUBLE_ARRAY)."""
    if isinstance(value, (list, tuple)):
        return [float(v) for v in value], ParameterType.PARAMETER_DOUBLE_ARRAY
    return float(value), ParameterType.PARAMETER_DOUBLE


# ------------------------------------------------------------------------------------ builders
_DOUBLE = ParameterType.PARAMETER_DOUBLE


def _number(name: str, value: Any, key: str, what: str, apply: Callable[[Any], None], *,
            size: int | None = None) -> ParamSpec:
    """The parameter ``name`` of YAML key ``key``: its range from RANGES in the description and the validator.
    ``size``: one number or ``size`` of them (a list value is declared as a double array)."""
    if size is None:
        value, ptype = float(value), _DOUBLE
    else:
        value, ptype = _double_or_array(value)
    many = "" if size is None else f" (one number or {size})"
    return ParamSpec(name, value, _descriptor(f"{what}: {_in_words(key)}{many}", ptype, dynamic=size is not None),
                     range_check(key, size), apply)


def kind_specs(section: str, config: Any, get_object: Callable[[str], Any], nv: int) -> list[ParamSpec]:
    """Parameters ``<section>.<name>.<key>`` of one task or barrier: the keys its kind declares runtime
    (core/oink/kind.py), with their YAML ranges. ``get_object(name)`` returns the live core object (may be
    rebuilt); a value is kept in ``config`` too (a rebuild starts from it)."""
    specs = []
    for rk in runtime_keys(config, section):
        size = nv if rk.size == -1 else rk.size

        def apply(value: Any, key: str = rk.name) -> None:
            setattr(config, key, [float(x) for x in value] if hasattr(value, "__len__") else float(value))
            get_object(config.name).set_parameter(key, value)

        specs.append(_number(f"{section}.{config.name}.{rk.name}", getattr(config, rk.name), rk.range_key,
                             rk.description, apply, size=size))
    return specs


def task_specs(tc: Any, get_task: Callable[[str], Any], nv: int) -> list[ParamSpec]:
    """Parameters of one task. ``get_task(name)`` returns the live core task (may be rebuilt)."""
    return kind_specs("tasks", tc, get_task, nv)


def barrier_specs(bc: Any, get_barrier: Callable[[str], Any]) -> list[ParamSpec]:
    return kind_specs("barriers", bc, get_barrier, 0)


def loop_specs(node_cfg, apply_rate: Callable[[float], None], apply_feedback: Callable[[str], None],
               apply_divergence: Callable[[float], None]) -> list[ParamSpec]:
    """The runtime parameters of the ``node:`` section (``node_cfg`` is the live NodeConfig): every key its
    dataclasses declare with a runtime description (core/control/loop_config.py: rate, state feedback, stale
    handling, goal smoothing, streaming), with the declared range or choices. Three change more than their
    value (``apply_*``); ``state_feedback`` also meets the trigger's rule, as in the YAML."""
    applies = {"control_rate_hz": apply_rate, "state_feedback": apply_feedback,
               "max_state_divergence": apply_divergence}
    rules = {"state_feedback": lambda value: trigger_feedback_reason(node_cfg.trigger, value)}
    specs = []
    for name, f in runtime_fields(node_cfg):
        *sections, attr = name.split(".")
        owner = node_cfg
        for section in sections:
            owner = getattr(owner, section)
        choices, what = f.metadata.get("choices"), f.metadata["runtime"]
        apply = applies.get(name) or _setter(owner, attr, str if choices else float)
        if choices:
            rule = rules.get(name)
            specs.append(ParamSpec(name, getattr(owner, attr),
                                   _descriptor(what, ParameterType.PARAMETER_STRING),
                                   _choice_and_rule(choices, rule), apply))
        else:
            specs.append(_number(name, getattr(owner, attr), f"node.{name}", what, apply))
    return specs


def _setter(obj: Any, field: str, conv: Callable[[Any], Any]) -> Callable[[Any], None]:
    return lambda value: setattr(obj, field, conv(value))


def _choice_and_rule(choices: tuple[str, ...], rule: Callable[[Any], str] | None) -> Callable[[Any], str]:
    check = choice_check(choices)
    return check if rule is None else (lambda value: check(value) or rule(value))


# ------------------------------------------------------------------------------------ unknown names
#: Prefixes of the parameters that exist only while the node is configured (declared from the YAML).
RUNTIME_PREFIXES = (*dict.fromkeys(name if "." not in name else name.split(".")[0] + "."
                                  for name, _ in runtime_fields(LoopConfig)), "tasks.", "barriers.")
_LISTED = 30  # names listed before "(and N more)"


def unknown_parameter_reason(name: str, declared: Iterable[str], configured: bool) -> str:
    """Why setting the undeclared parameter ``name`` is refused: its name, the closest declared names
    and the declared names under the longest prefix it shares with them (every name if none), as a
    configure error names a YAML key. ``configured``: whether the runtime parameters exist now."""
    declared = sorted(declared)
    parts = name.split(".")
    prefix, under = "", declared
    for k in range(len(parts) - 1, 0, -1):  # longest dotted prefix that some declared name has
        candidate = ".".join(parts[:k]) + "."
        matching = [d for d in declared if d.startswith(candidate)]
        if matching:
            prefix, under = candidate, matching
            break
    reason = f"{name}: no such parameter"
    close = difflib.get_close_matches(name, declared, n=3, cutoff=0.6)
    if close:
        reason += f"; did you mean {' or '.join(repr(c) for c in close)}?"
    if not configured and any(name == p or name.startswith(p) for p in RUNTIME_PREFIXES):
        reason += ("; the runtime parameters (tasks.<task>.*, barriers.<barrier>.*, goal_smoothing.*, control_rate_hz, "
                   "...) exist once the node is configured")
    shown = ", ".join(d[len(prefix):] for d in under[:_LISTED])
    more = f" (and {len(under) - _LISTED} more)" if len(under) > _LISTED else ""
    reason += f"; valid {'under ' + repr(prefix) if prefix else 'names'}: {shown}{more}"
    return reason


class RuntimeParameters:
    """The runtime parameters of one configure, declared on ``node``: :meth:`declare` (start-up overrides
    take effect like a runtime set), :meth:`refusal` (the on-set check), :meth:`apply` (the post-set
    change, under the loop's lock), :meth:`undeclare` (on release)."""

    def __init__(self, node, specs: Iterable[ParamSpec]) -> None:
        self.node = node
        self.specs: dict[str, ParamSpec] = {s.name: s for s in specs}

    def declare(self) -> None:
        """Declare every parameter; raises what rclpy raises for an override it refuses."""
        declared = self.node.declare_parameters("", [(s.name, s.value, s.descriptor) for s in self.specs.values()])
        for p in declared:  # overrides given at start-up take effect like a runtime set
            if p.value != self.specs[p.name].value:
                self.specs[p.name].apply(p.value)

    def refusal(self, name: str, value: Any) -> str:
        """Why ``value`` is refused for ``name`` ("" = accepted; a name not of this configure: "")."""
        spec = self.specs.get(name)
        return spec.validate(value) if spec is not None else ""

    def apply(self, name: str, value: Any, lock) -> None:
        """Change the live controller (a name not of this configure: nothing)."""
        spec = self.specs.get(name)
        if spec is not None:
            with lock:
                spec.apply(value)
            spec.value = value

    def undeclare(self) -> None:
        for name in self.specs:
            if self.node.has_parameter(name):
                self.node.undeclare_parameter(name)
        self.specs = {}
