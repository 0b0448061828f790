"""Helpers of the feature e2e tests (issue 31, "Proofs for every promise"): one node process per test module
(a module-scoped :class:`e2e.Rig`), publishers and recorders of the extra topics, the test's own self-collision
oracle (pinocchio + coal on the URDF, the SRDF's disabled pairs removed) and a Baxter variant of the rig for
``baxter_dual.yaml`` on ``mock_robot robot:=baxter``.

Nothing of ``core`` is used for an oracle (file lookups of example-robot-data only, as :mod:`e2e` does).
"""

from __future__ import annotations

import functools
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import coal
import numpy as np
import pinocchio as pin
import pytest

import e2e
from e2e import Rig

WAIT = 60.0  # [s] generous timeout for something to happen


# ===================================================================================== one rig per module
@pytest.fixture(scope="module")
def module_rig(ros, tmp_path_factory):
    """One :class:`e2e.Rig` for a whole test module (its tests share one node process, in file order)."""
    r = Rig(tmp_path_factory.mktemp("e2e_module"))
    try:
        yield r
    finally:
        r.close()


def publisher(rig: Rig, msg_type, topic: str, qos=10):
    """A publisher on the ik node's ``~/<topic>`` once the node subscribes it."""
    pub = rig.node.create_publisher(msg_type, f"/{rig.ik.name}/{topic}", qos)
    rig.wait(lambda: pub.get_subscription_count() > 0, WAIT, f"the node subscribed {topic}")
    return pub


def trigger(rig: Rig, service: str):
    """Call the ik node's std_srvs/Trigger ``~/<service>``: its response."""
    from std_srvs.srv import Trigger

    client = rig.node.create_client(Trigger, f"/{rig.ik.name}/{service}")
    return rig.call(client, Trigger.Request(), WAIT, f"~/{service}")


def wait_commands_still(rig: Rig, since: float, n: int = 100, span: float = 1e-6) -> np.ndarray:
    """The last command once the last ``n`` commands received after ``since`` moved no joint more than ``span``."""
    def still():
        cmds = [c for _, c in rig.commands_between(since)][-n:]
        return len(cmds) == n and float(np.ptp(np.array(cmds), axis=0).max()) <= span and (cmds[-1],)

    return rig.wait(still, WAIT, f"the commands still (every joint within {span:g} rad over {n} commands)")[0]


class TopicRecorder:
    """Every message of one topic, with its receipt time (``time.perf_counter()``)."""

    def __init__(self, rig: Rig, msg_type, topic: str, qos=1000) -> None:
        self.messages: list = []
        self._lock = threading.Lock()
        self.sub = rig.node.create_subscription(msg_type, topic, self._on, qos)

    def _on(self, msg) -> None:
        with self._lock:
            self.messages.append((time.perf_counter(), msg))

    def since(self, t: float) -> list:
        with self._lock:
            return [(tm, m) for tm, m in self.messages if tm > t]


# ===================================================================================== self-collision oracle
class SelfCollision:
    """The robot's own collision pairs from its URDF (meshes as convex hulls, as ``robot.convex_hulls``), the
    SRDF's disabled pairs removed; distances through pinocchio and coal directly."""

    def __init__(self, model: pin.Model, urdf_xml: str, srdf_xml: str, package_dirs) -> None:
        self.model = model
        self.geom = pin.buildGeomFromUrdfString(model, urdf_xml, pin.COLLISION, package_dirs=list(package_dirs))
        for o in self.geom.geometryObjects:
            if isinstance(o.geometry, coal.BVHModelBase):
                o.geometry.buildConvexHull(True, "Qt")
                o.geometry = o.geometry.convex
        self.geom.addAllCollisionPairs()
        pin.removeCollisionPairsFromXML(model, self.geom, srdf_xml)
        self._data = model.createData()
        self._gdata = pin.GeometryData(self.geom)
        self._lock = threading.Lock()
        link = [model.frames[o.parentFrame].name for o in self.geom.geometryObjects]
        self.pair_names = [f"{link[p.first]} <-> {link[p.second]}" for p in self.geom.collisionPairs]

    def distances(self, q: np.ndarray) -> np.ndarray:
        """Signed distance [m] of every pair at the full configuration ``q``."""
        with self._lock:
            pin.computeDistances(self.model, self._data, self.geom, self._gdata, q)
            return np.array([r.min_distance for r in self._gdata.distanceResults])


@functools.lru_cache(maxsize=None)
def panda_self_collision() -> SelfCollision:
    from roboplan_ik_ros.core.model.robots import load_example_robot  # file lookup only

    rd = load_example_robot("panda")
    return SelfCollision(e2e.panda().model, rd.urdf_xml, rd.srdf_xml, rd.package_paths)


def q_full(model: pin.Model, iq: np.ndarray, q_group) -> np.ndarray:
    q = pin.neutral(model)
    q[iq] = q_group
    return q


# ===================================================================================== Baxter
BAXTER_CONFIG = e2e.CONFIG_DIR / "baxter_dual.yaml"


def baxter_config() -> dict:
    import yaml

    return yaml.safe_load(BAXTER_CONFIG.read_text())


BAXTER_ARMS = tuple(f"{side}_{j}" for side in ("left", "right") for j in ("s0", "s1", "e0", "e1", "w0", "w1", "w2"))


