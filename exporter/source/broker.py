"""The production `Source`: a Kafka broker over JMX, read with as few RMI round trips as the
configuration allows.

- The ObjectName list is re-read on a slow clock (`sidecar.namesRefreshSeconds`), not every poll;
  a refresh that finds the same names changes nothing here.
- Kafka's per-partition gauges (`kafka.cluster:type=Partition`, `kafka.log:type=Log`; 98% of a
  big broker's MBeans) are listed as columns, not names: the JVM keeps each family's topics and
  (topic, partition) pairs, and this side a `BeanTable` per family that the rule engine and the
  exposition read directly. At 40,000 partitions that is a few MB instead of ~1 KB per MBean.
- Kafka's per-partition gauges whose values are small integers (the catalog says which: the 0/1
  health flags and the replica counts) are learned with server-side queries instead of one read
  per partition; every other MBean is read with one `getAttributes`. Both give the rule engine
  the same `MBean` values, so the samples are the same as if everything had been read.

How a family is queried: exporter/source/family_reads.py.

No name is matched against a pattern in this process's JVM: javax.management.ObjectName keeps the
key map such matching builds (~0.4 KB per name, for good), which at 40,000 partitions was more
than half of the JVM's heap.
"""
from __future__ import annotations

import re
import time
from array import array
from dataclasses import dataclass
from typing import Callable

from kafka_jmx_sidecar.exporter.source.jmx import JmxClient, JmxError, JmxSettings
from kafka_jmx_sidecar.exporter.source.jmx.jvm import shrink_heap
from kafka_jmx_sidecar.exporter.source.jmx.listing import Members
from kafka_jmx_sidecar.exporter.base.model import BeanTable, MBean, ObjectName
from kafka_jmx_sidecar.exporter.rule_engine.config import Config
from kafka_jmx_sidecar.exporter.rule_engine.order import canonical_name, java_string_hash, jmx_exporter_order
from kafka_jmx_sidecar.exporter.source import visiting
from kafka_jmx_sidecar.exporter.source.broker_inputs import (ISR_KEY, REPLICAS_KEY, aligned, meter_names,
                                                             queried_counts, read_identity, read_meters)
from kafka_jmx_sidecar.exporter.source.family import TABULATED, Family
from kafka_jmx_sidecar.exporter.source.family_reads import QUERY_MIN_MEMBERS, FamilyReads
from kafka_jmx_sidecar.exporter.source.handoff import handed_over
from kafka_jmx_sidecar.exporter.source.named_reads import NamedFamily, NamedReads, families_of, learn_from
from kafka_jmx_sidecar.exporter.source.protocol import BrokerReadings, ReadResult, SourceError
from kafka_jmx_sidecar.mbeans import catalog


@dataclass(frozen=True)
class BrokerSettings:
    """What the broker source reads by, besides the rules' own patterns (exporter/config makes it)."""

    jmx: JmxSettings
    naming: str = "0.x"  # 1.x: attribute filters and metric customizers keep families out of tables
    names_refresh_seconds: float = 300.0
    partition_counts: bool = False  # the release and every partition's counts (recompute, archive)
    reassignment: bool = False  # the reassignment meters by name


# The broker-wide health MBeans (ReplicaManager's partition counts, the controller's offline
# partitions, ...), read by name before the first complete poll of a broker (`read_health`).
_BROKER_HEALTH = tuple(s.object_name for s in catalog.HEALTH_MBEANS
                       if s.scope in (catalog.Scope.BROKER, catalog.Scope.CONTROLLER))

def _complete(listed: set[tuple[str, str, str]]) -> set[tuple[str, str]]:
    """The (domain, type) whose every tabulated family is `listed`."""
    return {k[:2] for k in TABULATED if all(t in listed for t in TABULATED if t[:2] == k[:2])}


