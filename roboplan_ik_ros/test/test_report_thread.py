"""ReportThread: status and diagnostics at their own periods in a thread of their own (node/report_thread.py)."""

import threading
import time

import pytest

from conftest import wait_until
from roboplan_ik_ros.node.report_thread import ReportThread


def test_each_job_runs_at_its_period():
    """The schedule at a clock given here (wake-ups every shortest period, as the thread makes them): the
    status job at each of 50 wake-ups, the diagnostics job at its 5x period, each once after a late wake-up."""
    runs = {"status": 0, "diagnostics": 0}

    def job(name):
        def run():
            runs[name] += 1
        return run

    status_period, diagnostics_period = 0.02, 0.1
    thread = ReportThread([(status_period, job("status")), (diagnostics_period, job("diagnostics"))])
    wakeups = 50
    for k in range(wakeups):
        thread._run(k * status_period)
    assert runs == {"status": wakeups, "diagnostics": round(wakeups * status_period / diagnostics_period)}, runs
    thread._run((wakeups + 20) * status_period)  # a wake-up 20 periods late: each job once, not a burst
    assert runs == {"status": wakeups + 1, "diagnostics": round(wakeups * status_period / diagnostics_period) + 1}


def test_the_jobs_run_in_the_reporting_thread_until_stopped():
    runs = {"status": [], "diagnostics": []}
    main = threading.get_ident()

    def job(name):
        def run():
            assert threading.get_ident() != main and threading.current_thread().name == "reporting"
            runs[name].append(time.perf_counter())
        return run

    thread = ReportThread([(0.02, job("status")), (0.1, job("diagnostics"))])
    thread.start()
    try:
        wait_until(lambda: len(runs["diagnostics"]) >= 4, timeout=30.0, what="four diagnostics reports")
    finally:
        thread.stop()
    thread.stop()  # twice: fine
    stopped = len(runs["status"])
    time.sleep(0.1)
    assert len(runs["status"]) == stopped  # nothing after stop


def test_no_job_or_a_zero_period_is_refused():
    with pytest.raises(ValueError, match="period > 0"):
        ReportThread([])
    with pytest.raises(ValueError, match="period > 0"):
        ReportThread([(0.0, lambda: None)])
