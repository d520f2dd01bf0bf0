"""Saved `kafka-topics.sh --describe` output of several Kafka releases, typed by hand in each
release's format, with what every partition line says.

Formats (TopicCommand):
- 4.x: header `Topic: X\\tTopicId: <uuid>\\tPartitionCount: N\\tReplicationFactor: R\\tConfigs: k=v,...`
  (only non-default configs; a value may hold commas), optional `\\tMarkedForDeletion: true`;
  partition line `\\tTopic: X\\tPartition: 0\\tLeader: 1|none\\tReplicas: ..\\tIsr: ..`, then
  `\\tAdding Replicas: ..\\tRemoving Replicas: ..` only while a reassignment is listed, then
  (3.8+) `\\tElr: ..|N/A\\tLastKnownElr: ..|N/A`.
- 2.x (Scala TopicCommand): the header without TopicId, partition lines without Elr.
- ZooKeeper-era 1.x/2.0: headers without a space after the colons, leader -1 when none, and in
  some versions an `\\tOffline: ..` column.
- Filtered describes (--under-replicated-partitions etc.) print no header lines.

EXPECTED_* map (topic, partition) to the state the line describes:
(leader or None, replicas, isr, adding, removing, min_isr).
"""
from __future__ import annotations

KAFKA_4_1 = (
    "Topic: orders\tTopicId: 3kmHx0kQSz2bWBfSNp0bZA\tPartitionCount: 3\tReplicationFactor: 3\t"
    "Configs: leader.replication.throttled.replicas=0:1,1:2,min.insync.replicas=2,segment.bytes=1073741824\n"
    "\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2,3\tElr: N/A\tLastKnownElr: N/A\n"
    "\tTopic: orders\tPartition: 1\tLeader: 2\tReplicas: 2,3,1\tIsr: 2,3\tElr: N/A\tLastKnownElr: N/A\n"
    "\tTopic: orders\tPartition: 2\tLeader: 3\tReplicas: 3,1,2,4\tIsr: 3,1,2\tAdding Replicas: 4\t"
    "Removing Replicas: 2\tElr: N/A\tLastKnownElr: N/A\n"
    "Topic: refbin-test\tTopicId: q0hY2lW0S7Kp9Rzv1xWb3g\tPartitionCount: 1\tReplicationFactor: 1\tConfigs: \n"
    "\tTopic: refbin-test\tPartition: 0\tLeader: none\tReplicas: 2\tIsr: \tElr: 2\tLastKnownElr: 2\n"
    "Topic: compacted\tTopicId: Zp1c8mQ6TnWlq3jJ2m0k1A\tPartitionCount: 1\tReplicationFactor: 2\t"
    "Configs: cleanup.policy=compact,delete,min.insync.replicas=3\n"
    "\tTopic: compacted\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1,2\tElr: N/A\tLastKnownElr: N/A\n"
    "Topic: doomed\tTopicId: 7xJc4Q0aR8mN5vB2zK9pLw\tPartitionCount: 1\tReplicationFactor: 2\t"
    "Configs: min.insync.replicas=2\tMarkedForDeletion: true\n"
    "\tTopic: doomed\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1\tElr: N/A\tLastKnownElr: N/A\n"
)
EXPECTED_4_1 = {
    ("orders", 0): (1, [1, 2, 3], [1, 2, 3], [], [], 2),
    ("orders", 1): (2, [2, 3, 1], [2, 3], [], [], 2),
    ("orders", 2): (3, [3, 1, 2, 4], [3, 1, 2], [4], [2], 2),
    ("refbin-test", 0): (None, [2], [], [], [], 1),
    ("compacted", 0): (1, [1, 2], [1, 2], [], [], 3),
    ("doomed", 0): (1, [1, 2], [1], [], [], 2),
}
# Flags per profile (R reassigning, U under-replicated, B under min ISR, A at min ISR,
# X unavailable), worked out by hand:
# orders-0  full ISR, 3 vs min 2: nothing.
# orders-1  3-2>0 URP; 2 == 2 at min.
# orders-2  rf 4-1 = 3, 3 in sync: not URP (KIP-352); legacy 3 < 4 URP. 3 != 2.
# refbin-test-0  the real 4.1 ELR line: broker gauges see only "unavailable"; kafka-topics.sh
#           listed it as under-replicated (1-0), under min ISR (no leader) and unavailable.
# compacted-0  min 3 over RF 2: kafka-3.7 min(3,2) = 2 == 2 at min; raw 2 < 3 under min.
# doomed-0  1 < 2: URP and under min.
FLAGS_4_1 = {
    "kafka-3.7": {("orders", 0): "", ("orders", 1): "UA", ("orders", 2): "R",
                  ("refbin-test", 0): "X", ("compacted", 0): "A", ("doomed", 0): "UB"},
    "kafka-2.5": {("orders", 0): "", ("orders", 1): "UA", ("orders", 2): "R",
                  ("refbin-test", 0): "X", ("compacted", 0): "B", ("doomed", 0): "UB"},
    "legacy": {("orders", 0): "", ("orders", 1): "UA", ("orders", 2): "RU",
               ("refbin-test", 0): "X", ("compacted", 0): "B", ("doomed", 0): "UB"},
    "topic-command": {("orders", 0): "", ("orders", 1): "UA", ("orders", 2): "R",
                      ("refbin-test", 0): "UBX", ("compacted", 0): "B", ("doomed", 0): "UB"},
}

