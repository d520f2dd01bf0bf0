"""What Kafka's partition-health MBeans are: names, kinds, attribute sets, value types, and the
release each first appeared in (spec: mbeans.md, semantics.md "Version table").

The simulator serves from this table and the scrape and recompute paths read it, so a name or a
version lives here once.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from mbeans.health import parse_version


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

    def object_name(self, topic: str | None = None, partition: int | None = None) -> str:
        """The ObjectName with keys in Kafka's registration order: type, name, topic, partition."""
        text = f"{self.domain}:type={self.type},name={self.name}"
        if topic is not None:
            text += f",topic={topic}"
        if partition is not None:
            text += f",partition={partition}"
        return text

    def exists_in(self, version: str) -> bool:
        return parse_version(version) >= parse_version(self.since)


def _gauges(domain, type_, scope, specs, **common):
    return [MBeanSpec(domain, type_, name, Kind.GAUGE, since, scope, **{**common, **extra})
            for name, since, extra in specs]


def _meters(domain, type_, scope, specs):
    return [MBeanSpec(domain, type_, name, Kind.METER, since, scope, event_type=event)
            for name, since, event in specs]


REPLICA_MANAGER = _gauges("kafka.server", "ReplicaManager", Scope.BROKER, [
    ("UnderReplicatedPartitions", "0.8.0", {"leader_only": True}),
    ("UnderMinIsrPartitionCount", "1.0.0", {"leader_only": True}),
    ("AtMinIsrPartitionCount", "2.3.0", {"leader_only": True}),
    ("ReassigningPartitions", "2.5.0", {"leader_only": True}),
    ("LeaderCount", "0.8.0", {"leader_only": True}),
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
    ("UnderReplicated", "0.8.2", {"leader_only": True}),
    ("UnderMinIsr", "1.0.0", {"leader_only": True}),
    ("AtMinIsr", "2.3.0", {"leader_only": True}),
    ("InSyncReplicasCount", "0.10.2", {"leader_only": True}),
    ("ReplicasCount", "0.10.2", {"leader_only": True}),
    ("LastStableOffsetLag", "0.11.0", {"value_class": "java.lang.Long"}),
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
    ("OfflinePartitionsCount", "0.8.0", {}),
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
])

HEALTH_MBEANS: tuple[MBeanSpec, ...] = tuple(
    REPLICA_MANAGER + PARTITION + BROKER_TOPIC_METRICS + KAFKA_CONTROLLER + LOG
)
_BY_KEY = {(s.domain, s.type, s.name): s for s in HEALTH_MBEANS}


def spec(domain: str, type_: str, name: str) -> MBeanSpec:
    try:
        return _BY_KEY[(domain, type_, name)]
    except KeyError:
        raise KeyError(f"{domain}:type={type_},name={name} is not in the health catalog") from None


def default_metadata_mode(version: str) -> str:
    """How a cluster of this release keeps its metadata when nothing says otherwise: ZooKeeper
    before Kafka 3.3 (KRaft was early access from 2.8 and production-ready in 3.3), KRaft from
    3.3 on (ZooKeeper was removed in 4.0)."""
    return "kraft" if parse_version(version) >= (3, 3) else "zookeeper"


def health_mbeans(version: str) -> list[MBeanSpec]:
    """The catalog's MBeans that a broker of this Kafka version serves."""
    v = parse_version(version)
    return [s for s in HEALTH_MBEANS if v >= parse_version(s.since)]
