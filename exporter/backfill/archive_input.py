"""The sidecar's archive (exporter/archive, `sidecar.archive`) as a backfill source: one archive file
replayed on its own (each hourly file starts with a keyframe), poll by poll, into the MBean values
the live sidecar's rules read at that poll, as runs of equal values.

Per poll, the values are the leaves the broker served (gauges, meter counts), with the health
families (the catalog's ReplicaManager and Partition health gauges) passed through the live
recompute itself (exporter/recompute_stage.Recompute, which calls mbeans/broker_recompute): the
same mode decisions per family (`sidecar.recompute.mode`), the same added and replaced MBeans,
the same filters. Only where the live poll asked the Admin API or the configuration does this one
ask the archive: the min ISR the poll resolved and the replica lists it read.

A run is (ObjectName, attribute, value, first poll, last poll) of one broker's archive: the value
held from the first poll's time until the poll after the last (job.py turns times into grid steps,
knowing every poll time of that archive, across files). Nothing here imports Spark: it runs on the
executors, one call per file, and is tested with plain files.
"""
from __future__ import annotations

import json
import os
from array import array
from dataclasses import dataclass
from typing import Iterator

from kafka_jmx_sidecar.exporter.archive.format import FORMAT, SUFFIX, Cluster, Count, Leaf, Leaves, MinIsr, State, member_object
from kafka_jmx_sidecar.exporter.archive.reader import ArchiveState, Rejects, read_polls
from kafka_jmx_sidecar.exporter.base.model import Attribute, BeanTable, MBean, ObjectName
from kafka_jmx_sidecar.exporter.recompute.settings import RecomputeSettings
from kafka_jmx_sidecar.exporter.recompute.stage import FAMILIES, Recompute
from kafka_jmx_sidecar.exporter.rule_engine.config import Config
from kafka_jmx_sidecar.exporter.source.protocol import BrokerReadings, ReadResult
from kafka_jmx_sidecar.mbeans import catalog
from kafka_jmx_sidecar.mbeans.broker_recompute import PARTITION_GAUGES, REPLICA_MANAGER_GAUGES, HostedPartitions

# One row per run ("v"), per poll ("p": its time and hosted partitions), per reject ("r") and per
# file ("f": lines read), in one schema so one pass over the files gives all four.
ROW_SCHEMA = ("kind string, source string, broker string, t0 double, t1 double, objectname string, "
              "attribute string, value double, partitions int, file string, line int, reason string, "
              "detail string, text string")

_HEALTH_INPUTS = (Count, State, MinIsr, Cluster)  # records that change what the recompute reads
_RM_KEYS = {(s.object_name, "Value") for s in REPLICA_MANAGER_GAUGES}
_PARTITION_KEYS = {s.key for s in PARTITION_GAUGES}  # (domain, type, name)
# How the writer spells a member of those families (format.member_object): told without parsing
_MEMBER_HEADS = tuple(member_object(s.object_name, "", 0).partition(",partition=")[0] for s in PARTITION_GAUGES)
_GAUGE_TYPE = dict(catalog.ATTRIBUTES[catalog.Kind.GAUGE])["Value"]
assert {s.name for s in FAMILIES} == {s.name for s in REPLICA_MANAGER_GAUGES + PARTITION_GAUGES}


def is_archive(path: str) -> bool:
    """An archive file is told by its first line: the segment header (`"k": "archive"`), whatever
    its schema version (an unknown one is then read, and rejected, by the reader)."""
    try:
        with open(path, "rb") as f:
            first = f.readline(1 << 16)
    except OSError:
        return path.endswith(SUFFIX)
    try:
        obj = json.loads(first)
    except ValueError:
        return False
    return obj.__class__ is dict and (obj.get("k") == "archive" or obj.get("format") == FORMAT)


def source_of(path: str) -> str:
    """One directory is one broker's archive (README): a file's source is its directory."""
    return os.path.dirname(os.path.abspath(path))


