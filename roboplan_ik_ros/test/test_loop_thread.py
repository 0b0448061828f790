"""LoopThread (node/loop_thread.py): its schedule and its SCHED_FIFO request (no DDS)."""

import os
import threading

import pytest

from conftest import wait_until
from roboplan_ik_ros.node import loop_thread
from roboplan_ik_ros.node.loop_thread import LoopThread

pytestmark = pytest.mark.skipif(not hasattr(os, "SCHED_FIFO"), reason="Linux scheduling API")


def run_briefly(**kwargs):
    """Start a LoopThread, record what its ticks see of their own thread's scheduling, stop it."""
    outcome, seen = [], []

    def tick(t0: float) -> None:
        seen.append((threading.current_thread().name, os.sched_getscheduler(0), os.sched_getparam(0).sched_priority))

    loop = LoopThread(0.002, tick, on_priority=lambda ok, message: outcome.append((ok, message)), **kwargs)
    loop.start()
    try:
        wait_until(lambda: len(seen) >= 5, what="five ticks")
    finally:
        loop.stop()
    return outcome, seen


def test_the_loop_thread_gets_the_fifo_priority_it_asks_for_or_says_why_not():
    outcome, seen = run_briefly(priority=10)
    assert len(outcome) == 1
    ok, message = outcome[0]
    name, policy, priority = seen[-1]
    assert name == "control_loop"
    if ok:  # this machine allows it (root, CAP_SYS_NICE or an rtprio limit)
        assert message == "SCHED_FIFO priority 10" and (policy, priority) == (os.SCHED_FIFO, 10)
    else:
        assert "node.loop_priority" in message and policy == os.SCHED_OTHER
    assert os.sched_getscheduler(0) == os.SCHED_OTHER  # only the loop thread, never the caller's


def test_a_refused_priority_is_reported_and_the_loop_still_ticks(monkeypatch):
    def refuse(pid, policy, param):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(loop_thread.os, "sched_setscheduler", refuse)
    outcome, seen = run_briefly(priority=50)
    assert outcome and not outcome[0][0]
    message = outcome[0][1]
    for words in ("Operation not permitted", "normal priority", "rtprio", "node.loop_priority: 0"):
        assert words in message
    assert len(seen) >= 5 and all(policy == os.SCHED_OTHER for _, policy, _ in seen)


def test_priority_zero_asks_nothing():
    outcome, seen = run_briefly(priority=0)
    assert outcome == [] and all(policy == os.SCHED_OTHER for _, policy, _ in seen)