class Baxter:
    """Baxter of example-robot-data with config/baxter.srdf, straight from its URDF (not through ``core``): the
    14 joints of ``both_arms`` (left then right, model order), limits, the SRDF 'default' (carrying) pose."""

    def __init__(self) -> None:
        from roboplan_ik_ros.core.model.robots import load_example_robot  # file lookup only

        rd = load_example_robot("baxter")
        self.urdf_xml, self.srdf_xml, self.package_paths = rd.urdf_xml, rd.srdf_xml, list(rd.package_paths)
        self.model = pin.buildModelFromXML(rd.urdf_xml)
        self.data = self.model.createData()
        self.names = BAXTER_ARMS
        self.iq = np.array([self.model.joints[self.model.getJointId(n)].idx_q for n in self.names])
        iv = np.array([self.model.joints[self.model.getJointId(n)].idx_v for n in self.names])
        self.lower = np.array(self.model.lowerPositionLimit)[self.iq]
        self.upper = np.array(self.model.upperPositionLimit)[self.iq]
        self.v_max = np.array(self.model.velocityLimit)[iv]
        root = ET.fromstring(rd.srdf_xml)
        state = next(g for g in root.iter("group_state") if g.get("name") == "default")
        values = {j.get("name"): float(j.get("value")) for j in state.iter("joint")}
        self.default = np.array([values[n] for n in self.names])
        self._lock = threading.Lock()

    def frame(self, q14, name: str) -> pin.SE3:
        with self._lock:
            pin.framesForwardKinematics(self.model, self.data, q_full(self.model, self.iq, q14))
            return self.data.oMf[self.model.getFrameId(name)].copy()

    def fk(self, q14) -> pin.SE3:  # Rig.tcp(): the left hand
        return self.frame(q14, "left_gripper")

    def within_limits(self, q, tol: float = 0.0) -> bool:
        q = np.asarray(q)
        return bool(np.isfinite(q).all() and (q >= self.lower - tol).all() and (q <= self.upper + tol).all())


@functools.lru_cache(maxsize=None)
def baxter() -> Baxter:
    return Baxter()


def write_baxter_joint_limits(directory: Path) -> Path:
    """A MoveIt joint_limits.yaml of baxter_dual.yaml's own a_max / j_max (the strict drive's bounds: the
    controller's configured ones, since Baxter ships none)."""
    import yaml

    limits = next(lim for lim in baxter_config()["limits"] if lim["type"] == "acceleration")
    data = {"joint_limits": {n: {"has_acceleration_limits": True, "max_acceleration": float(a),
                                 "has_jerk_limits": True, "max_jerk": float(j)}
                             for n, a, j in zip(BAXTER_ARMS, limits["a_max"], limits["j_max"])}}
    path = Path(directory) / "baxter_joint_limits.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


class BaxterRig(Rig):
    """:class:`e2e.Rig` recording Baxter's 14 arm joints; activation waits for the hands' goal topics."""

    def __init__(self, log_dir: Path) -> None:
        super().__init__(log_dir)
        self.panda = baxter()  # the oracle the recorder and check() use (limits, v_max, fk)

    def _on_js(self, msg) -> None:
        t = time.perf_counter()
        names = tuple(msg.name)
        if self._arm_index is None or self._arm_index[0] != names:
            try:
                self._arm_index = (names, [names.index(n) for n in BAXTER_ARMS])
            except ValueError:
                self.rec.joint_states.append((t, np.full(14, np.nan), False))
                return
        pos = np.array(msg.position, dtype=float)
        q = pos[self._arm_index[1]] if len(pos) == len(names) else np.full(14, np.nan)
        self.rec.joint_states.append((t, q, self.panda.within_limits(q, 1e-6)))

    def check(self, **kw) -> dict:
        return super().check(n_joints=len(BAXTER_ARMS), **kw)

    def activate_hands(self, hands=("left_hand", "right_hand"), timeout: float = 30.0) -> dict:
        """Configure and activate once every connection is matched (as :meth:`Rig.activate`, with the hands'
        ``~/<hand>/target_pose`` instead of the Panda's ee/posture topics); the hands' publishers."""
        from geometry_msgs.msg import PoseStamped
        from lifecycle_msgs.msg import Transition

        ik = self.ik
        self.require(self.configure(), f"configure of {ik.name} failed")
        self.wait(lambda: ik.name in self.publishers_of(e2e.COMMAND_TOPIC) and self._cmd_sub.get_publisher_count() > 0,
                  timeout, "the recorder matched to the node's command publisher")
        self.wait(lambda: ik.name in self.subscribers_of("/joint_states"), timeout, "the node on /joint_states")
        self.wait(lambda: self.mock.name in self.subscribers_of(e2e.COMMAND_TOPIC), timeout,
                  "the mock on the command topic")
        self.wait(lambda: ik.status_sub.get_publisher_count() > 0, timeout, f"/{ik.name}/status")
        pubs = {h: self.node.create_publisher(PoseStamped, f"/{ik.name}/{h}/target_pose", 10) for h in hands}
        self.wait(lambda: all(p.get_subscription_count() > 0 for p in pubs.values()), timeout, "the hands' goal topics")
        self.events["activate_request"] = t0 = time.perf_counter()
        self.require(self.transition(Transition.TRANSITION_ACTIVATE), f"activate of {ik.name} failed")
        self.wait(lambda: any(tc > t0 for tc, _ in self.rec.commands), timeout, "a first command after activation")
        return pubs


def se3_distance(A: pin.SE3, B: pin.SE3) -> tuple[float, float]:
    """(position [m], angle [rad]) between two poses."""
    return (float(np.linalg.norm(A.translation - B.translation)),
            float(np.linalg.norm(pin.log3(A.rotation.T @ B.rotation))))
