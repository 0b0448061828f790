"""The closed-loop runs' report: the targets (this machine's and issue 20's) and their verdicts, the tables
(ticks, CPU, loads against idle, start-up, memory, config (p)'s perceived cloud) and the variants' summary."""

from __future__ import annotations

import numpy as np

from common import fmt, print_table, verdict

from .children import VARIANTS
from .perceived import CAMERA_BOX_POSITION, CAMERA_BOX_SIZE, CAMERA_POINTS, CAMERA_RATE_HZ
from .process_stats import RSS_FLAT_MB_PER_MIN, RSS_SETTLE_S


TARGETS = {
    "on_time_pct": 99.5,  # % of expected ticks on time (every run)
    "loop_cpu_pct": 35.0,  # % of a core, the thread that runs the ticks (every run)
    "service_change": 0.10,  # service stream vs idle: tick p99 and on-time share within 10 %
    "startup_s": 2.0,  # configure -> active (idle runs, median); also shown without the DDS wait
    "latency_p99_ms": 1.0,  # joint_states trigger (earlier target)
    "rss_mb": 300.0,  # and flat within 10 MB over the run (earlier target)
}
#: issue 20's targets for the loop (this machine): judged in their own table (``issue20_targets``)
ISSUE20_LOOP_CPU_500 = {"c": 20.0, "d": 25.0, "p": 30.0}  # [% of a core] loop thread at 500 Hz, idle
ISSUE20_TICK_P99_500_US = {"c": 700.0}  # [us] node tick p99 at 500 Hz, idle
ISSUE20_ON_TIME_1K_IDLE = {"c": 99.9, "d": 99.9, "p": 99.5}  # [%] 1 kHz, timer, idle
ISSUE20_ON_TIME_1K_BUSY = {"c": 99.5, "d": 99.5}  # [%] 1 kHz, timer, one core busy
ISSUE20_ON_TIME_JS_500 = {"c": 99.5, "d": 99.5}  # [%] joint_states trigger, 500 Hz, idle and busy


# ------------------------------------------------------------------------- report
def _pct_change(new: float, old: float) -> float:
    return (new - old) / old if old else float("nan")


def _service_pairs(rows: list[dict]) -> dict[tuple, tuple[list[dict], list[dict]]]:
    """(config, trigger, variant, rate) -> (its service runs, its idle runs), over the repetitions."""
    out: dict[tuple, tuple[list[dict], list[dict]]] = {}
    for r in rows:
        if r["load"] == "service":
            key = (r["config"], r["trigger"], r["variant"], r["rate_set_hz"])
            of = lambda x: (x["config"], x["trigger"], x["variant"], x["rate_set_hz"])  # noqa: E731
            out[key] = ([x for x in rows if x["load"] == "service" and of(x) == key],
                        [x for x in rows if x["load"] == "idle" and of(x) == key])
    return out


def _idle_of(rows: list[dict], r: dict) -> dict | None:
    """The idle run of the same config, trigger, variant, rate and repetition as ``r``."""
    return next((i for i in rows if i["load"] == "idle" and all(
        i.get(key) == r.get(key) for key in ("config", "trigger", "variant", "repeat", "rate_set_hz"))), None)


def _suffix(r: dict) -> str:
    """Run label suffix: the rate (when several), the variant (when not "full") and the repetition (when
    repeated)."""
    out = f", {r['rate_set_hz']:g} Hz" if r.get("multi_rate") else ""
    out += "" if r.get("variant", "full") == "full" else f", variant {r['variant']}"
    return out + (f" #{r['repeat'] + 1}" if r.get("repeats", 1) > 1 else "")


