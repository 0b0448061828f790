"""Safety scenarios, end to end: ``ik_controller`` and ``mock_robot`` run as separate processes and
are driven only from outside (lifecycle services, topics, SetParameters). Every command the node
publishes is recorded and checked against the invariants of :func:`e2e.check_commands` (finite,
inside the joint limits, no step above v_max*dt except at re-seeds, which equal the measurement;
guard_cuts 0), and the mock is a strict drive that faults on any command beyond Franka's
acceleration and jerk bounds (one fault fails the scenario; scenario g runs without: it changes the
control rate while moving, which a fixed-period drive cannot follow). Each scenario prints its figures (run with -s); the module prints a summary at the end.

The scenarios share one ROS domain: they run one after another and each stops its processes.
No assertion is about a rate, a duration or a latency; timeouts are generous (under load too).
"""

from __future__ import annotations

import math
import time

import numpy as np
import pinocchio as pin
import pytest

import e2e
from e2e import ARM, Rig, box_margins, panda, report, write_config, rig  # noqa: F401 - rig is a fixture

#: node: keys of every scenario's config (on top of config/panda.yaml)
NODE = {"activation_timeout": 20.0}
LEASH = float(e2e.shipped_config()["node"]["max_state_divergence"])  # [rad] the command's lead over the robot
HOLD_TOL = 1e-3  # [rad] waiting_for_goal: commands stay this close to the activation/re-seed pose
WAIT = 60.0  # [s] generous timeout for something to happen


@pytest.fixture(scope="module", autouse=True)
def _figures_summary():
    yield
    if e2e.FIGURES:
        print("\n" + e2e.summary(), flush=True)


def _start(rig: Rig, node=None, mock=None, **config_kw) -> None:
    """A mock (``mock`` parameters) and an ik node (``node:`` config keys), configured and active,
    in mode waiting_for_goal."""
    rig.start_mock(**(mock or {}))
    rig.start_ik(write_config(rig.log_dir, node={**NODE, **(node or {})}, **config_kw))
    rig.activate()
    rig.wait_mode("waiting_for_goal", WAIT, since=rig.events["activate_request"])


def _since(rig: Rig, t: float) -> list:
    return [c for tc, c in rig.rec.commands if tc > t]



# =========================================================================== a. glitched measurements
def test_a_glitched_measurements_are_rejected(rig):
    # 250 Hz joint states (a glitch every 0.1 s) and a slightly lagging robot: glitches arrive while
    # the arm moves
    _start(rig, mock={"rate_hz": 250.0, "lag_time_constant": 0.1})
    r0 = rig.last_status().joint_states_rejected
    res = rig.set_param("glitch_every", 25, rig.mock)
    assert res.successful, res.reason
    T0 = rig.tcp()
    phases = []
    for k, (glitch, rot, shift) in enumerate(((("panda_joint7", 7.0), [0.1, -0.1, 0.6], [0.06, 0.08, -0.05]),
                                              (("panda_joint1", 10.0), [-0.1, 0.1, -0.6], [-0.04, -0.08, 0.06]))):
        for name, value in zip(("glitch_joint", "glitch_offset"), glitch):
            res = rig.set_param(name, value, rig.mock)
            assert res.successful, res.reason
        r_before = rig.wait_status(lambda s: True, WAIT, "a status").joint_states_rejected
        goal = pin.SE3(T0.rotation @ pin.exp3(np.array(rot)), T0.translation + shift)
        t_sent = rig.send_pose(goal)
        t_goal = rig.wait_reached(goal, WAIT, what=f"goal {k + 1} ({glitch[0]} +{glitch[1]:g} glitches)", since=t_sent)
        st = rig.wait_status(lambda s: s.joint_states_rejected >= r_before + 10, WAIT,
                             f"10 glitches ({glitch[0]} +{glitch[1]:g}) rejected")
        glitched_moving = sum(1 for t, _, valid in rig.rec.joint_states if t_sent < t < t_sent + t_goal and not valid)
        phases.append((st.joint_states_rejected - r_before, t_goal, glitched_moving))
    assert rig.set_param("glitch_every", 0, rig.mock).successful
    glitched = sum(1 for _, _, valid in rig.rec.joint_states if not valid)
    fig = rig.check()
    # no command moved toward a glitch: every step is bounded by v_max*dt (checked), the goals were
    # reached, and every glitched message counted as rejected
    report("a_glitches", glitched_js_received=glitched,
           rejected_joint7=phases[0][0], glitches_while_moving_joint7=phases[0][2], time_to_goal1_s=phases[0][1],
           rejected_joint1=phases[1][0], glitches_while_moving_joint1=phases[1][2], time_to_goal2_s=phases[1][1],
           **fig)


