#!/usr/bin/env python3
"""Mutation testing of the core packages with mutmut 3 (``make mutation``; docs/mutation.md).

For each package it prepares a work directory ``<out>/work/<package>/`` that mirrors the ROS package
``roboplan_ik_ros/`` (symlinks: the Python package, test/, config/, ...) plus a ``pyproject.toml`` with
the package's ``[tool.mutmut]`` section, so that nothing of mutmut's lives in the source tree. mutmut
copies it all into ``mutants/`` there (the compiled kernels, ``*.so`` next to the sources, come along:
every file of the Python package is copied), mutates only the package's modules, puts ``mutants/`` first
on ``sys.path`` (ahead of the editable install) and runs, for each mutant, the selected tests that call
the mutated function (in-process core tests only: no e2e, no node).

Then it writes ``<out>/<package>.json`` and ``<out>/<package>.md``: killed / survived / timeout / no
tests / score per module and in total, and the diff of every mutant that was not killed.

  python scripts/mutation.py                       # the three packages of issue 31
  python scripts/mutation.py oink/limits --only acceleration_limit.py
  python scripts/mutation.py control --retest      # re-run only the mutants not killed last time
  python scripts/mutation.py limits --report-only  # rewrite the report from the last run's results
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import random
import shutil
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ROS_PACKAGE = REPO / "roboplan_ik_ros"  # the ROS package: setup.py, config/, test/, roboplan_ik_ros/
PYTHON_PACKAGE = "roboplan_ik_ros"
# entries of the ROS package the tests read besides the Python package (config/*.yaml by path, ...)
MIRRORED = ("test", "config", "launch", "resource", "package.xml", "pytest.ini")
# entries of the repository the tests read as <test file>/../../<entry>: mutmut runs them from
# <work>/mutants/test/, so they are linked into <work> itself
REPO_MIRRORED = ("docs", "README.md")


@dataclass(frozen=True)
class Package:
    """One package under core/ and the in-process tests that exercise it (files under test/)."""

    path: str  # under roboplan_ik_ros/core/
    tests: tuple[str, ...]


# Only tests that run in this process (no e2e, no node). mutmut runs, per mutant, only the selected tests that
# call its function (fastest first, up to the first failure), so a survivor costs every such test: each
# package's own tests, its gap tests, the OInK solver tests that drive it through a QP step, and the
# closed-loop files that exercise it in a running loop (each under ~25 s on the shared machine: measured
# 2026-12-07, test_closed_loop_perceived.py the slowest; the oracle and recovery files, ~150 s, stay out).
PACKAGES: dict[str, Package] = {
    "oink/limits": Package("oink/limits", (
        "test_acceleration_limit.py", "test_mutation_gaps_limits.py", "test_binding_bounds.py", "test_oink.py",
        "test_oink_compiled.py", "test_oink_qp_solvers.py", "test_oink_weighted_nullspace.py", "test_config.py",
    )),
    "oink/barriers": Package("oink/barriers", (
        "test_joint_limit_barrier.py", "test_sphere_barrier.py", "test_barrier_safe_displacement.py",
        "test_collision_rows.py", "test_com.py", "test_oink.py", "test_oink_compiled.py",
        "test_mutation_gaps_barriers.py", "test_obstacles.py", "test_cloud_distance.py", "test_collision_objects.py",
        "test_attached_box_collision.py", "test_perceived_cloud.py", "test_kinds.py", "test_config.py",
        "test_closed_loop_singularity.py", "test_closed_loop_obstacles.py", "test_closed_loop_barrier_weight.py",
        "test_closed_loop_untracked_pairs.py", "test_closed_loop_perceived.py", "test_ur5_workspace_fade.py",
        "test_dual_arm.py", "test_jacobians.py", "test_mutation_gaps_collision_rows.py",
    )),
    "control": Package("control", (
        "test_binding_bounds.py", "test_goal_feedback.py", "test_goal_followers.py", "test_joint_jog_follower.py",
        "test_singularity_scale.py", "test_target_shaper.py", "test_twist_follower.py", "test_control_loop.py",
        "test_mutation_gaps_control.py", "test_control_loop_streams.py", "test_goal_shaping.py",
        "test_pose_shaper.py", "test_loop_from_config.py", "test_config.py", "test_look_at.py",
        "test_exclude_joints.py", "test_closed_loop_bounds.py", "test_closed_loop_edges.py",
        "test_mutation_gaps_shapers.py", "test_mutation_gaps_control_loop.py", "test_mutation_gaps_loop_goals.py",
        "test_mutation_gaps_loop_bounds.py", "test_stale_hold.py", "test_follower_kinds.py", "test_command_guard.py",
        "test_stream_limits.py", "test_state_tracker.py",
    )),
}
ALIASES = {"limits": "oink/limits", "barriers": "oink/barriers", "core/control": "control"}

# mutmut's exit codes -> our outcome classes (mutmut.stats.status_by_exit_code, grouped)
KILLED, SURVIVED, TIMEOUT, CRASHED, NO_TESTS, UNCHECKED, OTHER = (
    "killed", "survived", "timeout", "crashed", "no tests", "not checked", "other")


def outcome(exit_code: int | None) -> str:
    if exit_code in (1, 3, 37):
        return KILLED  # a test failed (3: pytest internal error) or the type check caught it
    if exit_code == 0:
        return SURVIVED
    if exit_code in (24, -24, 36, 152, 255):
        return TIMEOUT  # the mutant hangs or loops: detected, counted as killed (mutmut's convention)
    if exit_code in (-11, -9):
        return CRASHED  # the test process died (a mutant handing the C kernel a NULL pointer): detected
    if exit_code in (5, 33):
        return NO_TESTS  # no selected test calls the mutated function: a survivor as far as the score goes
    if exit_code is None:
        return UNCHECKED  # the run was stopped before this mutant
    return OTHER  # segfault, suspicious, skipped


def package_name(arg: str) -> str:
    name = arg.strip("/").removeprefix("roboplan_ik_ros/roboplan_ik_ros/").removeprefix("core/")
    name = ALIASES.get(name, name)
    if name not in PACKAGES:
        raise SystemExit(f"mutation.py: unknown package {arg!r}; expected one of {sorted(PACKAGES)}")
    return name


def slug(name: str) -> str:
    return name.replace("/", "_")


def toml_list(items) -> str:
    return "[" + ", ".join(json.dumps(str(i)) for i in items) + "]"


def prepare(work: Path, pkg: Package, only: list[str], tests: list[str]) -> None:
    """The work directory: symlinks to the ROS package's entries and the mutmut config."""
    work.mkdir(parents=True, exist_ok=True)
    for entry in (PYTHON_PACKAGE, *MIRRORED):
        link = work / entry
        if not link.is_symlink():
            link.symlink_to(ROS_PACKAGE / entry)
    for entry in REPO_MIRRORED:
        link = work / entry
        if not link.is_symlink():
            link.symlink_to(REPO / entry)
    source = f"{PYTHON_PACKAGE}/core/{pkg.path}"
    only_mutate = [f"{source}/{pattern}" for pattern in only] if only else [f"{source}/*"]
    missing = [t for t in tests if not (ROS_PACKAGE / "test" / t).is_file()]
    tests = [f"test/{t}" for t in tests if t not in missing]
    if missing:
        print(f"[mutation] {pkg.path}: no {missing} (skipped)")
    (work / "pyproject.toml").write_text(
        "# written by scripts/mutation.py (each run)\n"
        "[tool.mutmut]\n"
        f"source_paths = {toml_list([PYTHON_PACKAGE])}\n"
        f"only_mutate = {toml_list(only_mutate)}\n"
        f"also_copy = {toml_list(MIRRORED[1:])}\n"
        f"pytest_add_cli_args_test_selection = {toml_list(tests)}\n"
        # no cache dir in the mirrored test/; core tests only: the ROS fixtures stay lazy
        f"pytest_add_cli_args = {toml_list(['-p', 'no:cacheprovider'])}\n"
        # git-based change detection would look at the whole checkout, which others edit meanwhile
        "use_git_change_detection = false\n"
    )