def print_variant_summary(rows: list[dict], args) -> None:
    """One line per (config, trigger, variant, load) over the repetitions, and the per-call CPU."""
    keys = []
    for r in rows:
        key = (r["config"], r["trigger"], r["variant"], r["load"], r["rate_set_hz"])
        if key not in keys:
            keys.append(key)
    table = []
    for key in keys:
        rs = [r for r in rows if (r["config"], r["trigger"], r["variant"], r["load"], r["rate_set_hz"]) == key]
        per_call = ""
        if key[3] == "service":
            ms = []
            for r in rs:
                idle = _idle_of(rows, r)
                calls = r["service"]["answered"] / r["duration_s"] if r["service"] else 0.0
                if idle is not None and calls > 0:
                    ms.append(((r["main_cpu_pct"] - idle["main_cpu_pct"]) * 10.0 / calls,
                               (r["pool_cpu_pct"] - idle["pool_cpu_pct"]) * 10.0 / calls,
                               (r["children_cpu_pct"] - idle["children_cpu_pct"]) * 10.0 / calls))
            per_call = " | ".join("/".join(f"{x:.2f}" for x in m) for m in ms)
        table.append([
            f"({key[0]}) {key[1]}, {key[2]}, {key[3]}, {key[4]:g} Hz",
            " ".join(f"{r['tick_p50_us']:.0f}" for r in rs),
            " ".join(f"{r['tick_p99_us']:.0f}" for r in rs),
            " ".join(f"{r['tick_cpu_p99_us']:.0f}" for r in rs),
            " ".join(f"{r['on_time_pct']:.2f}" for r in rs),
            " ".join(f"{r['main_cpu_pct']:.1f}" for r in rs),
            " ".join(f"{r['pool_cpu_pct']:.1f}" for r in rs),
            " ".join(f"{r['children_cpu_pct']:.1f}" for r in rs),
            per_call,
        ])
    print_table(f"Variants over {len({r['repeat'] for r in rows})} repetition(s), one value per run, in run order "
                "(runs interleaved: repetition > variant > load)",
                ["config, trigger, variant, load", "tick p50 us", "tick p99 us", "tick CPU p99 us", "on time %", "main %",
                 "other py threads %", "child procs %", "per call ms CPU main/other/child (minus idle)"], table)
    for name in dict.fromkeys(r["variant"] for r in rows):
        print(f"  {name}: {VARIANTS[name]}")


