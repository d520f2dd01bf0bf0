"""The cluster model's behaviour over JMX: captured multi-broker states, meters, placeholders,
queries at a few thousand partitions, and the errors events can raise."""
from __future__ import annotations

import math
import re

import pytest

from kafka_jmx_sidecar.mbeans import recompute
from kafka_jmx_sidecar.mbeans.health import PartitionState
from kafka_jmx_sidecar.mbeans.simulator import SimulatorError, cluster

RM = "kafka.server:type=ReplicaManager,name="
BTM = "kafka.server:type=BrokerTopicMetrics,name="
CTRL = "kafka.controller:type=KafkaController,name="


def captured_values(path) -> dict[str, int]:
    values, name = {}, None
    for line in path.read_text().splitlines():
        m = re.match(r"^(kafka\.\S+)   \[", line)
        if m:
            name = m.group(1)
        m = re.match(r"^    (Value|Count) : \S+ = (-?\d+)  \(", line)
        if m and name:
            values[name] = int(m.group(2))
    return values


def test_second_broker_down_matches_the_capture(simulators, connect, reference_dir):
    """../reference/kafka-4.1/scenario-broker2-down-broker1-jmx.txt: nodes 1 (broker+controller)
    and 2 (broker); refbin-test and refbin-underminisr on 1, refbin-rf2 (RF 2, min ISR 2) on both,
    two of its partitions preferring 2; then node 2 stops."""
    c = cluster.reference_4_1()
    c["brokers"] = [1, 2]
    c["topics"].append({"name": "refbin-rf2", "config": {"min.insync.replicas": 2}, "partitions": [
        {"replicas": [2, 1], "isr": [2, 1], "leader": 2}, {"replicas": [1, 2], "isr": [1, 2], "leader": 1},
        {"replicas": [2, 1], "isr": [2, 1], "leader": 2}]})
    sim = simulators.start(c, serve="all")
    sim.fail_broker(2)
    jmx = connect(sim.url)
    captured = captured_values(reference_dir / "scenario-broker2-down-broker1-jmx.txt")
    compared = 0
    for name, value in captured.items():
        if "ProducerIdCount" in name or "BrokerRegistrationState" in name or not re.search(
                r"type=(ReplicaManager|Partition)|KafkaController,name=(OfflinePartitions|ActiveController|"
                r"PreferredReplicaImbalance|GlobalPartition|GlobalTopic|ActiveBroker|FencedBroker)Count", name):
            continue
        attr = "Count" if name.endswith("PerSec") else "Value"
        assert jmx.get(name, attr) == value, name
        compared += 1
    assert compared == 12 - 1 + 18 + 7
    assert jmx.value(RM + "UnderReplicatedPartitions") == 3 and jmx.value(RM + "UnderMinIsrPartitionCount") == 3
    assert jmx.count(RM + "IsrShrinksPerSec") == 0  # under KRaft the controller shrank the ISR


def test_a_broker_only_node_serves_no_controller_mbeans(simulators, connect, reference_dir):
    """../reference/kafka-4.1/broker2-brokeronly-names.txt: node 2 after refbin-test moved to it."""
    c = {"brokers": [1, 2], "controllers": [1], "topics": [
        {"name": "refbin-test", "partitions": [{"replicas": [2]}] * 3},
        {"name": "refbin-rf2", "config": {"min.insync.replicas": 2},
         "partitions": [{"replicas": [2, 1]}, {"replicas": [1, 2]}, {"replicas": [2, 1]}]}]}
    sim = simulators.start(c, broker=2)
    jmx = connect(sim.url)
    sections, pattern = {}, None
    for line in (reference_dir / "broker2-brokeronly-names.txt").read_text().splitlines():
        m = re.match(r"^### pattern (\S+) -> (\d+) MBeans", line)
        if m:
            pattern = m.group(1)
            sections[pattern] = []
        elif line.startswith("kafka"):
            sections[pattern].append(line)
    assert set(sections) == {"kafka.controller:*", "kafka.server:type=ReplicaManager,*",
                             "kafka.cluster:type=Partition,name=UnderMinIsr,*"}
    for pattern, names in sections.items():
        assert jmx.names(pattern) == sorted(names), pattern
    assert connect(sim.urls[2]).names("kafka.controller:*") == []


@pytest.fixture(scope="module")
def meters_sim(module_simulators):
    c = {"brokers": [1, 2], "controllers": [1], "topics": [
        {"name": "steady", "partitions": [{"replicas": [1, 2], "isr": [1, 2], "leader": 1}]}]}
    return module_simulators.start(c, serve="all", clock="manual")


