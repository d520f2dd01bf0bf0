"""What one poll adds to the archive: the lines of a keyframe (every fact) or of a change poll
(the facts that differ from the previous poll written). Pure: plain values in, lines out.

A poll's facts (`PollFacts`) are what the poll already read, taken as they are: the broker's
per-partition counts (`HostedPartitions`, the recompute's input), the Admin API's view when the
sidecar reads one, each topic's min ISR with its origin, the non-table MBeans and the per-partition
tables the rules consume. Tables are compared column against column (a big broker has hundreds of
thousands of members and few change), everything else as dictionaries.

A poll is a keyframe, opening a segment of its own with a header, when the encoder has nothing to
compare it with (a new file, a failed write) and when `keyframe_interval` seconds have passed since
the last keyframe, so a damaged block costs at most the polls of one interval. Each block is
sealed with its checksum (format.py).
"""
from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

from kafka_jmx_sidecar.exporter.source.admin.view import AdminView, Input
from kafka_jmx_sidecar.exporter.archive.format import (SCHEMA, Cluster, Count, Counts, End, Header, Leaf, Leaves,
                                                       MinIsr, Poll, State, encode, member_object, sealed)
from kafka_jmx_sidecar.exporter.base.model import BeanTable, MBean
from kafka_jmx_sidecar.mbeans.broker_recompute import HostedPartitions

_CHUNK = 1024  # members compared at once (C speed) before looking member by member


@dataclass
class PollFacts:
    """What one poll knew. Columns must not change after the poll hands them over (copy them)."""

    t: float
    broker: str | None = None
    version: str | None = None
    hosted: HostedPartitions | None = None
    view: AdminView | None = None  # None: not read this poll
    min_isr: dict[str, tuple[int, str]] = field(default_factory=dict)
    mbeans: Sequence[MBean] = ()
    tables: Sequence[BeanTable] = ()


@dataclass
class _Columns:
    """Members (topics, topic, partition) and value columns, as last written."""

    topics: Sequence[str]
    topic: Sequence[int]
    partition: Sequence[int]
    values: tuple  # value columns
    present: Any = None  # bytearray, or None: every member present


def _number(v: Any) -> int | float | bool | None:
    c = v.__class__
    if c is int or c is float or c is bool:
        return v
    if isinstance(v, (int, float)):  # JavaNumber and other subclasses: the double
        return float(v)
    return None


def _same(a: Any, b: Any) -> bool:
    if a.__class__ is not b.__class__:
        return False
    return a == b or (a.__class__ is float and math.isnan(a) and math.isnan(b))


def _same_members(a: _Columns, b: _Columns) -> bool:
    return (a.topic is b.topic or (a.topic == b.topic and a.partition == b.partition)) and list(a.topics) == list(b.topics)


def _changed(old: Sequence, new: Sequence) -> Iterator[int]:
    """Indices where two equally long columns differ (chunks compared whole first)."""
    n = len(new)
    for start in range(0, n, _CHUNK):
        end = min(n, start + _CHUNK)
        if old[start:end] != new[start:end]:
            for i in range(start, end):
                if old[i] != new[i] or old[i].__class__ is not new[i].__class__:
                    yield i


def table_key(t: BeanTable) -> tuple[str, str]:
    """(the family's ObjectName without topic and partition, attribute)."""
    return t.domain + ":" + ",".join(f"{k}={v}" for k, v in t.keys), t.attribute


