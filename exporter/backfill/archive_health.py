"""The health families of one broker's archive, replayed poll after poll through the live
recompute (exporter/recompute/stage.Recompute.apply, which calls mbeans/broker_recompute): what
the live sidecar's rules read at each poll. Only where the live poll asked the Admin API or the
configuration does the replay ask the archive (`RecordedInputs`): the min ISR the poll resolved
and the replica lists it read. Nothing here imports Spark: it runs on the executors.
"""
from __future__ import annotations

from array import array
from typing import Iterator

from kafka_jmx_sidecar.exporter.archive.format import member_object
from kafka_jmx_sidecar.exporter.archive.reader import ArchiveState
from kafka_jmx_sidecar.exporter.base.model import Attribute, BeanTable, MBean, ObjectName
from kafka_jmx_sidecar.exporter.recompute.settings import RecomputeSettings
from kafka_jmx_sidecar.exporter.recompute.stage import FAMILIES, Recompute
from kafka_jmx_sidecar.exporter.source.protocol import BrokerReadings, ReadResult
from kafka_jmx_sidecar.mbeans import catalog
from kafka_jmx_sidecar.mbeans.broker_recompute import PARTITION_GAUGES, REPLICA_MANAGER_GAUGES, HostedPartitions

_RM_KEYS = {(s.object_name, "Value") for s in REPLICA_MANAGER_GAUGES}
_PARTITION_KEYS = {s.key for s in PARTITION_GAUGES}  # (domain, type, name)
# How the writer spells a member of those families (format.member_object): told without parsing
_MEMBER_HEADS = tuple(member_object(s.object_name, "", 0).partition(",partition=")[0] for s in PARTITION_GAUGES)
_GAUGE_TYPE = dict(catalog.ATTRIBUTES[catalog.Kind.GAUGE])["Value"]
assert {s.name for s in FAMILIES} == {s.name for s in REPLICA_MANAGER_GAUGES + PARTITION_GAUGES}


class RecordedInputs:
    """A recorded poll's min ISR and replica lists (stage.PollInputs): the live recompute asked the
    Admin API or the configuration; its archive kept what the poll resolved."""

    def __init__(self, state: ArchiveState, settings: RecomputeSettings):
        self.state, self.settings = state, settings

    def min_isr(self, topic: str) -> int:
        m = self.state.min_isr.get(topic)
        return m[0] if m is not None else self.settings.configured_min_isr(topic)[0]

    def assignments(self) -> tuple[dict | None, str | None]:
        if self.state.admin and self.state.states:
            return self.state.assignments(), None
        return None, "no_admin_api"


def is_health_key(key: tuple[str, str], cache: dict) -> bool:
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

    def __init__(self, recompute: Recompute | None):
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
        result = self._read_result(state)
        out = self._bean_changes(result.mbeans)
        self._table_changes(result.tables, out)
        return out

    def _read_result(self, state: ArchiveState) -> ReadResult:
        """The broker's own health leaves as the JMX edge reads them, through the recompute."""
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
        if self.recompute is None:
            return ReadResult(mbeans, tables=tables)
        counts = [state.counts[k] for k in self.keys]
        hosted = HostedPartitions(topics, topic, partition, [c[0] for c in counts], [c[1] for c in counts])
        return self.recompute.apply(ReadResult(mbeans, tables=tables,
                                               broker=BrokerReadings(state.broker, state.version, hosted)),
                                    RecordedInputs(state, self.recompute.settings))

    def _bean_changes(self, mbeans: list[MBean]) -> dict:
        """The MBeans' values that changed or went since the last call."""
        out: dict = {}
        now_beans = {}
        for mb in mbeans:
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
        return out

    def _table_changes(self, tables: list[BeanTable], out: dict) -> None:
        """The tables' members that changed or went since the last call, into `out`."""
        seen = set()
        for table in tables:
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
