"""``python -m roboplan_ik_ros.fuzz``: run N seeded scenarios (seeds SEED .. SEED+N-1) with a progress bar,
print a table of the failures (seed, invariant, cause, detail, the replay command) and write every result to
``build/fuzz/fuzz_<first>_<last>.json``; ``--replay SEED`` runs one scenario and prints all its figures.
Exit status 1 if any scenario failed."""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import math
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

DEFAULT_OUT = Path("build/fuzz")
REPLAY = "python -m roboplan_ik_ros.fuzz --replay {seed}"


def _plain(value):
    """JSON-friendly values (numpy scalars, inf)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (np.floating, float)):
        return float(value) if math.isfinite(value) else str(float(value))
    if isinstance(value, np.integer):
        return int(value)
    return value


def _run(seed: int):
    from .runner import run_scenario

    return run_scenario(seed)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m roboplan_ik_ros.fuzz", description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=100, help="number of scenarios (default 100)")
    p.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    p.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    p.add_argument("--time-budget", type=float, default=0.0,
                   help="[s] stop starting scenarios after this much wall time (0: none); the report says how many ran")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder of the JSON report (default build/fuzz)")
    p.add_argument("--replay", type=int, default=None, metavar="SEED", help="run one scenario and print its figures")
    args = p.parse_args(argv)
    from rich.console import Console

    console = Console()
    if args.replay is not None:
        return _replay(args.replay, console)
    return _campaign(args, console)


def _replay(seed: int, console) -> int:
    from .runner import run_scenario
    from .scenario import make_scenario

    sc = make_scenario(seed)
    console.print(f"seed {seed}: {sc.summary()}")
    for o in sc.obstacles:
        console.print(f"  obstacle {o.name}: {o.shape} {np.round(o.dims, 3).tolist()} "
                      f"at {np.round(o.position, 3).tolist()}")
    if sc.cloud_points is not None:
        console.print(f"  perceived cloud: {len(sc.cloud_points)} points on a {sc.cloud_source}")
    for e in sc.events:
        console.print(f"  t={e.t:.2f} s {e.kind} {e.label}" + (" (checked)" if e.checked else "")
                      + (f" until {e.until:.2f} s" if e.until else ""))
    r = run_scenario(sc)
    console.print(json.dumps(_plain(r.metrics), indent=1))
    for n in r.notes:
        console.print(f"  note: {n}")
    for v in r.violations:
        console.print(f"[red]{v.invariant}[/red] ({v.cause}) at t={v.t:.3f} s: {v.detail}")
    console.print("[green]all invariants hold[/green]" if r.ok else f"[red]{len(r.violations)} violation(s)[/red]")
    return 0 if r.ok else 1


def run_seeds(seeds, jobs: int, run, done, time_budget: float = 0.0, start: float | None = None) -> None:
    """``done(run(seed))`` for every seed, in ``jobs`` worker processes (1: in this one), in completion order;
    with ``time_budget`` [s] no seed starts after that much wall time since ``start``."""
    start = time.perf_counter() if start is None else start

    def in_budget() -> bool:
        return not (time_budget and time.perf_counter() - start > time_budget)

    if jobs <= 1:
        for s in seeds:
            if not in_budget():
                break
            done(run(s))
        return
    with ProcessPoolExecutor(jobs) as pool:
        pending = iter(seeds)
        # islice, not zip(pending, range(n)): zip takes one more seed from pending before range ends, and drops it
        futures = {pool.submit(run, s) for s in itertools.islice(pending, jobs * 2)}
        while futures:
            finished = next(iter(f for f in futures if f.done()), None)
            if finished is None:
                time.sleep(0.05)
                continue
            futures.remove(finished)
            done(finished.result())
            s = next(pending, None)
            if s is not None and in_budget():
                futures.add(pool.submit(run, s))


def _campaign(args, console) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    seeds = list(range(args.seed, args.seed + args.n))
    results, start = [], time.perf_counter()
    columns = (TextColumn("[progress.description]{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn(), TextColumn("{task.fields[failed]} failed"))
    with Progress(*columns, console=console) as progress:
        task = progress.add_task("fuzz", total=len(seeds), failed=0)

        def done(r) -> None:
            results.append(r)
            progress.update(task, advance=1, failed=sum(not x.ok for x in results))

        run_seeds(seeds, args.jobs, _run, done, args.time_budget, start)
    results.sort(key=lambda r: r.seed)
    wall = time.perf_counter() - start
    missing = sorted(set(seeds) - {r.seed for r in results})
    if missing and not args.time_budget:
        raise RuntimeError(f"seeds {missing[:10]} did not run: a campaign reports every seed it was given")
    failed = [r for r in results if not r.ok]
    table = Table(title=f"{len(failed)} of {len(results)} scenarios failed ({wall:.0f} s)", title_justify="left")
    for col in ("seed", "robot / kind", "invariant", "cause", "detail", "replay"):
        table.add_column(col, overflow="fold")
    for r in failed:
        for v in r.violations:
            table.add_row(str(r.seed), f"{r.robot} {r.kind} lag={r.lag_ticks}", v.invariant, v.cause, v.detail[:120],
                          REPLAY.format(seed=r.seed))
    console.print(table)
    groups = Counter((v.invariant, v.cause, r.robot) for r in failed for v in r.violations)
    summary = Table(title="failures by invariant, cause and robot", title_justify="left")
    for col in ("invariant", "cause", "robot", "scenarios", "example seeds (replay: --replay SEED)"):
        summary.add_column(col)
    for (invariant, cause, robot), count in sorted(groups.items()):
        seeds_of = [r.seed for r in failed if r.robot == robot
                    and any((v.invariant, v.cause) == (invariant, cause) for v in r.violations)]
        summary.add_row(invariant, cause, robot, str(len(seeds_of)), ", ".join(map(str, seeds_of[:6])))
    console.print(summary)
    args.out.mkdir(parents=True, exist_ok=True)
    last = results[-1].seed if results else args.seed
    path = args.out / f"fuzz_{args.seed}_{last}.json"
    path.write_text(json.dumps(_plain({
        "seeds": [args.seed, last], "scenarios": len(results), "failed": len(failed), "wall_time_s": wall,
        "by_robot": Counter(r.robot for r in results), "by_kind": Counter(r.kind for r in results),
        "failures_by_invariant": {f"{i}/{c}/{robot}": n for (i, c, robot), n in groups.items()},
        "results": [{**dataclasses.asdict(r), "replay": REPLAY.format(seed=r.seed)} for r in results],
    }), indent=1))
    console.print(f"JSON: {path}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
