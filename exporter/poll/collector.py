"""The poll loop: the broker is polled on the sidecar's own clock, each complete poll becomes an
immutable pre-rendered `Snapshot`, and a failed or slow poll leaves the last good snapshot in
place, marked stale. A scrape only ever reads `Collector.exposition`, so it never waits on JMX.

A poll renders only the formats scraped in the last `FORMAT_IDLE_SECONDS` (both at start).

The first complete poll of a big broker takes a minute or more (it lists every name). Before it,
`run` reads the broker-wide health MBeans alone (the source's `read_health`, a few round trips)
and serves them as a partial snapshot (`kafka_jmx_sidecar_snapshot_partial 1`); the sidecar is
ready, and its last-successful-poll time set, only with the first complete poll, whose output is
jmx_exporter's. Polls start on the interval's ticks (schedule.py, loop.py): one that overruns the
interval is counted (`kafka_jmx_sidecar_poll_overruns_total`; the first is logged, the later ones
at debug level: the first poll of a big broker, and those that list the names again, may overrun
now and then) and the next starts at the first tick after it. `stop()` gives up the poll in progress when the
sidecar is stopping, without waiting on the broker.

A poll that hangs (a broker that accepts connections but never answers) counts as failed from
the clock, not when its read times out (readTimeoutSeconds): while it runs the snapshot ages and
turns stale after staleAfterSeconds (a slow poll: stale, not failed), and once withdrawAfterSeconds
have passed since the last good poll (`hung`) the series are withdrawn and `jmx_scrape_error` is 1,
as for failed polls. Not during the first complete poll after the partial snapshot, which a big
broker takes minutes to finish.

With `freeze_gc` (the `serve` command sets it), Python's collector is kept off the long-lived
objects of a big broker (python_gc.py): a poll runs with young collections only, and a successful
one ends by freezing what it keeps.
"""
from __future__ import annotations

import logging
import re
import threading
import time
from typing import Callable, Iterable, NamedTuple

from kafka_jmx_sidecar.exporter.poll import loop, process_memory, python_gc, stages
from kafka_jmx_sidecar.exporter.base.families import RejectedPoll
from kafka_jmx_sidecar.exporter.rule_engine import RuleEngine
from kafka_jmx_sidecar.exporter.rule_engine.config import Config
from kafka_jmx_sidecar.exporter.output.self_metrics import SelfMetrics
from kafka_jmx_sidecar.exporter.config.sidecar import SidecarSettings
from kafka_jmx_sidecar.exporter.poll.poll_metrics import PollStats, record_success
from kafka_jmx_sidecar.exporter.poll.reload import ConfigWatcher, plan, tell, with_settings
from kafka_jmx_sidecar.exporter.poll.snapshot import FORMATS, TEXT, Snapshot, assemble
from kafka_jmx_sidecar.exporter.source.protocol import ReadResult, Source, SourceError

log = logging.getLogger("kafka_jmx_sidecar.collector")


# A format no scrape asked for in this long is no longer rendered by every poll; its next request
# renders it once from the snapshot's samples, and the polls after that render it again.
FORMAT_IDLE_SECONDS = 600.0
_RETRY_HINT = re.compile(r" \(next attempt in [^)]*\)")


class _Poll(NamedTuple):
    """One poll's way from the read to the families, before the render."""

    result: ReadResult  # after the recompute
    raw: ReadResult  # as the broker served it (the archive's)
    families: list
    phases: dict[str, float]


