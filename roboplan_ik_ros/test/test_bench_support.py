"""The benchmarks' support code (bench/common.py, bench/peers.py, bench/node_bench/): the checker uses
the core's collision pairs (so every robot the node takes also benchmarks), joint values convert to and
from RoboPlan's positions, and the RSS verdict fits what it says."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import common  # noqa: E402
from roboplan_ik_ros.core.model.scene import Scene  # noqa: E402


def _pair_links(geom, model) -> set[tuple[str, str]]:
    frames, objs = model.frames, geom.geometryObjects
    return {tuple(sorted((frames[objs[p.first].parentFrame].name, frames[objs[p.second].parentFrame].name)))
            for p in geom.collisionPairs}


@pytest.fixture(scope="module")
def kinova():
    return common.Robot(common.load_example_robot("kinova"))


def test_kinova_benchmarks_with_the_cores_collision_pairs(kinova):
    """Its SRDF disables no pair: the old checker found every random configuration in collision."""
    spec = kinova.spec
    scene = Scene(spec.urdf_xml, spec.srdf_xml, spec.package_paths)  # as the node builds it
    assert _pair_links(kinova.geom, kinova.model) == _pair_links(scene.collision_model, scene.model)
    assert any("adjacent" in n for n in kinova.notes)
    goals, drawn = common.make_goals(kinova, 20, seed=0)
    assert len(goals) == 20 and drawn < 40
    for values, T in goals:
        assert kinova.within_limits(values) and not kinova.in_collision(values)
        assert max(kinova.pose_errors(values, T)) < 1e-12


class _PinocchioLayoutScene:
    """The part of RoboPlan's Scene that RoboPlanGroupJoints reads, with pinocchio's q layout (RoboPlan's
    Scene is a pinocchio model: continuous joints as (cos, sin)): lets the conversion run without the peer."""

    def __init__(self, robot) -> None:
        self.model, self.robot = robot.model, robot

    def getCurrentJointPositions(self):  # noqa: N802 - RoboPlan's name
        return np.asarray(self.robot.q_ref, dtype=float).copy()

    def getJointPositionIndices(self, names):  # noqa: N802
        out = []
        for n in names:
            j = self.model.joints[self.model.getJointId(n)]
            out += list(range(j.idx_q, j.idx_q + j.nq))
        return out

    def getJointGroupInfo(self, group):  # noqa: N802
        assert group == self.robot.spec.group
        return type("GroupInfo", (), {"q_indices": self.getJointPositionIndices(self.robot.joints)})()


def _check_round_trip(joints, kinova) -> None:
    values = kinova.random_values(np.random.default_rng(3))
    q_group = joints.to_group(values)
    assert len(q_group) == 9  # three continuous joints as (cos, sin)
    assert np.allclose(joints.from_group(q_group), values)
    full = joints.to_full(values)
    assert np.allclose(joints.of_full(full), values)
    # angles beyond (-pi, pi] of the continuous joints come back wrapped, the others as given
    shifted = values + np.where(kinova.continuous, 2.0 * np.pi, 0.0)
    assert np.allclose(joints.from_group(joints.to_group(shifted)), values)


def test_roboplan_joint_values_round_trip_without_the_peer(kinova):
    """RoboPlanGroupJoints on a stand-in scene with pinocchio's q layout (the peer is absent in CI)."""
    from peers import RoboPlanGroupJoints

    joints = RoboPlanGroupJoints(_PinocchioLayoutScene(kinova), kinova)
    _check_round_trip(joints, kinova)
    # the full q is the benchmark's own: the same configuration, the joints outside the group at the reference
    values = kinova.random_values(np.random.default_rng(4))
    assert np.allclose(joints.to_full(values), kinova.full_q(values))


def test_roboplan_joint_values_round_trip(kinova):
    """The same with RoboPlan's own Scene (needs the peer: ``make bench`` installs it), whose q layout
    must be the stand-in's."""
    pytest.importorskip("roboplan", reason="the optional peer roboplan is not installed (requirements-bench.txt)")
    from peers import RoboPlanGroupJoints, _roboplan_scene

    scene, _ = _roboplan_scene(kinova)
    joints = RoboPlanGroupJoints(scene, kinova)
    stand_in = RoboPlanGroupJoints(_PinocchioLayoutScene(kinova), kinova)
    assert np.array_equal(joints.q_joint, stand_in.q_joint) and np.array_equal(joints.q_group, stand_in.q_group)
    _check_round_trip(joints, kinova)


