"""Recompute of the broker and cluster health MBean values from partition states.

From which broker reports what, the release each MBean appeared in, what live brokers showed,
and a capture of a real Kafka 4.1 broker's JMX (broker 1 while broker 2 was down). Every expected
number below was worked out by hand from those; the comments show the arithmetic.
"""
from __future__ import annotations

import pytest

from kafka_jmx_sidecar.mbeans.health import KAFKA_2_5, LEGACY, TOPIC_COMMAND, PartitionState
from kafka_jmx_sidecar.mbeans.recompute import cluster_values

URP, UMI, AMI, REASS, LEADERS, PARTS = (
    "UnderReplicatedPartitions", "UnderMinIsrPartitionCount", "AtMinIsrPartitionCount",
    "ReassigningPartitions", "LeaderCount", "PartitionCount")
OFFLINE = "OfflinePartitionsCount"


def P(topic, partition, leader, replicas, isr, min_isr=1, adding=(), removing=()):
    return PartitionState(topic, partition, leader, tuple(replicas), tuple(isr), tuple(adding),
                          tuple(removing), min_isr, None)


# --- which names a broker of each version serves --------------------------------------------------

RM_NAMES = {
    # 0.8.0: UnderReplicatedPartitions, LeaderCount, PartitionCount; 1.0.0: UnderMinIsrPartitionCount,
    # OfflineReplicaCount; 2.3.0: AtMinIsrPartitionCount; 2.5.0: ReassigningPartitions;
    # 3.2.0: PartitionsWithLateTransactionsCount; 3.5.0: ProducerIdCount.
    "2.2": {URP, UMI, LEADERS, PARTS, "OfflineReplicaCount"},
    "2.4": {URP, UMI, AMI, LEADERS, PARTS, "OfflineReplicaCount"},
    "3.6": {URP, UMI, AMI, REASS, LEADERS, PARTS, "OfflineReplicaCount",
            "PartitionsWithLateTransactionsCount", "ProducerIdCount"},
    "4.1": {URP, UMI, AMI, REASS, LEADERS, PARTS, "OfflineReplicaCount",
            "PartitionsWithLateTransactionsCount", "ProducerIdCount"},
}
PARTITION_NAMES = {
    # UnderReplicated 0.8.2, UnderMinIsr 1.0.0, AtMinIsr 2.3.0, InSyncReplicasCount and
    # ReplicasCount 0.10.2 (LastStableOffsetLag is not a health value: not recomputed).
    "2.2": {"UnderReplicated", "UnderMinIsr", "InSyncReplicasCount", "ReplicasCount"},
    "2.4": {"UnderReplicated", "UnderMinIsr", "AtMinIsr", "InSyncReplicasCount", "ReplicasCount"},
    "3.6": {"UnderReplicated", "UnderMinIsr", "AtMinIsr", "InSyncReplicasCount", "ReplicasCount"},
    "4.1": {"UnderReplicated", "UnderMinIsr", "AtMinIsr", "InSyncReplicasCount", "ReplicasCount"},
}
CONTROLLER_NAMES = {
    # OfflinePartitionsCount, ActiveControllerCount 0.8.0; PreferredReplicaImbalanceCount 0.8.2;
    # GlobalPartitionCount, GlobalTopicCount 1.1.0; ActiveBrokerCount, FencedBrokerCount 2.8.0.
    "2.2": {OFFLINE, "ActiveControllerCount", "PreferredReplicaImbalanceCount",
            "GlobalPartitionCount", "GlobalTopicCount"},
    "4.1": {OFFLINE, "ActiveControllerCount", "PreferredReplicaImbalanceCount",
            "GlobalPartitionCount", "GlobalTopicCount", "ActiveBrokerCount", "FencedBrokerCount"},
}

# --- a three-broker cluster with something of everything ------------------------------------------

