"""A ControlLoop from a YAML config takes everything it says (core/control/loop_from_config.py): the robot
section's limits files and the loop keys of ``node:``; settings that leave a YAML loop key unapplied are said."""

import dataclasses
import warnings
from pathlib import Path

import pytest
import yaml

from roboplan_ik_ros.core.config import load_config
from roboplan_ik_ros.core.control.control_loop import ControlLoop, LoopConfig, UnappliedConfigWarning
from roboplan_ik_ros.core.control.goal_followers import GoalSmoothingConfig
from roboplan_ik_ros.core.control.loop_from_config import (LOOP_KEYS, load_loop_config, split_node_section,
                                                           unapplied_loop_keys)
from roboplan_ik_ros.core.errors import InvalidInputError
from roboplan_ik_ros.core.model.robots import load_example_robot

PANDA_YAML = Path(__file__).resolve().parents[1] / "config" / "panda.yaml"
PANDA_NODE = yaml.safe_load(PANDA_YAML.read_text())["node"]


def _holds(settings, mapping: dict, path: str = "node") -> list[str]:
    """The key paths of ``mapping`` whose value ``settings`` does not hold."""
    wrong = []
    for key, value in mapping.items():
        if isinstance(value, dict):
            wrong += _holds(getattr(settings, key), value, f"{path}.{key}")
        elif getattr(settings, key) != value:
            wrong.append(f"{path}.{key}")
    return wrong


@pytest.fixture(scope="module")
def panda_loop():
    robot = load_example_robot("panda")
    return ControlLoop.from_config(str(PANDA_YAML), robot.urdf_xml, robot.srdf_xml, robot.package_paths)


def test_every_loop_key_of_the_yaml_is_held():
    loop_keys, _ = split_node_section(PANDA_NODE)
    assert "goal_smoothing" in loop_keys and "streaming" in loop_keys, "panda.yaml sets the keys this test is about"
    assert _holds(load_loop_config(PANDA_YAML), loop_keys) == []
    assert load_loop_config(load_config(PANDA_YAML)) == load_loop_config(PANDA_NODE) == load_loop_config(PANDA_YAML)


def test_the_ros_keys_are_left_to_the_node():
    loop_keys, ros_keys = split_node_section(PANDA_NODE)
    assert set(loop_keys) <= set(LOOP_KEYS) and not set(ros_keys) & set(LOOP_KEYS)
    assert {"outputs", "trigger"} <= set(ros_keys), "panda.yaml's ROS keys"
    assert split_node_section(None) == ({}, {})
    with pytest.raises(InvalidInputError, match=r"^node: expected a mapping"):
        split_node_section([1])


@pytest.mark.parametrize("mapping, overrides, words", [
    ({"goal_smoothing": {"type": "spline"}}, None, ["node.goal_smoothing.type", "max_acceleration"]),
    ({"streaming": {"command_timeout": -1.0}}, None, ["node.streaming.command_timeout"]),
    ({"control_rate_hz": "fast"}, None, ["node.control_rate_hz", "expected a number"]),
    ({}, {"control_rate": 100.0}, ["overrides: control_rate", "not a control-loop key", "control_rate_hz"]),
    ({}, {"control_rate_hz": 0.0}, ["node.control_rate_hz", "(0, 2000]"]),
])
def test_errors_name_the_key(mapping, overrides, words):
    with pytest.raises(InvalidInputError) as exc:
        load_loop_config(mapping, overrides=overrides)
    assert all(w in str(exc.value) for w in words), str(exc.value)


def test_overrides_replace_only_the_keys_they_name():
    yaml_settings = load_loop_config(PANDA_NODE)
    assert yaml_settings.goal_smoothing.type != "none", "panda.yaml smooths its goals"
    settings = load_loop_config(PANDA_NODE, overrides={"goal_smoothing": {"type": "none"}, "control_rate_hz": 250})
    assert settings.goal_smoothing.type == "none" and settings.control_rate_hz == 250.0
    assert dataclasses.replace(settings.goal_smoothing, type=yaml_settings.goal_smoothing.type) == \
        yaml_settings.goal_smoothing
    assert settings.streaming == yaml_settings.streaming


def test_from_config_builds_the_loop_the_yaml_describes(panda_loop):
    """The scene has the limits file's bounds (the acceleration limit needs them: a bare Scene refuses it),
    the settings are the YAML's, and the ROS-only keys are named in the notes."""
    assert panda_loop.settings == load_loop_config(PANDA_YAML)
    assert panda_loop.guard is not None and panda_loop._accel is not None, "panda.yaml has an acceleration limit"
    _, ros_keys = split_node_section(PANDA_NODE)
    note = next(n for n in panda_loop.notes if n.startswith("node: "))
    assert all(k in note for k in ros_keys) and "not used by the core ControlLoop" in note


def test_settings_that_drop_a_yaml_key_are_said(panda_loop):
    config = load_config(PANDA_YAML)
    default = LoopConfig(goal_smoothing=GoalSmoothingConfig(type="none"))  # settings made without the YAML's
    assert default.goal_smoothing.type != config.node["goal_smoothing"]["type"], "the key this test drops"
    assert "node.goal_smoothing.type" in unapplied_loop_keys(config.node, default)
    with pytest.warns(UnappliedConfigWarning, match=r"node\.goal_smoothing\.type: set in the config's node"):
        loop = ControlLoop(panda_loop.scene, config, default)
    assert any("node.goal_smoothing.type" in n and "not applied" in n for n in loop.notes)
    with warnings.catch_warnings():  # the YAML's own settings: nothing to say
        warnings.simplefilter("error", UnappliedConfigWarning)
        loop = ControlLoop(panda_loop.scene, config, load_loop_config(config))
    assert not any("not applied" in n for n in loop.notes)
    assert unapplied_loop_keys({}, default) == [] and unapplied_loop_keys(None, default) == []