def target_rows(rows: list[dict]) -> list[dict]:
    out = []

    def add(target, run, measured, ok, detail=""):
        out.append({"target": target, "run": run, "measured": measured, "pass": ok, "detail": detail})

    for r in rows:
        run = f"({r['config']}) {r['trigger']}, {r['load']}" + _suffix(r)
        add(f"on time >= {TARGETS['on_time_pct']:g} %", run, f"{r['on_time_pct']:.2f} %",
            r["on_time_pct"] >= TARGETS["on_time_pct"], f"{r['ticks']} ticks, late gaps {r['late_gaps_pct']:.2f} %")
        add(f"loop thread CPU <= {TARGETS['loop_cpu_pct']:g} %", run, f"{r['loop_cpu_pct']:.1f} %",
            r["loop_cpu_pct"] <= TARGETS["loop_cpu_pct"],
            f"{r['loop_thread']}; main {r['main_cpu_pct']:.1f} %, process {r['process_cpu_pct']:.1f} %")
        if r["trigger"] == "joint_states":
            add(f"latency p99 <= {TARGETS['latency_p99_ms']:g} ms (earlier)", run,
                f"{r['latency_p99_ms']:.2f} ms", r["latency_p99_ms"] <= TARGETS["latency_p99_ms"],
                "joint_states -> command at the mock")
        if r["load"] == "idle":
            add_memory_targets(add, r, run)
    lim = TARGETS["service_change"]
    for key, (service, idle) in _service_pairs(rows).items():
        run = (f"({key[0]}) {key[1]}, {key[3]:g} Hz, service vs idle" + (f", {key[2]}" if key[2] != "full" else ""))
        if not idle:
            add(f"service: tick p99 <= idle + {lim:.0%}", run, "no idle run", None)
            continue
        # one run's p99 moves 20-40 % between consecutive idle runs here: the verdict pools every tick
        # of the interleaved repetitions (--repeat); the per-pair changes are shown beside it
        pairs = [(_idle_of(rows, r), r) for r in service]
        per_pair = ", ".join(f"{_pct_change(r['tick_p99_us'], i['tick_p99_us']):+.0%}" for i, r in pairs if i)
        p99_idle, p99_service = (float(np.percentile(np.concatenate([r["_durations"] for r in rs]), 99)) * 1e6
                                 for rs in (idle, service))
        dp99 = _pct_change(p99_service, p99_idle)
        add(f"service: tick p99 <= idle + {lim:.0%}", run + f" ({len(service)} pair(s), ticks pooled)",
            f"{p99_idle:.0f} -> {p99_service:.0f} us ({dp99:+.1%})", dp99 <= lim, f"per pair: {per_pair}")
        on_idle, on_service = (float(np.mean([r["on_time_pct"] for r in rs])) for rs in (idle, service))
        don = _pct_change(on_service, on_idle)
        add(f"service: on time >= idle - {lim:.0%}", run + f" ({len(service)} pair(s), mean)",
            f"{on_idle:.2f} -> {on_service:.2f} % ({don:+.1%})", don >= -lim)
    idle = [r for r in rows if r["load"] == "idle" and r["startup"]["ok"]]
    if idle:
        for key, what in (("configure_to_active_s", ""), ("own_s", " w/o DDS wait")):
            c2a = sorted(r["startup"][key] for r in idle)
            med = float(np.median(c2a))
            add(f"start-up <= {TARGETS['startup_s']:g} s{what}", f"median of {len(idle)} idle runs",
                f"{med:.2f} s (max {c2a[-1]:.2f} s)", med <= TARGETS["startup_s"],
                "configure -> active: " + ", ".join(f"{x:.2f}" for x in c2a))
    return out


def add_memory_targets(add, r: dict, run: str) -> None:
    """RSS below the bound and flat: slope after the settle time (runs too short for a fit: not judged)."""
    slope = r.get("rss_slope_mb_per_min")
    add(f"RSS <= {TARGETS['rss_mb']:g} MB", run, f"{r['rss_max_mb']:.0f} MB", r["rss_max_mb"] <= TARGETS["rss_mb"],
        f"start {r['rss_start_mb']:.1f}, end {r['rss_end_mb']:.1f} MB")
    add(f"RSS flat: slope < {RSS_FLAT_MB_PER_MIN:g} MB/min", run,
        "-" if slope is None else f"{slope:+.3f} MB/min", r.get("rss_flat"),
        f"fit over {r.get('rss_fit_s', 0.0):.0f} s after {RSS_SETTLE_S:g} s" if slope is not None else
        f"window shorter than 2 x {RSS_SETTLE_S:g} s: not judged")