CLUSTER = [
    # orders, min ISR 2, RF 3, one partition led by each broker
    P("orders", 0, 1, [1, 2, 3], [1, 2, 3], min_isr=2),  # healthy
    P("orders", 1, 2, [2, 3, 1], [2, 3], min_isr=2),  # 3-2>0 URP; 2 == 2 at min
    P("orders", 2, 3, [3, 1, 2], [3], min_isr=2),  # URP; 1 < 2 under min
    # payments, min ISR 2, RF 2, full ISR: 2 == 2 at min (every version with AtMinIsr)
    P("payments", 0, 1, [1, 2], [1, 2], min_isr=2),
    # logs, min ISR 3 over RF 2, full ISR: 3.7+: min(3, 2) = 2 == 2 at min; before: 2 < 3 under min
    P("logs", 0, 2, [2, 3], [2, 3], min_isr=3),
    # moving: [1,2] -> [1,3]; 3 adding (not caught up), 2 removing. 2.5+: rf 3-1 = 2, 2 in sync,
    # not URP, reassigning. Before 2.5: 2 < 3 URP.
    P("moving", 0, 1, [1, 2, 3], [1, 2], min_isr=1, adding=[3], removing=[2]),
    # dead: RF 1 on broker 3, no leader (last ISR member kept): offline, on no broker gauge
    P("dead", 0, None, [3], [3]),
]

# What each broker's ReplicaManager reads, per version (only the health names; LeaderCount and
# PartitionCount too). Leaders: broker 1 orders-0, payments-0, moving-0; broker 2 orders-1, logs-0;
# broker 3 orders-2. Hosted replicas: broker 1 orders x3, payments-0, moving-0 = 5;
# broker 2 orders x3, payments-0, logs-0, moving-0 = 6; broker 3 orders x3, logs-0, moving-0, dead-0 = 6.
CLUSTER_RM = {
    "4.1": {  # kafka-3.7
        1: {URP: 0, UMI: 0, AMI: 1, REASS: 1, LEADERS: 3, PARTS: 5},  # payments at min; moving
        2: {URP: 1, UMI: 0, AMI: 2, REASS: 0, LEADERS: 2, PARTS: 6},  # orders-1 URP+at; logs at
        3: {URP: 1, UMI: 1, AMI: 0, REASS: 0, LEADERS: 1, PARTS: 6},  # orders-2
    },
    "3.6": {  # kafka-2.5: logs-0 is under min ISR (2 < 3) instead of at min
        1: {URP: 0, UMI: 0, AMI: 1, REASS: 1, LEADERS: 3, PARTS: 5},
        2: {URP: 1, UMI: 1, AMI: 1, REASS: 0, LEADERS: 2, PARTS: 6},
        3: {URP: 1, UMI: 1, AMI: 0, REASS: 0, LEADERS: 1, PARTS: 6},
    },
    "2.4": {  # legacy: moving-0 is URP; no ReassigningPartitions gauge yet
        1: {URP: 1, UMI: 0, AMI: 1, LEADERS: 3, PARTS: 5},
        2: {URP: 1, UMI: 1, AMI: 1, LEADERS: 2, PARTS: 6},
        3: {URP: 1, UMI: 1, AMI: 0, LEADERS: 1, PARTS: 6},
    },
    "2.2": {  # legacy, and no AtMinIsr gauges at all
        1: {URP: 1, UMI: 0, LEADERS: 3, PARTS: 5},
        2: {URP: 1, UMI: 1, LEADERS: 2, PARTS: 6},
        3: {URP: 1, UMI: 1, LEADERS: 1, PARTS: 6},
    },
}
CLUSTER_TOTALS = {
    "4.1": {URP: 2, UMI: 1, AMI: 3, REASS: 1, LEADERS: 6, OFFLINE: 1},
    "3.6": {URP: 2, UMI: 2, AMI: 2, REASS: 1, LEADERS: 6, OFFLINE: 1},
    "2.4": {URP: 3, UMI: 2, AMI: 2, LEADERS: 6, OFFLINE: 1},
    "2.2": {URP: 3, UMI: 2, LEADERS: 6, OFFLINE: 1},
}

