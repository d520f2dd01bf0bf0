"""Reading an archive back: records as typed values, polls in order, and the full state known at
any time (keyframe + changes). Pure functions over files and values; no Spark, no JMX. The
backfill reads each file with `read_polls`, as everything else does.

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
    rejects.counts       # {(path, reason): how many}, reasons in damage.py
    rejects.spans        # [damage.Damage]: each damaged span, its file, bytes and time range

`read_archive(paths)` takes archive directories (their hourly files, in time order) and files, and
yields each COMPLETE poll (`PollRecords`: the file, its segment's header, the poll, its records)
in file order. One directory is one broker's archive; give `states_at` one broker's polls.
`replay(polls)` yields the state after each poll (one object, updated in place: copy it to keep
it); `states_at(polls, times)` yields `(time, copy of the state as of the last poll at or before
time)`, None before the first poll or when that poll is older than `max_age` seconds.

Nothing is dropped silently: what cannot be used is counted in `Rejects` (damage.py). Schema 1
segments are read as they always were; in schema 2 a poll is used only when its block's checksum
holds (format.py), so a damaged byte is a rejected poll, never a wrong value, and the polls after
it wait for the next keyframe.
"""
from __future__ import annotations

import json
import os
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Iterable, Iterator, NamedTuple, Sequence

from kafka_jmx_sidecar.exporter.archive.damage import (CHECKSUM, CORRUPT, INCOMPLETE, MALFORMED, NO_HEADER,
                                                       NO_KEYFRAME, OUTSIDE, TORN, UNKNOWN_SCHEMA, UNREADABLE,
                                                       FileDamage, Rejects)
from kafka_jmx_sidecar.exporter.archive.format import (SCHEMAS, SUFFIX, Cluster, Count, Counts, End, Header, Leaf,
                                                       Leaves, Malformed, MinIsr, Poll, Record, State, decode,
                                                       decode_header, member_object, sound)
from kafka_jmx_sidecar.mbeans.broker_recompute import Assignment, HostedPartitions
from kafka_jmx_sidecar.mbeans.health import PartitionState

_DAMAGED_HEADER = 0  # a segment "schema" for lines after a header that failed its checksum


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


def _header(obj: dict, raw: bytes, line_no: int, at: int, damage: FileDamage) -> tuple[int | None, Header | None]:
    """(the segment's schema, its header) from a header line; (None, None): not readable, and why
    counted. A header that carries a checksum is checked first, so a damaged schema number is
    damage, not an unknown schema."""
    schema = obj.get("schema")
    has_check = "crc" in obj
    if has_check and not sound(raw):
        damage.reject(line_no, at, CHECKSUM, "the segment's header does not match its checksum")
        return _DAMAGED_HEADER, None
    if schema.__class__ is not int or schema not in SCHEMAS:
        damage.reject(line_no, at, UNKNOWN_SCHEMA, f"schema {json.dumps(schema)}; this reader knows {SCHEMAS}")
        return None, None
    if schema >= 2 and not has_check:
        damage.reject(line_no, at, CHECKSUM, f"a schema {schema} header without its checksum")
        return _DAMAGED_HEADER, None
    try:
        return schema, decode_header(obj)
    except Malformed as e:  # a segment whose header cannot be read is not read either
        damage.reject(line_no, at, e.reason, str(e))
        return _DAMAGED_HEADER, None


def read_records(path: str, damage: FileDamage, stream: BinaryIO | None = None) -> Iterator[tuple[int, int, Record]]:
    """(line number, byte offset, record) of every usable line of one file, headers included, in
    order. In a schema 2 segment a poll's End comes only when the block's checksum holds. `stream`:
    the file's bytes already opened (the backfill's, read through Spark), else `path` is opened."""
    segment: int | None = -1  # the segment's schema; -1: before the first header; None: unknown schema
    in_poll = spoiled = False  # schema 2: within a poll's block; a line of it was rejected
    crc = 0
    loads, crc32 = json.loads, zlib.crc32
    try:
        f = open(path, "rb") if stream is None else stream
    except OSError as e:
        damage.reject(0, 0, UNREADABLE, e.strerror or str(e))
        return
    with f:
        line_no = offset = 0
        for raw in f:
            line_no += 1
            at = offset
            offset += len(raw)
            if not raw.endswith(b"\n"):
                damage.reject(line_no, at, TORN, f"{len(raw)} bytes without a newline")
                break
            try:
                obj = loads(raw)
            except ValueError as e:
                if raw.strip() or segment not in (1, None):  # the writer writes no empty line (schema 1
                    # readers skipped them; a segment of an unknown schema is not judged)
                    damage.reject(line_no, at, CORRUPT, str(e) if raw.strip() else "an empty line")
                    spoiled = True
                crc = crc32(raw, crc)
                continue
            kind = obj.get("k") if obj.__class__ is dict else None
            if kind == "poll":
                damage.poll_lines.append(at)
            if kind == "archive":
                in_poll = False
                segment, header = _header(obj, raw, line_no, at, damage)
                if header is not None:
                    yield line_no, at, header
                continue
            if segment == -1 or segment == _DAMAGED_HEADER:
                damage.reject(line_no, at, NO_HEADER, "the first line of a segment is its header"
                              if segment == -1 else "after a header that failed its checksum")
                continue
            if segment is None:
                damage.reject(line_no, at, UNKNOWN_SCHEMA, "in a segment of an unknown schema")
                continue
            if segment >= 2:
                if kind == "poll":
                    in_poll, spoiled, crc = True, False, crc32(raw)
                elif kind == "end" and in_poll:
                    in_poll = False
                    if not sound(raw, crc):
                        if not spoiled:  # else its rejected line tells already
                            damage.reject(line_no, at, CHECKSUM, "the poll's lines do not match its checksum")
                        continue
                elif in_poll:
                    crc = crc32(raw, crc)
            elif kind == "end" and "crc" in obj:
                damage.reject(line_no, at, MALFORMED, "a checksum in a schema 1 segment: a later segment "
                              "whose header was lost")
                continue
            try:
                yield line_no, at, decode(obj)
            except Malformed as e:
                damage.reject(line_no, at, e.reason, str(e))
                spoiled = True
        damage.rejects.lines[path] += line_no
        damage.size, damage.line_count = offset, line_no


