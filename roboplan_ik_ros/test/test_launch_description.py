"""What ``launch/ik_controller.launch.py`` would start: ``generate_launch_description()`` is called and
the actions it returns are evaluated for a set of launch arguments (the defaults, and
``namespace:=arm autostart:=true use_mock_robot:=true config_file:=...``): the declared arguments and
their defaults, each node's package, executable, name, namespace, parameters (with their types) and
remappings, and which nodes the conditions start.

Two ways:

* with the real ``launch``/``launch_ros`` where they import (a ROS 2 install; they are not PyPI wheels,
  so here that test is skipped saying so), substitutions, parameters and conditions evaluated by
  launch itself in a ``LaunchContext``;
* everywhere, with recording stand-ins of the few launch classes the file uses (``launch`` and
  ``launch_ros`` replaced in ``sys.modules`` for the load): what the file passes to them, the
  substitutions resolved by the stand-ins. This checks the file's own content, not launch's behaviour.

``test_node_launch.py`` checks the file statically (it compiles; its node parameters are the node's).
"""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

import pytest

LAUNCH = Path(__file__).resolve().parents[1] / "launch" / "ik_controller.launch.py"
SHARE = "/opt/share/roboplan_ik_ros"  # what get_package_share_directory returns in these tests
DEFAULTS = {"config_file": f"{SHARE}/config/panda.yaml", "namespace": "", "autostart": "false",
            "use_mock_robot": "false"}
GIVEN = {"config_file": "/tmp/cell.yaml", "namespace": "arm", "autostart": "true", "use_mock_robot": "true"}


