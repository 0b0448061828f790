"""The followers the control loop gives each task kind's goals (core/control/follower_kinds.py), chosen by the
kind's ``Task.follower`` hook, not by its class (issue 33).

- Every kind of the package that takes goals gets the inputs its follower accepts (the table of
  follower_kinds.py); a kind without goals (damping) gets none.
- A follower name the table does not know, and a follower taking targets from a kind that names no goal form,
  are refused with the task's name.
- A kind written outside the package (test/frame_point_kind.py, derived from the Task base alone) that names the
  known follower "point" is given that follower: its goal arrives on ``set_task_target``, shaped along a straight
  line at its max_target_speed, and the frame reaches it.
"""

from __future__ import annotations

import numpy as np
import pytest

from frame_point_kind import frame_point_kind  # noqa: F401 - a fixture
from roboplan_ik_ros.core.control.follower_kinds import JOINT_JOG, JOINTS, POSE, TARGET, TWIST, goal_inputs
from roboplan_ik_ros.core.oink.tasks.task import Task
from test_control_loop import TIP, SimRobot, panda  # noqa: F401 - panda is a fixture
from test_mutation_gaps_control_loop import loop_of, panda_yaml

EVERY_GOAL_KIND = [
    dict(name="ee", type="frame", frame=TIP, priority=1),
    dict(name="posture", type="configuration", target="default", weights=0.05, priority=3),
    dict(name="j4", type="joint", joints=["panda_joint4"], priority=2),
    dict(name="look", type="look_at", frame=TIP, priority=3),
    dict(name="com", type="com", priority=3),
    dict(name="rel", type="relative_frame", frame="panda_link4", reference="panda_link1", priority=3),
    dict(name="jv", type="joint_velocity", priority=3),
    dict(name="damp", type="damping", priority=3),
]


def loop_with(panda, tasks: list[dict]):
    """panda.yaml (its limits and node: keys) with these tasks and no barriers."""
    data = panda_yaml()
    data["barriers"], data["tasks"] = [], tasks
    return loop_of(panda, data)


def test_every_kind_that_takes_goals_accepts_the_inputs_of_the_follower_it_names(panda):
    loop = loop_with(panda, EVERY_GOAL_KIND)
    assert dict(loop.goal_inputs) == {
        "ee": (POSE, TWIST), "posture": (JOINTS, JOINT_JOG), "j4": (TARGET,), "look": (TARGET,), "com": (TARGET,),
        "rel": (TARGET,), "jv": (TARGET,)}
    # the tasks whose goals arrive on set_task_target, in the form their kind names (Task.goal)
    assert dict(loop.direct_goals) == {"j4": "joints", "look": "point", "com": "point", "rel": "pose",
                                       "jv": "velocities"}


def test_every_kind_s_goal_arrives_on_set_task_target_with_its_own_checks(panda):
    """One entry for every kind's goal: a frame task's pose (world frame) and a configuration task's q go through
    set_task_target to the same goal as set_pose_goal / set_joint_goal give, with their checks (the reach check of
    a pose goal; the value's form, named); a task that takes no goal is refused naming the tasks that do."""
    from roboplan_ik_ros.core.errors import InvalidInputError

    loop = loop_with(panda, EVERY_GOAL_KIND)
    q0 = panda.named_configuration("default")
    loop.state.incoming[:] = q0
    assert loop.state.accept(0.0) == "" and loop.activate(0.0) == ""
    T = panda.frame_pose(q0, TIP)
    T.translation[2] -= 0.05
    loop.set_task_target("ee", T)
    assert loop.goal("ee").isApprox(T)
    q_goal = q0[loop.group.q_indices] + 0.1
    loop.set_task_target("posture", q_goal)
    np.testing.assert_array_equal(loop.goal("posture"), q_goal)
    far = T.copy()
    far.translation[0] += 10.0  # [m] beyond the arm's reach
    with pytest.raises(InvalidInputError, match="max_goal_distance"):
        loop.set_task_target("ee", far)
    assert loop.goal("ee").isApprox(T)  # refused: the goal before it kept
    with pytest.raises(InvalidInputError, match=r"posture\.target: expected 7 values"):
        loop.set_task_target("posture", q_goal[:3])
    with pytest.raises(InvalidInputError, match=r"ee\.target"):
        loop.set_task_target("ee", "pose")
    with pytest.raises(InvalidInputError, match=r"task 'damp' takes no such goal; tasks: \['ee', 'posture', "):
        loop.set_task_target("damp", q_goal)


class _Named(Task):
    """A task of no kind: only the class attributes goal_inputs reads."""

    def __init__(self, follower: str, goal: str) -> None:  # noqa: D107 - no robot: nothing to build
        self.name, self.follower, self.goal = "odd", follower, goal

    def update(self, q, data) -> None:  # pragma: no cover - never solved
        raise AssertionError


def test_a_follower_name_the_table_does_not_know_is_refused_naming_the_task_and_the_known_ones():
    with pytest.raises(ValueError, match=r"task 'odd' .*unknown follower 'teleport'; known: frame_pose, "):
        goal_inputs(_Named("teleport", "point"))


def test_a_follower_taking_targets_for_a_kind_without_a_goal_form_is_refused():
    with pytest.raises(ValueError, match=r"task 'odd' .*follower 'point' takes its goals as targets"):
        goal_inputs(_Named("point", ""))


def test_a_kind_without_a_follower_accepts_no_goal_input():
    assert goal_inputs(_Named("", "")) == ()


def test_a_new_kind_naming_the_point_follower_gets_a_shaped_point_goal_without_an_edit_in_core_control(
        panda, frame_point_kind):
    """The frame_point kind's goal 5 cm below the hand: its target moves along the straight line to it at most
    max_target_speed (0.1 m/s) per second (shaped: not at the goal after one tick), then rests at the goal, and
    the hand's origin reaches it within 1 mm."""
    loop = loop_with(panda, [dict(name="tip", type=frame_point_kind, frame=TIP, priority=1),
                             dict(name="posture", type="configuration", weights=0.05, priority=2)])
    assert dict(loop.goal_inputs) == {"tip": (TARGET,), "posture": (JOINTS, JOINT_JOG)}
    assert dict(loop.direct_goals) == {"tip": "point"}
    sim = SimRobot(loop, panda.named_configuration("default"))
    assert loop.activate(sim.t) == ""
    task = loop.tasks["tip"]
    start = task.target
    goal = start + np.array([0.0, 0.0, -0.05])
    loop.set_task_target("tip", goal)
    assert np.allclose(loop.goal("tip"), goal)
    sim.tick()
    moved = task.target - start
    assert 0.0 < np.linalg.norm(moved) <= 0.1 * loop.dt + 1e-12  # shaped: started, at most max_target_speed
    assert np.linalg.norm(np.cross(moved, goal - start)) <= 1e-12  # along the straight line to the goal
    previous, largest = task.target, 0.0
    for _ in range(round(3.0 / loop.dt)):  # 3 s: 5 cm at 0.1 m/s takes 0.5 s and the ramps
        sim.tick()
        largest = max(largest, float(np.linalg.norm(task.target - previous)))
        previous = task.target
    assert largest <= 0.1 * loop.dt + 1e-12
    assert np.allclose(task.target, goal, atol=1e-9)
    tip = panda.frame_pose(loop.last_command(), TIP).translation
    assert np.linalg.norm(tip - goal) < 1e-3