def test_rss_verdict():
    from node_bench.process_stats import RSS_FLAT_MB_PER_MIN, rss_summary

    t = np.arange(0.0, 300.0, 1.0)
    growing = rss_summary(t, 200.0 + t / 60.0, 0.0, 300.0)  # 1 MB/min
    assert growing["rss_slope_mb_per_min"] == pytest.approx(1.0) and growing["rss_flat"] is False
    settling = rss_summary(t, 200.0 + 3.0 * np.minimum(t, 50.0) / 50.0, 0.0, 300.0)  # +3 MB then flat
    assert abs(settling["rss_slope_mb_per_min"]) < RSS_FLAT_MB_PER_MIN and settling["rss_flat"] is True
    assert settling["rss_start_mb"] == 200.0 and settling["rss_max_mb"] == pytest.approx(203.0)
    short = rss_summary(t[:100], np.full(100, 200.0), 0.0, 100.0)  # too short to judge
    assert short["rss_slope_mb_per_min"] is None and short["rss_flat"] is None


def test_command_ratios_and_goal_time():
    from node_bench.motion import command_ratios, goal_time

    dt, a_max, j_max = 0.002, np.array([10.0, 20.0]), np.array([5000.0, 1e4])
    t = np.arange(200) * dt
    q = np.stack([0.5 * 5.0 * t**2, 0.5 * 20.0 * t**2], axis=1)  # constant accelerations 5 and 20 rad/s^2
    r = command_ratios(q, dt, a_max, j_max)
    assert np.allclose(r["acc_ratio"], [0.5, 1.0]) and np.allclose(r["jerk_ratio"], [0.0, 0.0], atol=1e-6)
    assert r["over_acc_pct"] == 0.0
    q[100:, 0] += 1e-4  # a jump: second differences +-1e-4 (25 rad/s^2) on top of 5, third up to 2e-4
    r = command_ratios(q, dt, a_max, j_max)
    assert np.isclose(r["acc_ratio"][0], (1e-4 / dt**2 + 5.0) / 10.0) and np.isclose(r["jerk_ratio"][0], 2e-4 / dt**3 / 5000.0)
    assert np.isclose(r["over_acc_pct"], 100.0 * 2 / 198)
    tcp = np.zeros((10, 3))
    tcp[:, 0] = [0.0, 0.05, 0.1, 0.1995, 0.2011, 0.1999, 0.2, 0.2, 0.2, 0.2]  # 1.1 mm past at index 4
    assert goal_time(np.arange(10.0), tcp, np.array([0.2, 0.0, 0.0]), t_sent=0.0) == 5.0
    assert np.isnan(goal_time(np.arange(4.0), tcp[:4] * 0, np.array([0.2, 0.0, 0.0]), t_sent=0.0))


def test_first_departure_finds_the_first_changed_sample_despite_drift_noise_and_an_outlier():
    from node_bench.twist import first_departure

    rng = np.random.default_rng(0)
    t = np.arange(0.0, 0.3, 0.002)
    v = np.column_stack([0.1 + 0.01 * t, np.zeros_like(t), np.zeros_like(t)])  # a slow drift: steady
    v += rng.normal(0.0, 1e-6, v.shape)
    v[20, 0] += 1e-3  # one odd period in the noise window
    k_change = 100
    v[k_change:, 1] += 1e-3 * np.arange(1, len(t) - k_change + 1)  # the turn, 1 mm/s per period
    t_change = t[k_change] - 0.001  # the twist is published between two commands
    assert first_departure(t, v, t_change) == k_change
    assert first_departure(t, v, t[60] - 0.001) == k_change  # before: the drift alone is not a change
    steady = v.copy()
    steady[k_change:, 1] = steady[k_change - 1, 1]
    assert first_departure(t, steady, t_change) is None
    assert first_departure(t, v, t[1]) is None  # no window before the change
    # along the change only, signed: a departure across or against it is not the change
    assert first_departure(t, v, t_change, direction=[0.0, 1.0, 0.0]) == k_change
    assert first_departure(t, v, t_change, direction=[0.0, -1.0, 0.0]) is None
    assert first_departure(t, v, t_change, direction=[0.0, 0.0, 1.0]) is None


