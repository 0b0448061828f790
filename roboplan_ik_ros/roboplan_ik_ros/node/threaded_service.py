"""A ROS service served by a thread of its own, not by the node's executor: a small helper node
(``<node name>_<service>``, same context and namespace, no rosout or parameter services), its
executor and a daemon thread spinning it. A long request then blocks neither the control loop nor
the node's other callbacks. Used by ``~/solve_ik`` (solve_ik_service.py) and ``~/solve_path`` (solve_path_service.py).
"""

from __future__ import annotations

import threading
from typing import Callable

import rclpy
from rclpy.qos import QoSProfile

from .loop_thread import _set_os_thread_name
from .session import refusal
from .spin import make_executor, spin_until_shutdown

SERVICE_QOS = QoSProfile(depth=100)  # the services default (reliable, volatile) with room for a burst


class ServiceThread:
    """Serves ``~/<service>`` (``srv_type``) of ``node`` with ``callback`` from the thread
    ``thread_name`` (also its OS name, top -H); ``before_spin`` runs first in that thread.
    ``guard(callback, what, on_refused)`` (a :meth:`Session.guard <.session.Session.guard>`) wraps
    the callback. ``on_start(thread_name)`` runs first in the thread (the node's
    :meth:`SharedThreadPriority.apply_here <.loop_thread.SharedThreadPriority.apply_here>`)."""

    def __init__(self, node, srv_type, service: str, callback, thread_name: str,
                 before_spin: Callable[[], None] | None = None, guard=None,
                 on_start: Callable[[str], None] | None = None) -> None:
        self.node = node
        self.label = service
        self.service_name = node.resolve_service_name(f"~/{service}")  # the node's namespace and remappings
        self.host = rclpy.create_node(f"{node.get_name()}_{service}", namespace=node.get_namespace(),
                                      context=node.context, use_global_arguments=False, enable_rosout=False,
                                      start_parameter_services=False)
        if guard is not None:  # the owner's rules for callbacks (node/session.py): refused once retired, errors caught
            callback = guard(callback, f"~/{service}", refusal(f"~/{service}"))
        self.service = self.host.create_service(srv_type, self.service_name, callback, qos_profile=SERVICE_QOS)
        self._executor = make_executor(context=node.context)
        self._executor.add_node(self.host)
        self._before_spin = before_spin
        self._on_start = on_start
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name=thread_name, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        _set_os_thread_name(self.thread.name)
        if self._on_start is not None:
            self._on_start(self.thread.name)
        if self._before_spin is not None:
            self._before_spin()
        spin_until_shutdown(self._executor, self._stop)

    def destroy(self, timeout: float) -> None:
        """End the thread (after the request in flight, waiting at most ``timeout`` [s]), the service and
        the helper node. When rclpy.shutdown() destroys the node, this thread holds the context's lock,
        which the service thread's spin loop waits for (``rclpy.ok``): it cannot end before the lock is
        released, so it is not waited for (it is a daemon thread: it ends with the process)."""
        self._stop.set()
        if self.thread is not threading.current_thread():
            locked = _context_lock_held_here(self.node.context)
            self.thread.join(0.0 if locked else timeout)
            if self.thread.is_alive() and not locked:
                self.node.get_logger().warning(
                    f"{self.label}: the service thread did not end within {timeout:g} s (ROS context "
                    f"{'up' if self.node.context.ok() else 'shut down'}); it ends with the process")
        try:
            self._executor.shutdown()
            self.host.destroy_service(self.service)
            self.host.destroy_node()
        except Exception as exc:  # e.g. the context is already shut down: nothing left to release
            self.node.get_logger().debug(f"{self.label}: releasing the helper node: {exc!r}")


def _context_lock_held_here(context) -> bool:
    """Whether the calling thread holds ``context``'s lock (rclpy.shutdown() destroys the nodes with it
    held; ``context.ok()`` is still True then). rclpy's Context._lock is an RLock; False if that ever
    changes (then the join just waits its timeout, as before)."""
    is_owned = getattr(getattr(context, "_lock", None), "_is_owned", None)
    try:
        return bool(is_owned()) if callable(is_owned) else False
    except Exception:  # noqa: BLE001 - a private API: never let it break a destroy
        return False
