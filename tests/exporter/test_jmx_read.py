"""exporter/source/jmx against a real JVM over real JMX/RMI (harness/JmxTarget.java).

Values, filters, round trips (counted by the target itself), MBeanInfo caching, name refresh,
server-side value queries. Connections (parallel, in the background, reconnects) are in
test_jmx_connections.py; errors and timeouts, which need other JVM options, in test_jmx_errors.py
(in subprocesses).
"""
from __future__ import annotations

import math
from datetime import datetime, timezone

import pytest

from kafka_jmx_sidecar.exporter.source.jmx import JmxClient, JmxConfigError, JmxSettings
from kafka_jmx_sidecar.exporter.base.model import Composite, ObjectName, Tabular
from harness.jmx_target import Target

TOPICS, PARTITIONS = 3, 20
KAFKA_AND_TEST = ("kafka.*:*", "test:*")


def partition_value(family: str, i: int) -> int:
    """The values JmxTarget.java gives partition i (= topic * PARTITIONS + partition)."""
    return {
        "UnderReplicated": 1 if i % 7 == 3 else 0,
        "InSyncReplicasCount": 9 if i % 50 == 49 else i % 4,
        "LastStableOffsetLag": 1000000 + i if i % 40 == 39 else i % 3,
        "ByteGauge": i % 2,
    }[family]


def expected_family(family: str) -> dict[str, int]:
    out = {}
    for t in range(TOPICS):
        for p in range(PARTITIONS):
            if family == "ByteGauge":
                name = f"test:type=ByteGauge,topic=t{t},partition={p}"
            else:
                name = f"kafka.cluster:type=Partition,name={family},topic=t{t},partition={p}"
            out[name] = partition_value(family, t * PARTITIONS + p)
    return out


@pytest.fixture(scope="module")
def target():
    with Target(topics=TOPICS, partitions=PARTITIONS) as t:
        yield t


def make(target: Target, **kw) -> JmxClient:
    kw.setdefault("include_object_names", KAFKA_AND_TEST)
    return JmxClient(JmxSettings(host_port=target.host_port, **kw))


def by_name(mbeans) -> dict[str, object]:
    return {str(m.name): m for m in mbeans}


def values(mbean) -> dict[str, object]:
    return {a.name: a.value for a in mbean.attributes}


# --- values ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ["java", "jpype"])
def test_every_value_type_converts_as_jmx_exporter_sees_it(target, engine):
    with make(target, engine=engine, include_object_names=("test:type=Types",)) as c:
        (types,) = c.read()
    assert str(types.name) == "test:type=Types" and types.class_name == "test.Types"
    v = values(types)
    assert v["Long"] == 9007199254740993 and type(v["Long"]) is int  # above 2**53: exact
    assert v["LongMax"] == 2**63 - 1
    assert v["Integer"] == -42 and v["Short"] == 7 and v["Byte"] == -3
    assert v["BigInteger"] == 123456789012345678901234567890
    assert v["AtomicLong"] == 77
    assert v["Double"] == 0.1 and v["DoubleBig"] == 1.0e9 and type(v["Double"]) is float
    assert math.isnan(v["DoubleNaN"]) and v["DoubleInf"] == -math.inf
    assert v["Float"] == 1.5 and v["BigDecimal"] == 2.5
    assert v["True"] is True and v["False"] is False
    assert v["String"] == "hello, wörld" and v["EmptyString"] == ""
    assert v["StringControl"] == "a\x1eb\x1fc\nd\\e"  # the helper's separators survive
    assert v["Enum"] == "SECONDS"
    assert v["Date"] == datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=timezone.utc)
    assert "Null" in v and v["Null"] is None
    assert v["Composite"] == {"max": -1, "name": "heap", "used": 123456}
    assert isinstance(v["Composite"], Composite) and list(v["Composite"]) == ["max", "name", "used"]
    tab = v["Tabular"]
    assert isinstance(tab, Tabular) and tab.index == ("key",)
    assert sorted((r["key"], r["value"]) for r in tab.rows) == [("a", 1), ("b", 2)]
    # never samples: arrays, an Optional (not Serializable: cannot cross RMI), other types,
    # a write-only attribute, a getter that throws
    for absent in ("IntArray", "StringArray", "Optional", "OptionalEmpty", "Unsupported", "Character",
                   "WriteOnly", "Throwing"):
        assert absent not in v, absent
    declared = {a.name: a.type_name for a in types.attributes}
    assert declared["Long"] == "long" and declared["Enum"] == "java.util.concurrent.TimeUnit"
    assert all(a.description == "Attribute exposed for management" for a in types.attributes)


