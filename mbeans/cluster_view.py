"""The cluster-wide view (`sidecar.mode: cluster`): every partition of a cluster judged under one health
profile, as the Partition gauges its leader serves, with the ReplicaManager counts summed over the
cluster and what no broker gauge shows.

  per partition   the catalog's Partition health gauges (UnderReplicated, UnderMinIsr, AtMinIsr,
                  InSyncReplicasCount, ReplicasCount) with the values the leader would serve under
                  the profile, for every partition, leaderless ones included (the formulas say 0
                  there for broker-gauge profiles); and two the view adds, in the same ObjectName
                  shape so that rule files name them alike (no Kafka release serves them):
                  `Unavailable` (1: no live leader, so no broker gauge shows the partition) and
                  `PlaceholderReplicas` (placeholder ids in the replica list, where there are any)
  totals          the catalog's leader-counted ReplicaManager gauges (UnderReplicatedPartitions,
                  UnderMinIsrPartitionCount, AtMinIsrPartitionCount, ReassigningPartitions,
                  LeaderCount) summed over the brokers: each partition counts once, as on its
                  leader; and the controller's OfflinePartitionsCount (recompute.offline_partitions)
  ELR figures     under a profile with eligible leader replicas (KIP-966) and only where every
                  partition's ELR is known (DescribeTopicPartitions answered): per partition
                  `ElrUnderMinIsr`, `ElrOfflineClean`, `ElrOfflineUnclean` (Partition-shaped, like
                  Unavailable), and their cluster sums as `kafka.cluster:type=Elr,name=...PartitionCount`.
                  No Kafka release serves any of them; where the ELR is not known they are absent.

Each partition carries its leader (`NO_LEADER` when it has none), which the exporter puts in the
ObjectName (`LEADER_KEY`). Partition states come from the Admin API (exporter/source/cluster.py)
or, later, describe dumps; names and meanings from the catalog, verdicts from mbeans/health.py:
no formula is written here. Pure: plain values in, columns out (a cluster has tens of thousands of
partitions).
"""
from __future__ import annotations

from array import array
from collections import Counter
from dataclasses import dataclass
from typing import Iterable

from kafka_jmx_sidecar.mbeans import catalog
from kafka_jmx_sidecar.mbeans.health import (PYTHON_OPS, Counts, ElrFlags, Formula, Ops, PartitionState, Profile, counts_of,
                           has_leader, placeholder_count)
from kafka_jmx_sidecar.mbeans.recompute import offline_partitions

# The ObjectName key that carries a partition's leader, after `name` (kafka.cluster:type=Partition,
# name=UnderReplicated,leader=1,topic=orders,partition=0), and its value for a partition without one
# (as kafka-topics.sh --describe prints it since 3.x: `Leader: none`).
LEADER_KEY = "leader"
NO_LEADER = "none"

KAFKA_GAUGES = tuple(s for s in catalog.PARTITION if s.shows)
UNAVAILABLE = "Unavailable"
PLACEHOLDERS = "PlaceholderReplicas"
# What the view's own gauges mean (docs/metrics.md is generated from it).
VIEW_GAUGES = {UNAVAILABLE: "1: no leader, or a leader that is not a live broker (no broker gauge shows the "
                            "partition; kafka-topics.sh --unavailable-partitions lists it).",
               PLACEHOLDERS: "Placeholder ids in the replica list (replicas not created yet), only where there "
                             "are any."}
# The ReplicaManager gauges counted on a partition's leader: their sum over brokers counts each once.
TOTALS = tuple(s for s in catalog.REPLICA_MANAGER if s.kind is catalog.Kind.GAUGE and s.leader_only)
LEADER_COUNT = "LeaderCount"  # counts the led partitions themselves: those with a live leader
OFFLINE = "OfflinePartitionsCount"
OFFLINE_SPEC = next(s for s in catalog.KAFKA_CONTROLLER if s.name == OFFLINE)
# The ELR figures: (per-partition gauge name, the cluster sum's name, the Profile/ElrFlags field)
ELR_FIGURES = (("ElrUnderMinIsr", "UnderMinIsrPartitionCount", "elr_under_min_isr"),
               ("ElrOfflineClean", "OfflineCleanPartitionCount", "elr_offline_clean"),
               ("ElrOfflineUnclean", "OfflineUncleanPartitionCount", "elr_offline_unclean"))
assert tuple(f for _, _, f in ELR_FIGURES) == ElrFlags._fields
ELR_DOMAIN, ELR_TYPE = "kafka.cluster", "Elr"  # the sums' ObjectName: kafka.cluster:type=Elr,name=<sum>


