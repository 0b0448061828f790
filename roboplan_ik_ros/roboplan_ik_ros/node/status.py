"""~/status and /diagnostics content: a snapshot of the control loop taken under the node's lock
(a few small copies), turned into messages outside it."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from roboplan_ik_interfaces.msg import BarrierStatus, ControllerStatus, TaskStatus

from ..core.control.control_loop import TRACKING, WAITING_FOR_GOAL, ControlLoop
from ..core.control.goal_feedback import GoalVerdict
from . import diagnostics as diag



@dataclass
class LoopSnapshot:
    mode: str
    holding: bool
    hold_reason: str
    qp_status: str
    tasks: list[tuple[str, float, float, float]]  # name, error norm, position [m], orientation [rad]
    barriers: list[tuple[str, list[str], np.ndarray, np.ndarray]]  # name, rows, h [m], binding in the QP
    counters: dict[str, int]
    acceleration: str = "off"  # the acceleration/jerk bounds of the command stream
    closest_obstacle: tuple[str, str, float] = ("", "", float("inf"))  # obstacle, robot link, distance [m]
    obstacles: int = 0  # in the collision world
    motion_limit: tuple[str, str] = ("", "")  # (MOTION_LIMIT_* code, reason)
    goals: dict[str, GoalVerdict] = field(default_factory=dict)  # frame task -> goal feedback

    @staticmethod
    def _motion_limit(loop: ControlLoop, now: float, barriers) -> tuple[str, str]:
        """The loop's own cause (pause, command timeout, what holds a target at the leash), else while a
        stream is followed the barrier rows binding the last step (name, row, value [m])."""
        code, text = loop.motion_limit(now)
        # a binding barrier stops the stream; a singularity slows it; what holds the leash may be the barrier's
        # doing too (joints braking for it)
        if (code in ("", "singularity") or code == loop.leash_cause) and loop.streaming:
            binding = [f"{name} {rows[k]} (h = {value[k]:.4f} m)" for name, rows, value, active in barriers
                       for k in np.flatnonzero(active)]
            if binding:
                # the leash code without a bound says only that nothing else holds it: the rows do
                also = code and code != "leash"
                return "barrier", ("the step is bounded by barrier rows: " + ", ".join(binding)
                                   + (f"; also {code}: {text}" if also else ""))
            if code == "leash" and barriers:  # nothing binds: say how near the barriers are (their soft terms)
                name, row, h = min(((n, rows[k], float(v[k])) for n, rows, v, _ in barriers for k in range(len(v))),
                                   key=lambda x: x[2], default=("", "", np.inf))
                if np.isfinite(h):
                    text += f"; nearest barrier row: {name} {row} (h = {h:.4f} m)"
        return code, text

    @classmethod
    def take(cls, loop: ControlLoop, now: float | None = None) -> LoopSnapshot:
        """Call with the loop's lock held; ``now``: the loop's clock (time.perf_counter)."""
        now = time.perf_counter() if now is None else now
        out = loop.last_outcome
        barriers = loop.barrier_rows()  # values are known once a step ran from the current pose
        c, accel = loop.counts, loop.acceleration_limit
        motion_limit = cls._motion_limit(loop, now, barriers)
        loop.note_motion_limit(motion_limit[0])  # barrier and leash-cause episodes: counted when sampled
        return cls(
            mode=loop.mode, holding=loop.holding, hold_reason=loop.hold_reason,
            qp_status=out.result.status if out is not None else "",
            tasks=[(n, float(np.linalg.norm(t.error)), t.position_error, t.orientation_error)
                   for n, t in loop.tasks.items()],
            barriers=barriers,
            counters={"guard_cuts": loop.guard_cuts, "joint_states_rejected": loop.joint_states_rejected,
                      "goals_rejected": c.goals_rejected, "holds": c.holds, "reseeds": c.reseeds,
                      "qp_failures": c.qp_failures, "barrier_refusals": c.barrier_refusals,
                      "tick_errors": c.tick_errors, "undelivered": c.undelivered,
                      "collision_objects_refused": c.collision_objects_refused,
                      "stream_timeouts": c.stream_timeouts,
                      **{f"motion_limit.{k}": v for k, v in sorted(c.motion_limits.items())},
                      # steps whose state could no longer brake in time (braked as hard as allowed; stays 0)
                      "acceleration_nonviable": accel.nonviable if accel is not None else 0},
            acceleration=("off" if accel is None else
                          f"a_max {np.round(accel.a_max, 3).tolist()}, j_max {np.round(accel.j_max, 1).tolist()}"),
            closest_obstacle=loop.closest_obstacle(), obstacles=len(loop.scene.obstacles),
            motion_limit=motion_limit, goals={v.task: v for v in loop.goal_feedback(now, barriers)},
        )

    def status_message(self, tick_us: float, solve_us: float) -> ControllerStatus:
        msg = ControllerStatus(mode=self.mode, holding=self.holding, hold_reason=self.hold_reason,
                               tick_time_us=float(tick_us), solve_time_us=float(solve_us), qp_status=self.qp_status)
        for key in ("guard_cuts", "joint_states_rejected", "goals_rejected", "holds", "reseeds",
                    "collision_objects_refused", "stream_timeouts"):
            setattr(msg, key, self.counters[key])
        msg.closest_obstacle, msg.closest_obstacle_link, msg.closest_obstacle_distance = self.closest_obstacle
        msg.obstacles = self.obstacles
        msg.motion_limit, msg.motion_limit_reason = self.motion_limit
        msg.tasks = [TaskStatus(name=n, error_norm=e, position_error=p, orientation_error=o)
                     for n, e, p, o in self.tasks]
        if hasattr(TaskStatus, "goal"):  # fields from this version on (an older build lacks them)
            for task in msg.tasks:
                v = self.goals.get(task.name)
                if v is not None:
                    task.goal, task.goal_limited_by, task.goal_limit_reason = v.verdict, v.limited_by, v.reason
                    task.goal_limited_at, task.goal_distance, task.goal_angle = list(v.limited_at), v.distance, v.angle
        for name, rows, value, binding in self.barriers:
            for k in np.flatnonzero(np.isfinite(value)):
                msg.barriers.append(BarrierStatus(name=name, detail=rows[k], value=float(value[k]),
                                                  active=bool(binding[k])))
        return msg


def diagnostics_report(snap: LoopSnapshot, summary: dict[str, float], node_cfg, service, last_rejection: str,
                       loop_scheduling: str = "", paths=None, other_threads_scheduling: str = ""):
    """(level, message, [(key, value)]) of the control loop for /diagnostics."""
    normal = snap.mode in (TRACKING, WAITING_FOR_GOAL)
    if normal and summary["late_pct"] <= 1.0:
        level, message = diag.OK, snap.mode
    elif normal:
        level, message = diag.WARN, f"{snap.mode}; {summary['late_pct']:.1f} % of ticks late"
    else:
        level, message = diag.WARN, f"{snap.mode}: {snap.hold_reason}" if snap.hold_reason else snap.mode
    values = [
        ("mode", snap.mode),
        ("control_rate_hz (set)", f"{node_cfg.control_rate_hz:g}"),
        ("rate_hz (achieved)", f"{summary['rate_hz']:.1f}"),
        ("tick_p50_us", f"{summary['tick_p50_us']:.0f}"),
        ("tick_p99_us", f"{summary['tick_p99_us']:.0f}"),
        ("tick_max_us", f"{summary['tick_max_us']:.0f}"),
        ("late_ticks_pct", f"{summary['late_pct']:.2f}"),
        ("ticks", str(summary["ticks"])),  # since activation
        ("late_ticks", str(summary["late_ticks"])),
        ("loop_scheduling", loop_scheduling),
        ("other_threads_scheduling", other_threads_scheduling),
        ("state_feedback", node_cfg.state_feedback),
        ("stale_behavior", node_cfg.stale_behavior),
        ("acceleration_bounds", snap.acceleration),
        ("obstacles", str(snap.obstacles)),
        ("closest_obstacle", _closest_text(snap.closest_obstacle)),
        ("qp_status", snap.qp_status),
        ("motion_limit", f"{snap.motion_limit[0]}: {snap.motion_limit[1]}" if snap.motion_limit[0] else "none"),
        *((f"goal {name}", v.text()) for name, v in snap.goals.items()),
        *((k, str(v)) for k, v in snap.counters.items()),
        ("solve_ik_calls", str(service.calls)),
        ("solve_ik_failures", str(service.failures)),
        *((("solve_path_calls", str(paths.calls)), ("solve_path_busy", str(paths.busy).lower()))
          if paths is not None else ()),
        ("last_rejection", last_rejection),
    ]
    return level, message, values


def _closest_text(closest: tuple[str, str, float]) -> str:
    obstacle, link, distance = closest
    return "none" if not obstacle else f"{obstacle} <-> {link}: {distance * 1e3:.1f} mm"


def perception_status(msg: ControllerStatus, report) -> None:
    """The perceived cloud in ~/status (fields of ControllerStatus from this version on; an older build of
    roboplan_ik_interfaces lacks them and gets nothing)."""
    if not hasattr(msg, "perceived_points"):
        return
    msg.perception_state = report.state
    msg.perceived_points = report.points
    msg.perceived_age = float(report.age)
    msg.closest_perceived_link = report.closest_link
    msg.closest_perceived_distance = float(report.closest_distance)
    msg.pointclouds_refused = report.refused


def perception_diagnostics(report) -> list[tuple[str, str]]:
    """The perceived cloud in /diagnostics."""
    closest = ("none" if not report.closest_link else
               f"{report.closest_link}: {report.closest_distance * 1e3:.1f} mm")
    return [("perception", report.state), ("perceived_points", str(report.points)),
            ("perceived_age", f"{report.age:.3f}" if np.isfinite(report.age) else "inf"),
            ("closest_perceived", closest), ("pointclouds_received", str(report.received)),
            ("pointclouds_refused", str(report.refused)), ("pointclouds_dropped", str(report.dropped)),
            ("pointclouds_lost", str(report.lost)), ("pointcloud_ingest_ms", f"{report.ingest_ms:.2f}"),
            ("pointcloud_ingest_child_ms", f"{report.ingest_child_ms:.2f}"),
            ("pointcloud_ingest_node_cpu_ms", f"{report.ingest_node_cpu_ms:.2f}"),
            ("pointcloud_ingest_process", report.ingest_process or "none"),
            ("pointcloud_ingest_restarts", str(report.ingest_restarts)),
            ("last_pointcloud_refusal", report.last_refusal or "none")]
