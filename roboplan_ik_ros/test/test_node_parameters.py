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
    from roboplan_ik_ros.core.control.control_loop import SMOOTHING, STALE_BEHAVIORS, STATE_FEEDBACK
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
