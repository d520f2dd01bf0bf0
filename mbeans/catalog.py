"""What Kafka's partition-health MBeans are: names, kinds, attribute sets, value types, the
release each first appeared in (checked against real brokers of each release), and what a
gauge's value means: which health flag it shows, whether it is a 0/1 flag, a replica count or
some other number, and whether only the partition's leader reports it.

The simulator serves from this table and the scrape and recompute paths read it, so a name, a
version or a meaning lives here once.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from kafka_jmx_sidecar.mbeans.health import parse_version


class Kind(Enum):
    """A Yammer metric kind as Kafka's JmxReporter exposes it."""

    GAUGE = "com.yammer.metrics.reporting.JmxReporter$Gauge"
    METER = "com.yammer.metrics.reporting.JmxReporter$Meter"
    HISTOGRAM = "com.yammer.metrics.reporting.JmxReporter$Histogram"
    TIMER = "com.yammer.metrics.reporting.JmxReporter$Timer"

    @property
    def class_name(self) -> str:
        return self.value


# (attribute, declared type) in the order a real broker's MBeanInfo lists them
# (../reference/kafka-4.1/all-kafka-mbeans-full.txt).
_RATES = (
    ("FifteenMinuteRate", "double"),
    ("RateUnit", "java.util.concurrent.TimeUnit"),
    ("MeanRate", "double"),
    ("OneMinuteRate", "double"),
    ("FiveMinuteRate", "double"),
)
_DISTRIBUTION = (
    ("Min", "double"), ("Max", "double"), ("50thPercentile", "double"), ("Mean", "double"),
    ("StdDev", "double"), ("75thPercentile", "double"), ("95thPercentile", "double"),
    ("98thPercentile", "double"), ("99thPercentile", "double"), ("999thPercentile", "double"),
)
ATTRIBUTES: dict[Kind, tuple[tuple[str, str], ...]] = {
    Kind.GAUGE: (("Value", "java.lang.Object"),),
    Kind.METER: (("EventType", "java.lang.String"), ("Count", "long")) + _RATES,
    Kind.HISTOGRAM: (("Count", "long"),) + _DISTRIBUTION,
    Kind.TIMER: (("LatencyUnit", "java.util.concurrent.TimeUnit"), ("EventType", "java.lang.String"),
                 ("Count", "long")) + _RATES + _DISTRIBUTION,
}


# The description JmxReporter's MBeanInfo gives every attribute (jmx_exporter's HELP text).
ATTRIBUTE_DESCRIPTION = "Attribute exposed for management"

# Where a broker says its release: `kafka.server:type=app-info,id=<broker id>`, attribute
# `Version` (a String such as 2.2.1 or 0.11.0.3), registered by every broker since 0.9.
APP_INFO_PATTERN = "kafka.server:type=app-info,*"
APP_INFO_ID_KEY = "id"
APP_INFO_VERSION = "Version"

# Where a node says its cluster's id: Yammer's gauge `kafka.server:type=KafkaServer,name=ClusterId`
# (`Value`, a String) on a broker; a KRaft controller-only node has it only as ControllerServer's
# (a combined node has both, the same id). Brokers before cluster ids (0.10.1) have neither.
CLUSTER_ID_NAMES = ("kafka.server:type=KafkaServer,name=ClusterId", "kafka.server:type=ControllerServer,name=ClusterId")
CLUSTER_ID_VALUE = "Value"


class ValueKind(Enum):
    """What a gauge's Value holds, member by member in a per-partition family."""

    FLAG = "flag"  # 0 or 1: a health flag, 1 on the partition's leader while it holds
    REPLICA_COUNT = "replica count"  # 0 off the leader; on it a count of replicas
    NUMBER = "number"  # anything else (sizes, offsets, lags, broker-wide counts): not a partition's health

    @property
    def usual_max(self) -> int | None:
        """The largest of the few small values most members of a per-partition family hold (a
        replication factor above 5 is rare; larger counts do occur), or None: every member holds
        a number of its own, so the family is read member by member."""
        return 1 if self is ValueKind.FLAG else 5 if self is ValueKind.REPLICA_COUNT else None


