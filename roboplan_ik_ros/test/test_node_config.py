"""The ``node:`` YAML section and the runtime parameter validators (no DDS)."""

from pathlib import Path

import pytest
import yaml

from roboplan_ik_ros.core.errors import InvalidInputError
from roboplan_ik_ros.node.node_config import NodeConfig, load_node_config
from roboplan_ik_ros.node.parameters import choice_check, range_check

CONFIG_DIR = Path(__file__).resolve().parents[1] / "config"


def test_defaults():
    cfg = load_node_config(None)
    assert cfg == NodeConfig()
    assert cfg.control_rate_hz == 500.0 and cfg.state_feedback == "commanded"
    assert cfg.outputs[0].type == "forward_command" and cfg.outputs[0].interface == "position"


@pytest.mark.parametrize("name", ["panda", "ur5", "baxter_dual"])
def test_packaged_configs(name):
    data = yaml.safe_load((CONFIG_DIR / f"{name}.yaml").read_text())
    assert "node" in data, f"{name}.yaml has no node: section"
    load_node_config(data["node"])


@pytest.mark.parametrize("mapping, words", [
    ({"control_rate": 100}, ["node.control_rate", "unknown key", "control_rate_hz"]),
    ({"control_rate_hz": 0}, ["node.control_rate_hz: expected a finite number in (0, 2000] [Hz], got 0"]),
    ({"control_rate_hz": 5000}, ["node.control_rate_hz: expected a finite number in (0, 2000] [Hz], got 5000"]),
    ({"control_rate_hz": "fast"}, ["node.control_rate_hz", "expected a number"]),
    ({"state_feedback": "both"}, ["node.state_feedback", "commanded, measured"]),
    ({"trigger": "joint_states"}, ["node.state_feedback: 'commanded' with trigger 'joint_states'; expected 'measured'"]),
    ({"outputs": []}, ["node.outputs", "at least one"]),
    ({"outputs": [{"type": "effort"}]}, ["node.outputs[0].type", "forward_command, joint_trajectory, joint_state"]),
    ({"outputs": [{"interface": "effort"}]}, ["node.outputs[0].interface", "position, velocity"]),
    ({"outputs": [{"type": "joint_trajectory", "interface": "velocity"}]}, ["node.outputs[0].interface"]),
    ({"outputs": [{"topic": "/a"}, {"topic": "/a"}]}, ["node.outputs[1].topic", "another output"]),
    ({"outputs": [{"topik": "/a"}]}, ["node.outputs[0].topik", "valid keys", "topic"]),
    ({"goal_smoothing": {"type": "spline"}}, ["node.goal_smoothing.type", "low_pass"]),
    ({"goal_smoothing": {"time_constant": -1.0}}, ["node.goal_smoothing.time_constant"]),
    ({"quaternion_tolerance": 2.0}, ["node.quaternion_tolerance: expected a finite number in (0, 0.5], got 2.0"]),
    ({"state_timeout": 61.0}, ["node.state_timeout: expected a finite number in (0, 60] [s], got 61.0"]),
    ({"streaming": {"command_timeout": float("inf")}}, ["node.streaming.command_timeout", "(0, 10] [s], got inf"]),
    ({"tf_timeout": -0.1}, ["node.tf_timeout: expected a finite number >= 0 [s], got -0.1"]),
    ({"loop_priority": 100}, ["node.loop_priority", "[0, 99]", "SCHED_FIFO"]),
    ({"loop_priority": -1}, ["node.loop_priority", "[0, 99]"]),
    ({"loop_priority": True}, ["node.loop_priority", "integer"]),
    ({"loop_priority": 50.5}, ["node.loop_priority"]),
    ({"other_threads_priority": 50}, ["node.other_threads_priority: 50 is not below loop_priority (50)",
                                      "null (one below it)"]),
    ({"loop_priority": 0, "other_threads_priority": 10}, ["node.other_threads_priority: 10", "loop_priority (0)"]),
    ({"other_threads_priority": 100}, ["node.other_threads_priority", "[0, 99]"]),
    ({"other_threads_priority": True}, ["node.other_threads_priority", "integer"]),
])
def test_bad_values_name_the_key_and_what_is_valid(mapping, words):
    with pytest.raises(InvalidInputError) as exc:
        load_node_config(mapping)
    for w in words:
        assert w in str(exc.value)


def test_range_check():
    """The runtime validators read the YAML keys' ranges (core/ranges.py): one number, or one or n of them."""
    gain = range_check("tasks[].task_gain")
    assert gain(0.5) == "" and gain(1.0) == "" and gain(1) == ""
    assert gain(0.0) == "expected a finite number in (0, 1], got 0.0"
    assert gain(1.5) and gain(float("nan")) and gain("x") and gain(True) and gain([0.5])
    cost = range_check("tasks[frame].position_cost", size=3)
    assert cost(1.0) == "" and cost([1.0, 2.0, 3.0]) == ""
    assert cost([1.0, 2.0]) == "expected one number or 3 values, got 2 values"
    assert cost([1.0, -1.0, 0.0]) == "expected a finite number >= 0 [cost/m] each, got [1.0, -1.0, 0.0]"
    assert cost([True, 1.0, 1.0]) and cost("high") and cost([])


def test_choice_check():
    check = choice_check(("a", "b"))
    assert check("a") == "" and "valid: a, b" in check("c")


@pytest.mark.parametrize("mapping, expected", [
    ({}, 49),  # null: one below the shipped loop_priority 50
    ({"loop_priority": 80}, 79),
    ({"loop_priority": 0}, 0),  # a normal-priority loop: the others normal too
    ({"other_threads_priority": 10}, 10),
    ({"other_threads_priority": 0}, 0),
])
def test_other_threads_priority_defaults_to_one_below_the_loop(mapping, expected):
    from roboplan_ik_ros.node.node_config import other_threads_priority

    assert other_threads_priority(load_node_config(mapping)) == expected


@pytest.mark.parametrize("name", ["panda", "ur5", "baxter_dual"])
def test_the_loop_keys_are_the_cores(name):
    """One parser: the node's loop settings are what the core's load_loop_config (ControlLoop.from_config)
    makes of the same section, so a core user and the node run the same loop."""
    from dataclasses import fields

    from roboplan_ik_ros.core.control.control_loop import LoopConfig
    from roboplan_ik_ros.core.control.loop_from_config import load_loop_config

    node = yaml.safe_load((CONFIG_DIR / f"{name}.yaml").read_text())["node"]
    cfg, core = load_node_config(node), load_loop_config(node)
    for f in fields(LoopConfig):
        assert getattr(cfg, f.name) == getattr(core, f.name), f"node.{f.name}"
