"""mbeans/broker_recompute: one broker's health gauges from its own per-partition counts, on
hand-worked cases (the KIPs' worked examples and their consequences, what live brokers showed)."""
from __future__ import annotations

from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_jmx_sidecar.mbeans.broker_recompute import (PARTITION_GAUGES, REPLICA_MANAGER_GAUGES, Assignment, HostedPartitions,
                                     full_replica_count, recompute_broker)
from kafka_jmx_sidecar.mbeans.health import KAFKA_2_5, KAFKA_3_7, LEGACY, PROFILES, PYTHON_OPS, Counts, multiset_overlap


def hosted(*members):
    """members: (topic, partition, InSyncReplicasCount, ReplicasCount)."""
    topics = sorted({m[0] for m in members})
    return HostedPartitions(topics, array("i", [topics.index(m[0]) for m in members]),
                            array("i", [m[1] for m in members]), array("q", [m[2] for m in members]),
                            array("q", [m[3] for m in members]))


def run(h, profile, broker=KAFKA_3_7, min_isr=None, assignments=None):
    min_isr = min_isr or {}
    return recompute_broker(h, profile=profile, broker_profile=broker, min_isr_of=lambda t: min_isr.get(t, 1),
                            assignments=assignments)


def flags(result, i):
    return {name: result.partition[name][i] for name in ("UnderReplicated", "UnderMinIsr", "AtMinIsr")}


def test_kip427_example1_broker0_fails_on_the_leader():
    # RF 3, min ISR 2, ISR [1,2]: URP and AtMinIsr, not UnderMinIsr (both profiles: 2 < 3 replicas)
    h = hosted(("t", 0, 2, 3))
    for profile in (KAFKA_2_5, KAFKA_3_7):
        r = run(h, profile, min_isr={"t": 2})
        assert r.replica_manager == {"UnderReplicatedPartitions": 1, "UnderMinIsrPartitionCount": 0,
                                     "AtMinIsrPartitionCount": 1, "ReassigningPartitions": 0}
        assert flags(r, 0) == {"UnderReplicated": 1, "UnderMinIsr": 0, "AtMinIsr": 1}
        assert r.partition["InSyncReplicasCount"][0] == 2 and r.partition["ReplicasCount"][0] == 3


def test_kip427_example1_broker1_fails():
    r = run(hosted(("t", 0, 1, 3)), KAFKA_2_5, min_isr={"t": 2})
    assert flags(r, 0) == {"UnderReplicated": 1, "UnderMinIsr": 1, "AtMinIsr": 0}


def test_min_isr_above_replica_count_live_4_1_observation():
    # a live 4.1 broker: one broker, RF=1, min.insync.replicas=2 read AtMinIsr=1, UnderMinIsr=0
    h = hosted(("t", 0, 1, 1))
    assert flags(run(h, KAFKA_3_7, min_isr={"t": 2}), 0) == {"UnderReplicated": 0, "UnderMinIsr": 0, "AtMinIsr": 1}
    assert flags(run(h, KAFKA_2_5, min_isr={"t": 2}), 0) == {"UnderReplicated": 0, "UnderMinIsr": 1, "AtMinIsr": 0}


def test_followers_read_zero_and_are_not_counted():
    h = hosted(("a", 0, 0, 0), ("a", 1, 1, 2), ("b", 0, 0, 0))
    r = run(h, KAFKA_3_7, min_isr={"a": 2})
    assert r.led == 1
    assert [r.partition["UnderMinIsr"][i] for i in range(3)] == [0, 1, 0]
    assert [r.partition["ReplicasCount"][i] for i in range(3)] == [0, 2, 0]
    assert r.replica_manager["UnderReplicatedPartitions"] == 1


def test_caught_up_adding_replica_hides_a_lost_original_under_kip352_not_legacy():
    # KIP-352: replicas=[1,2,3,4], adding=[4], isr=[1,3,4] is not URP (kafka-3.7), URP before
    # 2.5. A 2.2 broker's ReplicasCount shows the full list, 4.
    h = hosted(("t", 0, 3, 4))
    a = {("t", 0): Assignment((1, 2, 3, 4), adding=(4,), removing=(2,))}
    r37 = run(h, KAFKA_3_7, broker=LEGACY, min_isr={"t": 2}, assignments=a)
    assert r37.partition["UnderReplicated"][0] == 0
    assert r37.partition["ReplicasCount"][0] == 3  # 2.5+: without the adding replica
    assert r37.replica_manager["ReassigningPartitions"] == 1
    legacy = run(h, LEGACY, broker=LEGACY, min_isr={"t": 2}, assignments=a)
    assert legacy.partition["UnderReplicated"][0] == 1 and legacy.partition["ReplicasCount"][0] == 4


