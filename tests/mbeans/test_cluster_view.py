"""The cluster-wide view (mbeans/cluster_view.py): every partition judged under a profile, the
ReplicaManager counts summed without double counting, and what no broker gauge shows.

Expected values are worked by hand from the KIPs (KIP-427's examples) and Kafka's placeholder
replica ids; the comments show the arithmetic. The property test at the end
holds the view to mbeans/recompute.cluster_values, which computes every broker's own gauges.
"""
from __future__ import annotations

import random

import pytest

from kafka_jmx_sidecar.mbeans.cluster_view import NO_LEADER, judge_cluster, partition_gauges
from kafka_jmx_sidecar.mbeans.health import KAFKA_2_5, KAFKA_3_7, LEGACY, PROFILES, TOPIC_COMMAND, PartitionState
from kafka_jmx_sidecar.mbeans.recompute import cluster_values

URP, UMI, AMI, REASS, LEADERS = ("UnderReplicatedPartitions", "UnderMinIsrPartitionCount",
                                 "AtMinIsrPartitionCount", "ReassigningPartitions", "LeaderCount")


def P(topic, partition, leader, replicas, isr, min_isr=1, adding=(), removing=(), live=None):
    return PartitionState(topic, partition, leader, tuple(replicas), tuple(isr), tuple(adding), tuple(removing),
                          min_isr, None if live is None else frozenset(live))


def rows(view):
    """(topic, partition) -> {gauge: value, "leader": id, "placeholders": n}."""
    out = {}
    for i in range(len(view)):
        row = {name: column[i] for name, column in view.gauges.items()}
        row["leader"] = view.leader[i]
        row["placeholders"] = view.placeholders[i]
        out[(view.topics[view.topic[i]], view.partition[i])] = row
    return out


def flags(row):
    return tuple(row[k] for k in ("UnderReplicated", "UnderMinIsr", "AtMinIsr", "Unavailable"))


# --- KIP-427's examples, one partition each, after each broker failure ----------------------------
# Replicas [0,1,2] (example 3: [0,1,2,3]); the leader is the first broker of the ISR left. Columns:
# URP, UnderMinIsr, AtMinIsr, Unavailable (the KIP's worked examples).

KIP_427 = [
    # example 1: RF 3, min ISR 2
    (P("ex1", 0, 0, [0, 1, 2], [0, 1, 2], 2), (0, 0, 0, 0)),  # healthy
    (P("ex1", 1, 1, [0, 1, 2], [1, 2], 2), (1, 0, 1, 0)),     # broker 0 fails: 3-2 > 0 URP; 2 == 2 at min
    (P("ex1", 2, 2, [0, 1, 2], [2], 2), (1, 1, 0, 0)),        # broker 1 fails: 1 < 2 under min
    # example 2: RF 3, min ISR 1
    (P("ex2", 0, 1, [0, 1, 2], [1, 2], 1), (1, 0, 0, 0)),     # broker 0 fails: URP only
    (P("ex2", 1, 2, [0, 1, 2], [2], 1), (1, 0, 1, 0)),        # broker 1 fails: 1 == 1 at min
    (P("ex2", 2, None, [0, 1, 2], [2], 1), (0, 0, 0, 1)),     # broker 2 fails: offline, 0 on every gauge
    # example 3: RF 4, min ISR 2
    (P("ex3", 0, 1, [0, 1, 2, 3], [1, 2, 3], 2), (1, 0, 0, 0)),  # broker 0 fails: URP
    (P("ex3", 1, 2, [0, 1, 2, 3], [2, 3], 2), (1, 0, 1, 0)),     # broker 1 fails: URP, at min
    (P("ex3", 2, 3, [0, 1, 2, 3], [3], 2), (1, 1, 0, 0)),        # broker 2 fails: URP, under min
]


@pytest.mark.parametrize("profile", [KAFKA_2_5, KAFKA_3_7], ids=lambda p: p.name)
def test_kip_427_examples(profile):
    # min ISR never exceeds the replicas here, so the effective min ISR (3.7) is the raw one (2.5)
    view = rows(judge_cluster([s for s, _ in KIP_427], profile))
    for state, want in KIP_427:
        row = view[(state.topic, state.partition)]
        assert flags(row) == want, f"{state}: {flags(row)} != {want}"
        assert row["InSyncReplicasCount"] == len(state.isr)
        assert row["ReplicasCount"] == len(state.replicas)
        assert row["leader"] == (-1 if state.leader is None else state.leader)


