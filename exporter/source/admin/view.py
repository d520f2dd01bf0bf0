"""What one read of the Kafka Admin API knows, as plain values (no client-library object).

`AdminView` holds the cluster, every partition, the topic and broker configurations that health
and throttling depend on, the replicas' sizes on disk, and what could not be known and why
(`Unknown`, with a `Reason` from a small fixed set a metric can carry as a label). A value that is
not known is absent or None and has an Unknown beside it, never a guess: `partition_states()`
builds `mbeans.health.PartitionState`s from what is known and leaves the fallbacks to
`source.admin.fallback`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from kafka_jmx_sidecar.mbeans.health import PartitionState


class Reason(str, Enum):
    """Why a value is unknown (a label value: keep this set small and fixed)."""

    UNSUPPORTED = "unsupported"    # the broker's version has no such API or field
    UNAUTHORIZED = "unauthorized"  # an ACL denies it to the sidecar's principal
    UNREACHABLE = "unreachable"    # the broker is down, fenced or did not answer in time
    HIDDEN = "hidden"              # the broker reports the value as sensitive (no value sent)
    ERROR = "error"                # any other error the broker returned (named in the detail)


class Input(str, Enum):
    """What an Unknown is missing (a label value too)."""

    REASSIGNMENTS = "reassignments"                    # adding/removing replicas (Kafka 2.4+)
    OFFLINE_REPLICAS = "offline_replicas"              # Metadata v5+ (Kafka 1.0+)
    ELIGIBLE_LEADERS = "eligible_leader_replicas"      # DescribeTopicPartitions (Kafka 3.8+)
    FEATURES = "features"                              # finalized feature levels (ApiVersions v3+)
    PARTITIONS = "partitions"                          # a topic's partitions
    MIN_ISR = "min_isr"                                # a topic's min.insync.replicas
    THROTTLED_REPLICAS = "throttled_replicas"          # a topic's leader/follower throttled replicas
    BROKER_MIN_ISR = "broker_min_isr"                  # a broker's default min.insync.replicas
    THROTTLE_RATES = "throttle_rates"                  # a broker's leader/follower throttled rates
    LOG_DIRS = "log_dirs"                              # a broker's DescribeLogDirs (Kafka 1.0+)


@dataclass(frozen=True)
class Unknown:
    input: Input
    reason: Reason
    detail: str                 # for the log line: what, where, and what to do
    broker: int | None = None   # the broker it concerns, if one
    topic: str | None = None    # the topic it concerns, if one


@dataclass(frozen=True)
class Broker:
    id: int
    host: str
    port: int
    rack: str | None = None
    fenced: bool = False        # KRaft: registered but not live (DescribeCluster v2, Kafka 4.0+)


@dataclass(frozen=True)
class Cluster:
    cluster_id: str | None
    controller_id: int | None   # None: the broker reports none (-1)
    brokers: tuple[Broker, ...]
    source: str                 # "DescribeCluster" or "Metadata" (brokers before 2.8)
    # What the sidecar's principal may do on the cluster (KIP-430; None: not told, before 2.3)
    may_describe: bool | None = None
    may_describe_configs: bool | None = None

    @property
    def live_brokers(self) -> frozenset[int]:
        return frozenset(b.id for b in self.brokers if not b.fenced)


@dataclass(frozen=True)
class Partition:
    """One partition as the broker describes it; None where the broker cannot say."""

    topic: str
    partition: int
    leader: int | None                      # None: no leader (-1)
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] | None = None        # None before Kafka 1.0
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    eligible_leader_replicas: tuple[int, ...] | None = None  # None: no DescribeTopicPartitions (KIP-966)
    last_known_elr: tuple[int, ...] | None = None


@dataclass(frozen=True)
class TopicConfig:
    min_isr: int | None                     # None: unknown (an Unknown says why)
    min_isr_is_default: bool = False        # the broker default applies (no topic override)
    leader_throttled_replicas: str | None = None    # "0:1,1:2", "*", "" (none); None: unknown
    follower_throttled_replicas: str | None = None


@dataclass(frozen=True)
class BrokerConfig:
    min_isr: int | None = None                   # default for topics without an override
    leader_throttled_rate: int | None = None     # bytes/s; None: not set (unthrottled) or unknown
    follower_throttled_rate: int | None = None
    # where min_isr comes from (DescribeConfigs' config_source): with ELR on, the cluster-level value
    # (DYNAMIC_DEFAULT_BROKER_CONFIG), broker-level overrides being removed by the controller
    min_isr_source: str | None = None


@dataclass(frozen=True)
class ReplicaSize:
    """One replica's log on one broker (DescribeLogDirs); `is_future` marks the copy a broker
    builds while a replica moves between its log dirs, or an adding replica's future log."""

    broker: int
    log_dir: str
    topic: str
    partition: int
    size: int
    offset_lag: int
    is_future: bool


@dataclass(frozen=True)
class AdminView:
    cluster: Cluster
    partitions: tuple[Partition, ...]
    topics: dict[str, TopicConfig] = field(default_factory=dict)
    brokers: dict[int, BrokerConfig] = field(default_factory=dict)
    replica_sizes: tuple[ReplicaSize, ...] = ()
    unknowns: tuple[Unknown, ...] = ()
    api_versions: dict[str, tuple[int, int]] = field(default_factory=dict)  # API name -> (min, max)
    # the finalized eligible.leader.replicas.version (0: ELR off; None: not known), read each time
    elr_level: int | None = None

    @property
    def elr_enabled(self) -> bool | None:
        return None if self.elr_level is None else self.elr_level >= 1

    def unknown(self, input: Input, topic: str | None = None, broker: int | None = None) -> Unknown | None:
        """The Unknown about `input` (for this topic or broker, or cluster-wide), if any."""
        for u in self.unknowns:
            if u.input is input and (u.topic is None or u.topic == topic) and (u.broker is None or u.broker == broker):
                return u
        return None

    def partition_states(self, min_isr_of, live_brokers: frozenset[int] | None = None) -> list[PartitionState]:
        """Each partition as the health core reads it. `min_isr_of(topic) -> int` supplies the
        min ISR (source.admin.fallback.MinIsrResolver resolves unknown ones); reassignments
        that are unknown read as none (adding/removing empty), as kafka-topics.sh reads them."""
        return [PartitionState(p.topic, p.partition, p.leader, p.replicas, p.isr, p.adding_replicas,
                               p.removing_replicas, min_isr_of(p.topic), live_brokers, p.eligible_leader_replicas,
                               p.last_known_elr)
                for p in self.partitions]

    def sizes(self, topic: str, partition: int) -> list[ReplicaSize]:
        return [r for r in self.replica_sizes if r.topic == topic and r.partition == partition]
