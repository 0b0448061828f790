"""LoopThread and WokenLoopThread (node/loop_thread.py): their schedule and SCHED_FIFO request (no DDS)."""

import os
import threading

import pytest

from conftest import fifo_permitted, wait_until
from roboplan_ik_ros.node import loop_thread
from roboplan_ik_ros.node.loop_thread import (BorrowedThreadPriority, LoopThread, SharedThreadPriority, TickGap,
                                              WokenLoopThread)

pytestmark = pytest.mark.skipif(not hasattr(os, "SCHED_FIFO"), reason="Linux scheduling API")


def run_briefly(woken: bool = False, **kwargs):
    """Start a LoopThread (``woken``: a WokenLoopThread, woken from here), record what its ticks see of their own
    thread's scheduling, stop it."""
    outcome, seen = [], []

    def tick(t0: float) -> None:
        seen.append((threading.current_thread().name, os.sched_getscheduler(0), os.sched_getparam(0).sched_priority))

    on_priority = lambda ok, message: outcome.append((ok, message))  # noqa: E731
    if woken:
        loop = WokenLoopThread(tick, lambda now: None, 0.05, on_priority=on_priority, **kwargs)
    else:
        loop = LoopThread(0.002, tick, on_priority=on_priority, **kwargs)
    loop.start()
    try:
        def ticked_five() -> bool:
            if woken:
                loop.wake()
            return len(seen) >= 5
        wait_until(ticked_five, what="five ticks")
    finally:
        loop.stop()
    assert not loop.is_alive()
    return outcome, seen


@pytest.mark.parametrize("woken", [False, True], ids=["timer", "woken"])
def test_the_loop_thread_gets_the_fifo_priority_it_asks_for_or_says_why_not(woken):
    """Where the machine permits SCHED_FIFO 10 (root, CAP_SYS_NICE or an rtprio limit: asked of the
    kernel first) the loop thread must get it; elsewhere it must say why not (the refusal is also
    forced everywhere by the next test)."""
    permitted = fifo_permitted(10)
    outcome, seen = run_briefly(woken, priority=10)
    assert len(outcome) == 1
    ok, message = outcome[0]
    name, policy, priority = seen[-1]
    assert name == "control_loop"
    assert ok == permitted, (permitted, message)
    if permitted:
        assert message == "SCHED_FIFO priority 10" and (policy, priority) == (os.SCHED_FIFO, 10)
    else:
        assert "node.loop_priority" in message and policy == os.SCHED_OTHER
    assert os.sched_getscheduler(0) == os.SCHED_OTHER  # only the loop thread, never the caller's


@pytest.mark.parametrize("woken", [False, True], ids=["timer", "woken"])
def test_a_refused_priority_is_reported_and_the_loop_still_ticks(monkeypatch, woken):
    def refuse(pid, policy, param):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(loop_thread.os, "sched_setscheduler", refuse)
    outcome, seen = run_briefly(woken, priority=50)
    assert outcome and not outcome[0][0]
    message = outcome[0][1]
    for words in ("Operation not permitted", "normal priority", "rtprio", "node.loop_priority: 0"):
        assert words in message
    assert len(seen) >= 5 and all(policy == os.SCHED_OTHER for _, policy, _ in seen)


def test_priority_zero_asks_nothing():
    outcome, seen = run_briefly(priority=0)
    assert outcome == [] and all(policy == os.SCHED_OTHER for _, policy, _ in seen)


def test_a_woken_loop_ticks_only_when_woken_once_per_wakes_pending_and_ticks_the_watchdog_meanwhile():
    """No wake, no tick: only the watchdog's idle calls, each after an idle period without a wake. Each wake gives a
    tick in the loop's own thread; the wakes that come while a tick runs give one more tick, not one each."""
    ticks, idles, threads = [], [], set()
    release, in_tick = threading.Event(), threading.Event()

    def tick(t0: float) -> None:
        ticks.append(t0)
        threads.add(threading.current_thread().name)
        in_tick.set()
        release.wait(10.0)

    loop = WokenLoopThread(tick, idles.append, idle_period=0.02, name="woken_test")
    loop.start()
    try:
        wait_until(lambda: len(idles) >= 3, what="the watchdog's idle calls")
        assert ticks == []
        loop.wake()
        assert in_tick.wait(10.0)
        for _ in range(5):  # while the first tick runs
            loop.wake()
        release.set()
        wait_until(lambda: len(ticks) == 2, what="the tick for the wakes that came during the first")
        idled = len(idles)
        wait_until(lambda: len(idles) >= idled + 3, what="idle again")
        assert len(ticks) == 2 and threads == {"woken_test"}, (ticks, threads)
    finally:
        release.set()
        loop.stop()
    assert not loop.is_alive()


def test_stopping_a_woken_loop_ends_its_wait_at_once():
    """A WokenLoopThread waiting out a long idle period still stops when asked (stop wakes it): after stop() its
    thread has ended (stop waits at most 5 s for it, the idle period is 60 s)."""
    idles = []
    loop = WokenLoopThread(lambda t0: None, idles.append, idle_period=60.0)
    loop.start()
    wait_until(loop.is_alive, what="the thread started")
    loop.stop()
    assert not loop.is_alive() and idles == []