def issue20_targets(rows: list[dict]) -> list[dict]:
    """Issue 20's targets for the loop, each judged on every run it applies to (variant "full"): loop thread
    CPU and tick p99 at 500 Hz, timer, idle (the issue measures with the timer trigger unless it says; with
    either trigger the "loop thread" is "control_loop"), on time at 1 kHz (timer; idle, and busy for (c)/(d)),
    on time with the joint_states trigger at 500 Hz (idle and busy)."""
    out = []

    def add(target, r, measured, ok, detail=""):
        run = f"({r['config']}) {r['trigger']}, {r['load']}, {r['rate_set_hz']:g} Hz" + (
            f" #{r['repeat'] + 1}" if r.get("repeats", 1) > 1 else "")
        out.append({"target": target, "run": run, "measured": measured, "pass": bool(ok), "detail": detail})

    for r in rows:
        if r.get("variant", "full") != "full":
            continue
        cfg, rate, load, trig = r["config"], r["rate_set_hz"], r["load"], r["trigger"]
        if rate == 500.0 and load == "idle" and trig == "timer":  # the issue's figures: timer trigger unless said
            if cfg in ISSUE20_LOOP_CPU_500:
                lim = ISSUE20_LOOP_CPU_500[cfg]
                add(f"({cfg}) 500 Hz: loop thread CPU <= {lim:g} %", r, f"{r['loop_cpu_pct']:.1f} %",
                    r["loop_cpu_pct"] <= lim, f"{r['loop_thread']}; ticks' own CPU {fmt(r.get('tick_cpu_sum_pct'))} %")
            if cfg in ISSUE20_TICK_P99_500_US:
                lim = ISSUE20_TICK_P99_500_US[cfg]
                add(f"({cfg}) 500 Hz: tick p99 <= {lim / 1e3:g} ms", r, f"{r['tick_p99_us']:.0f} us",
                    r["tick_p99_us"] <= lim, f"p50 {r['tick_p50_us']:.0f} us, CPU p99 {fmt(r.get('tick_cpu_p99_us'), '.0f')} us")
        if rate == 1000.0 and trig == "timer":
            lim = (ISSUE20_ON_TIME_1K_IDLE if load == "idle" else ISSUE20_ON_TIME_1K_BUSY if load == "busy"
                   else {}).get(cfg)
            if lim is not None:
                add(f"({cfg}) 1 kHz timer, {load}: on time >= {lim:g} %", r, f"{r['on_time_pct']:.2f} %",
                    r["on_time_pct"] >= lim, f"{r['ticks']} ticks, gap p99/max {r['gap_p99_ms']:.2f} / "
                    f"{r['gap_max_ms']:.1f} ms, loop CPU {r['loop_cpu_pct']:.1f} %")
        if rate == 500.0 and trig == "joint_states" and load in ("idle", "busy") and cfg in ISSUE20_ON_TIME_JS_500:
            lim = ISSUE20_ON_TIME_JS_500[cfg]
            add(f"({cfg}) joint_states 500 Hz, {load}: on time >= {lim:g} %", r, f"{r['on_time_pct']:.2f} %",
                r["on_time_pct"] >= lim, f"robot js on time {r['robot_js_on_time_pct']:.2f} %")
    return out


def print_perceived(rows: list[dict]) -> None:
    """Config (p): what the node holds of the camera's cloud (its ~/status over the window)."""
    table = []
    for r in rows:
        pc = r.get("perceived")
        if not pc:
            continue
        if not pc.get("n"):
            table.append([f"({r['config']}) {r['trigger']}, {r['load']}" + _suffix(r), "no status samples"] + ["-"] * 5)
            continue
        table.append([f"({r['config']}) {r['trigger']}, {r['load']}" + _suffix(r),
                      f"{pc['points_min']} / {pc['points_median']:.0f} / {pc['points_max']}",
                      f"{fmt(pc['closest_min_mm'])} / {fmt(pc['closest_median_mm'])}",
                      f"{pc['within_cutoff_pct']:.0f}", fmt(pc["age_median_ms"], ".0f"),
                      ", ".join(f"{k} {v}" for k, v in pc["states"].items()), fmt(r.get("camera_cpu_pct"))])
    if table:
        print_table(f"Config (p): the perceived cloud the node holds (~/status at 10 Hz over the window; mock camera "
                    f"{CAMERA_POINTS} points at {CAMERA_RATE_HZ:g} Hz, box {list(CAMERA_BOX_SIZE)} at "
                    f"{list(CAMERA_BOX_POSITION)} under the goal circle)",
                    ["run", "perceived points min/median/max", "closest perceived mm min/median",
                     "samples within cutoff %", "cloud age median ms", "perception state", "camera process %"],
                    table)
        cutoff = next(r["perceived"].get("cutoff_m") for r in rows if r.get("perceived"))
        print(f"within cutoff = ~/status closest perceived distance <= the perceived barrier's broad_phase_cutoff "
              f"({fmt(cutoff, 'g')} m): its pairs have rows.")