@dataclass(frozen=True)
class Replay:
    """What every file's replay needs, sent to the executors: the configuration's filters (a
    Config without secrets: naming.Naming strips them) and the recompute, None when the live
    sidecar would recompute nothing."""

    config: Config
    recompute: RecomputeSettings | None
    max_hold: float = 300.0  # seconds: a gap between polls longer than this ends every run (the sidecar was down)


class ArchivedRecompute(Recompute):
    """The live recompute, reading min ISR and replica lists from the archived poll where the live
    one asks the Admin API or the configuration (the poll recorded what it resolved)."""

    def __init__(self, settings: RecomputeSettings, config: Config):
        super().__init__(settings, config, admin=None)
        self.state = ArchiveState()

    def _admin_view(self):
        return None

    def _tell(self, key, message, *args) -> None:
        """Quiet: the live sidecar logged its fallbacks when it ran; once per archive file here
        would only repeat them."""

    def _min_isr(self, view, fallbacks, topics_used):
        state = self.state

        def of(topic: str) -> int:
            m = state.min_isr.get(topic)
            return m[0] if m is not None else self.settings.configured_min_isr(topic)[0]
        return of

    def _assignments(self, view):
        if self.state.admin and self.state.states:
            return self.state.assignments(), None
        return None, "no_admin_api"


def _health_key(key: tuple[str, str], cache: dict) -> bool:
    """Is this leaf one of the health families the recompute decides?"""
    found = cache.get(key)
    if found is None:
        found = key in _RM_KEYS or (key[1] == "Value" and key[0].startswith(_MEMBER_HEADS))
        if not found and key[1] == "Value":
            try:
                name = ObjectName.parse(key[0])
            except ValueError:
                name = None
            found = (name is not None and name.get("topic") is not None
                     and (name.domain, name.get("type"), name.get("name")) in _PARTITION_KEYS)
        cache[key] = found
    return found