def test_both_engines_read_the_same_mbeans(target):
    def normal(mbeans):
        return {str(m.name): (m.class_name, tuple((a.name, repr(a.value), a.description, a.type_name)
                                                  for a in m.attributes)) for m in mbeans}
    with make(target, engine="java") as j, make(target, engine="jpype") as p:
        assert j.list_names() == p.list_names()
        fast, slow = normal(j.read()), normal(p.read())
    assert fast == slow and len(fast) == TOPICS * PARTITIONS * 4 + TOPICS + 4
    assert fast["kafka.cluster:type=Partition,name=InSyncReplicasCount,topic=t0,partition=1"] == (
        "com.yammer.metrics.reporting.JmxReporter$Gauge",
        (("Value", "1", "Attribute exposed for management", "java.lang.Object"),))


def test_kafka_meter_keeps_mbeaninfo_order_and_types(target):
    with make(target, include_object_names=("kafka.server:type=BrokerTopicMetrics,*",)) as c:
        meters = by_name(c.read())
    m = meters["kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec"]
    assert m.class_name == "com.yammer.metrics.reporting.JmxReporter$Meter"
    assert [a.name for a in m.attributes] == ["EventType", "Count", "FifteenMinuteRate", "RateUnit", "MeanRate",
                                              "OneMinuteRate", "FiveMinuteRate"]
    v = values(m)
    assert v["Count"] == 123456789012 and v["RateUnit"] == "SECONDS" and v["EventType"] == "bytes"
    assert v["OneMinuteRate"] == 1.0e9 and math.isnan(v["FiveMinuteRate"])
    assert values(meters["kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec,topic=t2"])["Count"] == 3000


def test_jdk_composite_and_tabular_beans(target):
    with make(target, include_object_names=("java.lang:type=Memory", "java.lang:type=Runtime"),
              skip_expensive_attributes=False) as c:
        got = by_name(c.read())
    heap = values(got["java.lang:type=Memory"])["HeapMemoryUsage"]
    assert isinstance(heap, Composite) and list(heap) == ["committed", "init", "max", "used"]
    assert heap["used"] > 0 and heap["committed"] >= heap["used"]
    props = values(got["java.lang:type=Runtime"])["SystemProperties"]
    assert isinstance(props, Tabular) and props.index == ("key",)
    rows = {r["key"]: r["value"] for r in props.rows}
    assert rows["target.topics"] == str(TOPICS)
    # jmx_exporter's skip list: the expensive Runtime attributes are not even read by default
    with make(target, include_object_names=("java.lang:type=Runtime",)) as c:
        (runtime,) = c.read()
    names = {a.name for a in runtime.attributes}
    assert "SystemProperties" not in names and "ClassPath" not in names and "Uptime" in names


# --- round trips and caches ----------------------------------------------------------------------


