"""ik_controller keeps the newest /robot_description(_semantic) from construction on (descriptions.py).

In-process, with the two topics remapped to names of this test only (other tests' mocks publish
the real ones). Configure uses the kept text even after its publisher left (the latched sample is
gone, so waiting for it could only time out), and a newer description replaces an older one.
"""

import pytest
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.parameter import Parameter
from std_msgs.msg import String

from conftest import Spinner, unique_name, wait_until, write_config
from models import robot
from roboplan_ik_ros.node.descriptions import LATCHED
from roboplan_ik_ros.node.ik_controller import IKControllerNode

BROKEN_URDF = "<robot name='broken'><link name='a'/><joint name='j' type='revolute'></robot>"


@pytest.fixture
def rig(ros, tmp_path):
    """(publish(urdf), node, forget_publisher()) with private topics; torn down after."""
    import rclpy

    name = unique_name("ik_desc")
    topics = {t: f"/{name}_{t}" for t in ("robot_description", "robot_description_semantic")}
    remaps = [arg for t, private in topics.items() for arg in ("-r", f"/{t}:={private}")]
    node = IKControllerNode(name, cli_args=["--ros-args", *remaps], parameter_overrides=[
        Parameter("config_file", value=write_config(tmp_path)), Parameter("description_timeout", value=1.0)])
    source = rclpy.create_node(f"{name}_source")
    pubs = {t: source.create_publisher(String, topic, LATCHED) for t, topic in topics.items()}
    spinner = Spinner(node, source)
    panda = robot("panda")
    pubs["robot_description_semantic"].publish(String(data=panda.srdf_xml))

    def publish(urdf: str) -> None:
        pubs["robot_description"].publish(String(data=urdf))
        wait_until(lambda: (node._descriptions.get("robot_description") or ("",))[0] == urdf,
                   what="the node to receive the published URDF")

    def forget_publisher() -> None:
        for pub in pubs.values():
            source.destroy_publisher(pub)

    yield publish, node, forget_publisher, panda
    spinner.stop()
    node.destroy_node()
    source.destroy_node()


def test_configure_uses_the_newest_description_even_after_its_publisher_left(rig):
    publish, node, forget_publisher, panda = rig
    publish(BROKEN_URDF)
    publish(panda.urdf_xml)  # replaces the broken one
    wait_until(lambda: node._descriptions.get("robot_description_semantic"), what="the SRDF")
    forget_publisher()  # no latched sample left to wait for: only the kept text can configure the node
    assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS, node.last_error
    assert list(node.group.joint_names) == [f"panda_joint{i}" for i in range(1, 8)]


def test_a_newer_broken_description_fails_configure_with_the_reason(rig):
    publish, node, _, panda = rig
    publish(panda.urdf_xml)
    publish(BROKEN_URDF)  # the newest wins, even when it is worse
    assert node.trigger_configure() == TransitionCallbackReturn.FAILURE
    assert "robot_description: cannot parse URDF" in node.last_error
