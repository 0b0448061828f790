"""The fuzzer's invariant checks (roboplan_ik_ros/fuzz/invariants.py, distances.py) catch what they claim to:
each is fed a synthetic violation (a command jump, a jerk above j_max, a NaN, a pair below d_min, a hold
without a documented cause, an overshoot, a response that never settles) and its compliant twin."""

from __future__ import annotations

import math

import numpy as np
import pytest

from roboplan_ik_ros.core.model.obstacles import Obstacle
from roboplan_ik_ros.fuzz import invariants as inv
from roboplan_ik_ros.fuzz.distances import Closest, DistanceOracle
from roboplan_ik_ros.fuzz.robots import make_config, start_configuration, fuzz_robot
from roboplan_ik_ros.fuzz.scenario import build_scene, d_min_by_class, make_scenario

DT = 0.002  # [s] the shipped 500 Hz
V_MAX, A_MAX, J_MAX = np.array([2.0, 2.0]), np.array([10.0, 10.0]), np.array([100.0, 100.0])


def jerk_limited_stream(scale: float = 1.0, n: int = 40) -> np.ndarray:
    """Two joints from rest at constant jerk j_max * scale on joint 0: Δ³q = scale j_max dt³ exactly
    (q_k = j dt³ k³ / 6 has Δ³q = j dt³); short enough to stay below a_max and v_max (j dt n = 0.8 a_max)."""
    k = np.arange(n)
    q0 = scale * J_MAX[0] * DT ** 3 * k ** 3 / 6.0
    return np.column_stack([q0, np.zeros(n)])


def test_a_stream_at_the_jerk_bound_passes_and_one_above_it_fails():
    c = jerk_limited_stream(1.0)
    times = DT * np.arange(len(c))
    ratios = inv.command_ratios(c, DT, V_MAX, A_MAX, J_MAX)
    assert ratios["jerk"][0] == pytest.approx(1.0, rel=1e-9), "the synthetic stream is at the jerk bound"
    assert ratios["acceleration"][0] < 1.0 and ratios["velocity"][0] < 1.0, "only the jerk is at its bound"
    assert inv.check_command_stream(c, times, DT, V_MAX, A_MAX, J_MAX) == []
    found = inv.check_command_stream(jerk_limited_stream(1.01), times, DT, V_MAX, A_MAX, J_MAX, ("j0", "j1"))
    assert [(v.invariant, v.cause) for v in found] == [("jerk", "j0")]


def test_a_command_jump_breaks_velocity_acceleration_and_jerk():
    c = np.zeros((10, 2))
    c[6:, 1] = 1.5 * V_MAX[1] * DT  # one increment of 1.5 v_max dt on joint 1
    found = {v.invariant: v for v in inv.check_command_stream(c, DT * np.arange(10), DT, V_MAX, A_MAX, J_MAX,
                                                              ("j0", "j1"))}
    assert set(found) == {"velocity", "acceleration", "jerk"}
    assert found["velocity"].cause == "j1" and found["velocity"].t == pytest.approx(6 * DT)


def test_without_acceleration_bounds_only_the_velocity_is_checked():
    c = np.zeros((10, 2))
    c[6:, 0] = 0.5 * V_MAX[0] * DT  # a velocity step: within v_max, an infinite acceleration
    assert inv.check_command_stream(c, DT * np.arange(10), DT, V_MAX) == []
    assert set(inv.command_ratios(c, DT, V_MAX)) == {"velocity"}


def test_a_nan_command_is_reported_once():
    c = jerk_limited_stream()
    c[12, 0] = np.nan
    found = inv.check_command_stream(c, DT * np.arange(len(c)), DT, V_MAX, A_MAX, J_MAX)
    assert [v.invariant for v in found] == ["finite"] and found[0].t == pytest.approx(12 * DT)