class Scope(Enum):
    BROKER = "broker"  # one per broker, no tags
    TOPIC = "topic"  # broker-wide, plus a topic=T twin created on the topic's first traffic
    PARTITION = "partition"  # topic=T,partition=N, one per hosted replica
    CONTROLLER = "controller"  # only on controller nodes under KRaft


@dataclass(frozen=True)
class MBeanSpec:
    domain: str
    type: str
    name: str
    kind: Kind
    since: str
    scope: Scope
    value_class: str = "java.lang.Integer"  # runtime class of a Gauge's Value
    event_type: str | None = None  # a Meter's EventType
    leader_only: bool = False  # non-zero only on the partition's leader (or counts led partitions)
    value_kind: ValueKind = ValueKind.NUMBER
    # The HealthFlags field (mbeans/health.py) this gauge shows: on a Partition gauge 1 while it
    # holds, on a ReplicaManager gauge the count of the led partitions where it holds.
    flag: str | None = None
    # A replica-count gauge's quantity, as mbeans/health.py's Profile.formula names it
    # (`isr_count`, `replicas_count`).
    quantity: str | None = None
    # What a health gauge's value means, as the reference of the published series says it
    # (docs/metrics.md is generated from it); per partition the leader's, 0 on other replicas.
    meaning: str | None = None

    @property
    def shows(self) -> str | None:
        """The health value this gauge shows (a Profile.formula name), None for other numbers."""
        return self.flag or self.quantity

    @property
    def key(self) -> tuple[str, str, str]:
        return self.domain, self.type, self.name

    @property
    def object_name(self) -> str:
        """`domain:type=T,name=N`: a broker-wide MBean's ObjectName, a per-partition family's
        without its topic and partition keys."""
        return f"{self.domain}:type={self.type},name={self.name}"

    def exists_in(self, version: str) -> bool:
        return parse_version(version) >= parse_version(self.since)


def _gauges(domain, type_, scope, specs, **common):
    return [MBeanSpec(domain, type_, name, Kind.GAUGE, since, scope, **{**common, **extra})
            for name, since, extra in specs]


def _meters(domain, type_, scope, specs):
    return [MBeanSpec(domain, type_, name, Kind.METER, since, scope, event_type=event)
            for name, since, event in specs]


REPLICA_MANAGER = _gauges("kafka.server", "ReplicaManager", Scope.BROKER, [
    ("UnderReplicatedPartitions", "0.8.0", {"leader_only": True, "flag": "under_replicated", "meaning":
                                      "Led partitions with fewer in-sync replicas than the replication factor."}),
    ("UnderMinIsrPartitionCount", "1.0.0", {"leader_only": True, "flag": "under_min_isr", "meaning":
                                      "Led partitions whose ISR is below min ISR."}),
    ("AtMinIsrPartitionCount", "2.3.0", {"leader_only": True, "flag": "at_min_isr", "meaning":
                                   "Led partitions whose ISR equals min ISR."}),
    ("ReassigningPartitions", "2.5.0", {"leader_only": True, "flag": "reassigning", "meaning":
                                  "Led partitions with adding or removing replicas."}),
    ("LeaderCount", "0.8.0", {"leader_only": True, "meaning": "Partitions this broker leads."}),
    ("PartitionCount", "0.8.0", {}),
    ("OfflineReplicaCount", "1.0.0", {}),
    ("PartitionsWithLateTransactionsCount", "3.2.0", {}),
    ("ProducerIdCount", "3.5.0", {}),
]) + _meters("kafka.server", "ReplicaManager", Scope.BROKER, [
    ("IsrShrinksPerSec", "0.8.0", "shrinks"),
    ("IsrExpandsPerSec", "0.8.0", "expands"),
    ("FailedIsrUpdatesPerSec", "0.11.0", "failedUpdates"),
])

