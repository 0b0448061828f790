"""The launch file: it compiles, and its arguments and node parameters match the nodes.

launch/launch_ros are not installable here, so the file is checked statically.
"""

import ast
from pathlib import Path

LAUNCH = Path(__file__).resolve().parents[1] / "launch" / "ik_controller.launch.py"


def _tree():
    return ast.parse(LAUNCH.read_text(), str(LAUNCH))


def test_compiles():
    compile(LAUNCH.read_text(), str(LAUNCH), "exec")


def _calls(tree, name):
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", None) == name]


def test_arguments():
    names = {c.args[0].value for c in _calls(_tree(), "DeclareLaunchArgument")}
    assert names == {"config_file", "namespace", "autostart", "use_mock_robot"}


def test_node_parameters_are_declared_by_the_node():
    from roboplan_ik_ros.node.ik_controller import CONSTRUCTOR_PARAMETERS

    (lifecycle,) = _calls(_tree(), "LifecycleNode")
    kw = {k.arg: k.value for k in lifecycle.keywords}
    assert kw["executable"].value == "ik_controller" and kw["package"].value == "roboplan_ik_ros"
    (params,) = kw["parameters"].elts
    keys = {k.value for k in params.keys}
    assert keys and keys <= set(CONSTRUCTOR_PARAMETERS)


def test_console_scripts_exist():
    import roboplan_ik_ros.node.ik_controller as ikc
    import roboplan_ik_ros.node.mock_robot as mock

    setup = (LAUNCH.parents[1] / "setup.py").read_text()
    assert "ik_controller = roboplan_ik_ros.node.ik_controller:main" in setup
    assert "mock_robot = roboplan_ik_ros.node.mock_robot:main" in setup
    assert callable(ikc.main) and callable(mock.main)
