"""The accepted range of every numeric key that is checked in more than one place, declared once.

A key of the YAML config that is also a runtime parameter (``node.state_timeout`` and
``state_timeout``, ``tasks[].task_gain`` and ``tasks.<task>.task_gain``) is checked by the YAML loader
(:mod:`..config`, :mod:`.control.control_loop`, :mod:`.control.twist_follower`), by the core object
it configures (:class:`~.oink.tasks.task.Task`, :class:`~.oink.barriers.barrier.Barrier`) and by the
node's parameter validation (``node/parameters.py``): all read their :class:`~.errors.Range` here, so
the ranges and the error texts cannot drift apart. Keys are spelled as in the README's configuration
reference (``node.<key>``, ``perception.<key>``); the task, limit and barrier kinds add theirs
(``tasks[].<key>``, ``barriers[].<key>``) from their config dataclasses (:mod:`.oink.kind`).
"""

from __future__ import annotations

from .errors import Range

MAX_RATE_HZ = 2000.0

RANGES: dict[str, Range] = {
    # node: the control loop (core.control.control_loop.LoopConfig)
    "node.control_rate_hz": Range(0.0, MAX_RATE_HZ, lo_open=True, unit="Hz"),
    "node.max_state_divergence": Range(0.0, 10.0, lo_open=True, unit="rad or m"),
    "node.state_timeout": Range(0.0, 60.0, lo_open=True, unit="s"),
    "node.joint_limit_tolerance": Range(unit="rad or m"),
    "node.reseed_settle_time": Range(0.0, 10.0, unit="s"),
    "node.reseed_tolerance": Range(0.0, 1.0, lo_open=True, unit="rad or m"),
    "node.max_goal_distance": Range(lo_open=True, unit="m"),
    "node.goal_smoothing.time_constant": Range(0.0, 60.0, lo_open=True, unit="s"),
    "node.goal_smoothing.max_linear_speed": Range(0.0, 100.0, lo_open=True, unit="m/s"),
    "node.goal_smoothing.max_angular_speed": Range(0.0, 100.0, lo_open=True, unit="rad/s"),
    "node.goal_smoothing.max_linear_acceleration": Range(lo_open=True, unit="m/s^2"),
    "node.goal_smoothing.max_angular_acceleration": Range(lo_open=True, unit="rad/s^2"),
    "node.goal_smoothing.max_linear_jerk": Range(lo_open=True, unit="m/s^3"),
    "node.goal_smoothing.max_angular_jerk": Range(lo_open=True, unit="rad/s^3"),
    "node.goal_smoothing.leash_distance": Range(lo_open=True, unit="m", inf_ok=True),
    "node.goal_smoothing.leash_angle": Range(lo_open=True, unit="rad", inf_ok=True),
    # node.streaming (core.control.twist_follower.StreamingConfig)
    "node.streaming.max_linear_speed": Range(0.0, 10.0, lo_open=True, unit="m/s"),
    "node.streaming.max_angular_speed": Range(0.0, 100.0, lo_open=True, unit="rad/s"),
    "node.streaming.max_linear_acceleration": Range(lo_open=True, unit="m/s^2"),
    "node.streaming.max_angular_acceleration": Range(lo_open=True, unit="rad/s^2"),
    "node.streaming.speed_override": Range(0.0, 1.0),
    "node.streaming.command_timeout": Range(0.0, 10.0, lo_open=True, unit="s"),
    "node.streaming.stamp_tolerance": Range(lo_open=True, unit="s"),
    "node.streaming.leash_distance": Range(lo_open=True, unit="m"),
    "node.streaming.leash_angle": Range(lo_open=True, unit="rad"),
    "node.streaming.max_joint_speed": Range(lo_open=True, unit="rad/s or m/s"),
    "node.streaming.joint_leash": Range(lo_open=True, unit="rad or m"),
    "node.streaming.lower_singularity_threshold": Range(lo_open=True),  # and 1 <= lower < hard (checked there)
    "node.streaming.hard_stop_singularity_threshold": Range(lo_open=True),
    # perception (core.model.perceived_cloud)
    "perception.voxel_size": Range(0.0, 1.0, unit="m"),
    "perception.octree_resolution": Range(0.001, 1.0, unit="m"),
    "perception.self_filter_padding": Range(0.0, 1.0, unit="m"),
    "perception.max_age": Range(0.0, 3600.0, lo_open=True, unit="s"),
}


def check_key(value, key: str, path: str, size: int | None = None):
    """``value`` checked against ``RANGES[key]`` (an InvalidInputError naming ``path`` if refused)."""
    return RANGES[key].check(value, path, size)

