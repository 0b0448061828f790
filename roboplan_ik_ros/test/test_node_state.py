"""Joint-state decoding (no DDS)."""

import math
from array import array

import numpy as np
import pytest

from models import scene
from roboplan_ik_ros.node.message_conversions import JointMap, JointStateDecoder

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
    from roboplan_ik_ros.core.model.scene import Scene

    urdf = """<robot name="r"><link name="base"/><link name="l1"/>
      <joint name="j" type="continuous"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/></joint></robot>"""
    s = Scene(urdf)
    m = JointMap(s, ["j"])
    q = s.neutral()
    m.to_q(np.array([2.5]), q)
    assert np.allclose(q, [math.cos(2.5), math.sin(2.5)])
    assert np.allclose(m.from_q(q, np.empty(1)), [2.5])
