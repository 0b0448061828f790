"""The ``solver:`` section of the YAML config: the QP step's settings, each key declared once.

Each key is declared with :func:`~..keys.key` (default, range or choices, meaning): the YAML check
(:func:`~..keys.check_declared`, from ``IKConfig``), the table of ranges (:data:`~..ranges.RANGES`,
``solver.<key>``) that :class:`~.solver.Oink`'s constructor checks its arguments with, Oink's keyword defaults
and the docs' table (:mod:`~..key_table`, its meaning from ``doc``) read it. :class:`~.controller.OinkController`
passes the keys on.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import Range
from ..keys import declared_ranges, key
from ..ranges import RANGES

QP_SOLVERS = ("daqp", "osqp")
_OSQP_TOLERANCES = "OSQP tolerances"  # eps_abs and eps_rel: one row


@dataclass
class SolverConfig:
    """``solver:``, each key with its docs row's meaning (docs/configuration.md's table is generated from these)."""

    regularization: float = key(1e-6, range=Range(lo_open=True),
                                doc="Tikhonov λ; also damps the nullspace projectors")
    unconstrained_shortcut: bool = key(
        True, doc="return `−H⁻¹c` without OSQP when it satisfies every constraint (exact)")
    eps_abs: float = key(1e-6, range=Range(lo_open=True), doc=_OSQP_TOLERANCES)
    eps_rel: float = key(1e-6, range=Range(lo_open=True), doc=_OSQP_TOLERANCES)
    max_iter: int = key(4000, range=Range(1, integer=True), doc="iteration limit of either QP solver")
    enforce_barriers: bool = key(
        True, doc="FK check of every step against the barriers (zero step on violation)")
    barrier_tolerance: float = key(1e-4, range=Range(unit="m"), doc="violation allowed by that check")
    barrier_slack_penalty: float = key(100.0, range=Range(lo_open=True, unit="cost/m"),
                                       doc="exact-penalty weight of the recovery problem (outside a barrier)")
    qp_solver: str = key(
        "daqp", choices=QP_SOLVERS,
        doc="QP backend when the shortcut fails: `daqp` (dense active set: exact, rows hold to 1e-9; `max_iter` is "
            "its iteration limit, `eps_*` unused) or `osqp` (ADMM, to `eps_abs`/`eps_rel`). Default by measurement "
            "(`bench/bench_oink.py`, Panda, one run): hot median/p99 of (b) 46.5/66 µs with daqp vs 50.9/114 µs "
            "with osqp, (c) 205/564 vs 264/1329 µs, (a) equal (the QP is rarely needed); osqp also misses its "
            "tolerance on ~0.5 % of the recovery problems that daqp solves exactly")
    weighted_nullspace: bool = key(
        False,
        doc="build each priority level's nullspace projector from the rows above whose weight is nonzero only: a "
            "row with cost 0 (`orientation_cost: 0`) leaves its direction to lower priorities (a position-only "
            "frame task leaves 4 of the Panda's 7 joints to the posture task, not 1). Rows with a nonzero cost "
            "keep RoboPlan's projector and damping exactly (a 0/1 mask, not the weights: with the weights, a small "
            "cost such as 1e-4 no longer protects its direction; measured in `core/oink/solver.py`'s docstring). "
            "`false`: RoboPlan's projector of the unweighted Jacobians: a zero-cost row blocks its direction once "
            "any other diagonal term of H (a barrier's safe-displacement weight, LM damping) outweighs λ, and "
            "otherwise lets the lower task through slowly (~w/σ² of its error per step)")

RANGES.update(declared_ranges("solver", SolverConfig))  # solver.<key>: what Oink's constructor checks with
