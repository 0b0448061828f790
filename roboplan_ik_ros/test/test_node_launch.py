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
    import roboplan_ik_ros.sim.mock_robot as mock

    setup = (LAUNCH.parents[1] / "setup.py").read_text()
    assert "ik_controller = roboplan_ik_ros.node.ik_controller:main" in setup
    assert "mock_robot = roboplan_ik_ros.sim.mock_robot:main" in setup
    assert callable(ikc.main) and callable(mock.main)


def test_the_installed_share_layout_is_found_by_walking_it():
    """``ros2 launch <package> <file>`` finds the file by os.walk over share/<package>, which does not follow a
    folder link: the share folder (scripts/bootstrap.sh's, or colcon's) holds every data file of setup.py's
    data_files (launch/*.launch.py, config/*.yaml, config/*.srdf) where a walk reaches it."""
    import os

    import pytest
    from ament_index_python.packages import PackageNotFoundError, get_package_share_directory

    try:
        share = get_package_share_directory("roboplan_ik_ros")
    except PackageNotFoundError:
        pytest.skip("roboplan_ik_ros is not in the ament index (run scripts/bootstrap.sh or colcon build)")
    package = LAUNCH.parents[1]
    expected = {str(p.relative_to(package)) for pattern in ("launch/*.launch.py", "config/*.yaml", "config/*.srdf")
                for p in package.glob(pattern)}
    walked = {os.path.relpath(os.path.join(root, f), share) for root, _, files in os.walk(share) for f in files}
    missing = sorted(expected - walked)
    assert not missing, f"{share}: os.walk does not reach {missing} (a folder link?)"
    assert (package / "config" / "panda.yaml").resolve() == \
        (Path(share) / "config" / "panda.yaml").resolve()  # the node's default config_file is the source's
