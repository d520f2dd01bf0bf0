"""Edge states Kafka itself produces are judged as Kafka judges them, not
rejected: a partition whose assignment is not known yet (listed with no leader and no replicas),
a leader outside the replica list during a move, and placeholder replica ids."""
from __future__ import annotations

from kafka_jmx_sidecar.mbeans.health import KAFKA_3_7, LEGACY, PROFILES, PartitionState, judge, placeholder_count
from kafka_jmx_sidecar.mbeans.partition_states import Parsed, Rejected, read_describe, read_jsonl
from kafka_jmx_sidecar.mbeans.recompute import cluster_values


def test_assignment_not_known_yet_is_read_and_unavailable():
    [p] = read_jsonl(['{"topic": "new", "partition": 0, "leader": -1, "replicas": [], "isr": []}'])
    assert isinstance(p, Parsed) and p.state.replicas == () and p.state.leader is None
    # no leader: no broker gauge shows it; the controller and kafka-topics.sh count it offline
    assert judge(p.state, KAFKA_3_7) == (False, False, False, False, True)
    # kafka-topics.sh: no leader is under min ISR and unavailable; rf 0 - 0 is not under-replicated
    tc = judge(p.state, PROFILES["topic-command"])
    assert (tc.under_replicated, tc.under_min_isr, tc.unavailable) == (False, True, True)
    [d] = read_describe(["\tTopic: new\tPartition: 0\tLeader: none\tReplicas: \tIsr: "])
    assert isinstance(d, Parsed) and d.state == p.state._replace(topic="new")


def test_a_leader_of_no_replica_is_still_refused():
    [r] = read_jsonl(['{"topic": "a", "partition": 0, "leader": 1, "replicas": [], "isr": []}'])
    assert isinstance(r, Rejected) and '"replicas" is empty but "leader" names a broker' in r.reason


def test_leader_outside_the_replica_list_during_a_move_leads():
    # broker 4 leads while the replica list read does not name it yet
    s = PartitionState("t", 0, 4, (1, 2, 3), (4, 1))
    assert judge(s, KAFKA_3_7).under_replicated  # rf 3, 2 in sync
    cv = cluster_values([s], version="4.1", live_brokers=[1, 2, 3, 4])
    assert cv.brokers[4].replica_manager["UnderReplicatedPartitions"] == 1
    assert cv.brokers[4].replica_manager["LeaderCount"] == 1
    assert cv.brokers[4].partitions[("t", 0)]["InSyncReplicasCount"] == 2
    assert cv.brokers[1].partitions[("t", 0)]["InSyncReplicasCount"] == 0


def test_placeholders_count_as_missing_replicas():
    s = PartitionState("t", 0, 1, (1, -1, -2), (1,), min_isr=2)
    assert placeholder_count(s) == 2
    for profile in (KAFKA_3_7, LEGACY):
        flags = judge(s, profile)
        assert flags.under_replicated and flags.under_min_isr and not flags.at_min_isr
    cv = cluster_values([s], version="2.2", live_brokers=[1])
    assert cv.brokers[1].partitions[("t", 0)]["ReplicasCount"] == 3
