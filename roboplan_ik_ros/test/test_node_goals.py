"""Goal validation and frame resolution (no DDS)."""

import math

import numpy as np
import pinocchio as pin
import pytest
from geometry_msgs.msg import Pose, PoseStamped

from models import scene
from roboplan_ik_ros.node.goal_frames import FrameResolver, GoalError
from roboplan_ik_ros.node.message_conversions import PoseError, pose_from_se3, root_frame_name, se3_from_pose


def make_pose(xyz=(0.4, 0.0, 0.5), xyzw=(1.0, 0.0, 0.0, 0.0)) -> Pose:
    p = Pose()
    p.position.x, p.position.y, p.position.z = xyz
    p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w = xyzw
    return p


def test_pose_roundtrip():
    T = pin.SE3(pin.rpy.rpyToMatrix(0.3, -0.2, 1.0), np.array([0.1, 0.2, 0.3]))
    back = se3_from_pose(pose_from_se3(T))
    assert np.allclose(back.homogeneous, T.homogeneous, atol=1e-12)


@pytest.mark.parametrize("pose, words", [
    (make_pose(xyz=(math.nan, 0.0, 0.0)), "non-finite"),
    (make_pose(xyzw=(0.0, 0.0, 0.0, math.inf)), "non-finite"),
    (make_pose(xyzw=(0.0, 0.0, 0.0, 0.0)), "zero quaternion"),
    (make_pose(xyzw=(0.0, 0.0, 0.0, 2.0)), "norm 2 is not 1"),
    (make_pose(xyzw=(0.0, 0.0, 0.5, 0.5)), "is not 1"),
])
def test_bad_poses_are_rejected(pose, words):
    with pytest.raises(PoseError, match=words):
        se3_from_pose(pose, 0.01)


def test_nearly_unit_quaternion_is_normalized():
    T = se3_from_pose(make_pose(xyzw=(0.0, 0.0, 0.0, 1.005)), 0.01)
    assert np.allclose(T.rotation, np.eye(3))


@pytest.fixture(scope="module")
def panda():
    return scene("panda")


def test_root_frame(panda):
    assert root_frame_name(panda) == "panda_link0"
    assert root_frame_name(scene("ur5")) == "world"


def test_resolver_model_frames(panda):
    q = panda.named_configuration("default")
    r = FrameResolver(panda, "panda_link0")
    ps = PoseStamped(pose=make_pose())
    for frame in ("", "panda_link0", "universe"):
        ps.header.frame_id = frame
        assert np.allclose(r.resolve(ps, q, 0.01).translation, [0.4, 0.0, 0.5])
    ps.header.frame_id = "panda_hand_tcp"
    ps.pose = make_pose(xyz=(0.0, 0.0, 0.1), xyzw=(0.0, 0.0, 0.0, 1.0))
    T = r.resolve(ps, q, 0.01)
    expected = panda.frame_pose(q, "panda_hand_tcp") * pin.SE3(np.eye(3), np.array([0.0, 0.0, 0.1]))
    assert np.allclose(T.homogeneous, expected.homogeneous)


def test_resolver_unknown_frame_without_tf(panda):
    r = FrameResolver(panda, "panda_link0", tf_buffer=None)
    ps = PoseStamped(pose=make_pose())
    ps.header.frame_id = "map"
    with pytest.raises(GoalError, match="'map' is not a frame of the robot model and tf2_ros") as exc:
        r.resolve(ps, panda.neutral(), 0.01)
    assert exc.value.code == GoalError.UNKNOWN_FRAME


def test_resolver_uses_tf_buffer_for_other_frames(panda):
    from geometry_msgs.msg import TransformStamped

    class Buffer:  # the part of tf2_ros.Buffer the resolver uses: map moves +1 m along x per second up to t = 3 s
        def lookup_transform(self, target, source, time, timeout=None):
            if source != "map":
                raise RuntimeError(f"frame {source} does not exist")
            sec = time.nanoseconds * 1e-9
            if sec > 3.0:
                raise RuntimeError("Lookup would require extrapolation into the future")
            tf = TransformStamped()
            tf.transform.translation.x = 4.0 if sec == 0.0 else 1.0 + sec  # Time(): the latest (t = 3 s)
            tf.transform.rotation.w = 1.0
            return tf

    r = FrameResolver(panda, "panda_link0", tf_buffer=Buffer())
    ps = PoseStamped(pose=make_pose())
    ps.header.frame_id = "map"
    assert np.allclose(r.resolve(ps, panda.neutral(), 0.01).translation, [4.4, 0.0, 0.5])  # zero stamp: latest
    ps.header.stamp.sec, ps.header.stamp.nanosec = 2, 500_000_000  # looked up at the message's stamp
    assert np.allclose(r.resolve(ps, panda.neutral(), 0.01).translation, [3.9, 0.0, 0.5])
    assert np.allclose(r.T_world_frame("map", panda.neutral(), ps.header.stamp).translation, [3.5, 0.0, 0.0])
    assert r.stamp_fallbacks == 0
    ps.header.stamp.sec = 5  # newer than the buffer's last transform: the latest, counted and said
    assert np.allclose(r.resolve(ps, panda.neutral(), 0.01).translation, [4.4, 0.0, 0.5])
    assert r.stamp_fallbacks == 1 and "extrapolation" in r.last_stamp_fallback and "'map'" in r.last_stamp_fallback
    ps.header.frame_id = "odom"
    with pytest.raises(GoalError) as exc:
        r.resolve(ps, panda.neutral(), 0.01)
    assert exc.value.code == GoalError.TRANSFORM_FAILED


def test_resolver_bad_pose_code(panda):
    ps = PoseStamped(pose=make_pose(xyzw=(0.0, 0.0, 0.0, 0.0)))
    with pytest.raises(GoalError) as exc:
        FrameResolver(panda, "panda_link0").resolve(ps, panda.neutral(), 0.01)
    assert exc.value.code == GoalError.INVALID
