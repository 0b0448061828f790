"""StateTracker.accept's compiled checks (core/control/compiled_control.py, kernel/control_kernel.c) against its numpy
path, the reference: the same measurements taken (clipped within the tolerance), the same refused (outside the limits
beyond it, NaN or inf in the group or in a finger) with the same reasons and counts, and the same rest clock, along
random measurement streams; the arm at rest, moving, and after restart_rest_clock."""

from __future__ import annotations

import numpy as np
import pytest

from models import scene
from roboplan_ik_ros.core.control import compiled_control
from roboplan_ik_ros.core.control.state_tracker import StateTracker

needs_kernel = pytest.mark.skipif(compiled_control.LOAD_ERROR != "",
                                  reason=f"the control kernel is not built ({compiled_control.LOAD_ERROR})")


@needs_kernel
@pytest.mark.parametrize("robot", ["panda", "kinova"])  # the Kinova's group has continuous joints (cos, sin)
def test_the_compiled_and_numpy_checks_take_and_refuse_the_same_measurements(robot):
    s = scene(robot)
    g = s.group("arm") if robot == "panda" else s.group("")
    compiled, numpy_tracker = trackers = [StateTracker(s, g, 0.01, use_compiled=c) for c in (True, False)]
    assert compiled._compiled is not None and numpy_tracker._compiled is None
    rng = np.random.default_rng(11)
    q = s.neutral()
    seen = set()
    bounded = g.bounded_q
    q_min, q_max = s.q_min_v[g.v_indices[g.bounded_v]], s.q_max_v[g.v_indices[g.bounded_v]]
    for k in range(3000):
        kind = rng.choice(["rest", "move", "clip", "outside", "nan", "inf", "finger", "restart"],
                          p=[0.3, 0.3, 0.1, 0.08, 0.07, 0.05, 0.05, 0.05])
        if kind == "move":
            q = s.integrate(q, rng.normal(0.0, 1e-3, s.model.nv))
        offered = q.copy()
        j = rng.integers(len(bounded))
        if kind == "clip":  # beyond a limit, within the tolerance: clipped
            offered[bounded[j]] = q_max[j] + 0.005 if rng.random() < 0.5 else q_min[j] - 0.005
        elif kind == "outside":
            offered[bounded[j]] = q_max[j] + 0.02 if rng.random() < 0.5 else q_min[j] - 0.02
        elif kind in ("nan", "inf"):
            offered[rng.choice(g.q_indices)] = np.nan if kind == "nan" else -np.inf
        elif kind == "finger" and s.model.nq > len(g.q_indices):  # a joint outside the group
            outside = np.setdiff1d(np.arange(s.model.nq), g.q_indices)
            offered[rng.choice(outside)] = np.nan
        reasons = []
        for t in trackers:
            if kind == "restart":
                t.restart_rest_clock()
            t.incoming[:] = offered
            reasons.append(t.accept(0.002 * k))
        assert reasons[0] == reasons[1]
        seen.add(kind if not reasons[0] else f"{kind} refused")
        for name in ("measured", "incoming", "_rest_anchor"):
            np.testing.assert_array_equal(getattr(compiled, name), getattr(numpy_tracker, name), err_msg=name)
        for name in ("measured_time", "still_since", "rejected", "last_rejection"):
            assert getattr(compiled, name) == getattr(numpy_tracker, name), name
        assert compiled.rest_duration() == numpy_tracker.rest_duration()
    assert {"rest", "move", "clip", "outside refused", "nan refused", "inf refused", "restart"} <= seen, seen
    assert compiled.rejected > 0 and compiled.rest_duration() >= 0.0
