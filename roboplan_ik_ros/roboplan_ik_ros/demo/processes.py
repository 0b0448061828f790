"""The demo's child processes: mock_robot, ik_controller and mock_camera run as nodes in child processes of
this interpreter (``Child``), in an isolated ROS environment (``ros_environment``)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import tempfile
from pathlib import Path


# ------------------------------------------------------------------------- processes
def ros_environment() -> None:
    """Isolating defaults for a standalone run (variables already set win)."""
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    os.environ.setdefault("ROS_DOMAIN_ID", str(random.randint(1, 100)))
    os.environ.setdefault("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")
    os.environ.setdefault("ROS_LOG_DIR", tempfile.mkdtemp(prefix="roboplan_ik_demo-log."))


class Child:
    """A node in a child process of this interpreter (``python -m module --ros-args -p k:=v``)."""

    def __init__(self, module: str, params: dict, log_path: Path) -> None:
        args = [sys.executable, "-m", module, "--ros-args"]
        for k, v in params.items():
            value = str(v).lower() if isinstance(v, bool) else str(v)
            args += ["-p", f"{k}:={value}"]
        self.log_path = log_path
        self._log = open(log_path, "w")
        self.proc = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT)
        self.pid = self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, timeout: float = 5.0) -> None:
        if self.alive():
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()

    def tail(self, n: int = 15) -> str:
        try:
            return "\n".join(self.log_path.read_text().splitlines()[-n:])
        except OSError:
            return ""


def default_config() -> str:
    from ..node.ik_controller import default_config_file

    return default_config_file("panda")