def print_report(rows: list[dict], targets: list[dict], args) -> None:
    run = lambda r: f"({r['config']}) {r['trigger']}, {r['load']}" + _suffix(r)  # noqa: E731
    print_table(
        f"ik_controller node at {', '.join(f'{x:g}' for x in args.rate_list)} Hz, {args.duration:g} s per run "
        "(on time = starts <= 1.5 periods after the previous tick; % of expected ticks = window x rate)",
        ["run", "rate set / measured Hz", "on time %", "late gaps %", "robot js on time %", "gap p99/max ms",
         "tick p50/p99/max us", "tick CPU p50/p99 us", "latency p50/p99 ms", "moving %", "rejected goals"],
        [[run(r), f"{r['rate_set_hz']:g} / {fmt(r['rate_hz'])}", fmt(r["on_time_pct"], ".2f"), fmt(r["late_gaps_pct"], ".2f"),
          fmt(r["robot_js_on_time_pct"], ".2f"),
          f"{fmt(r['gap_p99_ms'], '.2f')} / {fmt(r['gap_max_ms'], '.1f')}",
          f"{fmt(r['tick_p50_us'], '.0f')} / {fmt(r['tick_p99_us'], '.0f')} / {fmt(r['tick_max_us'], '.0f')}",
          f"{fmt(r.get('tick_cpu_p50_us'), '.0f')} / {fmt(r.get('tick_cpu_p99_us'), '.0f')}",
          f"{fmt(r['latency_p50_ms'], '.2f')} / {fmt(r['latency_p99_ms'], '.2f')}"
          + ("" if r["trigger"] == "joint_states" else "*"),
          fmt(r["moving_pct"], ".0f"), str(r["counts"].get("goals_rejected", "-"))] for r in rows])
    print("* timer trigger: latency = age of the newest joint state when the command arrives (not synchronized "
          "with the robot by design; not judged). moving % = ~/status samples in tracking/recovering. robot js on "
          "time % = the mock's /joint_states publications by the same rule (in joint_states trigger mode the node "
          "cannot be more on time than its robot).")
    print_table(
        "CPU (% of one core, /proc/<pid>/task/<tid>/stat over the window) and memory",
        ["run", "loop thread", "loop %", "ticks' own CPU %", "main %", "process %", "child procs %",
         "busiest threads (OS name %)", "RSS start/end MB", "mock robot %", "camera %"],
        [[run(r), r["loop_thread"], fmt(r["loop_cpu_pct"]), fmt(r.get("tick_cpu_sum_pct")), fmt(r["main_cpu_pct"]),
          fmt(r["process_cpu_pct"]),
          fmt(r["children_cpu_pct"]) if r["n_children"] else "-",
          ", ".join(f"{n} {c:.0f}" for n, c in r["top_threads"][:4]),
          f"{fmt(r['rss_start_mb'], '.0f')} / {fmt(r['rss_end_mb'], '.0f')}", fmt(r["mock_cpu_pct"]),
          fmt(r.get("camera_cpu_pct"))] for r in rows])
    print("loop % = the loop thread's CPU from /proc (10 ms accounting ticks); ticks' own CPU % = the sum of the ticks' "
          "time.thread_time over the window (a lower bound of loop %: the thread also wakes and sleeps between ticks).")
    loaded = [r for r in rows if r["load"] != "idle"]
    if loaded:
        table = []
        for r in loaded:
            idle = _idle_of(rows, r)
            svc = r["service"]
            table.append([
                run(r),
                f"{fmt(idle and idle['on_time_pct'], '.2f')} -> {fmt(r['on_time_pct'], '.2f')}",
                f"{fmt(idle and idle['tick_p99_us'], '.0f')} -> {fmt(r['tick_p99_us'], '.0f')}",
                f"{fmt(idle and idle['loop_cpu_pct'])} -> {fmt(r['loop_cpu_pct'])}",
                (f"{svc['sent']} / {svc['answered']} / {svc['succeeded']}" if svc else "-"),
                (f"{fmt(svc['response_p50_ms'], '.1f')} / {fmt(svc['response_p99_ms'], '.1f')}" if svc else "-"),
                (("worker" if svc["node"].get("worker") else "in-process") if svc and svc["node"] else "-"),
            ])
        print_table("Under load, vs the idle run of the same config and trigger (busy = one core spinning in another "
                    f"process; service = ~/solve_ik at {args.service_rate:g} calls/s)",
                    ["run", "on time % idle -> load", "tick p99 us idle -> load", "loop CPU % idle -> load",
                     "calls sent/answered/ok", "response p50/p99 ms", "SimpleIK in"], table)
    print_table(
        "Start-up: the bench configures and activates the node over its lifecycle services (a lifecycle manager)",
        ["run", "interpreter s", "imports s", "create node s", "change_state found s", "configure call s",
         "of which descriptions s", "activate call s", "configure -> active s", "same w/o descriptions s",
         "process start -> active s"],
        [[run(r), *(fmt(r["startup"].get(k), ".2f") for k in (
            "interpreter_s", "imports_s", "create_s", "found_s", "configure_call_s", "descriptions_s",
            "activate_call_s", "configure_to_active_s", "own_s", "process_to_active_s"))] for r in rows])
    print("change_state found = process start -> the bench sees the node's lifecycle service (DDS discovery). "
          "descriptions = configure's time getting /robot_description(_semantic): ~0 when the node received them "
          "while unconfigured, else the DDS wait for the latched topics (0.1-0.4 s or, at random, ~3 s here).")
    print_table("ik_controller node targets (this machine, this run)", ["target", "run", "measured", "verdict",
                                                                       "detail"],
                [[t["target"], t["run"], t["measured"], verdict(t["pass"]), t["detail"]] for t in targets])
    n_pass = sum(bool(t["pass"]) for t in targets)
    print(f"node targets: {n_pass} / {len(targets)} PASS" +
          ("" if args.load else "  (service-stream and busy-core targets: run with --load)"))


