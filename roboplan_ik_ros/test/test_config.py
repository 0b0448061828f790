"""YAML configuration: the shipped configs build, and every kind of bad input names its key."""

from pathlib import Path

import numpy as np
import pytest

from models import robot, scene
from roboplan_ik_ros.core import InvalidInputError
from roboplan_ik_ros.core.config import load_config, parse_config
from roboplan_ik_ros.core.model.scene_config import scene_from_config
from roboplan_ik_ros.core.oink.controller import OinkController

CONFIG_DIR = Path(__file__).resolve().parents[1] / "config"


@pytest.mark.parametrize("name, robot_name", [("panda", "panda"), ("ur5", "ur5"), ("baxter_dual", "baxter")])
def test_shipped_config_builds_and_holds_still(name, robot_name):
    cfg = load_config(CONFIG_DIR / f"{name}.yaml")
    r = robot(robot_name)
    s = scene_from_config(r.urdf_xml, r.srdf_xml, cfg.robot, r.package_paths)
    q = s.named_configuration("default") if s.srdf.group_states else s.neutral()
    if name == "ur5":
        q[1], q[2] = -1.0, 1.2  # away from the stretched-out singular neutral pose
    ctl = OinkController(s, cfg, dt=0.002, q=q)
    assert set(ctl.tasks) == {t.name for t in cfg.tasks}
    assert len(ctl.limits) == len(cfg.limits) and len(ctl.barriers) == len(cfg.barriers)
    for _ in range(10):
        out = ctl.step(q)
        assert out.result.ok, out.result.status
        q = out.q_next
    assert np.abs(out.dq).max() < 1e-6  # targets start at the current pose: the robot holds still


BASE = "tasks: [{name: ee, type: frame, frame: panda_hand_tcp}]\n"
#: collision pairs of the Panda (SRDF-disabled ones removed): n_collision_pairs ranges up to it
PANDA_PAIRS = len(scene("panda").collision_model.collisionPairs)


@pytest.mark.parametrize(
    "text, message",
    [
        ("tasks: []", "tasks: expected at least one task"),
        ("tasks: [{name: ee, type: frame, frame: panda_hand_tcp, positon_cost: 1}]",
         r"config.tasks\[0\].positon_cost: unknown key; valid keys: name, type, priority"),
        ("tasks: [{name: ee, type: frme}]", r"tasks\[0\].type: unknown type 'frme'; valid: configuration, frame"),
        ("tasks: [{name: ee, type: frame}]", r"tasks\[0\].frame: required for a frame task"),
        ("tasks: [{type: frame, frame: x}]", r"config.tasks\[0\]: missing required key\(s\); required: name, type"),
        (BASE + "solver: {regularization: abc}", "config.solver.regularization: expected a number, got 'abc'"),
        (BASE + "solver: {enforce_barriers: 1}", "config.solver.enforce_barriers: expected true or false"),
        (BASE + "limits: [{type: jerk}]", r"limits\[0\].type: unknown type 'jerk'; valid: acceleration, position, velocity"),
        (BASE + "limits: [{type: velocity, a_max: 3.0}]",
         r"limits\[0\].a_max: does not apply to type 'velocity' \(it is a key of type 'acceleration'\)"),
        (BASE + "limits: [{type: acceleration}, {type: acceleration}]", r"limits\[1\]: a second acceleration limit"),
        (BASE + "limits: [{type: position, gain: 2.0}]", r"config.limits\[0\].gain: expected a finite number in \(0, 1\], got 2.0"),
        (BASE + "limits: [{type: acceleration}, {type: position, gain: 0.5}]",
         r"limits: a position limit gain of 0.5 with an acceleration limit; expected 1.0"),
        (BASE + "barriers: [{name: b, type: wall}]", r"barriers\[0\].type: unknown type 'wall'"),
        (BASE + "barriers: [{name: s, type: singularity, frame: panda_hand_tcp, d_min: 0.1}]",
         r"barriers\[0\].d_min: does not apply to type 'singularity' \(it is a key of type 'collision'\)"),
        (BASE + "robots: {}", "config.robots: unknown key; valid keys: robot, solver, tasks"),
        ("tasks: [{name: a, type: frame, frame: f}, {name: a, type: frame, frame: f}]", "duplicate name 'a'"),
        ("tasks: [", "config: invalid YAML"),
        ("- 1\n- 2", "config: expected a mapping"),
        ("tasks: [{name: ee, type: frame, frame: f, position_cost: high}]",
         r"config.tasks\[0\].position_cost: expected a number or a list of numbers, got 'high'"),
    ],
)
def test_bad_config_names_the_key(text, message):
    with pytest.raises(InvalidInputError, match=message):
        parse_config(text)


