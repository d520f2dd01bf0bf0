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

How a family is queried. A query costs a scan of the MBean domain inside the broker (about
0.2 s at 40,000 partitions), whatever it returns, plus about 15 us per name it returns; a read
costs one round trip (about 0.1-0.2 ms). So each family costs as few queries and returned names
as its values allow. The previous poll's two most common values, `common` then `second` (0 and
nothing on the first poll), say what to ask:

  1. `Value != common`: the members holding anything else (for the health flags: usually none);
     when they are few, each is read and that is all. Families of one domain and type sharing
     `common` (Kafka's partition gauges) are asked together, in one query of `domain:type=T,*`;
  2. when they are many (the replica counts: the partitions led here),
     `Value != common and Value != second`: the members holding neither (usually none);
  3. members of (1) not in (2) that held `second` at the last poll hold it still; the others of
     (1) and all of (2) are read one by one, unless they are many (leadership moved), in which
     case `Value == second` tells which hold it and only the rest are read. With no `second`
     yet (the first poll), one query per small value (`Value == 1`, ... up to the catalog's
     maximum for the family) does that.

Members (1) did not return hold `common`. Every value served is the MBean's value at some moment
of the poll, except after two changes of one MBean within the poll interval (`second`, something
else, `common` again before (2)). An MBean whose attribute the query cannot evaluate is served as
`common`, as it was served as 0 before.

No name is matched against a pattern in this process's JVM: javax.management.ObjectName keeps the
key map such matching builds (~0.4 KB per name, for good), which at 40,000 partitions was more
than half of the JVM's heap.
"""
from __future__ import annotations

import re
import time
from array import array
from bisect import bisect_right
from collections import Counter
from typing import Any, Callable

from kafka_jmx_sidecar.exporter.source.jmx import JmxClient, JmxError, JmxSettings
from kafka_jmx_sidecar.exporter.source.jmx.jvm import shrink_heap
from kafka_jmx_sidecar.exporter.source.jmx.listing import Members
from kafka_jmx_sidecar.exporter.source.jmx.convert import MISSING
from kafka_jmx_sidecar.exporter.base.model import BeanTable, MBean, ObjectName
from kafka_jmx_sidecar.exporter.rule_engine.config import Config
from kafka_jmx_sidecar.exporter.rule_engine.order import (canonical_name, instance_bucket, java_string_hash, jmx_exporter_order,
                                  readobject_table_size, visiting_ranks)
from kafka_jmx_sidecar.exporter.config.sidecar import SidecarSettings, jvm_start_options
from kafka_jmx_sidecar.exporter.source.protocol import BrokerReadings, ReadResult, SourceError
from kafka_jmx_sidecar.mbeans import catalog
from kafka_jmx_sidecar.mbeans.broker_recompute import HostedPartitions
from kafka_jmx_sidecar.mbeans.reassignment import METERS


def _object_name_text(key: tuple) -> str:
    domain, props = key
    return domain + ":" + ",".join(f"{k}={v}" for k, v in sorted(props))


def jvm_options(settings: SidecarSettings) -> tuple[str, ...]:
    """The options the settings ask for (`jvm_start_options`); none when this process already runs
    a JVM (e.g. in tests) and neither `jvmOptions` nor `jvmMaxHeap` is given: it keeps the options
    it was started with."""
    import jpype

    if settings.jvm_options is None and settings.jvm_max_heap is None and jpype.isJVMStarted():
        return ()
    return jvm_start_options(settings)


def jmx_settings(config: Config, settings: SidecarSettings) -> JmxSettings:
    trust, key = config.trust_store, config.key_store
    as_list = lambda v: tuple(v) if isinstance(v, (list, tuple)) else ((str(v),) if v else ())  # noqa: E731
    return JmxSettings(
        jmx_url=config.jmx_url, username=config.username, password=config.password,
        ssl=config.ssl, trust_store=trust.filename, trust_store_password=trust.password, trust_store_type=trust.type,
        key_store=key.filename, key_store_password=key.password, key_store_type=key.type,
        ssl_protocols=as_list(config.ssl_options.get("protocols")),
        ssl_ciphers=as_list(config.ssl_options.get("ciphers")),
        include_object_names=tuple(p.text for p in config.include_object_names),
        exclude_object_names=tuple(p.text for p in config.exclude_object_names),
        # a key of jmx_exporter 1.x: 0.20.0 does not know it, so 0.x naming ignores it
        include_object_name_attributes={_object_name_text(k): v for k, v in config.include_object_name_attributes.items()}
        if settings.naming == "1.x" else {},
        exclude_object_name_attributes={_object_name_text(k): v for k, v in config.exclude_object_name_attributes.items()},
        auto_exclude_object_name_attributes=config.auto_exclude_object_name_attributes,
        connections=settings.connections,
        connect_timeout_seconds=settings.connect_timeout_seconds,
        read_timeout_seconds=settings.read_timeout_seconds,
        jvm_options=jvm_options(settings),
    )


# The broker-wide health MBeans (ReplicaManager's partition counts, the controller's offline
# partitions, ...), read by name before the first complete poll of a broker (`read_health`).
_BROKER_HEALTH = tuple(s.object_name for s in catalog.HEALTH_MBEANS
                       if s.scope in (catalog.Scope.BROKER, catalog.Scope.CONTROLLER))

# Kafka's per-partition gauges, kept as columns (`BeanTable`): (domain, type, name) -> the
# largest value worth a query of its own (the catalog's usual maximum of its value kind: 1 for
# flags; larger values are read), or None for a family read member by member (every member holds
# its own value, so a query would only add its cost).
_TABULATED = {s.key: s.value_kind.usual_max for s in catalog.HEALTH_MBEANS if s.scope is catalog.Scope.PARTITION}

# The recompute's per-partition inputs (exporter/recompute_stage.py): the ISR's size and the replica
# count each hosted partition's gauges show.
_ISR_KEY = next(s.key for s in catalog.PARTITION if s.quantity == "isr_count")
_REPLICAS_KEY = next(s.key for s in catalog.PARTITION if s.quantity == "replicas_count")

# The reassignment series' inputs (exporter/reassignment_stage.py): the broker-wide replication meters.
_METER_NAMES = {s.name: s.object_name for s in METERS}


def _exists_in(spec: catalog.MBeanSpec, version: str) -> bool:
    try:
        return spec.exists_in(version)
    except ValueError:  # not a Kafka release: read it and see
        return True


# Before anything was measured: one query ~ this many single reads (0.2 s / 0.2 ms).
_READS_PER_QUERY = 1000
# A family this small is read, not queried: a query scans the whole domain.
_QUERY_MIN_MEMBERS = 8


class _Family:
    """One tabulated family for one name list: its members (columns kept by the JVM) and the
    table of the values last served."""

    __slots__ = ("key", "pattern", "max_value", "members", "table", "base", "special")

    def __init__(self, key: tuple[str, str, str], members: Members, table: BeanTable, max_value: int | None):
        domain, type_, name = key
        self.key = key
        self.pattern = f"{domain}:type={type_},name={name},*"
        self.max_value = max_value  # None: read every member each poll
        self.members = members
        self.table = table
        self.base: Any = None  # the value served to every member not in `special`, last poll
        self.special: set[int] = set()

    def last(self, i: int) -> Any:
        return self.table.values[i] if self.table.present[i] else None

    def serve(self, i: int, value: Any) -> None:
        t = self.table
        if value.__class__ is bool or not isinstance(value, (int, float)):
            # not a number: Kafka's gauges never do this; such a value could not be exposed
            # anyway (jmx_exporter drops non-numeric leaves without `value:`)
            t.present[i] = 0
            return
        if t.integral and value.__class__ is not int:  # a float in an integral family
            t.values, t.integral = array("d", t.values), False
        t.values[i] = value
        t.present[i] = 1

    def drop(self, i: int) -> None:
        self.table.present[i] = 0


def _column(t: BeanTable) -> Any:
    """A table's values with absent members as 0."""
    if not t.present.count(0):
        return t.values
    return array(t.values.typecode, (v if p else 0 for v, p in zip(t.values, t.present)))


def _aligned(replicas: BeanTable, isr: BeanTable) -> HostedPartitions:
    """The two families' columns member by member (the ReplicasCount members: every hosted
    partition). Both are listed sorted by (topic, partition), so they are usually aligned as they are."""
    if isr.topic is replicas.topic or (list(isr.topics) == list(replicas.topics) and isr.topic == replicas.topic
                                       and isr.partition == replicas.partition):
        isr_values = _column(isr)
    else:
        at = {(isr.topics[isr.topic[i]], isr.partition[i]): i for i in range(len(isr)) if isr.present[i]}
        isr_values = array("q", [isr.values[at[k]] if k in at else 0 for k in
                                 ((replicas.topics[t], p) for t, p in zip(replicas.topic, replicas.partition))])
    return HostedPartitions(replicas.topics, replicas.topic, replicas.partition, isr_values, _column(replicas))


def _member_canonical(m: Members) -> Callable[[int], str]:
    """Member i's `getCanonicalName()` (asked only for names sharing a bucket)."""
    return lambda i: canonical_name(ObjectName.parse(m.name(i)))


class JmxSource:
    def __init__(self, config: Config, settings: SidecarSettings, clock=time.monotonic):
        try:
            self.jmx = jmx_settings(config, settings)
            self.target = self.jmx.endpoint or "(no JMX target configured)"
            self.client = JmxClient(self.jmx)
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
        self._families: list[_Family] = []
        self._rest_rank: dict[tuple, int] = {}  # (domain, keys) of a name read whole -> its visiting rank
        self._ordered: list[ObjectName] = []  # without tables: the names in jmx_exporter's visiting order
        # per family key, kept across name lists: the (common, second) values of the last poll
        self._common: dict[tuple, tuple[Any, Any]] = {}
        self._nmt: bool | None = None  # the JVM tracks its native memory (unknown until asked)
        self._query_seconds = 0.0  # moving averages of one query and one read (0: not measured yet)
        self._read_seconds = 0.0
        recompute = settings.recompute
        # the release and per-partition counts: the recompute's inputs, and what the archive keeps
        self._recompute = (recompute is not None and recompute.enabled) or settings.archive is not None
        self._reassignment = settings.reassignment is not None
        self._meter_names: tuple[str | None, list[str]] | None = None
        self._app_info: tuple[str | None, str | None, str | None] | None = None  # (id, version, problem)

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

    def _refresh_names(self) -> None:
        if not self.client.splits:  # without the compiled helper: every MBean read whole
            names = self.client.list_names()
            self._rest_texts, self._families = self.client.name_texts, []
            self._ordered, self._rest_rank = jmx_exporter_order(names), {}
            return
        keys = [k for k in _TABULATED if self._tabulable(k)]
        was = {f.key: f.members for f in self._families}
        previous = [was.get(k) for k in keys]
        listed_before = self._listed_texts
        names, hashes, members = self.client.list_split([f"{d}:type={t},name={n}" for d, t, n in keys], previous)
        self._listed_texts = self.client.name_texts
        if self.client.name_texts == listed_before and all(
                m is p if p is not None else not len(m) for m, p in zip(members, previous)):
            # nothing came or went since the last listing (a broker's usual names refresh): the
            # tables, their ranks and what was learned of their values stay as they are
            return
        rest_texts = list(self.client.name_texts)
        all_hashes = array("i", hashes)
        census = self.client.census  # what the includes matched before the excludes took names out
        # per name, as all_hashes: the first include pattern matching it, its class name's hash
        pattern_of = array("I", census.rest_pattern) if census is not None else array("I", bytes(4 * len(hashes)))
        class_of = array("i", census.rest_class) if census is not None else array("i", bytes(4 * len(hashes)))
        families = []
        offsets = []  # (offset into all_hashes, family) for the tables
        whole: list[tuple[ObjectName, int]] = []  # family members read whole, and their hash index
        canonical_of: list[tuple[int, Callable[[int], str]]] = [(0, lambda i: canonical_name(names[i]))]
        for key, m in zip(keys, members):
            if not len(m):
                continue
            canonical_of.append((len(all_hashes), _member_canonical(m)))
            template = self._template(m)
            if template is None:  # not shaped like Kafka's gauge: read whole, like any other MBean
                for i in range(len(m)):
                    text = m.name(i)
                    rest_texts.append(text)
                    whole.append((ObjectName.parse(text), len(all_hashes) + i))
            else:
                max_value = _TABULATED[key] if len(m) >= _QUERY_MIN_MEMBERS else None
                table = BeanTable(key[0], (("type", key[1]), ("name", key[2])), template.class_name, "Value",
                                  template.attributes[0].description, template.attributes[0].type_name,
                                  type(template.attributes[0].value) is int, m.topics, m.topic, m.partition,
                                  array("I", bytes(4 * len(m))))
                families.append(_Family(key, m, table, max_value))
                offsets.append((len(all_hashes), table))
            all_hashes.extend(m.hash)
            pattern_of.extend(m.pattern if m.pattern is not None else array("I", bytes(4 * len(m))))
            member_class = java_string_hash(template.class_name) if template is not None else 0
            class_of.extend(array("i", [member_class - (1 << 32) if member_class >= 1 << 31 else member_class]) * len(m))
        starts = [start for start, _ in canonical_of]

        def canonical(i: int) -> str:
            k = bisect_right(starts, i) - 1
            return canonical_of[k][1](i - starts[k])

        if census is not None:
            masks = [readobject_table_size(n) - 1 for n in census.pattern_sizes] or [0]

            def first(i: int) -> tuple[int, int]:
                p = pattern_of[i]
                return p, instance_bucket(all_hashes[i], class_of[i], masks[p])

            ranks = visiting_ranks(all_hashes, canonical, census.per_domain, census.listed, census.domains, first)
        else:
            domain_counts = Counter(n.domain for n in names)
            for key, m in zip(keys, members):
                domain_counts[key[0]] += len(m)
            ranks = visiting_ranks(all_hashes, canonical, domain_counts)
        for start, table in offsets:
            table.rank = ranks[start:start + len(table)]
        rank = {(n.domain, n.keys): ranks[i] for i, n in enumerate(names)}
        rank.update(((n.domain, n.keys), ranks[i]) for n, i in whole)
        self._rest_texts, self._families, self._rest_rank, self._ordered = rest_texts, families, rank, []

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
        except JmxError as e:
            raise SourceError(str(e)) from e
        stats = self.client.take_stats()
        return ReadResult(read, stats.round_trips, {"reads": time.monotonic() - started})

    def _read(self) -> ReadResult:
        t0 = time.monotonic()
        now = self.clock()
        listed = self._listed_at is None or now - self._listed_at >= self.settings.names_refresh_seconds
        if listed:
            self._refresh_names()
            self._listed_at = now
        t1 = time.monotonic()
        shared = self._shared_queries()
        for f in self._families:
            if f.max_value is None:
                self._read_all(f)
            else:
                self._read_family(f, shared.get(f.key))
        t2 = time.monotonic()
        read: list[MBean] = []
        if self._rest_texts:
            read = self.client.read(self._rest_texts)
            if len(self._rest_texts) >= 100:
                self._note_reads(time.monotonic() - t2, len(self._rest_texts))
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
        broker = None
        if self._recompute or self._reassignment:
            t4 = time.monotonic()
            broker = self._broker_readings(listed)
            more = self.client.take_stats()
            stats.round_trips += more.round_trips
            stats.queries += more.queries
            phases["recompute_inputs" if self._recompute else "reassignment_inputs"] = time.monotonic() - t4
        return ReadResult(mbeans, stats.round_trips, phases, stats.queries,
                          tables=[f.table for f in self._families], ranks=ranks, broker=broker)

    # --- what the recompute reads whatever the rules want ---------------------------------------

    def _broker_readings(self, listed: bool) -> BrokerReadings:
        """The broker's release (read again with the names) and its per-partition counts: the
        listed families' columns when the configuration lists them, else asked by value."""
        if listed or self._app_info is None:
            self._app_info = self._read_app_info()
        broker_id, version, problem = self._app_info
        out = BrokerReadings(broker_id, version, problems=[problem] if problem else [])
        if self._reassignment:
            out.meters = self._read_meters(version)
        if not self._recompute:
            return out
        families = {f.key: f for f in self._families}
        replicas, isr = families.get(_REPLICAS_KEY), families.get(_ISR_KEY)
        if replicas is not None and isr is not None:
            out.hosted = _aligned(replicas.table, isr.table)
        else:
            out.hosted = self._queried_counts()
        return out

    def _read_meters(self, version: str | None) -> dict[str, float]:
        """The replication meters' counts (the ones the broker's release has, when known): one
        getAttributes each."""
        if self._meter_names is None or self._meter_names[0] != version:  # the same list: the client keeps its plan
            self._meter_names = (version, [_METER_NAMES[s.name] for s in METERS
                                           if version is None or _exists_in(s, version)])
        names = self._meter_names[1]
        return {mb.name.get("name"): float(a.value) for mb in self.client.read(names, attributes=["Count"])
                for a in mb.attributes if a.name == "Count" and isinstance(a.value, (int, float))}

    def _read_app_info(self) -> tuple[str | None, str | None, str | None]:
        names = [n for n in self.client.query_names(catalog.APP_INFO_PATTERN) if n.get(catalog.APP_INFO_ID_KEY)]
        if not names:
            return None, None, f"the broker has no {catalog.APP_INFO_PATTERN.replace(',*', ',id=N')} MBean"
        name = names[0]
        read = self.client.read([name], attributes=[catalog.APP_INFO_VERSION])
        value = read[0].attributes[0].value if read and read[0].attributes else None
        if not isinstance(value, str) or not value:
            return name.get(catalog.APP_INFO_ID_KEY), None, f"{name} has no {catalog.APP_INFO_VERSION} attribute"
        return name.get(catalog.APP_INFO_ID_KEY), value, None

    def _queried_counts(self) -> HostedPartitions:
        """The counts when the configuration does not list them: one query per small value (the
        replica count's 0 names every hosted partition), the few larger ones read. ~13 queries,
        each a scan of kafka.cluster (~0.2 s at 40,000 partitions): list them instead
        (includeObjectNames) on big brokers."""
        replicas = self._values_by_query(_REPLICAS_KEY, first=0)
        isr = self._values_by_query(_ISR_KEY, first=1)
        keys = sorted(replicas)
        topics = sorted({t for t, _ in keys})
        index = {t: i for i, t in enumerate(topics)}
        return HostedPartitions(topics, array("i", [index[t] for t, _ in keys]), array("i", [p for _, p in keys]),
                                array("q", [isr.get(k, 0) for k in keys]), array("q", [replicas[k] for k in keys]))

    def _values_by_query(self, key: tuple[str, str, str], first: int) -> dict[tuple[str, int], int]:
        domain, type_, name = key
        pattern = f"{domain}:type={type_},name={name},*"
        top = _TABULATED[key] or 1
        out: dict[tuple[str, int], int] = {}

        def member(n: ObjectName) -> tuple[str, int] | None:
            topic, partition = n.get("topic"), n.get("partition")
            return (topic, int(partition)) if topic and partition and partition.isdigit() else None

        for value in range(first, top + 1):
            for n in self.client.query_names(pattern, "Value", "==", value):
                k = member(n)
                if k is not None:
                    out[k] = value
        larger = self.client.query_names(pattern, "Value", ">", top)
        for mb in self.client.read(larger, attributes=["Value"]) if larger else ():
            k = member(mb.name)
            v = mb.attributes[0].value if mb.attributes else None
            if k is not None and isinstance(v, (int, float)) and not isinstance(v, bool):
                out[k] = int(v)
        return out

    def _read_members(self, f: _Family, positions: list[int] | None) -> list[Any]:
        """The values of f's members at `positions` (None: all), one getAttributes each."""
        started = time.monotonic()
        values = self.client.read_members(f.members, positions, "Value")
        if len(values) >= 100:
            self._note_reads(time.monotonic() - started, len(values))
        return values

    def _read_all(self, f: _Family) -> None:
        values = self._read_members(f, None)
        t = f.table
        column, present, integral = t.values, t.present, t.integral
        for i, v in enumerate(values):
            if v.__class__ is int and integral or v.__class__ is float and not integral:
                column[i] = v
                present[i] = 1
            elif v is MISSING:
                present[i] = 0
            else:
                f.serve(i, v)
                column, integral = t.values, t.integral

    # --- queried families -----------------------------------------------------------------------

    def _note_reads(self, seconds: float, count: int) -> None:
        per = seconds / count
        self._read_seconds = per if not self._read_seconds else 0.7 * self._read_seconds + 0.3 * per

    def _query(self, f: _Family, op: str, value: Any, also: tuple = ()) -> Any:
        """Positions of the members for which `Value op value` (and `also`) holds: one query."""
        started = time.monotonic()
        found = self.client.query_members(f.pattern, [f.members], "Value", op, value, also=also)[0]
        took = time.monotonic() - started
        self._query_seconds = took if not self._query_seconds else 0.7 * self._query_seconds + 0.3 * took
        return found

    def _reads_per_query(self) -> float:
        if self._query_seconds and self._read_seconds:
            return self._query_seconds / self._read_seconds
        return _READS_PER_QUERY

    def _shared_queries(self) -> dict[tuple, list[int]]:
        """Step (1) asked once for all families of one domain and type that share `common`
        (Kafka's partition gauges: 0): the scan of the domain, most of a query's cost, is paid once
        instead of once per family. Family key -> positions of the members it returned."""
        groups: dict[tuple, list[_Family]] = {}
        for f in self._families:
            if f.max_value is None:
                continue
            common = self._common.get(f.key, (0, None))[0]
            groups.setdefault((f.key[0], f.key[1], type(common), common), []).append(f)
        out: dict[tuple, list[int]] = {}
        for (domain, type_, _, common), families in groups.items():
            if len(families) < 2:
                continue
            hits = self.client.query_members(f"{domain}:type={type_},*", [f.members for f in families],
                                             "Value", "!=", common)
            for f, positions in zip(families, hits):
                out[f.key] = list(positions)
        return out

    def _read_family(self, f: _Family, others: list[int] | None = None) -> None:
        """Serve every member of `f` (see the module docstring for the queries); `others`: the
        answer to step (1) when a shared query gave it."""
        common, second = self._common.get(f.key, (0, None))
        explicit: dict[int, Any] = {}  # member position -> value, for members not holding `common`
        gone: set[int] = set()
        if others is None:
            others = list(self._query(f, "!=", common))
        to_read = others
        if second is None and len(others) > self._reads_per_query():
            # nothing known about the others yet (the first poll): one query per small value
            for v in range(f.max_value + 1):
                if v != common:
                    for i in self._query(f, "==", v):
                        explicit[i] = v
            to_read = [i for i in others if i not in explicit]
        elif second is not None and len(others) > self._reads_per_query():
            unusual = set(self._query(f, "!=", common, (("!=", second),)))
            last = f.last
            same = {i for i in others if i not in unusual and last(i) == second and type(last(i)) is type(second)}
            if len(others) - len(same) > self._reads_per_query():  # many moved: ask who holds `second`
                for i in self._query(f, "==", second):
                    explicit[i] = second
                to_read = sorted({i for i in others if i not in explicit} | unusual)
            else:
                for i in same:
                    explicit[i] = second
                to_read = sorted({i for i in others if i not in same} | unusual)
        if to_read:
            for i, v in zip(to_read, self._read_members(f, to_read)):
                if v is MISSING:
                    gone.add(i)
                else:
                    explicit[i] = v
        if f.base is not None and f.base == common and type(f.base) is type(common):
            touched = f.special | explicit.keys() | gone  # only these can differ from the last poll
        else:
            touched = range(len(f.table))
        get = explicit.get
        for i in touched:
            if i in gone:
                f.drop(i)
            else:
                f.serve(i, get(i, common))
        f.base, f.special = common, explicit.keys() | gone
        self._learn(f, common, explicit, len(gone))

    def _learn(self, f: _Family, common: Any, explicit: dict[int, Any], gone: int) -> None:
        """The two most common numbers this poll: what the next poll asks about."""
        try:
            counts = Counter(explicit.values())
        except TypeError:  # an unhashable value: not a number, so not worth a query
            counts = Counter()
        counts[common] += len(f.table) - len(explicit) - gone
        top = [v for v, c in counts.most_common() if c > 0 and type(v) in (int, float)][:2]
        if not top:
            self._common.pop(f.key, None)  # back to one query per small value
        else:
            self._common[f.key] = (top[0], top[1] if len(top) > 1 else None)