def test_holds_need_a_documented_cause_and_qp_failures_are_counted_apart():
    episodes = [inv.HoldEpisode(0.1, "stale", "no valid joint states for 0.60 s", "stale"),
                inv.HoldEpisode(0.2, "holding", "solver failed", "qp_failure"),
                inv.HoldEpisode(0.3, "holding", "the barrier check refused the step (dq = 0)", "barrier_refusal")]
    found = inv.check_holds(episodes)
    assert [(v.invariant, v.cause) for v in found] == [("hold", "barrier_refusal")]
    assert [v.invariant for v in inv.check_counters(2, 0, 0, "solver failed", 0.2)] == ["qp_failure"]
    assert inv.check_counters(0, 0, 0) == []
    assert [v.invariant for v in inv.check_counters(0, 1, 3)] == ["tick_error", "guard_cut"]


@pytest.mark.parametrize("counted, expected", [
    ((True, False, False), "qp_failure"), ((False, True, False), "barrier_refusal"),
    ((False, False, True), "tick_error"), ((False, False, False), "other")])
def test_hold_cause_follows_the_counter_that_moved(counted, expected):
    assert inv.hold_cause("some reason", "holding", *counted) == expected
    assert inv.hold_cause("no valid joint states", "stale", False, False, False) == "stale"


def test_a_pair_below_its_floor_is_a_distance_violation():
    near = Closest("obstacles", -0.002, 0.0179, 0.0199, "panda_link7 x obstacle:box")
    far = Closest("self", 0.05, 0.07, 0.0199, "a x b")
    found = inv.check_distances({"obstacles": (near, 1.0), "self": (far, 2.0)})
    assert [(v.invariant, v.t) for v in found] == [("distance:obstacles", 1.0)]


@pytest.fixture(scope="module")
def panda_scene():
    config, _ = make_config("panda")
    scene = build_scene("panda", config)
    q = start_configuration(scene, scene.group(config.robot.group), fuzz_robot("panda"))
    return config, scene, q


def test_the_distance_oracle_measures_a_sphere_at_the_hand_and_one_inside_it(panda_scene):
    config, scene, q = panda_scene
    d_min = d_min_by_class(config)
    tcp = scene.frame_pose(q, "panda_hand_tcp").translation
    radius, gap = 0.03, 0.1
    scene.add_obstacle(Obstacle("probe", "sphere", (radius,), position=tuple(tcp + [0.0, gap, 0.0])))
    try:
        oracle = DistanceOracle(scene, d_min, config.solver.barrier_tolerance)
        far = oracle.closest(q, beyond=1.0)["obstacles"]
        assert far.pair.endswith("obstacle:probe") and 0.0 < far.distance < gap - radius, \
            "the nearest obstacle pair is the probe beside the TCP, nearer than its gap (the fingers stick out)"
        assert far.margin == pytest.approx(far.distance - (d_min["obstacles"] - config.solver.barrier_tolerance))
        scene.move_obstacle("probe", tuple(tcp), (0.0, 0.0, 0.0, 1.0))
        inside = DistanceOracle(scene, d_min, config.solver.barrier_tolerance).closest(q)["obstacles"]
        assert inside.margin < 0.0 and inv.check_distances({"obstacles": (inside, 0.0)}), \
            "a sphere around the TCP is below d_min: a violation"
    finally:
        scene.remove_obstacle("probe")


def test_a_pair_that_starts_inside_d_min_may_not_get_closer(panda_scene):
    config, scene, q = panda_scene
    d_min = d_min_by_class(config)
    tcp = scene.frame_pose(q, "panda_hand_tcp").translation
    scene.add_obstacle(Obstacle("probe", "sphere", (0.03,), position=tuple(tcp + [0.0, 0.0, -0.05])))
    try:
        oracle = DistanceOracle(scene, d_min, config.solver.barrier_tolerance, floors_at=q)
        start = oracle.closest(q)["obstacles"]
        assert start.distance < d_min["obstacles"], "the probe starts inside d_min"
        assert start.margin == pytest.approx(config.solver.barrier_tolerance), "its floor is its start distance"
        closer = q.copy()
        closer[1] += 0.05  # panda_joint2 forward and down: the hand toward the probe
        assert oracle.closest(closer)["obstacles"].margin < 0.0
    finally:
        scene.remove_obstacle("probe")


