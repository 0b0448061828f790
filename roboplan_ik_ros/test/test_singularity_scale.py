"""SingularityScale without ROS, and a twist toward the Panda's elbow singularity (the arm
stretched: q4 -> 0) through ControlLoop: it slows to a stop before the hard threshold, the status
says why, and the reverse twist is followed at full speed."""

import numpy as np
import pinocchio as pin
import pytest
import yaml

from models import scene
from roboplan_ik_ros.core.config import load_config
from roboplan_ik_ros.core.control.control_loop import SINGULARITY, ControlLoop, LoopConfig
from roboplan_ik_ros.core.control.singularity_scale import SingularityScale
from roboplan_ik_ros.core.control.twist_follower import StreamingConfig
from test_control_loop import SimRobot, panda  # noqa: F401 - panda is a fixture
from conftest import CONFIG_DIR

TIP = "panda_hand_tcp"


def kappa(s, q, fid, cols):
    J = pin.computeFrameJacobian(s.model, s.model.createData(), q, fid, pin.LOCAL_WORLD_ALIGNED)[:, cols]
    S = np.linalg.svd(J, compute_uv=False)
    return S[0] / S[-1]


def stretched(s, q4=-0.9):
    q = s.named_configuration("default")
    q[3] = q4
    return q


def outward(s, q):
    """Unit vector from the shoulder (joint 2) to the TCP: stretching the arm along it raises kappa."""
    d = s.model.createData()
    pin.framesForwardKinematics(s.model, d, q)
    u = d.oMf[s.model.getFrameId(TIP)].translation - d.oMi[s.model.getJointId("panda_joint2")].translation
    return u / np.linalg.norm(u)


def test_only_the_direction_toward_the_singularity_is_scaled():
    s = scene("panda")
    g = s.group("arm")
    fid = s.model.getFrameId(TIP)
    q = stretched(s)
    sc = SingularityScale(s, g, fid, lower=5.0, hard=1000.0)
    u = outward(s, q)
    toward = sc.scale(q, 0.05 * u, np.zeros(3))
    k = sc.kappa
    assert k == pytest.approx(kappa(s, q, fid, g.v_columns))
    assert 0.0 < toward < 1.0 and toward == pytest.approx((1000.0 - k) / 995.0)
    assert sc.scale(q, -0.05 * u, np.zeros(3)) == 1.0  # away: never scaled
    # the oracle: a small task-space step along each twist, through the pseudo-inverse, raises / lowers kappa
    J = pin.computeFrameJacobian(s.model, s.model.createData(), q, fid, pin.LOCAL_WORLD_ALIGNED)[:, g.v_columns]
    for sign, grows in ((1.0, True), (-1.0, False)):
        dq = np.zeros(s.model.nv)
        dq[g.v_indices] = np.linalg.pinv(J) @ np.concatenate([sign * 1e-3 * u, np.zeros(3)])
        assert (kappa(s, s.integrate(q, dq), fid, g.v_columns) > k) == grows
    assert SingularityScale(s, g, fid, lower=1e6, hard=2e6).scale(q, 0.05 * u, np.zeros(3)) == 1.0  # below lower


def test_a_twist_toward_the_elbow_singularity_slows_to_a_stop_and_the_reverse_is_followed(panda):
    data = yaml.safe_load((CONFIG_DIR / "panda.yaml").read_text())
    data["barriers"] = []  # the workspace box would stop the stretch first
    st = StreamingConfig(command_in_type="speed_units")
    loop = ControlLoop(panda, load_config(data), LoopConfig(streaming=st))
    q0 = stretched(panda, -1.3)
    sim = SimRobot(loop, q0)
    assert loop.activate(sim.t) == ""
    fid = panda.model.getFrameId(TIP)
    cols = loop.group.v_columns
    u = outward(panda, q0)
    kappas = []
    for k in range(3000):  # 6 s at 0.1 m/s: far beyond the singular stretch
        if k % 5 == 0:
            loop.set_twist("ee", 0.1 * u, np.zeros(3), sim.t)
        sim.tick()
        kappas.append(kappa(panda, sim.q, fid, cols))
    code, text = loop.motion_limit(sim.t)
    assert code == SINGULARITY and "condition number" in text, (code, text)
    assert loop.counts.motion_limits.get(SINGULARITY, 0) >= 1
    assert max(kappas) <= st.hard_stop_singularity_threshold + 1e-6  # approached, never passed
    assert kappas[-1] > st.lower_singularity_threshold
    p = panda.frame_pose(sim.q, TIP).translation.copy()
    for k in range(250):
        if k % 5 == 0:
            loop.set_twist("ee", -0.1 * u, np.zeros(3), sim.t)
        sim.tick()
    p0 = panda.frame_pose(sim.q, TIP).translation.copy()
    for k in range(100):
        if k % 5 == 0:
            loop.set_twist("ee", -0.1 * u, np.zeros(3), sim.t)
        sim.tick()
    speed = np.linalg.norm(panda.frame_pose(sim.q, TIP).translation - p0) / (100 * loop.dt)
    assert (p0 - p) @ u < -0.01 and speed == pytest.approx(0.1, rel=0.02)  # away at the full commanded speed
    assert loop.guard.cuts == 0 and sim.max_step_ratio <= 1.0 + 1e-9
