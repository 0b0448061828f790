"""The node's command outputs: what a ControlLoop step becomes on the wire, and the braking of a
controlled stop.

:class:`CommandOutputs` holds one :class:`~.outputs.CommandEncoder` and one lifecycle publisher per
``node.outputs`` entry (ros2_control's forward command controllers, joint_trajectory_controller,
a JointState stream). :meth:`CommandOutputs.publish` sends one step on every output; a publish
that fails tells the loop the robot did not get it (the next step starts from the last command
sent). :meth:`CommandOutputs.brake_to_rest` sends the loop's stopping steps on the control period
until the stream is at rest within the acceleration and jerk bounds.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from rclpy.duration import Duration

from ..core.control.control_loop import STALE, ControlLoop, TickResult
from ..core.errors import InvalidInputError
from .loop_thread import run_on_schedule
from .node_config import NodeConfig
from .command_encoders import CommandEncoder, output_joints

#: history of the command publishers: a reliable subscriber (a strict drive) that stalls for up to this
#: many periods still gets every command (a KEEP_LAST writer drops the oldest unacknowledged ones; with
#: 10, and then 100, stalls of the mock under load lost commands, which a drive sees as a jump)
COMMAND_QUEUE_DEPTH = 1000


class ContextShutDown(Exception):
    """A publish failed because the ROS context was shut down (Ctrl-C): the node is going away."""


class CommandNotSent(Exception):
    """Publishing a command failed (a DDS error): the loop was told (``command_not_sent``), the tick goes on."""


class CommandOutputs:
    """The encoders and publishers of ``cfg.outputs`` for ``loop`` on ``node`` (see the module docstring).
    Raises InvalidInputError naming ``node.outputs[k].joints`` for an output it cannot encode."""

    def __init__(self, node, cfg: NodeConfig, loop: ControlLoop) -> None:
        self.node = node
        self.encoders: list[CommandEncoder] = []
        joints = list(loop.group.joint_names)
        for k, out in enumerate(cfg.outputs):
            try:
                self.encoders.append(CommandEncoder(out, loop.scene, output_joints(out, joints), loop.dt))
            except InvalidInputError as exc:
                raise InvalidInputError(f"node.outputs[{k}].joints: {exc}") from exc
        self.publishers: list = []
        self._stamp_needed = any(o.type == "joint_state" for o in cfg.outputs)
        #: a velocity interface keeps the last velocity: a stop sends zero explicitly
        self.velocity = any(o.interface == "velocity" for o in cfg.outputs)

    def create_publishers(self) -> None:
        """One lifecycle publisher per output (enabled while the node is active)."""
        self.publishers = [self.node.create_lifecycle_publisher(enc.msg_type, enc.cfg.topic, COMMAND_QUEUE_DEPTH)
                           for enc in self.encoders]

    def set_dt(self, dt: float) -> None:
        for enc in self.encoders:
            enc.set_dt(dt)

    def _stamp(self):
        return self.node.get_clock().now().to_msg() if self._stamp_needed else None

    def publish(self, res: TickResult, loop: ControlLoop) -> None:
        """``res`` on every output (the loop's lock held). Raises ContextShutDown (the node is going away:
        nothing lost) or CommandNotSent (``loop`` was told when no output got it)."""
        stamp = self._stamp()
        sent = 0
        try:
            for enc, pub in zip(self.encoders, self.publishers):
                pub.publish(enc.encode(res.command, res.previous, stamp))
                sent += 1
        except Exception as exc:
            if not self.node.context.ok():
                raise ContextShutDown() from exc
            if sent == 0:  # the robot did not get it: the next step must not build on it
                loop.command_not_sent(res)
            raise CommandNotSent(f"publishing the command failed on output {sent} (the next command steps from "
                                 f"the last one sent): {type(exc).__name__}: {exc}") from exc

    def publish_hold(self, loop: ControlLoop, velocity_only: bool = False) -> None:
        """Hold at the last command (zero velocity on velocity outputs); nothing before the first command.
        ``velocity_only`` (the joint states are stale: core/control/stale_hold.py): only the outputs with a
        velocity interface get their zero; a position output gets nothing (a restarted driver would drive
        back to a position hold sent while the robot was lost)."""
        if not loop.command_started:
            return
        q, stamp = loop.last_command(), self._stamp()
        for enc, pub in zip(self.encoders, self.publishers):
            if velocity_only and enc.cfg.interface != "velocity":
                continue
            pub.publish(enc.encode_hold(q, stamp))

    def wait_acked(self, timeout: float) -> None:
        """Wait (at most ``timeout`` [s] per output) until every reliable subscriber acknowledged what was
        published: it reached the robot before anything is torn down."""
        for pub in self.publishers:
            try:
                pub.wait_for_all_acked(Duration(seconds=timeout))
            except Exception:  # noqa: BLE001 - e.g. a context already shut down: nothing left to wait for
                pass

    def brake_to_rest(self, loop: ControlLoop, lock: threading.Lock, first_start: float, why: str,
                      on_published: Callable[[TickResult], None]) -> None:
        """Publish :meth:`ControlLoop.stopping_tick` commands every control period from ``first_start``
        (``time.perf_counter()``) until the stream is at rest or :meth:`ControlLoop.braking_time_bound`
        passed (logged). Call once the loop's ticks have stopped. Nothing to do without an acceleration
        limit (the stream may stop at once), while stale (the robot is lost) or at rest."""
        log = self.node.get_logger()
        if loop.acceleration_limit is None or not self.publishers:
            return
        with lock:
            if not loop.active or loop.mode == STALE or not loop.command_started or loop.at_rest:
                return
        period, n = loop.dt, [0]

        def step(t: float) -> bool:
            with lock:
                try:
                    res = loop.stopping_tick()
                    if not res.publish:
                        return True
                    self.publish(res, loop)
                    on_published(res)
                except ContextShutDown:  # the process is going away without our signal handler: nothing to send
                    return True
                except Exception as exc:  # noqa: BLE001 - a stop must end whatever happens
                    log.error(f"{why}: braking failed: {type(exc).__name__}: {exc}")
                    return True
                n[0] += 1
                return loop.at_rest

        start = max(time.perf_counter(), first_start)
        bound = loop.braking_time_bound()
        if run_on_schedule(period, step, start, start + bound):
            log.info(f"{why}: braked to rest within the acceleration/jerk bounds in {n[0]} commands "
                     f"({n[0] * period:.3f} s)")
        else:
            log.error(f"{why}: the command stream was not at rest after {n[0]} braking commands ({bound:.3f} s): "
                      "stopping anyway")
