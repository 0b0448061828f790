"""How long the node's last configure took, and how much of it went to getting the URDF/SRDF (the DDS wait
for the latched /robot_description topics, when they had not arrived yet): ``IKControllerNode.configure_times``,
read by benchmarks (start-up figures with and without that wait)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class ConfigureTimes:
    """``started`` [s, ``time.time()``] when configure's work began; ``duration_s`` [s] of that work (set
    when it ends, also when it fails; 0 until then); ``descriptions_s`` [s] of it spent getting the
    URDF and the SRDF."""

    started: float = field(default_factory=time.time)
    duration_s: float = 0.0
    descriptions_s: float = 0.0

    @contextmanager
    def configuring(self) -> Iterator[None]:
        """Around configure's work: ``started`` and ``duration_s``."""
        self.started = time.time()
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.duration_s = time.perf_counter() - t0

    @contextmanager
    def getting_descriptions(self) -> Iterator[None]:
        """Around getting the URDF/SRDF: added to ``descriptions_s``."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.descriptions_s += time.perf_counter() - t0