def _load(monkeypatch, extra_modules: dict | None = None):
    """The launch file as a module, with get_package_share_directory answering SHARE (a venv has no ament
    index entry for the package) and ``extra_modules`` in sys.modules while it is imported."""
    import ament_index_python.packages as ament

    for name, module in (extra_modules or {}).items():
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr(ament, "get_package_share_directory",
                        lambda pkg: SHARE if pkg == "roboplan_ik_ros" else pytest.fail(f"share of {pkg}"))
    spec = importlib.util.spec_from_file_location("ik_controller_launch", LAUNCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ===================================================================================== with launch_ros
def test_what_the_launch_description_starts_with_launch_ros(monkeypatch):
    pytest.importorskip("launch_ros", reason="launch_ros is not installed (not a PyPI wheel): the launch file "
                                             "is checked with stand-ins only (see the README, Install)")
    launch = pytest.importorskip("launch")
    from launch import LaunchContext
    from launch.actions import DeclareLaunchArgument
    from launch.utilities import normalize_to_list_of_substitutions, perform_substitutions
    import launch_ros.actions
    from launch_ros.utilities import evaluate_parameters, normalize_parameters

    made = []  # (class name, kwargs) of every node action the file makes

    def recording(cls):
        class Recording(cls):
            def __init__(self, **kw):
                made.append((cls.__name__, kw, self))
                super().__init__(**kw)
        Recording.__name__ = cls.__name__
        return Recording

    monkeypatch.setattr(launch_ros.actions, "Node", recording(launch_ros.actions.Node))
    monkeypatch.setattr(launch_ros.actions, "LifecycleNode", recording(launch_ros.actions.LifecycleNode))
    module = _load(monkeypatch)

    def fresh_description():
        """A new description (and new node actions) for each evaluation, as ``ros2 launch`` makes one per run:
        launch_ros's ParameterValue keeps its first evaluation, so evaluating one description twice would
        give the first arguments' parameters again."""
        made.clear()
        ld = module.generate_launch_description()
        assert isinstance(ld, launch.LaunchDescription)
        return ld

    ld = fresh_description()
    args = {e.name: e for e in ld.entities if isinstance(e, DeclareLaunchArgument)}

    def context_for(values: dict) -> LaunchContext:
        ctx = LaunchContext()
        ctx.launch_configurations.update(values)
        return ctx

    def text(ctx, value) -> str:
        return perform_substitutions(ctx, normalize_to_list_of_substitutions(value))

    assert set(args) == set(DEFAULTS)
    assert {k: text(LaunchContext(), a.default_value) for k, a in args.items()} == DEFAULTS
    for values in (DEFAULTS, GIVEN):
        fresh_description()
        ctx = context_for(values)
        nodes = {}
        for cls_name, kw, action in made:
            condition = getattr(action, "condition", None)
            if condition is not None and not condition.evaluate(ctx):
                continue
            params = {}
            for p in evaluate_parameters(ctx, normalize_parameters(kw.get("parameters", []))):
                assert isinstance(p, dict), f"{kw.get('name')}: parameter file {p} (expected a dict)"
                params.update(p)
            name = text(ctx, kw["name"])
            nodes[name] = {
                "class": cls_name, "package": text(ctx, kw["package"]), "executable": text(ctx, kw["executable"]),
                "namespace": text(ctx, kw.get("namespace", "")), "parameters": params,
                "remappings": [(text(ctx, a), text(ctx, b)) for a, b in kw.get("remappings", [])],
            }
        _check_nodes(nodes, values)


# ===================================================================================== stand-ins
class _Sub:
    """A substitution stand-in: LaunchConfiguration(name) resolves from the launch arguments."""

    def __init__(self, name: str) -> None:
        self.name = name


def _resolve(value, args: dict):
    if isinstance(value, _Sub):
        return args[value.name]
    if isinstance(value, _ParameterValue):
        text = _resolve(value.value, args)
        if value.value_type is bool:
            assert text in ("true", "false"), f"{text!r} is not a bool"
            return text == "true"
        return value.value_type(text)
    if isinstance(value, (list, tuple)):
        return "".join(str(_resolve(v, args)) for v in value)
    return value


class _ParameterValue:
    def __init__(self, value, value_type=None) -> None:
        self.value, self.value_type = value, value_type


class _Action:
    def __init__(self, *args, **kw) -> None:
        self.args, self.kw = args, kw


class _IfCondition:
    def __init__(self, predicate) -> None:
        self.predicate = predicate

    def evaluate(self, args: dict) -> bool:
        text = _resolve(self.predicate, args)
        assert text in ("true", "false", "1", "0", "True", "False"), f"condition on {text!r}"
        return text in ("true", "1", "True")


def _stand_ins() -> dict:
    def module(name, **attrs):
        m = types.ModuleType(name)
        m.__dict__.update(attrs)
        return m

    class LaunchDescription(list):
        def __init__(self, entities) -> None:
            super().__init__(entities)

    class DeclareLaunchArgument(_Action):
        pass

    class Node(_Action):
        pass

    class LifecycleNode(_Action):
        pass

    return {
        "launch": module("launch", LaunchDescription=LaunchDescription),
        "launch.actions": module("launch.actions", DeclareLaunchArgument=DeclareLaunchArgument),
        "launch.conditions": module("launch.conditions", IfCondition=_IfCondition),
        "launch.substitutions": module("launch.substitutions", LaunchConfiguration=_Sub),
        "launch_ros": module("launch_ros"),
        "launch_ros.actions": module("launch_ros.actions", Node=Node, LifecycleNode=LifecycleNode),
        "launch_ros.parameter_descriptions": module("launch_ros.parameter_descriptions",
                                                    ParameterValue=_ParameterValue),
    }


def test_what_the_launch_description_starts_with_stand_ins(monkeypatch):
    stand_ins = _stand_ins()
    module = _load(monkeypatch, stand_ins)
    ld = module.generate_launch_description()
    declared = [e for e in ld if type(e).__name__ == "DeclareLaunchArgument"]
    assert [d.args[0] for d in declared] == list(DEFAULTS)  # each once, in this order
    assert {d.args[0]: d.kw["default_value"] for d in declared} == DEFAULTS
    assert all(d.kw.get("description") for d in declared)
    unknown = [type(e).__name__ for e in ld if type(e).__name__ not in ("DeclareLaunchArgument", "Node",
                                                                       "LifecycleNode")]
    assert not unknown, f"actions these stand-ins do not know: {unknown}"
    for values in (DEFAULTS, GIVEN):
        nodes = {}
        for e in ld:
            if type(e).__name__ == "DeclareLaunchArgument":
                continue
            condition = e.kw.get("condition")
            if condition is not None and not condition.evaluate(values):
                continue
            params = {}
            for p in e.kw.get("parameters", []):
                assert isinstance(p, dict), f"{e.kw.get('name')}: parameter file {p} (expected a dict)"
                params.update({k: _resolve(v, values) for k, v in p.items()})
            nodes[e.kw["name"]] = {
                "class": type(e).__name__, "package": e.kw["package"], "executable": e.kw["executable"],
                "namespace": _resolve(e.kw.get("namespace", ""), values), "parameters": params,
                "remappings": [(_resolve(a, values), _resolve(b, values)) for a, b in e.kw.get("remappings", [])],
            }
        _check_nodes(nodes, values)


# ===================================================================================== expectations
def _check_nodes(nodes: dict, values: dict) -> None:
    """What the README says the launch file starts for the launch arguments ``values``."""
    from roboplan_ik_ros.node.ik_controller import CONSTRUCTOR_PARAMETERS

    mock = values["use_mock_robot"] == "true"
    assert set(nodes) == ({"ik_controller", "mock_robot"} if mock else {"ik_controller"}), nodes
    ik = nodes["ik_controller"]
    assert (ik["class"], ik["package"], ik["executable"]) == ("LifecycleNode", "roboplan_ik_ros", "ik_controller")
    assert ik["namespace"] == values["namespace"]
    assert ik["parameters"] == {"config_file": values["config_file"], "autostart": values["autostart"] == "true"}
    assert type(ik["parameters"]["autostart"]) is bool  # a string "true" would fail the node's declaration
    assert set(ik["parameters"]) <= set(CONSTRUCTOR_PARAMETERS)
    assert ik["remappings"] == []  # the topics keep their names: /joint_states, ~/..., the command topic
    if mock:
        m = nodes["mock_robot"]
        assert (m["class"], m["package"], m["executable"]) == ("Node", "roboplan_ik_ros", "mock_robot")
        # the mock is not namespaced: /joint_states and /robot_description stay global, as the node reads them
        assert m["namespace"] == "" and m["parameters"] == {} and m["remappings"] == []
