"""The simulator posing as the captured Kafka 4.1 node looks like it over JMX.

The reference (../shared/reference/kafka-4.1) is a real Apache Kafka 4.1.0 KRaft node 1 (broker
and controller) with refbin-test (3 partitions, RF 1) and refbin-underminisr (2 partitions, RF 1,
min.insync.replicas 2), which had produce traffic on refbin-test. Every kafka.* MBean it served
must be served by the simulator with the same ObjectName (key order included), MBeanInfo class
name, attributes in the same order, declared types and runtime value classes.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from kafka_jmx_sidecar.mbeans import catalog
from kafka_jmx_sidecar.mbeans.simulator import cluster

HEAD = re.compile(r"^(kafka\.\S.*?)   \[(.+)\]$")
ATTR = re.compile(r"^    (\S+) : (\S+) = (.*)  \(([\w.$]+)\)$")


def parse_reference(path: Path) -> dict[str, dict]:
    beans: dict[str, dict] = {}
    current = None
    for line in path.read_text().splitlines():
        m = HEAD.match(line)
        if m:
            current = beans.setdefault(m.group(1), {"class": m.group(2), "attrs": {}})
            continue
        m = ATTR.match(line)
        if m:
            current["attrs"][m.group(1)] = (m.group(2), m.group(4), m.group(3))
    return beans


@pytest.fixture(scope="module")
def reference(reference_dir) -> dict[str, dict]:
    beans = parse_reference(reference_dir / "all-kafka-mbeans-full.txt")
    assert len(beans) == 1028
    return beans


@pytest.fixture(scope="module")
def served(module_simulators, jvm):
    sim = module_simulators.start(cluster.reference_4_1(), kafka_version="4.1")
    # The captured node had produced to refbin-test, which creates its per-topic meters.
    sim.produce("refbin-test", bytes=3000, messages=30)
    return sim


@pytest.fixture
def jmx(served, connect):
    return connect(served.url)


def test_same_mbeans_classes_attributes_and_types_as_the_captured_broker(jmx, reference):
    dump = jmx.dump("kafka.*:*")
    assert sorted(set(reference) - set(dump)) == [], "MBeans the real broker had and the simulator lacks"
    assert sorted(set(dump) - set(reference)) == [], "MBeans the simulator has and the real broker did not"
    problems = []
    for name, ref in reference.items():
        got = dump[name]
        if got["class"] != ref["class"]:
            problems.append(f"{name}: class {got['class']} != {ref['class']}")
            continue
        if list(got["attrs"]) != list(ref["attrs"]):
            problems.append(f"{name}: attributes {list(got['attrs'])} != {list(ref['attrs'])}")
            continue
        for attr, (declared, runtime, _value) in ref["attrs"].items():
            g_declared, g_runtime, _ = got["attrs"][attr]
            if (g_declared, g_runtime) != (declared, runtime):
                problems.append(f"{name} {attr}: {g_declared} ({g_runtime}) != {declared} ({runtime})")
    assert problems == []


def test_object_names_keep_kafkas_key_order(jmx, reference_dir):
    listed = [line for line in (reference_dir / "all-kafka-mbean-names.txt").read_text().splitlines()
              if line.startswith("kafka")]
    served_names = set(jmx.names("kafka.*:*"))  # toString() keeps the registration order of keys
    assert sorted(set(listed) - served_names) == []
    assert "kafka.cluster:type=Partition,name=UnderMinIsr,topic=refbin-underminisr,partition=1" in served_names


def test_health_values_are_the_captured_brokers(jmx, reference):
    # ProducerIdCount counts producer ids the real broker had seen; the simulator has no producers.
    checked = 0
    for name, ref in reference.items():
        if not re.match(r"kafka\.(server:type=ReplicaManager|cluster:type=Partition|controller:type=KafkaController)", name):
            continue
        if "ProducerIdCount" in name or "Value" not in ref["attrs"]:
            continue
        kind = re.search(r"name=(\w+)", name).group(1)
        from kafka_jmx_sidecar.mbeans import catalog
        if not any(s.name == kind for s in catalog.HEALTH_MBEANS):
            continue  # inventory beans carry the captured values by construction
        assert jmx.get(name) == int(ref["attrs"]["Value"][2]), name
        checked += 1
    assert checked == 5 * 6 + 7 + 8  # 6 Partition gauges x 5, 7 KafkaController, 8 ReplicaManager gauges
    # The capture's semantics, spelled out: RF 1 with min ISR 2 is AtMinIsr under 3.7+ (effective min ISR).
    assert jmx.value("kafka.cluster:type=Partition,name=AtMinIsr,topic=refbin-underminisr,partition=0") == 1
    assert jmx.value("kafka.cluster:type=Partition,name=UnderMinIsr,topic=refbin-underminisr,partition=0") == 0
    assert jmx.value("kafka.server:type=ReplicaManager,name=AtMinIsrPartitionCount") == 5


def test_attribute_descriptions_are_the_ones_jmx_exporter_printed(jmx, reference_dir):
    """jmx_exporter's HELP is '<attribute description> <domain>:name=..,type=..,attribute=..' (the
    description is left out when it is empty)."""
    help_re = re.compile(r"^# HELP \S+ (?:(.*) )?(kafka\.[\w.]+):name=([^,]*),type=([^,]*),attribute=(.+)$")
    expected: dict[tuple[str, str, str | None, str], str] = {}
    for line in (reference_dir / "jmx_exporter-0.17.2-standalone-metrics.txt").read_text().splitlines():
        m = help_re.match(line)
        if m:
            desc, domain, name, type_, attr = m.groups()
            expected[(domain, type_, None if name == "null" else name, attr)] = desc or ""
    assert len(expected) > 500
    infos = {}
    for on in jmx.names("kafka.*:*"):
        domain, _, props = on.partition(":")
        keys = dict(kv.split("=", 1) for kv in props.split(","))
        infos.setdefault((domain, keys["type"], keys.get("name")), jmx.info(on))
    problems = []
    for (domain, type_, name, attr), desc in expected.items():
        info = infos.get((domain, type_, name))
        if info is None:
            problems.append(f"no bean for HELP of {domain}:{type_}:{name}")
            continue
        got = {a: d for a, _t, d in info[1]}
        if attr in got and got[attr] != desc and not (desc == "" and got[attr] in ("", attr)):
            problems.append(f"{domain}:type={type_},name={name} {attr}: {got[attr]!r} != {desc!r}")
    assert problems == []
    cls, attrs = jmx.info("kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions")
    assert (cls, attrs) == ("com.yammer.metrics.reporting.JmxReporter$Gauge",
                            [("Value", "java.lang.Object", "Attribute exposed for management")])


def test_query_with_a_value_filter_is_evaluated_inside_the_simulator(jmx):
    at_min = jmx.names_where_value("kafka.cluster:type=Partition,name=AtMinIsr,*", 1)
    assert len(at_min) == 5
    assert jmx.names_where_value("kafka.cluster:type=Partition,name=UnderMinIsr,*", 1) == []
    assert jmx.names_where_value("kafka.server:type=ReplicaManager,*", 5) == sorted([
        "kafka.server:type=ReplicaManager,name=AtMinIsrPartitionCount",
        "kafka.server:type=ReplicaManager,name=LeaderCount",
        "kafka.server:type=ReplicaManager,name=PartitionCount"])


def test_per_topic_meters_exist_only_for_the_topic_with_traffic(jmx, served):
    assert jmx.exists("kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec,topic=refbin-test")
    assert not jmx.exists("kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec,topic=refbin-underminisr")
    assert not jmx.exists("kafka.server:type=BrokerTopicMetrics,name=BytesOutPerSec,topic=refbin-test")
    assert jmx.count("kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec,topic=refbin-test") == 30
    assert jmx.count("kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec") == 3000
    assert jmx.get("kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec", "RateUnit") == "SECONDS"
    assert jmx.get("kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec", "EventType") == "bytes"


def test_java_platform_beans_are_served_too(jmx):
    assert jmx.exists("java.lang:type=Memory")
    assert jmx.exists("java.lang:type=Runtime")
