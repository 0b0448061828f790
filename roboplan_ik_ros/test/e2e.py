"""End-to-end harness: ``ik_controller`` and ``mock_robot`` as separate processes, driven only from
outside (lifecycle services, topics, ``~/solve_ik``, rcl_interfaces parameters), with a recorder
node in the test process that keeps every command, every /joint_states message and every
``~/status`` message, and one checker (:func:`check_commands`) of the safety invariants.

All processes of a test run share one ROS domain (``scripts/env.sh`` / conftest pick it), so the
scenarios run one after another and each stops its processes before the next starts: two mocks
publishing /joint_states at once would corrupt each other. :meth:`Rig.start_mock` refuses to run
next to a /joint_states publisher that the harness did not start.

The oracle is independent of the code under test: joint limits, velocity limits and forward
kinematics come from the example-robot-data URDF through pinocchio directly (the ``core`` package
is what is being tested), the SRDF 'default' pose from the SRDF text.

Every mock runs as a **strict drive** (``strict_drive: true``, Franka's acceleration and jerk bounds
from ``config/panda_joint_limits.yaml`` at the 500 Hz command period): it checks every command it
receives and holds on the first violation. The harness follows each mock's ``~/drive_status``: a
fault fails the scenario at once (:meth:`Rig.wait`) and :meth:`Rig.check` requires every drive to
be ok once it has seen the latest commands (a scenario that wants a fault sets
``Rig.expect_drive_faults``). The mock runs at SCHED_FIFO 40 (``rt_priority``, below the node's
loop), as a drive does: starved under load it received commands in bursts after stalls of over
0.5 s, which hide the node's gaps from it (a stale stop then looked like an abrupt stop).

Synchronization is by events (DDS matching, messages, service responses, polled with generous
timeouts), never by fixed sleeps; no check depends on a rate, a duration or a latency.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

ARM = tuple(f"panda_joint{i}" for i in range(1, 8))
TIP = "panda_hand_tcp"
ROOT_FRAME = "panda_link0"
COMMAND_TOPIC = "/forward_position_controller/commands"
CONFIG_DIR = Path(__file__).resolve().parents[1] / "config"
#: barriers of panda.yaml the e2e configs drop (as the in-process node tests do): self-collision
#: distance queries are the costliest part of a tick and none of the scenarios is about them.
DROP_BARRIERS = ("self_collision",)


def shipped_config() -> dict:
    """config/panda.yaml as data (what every scenario's config starts from)."""
    import yaml

    return yaml.safe_load((CONFIG_DIR / "panda.yaml").read_text())


def _workspace() -> tuple[np.ndarray, np.ndarray]:
    b = next(b for b in shipped_config()["barriers"] if b["name"] == "workspace")
    return np.array(b["p_min"], dtype=float), np.array(b["p_max"], dtype=float)


WORKSPACE = _workspace()  # panda.yaml barrier 'workspace' on panda_hand_tcp: (p_min, p_max) [m]

STEP_RTOL, STEP_ATOL = 1e-6, 1e-9  # consecutive-command tolerance: |dq| <= v_max dt (1 + rtol) + atol
RESEED_TOL = 1e-6  # [rad] a re-seed command equals the measurement
LIMIT_TOL = 1e-9  # [rad] commands inside the joint limits
RATE_MARGIN = 0.5  # [s] around a rate change both periods count (the larger dt is used)
DESCRIPTION_TIMEOUT = 30.0  # [s] configure waits this long for the latched /robot_description (see Rig.start_ik)


# ===================================================================================== oracle
class Panda:
    """The Panda of example-robot-data, straight from its URDF/SRDF (not through ``core``)."""

    def __init__(self) -> None:
        from roboplan_ik_ros.core.model.robots import load_example_robot  # file lookup only

        rd = load_example_robot("panda")
        self.model = pin.buildModelFromXML(rd.urdf_xml)
        self.data = self.model.createData()
        self.iq = np.array([self.model.joints[self.model.getJointId(n)].idx_q for n in ARM])
        iv = np.array([self.model.joints[self.model.getJointId(n)].idx_v for n in ARM])
        self.lower = np.array(self.model.lowerPositionLimit)[self.iq]
        self.upper = np.array(self.model.upperPositionLimit)[self.iq]
        self.v_max = np.array(self.model.velocityLimit)[iv]
        self.tip = self.model.getFrameId(TIP)
        root = ET.fromstring(rd.srdf_xml)
        state = next(g for g in root.iter("group_state") if g.get("name") == "default")
        values = {j.get("name"): float(j.get("value")) for j in state.iter("joint")}
        self.default = np.array([values[n] for n in ARM])
        self._lock = threading.Lock()

    def fk(self, q7) -> pin.SE3:
        """Pose of the TCP in the model root for the 7 arm joint values ``q7``."""
        q = pin.neutral(self.model)
        q[self.iq] = q7
        with self._lock:
            pin.framesForwardKinematics(self.model, self.data, q)
            return self.data.oMf[self.tip].copy()

    def within_limits(self, q7, tol: float = 0.0) -> bool:
        q7 = np.asarray(q7)
        return bool(np.isfinite(q7).all() and (q7 >= self.lower - tol).all() and (q7 <= self.upper + tol).all())


_PANDA: Panda | None = None


def panda() -> Panda:
    global _PANDA
    if _PANDA is None:
        _PANDA = Panda()
    return _PANDA


def pose_errors(T_goal: pin.SE3, T: pin.SE3) -> tuple[float, float]:
    """(position [m], orientation [rad]) error of ``T`` w.r.t. ``T_goal``."""
    return (float(np.linalg.norm(T.translation - T_goal.translation)),
            float(np.linalg.norm(pin.log3(T_goal.rotation.T @ T.rotation))))


def pose_goal_msg(T: pin.SE3, tip: str = TIP, frame: str = ROOT_FRAME):
    """A roboplan_ik_interfaces/PoseGoal for ``tip`` at ``T`` in ``frame`` (~/solve_ik, ~/solve_path requests)."""
    from roboplan_ik_interfaces.msg import PoseGoal

    g = PoseGoal(tip_frame=tip)
    g.pose.header.frame_id = frame
    g.pose.pose.position.x, g.pose.pose.position.y, g.pose.pose.position.z = (float(x) for x in T.translation)
    q = pin.Quaternion(T.rotation)
    g.pose.pose.orientation.x, g.pose.pose.orientation.y = float(q.x), float(q.y)
    g.pose.pose.orientation.z, g.pose.pose.orientation.w = float(q.z), float(q.w)
    return g


def seed_msg(q7):
    """A sensor_msgs/JointState seed of the 7 arm joints."""
    from sensor_msgs.msg import JointState

    return JointState(name=list(ARM), position=[float(x) for x in q7])


def box_margins(p) -> np.ndarray:
    """Signed distances of point ``p`` to the workspace faces (x, y, z lower, then upper); < 0 outside."""
    lo, hi = WORKSPACE
    return np.concatenate([np.asarray(p) - lo, hi - np.asarray(p)])


# ===================================================================================== configs
_counter = iter(range(1, 1_000_000))


def unique(prefix: str) -> str:
    return f"{prefix}_{os.getpid()}_{next(_counter)}"


def write_config(directory, *, node=None, edit=None, drop_barriers=DROP_BARRIERS, suffix=".yaml",
                 name: str | None = None) -> Path:
    """config/panda.yaml with barriers dropped, ``node:`` keys overridden and ``edit(data)`` applied,
    written to ``directory`` (``suffix`` '' writes a path without a suffix)."""
    import yaml

    data = shipped_config()
    data["barriers"] = [b for b in data.get("barriers", []) if b["name"] not in drop_barriers]
    data.setdefault("node", {}).update(node or {})
    if edit is not None:
        edit(data)
    path = Path(directory) / f"{name or unique('config')}{suffix}"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


# ===================================================================================== processes
class Proc:
    """A node in its own process (own session: the whole group is signalled), output to a file."""

    def __init__(self, name: str, module: str, params: dict, log_dir: Path, remaps: dict | None = None) -> None:
        self.name = name
        self.log_path = Path(log_dir) / f"{name}.log"
        args = [sys.executable, "-m", module, "--ros-args", "-r", f"__node:={name}"]
        for k, v in (remaps or {}).items():
            args += ["-r", f"{k}:={v}"]
        for k, v in params.items():
            args += ["-p", f"{k}:={_param_text(v)}"]
        self.args = args
        self._log = open(self.log_path, "wb")
        self.popen = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                      env=os.environ.copy(), start_new_session=True)
        self.params = dict(params)
        self.killed = False  # by the test, on purpose
        self.started = time.perf_counter()
        #: lifecycle transitions whose response never came and that ~/get_state confirmed (Rig.transition)
        self.lost_responses: list[str] = []

    @property
    def alive(self) -> bool:
        return self.popen.poll() is None

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def tail(self, lines: int = 25) -> str:
        text = self.log().splitlines()[-lines:]
        state = "running" if self.alive else f"exited with {self.popen.returncode}"
        return f"--- {self.name} ({state}), last {len(text)} lines of {self.log_path}:\n" + "\n".join(text)

    def _signal(self, sig) -> None:
        try:
            os.killpg(self.popen.pid, sig)
        except ProcessLookupError:
            pass

    def kill9(self) -> None:
        """SIGKILL the whole process group (a crashed driver) and reap it."""
        self.killed = True
        self._signal(signal.SIGKILL)
        self.popen.wait(timeout=10)

    def stop(self, grace: float = 5.0) -> None:
        """SIGINT (rclpy leaves the DDS graph cleanly), then SIGKILL the whole group in any case."""
        if self.alive:
            self._signal(signal.SIGINT)
            try:
                self.popen.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                pass
        self._signal(signal.SIGKILL)  # stragglers of the group, even if the leader exited
        try:
            self.popen.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        self._log.close()