class Health:
    """The health leaves of one broker's archive, poll after poll, as the live sidecar's rules read
    them: the broker's own (`set`), through Recompute.apply (`changes`). Per-partition families
    are kept as the JMX edge keeps them, tables over the hosted partitions (so the recompute's
    replacement takes its fast path), and only what changed since the last call is returned."""

    def __init__(self, recompute: ArchivedRecompute | None):
        self.recompute = recompute
        self.own: dict[tuple[str, str], float] = {}  # the broker's own health leaves
        self.members: frozenset | None = None  # the hosted partitions the tables are built over
        self.hosted = None
        self.names: list[list[str]] = []  # per Partition family: each member's ObjectName text
        self.at: dict[str, tuple[int, int]] = {}  # member ObjectName -> (family, member)
        self.values: list[array] = []
        self.present: list[bytearray] = []
        self.ranks = None
        self.last: dict[str, tuple[array, bytearray]] = {}  # ObjectName prefix -> what the rules read last
        self.last_beans: dict[tuple[str, str], float] = {}
        self.loose: dict[tuple[str, str], float] = {}  # own leaves outside the tables

    def set(self, key: tuple[str, str], value) -> None:
        if value is None:
            self.own.pop(key, None)
        else:
            self.own[key] = value
        place = self.at.get(key[0])
        if place is None or key[1] != "Value":
            if value is None:
                self.loose.pop(key, None)
            else:
                self.loose[key] = value
        else:
            f, i = place
            if value is None:
                self.values[f][i], self.present[f][i] = 0, 0
            else:
                self.values[f][i], self.present[f][i] = int(value), 1

    def reset(self, own: dict) -> None:
        self.own = dict(own)
        self.members = None

    def _build(self, state: ArchiveState) -> None:
        """Tables over the hosted partitions (sorted), filled from the broker's own leaves."""
        hosted = state.hosted()
        self.members = frozenset(state.counts)
        n = len(hosted.topic)
        topic, partition = array("i", hosted.topic), array("i", hosted.partition)
        self.hosted = (hosted.topics, topic, partition)
        self.ranks = array("I", range(n))
        self.names, self.values, self.present, self.at = [], [], [], {}
        members = self.keys = [(hosted.topics[t], p) for t, p in zip(topic, partition)]
        for f, spec in enumerate(PARTITION_GAUGES):
            names = [member_object(spec.object_name, t, p) for t, p in members]
            values, present = array("q", bytes(8 * n)), bytearray(n)
            for i, name in enumerate(names):
                self.at[name] = (f, i)
                v = self.own.get((name, "Value"))
                if v is not None:
                    values[i], present[i] = int(v), 1
            self.names.append(names)
            self.values.append(values)
            self.present.append(present)
        self.loose = {k: v for k, v in self.own.items() if k[0] not in self.at or k[1] != "Value"}

    def changes(self, state: ArchiveState) -> dict:
        """{(ObjectName, attribute): value, or None where it went} since the last call."""
        if self.members is None or len(self.members) != len(state.counts) or self.members != state.counts.keys():
            self._build(state)
        topics, topic, partition = self.hosted
        tables = []
        beans: dict[str, list] = {}
        for (obj, attribute), value in self.loose.items():  # broker-wide gauges, members of no hosted partition
            beans.setdefault(obj, []).append(Attribute(attribute, value, catalog.ATTRIBUTE_DESCRIPTION, _GAUGE_TYPE))
        for f, spec in enumerate(PARTITION_GAUGES):
            if self.present[f].count(1):
                tables.append(BeanTable(spec.domain, (("type", spec.type), ("name", spec.name)),
                                        catalog.Kind.GAUGE.class_name, "Value", catalog.ATTRIBUTE_DESCRIPTION,
                                        _GAUGE_TYPE, True, topics, topic, partition, self.ranks, self.values[f],
                                        self.present[f]))
        mbeans = [MBean(ObjectName.parse(obj), catalog.Kind.GAUGE.class_name, tuple(attrs))
                  for obj, attrs in beans.items()]
        result = ReadResult(mbeans, tables=tables)
        if self.recompute is not None:
            counts = [state.counts[k] for k in self.keys]
            hosted = HostedPartitions(topics, topic, partition, [c[0] for c in counts], [c[1] for c in counts])
            self.recompute.state = state
            result = self.recompute.apply(ReadResult(mbeans, tables=tables,
                                                     broker=BrokerReadings(state.broker, state.version, hosted)))
        out: dict = {}
        now_beans = {}
        for mb in result.mbeans:
            obj = str(mb.name)
            for a in mb.attributes:
                now_beans[(obj, a.name)] = a.value
        for k, v in now_beans.items():
            if self.last_beans.get(k) != v or k not in self.last_beans:
                out[k] = v
        for k in self.last_beans:
            if k not in now_beans:
                out[k] = None
        self.last_beans = now_beans
        seen = set()
        for table in result.tables:
            f = _FAMILY_INDEX[table.keys]
            prefix = PARTITION_GAUGES[f].object_name
            seen.add(prefix)
            values, present = table.values, table.present
            last = self.last.get(prefix)
            names = self.names[f]
            if last is not None and len(last[0]) == len(values) and last[2] is names:
                if last[0] == values and last[1] == present:
                    continue
                for i in _differing(values, last[0], present, last[1]):
                    out[(names[i], "Value")] = values[i] if present[i] else None
            else:
                if last is not None:
                    for i, name in enumerate(last[2]):
                        if last[1][i]:
                            out[(name, "Value")] = None
                for i in range(len(values)):
                    if present[i]:
                        out[(names[i], "Value")] = values[i]
            self.last[prefix] = (array(values.typecode, values), bytearray(present), names)
        for prefix in [p for p in self.last if p not in seen]:
            _, present, names = self.last.pop(prefix)
            for i, name in enumerate(names):
                if present[i]:
                    out[(name, "Value")] = None
        return out


