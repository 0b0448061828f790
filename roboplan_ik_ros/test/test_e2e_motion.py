"""Motion quality end to end: ``ik_controller`` (the shipped panda.yaml) drives the mock Panda as a
strict drive (separate processes, DDS). Per scenario, the peak acceleration and jerk per joint are
computed from consecutive published commands at the nominal 2 ms period, as ratios of Franka's
bounds (read here from config/panda_joint_limits.yaml, not through the package), and asserted
<= 1; overshoot after settling (<= 1 mm / 1 mrad) and guard_cuts 0 too. Every way the node stops
while moving (deactivate, SIGINT, an unreachable goal) must brake to rest within the bounds.

``pytest -s`` prints the table, and the goal time of a 20 cm step with the shipped bounds against
a config variant without the acceleration limit and goal smoothing (whose stream the strict drive
refuses: checked too). No assertion is about a duration; timeouts are generous.
"""

from __future__ import annotations

import math
import os
import signal
import time

import numpy as np
import pinocchio as pin
import pytest
import yaml
from lifecycle_msgs.msg import Transition

import e2e
from e2e import ARM, Rig, panda, write_config

NODE = {"activation_timeout": 20.0}
WAIT = 60.0
DT = 0.002  # [s] the shipped control period: the drive's nominal command period
RATIO_TOL = 1e-6  # the strict drive's tolerance
OVERSHOOT_TOL = 1e-3  # [m] and [rad]
SETTLE = 1e-3  # [m], [rad]: "at the goal"
#: step goals (TCP offsets [m]; 10-30 cm) that end where they started: the next scenario starts there
STEPS = [np.array(v) for v in ([0.0, 0.2, 0.0], [0.1, -0.1, -0.1], [-0.1, -0.1, 0.1], [0.0, -0.3, 0.0],
                               [0.0, 0.3, 0.0], [0.0, 0.0, -0.1], [0.0, 0.0, 0.1])]


def franka_bounds() -> tuple[np.ndarray, np.ndarray]:
    data = yaml.safe_load((e2e.CONFIG_DIR / "panda_joint_limits.yaml").read_text())["joint_limits"]
    return (np.array([data[j]["max_acceleration"] for j in ARM]), np.array([data[j]["max_jerk"] for j in ARM]))


A_MAX, J_MAX = franka_bounds()
ROWS: list[tuple] = []  # (scenario, acc ratios, jerk ratios, note) for the table
GOAL_TIMES: dict[str, float] = {}
SHIPPED, UNBOUNDED = "20 cm step, shipped bounds", "20 cm step, no acceleration limit or goal smoothing"