def test_tracking_error_pct_per_control_period():
    from node_bench.twist import tracking_error_pct

    dt = 0.002
    v_cmd = np.array([0.0, 0.1, 0.0])
    p = np.outer(np.arange(50), [0.0, 0.1 * 0.98 * dt, 0.0])
    err, v = tracking_error_pct(p, dt, v_cmd)
    assert err == pytest.approx(2.0) and v == pytest.approx([0.0, 0.098, 0.0])


def test_tick_on_time_counts_a_stall_of_n_periods_as_n_ticks():
    from node_bench.twist import tick_on_time

    rate = 500.0
    starts = np.arange(0.0, 1.0, 1.0 / rate)
    assert tick_on_time(starts, rate, 0.0, 1.0)[0] == pytest.approx(99.8)  # 499 gaps of 500 expected
    stalled = np.delete(starts, np.arange(100, 110))  # 10 ticks missing: one gap of 11 periods
    on_time, late = tick_on_time(stalled, rate, 0.0, 1.0)
    assert on_time == pytest.approx(100.0 * 488 / 500) and late == pytest.approx(100.0 / 489)


def test_twist_schedule_square_then_quick_turns():
    from node_bench.twist import TWIST_DIRECTIONS, TWIST_QUICK_SEGMENT_S, TWIST_SEGMENT_S, twist_schedule

    s = twist_schedule(10, 100)
    assert len(s) == 110  # 109 changes while moving (the first starts from rest)
    starts, durations, directions = zip(*s)
    assert durations[:10] == (TWIST_SEGMENT_S,) * 10 and durations[10:] == (TWIST_QUICK_SEGMENT_S,) * 100
    assert np.allclose(np.diff(starts), durations[:-1])  # back to back
    assert all(d == TWIST_DIRECTIONS[k % 4] for k, d in enumerate(directions))  # each change turns by 90 degrees
    # every closed run of four returns to the start: the tool stays within one square of each size
    path = np.cumsum([np.array(d) * T for _, T, d in s], axis=0)
    assert np.allclose(path[3], 0.0) and np.allclose(path[7], 0.0)
    assert np.abs(path).max() <= TWIST_SEGMENT_S + 1e-12  # [s of motion along an axis] the tool stays near


def test_tick_figures_count_a_stall_of_n_periods_as_n_ticks_within_the_window_only():
    from node_bench.node_figures import tick_figures

    rate = 500.0
    starts = np.delete(np.arange(0.0, 2.0, 1.0 / rate), np.arange(600, 610))  # 10 ticks missing at 1.2 s
    stats = {"starts": starts.tolist(), "durations": [1e-4] * len(starts), "cpu_starts": starts.tolist(),
             "cpu_durations": [5e-5] * len(starts)}
    f = tick_figures(stats, 1.0, 1.999, rate)  # the window holds the stall; the first second does not count
    assert f["ticks"] == 490 and f["expected_ticks"] == pytest.approx(499.5)
    assert f["on_time_pct"] == pytest.approx(100.0 * 488 / 499.5)  # 489 gaps, one of them 11 periods long
    assert f["gap_max_ms"] == pytest.approx(22.0)
    assert f["tick_cpu_sum_pct"] == pytest.approx(100.0 * 490 * 5e-5 / 0.999)


def test_arm_ros_args_put_the_namespace_and_every_absolute_topic_of_the_node_under_the_arm():
    from node_bench.arms_run import arm_ros_args

    data = {"node": {"joint_states_topic": "/joint_states",
                     "outputs": [{"topic": "/forward_position_controller/commands"}, {"topic": "/arm_traj"}]}}
    args = arm_ros_args("/arm2", data)
    assert args[0] == "--ros-args" and args[1::2] == ["-r"] * (len(args) // 2)
    rules = dict(rule.split(":=") for rule in args[2::2])
    assert rules == {"__ns": "/arm2", "/joint_states": "/arm2/joint_states",
                     "/robot_description": "/arm2/robot_description",
                     "/robot_description_semantic": "/arm2/robot_description_semantic",
                     "/forward_position_controller/commands": "/arm2/forward_position_controller/commands",
                     "/arm_traj": "/arm2/arm_traj"}
    # without node keys: the node's defaults (its /joint_states and its one forward_command output)
    assert "/forward_position_controller/commands:=/arm1/forward_position_controller/commands" in arm_ros_args("/arm1", {})