# The leader's Partition gauges: (UnderReplicated, UnderMinIsr, AtMinIsr, InSyncReplicasCount,
# ReplicasCount). ReplicasCount on the leader is the rf WITHOUT adding replicas from 2.5 on
# (moving-0: 3 - 1 = 2), the full list before (3).
LEADER_PARTITIONS = {
    "4.1": {
        (1, "orders", 0): (0, 0, 0, 3, 3), (2, "orders", 1): (1, 0, 1, 2, 3),
        (3, "orders", 2): (1, 1, 0, 1, 3), (1, "payments", 0): (0, 0, 1, 2, 2),
        (2, "logs", 0): (0, 0, 1, 2, 2), (1, "moving", 0): (0, 0, 0, 2, 2),
    },
    "3.6": {
        (1, "orders", 0): (0, 0, 0, 3, 3), (2, "orders", 1): (1, 0, 1, 2, 3),
        (3, "orders", 2): (1, 1, 0, 1, 3), (1, "payments", 0): (0, 0, 1, 2, 2),
        (2, "logs", 0): (0, 1, 0, 2, 2), (1, "moving", 0): (0, 0, 0, 2, 2),
    },
    "2.4": {
        (1, "orders", 0): (0, 0, 0, 3, 3), (2, "orders", 1): (1, 0, 1, 2, 3),
        (3, "orders", 2): (1, 1, 0, 1, 3), (1, "payments", 0): (0, 0, 1, 2, 2),
        (2, "logs", 0): (0, 1, 0, 2, 2), (1, "moving", 0): (1, 0, 0, 2, 3),
    },
    "2.2": {  # no AtMinIsr: (UnderReplicated, UnderMinIsr, InSyncReplicasCount, ReplicasCount)
        (1, "orders", 0): (0, 0, 3, 3), (2, "orders", 1): (1, 0, 2, 3),
        (3, "orders", 2): (1, 1, 1, 3), (1, "payments", 0): (0, 0, 2, 2),
        (2, "logs", 0): (0, 1, 2, 2), (1, "moving", 0): (1, 0, 2, 3),
    },
}
PARTITION_ORDER = {
    "4.1": ("UnderReplicated", "UnderMinIsr", "AtMinIsr", "InSyncReplicasCount", "ReplicasCount"),
    "2.2": ("UnderReplicated", "UnderMinIsr", "InSyncReplicasCount", "ReplicasCount"),
}
# Followers' views: every Partition gauge reads 0 (non-zero only on the leader).
FOLLOWER_PARTITIONS = [
    (2, "orders", 0), (3, "orders", 0), (1, "orders", 1), (3, "orders", 1), (1, "orders", 2),
    (2, "orders", 2), (2, "payments", 0), (3, "logs", 0), (2, "moving", 0), (3, "moving", 0),
    (3, "dead", 0),
]
HOSTED = {
    1: {("orders", 0), ("orders", 1), ("orders", 2), ("payments", 0), ("moving", 0)},
    2: {("orders", 0), ("orders", 1), ("orders", 2), ("payments", 0), ("logs", 0), ("moving", 0)},
    3: {("orders", 0), ("orders", 1), ("orders", 2), ("logs", 0), ("moving", 0), ("dead", 0)},
}
VERSIONS = ("2.2", "2.4", "3.6", "4.1")


@pytest.mark.parametrize("version", VERSIONS)
def test_replica_manager_values_per_broker(version):
    values = cluster_values(CLUSTER, version=version)
    assert sorted(values.brokers) == [1, 2, 3]
    for broker, expected in CLUSTER_RM[version].items():
        rm = values.brokers[broker].replica_manager
        assert set(rm) == RM_NAMES[version], broker
        assert {k: rm[k] for k in expected} == expected, broker


@pytest.mark.parametrize("version", VERSIONS)
def test_cluster_totals(version):
    # Leader-counted gauges sum over brokers (each partition once, by its leader); the offline
    # count is the controller's, once for the cluster.
    assert cluster_values(CLUSTER, version=version).totals == CLUSTER_TOTALS[version]


@pytest.mark.parametrize("version", VERSIONS)
def test_partition_values_on_the_leader(version):
    values = cluster_values(CLUSTER, version=version)
    order = PARTITION_ORDER["2.2" if version == "2.2" else "4.1"]
    for (broker, topic, partition), expected in LEADER_PARTITIONS[version].items():
        gauges = values.brokers[broker].partitions[(topic, partition)]
        assert set(gauges) == PARTITION_NAMES[version]
        assert tuple(gauges[n] for n in order) == expected, (broker, topic, partition)


@pytest.mark.parametrize("version", VERSIONS)
def test_partition_values_elsewhere_are_zero(version):
    values = cluster_values(CLUSTER, version=version)
    for broker, topic, partition in FOLLOWER_PARTITIONS:
        gauges = values.brokers[broker].partitions[(topic, partition)]
        assert gauges == dict.fromkeys(PARTITION_NAMES[version], 0), (broker, topic, partition)
    for broker, hosted in HOSTED.items():
        assert set(values.brokers[broker].partitions) == hosted


