"""Which topics the node subscribes per task (node/goal_inputs.py), in-process with a stand-in node: decided by
the goal inputs of the follower each kind names (ControlLoop.goal_inputs, core/control/follower_kinds.py), not by
the task's class (issue 33).

- Every kind of the package that takes goals gets the topics of its inputs (README: the node's interface); a
  kind without goals (damping) gets none.
- A kind written outside the package (test/frame_point_kind.py) that names the "point" follower gets
  ``~/<task>/target_point``, and a PointStamped on it becomes the task's goal.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from geometry_msgs.msg import PointStamped, PoseStamped, TwistStamped
from sensor_msgs.msg import JointState

from frame_point_kind import frame_point_kind  # noqa: F401 - a fixture
from roboplan_ik_ros.node.goal_frames import FrameResolver
from roboplan_ik_ros.node.goal_inputs import GOAL_QOS, STREAM_QOS, GoalInputs, JointJog
from roboplan_ik_ros.node.node_config import NodeConfig
from test_control_loop import TIP, SimRobot, panda  # noqa: F401 - panda is a fixture
from test_follower_kinds import EVERY_GOAL_KIND, loop_with


class _Node:
    """Records the subscriptions and services GoalInputs creates."""

    def __init__(self) -> None:
        self.subscriptions: dict[str, tuple[type, object, object]] = {}  # topic -> (type, callback, QoS)
        self.services: list[str] = []
        self.infos: list[str] = []

    def create_subscription(self, msg_type, topic, callback, qos):
        assert topic not in self.subscriptions, f"{topic} subscribed twice"
        self.subscriptions[topic] = (msg_type, callback, qos)

    def create_service(self, srv_type, name, callback):
        self.services.append(name)

    def get_logger(self):
        return type("Logger", (), {"info": lambda _, text: self.infos.append(text)})()


def _endpoints(loop) -> tuple[_Node, GoalInputs, list[str]]:
    node, rejected = _Node(), []
    inputs = GoalInputs(node, loop, threading.Lock(), FrameResolver(loop.scene, "panda_link0"), NodeConfig(),
                        is_active=lambda: True, log=lambda level, text: None, on_rejected=rejected.append,
                        on_goal_set=lambda: None)
    inputs.create_endpoints()
    return node, inputs, rejected


def test_each_task_gets_the_topics_of_the_goal_inputs_of_its_follower(panda):
    node, _, _ = _endpoints(loop_with(panda, EVERY_GOAL_KIND))
    expected = {
        "~/ee/target_pose": (PoseStamped, GOAL_QOS), "~/ee/target_twist": (TwistStamped, STREAM_QOS),
        "~/posture/target_joints": (JointState, GOAL_QOS),
        "~/posture/target_joint_velocities": (JointState, STREAM_QOS),
        "~/j4/target_joints": (JointState, GOAL_QOS),
        "~/look/target_point": (PointStamped, GOAL_QOS), "~/com/target_point": (PointStamped, GOAL_QOS),
        "~/rel/target_pose": (PoseStamped, GOAL_QOS),
        "~/jv/target_joint_velocities": (JointState, STREAM_QOS),
    }
    if JointJog is not None:  # control_msgs installed: the configuration task's jog in its own message too
        expected["~/posture/joint_jog"] = (JointJog, STREAM_QOS)
    assert {topic: (t, qos) for topic, (t, _, qos) in node.subscriptions.items()} == expected
    assert sorted(node.services) == ["~/apply_configured_targets", "~/pause"]
    # without control_msgs the node says where to jog instead (the posture task takes joint jogs)
    assert any("~/<task>/target_joint_velocities" in text for text in node.infos) == (JointJog is None)


def test_a_new_kind_naming_the_point_follower_gets_a_target_point_topic_that_sets_its_goal(panda, frame_point_kind):
    loop = loop_with(panda, [dict(name="tip", type=frame_point_kind, frame=TIP, priority=1),
                             dict(name="hold", type="damping", priority=2)])
    node, _, rejected = _endpoints(loop)
    assert set(node.subscriptions) == {"~/tip/target_point"}
    assert not node.infos  # no task takes joint jogs: nothing to say about control_msgs
    sim = SimRobot(loop, panda.named_configuration("default"))
    assert loop.activate(sim.t) == ""
    msg = PointStamped()
    msg.header.frame_id = "panda_link0"
    msg.point.x, msg.point.y, msg.point.z = 0.4, 0.1, 0.3
    msg_type, callback, _ = node.subscriptions["~/tip/target_point"]
    assert msg_type is PointStamped
    callback(msg)
    assert rejected == []
    assert np.allclose(loop.goal("tip"), [0.4, 0.1, 0.3])


def test_a_goal_input_the_node_has_no_topic_for_is_refused_naming_the_task(panda):
    _, inputs, _ = _endpoints(loop_with(panda, [dict(name="ee", type="frame", frame=TIP, priority=1)]))
    with pytest.raises(ValueError, match=r"task 'ee': goal input 'teleport' has no endpoint"):
        inputs._endpoints("ee", "teleport")