def test_kip_427_totals():
    view = judge_cluster([s for s, _ in KIP_427], KAFKA_3_7)
    # URP: ex1-1, ex1-2, ex2-0, ex2-1, ex3-0, ex3-1, ex3-2 = 7; UnderMinIsr: ex1-2, ex3-2 = 2;
    # AtMinIsr: ex1-1, ex2-1, ex3-1 = 3; no reassignment; leaders: 9 partitions - ex2-2 = 8
    assert view.totals == {URP: 7, UMI: 2, AMI: 3, REASS: 0, LEADERS: 8}
    assert view.offline == 1  # ex2-2: the controller's OfflinePartitionsCount


# --- reassignments, min ISR above RF, placeholders, liveness -------------------------------------

def test_a_reassignment_under_each_broker_profile():
    # [1,2] -> [1,3]: replicas [1,2,3], adding [3] (not caught up), removing [2], ISR [1,2], min ISR 2
    s = P("moving", 0, 1, [1, 2, 3], [1, 2], 2, adding=[3], removing=[2])
    for profile, want_urp, want_replicas in ((KAFKA_3_7, 0, 2), (KAFKA_2_5, 0, 2), (LEGACY, 1, 3)):
        # KIP-352 (2.5+): rf = 3 - 1 = 2, ISR 2: not URP, ReplicasCount 2; legacy: 2 < 3 URP, ReplicasCount 3
        view = judge_cluster([s], profile)
        row = rows(view)[("moving", 0)]
        assert (row["UnderReplicated"], row["ReplicasCount"]) == (want_urp, want_replicas), profile.name
        # 3.7: effective min ISR min(2, 3) = 2 == 2 at min; 2.5/legacy: 2 == 2 at min
        assert (row["UnderMinIsr"], row["AtMinIsr"]) == (0, 1)
        assert view.totals[REASS] == 1 and view.totals[URP] == want_urp


def test_min_isr_above_the_replicas():
    # RF 2, min ISR 3, full ISR: 3.7: min(3, 2) = 2 == 2 at min; 2.5: 2 < 3 under min
    s = P("strict", 0, 1, [1, 2], [1, 2], 3)
    assert flags(rows(judge_cluster([s], KAFKA_3_7))[("strict", 0)]) == (0, 0, 1, 0)
    assert flags(rows(judge_cluster([s], KAFKA_2_5))[("strict", 0)]) == (0, 1, 0, 0)


def test_placeholders_count_as_missing_replicas():
    # created on 2 live brokers with RF 3: replicas [1,2,-1], ISR [1,2], min ISR 2
    view = judge_cluster([P("placeholder", 0, 1, [1, 2, -1], [1, 2], 2), P("plain", 0, 1, [1, 2], [1, 2], 1)],
                         KAFKA_3_7)
    row = rows(view)[("placeholder", 0)]
    assert row["placeholders"] == 1
    # 3 - 2 > 0 URP; effective min ISR min(2, 3) = 2 == 2 at min
    assert flags(row) == (1, 0, 1, 0)
    assert rows(view)[("plain", 0)]["placeholders"] == 0


def test_a_leader_that_is_not_a_live_broker():
    # ZooKeeper can name a dead broker as leader: no broker gauge shows the partition,
    # it is unavailable; the controller's count here is of partitions without a leader id
    s = P("stale", 0, 3, [3, 1], [3], 1, live=[1, 2])
    view = judge_cluster([s], KAFKA_3_7)
    row = rows(view)[("stale", 0)]
    assert flags(row) == (0, 0, 0, 1) and row["leader"] == 3
    assert view.totals[LEADERS] == 0 and view.offline == 0


