"""Goal feedback through ``~/status`` end to end: ``ik_controller`` (panda.yaml) and the mock Panda as processes.

A pose goal 0.15 m above the workspace box's top face: ~/status reports the ee task's goal ``limited`` by the
barrier 'workspace', 0.15 m from the goal (where the hand stops, on the face); then a goal inside the box is
``reachable`` and reached. No assertion is about a rate, a duration or a latency; the timeouts are generous.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from e2e import WORKSPACE, rig, write_config  # noqa: F401 - rig is a fixture

WAIT = 60.0


def _ee(status):
    return next(t for t in status.tasks if t.name == "ee")


def test_a_goal_above_the_workspace_is_reported_limited_by_it_then_a_reachable_goal_reachable(rig):
    from roboplan_ik_interfaces.msg import TaskStatus

    rig.start_mock()
    rig.start_ik(write_config(rig.log_dir, node={"activation_timeout": 20.0}))
    rig.activate()
    rig.wait_mode("waiting_for_goal", WAIT, since=rig.events["activate_request"])
    assert _ee(rig.last_status()).goal == TaskStatus.GOAL_NONE  # no goal yet
    T0 = rig.tcp()
    top = WORKSPACE[1][2]
    above = pin.SE3(T0.rotation, np.array([T0.translation[0], T0.translation[1], top + 0.15]))
    t_goal = rig.send_pose(above)
    st = rig.wait_status(lambda s: _ee(s).goal == TaskStatus.GOAL_LIMITED, WAIT, "the goal reported limited",
                         since=t_goal)
    ee = _ee(st)
    assert ee.goal_limited_by == "barrier" and list(ee.goal_limited_at) == ["workspace"], ee
    assert "'workspace' z upper" in ee.goal_limit_reason
    assert abs(ee.goal_distance - 0.15) < 2e-3 and ee.goal_angle < 1e-2, ee
    assert abs(rig.tcp().translation[2] - top) < 2e-3  # the hand is where the status says it stops
    inside = pin.SE3(T0.rotation, T0.translation + [0.05, 0.05, 0.0])
    t_goal = rig.send_pose(inside)
    rig.wait_reached(inside, WAIT, since=t_goal)
    st = rig.wait_status(lambda s: _ee(s).goal_distance < 1e-3, WAIT, "a status at the goal", since=t_goal)
    ee = _ee(st)
    assert ee.goal == TaskStatus.GOAL_REACHABLE and ee.goal_limited_by == "" and not ee.goal_limited_at, ee
    rig.check()
