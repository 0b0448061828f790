"""control_msgs/JointJog through the node's seam, in-process: ``GoalInputs.on_joint_jog`` with a stand-in
message class that has JointJog's fields (``header``, ``joint_names``, ``velocities``, ``displacements``,
``duration``), and with the real class where control_msgs is installed (not a PyPI wheel: skipped here).

control_msgs is not installable on this machine, so the node never subscribes ``~/<task>/joint_jog``
here and ``test_readme_examples.py`` skips its JointJog example; the conversion behind it is tested
here: a JointJog drives the loop exactly as the equivalent sensor_msgs/JointState jog on
``~/<task>/target_joint_velocities`` does (same commands, tick by tick), by joint name, and what the
README says is refused (``displacements``, ``duration``, a stamp older than ``command_timeout``, bad
names) is refused with the reason, counted, and changes nothing.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np
import pytest
from builtin_interfaces.msg import Time
from sensor_msgs.msg import JointState
from std_msgs.msg import Header

from roboplan_ik_ros.node.goal_inputs import GoalInputs
from roboplan_ik_ros.node.node_config import NodeConfig
from test_control_loop import SimRobot, panda  # noqa: F401 - panda is a fixture
from test_joint_jog_follower import posture_only_loop

NOW_NS = 1_000_000_000_000  # the fake node clock [ns]


@dataclass
class StandInJointJog:
    """control_msgs/msg/JointJog's fields (not a JointState: GoalInputs tells them apart by type)."""

    header: Header = field(default_factory=Header)
    joint_names: list = field(default_factory=list)
    displacements: list = field(default_factory=list)
    velocities: list = field(default_factory=list)
    duration: float = 0.0


class _Clock:
    def now(self):
        return type("T", (), {"nanoseconds": NOW_NS})()


class _Node:
    def get_clock(self):
        return _Clock()


def _inputs(loop):
    rejected, logs = [], []
    inputs = GoalInputs(_Node(), loop, threading.Lock(), resolver=None, cfg=NodeConfig(), is_active=lambda: True,
                        log=lambda level, text: logs.append((level, text)), on_rejected=rejected.append,
                        on_goal_set=lambda: None)
    return inputs, rejected, logs


def _run(panda, send, ticks: int = 300):  # noqa: F811 - panda is a fixture
    """A posture-only loop (speed_units jogs) fed by ``send(inputs, loop)`` every 5 ticks: the commands."""
    loop = posture_only_loop(panda)
    inputs, rejected, _ = _inputs(loop)
    sim = SimRobot(loop, panda.named_configuration("default"))
    assert loop.activate(sim.t) == ""
    sim.tick(3)
    for k in range(ticks):
        if k % 5 == 0:
            send(inputs, loop)
        sim.tick()
    assert not rejected, rejected
    return np.array(sim.commands), loop


JOG = {"panda_joint1": 0.3, "panda_joint4": -0.2}


def _jog_msg(cls=StandInJointJog, **kw):
    msg = cls()
    msg.joint_names = list(JOG)
    msg.velocities = list(JOG.values())
    for k, v in kw.items():
        setattr(msg, k, v)
    return msg


def test_a_joint_jog_moves_the_named_joints_as_the_joint_state_jog_does(panda):  # noqa: F811
    def joint_jog(inputs, loop):
        msg = _jog_msg()
        inputs.on_joint_jog("posture", msg, msg.velocities)

    def joint_state(inputs, loop):
        msg = JointState(name=list(JOG), velocity=list(JOG.values()))
        inputs.on_joint_jog("posture", msg, msg.velocity)

    jj, loop = _run(panda, joint_jog)
    js, _ = _run(panda, joint_state)
    assert np.array_equal(jj, js)  # one conversion, tick for tick
    moved = jj[-1] - jj[0]
    g = loop.group
    for name, v in JOG.items():  # each named joint moved in its direction at its velocity in the end
        j = g.joint_names.index(name)
        assert np.sign(moved[j]) == np.sign(v)
        assert (jj[-1, j] - jj[-2, j]) / loop.dt == pytest.approx(v, rel=1e-6)
    others = [g.joint_names.index(n) for n in g.joint_names if n not in JOG]
    assert np.abs(moved[others]).max() < 1e-9  # joints not named: 0


@pytest.mark.parametrize("fields, words", [
    ({"displacements": [0.1, 0.1]}, "displacements/duration are not supported"),
    ({"duration": 0.5}, "displacements/duration are not supported"),
    ({"joint_names": ["panda_joint1", "panda_joint99"]}, "not in the group"),
    ({"velocities": [0.3]}, "equal length"),
    ({"velocities": [0.3, float("nan")]}, "non-finite velocities"),
    # 0.3 s old: beyond command_timeout (0.1 s), within stamp_tolerance (0.5 s: the clocks agree)
    ({"header": Header(stamp=Time(sec=NOW_NS // 1_000_000_000 - 1, nanosec=700_000_000))}, "old on arrival"),
])
def test_what_the_readme_refuses_is_refused_with_the_reason(panda, fields, words):  # noqa: F811
    loop = posture_only_loop(panda)
    inputs, rejected, logs = _inputs(loop)
    sim = SimRobot(loop, panda.named_configuration("default"))
    assert loop.activate(sim.t) == ""
    before = loop.counts.goals_rejected
    inputs.on_joint_jog("posture", _jog_msg(**fields), fields.get("velocities", list(JOG.values())))
    assert loop.counts.goals_rejected == before + 1
    assert len(rejected) == 1 and rejected[0].startswith("~/posture/joint_jog: ") and words in rejected[0], rejected
    assert not loop.streaming
    sim.tick(50)
    assert np.abs(np.diff(np.array(sim.commands), axis=0)).max() == 0.0  # nothing moved


def test_a_fresh_stamp_is_accepted(panda):  # noqa: F811
    stamp = Time(sec=NOW_NS // 1_000_000_000, nanosec=0)  # the node's now: age 0
    commands, loop = _run(panda, lambda inputs, lp: inputs.on_joint_jog(
        "posture", _jog_msg(header=Header(stamp=stamp)), list(JOG.values())), ticks=50)
    assert loop.streaming and np.abs(commands[-1] - commands[0]).max() > 0.0


def test_the_real_joint_jog_class_where_control_msgs_is_installed(panda):  # noqa: F811
    msgs = pytest.importorskip("control_msgs.msg", reason="control_msgs is not installed (not a PyPI wheel)")
    assert {"header", "joint_names", "displacements", "velocities", "duration"} <= set(
        msgs.JointJog.get_fields_and_field_types())

    def real(inputs, loop):
        msg = _jog_msg(msgs.JointJog)
        inputs.on_joint_jog("posture", msg, msg.velocities)

    def stand_in(inputs, loop):
        msg = _jog_msg()
        inputs.on_joint_jog("posture", msg, msg.velocities)

    assert np.array_equal(_run(panda, real)[0], _run(panda, stand_in)[0])
