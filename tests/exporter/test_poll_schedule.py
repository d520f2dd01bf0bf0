"""When the next poll starts: on the interval's ticks, after an overrun at the first tick after the
slow poll ends (no pile-up, no back-to-back catch-up). Pure arithmetic on monotonic times."""
from __future__ import annotations

import pytest

from kafka_jmx_sidecar.exporter.poll.schedule import PollSchedule


def test_polls_that_fit_start_on_the_ticks():
    s = PollSchedule(15)
    assert s.after(100.0, 103.0) == (115.0, False)
    assert s.after(115.0, 129.9) == (130.0, False)
    # a poll that started late (the machine was busy) still keeps the grid of the first one
    assert s.after(131.0, 135.0) == (145.0, False)


def test_an_overrun_is_reported_and_the_next_poll_waits_for_the_next_tick():
    s = PollSchedule(15)
    assert s.after(100.0, 103.0).at == 115.0
    # 40 s from 115: the ticks at 130 and 145 passed while it ran; none of them is polled late
    following = s.after(115.0, 155.0)
    assert following.overran and following.at == 160.0
    # the one after it fits again: back on the grid
    assert s.after(160.0, 170.0) == (175.0, False)


def test_a_poll_ending_exactly_on_a_tick_starts_the_next_at_once_and_is_not_an_overrun():
    s = PollSchedule(10)
    assert s.after(0.0, 10.0) == (10.0, False)


def test_the_first_poll_sets_the_grid_even_when_it_overruns():
    s = PollSchedule(10)
    assert s.after(5.0, 47.0) == (55.0, True)
    assert s.after(55.0, 56.0) == (65.0, False)


def test_two_polls_never_start_on_one_tick():
    s = PollSchedule(10)
    s.after(0.0, 1.0)
    # a clock that did not move (a coarse or frozen monotonic clock in a test): the next tick
    assert s.after(10.0, 10.0).at == 20.0


def test_an_interval_must_be_positive():
    with pytest.raises(ValueError):
        PollSchedule(0)
