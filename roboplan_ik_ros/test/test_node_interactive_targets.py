"""ik_controller's interactive target markers follow a goal from a topic (issue 30, item 5): after a
``~/ee/target_pose`` goal the marker is moved there (setPose + applyChanges). interactive_markers is not installed:
the server is test_node_markers' recorder, in the shape of the real API; the node runs over real DDS."""

import numpy as np
import pinocchio as pin
import pytest
from geometry_msgs.msg import PoseStamped
from lifecycle_msgs.msg import Transition
from rclpy.parameter import Parameter

from conftest import LifecycleClient, Spinner, unique_name, wait_until, write_config
from roboplan_ik_ros.node import ik_controller, markers
from roboplan_ik_ros.node.ik_controller import IKControllerNode
from roboplan_ik_ros.node.message_conversions import pose_from_se3, se3_from_pose
from test_node_markers import FakeServer

TIP = "panda_hand_tcp"
OFFSET = np.array([0.03, 0.0, 0.0])  # [m] the goal from the topic, away from where the marker was placed


@pytest.fixture
def node_with_targets(ros, mock_robot, tmp_path, monkeypatch):
    monkeypatch.setattr(markers, "InteractiveMarkerServer", FakeServer)
    monkeypatch.setattr(ik_controller, "HAVE_INTERACTIVE_MARKERS", True)
    name = unique_name("ik")
    node = IKControllerNode(name, parameter_overrides=[Parameter("config_file", value=write_config(tmp_path))])
    spinner = Spinner(node)
    client = LifecycleClient(name)
    yield node, client
    client.close()
    spinner.stop()
    node.destroy_node()


def test_the_marker_follows_a_goal_from_the_topic(node_with_targets):
    node, client = node_with_targets
    assert client.transition(Transition.TRANSITION_CONFIGURE), node.last_error
    assert client.transition(Transition.TRANSITION_ACTIVATE), node.last_error
    server = node._interactive.server
    assert isinstance(server, FakeServer) and server.feedback_sub_qos.depth >= 2
    (placed, _), = [(m, cb) for m, cb in server.inserted if m.name == "ee"]
    T_goal = se3_from_pose(placed.pose)
    T_goal = pin.SE3(T_goal.rotation, T_goal.translation + OFFSET)
    goal_pub = client.node.create_publisher(PoseStamped, f"/{node.get_name()}/ee/target_pose", 10)
    msg = PoseStamped()
    msg.header.frame_id = placed.header.frame_id
    pose_from_se3(T_goal, msg.pose)
    wait_until(lambda: goal_pub.get_subscription_count() > 0, what="goal subscription")
    goal_pub.publish(msg)
    shown = wait_until(lambda: next((p for n, p in server.poses if n == "ee"), None), what="the marker moved")
    assert np.allclose(se3_from_pose(shown).translation, T_goal.translation, atol=1e-9)
    assert np.allclose(se3_from_pose(shown).rotation, T_goal.rotation, atol=1e-9)
