"""The reason a set of an undeclared parameter is refused (node/parameters.py)."""

from roboplan_ik_ros.node.parameters import unknown_parameter_reason

DECLARED = ["config_file", "control_rate_hz", "tasks.ee.task_gain", "tasks.ee.position_cost",
            "tasks.ee.orientation_cost", "tasks.posture.weights", "barriers.workspace.gain", "use_sim_time"]


def test_typo_names_the_closest_and_the_valid_fields_of_its_task():
    reason = unknown_parameter_reason("tasks.ee.positon_cost", DECLARED, configured=True)
    assert reason.startswith("tasks.ee.positon_cost: no such parameter; did you mean 'tasks.ee.position_cost'")
    assert reason.endswith("; valid under 'tasks.ee.': orientation_cost, position_cost, task_gain")


def test_unknown_task_lists_the_tasks_fields():
    reason = unknown_parameter_reason("tasks.elbow.task_gain", DECLARED, configured=True)
    assert "valid under 'tasks.': ee.orientation_cost, ee.position_cost, ee.task_gain, posture.weights" in reason


def test_no_shared_prefix_lists_every_name():
    reason = unknown_parameter_reason("gain", DECLARED, configured=True)
    assert reason.startswith("gain: no such parameter; valid names: barriers.workspace.gain, config_file")


def test_before_configure_says_when_runtime_parameters_exist():
    reason = unknown_parameter_reason("tasks.ee.task_gain", ["config_file", "use_sim_time"], configured=False)
    assert "exist once the node is configured" in reason
    assert "exist once" not in unknown_parameter_reason("tasks.ee.task_gain", DECLARED[:2], configured=True)


def test_unconfigured_node_says_the_runtime_parameters_come_with_configure(ros):
    """Over the parameter service of a node that is not configured yet."""
    from conftest import LifecycleClient, Spinner, unique_name
    from roboplan_ik_ros.node.ik_controller import IKControllerNode

    name = unique_name("ik")
    node = IKControllerNode(name)
    spinner = Spinner(node)
    client = LifecycleClient(name)
    try:
        bad = client.set_parameter("tasks.ee.task_gain", 0.5)
        assert not bad.successful and "exist once the node is configured" in bad.reason, bad.reason
        assert "config_file" in bad.reason  # the names valid now
        assert client.set_parameter("description_timeout", 5.0).successful
    finally:
        client.close()
        spinner.stop()
        node.destroy_node()


def test_choice_parameters_describe_every_valid_value():
    """``ros2 param describe`` of a choice parameter names every value its validator accepts (the
    goal_smoothing.type description once missed max_acceleration, panda.yaml's own choice)."""
    from roboplan_ik_ros.core.control.goal_followers import SMOOTHING
    from roboplan_ik_ros.core.control.loop_config import STALE_BEHAVIORS, STATE_FEEDBACK
    from roboplan_ik_ros.core.control.twist_follower import COMMAND_IN_TYPES
    from roboplan_ik_ros.node.node_config import load_node_config
    from roboplan_ik_ros.node.parameters import loop_specs

    specs = {s.name: s for s in loop_specs(load_node_config({}), lambda v: None, lambda v: None, lambda v: None)}
    for name, choices in (("goal_smoothing.type", SMOOTHING), ("state_feedback", STATE_FEEDBACK),
                          ("stale_behavior", STALE_BEHAVIORS), ("streaming.command_in_type", COMMAND_IN_TYPES)):
        for choice in choices:
            assert choice in specs[name].descriptor.description, (name, choice)
            assert specs[name].validate(choice) == "", (name, choice)
        assert specs[name].validate("nonsense") != ""


# ------------------------------------------------------------------------ one rule for YAML and runtime
# Values around every bound any runtime number parameter has or had (YAML or runtime), and bad kinds.
PROBES = [-1.0, 0.0, 1e-9, 0.5, 1.0, 1.5, 10.0, 10.5, 60.0, 61.0, 100.0, 101.0, 2000.0, 2001.0, 1e6, 2e6,
          float("inf"), float("nan"), True, "fast"]


def _yaml_reason(load, path: str, value) -> str:
    """The reason the YAML loader ``load(value)`` refuses the value at ``path``, "" if it accepts it."""
    from roboplan_ik_ros.core.errors import InvalidInputError

    try:
        load(value)
    except InvalidInputError as exc:
        text = str(exc).removeprefix("config.")  # the type checks name the key from the file's root
        assert text.startswith(f"{path}: "), text  # the key named first
        return text[len(path) + 2:]
    return ""


