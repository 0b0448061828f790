"""What the demo records while it runs: every command, joint state, goal, ~/status, /diagnostics and drive
status message, with its time since the run's origin, and the time window of each segment."""

from __future__ import annotations

from dataclasses import dataclass, field


# ------------------------------------------------------------------------- recording
@dataclass
class Recording:
    js_t: list = field(default_factory=list)
    js_q: list = field(default_factory=list)  # arm joint values
    goal_t: list = field(default_factory=list)
    goal_p: list = field(default_factory=list)
    status: list = field(default_factory=list)  # (t, mode, hold_reason, min barrier value)
    diagnostics: dict = field(default_factory=dict)
    service: list = field(default_factory=list)  # (latency s, success, code, message)
    cmd_t: list = field(default_factory=list)  # command receipt times [s since the origin]
    cmd_q: list = field(default_factory=list)  # commands (arm joints)
    drive: dict = field(default_factory=dict)  # the mock's latest ~/drive_status
    drive_faults: list = field(default_factory=list)  # every faulted ~/drive_status
    segments: list = field(default_factory=list)  # (name, t_from, t_to) [s since the origin]
    obstacle_window: tuple = ()  # (t0, t1) of the reach over the block (demo time)
    block: object = None  # the block's core Obstacle
    obstacle_status: list = field(default_factory=list)  # (t, closest obstacle, link, distance) from ~/status
    motion_limits: list = field(default_factory=list)  # (t, motion_limit, motion_limit_reason) from ~/status
    teleop_window: tuple = ()  # (t0, t1) of the teleop segment (demo time)
    diagnostics_log: list = field(default_factory=list)  # (t, the node's /diagnostics values)
    perceived_status: list = field(default_factory=list)  # (t, state, points, link, distance) from ~/status
    perceived_window: tuple = ()  # (t0, t1) of the sweep toward the perceived box (demo time)
    perceived_box: object = None  # the camera's box (a core Obstacle)
