"""When a node sends a hold command of its own (the last command again; zero on velocity outputs) besides the
loop's steps, while the joint states are stale (the robot is lost: ``ControlLoop.mode == STALE``):

* a tick that publishes no step sends one hold on the first tick of a stale spell, if an output commands
  velocities: a velocity controller keeps applying the last velocity it got, so it must be told zero once;
  position outputs get nothing (the robot holds the last position it was sent);
* a controlled stop (deactivate, exit) ends with a hold, except while stale on position outputs only: a
  restarted driver would take a position hold sent meanwhile and drive back to it.
"""

from __future__ import annotations


class StaleHold:
    """The rules above for one activation's command outputs; ``velocity_outputs``: an output commands velocities."""

    def __init__(self, velocity_outputs: bool) -> None:
        self.velocity_outputs = velocity_outputs
        self._stale_last_tick = False

    def restart(self) -> None:
        """A new activation: no stale spell yet."""
        self._stale_last_tick = False

    def hold_this_tick(self, stale: bool) -> bool:
        """Whether a tick that publishes no step sends a hold (see the module docstring)."""
        return stale and not self._stale_last_tick and self.velocity_outputs

    def ticked(self, stale: bool) -> None:
        """A tick's commands went out (a step, a hold or none); ``stale``: the loop's mode was STALE in it."""
        self._stale_last_tick = stale

    def hold_at_stop(self, stale: bool) -> bool:
        """Whether a controlled stop ends with a hold (see the module docstring)."""
        return not stale or self.velocity_outputs