class PollEncoder:
    """The bytes of each poll, relative to what was last written. `encode` computes them and
    `commit` makes them the base of the next poll once they are on disk; `reset` (a new file, a
    failed write) makes the next poll a keyframe, as does `keyframe_interval` (seconds, None:
    only then)."""

    def __init__(self, attributes: frozenset[str] | None = frozenset({"Value", "Count"}),
                 keyframe_interval: float | None = None, sidecar: str = ""):
        self.attributes = attributes
        self.keyframe_interval = keyframe_interval
        self.sidecar = sidecar  # the version named in each header
        self.reset()
        self._states: dict[tuple[str, int], State] = {}  # the Admin API's last answer (kept across resets)
        self._cluster: Cluster | None = None

    def reset(self) -> None:
        self._written: dict[str, Any] | None = None

    def keyframe_due(self, t: float) -> bool:
        """Whether a poll at `t` is written whole: nothing to compare it with, or the interval
        since the last keyframe has passed (or the clock went back before it)."""
        w = self._written
        if w is None:
            return True
        since = t - w["keyframe_t"]
        return since < 0 or (self.keyframe_interval is not None and since >= self.keyframe_interval)

    # --- facts as comparable values -------------------------------------------------------------

    def _admin(self, view: AdminView | None) -> tuple[dict, Cluster | None]:
        if view is not None:
            self._states = {(p.topic, p.partition): State(p.topic, p.partition, p.leader, tuple(p.replicas),
                                                           tuple(p.isr), tuple(p.adding_replicas),
                                                           tuple(p.removing_replicas),
                                                           elr=p.eligible_leader_replicas) for p in view.partitions}
            u = view.unknown(Input.REASSIGNMENTS)
            self._cluster = Cluster(tuple(sorted(view.cluster.live_brokers)),
                                    "known" if u is None else u.reason.value)
        return self._states, self._cluster

    def _leaves(self, mbeans: Sequence[MBean]) -> dict[tuple[str, str], Any]:
        wanted = self.attributes
        out = {}
        for mb in mbeans:
            name = None
            for a in mb.attributes:
                if wanted is not None and a.name not in wanted:
                    continue
                v = _number(a.value)
                if v is None:
                    continue
                if name is None:
                    name = str(mb.name)
                out[(name, a.name)] = v
        return out

    def _tables(self, tables: Sequence[BeanTable]) -> dict[tuple[str, str], _Columns]:
        wanted = self.attributes
        return {table_key(t): _Columns(t.topics, t.topic, t.partition, (t.values,), t.present)
                for t in tables if wanted is None or t.attribute in wanted}

    @staticmethod
    def _counts(h: HostedPartitions | None) -> _Columns | None:
        if h is None:
            return None
        return _Columns(h.topics, h.topic, h.partition, (h.isr, h.replicas))

    # --- one poll -------------------------------------------------------------------------------

    def encode(self, facts: PollFacts, opened: float = 0.0) -> tuple[bytes, dict[str, Any]]:
        """(the poll's block, after a header of its own when it is a keyframe; the facts to
        `commit` once they are written). `opened`: the header's time (now)."""
        states, cluster = self._admin(facts.view)
        keyframe = self.keyframe_due(facts.t)
        before = self._written
        now = {"counts": self._counts(facts.hosted), "states": states, "cluster": cluster,
               "min_isr": dict(facts.min_isr), "leaves": self._leaves(facts.mbeans),
               "tables": self._tables(facts.tables), "keyframe_t": facts.t if keyframe else before["keyframe_t"]}
        records: list = []
        add = records.append
        if keyframe:
            if cluster is not None:
                add(Cluster(*cluster))
            self._all_counts(now["counts"], add)
            for s in states.values():
                add(s)
            for topic, (value, origin) in now["min_isr"].items():
                add(MinIsr(topic, value, origin))
            for (name, attribute), value in now["leaves"].items():
                add(Leaf(name, attribute, value))
            for key, cols in now["tables"].items():
                _keyframe_table(key, cols, add)
        else:
            if cluster != before["cluster"] and cluster is not None:
                add(cluster)
            self._count_changes(before["counts"], now["counts"], add)
            _dict_changes(before["states"], states, add, lambda k, s: s,
                          lambda k: State(k[0], k[1], None, (), (), gone=True), lambda a, b: a == b)
            _dict_changes(before["min_isr"], now["min_isr"], add, lambda k, v: MinIsr(k, v[0], v[1]),
                          lambda k: MinIsr(k, None), lambda a, b: a == b)
            _dict_changes(before["leaves"], now["leaves"], add, lambda k, v: Leaf(k[0], k[1], v),
                          lambda k: Leaf(k[0], k[1], None), _same)
            for key in before["tables"].keys() - now["tables"].keys():
                _table_changes(key, before["tables"][key], None, add)
            for key, cols in now["tables"].items():
                _table_changes(key, before["tables"].get(key), cols, add)
        lines = [encode(Poll(facts.t, keyframe, facts.version, facts.view is not None))]
        lines.extend(map(encode, records))
        body = "".join(lines).encode()
        block = body + sealed(End(len(records)), zlib.crc32(body))
        if keyframe:
            block = sealed(Header(SCHEMA, facts.broker, self.sidecar, opened)) + block
        return block, now

    def commit(self, written: dict[str, Any]) -> None:
        self._written = written

    # --- the per-partition counts ---------------------------------------------------------------

    @staticmethod
    def _all_counts(c: _Columns | None, add: Callable) -> None:
        """A keyframe's counts: one `Counts` a topic, its partitions in the broker's order."""
        if c is None:
            return
        isr, replicas = c.values[0], c.values[1]
        by_topic: dict[int, tuple[list, list, list]] = {}
        for i, (t, p) in enumerate(zip(c.topic, c.partition)):
            columns = by_topic.get(t)
            if columns is None:
                columns = by_topic[t] = ([], [], [])
            columns[0].append(p)
            columns[1].append(isr[i])
            columns[2].append(replicas[i])
        for t, (partitions, isrs, counts) in by_topic.items():
            add(Counts(c.topics[t], tuple(partitions), tuple(isrs), tuple(counts)))

    def _count_changes(self, old: _Columns | None, new: _Columns | None, add: Callable) -> None:
        if old is None and new is None:
            return
        if old is not None and new is not None and _same_members(old, new):
            changed = set(_changed(old.values[0], new.values[0])) | set(_changed(old.values[1], new.values[1]))
            topics, isr, replicas = new.topics, new.values[0], new.values[1]
            for i in sorted(changed):
                add(Count(topics[new.topic[i]], new.partition[i], isr[i], replicas[i]))
            return
        _dict_changes(_count_dict(old), _count_dict(new), add, lambda k, v: Count(k[0], k[1], v[0], v[1]),
                      lambda k: Count(k[0], k[1], None, None), lambda a, b: a == b)


