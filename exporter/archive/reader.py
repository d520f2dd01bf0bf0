"""Reading an archive back: records as typed values, polls in order, and the full state known at
any time (keyframe + changes). Pure functions over files and values; no Spark, no JMX.

    from kafka_jmx_sidecar.exporter.archive.reader import Rejects, read_archive, replay, states_at

    rejects = Rejects()
    polls = read_archive(["/var/lib/sidecar/archive"], rejects)   # iterator of PollRecords
    for t, state in states_at(polls, [t0, t0 + 15, t0 + 30]):     # times ascending
        state.counts     # {(topic, partition): (isr, replicas)}  the broker's own per-partition gauges
        state.states     # {(topic, partition): format.State}     the Admin API's lists (if configured)
        state.min_isr    # {topic: (value, origin)}
        state.leaves     # {(object, attribute): number}          what the rules read (table members too)
        state.hosted()            # mbeans.broker_recompute.HostedPartitions, for recompute_broker,
        state.assignments()       #   with these (Admin API lists) and state.min_isr_of(topic)
        state.partition_states()  # [mbeans.health.PartitionState] from the Admin lists
    rejects.counts       # {(path, reason): how many}, reasons below

`read_archive(paths)` takes archive directories (their hourly files, in time order) and files, and
yields each COMPLETE poll (`PollRecords`: the file, its segment's header, the poll, its records)
in file order. One directory is one broker's archive; give `states_at` one broker's polls.
`replay(polls)` yields the state after each poll (one object, updated in place: copy it to keep
it); `states_at(polls, times)` yields `(time, copy of the state as of the last poll at or before
time)`, None before the first poll or when that poll is older than `max_age` seconds.

Nothing is dropped silently. A line or poll that cannot be used is counted in `Rejects` under its
file and one of these reasons (and the first few are kept with line number and detail):

    unreadable file         a path that does not exist or cannot be read (counted once)
    torn last line          the file ends in an unterminated line (a crash while writing it)
    corrupt line            not JSON
    malformed record        JSON, but not a record of the segment's schema
    unknown record kind     a "k" this reader does not know
    unknown schema version  every line of a segment whose header names a schema other than SCHEMA
    no header               lines before the file's first header
    outside a poll          a record between a poll's end and the next poll
    incomplete poll         a poll without its end line, or whose end counts other records than
                            it holds (a line of it was rejected): the whole poll, counted once
    no keyframe             a change poll with no complete keyframe before it in its segment: counted
                            once per poll (it cannot be applied)
"""
from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, NamedTuple, Sequence

from kafka_jmx_sidecar.exporter.archive.format import (SCHEMA, SUFFIX, Cluster, Count, End, Header, Leaf, Leaves, Malformed,
                                     MinIsr, Poll, Record, State, decode, decode_header, member_object)
from kafka_jmx_sidecar.mbeans.broker_recompute import Assignment, HostedPartitions
from kafka_jmx_sidecar.mbeans.health import PartitionState

UNREADABLE, TORN, CORRUPT = "unreadable file", "torn last line", "corrupt line"
MALFORMED, UNKNOWN_KIND = "malformed record", "unknown record kind"
UNKNOWN_SCHEMA, NO_HEADER, OUTSIDE, INCOMPLETE, NO_KEYFRAME = (
    "unknown schema version", "no header", "outside a poll", "incomplete poll", "no keyframe")
REASONS = (UNREADABLE, TORN, CORRUPT, MALFORMED, UNKNOWN_KIND, UNKNOWN_SCHEMA, NO_HEADER, OUTSIDE, INCOMPLETE, NO_KEYFRAME)


class Rejected(NamedTuple):
    path: str
    line_no: int
    reason: str
    detail: str


@dataclass
class Rejects:
    """What could not be used, per (file, reason); `examples` keeps the first `keep` in full."""

    counts: Counter = field(default_factory=Counter)
    examples: list[Rejected] = field(default_factory=list)
    keep: int = 1000
    lines: Counter = field(default_factory=Counter)  # path -> lines read (the ratio's denominator)

    def add(self, path: str, line_no: int, reason: str, detail: str = "") -> None:
        self.counts[(path, reason)] += 1
        if len(self.examples) < self.keep:
            self.examples.append(Rejected(path, line_no, reason, detail))

    def by_reason(self) -> dict[str, int]:
        out: Counter = Counter()
        for (_, reason), n in self.counts.items():
            out[reason] += n
        return dict(out)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


class PollRecords(NamedTuple):
    path: str
    header: Header
    poll: Poll
    records: tuple[Record, ...]  # between the Poll and End lines, in order

    @property
    def t(self) -> float:
        return self.poll.t


# --- files --------------------------------------------------------------------------------------