def test_without_assignments_a_2_5_broker_replicas_count_is_taken_as_the_full_list():
    # no Admin API: a 4.1 broker's ReplicasCount (3, adding left out) is all that is known
    r = run(hosted(("t", 0, 3, 3)), KAFKA_3_7, broker=KAFKA_3_7, min_isr={"t": 4})
    assert flags(r, 0) == {"UnderReplicated": 0, "UnderMinIsr": 0, "AtMinIsr": 1}  # min(4, 3) = 3
    assert r.without_assignment == 1
    # with it, the effective min ISR counts the adding replica: min(4, 4) = 4 > 3
    a = {("t", 0): Assignment((1, 2, 3, 4), adding=(4,))}
    r = run(hosted(("t", 0, 3, 3)), KAFKA_3_7, broker=KAFKA_3_7, min_isr={"t": 4}, assignments=a)
    assert flags(r, 0) == {"UnderReplicated": 0, "UnderMinIsr": 1, "AtMinIsr": 0}
    assert r.without_assignment == 0


def test_full_replica_count_inverts_each_release_replicas_count():
    assert full_replica_count(3, 1, KAFKA_3_7) == 4  # 2.5+: ReplicasCount leaves adding replicas out
    assert full_replica_count(3, 1, KAFKA_2_5) == 4
    assert full_replica_count(4, 1, LEGACY) == 4  # before: the full list


def test_placeholders_count_as_missing_replicas_and_are_counted():
    # a placeholder (negative id) counts in replicas like any missing replica: under-replicated
    a = {("t", 0): Assignment((1, -1, -2))}
    r = run(hosted(("t", 0, 1, 1)), KAFKA_3_7, min_isr={"t": 2}, assignments=a)
    assert flags(r, 0) == {"UnderReplicated": 1, "UnderMinIsr": 1, "AtMinIsr": 0}
    assert r.partition["ReplicasCount"][0] == 3
    assert r.placeholders == {("t", 0): 2}


def test_assignment_not_known_yet_is_judged_from_the_brokers_own_count():
    # the Admin API describes the partition without replicas: Kafka's leader judges it on its own
    # assignment, which its ReplicasCount shows
    a = {("t", 0): Assignment(())}
    r = run(hosted(("t", 0, 2, 2)), KAFKA_3_7, min_isr={"t": 2}, assignments=a)
    assert flags(r, 0) == {"UnderReplicated": 0, "UnderMinIsr": 0, "AtMinIsr": 1}
    assert r.without_assignment == 1


def test_min_isr_asked_once_per_led_topic():
    asked = []
    h = hosted(("a", 0, 1, 1), ("a", 1, 1, 1), ("b", 0, 0, 0))
    recompute_broker(h, profile=KAFKA_3_7, broker_profile=LEGACY, min_isr_of=lambda t: asked.append(t) or 1)
    assert asked == ["a"]


def test_topic_command_is_not_a_broker_profile():
    with pytest.raises(ValueError, match="kafka-topics.sh"):
        run(hosted(("t", 0, 1, 1)), PROFILES["topic-command"])


# Each led partition judged on its own, as the docstring states it: the recompute judges each
# distinct Counts once and looks the rest up, which must give these same values.
_member = st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 5), st.integers(0, 4), st.integers(0, 5))
_assignment = st.one_of(st.none(), st.tuples(
    st.lists(st.integers(-2, 5), min_size=0, max_size=5).map(tuple),
    st.lists(st.integers(0, 5), max_size=2).map(tuple), st.lists(st.integers(0, 5), max_size=2).map(tuple)))


@settings(max_examples=300, deadline=None, derandomize=True)
@given(members=st.lists(_member, max_size=40, unique_by=lambda m: m[:2]),
       moves=st.lists(_assignment, min_size=40, max_size=40),
       min_isr=st.fixed_dictionaries({t: st.integers(1, 4) for t in "abc"}),
       profile=st.sampled_from([p for p in PROFILES.values() if p.replicas_count is not None]),
       broker=st.sampled_from([LEGACY, KAFKA_2_5, KAFKA_3_7]))
def test_each_led_partition_reads_what_its_own_counts_give(members, moves, min_isr, profile, broker):
    members = sorted(members)
    h = hosted(*members)
    assignments = {(t, p): Assignment(*move) for (t, p, _, _), move in zip(members, moves) if move is not None}
    r = run(h, profile, broker, min_isr, assignments)
    expected_rm = dict.fromkeys(r.replica_manager, 0)
    led = 0
    for i, (topic, partition, isr, shown) in enumerate(members):
        a = assignments.get((topic, partition))
        if not shown:
            assert all(r.partition[s.name][i] == 0 for s in PARTITION_GAUGES)
            continue
        led += 1
        if a is not None and a.replicas:
            c = Counts(True, True, len(a.replicas), multiset_overlap(a.adding, a.replicas),
                       bool(a.adding or a.removing), isr, min_isr[topic])
        else:
            c = Counts(True, True, full_replica_count(shown, 0, broker), 0, False, isr, min_isr[topic])
        for s in PARTITION_GAUGES:
            assert r.partition[s.name][i] == int(profile.formula(s.shows)(c, PYTHON_OPS)), (s.name, c)
        for s in REPLICA_MANAGER_GAUGES:
            expected_rm[s.name] += bool(profile.formula(s.flag)(c, PYTHON_OPS))
    assert r.replica_manager == expected_rm
    assert r.led == led
