"""Per-message log throttling: every distinct problem is logged at once, its repeats rarely.

rclpy's ``throttle_duration_sec`` throttles per call site, so a burst of different problems
reported from one place would show only the first. Here the key is the message with its numbers
masked, so "quaternion norm 3 is not 1" and "zero quaternion" are logged separately while a
stream of NaN goals with varying values is logged once per period.
"""

from __future__ import annotations

import re

_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf", re.IGNORECASE)


class LogThrottle:
    def __init__(self, period: float = 2.0, max_keys: int = 256) -> None:
        self.period = period  # [s] between two lines of the same kind
        self.max_keys = max_keys
        self._last: dict[str, float] = {}

    def should_log(self, message: str, now: float) -> bool:
        """True if ``message`` (at monotonic time ``now`` [s]) should be logged."""
        key = _NUMBER.sub("#", message)
        last = self._last.get(key)
        if last is not None and now - last < self.period:
            return False
        if len(self._last) >= self.max_keys:
            self._last.clear()
        self._last[key] = now
        return True