def test_at_min_isr_names_absent_before_2_3():
    b = cluster_values(CLUSTER, version="2.2").brokers[2]
    assert AMI not in b.replica_manager and REASS not in b.replica_manager
    assert all("AtMinIsr" not in g for g in b.partitions.values())


def test_explicit_profile_overrides_the_version():
    # A 3.6 broker whose inter-broker protocol is below 2.4 judges as legacy.
    values = cluster_values(CLUSTER, version="3.6", profile=LEGACY)
    assert values.totals[URP] == 3  # moving-0 counts
    assert values.brokers[1].partitions[("moving", 0)]["ReplicasCount"] == 3
    assert cluster_values(CLUSTER, version="4.1", profile=KAFKA_2_5).totals[UMI] == 2


def test_topic_command_profile_is_refused():
    with pytest.raises(ValueError, match="topic-command"):
        cluster_values(CLUSTER, profile=TOPIC_COMMAND)


# --- the controller ---------------------------------------------------------------------------

def test_kraft_controllers_all_report_the_offline_count_and_the_total_is_the_max():
    values = cluster_values(CLUSTER, version="4.1", controllers=[1, 2, 3])
    for b in (1, 2, 3):
        c = values.brokers[b].controller
        assert set(c) == CONTROLLER_NAMES["4.1"]
        assert c[OFFLINE] == 1
        assert c["GlobalPartitionCount"] == 7
        assert c["GlobalTopicCount"] == 5  # orders, payments, logs, moving, dead
        assert c["ActiveBrokerCount"] == 3 and c["FencedBrokerCount"] == 0
    # exactly one active controller
    assert sorted(values.brokers[b].controller["ActiveControllerCount"] for b in (1, 2, 3)) == [0, 0, 1]
    assert values.totals[OFFLINE] == 1  # the max over controllers, not the sum (3)


def test_broker_only_kraft_nodes_have_no_controller_mbeans():
    values = cluster_values(CLUSTER, version="4.1", controllers=[1])
    assert values.brokers[1].controller[OFFLINE] == 1
    assert values.brokers[1].controller["ActiveControllerCount"] == 1
    assert values.brokers[2].controller is None
    assert values.brokers[3].controller is None


def test_no_controller_among_the_brokers():
    values = cluster_values(CLUSTER, version="4.1")
    assert all(b.controller is None for b in values.brokers.values())
    assert values.totals[OFFLINE] == 1


def test_zookeeper_only_the_active_controller_reports():
    # Kafka 2.2 is ZooKeeper-only: every broker is a controller candidate and serves the
    # KafkaController gauges, but only the active controller reports non-zero values
    # (on every broker under ZooKeeper, non-zero only on the active controller).
    values = cluster_values(CLUSTER, version="2.2", controllers=[1, 2, 3])
    active = values.brokers[1].controller
    assert set(active) == CONTROLLER_NAMES["2.2"]
    assert active[OFFLINE] == 1 and active["ActiveControllerCount"] == 1
    assert active["GlobalPartitionCount"] == 7 and active["GlobalTopicCount"] == 5
    for b in (2, 3):
        assert values.brokers[b].controller == dict.fromkeys(CONTROLLER_NAMES["2.2"], 0), b
    assert values.totals[OFFLINE] == 1


# --- a dead broker ------------------------------------------------------------------------------

DEAD_BROKER = [
    # broker 3 died; the controller moved leadership and shrank the ISRs; min ISR 2 over RF 3
    P("a", 0, 1, [1, 2, 3], [1, 2], min_isr=2),  # URP, at min
    P("a", 1, 1, [3, 1, 2], [1, 2], min_isr=2),  # was led by 3: URP, at min
    P("a", 2, 2, [2, 3, 1], [2, 1], min_isr=2),  # URP, at min
    P("b", 0, -1, [3], [3]),  # RF 1 on 3: leader -1, the last ISR member is kept
    P("c", 0, None, [3], []),  # RF 1 on 3 with ELR (4.1): empty ISR
]


