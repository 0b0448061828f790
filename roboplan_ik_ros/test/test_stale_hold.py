"""StaleHold (core/control/stale_hold.py): the hold commands a node sends besides the loop's steps while the joint
states are stale: zero once on velocity outputs when the steps stop, never a position hold at a stale stop."""

import pytest

from roboplan_ik_ros.core.control.stale_hold import StaleHold


def holds_of_ticks(rule: StaleHold, ticks: list[tuple[bool, bool]]) -> list[bool]:
    """Run ticks given as (published a step, stale) as the node's tick does; whether each sent a hold."""
    sent = []
    for published, stale in ticks:
        sent.append(not published and rule.hold_this_tick(stale))
        rule.ticked(stale)
    return sent


def test_velocity_outputs_get_one_hold_when_the_steps_stop_on_going_stale():
    rule = StaleHold(velocity_outputs=True)
    ticks = [(True, False), (True, False), (False, True), (False, True), (False, True)]
    assert holds_of_ticks(rule, ticks) == [False, False, True, False, False]


def test_each_stale_spell_gets_its_own_hold():
    rule = StaleHold(velocity_outputs=True)
    ticks = [(False, True), (False, True), (True, False), (False, True), (False, True)]
    assert holds_of_ticks(rule, ticks) == [True, False, False, True, False]


def test_position_outputs_get_no_hold_while_stale():
    rule = StaleHold(velocity_outputs=False)
    assert holds_of_ticks(rule, [(True, False), (False, True), (False, True)]) == [False, False, False]


def test_a_tick_that_is_not_stale_and_publishes_nothing_sends_no_hold():
    rule = StaleHold(velocity_outputs=True)
    assert holds_of_ticks(rule, [(False, False), (False, False)]) == [False, False]


def test_a_stale_spell_whose_first_tick_published_a_step_gets_no_later_hold():
    """The hold answers the steps stopping as the spell starts; a spell that began with a step sent had a command."""
    rule = StaleHold(velocity_outputs=True)
    assert holds_of_ticks(rule, [(True, True), (False, True), (False, True)]) == [False, False, False]


def test_restart_forgets_a_stale_spell_of_the_previous_activation():
    rule = StaleHold(velocity_outputs=True)
    holds_of_ticks(rule, [(False, True)])  # deactivated while stale
    assert not rule.hold_this_tick(True)  # (the same spell: no second hold)
    rule.restart()
    assert rule.hold_this_tick(True)


@pytest.mark.parametrize("velocity_outputs, stale, hold", [
    (False, False, True), (True, False, True),  # the robot is there: hold it
    (True, True, True),  # lost: zero velocity (a velocity controller keeps the last one)
    (False, True, False),  # lost: a position hold could drive a restarted driver back
])
def test_a_controlled_stop_ends_with_a_hold_except_a_position_hold_while_stale(velocity_outputs, stale, hold):
    assert StaleHold(velocity_outputs).hold_at_stop(stale) is hold