def test_one_getattributes_per_mbean_and_mbeaninfo_once_per_family(target):
    with make(target) as c:
        names = c.list_names()
        target.reset()
        first = c.read()
        counts, stats = target.counts(), c.take_stats()
        n = len(first)
        assert n == len(names) == TOPICS * PARTITIONS * 4 + TOPICS + 4
        # MBeanInfo: one per family (3 Partition gauges, ByteGauge, per-topic meter), one per other bean
        # (broker-wide meter, ReplicaManager gauge, Fetch, Types): 9, not 4 * 60 + 7
        assert counts["getMBeanInfo"] == 9 == stats.infos_read
        # Types has a value that cannot cross RMI: that bean alone is read attribute by attribute once
        assert counts["getAttributes"] == n
        assert stats.mbeans_read == n
        target.reset()
        second = c.read()
        counts, stats = target.counts(), c.take_stats()
        assert counts == {"getAttributes": n, "getAttribute": 0, "getMBeanInfo": 0, "writes": 0,
                          "overlapped": 0, "queriesAtOnce": 0}
        assert stats.round_trips == n and stats.mbeans_read == n and stats.infos_read == 0
        assert [m.name for m in second] == [m.name for m in first]


def test_after_a_split_listing_mbeaninfo_is_read_once_per_class_of_one_shape(target):
    """The split listing gives the class name of each name read whole: the Yammer gauges (the
    ByteGauge family, ReplicaManager's gauge) share one getMBeanInfo, so do the meters (per topic
    and broker-wide); the KafkaMbean and Types beans have one each. 4, not the 6 a family-wise
    lookup takes; and the MBeans are those that family-wise lookups give."""
    families = [f"kafka.cluster:type=Partition,name={n}" for n in
                ("UnderReplicated", "InSyncReplicasCount", "LastStableOffsetLag")]
    with make(target) as split, make(target) as plain:
        split.list_split(families)
        target.reset()
        got = split.read()
        assert target.counts()["getMBeanInfo"] == 4 == split.take_stats().infos_read
        plain.list_names()
        target.reset()
        want = [mb for mb in plain.read() if not mb.name.domain == "kafka.cluster"]
        assert target.counts()["getMBeanInfo"] == 6 + 3  # (and one per Partition family)
        assert {str(mb.name): repr(mb) for mb in got} == {str(mb.name): repr(mb) for mb in want}  # (NaN values)


def test_auto_exclude_stops_reading_unexportable_attributes(target):
    on = make(target, include_object_names=("test:type=Types",))
    off = make(target, include_object_names=("test:type=Types",), auto_exclude_object_name_attributes=False)
    with on, off:
        for c in (on, off):
            c.read()
        target.reset()
        on.read()
        assert target.counts()["getAttribute"] == 0  # Optional no longer asked for
        target.reset()
        (types,) = off.read()
        assert target.counts()["getAttribute"] > 0  # read one by one again, as jmx_exporter does
        assert "Optional" not in values(types) and "Long" in values(types)


def test_new_names_after_refresh_and_vanished_mbeans(target):
    new = "kafka.cluster:type=Partition,name=UnderReplicated,topic=fresh,partition=0"
    gone = "kafka.cluster:type=Partition,name=UnderReplicated,topic=doomed,partition=0"
    target.command(f"add {gone} int 0")
    try:
        with make(target, include_object_names=("kafka.cluster:type=Partition,name=UnderReplicated,*",)) as c:
            c.list_names()
            c.read()
            target.command(f"add {new} int 1")
            target.command(f"remove {gone}")
            c.take_stats()
            got = by_name(c.read())
            assert new not in got and gone not in got  # the list is the caller's to refresh
            assert c.take_stats().mbeans_gone == 1
            target.reset()
            names = c.list_names()
            got = by_name(c.read())
            assert ObjectName.parse(new) in names and values(got[new]) == {"Value": 1}
            assert target.counts()["getMBeanInfo"] == 0  # the family's MBeanInfo was known
    finally:
        target.command(f"remove {new}")


def test_mbeaninfo_of_growing_kafka_metrics_is_reread_after_a_refresh(target):
    with make(target, include_object_names=("kafka.server:type=Fetch",)) as c:
        assert values(c.read()[0]) == {"queue-size": 0.0}
        target.command("fetch-attr byte-rate")
        assert values(c.read()[0]) == {"queue-size": 0.0}
        c.list_names()
        assert values(c.read()[0]) == {"queue-size": 0.0, "byte-rate": 1.5}