def first_order_response(step: float, tau: float, n: int = 2000, overshoot: float = 0.0):
    """The signed remaining distance of a first-order approach (time constant tau), with an optional dip of
    ``overshoot`` x step past the goal halfway."""
    t = DT * np.arange(n)
    remaining = step * np.exp(-t / tau)
    if overshoot:
        remaining[n // 2] = -overshoot * step
    return t, remaining


def test_overshoot_and_settling_of_a_step():
    step, tau = 0.2, 0.1
    t, remaining = first_order_response(step, tau)
    band = inv.settle_band("position", step)
    expected = tau * math.log(step / band)  # exp(-t/tau) step = band
    assert inv.settling_time(t, np.abs(remaining), band) == pytest.approx(expected, abs=DT)
    axis = inv.StepAxis("position", "ee position", step, remaining, np.abs(remaining))
    found, figures = inv.check_step("step", t, [axis], t_optimal=expected / inv.SETTLING_FACTOR * 1.01)
    assert found == [] and figures["overshoot"] == 0.0
    found, _ = inv.check_step("step", t, [axis], t_optimal=expected / inv.SETTLING_FACTOR * 0.9)
    assert [(v.invariant, v.cause) for v in found] == [("settling", "slow")]
    t, dipped = first_order_response(step, tau, overshoot=0.02)
    found, figures = inv.check_step("step", t, [inv.StepAxis("position", "p", step, dipped, np.abs(dipped))], 10.0)
    assert figures["overshoot"] == pytest.approx(0.02) and [v.invariant for v in found] == ["overshoot"]


def test_a_response_outside_its_band_at_the_end_never_settles():
    t, remaining = first_order_response(0.2, 10.0)  # far too slow for 4 s
    found, figures = inv.check_step("step", t, [inv.StepAxis("position", "p", 0.2, remaining, remaining)], 100.0)
    assert math.isinf(figures["settling"]) and [(v.invariant, v.cause) for v in found] == [("settling", "unsettled")]


def test_optimal_durations_match_the_closed_forms():
    d, v, a = 1.0, 1.0, 2.0
    assert inv.optimal_duration([d], [v]) == pytest.approx(d / v)  # velocity only
    assert inv.optimal_duration([d], [v], [a]) == pytest.approx(d / v + v / a)  # trapezoid, jerk unbounded
    # jerk-limited: slower than the trapezoid; synchronized: the slowest axis sets the duration
    assert inv.optimal_duration([d], [v], [a], [10.0]) > d / v + v / a
    assert inv.optimal_duration([d, 0.1], [v, v], [a, a]) == pytest.approx(d / v + v / a)


def test_a_seed_replays_the_same_scenario():
    a, b = make_scenario(3), make_scenario(3)
    assert a.summary() == b.summary() and np.array_equal(a.q_start, b.q_start)
    assert [(e.t, e.kind, e.label) for e in a.events] == [(e.t, e.kind, e.label) for e in b.events]
    assert [o.position for o in a.obstacles] == [o.position for o in b.obstacles]


def test_the_fuzzer_runs_without_ros():
    import subprocess
    import sys

    code = ("import sys, roboplan_ik_ros.fuzz.cli, roboplan_ik_ros.fuzz.runner; "
            "sys.exit('rclpy' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], timeout=120).returncode == 0, "the fuzzer imported rclpy"


def _square(seed: int) -> int:  # module level: the worker processes import it by name
    return seed * seed


@pytest.mark.parametrize("jobs", [1, 2, 3])
def test_a_campaign_runs_every_seed_once_in_any_number_of_workers(jobs):
    """Every seed given reaches ``done`` exactly once (a zip over the seeds once dropped the fifth with 2 workers)."""
    from roboplan_ik_ros.fuzz.cli import run_seeds

    seeds = list(range(10, 21))
    got = []
    run_seeds(seeds, jobs, _square, got.append)
    assert sorted(got) == [s * s for s in seeds]