@pytest.mark.parametrize("refused", [False, True])
def test_a_borrowed_thread_gets_the_priority_and_gets_its_own_back(refused, monkeypatch):
    """Where SCHED_FIFO 20 is permitted (asked of the kernel first) the borrowed thread runs at it and
    gets its own policy back; refused (forced, or not permitted here) it says why and changes nothing."""
    permitted = fifo_permitted(20) and not refused
    if refused:
        def refuse(pid, policy, param):
            raise PermissionError(1, "Operation not permitted")

        monkeypatch.setattr(loop_thread.os, "sched_setscheduler", refuse)
    borrowed = BorrowedThreadPriority(20)
    result, ready, done = {}, threading.Event(), threading.Event()

    def executor_like() -> None:  # a thread this code does not own
        result["why_not"] = borrowed.apply_here()
        result["during"] = (os.sched_getscheduler(0), os.sched_getparam(0).sched_priority)
        result["tid"] = threading.get_native_id()
        ready.set()
        done.wait(5.0)  # stays alive while the owner restores it from outside
        result["after"] = (os.sched_getscheduler(0), os.sched_getparam(0).sched_priority)

    t = threading.Thread(target=executor_like)
    t.start()
    assert ready.wait(5.0)
    assert (not result["why_not"]) == permitted, (permitted, result["why_not"])
    if not permitted:  # said why, nothing changed, nothing to restore
        assert "normal priority" in result["why_not"] and result["during"][0] == os.SCHED_OTHER
        assert borrowed.applied_to is None
    else:
        assert result["during"] == (os.SCHED_FIFO, 20) and borrowed.applied_to == result["tid"]
    borrowed.restore()  # from this thread, by thread id
    done.set()
    t.join(5.0)
    assert result["after"] == (os.SCHED_OTHER, 0) and borrowed.applied_to is None
    borrowed.restore()  # idempotent


def test_run_on_schedule_calls_at_the_period_until_done_or_the_deadline():
    import time

    calls = []

    def step(t):
        calls.append(t)
        return len(calls) == 5

    t0 = time.perf_counter()
    assert loop_thread.run_on_schedule(0.01, step, t0, t0 + 10.0)
    assert len(calls) == 5 and all(b > a for a, b in zip(calls, calls[1:]))
    # not a burst: call k waits for its slot t0 + k period (a late call re-bases the schedule later,
    # never earlier), so this holds however loaded the machine is
    assert all(t >= t0 + k * 0.01 for k, t in enumerate(calls)), [t - t0 for t in calls]
    assert not loop_thread.run_on_schedule(0.01, lambda t: False, time.perf_counter(), time.perf_counter() + 0.05)


def test_tick_gap_wakes_a_waiter_at_the_end_of_the_next_tick_and_times_out_without_one():
    gap = TickGap()
    gap.ended()  # no waiter: nothing is remembered for a later wait
    assert not gap.wait(0.05)  # no tick ended meanwhile: the timeout
    woke = []
    waiter = threading.Thread(target=lambda: woke.append(gap.wait(60.0)))
    waiter.start()
    loop = LoopThread(0.002, lambda t0: gap.ended())
    loop.start()
    try:
        waiter.join(60.0)
    finally:
        loop.stop()
    assert woke == [True]


def _in_thread(fn, name: str):
    """Run ``fn()`` in a new thread named ``name``; its scheduling (policy, priority) as it ends."""
    seen = []

    def body():
        fn()
        seen.append((os.sched_getscheduler(0), os.sched_getparam(0).sched_priority))

    t = threading.Thread(target=body, name=name)
    t.start()
    t.join(10.0)
    return seen[0]


def test_shared_priority_raises_each_thread_that_asks_and_reports_it():
    """Where SCHED_FIFO 15 is permitted (asked of the kernel first) each thread that calls apply_here gets it
    and is named in ``applied`` and in the report; elsewhere the first refusal is reported (forced by the
    next test)."""
    permitted = fifo_permitted(15)
    reports = []
    shared = SharedThreadPriority(15, lambda ok, message: reports.append((ok, message)))
    for name in ("reporting", "solve_ik"):
        policy, priority = _in_thread(lambda n=name: shared.apply_here(n), name)
        assert ((policy, priority) == (os.SCHED_FIFO, 15)) == permitted, (policy, priority, reports)
    if permitted:
        assert shared.applied == ["reporting", "solve_ik"]
        assert reports == [(True, "reporting: SCHED_FIFO priority 15"), (True, "solve_ik: SCHED_FIFO priority 15")]
    else:
        assert shared.applied == [] and len(reports) == 1 and not reports[0][0]
    assert os.sched_getscheduler(0) == os.SCHED_OTHER  # the threads that asked, never the caller


def test_shared_priority_reports_the_first_refusal_only(monkeypatch):
    def refuse(pid, policy, param):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(loop_thread.os, "sched_setscheduler", refuse)
    reports = []
    shared = SharedThreadPriority(49, lambda ok, message: reports.append((ok, message)))
    for name in ("reporting", "solve_ik", "pointcloud"):
        assert _in_thread(lambda n=name: shared.apply_here(n), name)[0] == os.SCHED_OTHER
    assert len(reports) == 1 and not reports[0][0], reports
    assert reports[0][1].startswith("reporting: ") and "Operation not permitted" in reports[0][1]
    assert shared.applied == []


def test_shared_priority_zero_asks_nothing(monkeypatch):
    asked = []
    monkeypatch.setattr(loop_thread.os, "sched_setscheduler", lambda *a: asked.append(a))
    reports = []
    shared = SharedThreadPriority(0, lambda ok, message: reports.append(message))
    _in_thread(lambda: shared.apply_here("reporting"), "reporting")
    assert asked == [] and reports == [] and shared.applied == []
