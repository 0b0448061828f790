"""The node's ``tick_observer`` hook (node/tick_observer.py), what benchmarks time its ticks with: told of every
active tick's start and end, in the thread that runs the tick, with the start and duration the node records."""

import threading

import pytest
from lifecycle_msgs.msg import Transition
from rclpy.parameter import Parameter

from conftest import LifecycleClient, Spinner, unique_name, wait_until, write_config
from roboplan_ik_ros.node.ik_controller import IKControllerNode

T = Transition


class Recorder:
    """A TickObserver writing down each call: ("started", start, thread) and ("ended", start, duration, thread)."""

    def __init__(self) -> None:
        self.calls = []

    def tick_started(self, start: float) -> None:
        self.calls.append(("started", start, threading.current_thread()))

    def tick_ended(self, start: float, duration_s: float) -> None:
        self.calls.append(("ended", start, duration_s, threading.current_thread()))

    def ended(self) -> list:
        return [c for c in self.calls if c[0] == "ended"]


@pytest.fixture
def node_with_observer(ros, mock_robot, tmp_path):
    """Factory: an ik_controller (unique name) with a Recorder as its tick_observer, spun in its own thread,
    configured and activated with ``node`` keys; torn down after."""
    made = []

    def make(node_keys: dict):
        name = unique_name("ik")
        node = IKControllerNode(name, parameter_overrides=[
            Parameter("config_file", value=write_config(tmp_path, node=node_keys))])
        recorder = Recorder()
        node.tick_observer = recorder
        spinner = Spinner(node)
        client = LifecycleClient(name)
        made.append((node, spinner, client))
        assert client.transition(T.TRANSITION_CONFIGURE) and client.transition(T.TRANSITION_ACTIVATE)
        return node, recorder, client, spinner

    yield make
    for node, spinner, client in made:
        client.close()
        spinner.stop()
        node.destroy_node()


@pytest.mark.parametrize("trigger", ["timer", "joint_states"])
def test_every_active_tick_is_observed_at_start_and_end_in_its_thread_with_the_nodes_own_start_and_duration(
        node_with_observer, trigger):
    keys = {"trigger": trigger} if trigger == "timer" else {"trigger": trigger, "state_feedback": "measured"}
    node, recorder, client, spinner = node_with_observer(keys)
    wait_until(lambda: len(recorder.ended()) > 50, what="observed ticks")
    assert client.transition(T.TRANSITION_DEACTIVATE)  # the ticks stop: the record is complete
    calls = recorder.calls
    assert len(calls) % 2 == 0 and calls, calls[-3:]
    for started, ended in zip(calls[0::2], calls[1::2]):  # each tick: its start, then its end, same stamp and thread
        assert started[0] == "started" and ended[0] == "ended", (started, ended)
        assert started[1] == ended[1] and started[2] is ended[3], (started, ended)
    threads = {c[-1] for c in calls}
    assert {t.name for t in threads} == {"control_loop"} and spinner._thread not in threads, threads  # not the executor's
    # the node's own statistics (its diagnostics) hold exactly the ticks observed, with the same numbers
    stats = node._stats
    ended = recorder.ended()
    assert stats.count == len(ended) <= stats.size
    assert [(c[1], c[2]) for c in ended] == list(zip(stats.starts[:stats.count], stats.durations[:stats.count]))


def test_a_removed_observer_is_told_of_no_later_tick(node_with_observer):
    node, recorder, client, _ = node_with_observer({"trigger": "timer"})
    wait_until(lambda: len(recorder.ended()) > 10, what="observed ticks")
    node.tick_observer = None
    seen, ticked = len(recorder.calls), node._stats.count
    wait_until(lambda: node._stats.count > ticked + 20, what="ticks after the observer was removed")
    assert len(recorder.calls) <= seen + 1  # at most the end of the tick running when it was removed