def test_meters_are_yammer_ewmas_on_the_simulated_clock(meters_sim, connect):
    sim = meters_sim
    leader, follower = connect(sim.urls[1]), connect(sim.urls[2])
    sim.set_traffic("steady", bytes_in_per_sec=1000, messages_in_per_sec=10)
    sim.advance(60)
    bytes_in = BTM + "BytesInPerSec"
    assert leader.count(bytes_in) == 60_000
    assert leader.count(BTM + "MessagesInPerSec,topic=steady") == 600
    assert follower.count(BTM + "ReplicationBytesInPerSec") == 60_000
    assert leader.count(BTM + "ReplicationBytesOutPerSec") == 60_000
    # Steady load: every 5 s tick sees the same rate, so all three moving averages equal it.
    for attr in ("OneMinuteRate", "FiveMinuteRate", "FifteenMinuteRate", "MeanRate"):
        assert leader.get(bytes_in, attr) == pytest.approx(1000.0, rel=1e-9), attr
    # Per-topic meters live on the leader only, and only for traffic that happened.
    assert leader.exists(bytes_in + ",topic=steady")
    assert not follower.exists(bytes_in + ",topic=steady")
    assert not leader.exists(BTM + "BytesOutPerSec,topic=steady")
    # Load stops: each further 5 s tick multiplies a rate by exp(-5 s / its window). A read ticks
    # the meter (Yammer's tickIfNecessary) only when MORE than 5 s passed since the last tick, so
    # reading again 6 s later sees exactly one more tick.
    sim.set_traffic("steady")
    sim.advance(30)
    before = {a: leader.get(bytes_in, a) for a in ("OneMinuteRate", "FiveMinuteRate", "FifteenMinuteRate")}
    sim.advance(6)
    for attr, window in (("OneMinuteRate", 60), ("FiveMinuteRate", 300), ("FifteenMinuteRate", 900)):
        assert leader.get(bytes_in, attr) == pytest.approx(before[attr] * math.exp(-5 / window), rel=1e-9), attr
    assert leader.get(bytes_in, "MeanRate") == pytest.approx(60_000 / 96, rel=1e-9)
    assert leader.count(bytes_in) == 60_000
    assert leader.get(bytes_in, "RateUnit") == "SECONDS"


def test_placeholder_replicas(simulators, connect):
    """The never-shipped KIP: with fewer live brokers than the replication factor a topic gets
    placeholders (-1, -2, ...), is under-replicated, and a broker that joins takes their place."""
    sim = simulators.start({"brokers": [1, 2, 3], "controllers": [1], "topics": []}, serve="all", clock="manual")
    sim.fail_broker(3)
    with pytest.raises(SimulatorError, match="allow_under_replicated"):
        sim.create_topic("held", 2, replication_factor=3, min_isr=2)
    with pytest.raises(SimulatorError, match="min\\(min_isr, RF\\) = 3"):
        sim.create_topic("held", 2, replication_factor=3, min_isr=3, allow_under_replicated=True)
    sim.create_topic("held", 2, replication_factor=3, min_isr=2, allow_under_replicated=True)
    states = sim.partition_states()
    assert [s.replicas for s in states] == [(1, 2, -1), (2, 1, -1)]
    assert [s.isr for s in states] == [(1, 2), (2, 1)]
    one = connect(sim.urls[1])
    assert one.value(RM + "UnderReplicatedPartitions") == 1
    assert one.value(RM + "AtMinIsrPartitionCount") == 1  # ISR 2 == min(2, 3 replicas)
    assert one.value("kafka.cluster:type=Partition,name=ReplicasCount,topic=held,partition=0") == 3
    sim.restore_broker(3)
    assert [s.replicas for s in sim.partition_states()] == [(1, 2, 3), (2, 1, 3)]
    assert [s.isr for s in sim.partition_states()] == [(1, 2, 3), (2, 1, 3)]
    assert one.value(RM + "UnderReplicatedPartitions") == 0
    assert connect(sim.urls[3]).names("kafka.cluster:type=Partition,name=UnderReplicated,*") == [
        "kafka.cluster:type=Partition,name=UnderReplicated,topic=held,partition=0",
        "kafka.cluster:type=Partition,name=UnderReplicated,topic=held,partition=1"]


def test_value_filtered_queries_find_the_unhealthy_partitions_among_thousands(simulators, connect):
    sim = simulators.start(partitions=3000, serve="all", clock="manual")
    sim.fail_broker(3)
    expected = recompute.cluster_values(sim.partition_states(), version="4.1", live_brokers={1, 2})
    # Every partition had a replica on 3 (RF 3 on 3 brokers); the thousand it led ([3, 1, 2]) moved
    # to broker 1, the next replica: 1 now leads 2000 under-replicated partitions, 2 leads 1000.
    for b, led in ((1, 2000), (2, 1000)):
        jmx = connect(sim.urls[b])
        urp = jmx.names_where_value("kafka.cluster:type=Partition,name=UnderReplicated,*", 1)
        want = sorted(f"kafka.cluster:type=Partition,name=UnderReplicated,topic={t},partition={p}"
                      for (t, p), v in expected.brokers[b].partitions.items() if v["UnderReplicated"])
        assert urp == want and len(urp) == led
        assert jmx.value(RM + "UnderReplicatedPartitions") == led
        assert jmx.value(RM + "PartitionCount") == 3000


def test_events_kafka_would_refuse_are_refused_with_the_reason(meters_sim):
    sim = meters_sim
    with pytest.raises(SimulatorError, match="a leader never drops itself"):
        sim.shrink_isr("steady", 0, 1)
    with pytest.raises(SimulatorError, match="no topic 'nope'"):
        sim.set_min_isr("nope", 2)
    with pytest.raises(SimulatorError, match="has no partition 7"):
        sim.expand_isr("steady", 7, 2)
    with pytest.raises(SimulatorError, match="9 is not a broker of the cluster"):
        sim.start_reassignment("steady", 0, [9])
    with pytest.raises(SimulatorError, match="node 1 is not failed"):
        sim.restore_broker(1)
    with pytest.raises(SimulatorError, match="unknown event 'explode'"):
        sim.apply({"op": "explode"})
    with pytest.raises(SimulatorError, match="is not being reassigned"):
        sim.complete_reassignment("steady", 0)


def test_partition_states_are_health_partition_states(meters_sim):
    (state,) = meters_sim.partition_states()
    assert state == PartitionState(topic="steady", partition=0, leader=1, replicas=(1, 2), isr=(1, 2),
                                   min_isr=1, live_brokers=frozenset({1, 2}))