def test_dead_broker():
    values = cluster_values(DEAD_BROKER, version="4.1", live_brokers=[1, 2],
                            registered_brokers=[1, 2, 3], controllers=[1])
    assert sorted(values.brokers) == [1, 2]  # a dead broker serves nothing
    rm1, rm2 = values.brokers[1].replica_manager, values.brokers[2].replica_manager
    assert {k: rm1[k] for k in (URP, UMI, AMI, REASS, LEADERS, PARTS)} == \
        {URP: 2, UMI: 0, AMI: 2, REASS: 0, LEADERS: 2, PARTS: 3}
    assert {k: rm2[k] for k in (URP, UMI, AMI, REASS, LEADERS, PARTS)} == \
        {URP: 1, UMI: 0, AMI: 1, REASS: 0, LEADERS: 1, PARTS: 3}
    assert values.totals == {URP: 3, UMI: 0, AMI: 3, REASS: 0, LEADERS: 3, OFFLINE: 2}
    c = values.brokers[1].controller
    assert c[OFFLINE] == 2
    assert c["ActiveBrokerCount"] == 2 and c["FencedBrokerCount"] == 1
    assert c["GlobalPartitionCount"] == 5 and c["GlobalTopicCount"] == 3
    assert values.brokers[1].partitions[("a", 1)] == {
        "UnderReplicated": 1, "UnderMinIsr": 0, "AtMinIsr": 1, "InSyncReplicasCount": 2, "ReplicasCount": 3}
    assert values.brokers[2].partitions[("a", 1)] == dict.fromkeys(PARTITION_NAMES["4.1"], 0)
    assert ("b", 0) not in values.brokers[1].partitions and ("b", 0) not in values.brokers[2].partitions


def test_broker_values_of_one_broker():
    brokers = cluster_values(DEAD_BROKER, version="4.1", live_brokers=[1, 2], controllers=[1]).brokers
    assert brokers.get(3) is None
    b2 = brokers.get(2)
    assert b2.broker == 2 and b2.replica_manager[URP] == 1 and b2.controller is None


def test_leaderless_partitions_show_only_in_the_offline_count():
    states = [P("x", 0, None, [1, 2, 3], [1, 2, 3], min_isr=2),
              P("x", 1, -1, [1, 2, 3], [2], min_isr=2)]
    for version in VERSIONS:
        values = cluster_values(states, version=version, controllers=[1])
        for b in values.brokers.values():
            assert b.replica_manager[URP] == b.replica_manager[UMI] == b.replica_manager[LEADERS] == 0
            assert b.replica_manager.get(AMI, 0) == 0
            assert all(v == 0 for g in b.partitions.values() for v in g.values())
            assert b.replica_manager[PARTS] == 2
        assert values.totals[OFFLINE] == 2
        assert values.brokers[1].controller[OFFLINE] == 2


# --- a real 4.1 broker's capture ------------------------------------------------------------------

REFERENCE_41 = (
    # refbin-test: 3 partitions, RF 1, default min ISR 1 -> healthy RF 1 is at min ISR (3)
    [P("refbin-test", p, 1, [1], [1]) for p in range(3)]
    # refbin-underminisr: 2 partitions, RF 1, min ISR 2 -> effective min 1: at min ISR (2)
    + [P("refbin-underminisr", p, 1, [1], [1], min_isr=2) for p in range(2)]
    # refbin-rf2: RF 2, min ISR 2, node 2 stopped: ISR [1] -> URP and under min ISR (3).
    # Two of them prefer node 2 (the capture's PreferredReplicaImbalanceCount is 2).
    + [P("refbin-rf2", 0, 1, [2, 1], [1], min_isr=2), P("refbin-rf2", 1, 1, [1, 2], [1], min_isr=2),
       P("refbin-rf2", 2, 1, [2, 1], [1], min_isr=2)]
)


def test_reference_capture_broker2_down():
    values = cluster_values(REFERENCE_41, version="4.1", live_brokers=[1], registered_brokers=[1, 2],
                            controllers=[1])
    assert sorted(values.brokers) == [1]
    rm = values.brokers[1].replica_manager
    # scenario-broker2-down-broker1-jmx.txt, node 1:
    assert {k: rm[k] for k in (AMI, LEADERS, PARTS, REASS, UMI, URP)} == \
        {AMI: 5, LEADERS: 8, PARTS: 8, REASS: 0, UMI: 3, URP: 3}
    for p in range(3):
        assert values.brokers[1].partitions[("refbin-rf2", p)] == {
            "AtMinIsr": 0, "InSyncReplicasCount": 1, "ReplicasCount": 2, "UnderMinIsr": 1,
            "UnderReplicated": 1}
    assert values.brokers[1].controller == {
        "ActiveBrokerCount": 1, "ActiveControllerCount": 1, "FencedBrokerCount": 1,
        "GlobalPartitionCount": 8, "GlobalTopicCount": 3, OFFLINE: 0,
        "PreferredReplicaImbalanceCount": 2}


