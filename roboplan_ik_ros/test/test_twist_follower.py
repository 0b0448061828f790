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


def test_a_target_held_at_the_leash_moves_on_with_a_slower_frame():
    """The frame follows at 0.1 m/s a twist of 0.25 m/s (a velocity bound): the target runs ahead to the
    leash and then stays there, held at every step and moving at the frame's speed (the velocity it
    keeps); it does not stop and fall back toward the frame (a sawtooth of the target's lead)."""
    f = follower(leash_distance=0.02, max_linear_acceleration=10.0)
    t, x_frame, leads = 0.0, 0.0, []
    for k in range(500):
        t += DT
        x_frame += 0.1 * DT
        f.command(np.array([0.25, 0, 0]), np.zeros(3), now=t)
        f.step(DT, t, pin.SE3(np.eye(3), np.array([x_frame, 0.0, 0.0])))
        leads.append(f.target.translation[0] - x_frame)
        if k >= 100:
            assert f.leashed
    assert np.allclose(leads[100:], 0.02, atol=1e-12)
    assert f.linear_velocity[0] == pytest.approx(0.1, abs=1e-9)  # the frame's speed (cut after this step's increase)


def test_a_rotating_frame_keeps_its_angular_velocity_at_the_leash():
    f = follower(leash_angle=0.1, max_angular_acceleration=40.0)
    t, angle = 0.0, 0.0
    for k in range(400):
        t += DT
        angle += 0.5 * DT  # the frame turns at 0.5 rad/s about z; the twist asks 1 rad/s
        f.command(np.zeros(3), np.array([0.0, 0.0, 1.0]), now=t)
        f.step(DT, t, pin.SE3(pin.exp3(np.array([0.0, 0.0, angle])), np.zeros(3)))
        if k >= 200:
            assert f.leashed
            lead = pin.log3(f.target.rotation)[2] - angle
            assert lead == pytest.approx(0.1, abs=1e-9)
    assert f.angular_velocity[2] == pytest.approx(0.5, abs=1e-6)


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