def _count_dict(c: _Columns | None) -> dict:
    if c is None:
        return {}
    topics = c.topics
    return {(topics[t], p): (i, r) for t, p, i, r in zip(c.topic, c.partition, c.values[0], c.values[1])}


def _dict_changes(old: dict, new: dict, add: Callable, made: Callable, gone: Callable, same: Callable) -> None:
    for k, v in new.items():
        was = old.get(k, _MISSING)
        if was is _MISSING or not same(was, v):
            add(made(k, v))
    for k in old.keys() - new.keys():
        add(gone(k))


_MISSING = object()


def _keyframe_table(key: tuple[str, str], c: _Columns, add: Callable) -> None:
    family, attribute = key
    values, present = c.values[0], c.present
    by_topic: dict[int, tuple[list, list]] = {}
    for i, (t, p) in enumerate(zip(c.topic, c.partition)):
        if present is not None and not present[i]:
            continue
        v = _number(values[i])
        if v is None:
            continue
        parts = by_topic.get(t)
        if parts is None:
            parts = by_topic[t] = ([], [])
        parts[0].append(p)
        parts[1].append(v)
    for t, (partitions, vals) in by_topic.items():
        add(Leaves(family, attribute, c.topics[t], tuple(partitions), tuple(vals)))


def _members(c: _Columns | None) -> dict:
    if c is None:
        return {}
    topics, values, present = c.topics, c.values[0], c.present
    return {(topics[t], p): values[i] for i, (t, p) in enumerate(zip(c.topic, c.partition))
            if present is None or present[i]}


def _table_changes(key: tuple[str, str], old: _Columns | None, new: _Columns | None, add: Callable) -> None:
    family, attribute = key
    if old is not None and new is not None and _same_members(old, new):
        ov, nv, op, np_ = old.values[0], new.values[0], old.present, new.present
        if op == np_ and ov == nv:
            return
        changed = set(_changed(ov, nv)) | set(_changed(op, np_))
        topics = new.topics
        for i in sorted(changed):
            if not op[i] and not np_[i]:  # absent before and now: its stale value moved, nothing else
                continue
            name = member_object(family, topics[new.topic[i]], new.partition[i])
            add(Leaf(name, attribute, _number(nv[i]) if np_[i] else None))
        return
    _dict_changes(_members(old), _members(new), add,
                  lambda k, v: Leaf(member_object(family, k[0], k[1]), attribute, _number(v)),
                  lambda k: Leaf(member_object(family, k[0], k[1]), attribute, None), _same)
