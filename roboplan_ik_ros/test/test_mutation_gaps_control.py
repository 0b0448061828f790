"""core/control behaviour that mutation testing found unchecked (docs/mutation.md, core/control)."""

from __future__ import annotations

import numpy as np
import pytest

from roboplan_ik_ros.core.control.target_shaper import TargetShaper

DT = 0.002  # [s]


@pytest.mark.parametrize("v_max", [np.inf, 0.0, -1.0, [1.0, np.inf]], ids=["inf", "zero", "negative", "one-inf"])
def test_target_shaper_needs_a_finite_positive_speed_bound(v_max):
    """v_max must be finite and > 0 on every coordinate (an unbounded speed has no braking distance);
    a mutant that accepted either alone survived the shaper's tests."""
    with pytest.raises(ValueError, match="v_max: expected finite values > 0"):
        TargetShaper(2, DT, v_max, 10.0, 100.0)