# =========================================================================== b. activation at a foreign pose
Q_FOREIGN_OFFSET = np.array([1.2, 0.3, -1.0, 0.5, 0.0, 0.0, 0.0])  # from the SRDF 'default' pose


def test_b_activate_at_a_foreign_pose_holds_until_a_goal(rig):
    P = panda()
    q_foreign = P.default + Q_FOREIGN_OFFSET
    assert P.within_limits(q_foreign) and box_margins(P.fk(q_foreign).translation).min() > 0.05
    _start(rig, mock={"initial_positions": q_foreign})
    t_act, t_act_wall = rig.events["activated"], rig.events["activated_wall"]
    rig.wait(lambda: time.perf_counter() - t_act >= 2.0 and rig.count_commands(t_act) >= 100, WAIT,
             "2 s and 100 commands after activation without a goal")
    t_goal = time.perf_counter()
    q_act = rig.measured(before=rig.rec.commands[0][0])
    waiting = np.array([c for t, c in rig.rec.commands if t < t_goal])
    drift = float(np.abs(waiting - q_act).max())
    modes = {s.mode for t, stamp, s in rig.rec.status if stamp >= t_act_wall and t < t_goal}
    rig.require(drift <= HOLD_TOL, f"without a goal the commands drifted {drift:.3g} rad from the activation pose "
                                   f"(max {ARM[int(np.abs(waiting - q_act).max(axis=0).argmax())]})")
    rig.require(modes == {"waiting_for_goal"}, f"modes before the first goal: {modes}")
    T_act = P.fk(q_act)
    goal = pin.SE3(T_act.rotation @ pin.exp3(np.array([0.0, 0.1, -0.1])), T_act.translation + [0.0, -0.05, 0.05])
    rig.send_pose(goal)
    rig.wait_mode("tracking", WAIT, since=t_goal)
    rig.wait(lambda: any(np.abs(c - q_act).max() > HOLD_TOL for c in _since(rig, t_goal)), WAIT, "the arm moving")
    t_reach = rig.wait_reached(goal, WAIT, since=t_goal)
    fig = rig.check()
    report("b_foreign_pose", drift_waiting_rad=drift, commands_waiting=len(waiting), time_to_goal_s=t_reach, **fig)