class JmxSource:
    def __init__(self, config: Config, settings: BrokerSettings, clock=time.monotonic):
        try:
            self.jmx = settings.jmx
            self.target = self.jmx.endpoint or "(no JMX target configured)"
            self.client = JmxClient(self.jmx)
            self.family_reads = FamilyReads(self.client)
            self.named_reads = NamedReads(self.client, self.family_reads.costs)
        except JmxError as e:
            raise SourceError(str(e)) from e
        self.config = config
        self.settings = settings
        self.clock = clock
        self._listed_at: float | None = None
        # the names read one getAttributes each, as their listed text: the same list object
        # every poll (the client keeps its plan while it is), and no new string per name
        self._rest_texts: list[str] = []
        self._listed_texts: list[str] | None = None  # the names listed whole at the last listing
        self._families: list[Family] = []
        self._named: list[NamedFamily] = []  # families of names read whole, asked by query when worth it
        self._rest_rank: dict[tuple, int] = {}  # (domain, keys) of a name read whole -> its visiting rank
        self._ordered: list[ObjectName] = []  # without tables: the names in jmx_exporter's visiting order
        self._nmt: bool | None = None  # the JVM tracks its native memory (unknown until asked)
        self._recompute = settings.partition_counts
        self._reassignment = settings.reassignment
        self._meter_names: tuple[str | None, list[str]] | None = None
        # which broker it is, read with the names: (id, release, cluster id, what is missing)
        self._identity: tuple[str | None, str | None, str | None, str | None] | None = None
        # called with each table as soon as its values are in, while the next ones are read
        # (the collector hands the rule engine's prepare: a first poll's rules run meanwhile)
        self.on_table: Callable[[BeanTable], None] = lambda table: None

    @property
    def connected(self) -> bool:
        return self.client.connected

    def close(self) -> None:
        self.client.close()

    def abort(self) -> None:
        """Give up the read in progress (from another thread): the sidecar is stopping."""
        self.client.abort()

    def jvm_memory(self) -> dict[tuple[str, str], int]:
        """(area, kind) -> bytes of the JVM in this process: heap and nonheap, used/committed/max;
        with -XX:NativeMemoryTracking=summary also everything the JVM committed ("total")."""
        import jpype

        mf = jpype.JClass("java.lang.management.ManagementFactory")
        bean = mf.getMemoryMXBean()
        out = {}
        for area, usage in (("heap", bean.getHeapMemoryUsage()), ("nonheap", bean.getNonHeapMemoryUsage())):
            out[(area, "used")] = int(usage.getUsed())
            out[(area, "committed")] = int(usage.getCommitted())
            if int(usage.getMax()) >= 0:
                out[(area, "max")] = int(usage.getMax())
        if self._nmt is not False:
            m = None
            try:
                text = str(mf.getPlatformMBeanServer().invoke(
                    jpype.JClass("javax.management.ObjectName")("com.sun.management:type=DiagnosticCommand"),
                    "vmNativeMemory", jpype.JArray(jpype.JObject)([jpype.JArray(jpype.JString)(["summary"])]),
                    jpype.JArray(jpype.JString)(["[Ljava.lang.String;"])))
                m = re.search(r"Total: reserved=(\d+)KB, committed=(\d+)KB", text)
            except Exception:
                pass
            self._nmt = m is not None
            if m:
                out[("total", "reserved")], out[("total", "committed")] = int(m.group(1)) << 10, int(m.group(2)) << 10
        return out

    def _tabulable(self, key: tuple[str, str, str]) -> bool:
        """A family can be columns unless an attribute filter names one of its members, or (1.x)
        a metric customizer may add labels or metrics to them."""
        config = self.config
        domain, type_, name = key
        if self.settings.naming == "1.x" and (
                config.include_object_name_attributes or any(c.domain == domain for c in config.metric_customizers)):
            return False
        return not any(d == domain and ("type", type_) in props and ("name", name) in props
                       for d, props in config.exclude_object_name_attributes)

    def _refresh_names(self) -> Callable[[], None] | None:
        """List the names; what is left to do before the tables are used (their visiting ranks,
        computed while the poll's first reads and queries run), or None."""
        if not self.client.splits:  # without the compiled helper: every MBean read whole
            names = self.client.list_names()
            self._rest_texts, self._families = self.client.name_texts, []
            self._ordered, self._rest_rank = jmx_exporter_order(names), {}
            self._named_families(names, self._rest_texts)
            return None
        keys = [k for k in TABULATED if self._tabulable(k)]
        was = {f.key: f.members for f in self._families}
        previous = [was.get(k) for k in keys]
        # None until this listing's ranks are in: a poll that failed before lists again in full
        listed_before, self._listed_texts = self._listed_texts, None
        names, hashes, members = self.client.list_split([f"{d}:type={t},name={n}" for d, t, n in keys], previous)
        texts = self.client.name_texts
        if texts == listed_before and all(m is p if p is not None else not len(m) for m, p in zip(members, previous)):
            # nothing came or went since the last listing (a broker's usual names refresh): the
            # tables, their ranks and what was learned of their values stay as they are
            self._listed_texts = texts
            return None
        rest_texts = list(texts)
        all_hashes = array("i", hashes)
        census = self.client.census  # what the includes matched before the excludes took names out
        # per name, as all_hashes: the first include pattern matching it, its class name's hash
        pattern_of = array("I", census.rest_pattern) if census is not None else array("I", bytes(4 * len(hashes)))
        class_of = array("i", census.rest_class) if census is not None else array("i", bytes(4 * len(hashes)))
        key_hashes = array("i", census.rest_key_hash) if census is not None and len(census.rest_key_hash) == len(hashes) \
            else None
        families = []
        offsets = []  # (offset into all_hashes, family) for the tables
        whole: list[tuple[ObjectName, int]] = []  # family members read whole, and their hash index
        canonical_of: list[tuple[int, Callable[[int], str]]] = [(0, lambda i: canonical_name(names[i]))]
        for key, m in zip(keys, members):
            if not len(m):
                continue
            canonical_of.append((len(all_hashes), visiting.member_canonical(m)))
            template = self._template(m)
            if template is None:  # not shaped like Kafka's gauge: read whole, like any other MBean
                for i in range(len(m)):
                    text = m.name(i)
                    rest_texts.append(text)
                    whole.append((ObjectName.parse(text), len(all_hashes) + i))
            else:
                queryable = len(m) >= QUERY_MIN_MEMBERS
                max_value = TABULATED[key] if queryable else None
                table = BeanTable(key[0], (("type", key[1]), ("name", key[2])), template.class_name, "Value",
                                  template.attributes[0].description, template.attributes[0].type_name,
                                  type(template.attributes[0].value) is int, m.topics, m.topic, m.partition,
                                  array("I", bytes(4 * len(m))))
                families.append(Family(key, m, table, max_value, number=queryable and TABULATED[key] is None))
                offsets.append((len(all_hashes), table))
            all_hashes.extend(m.hash)
            if key_hashes is not None and m.key_hash is not None:
                key_hashes.extend(m.key_hash)
            else:
                key_hashes = None
            pattern_of.extend(m.pattern if m.pattern is not None else array("I", bytes(4 * len(m))))
            member_class = java_string_hash(template.class_name) if template is not None else 0
            class_of.extend(array("i", [member_class - (1 << 32) if member_class >= 1 << 31 else member_class]) * len(m))
        self._rest_texts, self._families, self._rest_rank, self._ordered = rest_texts, families, {}, []
        self._named_families(names, texts, self.client.listed_classes)

        def rank() -> None:
            ranks = visiting.ranks(names, keys, members, canonical_of, census,
                                   (all_hashes, pattern_of, class_of, key_hashes))
            for start, table in offsets:
                table.rank = ranks[start:start + len(table)]
            self._rest_rank = {(n.domain, n.keys): ranks[i] for i, n in enumerate(names)}
            self._rest_rank.update(((n.domain, n.keys), ranks[i]) for n, i in whole)
            self._listed_texts = texts
        return rank

    def _named_families(self, names: list[ObjectName], texts: list[str], classes: dict[str, str] | None = None
                        ) -> None:
        self._named = families_of(names, texts, classes)
        self.named_reads.forget()

    def _template(self, m: Members) -> MBean | None:
        """One real read per family and names refresh: the class name and attribute metadata the
        family's values are presented with."""
        read = self.client.read([m.name(0)])
        if not read or read[0].class_name != catalog.Kind.GAUGE.class_name \
                or [a.name for a in read[0].attributes] != ["Value"] \
                or type(read[0].attributes[0].value) not in (int, float):
            return None
        return read[0]

    def read(self) -> ReadResult:
        try:
            result = self._read()
        except JmxError as e:
            raise SourceError(str(e)) from e
        # before the rules and the render: the heap the read grew is given back before the
        # poll's Python peak, not after it
        shrink_heap()
        return result

    def read_health(self) -> ReadResult:
        """The broker-wide health MBeans of the catalog that the configuration includes, read by
        name (no listing: a few round trips whatever the broker's size), in jmx_exporter's
        visiting order among themselves. Those the broker does not have are left out."""
        started = time.monotonic()
        names = [n for n in map(ObjectName.parse, _BROKER_HEALTH) if self.config.wants_mbean(n)]
        try:
            read = self.client.read([str(n) for n in jmx_exporter_order(names)]) if names else []
            self._identity = read_identity(self.client)
        except JmxError as e:
            raise SourceError(str(e)) from e
        stats = self.client.take_stats()
        return ReadResult(read, stats.round_trips, {"reads": time.monotonic() - started},
                          broker=self._broker_readings())

    def _read(self) -> ReadResult:
        t0 = time.monotonic()
        now = self.clock()
        listed = self._listed_at is None or now - self._listed_at >= self.settings.names_refresh_seconds
        rank = None
        if listed:
            if self._listed_at is None and self.client.splits:
                self._ask_ahead()
            try:
                rank = self._refresh_names()
                self._identity = read_identity(self.client)  # a broker restarted since may run another release
            except BaseException:
                self.family_reads.forget_ahead()
                raise
            # until its ranks are in (the poll may fail before), the next poll lists again
            self._listed_at = now if rank is None else None
        t1 = time.monotonic()
        # what needs no query is read over the connections meanwhile the queries run (and the
        # reads of the members they single out)
        queried = self.family_reads.queried(self._families)
        read_all = [f for f in self._families if f not in queried]
        named = self.named_reads.queried(self._named)
        whole = self.named_reads.to_read(self._rest_texts, named)
        started = self.client.start_reads([f.members for f in read_all], "Value", whole or None)
        served: list[MBean] = []
        # the rules plan each family's table here while the next family is asked
        reading = sum(len(f.members) for f in read_all) + len(whole)

        def ranked() -> None:
            rank()
            self._listed_at = now
        handed_over(lambda hand: self._ask(queried, named, served, hand, reading), self.on_table, "poll-queries",
                    first=ranked if rank is not None else None)
        t2 = time.monotonic()

        def take(k: int, values: list) -> None:
            self.family_reads.fill(read_all[k], values)
            self.on_table(read_all[k].table)
        read, seconds = self.client.finish_reads(started, take)
        for count, s in zip([len(f.members) for f in read_all] + [len(whole)], seconds):
            if count >= 100:
                self.family_reads.costs.note_reads(s, count)
        learn_from([f for f in self._named if f not in named], read)
        read += served
        t3 = time.monotonic()
        stats = self.client.take_stats()
        ranks = None
        if self._rest_rank:
            rank = self._rest_rank
            ranked = sorted((rank[(mb.name.domain, mb.name.keys)], k) for k, mb in enumerate(read))
            mbeans = [read[k] for _, k in ranked]
            ranks = [r for r, _ in ranked]
        else:
            by_id = {id(mb.name): mb for mb in read}
            mbeans = [mb for mb in map(by_id.get, map(id, self._ordered)) if mb is not None]
        phases = {"names": t1 - t0, "queries": t2 - t1, "reads": t3 - t2, "assemble": time.monotonic() - t3}
        broker = self._broker_readings()
        if self._recompute or self._reassignment:
            t4 = time.monotonic()
            self._counts_and_meters(broker)
            more = self.client.take_stats()
            stats.round_trips += more.round_trips
            stats.queries += more.queries
            phases["recompute_inputs" if self._recompute else "reassignment_inputs"] = time.monotonic() - t4
        return ReadResult(mbeans, stats.round_trips, phases, stats.queries,
                          tables=[f.table for f in self._families], ranks=ranks, broker=broker)

    def _ask(self, queried: list[Family], named: list[NamedFamily], served: list[MBean],
             hand: Callable[[BeanTable], None], reading: int) -> None:
        """The families asked by query this poll, each table handed over once served; the named
        families' MBeans into `served`. `reading`: the MBeans read meanwhile."""
        asked = self.family_reads.ask(queried, _complete({f.key for f in self._families}), reading)
        try:
            for f in queried:
                self.family_reads.read_family(f, asked)
                hand(f.table)
        finally:
            self.family_reads.drop(asked)  # none left but after a failure
        served += [mb for f in named for mb in self.named_reads.serve(f)]

    def _ask_ahead(self) -> None:
        """The first listing: step (1) of the queried families started now, answered while the
        names are listed (FamilyReads.ask_ahead). As `queried` will ask it, by the families the
        configuration lists and tabulates (judged by one member's name): the groups of a flag or
        count, every family of the group with them."""
        keys = [k for k in TABULATED if self._tabulable(k) and self.config.wants_mbean(ObjectName(
            k[0], (("type", k[1]), ("name", k[2]), ("topic", "t"), ("partition", "0"))))]
        complete = _complete(set(keys))
        groups: dict[tuple[str, str], list[tuple[str, str, str]]] = {}
        for k in keys:
            groups.setdefault(k[:2], []).append(k)
        self.family_reads.ask_ahead({g: (ks, g in complete) for g, ks in groups.items()
                                     if any(TABULATED[k] is not None for k in ks)})

    # --- what is read whatever the rules want ----------------------------------------------------

    def _broker_readings(self) -> BrokerReadings:
        """Which broker it is, as read with the names (no round trip)."""
        broker_id, version, cluster_id, problem = self._identity or (None, None, None, None)
        return BrokerReadings(broker_id, version, problems=[problem] if problem else [], cluster_id=cluster_id)

    def _counts_and_meters(self, out: BrokerReadings) -> None:
        """The replication meters (reassignment) and the per-partition counts (recompute): the
        listed families' columns when the configuration lists them, else asked by value."""
        if self._reassignment:
            if self._meter_names is None or self._meter_names[0] != out.version:  # the same list: the client keeps its plan
                self._meter_names = (out.version, meter_names(out.version))
            out.meters = read_meters(self.client, self._meter_names[1])
        if not self._recompute:
            return
        families = {f.key: f for f in self._families}
        replicas, isr = families.get(REPLICAS_KEY), families.get(ISR_KEY)
        if replicas is not None and isr is not None:
            out.hosted = aligned(replicas.table, isr.table)
        else:
            out.hosted = queried_counts(self.client)