@pytest.mark.parametrize(
    "text, message",
    [
        ("tasks: [{name: ee, type: frame, frame: nowhere}]", r"tasks\[0\] \(ee\): unknown frame 'nowhere'; valid:"),
        (BASE + "barriers: [{name: sc, type: self_collision, n_collision_pairs: 99}]",
         rf"barriers\[0\] \(sc\): n_collision_pairs: expected an integer in \[1, {PANDA_PAIRS}\]"),
        (BASE + "barriers: [{name: box, type: position, frame: panda_hand_tcp, p_min: [0, 0, 0], p_max: [1, 1]}]",
         r"barriers\[0\] \(box\): box.p_max: expected 3 values"),
        ("tasks: [{name: p, type: configuration, target: [0, 0]}]", r"tasks\[0\] \(p\): target: expected 9 joint values"),
        ("tasks: [{name: p, type: configuration, target: home}]", r"unknown SRDF group_state 'home'; valid: 'default'"),
        ("robot: {group: legs}\n" + BASE, "unknown joint group 'legs'; valid: '', 'arm'"),
        (BASE + "barriers: [{name: s, type: singularity, frame: nowhere}]", r"barriers\[0\] \(s\): unknown frame 'nowhere'"),
        (BASE + "barriers: [{name: s, type: singularity, frame: panda_hand_tcp, sigma_min: -1}]",
         r"barriers\[0\] \(s\): s.sigma_min: expected"),
    ],
)
def test_bad_values_fail_when_building_with_the_key_named(text, message):
    cfg = parse_config(text)
    r = robot("panda")
    with pytest.raises(InvalidInputError, match=message):
        s = scene_from_config(r.urdf_xml, r.srdf_xml, cfg.robot, r.package_paths)
        OinkController(s, cfg, 0.01, s.named_configuration("default"))


@pytest.mark.parametrize("content, where", [
    ("robot: {group: arm}\napi_token: abc123: secret-value-42\npassword = hunter2\n", "at line 2, column 18"),
    ("robot:\n\tgroup: arm  # private-note-1\n", "at line 2, column 1"),
    ("tasks: [{name: ee, type: frame, frame: *private_alias_9}]\n", "at line 1, column 40"),
    ("x: !!python/object:private.module.Thing {}\n", "at line 1, column 4"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n"
     "-----END OPENSSH PRIVATE KEY-----\n", "got a scalar"),  # YAML after all: one plain scalar
    ("- root:x:0:0:root:/root:/bin/bash\n- daemon:x:1:1::/usr/sbin:/usr/sbin/nologin\n", "got a list"),
])
def test_a_config_file_that_is_not_yaml_is_refused_without_quoting_it(tmp_path, content, where):
    """The error reaches the log and /rosout: it says where and what is wrong, never a line of the file
    (yaml's own message quotes the line with a caret; a scalar or list used to be echoed whole)."""
    path = tmp_path / "secrets.yaml"
    path.write_text(content)
    with pytest.raises(InvalidInputError) as exc:
        load_config(path)
    message = str(exc.value)
    assert where in message, message
    for line in content.splitlines():
        assert line.strip() not in message, (line, message)
    for secret in ("abc123", "secret-value-42", "hunter2", "private", "b3BlbnNzaC1r", "root:x"):
        assert secret not in message, message


