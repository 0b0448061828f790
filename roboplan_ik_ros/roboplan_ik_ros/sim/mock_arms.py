"""Several mock arms in one process: ``mock_robot --arms N`` (namespaces ``/arm1`` ... ``/armN``) or
``mock_robot --namespaces /left,/right``, as one driver process serving several robots of a cell.

Each arm is a :class:`.mock_robot.MockRobot` named ``mock_robot`` in its own namespace, with every topic under
it: ``/arm1/joint_states``, ``/arm1/robot_description(_semantic)``, its command topic
(``/arm1/forward_position_controller/commands`` for the default ``command_topic``) and its strict drive's
``/arm1/mock_robot/drive_status``, ``reset_drive`` and ``clear_drive_peaks``. Each arm keeps its own state, its
own command subscription and its own strict drive: a command to one arm never moves another. The parameters
(``--ros-args -p``) apply to every arm; a parameters file can set one arm's under its node name
(``/arm2/mock_robot``). Each arm's namespace is its own: a global ``__ns`` remap does not move the arms. No mock
counts commands lost in transport: the event that counts them can deadlock a process with the EventsExecutor
(:data:`.mock_robot.LOST_EVENT_DEADLOCK`), and N arms' command streams lose commands under load often enough to hit
it (four arms of bench_node --arms on the loaded 2-core
machine: in each of six runs; the stacks of one showed the two threads waiting on each other).

One executor spins all the arms' nodes (their command callbacks and drive-status timers, in the main thread, at
``rt_priority`` as the single mock's). One drive thread per distinct ``rate_hz`` (all arms share one with the
same parameters) steps its arms in turn on the single mock's absolute schedule (:class:`LoopThread`,
SCHED_FIFO at ``rt_priority``): one wake-up per period for all arms rather than one per arm, so N arms cost
the process N simulation steps but not N threads contending for the GIL. Within a period arm K publishes
after arm K-1's step (tens of microseconds later); an arm whose step raises logs it and the others go on.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from functools import partial

import rclpy
from rclpy.utilities import remove_ros_args

from ..core.errors import InvalidInputError
from ..node.loop_thread import LoopThread, set_fifo_priority, shorten_gil_switch_interval
from ..node.spin import spin_node_until_shutdown

NODE_NAME = "mock_robot"  # every arm's node name (in its own namespace)


def arm_namespaces(n: int) -> list[str]:
    """``--arms n``: ``/arm1`` ... ``/armn``."""
    if n < 1:
        raise InvalidInputError(f"--arms: expected at least 1 arm, got {n}")
    return [f"/arm{k}" for k in range(1, n + 1)]


def checked_namespaces(namespaces: Sequence[str]) -> list[str]:
    """The namespaces as absolute names (``left`` -> ``/left``); at least one, none the root, no two alike (two
    arms in one namespace would share their topics)."""
    out = ["/" + ns.strip("/") for ns in namespaces]
    if not out or "/" in out:
        raise InvalidInputError(f"namespaces: expected one or more non-root namespaces, got {list(namespaces)}")
    if len(set(out)) != len(out):
        raise InvalidInputError(f"namespaces: each arm needs its own, got {out}")
    return out


def namespaces_from_command_line(args: Sequence[str] | None = None) -> list[str] | None:
    """The arms asked for on ``mock_robot``'s command line (``--arms N`` or ``--namespaces a,b``; ROS arguments
    and anything else ignored, as the single mock ignores them), or None for the single mock."""
    argv = list(sys.argv if args is None else args)
    p = argparse.ArgumentParser(prog="mock_robot", add_help=False)
    p.add_argument("--arms", type=int)
    p.add_argument("--namespaces")
    known, _ = p.parse_known_args(remove_ros_args(argv)[1:])
    if known.arms is not None and known.namespaces is not None:
        raise InvalidInputError("--arms and --namespaces: give one of them")
    if known.namespaces is not None:
        return checked_namespaces([ns for ns in known.namespaces.split(",") if ns])
    if known.arms is not None:
        return arm_namespaces(known.arms)
    return None


def _step_arms(arms: tuple, start: float) -> None:
    """One drive period: each arm's step and /joint_states, in turn (each logs its own failure)."""
    for arm in arms:
        arm.drive_tick(start)


class MockArms:
    """One :class:`.mock_robot.MockRobot` per namespace (``make_arm(node_name, namespace=..., ...)``: the class, or
    e.g. a subclass that records; passed in, so that mock_robot's ``--arms`` can use this module without a circle) and the drive threads that step them; see the module docstring. ``node_kwargs`` go to every arm
    (``parameter_overrides``, ...). :meth:`start` starts the drive threads, :meth:`destroy` stops them and
    destroys the nodes."""

    def __init__(self, namespaces: Sequence[str], make_arm: Callable, node_name: str = NODE_NAME,
                 **node_kwargs) -> None:
        self.namespaces = checked_namespaces(namespaces)
        self.arms: list = []  # MockRobot nodes
        try:
            for ns in self.namespaces:
                # the namespace as a node-local remap: it wins over a global __ns remap (which would put every arm
                # in one namespace)
                self.arms.append(make_arm(node_name, namespace=ns, cli_args=["--ros-args", "-r", f"__ns:={ns}"],
                                          namespace_topics=True, external_drive=True,
                                          **node_kwargs))
        except BaseException:
            for arm in self.arms:
                arm.destroy_node()
            raise
        by_period: dict[float, list] = {}
        for arm in self.arms:
            if arm.uses_drive_thread:  # (drive_thread false: the arm steps from its own executor timer)
                by_period.setdefault(arm.drive_period, []).append(arm)
        self._loops = [LoopThread(period, partial(_step_arms, tuple(arms)), name="mock_drive",
                                  priority=max(a.rt_priority for a in arms), on_priority=arms[0].on_drive_priority)
                       for period, arms in by_period.items()]

    @property
    def rt_priority(self) -> int:
        """The highest ``rt_priority`` of the arms: the executor thread's (it receives every arm's commands)."""
        return max(a.rt_priority for a in self.arms)

    def start(self) -> "MockArms":
        if self._loops:
            shorten_gil_switch_interval()  # a drive thread woken for its step waits less for a command callback
        for loop in self._loops:
            loop.start()
        return self

    def destroy(self) -> None:
        for loop in self._loops:
            loop.stop()
        for arm in self.arms:
            arm.destroy_node()


def spin_arms(namespaces: Sequence[str], make_arm: Callable) -> None:
    """``mock_robot --arms N``'s main loop (rclpy initialized): the arms (``make_arm``: MockRobot) in one executor
    until shutdown."""
    try:
        arms = MockArms(namespaces, make_arm)
    except (InvalidInputError, OSError) as exc:
        rclpy.logging.get_logger(NODE_NAME).error(str(exc))
        rclpy.try_shutdown()
        raise SystemExit(1) from exc
    log = arms.arms[0].get_logger()
    log.info(f"{len(arms.arms)} arms in one process: {', '.join(arms.namespaces)}")
    if arms.rt_priority > 0:  # this (main) thread runs the executor: every arm's command callbacks
        why_not = set_fifo_priority(arms.rt_priority)
        if why_not:
            log.warning(f"rt_priority {arms.rt_priority}: {why_not}")
        else:
            log.info(f"SCHED_FIFO priority {arms.rt_priority}")
    arms.start()
    spin_node_until_shutdown(arms.arms[0], NODE_NAME, more_nodes=arms.arms[1:], release=arms.destroy)
