"""The ``solver:`` section of the YAML config: the QP step's settings, each key declared once.

Each key is declared with :func:`~..keys.key` (default, range or choices): the YAML check
(:func:`~..keys.check_declared`, from ``IKConfig``), the table of ranges (:data:`~..ranges.RANGES`,
``solver.<key>``) that :class:`~.solver.Oink`'s constructor checks its arguments with, Oink's keyword defaults
and the docs test (test_section_keys_docs.py) read it. :class:`~.controller.OinkController` passes the keys on.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import Range
from ..keys import declared_ranges, key
from ..ranges import RANGES

QP_SOLVERS = ("daqp", "osqp")


@dataclass
class SolverConfig:
    """``solver:`` (see docs/configuration.md for each key)."""

    regularization: float = key(1e-6, range=Range(lo_open=True))  # Tikhonov lambda; also damps the projectors
    unconstrained_shortcut: bool = key(True)  # -H^-1 c without a QP solver when it meets every constraint
    eps_abs: float = key(1e-6, range=Range(lo_open=True))  # OSQP's tolerances
    eps_rel: float = key(1e-6, range=Range(lo_open=True))
    max_iter: int = key(4000, range=Range(1, integer=True))  # iteration limit of either QP solver
    enforce_barriers: bool = key(True)  # FK check of every step against the barriers
    barrier_tolerance: float = key(1e-4, range=Range(unit="m"))  # violation that check allows
    # recovery from outside a barrier: linear penalty of the slack
    barrier_slack_penalty: float = key(100.0, range=Range(lo_open=True, unit="cost/m"))
    # solves the QP when the unconstrained optimum is infeasible
    qp_solver: str = key("daqp", choices=QP_SOLVERS)
    # projectors from the rows with a nonzero weight only (False: RoboPlan's form)
    weighted_nullspace: bool = key(False)


RANGES.update(declared_ranges("solver", SolverConfig))  # solver.<key>: what Oink's constructor checks with
