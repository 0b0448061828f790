"""One node's figures over a measured window, from what its process recorded (the ticks of its TickRecorder) and
what /proc says of its threads: the definitions every closed-loop table uses (one node's run, each node of an
N-arm run).

* on time: a tick is on time when it starts at most 1.5 periods after the previous tick started (the node's
  TickStats rule); on time % = on-time ticks / expected ticks (window x rate), so a stall of n periods costs n
  ticks, not one; late gaps % = late gaps / gaps.
* tick p50/p99/max: the node's own per-tick durations; tick CPU p50/p99: the loop thread's CPU time in the
  same ticks (time.thread_time); their sum over the window, a lower bound of the loop thread's CPU.
* loop thread: the thread whose OS name is "control_loop" (either trigger: /joint_states wakes it with
  ``trigger: joint_states``), else the busiest non-main thread (flagged "?").
"""

from __future__ import annotations

import numpy as np

from .process_stats import TICK_THREAD


def tick_figures(stats: dict, t_start: float, t_end: float, rate: float) -> dict:
    """The window's tick figures (keys as in the rows) from a TickRecorder's ``as_json()`` (``stats``) and the
    window [t_start, t_end] (perf_counter, the node's clock: one machine). ``_starts`` and ``_durations`` [s]:
    the window's ticks (for pooled figures and checks; not written)."""
    starts, durations = np.array(stats["starts"]), np.array(stats["durations"])
    keep = (starts >= t_start) & (starts <= t_end)
    starts, durations = starts[keep], durations[keep]
    cpu_starts, cpu_durations = np.array(stats["cpu_starts"]), np.array(stats["cpu_durations"])
    cpu_durations = cpu_durations[(cpu_starts >= t_start) & (cpu_starts <= t_end)]
    period = 1.0 / rate
    window = t_end - t_start
    gaps = np.diff(starts)
    on_time = int(np.sum(gaps <= 1.5 * period))
    expected = window * rate
    return {
        "ticks": int(len(starts)),
        "rate_hz": (len(starts) - 1) / (starts[-1] - starts[0]) if len(starts) > 1 else 0.0,
        "expected_ticks": expected,
        "on_time_pct": min(100.0, 100.0 * on_time / expected) if expected > 0 else 0.0,
        "late_gaps_pct": 100.0 * float(np.mean(gaps > 1.5 * period)) if len(gaps) else 100.0,
        "gap_p99_ms": float(np.percentile(gaps, 99) * 1e3) if len(gaps) else float("nan"),
        "gap_max_ms": float(gaps.max() * 1e3) if len(gaps) else float("nan"),
        "tick_p50_us": float(np.percentile(durations, 50) * 1e6) if len(durations) else float("nan"),
        "tick_p99_us": float(np.percentile(durations, 99) * 1e6) if len(durations) else float("nan"),
        "tick_max_us": float(durations.max() * 1e6) if len(durations) else float("nan"),
        "tick_cpu_p50_us": float(np.percentile(cpu_durations, 50) * 1e6) if len(cpu_durations) else float("nan"),
        "tick_cpu_p99_us": float(np.percentile(cpu_durations, 99) * 1e6) if len(cpu_durations) else float("nan"),
        # cross-check of the loop thread's /proc figure (10 ms ticks of the kernel's accounting): the sum of the
        # ticks' own CPU (time.thread_time) over the window; the loop thread also spends CPU between ticks
        # (the sleep until the next start, waking up), so this is a lower bound of it
        "tick_cpu_sum_pct": 100.0 * float(np.sum(cpu_durations)) / window if len(cpu_durations) else float("nan"),
        "_starts": starts,
        "_durations": durations,
    }


def js_on_time_pct(js_times: np.ndarray, t_start: float, t_end: float, rate: float) -> float:
    """The robot's /joint_states publications in the window, on time by the ticks' rule (% of window x rate)."""
    js = np.asarray(js_times, dtype=float)
    js = js[(js >= t_start) & (js <= t_end)]
    expected = (t_end - t_start) * rate
    on_time = int(np.sum(np.diff(js) <= 1.5 / rate))
    return min(100.0, 100.0 * on_time / expected) if expected > 0 else 0.0


def loop_thread(cpu: dict[int, tuple[str, float]], pid: int) -> tuple[int, str]:
    """(thread id, how it was found) of the thread that runs the ticks, among ``cpu`` = {tid: (OS name, CPU s)}
    of process ``pid`` (see the module docstring)."""
    named = [tid for tid, (name, _) in cpu.items() if name == TICK_THREAD]
    if named:
        return named[0], TICK_THREAD
    others = {tid: c for tid, (_, c) in cpu.items() if tid != pid}  # fall back to the busiest non-main thread
    tid = max(others, key=others.get) if others else pid
    return tid, f"busiest thread '{cpu[tid][0]}'?"
