"""core/control behaviour that mutation testing found unchecked (docs/mutation.md, core/control).

Seed 6: the note of unapplied node: keys says why (the settings given differ) and names the two ways that apply the
YAML's (each leaves no note); an unknown override's error lists every loop key; check_singularity_thresholds names
node.streaming's key by default. Seed 9: CommandGuard refuses a bad period naming dt, and keeps its own.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest
import yaml

from models import robot, scene
from roboplan_ik_ros.core.config import load_config
from roboplan_ik_ros.core.control.command_guard import CommandGuard
from roboplan_ik_ros.core.control.control_loop import ControlLoop
from roboplan_ik_ros.core.control.goal_followers import GoalSmoothingConfig
from roboplan_ik_ros.core.control.loop_config import (LOOP_KEYS, LoopConfig, UnappliedConfigWarning, load_loop_config,
                                                      split_node_section, unapplied_loop_keys)
from roboplan_ik_ros.core.control.loop_from_config import control_loop_from_config
from roboplan_ik_ros.core.control.target_shaper import TargetShaper
from roboplan_ik_ros.core.control.twist_follower import (StreamingConfig, check_singularity_thresholds,
                                                         check_streaming_config)
from roboplan_ik_ros.core.errors import InvalidInputError

DT = 0.002  # [s]
PANDA_YAML = Path(__file__).resolve().parents[1] / "config" / "panda.yaml"


@pytest.mark.parametrize("v_max", [np.inf, 0.0, -1.0, [1.0, np.inf]], ids=["inf", "zero", "negative", "one-inf"])
def test_target_shaper_needs_a_finite_positive_speed_bound(v_max):
    """v_max must be finite and > 0 on every coordinate (an unbounded speed has no braking distance);
    a mutant that accepted either alone survived the shaper's tests."""
    with pytest.raises(ValueError, match="v_max: expected finite values > 0"):
        TargetShaper(2, DT, v_max, 10.0, 100.0)


def test_control_loop_from_config_builds_the_yamls_loop_with_the_given_srdf_overrides_and_log():
    """control_loop_from_config (loop_from_config.py): the loop ControlLoop.from_config builds, from the arguments it
    is given: the SRDF's group_state "default" (the posture task's target) is the scene's, the overrides set loop
    keys (control_rate_hz 250 Hz; panda.yaml's 500 Hz taken out, so nothing of the YAML is left unapplied), and the
    loop logs through ``log``."""
    r = robot("panda")
    data = yaml.safe_load(PANDA_YAML.read_text())
    del data["node"]["control_rate_hz"]
    messages: list[tuple[str, str]] = []
    loop = control_loop_from_config(data, r.urdf_xml, r.srdf_xml, r.package_paths,
                                    log=lambda level, text: messages.append((level, text)),
                                    overrides={"control_rate_hz": 250.0})
    q_default = scene("panda").named_configuration("default")  # the same URDF and SRDF
    np.testing.assert_array_equal(loop.scene.named_configuration("default"), q_default)
    assert loop.dt == pytest.approx(1.0 / 250.0)
    loop.state.incoming[:] = q_default
    assert loop.state.accept(0.0) == "" and loop.activate(0.0) == ""
    assert any(level == "info" and "command stream (re)started" in text for level, text in messages), messages


def test_overrides_of_some_keys_of_a_section_keep_the_yamls_other_keys_of_it():
    """load_loop_config(overrides=): a nested mapping replaces only the keys it names (its docstring): overriding
    streaming.speed_override keeps every other streaming key panda.yaml sets, max_joint_speed set here to twice its
    default included (panda.yaml's other streaming values are the defaults)."""
    data = yaml.safe_load(PANDA_YAML.read_text())
    streaming = data["node"]["streaming"]
    streaming["max_joint_speed"] = 2.0 * StreamingConfig().max_joint_speed
    override = 0.5 * streaming["speed_override"]
    settings = load_loop_config(load_config(data), overrides={"streaming": {"speed_override": override}})
    assert settings.streaming.speed_override == override
    defaults = StreamingConfig()
    others = {key: value for key, value in streaming.items() if key != "speed_override"}
    assert any(getattr(defaults, key) != value for key, value in others.items())  # the premise: not the defaults
    for key, value in others.items():
        assert getattr(settings.streaming, key) == value, key