KAFKA_2_8 = (
    "Topic: events\tPartitionCount: 3\tReplicationFactor: 3\tConfigs: min.insync.replicas=2,retention.ms=86400000\n"
    "\tTopic: events\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2\n"
    "\tTopic: events\tPartition: 1\tLeader: 2\tReplicas: 2,3,1,4\tIsr: 2,3,1,4\tAdding Replicas: 4\tRemoving Replicas: 1\n"
    "\tTopic: events\tPartition: 2\tLeader: none\tReplicas: 3,1,2\tIsr: 3\n"
    "Topic: audit\tPartitionCount: 1\tReplicationFactor: 1\tConfigs: \n"
    "\tTopic: audit\tPartition: 0\tLeader: 1\tReplicas: 1\tIsr: 1\n"
)
EXPECTED_2_8 = {
    ("events", 0): (1, [1, 2, 3], [1, 2], [], [], 2),
    ("events", 1): (2, [2, 3, 1, 4], [2, 3, 1, 4], [4], [1], 2),
    ("events", 2): (None, [3, 1, 2], [3], [], [], 2),
    ("audit", 0): (1, [1], [1], [], [], 1),
}
# events-0  URP, 2 == 2 at min.
# events-1  all four in sync: ISR larger than rf 3, not URP anywhere (legacy: 4 < 4 no).
# events-2  no leader, last ISR member kept: broker gauges "unavailable"; kafka-topics.sh
#           3-1>0 URP, under min, 1 != 2, unavailable.
# audit-0   healthy RF 1, min 1: at min.
FLAGS_2_8 = {
    "kafka-3.7": {("events", 0): "UA", ("events", 1): "R", ("events", 2): "X", ("audit", 0): "A"},
    "kafka-2.5": {("events", 0): "UA", ("events", 1): "R", ("events", 2): "X", ("audit", 0): "A"},
    "legacy": {("events", 0): "UA", ("events", 1): "R", ("events", 2): "X", ("audit", 0): "A"},
    "topic-command": {("events", 0): "UA", ("events", 1): "R", ("events", 2): "UBX", ("audit", 0): "A"},
}

KAFKA_1_1_ZOOKEEPER = (
    "Topic:legacy\tPartitionCount:3\tReplicationFactor:3\tConfigs:min.insync.replicas=2\n"
    "\tTopic: legacy\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2,3\n"
    "\tTopic: legacy\tPartition: 1\tLeader: -1\tReplicas: 2,3,1\tIsr: 2\n"
    "\tTopic: legacy\tPartition: 2\tLeader: 3\tReplicas: 3,1,2\tIsr: 3,1\tOffline: 2\n"
    "Topic:plain\tPartitionCount:1\tReplicationFactor:2\tConfigs:\n"
    "\tTopic: plain\tPartition: 0\tLeader: 2\tReplicas: 2,1\tIsr: 2\n"
)
EXPECTED_1_1 = {
    ("legacy", 0): (1, [1, 2, 3], [1, 2, 3], [], [], 2),
    ("legacy", 1): (None, [2, 3, 1], [2], [], [], 2),
    ("legacy", 2): (3, [3, 1, 2], [3, 1], [], [], 2),
    ("plain", 0): (2, [2, 1], [2], [], [], 1),
}
# legacy-1  leader -1 = none. legacy-2 URP, 2 == 2 at min. plain-0 URP, 1 == 1 at min.
FLAGS_1_1 = {
    "kafka-3.7": {("legacy", 0): "", ("legacy", 1): "X", ("legacy", 2): "UA", ("plain", 0): "UA"},
    "kafka-2.5": {("legacy", 0): "", ("legacy", 1): "X", ("legacy", 2): "UA", ("plain", 0): "UA"},
    "legacy": {("legacy", 0): "", ("legacy", 1): "X", ("legacy", 2): "UA", ("plain", 0): "UA"},
    "topic-command": {("legacy", 0): "", ("legacy", 1): "UBX", ("legacy", 2): "UA", ("plain", 0): "UA"},
}

