"""Test setup: ROS 2 environment defaults and the rclpy harness of the node tests.

The environment defaults isolate a run (LOCALHOST discovery, a per-run ROS_DOMAIN_ID, a temporary
log dir) when pytest is started without ``make test``, and shorten two Fast DDS periods that bound how
long the tests wait for discovery and acknowledgements (``fastdds_test_profile.xml``); variables
already set win. They are set at import, before any test imports rclpy. The ROS fixtures are lazy: core tests never start rclpy.
"""

from __future__ import annotations

import os
import tempfile
import threading
import time

import pytest

os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
os.environ.setdefault("ROS_DOMAIN_ID", str(1 + os.getpid() % 100))
os.environ.setdefault("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")
os.environ.setdefault("ROS_LOG_DIR", tempfile.mkdtemp(prefix="roboplan_ik_ros-test-log."))
# Fast DDS (3.x): participants re-announce every 0.25 s and reliable writers heartbeat every 0.1 s (see the
# file); the processes the tests start inherit it.
os.environ.setdefault("FASTDDS_DEFAULT_PROFILES_FILE",
                      os.path.join(os.path.dirname(os.path.abspath(__file__)), "fastdds_test_profile.xml"))


#: [s] a test (setup, call and teardown) still running after this long is hung (the longest take about a minute):
#: faulthandler writes every thread's stack to END_REPORT and ends the run (exit code 1) instead of letting it wait
#: for CI's limit. Its watchdog is a C thread: it fires even when the hang holds the GIL (a DDS deadlock: README,
#: "Fast DDS"). 0: no watchdog.
HANG_TIMEOUT = float(os.environ.get("ROBOPLAN_TEST_HANG_TIMEOUT", "900"))
#: the report of a test process that ended abnormally: the running test's id, then every Python thread's stack as
#: faulthandler wrote it: after "Timeout" for a hang, after "Fatal Python error" (SIGSEGV, SIGABRT: a native crash
#: that takes pytest's own report with it) for a crash. Removed when the run ends normally, so it exists only after
#: one; `make test` prints it.
END_REPORT = os.environ.get("ROBOPLAN_TEST_END_REPORT", os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "build", "logs",
    "test_process_end.txt"))
_end_file = None


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "kernel: needs the compiled kernels (skipped under ROBOPLAN_NO_COMPILE)")


def pytest_unconfigure(config) -> None:
    if _end_file is not None:
        import faulthandler

        faulthandler.disable()  # not into the closed file (pytest's own unconfigure disables it too)
        _end_file.close()
        try:
            os.remove(END_REPORT)
        except FileNotFoundError:  # another run in this tree removed it
            pass


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Names this test first in END_REPORT and arms the hang watchdog (HANG_TIMEOUT) for it; on the first test,
    points faulthandler's fatal-signal dump (which pytest arms on stderr) at the report too."""
    import faulthandler

    global _end_file
    if _end_file is None:
        os.makedirs(os.path.dirname(END_REPORT), exist_ok=True)
        _end_file = open(END_REPORT, "w")  # noqa: SIM115 - open for the whole run, closed in pytest_unconfigure
        faulthandler.enable(file=_end_file, all_threads=True)
    _end_file.seek(0)
    _end_file.truncate()
    _end_file.write(f"{item.nodeid}: the test process ended while this test ran (its setup, call or teardown); "
                    f"a hang if the stacks below follow 'Timeout' (still running after {HANG_TIMEOUT:g} s, "
                    f"ROBOPLAN_TEST_HANG_TIMEOUT), a crash if they follow 'Fatal Python error':\n")
    _end_file.flush()
    if HANG_TIMEOUT <= 0:
        yield
        return
    faulthandler.dump_traceback_later(HANG_TIMEOUT, exit=True, file=_end_file)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


def pytest_collection_modifyitems(config, items) -> None:
    """Under ``ROBOPLAN_NO_COMPILE`` (``make test-no-compile``: the core as installed without a compiler) the tests
    that compare a kernel with its Python path, or need one, skip: those marked ``kernel`` and those whose name
    says so (``kernel`` or ``compiled`` in it)."""
    from roboplan_ik_ros.core.compiled_library import NO_COMPILE, kernels_disabled

    if not kernels_disabled():
        return
    skip = pytest.mark.skip(reason=f"{NO_COMPILE} is set: no compiled kernel is loaded")
    for item in items:
        name = item.name.lower()
        if item.get_closest_marker("kernel") or "kernel" in name or "compiled" in name:
            item.add_marker(skip)


class Spinner:
    """Spins one executor (with the given nodes) in a daemon thread until :meth:`stop`."""

    def __init__(self, *nodes) -> None:
        from roboplan_ik_ros.node.spin import make_executor

        self.executor = make_executor()
        for n in nodes:
            self.executor.add_node(n)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        from roboplan_ik_ros.node.spin import spin_until_shutdown

        spin_until_shutdown(self.executor, self._stop)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5.0)
        self.executor.shutdown()