def test_elr_leaderless_partition_with_an_empty_isr():
    # as a real 4.1 broker showed an RF 1 partition whose broker was down: Leader none, Isr empty, Elr 2.
    s = P("elr", 0, None, [2], [], 1)
    # broker gauges: nothing (no leader); kafka-topics.sh: URP (1 - 0 > 0), under min ISR (no
    # leader), not at min (0 != 1), unavailable
    assert flags(rows(judge_cluster([s], KAFKA_3_7))[("elr", 0)]) == (0, 0, 0, 1)
    row = rows(judge_cluster([s], TOPIC_COMMAND))[("elr", 0)]
    assert flags(row) == (1, 1, 0, 1)


def test_topic_command_counts_leaderless_partitions_and_has_no_replicas_count():
    # KIP-427 example 2 after broker 2 fails, as kafka-topics.sh judges it: ISR [2] kept, min ISR 1:
    # 3 - 1 > 0 URP, no leader: under min ISR, 1 == 1 at min ISR, unavailable
    view = judge_cluster([P("ex2", 2, None, [0, 1, 2], [2], 1)], TOPIC_COMMAND)
    row = rows(view)[("ex2", 2)]
    assert flags(row) == (1, 1, 1, 1)
    assert "ReplicasCount" not in view.gauges and [s.name for s in partition_gauges(TOPIC_COMMAND)] == [
        "UnderReplicated", "UnderMinIsr", "AtMinIsr", "InSyncReplicasCount"]
    assert view.totals == {URP: 1, UMI: 1, AMI: 1, REASS: 0, LEADERS: 0}
    assert row["leader"] == -1 and NO_LEADER == "none"


def test_members_are_sorted_by_topic_and_partition():
    view = judge_cluster([P("b", 1, 1, [1], [1]), P("a", 3, 1, [1], [1]), P("b", 0, 1, [1], [1]),
                          P("a", 0, 1, [1], [1])], KAFKA_3_7)
    assert view.topics == ["a", "b"]
    assert [(view.topics[t], p) for t, p in zip(view.topic, view.partition)] == [("a", 0), ("a", 3), ("b", 0),
                                                                               ("b", 1)]


# --- against every broker's own gauges (mbeans/recompute.cluster_values) --------------------------

def _random_cluster(rng: random.Random, n: int) -> list[PartitionState]:
    brokers = [1, 2, 3, 4]
    live = frozenset(b for b in brokers if rng.random() > 0.15) or frozenset({1})
    out = []
    for i in range(n):
        replicas = rng.sample(brokers, rng.randint(1, 4))
        if rng.random() < 0.05:
            replicas[-1] = -1
        real = [r for r in replicas if r >= 0] or [brokers[0]]
        isr = [r for r in real if rng.random() > 0.3]
        adding = [replicas[-1]] if len(replicas) > 1 and replicas[-1] >= 0 and rng.random() < 0.15 else []
        leader = isr[0] if isr and rng.random() > 0.1 else None
        out.append(PartitionState(f"t{i % 7}", i, leader, tuple(replicas), tuple(isr), tuple(adding), (),
                                  rng.randint(1, 4), live))
    return out


@pytest.mark.parametrize("profile", [KAFKA_3_7, KAFKA_2_5, LEGACY], ids=lambda p: p.name)
def test_totals_and_leaders_gauges_equal_what_every_broker_reports(profile):
    rng = random.Random(20251123)
    for _ in range(40):
        states = _random_cluster(rng, 60)
        live = states[0].live_brokers
        view = judge_cluster(states, profile)
        brokers = cluster_values(states, profile=profile, live_brokers=live)
        summed = {k: v for k, v in brokers.totals.items() if k != "OfflinePartitionsCount"}
        assert view.totals == summed
        assert view.offline == brokers.totals["OfflinePartitionsCount"]
        got = rows(view)
        for s in states:
            if s.leader is not None and s.leader in live:
                theirs = brokers.brokers[s.leader].partitions[(s.topic, s.partition)]
                assert {k: got[(s.topic, s.partition)][k] for k in theirs} == theirs, s
            assert got[(s.topic, s.partition)]["Unavailable"] == int(s.leader is None or s.leader not in live)


def test_every_profile_judges():
    states = [s for s, _ in KIP_427]
    for profile in PROFILES.values():
        assert len(judge_cluster(states, profile)) == len(states)