def archive_files(paths: Iterable[str | os.PathLike]) -> list[str]:
    """Directories expanded into their archive files (name order is time order), files as given."""
    out: list[str] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            out.extend(str(f) for f in sorted(p.iterdir()) if f.name.endswith(SUFFIX) and f.is_file())
        else:
            out.append(str(p))
    return out


def read_records(path: str, rejects: Rejects) -> Iterator[tuple[int, Record]]:
    """(line number, record) of every usable line of one file, headers included, in order."""
    header_seen = False
    known_schema = False
    loads = json.loads
    try:
        f = open(path, "rb")
    except OSError as e:
        rejects.add(path, 0, UNREADABLE, e.strerror or str(e))
        return
    with f:
        line_no = 0
        for raw in f:
            line_no += 1
            if not raw.endswith(b"\n"):
                rejects.add(path, line_no, TORN, f"{len(raw)} bytes without a newline")
                break
            try:
                obj = loads(raw)
            except ValueError as e:
                if raw.strip():
                    rejects.add(path, line_no, CORRUPT, str(e))
                continue
            if obj.__class__ is dict and obj.get("k") == "archive":
                header_seen = True
                schema = obj.get("schema")
                known_schema = schema == SCHEMA and schema.__class__ is int
                if not known_schema:
                    rejects.add(path, line_no, UNKNOWN_SCHEMA, f"schema {json.dumps(schema)}; this reader knows {SCHEMA}")
                    continue
                try:
                    yield line_no, decode_header(obj)
                except Malformed as e:
                    known_schema = False  # a segment whose header cannot be read is not read either
                    rejects.add(path, line_no, e.reason, str(e))
                continue
            if not header_seen:
                rejects.add(path, line_no, NO_HEADER, "the first line of a file is its header")
                continue
            if not known_schema:
                rejects.add(path, line_no, UNKNOWN_SCHEMA, "in a segment of an unknown schema")
                continue
            try:
                yield line_no, decode(obj)
            except Malformed as e:
                rejects.add(path, line_no, e.reason, str(e))
        rejects.lines[path] += line_no


def read_polls(path: str, rejects: Rejects) -> Iterator[PollRecords]:
    """The complete, applicable polls of one file, in order (see the module docstring)."""
    header: Header | None = None
    poll: Poll | None = None
    poll_line = 0
    records: list[Record] = []
    synced = False  # a complete keyframe was read in this segment, and every poll since
    for line_no, r in read_records(path, rejects):
        kind = r.__class__
        if kind is Header or kind is Poll:
            if poll is not None:
                rejects.add(path, poll_line, INCOMPLETE, f"the poll at {poll.t} has no end line")
                synced = False
            if kind is Header:
                header, poll, synced = r, None, False
            else:
                poll, poll_line, records = r, line_no, []
        elif kind is End:
            if poll is None:
                rejects.add(path, line_no, OUTSIDE, "an end line without its poll")
                continue
            if r.records != len(records):
                rejects.add(path, poll_line, INCOMPLETE,
                            f"the poll at {poll.t} ends with {r.records} records, {len(records)} were read")
                synced = False
            elif poll.keyframe or synced:
                synced = True
                yield PollRecords(path, header, poll, tuple(records))
            else:
                rejects.add(path, poll_line, NO_KEYFRAME, f"the poll at {poll.t} changes a state not read")
            poll = None
        elif poll is None:
            rejects.add(path, line_no, OUTSIDE, f"a {kind.__name__} record between polls")
        else:
            records.append(r)
    if poll is not None:
        rejects.add(path, poll_line, INCOMPLETE, f"the poll at {poll.t} has no end line (end of file)")


def read_archive(paths: Iterable[str | os.PathLike], rejects: Rejects | None = None) -> Iterator[PollRecords]:
    """Every complete poll of the archive directories and files `paths`, file by file in order."""
    rejects = Rejects() if rejects is None else rejects
    for path in archive_files(paths):
        yield from read_polls(path, rejects)


# --- states -------------------------------------------------------------------------------------

