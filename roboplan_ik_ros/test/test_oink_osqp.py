"""test_oink.py and test_oink_recovery.py again, with solver.qp_solver = "osqp" as the Oink default.

The default backend is DAQP; these keep every behaviour of the OSQP backend under test too (its
workspaces, warm starts, the max_iter rule of recovery steps, failure statuses).
"""

import pytest

from roboplan_ik_ros.core import Oink
from test_oink import *  # noqa: F401,F403 - re-collected here with the OSQP default
from test_oink_recovery import *  # noqa: F401,F403


@pytest.fixture(autouse=True)
def osqp_by_default(monkeypatch):
    monkeypatch.setitem(Oink.__init__.__kwdefaults__, "qp_solver", "osqp")


def test_the_default_here_is_osqp(panda):
    assert Oink(panda, "arm").qp_solver == "osqp"