def test_a_binary_config_file_is_refused_without_quoting_it(tmp_path):
    path = tmp_path / "blob.yaml"
    path.write_bytes(b"robot: {}\n\xff\xfe secret-bytes \x00\x01")
    with pytest.raises(InvalidInputError) as exc:
        load_config(path)
    assert "not UTF-8 text (byte 10)" in str(exc.value) and "secret" not in str(exc.value)


def test_a_task_or_barrier_range_is_refused_when_the_yaml_is_read():
    """tasks[].* and barriers[].* that are runtime parameters too: checked at load against their ranges
    (declared by each kind, core/oink/kind.py), naming the key, before any robot model is built."""
    with pytest.raises(InvalidInputError, match=r"^config.tasks\[0\].task_gain: expected a finite number in \(0, 1\], got 2.0$"):
        parse_config("tasks: [{name: ee, type: frame, frame: f, task_gain: 2.0}]")
    with pytest.raises(InvalidInputError, match=r"^config.tasks\[0\].position_cost: expected one number or 3 values, got 2"):
        parse_config("tasks: [{name: ee, type: frame, frame: f, position_cost: [1, 1]}]")
    with pytest.raises(InvalidInputError, match=r"^config.barriers\[0\].safety_margin: expected a finite number in \[0, 10\] "
                                                 r"\[m\], got 11.0$"):
        parse_config(BASE + "barriers: [{name: b, type: singularity, frame: f, safety_margin: 11.0}]")


@pytest.mark.parametrize("section, message", [
    ("solver: {regularization: 0.0}", r"^solver.regularization: expected a finite number > 0, got 0.0$"),
    ("solver: {max_iter: 0}", r"^solver.max_iter: expected an integer >= 1, got 0$"),
    ("solver: {qp_solver: quadprog}", r"^solver.qp_solver: unknown value 'quadprog'; valid: daqp, osqp$"),
    ("robot: {velocity_limits: {panda_joint1: 1.0, panda_joint2: -0.5}}",
     r"^robot.velocity_limits.panda_joint2: expected a finite number > 0 \[rad/s or m/s\], got -0.5$"),
    ("perception: {on_stale: forget}", r"^perception.on_stale: unknown value 'forget'; valid: keep, clear$"),
    ("perception: {max_points: 0}", r"^perception.max_points: expected an integer >= 1, got 0$"),
])
def test_a_solver_robot_or_perception_key_is_refused_when_the_yaml_is_read_naming_it(section, message):
    """The sections' declared ranges and choices (core/oink/solver_config.py, core/model/robot_config.py,
    core/model/perception_config.py) are checked at load, before any robot model or solver is built: the key
    path (a mapping key's entry too), what was wrong, what is expected."""
    with pytest.raises(InvalidInputError, match=message):
        parse_config(BASE + section)


def test_a_count_built_in_code_as_a_whole_float_is_refused_like_the_yamls():
    """A config built in code is checked against the same declarations: 2.0 is not a count (the YAML's
    ``max_iter: 2.0`` is refused for its type; a dataclass takes any value)."""
    from roboplan_ik_ros.core.config import IKConfig, PerceptionConfig, SolverConfig

    task = {"name": "ee", "type": "frame", "frame": "f"}
    with pytest.raises(InvalidInputError, match=r"^perception.min_points_per_voxel: expected an integer >= 1, got 2.0$"):
        IKConfig(tasks=[task], perception=PerceptionConfig(min_points_per_voxel=2.0))
    with pytest.raises(InvalidInputError, match=r"^solver.max_iter: expected an integer >= 1, got 100.0$"):
        IKConfig(tasks=[task], solver=SolverConfig(max_iter=100.0))
    assert IKConfig(tasks=[task], solver=SolverConfig(max_iter=100)).solver.max_iter == 100


