"""The archive writer `serve` drives (`sidecar.archive`): each complete poll's facts go, through a
small queue, to a thread of their own that encodes them (exporter/archive/encoder.py), appends
them to the poll hour's file and applies the retention. The poll never waits on the disk: when
the writer is still busy with earlier polls, a poll is dropped (counted), and the next one written
is still exact, being relative to what was last written.

Append-safety: a poll's lines go out in one write, flushed and fsynced. A file the writer opens
(a start, a new hour, after a failed write) gets a newline first if it ends in a torn line, then
a keyframe (with its segment's header), so a crash loses at most the poll being written, and the
reader skips and counts what it left. Keyframes also come every `keyframeIntervalSeconds`, so a
damaged byte costs at most one interval (the encoder decides, format.py seals each block). A
failed write is counted (`kafka_jmx_sidecar_archive_polls_total{outcome="failed"}`); the next
poll opens the file anew. Each episode of failures is logged when it starts (a full disk filled
again next week is said again), at most one every FAILURE_LOG_SECONDS (a disk failing every
other poll: the next line says how many episodes went unsaid), and its end is logged with how
many polls it lost.
"""
from __future__ import annotations

import logging
import os
import queue
import threading
import time
from typing import Any, Callable

from kafka_jmx_sidecar.exporter import __version__
from kafka_jmx_sidecar.exporter.source.admin.fallback import MinIsrResolver, client_outdated
from kafka_jmx_sidecar.exporter.source.admin.view import AdminView, Cluster as AdminCluster
from kafka_jmx_sidecar.exporter.archive import retention
from kafka_jmx_sidecar.exporter.archive.encoder import PollEncoder, PollFacts
from kafka_jmx_sidecar.exporter.archive.settings import ArchiveSettings
from kafka_jmx_sidecar.exporter.source.protocol import ReadResult
from kafka_jmx_sidecar.mbeans.broker_recompute import HostedPartitions

log = logging.getLogger("kafka_jmx_sidecar.archive")

WRITTEN, DROPPED, FAILED = "written", "dropped", "failed"
OUTCOMES = (WRITTEN, DROPPED, FAILED)
FAILURE_LOG_SECONDS = 60.0
# No Admin API answer: min ISR then resolves from the configuration alone, as the recompute's does.
_NO_VIEW = AdminView(AdminCluster(None, None, (), "none"), ())


def poll_facts(t: float, result: ReadResult, view: AdminView | None) -> PollFacts:
    """What a poll read, before the recompute changed anything, copied where a later poll changes
    it in place (table values and presence, the count columns). Runs in the poll: cheap."""
    broker = result.broker
    hosted = None
    if broker is not None and broker.hosted is not None:
        h = broker.hosted
        hosted = HostedPartitions(h.topics, h.topic, h.partition, h.isr[:], h.replicas[:])
    return PollFacts(t, broker.broker_id if broker else None, broker.version if broker else None, hosted, view,
                     {}, list(result.mbeans), [tb.frozen() for tb in result.tables])


