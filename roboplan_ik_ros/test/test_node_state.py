"""Joint-state decoding and the state-feedback logic (no DDS)."""

import math
from array import array

import numpy as np
import pytest

from models import scene
from roboplan_ik_ros.node.rosbridge import JointMap, JointStateDecoder
from roboplan_ik_ros.node.state import StateTracker

ARM = [f"panda_joint{i}" for i in range(1, 8)]


@pytest.fixture(scope="module")
def panda():
    return scene("panda")


def test_decoder_reorders_and_ignores_extra_names(panda):
    dec = JointStateDecoder(panda, ARM)
    names = ["extra_joint", *reversed(ARM), "panda_finger_joint1"]
    pos = array("d", [9.0, 0.7, 0.6, 0.5, -0.4, 0.3, 0.2, 0.1, 0.02])
    q = panda.neutral()
    assert dec.decode(names, pos, q) == ""
    assert np.allclose(q[:7], [0.1, 0.2, 0.3, -0.4, 0.5, 0.6, 0.7]) and q[7] == 0.02


@pytest.mark.parametrize("names, pos, words", [
    (ARM[:6], [0.0] * 6, "missing joints ['panda_joint7']"),
    (ARM, [0.0] * 6, "7 names but 6 positions"),
    (ARM, [0.0, math.nan, 0.0, 0.0, 0.0, 0.0, 0.0], "non-finite positions for ['panda_joint2']"),
    (ARM, [0.0, math.inf, 0.0, 0.0, 0.0, 0.0, 0.0], "non-finite"),
])
def test_decoder_rejects_bad_messages(panda, names, pos, words):
    dec = JointStateDecoder(panda, ARM)
    q = panda.neutral()
    before = q.copy()
    assert words in dec.decode(names, array("d", pos), q)
    assert np.array_equal(q, before)


def test_decoder_cache_follows_name_changes(panda):
    dec = JointStateDecoder(panda, ARM)
    q = panda.neutral()
    assert dec.decode(ARM, array("d", [0.1] * 7), q) == ""
    assert "missing" in dec.decode(ARM[1:], array("d", [0.1] * 6), q)
    assert dec.decode(ARM, array("d", [0.2] * 7), q) == "" and np.allclose(q[:7], 0.2)


def test_joint_map_continuous_joint():
    from roboplan_ik_ros.core.scene import Scene

    urdf = """<robot name="r"><link name="base"/><link name="l1"/>
      <joint name="j" type="continuous"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/></joint></robot>"""
    s = Scene(urdf)
    m = JointMap(s, ["j"])
    q = s.neutral()
    m.to_q(np.array([2.5]), q)
    assert np.allclose(q, [math.cos(2.5), math.sin(2.5)])
    assert np.allclose(m.from_q(q, np.empty(1)), [2.5])


def _tracker(panda, mode):
    st = StateTracker(panda, panda.group("arm"), mode, max_divergence=0.1)
    st.measured[:] = panda.named_configuration("default")
    st.on_measurement(0.0)
    return st


def test_commanded_mode_integrates_own_output(panda):
    st = _tracker(panda, "commanded")
    q = st.current().copy()
    q[0] += 0.05
    st.commit(q)
    st.measured[7] = 0.03  # finger (outside the group): always from the measurement
    st.on_measurement(0.01)  # measurement lags by 0.05 < 0.1: no resync
    q2 = st.current()
    assert q2[0] == q[0] and q2[7] == 0.03 and st.resyncs == 0


def test_commanded_mode_resyncs_on_divergence(panda):
    st = _tracker(panda, "commanded")
    q = st.current().copy()
    q[3] += 0.2
    st.commit(q)
    st.on_measurement(0.01)
    assert np.allclose(st.current(), st.measured) and st.resyncs == 1
    assert np.allclose(st.commanded, st.measured)


def test_no_resync_without_new_measurement(panda):
    st = _tracker(panda, "commanded")
    st.current()
    q = st.commanded.copy()
    q[3] += 0.2
    st.commit(q)
    assert st.current()[3] == q[3] and st.resyncs == 0


def test_measured_mode(panda):
    st = _tracker(panda, "measured")
    q = st.current().copy()
    q[0] += 0.05
    st.commit(q)
    assert st.current()[0] == st.measured[0]


def test_age(panda):
    st = StateTracker(panda, panda.group("arm"), "commanded", 0.1)
    assert st.age(5.0) == math.inf and not st.has_measurement
    st.on_measurement(4.0)
    assert st.age(5.0) == 1.0
