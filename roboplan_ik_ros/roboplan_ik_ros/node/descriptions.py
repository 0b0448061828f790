"""The newest ``/robot_description`` and ``/robot_description_semantic`` seen since the node started.

robot_state_publisher (and the mock robot) publish the URDF and SRDF once, latched (transient
local). Subscribing only inside configure makes configure wait for DDS to match the new reader
with the publisher: usually 0.1-0.4 s, at random ~3 s here (Fast DDS's announcement period). The
node therefore listens from construction on, while unconfigured, and configure takes the newest
text received; only when nothing has arrived yet does configure wait (``description_timeout``).
A description published again (robot_state_publisher does on a parameter change) replaces the
kept one, and the next configure uses it.
"""

from __future__ import annotations

import threading
import time
from functools import partial

from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import String

LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


class LatchedDescriptions:
    """Subscribes ``node`` to ``/<name>`` (LATCHED) for each name and keeps the newest non-empty
    text of each, with its arrival time (time.monotonic, s). Callbacks run in the node's executor."""

    def __init__(self, node, names: tuple[str, ...]) -> None:
        self._lock = threading.Lock()
        self._texts: dict[str, tuple[str, float]] = {}
        self.subscriptions = [
            node.create_subscription(String, f"/{name}", partial(self._on_message, name), LATCHED)
            for name in names
        ]

    def _on_message(self, name: str, msg: String) -> None:
        if msg.data:  # an empty string is no description
            with self._lock:
                self._texts[name] = (msg.data, time.monotonic())

    def get(self, name: str) -> tuple[str, float] | None:
        """(text, seconds since it arrived) of the newest ``/<name>``, or None if none arrived."""
        with self._lock:
            kept = self._texts.get(name)
        return None if kept is None else (kept[0], time.monotonic() - kept[1])