def read_polls(path: str, rejects: Rejects, stream: BinaryIO | None = None) -> Iterator[PollRecords]:
    """The complete, applicable polls of one file, in order (see the module docstring); `stream`:
    its bytes already opened (read_records)."""
    damage = FileDamage(path, rejects)
    header: Header | None = None
    poll: Poll | None = None
    poll_line = poll_at = 0
    block = (0, 0)  # (offset, line) where the poll's block starts: its header's, if it opens a segment
    header_at = (-1, -1)  # (line, offset) of the last header read
    records: list[Record] = []
    synced = False  # a complete keyframe was read in this segment, and every poll since (and nothing
    # else was lost since the last: a rejected line between polls may have been a poll's line)
    for line_no, at, r in read_records(path, damage, stream):
        kind = r.__class__
        if kind is Header or kind is Poll:
            if poll is not None:
                damage.reject(poll_line, poll_at, INCOMPLETE, f"the poll at {poll.t} has no usable end line")
                synced = False
            if kind is Header:
                header, poll, synced = r, None, False
                header_at = (line_no, at)
            else:
                poll, poll_line, poll_at, records = r, line_no, at, []
                block = (header_at[1], header_at[0]) if header_at[0] == line_no - 1 else (at, line_no)
        elif kind is End:
            if poll is None:
                damage.reject(line_no, at, OUTSIDE, "an end line without its poll")
                continue
            if r.records != len(records):
                damage.reject(poll_line, poll_at, INCOMPLETE,
                              f"the poll at {poll.t} ends with {r.records} records, {len(records)} were read")
                synced = False
            elif poll.keyframe or (synced and damage.open is None):  # a change poll: every byte since read
                synced = True
                damage.used(poll.t, *block)
                yield PollRecords(path, header, poll, tuple(records))
            else:
                damage.reject(poll_line, poll_at, NO_KEYFRAME, f"the poll at {poll.t} changes a state not read")
            poll = None
        elif poll is None:
            damage.reject(line_no, at, OUTSIDE, f"a {kind.__name__} record between polls")
        else:
            records.append(r)
    if poll is not None:  # the poll being written, unless the file was damaged before it
        damage.reject(poll_line, poll_at, INCOMPLETE, f"the poll at {poll.t} has no end line (end of file)",
                      damage=damage.open is not None)
    damage.finish()


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
    # the members' keys of each `Leaves` line already met: every keyframe repeats them
    _members: dict = field(default_factory=dict, repr=False, compare=False)

    def copy(self) -> "ArchiveState":
        return ArchiveState(self.t, self.broker, self.version, self.admin, dict(self.counts), dict(self.states),
                            dict(self.min_isr), self.cluster, dict(self.leaves))

    def apply(self, p: PollRecords) -> None:
        poll = p.poll
        if poll.keyframe:  # new dicts: what the state held before stays whole for whoever kept it
            self.counts, self.states, self.min_isr, self.leaves = {}, {}, {}, {}
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
                line = (r.object, r.attribute, r.topic, r.partitions)
                keys = self._members.get(line)
                if keys is None:
                    keys = self._members[line] = [(member_object(r.object, r.topic, partition), r.attribute)
                                                  for partition in r.partitions]
                leaves.update(zip(keys, r.values))
            elif kind is Counts:
                topic = r.topic
                for partition, isr, replicas in zip(r.partitions, r.isr, r.replicas):
                    counts[(topic, partition)] = (isr, replicas)
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