def _param_text(v) -> str:
    """A --ros-args -p value (YAML): floats always with a decimal point, so they stay doubles."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(float(v))
    if isinstance(v, (list, tuple, np.ndarray)):
        return "[" + ",".join(_param_text(float(x) if isinstance(x, (np.floating, float)) else x) for x in v) + "]"
    return str(v)


# ===================================================================================== recording
@dataclass
class Recording:
    """What the recorder saw. Times are ``time.perf_counter()`` at receipt (one process, one clock);
    status stamps (``node_time``) are the node's ROS time, comparable with ``time.time()``."""

    commands: list = field(default_factory=list)  # (t, np.ndarray[7])
    joint_states: list = field(default_factory=list)  # (t, np.ndarray[7] arm positions, valid)
    status: list = field(default_factory=list)  # (t, node_time, ControllerStatus)
    drive_status: list = field(default_factory=list)  # (t, mock name, dict): each mock's ~/drive_status


class Spinner:
    """One executor (EventsExecutor where present) spinning in a daemon thread."""

    def __init__(self, node) -> None:
        import rclpy

        try:
            from rclpy.experimental import EventsExecutor

            self.executor = EventsExecutor()
        except ImportError:
            self.executor = rclpy.executors.SingleThreadedExecutor()
        self.executor.add_node(node)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        import rclpy

        while rclpy.ok() and not self._stop.is_set():
            self.executor.spin_once(timeout_sec=0.05)  # EventsExecutor.spin() does not fire timers here

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5.0)
        self.executor.shutdown()


