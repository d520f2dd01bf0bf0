"""The values Kafka's brokers would report for the health MBeans, from partition states.

Who reports what, as Kafka does it: ReplicaManager counts and the
Partition flags are the leader's; every hosted replica has Partition gauges (zeros unless it
leads); the controller's OfflinePartitionsCount sees the leaderless partitions no broker gauge
shows. Which MBeans exist, and which health flag each gauge shows, follow the catalog; the
verdicts follow a health profile.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, NamedTuple

from kafka_jmx_sidecar.mbeans import catalog
from kafka_jmx_sidecar.mbeans.health import (
    PYTHON_OPS, Counts, Ops, PartitionState, Profile, counts_of, has_leader, judge_counts, profile_for_version,
)


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


class _Gauges(NamedTuple):
    """The health gauges a broker of one Kafka version serves, as the catalog describes them."""

    replica_manager: list[str]  # every ReplicaManager gauge (those no partition state decides stay 0)
    leader_counts: dict[str, str]  # ReplicaManager gauge -> the HealthFlags field it counts on led partitions
    summed: list[str]  # the ReplicaManager gauges counted on the leader: each partition once over the cluster
    partition: list[catalog.MBeanSpec]  # the Partition gauges partition states decide: flags, replica counts
    controller: set[str]


def _gauges(version: str) -> _Gauges:
    def served(family: list[catalog.MBeanSpec]) -> list[catalog.MBeanSpec]:
        return [s for s in family if s.kind is catalog.Kind.GAUGE and s.exists_in(version)]

    rm = served(catalog.REPLICA_MANAGER)
    return _Gauges(
        [s.name for s in rm], {s.name: s.flag for s in rm if s.flag}, [s.name for s in rm if s.leader_only],
        [s for s in served(catalog.PARTITION) if s.value_kind is not catalog.ValueKind.NUMBER],
        {s.name for s in served(catalog.KAFKA_CONTROLLER)},
    )


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
    named |= {s.leader for s in states if has_leader(s.leader)}
    live = set(named if live_brokers is None else live_brokers)
    registered = set(registered_brokers) if registered_brokers is not None else named | live
    gauges = _gauges(version)

    brokers = _broker_values(states, live, gauges, profile)
    controller = _controller_values(states, live, registered)
    _serve_controller_values(brokers, {k: v for k, v in controller.items() if k in gauges.controller},
                             metadata=metadata, controllers=set(controllers), active_controller=active_controller,
                             known=named | registered | live)
    totals = {name: sum(b.replica_manager.get(name, 0) for b in brokers.values()) for name in gauges.summed}
    totals["OfflinePartitionsCount"] = controller["OfflinePartitionsCount"]
    return ClusterValues(brokers, totals)


def _broker_values(states: list[PartitionState], live: set[int], gauges: _Gauges,
                   profile: Profile) -> dict[int, BrokerValues]:
    """Each live broker's ReplicaManager and Partition gauges: a partition counts on its leader,
    and every replica a broker hosts has Partition gauges, zeros unless it leads."""
    brokers = {b: BrokerValues(b, dict.fromkeys(gauges.replica_manager, 0), {}) for b in sorted(live)}
    zeros = dict.fromkeys((g.name for g in gauges.partition), 0)
    for s in states:
        key = (s.topic, s.partition)
        leader_values = None
        if has_leader(s.leader) and s.leader in brokers:
            leader_values = _lead(s, brokers[s.leader].replica_manager, gauges, profile)
        for r in dict.fromkeys(s.replicas):  # a replica id listed twice is still one local replica
            b = brokers.get(r)
            if b is None:
                continue
            if "PartitionCount" in b.replica_manager:
                b.replica_manager["PartitionCount"] += 1
            b.partitions[key] = leader_values if r == s.leader and leader_values else dict(zeros)
        if leader_values is not None and s.leader not in s.replicas:
            # A leader outside the replica list (seen during moves): it leads, so it reports it.
            brokers[s.leader].partitions[key] = leader_values
    return brokers


def _lead(s: PartitionState, rm: dict[str, int], gauges: _Gauges, profile: Profile) -> dict[str, int]:
    """Count partition `s` on its leader's ReplicaManager gauges `rm`; the leader's Partition gauges."""
    c = counts_of(s)
    flags = judge_counts(c, profile)
    for name, flag in gauges.leader_counts.items():
        if getattr(flags, flag):
            rm[name] += 1
    if "LeaderCount" in rm:
        rm["LeaderCount"] += 1
    return {g.name: int(getattr(flags, g.flag)) if g.flag else _replica_count(g.name, c, profile)
            for g in gauges.partition}


def _replica_count(name: str, c: Counts, profile: Profile) -> int:
    """A leader's replica-count Partition gauge: the ISR's size, or the replicas as the profile counts them."""
    return c.isr if name == "InSyncReplicasCount" else int(profile.replicas_count(c, PYTHON_OPS))


def offline(c: Counts, ops: Ops = PYTHON_OPS) -> Any:
    """Whether the controller's OfflinePartitionsCount counts the partition: it has no leader.
    (A formula like mbeans/health.py's, so the backfill evaluates it on Spark Columns.)"""
    return ops.not_(c.has_leader)


def offline_partitions(states: Iterable[PartitionState]) -> int:
    """The controller's OfflinePartitionsCount: the partitions `offline` counts."""
    return sum(1 for c in map(counts_of, states) if offline(c))


def _controller_values(states: list[PartitionState], live: set[int], registered: set[int]) -> dict[str, int]:
    """What the active controller reports, every KafkaController gauge of any version."""
    return {
        "OfflinePartitionsCount": offline_partitions(states),
        "ActiveControllerCount": 1,
        "PreferredReplicaImbalanceCount": sum(1 for s in states if not s.replicas or s.leader != s.replicas[0]),
        "GlobalPartitionCount": len(states),
        "GlobalTopicCount": len({s.topic for s in states}),
        "ActiveBrokerCount": len(live),
        "FencedBrokerCount": len(registered - live),
    }


def _serve_controller_values(brokers: dict[int, BrokerValues], controller: dict[str, int], *, metadata: str,
                             controllers: set[int], active_controller: int | None, known: set[int]) -> None:
    """Give the KafkaController gauges to the nodes that serve them, as Kafka does: under KRaft the
    controller nodes, a dedicated one (not `known` as a broker) joining `brokers` with no broker
    gauges; under ZooKeeper every live broker."""
    if metadata == "kraft":
        for node in controllers - known:
            brokers[node] = BrokerValues(node, {}, {})
        serving = sorted(controllers & set(brokers))
    else:
        serving = sorted(brokers)  # the live brokers: ZooKeeper has no dedicated controllers
    candidates = sorted(controllers & set(brokers)) or serving
    active = active_controller if active_controller in brokers else (candidates[0] if candidates else None)
    for node in serving:
        if node == active:
            brokers[node].controller = dict(controller)
        elif metadata == "zookeeper":
            brokers[node].controller = dict.fromkeys(controller, 0)
        else:
            brokers[node].controller = {k: (0 if k == "ActiveControllerCount" else v) for k, v in controller.items()}
