"""ReportThread: status and diagnostics at their own periods in a thread of their own (node/report_thread.py)."""

import threading
import time

import pytest

from conftest import wait_until
from roboplan_ik_ros.node.report_thread import ReportThread


def test_each_job_runs_at_its_period_in_the_reporting_thread():
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
    n_status, n_diag = len(runs["status"]), len(runs["diagnostics"])
    # the status job at its shorter period ran more often (about five times as often on an idle machine; a busy
    # one delays the wake-ups and both jobs run at most once per wake-up)
    assert n_status > n_diag, (n_status, n_diag)
    thread.stop()  # twice: fine
    stopped = n_status
    time.sleep(0.1)
    assert len(runs["status"]) == stopped  # nothing after stop


def test_no_job_or_a_zero_period_is_refused():
    with pytest.raises(ValueError, match="period > 0"):
        ReportThread([])
    with pytest.raises(ValueError, match="period > 0"):
        ReportThread([(0.0, lambda: None)])