def test_reference_reassignment_node1_to_node2():
    # scenario-reassignment-samples.txt: 3 partitions moving from node 1 to node 2 (RF 1):
    # ReassigningPartitions on node 1 reads 3 during the move and 0 after.
    during = [P("moved", p, 1, [2, 1], [1], adding=[2], removing=[1]) for p in range(3)]
    after = [P("moved", p, 2, [2], [2]) for p in range(3)]
    values = cluster_values(during, version="4.1")
    assert values.brokers[1].replica_manager[REASS] == 3
    assert values.brokers[2].replica_manager[REASS] == 0
    # rf 2 - 1 = 1, 1 in sync: not URP; ReplicasCount 1 on the leader; min(1, 2) = 1: at min
    assert values.brokers[1].replica_manager[URP] == 0
    assert values.brokers[1].replica_manager[AMI] == 3
    assert values.brokers[1].partitions[("moved", 0)]["ReplicasCount"] == 1
    assert values.brokers[2].replica_manager[PARTS] == 3  # the adding replica is hosted
    values = cluster_values(after, version="4.1", live_brokers=[1, 2])
    assert values.brokers[1].replica_manager[REASS] == 0
    assert values.brokers[1].replica_manager[PARTS] == 0
    assert values.brokers[2].replica_manager[LEADERS] == 3
    # The same move on a 2.4 broker: reported as URP, and no ReassigningPartitions gauge.
    values = cluster_values(during, version="2.4")
    assert values.brokers[1].replica_manager[URP] == 3
    assert REASS not in values.brokers[1].replica_manager


def test_placeholders_count_as_replicas_and_are_no_broker():
    states = [P("p", 0, 1, [1, 2, -1], [1, 2], min_isr=2)]
    values = cluster_values(states, version="4.1")
    assert sorted(values.brokers) == [1, 2]
    assert values.brokers[1].partitions[("p", 0)] == {
        "UnderReplicated": 1, "UnderMinIsr": 0, "AtMinIsr": 1, "InSyncReplicasCount": 2, "ReplicasCount": 3}
    assert values.totals[URP] == 1 and values.totals[AMI] == 1


def test_dedicated_kraft_controllers_report_the_controller_values_only():
    # brokers 1 and 2; nodes 3 and 4 are controllers only; p1 has lost its only replica's leader
    states = [PartitionState("t", 0, 1, (1, 2), (1, 2), min_isr=1),
              PartitionState("t", 1, None, (2,), (2,), min_isr=1)]
    cv = cluster_values(states, version="4.1", live_brokers={1}, registered_brokers={1, 2},
                        controllers=[3, 4], active_controller=4, metadata="kraft")
    assert set(cv.brokers) == {1, 3, 4}
    for node in (3, 4):
        assert cv.brokers[node].replica_manager == {} and cv.brokers[node].partitions == {}
        assert cv.brokers[node].controller["OfflinePartitionsCount"] == 1
        assert cv.brokers[node].controller["FencedBrokerCount"] == 1  # broker 2 registered, not live
    # leadership is sticky: the active controller is the one named, not the lowest
    assert cv.brokers[4].controller["ActiveControllerCount"] == 1
    assert cv.brokers[3].controller["ActiveControllerCount"] == 0
    assert cv.brokers[1].controller is None
    assert cv.totals["OfflinePartitionsCount"] == 1


def test_zookeeper_every_broker_serves_the_gauges_and_only_the_active_controller_reports():
    states = [PartitionState("t", 0, None, (1, 2), (1,), min_isr=1),
              PartitionState("t", 1, 2, (2, 3), (2, 3), min_isr=1)]
    cv = cluster_values(states, version="3.1", live_brokers={2, 3}, active_controller=3)
    assert cv.brokers[3].controller["OfflinePartitionsCount"] == 1
    assert cv.brokers[3].controller["ActiveControllerCount"] == 1
    assert set(cv.brokers[2].controller.values()) == {0}
    assert set(cv.brokers[2].controller) == set(cv.brokers[3].controller)