def print_memory(rows: list[dict]) -> None:
    """RSS over time per run and, with --tracemalloc, the top growing Python allocation sites."""
    table = []
    for r in rows:
        slope = r.get("rss_slope_mb_per_min")
        table.append([f"({r['config']}) {r['trigger']}, {r['load']}" + _suffix(r),
                      f"{fmt(r['rss_start_mb'], '.1f')} / {fmt(r['rss_end_mb'], '.1f')} / {fmt(r['rss_max_mb'], '.1f')}",
                      "-" if slope is None else f"{slope:+.3f}", f"{r.get('rss_fit_s', 0.0):.0f}",
                      verdict(r.get("rss_flat")), str(r["counts"].get("undelivered", "-")),
                      str(len(r.get("publish_errors", [])))])
    print_table(f"Node memory (VmRSS every 1 s; slope = least squares after {RSS_SETTLE_S:g} s into the window; flat "
                f"= slope < {RSS_FLAT_MB_PER_MIN:g} MB/min) and undelivered commands",
                ["run", "RSS start/end/max MB", "slope MB/min", "fit s", "flat", "undelivered", "publish errors logged"],
                table)
    for r in rows:
        for line in r.get("publish_errors", [])[:3]:
            print(f"  publish error: {line}")
        tm = r.get("tracemalloc")
        if not tm:
            continue
        print(f"tracemalloc ({r['config']}) {r['trigger']}, {r['load']}: traced {tm['traced_first_mb']:.1f} -> "
              f"{tm['traced_last_mb']:.1f} MB over {tm['between_s']:.0f} s (peak {tm['traced_peak_mb']:.1f} MB); "
              "top growing sites:")
        for d in tm["top_growth"]:
            print(f"  {d['size_diff_kb']:+9.1f} kB {d['count_diff']:+7d} blocks (now {d['size_kb']:.1f} kB)  {d['site']}")


