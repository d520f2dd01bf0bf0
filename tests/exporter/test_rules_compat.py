"""The rule engine and the text format against what jmx_exporter printed for a real Kafka 4.1 node.

The expectations for Strimzi's and Confluent's rules are worked out by hand from the rule files
(the derivation is in the comments), with values read from the MBean dump.
"""
import functools

import pytest

from kafka_jmx_sidecar.exporter.output.exposition import render_text
from kafka_jmx_sidecar.exporter.rule_engine import RuleEngine, load_config, parse_config

from .refdump import (KAFKA_41, RULES, descriptions_from_capture, jmx_exporter_order, read_dump, read_exposition,
                      read_raw)

CAPTURE_TEXT = (KAFKA_41 / "jmx_exporter-0.17.2-standalone-metrics.txt").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def capture():
    return read_exposition(CAPTURE_TEXT)


@pytest.fixture(scope="module")
def mbeans():
    return jmx_exporter_order(read_dump(descriptions_from_capture(CAPTURE_TEXT)))


@functools.lru_cache(maxsize=None)
def _raw_by_name() -> dict:
    return {name: {a.name: a.value for a in attributes} for name, _cls, attributes in read_raw()}


def dump_value(object_name: str, attribute: str):
    return _raw_by_name()[object_name][attribute]


def test_dump_is_complete(mbeans):
    assert len(mbeans) == 1028
    assert sum(len(m.attributes) for m in mbeans) == 9559


def test_default_naming_reproduces_jmx_exporter_0_17_2(capture, mbeans):
    samples = RuleEngine(parse_config("")).samples(mbeans)
    ours = read_exposition(render_text(samples).decode())
    theirs = {key: value for key, value in capture.series.items() if key[0].startswith("kafka_")}
    assert len(theirs) == 9414
    # Every kafka.* series, with the same name and the same labels in the same order...
    assert set(theirs) - set(ours.series) == set()
    # ... and nothing else (the string and enum attributes are dropped, as 0.17.2 does).
    assert set(ours.series) - set(theirs) == set()
    helps_by_family: dict[str, set[str]] = {}
    for s in samples:
        helps_by_family.setdefault(s.name, set()).add(s.help)
    # The reference data replaced the broker's real log directory in some ObjectNames, which moved
    # those MBeans in jmx_exporter's HashSet: for their families the first sample is unknowable.
    anonymised = {name for name, labels in theirs if any("/var/lib/kafka/data" in v for _, v in labels)}
    exact = 0
    for name, family in capture.families.items():
        if not name.startswith("kafka_"):
            continue
        assert ours.families[name]["type"] == family["type"] == "untyped"
        if name in anonymised:
            assert family["help"] in helps_by_family[name]
        else:
            assert ours.families[name]["help"] == family["help"], name
            exact += 1
    assert (exact, len(anonymised)) == (622, 2)  # of 624 kafka_ families


def test_values_match_the_capture_where_the_dump_saw_the_same_number(capture, mbeans):
    # The dump and the capture were taken moments apart: gauges that do not move must agree.
    ours = read_exposition(render_text(RuleEngine(parse_config("")).samples(mbeans)).decode())
    for key in [("kafka_server_ReplicaManager_Value", (("name", "PartitionCount"),)),
                ("kafka_controller_KafkaController_Value", (("name", "GlobalTopicCount"),)),
                ("kafka_cluster_Partition_Value", (("name", "UnderMinIsr"), ("topic", "refbin-underminisr"), ("partition", "0"))),
                ("kafka_log_LogManager_Value", (("name", "LogDirectoryOffline"), ("logDirectory", '\\"/var/lib/kafka/data\\"')))]:
        assert ours.series[key] == capture.series[key], key


# --- Strimzi -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def strimzi(mbeans):
    engine = RuleEngine(load_config(RULES / "strimzi-kafka-metrics.yml"))
    samples = engine.samples(mbeans)
    return samples, render_text(samples).decode(), engine


def test_strimzi_replica_manager(strimzi):
    # Rules 0-15 need clientId/listener/cipher keys, "Percent"/"PerSec" in the name, or more keys;
    # rule 16 `kafka.(\w+)<type=(.+), name=(.+)><>Value` -> kafka_$1_$2_$3, GAUGE, then lowercased.
    _, text, _ = strimzi
    assert ("# HELP kafka_server_replicamanager_underreplicatedpartitions Attribute exposed for management "
            "kafka.server:name=UnderReplicatedPartitions,type=ReplicaManager,attribute=Value\n"
            "# TYPE kafka_server_replicamanager_underreplicatedpartitions gauge\n"
            "kafka_server_replicamanager_underreplicatedpartitions 0.0\n") in text
    assert "\nkafka_server_replicamanager_partitioncount 5.0\n" in text


def test_strimzi_partition_gauges(strimzi):
    # Rule 14 `name=(.+), (.+)=(.+), (.+)=(.+)><>Value`: labels "$4": "$5", "$6": "$7", sorted as
    # "$4" < "$6", so topic then partition.
    _, text, _ = strimzi
    assert "# TYPE kafka_cluster_partition_underminisr gauge\n" in text
    assert 'kafka_cluster_partition_underminisr{topic="refbin-underminisr",partition="1",} 0.0\n' in text
    assert 'kafka_cluster_partition_insyncreplicascount{topic="refbin-test",partition="2",} 1.0\n' in text


