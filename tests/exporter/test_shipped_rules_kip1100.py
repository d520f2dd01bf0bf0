"""The shipped rules (rules/kafka-health.yml) on the MBeans KIP-1100 renamed in Kafka 4.2: the old
domain's name, the new one's, and both together (4.2 to 4.x serve both, the same gauge) give one
series under the new name's; with 1.x naming the two together are told apart by `_objectname`, as
jmx_exporter 1.x does. The names are Kafka's (RemoteStorageMetrics and AssignmentsManager in the
4.4 jars); tests/real/test_vs_kafka_4_1.py sees AssignmentsManager's on real 4.1 and 4.4 brokers,
the reader pool's exist only with tiered storage, which no test broker here runs."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.exporter.rule_runs import bean, run

HEALTH = (Path(__file__).resolve().parents[2] / "rules" / "kafka-health.yml").read_text()
POOL_OLD, POOL_NEW = "org.apache.kafka.storage.internals.log", "kafka.log.remote"
RENAMED = [  # (before 4.2, from 4.2, the series)
    ("org.apache.kafka.server:type=AssignmentsManager,name=QueuedReplicaToDirAssignments",
     "kafka.server:type=AssignmentsManager,name=QueuedReplicaToDirAssignments",
     "kafka_server_assignmentsmanager_queuedreplicatodirassignments"),
    (f"{POOL_OLD}:type=RemoteStorageThreadPool,name=RemoteLogReaderTaskQueueSize",
     f"{POOL_NEW}:type=RemoteStorageThreadPool,name=RemoteLogReaderTaskQueueSize",
     "kafka_log_remote_remotestoragethreadpool_remotelogreadertaskqueuesize"),
    (f"{POOL_OLD}:type=RemoteStorageThreadPool,name=RemoteLogReaderAvgIdlePercent",
     f"{POOL_NEW}:type=RemoteStorageThreadPool,name=RemoteLogReaderAvgIdlePercent",
     "kafka_log_remote_remotestoragethreadpool_remotelogreaderavgidlepercent"),
]


@pytest.mark.parametrize("old,new,name", RENAMED, ids=[r[2] for r in RENAMED])
def test_one_series_from_kafka_4_0_to_5_0(old, new, name):
    for served in ([old], [new], [old, new], [new, old]):  # 4.0 and 4.1; 5.0; 4.2 to 4.x
        samples = run(HEALTH, *(bean(n, ("Value", 3)) for n in served))
        assert [(s.name, s.labels, s.value, s.type) for s in samples] == [(name, (), 3, "gauge")], served


@pytest.mark.parametrize("old,new,name", RENAMED, ids=[r[2] for r in RENAMED])
def test_with_1x_naming_both_are_told_apart_by_objectname(old, new, name):
    samples = run(HEALTH, bean(old, ("Value", 3)), bean(new, ("Value", 3)), naming="1.x")
    domains = sorted(dict(s.labels)["_objectname"].split("<")[0] for s in samples if s.name == name)
    assert domains == sorted([old.split(":")[0], new.split(":")[0]])
    assert [(s.name, s.labels) for s in run(HEALTH, bean(new, ("Value", 3)), naming="1.x")] == [(name, ())]
