"""What one lifecycle phase of the node made, and the only way its callbacks run.

A :class:`Session` owns the ROS entities (publishers, subscriptions, timers, services, clients) and
the other resources (threads, helper nodes, worker processes) that one ``configure`` (or one
``activate``) created, and wraps every callback it hands to rclpy (:meth:`Session.guard`):

- once the session is **retired**, a callback that was already queued (an executor takes a timer
  event before ``cleanup`` destroys the timer; a sample in flight on a subscription) returns at
  once: it never touches what is being torn down;
- an exception escaping a callback is the session's **fault**: it goes to one handler (the node's:
  logged with its traceback, counted, a controlled stop and the lifecycle error transition)
  instead of ending the executor's spin and with it the process;
- :meth:`retire` waits until no callback of the session is running in another thread, and only
  then :meth:`destroy` releases what it owns (in reverse order of creation).

The node builds a session inside :meth:`Session.building`, during which its ``create_*`` methods
route through :meth:`Session.own`: every entity made in that window, by the node or by a library
given the node (diagnostic_updater, interactive_markers, tf2), belongs to the session.
"""

from __future__ import annotations

import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable
from typing import Any

#: (session name, what raised, the exception, its formatted traceback)
FaultHandler = Callable[[str, str, BaseException, str], None]


class Session:
    """The resources and guarded callbacks of one lifecycle phase (see the module docstring).
    Thread-safe: callbacks run in any thread (executor, control loop, service threads)."""

    def __init__(self, name: str, on_fault: FaultHandler) -> None:
        self.name = name
        self._on_fault = on_fault
        # A plain Lock (C-level enter/exit) guards the running counts: a guarded call costs two uncontended
        # acquires and a dict update (the control tick is one, 500 times a second); the Condition on the same
        # lock is notified only while retire() waits (Condition.notify_all is Python-level, several us cold).
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._waiters = 0  # threads in retire()
        self._retired = False
        self._running: dict[int, int] = {}  # thread id -> callbacks of this session running in it
        self._owned: list[tuple[str, Callable[[], Any]]] = []  # (what, release) in creation order

    # ------------------------------------------------------------------ state
    @property
    def retired(self) -> bool:
        return self._retired

    def __repr__(self) -> str:
        return f"Session({self.name!r}, {'retired' if self._retired else 'live'}, {len(self._owned)} owned)"

    # ------------------------------------------------------------------ callbacks
    def guard(self, fn: Callable[..., Any], what: str, on_refused: Callable[..., Any] | None = None):
        """``fn`` wrapped: a no-op once retired (returns ``on_refused(*args)`` if given, else None), its
        exception the session's fault (then also ``on_refused(*args)``). ``on_refused`` builds what a
        service must still answer (a response saying why)."""

        lock, running, get_ident = self._lock, self._running, threading.get_ident

        def guarded(*args):
            me = get_ident()
            with lock:
                if self._retired:
                    return on_refused(*args) if on_refused is not None else None
                running[me] = running.get(me, 0) + 1
            try:
                return fn(*args)
            except Exception as exc:  # noqa: BLE001 - the one place a callback's error is caught
                self._on_fault(self.name, what, exc, traceback.format_exc())
                return on_refused(*args) if on_refused is not None else None
            finally:
                with lock:
                    n = running[me] - 1
                    if n > 0:
                        running[me] = n
                    else:
                        del running[me]
                    if self._waiters:
                        self._cond.notify_all()

        guarded.__name__ = f"guarded_{getattr(fn, '__name__', 'callback')}"
        guarded.__wrapped__ = fn
        return guarded

    def run(self, fn: Callable[[], Any], what: str) -> Any:
        """Call ``fn`` now under this session's rules (skipped once retired; its error a fault)."""
        return self.guard(fn, what)()

    # ------------------------------------------------------------------ ownership
    def own(self, what: str, release: Callable[[], Any]) -> None:
        """``release`` is called by :meth:`destroy` (reverse order of :meth:`own` calls)."""
        with self._cond:
            self._owned.append((what, release))

    def retire(self, timeout: float) -> list[str]:
        """No callback of this session starts from now on; wait (at most ``timeout`` [s]) for those
        running in other threads to end (one running in the calling thread is the caller's own).
        Returns what still runs after the timeout (empty: none)."""
        me = threading.get_ident()
        deadline = time.monotonic() + timeout
        with self._cond:
            self._retired = True
            self._waiters += 1
            try:
                while True:
                    others = [t for t, n in self._running.items() if t != me and n > 0]
                    left = deadline - time.monotonic()
                    if not others or left <= 0:
                        return [f"{n} callback(s) in thread {t}" for t, n in self._running.items()
                                if t != me and n > 0]
                    self._cond.wait(left)
            finally:
                self._waiters -= 1

    def destroy(self, log_error: Callable[[str], None]) -> None:
        """Release everything owned, newest first; a release that fails is logged and the rest go on.
        Call after :meth:`retire`."""
        with self._cond:
            owned, self._owned = self._owned, []
        for what, release in reversed(owned):
            try:
                release()
            except Exception as exc:  # noqa: BLE001 - the rest must still be released
                log_error(f"{self.name}: releasing {what} failed: {type(exc).__name__}: {exc}")


def refusal(what: str) -> Callable[[Any, Any], Any]:
    """An ``on_refused`` for a service: the response (second argument) with ``success`` false, its
    ``error_code`` NOT_READY where the type has one, and a message saying why."""

    def refuse(request, response):
        if hasattr(response, "success"):
            response.success = False
        if hasattr(response, "error_code") and hasattr(response, "NOT_READY"):
            response.error_code = response.NOT_READY
        if hasattr(response, "message"):
            response.message = (f"{what} did not run: the node is being reconfigured or shut down, or the request "
                                "hit an internal error (the node logs it)")
        return response

    return refuse


class Faults:
    """Every callback error of a node's life: how many, the last one, and per callback (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.count = 0
        self.last = ""
        self.by_callback: Counter[str] = Counter()

    def add(self, what: str, text: str) -> None:
        with self._lock:
            self.count += 1
            self.last = f"{what}: {text}"
            self.by_callback[what] += 1
