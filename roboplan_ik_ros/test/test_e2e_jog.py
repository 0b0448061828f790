"""A joint jog into its position limit, end to end: ``ik_controller`` with the posture task above the
pose task (the jog is the whole motion) drives the mock Panda as a strict drive; a 100 Hz sensor_msgs/JointState
jog of panda_joint7 toward its upper limit from this process. The joint brakes to a stop at the limit,
never past it, within Franka's bounds, and ~/status says ``joint_bound``; the reverse jog moves it
away again."""

from __future__ import annotations

import time

import numpy as np
import pytest

from e2e import Rig, write_config

WAIT = 60.0
NODE = {"activation_timeout": 20.0}


@pytest.fixture
def rig(ros, tmp_path):
    r = Rig(tmp_path)
    try:
        yield r
    finally:
        r.close()


def _posture_first(data) -> None:
    """The posture task above the hand's pose task: the jog is the whole motion (a full-rank posture
    task leaves the pose task no nullspace)."""
    for t in data["tasks"]:
        t["priority"] = 1 if t["type"] == "configuration" else 2


def _jog(rig, pub, velocity: float, until, what: str) -> None:
    from sensor_msgs.msg import JointState

    deadline = time.monotonic() + WAIT
    while not until():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        pub.publish(JointState(name=["panda_joint7"], velocity=[velocity]))
        time.sleep(0.01)


def test_jogging_joint7_into_its_limit_brakes_at_the_limit_and_says_joint_bound(rig):
    from sensor_msgs.msg import JointState

    rig.start_mock()
    rig.start_ik(write_config(rig.log_dir, node=NODE, edit=_posture_first))
    pub = rig.node.create_publisher(JointState, f"/{rig.ik.name}/posture/target_joint_velocities", 10)
    rig.activate()
    rig.wait(lambda: pub.get_subscription_count() > 0, WAIT, "the node's jog subscription")
    upper = rig.panda.upper[6]
    t0 = time.perf_counter()
    _jog(rig, pub, 1.0, lambda: (s := rig.last_status()) is not None and s.motion_limit == "joint_bound"
         and abs(rig.measured()[6] - upper) < 0.01, "joint 7 braked at its upper limit (joint_bound)")
    status = rig.last_status()
    at_limit = rig.measured()[6]
    _jog(rig, pub, -1.0, lambda: rig.measured()[6] < at_limit - 0.05, "joint 7 moving away again")
    rig.wait_status(lambda s: s.motion_limit == "command_timeout", WAIT, "the reverse jog timed out",
                    since=time.perf_counter())
    cmds = np.array([c for t, c in rig.rec.commands if t >= t0])
    peak = float(cmds[:, 6].max())
    print(f"\njog into panda_joint7's upper limit {upper:.4f} rad: highest command {peak:.6f} rad "
          f"({(upper - peak) * 1e3:.3f} mrad short); status {status.motion_limit}: {status.motion_limit_reason}")
    assert peak <= upper + 1e-9 and upper - peak < 1e-2
    assert "panda_joint7" in status.motion_limit_reason
    rig.check()  # limits, v_max*dt, guard_cuts 0, and the strict drive ok (acceleration and jerk)
    rig.node.destroy_publisher(pub)
