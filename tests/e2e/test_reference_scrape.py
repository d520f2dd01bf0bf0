"""The simulator posing as the captured Kafka 4.1 node, scraped over JMX by the sidecar with no
rules: every `kafka.*` series jmx_exporter 0.17.2 printed for the real node comes out with the
same name, labels (in the same order), TYPE and HELP. Values aside: the simulator's meters and
histograms do not replay the real node's traffic."""
from __future__ import annotations

import pytest

from kafka_jmx_sidecar.exporter.poll.collector import Collector
from kafka_jmx_sidecar.exporter.source.broker import JmxSource
from kafka_jmx_sidecar.exporter.config.load import broker_settings
from kafka_jmx_sidecar.exporter.rule_engine.config import parse_config
from kafka_jmx_sidecar.exporter.config.sidecar import SidecarSettings
from kafka_jmx_sidecar.mbeans.simulator import Simulator, cluster
from tests.e2e.sidecar_harness import host_port
from tests.exporter.refdump import KAFKA_41, read_exposition


@pytest.fixture(scope="module")
def scraped():
    with Simulator.start(cluster.reference_4_1(), kafka_version="4.1") as sim:
        # The captured node had taken produce requests on refbin-test, which is what creates
        # Kafka's per-topic BrokerTopicMetrics beans.
        sim.produce("refbin-test", bytes=9499, messages=100)
        config = parse_config(f"hostPort: {host_port(sim.url)}\n", source="reference.yml")
        settings = SidecarSettings()
        collector = Collector(lambda c: JmxSource(c, broker_settings(c, settings)), config, settings)
        assert collector.poll_once(), collector.last_error
        text = collector.snapshot.bodies["text"].decode()
        collector.close()
    return read_exposition(text)


@pytest.fixture(scope="module")
def capture():
    return read_exposition((KAFKA_41 / "jmx_exporter-0.17.2-standalone-metrics.txt").read_text(encoding="utf-8"))


def test_every_kafka_series_of_the_capture_is_served(scraped, capture):
    theirs = {key for key in capture.series if key[0].startswith("kafka_")}
    ours = {key for key in scraped.series if key[0].startswith("kafka_")}
    assert len(theirs) == 9414
    missing = sorted(theirs - ours)
    assert missing == [], f"{len(missing)} series missing, e.g. {missing[:5]}"


def test_types_and_help_match_the_capture(scraped, capture):
    # The reference data replaced the broker's log directory in some ObjectNames, which moved those
    # MBeans in jmx_exporter's HashSet order: for those families the first MBean, whose name the
    # HELP line carries, cannot be known.
    anonymised = {name for name, labels in capture.series if any("/var/lib/kafka/data" in v for _, v in labels)}
    wrong_help = []
    for name, family in capture.families.items():
        if not name.startswith("kafka_"):
            continue
        assert scraped.families[name]["type"] == family["type"], name
        if name not in anonymised and scraped.families[name]["help"] != family["help"]:
            wrong_help.append((name, scraped.families[name]["help"], family["help"]))
    assert wrong_help == []


def test_values_that_do_not_move_match_the_capture(scraped, capture):
    for key in [("kafka_server_ReplicaManager_Value", (("name", "PartitionCount"),)),
                ("kafka_server_ReplicaManager_Value", (("name", "AtMinIsrPartitionCount"),)),
                ("kafka_controller_KafkaController_Value", (("name", "GlobalTopicCount"),)),
                ("kafka_controller_KafkaController_Value", (("name", "GlobalPartitionCount"),)),
                ("kafka_cluster_Partition_Value", (("name", "AtMinIsr"), ("topic", "refbin-underminisr"),
                                                   ("partition", "0")))]:
        assert scraped.series[key] == capture.series[key], key
