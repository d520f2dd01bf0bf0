"""The poll loop `serve` runs (Collector.run): polls on the interval's ticks (schedule.py), the
configuration file checked between them, and a watchdog for a poll that hangs.

Between two polls the loop sleeps in steps of RELOAD_CHECK_SECONDS and checks the file after each
(a read and a hash: exporter/poll/reload.py), so a reload applies within a fraction of a second,
between polls, on the poll thread; a new `pollIntervalSeconds` starts a new grid of ticks from
the last poll's start (a shorter interval whose tick has passed polls at once). Without a file to
watch it sleeps until the next tick in one wait.

The watchdog thread tells, while the poll thread waits on a broker that does not answer, that
the poll counts as failed and, withdrawAfterSeconds after the last good poll, that the series are
withdrawn (Collector.watch): the poll thread can say so only when the read times out.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING

from kafka_jmx_sidecar.exporter.poll.schedule import NextPoll, PollSchedule

if TYPE_CHECKING:
    from kafka_jmx_sidecar.exporter.poll.collector import Collector

log = logging.getLogger("kafka_jmx_sidecar.collector")

RELOAD_CHECK_SECONDS = 0.25
WATCH_SECONDS = 0.1  # how often the watchdog looks (a few comparisons of times)


def run(c: "Collector", stop: threading.Event) -> None:
    """Poll until `stop` is set (Collector.run's docstring); closes the source and stages after."""
    done = threading.Event()
    watchdog = threading.Thread(target=_watch, args=(c, done), name="poll-watchdog", daemon=True)
    watchdog.start()
    try:
        _loop(c, stop)
    finally:
        done.set()
        c.close()


def _loop(c: "Collector", stop: threading.Event) -> None:
    delay = c.config.start_delay_seconds
    if delay:
        log.info("first poll in %d s (startDelaySeconds)", delay)
        stop.wait(delay)
    if not stop.is_set():
        c.poll_health_first()
    schedule = PollSchedule(c.settings.poll_interval_seconds)
    overruns = _Overruns(c)
    while not stop.is_set():
        started = time.monotonic()
        c.poll_once()
        if stop.is_set():
            break
        ended = time.monotonic()
        if schedule.interval != c.settings.poll_interval_seconds:  # reloaded as the poll began
            schedule = PollSchedule(c.settings.poll_interval_seconds)
        following = schedule.after(started, ended)
        overruns.note(following, ended - started)
        at = following.at
        while not stop.is_set():
            now = time.monotonic()
            if now >= at:
                break
            if not c.watches_file:
                stop.wait(at - now)
                continue
            stop.wait(min(RELOAD_CHECK_SECONDS, at - now))
            if not stop.is_set() and c.reload() and schedule.interval != c.settings.poll_interval_seconds:
                schedule = PollSchedule(c.settings.poll_interval_seconds)
                at = started + schedule.interval


def _watch(c: "Collector", done: threading.Event) -> None:
    while not done.wait(WATCH_SECONDS):
        try:
            c.watch()
        except Exception:  # diagnostics only: never let it end quietly without a word
            log.exception("the poll watchdog failed")
            return


class _Overruns:
    """Polls that took longer than the interval: counted; the first run of them logged (later
    ones at debug level: the counter tells how often)."""

    def __init__(self, c: "Collector"):
        self.c = c
        self.overrunning = False  # the last poll overran the interval
        self.runs = 0  # runs of overrunning polls so far (the first is logged as a warning)

    def note(self, following: NextPoll, took: float) -> None:
        c = self.c
        if following.overran:
            c.metrics.poll_overruns.inc()
            if not self.overrunning:
                self.runs += 1
                log.log(logging.WARNING if self.runs == 1 else logging.DEBUG,
                        "a poll of %s took %.1f s, longer than sidecar.pollIntervalSeconds (%g s): polls start "
                        "at the first interval tick after the previous one ends, and "
                        "kafka_jmx_sidecar_poll_overruns_total counts them (logged once); if it keeps growing, "
                        "raise pollIntervalSeconds or read fewer MBeans (includeObjectNames); a poll still "
                        "running sidecar.withdrawAfterSeconds after the last good one withdraws the series",
                        c.target, took, c.settings.poll_interval_seconds)
            self.overrunning = True
        elif self.overrunning:
            log.log(logging.INFO if self.runs == 1 else logging.DEBUG,
                    "polls of %s fit in sidecar.pollIntervalSeconds again (the last took %.1f s)", c.target, took)
            self.overrunning = False
