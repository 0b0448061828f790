"""TwistFollower and scale_twist without ROS: integration, acceleration bounds, command timeout (by
arrival and by age), the leash, and the scaling rules of node.streaming."""

import math

import numpy as np
import pinocchio as pin
import pytest

from roboplan_ik_ros.core.control.twist_follower import (
    StreamingConfig, TwistFollower, check_streaming_config, scale_twist,
)
from roboplan_ik_ros.core.errors import InvalidInputError

DT = 0.002


def follower(**kw) -> TwistFollower:
    f = TwistFollower(StreamingConfig(**kw))
    f.start(pin.SE3.Identity())
    return f


def test_a_constant_twist_is_integrated_after_an_acceleration_bounded_start():
    f = follower(max_linear_acceleration=1.0, max_angular_acceleration=4.0)
    v, w = np.array([0.1, -0.05, 0.02]), np.array([0.0, 0.0, 0.3])
    f.command(v, w, now=0.0)
    previous_v, t = np.zeros(3), 0.0
    for _ in range(200):  # 0.4 s: ramp-up takes |v| / a = 0.115 s
        t += DT
        before = f.target.copy()
        f.command(v, w, now=t)
        f.step(DT, t)
        assert np.linalg.norm(f.linear_velocity - previous_v) <= 1.0 * DT + 1e-12
        previous_v = f.linear_velocity.copy()
    assert np.allclose(f.linear_velocity, v) and np.allclose(f.angular_velocity, w)
    assert np.allclose(f.target.translation - before.translation, v * DT)  # the last step: exactly v dt
    assert np.allclose(pin.log3(f.target.rotation @ before.rotation.T), w * DT)


def test_rotation_is_about_the_frame_origin():
    f = follower()
    T0 = pin.SE3(np.eye(3), np.array([0.3, 0.2, 0.5]))
    f.start(T0)
    for k in range(100):
        f.command(np.zeros(3), np.array([0.0, 0.5, 0.0]), now=k * DT)
        f.step(DT, k * DT)
    assert np.allclose(f.target.translation, T0.translation)
    assert np.linalg.norm(pin.log3(f.target.rotation)) > 0.01


def test_a_stream_that_stops_brakes_to_rest_at_the_bound_after_the_timeout():
    f = follower(command_timeout=0.1, max_linear_acceleration=2.0)
    v = np.array([0.2, 0.0, 0.0])
    t = 0.0
    for _ in range(100):
        t += DT
        f.command(v, np.zeros(3), now=t)
        f.step(DT, t)
    t_last = t
    speeds = []
    while f.streaming:
        t += DT
        f.step(DT, t)
        speeds.append(f.linear_velocity[0])
        assert t < 2.0
    s = np.array(speeds)
    k = int(np.argmax(s < 0.2 - 1e-12))  # first braking tick
    assert k * DT == pytest.approx(0.1, abs=2 * DT)  # full speed until command_timeout
    assert t - t_last > 0.1 and f.timed_out
    assert (np.diff(s) <= 1e-15).all() and (s >= 0.0).all()  # slowing only, never backwards
    assert (np.abs(np.diff(s)) <= 2.0 * DT + 1e-12).all()  # within the acceleration bound
    assert s[-1] == 0.0 and f.command_age(t) > 0.1


def test_a_command_already_old_on_arrival_times_out_earlier():
    f = follower(command_timeout=0.1)
    f.command(np.array([0.1, 0, 0]), np.zeros(3), now=1.0, age=0.08)
    f.step(DT, 1.0 + 0.01)
    assert not f.timed_out
    f.step(DT, 1.0 + 0.03)
    assert f.timed_out and f.command_age(1.03) == pytest.approx(0.11)


def test_the_leash_keeps_a_blocked_target_close_and_releases_at_once():
    f = follower(leash_distance=0.02, max_linear_acceleration=10.0)
    frame = pin.SE3.Identity()  # the frame does not move (blocked)
    t = 0.0
    for _ in range(500):
        t += DT
        f.command(np.array([0.25, 0, 0]), np.zeros(3), now=t)
        f.step(DT, t, frame)
        assert np.linalg.norm(f.target.translation) <= 0.02 + 1e-12
    assert f.leashed and f.linear_velocity[0] <= 10.0 * DT + 1e-12  # the outward velocity is dropped
    x = f.target.translation[0]
    f.command(np.array([-0.25, 0, 0]), np.zeros(3), now=t + DT)
    f.step(DT, t + DT, frame)
    assert f.target.translation[0] < x  # reversing moves back at once: nothing wound up


@pytest.mark.parametrize("kind", ["unitless", "speed_units"])
def test_scaling(kind):
    cfg = StreamingConfig(command_in_type=kind, max_linear_speed=0.2, max_angular_speed=1.0, speed_override=0.5)
    v, w = scale_twist(cfg, np.array([0.5, 0.0, 0.0]), np.array([0.0, 0.0, -0.5]))
    if kind == "unitless":
        assert np.allclose(v, [0.05, 0, 0]) and np.allclose(w, [0, 0, -0.25])
    else:  # 0.5 m/s is clipped to 0.2 (direction kept), then the override
        assert np.allclose(v, [0.1, 0, 0]) and np.allclose(w, [0, 0, -0.25])
    with pytest.raises(InvalidInputError, match="non-finite"):
        scale_twist(cfg, np.array([math.nan, 0, 0]), np.zeros(3))
    if kind == "unitless":
        with pytest.raises(InvalidInputError, match=r"\[-1, 1\]"):
            scale_twist(cfg, np.array([1.5, 0, 0]), np.zeros(3))


def test_config_checks_name_the_key():
    for key, value in (("command_in_type", "volts"), ("speed_override", 1.5), ("command_timeout", 0.0),
                       ("leash_distance", math.nan)):
        with pytest.raises(InvalidInputError, match=f"node.streaming.{key}"):
            check_streaming_config(StreamingConfig(**{key: value}))
