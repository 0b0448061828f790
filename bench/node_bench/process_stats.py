"""The node process's figures read from outside (/proc: each thread's and the process's CPU, its child
processes, its RSS, sampled over time) and from inside (tracemalloc; the recording buffers' pages)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import numpy as np


CLK_TCK = os.sysconf("SC_CLK_TCK")
TICK_THREAD = "control_loop"  # node/loop_thread.py names its thread for the OS


# ------------------------------------------------------------------------- /proc
def _counters(node_pid: int, mock_pid: int) -> tuple:
    """(time, node RSS MB, node per-thread CPU, node CPU s, its children's CPU s, mock CPU s) now."""
    return (time.perf_counter(), rss_mb(node_pid), thread_cpu(node_pid), cpu_seconds(node_pid),
            children_cpu(node_pid), cpu_seconds(mock_pid))


def _ticks(stat_text: str) -> int:
    fields = stat_text.rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def cpu_seconds(pid: int) -> float:
    return _ticks(Path(f"/proc/{pid}/stat").read_text()) / CLK_TCK


def thread_cpu(pid: int) -> dict[int, tuple[str, float]]:
    """{tid: (OS thread name, CPU seconds)} of every thread of pid."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            out[int(task.name)] = ((task / "comm").read_text().strip(), _ticks((task / "stat").read_text()) / CLK_TCK)
        except (FileNotFoundError, ProcessLookupError):  # thread ended meanwhile
            pass
    return out


def child_pids(pid: int) -> list[int]:
    """Direct and indirect child processes of pid (scan of /proc)."""
    parents = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                parents[int(d.name)] = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (FileNotFoundError, ProcessLookupError, ValueError):
                pass
    out, frontier = [], [pid]
    while frontier:
        p = frontier.pop()
        kids = [c for c, pp in parents.items() if pp == p]
        out += kids
        frontier += kids
    return out


def children_cpu(pid: int) -> dict[int, float]:
    out = {}
    for c in child_pids(pid):
        try:
            out[c] = cpu_seconds(c)
        except (FileNotFoundError, ProcessLookupError):
            pass
    return out


def machine_busy_seconds() -> float:
    """CPU seconds every core of the machine spent busy so far (/proc/stat: all but idle, iowait and steal),
    whoever used them: over a window, the load beside what a benchmark measures of its own processes."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle, iowait, steal = fields[3], fields[4], fields[7] if len(fields) > 7 else 0
    return (sum(fields[:8]) - idle - iowait - steal) / CLK_TCK


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    return float("nan")


# ------------------------------------------------------------------------- memory over time
RSS_FLAT_MB_PER_MIN = 0.1  # target: RSS slope after the settle time, [MB/min] (an hour: < 6 MB)
RSS_SETTLE_S = 120.0  # the slope is fitted after this long into the window (the node settles in ~2 min)
TRACEMALLOC_ENV = "BENCH_NODE_TRACEMALLOC"  # "<first snapshot at s after start>[,<frames>]": off when unset


class RssRecorder:
    """Samples a process's resident set size (VmRSS of /proc/<pid>/status) every ``period`` s in a thread."""

    def __init__(self, pid: int, period: float = 1.0) -> None:
        self.pid, self.period = pid, period
        self.times: list[float] = []  # perf_counter [s]
        self.mb: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss_recorder", daemon=True)

    def start(self) -> "RssRecorder":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(2.0)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                value = rss_mb(self.pid)
            except (FileNotFoundError, ProcessLookupError):
                return
            self.times.append(time.perf_counter())
            self.mb.append(value)
            self._stop.wait(self.period)

    def summary(self, t_start: float, t_end: float, settle_s: float = RSS_SETTLE_S) -> dict:
        """RSS over the window [t_start, t_end] (perf_counter): start, end, max, and the slope [MB/min]
        of a least-squares line through the samples after ``settle_s`` (None when fewer than
        ``settle_s`` seconds remain: too short to judge). Samples every ~10 s for the JSON."""
        return rss_summary(np.array(self.times), np.array(self.mb), t_start, t_end, settle_s)


def rss_summary(times: np.ndarray, mb: np.ndarray, t_start: float, t_end: float,
                settle_s: float = RSS_SETTLE_S) -> dict:
    """See :meth:`RssRecorder.summary` (``times`` [s], ``mb`` [MB], one sample each)."""
    keep = (times >= t_start) & (times <= t_end)
    t, m = times[keep] - t_start, mb[keep]
    if len(t) == 0:
        return {"rss_start_mb": float("nan"), "rss_end_mb": float("nan"), "rss_max_mb": float("nan"),
                "rss_slope_mb_per_min": None, "rss_fit_s": 0.0, "rss_flat": None, "rss_samples": []}
    late = t >= settle_s
    fit_s = float(t[late][-1] - t[late][0]) if late.sum() >= 2 else 0.0
    slope = None
    if fit_s >= settle_s:  # at least as long a fit as the settle time
        slope = float(np.polyfit(t[late] / 60.0, m[late], 1)[0])
    step = max(1, int(round(10.0 / max(np.median(np.diff(t)) if len(t) > 1 else 10.0, 1e-3))))
    return {"rss_start_mb": float(m[0]), "rss_end_mb": float(m[-1]), "rss_max_mb": float(m.max()),
            "rss_slope_mb_per_min": slope, "rss_fit_s": fit_s,
            "rss_flat": None if slope is None else slope < RSS_FLAT_MB_PER_MIN,
            "rss_samples": [(round(float(a), 1), round(float(b), 2)) for a, b in zip(t[::step], m[::step])]}


def commit_pages(*arrays: np.ndarray) -> None:
    """Write every page of preallocated recording buffers now: np.zeros memory is mapped lazily, so
    buffers that fill during the run (4 x 8 B per tick at 500 Hz: ~0.9 MB/min) would show as RSS growth
    of the node's process that is the bench's own."""
    for a in arrays:
        a.fill(0.0)


def start_tracemalloc_from_env() -> dict | None:
    """In the node's process: with ``BENCH_NODE_TRACEMALLOC=<s>[,<frames>]``, trace Python allocations
    and take a first snapshot ``s`` seconds after start (a thread); :func:`tracemalloc_report` takes the
    last one and compares. Off by default (tracing slows every allocation)."""
    spec = os.environ.get(TRACEMALLOC_ENV, "")
    if not spec:
        return None
    import tracemalloc

    first_s, _, frames = spec.partition(",")
    tracemalloc.start(int(frames or 1))
    holder: dict = {"first_s": float(first_s)}

    def first() -> None:
        time.sleep(float(first_s))
        holder["first"] = tracemalloc.take_snapshot()
        holder["first_at"] = time.perf_counter()

    threading.Thread(target=first, name="tracemalloc_first", daemon=True).start()
    return holder


def tracemalloc_report(holder: dict | None, top: int = 15) -> dict | None:
    """The allocation sites that grew most between the first snapshot and now (Python allocations,
    numpy buffers included; not C/DDS memory: RSS growth without traced growth is native)."""
    if holder is None or "first" not in holder:
        return None
    import tracemalloc

    last = tracemalloc.take_snapshot()
    elapsed = time.perf_counter() - holder["first_at"]
    skip = [tracemalloc.Filter(False, tracemalloc.__file__), tracemalloc.Filter(False, "<frozen importlib._bootstrap>")]
    first, last = holder["first"].filter_traces(skip), last.filter_traces(skip)
    diffs = last.compare_to(first, "traceback")
    traced_now, traced_peak = tracemalloc.get_traced_memory()
    return {
        "between_s": elapsed,
        "traced_first_mb": sum(s.size for s in first.statistics("filename")) / 2**20,
        "traced_last_mb": sum(s.size for s in last.statistics("filename")) / 2**20,
        "traced_peak_mb": traced_peak / 2**20,
        "top_growth": [{"site": " <- ".join(f"{Path(f.filename).name}:{f.lineno}" for f in d.traceback),
                        "size_diff_kb": d.size_diff / 1024, "count_diff": d.count_diff, "size_kb": d.size / 1024}
                       for d in diffs[:top]],
    }
