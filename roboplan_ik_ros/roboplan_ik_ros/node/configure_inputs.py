"""What configure reads from outside the node: the config file (the packaged one by default), the URDF/SRDF
(the parameter, else the newest latched text kept since construction, else waited for) and the folders
``package://`` URIs resolve against; :class:`ConfigureError` is a configure step's failure. The description
fetching is a part of :class:`~.ik_controller.IKControllerNode` (its base class), run in configure."""

from __future__ import annotations

import os
from pathlib import Path

from rclpy.wait_for_message import wait_for_message
from std_msgs.msg import String

from .descriptions import LATCHED


def default_config_file(robot: str = "panda") -> str:
    """The packaged ``config/<robot>.yaml`` (ament share directory, else the source tree)."""
    try:
        from ament_index_python.packages import get_package_share_directory

        path = Path(get_package_share_directory("roboplan_ik_ros")) / "config" / f"{robot}.yaml"
        if path.is_file():
            return str(path)
    except Exception:  # not installed through ament: fall back to the source tree
        pass
    return str(Path(__file__).resolve().parents[2] / "config" / f"{robot}.yaml")


def description_package_paths() -> list[str]:
    """Folders where ``package://`` URIs may resolve: every ``<prefix>/share`` of AMENT_PREFIX_PATH
    and the example-robot-data share (the demo robots)."""
    paths = [str(Path(p) / "share") for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
    try:
        from ..core.model.robots import example_robot_data_share

        paths.append(str(example_robot_data_share()))
    except (ImportError, FileNotFoundError):
        pass
    return paths


class ConfigureError(Exception):
    """A configure step failed; the message is the reason shown to the user."""


class ConfigureInputs:
    """The URDF/SRDF configure takes, for :class:`~.ik_controller.IKControllerNode` (its ``_param``, its
    ``_descriptions``: the latched ones kept since construction)."""

    def _description(self, name: str, timeout: float, required: bool = True) -> str:
        """Parameter ``name`` if set, else the newest ``/name`` received since construction, else the
        latched topic ``/name`` waited for up to ``timeout``."""
        text = self._param(name)
        if text:
            return text
        topic = self.resolve_topic_name(f"/{name}")  # as remapped, for the messages
        kept = self._descriptions.get(name)
        if kept is not None:
            self.get_logger().info(f"using the {topic} received {kept[1]:.1f} s ago ({len(kept[0])} characters)")
            return kept[0]
        self.get_logger().info(f"waiting up to {timeout:g} s for {topic} (or set the {name!r} parameter)")
        ok, msg = wait_for_message(String, self, f"/{name}", qos_profile=LATCHED, time_to_wait=float(timeout))
        if ok and msg.data:
            return msg.data
        if required:
            raise ConfigureError(
                f"no {'URDF' if name == 'robot_description' else 'SRDF'}: nothing on {topic} within {timeout:g} s "
                f"and the {name!r} parameter is empty; start a robot_state_publisher (or the mock_robot) or "
                f"set the parameter")
        self.get_logger().info(f"no SRDF on {topic}: continuing without one (no joint groups or named states)")
        return ""
