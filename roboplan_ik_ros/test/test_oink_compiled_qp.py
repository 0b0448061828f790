"""The step's QP solved in the OInK kernel (DAQP's C sources built in: core/oink/compiled_qp.py,
kernel/daqp_workspace.c) against the daqp Python module, which solves it on the numpy path (compiled=False).

Both must give the same step: the same status, the same DAQP iterations (the same warm starts: one workspace per
solver, kept across layouts with the same rows, dropped after a failed solve, kept when a new setup fails) and dq
to 1e-9, on random problems with active constraints and on the steps solver.py finishes itself. Without DAQP's
sources the kernel is built without its QP and the solver falls back to the daqp module, saying why.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import shlex
import subprocess
import sysconfig
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from models import scene
from roboplan_ik_ros.core import ConfigurationTask, FrameTask, Oink, PositionBarrier, PositionLimit, VelocityLimit
from roboplan_ik_ros.core.compiled_library import NO_COMPILE
from roboplan_ik_ros.core.oink import compiled_assembly
from roboplan_ik_ros.core.oink.compiled_qp import CompiledQp
from roboplan_ik_ros.core.oink.limits.limit import Bounds, Limit
from roboplan_ik_ros.core.oink.tasks.task import Task

TIP = "panda_hand_tcp"
DT = 0.01
PACKAGE = Path(__file__).resolve().parents[1]  # setup.py, daqp_sources.py
KERNEL = PACKAGE / "roboplan_ik_ros" / "core" / "oink" / "kernel"
_spec = importlib.util.spec_from_file_location("daqp_sources", PACKAGE / "daqp_sources.py")
daqp_sources = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(daqp_sources)

pytestmark = pytest.mark.kernel


@pytest.fixture(scope="module")
def panda():
    return scene("panda")


class Rows(Limit):
    """General rows on the first joints (``lower <= dq[:k] <= upper``), set per step."""

    name = "rows"

    def __init__(self, n: int, k: int = 2, lower: float = -0.01, upper: float = 0.01) -> None:
        self.n = n
        self.set(k, lower, upper)

    def set(self, k: int, lower: float, upper: float) -> None:
        self.k, self.lower, self.upper = k, lower, upper

    def bounds(self, q):
        return Bounds(np.eye(self.n)[: self.k], np.full(self.k, self.lower), np.full(self.k, self.upper))


class OwnRowsBox(PositionBarrier):
    """A barrier with its own constraint() (assembled in Python, not by the kernel)."""

    def constraint(self, reference=None, braking=None):
        G, up = super().constraint(reference, braking)
        up *= 0.5
        return G, up


class FortranPosture(Task):
    """A posture task whose Jacobian is Fortran-ordered: the kernel cannot read it, so its layout is assembled
    by numpy (and its QP still solved by the kernel's DAQP)."""

    def __init__(self, oink, q_target) -> None:
        super().__init__(oink, oink.nv, 1.0, 0.0, 2, "fortran_posture")
        self.jacobian = np.asfortranarray(np.zeros((oink.nv, oink.nv)))
        self.q_target = q_target

    def update(self, q, data) -> None:
        self.jacobian[:] = -np.eye(self.group.nv)
        self.error[:] = self.q_target - q[self.group.q_indices]


def _make(panda, compiled: bool, variant: str = "plain"):
    """An Oink with a frame task, a posture task, the position and velocity boxes, two general rows and a
    PositionBarrier whose top cuts 5 cm above the start ("own_rows": also a barrier assembled in Python;
    "fortran": the posture task is FortranPosture)."""
    oink = Oink(panda, "arm", 1e-6, compiled=compiled)
    q0 = panda.named_configuration("default")
    p0 = panda.frame_pose(q0, TIP).translation
    qg = q0[oink.group.q_indices]
    posture = FortranPosture(oink, qg) if variant == "fortran" else ConfigurationTask(oink, qg, 0.05, priority=2)
    tasks = [FrameTask(oink, TIP, None, 1.0, 1.0, lm_damping=0.01), posture]
    limits = [PositionLimit(oink), VelocityLimit(oink, DT), Rows(oink.nv)]
    barriers = [PositionBarrier(oink, TIP, p0 - 0.4, p0 + [0.4, 0.4, 0.05], DT)]
    if variant == "own_rows":
        barriers.append(OwnRowsBox(oink, TIP, p0 - 0.3, p0 + [0.3, 0.3, 0.08], DT, name="own_rows"))
    return oink, tasks, limits, barriers


def _pair(panda, variant: str = "plain"):
    runs = [_make(panda, compiled, variant) for compiled in (True, False)]
    assert runs[0][0].daqp_workspace is not None, runs[0][0].assembly_note
    assert runs[1][0].daqp_workspace is None
    return runs


def _step(runs, q):
    return [oink.solve(q, tasks, limits, barriers) for oink, tasks, limits, barriers in runs]


def _assert_same_step(fast, slow) -> None:
    outcome = lambda r: (r.status, r.ok, r.used_qp, r.recovering)  # noqa: E731
    assert outcome(fast) == outcome(slow)
    assert fast.qp_iterations == slow.qp_iterations, fast.status
    np.testing.assert_allclose(fast.dq, slow.dq, rtol=0, atol=1e-9)


def _active_rows(oink, dq: np.ndarray, tol: float = 1e-9) -> int:
    """Rows of the last QP that dq meets with equality (the box, the general rows, the barrier rows)."""
    H, c, lower, upper, G, G_lower, G_upper = oink.last_qp()
    Gdq = G @ dq
    return int(np.sum(np.isclose(dq, lower, rtol=0, atol=tol) | np.isclose(dq, upper, rtol=0, atol=tol))
               + np.sum(np.isclose(Gdq, G_lower, rtol=0, atol=tol) | np.isclose(Gdq, G_upper, rtol=0, atol=tol)))


def test_the_install_builds_daqp_into_the_kernel(panda):
    """make bootstrap fetches DAQP's sources and setup.py builds them in: the default Oink solves its QP in C."""
    oink = Oink(panda, "arm")
    assert oink.assembly == "compiled" and oink.daqp_workspace is not None, oink.assembly_note
    assert oink.assembly_note == ""
    assert Oink(panda, "arm", compiled=False).daqp_workspace is None
    assert Oink(panda, "arm", qp_solver="osqp").daqp_workspace is None  # OSQP stays OSQP


@pytest.mark.parametrize("variant", ["plain", "own_rows"])
def test_the_kernels_qp_gives_the_daqp_modules_dq_status_and_iterations_on_random_problems(panda, variant):
    """300 random configurations and targets (every fourth a new configuration, the others a step on), each step
    warm-started from the last: the QP binds most of them, with up to several active rows."""
    runs = _pair(panda, variant)
    rng = np.random.default_rng(11)
    group = runs[0][0].group
    q = panda.named_configuration("default")
    qp_steps, most_active = 0, 0
    for k in range(300):
        if k % 4 == 0:
            q = panda.random_configuration(rng, group)
        T = panda.frame_pose(q, TIP)
        target = pin.SE3(T.rotation @ pin.exp3(rng.normal(size=3) * 0.5), T.translation + rng.uniform(-0.4, 0.4, 3))
        lower, upper = -rng.uniform(0.0, 0.01), rng.uniform(0.001, 0.01)  # the general rows' bounds
        for _, tasks, limits, _ in runs:
            tasks[0].set_target(target)
            limits[2].set(2, lower, upper)
        fast, slow = _step(runs, q)
        _assert_same_step(fast, slow)
        if fast.used_qp:
            qp_steps += 1
            most_active = max(most_active, _active_rows(runs[0][0], fast.dq))
        q = panda.integrate(q, runs[0][0].scatter(fast.dq))
    assert qp_steps >= 250 and most_active >= 4


def test_one_workspace_per_solver_is_warm_started_across_layouts_with_the_same_rows(panda):
    """Two task lists alternate (a new layout each step, the same rows): the kernel's workspace, like the solver's
    daqp.Model, is the solver's, so each step starts from the other layout's active set. A fresh solver (cold
    start) takes other iteration counts on some of those steps: the warm start is what the two share."""
    runs = _pair(panda)
    alternates = [[FrameTask(oink, "panda_link7", None, 1.0, 0.5), tasks[1]] for oink, tasks, _, _ in runs]
    q = panda.named_configuration("default")
    T = panda.frame_pose(q, TIP)
    differs_from_cold = 0
    for k in range(40):
        target = pin.SE3(T.rotation, T.translation + [0.3 * np.cos(0.3 * k), 0.2, -0.1])
        lists = [alt if k % 2 else tasks for (_, tasks, _, _), alt in zip(runs, alternates)]
        for (_, tasks, _, _), chosen in zip(runs, lists):
            chosen[0].set_target(target)
        fast, slow = (oink.solve(q, chosen, limits, barriers)
                      for (oink, _, limits, barriers), chosen in zip(runs, lists))
        _assert_same_step(fast, slow)
        cold, cold_tasks, cold_limits, cold_barriers = _make(panda, True)
        cold_tasks = [FrameTask(cold, "panda_link7", None, 1.0, 0.5), cold_tasks[1]] if k % 2 else cold_tasks
        cold_tasks[0].set_target(target)
        first = cold.solve(q, cold_tasks, cold_limits, cold_barriers)
        assert fast.used_qp and first.used_qp
        differs_from_cold += first.qp_iterations != fast.qp_iterations
        q = panda.integrate(q, runs[0][0].scatter(fast.dq))
    assert differs_from_cold >= 20


def test_a_failed_solve_drops_the_workspace_and_a_failed_setup_keeps_it_alike(panda):
    """Rows whose bounds cross fail DAQP's setup (of a new row count: the old problem stays and the next step is
    warm); rows no step within the box meets fail the solve (the problem is dropped: the next step is cold)."""
    runs = _pair(panda)
    q = panda.named_configuration("default")
    T = panda.frame_pose(q, TIP)
    T.translation = T.translation + [0.2, 0.0, 0.0]
    for _, tasks, _, _ in runs:
        tasks[0].set_target(T)
    rows = [(2, 0.01, -0.01), (2, -0.01, 0.01), (2, -0.01, 0.01), (3, 0.01, -0.01), (2, -0.01, 0.01),
            (2, 0.5, 0.6), (2, -0.01, 0.01), (2, -0.01, 0.01)]
    results = []
    for k, lower, upper in rows:
        for _, _, limits, _ in runs:
            limits[2].set(k, lower, upper)
        fast, slow = _step(runs, q)
        _assert_same_step(fast, slow)
        results.append(fast)
    statuses = [r.status.split(";")[0] for r in results]
    assert statuses[0] == statuses[3] == "QP failed: DAQP setup: infeasible"
    assert statuses[5] == "QP failed: DAQP infeasible"
    cold, warm = results[1].qp_iterations, results[2].qp_iterations
    assert warm < cold  # the same step again, warm
    assert results[4].qp_iterations == warm  # after the failed setup (3 rows): still warm
    assert results[6].qp_iterations == cold  # after the failed solve: cold again


@pytest.mark.parametrize("variant", ["plain", "own_rows", "fortran"])
def test_the_steps_solver_py_finishes_use_the_kernels_workspace(panda, variant, monkeypatch):
    """Steps that solver.py finishes itself call the kernel's QP (oink_solve_qp, counted here): with a barrier
    reference (it rewrites the rows: "plain", every other step), a row assembled in Python violated within the
    boundary tolerance (no recovery, the QP: "own_rows") and a layout the kernel cannot read (numpy assembly:
    "fortran"); a box that conflicts is reported by solver.py. The daqp module is never set up, and every step
    equals the module's."""
    calls = []
    solve = CompiledQp.solve
    monkeypatch.setattr(CompiledQp, "solve", lambda self: calls.append(1) or solve(self))
    runs = _pair(panda, variant)
    q = panda.named_configuration("default")
    T = panda.frame_pose(q, TIP)
    if variant == "own_rows":  # the own_rows barrier's top 1 mm below the TCP: h = -1 mm, within the 2 mm tolerance
        for oink, _, _, barriers in runs:
            oink.boundary_tolerance = 2e-3
            p = T.translation
            barriers[1] = OwnRowsBox(oink, TIP, p - 0.3, p + [0.3, 0.3, -1e-3], DT, name="own_rows")
    for k in range(10):
        target = pin.SE3(T.rotation, T.translation + [0.25, 0.1 * np.sin(k), 0.1])
        for oink, tasks, _, _ in runs:
            tasks[0].set_target(target)
            if variant == "plain":
                oink.set_barrier_reference(np.full(oink.nv, 1e-3) if k % 2 else None)
        fast, slow = _step(runs, q)
        _assert_same_step(fast, slow)
        assert fast.ok and fast.used_qp and not fast.recovering, fast.status
        q = panda.integrate(q, runs[0][0].scatter(fast.dq))
    assert len(calls) >= {"plain": 5, "own_rows": 1, "fortran": 10}[variant]
    if variant == "fortran":
        assert runs[0][0]._layout.compiled is None and runs[0][0]._layout.qp is not None
    for _, _, limits, _ in runs:
        limits.append(_ConflictingBox(runs[0][0].nv))
    fast, slow = _step(runs, q)
    _assert_same_step(fast, slow)
    assert fast.status.startswith("infeasible limits: joint 'panda_joint1'")
    assert runs[0][0]._qp is None  # the daqp module's Model: never made


class _ConflictingBox(Limit):
    name = "conflicting_box"

    def __init__(self, n: int) -> None:
        self.n = n

    def bounds(self, q):
        lower, upper = np.full(self.n, -0.01), np.full(self.n, 0.01)
        lower[0], upper[0] = 0.01, -0.01
        return Bounds(None, lower, upper)


def test_setup_finds_no_daqp_sources_in_an_empty_folder_and_says_where(tmp_path):
    found, why = daqp_sources.find_daqp_sources(PACKAGE.parent, {daqp_sources.SOURCES_VARIABLE: str(tmp_path)})
    assert found is None and str(tmp_path) in why and "DAQP's C sources are not in" in why
    found, why = daqp_sources.find_daqp_sources(tmp_path, {})  # no requirements.txt there
    assert found is None and "pins no daqp==<version>" in why
    (tmp_path / "requirements.txt").write_text("numpy\ndaqp==9.9.9  # pinned\n")
    found, why = daqp_sources.find_daqp_sources(tmp_path, {})
    assert found is None and str(tmp_path / "build" / "daqp-9.9.9") in why


def test_setup_finds_the_pinned_daqp_sources_that_bootstrap_fetched():
    version = daqp_sources.pinned_version(PACKAGE.parent / "requirements.txt")
    assert version == "0.11.0"
    found, why = daqp_sources.find_daqp_sources(PACKAGE.parent, {})
    assert found is not None, why
    assert [Path(s).name for s in found.sources] == list(daqp_sources.SOURCE_FILES)
    root = Path(found.include).parents[1]
    assert root.name == f"daqp-{version}" and (root / "LICENSE").is_file()  # MIT: kept with the sources


def _kernel_without_daqp(directory: Path) -> Path:
    """The OInK kernel compiled as setup.py compiles it when it finds no DAQP sources: its two C files, without
    OINK_WITH_DAQP."""
    out = directory / ("_oink_kernel" + importlib.machinery.EXTENSION_SUFFIXES[0])
    cc = shlex.split(sysconfig.get_config_var("CC") or "cc")
    subprocess.run([*cc, "-shared", "-fPIC", "-O1", "-I", str(PACKAGE / "roboplan_ik_ros" / "core" / "kernel"),
                    str(KERNEL / "oink_kernel.c"), str(KERNEL / "daqp_workspace.c"), "-o", str(out), "-lm"],
                   check=True, capture_output=True)
    return out


def _reload_kernel(monkeypatch, path: Path | None) -> None:
    """Make compiled_assembly load ``path`` (None: as found) afresh (the patch is undone after the test)."""
    if path is not None:
        monkeypatch.setattr(compiled_assembly, "_library_path", lambda: path)
    for name, value in (("_kernel", None), ("_kernel_error", ""), ("_qp_functions", None), ("_qp_error", "")):
        monkeypatch.setattr(compiled_assembly, name, value)


def test_a_kernel_built_without_daqp_sources_leaves_the_qp_to_the_daqp_module_and_says_why(panda, tmp_path,
                                                                                          monkeypatch):
    reference = _make(panda, True)  # the full kernel (loaded before the patch)
    library = _kernel_without_daqp(tmp_path)
    _reload_kernel(monkeypatch, library)
    fallback = _make(panda, True)
    oink = fallback[0]
    assert oink.assembly == "compiled" and oink.daqp_workspace is None
    assert "was built without DAQP's C sources" in oink.assembly_note
    assert "the QP runs in the daqp Python module" in oink.assembly_note
    q = panda.named_configuration("default")
    T = panda.frame_pose(q, TIP)
    for k in range(10):
        target = pin.SE3(T.rotation, T.translation + [0.3, 0.1 * k, 0.0])
        for _, tasks, _, _ in (reference, fallback):
            tasks[0].set_target(target)
        fast, slow = _step([reference, fallback], q)
        _assert_same_step(fast, slow)
        assert fast.used_qp
        q = panda.integrate(q, oink.scatter(fast.dq))
    assert oink._qp is not None  # the daqp module's Model solved them


def test_no_compile_leaves_the_assembly_and_the_qp_to_python_and_says_why(panda, monkeypatch):
    monkeypatch.setenv(NO_COMPILE, "1")
    _reload_kernel(monkeypatch, None)
    oink = Oink(panda, "arm")
    assert oink.assembly == "numpy" and oink.daqp_workspace is None
    assert f"${NO_COMPILE} is set" in oink.assembly_note
    assert compiled_assembly.load_qp()[0] is None and f"${NO_COMPILE} is set" in compiled_assembly.load_qp()[1]
