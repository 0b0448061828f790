"""The bench's side of its child processes: waiting for a condition while watching that they still run,
configuring and activating the node over its lifecycle services (as a lifecycle manager does), the
controlled stop."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path


def stop_processes(*procs, timeout: float = 20.0) -> None:
    """SIGINT each running process in turn (a controlled stop), SIGKILL any that outlives ``timeout`` [s]."""
    for proc in procs:
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _wait(cond, timeout: float, what: str, procs=()) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        for proc, log in procs:
            if proc.poll() is not None:
                raise RuntimeError(f"{what}: the process exited: {Path(log).read_text()[-2000:]}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: timed out after {timeout:g} s")
        time.sleep(0.02)


def manage_startup(aux, name: str, spawned_at: float, procs) -> dict:
    """Configure and activate ``/<name>`` over its lifecycle services, as a lifecycle manager does.

    "configure -> active" = sending the configure request -> activate's response: the node's
    configure and activate, two service round trips, and any wait inside them (for
    /robot_description if the node had not received it yet, for a fresh /joint_states)."""
    from lifecycle_msgs.msg import Transition
    from lifecycle_msgs.srv import ChangeState

    client = aux.create_client(ChangeState, f"/{name}/change_state")
    try:
        _wait(client.service_is_ready, 60.0, f"/{name}/change_state", procs)
        t_found = time.time()

        def change(transition: int, what: str) -> bool:
            future = client.call_async(ChangeState.Request(transition=Transition(id=transition)))
            _wait(future.done, 60.0, what, procs)
            return bool(future.result().success)

        t0 = time.time()
        ok = change(Transition.TRANSITION_CONFIGURE, "configure")
        t1 = time.time()
        ok = ok and change(Transition.TRANSITION_ACTIVATE, "activate")
        t2 = time.time()
    finally:
        aux.destroy_client(client)
    return {"ok": ok, "found_s": t_found - spawned_at, "configure_call_s": t1 - t0, "activate_call_s": t2 - t1,
            "configure_to_active_s": t2 - t0, "process_to_active_s": t2 - spawned_at}
