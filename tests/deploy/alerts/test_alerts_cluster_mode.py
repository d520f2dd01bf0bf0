"""The partition alerts in the cluster-wide mode (sidecar.mode: cluster), evaluated by a real
Prometheus scraping the sidecar: the per-partition series carry a `leader` label, a leaderless
partition is named by KafkaPartitionUnavailable and the controller's count stays quiet (it would
page twice for the same partition). The Admin API is answered from a cluster model by
harness/admin_wire.py (Kafka's wire format over TCP; the simulator speaks JMX only), the rules are the
shipped ones with `for:` cut to seconds (scenario_run.rules_with_short_for). Expected alerts worked
out by hand from Kafka's definitions (kafka-3.7)."""
from __future__ import annotations

import threading

from kafka_jmx_sidecar.exporter.http.server import MetricsServer
from kafka_jmx_sidecar.exporter.config.load import load
from kafka_jmx_sidecar.exporter.commands.serve import make_collector
from harness.admin_wire import AdminWire
from kafka_jmx_sidecar.mbeans.simulator import cluster as clusters
from tests.deploy.alerts.scenario_run import (AT, OFFLINE, REPO, URP, alerts, rules_with_short_for, settle)
from tests.e2e.prometheus_server import Prometheus

UNAVAILABLE = "KafkaPartitionUnavailable"
# Broker 3 is down. orders-0: ISR [1,2] of 3, min ISR 2: under-replicated, at min ISR with a replica
# missing. audit-0: only on broker 3, no leader (its last ISR member kept): unavailable, 0 on every
# broker gauge. payments-0 healthy.
MODEL = {
    "brokers": [1, 2, 3], "controllers": [1], "offline": [3],
    "topics": [
        {"name": "orders", "config": {"min.insync.replicas": 2},
         "partitions": [{"replicas": [1, 2, 3], "isr": [1, 2], "leader": 1}]},
        {"name": "payments", "config": {"min.insync.replicas": 1},
         "partitions": [{"replicas": [1, 2], "isr": [1, 2], "leader": 2}]},
        {"name": "audit", "config": {"min.insync.replicas": 1},
         "partitions": [{"replicas": [3], "isr": [3], "leader": None}]},
    ],
}
EXPECTED = frozenset(alerts(URP, "orders-0") | alerts(AT, "orders-0") | alerts(UNAVAILABLE, "audit-0"))


def test_cluster_mode_alerts(tmp_path):
    wire = AdminWire(clusters.normalize(MODEL)).start()
    config = tmp_path / "cluster.yml"
    config.write_text(f"{(REPO / 'rules' / 'kafka-cluster.yml').read_text()}\nsidecar:\n  mode: cluster\n"
                      f"  admin:\n    bootstrapServers: {wire.bootstrap}\n")
    loaded = load(str(config), {"poll_interval_seconds": 0.5, "listen_address": "127.0.0.1:0"})
    collector = make_collector(loaded, str(config))
    server = MetricsServer("127.0.0.1", 0, collector, loaded.web)
    stop = threading.Event()
    poller = threading.Thread(target=collector.run, args=(stop,), daemon=True)
    server.start()
    poller.start()
    prom = None
    try:
        prom = Prometheus(f"127.0.0.1:{server.port}", rule_files=[str(rules_with_short_for(tmp_path))])
        seen = settle(prom, EXPECTED)
        assert seen == EXPECTED
        # the alerts carry the partition's leader as the cluster view serves it
        leaders = {(a["labels"]["alertname"], a["labels"]["leader"]) for a in prom.alerts() if a["state"] == "firing"}
        assert leaders == {(URP, "1"), (AT, "1"), (UNAVAILABLE, "none")}
        # the controller's count is served (1) and its alert is silent only because of the view
        assert prom.value("kafka_controller_kafkacontroller_offlinepartitionscount") == 1
        assert (OFFLINE, "") not in seen
    finally:
        if prom:
            prom.stop()
        stop.set()
        poller.join(15)
        server.stop()
        wire.stop()
