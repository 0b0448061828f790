"""Launch the ik_controller lifecycle node (and optionally the mock robot).

    ros2 launch roboplan_ik_ros ik_controller.launch.py config_file:=/path/to.yaml \
        namespace:=arm autostart:=true use_mock_robot:=true

Without autostart, drive the node with a lifecycle manager or ``ros2 lifecycle set``.
"""

from pathlib import Path

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import LifecycleNode, Node
from launch_ros.parameter_descriptions import ParameterValue


def generate_launch_description() -> LaunchDescription:
    default_config = str(Path(get_package_share_directory("roboplan_ik_ros")) / "config" / "panda.yaml")
    config_file = LaunchConfiguration("config_file")
    namespace = LaunchConfiguration("namespace")
    autostart = LaunchConfiguration("autostart")
    use_mock_robot = LaunchConfiguration("use_mock_robot")
    return LaunchDescription([
        DeclareLaunchArgument("config_file", default_value=default_config,
                              description="YAML config of the controller (tasks, limits, barriers, node)"),
        DeclareLaunchArgument("namespace", default_value="", description="namespace of the node"),
        DeclareLaunchArgument("autostart", default_value="false",
                              description="configure and activate without a lifecycle manager"),
        DeclareLaunchArgument("use_mock_robot", default_value="false",
                              description="also start mock_robot (Panda): robot description + joint states"),
        LifecycleNode(
            package="roboplan_ik_ros", executable="ik_controller", name="ik_controller",
            namespace=namespace, output="screen",
            parameters=[{
                "config_file": config_file,
                "autostart": ParameterValue(autostart, value_type=bool),
            }],
        ),
        Node(
            package="roboplan_ik_ros", executable="mock_robot", name="mock_robot", output="screen",
            condition=IfCondition(use_mock_robot),
        ),
    ])