#: Rig.transition: ~/get_state is asked after this long without a response [s], and a goal state it reports
#: stands for the lost response after this long more
RESPONSE_CHECK_S, RESPONSE_GRACE_S = 5.0, 5.0


def transition_goal(transition_id: int) -> tuple[str, str]:
    """(name, goal state label) of a lifecycle transition (lifecycle_msgs/Transition ids)."""
    from lifecycle_msgs.msg import Transition as T

    return {T.TRANSITION_CONFIGURE: ("configure", "inactive"), T.TRANSITION_CLEANUP: ("cleanup", "unconfigured"),
            T.TRANSITION_ACTIVATE: ("activate", "active"), T.TRANSITION_DEACTIVATE: ("deactivate", "inactive"),
            T.TRANSITION_UNCONFIGURED_SHUTDOWN: ("shutdown", "finalized"),
            T.TRANSITION_INACTIVE_SHUTDOWN: ("shutdown", "finalized"),
            T.TRANSITION_ACTIVE_SHUTDOWN: ("shutdown", "finalized")}[transition_id]


class Timeout(AssertionError):
    pass


def stamp_seconds(stamp) -> float:
    return stamp.sec + 1e-9 * stamp.nanosec


class Rig:
    """One scenario's world: the processes it started, a recorder/driver node in the test process,
    and helpers that wait for events (with generous timeouts) and fail with the processes' logs."""

    def __init__(self, log_dir: Path) -> None:
        import rclpy
        from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray

        self.panda = panda()
        self.log_dir = Path(log_dir)
        self.procs: list[Proc] = []
        self.mock: Proc | None = None
        self.ik: Proc | None = None
        self.rec = Recording()
        self.node = rclpy.create_node(unique("e2e_recorder"))
        deep = QoSProfile(depth=1000, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE)
        # 20 s of commands at 500 Hz: a test process starved of its executor thread that long still loses none
        self._cmd_sub = self._create_command_subscription(
            Float64MultiArray, QoSProfile(depth=10_000, history=HistoryPolicy.KEEP_LAST,
                                          reliability=ReliabilityPolicy.RELIABLE))
        self._js_sub = self.node.create_subscription(JointState, "/joint_states", self._on_js, deep)
        self._arm_index: tuple | None = None
        self.events: dict[str, float] = {}
        self.rate_hz = 500.0
        self.expect_drive_faults = False  # a scenario that provokes a strict-drive fault sets this
        self.spinner = Spinner(self.node)

    # -------------------------------------------------------------- recorder callbacks
    def _create_command_subscription(self, msg_type, qos):
        """The recorder's command subscription. No DDS message-lost event: with the rmw_fastrtps of these wheels,
        taking that event (this process's executor thread, holding the GIL) and Fast DDS reporting a lost sample (its
        receive thread, holding the reader's lock) take two locks in opposite orders and can hang this whole
        process (seen once in test_e2e_chaos under load; ros2/rmw_fastrtps#890, fixed upstream in 2026). A lost
        command shows as a jump in :func:`check_commands` instead, which names the time since the previous one."""
        cb = lambda m: self.rec.commands.append((time.perf_counter(), np.array(m.data, dtype=float)))  # noqa: E731
        return self.node.create_subscription(msg_type, COMMAND_TOPIC, cb, qos)

    def _on_js(self, msg) -> None:
        t = time.perf_counter()
        names = tuple(msg.name)
        if self._arm_index is None or self._arm_index[0] != names:
            try:
                self._arm_index = (names, [names.index(n) for n in ARM])
            except ValueError:
                self.rec.joint_states.append((t, np.full(7, np.nan), False))
                return
        pos = np.array(msg.position, dtype=float)
        q = pos[self._arm_index[1]] if len(pos) == len(names) else np.full(7, np.nan)
        self.rec.joint_states.append((t, q, self.panda.within_limits(q, 1e-6)))

    def _on_status(self, msg) -> None:
        self.rec.status.append((time.perf_counter(), stamp_seconds(msg.header.stamp), msg))

    # -------------------------------------------------------------- failure context
    def tails(self) -> str:
        return "\n".join(p.tail() for p in self.procs)

    def context(self) -> str:
        s = self.last_status()
        last = (f"last status: mode={s.mode!r} holding={s.holding} hold_reason={s.hold_reason!r} "
                f"rejected js/goals={s.joint_states_rejected}/{s.goals_rejected} guard_cuts={s.guard_cuts}"
                if s is not None else "no status received")
        try:  # a process of another run in this ROS domain (same ROS_DOMAIN_ID) mixes its streams into ours
            foreign = {t: sorted(self.publishers_of(t) - KNOWN_NODES) for t in (COMMAND_TOPIC, "/joint_states")}
            strangers = "; ".join(f"{t} also published by {n} (not started by this harness)" for t, n in foreign.items() if n)
        except Exception as exc:  # noqa: BLE001 - the context of a failure must not fail
            strangers = f"publishers not listed: {exc!r}"
        return (f"{len(self.rec.commands)} commands, {len(self.rec.joint_states)} joint_states, "
                f"{len(self.rec.status)} status recorded; {last}\n{strangers + chr(10) if strangers else ''}{self.tails()}")

    def require(self, condition, message: str) -> None:
        if not condition:
            raise AssertionError(f"{message}\n{self.context()}")

    def wait(self, predicate, timeout: float, what: str):
        """Poll ``predicate`` every 5 ms until truthy (its value) or fail after ``timeout`` s."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise Timeout(f"timed out after {timeout:g} s waiting for {what}\n{self.context()}")
            for p in self.procs:
                if p in (self.mock, self.ik) and not p.killed and not p.alive:
                    raise AssertionError(f"{p.name} died while waiting for {what}\n{self.context()}")
            if not self.expect_drive_faults:
                self.require_drives_ok(f"while waiting for {what}")
            time.sleep(0.005)

    # -------------------------------------------------------------- strict drives
    def _on_drive_status(self, name: str, msg) -> None:
        import json

        self.rec.drive_status.append((time.perf_counter(), name, json.loads(msg.data)))

    def drive_faults(self) -> list:
        """(mock name, violation dict) of every strict-drive fault reported so far."""
        return [(name, d.get("violation")) for _, name, d in list(self.rec.drive_status) if d.get("state") == "faulted"]

    def drive_status(self, mock: Proc | None = None) -> dict | None:
        """The latest ~/drive_status of ``mock`` (default: the current mock)."""
        name = (mock or self.mock).name
        return next((d for _, n, d in reversed(self.rec.drive_status) if n == name), None)

    def require_drives_ok(self, when: str = "") -> None:
        faults = self.drive_faults()
        if faults:
            name, v = faults[0]
            raise AssertionError(f"the strict drive of {name} faulted {when}: {v and v.get('message')}\n"
                                 f"{self.context()}")

    def wait_drive_caught_up(self, timeout: float = 30.0) -> None:
        """Wait for the second ~/drive_status (5 Hz) of the current alive mock received after now: the
        commands recorded so far reached its drive before it (same writer, ~0.2 s later at least)."""
        mock = self.mock
        if mock is None or not mock.alive or mock.killed or not mock.params.get("strict_drive"):
            return
        t0 = time.perf_counter()
        self.wait(lambda: sum(1 for t, n, _ in list(self.rec.drive_status) if t > t0 and n == mock.name) >= 2,
                  timeout, f"two fresh ~/drive_status from {mock.name}")

    # -------------------------------------------------------------- graph helpers
    def _node_names(self, infos) -> set[str]:
        # '_NODE_NAME_UNKNOWN_': an endpoint seen before (or after) its node's graph information,
        # e.g. of a process that just exited; transient, so not counted
        return {i.node_name for i in infos if not i.node_name.startswith("_")}

    def publishers_of(self, topic: str) -> set[str]:
        return self._node_names(self.node.get_publishers_info_by_topic(topic))

    def subscribers_of(self, topic: str) -> set[str]:
        return self._node_names(self.node.get_subscriptions_info_by_topic(topic))

    # -------------------------------------------------------------- processes
    def start_mock(self, timeout: float = 30.0, remaps: dict | None = None, **params) -> Proc:
        """Start a mock_robot process; returns once its first /joint_states arrived here."""
        if self.mock is not None and self.mock.alive:
            raise RuntimeError("a mock is already running: kill it first")
        name = unique("e2e_mock")
        KNOWN_NODES.add(name)
        n0 = len(self.rec.joint_states)
        self.mock = Proc(name, "roboplan_ik_ros.sim.mock_robot",
                         {"rate_hz": 100.0, "strict_drive": True, "command_period": 0.002, "rt_priority": 40, **params},
                         self.log_dir,
                         remaps)
        self.procs.append(self.mock)
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
        from std_msgs.msg import String

        latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.mock.drive_sub = self.node.create_subscription(
            String, f"/{name}/drive_status", lambda m, n=name: self._on_drive_status(n, m), latched)
        self.wait(lambda: name in self.publishers_of("/joint_states"), timeout, f"{name} on /joint_states")
        self.wait(lambda: len(self.rec.joint_states) > n0, timeout, f"joint_states from {name}")
        foreign = self.publishers_of("/joint_states") - KNOWN_NODES
        self.require(not foreign, f"/joint_states has publishers this harness did not start: {sorted(foreign)}; "
                                  "the e2e scenarios need the ROS domain to themselves")
        return self.mock

    def start_ik(self, config: Path, timeout: float = 30.0) -> Proc:
        """Start an ik_controller process; returns once its lifecycle services are up."""
        from lifecycle_msgs.srv import ChangeState, GetState
        from rcl_interfaces.srv import GetParameters, SetParameters
        from roboplan_ik_interfaces.msg import ControllerStatus

        import yaml

        name = unique("e2e_ik")
        KNOWN_NODES.add(name)
        # description_timeout: the latched /robot_description can take > 10 s (the default) to be discovered with
        # one core busy elsewhere (seen once in test_e2e_chaos's SIGTERM round); a generous timeout, not a rate
        proc = Proc(name, "roboplan_ik_ros.node.ik_controller",
                    {"config_file": str(config), "description_timeout": DESCRIPTION_TIMEOUT}, self.log_dir)
        self.procs.append(proc)
        if self.ik is None:
            self.ik = proc
            node_cfg = (yaml.safe_load(Path(config).read_text()) or {}).get("node") or {}
            self.rate_hz = float(node_cfg.get("control_rate_hz", 500.0))  # what check() starts from
        proc.change = self.node.create_client(ChangeState, f"/{name}/change_state")
        proc.get = self.node.create_client(GetState, f"/{name}/get_state")
        proc.set_params = self.node.create_client(SetParameters, f"/{name}/set_parameters")
        proc.get_params = self.node.create_client(GetParameters, f"/{name}/get_parameters")
        proc.status_sub = self.node.create_subscription(
            ControllerStatus, f"/{name}/status", self._on_status if proc is self.ik else (lambda m: None), 100)
        self.wait(lambda: proc.change.service_is_ready() and proc.get.service_is_ready(), timeout,
                  f"/{name}/change_state and get_state")
        return proc

    def stop_all(self) -> None:
        for p in reversed(self.procs):
            p.stop()

    def close(self) -> None:
        try:
            self.stop_all()
        finally:
            self.spinner.stop()
            self.node.destroy_node()

    # -------------------------------------------------------------- services
    def call(self, client, request, timeout: float = 30.0, what: str = "service"):
        self.wait(client.service_is_ready, timeout, f"{what} service")
        done = threading.Event()
        future = client.call_async(request)
        future.add_done_callback(lambda _: done.set())
        if not done.wait(timeout):
            raise Timeout(f"no response from {what} within {timeout:g} s\n{self.context()}")
        return future.result()

    def transition(self, transition_id: int, proc: Proc | None = None, timeout: float = 60.0) -> bool:
        """ChangeState ``transition_id`` on ``proc`` (default: the ik node): the response's success.

        A response can be lost in DDS while the transition itself completes (the node's rclpy then logs
        "failed to send response (timeout): client will not receive response"), as a lifecycle manager
        meets it too: while no response has come for RESPONSE_CHECK_S, ~/get_state is asked; once it
        reports the transition's goal state for RESPONSE_GRACE_S more without a response, the transition
        counts as done, recorded in ``proc.lost_responses`` (and printed). No response and another state
        by ``timeout``: :class:`Timeout`, saying what ~/get_state reported."""
        from lifecycle_msgs.msg import Transition
        from lifecycle_msgs.srv import ChangeState

        proc = proc or self.ik
        name, goal = transition_goal(transition_id)
        what = f"/{proc.name}/change_state ({name})"
        self.wait(proc.change.service_is_ready, timeout, f"{what} service")
        done = threading.Event()
        future = proc.change.call_async(ChangeState.Request(transition=Transition(id=transition_id)))
        future.add_done_callback(lambda _: done.set())
        deadline = time.perf_counter() + timeout
        state, at_goal_since = "(not asked)", None
        while not done.wait(RESPONSE_CHECK_S):
            now = time.perf_counter()
            if now > deadline:
                break
            state = self._state_now(proc) or state
            if state != goal:
                at_goal_since = None
            elif at_goal_since is None:
                at_goal_since = now
            elif now - at_goal_since >= RESPONSE_GRACE_S:
                break
        if done.is_set():
            return bool(future.result().success)
        proc.change.remove_pending_request(future)
        if at_goal_since is not None:
            note = f"{name}: no response; ~/get_state: {goal!r} (the transition completed)"
            proc.lost_responses.append(note)
            print(f"[e2e] {proc.name} {note}", flush=True)
            return True
        raise Timeout(f"no response from {what} within {timeout:g} s, and ~/get_state says {state!r}, not the "
                      f"transition's goal state {goal!r}\n{self.context()}")

    def _state_now(self, proc: Proc, wait: float = 2.0) -> str | None:
        """~/get_state's label, or None without an answer within ``wait`` [s] (the node busy in a transition)."""
        from lifecycle_msgs.srv import GetState

        done = threading.Event()
        future = proc.get.call_async(GetState.Request())
        future.add_done_callback(lambda _: done.set())
        if not done.wait(wait):
            proc.get.remove_pending_request(future)
            return None
        return future.result().current_state.label

    def state(self, proc: Proc | None = None) -> str:
        from lifecycle_msgs.srv import GetState

        proc = proc or self.ik
        return self.call(proc.get, GetState.Request(), what=f"/{proc.name}/get_state").current_state.label

    def configure(self, proc: Proc | None = None) -> bool:
        from lifecycle_msgs.msg import Transition

        return self.transition(Transition.TRANSITION_CONFIGURE, proc)

    def activate(self, timeout: float = 30.0) -> None:
        """Configure and activate the ik node once every connection is matched (the recorder sees the
        node's command publisher, the node subscribes /joint_states, the mock the commands, the goal
        topics and ~/status are matched): no command can be missed."""
        from geometry_msgs.msg import PoseStamped
        from lifecycle_msgs.msg import Transition
        from sensor_msgs.msg import JointState

        ik = self.ik
        self.require(self.configure(), f"configure of {ik.name} failed")
        foreign = self.publishers_of(COMMAND_TOPIC) - KNOWN_NODES
        self.require(not foreign, f"{COMMAND_TOPIC} has publishers this harness did not start: {sorted(foreign)}")
        self.wait(lambda: ik.name in self.publishers_of(COMMAND_TOPIC) and self._cmd_sub.get_publisher_count() > 0,
                  timeout, "the recorder matched to the node's command publisher")
        self.wait(lambda: ik.name in self.subscribers_of("/joint_states"), timeout, "the node on /joint_states")
        if self.mock is not None and self.mock.alive and "command_topic" not in self.mock.params:
            self.wait(lambda: self.mock.name in self.subscribers_of(COMMAND_TOPIC), timeout,
                      "the mock on the command topic")
        self.wait(lambda: ik.status_sub.get_publisher_count() > 0, timeout, f"/{ik.name}/status")
        self.pose_pub = self.node.create_publisher(PoseStamped, f"/{ik.name}/ee/target_pose", 10)
        self.joints_pub = self.node.create_publisher(JointState, f"/{ik.name}/posture/target_joints", 10)
        self.wait(lambda: self.pose_pub.get_subscription_count() > 0 and self.joints_pub.get_subscription_count() > 0,
                  timeout, "the node's goal subscriptions")
        self.events["activate_request"] = time.perf_counter()
        self.require(self.transition(Transition.TRANSITION_ACTIVATE), f"activate of {ik.name} failed")
        self.events["activated"] = time.perf_counter()
        self.events["activated_wall"] = time.time()
        # The node holds the activation pose until a goal: wait for it to arrive here before a scenario
        # sends one. Discovery is matched from this side only, so under load the node's writer may
        # still drop its very first command; the held ones that follow are identical.
        t0 = self.events["activate_request"]
        self.wait(lambda: any(tc > t0 for tc, _ in self.rec.commands), timeout, "a first command after activation")

    # -------------------------------------------------------------- parameters
    def set_param(self, name: str, value, proc: Proc | None = None):
        """SetParameters on ``proc`` (default: the ik node): the SetParametersResult."""
        from rcl_interfaces.srv import SetParameters
        from rclpy.parameter import Parameter

        proc = proc or self.ik
        if not hasattr(proc, "set_params"):
            proc.set_params = self.node.create_client(SetParameters, f"/{proc.name}/set_parameters")
        req = SetParameters.Request(parameters=[Parameter(name, value=value).to_parameter_msg()])
        return self.call(proc.set_params, req, what=f"/{proc.name}/set_parameters").results[0]

    def get_param(self, name: str, proc: Proc | None = None):
        from rcl_interfaces.srv import GetParameters
        from rclpy.parameter import parameter_value_to_python

        proc = proc or self.ik
        res = self.call(proc.get_params, GetParameters.Request(names=[name]), what=f"/{proc.name}/get_parameters")
        return parameter_value_to_python(res.values[0])

    # -------------------------------------------------------------- goals
    def pose_msg(self, T: pin.SE3, frame: str = ROOT_FRAME):
        from geometry_msgs.msg import PoseStamped

        ps = PoseStamped()
        ps.header.frame_id = frame
        ps.pose.position.x, ps.pose.position.y, ps.pose.position.z = (float(x) for x in T.translation)
        x, y, z, w = pin.Quaternion(T.rotation).coeffs()  # (x, y, z, w)
        ps.pose.orientation.x, ps.pose.orientation.y, ps.pose.orientation.z, ps.pose.orientation.w = (
            float(x), float(y), float(z), float(w))
        return ps

    def send_pose(self, T: pin.SE3, frame: str = ROOT_FRAME) -> float:
        """Publish a pose goal for the ee task; the time it was sent."""
        self.pose_pub.publish(self.pose_msg(T, frame))
        return time.perf_counter()

    def send_joints(self, q7) -> float:
        """Publish a joint goal for the posture task; the time it was sent."""
        from sensor_msgs.msg import JointState

        self.joints_pub.publish(JointState(name=list(ARM), position=[float(x) for x in q7]))
        return time.perf_counter()

    # -------------------------------------------------------------- state
    def last_status(self):
        return self.rec.status[-1][2] if self.rec.status else None

    def status_since(self, t: float):
        return [s for (tr, _, s) in self.rec.status if tr > t]

    def wait_status(self, predicate, timeout: float, what: str, since: float | None = None):
        """The first status received after ``since`` (default: now) satisfying ``predicate``."""
        start = time.perf_counter() if since is None else since
        return self.wait(lambda: next((s for (tr, _, s) in list(self.rec.status) if tr > start and predicate(s)),
                                      None), timeout, what)

    def wait_mode(self, mode: str, timeout: float = 30.0, since: float | None = None):
        return self.wait_status(lambda s: s.mode == mode, timeout, f"~/status mode {mode!r}", since)

    def measured(self, before: float | None = None) -> np.ndarray | None:
        """The latest valid (inside the joint limits) /joint_states arm positions received before
        ``before`` (default: any)."""
        for t, q, valid in reversed(self.rec.joint_states):
            if valid and (before is None or t < before):
                return q
        return None

    def tcp(self) -> pin.SE3:
        """The mock robot's TCP pose from its latest valid /joint_states (the test's own model)."""
        q = self.measured()
        assert q is not None, "no joint_states"
        return self.panda.fk(q)

    def wait_reached(self, T_goal: pin.SE3, timeout: float = 60.0, tol: tuple = (1e-3, 1e-3),
                     what: str = "the goal", since: float | None = None) -> float:
        """Wait until the robot's TCP (measured) is within ``tol`` (m, rad) of ``T_goal``; the time
        taken since ``since`` (default: now; e.g. when the goal was sent)."""
        t0 = time.perf_counter() if since is None else since

        def reached():
            e = pose_errors(T_goal, self.tcp())
            return e[0] <= tol[0] and e[1] <= tol[1]

        self.wait(reached, timeout, f"the TCP within {tol[0] * 1e3:g} mm / {tol[1] * 1e3:g} mrad of {what} "
                                    f"(now {tuple(round(x, 5) for x in pose_errors(T_goal, self.tcp()))})")
        return time.perf_counter() - t0

    def count_commands(self, since: float) -> int:
        n = 0
        for t, _ in reversed(self.rec.commands):
            if t <= since:
                break
            n += 1
        return n

    def wait_commands(self, n: int, since: float | None = None, timeout: float = 30.0, what: str = "") -> None:
        start = time.perf_counter() if since is None else since
        self.wait(lambda: self.count_commands(start) >= n, timeout, what or f"{n} commands")

    def commands_between(self, t0: float, t1: float = math.inf) -> list:
        return [(t, c) for t, c in self.rec.commands if t0 < t <= t1]

    # -------------------------------------------------------------- invariants
    def check(self, **kw) -> dict:
        """:func:`check_commands` on everything recorded so far, with the processes' logs on failure."""
        kw.setdefault("rate_hz", self.rate_hz)
        try:
            figures = check_commands(self.rec, self.panda, **kw)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{self.context()}") from None
        if not self.expect_drive_faults:
            self.wait_drive_caught_up()
            self.require_drives_ok("(checked after the scenario)")
            strict = [p for p in self.procs if p.params.get("strict_drive") and hasattr(p, "drive_sub")]
            figures["strict_drives_ok"] = f"{len(strict)}/{len(strict)}"
        return figures