def _differing(values: array, old_values: array, present: bytearray, old_present: bytearray,
               chunk: int = 512) -> Iterator[int]:
    """The members whose value or presence changed: slices compared in C, members only inside a
    slice that differs (a poll changes a few partitions of tens of thousands)."""
    for lo in range(0, len(values), chunk):
        hi = lo + chunk
        if values[lo:hi] != old_values[lo:hi] or present[lo:hi] != old_present[lo:hi]:
            for i in range(lo, min(hi, len(values))):
                if values[i] != old_values[i] or present[i] != old_present[i]:
                    yield i


_FAMILY_INDEX = {(("type", s.type), ("name", s.name)): f for f, s in enumerate(PARTITION_GAUGES)}


def read_file(path: str, source: str, replay: Replay) -> Iterator[tuple]:
    """The rows (ROW_SCHEMA) of one archive file. Runs on the executors."""
    rejects = Rejects(keep=1 << 30)
    recompute = ArchivedRecompute(replay.recompute, replay.config) if replay.recompute is not None else None
    state = ArchiveState()
    cache: dict = {}
    current: dict[tuple[str, str], tuple[float, float]] = {}  # key -> (value, first poll of its run)
    health = Health(recompute)
    last_t = None
    broker = None
    version = None
    for p in read_polls(path, rejects):
        state.apply(p)
        broker = state.broker
        t = p.poll.t
        if last_t is not None and t - last_t > replay.max_hold:
            # the sidecar was down: Prometheus would have had nothing, so no run spans the gap
            for k, (v, first) in current.items():
                yield ("v", source, broker, first, last_t, k[0], k[1], v, None, None, None, None, None, None)
            current.clear()
        yield ("p", source, broker, t, t, None, None, None, len(state.counts), path, None, None, None, None)
        if p.poll.keyframe:
            own = {}
            changes = {}
            for k, v in state.leaves.items():
                if _health_key(k, cache):
                    own[k] = v
                else:
                    changes[k] = v
            for k in current:
                if k not in changes and not _health_key(k, cache):
                    changes[k] = None
            health = Health(recompute)  # a keyframe starts anew: every health value is told again
            health.reset(own)
            fresh = health.changes(state)
            for k in current:
                if k not in fresh and _health_key(k, cache):
                    changes[k] = None
            changes.update(fresh)
        else:
            changes = {}
            recount = version != state.version
            for r in p.records:
                kind = r.__class__
                if kind is Leaf or kind is Leaves:
                    keys = ([(r.object, r.attribute)] if kind is Leaf else
                            [(member_object(r.object, r.topic, q), r.attribute) for q in r.partitions])
                    for k in keys:
                        v = state.leaves.get(k)
                        if _health_key(k, cache):
                            recount = True
                            health.set(k, v)
                        else:
                            changes[k] = v
                elif kind in _HEALTH_INPUTS:
                    recount = True
            if recount:
                changes.update(health.changes(state))
        version = state.version
        for k, v in changes.items():
            run = current.get(k)
            if v is not None:
                v = float(v)
            if run is not None:
                if v is not None and run[0] == v:
                    continue
                yield ("v", source, broker, run[1], last_t, k[0], k[1], run[0], None, None, None, None, None, None)
                del current[k]
            if v is not None:
                current[k] = (v, t)
        last_t = t
    for k, (v, first) in current.items():
        yield ("v", source, broker, first, last_t, k[0], k[1], v, None, None, None, None, None, None)
    for r in rejects.examples:
        yield ("r", source, None, None, None, None, None, None, None, path, r.line_no, r.reason.replace(" ", "-"),
               r.detail, "")
    yield ("f", source, broker, None, None, None, None, None, None, path, rejects.lines.get(path, 0),
           None, None, None)