# ----------------------------------------------------------------------------- seed 4 (docs/mutation.md)
@pytest.mark.parametrize("bad", [0.0, -1.0, np.inf, np.nan], ids=["zero", "negative", "inf", "nan"])
def test_the_command_guard_refuses_a_velocity_limit_of_zero_or_one_not_finite_and_positive(bad):
    """CommandGuard's v_max: finite and > 0 on every joint of the group (a zero limit would freeze the joint, every
    step of it counted as a cut). The edge: 0 exactly is refused, naming the joints; the model's own limits are
    accepted (the premise)."""
    s = scene("panda")
    g = s.group("arm")
    v_max = s.v_max[g.v_indices].copy()
    CommandGuard(s, g, v_max, DT)  # the premise: the model's limits are accepted
    v_max[3] = bad
    with pytest.raises(InvalidInputError, match=r"finite velocity limits > 0 for \['panda_joint1'"):
        CommandGuard(s, g, v_max, DT)


# ----------------------------------------------------------------------------- seed 6 (docs/mutation.md)
def test_the_unapplied_keys_note_says_the_given_settings_differ_and_names_the_ways_that_apply_the_yaml():
    """A ControlLoop given settings that drop a key of its config's node: section says so in one sentence (its note and
    its warning alike): the keys, that they are not applied because the LoopConfig given differs, and the two ways
    that apply the YAML's: ControlLoop.from_config, or load_loop_config(config) as the settings. Each of those ways
    leaves nothing unapplied (no such note)."""
    r = robot("panda")
    config = load_config(PANDA_YAML)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnappliedConfigWarning)
        applied = ControlLoop.from_config(str(PANDA_YAML), r.urdf_xml, r.srdf_xml, r.package_paths)
        assert not any("not applied" in n for n in applied.notes)
        ControlLoop(applied.scene, config, load_loop_config(config))
    given = LoopConfig(goal_smoothing=GoalSmoothingConfig(type="none"))
    keys = unapplied_loop_keys(config.node, given)
    assert keys, "the premise: these settings drop a key panda.yaml sets"
    with pytest.warns(UnappliedConfigWarning) as caught:
        loop = ControlLoop(applied.scene, config, given)
    (note,) = [n for n in loop.notes if "not applied" in n]
    assert [str(w.message) for w in caught] == [note]
    sentence = re.fullmatch(r"(.+): set in the config's node: section, not applied \((.+)\); (.+)", note)
    assert sentence is not None, note
    named, why, remedy = sentence.groups()
    assert named == ", ".join(keys)
    assert why == "the LoopConfig given differs"
    assert remedy == "ControlLoop.from_config or load_loop_config(config) applies the YAML's"


def test_an_unknown_override_is_refused_with_the_list_of_every_loop_key():
    """load_loop_config(overrides=) refuses a key that is not the loop's, naming it and listing the valid keys: the
    list after "valid keys: " is exactly LoopConfig's keys, in their order, comma-separated."""
    with pytest.raises(InvalidInputError) as exc:
        load_loop_config(None, overrides={"control_rate": 100.0, "rate": 1.0})
    text = str(exc.value)
    head, listed = text.split("; valid keys: ")
    assert head == "overrides: control_rate, rate: not a control-loop key"
    assert listed.split(", ") == list(LOOP_KEYS)


def test_the_singularity_threshold_check_names_the_node_streaming_key_unless_given_another_path():
    """check_singularity_thresholds (1 <= lower < hard) names the key it refuses under node.streaming, where the YAML
    sets it, when no path is given (as check_streaming_config's default), and under the path given otherwise."""
    swapped = StreamingConfig(lower_singularity_threshold=30.0, hard_stop_singularity_threshold=17.0)
    with pytest.raises(InvalidInputError, match=r"^node\.streaming\.hard_stop_singularity_threshold: expected 1 <= "):
        check_singularity_thresholds(swapped)
    with pytest.raises(InvalidInputError, match=r"^arm_b\.streaming\.hard_stop_singularity_threshold: "):
        check_singularity_thresholds(swapped, "arm_b.streaming")
    check_singularity_thresholds(StreamingConfig())  # the premise: the defaults keep the rule


