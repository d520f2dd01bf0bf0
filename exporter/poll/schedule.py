"""When the next poll starts: on the sidecar's own clock, one tick every `pollIntervalSeconds` from
the first poll, never two polls at once.

A poll that outlasts the interval (an overrun: a big broker, a slow one) does not make the polls
pile up, nor does the loop catch up with the ticks it missed by polling back to back: the next
poll starts at the first tick after the slow one ends, so the broker rests until then and polls
keep their cadence. Pure arithmetic on monotonic times; the poll loop (collector.py) sleeps.
"""
from __future__ import annotations

import math
from typing import NamedTuple


class NextPoll(NamedTuple):
    at: float  # monotonic time the next poll starts
    overran: bool  # the poll took longer than the interval


class PollSchedule:
    def __init__(self, interval: float):
        if interval <= 0:
            raise ValueError(f"a poll interval must be > 0, not {interval}")
        self.interval = interval
        self._origin: float | None = None  # the tick grid: the first poll's start

    def after(self, started: float, ended: float) -> NextPoll:
        """The next poll, for a poll that ran from `started` to `ended`."""
        if self._origin is None:
            self._origin = started
        overran = ended - started > self.interval
        # the first tick after `ended` (a poll ending exactly on a tick starts the next at once)
        ticks = math.ceil((ended - self._origin) / self.interval)
        at = self._origin + ticks * self.interval
        if at <= started:  # the clock did not move forward: never start two polls on one tick
            at = started + self.interval
        return NextPoll(at, overran)