class ArchiveWriter:
    def __init__(self, settings: ArchiveSettings, metrics: Any = None, *, admin: Any = None,
                 min_isr_topics: dict[str, int] | None = None, min_isr_default: int | None = None,
                 clock: Callable[[], float] = time.time, queue_size: int = 2):
        self.settings = settings
        self.metrics = metrics  # SelfMetrics with enable_archive() done, or None
        self.admin = admin  # an AdminSource of the writer's own, read when a poll brought no view
        self.min_isr_topics = dict(min_isr_topics or {})
        self.min_isr_default = min_isr_default
        self.clock = clock
        self.encoder = PollEncoder(settings.attributes, settings.keyframe_interval, __version__)
        self._file = None
        self._name: str | None = None
        self._queue: queue.Queue = queue.Queue(maxsize=queue_size)
        self._thread: threading.Thread | None = None
        self._told: set[str] = set()
        self.monotonic = time.monotonic
        self._failing: list | None = None  # the failure episode under way: [since, failed polls, logged]
        self._failure_logged_at: float | None = None
        self._unlogged_episodes = 0

    # --- from the poll --------------------------------------------------------------------------

    def submit(self, facts: PollFacts) -> bool:
        """Hand a poll's facts to the writer thread; False (and counted) when it is too busy."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="archive-writer", daemon=True)
            self._thread.start()
        try:
            self._queue.put_nowait(facts)
            return True
        except queue.Full:
            self._count(DROPPED)
            self._tell("dropped", "archive: the writer is behind; polls are dropped until it catches up "
                       "(kafka_jmx_sidecar_archive_polls_total{outcome=\"dropped\"})")
            return False

    def close(self, timeout: float = 30.0) -> None:
        """Write what is queued, then stop the thread and close the file."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(timeout)
            self._thread = None
        self._close_file()
        if self.admin is not None:
            try:
                self.admin.close()
            except Exception:
                log.debug("archive: closing the Admin API client failed", exc_info=True)

    def _run(self) -> None:
        while True:
            facts = self._queue.get()
            if facts is None:
                return
            self.write(facts)

    # --- in the writer thread -------------------------------------------------------------------

    def write(self, facts: PollFacts) -> bool:
        """Append one poll (the writer thread's work; tests call it directly). True when written."""
        try:
            self._complete(facts)
            name = retention.file_name(facts.t)
            if self._file is None or name != self._name:
                self._open(name)
            block, written = self.encoder.encode(facts, self.clock())
            f = self._file
            f.write(block)
            f.flush()
            os.fsync(f.fileno())
            self.encoder.commit(written)
            self._count(WRITTEN)
            self._recovered()
            ok = True
        except Exception as e:  # the disk, the directory, or a bug: never the poll's problem
            self._close_file()
            self.encoder.reset()
            self._count(FAILED)
            self._write_failed(e)
            ok = False
        self._retain(facts.t)
        return ok

    def _write_failed(self, e: Exception) -> None:
        """A failed write: the start of an episode is logged (see the module docstring)."""
        if self._failing is not None:
            self._failing[1] += 1
            return
        now = self.monotonic()
        logged = self._failure_logged_at is None or now - self._failure_logged_at >= FAILURE_LOG_SECONDS
        self._failing = [now, 1, logged]
        if not logged:
            self._unlogged_episodes += 1
            return
        self._failure_logged_at = now
        unsaid = (f"; {self._unlogged_episodes} shorter episode(s) of failures since the last said"
                  if self._unlogged_episodes else "")
        self._unlogged_episodes = 0
        log.warning("archive: writing %s failed: %s; the poll is not archived, the next one opens the file anew "
                    "(kafka_jmx_sidecar_archive_polls_total{outcome=\"failed\"})%s", self.settings.directory, e, unsaid)

    def _recovered(self) -> None:
        episode, self._failing = self._failing, None
        if episode is not None and episode[2]:
            log.info("archive: writing %s works again, after %d poll(s) not archived in %.0f s",
                     self.settings.directory, episode[1], self.monotonic() - episode[0])

    def _complete(self, facts: PollFacts) -> None:
        """The Admin API's view when the poll brought none, and each topic's min ISR."""
        if facts.view is None and self.admin is not None:
            try:
                facts.view = self.admin.read()
                if client_outdated(facts.view):  # as the recompute: a controller change needs a new client
                    self.admin.close()
            except Exception as e:
                self._tell(f"admin:{e}", "archive: the Admin API could not be read (%s); partition lists are "
                           "the last known until it can", e)
        if facts.min_isr:
            return
        resolver = MinIsrResolver(facts.view or _NO_VIEW, self.min_isr_topics, self.min_isr_default)
        h = facts.hosted
        topics = {h.topics[i] for i in set(h.topic)} if h is not None else set()  # topics with a hosted partition
        if facts.view is not None:
            topics.update(p.topic for p in facts.view.partitions)
        facts.min_isr = {t: resolver.resolve(t) for t in sorted(topics)}

    def _open(self, name: str) -> None:
        self._close_file()
        os.makedirs(self.settings.directory, exist_ok=True)
        path = os.path.join(self.settings.directory, name)
        f = open(path, "ab")
        try:
            if f.tell():
                with open(path, "rb") as r:
                    r.seek(-1, os.SEEK_END)
                    if r.read(1) != b"\n":
                        f.write(b"\n")  # a torn line of a crash stays one line, counted by readers
        except BaseException:
            f.close()
            raise
        self._file, self._name = f, name
        self.encoder.reset()

    def _close_file(self) -> None:
        f, self._file = self._file, None
        if f is not None:
            try:
                f.close()
            except OSError:
                pass

    def _retain(self, now: float) -> None:
        s = self.settings
        try:
            deleted, left = retention.enforce(s.directory, now, s.retention_hours * 3600, s.retention_bytes,
                                              self._name)
        except OSError as e:
            self._tell(f"retention:{e}", "archive: applying the retention in %s failed: %s", s.directory, e)
            return
        for d in deleted:
            log.info("archive: deleted %s (retention by %s)", d.name, d.reason)
        m = self.metrics
        if m is not None:
            for d in deleted:
                m.archive_deleted.labels(d.reason).inc()
            m.archive_bytes.set(left)

    def _count(self, outcome: str) -> None:
        if self.metrics is not None:
            self.metrics.archive_polls.labels(outcome).inc()

    def _tell(self, key: str, message: str, *args: Any) -> None:
        if key not in self._told:
            self._told.add(key)
            log.warning(message, *args)