ISSUE32_ON_TIME_PCT = 99.5  # [%] every node of an N-arm run (issue 32: four arms at 500 Hz on this 2-core machine)
#: [%] of every node's ~/status samples in tracking/recovering for an N-arm run to be judged: a node without joint
#: states (stale: a starved mock) ticks cheaply and on time while tracking nothing (seen with four arms here)
ARMS_TRACKING_PCT = 90.0


def print_arms(rows: list[dict]) -> None:
    """``--arms N``: one row per node of each run, then a summary line per run (min on-time share, total CPU)."""
    if not rows:
        return
    table = []
    for r in rows:
        run = f"({r['config']}) {r['trigger']}, {r['load']}, {r['arms']} arms, {r['rate_set_hz']:g} Hz" + (
            f" #{r['repeat'] + 1}" if r["repeat"] else "")
        for n in r["nodes"]:
            table.append([run, n["namespace"], fmt(n["on_time_pct"], ".2f"), fmt(n["late_gaps_pct"], ".2f"),
                          fmt(n["robot_js_on_time_pct"], ".2f"),
                          f"{fmt(n['gap_p99_ms'], '.2f')} / {fmt(n['gap_max_ms'], '.1f')}",
                          f"{fmt(n['tick_p50_us'], '.0f')} / {fmt(n['tick_p99_us'], '.0f')}",
                          f"{fmt(n['tick_cpu_p50_us'], '.0f')} / {fmt(n['tick_cpu_p99_us'], '.0f')}",
                          f"{fmt(n['loop_cpu_pct'])} ({n['loop_thread']})", fmt(n["process_cpu_pct"]),
                          fmt(n["children_cpu_pct"]) if n["n_children"] else "-", fmt(n["moving_pct"], ".0f")])
    print_table("N ik_controller nodes (the shipped config, one namespace each) against one mock process driving N "
                "arms; each node its own 50 Hz goal circle. On time, ticks and CPU as the single node's tables; CPU "
                "in % of one core over the window",
                ["run", "node", "on time %", "late gaps %", "robot js on time %", "gap p99/max ms", "tick p50/p99 us",
                 "tick CPU p50/p99 us", "loop thread %", "process %", "IK worker %", "moving %"], table)
    for r in rows:
        worst = min(r["nodes"], key=lambda n: n["moving_pct"])
        tracked = worst["moving_pct"] >= ARMS_TRACKING_PCT
        ok = r["min_on_time_pct"] >= ISSUE32_ON_TIME_PCT if tracked else None
        why = "" if tracked else (f"; not judged: {worst['namespace']} tracked in {worst['moving_pct']:.0f} % of its "
                                  f"~/status samples (< {ARMS_TRACKING_PCT:g} %; modes {worst['modes']})")
        print(f"{r['arms']} arms ({r['config']}) {r['trigger']}, {r['load']}, {r['rate_set_hz']:g} Hz: min on time "
              f"{r['min_on_time_pct']:.2f} % (every node >= {ISSUE32_ON_TIME_PCT:g} %: {verdict(ok)}{why}); total CPU "
              f"{r['total_cpu_cores']:.2f} cores = nodes {r['nodes_cpu_pct'] / 100.0:.2f} (with their IK workers) + "
              f"mock {r['mock_cpu_pct'] / 100.0:.2f}; {r['cpu_cores_per_arm']:.2f} cores per arm (the goal streams' "
              f"process, not counted: {r['goal_stream_cpu_pct'] / 100.0:.2f}); the machine busy "
              f"{r['machine_busy_cores']:.2f} of {r['machine_cores']} cores (every process, others' too)")
        retried = [f"{n['namespace']} {n['startup']['activate_attempts']}" for n in r["nodes"]
                   if n["startup"].get("activate_attempts", 1) > 1]
        if retried:
            print(f"  activate requests (the node's activation_timeout passed without an arm's /joint_states): "
                  f"{', '.join(retried)}")