@dataclass
class ArchiveState:
    """What was known at one poll (see the module docstring for the fields)."""

    t: float = 0.0
    broker: str | None = None
    version: str | None = None
    admin: bool = False  # the Admin API was read at this poll
    counts: dict[tuple[str, int], tuple[int, int]] = field(default_factory=dict)
    states: dict[tuple[str, int], State] = field(default_factory=dict)
    min_isr: dict[str, tuple[int, str | None]] = field(default_factory=dict)
    cluster: Cluster | None = None
    leaves: dict[tuple[str, str], int | float | bool] = field(default_factory=dict)

    def copy(self) -> "ArchiveState":
        return ArchiveState(self.t, self.broker, self.version, self.admin, dict(self.counts), dict(self.states),
                            dict(self.min_isr), self.cluster, dict(self.leaves))

    def apply(self, p: PollRecords) -> None:
        poll = p.poll
        if poll.keyframe:
            self.counts.clear()
            self.states.clear()
            self.min_isr.clear()
            self.leaves.clear()
            self.cluster = None
        self.t, self.version, self.admin, self.broker = poll.t, poll.version, poll.admin, p.header.broker
        counts, states, min_isr, leaves = self.counts, self.states, self.min_isr, self.leaves
        for r in p.records:
            kind = r.__class__
            if kind is Count:
                if r.isr is None:
                    counts.pop((r.topic, r.partition), None)
                else:
                    counts[(r.topic, r.partition)] = (r.isr, r.replicas)
            elif kind is Leaf:
                if r.value is None:
                    leaves.pop((r.object, r.attribute), None)
                else:
                    leaves[(r.object, r.attribute)] = r.value
            elif kind is Leaves:
                for partition, value in zip(r.partitions, r.values):
                    leaves[(member_object(r.object, r.topic, partition), r.attribute)] = value
            elif kind is State:
                if r.gone:
                    states.pop((r.topic, r.partition), None)
                else:
                    states[(r.topic, r.partition)] = r
            elif kind is MinIsr:
                if r.value is None:
                    min_isr.pop(r.topic, None)
                else:
                    min_isr[r.topic] = (r.value, r.origin)
            elif kind is Cluster:
                self.cluster = r

    def hosted(self) -> HostedPartitions:
        """The broker's per-partition counts as mbeans.broker_recompute reads them, sorted by
        (topic, partition) as the broker lists them."""
        keys = sorted(self.counts)
        topics = sorted({t for t, _ in keys})
        index = {t: i for i, t in enumerate(topics)}
        return HostedPartitions(topics, [index[t] for t, _ in keys], [p for _, p in keys],
                                [self.counts[k][0] for k in keys], [self.counts[k][1] for k in keys])

    def min_isr_of(self, topic: str, default: int = 1) -> int:
        """The topic's min ISR as the poll resolved it (`default` for a topic it did not)."""
        m = self.min_isr.get(topic)
        return m[0] if m is not None else default

    def assignments(self) -> dict[tuple[str, int], Assignment]:
        """The Admin API's replica lists as mbeans.broker_recompute reads them, reassignments only
        when they were known (as the live recompute reads them)."""
        known = self.cluster is None or self.cluster.reassignments == "known"
        return {k: Assignment(s.replicas, s.adding if known else (), s.removing if known else (),
                              None if s.elr is None else len(s.elr))
                for k, s in self.states.items()}

    def partition_states(self, default_min_isr: int = 1) -> list[PartitionState]:
        """The Admin API's partitions as the health core reads them, sorted by (topic, partition):
        min ISR from the archive (else `default_min_isr`), live brokers when the cluster is known."""
        live = frozenset(self.cluster.live) if self.cluster is not None else None
        out = []
        for key in sorted(self.states):
            s = self.states[key]
            m = self.min_isr.get(s.topic)
            out.append(PartitionState(s.topic, s.partition, s.leader, s.replicas, s.isr, s.adding, s.removing,
                                      m[0] if m is not None else default_min_isr, live, s.elr))
        return out


def replay(polls: Iterable[PollRecords]) -> Iterator[ArchiveState]:
    """The state after each poll: one object, updated in place by the next (copy it to keep it)."""
    state = ArchiveState()
    for p in polls:
        state.apply(p)
        yield state


def states_at(polls: Iterable[PollRecords], times: Sequence[float],
              max_age: float | None = None) -> Iterator[tuple[float, ArchiveState | None]]:
    """(time, the state as of the last poll at or before it) for each of `times` (ascending); None
    before the first poll, or when the last poll is more than `max_age` seconds before the time."""
    times = list(times)
    if any(b < a for a, b in zip(times, times[1:])):
        raise ValueError("states_at needs its times in ascending order")
    i = 0
    current: ArchiveState | None = None
    copied: ArchiveState | None = None  # the copy of `current` handed out last (shared between times)
    state = ArchiveState()
    for p in polls:
        while i < len(times) and times[i] < p.t:
            if current is not None and copied is None:
                copied = current.copy()
            yield times[i], _fresh(copied, times[i], max_age)
            i += 1
        state.apply(p)
        current, copied = state, None
    while i < len(times):
        if current is not None and copied is None:
            copied = current.copy()
        yield times[i], _fresh(copied, times[i], max_age)
        i += 1


def _fresh(state: ArchiveState | None, t: float, max_age: float | None) -> ArchiveState | None:
    if state is None or (max_age is not None and t - state.t > max_age):
        return None
    return state
