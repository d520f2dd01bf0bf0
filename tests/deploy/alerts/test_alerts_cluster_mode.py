"""The partition alerts in the cluster-wide mode (sidecar.mode: cluster), evaluated by a real
Prometheus scraping the sidecar: the broker alerts come once for the cluster (the one sidecar serves
the cluster's counts), the controller's offline count is the view's; the opt-in per-partition alerts
carry the partition's `leader` label, and a leaderless partition is named by
KafkaPartitionUnavailable. The Admin API is answered from a cluster model by harness/admin_wire.py
(Kafka's wire format over TCP; the simulator speaks JMX only), the rules are the shipped ones with
`for:` cut to seconds (scenario_run.rules_with_short_for). Expected alerts worked out by hand from
Kafka's definitions (semantics kafka-4.1: kafka-3.7's gauges plus the eligible leader replicas,
KIP-966, which the model's cluster has on), by Prometheus 2 and Prometheus 3 each. The same
Prometheus answer the dashboard's ELR row (dashboard_panels.CLUSTER_MODE): every query of it returns
data."""
from __future__ import annotations

import threading

from kafka_jmx_sidecar.exporter.http.server import MetricsServer
from kafka_jmx_sidecar.exporter.config.load import load
from kafka_jmx_sidecar.exporter.commands.serve import make_collector
from harness.admin_wire import AdminWire
from kafka_jmx_sidecar.mbeans.simulator import cluster as clusters
import time

from tests.deploy.alerts.dashboard_panels import CLUSTER_MODE, numbers_returned, targets
from tests.deploy.alerts.scenario_run import (AT, OFFLINE, PER_PARTITION, REPO, RULES, URP, alerts,
                                              rules_with_short_for, settle_all)
from tests.e2e.prometheus_server import VERSIONS, Prometheus

UNAVAILABLE = "KafkaPartitionUnavailable"
ELR_CLEAN, ELR_NONE = "KafkaOfflinePartitionsEligibleLeader", "KafkaOfflinePartitionsNoEligibleLeader"
URP_1, AT_1 = "KafkaUnderReplicatedPartition", "KafkaAtMinIsrPartition"  # the per-partition ones
# Broker 3 is down. orders-0: ISR [1,2] of 3, min ISR 2: under-replicated, at min ISR with a replica
# missing. audit-0: only on broker 3, no leader (its last ISR member kept): unavailable, 0 on every
# broker gauge, counted by the controller's OfflinePartitionsCount. payments-0 healthy. With ELR on:
# events-0 leaderless with an empty ISR and broker 3 its eligible leader (clean once 3 is back, as
# audit-0 through its ISR); ledger-0 leaderless with ISR and ELR empty (its ELR cleared): no clean
# leader. Offline 3, of which clean 2 and no clean leader 1. Each broker alert once, for the
# cluster; each per-partition alert once per partition.
MODEL = {
    "brokers": [1, 2, 3], "controllers": [1], "offline": [3],
    "features": {"eligible.leader.replicas.version": 1},
    "topics": [
        {"name": "orders", "config": {"min.insync.replicas": 2},
         "partitions": [{"replicas": [1, 2, 3], "isr": [1, 2], "leader": 1}]},
        {"name": "payments", "config": {"min.insync.replicas": 1},
         "partitions": [{"replicas": [1, 2], "isr": [1, 2], "leader": 2}]},
        {"name": "audit", "config": {"min.insync.replicas": 1},
         "partitions": [{"replicas": [3], "isr": [3], "leader": None}]},
        {"name": "events", "config": {"min.insync.replicas": 1},
         "partitions": [{"replicas": [3], "isr": [], "leader": None, "eligible_leader_replicas": [3]}]},
        {"name": "ledger", "config": {"min.insync.replicas": 1},
         "partitions": [{"replicas": [3], "isr": [], "leader": None, "eligible_leader_replicas": [],
                         "last_known_elr": [3]}]},
    ],
}
EXPECTED = frozenset(alerts(URP) | alerts(AT) | alerts(OFFLINE) | alerts(ELR_CLEAN) | alerts(ELR_NONE)
                     | alerts(URP_1, "orders-0") | alerts(AT_1, "orders-0")
                     | alerts(UNAVAILABLE, "audit-0") | alerts(UNAVAILABLE, "events-0") | alerts(UNAVAILABLE, "ledger-0"))


def test_cluster_mode_alerts(tmp_path):
    wire = AdminWire(clusters.normalize(MODEL)).start()
    config = tmp_path / "cluster.yml"
    config.write_text(f"{(REPO / 'rules' / 'kafka-cluster.yml').read_text()}\nsidecar:\n  mode: cluster\n"
                      f"  recompute:\n    semantics: kafka-4.1\n  admin:\n    bootstrapServers: {wire.bootstrap}\n")
    loaded = load(str(config), {"poll_interval_seconds": 0.5, "listen_address": "127.0.0.1:0"})
    collector = make_collector(loaded, str(config))
    server = MetricsServer("127.0.0.1", 0, collector, loaded.web)
    stop = threading.Event()
    poller = threading.Thread(target=collector.run, args=(stop,), daemon=True)
    server.start()
    poller.start()
    proms: dict[str, Prometheus] = {}
    try:
        rules = [str(rules_with_short_for(tmp_path, r)) for r in (RULES, PER_PARTITION)]
        for version in VERSIONS:
            proms[version] = Prometheus.of(version, f"127.0.0.1:{server.port}", rule_files=rules)
        started = time.time()
        assert settle_all(proms, EXPECTED) == {v: EXPECTED for v in VERSIONS}
        for prom in proms.values():
            _check_firing_and_dashboard(prom, started)
    finally:
        for prom in proms.values():
            prom.stop()
        stop.set()
        poller.join(15)
        server.stop()
        wire.stop()


def _check_firing_and_dashboard(prom: Prometheus, started: float) -> None:
    """What fires in one Prometheus, with its values and labels, and the ELR row's queries."""
    firing = [a for a in prom.alerts() if a["state"] == "firing"]
    # the cluster's alerts name no partition and count one each; the per-partition ones carry
    # the partition's leader as the cluster view serves it
    assert {(a["labels"]["alertname"], float(a["value"])) for a in firing if "partition" not in a["labels"]} == \
        {(URP, 1.0), (AT, 1.0), (OFFLINE, 3.0), (ELR_CLEAN, 2.0), (ELR_NONE, 1.0)}
    assert not any("leader" in a["labels"] or "topic" in a["labels"] for a in firing
                   if a["labels"]["alertname"] in (URP, AT, OFFLINE))
    leaders = {(a["labels"]["alertname"], a["labels"]["leader"]) for a in firing if "partition" in a["labels"]}
    assert leaders == {(URP_1, "1"), (AT_1, "1"), (UNAVAILABLE, "none")}
    assert prom.value("kafka_controller_kafkacontroller_offlinepartitionscount") == 3
    for where, expr in targets(CLUSTER_MODE):
        assert numbers_returned(prom, expr, started, time.time()), f"{where}: no data ({expr})"