def partition_gauges(profile: Profile) -> tuple[catalog.MBeanSpec, ...]:
    """The catalog's Partition gauges the profile computes (kafka-topics.sh's profile has no
    ReplicasCount: the tool judges no broker's gauge)."""
    return tuple(s for s in KAFKA_GAUGES if profile.formula(s.shows) is not None)


def gauge_formulas(profile: Profile) -> list[tuple[str, object]]:
    """The view's per-partition columns: (gauge name, formula) of the Partition gauges the profile
    computes, then Unavailable."""
    return ([(s.name, profile.formula(s.shows)) for s in partition_gauges(profile)]
            + [(UNAVAILABLE, profile.unavailable)])


def elr_formulas(profile: Profile) -> list[tuple[str, str, Formula]]:
    """(gauge, sum, formula) of each ELR figure the profile has (none before ELR)."""
    return [(g, t, getattr(profile, f)) for g, t, f in ELR_FIGURES if getattr(profile, f) is not None]


def elr_object_name(total: str) -> str:
    return f"{ELR_DOMAIN}:type={ELR_TYPE},name={total}"


def led(c: Counts, ops: Ops = PYTHON_OPS):
    """What LeaderCount counts: a partition with a live leader (each is led by one broker)."""
    return c.leader_live


def total_formulas(profile: Profile) -> list[tuple[catalog.MBeanSpec, Formula]]:
    """The view's cluster sums: each of TOTALS with what it counts per partition (its flag under
    the profile; LeaderCount the led partitions)."""
    return [(s, profile.formula(s.flag) if s.flag else led) for s in TOTALS if s.flag or s.name == LEADER_COUNT]


@dataclass
class ClusterView:
    """Member i is partition `partition[i]` of topic `topics[topic[i]]`, sorted by topic and
    partition; its leader is `leader[i]` (-1: none)."""

    profile: Profile
    topics: list[str]
    topic: array
    partition: array
    leader: array
    gauges: dict[str, array]  # Partition gauge name (the profile's, then UNAVAILABLE) -> value per partition
    placeholders: array  # placeholder ids per partition (0 for most)
    totals: dict[str, int]  # TOTALS' names -> the cluster's sum
    offline: int  # the controller's OfflinePartitionsCount
    # the ELR sums (ELR_FIGURES' sum names), their per-partition columns being in `gauges`; None:
    # the profile has no ELR figures or some partition's ELR is not known (absent, not 0)
    elr_totals: dict[str, int] | None = None

    def __len__(self) -> int:
        return len(self.topic)


def judge_cluster(states: Iterable[PartitionState], profile: Profile) -> ClusterView:
    """Every partition of `states` (each once) under `profile`. Liveness is the states' own
    `live_brokers` (None: every named leader is live)."""
    states = sorted(states, key=lambda s: (s.topic, s.partition))
    elr = elr_formulas(profile) if all(s.eligible_leader_replicas is not None for s in states) else []
    columns = gauge_formulas(profile) + [(g, f) for g, _, f in elr]
    # (ELR_TYPE, name) keys: the ELR sums share names with ReplicaManager's (UnderMinIsrPartitionCount)
    counted = [(s.name, f) for s, f in total_formulas(profile)] + [((ELR_TYPE, t), f) for _, t, f in elr]
    ops = PYTHON_OPS
    # Most partitions of a cluster share their numbers (replicas, ISR, min ISR...): each set of
    # numbers is judged once, into a row (the gauges' values, what each total counts).
    judged: dict[tuple, tuple] = {}
    rows = []
    for s in states:
        c = counts_of(s)
        row = judged.get(c)
        if row is None:
            row = judged[c] = (tuple(int(f(c, ops)) for _, f in columns),
                               tuple(int(bool(f(c, ops))) for _, f in counted))
        rows.append(row)
    values = {name: array("q", [r[0][j] for r in rows]) for j, (name, _) in enumerate(columns)}
    totals = dict.fromkeys([s.name for s in TOTALS] + [(ELR_TYPE, t) for _, t, _ in elr], 0)
    by_id = {id(r): r for r in judged.values()}
    for key, times in Counter(map(id, rows)).items():
        row = by_id[key]
        for (name, _), v in zip(counted, row[1]):
            totals[name] += v * times
    topics = list(dict.fromkeys(s.topic for s in states))
    index = {t: k for k, t in enumerate(topics)}
    return ClusterView(
        profile, topics, array("I", [index[s.topic] for s in states]), array("I", [s.partition for s in states]),
        array("q", [s.leader if has_leader(s.leader) else -1 for s in states]), values,
        array("q", [placeholder_count(s) if s.replicas and min(s.replicas) < 0 else 0 for s in states]),
        {s.name: totals[s.name] for s in TOTALS}, offline_partitions(states),
        {t: totals[ELR_TYPE, t] for _, t, _ in elr} if elr else None)