class Collector:
    def __init__(self, source_factory: Callable[..., Source], config: Config,
                 settings: SidecarSettings, config_path: str | None = None,
                 metrics: SelfMetrics | None = None, clock: Callable[[], float] = time.time,
                 freeze_gc: bool = False, overrides: dict | None = None, formats: Iterable[str] = FORMATS):
        """`source_factory(config, settings)` (or `(config)`) makes the source, again at each
        reload; `overrides`: the command-line settings, which win at every reload too; `formats`:
        those the polls render until a scrape asks for another (none: a poll renders nothing)."""
        self.metrics = metrics or SelfMetrics(settings.naming)
        self.settings = settings
        self.config = config
        self.clock = clock
        self._source_factory = with_settings(source_factory)
        self._config_path = config_path
        self._watcher = ConfigWatcher(config_path, self.metrics, settings.mode, overrides)
        self._engine = RuleEngine(config, naming=settings.naming)
        self._rejected_seen = 0  # the engine counts since it was built; the metric counts since start
        self.source = self._source_factory(config, settings)
        self._hand_engine()
        self._admin = stages.admin(settings)
        self._recompute = stages.recompute(config, settings, self._admin, self.metrics)
        self._reassignment = stages.reassignment(settings, self._admin, self.metrics)
        self._archive = stages.archive(settings, self.metrics, self.clock)
        self._snapshot = Snapshot.empty()
        self._nothing = Snapshot.empty()  # served while the broker's series are withdrawn
        self._withdrawal_told = False
        self._hang_told = False
        self._last_poll_failed = False
        self._partial = False  # the snapshot holds only the health MBeans read before the first poll
        self._poll_started: float | None = None  # clock() at the start of the poll in progress
        self._stopping = False
        self._lock = threading.Lock()  # guards the (snapshot, failed, partial) triple as a scrape reads it
        self.last_error: str | None = None
        self.last_poll = PollStats()
        self._requested = {fmt: time.monotonic() for fmt in formats}  # format -> last request
        self._freeze_gc = freeze_gc
        self._collected = False
        self._generation = 0  # bumped when a poll ends or a config loads: cached responses are stale
        self._responses: dict[tuple[str, bool], tuple] = {}

    def _hand_engine(self) -> None:
        """A source that reads tables one after another hands each to the engine as it comes in
        (`on_table`), so that the rules run on a first poll's members while the rest is read."""
        if hasattr(self.source, "on_table"):
            self.source.on_table = self._engine.prepare

    def _archive_poll(self, taken_at: float, raw) -> None:
        """Hand the poll to the archive writer; the poll never fails over it."""
        if self._archive is None:
            return
        try:
            from kafka_jmx_sidecar.exporter.archive.writer import poll_facts

            view = self._recompute.view if self._recompute is not None else None
            self._archive.submit(poll_facts(taken_at, raw, view))
        except Exception:
            log.exception("archive: the poll could not be handed to the writer")
            self.metrics.archive_polls.labels("failed").inc()

    @property
    def recompute_stage(self):
        return self._recompute

    @property
    def reassignment_stage(self):
        return self._reassignment

    @property
    def target(self) -> str:
        return self.source.target

    @property
    def ready(self) -> bool:
        """A complete poll has succeeded (the partial snapshot read first does not count)."""
        return self._snapshot.taken_at > 0 and not self._partial

    @property
    def partial(self) -> bool:
        """The snapshot served holds only the health MBeans read before the first complete poll."""
        return self._partial

    @property
    def snapshot(self) -> Snapshot:
        return self._snapshot

    def stale(self, now: float | None = None) -> bool:
        now = self.clock() if now is None else now
        snap = self._snapshot
        return (self._last_poll_failed or not snap.taken_at or now - snap.taken_at > self.settings.stale_after
                or self.hung(now))

    def hung(self, now: float | None = None) -> bool:
        """The poll in progress counts as failed: withdrawAfterSeconds have passed since the last
        good poll and it has not ended, after a complete poll (see the module docstring). Before
        that a slow poll is only stale, which an alert tells apart from a broker that fails."""
        if self._poll_started is None or not self.ready:
            return False
        now = self.clock() if now is None else now
        return now - self._snapshot.taken_at > self.settings.withdraw_after

    def withdrawn(self, now: float | None = None) -> bool:
        """Whether the broker's series have left /metrics: polls have failed (or the one in
        progress hangs) for longer than `withdraw_after` since the last good one. jmx_exporter
        serves no broker series while it cannot read the broker, and an alert on a last value (0
        under-replicated partitions) must not keep holding while the broker is down. The next
        good poll brings them back."""
        now = self.clock() if now is None else now
        taken_at = self._snapshot.taken_at
        return ((self._last_poll_failed or self.hung(now)) and taken_at > 0
                and now - taken_at > self.settings.withdraw_after)

    def watch(self, now: float | None = None) -> bool:
        """A poll that hangs, seen from the clock (the watchdog's and every scrape's look):
        `jmx_scrape_error` is 1 from then on, and the hang and the withdrawal are logged once.
        True while the series are withdrawn."""
        now = self.clock() if now is None else now
        with self._lock:  # not after the poll's end was published, whose success sets it to 0
            hung = self.hung(now)
            if hung:
                self.metrics.scrape_error.set(1)
        withdrawn = self.withdrawn(now)
        if hung and not self._hang_told:
            self._hang_told = True
            log.error("poll of %s has run for %.1f s without ending, and the last good poll ended %.1f s ago (over "
                      "sidecar.withdrawAfterSeconds, %g s): it counts as failed until it ends; the read itself "
                      "gives up after sidecar.readTimeoutSeconds (%g s)", self.target,
                      now - (self._poll_started or now), now - self._snapshot.taken_at, self.settings.withdraw_after,
                      self.settings.read_timeout_seconds)
        if withdrawn:
            self._tell_withdrawal()
        return withdrawn

    def _tell_withdrawal(self) -> None:
        if not self._withdrawal_told:
            self._withdrawal_told = True
            log.error("no good poll of %s for %g s (sidecar.withdrawAfterSeconds): its series are withdrawn "
                      "from /metrics until a poll succeeds", self.target, self.settings.withdraw_after)

    def exposition(self, fmt: str) -> tuple[Snapshot, bytes]:
        """The snapshot to serve (none while withdrawn) and this moment's self metrics in `fmt`."""
        self._requested[fmt] = time.monotonic()
        return self._served(fmt)

    def pushed(self) -> tuple[Snapshot, bytes]:
        """What a text scrape would get now, for the OTLP push (it reads families, asks no format)."""
        return self._served(TEXT)

    def _served(self, fmt: str) -> tuple[Snapshot, bytes]:
        with self._lock:
            snap, partial = self._snapshot, self._partial
        now = self.clock()
        withdrawn = self.watch(now)
        self.metrics.connected.set(1 if self.source.connected else 0)
        tail = self.metrics.render(fmt, snap.taken_at, self.stale(now), now, withdrawn, partial)
        return (self._nothing if withdrawn else snap), tail

    def response(self, fmt: str, gzip_wanted: bool) -> tuple[int, Iterable[bytes]]:
        """The /metrics body in `fmt` as (length, chunks): the snapshot, then the self metrics.

        Under many concurrent scrapers every bit of Python per request counts (the requests
        share the GIL with the poll), so a gzip response is built once per second of wall-clock
        time, snapshot and state, and served as one bytes object; the self metrics it carries
        are at most one second old (snapshot age included)."""
        now = self.clock()
        with self._lock:
            snap, generation = self._snapshot, self._generation
        connected = self.source.connected
        key = (fmt, gzip_wanted, generation, connected, self.stale(now), self.withdrawn(now), int(now))
        cached = self._responses.get((fmt, gzip_wanted))
        if cached is not None and cached[0] == key:
            self._requested[fmt] = time.monotonic()
            return cached[1], cached[2]
        snap, tail = self.exposition(fmt)
        length, chunks = assemble(snap, fmt, tail, gzip_wanted)
        if gzip_wanted:
            chunks = (b"".join(chunks),)
            self._responses[(fmt, gzip_wanted)] = (key, length, chunks)
        return length, chunks

    @property
    def watches_file(self) -> bool:
        return self._config_path is not None

    def reload(self) -> bool:
        """Check the configuration file and apply it if it changed (between polls, on the poll
        thread); True when a new one applies. What applies at once: exporter/poll/reload.py."""
        return self._watcher.check(self._apply)

    def _apply(self, loaded) -> None:
        applied = plan(self.settings, self.config, loaded)
        source = self._source_factory(applied.config, applied.settings)  # SourceError: refused, nothing changed
        self.source.close()
        self.source = source
        self.config, self.settings = applied.config, applied.settings
        self._engine = RuleEngine(applied.config, naming=self.settings.naming)
        self._hand_engine()
        self._rejected_seen = 0
        if self._recompute is not None:
            self._recompute.config = applied.config
        with self._lock:
            self._generation += 1  # the staleness limits may have changed
        tell(self._config_path, applied)

    def formats(self) -> list[str]:
        """The formats a poll renders: those scraped lately."""
        now = time.monotonic()
        return [fmt for fmt, at in self._requested.items() if now - at < FORMAT_IDLE_SECONDS]

    def poll_health_first(self) -> bool:
        """Before the first complete poll: the broker-wide health MBeans alone, read and served as
        a partial snapshot (see the module docstring). True when one was published. Its failure
        is left for the complete poll that follows to report."""
        read_health = getattr(self.source, "read_health", None)
        if read_health is None or self._snapshot.taken_at:
            return False
        started = time.monotonic()
        try:
            result = read_health()
            # an engine of its own: the first complete poll's starts from nothing, as without this
            families = RuleEngine(self.config, naming=self.settings.naming).series(
                result.mbeans, result.ranks, result.tables)
        except (SourceError, RejectedPoll) as e:
            log.debug("no health MBeans read before the first poll: %s", e)
            return False
        if not result.count or self._stopping:
            return False
        snap = Snapshot.render_families(families, self.clock(), time.monotonic() - started, self.formats(),
                                        self.settings.naming)
        if result.broker is not None:
            self.metrics.record_broker(result.broker)
        with self._lock:
            self._snapshot, self._partial = snap, True
            self._generation += 1
        log.info("serving %d series of %d broker-wide health MBeans of %s, read in %.1f s, until the first "
                 "complete poll ends (kafka_jmx_sidecar_snapshot_partial 1)", snap.series, result.count,
                 self.target, time.monotonic() - started)
        return True

    def stop(self) -> None:
        """The sidecar is stopping (any thread): the poll in progress is given up as soon as the
        source lets it (`abort`), and what it read is not published."""
        self._stopping = True
        abort = getattr(self.source, "abort", None)
        if abort is not None:
            abort()

    def poll_once(self) -> bool:
        """One complete poll; True when it produced a new snapshot."""
        if not self._freeze_gc:
            return self._poll()
        with python_gc.young_only():
            return self._poll()

    def _poll(self) -> bool:
        if self.watches_file:
            self.reload()
        started = time.monotonic()
        self._poll_started = self.clock()
        try:
            poll = self._derive()
        except (SourceError, RejectedPoll) as e:
            if self._stopping:
                log.info("poll of %s given up: the sidecar is stopping", self.target)
                self._poll_started = None
                return False
            self._failed(str(e), time.monotonic() - started)
            return False
        except Exception as e:  # a bug must not take the endpoint down; say so loudly
            log.exception("poll failed unexpectedly")
            self._failed(f"internal error: {e!r}", time.monotonic() - started)
            return False
        if poll is None:  # stopping
            self._poll_started = None
            return False
        derived = time.monotonic()
        elapsed = derived - started
        snap = Snapshot.render_families(poll.families, self.clock(), elapsed, self.formats(), self.settings.naming,
                                        previous=self._snapshot)
        poll.phases["render"] = time.monotonic() - derived
        self._archive_poll(snap.taken_at, poll.raw)
        if self._freeze_gc:
            python_gc.freeze(first=not self._collected)
            self._collected = True
        first = not self.ready
        with self._lock:  # the new snapshot and the end of any failure are seen together
            self._snapshot = snap
            self._last_poll_failed = False
            self._partial = False
            self._poll_started = None
            self.metrics.scrape_error.set(0)
            self._generation += 1
            recovered, self.last_error = self.last_error, None
        result = poll.result
        self.last_poll = PollStats(poll.phases, result.round_trips, result.queries, result.count, snap.series)
        self._rejected_seen = record_success(self.metrics, self, result, snap, elapsed, poll.phases,
                                             self._engine.stats, self._rejected_seen)
        if first:  # the moment /-/ready turns 200: worth one line, with what it took
            log.info("first complete poll of %s: %d MBeans, %d series in %.1f s; ready", self.target,
                     result.count, snap.series, elapsed)
        if recovered or self._hang_told:
            log.info("poll of %s succeeded again", self.target)
        self._withdrawal_told = self._hang_told = False
        with self._lock:
            self._generation += 1  # the self metrics changed too
        if self._freeze_gc:
            # the C heap's free pages back to the system, the previous snapshot's among them: a
            # poll's transient objects (the first poll's above all) leave freed memory that glibc
            # keeps and RSS still counts. Last: it takes a while on a big heap, and the self
            # metrics above belong with the snapshot just served
            process_memory.trim()
        return True

    def _derive(self) -> _Poll | None:
        """Read, recompute, apply the rules and add the reassignment series; None when the sidecar
        stopped during the read."""
        result = self.source.read()
        if self._stopping:
            return None
        read = time.monotonic()
        raw = result  # what the broker served, for the archive (the recompute makes a new result)
        if self._admin is not None:
            self._admin.next_poll()
        if self._reassignment is not None:
            self._reassignment.prepare(result.broker)
        if self._recompute is not None:
            result = self._recompute.apply(result)
        recomputed = time.monotonic()
        families = self._engine.series(result.mbeans, result.ranks, result.tables)
        ruled = time.monotonic()
        if self._reassignment is not None:
            families = self._with_reassignment(families, raw.broker)
        phases = dict(result.phases)
        phases.update(rules=ruled - recomputed, render=0.0)  # render: measured once rendered, listed here
        if self._recompute is not None:
            phases["recompute"] = recomputed - read
        if self._reassignment is not None:
            phases["reassignment"] = time.monotonic() - ruled
        return _Poll(result, raw, families, phases)

    def _with_reassignment(self, families: list, broker) -> list:
        """The reassignment series after the rules' families (1.x: in its order, by name)."""
        added = self._reassignment.families(broker, time.monotonic())
        if not added:
            return families
        if self.settings.naming == "1.x":
            from kafka_jmx_sidecar.exporter.rule_engine.series import exposition_order

            return exposition_order(list(families) + added, True)
        return list(families) + added

    def _failed(self, message: str, elapsed: float) -> None:
        m = self.metrics
        m.scrape_error.set(1)
        m.scrape_duration.set(elapsed)
        m.polls.labels("failure").inc()
        with self._lock:
            self._last_poll_failed = True
            self._poll_started = None
            self._generation += 1
        # Log a new problem once, not every poll; the client's retry countdown is not a new problem.
        if _RETRY_HINT.sub("", message) != _RETRY_HINT.sub("", self.last_error or ""):
            age = self.clock() - self._snapshot.taken_at if self._snapshot.taken_at else None
            served = ("nothing to serve yet" if age is None else
                      f"serving the health MBeans read before it ({age:.0f} s old)" if self._partial else
                      f"serving the last good snapshot ({age:.0f} s old)")
            log.error("poll of %s failed: %s; %s", self.target, message, served)
        self.last_error = message
        if self.withdrawn():
            self._tell_withdrawal()

    def run(self, stop: threading.Event) -> None:
        """Poll on the interval's ticks until `stop` is set (loop.py), the first time after the
        configuration's `startDelaySeconds` (jmx_exporter's: a broker started beside the sidecar
        is not polled while it starts; until then the sidecar is not ready and serves only its
        own metrics), and after the health MBeans read first (see the module docstring)."""
        loop.run(self, stop)

    def close(self) -> None:
        """The source's connections, then the stages' (the Admin API client, the archive writer)."""
        self.source.close()
        if self._admin is not None:
            self._admin.close()
        if self._archive is not None:
            self._archive.close()