def test_unchanged_mbeans_come_back_as_the_same_objects(target):
    name = "kafka.cluster:type=Partition,name=LastStableOffsetLag,topic=t0,partition=4"
    with make(target) as c:
        subset = [n for n in c.list_names() if n.domain == "kafka.cluster"]
        for read in (lambda: c.read(), lambda: c.read(subset)):
            read()  # builds the plan (a new plan, after a listing or an auto-exclusion, decodes all)
            first = by_name(read())
            target.command(f"set {name} long 77")
            try:
                second = by_name(read())
            finally:
                target.command(f"set {name} long {partition_value('LastStableOffsetLag', 4)}")
            assert values(second[name]) == {"Value": 77} and values(first[name]) == {"Value": 1}
            other = "kafka.cluster:type=Partition,name=LastStableOffsetLag,topic=t0,partition=5"
            assert second[other] is first[other]  # same text from the helper: nothing decoded
            types = "test:type=Types"
            if types in first:  # composite values are always converted afresh
                assert second[types] is not first[types] and repr(second[types]) == repr(first[types])
        target.reset()
        c.read(subset)  # the plan for this list object is kept: no MBeanInfo, one call per MBean
        assert target.counts()["getMBeanInfo"] == 0 and target.counts()["getAttributes"] == len(subset)


# --- filters ---------------------------------------------------------------------------------------


def test_include_and_exclude_object_name_patterns(target):
    with make(target, include_object_names=("kafka.cluster:type=Partition,name=Under*,*", "test:type=Types",
                                            "kafka.server:*"),
              exclude_object_names=("kafka.server:type=BrokerTopicMetrics,*", "test:*")) as c:
        names = {str(n) for n in c.list_names()}
    assert names == set(expected_family("UnderReplicated")) | {
        "kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions", "kafka.server:type=Fetch"}


@pytest.mark.parametrize("include, exclude", [
    (("*:*",), ()),
    (("kafka.cluster:type=Partition,name=Under*,*", "kafka.cluster:type=Partition,name=InSync*,topic=t1,*",
      "kafka.server:*"), ("kafka.cluster:type=Partition,name=UnderReplicated,topic=t0,*",)),
    (("kafka.cluster:*", "*:type=Partition,*"), ("kafka.cluster:type=Partition,*,partition=1",)),
    (("kafka.server:*",), ()),
])
def test_split_listing_lists_what_a_whole_listing_lists(include, exclude):
    """list_split takes the families' members out family by family (one query each, the include
    patterns evaluated by the broker): with any include and exclude patterns, its rest plus its
    members must be list_names() exactly, and a name shaped unlike a member stays in the rest."""
    families = ["kafka.cluster:type=Partition,name=UnderReplicated", "kafka.cluster:type=Partition,name=InSyncReplicasCount",
                "kafka.log:type=Log,name=Size"]
    odd = ["kafka.cluster:type=Partition,name=UnderReplicated,topic=t0,partition=007",
           "kafka.cluster:type=Partition,name=UnderReplicated,topic=t2,partition=1,extra=x",
           "kafka.cluster:name=InSyncReplicasCount,type=Partition,topic=t1,partition=9",
           'kafka.cluster:type=Partition,name=InSyncReplicasCount,topic="t1",partition=8']
    with Target(topics=3, partitions=4) as target:
        for name in odd:
            assert target.command(f"add {name} int 1") == "OK"
        with make(target, include_object_names=include, exclude_object_names=exclude) as c:
            whole = {str(n) for n in c.list_names()}
            rest, hashes, members = c.list_split(families)
            listed = [str(n) for n in rest] + [m.name(i) for m in members for i in range(len(m))]
    assert len(listed) == len(set(listed)) and set(listed) == whole
    assert len(hashes) == len(rest)
    assert {str(n) for n in rest} >= {n for n in odd if n in whole}
    assert any(len(m) for m in members) == any(n.startswith("kafka.cluster:type=Partition") for n in whole)