def ratios(commands: np.ndarray, first: int = 0, last: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Peak |acceleration| / a_max and |jerk| / j_max per joint of commands[first:last] (each
    difference uses the commands before it, so a segment of a stream is judged in context)."""
    last = len(commands) if last is None else last
    c = commands[max(0, first - 3):last]
    acc = np.abs(np.diff(c, n=2, axis=0)) / DT**2 / A_MAX
    jerk = np.abs(np.diff(c, n=3, axis=0)) / DT**3 / J_MAX
    return (acc.max(axis=0) if len(acc) else np.zeros(7)), (jerk.max(axis=0) if len(jerk) else np.zeros(7))


def commands_array(rig: Rig) -> tuple[np.ndarray, np.ndarray]:
    rec = list(rig.rec.commands)
    return np.array([t for t, _ in rec]), np.array([c for _, c in rec])


def segment(rig: Rig, t0: float, t1: float = np.inf) -> tuple[np.ndarray, np.ndarray, int, int]:
    """(times, commands, first, last): every command so far and the index range received in (t0, t1]."""
    times, cmds = commands_array(rig)
    first, last = int(np.searchsorted(times, t0, side="right")), int(np.searchsorted(times, t1, side="right"))
    return times, cmds, first, last


def record(name: str, acc: np.ndarray, jerk: np.ndarray, note: str = "") -> None:
    ROWS.append((name, acc, jerk, note))
    assert acc.max() <= 1.0 + RATIO_TOL and jerk.max() <= 1.0 + RATIO_TOL, (
        f"{name}: peak acceleration {acc.max():.4g}x / jerk {jerk.max():.4g}x of Franka's bounds "
        f"(per joint {np.round(acc, 3).tolist()} / {np.round(jerk, 3).tolist()})")


def tcp_path(cmds: np.ndarray) -> list[pin.SE3]:
    P = panda()
    return [P.fk(c) for c in cmds]


def overshoot(path: list[pin.SE3], start: np.ndarray, goal: pin.SE3) -> tuple[float, float]:
    """How far the TCP went past the goal along the approach [m], and its largest rotation error
    after it first came within SETTLE of the goal [rad] (the robot follows every command exactly)."""
    n = goal.translation - start
    n = n / max(np.linalg.norm(n), 1e-12)
    p = np.array([T.translation for T in path])
    past = float(max(0.0, ((p - goal.translation) @ n).max()))
    near = np.flatnonzero(np.linalg.norm(p - goal.translation, axis=1) < SETTLE)
    rot = 0.0 if near.size == 0 else max(float(np.linalg.norm(pin.log3(goal.rotation.T @ T.rotation)))
                                         for T in path[near[0]:])
    return past, rot


def time_to_goal(times: np.ndarray, path: list[pin.SE3], goal: pin.SE3, t_sent: float) -> float:
    """[s] from sending the goal to the last command outside SETTLE of it (receipt times)."""
    far = [k for k, T in enumerate(path) if max(e2e.pose_errors(goal, T)) >= SETTLE]
    return float((times[far[-1] + 1] if far and far[-1] + 1 < len(times) else times[0]) - t_sent)


def wait_settled(rig: Rig, n: int = 50, spread: float = 1e-5, timeout: float = WAIT) -> float:
    """Wait until the last ``n`` commands (0.1 s) stay within ``spread`` [rad] per joint (the posture
    task may still creep in the nullspace); the time then."""
    def still():
        cmds = np.array([c for _, c in rig.rec.commands[-n:]])
        return len(cmds) == n and float(np.ptp(cmds, axis=0).max()) <= spread
    rig.wait(still, timeout, f"the last {n} commands within {spread:g} rad (settled)")
    return time.perf_counter()


def joint_speed(rig: Rig) -> float:
    """[rad/s] the largest joint speed of the latest command step (0 before two commands)."""
    rec = rig.rec.commands[-2:]
    return float(np.abs(rec[1][1] - rec[0][1]).max() / DT) if len(rec) == 2 else 0.0


def wait_moving_fast(rig: Rig, speed: float = 0.3) -> None:
    """Wait until the commands move a joint faster than ``speed`` [rad/s] (the motion is under way: a
    number of control ticks, not a time)."""
    rig.wait(lambda: joint_speed(rig) > speed, WAIT, f"a joint commanded faster than {speed:g} rad/s")


def wait_stream_ended(rig: Rig, joint_states: int = 50) -> None:
    """Wait until ``joint_states`` /joint_states messages (the mock's own ticks) have arrived after the
    latest command: the node's command stream has ended (at 500 Hz it would never be quiet that long)."""
    def quiet():
        t_last = rig.rec.commands[-1][0] if rig.rec.commands else -math.inf
        return sum(1 for t, _, _ in list(rig.rec.joint_states)[-joint_states:] if t > t_last) >= joint_states
    rig.wait(quiet, WAIT, f"{joint_states} /joint_states after the last command (the command stream ended)")


# ================================================================================ without the bounds
def test_without_the_acceleration_limit_a_step_is_faster_and_the_strict_drive_refuses_it(ros, tmp_path):
    """A config variant without the acceleration limit and goal smoothing: the goal time of the
    same 20 cm step (printed beside the shipped one), its peaks (many times the bounds, printed),
    and the strict drive faulting on the first command beyond them, at the command the recorder
    computes, naming the joint, the value and the bound."""
    def unbounded(data):
        data["limits"] = [lim for lim in data["limits"] if lim["type"] != "acceleration"]
        data["node"]["goal_smoothing"]["type"] = "none"

    r = Rig(tmp_path)
    try:
        r.start_mock(strict_drive=False)
        r.start_ik(write_config(r.log_dir, node=NODE, edit=unbounded))
        r.activate()
        r.wait_mode("waiting_for_goal", WAIT, since=r.events["activate_request"])
        start = r.tcp()
        goal = pin.SE3(start.rotation, start.translation + STEPS[0])
        t_sent = r.send_pose(goal)
        r.wait_reached(goal, WAIT, since=t_sent)
        t_rest = wait_settled(r)
        times, cmds, first, last = segment(r, t_sent, t_rest)
        path = tcp_path(cmds[first:last])
        GOAL_TIMES[UNBOUNDED] = time_to_goal(
            times[first:last], path, goal, t_sent)
        acc, jerk = ratios(cmds, first, last)
        past, rot = overshoot(path, start.translation, goal)
        ROWS.append(("20 cm step WITHOUT the bounds", acc, jerk,
                     f"overshoot {past * 1e3:.3f} mm / {rot * 1e3:.3f} mrad; strict drive off"))
        assert acc.max() > 1.0  # what the strict drive is there to refuse

        # the strict drive on: the next step is refused at its first command beyond the bounds
        r.expect_drive_faults = True
        res = r.set_param("strict_drive", True, r.mock)
        assert res.successful, res.reason
        # the drive has checked a few commands: its history is the stream's, as the recorder's is
        r.wait(lambda: (r.drive_status() or {}).get("strict_drive") and r.drive_status().get("commands", 0) >= 20,
               WAIT, "the strict drive checking commands")
        back = pin.SE3(goal.rotation, goal.translation - STEPS[0])
        t_back = r.send_pose(back)
        r.wait(lambda: r.drive_faults(), WAIT, "the strict drive faulting")
        v = r.drive_faults()[0][1]
        times, cmds, first, _ = segment(r, t_back)
        a = np.abs(np.diff(cmds[first - 2:], n=2, axis=0)) / DT**2 / A_MAX  # a[k] belongs to command first + k
        j = np.abs(np.diff(cmds[first - 3:], n=3, axis=0)) / DT**3 / J_MAX
        worst = np.maximum(a, j)
        k = int(np.flatnonzero(worst.max(axis=1) > 1.0 + RATIO_TOL)[0])  # the first command beyond the bounds
        joint = int(worst[k].argmax())
        # (from rest, a velocity step has equal acceleration and jerk ratios: Franka's j_max = 500 a_max)
        ratio = (a if v["kind"] == "acceleration" else j)[k, joint]
        assert v["joint"] == ARM[joint] and ratio == pytest.approx(worst[k, joint], rel=1e-6), (v, k, a[k], j[k])
        assert v["ratio"] == pytest.approx(ratio, rel=1e-6), (v, k, ratio)  # that very command
        log = r.mock.log()
        assert "strict drive: command" in log and ARM[joint] in log and "holding" in log
        # the robot holds: its joint states no longer follow the commands
        r.wait_commands(50, what="50 more commands")  # joint states published before the fault have arrived
        q_held = r.measured()
        r.wait_commands(100, what="100 more commands")
        assert np.array_equal(r.measured(), q_held)
        print(f"\nstrict drive refused the unbounded stream: {v['message']}")
    finally:
        r.close()


# ======================================================================================= the rig
@pytest.fixture(scope="module")
def rig(ros, tmp_path_factory):
    r = Rig(tmp_path_factory.mktemp("e2e_motion"))
    try:
        r.start_mock()
        r.start_ik(write_config(r.log_dir, node=NODE))
        r.activate()
        r.wait_mode("waiting_for_goal", WAIT, since=r.events["activate_request"])
        yield r
    finally:
        r.close()
        print_table()


def print_table() -> None:
    if not ROWS:
        return
    print("\n\ne2e motion: peak acceleration / a_max and jerk / j_max per joint, from consecutive commands at 2 ms "
          f"(Franka: a_max {A_MAX.tolist()} rad/s^2, j_max {J_MAX.tolist()} rad/s^3)")
    head = "  ".join(f"j{k}" .rjust(5) for k in range(1, 8))
    print(f"{'scenario':38s} {'':5s} {head}   max   note")
    for name, acc, jerk, note in ROWS:
        for kind, r in (("acc", acc), ("jerk", jerk)):
            cells = "  ".join(f"{x:5.3f}" for x in r)
            print(f"{name if kind == 'acc' else '':38s} {kind:5s} {cells}  {r.max():5.3f}  {note if kind == 'acc' else ''}")
    for k, v in GOAL_TIMES.items():
        print(f"goal time, {k}: {v:.3f} s")
    if len(GOAL_TIMES) == 2:
        print(f"goal time ratio shipped / unbounded: {GOAL_TIMES[SHIPPED] / GOAL_TIMES[UNBOUNDED]:.2f}")


def _guard_cuts(rig: Rig) -> int:
    return max((s.guard_cuts for _, _, s in rig.rec.status), default=0)


# ======================================================================================= scenarios
def test_step_goals_10_to_30_cm(rig):
    worst = (0.0, 0.0)
    t_begin = time.perf_counter()
    for k, offset in enumerate(STEPS):
        start = rig.tcp()
        goal = pin.SE3(start.rotation, start.translation + offset)
        t_sent = rig.send_pose(goal)
        rig.wait_reached(goal, WAIT, what=f"step {k + 1} ({np.linalg.norm(offset) * 100:.0f} cm)", since=t_sent)
        t_rest = wait_settled(rig)
        times, cmds, first, last = segment(rig, t_sent, t_rest)
        path = tcp_path(cmds[first:last])
        past, rot = overshoot(path, start.translation, goal)
        worst = (max(worst[0], past), max(worst[1], rot))
        if k == 0:
            GOAL_TIMES[SHIPPED] = time_to_goal(times[first:last], path, goal, t_sent)
    times, cmds, first, last = segment(rig, t_begin)
    acc, jerk = ratios(cmds, first, last)
    record("step goals 10-30 cm", acc, jerk, f"overshoot {worst[0] * 1e3:.3f} mm / {worst[1] * 1e3:.3f} mrad")
    assert worst[0] <= OVERSHOOT_TOL and worst[1] <= OVERSHOOT_TOL, worst
    assert _guard_cuts(rig) == 0


@pytest.mark.parametrize("goals_per_tick", [0.1, 3], ids=["a goal every 10 ticks", "3 goals per tick"])
def test_a_goal_stream_along_a_circle(rig, goals_per_tick):
    """A pose-goal stream (each message replaces the goal; the goal smoothing follows it) slower than the
    500 Hz loop (a goal every 10 control periods) and faster (bursts of 3 goals every control period: several
    goals per tick, the newest counts): every command within the bounds (the harness), no overshoot after
    the stream stops. Which of the two the stream was is counted, not assumed: goals sent per command the
    node published meanwhile (< 1, > 1)."""
    start = rig.tcp()
    radius, period = 0.08, 2.0  # [m], [s]: 0.25 m/s
    burst = max(1, int(goals_per_tick))  # goals published back to back per step
    step = DT * burst / goals_per_tick  # [s] between bursts
    n_goals = int(round(2 * period / DT * goals_per_tick))  # two turns
    t_begin = time.perf_counter()
    goal = start
    for k in range(n_goals // burst):
        target = t_begin + k * step
        while (now := time.perf_counter()) < target:
            time.sleep(min(target - now, 0.002))
        for j in range(burst):
            phase = 2 * np.pi * (k * burst + j) / n_goals * 2  # two turns over the stream
            goal = pin.SE3(start.rotation, start.translation + radius * np.array([np.sin(phase), 1 - np.cos(phase), 0.0]))
            rig.send_pose(goal)
    t_end = time.perf_counter()
    sent = n_goals // burst * burst
    ticks = len(rig.commands_between(t_begin, t_end))
    per_tick = sent / max(ticks, 1)
    rig.require(per_tick < 1.0 if goals_per_tick < 1 else per_tick > 1.0,
                f"the stream was meant to send {goals_per_tick:g} goals per control tick; it sent {sent} goals while "
                f"the node published {ticks} commands ({per_tick:.2f} per tick)")
    rig.wait_reached(goal, WAIT, what="the stream's last goal")
    t_rest = wait_settled(rig)
    times, cmds, first, last = segment(rig, t_end, t_rest)
    before = panda().fk(cmds[first - 1]).translation
    past, rot = overshoot(tcp_path(cmds[first:last]), before, goal)
    times, cmds, first, last = segment(rig, t_begin)
    acc, jerk = ratios(cmds, first, last)
    record(f"goal stream, {per_tick:.2f} goals per tick, circle r 8 cm", acc, jerk,
           f"after the stream: overshoot {past * 1e3:.3f} mm / {rot * 1e3:.3f} mrad")
    assert past <= OVERSHOOT_TOL and rot <= OVERSHOOT_TOL, (past, rot)
    assert _guard_cuts(rig) == 0


def test_a_goal_reversed_while_moving_fast(rig):
    start = rig.tcp()
    t_begin = rig.send_pose(pin.SE3(start.rotation, start.translation + np.array([0.0, -0.25, 0.0])))
    wait_moving_fast(rig)
    t_back = rig.send_pose(start)
    turn = rig.tcp().translation
    times, cmds, first, last = segment(rig, t_begin, t_back)
    speed = float(np.abs(cmds[last - 1] - cmds[last - 2]).max() / DT)
    rig.require(speed > 0.2, f"the arm was meant to move fast when the goal reversed; max joint speed {speed:.3f} rad/s")
    rig.wait_reached(start, WAIT, what="the start again", since=t_back)
    t_rest = wait_settled(rig)
    times, cmds, first, last = segment(rig, t_back, t_rest)
    past, rot = overshoot(tcp_path(cmds[first:last]), turn, start)
    times, cmds, first, last = segment(rig, t_begin)
    acc, jerk = ratios(cmds, first, last)
    record("goal reversed while moving fast", acc, jerk,
           f"reversed at {speed:.2f} rad/s; overshoot {past * 1e3:.3f} mm / {rot * 1e3:.3f} mrad")
    assert past <= OVERSHOOT_TOL and rot <= OVERSHOOT_TOL, (past, rot)


def test_an_unreachable_goal_stops_at_the_barrier_and_the_return_does_not_overshoot(rig):
    start = rig.tcp()
    p_max = e2e.WORKSPACE[1]
    beyond = start.translation.copy()
    beyond[1] = p_max[1] + 0.3  # 30 cm beyond the workspace box's y face
    t_begin = rig.send_pose(pin.SE3(start.rotation, beyond))
    rig.wait(lambda: rig.tcp().translation[1] > p_max[1] - 0.01, WAIT, "the TCP at the box face")
    wait_settled(rig)
    t_back = rig.send_pose(start)
    at_face = rig.tcp().translation
    rig.wait_reached(start, WAIT, what="the start again", since=t_back)
    t_rest = wait_settled(rig)
    times, cmds, first, last = segment(rig, t_back, t_rest)
    past, rot = overshoot(tcp_path(cmds[first:last]), at_face, start)
    times, cmds, first, last = segment(rig, t_begin)
    deepest = max(float(panda().fk(c).translation[1] - p_max[1]) for c in cmds[first:last])
    acc, jerk = ratios(cmds, first, last)
    record("unreachable goal, then back", acc, jerk,
           f"box face crossed by {max(deepest, 0.0) * 1e3:.3f} mm; return overshoot {past * 1e3:.3f} mm / "
           f"{rot * 1e3:.3f} mrad")
    assert deepest <= 1e-4 and past <= OVERSHOOT_TOL and rot <= OVERSHOOT_TOL, (deepest, past, rot)


def _start_fast_motion(rig: Rig) -> tuple[float, np.ndarray]:
    """A 25 cm goal; returns once a joint is commanded faster than 0.3 rad/s: (time sent, the command then)."""
    start = rig.tcp()
    t0 = rig.send_pose(pin.SE3(start.rotation, start.translation + np.array([0.0, 0.25, 0.0])))
    wait_moving_fast(rig)
    return t0, rig.rec.commands[-1][1]


def _check_braked_stop(rig: Rig, name: str, t_begin: float, t_stop: float) -> tuple[int, float]:
    """The commands after ``t_stop`` brake to rest (several commands, the last ones equal) within
    the bounds; the strict drive saw the stream at rest. (braking commands, speed at the stop [rad/s])."""
    times, cmds, first, last = segment(rig, t_stop)
    _, _, first_all, _ = segment(rig, t_begin)
    moving = cmds[first - 1] - cmds[first - 2]
    speed = float(np.abs(moving).max() / DT)
    rig.require(speed > 0.2, f"{name}: the arm was meant to move fast at the stop; max joint speed {speed:.3f} rad/s")
    after = cmds[first:]
    changing = int(np.count_nonzero(np.any(np.diff(np.vstack([cmds[first - 1], after]), axis=0) != 0, axis=1)))
    rig.require(changing > 5, f"{name}: {changing} commands moved after the stop: it did not brake")
    rig.require(len(after) >= 3 and np.array_equal(after[-1], after[-2]) and np.array_equal(after[-2], after[-3]),
                f"{name}: the command stream did not end at rest")
    acc, jerk = ratios(cmds, first_all)
    record(name, acc, jerk, f"{changing} braking commands from {speed:.2f} rad/s")
    return changing, speed


def test_deactivate_while_moving_brakes_to_rest(rig):
    t_begin, _ = _start_fast_motion(rig)
    t_stop = time.perf_counter()
    rig.require(rig.transition(Transition.TRANSITION_DEACTIVATE), "deactivate failed")
    wait_stream_ended(rig)  # inactive: no more commands (the braking ones came before the response)
    _check_braked_stop(rig, "deactivate while moving", t_begin, t_stop)
    rig.wait_drive_caught_up()
    d = rig.drive_status()
    rig.require(d["state"] == "ok" and not d["moving"] and d["unbraked_stream_ends"] == 0,
                f"the strict drive after deactivate: {d}")
    # active again for the next scenario: the stream restarts at the (resting) robot
    t_act = time.perf_counter()
    rig.require(rig.transition(Transition.TRANSITION_ACTIVATE), "activate failed")
    rig.wait_mode("waiting_for_goal", WAIT, since=t_act)
    rig.wait(lambda: rig.commands_between(t_act), WAIT, "a command after the re-activation")
    t_first, first = rig.commands_between(t_act)[0]
    measured = rig.measured(before=t_first)
    err = float(np.abs(first - measured).max())
    rig.require(err <= e2e.RESEED_TOL, f"the first command after the re-activation is {err:.3g} rad from the "
                                       "resting robot's measured position")
    rig.check()


def test_sigint_while_moving_brakes_to_rest_before_the_node_exits(rig):
    t_begin, _ = _start_fast_motion(rig)
    rig.ik.killed = True  # on purpose: the harness must not treat its exit as a crash
    t_stop = time.perf_counter()
    os.kill(rig.ik.popen.pid, signal.SIGINT)  # as a Ctrl-C in its terminal (the leader; not the SimpleIK worker)
    code = rig.ik.popen.wait(timeout=WAIT)
    changing, _ = _check_braked_stop(rig, "SIGINT while moving", t_begin, t_stop)
    rig.wait_drive_caught_up()
    d = rig.drive_status()
    rig.require(d["state"] == "ok" and not d["moving"], f"the strict drive after SIGINT: {d}")
    rig.require(code == 0, f"ik_controller exited with {code} after SIGINT")
    rig.require("SIGINT: braked to rest" in rig.ik.log(), "no 'SIGINT: braked to rest' in the node's log")
    rig.check()
