"""The twist slow-down near a singularity, end to end (issue 22): ``ik_controller`` (panda.yaml, barriers off:
the workspace box and the table would stop the stretch first, as in test_singularity_scale.py) and the mock
Panda (a strict drive) as separate processes over DDS. The mock starts with the elbow bent (q4 = -1.3); a
100 Hz twist from this process stretches the arm outward (from the shoulder toward the TCP, speed 0.1 m/s)
far beyond full stretch.

As the README documents (Streaming inputs, "Singularities"): the twist's component toward the singularity
is scaled by ``(hard - kappa) / (hard - lower)`` between the thresholds (17, 30), so the arm slows down and
the condition number of the tool's Jacobian (6 x 7, LOCAL_WORLD_ALIGNED, this test's own pinocchio on the
URDF) approaches 30 and never passes it, at any command; ``~/status`` says ``singularity`` with kappa; the
reverse twist moves the arm away (kappa falls). Every command passes the harness's checks (limits, steps)
and the strict drive's acceleration/jerk bounds.

No assertion is about a rate, a duration or a latency: speeds are per command (control period), as the
QP sees them, not per wall-clock second.
"""

from __future__ import annotations

import re
import threading
import time

import numpy as np
import pinocchio as pin

from e2e import ROOT_FRAME, TIP, Rig, report, write_config, rig  # noqa: F401 - rig is a fixture

WAIT = 60.0
NODE = {"activation_timeout": 20.0}
LOWER, HARD = 17.0, 30.0  # panda.yaml node.streaming lower/hard_stop_singularity_threshold
MAX_LINEAR_SPEED = 0.25  # [m/s] panda.yaml node.streaming.max_linear_speed (unitless 1.0)
SPEED = 0.1  # [m/s] the stretch
DT = 0.002  # [s] 500 Hz
KAPPA = re.compile(r"condition number is ([0-9.]+)")


def _kappa(P, q7) -> float:
    q = pin.neutral(P.model)
    q[P.iq] = q7
    data = P.model.createData()
    J = pin.computeFrameJacobian(P.model, data, q, P.tip, pin.LOCAL_WORLD_ALIGNED)
    S = np.linalg.svd(J[:, [P.model.joints[P.model.getJointId(f"panda_joint{i}")].idx_v for i in range(1, 8)]],
                      compute_uv=False)
    return float(S[0] / S[-1])


def _outward(P, q7) -> np.ndarray:
    """Unit vector from the shoulder (joint 2) to the TCP: stretching along it raises kappa."""
    q = pin.neutral(P.model)
    q[P.iq] = q7
    data = P.model.createData()
    pin.framesForwardKinematics(P.model, data, q)
    u = data.oMf[P.tip].translation - data.oMi[P.model.getJointId("panda_joint2")].translation
    return u / np.linalg.norm(u)


class TwistStream:
    def __init__(self, rig: Rig, pub, linear) -> None:
        from geometry_msgs.msg import TwistStamped

        self.rig, self.pub, self.msg = rig, pub, TwistStamped()
        self.msg.header.frame_id = ROOT_FRAME
        self.msg.twist.linear.x, self.msg.twist.linear.y, self.msg.twist.linear.z = (float(x) for x in linear)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        next_t = time.perf_counter()
        while not self._stop.is_set():
            self.msg.header.stamp = self.rig.node.get_clock().now().to_msg()
            self.pub.publish(self.msg)
            next_t += 0.01
            self._stop.wait(max(0.0, next_t - time.perf_counter()))

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return time.perf_counter()


def test_a_twist_toward_full_stretch_slows_down_before_the_singularity_and_the_reverse_is_followed(rig):
    from geometry_msgs.msg import TwistStamped

    P = rig.panda
    q_start = P.default.copy()
    q_start[3] = -1.3  # the elbow bent less than at 'default' (-2.36): kappa below the lower threshold
    rig.start_mock(initial_positions=q_start.tolist())
    rig.start_ik(write_config(rig.log_dir, node=NODE, drop_barriers=("self_collision", "workspace", "obstacles")))
    pub = rig.node.create_publisher(TwistStamped, f"/{rig.ik.name}/ee/target_twist", 10)
    rig.activate()
    rig.wait(lambda: pub.get_subscription_count() > 0, WAIT, "the node's twist subscription")
    rig.wait_mode("waiting_for_goal", WAIT, since=rig.events["activate_request"])
    q0 = rig.measured()
    assert _kappa(P, q0) < LOWER
    u = _outward(P, q0)

    t0 = time.perf_counter()
    stream = TwistStream(rig, pub, u * SPEED / MAX_LINEAR_SPEED)
    st = rig.wait_status(lambda s: s.motion_limit == "singularity", WAIT, "~/status: singularity", since=t0)
    assert "condition number" in st.motion_limit_reason and "scaled by" in st.motion_limit_reason, st
    # on until the arm has crept close to the hard threshold
    rig.wait(lambda: _kappa(P, rig.measured()) > HARD - 2.0, WAIT, f"kappa above {HARD - 2.0:g} (the arm stretched)")
    t_near = time.perf_counter()
    rig.wait_commands(250, since=t_near, timeout=WAIT)  # 0.5 s of commands more, still pushed outward
    t_stop = stream.stop()
    cmds = [c for _, c in rig.commands_between(t0, t_stop)]
    kappas = np.array([_kappa(P, c) for c in cmds])
    # the TCP's outward speed per control period over the last 50 commands, against the commanded one
    tail = cmds[-51:]
    outward_per_period = float((P.fk(tail[-1]).translation - P.fk(tail[0]).translation) @ u) / (50 * DT)
    reasons = [s.motion_limit_reason for s in rig.status_since(t0) if s.motion_limit == "singularity"]
    reported = [float(m.group(1)) for r in reasons for m in [KAPPA.search(r)] if m]
    report("twist toward the elbow singularity", commands=len(cmds), kappa_start=float(kappas[0]),
           kappa_max=float(kappas.max()), outward_speed_at_end=outward_per_period, commanded_speed=SPEED,
           status_kappa_max=max(reported, default=float("nan")))
    assert kappas.max() <= HARD, f"kappa passed the hard threshold: {kappas.max():.3f} (command {kappas.argmax()})"
    assert kappas[-1] > LOWER
    assert reported and max(reported) <= HARD
    # slowed down to (nearly) a stop: the scale is below 0.5 above kappa 23.5 (the LM damping and the posture
    # task's nullspace pull may leave a slight drift either way)
    assert abs(outward_per_period) < 0.5 * SPEED, outward_per_period

    # the reverse twist: away from the singularity, never scaled: the arm moves back, kappa falls
    rig.wait_status(lambda s: s.motion_limit == "command_timeout", WAIT, "the stream timed out", since=t_stop)
    q_far = rig.measured()
    t1 = time.perf_counter()
    stream = TwistStream(rig, pub, -u * SPEED / MAX_LINEAR_SPEED)
    rig.wait(lambda: float((P.fk(q_far).translation - P.fk(rig.measured()).translation) @ u) > 0.03, WAIT,
             "the TCP 3 cm back inward")
    t_stop = stream.stop()
    back = [c for _, c in rig.commands_between(t1, t_stop)]
    assert _kappa(P, back[-1]) < _kappa(P, q_far) - 1.0
    rig.wait_status(lambda s: s.motion_limit == "command_timeout", WAIT, "the reverse stream timed out",
                    since=t_stop)
    rig.check()