# =========================================================================== c. driver killed and restarted
@pytest.mark.parametrize("behavior", ["stop", "hold"])
def test_c_driver_killed_and_restarted_elsewhere(rig, behavior):
    P = panda()
    _start(rig, node={"stale_behavior": behavior})
    T0 = rig.tcp()
    goal = pin.SE3(T0.rotation @ pin.exp3(np.array([0.0, 0.0, 1.5])), T0.translation + [0.0, 0.1, 0.0])
    t_goal = time.perf_counter()
    rig.send_pose(goal)
    rig.wait_mode("tracking", WAIT, since=t_goal)
    q_start = rig.measured()
    rig.wait(lambda: np.abs(rig.measured() - q_start).max() > 0.05, WAIT, "the arm moving toward the goal")
    reseeds_before = rig.last_status().reseeds
    t_kill = time.perf_counter()
    rig.mock.kill9()
    q_dead = rig.measured()  # where the crashed driver left the robot
    rig.wait_mode("stale", WAIT, since=t_kill)
    t_stale = next(t for t, _, s in rig.rec.status if t > t_kill and s.mode == "stale")
    # Commands and ~/status are two topics with no ordering between them: a command published before
    # the node saw the gap may arrive after the first stale status. So the behaviour is waited for,
    # not cut at a status: stop: the stream ends (5 stale statuses arrive after the last command; a
    # node that kept publishing at 500 Hz never gets there); hold: it becomes constant and stays so.
    if behavior == "stop":
        def ended():
            t_last = rig.rec.commands[-1][0]
            return sum(1 for t, _, s in list(rig.rec.status) if t > max(t_last, t_kill) and s.mode == "stale") >= 5
        rig.wait(ended, WAIT, "5 stale statuses after the last command (stop: the stream ended)")
        in_flight = len(rig.commands_between(t_stale))
        held = []
    else:
        def holding():
            after = [c for t, c in list(rig.rec.commands) if t > t_stale]
            return len(after) >= 100 and all(np.array_equal(c, after[-1]) for c in after[-100:])
        rig.wait(holding, WAIT, "100 equal commands after the first stale status (hold)")
        after = rig.commands_between(t_stale)
        last = after[-1][1]
        in_flight = 1 + max((k for k, (_, c) in enumerate(after) if not np.array_equal(c, last)), default=-1)
        held = after[in_flight:]
    t_checked = time.perf_counter()
    # the last command that still moved the arm (stop: the last command before the gap)
    before = [(t, c) for t, c in rig.rec.commands if t <= t_checked]
    t_last_move = next((t for (t, c), (_, p) in zip(reversed(before), reversed(before[:-1]))
                        if not np.array_equal(c, p)), before[-1][0])

    # a new driver, the robot 0.58 rad away on joint 1 (the other way if that leaves the limits)
    q_new = q_dead.copy()
    q_new[0] += 0.58 if q_dead[0] + 0.58 < P.upper[0] - 0.1 else -0.58
    # hold: the restarted driver must not execute the stale held command before the node re-seeds;
    # it listens elsewhere, so the re-seed is checked against a robot that stays where it started
    extra = {"command_topic": "/e2e_restarted_driver_not_listening"} if behavior == "hold" else {}
    t_restart = time.perf_counter()
    rig.start_mock(initial_positions=q_new, **extra)

    def reseed():
        for t, c in rig.rec.commands:
            if t > t_checked and (behavior == "stop" or not np.array_equal(c, held[-1][1])):
                return t, c
        return None

    t_reseed, c_reseed = rig.wait(reseed, WAIT, "the first command after the stale gap")
    # the new driver's first measurement (the recorder may discover it after the node did: compare
    # with its first message, not with the latest message before the command)
    m = next(q for t, q, valid in rig.rec.joint_states if t > t_restart and valid)
    err = float(np.abs(c_reseed - m).max())
    rig.require(err <= e2e.RESEED_TOL and np.abs(m - q_new).max() <= 1e-9,
                f"the first command after the restart is {err:.3g} rad from the new measurement "
                f"(command {c_reseed.tolist()}, measured {m.tolist()}, new driver at {q_new.tolist()})")
    rig.wait_mode("waiting_for_goal", WAIT, since=t_reseed)
    rig.wait(lambda: time.perf_counter() - t_reseed >= 1.0 and rig.count_commands(t_reseed) >= 100, WAIT,
             "1 s and 100 commands after the re-seed")
    after = np.array(_since(rig, t_reseed - 1e-9))
    drift = float(np.abs(after - c_reseed).max())
    rig.require(drift <= HOLD_TOL, f"after the re-seed the commands drifted {drift:.3g} rad (no goal was sent)")
    st = rig.wait_status(lambda s: True, WAIT, "a status")
    rig.require(st.mode == "waiting_for_goal" and st.reseeds > reseeds_before,
                f"after the restart: mode {st.mode!r}, reseeds {reseeds_before} -> {st.reseeds}")
    fig = rig.check()
    report(f"c_driver_restart_{behavior}", time_to_stale_s=t_stale - t_kill,
           last_moving_command_after_kill_s=t_last_move - t_kill, commands_while_stale=len(held),
           commands_in_flight_after_the_first_stale_status=in_flight,
           reseed_after_restart_s=t_reseed - t_restart, drift_after_reseed_rad=drift, **fig)


# =========================================================================== d. lagging robot
def test_d_lagging_robot_large_motion(rig):
    P = panda()
    _start(rig, mock={"lag_time_constant": 0.3})
    q0 = rig.measured()
    q_goal = q0.copy()
    q_goal[6] -= 2.0  # turn the hand by 2 rad: joint 7 has to travel about 2 rad
    assert P.within_limits(q_goal)
    goal = P.fk(q_goal)
    t_sent = rig.send_pose(goal)
    t_reach = rig.wait_reached(goal, WAIT, what="the far goal (lagging robot)", since=t_sent)
    moved = float(np.abs(rig.measured() - q0).max())
    rig.require(moved >= 1.5, f"the goal was meant to need a large motion; the largest joint moved {moved:.3f} rad")
    fig = rig.check()
    # lead of each command over the latest measurement received before it (an over-estimate of the
    # node's own view: its measurement is at least as recent); the leash keeps it near 0.1 rad
    lead, k = 0.0, 0
    js = rig.rec.joint_states
    for t, c in rig.rec.commands:
        while k + 1 < len(js) and js[k + 1][0] < t:
            k += 1
        lead = max(lead, float(np.abs(c - js[k][1]).max()))
    rig.require(lead <= 2 * LEASH, f"the commands ran {lead:.3f} rad ahead of the measured robot (leash {LEASH})")
    report("d_lagging_robot", largest_joint_motion_rad=moved, max_lead_over_measured_rad=lead,
           time_to_goal_s=t_reach, **fig)