# mutmut's own first step (mutants/<module>.py and .meta files), without running anything
GENERATE = ("import os; os.makedirs('mutants', exist_ok=True); from mutmut.utils.file_utils import copy_src_dir; "
            "from mutmut.__main__ import create_mutants; copy_src_dir(); create_mutants(1)")


def load_results(work: Path, source: str) -> dict[str, tuple[str, int | None]]:
    """{mutant name: (module path, exit code)} of the package's modules (mutants/<module>.meta)."""
    results = {}
    for meta in sorted((work / "mutants" / source).rglob("*.py.meta")):
        module = str(meta.relative_to(work / "mutants"))[: -len(".meta")]
        for name, code in json.loads(meta.read_text())["exit_code_by_key"].items():
            results[name] = (module, code)
    return results


def diffs(work: Path, names: list[str]) -> dict[str, str]:
    """mutmut's diff of each mutant (read from work/mutants)."""
    if not names:
        return {}
    cwd = os.getcwd()
    os.chdir(work)
    try:
        from mutmut.configuration import reset_config
        from mutmut.mutation.diff_apply import get_diff_for_mutant

        reset_config()
        out = {}
        for name in names:
            try:
                out[name] = get_diff_for_mutant(name)
            except Exception as exc:  # a report line, not a crash: the counts stand without it
                out[name] = f"(no diff: {type(exc).__name__}: {exc})"
        return out
    finally:
        os.chdir(cwd)


