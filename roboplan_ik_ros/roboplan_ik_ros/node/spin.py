"""Executors, the spin loop and the signal handlers every process of the package uses (the
``ik_controller`` node, its service threads, the ``mock_robot``, the demo and the benchmarks).

:func:`spin_until_shutdown` is the last line of defence of a process: an exception that escapes a
callback ends ``spin_once`` and, unhandled, the process. Here it is logged with its traceback,
counted (:data:`ESCAPED`) and handed to ``on_error`` (the node's fault handler: a controlled stop
and the lifecycle error transition); spinning goes on. The node's own callbacks catch their errors
before that (``node/session.py``); what reaches this point comes from elsewhere (rclpy's own
services, a library callback).
"""

from __future__ import annotations

import signal
import threading
import time
import traceback
from collections.abc import Callable

import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.logging import get_logger

from .log_throttle import LogThrottle


class EscapedErrors:
    """How many exceptions escaped a callback into a spin loop of this process (thread-safe count)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.count = 0
        self.last = ""

    def add(self, text: str) -> None:
        with self._lock:
            self.count += 1
            self.last = text


#: every exception :func:`spin_until_shutdown` caught in this process (diagnostics reads it)
ESCAPED = EscapedErrors()


def make_executor(context=None):
    """rclpy.experimental.EventsExecutor where present (much cheaper per callback), else the
    SingleThreadedExecutor."""
    try:
        from rclpy.experimental import EventsExecutor

        return EventsExecutor(context=context)
    except ImportError:  # older rclpy
        return rclpy.executors.SingleThreadedExecutor(context=context)


def spin_until_shutdown(executor, stop: threading.Event | None = None,
                        on_error: Callable[[BaseException], None] | None = None,
                        logger_name: str = "ik_controller") -> None:
    """Run callbacks until rclpy shuts down (Ctrl-C) or ``stop`` is set.

    Loops on ``spin_once``: with this rclpy build, ``EventsExecutor.spin()`` never fires timers
    (checked here), while ``spin_once`` does, in any thread. An exception from a callback is logged
    with its traceback (throttled per message), counted in :data:`ESCAPED` and passed to ``on_error``;
    the loop goes on. Only a shut-down context, ``stop`` or a KeyboardInterrupt end it.
    """
    context = executor.context if hasattr(executor, "context") else None
    throttle = LogThrottle(period=5.0)
    while rclpy.ok(context=context) and not (stop is not None and stop.is_set()):
        try:
            executor.spin_once(timeout_sec=0.1)
        except (KeyboardInterrupt, ExternalShutdownException):
            break
        except Exception as exc:  # noqa: BLE001 - the process must outlive any callback
            # Seen from this rclpy's EventsExecutor while the context shuts down (SIGINT): "Unable to
            # convert call argument '0' to Python object": the end of spinning, not an error.
            if not rclpy.ok(context=context):
                break
            text = f"{type(exc).__name__}: {exc}"
            ESCAPED.add(text)
            if throttle.should_log(text, time.monotonic()):
                get_logger(logger_name).error(f"a callback raised (the node goes on): {text}\n"
                                              f"{traceback.format_exc()}")
            if on_error is not None:
                try:
                    on_error(exc)
                except Exception:  # noqa: BLE001 - the handler of last resort must not end spinning either
                    get_logger(logger_name).error(f"the error handler raised:\n{traceback.format_exc()}")


READY_POLL_S = 0.02  # [s] how often call_when_ready looks


def call_when_ready(node, ready: Callable[[], bool], action: Callable[[], None], timeout: float,
                    period: float = READY_POLL_S):
    """Call ``action()`` once, in the executor that spins ``node`` (from a timer of ``node``, every ``period`` [s]):
    at the first look where ``ready()`` is true, or once ``timeout`` [s] has passed without it. What the executor
    delivers meanwhile (a latched message a subscription of ``node`` was waiting for) is delivered before. Returns
    the timer (cancelled once ``action`` ran)."""
    deadline = time.monotonic() + timeout
    timer = None

    def look() -> None:
        if timer is None or timer.is_canceled():
            return
        if not ready() and time.monotonic() < deadline:
            return
        timer.cancel()
        action()

    timer = node.create_timer(period, look)
    return timer


def spin_node_until_shutdown(node, logger_name: str, *, more_nodes=(), release=None) -> None:
    """A plain node's main loop (the mocks): spin it (and ``more_nodes``) in one executor until shutdown, then
    release them (``release()``, default: destroy each node) and rclpy."""
    executor = make_executor()
    for n in (node, *more_nodes):
        executor.add_node(n)
    try:
        spin_until_shutdown(executor, logger_name=logger_name)
    finally:
        if release is not None:
            release()
        else:
            for n in (node, *more_nodes):
                n.destroy_node()
        executor.shutdown()
        rclpy.try_shutdown()


def stop_on_signals(stop: threading.Event, logger_name: str = "ik_controller") -> list[str]:
    """SIGINT and SIGTERM set ``stop`` (the node then brakes before rclpy shuts down: after that
    nothing can be published). A later signal is logged and changes nothing: it must not cut the
    controlled stop short (a launch system sends SIGINT, then SIGTERM after a timeout); the stop is
    bounded in time, and SIGKILL remains for a process that must go at once. Returns the list the
    names of the received signals go to."""
    received: list[str] = []

    def handler(signum, frame):
        name = signal.Signals(signum).name
        received.append(name)
        if stop.is_set():
            get_logger(logger_name).warning(f"{name}: already stopping (the controlled stop ends within its "
                                            "time bound; SIGKILL ends the process at once)")
            return
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, handler)
    return received