def wait_future(future, timeout: float = 60.0):
    """Block until an rclpy future (completed by a Spinner thread) is done; its result."""
    done = threading.Event()
    future.add_done_callback(lambda _: done.set())
    if not done.wait(timeout):
        raise TimeoutError(f"no result within {timeout} s")
    return future.result()


def wait_until(predicate, timeout: float = 60.0, what: str = "condition"):
    """Poll ``predicate`` (state produced by Spinner threads) every 5 ms until true."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.005)
    raise TimeoutError(f"timed out after {timeout} s waiting for {what}")


def fifo_permitted(priority: int) -> bool:
    """Whether this machine lets a thread of this process run SCHED_FIFO at ``priority`` (root or
    CAP_SYS_NICE with real-time time in its cgroup, or an rtprio limit): asked of the kernel, from a
    throwaway thread, so a test can say which outcome the code under test must report here."""
    if not hasattr(os, "SCHED_FIFO"):
        return False
    granted = []

    def probe() -> None:
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
        except OSError:
            granted.append(False)
        else:
            granted.append(True)

    t = threading.Thread(target=probe)
    t.start()
    t.join()
    return granted[0]


@pytest.fixture(scope="session")
def ros():
    import rclpy

    rclpy.init()
    yield
    rclpy.try_shutdown()


@pytest.fixture(scope="module")
def mock_robot(ros):
    """The Panda mock robot at 250 Hz, spun in its own thread for one test module (the end-to-end
    tests start their own mocks as processes and need /joint_states to themselves)."""
    from rclpy.parameter import Parameter

    from roboplan_ik_ros.sim.mock_robot import MockRobot

    node = MockRobot(parameter_overrides=[Parameter("rate_hz", value=250.0)])
    spinner = Spinner(node)
    yield node
    spinner.stop()
    node.destroy_node()


# ----------------------------------------------------------------------- node test helpers
CONFIG_DIR = __import__("pathlib").Path(__file__).resolve().parents[1] / "config"
_names = iter(range(1, 10_000))


def unique_name(prefix: str) -> str:
    return f"{prefix}_{os.getpid()}_{next(_names)}"


def write_config(tmp_dir, *, drop_barriers=("self_collision",), node=None, edit=None) -> str:
    """panda.yaml with barriers dropped, ``node:`` keys overridden and ``edit(data)`` applied."""
    import yaml

    data = yaml.safe_load((CONFIG_DIR / "panda.yaml").read_text())
    data["barriers"] = [b for b in data.get("barriers", []) if b["name"] not in drop_barriers]
    data.setdefault("node", {}).update(node or {})
    if edit is not None:
        edit(data)
    path = os.path.join(str(tmp_dir), unique_name("config") + ".yaml")
    with open(path, "w") as f:
        yaml.safe_dump(data, f)
    return path


class LifecycleClient:
    """Drives a lifecycle node through its lifecycle_msgs services from a separate node, and
    records what the controller publishes."""

    def __init__(self, target: str, command_topic: str = "/forward_position_controller/commands") -> None:
        import rclpy
        from lifecycle_msgs.srv import ChangeState, GetState
        from rcl_interfaces.srv import SetParameters
        from std_msgs.msg import Float64MultiArray

        from roboplan_ik_interfaces.msg import ControllerStatus

        self.target = target
        self.node = rclpy.create_node(unique_name("test_client"))
        self._change = self.node.create_client(ChangeState, f"/{target}/change_state")
        self._get = self.node.create_client(GetState, f"/{target}/get_state")
        self._params = self.node.create_client(SetParameters, f"/{target}/set_parameters")
        self.status = []
        self.commands = []  # (perf_counter time, data tuple)
        self.node.create_subscription(ControllerStatus, f"/{target}/status", self.status.append, 10)
        self.node.create_subscription(Float64MultiArray, command_topic,
                                      lambda m: self.commands.append((time.perf_counter(), tuple(m.data))), 100)
        self.spinner = Spinner(self.node)

    def transition(self, transition_id: int) -> bool:
        from lifecycle_msgs.msg import Transition
        from lifecycle_msgs.srv import ChangeState

        assert self._change.wait_for_service(timeout_sec=10.0), "no change_state service"
        req = ChangeState.Request(transition=Transition(id=transition_id))
        return wait_future(self._change.call_async(req), timeout=20.0).success

    def state(self) -> str:
        from lifecycle_msgs.srv import GetState

        assert self._get.wait_for_service(timeout_sec=10.0)
        return wait_future(self._get.call_async(GetState.Request())).current_state.label

    def set_parameter(self, name: str, value):
        from rclpy.parameter import Parameter
        from rcl_interfaces.srv import SetParameters

        assert self._params.wait_for_service(timeout_sec=10.0)
        req = SetParameters.Request(parameters=[Parameter(name, value=value).to_parameter_msg()])
        return wait_future(self._params.call_async(req)).results[0]

    def wait_status(self, predicate, timeout: float = 60.0, what: str = "status"):
        start = len(self.status)
        return wait_until(lambda: next((s for s in self.status[start:] if predicate(s)), None), timeout, what)

    def close(self) -> None:
        self.spinner.stop()
        self.node.destroy_node()
