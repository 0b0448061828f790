"""The compiled start of a commanded step (StreamLimits.start_state: core/control/compiled_control.py,
kernel/control_kernel.c) against the numpy path, the reference: the same start configuration, following-error
bounds, acceleration history, reachable increments and following room, along random command streams (with and
without an acceleration limit, a loose and a tight following leash)."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from conftest import CONFIG_DIR
from models import robot
from roboplan_ik_ros.core.config import load_config
from roboplan_ik_ros.core.control import compiled_control
from roboplan_ik_ros.core.control.stream_limits import StreamLimits
from roboplan_ik_ros.core.model.scene_config import scene_from_config
from roboplan_ik_ros.core.oink.controller import OinkController

needs_kernel = pytest.mark.skipif(compiled_control.LOAD_ERROR != "",
                                  reason=f"the control kernel is not built ({compiled_control.LOAD_ERROR})")
DT = 0.002


def _limits(accel: bool, max_error: float, use_compiled: bool):
    data = yaml.safe_load((CONFIG_DIR / "panda.yaml").read_text())
    if not accel:
        data["limits"] = [lim for lim in data["limits"] if lim["type"] != "acceleration"]
    config = load_config(data)
    r = robot("panda")
    scene = scene_from_config(r.urdf_xml, r.srdf_xml, config.robot, r.package_paths)
    q0 = scene.named_configuration("default")
    ctrl = OinkController(scene, config, DT, q0)
    limits = StreamLimits(scene, ctrl.oink.group, ctrl, DT, max_error, [], use_compiled=use_compiled)
    limits.apply_feedback("commanded")
    return scene, ctrl, limits


@needs_kernel
@pytest.mark.parametrize("accel", [True, False], ids=["acceleration_limit", "no_acceleration_limit"])
@pytest.mark.parametrize("max_error", [0.1, 0.002], ids=["leash", "tight_leash"])
def test_the_compiled_and_numpy_starts_of_a_commanded_step_are_equal(accel, max_error):
    (scene, c_ctrl, compiled), (_, n_ctrl, numpy_limits) = (_limits(accel, max_error, c) for c in (True, False))
    assert compiled.compiled_reason == "" and numpy_limits.compiled_reason == "use_compiled=False"
    assert (compiled.accel is None) == (not accel)
    g = c_ctrl.oink.group
    rng = np.random.default_rng(3 + accel)
    q0 = scene.named_configuration("default")
    q_start = [np.zeros(scene.model.nq), np.zeros(scene.model.nq)]
    # the loop's buffers, written in place each tick as the loop's are (the compiled start keeps their addresses)
    measured, last, u1, u2 = np.zeros(scene.model.nq), np.zeros(scene.model.nq), np.zeros(g.nv), np.zeros(g.nv)
    widened = 0  # starts whose following bounds the braking increment widened (a moving joint cannot stop at once)
    for k in range(500):
        if k == 250:  # the leash changed at run time (ControlLoop.set_max_state_divergence): both starts take it
            compiled.following.max_error = numpy_limits.following.max_error = 0.5 * max_error
        measured[:] = q0 + rng.normal(0.0, 0.05, scene.model.nq)  # fingers too: the joints outside the group
        last[:] = measured
        last[g.q_indices] += rng.normal(0.0, 0.1, g.nv) * rng.choice([0.0, 1.0, 3.0])  # leading the robot, or not
        u1[:] = rng.normal(0.0, 2e-3, g.nv) * rng.choice([0.0, 1.0])
        u2[:] = u1 + rng.normal(0.0, 1e-5, g.nv) * rng.choice([0.0, 1.0, 100.0])
        out = [limits.start_state(q, measured, last, u1, u2, "commanded")
               for limits, q in zip((compiled, numpy_limits), q_start)]
        assert out[0] is q_start[0] and out[1] is q_start[1]
        np.testing.assert_array_equal(out[0], out[1])
        np.testing.assert_array_equal(compiled.following._lower, numpy_limits.following._lower)
        np.testing.assert_array_equal(compiled.following._upper, numpy_limits.following._upper)
        assert c_ctrl.oink.barrier_reference is None and n_ctrl.oink.barrier_reference is None
        if accel:
            a, b = compiled.accel, numpy_limits.accel
            for name in ("u1", "u2", "offset", "reach_lower", "reach_upper", "_rest", "_room_up", "_room_lo"):
                np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
            np.testing.assert_array_equal(a.bounds(out[0]).lower, b.bounds(out[1]).lower)
            np.testing.assert_array_equal(a.bounds(out[0]).upper, b.bounds(out[1]).upper)
            e = (last - measured)[g.q_indices]
            widened += bool(np.any(compiled.following._upper > np.maximum(max_error - e, 0.0))
                            or np.any(compiled.following._lower < np.minimum(-max_error - e, 0.0)))
    assert widened > 0 if accel else widened == 0
