"""A lifecycle node that no callback can kill.

:class:`GuardedLifecycleNode` routes every ROS entity made inside :meth:`~GuardedLifecycleNode.building`
into a :class:`~.session.Session` (its callback guarded, its destruction owned) by overriding the
``create_*`` methods: whatever creates entities on the node during configure or activate (the node's
own code, or a library given the node: diagnostic_updater, interactive_markers, tf2) belongs to that
phase's session. An exception in any guarded callback, in any thread, reaches :meth:`on_fault`: it is
logged with its traceback, counted in :attr:`faults`, and the lifecycle error transition follows in
the executor's thread: from active a deactivate, from inactive a cleanup, whose callbacks see
:attr:`error_cause`, do a controlled stop and return ERROR, so rclpy runs ``on_error`` (release,
back to unconfigured). An exception in a transition callback itself: :meth:`transition_error`.

Why not rclpy's own handling: an exception in a callback ends ``spin_once`` (and a plain spin loop,
and the process); one in a transition callback is swallowed by rclpy without a word (ERROR, no log).
"""

from __future__ import annotations

import threading
import time
import traceback
from contextlib import contextmanager

from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn

from .log_throttle import LogThrottle
from .session import Faults, Session, refusal


class GuardedLifecycleNode(LifecycleNode):
    """See the module docstring. Subclasses build their phases inside :meth:`building` and check
    :attr:`error_cause` in ``on_deactivate``/``on_cleanup`` (non-empty: return ERROR after stopping)."""

    def __init__(self, node_name: str, **kwargs) -> None:
        self._building: Session | None = None  # set before rclpy's constructor calls create_*
        super().__init__(node_name, **kwargs)
        self.faults = Faults()  # every callback error of this node's life (diagnostics, tests)
        self.error_cause = ""  # set while a fault's error transition runs
        self._pending_fault: tuple[str, str] | None = None  # (what, error) waiting for its error transition
        self._fault_lock = threading.Lock()
        self._fault_log = LogThrottle()
        # the fault handler's way into the executor thread (lifecycle transitions run there): reset from any
        # thread, it fires once (a guard condition would do, but this rclpy's EventsExecutor refuses them)
        self._fault_timer = super().create_timer(0.0, self._handle_fault, autostart=False)
        #: callbacks that live as long as the node (retired by destroy_node)
        self.node_session = Session("node", self.on_fault)

    # ------------------------------------------------------------------ ownership
    @contextmanager
    def building(self, session: Session):
        """Every ROS entity this node creates inside the block belongs to ``session``."""
        previous, self._building = self._building, session
        try:
            yield session
        finally:
            self._building = previous

    def _owned(self, kind: str, name: str, callback, on_refused=None):
        """(the callback to register, the session it belongs to or None)."""
        session = getattr(self, "_building", None)
        if session is None or callback is None:
            return callback, session
        return session.guard(callback, f"{kind} {name}", on_refused), session

    def _own(self, session: Session | None, what: str, release) -> None:
        if session is not None:
            session.own(what, release)

    def create_subscription(self, msg_type, topic, callback, qos_profile, **kwargs):
        cb, session = self._owned("subscription", topic, callback)
        sub = super().create_subscription(msg_type, topic, cb, qos_profile, **kwargs)
        self._own(session, f"subscription {topic}", lambda: self.destroy_subscription(sub))
        return sub

    def create_service(self, srv_type, srv_name, callback, **kwargs):
        cb, session = self._owned("service", srv_name, callback, refusal(srv_name))
        srv = super().create_service(srv_type, srv_name, cb, **kwargs)
        self._own(session, f"service {srv_name}", lambda: self.destroy_service(srv))
        return srv

    def create_timer(self, timer_period_sec, callback, *args, **kwargs):
        name = getattr(callback, "__name__", type(callback).__name__).lstrip("_")
        cb, session = self._owned("timer", f"{name} ({timer_period_sec:g} s)", callback)
        if session is not None:  # no parameter: an executor passes TimerInfo to a callback that takes one
            guarded = cb
            cb = lambda: guarded()  # noqa: E731
        timer = super().create_timer(timer_period_sec, cb, *args, **kwargs)
        self._own(session, f"timer {name}", lambda: self.destroy_timer(timer))
        return timer

    def create_publisher(self, msg_type, topic, qos_profile, **kwargs):
        pub = super().create_publisher(msg_type, topic, qos_profile, **kwargs)
        self._own(getattr(self, "_building", None), f"publisher {topic}", lambda: self.destroy_publisher(pub))
        return pub

    def create_lifecycle_publisher(self, msg_type, topic, qos_profile, **kwargs):
        pub = super().create_lifecycle_publisher(msg_type, topic, qos_profile, **kwargs)
        self._own(self._building, f"publisher {topic}", lambda: self.destroy_lifecycle_publisher(pub))
        return pub

    def create_client(self, srv_type, srv_name, **kwargs):
        client = super().create_client(srv_type, srv_name, **kwargs)
        self._own(getattr(self, "_building", None), f"client {srv_name}", lambda: self.destroy_client(client))
        return client

    # ------------------------------------------------------------------ faults
    def on_fault(self, session: str, what: str, exc: BaseException, trace: str) -> None:
        """A callback raised (any thread): logged with its traceback (throttled per message), counted,
        and the error transition requested (:meth:`_handle_fault`, in the executor's thread)."""
        text = f"{type(exc).__name__}: {exc}"
        self.faults.add(what, text)
        if self._fault_log.should_log(f"{what} {text}", time.monotonic()):
            self.get_logger().error(f"{what} raised {text} (callback error {self.faults.count}); a controlled "
                                    f"stop and the lifecycle error transition follow\n{trace}")
        self._request_error_transition(what, text)

    def on_escaped_error(self, exc: BaseException) -> None:
        """An exception that escaped a callback not of this node's making (rclpy's own services) into the
        spin loop (node/spin.py logged it): counted and handled like a fault of the node's own callbacks."""
        what, text = "a callback outside the node's sessions", f"{type(exc).__name__}: {exc}"
        self.faults.add(what, text)
        self._request_error_transition(what, text)

    def _request_error_transition(self, what: str, text: str) -> None:
        with self._fault_lock:
            if self._pending_fault is None:
                self._pending_fault = (what, text)
        try:
            self._fault_timer.reset()
        except Exception:  # noqa: BLE001 - the node is being destroyed: nothing left to stop
            pass

    def _handle_fault(self) -> None:
        """(executor thread) The error transition for the pending fault: active -> deactivate, inactive ->
        cleanup, each returning ERROR (they see :attr:`error_cause`), so rclpy runs ``on_error``.
        Unconfigured: nothing is configured to stop; the fault stays logged and counted."""
        self._fault_timer.cancel()
        with self._fault_lock:
            fault, self._pending_fault = self._pending_fault, None
        if fault is None:
            return
        try:
            label = self._state_machine.current_state[1]
            what, text = fault
            self.error_cause = f"{what} raised {text}"
            if label == "active":
                self.trigger_deactivate()
            elif label == "inactive":
                self.trigger_cleanup()
        except Exception:  # noqa: BLE001 - the handler of faults must not become one
            self.get_logger().error(f"the error transition failed:\n{traceback.format_exc()}")
        finally:
            self.error_cause = ""

    def transition_error(self, what: str) -> TransitionCallbackReturn:
        """Call from the ``except`` of a transition callback: the unexpected exception logged with its
        traceback and counted; returns ERROR (rclpy then runs ``on_error``)."""
        trace = traceback.format_exc()
        last = trace.strip().splitlines()[-1]
        self.faults.add(f"transition {what}", last)
        self.last_error = f"{what} failed: unexpected error: {last}"
        self.get_logger().error(f"{what}: unexpected error (the error transition follows):\n{trace}")
        return TransitionCallbackReturn.ERROR