def test_missing_file_is_reported():
    with pytest.raises(InvalidInputError, match="config_file: cannot read '/nonexistent.yaml'"):
        load_config("/nonexistent.yaml")


def test_simple_ik_method_and_weights_from_yaml():
    cfg = parse_config(BASE + "simple_ik: {method: lm_chan, lm_gain: 0.5, error_weights: [1, 1, 1, 0, 0, 0]}")
    assert cfg.simple_ik.method == "lm_chan" and cfg.simple_ik.lm_gain == 0.5
    assert cfg.simple_ik.error_weights == [1.0, 1.0, 1.0, 0.0, 0.0, 0.0]
    assert parse_config(BASE).simple_ik.method == "dls"  # the default
    cfg = parse_config(BASE + "simple_ik: {joint_limit_gain: 0.5, joint_limit_ps: 0.01, joint_limit_pi: 0.2, "
                              "manipulability_gain: 10}")
    ik = cfg.simple_ik
    assert (ik.joint_limit_gain, ik.joint_limit_ps, ik.joint_limit_pi, ik.manipulability_gain) == (0.5, 0.01, 0.2, 10.0)
    ik = parse_config(BASE + "simple_ik: {bias_configuration: [0, 0, 0, -2, 0, 1.5, 0.8], bias_gain: 0.5, "
                             "max_deviation: 0.2}").simple_ik
    assert ik.bias_configuration == [0.0, 0.0, 0.0, -2.0, 0.0, 1.5, 0.8] and ik.bias_gain == 0.5
    assert ik.max_deviation == 0.2


@pytest.mark.parametrize("text, message", [
    ("simple_ik: {method: bfgs}", "config.simple_ik.method: expected one of dls, lm_wampler, lm_chan"),
    ("simple_ik: {lm_gain: -1}", "config.simple_ik.lm_gain"),
    ("simple_ik: {error_weights: [1, 1, 1]}", "config.simple_ik.error_weights: expected 6 finite numbers >= 0"),
    ("simple_ik: {error_weights: [0, 0, 0, 0, 0, 0]}", "config.simple_ik.error_weights: expected 6 finite numbers"),
    ("simple_ik: {error_weights: one}", "config.simple_ik.error_weights: expected a list"),
    ("simple_ik: {joint_limit_ps: 0.4}", "config.simple_ik.joint_limit_ps: expected < joint_limit_pi"),
    ("simple_ik: {manipulability_gain: -1}", "config.simple_ik.manipulability_gain"),
    ("simple_ik: {max_deviation: 0}", "config.simple_ik.max_deviation"),
    ("simple_ik: {bias_gain: 1.0}", "config.simple_ik.bias_gain: needs bias_configuration"),
])
def test_bad_simple_ik_method_keys_are_named(text, message):
    with pytest.raises(InvalidInputError, match=message):
        parse_config(BASE + text)


@pytest.mark.parametrize("text, needed", [
    (BASE, False),
    ("robot: {group: arm}\n" + BASE, True),  # a joint group
    (BASE + "simple_ik: {group_name: arm}", True),  # SimpleIK's own group
    (BASE.replace("]", ", {name: p, type: configuration, target: current}]"), False),
    (BASE.replace("]", ", {name: p, type: configuration, target: default}]"), True),  # a group_state
    (BASE.replace("]", ", {name: p, type: configuration, target: [0, 0, 0, 0, 0, 0, 0]}]"), False),
    (BASE.replace("]", ", {name: j, type: joint, joints: [panda_joint1], target: current}]"), False),
    (BASE.replace("]", ", {name: j, type: joint, joints: [panda_joint1], target: ready}]"), True),  # any kind's
])
def test_the_config_says_whether_it_needs_the_srdf(text, needed):
    """The node waits for the semantic description (and fails without one) exactly when the config names what
    only the SRDF defines: a group, or a group_state as a task's target, a joint task's as a configuration's."""
    assert parse_config(text).needs_srdf() is needed