# `kafka-topics.sh --describe --under-replicated-partitions` (4.1): no header lines, so min ISR
# comes from --default-min-isr (the brokers' setting).
FILTERED_4_1 = (
    "\tTopic: orders\tPartition: 1\tLeader: 2\tReplicas: 2,3,1\tIsr: 2,3\tElr: N/A\tLastKnownElr: N/A\n"
    "\tTopic: doomed\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1\tElr: N/A\tLastKnownElr: N/A\n"
    "\tTopic: refbin-test\tPartition: 0\tLeader: none\tReplicas: 2\tIsr: \tElr: 2\tLastKnownElr: 2\n"
)

SAMPLES = {
    "4.1": (KAFKA_4_1, EXPECTED_4_1, FLAGS_4_1),
    "2.8": (KAFKA_2_8, EXPECTED_2_8, FLAGS_2_8),
    "1.1-zookeeper": (KAFKA_1_1_ZOOKEEPER, EXPECTED_1_1, FLAGS_1_1),
}


# --- captured from real releases by tests/real/test_health_vs_brokers.py ----------------------------

# Kafka 0.11.0.3, `kafka-topics.sh --zookeeper ZK --describe` (it reads ZooKeeper), three brokers:
# broker 3 stopped, then broker 2, the active controller and the last live replica leading moving-0,
# moving-1 and pairs-1. ZooKeeper still names broker 2 their leader: its successor (broker 1)
# elects no one for them and rewrites nothing (KafkaController.onControllerFailover). At that
# moment the real TopicCommand --unavailable-partitions listed REAL_0_11_UNAVAILABLE, the
# controller's OfflinePartitionsCount read 4, and broker 1 (the only live broker) read
# UnderReplicatedPartitions 10 and LeaderCount 11. (0.11 does not delete topics by default, so the
# harness's probe topic stays.)
REAL_0_11_DEAD_CONTROLLER = (
    "Topic:__probe_b149c6ba\tPartitionCount:1\tReplicationFactor:3\tConfigs:\n"
    "\tTopic: __probe_b149c6ba\tPartition: 0\tLeader: 1\tReplicas: 1,3,2\tIsr: 1\n"
    "Topic:moving\tPartitionCount:2\tReplicationFactor:2\tConfigs:min.insync.replicas=2\n"
    "\tTopic: moving\tPartition: 0\tLeader: 2\tReplicas: 2\tIsr: 2\n"
    "\tTopic: moving\tPartition: 1\tLeader: 2\tReplicas: 2,3\tIsr: 2\n"
    "Topic:orders\tPartitionCount:3\tReplicationFactor:3\tConfigs:min.insync.replicas=2\n"
    "\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1\n"
    "\tTopic: orders\tPartition: 1\tLeader: 1\tReplicas: 2,3,1\tIsr: 1\n"
    "\tTopic: orders\tPartition: 2\tLeader: 1\tReplicas: 3,1,2\tIsr: 1\n"
    "Topic:pairs\tPartitionCount:3\tReplicationFactor:2\tConfigs:min.insync.replicas=2\n"
    "\tTopic: pairs\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1\n"
    "\tTopic: pairs\tPartition: 1\tLeader: 2\tReplicas: 2,3\tIsr: 2\n"
    "\tTopic: pairs\tPartition: 2\tLeader: 1\tReplicas: 3,1\tIsr: 1\n"
    "Topic:relaxed\tPartitionCount:3\tReplicationFactor:3\tConfigs:\n"
    "\tTopic: relaxed\tPartition: 0\tLeader: 1\tReplicas: 2,3,1\tIsr: 1\n"
    "\tTopic: relaxed\tPartition: 1\tLeader: 1\tReplicas: 3,1,2\tIsr: 1\n"
    "\tTopic: relaxed\tPartition: 2\tLeader: 1\tReplicas: 1,2,3\tIsr: 1\n"
    "Topic:single\tPartitionCount:2\tReplicationFactor:1\tConfigs:\n"
    "\tTopic: single\tPartition: 0\tLeader: 1\tReplicas: 1\tIsr: 1\n"
    "\tTopic: single\tPartition: 1\tLeader: -1\tReplicas: 3\tIsr: 3\n"
    "Topic:strict\tPartitionCount:1\tReplicationFactor:2\tConfigs:min.insync.replicas=3\n"
    "\tTopic: strict\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1\n"
)
REAL_0_11_UNAVAILABLE = {("moving", 0), ("moving", 1), ("pairs", 1), ("single", 1)}
REAL_0_11_LIVE_BROKERS = "1"