# =========================================================================== e. start outside the workspace
def _outside_start() -> tuple[np.ndarray, int, float]:
    """The first pose on a joint-1 scan from the 'default' pose whose TCP is 150-190 mm outside
    exactly one face of the workspace box (and >= 40 mm inside the others): (q, face index, distance).
    Far enough out that the recovery spans several ~/status messages."""
    P = panda()
    for dq1 in np.arange(0.5, 2.0, 0.01):
        q = P.default.copy()
        q[0] += dq1
        m = box_margins(P.fk(q).translation)
        out = m[m < 0]
        if len(out) == 1 and 0.15 <= -out[0] <= 0.19 and m[m >= 0].min() > 0.04:
            return q, int(np.argmin(m)), float(-out[0])
    raise AssertionError("no start pose outside the workspace found")


def test_e_start_outside_the_workspace_recovers(rig):
    P = panda()
    q_out, face, dist = _outside_start()
    # not _start(): the mode after activation may be recovering rather than waiting_for_goal
    rig.start_mock(initial_positions=q_out)
    rig.start_ik(write_config(rig.log_dir, node={**NODE, "status_rate_hz": 100.0}))  # fine-grained barrier values
    rig.activate()
    t_act_wall = rig.events["activated_wall"]
    st = rig.wait_status(lambda s: any(b.name == "workspace" for b in s.barriers), WAIT,
                         "a status with the workspace barrier", since=rig.events["activated"])
    violated = [(b.detail, b.value) for b in st.barriers if b.name == "workspace" and b.value < 0]
    # the first report may come after some recovery: the row is violated, never worse than at the start
    rig.require(len(violated) == 1 and -dist - 1e-3 <= violated[0][1] < 0,
                f"workspace rows violated in the first status: {violated}; expected one in [{-dist - 1e-3:.4f}, 0) "
                f"(the TCP starts {dist * 1e3:.1f} mm outside face {face} of x, y, z lower, x, y, z upper)")
    detail = violated[0][0]
    goal = P.fk(P.default)  # well inside the box
    t_goal = time.perf_counter()
    rig.send_pose(goal)
    t_reach = rig.wait_reached(goal, WAIT, what="the goal inside the workspace", since=t_goal)
    t_inside = next(t for t, q, valid in rig.rec.joint_states
                    if t > t_goal and valid and box_margins(P.fk(q).translation).min() >= 0.0)
    values = [(t, next((b.value for b in s.barriers if b.name == "workspace" and b.detail == detail), None))
              for t, stamp, s in rig.rec.status if stamp >= t_act_wall]
    values = [(t, v) for t, v in values if v is not None]
    drops = [(b - a) for (_, a), (_, b) in zip(values, values[1:]) if a < 0 and b < a - 1e-6]
    drop_inside = min([0.0] + [b - a for (_, a), (_, b) in zip(values, values[1:]) if a >= 0])
    rig.require(not drops, f"the violated barrier {detail!r} decreased while violated: largest drop "
                           f"{min(drops) if drops else 0:.3g} m")
    modes = [s.mode for t, _, s in rig.rec.status if t > rig.events["activate_request"]]
    rig.require("recovering" in modes, f"mode 'recovering' never seen; modes {sorted(set(modes))}")
    fig_modes = {m: modes.count(m) for m in ("waiting_for_goal", "recovering", "tracking")}
    rig.require(values[-1][1] >= 0.0, f"barrier {detail!r} still violated at the end: {values[-1][1]:.4g} m")
    fig = rig.check()
    report("e_outside_workspace", start_outside_m=dist, barrier=detail, time_to_inside_s=t_inside - t_goal,
           time_to_goal_s=t_reach, largest_drop_once_inside_m=drop_inside, barrier_samples=len(values),
           status_modes=fig_modes, **fig)