def test_bad_patterns_are_configuration_errors(target):
    with pytest.raises(JmxConfigError, match=r"excludeObjectNames: 'kafka.server:type' is not an ObjectName pattern"):
        make(target, exclude_object_names=("kafka.server:type",))
    with pytest.raises(JmxConfigError, match="excludeObjectNameAttributes"):
        make(target, exclude_object_name_attributes={"no colon": ["Value"]})


def test_attribute_filters_use_jmx_name_equality(target):
    meter = "kafka.server:name=BytesInPerSec,type=BrokerTopicMetrics"  # keys in another order: same MBean
    with make(target, include_object_names=("kafka.server:type=BrokerTopicMetrics,*",),
              include_object_name_attributes={meter: ["Count", "MeanRate", "NoSuchAttribute"]}) as c:
        got = c.read()
    # with any include list, MBeans without one are not read at all (jmx_exporter's rule)
    assert [(str(m.name), values(m)) for m in got] == [
        ("kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec", {"Count": 123456789012, "MeanRate": 45.78352056167364})]
    with make(target, include_object_names=("test:type=Types",),
              exclude_object_name_attributes={"test:type=Types": ["Long", "Composite"]}) as c:
        v = values(c.read()[0])
    assert "Long" not in v and "Composite" not in v and v["Integer"] == -42


def test_read_given_names_and_attributes(target):
    with make(target) as c:
        got = c.read(names=["kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec,topic=t0",
                            ObjectName.parse("kafka.cluster:type=Partition,name=InSyncReplicasCount,topic=t1,partition=1"),
                            "kafka.cluster:type=Partition,name=InSyncReplicasCount,topic=nope,partition=0"],
                     attributes=["Count", "Value"])
        assert [(str(m.name), values(m)) for m in got] == [
            ("kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec,topic=t0", {"Count": 1000}),
            ("kafka.cluster:type=Partition,name=InSyncReplicasCount,topic=t1,partition=1", {"Value": 1})]
        assert c.take_stats().mbeans_gone == 1


# --- server-side queries ---------------------------------------------------------------------------


def test_query_names_compares_integer_long_and_byte_gauges(target):
    with make(target) as c:
        isr = "kafka.cluster:type=Partition,name=InSyncReplicasCount,*"
        lso = "kafka.cluster:type=Partition,name=LastStableOffsetLag,*"      # Long values
        byte = "test:type=ByteGauge,*"                                         # Byte values
        c.take_stats()
        for pattern, family, op, v, want in [
            (isr, "InSyncReplicasCount", "==", 1, lambda x: x == 1),
            (isr, "InSyncReplicasCount", ">", 3, lambda x: x > 3),
            (isr, "InSyncReplicasCount", "!=", 0, lambda x: x != 0),
            (isr, "InSyncReplicasCount", "==", 2.0, lambda x: x == 2),
            (lso, "LastStableOffsetLag", "==", 1, lambda x: x == 1),
            (lso, "LastStableOffsetLag", ">", 2, lambda x: x > 2),
            (lso, "LastStableOffsetLag", ">=", 1000000, lambda x: x >= 1000000),
            (byte, "ByteGauge", "==", 1, lambda x: x == 1),
            (byte, "ByteGauge", "<=", 0, lambda x: x <= 0),
        ]:
            got = {str(n) for n in c.query_names(pattern, "Value", op, v)}
            assert got == {k for k, x in expected_family(family).items() if want(x)}, (family, op, v)
        assert c.take_stats().round_trips == 9  # one each
        # conditions ANDed in the same round trip
        got = {str(n) for n in c.query_names(isr, "Value", "!=", 0, also=(("!=", 3), ("<", 9)))}
        assert got == {k for k, x in expected_family("InSyncReplicasCount").items() if x in (1, 2)}
        assert c.take_stats().round_trips == 1