def test_strimzi_per_second_counters(strimzi):
    # Rule 13 `name=(.+)PerSec\w*><>Count` -> kafka_$1_$2_$3_total COUNTER; with a topic key, rule 12.
    _, text, _ = strimzi
    count = dump_value("kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec", "Count")
    assert ("# TYPE kafka_server_brokertopicmetrics_bytesin_total counter\n" in text)
    assert f"\nkafka_server_brokertopicmetrics_bytesin_total {float(count)}\n" in text
    assert f'kafka_server_brokertopicmetrics_bytesin_total{{topic="refbin-test",}} {float(count)}\n' in text


def test_strimzi_histograms_emulate_summaries(strimzi):
    # 99thPercentile: rule 20 `name=(.+), (.+)=(.*)><>(\d+)thPercentile`, quantile "0.$6".
    # Count: rule 19 `name=(.+), (.+)=(.+)><>Count` -> kafka_$1_$2_$3_count COUNTER, whose
    # HELP/TYPE lines simpleclient names ..._count_total.
    _, text, _ = strimzi
    p99 = dump_value("kafka.network:type=RequestMetrics,name=TotalTimeMs,request=Produce", "99thPercentile")
    assert f'kafka_network_requestmetrics_totaltimems{{request="Produce",quantile="0.99",}} {p99}\n' in text
    assert "# TYPE kafka_network_requestmetrics_totaltimems gauge\n" in text
    assert "# TYPE kafka_network_requestmetrics_totaltimems_count_total counter\n" in text
    assert 'kafka_network_requestmetrics_totaltimems_count{request="Produce",} 1.0\n' in text


def test_strimzi_percent_and_listener_rules(strimzi):
    _, text, _ = strimzi
    # Rule 8 `name=(.+)Percent\w*><>MeanRate` -> kafka_$1_$2_$3_percent.
    mean = dump_value("kafka.server:type=KafkaRequestHandlerPool,name=RequestHandlerAvgIdlePercent", "MeanRate")
    assert f"\nkafka_server_kafkarequesthandlerpool_requesthandleravgidle_percent {mean}\n" in text
    # Rule 5 `kafka.server<type=(.+), listener=(.+), networkProcessor=(.+)><>(.+):` GAUGE.
    count = dump_value("kafka.server:type=socket-server-metrics,listener=PLAINTEXT,networkProcessor=0", "connection-count")
    assert f'kafka_server_socket_server_metrics_connection_count{{listener="PLAINTEXT",networkProcessor="0",}} {count}\n' in text
    # Rule 4 `(.+-total):` COUNTER: the name already ends in _total.
    assert "# TYPE kafka_server_socket_server_metrics_connection_creation_total counter\n" in text


def test_strimzi_raft_state_string_becomes_a_label(strimzi):
    # Rule 24 `kafka.server<type=raft-metrics><>(current-state): (.+)`, value 1, label $1: $2.
    samples, text, _ = strimzi
    assert dump_value("kafka.server:type=raft-metrics", "current-state") == "leader"
    assert "# TYPE kafka_server_raftmetrics_current_state untyped\n" in text
    assert 'kafka_server_raftmetrics_current_state{current_state="leader",} 1.0\n' in text


def test_strimzi_steady_state_is_all_cache_hits(strimzi, mbeans):
    samples, _, engine = strimzi
    misses = engine.stats.cache_misses
    again = engine.samples(mbeans)
    assert engine.stats.cache_misses == misses
    assert len(again) == len(samples)
    # the same values give back the very same Sample objects (NaN never equals itself)
    assert all(a is b for a, b in zip(again, samples) if a.value == a.value)


# --- Confluent ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def confluent(mbeans):
    config = load_config(RULES / "confluent-kafka-broker.yml")
    wanted = [m for m in mbeans if config.wants_mbean(m.name)]  # the JMX edge's query does this
    samples = RuleEngine(config).samples(wanted)
    kept = {m.name for m in wanted}
    return samples, render_text(samples).decode(), sorted(str(m.name) for m in mbeans if m.name not in kept)


def test_confluent_excludes(confluent):
    _, text, excluded = confluent
    # blacklisted: kafka.server:type=app-info,id=1 (not kafka.server:type=app-info, which has no
    # id) and kafka.server:type=kafka-metrics-count
    assert excluded == ["kafka.server:type=app-info,id=1", "kafka.server:type=kafka-metrics-count"]
    assert "kafka_metrics_count" not in text


def test_confluent_partition_rule_is_cached_and_sorts_its_labels(confluent):
    # Rule 3 `kafka.(\w+)<type=(.+), name=(.+), topic=(.+), partition=(.+)><>Value`, GAUGE,
    # labels {topic, partition} sorted: partition first.
    _, text, _ = confluent
    assert 'kafka_cluster_partition_underreplicated{partition="0",topic="refbin-test",} 0.0\n' in text


def test_confluent_untyped_and_mixed_families(confluent):
    _, text, _ = confluent
    # Rule 13 `kafka.(\w+)<type=(.+), name=(.+)><>(Count|Value)`: no type.
    assert "# TYPE kafka_server_replicamanager_underreplicatedpartitions untyped\n" in text
    # Count (rule 11, untyped) and 99thPercentile (rule 19, GAUGE) share one name: untyped family.
    p99 = dump_value("kafka.network:type=RequestMetrics,name=TotalTimeMs,request=Produce", "99thPercentile")
    assert "# TYPE kafka_network_requestmetrics_totaltimems untyped\n" in text
    assert 'kafka_network_requestmetrics_totaltimems{request="Produce",} 1.0\n' in text
    assert f'kafka_network_requestmetrics_totaltimems{{request="Produce",quantile="0.99",}} {p99}\n' in text