#: node names the harness started in this session (killed ones linger in the DDS graph for a while)
KNOWN_NODES: set[str] = set()


# ===================================================================================== the checker
def check_commands(rec: Recording, robot: Panda, *, rate_hz: float = 500.0, rate_changes=(),
                   n_joints: int = 7) -> dict:
    """The safety invariants of one recorded command stream; raises AssertionError naming the first
    violation, returns the measured figures.

    1. every command has ``n_joints`` finite values inside the joint limits (``LIMIT_TOL``);
    2. consecutive commands differ by at most ``v_max * dt`` per joint (1e-9 + 1e-6 relative), with
       ``dt = 1 / control rate`` in effect; ``rate_changes`` = [(t_request, t_response, new_hz)]
       (perf_counter times around a SetParameters call): from ``RATE_MARGIN`` before the request to
       ``RATE_MARGIN`` after the response both rates count and the larger dt is used;
    3. re-seed points are the only exceptions to 2, and each equals the measured position (within
       ``RESEED_TOL``; the robot is stationary then): the first command (after activation: the
       recording starts before it), compared with the latest valid /joint_states before it, and,
       for each run of ``stale`` statuses, the first command after the run's first status that
       jumps (at most one per run, received before the run's next non-stale status + 0.5 s),
       compared with the first valid /joint_states received after the run's first status;
    4. ``guard_cuts`` is 0 in every status;
    (A command lost between the node and the recorder shows as a jump in 2: the recorder's reliable subscription
    keeps 20 s of commands; no DDS message-lost event, see :meth:`Rig._create_command_subscription`.)

    Figures: ``activation_reseeds`` (the first command, 0 or 1) and ``stale_gap_reseeds`` (jumps after a
    stale run that were checked as re-seeds; a re-seed at the last command, no jump, is not counted)."""
    cmds = rec.commands
    figures = {"commands": len(cmds), "max_step_ratio": 0.0, "activation_reseeds": 0, "stale_gap_reseeds": 0}
    for k, (t, c) in enumerate(cmds):
        assert c.shape == (n_joints,), f"command {k}: {c.size} values, expected {n_joints}"
        assert np.isfinite(c).all(), f"command {k}: non-finite values {c.tolist()}"
        bad = (c < robot.lower - LIMIT_TOL) | (c > robot.upper + LIMIT_TOL)
        assert not bad.any(), (f"command {k}: {[ARM[j] for j in np.flatnonzero(bad)]} outside the joint limits: "
                               f"{c.tolist()} (limits {robot.lower.tolist()} .. {robot.upper.tolist()})")

    changes = sorted(rate_changes)

    def period(t_prev: float, t: float) -> float:
        """The largest control period that can lie between commands received at t_prev and t."""
        rates, current = [], rate_hz
        for t_req, t_resp, new_hz in changes:
            if t_req - RATE_MARGIN <= t and t_prev <= t_resp + RATE_MARGIN:  # the step overlaps the change
                rates += [current, new_hz]
            if t_req <= t_prev:
                current = new_hz
        rates.append(current)
        return 1.0 / min(rates)

    # re-seed candidates: the first command, and one jump per run of stale statuses
    reseed_windows = []  # (t_from, t_to)
    run_start = None
    for t, _, s in rec.status:
        if s.mode == "stale" and run_start is None:
            run_start = t
        elif s.mode != "stale" and run_start is not None:
            reseed_windows.append((run_start, t + 0.5))
            run_start = None
    if run_start is not None:
        reseed_windows.append((run_start, math.inf))
    window_used = [False] * len(reseed_windows)

    def check_reseed(k: int, why: str, after: float | None = None) -> None:
        t, c = cmds[k]
        m = None
        if after is None:  # activation: the latest measurement before the command
            m = next((q for tj, q, valid in reversed(rec.joint_states) if valid and tj < t), None)
        else:  # after a stale gap: the first measurement of the returned stream (the recorder may
            # discover a restarted driver later than the node does, so it can arrive after the command)
            m = next((q for tj, q, valid in rec.joint_states if valid and tj > after), None)
        assert m is not None, f"command {k} ({why}): no valid /joint_states to compare with"
        err = np.abs(c - m)
        assert err.max() <= RESEED_TOL, (
            f"command {k} ({why}) is not the measured position: max |command - measured| = {err.max():.3g} rad "
            f"at {ARM[int(err.argmax())]} (tolerance {RESEED_TOL:g}); command {c.tolist()}, measured {m.tolist()}")
        figures["activation_reseeds" if after is None else "stale_gap_reseeds"] += 1

    if cmds:
        check_reseed(0, "the first command after activation")
    for k in range(1, len(cmds)):
        (t0, c0), (t1, c1) = cmds[k - 1], cmds[k]
        dt = period(t0, t1)
        bound = robot.v_max * dt
        step = np.abs(c1 - c0)
        ratio = float((step / bound).max())
        if (step <= bound * (1.0 + STEP_RTOL) + STEP_ATOL).all():
            figures["max_step_ratio"] = max(figures["max_step_ratio"], ratio)
            continue
        w = next((i for i, (a, b) in enumerate(reseed_windows) if a < t1 <= b and not window_used[i]), None)
        if w is None:
            j = int((step / bound).argmax())
            near = [s.mode for (ts, _, s) in rec.status if abs(ts - t1) < 0.3]
            raise AssertionError(
                f"command {k} jumps: |step| = {step[j]:.6g} rad at {ARM[j]} > v_max*dt = {bound[j]:.6g} "
                f"(ratio {ratio:.3f}, dt {dt:g} s); previous {c0.tolist()}, this {c1.tolist()}; "
                f"status modes within 0.3 s: {near}; received {(t1 - t0) * 1e3:.1f} ms after the previous (a "
                f"command lost in transport shows here too)")
        window_used[w] = True
        check_reseed(k, "the first command after a stale gap", after=reseed_windows[w][0])
    for t, _, s in rec.status:
        assert s.guard_cuts == 0, f"~/status guard_cuts = {s.guard_cuts}: the last-line guard had to cut a step"
    return figures


# ===================================================================================== figures
FIGURES: dict[str, dict] = {}


def report(scenario: str, **figures) -> None:
    """Print a scenario's measured figures (shown with -s) and keep them for the summary."""
    FIGURES.setdefault(scenario, {}).update(figures)
    print(f"[e2e] {scenario}: " + ", ".join(f"{k}={_fmt(v)}" for k, v in figures.items()), flush=True)


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def summary() -> str:
    """All scenarios' figures, one line each; also written as JSON to $E2E_FIGURES when set."""
    lines = ["e2e safety figures:"]
    for name, fig in FIGURES.items():
        lines.append(f"  {name}: " + ", ".join(f"{k}={_fmt(v)}" for k, v in fig.items()))
    out = os.environ.get("E2E_FIGURES")
    if out:
        import json

        Path(out).write_text(json.dumps(FIGURES, indent=1, default=str))
    return "\n".join(lines)


@pytest.fixture
def rig(ros, tmp_path):
    """A fresh :class:`Rig` per test (its processes closed afterwards); import it into a test module
    (``from e2e import rig``) to use it."""
    r = Rig(tmp_path)
    try:
        yield r
    finally:
        r.close()
