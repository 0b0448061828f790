"""Goal feedback (ControlLoop.goal_feedback): a goal the arm cannot reach is reported limited, with what
stops it and how far from the goal; a reachable one is reported reachable. Closed loop with the simulated
robot of test_control_loop, sampled at a status rate of 10 Hz."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from roboplan_ik_ros.core.control.goal_feedback import (
    LIMITED, OUT_OF_REACH, PROGRESS_TIME, REACHABLE, REACHED_DISTANCE, STALL_TIME, GoalJudge,
)
from test_control_loop import SimRobot, make_loop, panda  # noqa: F401 - the module's Panda fixture

STATUS_PERIOD = 0.1  # [s]


def drive(loop, goal_p, timeout: float = 8.0):
    """Activate at 'default', send a goal at ``goal_p`` with the start orientation, sample the feedback
    every STATUS_PERIOD until it says limited (or ``timeout`` [s]); (verdicts seen, last verdict, robot)."""
    sim = SimRobot(loop, loop.scene.named_configuration("default"))
    assert loop.activate(sim.t) == ""
    assert loop.goal_feedback(sim.t)[0].verdict == ""  # no goal yet
    loop.set_pose_goal("ee", pin.SE3(sim.tcp().rotation, np.array(goal_p, dtype=float)))
    seen = []
    for _ in range(int(timeout / STATUS_PERIOD)):
        sim.tick(round(STATUS_PERIOD / loop.dt))
        (v,) = [v for v in loop.goal_feedback(sim.t) if v.task == "ee"]
        seen.append(v.verdict)
        if v.verdict == LIMITED:
            break
    return seen, v, sim


def test_a_goal_beyond_the_workspace_box_is_limited_by_the_workspace_barrier(panda):
    loop = make_loop(panda)  # workspace box z <= 0.75
    seen, v, sim = drive(loop, [0.4, 0.0, 0.9])
    assert v.verdict == LIMITED and v.limited_by == "barrier" and v.limited_at == ("workspace",)
    assert "'workspace' z upper" in v.reason
    # it stops under the box's top face (z_max 0.75: 0.15 m below the goal), the barrier's approach slowing
    # exponentially (gain 5/s): the judge says limited once progress stalls, within a few mm of the face
    tcp = sim.tcp().translation
    assert v.distance == pytest.approx(np.linalg.norm(tcp - [0.4, 0.0, 0.9]), abs=1e-9)
    assert 0.75 - 5e-3 < tcp[2] <= 0.75 + 1e-4
    assert v.angle < 1e-2
    assert set(seen[:-1]) == {REACHABLE}  # on its way first
    assert "limited by barrier" in v.text() and f"{v.distance * 1e3:.1f}" in v.text(), v.text()


def test_a_goal_out_of_reach_is_limited(panda):
    loop = make_loop(panda, drop=("self_collision", "workspace"))
    _, v, sim = drive(loop, [1.5, 0.0, 0.5])
    assert v.verdict == LIMITED and v.limited_by == OUT_OF_REACH
    # the goal's distance from panda_joint1's origin (fixed to the base: any q), by pinocchio here
    model = loop.scene.model
    data = model.createData()
    pin.forwardKinematics(model, data, loop.scene.neutral())
    from_joint1 = float(np.linalg.norm(np.array([1.5, 0.0, 0.5]) - data.oMi[model.getJointId("panda_joint1")].translation))
    assert f"{from_joint1:.3f} m from the arm's first joint 'panda_joint1'" in v.reason, v.reason
    # the TCP's distance from the goal where the arm stopped (the robot follows every command exactly)
    assert v.distance == pytest.approx(np.linalg.norm(sim.tcp().translation - [1.5, 0.0, 0.5]), abs=1e-9)


def test_a_goal_just_out_of_reach_is_limited_at_full_stretch(panda):
    """Nearer than the reach's upper bound (the sum of the links), farther than the arm gets: the arm
    stretches toward it until its Jacobian is singular (no joint is at a limit: the simulation is
    deterministic, so is the cause)."""
    loop = make_loop(panda, drop=("self_collision", "workspace"))
    _, v, _ = drive(loop, [0.8, 0.5, 0.75])
    assert v.verdict == LIMITED and v.limited_by == "singularity", (v.limited_by, v.reason)
    threshold = loop.settings.streaming.lower_singularity_threshold
    kappa = float(v.reason.split("condition number ")[1].split()[0])
    assert kappa >= threshold, v.reason
    assert v.distance > 0.2


def test_a_reachable_goal_is_reachable(panda):
    loop = make_loop(panda)
    seen, v, sim = drive(loop, [0.45, 0.1, 0.4], timeout=3.0)
    assert set(seen) == {REACHABLE} and v.limited_by == "" and v.reason == ""
    assert v.distance < REACHED_DISTANCE and "reachable" in v.text()


def test_the_judge_needs_a_stall_or_no_progress_for_a_while():
    judge = GoalJudge()
    frame, goal, still = pin.SE3.Identity(), pin.SE3(np.eye(3), np.array([0.1, 0.0, 0.0])), np.zeros(6)
    assert judge.judge(0.0, frame, goal, still)[0] == REACHABLE  # a goal that just arrived: not yet
    assert judge.judge(STALL_TIME, frame, goal, still) == (LIMITED, pytest.approx(0.1), 0.0)
    moving = np.array([0.5, 0.0, 0.0, 0.0, 0.0, 0.0])
    assert judge.judge(STALL_TIME + 0.1, frame, goal, moving)[0] == REACHABLE  # moving again
    # moving without getting nearer: limited once PROGRESS_TIME passed since the goal arrived
    assert judge.judge(PROGRESS_TIME, frame, goal, moving)[0] == LIMITED
    new_goal = pin.SE3(np.eye(3), np.array([0.2, 0.0, 0.0]))
    assert judge.judge(PROGRESS_TIME + 0.1, frame, new_goal, moving)[0] == REACHABLE  # a new goal restarts it
    # axes the task does not weigh are not judged
    judge.weights = np.array([0.0, 1.0, 1.0, 1.0, 1.0, 1.0])
    assert judge.judge(5.0, frame, new_goal, still) == (REACHABLE, 0.0, 0.0)
