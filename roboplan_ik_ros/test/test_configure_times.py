"""ConfigureTimes (node/configure_times.py): what the node's last configure took and how much of it went to
getting the URDF/SRDF, on a scripted clock (no real time is measured)."""

import types

import pytest

from roboplan_ik_ros.node import configure_times
from roboplan_ik_ros.node.configure_times import ConfigureTimes


@pytest.fixture
def clock(monkeypatch):
    """A clock that moves only when told: ``clock.now`` [s] is both perf_counter() and time()."""
    c = types.SimpleNamespace(now=100.0)
    monkeypatch.setattr(configure_times, "time",
                        types.SimpleNamespace(perf_counter=lambda: c.now, time=lambda: 1000.0 + c.now))
    return c


def test_configuring_records_its_start_and_duration(clock):
    times = ConfigureTimes()
    with times.configuring():
        clock.now += 2.5
    assert times.started == 1100.0 and times.duration_s == 2.5


def test_a_failed_configure_still_records_its_duration(clock):
    times = ConfigureTimes()
    with pytest.raises(RuntimeError), times.configuring():
        clock.now += 0.75
        raise RuntimeError("configure failed")
    assert times.duration_s == 0.75


def test_the_description_waits_add_up_and_exclude_the_rest_of_configure(clock):
    times = ConfigureTimes()
    with times.configuring():
        clock.now += 1.0  # reading the config file
        with times.getting_descriptions():
            clock.now += 0.25  # the URDF
        with times.getting_descriptions():
            clock.now += 0.5  # the SRDF
        clock.now += 2.0  # the scene, the loop, ...
    assert times.descriptions_s == 0.75 and times.duration_s == 3.75
