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
from dataclasses import dataclass
from typing import Iterator

from exporter.archive.format import FORMAT, SUFFIX, Cluster, Count, Leaf, Leaves, MinIsr, State, member_object
from exporter.archive.reader import ArchiveState, Rejects, read_polls
from exporter.model import Attribute, MBean, ObjectName
from exporter.recompute_settings import RecomputeSettings
from exporter.recompute_stage import FAMILIES, Recompute
from exporter.rule_engine.config import Config
from exporter.source import BrokerReadings, ReadResult
from mbeans import catalog
from mbeans.broker_recompute import PARTITION_GAUGES, REPLICA_MANAGER_GAUGES

# One row per run ("v"), per poll ("p": its time and hosted partitions), per reject ("r") and per
# file ("f": lines read), in one schema so one pass over the files gives all four.
ROW_SCHEMA = ("kind string, source string, broker string, t0 double, t1 double, objectname string, "
              "attribute string, value double, partitions int, file string, line int, reason string, "
              "detail string, text string")

_HEALTH_INPUTS = (Count, State, MinIsr, Cluster)  # records that change what the recompute reads
_RM_KEYS = {(f"{s.domain}:type={s.type},name={s.name}", "Value") for s in REPLICA_MANAGER_GAUGES}
_PARTITION_KEYS = {s.key for s in PARTITION_GAUGES}  # (domain, type, name)
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


class ArchivedRecompute(Recompute):
    """The live recompute, reading min ISR and replica lists from the archived poll where the live
    one asks the Admin API or the configuration (the poll recorded what it resolved)."""

    def __init__(self, settings: RecomputeSettings, config: Config):
        super().__init__(settings, config, admin=None)
        self.state = ArchiveState()

    def _admin_view(self):
        return None

    def _min_isr(self, view, fallbacks, topics_used):
        state, s = self.state, self.settings

        def of(topic: str) -> int:
            m = state.min_isr.get(topic)
            if m is not None:
                return m[0]
            if topic in s.min_isr_topics:
                return s.min_isr_topics[topic]
            return s.min_isr_default if s.min_isr_default is not None else 1
        return of

    def _assignments(self, view):
        if self.state.admin and self.state.states:
            return self.state.assignments(), None
        return None, "no_admin_api"


def _health_key(key: tuple[str, str], cache: dict) -> bool:
    """Is this leaf one of the health families the recompute decides?"""
    found = cache.get(key)
    if found is None:
        found = key in _RM_KEYS
        if not found and key[1] == "Value":
            try:
                name = ObjectName.parse(key[0])
            except ValueError:
                name = None
            found = (name is not None and name.get("topic") is not None
                     and (name.domain, name.get("type"), name.get("name")) in _PARTITION_KEYS)
        cache[key] = found
    return found


def health_values(recompute: ArchivedRecompute, state: ArchiveState, health: dict) -> dict:
    """The health leaves of one poll as the live sidecar's rules read them: the broker's own
    (`health`: (object, attribute) -> value) through Recompute.apply."""
    beans: dict[str, list] = {}
    for (obj, attribute), value in health.items():
        beans.setdefault(obj, []).append(Attribute(attribute, value, catalog.ATTRIBUTE_DESCRIPTION, _GAUGE_TYPE))
    mbeans = [MBean(ObjectName.parse(obj), catalog.Kind.GAUGE.class_name, tuple(attrs)) for obj, attrs in beans.items()]
    recompute.state = state
    recompute._wanted.clear()  # its cache is keyed by the member list's id, and ours is new each poll
    out = recompute.apply(ReadResult(mbeans, broker=BrokerReadings(state.broker, state.version, state.hosted())))
    values = {}
    for mb in out.mbeans:
        obj = str(mb.name)
        for a in mb.attributes:
            values[(obj, a.name)] = a.value
    for table in out.tables:
        for i in range(len(table)):
            if table.present[i]:
                values[(str(table.object_name(i)), table.attribute)] = table.values[i]
    return values


def _number(v) -> float:
    return float(v)


def read_file(path: str, source: str, replay: Replay) -> Iterator[tuple]:
    """The rows (ROW_SCHEMA) of one archive file. Runs on the executors."""
    rejects = Rejects(keep=1 << 30)
    recompute = ArchivedRecompute(replay.recompute, replay.config) if replay.recompute is not None else None
    state = ArchiveState()
    cache: dict = {}
    current: dict[tuple[str, str], tuple[float, float]] = {}  # key -> (value, first poll of its run)
    health: dict = {}  # the broker's own health leaves as of the last poll
    last_t = None
    broker = None
    version = None
    for p in read_polls(path, rejects):
        state.apply(p)
        broker = state.broker
        t = p.poll.t
        yield ("p", source, broker, t, t, None, None, None, len(state.counts), path, None, None, None, None)
        if p.poll.keyframe:
            health = {k: v for k, v in state.leaves.items() if _health_key(k, cache)}
            new = {k: v for k, v in state.leaves.items() if k not in health}
            new.update(health_values(recompute, state, health) if recompute is not None else health)
            changes = {k: None for k in current if k not in new}
            changes.update(new)
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
                            if v is None:
                                health.pop(k, None)
                            else:
                                health[k] = v
                        else:
                            changes[k] = v
                elif kind in _HEALTH_INPUTS:
                    recount = True
            if recount:
                values = health_values(recompute, state, health) if recompute is not None else dict(health)
                for k in current:
                    if k not in values and _health_key(k, cache):
                        changes[k] = None
                changes.update(values)
        version = state.version
        for k, v in changes.items():
            run = current.get(k)
            if v is not None:
                v = _number(v)
            if run is not None:
                if v is not None and (run[0] == v):
                    continue
                yield ("v", source, broker, run[1], last_t, k[0], k[1], run[0], None, path, None, None, None, None)
                del current[k]
            if v is not None:
                current[k] = (v, t)
        last_t = t
    for k, (v, first) in current.items():
        yield ("v", source, broker, first, last_t, k[0], k[1], v, None, path, None, None, None, None)
    for r in rejects.examples:
        yield ("r", source, None, None, None, None, None, None, None, path, r.line_no, r.reason.replace(" ", "-"),
               r.detail, "")
    yield ("f", source, broker, None, None, None, None, None, None, path, rejects.lines.get(path, 0),
           None, None, None)