def sampled(work: Path, source: str, args: argparse.Namespace) -> set[str]:
    """The mutants this run covers: every one of the package (restricted by --only), or a seeded random
    sample of --sample of them (the mutants must exist: a first run, even stopped, generates them). The
    sample is kept in the work directory: modules that others edit meanwhile regenerate their mutants, and
    later runs (--retest, the report) must cover the same ones."""
    names = sorted(k for k, (module, _) in load_results(work, source).items()
                   if not args.only or any(fnmatch.fnmatch(Path(module).name, p) for p in args.only))
    if not args.sample or args.sample >= len(names):
        return set(names)
    kept = work / f"sample-{args.sample}-seed{args.seed}-{'+'.join(sorted(args.only)) or 'all'}.json"
    if kept.is_file():
        return set(json.loads(kept.read_text()))
    chosen = random.Random(args.seed).sample(names, args.sample)
    kept.write_text(json.dumps(sorted(chosen), indent=0) + "\n")
    return set(chosen)


def report(name: str, work: Path, out: Path, only: list[str], tests: list[str], seconds: float | None,
           args: argparse.Namespace) -> dict:
    pkg = PACKAGES[name]
    source = f"{PYTHON_PACKAGE}/core/{pkg.path}"
    results = load_results(work, source)
    population = sum(1 for module, _ in results.values()
                     if not only or any(fnmatch.fnmatch(Path(module).name, p) for p in only))
    keep = sampled(work, source, args)
    results = {k: v for k, v in results.items() if k in keep}  # a kept name whose module changed is gone
    per_module: dict[str, Counter] = {}
    for module, code in results.values():
        per_module.setdefault(module, Counter())[outcome(code)] += 1
    total = sum(per_module.values(), Counter())

    def score(c: Counter) -> float | None:
        tested = c[KILLED] + c[TIMEOUT] + c[CRASHED] + c[SURVIVED] + c[NO_TESTS]
        return None if tested == 0 else (c[KILLED] + c[TIMEOUT] + c[CRASHED]) / tested

    not_killed = sorted(k for k, (_, code) in results.items() if outcome(code) in (SURVIVED, NO_TESTS, OTHER))
    diff_by_name = diffs(work, not_killed)
    data = {
        "package": f"core/{pkg.path}",
        "only": only,
        "sample": None if not args.sample else {"size": len(results), "of": population, "seed": args.seed},
        "tests": tests,
        "seconds": seconds,
        "total": dict(total),
        "score": score(total),
        "modules": {m: {**dict(c), "score": score(c)} for m, c in sorted(per_module.items())},
        "not_killed": [{"mutant": k, "outcome": outcome(results[k][1]), "exit_code": results[k][1],
                        "diff": diff_by_name[k]} for k in not_killed],
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{slug(name)}.json").write_text(json.dumps(data, indent=2) + "\n")

    def pct(s: float | None) -> str:
        return "-" if s is None else f"{100 * s:.1f} %"

    cols = (KILLED, TIMEOUT, CRASHED, SURVIVED, NO_TESTS, UNCHECKED, OTHER)
    sample = (f" (a random sample of {len(results)} of the {population} mutants, seed {args.seed})"
              if args.sample else "")
    lines = [f"# Mutation report: core/{pkg.path}" + (f" (only {', '.join(only)})" if only else "") + sample, "",
             f"Score (killed + timeout + crashed) / (those + survived + no tests): **{pct(data['score'])}**", "",
             "| module | " + " | ".join(cols) + " | score |", "|---" * (len(cols) + 2) + "|"]
    for m, c in sorted(per_module.items()):
        lines.append(f"| {Path(m).name} | " + " | ".join(str(c[k]) for k in cols) + f" | {pct(score(c))} |")
    lines.append("| **total** | " + " | ".join(str(total[k]) for k in cols) + f" | {pct(data['score'])} |")
    lines += ["", "Tests: " + ", ".join(tests), ""]
    if seconds is not None:
        lines += [f"Run time: {seconds:.0f} s", ""]
    lines += ["## Not killed", ""]
    for entry in data["not_killed"]:
        lines += [f"### {entry['mutant']} ({entry['outcome']})", "", "```diff", entry["diff"], "```", ""]
    (out / f"{slug(name)}.md").write_text("\n".join(lines))
    print(f"[mutation] core/{pkg.path}: " + ", ".join(f"{k} {total[k]}" for k in cols)
          + f"; score {pct(data['score'])} -> {out / (slug(name) + '.md')}")
    return data


def run(name: str, args: argparse.Namespace) -> dict:
    pkg = PACKAGES[name]
    work = args.out / "work" / slug(name)
    if args.fresh and (work / "mutants").exists():
        shutil.rmtree(work / "mutants")
    tests = args.tests or list(pkg.tests)
    prepare(work, pkg, args.only, tests)
    seconds = None
    if not args.report_only:
        cmd = [sys.executable, "-m", "mutmut", "run", "--max-children", str(args.max_children)]
        source = f"{PYTHON_PACKAGE}/core/{pkg.path}"
        if args.retest:
            again = [k for k, (_, code) in load_results(work, source).items()
                     if outcome(code) in (SURVIVED, NO_TESTS, OTHER) and k in sampled(work, source, args)]
            if not again:
                print(f"[mutation] core/{pkg.path}: nothing to re-test")
                return report(name, work, args.out, args.only, tests, None, args)
            cmd += again
        elif args.sample:
            if not load_results(work, source):  # no mutants yet: generate them (what `mutmut run` does first)
                subprocess.run([sys.executable, "-c", GENERATE], cwd=work, check=True, stdout=subprocess.DEVNULL)
            results = load_results(work, source)
            todo = sorted(k for k in sampled(work, source, args) if k in results and results[k][1] is None)
            if not todo:
                print(f"[mutation] core/{pkg.path}: every sampled mutant has a result")
                return report(name, work, args.out, args.only, tests, None, args)
            cmd += todo
        print(f"[mutation] core/{pkg.path}: {' '.join(cmd[:6])} ... (in {work}; log {args.out / slug(name)}.log)",
              flush=True)
        start = time.monotonic()
        with open(args.out / f"{slug(name)}.log", "w") as log:
            proc = subprocess.run(cmd, cwd=work, stdout=log, stderr=subprocess.STDOUT)
        seconds = time.monotonic() - start
        if proc.returncode != 0:
            print(f"[mutation] core/{pkg.path}: mutmut exited {proc.returncode}; see the log", file=sys.stderr)
    return report(name, work, args.out, args.only, tests, seconds, args)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("packages", nargs="*", default=list(PACKAGES),
                        help=f"packages under core/ (default: all of {list(PACKAGES)})")
    parser.add_argument("--only", action="append", default=[],
                        help="mutate only these modules of the package (file name glob, repeatable)")
    parser.add_argument("--tests", action="append", default=[],
                        help="test files under test/ to run instead of the package's selection (repeatable)")
    parser.add_argument("--sample", type=int, default=0,
                        help="run a seeded random sample of this many mutants (after a first, possibly stopped, "
                             "run generated them); the report's score is the sample's")
    parser.add_argument("--seed", type=int, default=0, help="the sample's seed")
    parser.add_argument("--max-children", type=int, default=1, help="mutmut's parallel workers (default 1)")
    parser.add_argument("--out", type=Path, default=REPO / "build" / "mutation")
    parser.add_argument("--fresh", action="store_true", help="drop the previous run's mutants and results")
    parser.add_argument("--retest", action="store_true", help="re-run only the mutants not killed last time")
    parser.add_argument("--report-only", action="store_true", help="only rewrite the reports")
    parser.add_argument("--min-score", type=float, default=None,
                        help="exit 1 when a package scores below this fraction (e.g. 0.9)")
    args = parser.parse_args(argv)
    args.out = args.out.resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    names = [package_name(p) for p in args.packages]
    low = []
    for name in names:
        data = run(name, args)
        if args.min_score is not None and (data["score"] is None or data["score"] < args.min_score):
            low.append(name)
    if low:
        print(f"[mutation] below {args.min_score:.0%}: {low}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