# ===================================================================================== the singularity barrier
SIGMA_MIN = 0.06  # barriers[].sigma_min of the test's singularity barrier (README: ~ Servo's kappa 30 there)


def _sigma_min(P, q7) -> float:
    """The smallest singular value of the TCP's 6 x 7 Jacobian (LOCAL frame, as the barrier's row)."""
    q = pin.neutral(P.model)
    q[P.iq] = q7
    J = pin.computeFrameJacobian(P.model, P.model.createData(), q, P.tip, pin.LOCAL)
    cols = [P.model.joints[P.model.getJointId(f"panda_joint{i}")].idx_v for i in range(1, 8)]
    return float(np.linalg.svd(J[:, cols], compute_uv=False)[-1])


def test_the_singularity_barrier_stops_a_twist_stream_before_the_bound(rig):
    """The QP-level alternative (``barriers[].type: singularity``) alone: the twist's own slow-down is moved
    out of the way (thresholds 1000 / 2000), the same outward stream then stops where the barrier binds:
    sigma_min of the TCP's Jacobian (this test's own) stays above the bound at every command."""
    from geometry_msgs.msg import TwistStamped

    def edit(data):
        data["barriers"].append({"name": "singularity", "type": "singularity", "frame": TIP, "sigma_min": SIGMA_MIN})
        data["node"]["streaming"].update(lower_singularity_threshold=1000.0, hard_stop_singularity_threshold=2000.0)

    P = rig.panda
    q_start = P.default.copy()
    q_start[3] = -1.3
    rig.start_mock(initial_positions=q_start.tolist())
    rig.start_ik(write_config(rig.log_dir, node=NODE, edit=edit,
                              drop_barriers=("self_collision", "workspace", "obstacles")))
    pub = rig.node.create_publisher(TwistStamped, f"/{rig.ik.name}/ee/target_twist", 10)
    rig.activate()
    rig.wait(lambda: pub.get_subscription_count() > 0, WAIT, "the node's twist subscription")
    rig.wait_mode("waiting_for_goal", WAIT, since=rig.events["activate_request"])
    q0 = rig.measured()
    assert _sigma_min(P, q0) > SIGMA_MIN + 0.02
    u = _outward(P, q0)

    t0 = time.perf_counter()
    stream = TwistStream(rig, pub, u * SPEED / MAX_LINEAR_SPEED)
    st = rig.wait_status(lambda s: s.motion_limit == "barrier" and "singularity" in s.motion_limit_reason, WAIT,
                         "~/status: the singularity barrier binds", since=t0)
    # the barrier lets sigma_min approach its bound at the class-K rate (gain 1/s): on until it is close
    rig.wait(lambda: _sigma_min(P, rig.measured()) < SIGMA_MIN + 0.005, WAIT, f"sigma_min below {SIGMA_MIN + 0.005:g}")
    t_near = time.perf_counter()
    rig.wait_commands(250, since=t_near, timeout=WAIT)  # 0.5 s of commands more, still pushed outward
    t_stop = stream.stop()
    cmds = [c for _, c in rig.commands_between(t0, t_stop)]
    sigmas = np.array([_sigma_min(P, c) for c in cmds])
    tail = cmds[-51:]
    outward_per_period = float((P.fk(tail[-1]).translation - P.fk(tail[0]).translation) @ u) / (50 * DT)
    report("twist against the singularity barrier", commands=len(cmds), sigma_start=float(sigmas[0]),
           sigma_min=float(sigmas.min()), bound=SIGMA_MIN, outward_speed_at_end=outward_per_period,
           status=st.motion_limit_reason[:120])
    assert sigmas.min() >= SIGMA_MIN - 1e-3, f"sigma_min {sigmas.min():.4f} below the bound (command {sigmas.argmin()})"
    assert abs(outward_per_period) < 0.5 * SPEED, outward_per_period  # stopped there
    rig.wait_status(lambda s: s.motion_limit == "command_timeout", WAIT, "the stream timed out", since=t_stop)
    rig.check()
