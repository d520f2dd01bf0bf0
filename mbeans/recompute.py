"""The values Kafka's brokers would report for the health MBeans, from partition states.

Who reports what follows semantics.md ("Who reports what"): ReplicaManager counts and the
Partition flags are the leader's; every hosted replica has Partition gauges (zeros unless it
leads); the controller's OfflinePartitionsCount sees the leaderless partitions no broker gauge
shows. Which MBeans exist follows the catalog's versions; the verdicts follow a health profile.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from mbeans import catalog
from mbeans.health import (
    PYTHON_OPS, PartitionState, Profile, counts_of, judge_counts, profile_for_version,
)

# ReplicaManager gauge name -> the HealthFlags field it counts over led partitions.
_LEADER_COUNTS = {
    "UnderReplicatedPartitions": "under_replicated",
    "UnderMinIsrPartitionCount": "under_min_isr",
    "AtMinIsrPartitionCount": "at_min_isr",
    "ReassigningPartitions": "reassigning",
}
# Partition gauge name -> HealthFlags field (1 on the leader when the flag holds).
_PARTITION_FLAGS = {
    "UnderReplicated": "under_replicated",
    "UnderMinIsr": "under_min_isr",
    "AtMinIsr": "at_min_isr",
}


@dataclass
class BrokerValues:
    broker: int
    replica_manager: dict[str, int]
    # (topic, partition) -> Partition gauge name -> value, for every replica this broker hosts
    partitions: dict[tuple[str, int], dict[str, int]]
    # KafkaController gauges; None on a node that is not a controller
    controller: dict[str, int] | None = None


@dataclass
class ClusterValues:
    brokers: dict[int, BrokerValues]
    # leader-counted ReplicaManager gauges summed over brokers (each partition once, by its
    # leader), and the controller's OfflinePartitionsCount
    totals: dict[str, int] = field(default_factory=dict)


def cluster_values(
    states: Iterable[PartitionState],
    *,
    version: str = "4.1",
    profile: Profile | None = None,
    live_brokers: Iterable[int] | None = None,
    registered_brokers: Iterable[int] | None = None,
    controllers: Iterable[int] = (),
    active_controller: int | None = None,
    metadata: str | None = None,
) -> ClusterValues:
    """Every live node's view. `live_brokers` None: every broker named in a replica list or as
    a leader is live. `registered_brokers` (for FencedBrokerCount) defaults to the live ones plus
    every broker named anywhere.

    `metadata` is "kraft" or "zookeeper" (default: what the version's clusters ran, see
    catalog.default_metadata_mode). Under KRaft, `controllers` are the controller nodes; one not
    otherwise known as a broker is a dedicated controller, taken to be up, with KafkaController
    values and no broker ones. Under ZooKeeper every live broker serves the KafkaController
    gauges. Either way only the active controller (`active_controller`, by default the lowest
    live one; KRaft leadership is sticky, so pass it when known) reports them: under KRaft the
    others report the same values with ActiveControllerCount 0, under ZooKeeper all zeros."""
    metadata = metadata or catalog.default_metadata_mode(version)
    if metadata not in ("kraft", "zookeeper"):
        raise ValueError(f"metadata must be 'kraft' or 'zookeeper', not {metadata!r}")
    profile = profile or profile_for_version(version)
    if profile.replicas_count is None:
        raise ValueError(f"profile {profile.name} describes kafka-topics.sh, not broker gauges")
    states = list(states)
    named = {r for s in states for r in s.replicas if r >= 0}
    named |= {s.leader for s in states if s.leader is not None and s.leader >= 0}
    live = set(named if live_brokers is None else live_brokers)
    registered = set(registered_brokers) if registered_brokers is not None else named | live

    present = {s.name for s in catalog.health_mbeans(version)}
    rm_names = [s.name for s in catalog.REPLICA_MANAGER if s.kind is catalog.Kind.GAUGE and s.name in present]
    part_names = [s.name for s in catalog.PARTITION if s.name in present and s.name != "LastStableOffsetLag"]

    brokers = {b: BrokerValues(b, dict.fromkeys(rm_names, 0), {}) for b in sorted(live)}
    offline = 0
    imbalance = 0
    topics = set()
    zeros = dict.fromkeys(part_names, 0)
    for s in states:
        topics.add(s.topic)
        c = counts_of(s)
        flags = judge_counts(c, profile)
        if not c.has_leader:
            offline += 1
        if not s.replicas or s.leader != s.replicas[0]:
            imbalance += 1
        key = (s.topic, s.partition)
        leader_values = None
        if c.has_leader and s.leader in brokers:
            rm = brokers[s.leader].replica_manager
            for name, flag in _LEADER_COUNTS.items():
                if name in rm and getattr(flags, flag):
                    rm[name] += 1
            if "LeaderCount" in rm:
                rm["LeaderCount"] += 1
            leader_values = {name: int(getattr(flags, _PARTITION_FLAGS[name])) if name in _PARTITION_FLAGS
                             else c.isr if name == "InSyncReplicasCount"
                             else int(profile.replicas_count(c, PYTHON_OPS))
                             for name in part_names}
        for r in dict.fromkeys(s.replicas):  # a replica id listed twice is still one local replica
            b = brokers.get(r)
            if b is None:
                continue
            if "PartitionCount" in b.replica_manager:
                b.replica_manager["PartitionCount"] += 1
            b.partitions[key] = leader_values if r == s.leader and leader_values else dict(zeros)
        if leader_values is not None and s.leader not in s.replicas:
            # A leader outside the replica list cannot happen in Kafka; keep its view anyway.
            brokers[s.leader].partitions[key] = leader_values

    controller = {
        "OfflinePartitionsCount": offline,
        "ActiveControllerCount": 1,
        "PreferredReplicaImbalanceCount": imbalance,
        "GlobalPartitionCount": len(states),
        "GlobalTopicCount": len(topics),
        "ActiveBrokerCount": len(live),
        "FencedBrokerCount": len(registered - live),
    }
    controller = {k: v for k, v in controller.items() if k in present}
    # semantics.md, "Who reports what"
    if metadata == "kraft":
        dedicated = set(controllers) - named - registered - live
        for node in dedicated:
            brokers[node] = BrokerValues(node, {}, {})
        serving = sorted(set(controllers) & set(brokers))
    else:
        serving = sorted(live)
    candidates = [n for n in sorted(set(controllers) & set(brokers))] or serving
    active = active_controller if active_controller in brokers else (candidates[0] if candidates else None)
    for node in serving:
        if node == active:
            brokers[node].controller = dict(controller)
        elif metadata == "zookeeper":
            brokers[node].controller = dict.fromkeys(controller, 0)
        else:
            brokers[node].controller = {k: (0 if k == "ActiveControllerCount" else v) for k, v in controller.items()}

    totals = {name: sum(b.replica_manager.get(name, 0) for b in brokers.values())
              for name in list(_LEADER_COUNTS) + ["LeaderCount"] if name in present}
    totals["OfflinePartitionsCount"] = offline
    return ClusterValues(brokers, totals)


def broker_values(states: Iterable[PartitionState], broker: int, **kwargs) -> BrokerValues | None:
    """One broker's view (None when that broker is not live)."""
    return cluster_values(states, **kwargs).brokers.get(broker)