PARTITION = _gauges("kafka.cluster", "Partition", Scope.PARTITION, [
    ("UnderReplicated", "0.8.2", {"leader_only": True, "value_kind": ValueKind.FLAG, "flag": "under_replicated",
                            "meaning": "1 while the partition has fewer in-sync replicas than its replication factor."}),
    ("UnderMinIsr", "1.0.0", {"leader_only": True, "value_kind": ValueKind.FLAG, "flag": "under_min_isr",
                        "meaning": "1 while the partition's ISR is below min ISR."}),
    ("AtMinIsr", "2.3.0", {"leader_only": True, "value_kind": ValueKind.FLAG, "flag": "at_min_isr",
                     "meaning": "1 while the partition's ISR equals min ISR."}),
    ("InSyncReplicasCount", "0.10.2", {"leader_only": True, "value_kind": ValueKind.REPLICA_COUNT,
                                       "quantity": "isr_count", "meaning": "The size of the partition's ISR."}),
    ("ReplicasCount", "0.10.2", {"leader_only": True, "value_kind": ValueKind.REPLICA_COUNT,
                                 "quantity": "replicas_count", "meaning": "The replication factor the "
                                 "under-replicated check uses (legacy: the full list, adding replicas included)."}),
    ("LastStableOffsetLag", "0.11.0", {"value_class": "java.lang.Long"}),  # the log's lag: no health value
])

BROKER_TOPIC_METRICS = _meters("kafka.server", "BrokerTopicMetrics", Scope.BROKER, [
    ("ReassignmentBytesInPerSec", "2.5.0", "bytes"),
    ("ReassignmentBytesOutPerSec", "2.5.0", "bytes"),
    ("ReplicationBytesInPerSec", "0.11.0", "bytes"),
    ("ReplicationBytesOutPerSec", "0.11.0", "bytes"),
]) + _meters("kafka.server", "BrokerTopicMetrics", Scope.TOPIC, [
    ("BytesInPerSec", "0.8.0", "bytes"),
    ("BytesOutPerSec", "0.8.0", "bytes"),
    ("MessagesInPerSec", "0.8.0", "messages"),
])

KAFKA_CONTROLLER = _gauges("kafka.controller", "KafkaController", Scope.CONTROLLER, [
    ("OfflinePartitionsCount", "0.8.0", {"meaning": "Partitions without a leader (the active controller's)."}),
    ("ActiveControllerCount", "0.8.0", {}),
    ("PreferredReplicaImbalanceCount", "0.8.2", {}),
    ("GlobalPartitionCount", "1.1.0", {}),
    ("GlobalTopicCount", "1.1.0", {}),
    ("ActiveBrokerCount", "2.8.0", {}),
    ("FencedBrokerCount", "2.8.0", {}),
]) + _meters("kafka.controller", "ControllerStats", Scope.CONTROLLER, [
    ("UncleanLeaderElectionsPerSec", "0.8.0", "elections"),
])

LOG = _gauges("kafka.log", "Log", Scope.PARTITION, [
    ("Size", "0.8.2", {"value_class": "java.lang.Long"}),
    ("LogEndOffset", "0.8.2", {"value_class": "java.lang.Long"}),
    ("LogStartOffset", "0.8.2", {"value_class": "java.lang.Long"}),
    ("NumLogSegments", "0.8.2", {}),
    # KIP-1257: the log's size in percent of retention.bytes, 0 while retention is unlimited (the
    # default). Served by the 4.4 broker here and not by 4.1; its name is in 4.3.1's jars, not 4.2.0's.
    ("RetentionSizeInPercent", "4.3.0", {}),
])

HEALTH_MBEANS: tuple[MBeanSpec, ...] = tuple(
    REPLICA_MANAGER + PARTITION + BROKER_TOPIC_METRICS + KAFKA_CONTROLLER + LOG
)


def default_metadata_mode(version: str) -> str:
    """How a cluster of this release keeps its metadata when nothing says otherwise: ZooKeeper
    before Kafka 3.3 (KRaft was early access from 2.8 and production-ready in 3.3), KRaft from
    3.3 on (ZooKeeper was removed in 4.0)."""
    return "kraft" if parse_version(version) >= (3, 3) else "zookeeper"


def health_mbeans(version: str) -> list[MBeanSpec]:
    """The catalog's MBeans that a broker of this Kafka version serves."""
    return [s for s in HEALTH_MBEANS if s.exists_in(version)]