# ----------------------------------------------------------------------------- seed 8 (docs/mutation.md)
def test_the_command_guard_keeps_a_joint_whose_requested_position_is_nan_at_its_last_command():
    """CommandGuard.apply: a NaN in q_next for a joint of the group is a cut (counted) to no step of that joint: it
    stays exactly at the last command, while the other joints take their (small) steps."""
    s = scene("panda")
    g = s.group("arm")
    guard = CommandGuard(s, g, s.v_max[g.v_indices], DT)
    last = guard.reseed(s.named_configuration("default")).copy()
    q_next = last.copy()
    q_next[g.q_indices] += 0.1 * s.v_max[g.v_indices] * DT  # within v_max dt: taken as it is
    q_next[g.q_indices[3]] = np.nan
    command = guard.apply(q_next)
    assert guard.cuts == 1
    assert command[g.q_indices[3]] == last[g.q_indices[3]]
    others = np.delete(g.q_indices, 3)
    np.testing.assert_allclose(command[others], q_next[others], rtol=0, atol=1e-15)


def test_a_loop_from_a_config_notes_the_ros_node_keys_of_its_node_section_as_not_used():
    """ControlLoop.from_config: the node: section's keys that are not the loop's (the ROS node's) are named in one
    note, which says node/node_config.py checks them and the core ControlLoop does not use them."""
    r = robot("panda")
    _, ros_keys = split_node_section(load_config(PANDA_YAML).node)
    assert ros_keys, "the premise: panda.yaml sets keys of the ROS node"
    loop = ControlLoop.from_config(str(PANDA_YAML), r.urdf_xml, r.srdf_xml, r.package_paths)
    (note,) = [n for n in loop.notes if "keys of the ROS node" in n]
    assert note == (f"node: {', '.join(ros_keys)}: keys of the ROS node (node/node_config.py checks them), not used "
                    "by the core ControlLoop")


def test_the_streaming_check_names_the_path_given_for_a_declared_range_and_for_the_threshold_order():
    """check_streaming_config(cfg, path): both of its checks name the key under ``path`` (a second arm's section,
    say), the declared range of one key and the order of the singularity thresholds alike; the default path is
    node.streaming."""
    swapped = StreamingConfig(lower_singularity_threshold=30.0, hard_stop_singularity_threshold=17.0)
    with pytest.raises(InvalidInputError, match=r"^arm_b\.streaming\.hard_stop_singularity_threshold: expected 1 <= "):
        check_streaming_config(swapped, "arm_b.streaming")
    with pytest.raises(InvalidInputError, match=r"^node\.streaming\.hard_stop_singularity_threshold: "):
        check_streaming_config(swapped)
    with pytest.raises(InvalidInputError, match=r"^arm_b\.streaming\.max_linear_speed: "):
        check_streaming_config(StreamingConfig(max_linear_speed=-1.0), "arm_b.streaming")
    check_streaming_config(StreamingConfig(), "arm_b.streaming")  # the premise: the defaults pass


# ----------------------------------------------------------------------------- seed 9 (docs/mutation.md)
@pytest.mark.parametrize("bad", [0.0, -DT, np.nan, np.inf], ids=["zero", "negative", "nan", "inf"])
def test_the_command_guard_refuses_a_period_not_finite_and_positive_naming_dt_and_keeps_its_own(bad):
    """CommandGuard's dt [s], at construction and in set_dt (a rate change): a period that is not finite and > 0 is
    refused with an error that names ``dt``; a refused set_dt leaves the guard on its period (its next command is an
    untouched guard's)."""
    s = scene("panda")
    g = s.group("arm")
    v_max = s.v_max[g.v_indices]
    with pytest.raises(InvalidInputError, match=rf"^dt: expected a finite number > 0, got {bad}$"):
        CommandGuard(s, g, v_max, bad)
    guard, untouched = CommandGuard(s, g, v_max, DT), CommandGuard(s, g, v_max, DT)
    with pytest.raises(InvalidInputError, match=rf"^dt: expected a finite number > 0, got {bad}$"):
        guard.set_dt(bad)
    assert guard.dt == DT
    q0 = s.named_configuration("default")
    q_next = q0.copy()
    q_next[g.q_indices] += 10.0 * v_max * DT  # beyond v_max dt on every joint: cut to the period's step
    commands = []
    for gd in (guard, untouched):
        gd.reseed(q0)
        commands.append(gd.apply(q_next).copy())
    np.testing.assert_array_equal(commands[0], commands[1])
    assert guard.cuts == untouched.cuts == 1