# =========================================================================== f. goal flood
def _goal_flood(rig, T0: pin.SE3, rng, n: int = 2000):
    """Publish n pose goals at 1 kHz, every tenth invalid (in turns: NaN, zero quaternion, unknown frame), and wait
    until the last valid one is reached: (goals_rejected during it, invalid sent, the last valid goal, flood [s],
    time to reach [s], whether the node re-seeded meanwhile: its joint states went stale, so it rightly refused
    valid goals too)."""
    g0, reseeds0 = rig.last_status().goals_rejected, rig.last_status().reseeds
    invalid, last_valid = 0, None
    t0 = time.perf_counter()
    for k in range(n):
        target = t0 + k * 1e-3
        while (now := time.perf_counter()) < target:
            time.sleep(min(target - now, 5e-4))
        if k % 10 == 5:
            kind = (k // 10) % 3
            msg = rig.pose_msg(T0, frame="map" if kind == 2 else e2e.ROOT_FRAME)
            if kind == 0:
                msg.pose.position.x = math.nan
            elif kind == 1:
                o = msg.pose.orientation
                o.x = o.y = o.z = o.w = 0.0
            invalid += 1
        else:
            last_valid = pin.SE3(T0.rotation @ pin.exp3(rng.uniform(-0.05, 0.05, 3)),
                                 T0.translation + rng.uniform(-0.02, 0.02, 3))
            msg = rig.pose_msg(last_valid)
        rig.pose_pub.publish(msg)
    flood_s = time.perf_counter() - t0
    rig.wait_status(lambda s: s.goals_rejected > g0, WAIT, "goals_rejected growing")
    rig.wait_commands(100, what="commands after the flood")
    try:
        t_reach = rig.wait_reached(last_valid, WAIT, what="the last valid goal", since=t0 + flood_s)
    except e2e.Timeout:
        if rig.last_status().reseeds == reseeds0:
            raise
        t_reach = None  # refused while the joint states were stale: the node rightly holds, no goal
    st = rig.wait_status(lambda s: True, WAIT, "a status")
    return st.goals_rejected - g0, invalid, t0, flood_s, t_reach, st.reseeds > reseeds0


def test_f_goal_flood(rig):
    _start(rig)
    T0 = rig.tcp()
    rng = np.random.default_rng(0)
    # the goal subscription keeps only the newest goal (depth 1): under the flood most goals are replaced unread,
    # so only bounds hold: some invalid goals were rejected, never more than sent. A flood during which the joint
    # states went stale (a starved machine) rejects valid goals too, rightly: it cannot judge the bound, and is
    # flooded again (at most three floods)
    floods = []
    for _ in range(3):
        rejected, invalid, t0, flood_s, t_reach, went_stale = _goal_flood(rig, T0, rng)
        floods.append((rejected, invalid, went_stale))
        if not went_stale:
            break
    assert not went_stale, f"the joint states went stale in each of {len(floods)} floods: {floods}"
    assert 0 < rejected <= invalid, (rejected, invalid)

    # paced, each goal waited for: every invalid goal is rejected (one count each) and no valid one
    rejections = []
    for kind in range(3):
        r0 = rig.last_status().goals_rejected
        msg = rig.pose_msg(T0, frame="map" if kind == 2 else e2e.ROOT_FRAME)
        if kind == 0:
            msg.pose.position.x = math.nan
        elif kind == 1:
            o = msg.pose.orientation
            o.x = o.y = o.z = o.w = 0.0
        t_bad = time.perf_counter()
        rig.pose_pub.publish(msg)
        rig.wait_status(lambda s: s.goals_rejected > r0, WAIT, f"invalid goal {kind} rejected", since=t_bad)
        valid = pin.SE3(T0.rotation, T0.translation + [0.0, 0.0, 0.01 * (kind + 1)])
        t_valid = rig.send_pose(valid)
        rig.wait_reached(valid, WAIT, what=f"valid goal {kind}", since=t_valid)
        st = rig.wait_status(lambda s: True, WAIT, "a status after the valid goal was reached")
        rejections.append(st.goals_rejected - r0)
    assert rejections == [1, 1, 1], f"goals_rejected per (invalid, valid) pair: {rejections}"
    fig = rig.check()
    # a figure for the note, not an assertion: how many commands the loop published during the flood
    command_rate = len(rig.commands_between(t0, t0 + flood_s)) / flood_s
    report("f_goal_flood", floods=len(floods), goals_sent=2000, invalid_sent=invalid, goals_rejected=rejected,
           flood_s=flood_s, command_rate_during_flood_hz=command_rate, time_to_last_goal_s=t_reach, **fig)


# =========================================================================== g. bad parameters
def test_g_bad_parameters(rig):
    # a lagging robot and a far goal. A drive runs at one command period: a rate change while the
    # arm moves (the same velocity in other increments per command) would be a velocity step, so it
    # is refused with the reason; at rest it is taken, and the strict drive sees no violation
    P = panda()
    _start(rig, mock={"lag_time_constant": 0.3})
    q_goal = rig.measured().copy()
    q_goal[6] -= 2.0
    goal = P.fk(q_goal)
    t_goal = rig.send_pose(goal)
    rig.wait_mode("tracking", WAIT, since=t_goal)
    res = rig.set_param("control_rate_hz", 250)
    rig.require(not res.successful and "control_rate_hz" in res.reason and "moves" in res.reason,
                f"a rate change while moving: successful={res.successful}, reason {res.reason!r} (must be refused)")
    moving_refusal = res.reason
    changes = []

    def set_rate(value):
        t_req = time.perf_counter()
        res = rig.set_param("control_rate_hz", value)
        changes.append((t_req, time.perf_counter(), float(value)))
        rig.require(res.successful, f"control_rate_hz {value!r} ({type(value).__name__}) refused: {res.reason!r}")
        rig.wait_commands(50, since=changes[-1][1], what=f"50 commands after control_rate_hz := {value!r}")

    t_reach = rig.wait_reached(goal, WAIT, since=t_goal)
    deadline = time.monotonic() + WAIT  # at rest: the stream stopped changing
    while True:
        res = rig.set_param("control_rate_hz", 250)  # an integer
        if res.successful or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    rig.require(res.successful, f"control_rate_hz 250 at rest refused: {res.reason!r}")
    changes.append((time.perf_counter(), time.perf_counter(), 250.0))
    rig.wait_commands(50, since=changes[-1][1], what="50 commands after control_rate_hz := 250")
    refused = {"control_rate_hz=250 (moving)": moving_refusal}
    for name, value in (("tasks.ee.task_gain", 1.5), ("control_rate_hz", -1), ("control_rate_hz", -1.0),
                        ("state_feedback", "guessed")):
        res = rig.set_param(name, value)
        refused[f"{name}={value!r}"] = res.reason
        rig.require(not res.successful and name in res.reason,
                    f"{name} = {value!r}: successful={res.successful}, reason {res.reason!r} (must be refused "
                    "with a reason naming the parameter)")
    set_rate(500.0)
    rig.require(float(rig.get_param("control_rate_hz")) == 500.0, "control_rate_hz is not 500 after setting it")
    fig = rig.check(rate_changes=changes)
    report("g_bad_parameters", time_to_goal_s=t_reach, **fig)
    for k, v in refused.items():
        print(f"[e2e]   refused {k}: {v}")


# =========================================================================== h. bad configs
def test_h_bad_configs(rig):
    rig.start_mock()
    good = write_config(rig.log_dir, node=NODE, suffix="", name="panda_config_without_suffix")

    def misspell(data):
        task = data["tasks"][0]
        task["positon_cost"] = task.pop("position_cost")

    bad = write_config(rig.log_dir, node=NODE, edit=misspell)
    ik_good = rig.start_ik(good)
    ik_bad = rig.start_ik(bad)
    rig.require(rig.configure(ik_good), f"configure with the suffix-less config path {good} failed")
    rig.require(rig.state(ik_good) == "inactive", "the suffix-less config: not inactive after configure")
    rig.require(not rig.configure(ik_bad), "configure with a misspelled key (tasks[0].positon_cost) succeeded")
    rig.wait(lambda: "tasks[0].positon_cost" in ik_bad.log(), WAIT, "the log naming tasks[0].positon_cost")
    rig.require(ik_bad.alive, "the node exited after a failed configure")
    rig.require(rig.state(ik_bad) == "unconfigured", "the node is not unconfigured after a failed configure")
    # no command: observe while the recorder is matched to the configured node's (inactive) publisher
    rig.wait(lambda: ik_good.name in rig.publishers_of(e2e.COMMAND_TOPIC), WAIT, "the configured node's publisher")
    t = time.perf_counter()
    n_js = len(rig.rec.joint_states)
    rig.wait(lambda: time.perf_counter() - t >= 1.0 and len(rig.rec.joint_states) >= n_js + 50, WAIT,
             "1 s and 50 joint_states of observation")
    rig.require(not rig.rec.commands, f"{len(rig.rec.commands)} commands published by unconfigured/inactive nodes")
    line = next(ln for ln in ik_bad.log().splitlines() if "tasks[0].positon_cost" in ln)
    fig = rig.check()
    error = line[line.index("tasks[0].positon_cost"):][:120]
    report("h_bad_configs", suffixless_configure="ok", misspelled_key_error=repr(error), **fig)