def _same_rule(spec, yaml: str, value) -> None:
    """The runtime validator refuses what the YAML refuses, with the same reason. Not a number at all
    (NaN, true, a string) meets the YAML's type check first ("expected a number"): refused by both."""
    if yaml.startswith("expected a number") and (value != value or isinstance(value, (bool, str))):
        assert spec.validate(value).startswith("expected a finite number"), (spec.name, value)
    else:
        assert spec.validate(value) == yaml, (spec.name, value)


def _nested(name: str, value) -> dict:
    *parents, leaf = name.split(".")
    mapping = {leaf: value}
    for parent in reversed(parents):
        mapping = {parent: mapping}
    return mapping


def test_every_loop_parameter_takes_what_its_yaml_key_takes_with_the_same_reason():
    """``state_timeout`` and ``node.state_timeout`` (and every other number parameter of the node
    section): each value accepted by both or refused by both, with the same text after the key."""
    from roboplan_ik_ros.node.node_config import load_node_config
    from roboplan_ik_ros.node.parameters import loop_specs

    specs = [s for s in loop_specs(load_node_config({}), lambda v: None, lambda v: None, lambda v: None)
             if isinstance(s.value, float)]
    assert {s.name for s in specs} >= {"control_rate_hz", "max_state_divergence", "state_timeout",
                                       "goal_smoothing.time_constant", "streaming.command_timeout"}
    for spec in specs:
        for value in PROBES:
            _same_rule(spec, _yaml_reason(lambda v: load_node_config(_nested(spec.name, v)), f"node.{spec.name}",
                                          value), value)


def test_every_task_and_barrier_parameter_takes_what_its_yaml_key_takes_with_the_same_reason():
    from roboplan_ik_ros.core.config import load_config
    from roboplan_ik_ros.node.parameters import barrier_specs, task_specs

    base = {"tasks": [{"name": "ee", "type": "frame", "frame": "f"}, {"name": "posture", "type": "configuration"}],
            "barriers": [{"name": "b", "type": "singularity", "frame": "f"}]}
    cfg = load_config(base)
    specs = [(s, "tasks", 0) for s in task_specs(cfg.tasks[0], lambda n: None, 7)]
    specs += [(s, "tasks", 1) for s in task_specs(cfg.tasks[1], lambda n: None, 7)]
    specs += [(s, "barriers", 0) for s in barrier_specs(cfg.barriers[0], lambda n: None)]
    assert len(specs) == 4 + 3 + 3
    for spec, section, k in specs:
        key = spec.name.rpartition(".")[2]

        def load(v, section=section, k=k, key=key):
            data = {s: [dict(item) for item in items] for s, items in base.items()}
            data[section][k][key] = v
            load_config(data)

        values = PROBES + ([[1.0, 2.0, 3.0], [1.0, -1.0, 0.0]] if spec.name.endswith("cost") else [])
        for value in values:
            _same_rule(spec, _yaml_reason(load, f"{section}[{k}].{key}", value), value)


def test_state_feedback_that_the_trigger_cannot_take_is_refused_as_in_the_yaml():
    """trigger joint_states steps on measurements: ``state_feedback: commanded`` is refused by the YAML
    loader and by the runtime parameter's validator with the same reason (no longer accepted and ignored)."""
    from roboplan_ik_ros.node.node_config import load_node_config
    from roboplan_ik_ros.node.parameters import loop_specs

    yaml = _yaml_reason(lambda v: load_node_config({"trigger": "joint_states", "state_feedback": v}),
                        "node.state_feedback", "commanded")
    assert yaml.startswith("'commanded' with trigger 'joint_states'; expected 'measured'"), yaml
    cfg = load_node_config({"trigger": "joint_states", "state_feedback": "measured"})
    spec = next(s for s in loop_specs(cfg, lambda v: None, lambda v: None, lambda v: None) if s.name == "state_feedback")
    assert spec.validate("commanded") == yaml
    assert spec.validate("measured") == ""
    timer = next(s for s in loop_specs(load_node_config({}), lambda v: None, lambda v: None, lambda v: None)
                 if s.name == "state_feedback")
    assert timer.validate("commanded") == "" and timer.validate("measured") == ""
