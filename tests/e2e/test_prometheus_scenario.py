"""A real Prometheus scrapes the sidecar while the simulator plays a scenario; its query API must
return the health values Kafka's rules give at each step (derived by hand from Kafka's definitions)."""
from __future__ import annotations

import subprocess
import time

import bcrypt
import pytest

from kafka_jmx_sidecar.exporter.http.web_config import load_web_config
from kafka_jmx_sidecar.mbeans.simulator import Simulator
from tests.e2e.prometheus_server import Prometheus
from tests.e2e.sidecar_harness import Sidecar

# Broker 1 (also the KRaft controller) leads orders-0..2 (RF 3, min ISR 2) and payments-0
# (RF 2, min ISR 1); audit-0 (RF 2 on brokers 2 and 3) is led elsewhere.
CLUSTER = {
    "brokers": [1, 2, 3], "controllers": [1],
    "topics": [
        {"name": "orders", "config": {"min.insync.replicas": 2},
         "partitions": [{"replicas": [1, 2, 3], "isr": [1, 2, 3], "leader": 1} for _ in range(3)]},
        {"name": "payments", "config": {"min.insync.replicas": 1},
         "partitions": [{"replicas": [1, 2], "isr": [1, 2], "leader": 1}]},
        {"name": "audit", "config": {"min.insync.replicas": 1},
         "partitions": [{"replicas": [2, 3], "isr": [2, 3], "leader": 2}]},
    ],
}
URP = "kafka_server_replicamanager_underreplicatedpartitions"
UNDER = "kafka_server_replicamanager_underminisrpartitioncount"
AT = "kafka_server_replicamanager_atminisrpartitioncount"
REASSIGNING = "kafka_server_replicamanager_reassigningpartitions"
OFFLINE = "kafka_controller_kafkacontroller_offlinepartitionscount"

# (event, {metric: value}) - each expectation worked out by hand under Kafka 4.1 (kafka-3.7 rules)
STEPS = [
    (None, {URP: 0, UNDER: 0, AT: 0, REASSIGNING: 0, OFFLINE: 0}),
    # orders ISR [1,2]: 3 - 2 > 0 is URP; 2 == min(2, 3) is AtMinIsr. payments untouched.
    ({"op": "fail_broker", "broker": 3}, {URP: 3, UNDER: 0, AT: 3}),
    # orders-0 ISR [1]: below min ISR 2, no longer at it.
    ({"op": "shrink_isr", "topic": "orders", "partition": 0, "broker": 2}, {URP: 3, UNDER: 1, AT: 2}),
    # broker 3 catches up: orders-1,2 full; orders-0 ISR [1,3] is URP and at min ISR.
    ({"op": "restore_broker", "broker": 3}, {URP: 1, UNDER: 0, AT: 1}),
    ({"op": "expand_isr", "topic": "orders", "partition": 0, "broker": 2}, {URP: 0, UNDER: 0, AT: 0}),
    ({"op": "produce", "topic": "payments", "bytes": 40_000_000, "messages": 40_000}, {URP: 0}),
    # payments-0 [1,2] -> [1,3]: replicas [1,2,3], adding [3]; KIP-352: RF 2, ISR 2, not URP.
    ({"op": "start_reassignment", "topic": "payments", "partition": 0, "replicas": [1, 3], "auto_complete": False},
     {URP: 0, REASSIGNING: 1, AT: 0}),
    ({"op": "complete_reassignment", "topic": "payments", "partition": 0}, {URP: 0, REASSIGNING: 0}),
    # brokers 2 and 3 down: orders ISR [1] (URP, under min 2), payments [1,3] ISR [1] (URP, at
    # min 1); audit-0 has no live replica: offline, seen only by the controller.
    ({"op": "fail_broker", "broker": 2}, {URP: 3, AT: 3, UNDER: 0}),
    ({"op": "fail_broker", "broker": 3}, {URP: 4, UNDER: 3, AT: 1, OFFLINE: 1}),
    # broker 2 rejoins orders and payments' ISRs... but audit-0 stays offline: only broker 3, its
    # last in-sync replica, may lead it without an unclean election.
    ({"op": "restore_broker", "broker": 2}, {URP: 4, UNDER: 0, AT: 4, OFFLINE: 1}),
    ({"op": "restore_broker", "broker": 3}, {URP: 0, UNDER: 0, AT: 0, OFFLINE: 0}),
]


@pytest.fixture(scope="module")
def sim():
    with Simulator.start(CLUSTER, kafka_version="4.1", broker=1) as s:
        yield s


def test_prometheus_sees_every_step(sim, tmp_path):
    with Sidecar(sim.url, tmp_path) as sidecar:
        prom = Prometheus(sidecar.target, scrape_interval="1s")
        try:
            for event, expected in STEPS:
                if event:
                    sim.apply(event)
                    sim.advance(5)
                for metric, value in expected.items():
                    prom.wait_for(metric, value, timeout=30)
            # reassignment bytes flowed out of the leader while payments-0 moved, and stayed counted
            assert prom.value("kafka_server_brokertopicmetrics_reassignmentbytesout_total") > 0
            assert prom.value('up{job="kafka"}') == 1
        finally:
            prom.stop()


def test_prometheus_scrapes_over_tls_with_basic_auth(sim, tmp_path):
    def openssl(*args):
        subprocess.run(["openssl", *args], cwd=tmp_path, check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.crt",
            "-days", "1", "-subj", "/CN=sidecar", "-addext", "subjectAltName=IP:127.0.0.1")
    hashed = bcrypt.hashpw(b"scrape-me", bcrypt.gensalt(rounds=4)).decode()
    (tmp_path / "web.yml").write_text(
        f"tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
        f"basic_auth_users:\n  prometheus: '{hashed}'\n")
    web = load_web_config(str(tmp_path / "web.yml"))
    with Sidecar(sim.url, tmp_path, web=web) as sidecar:
        good = Prometheus(sidecar.target, scheme="https", basic_auth=("prometheus", "scrape-me"),
                          ca_file=str(tmp_path / "server.crt"))
        bad = Prometheus(sidecar.target, scheme="https", basic_auth=("prometheus", "wrong"),
                         ca_file=str(tmp_path / "server.crt"))
        try:
            good.wait_for('up{job="kafka"}', 1, timeout=30)
            good.wait_for(URP, 0, timeout=30)
            bad.wait_for('up{job="kafka"}', 0, timeout=30)
            # Both Prometheus scrape from 127.0.0.1, and the sidecar checks one password per client
            # address at a time: a scrape of one that meets the other's check gets a 429 (by design),
            # so a 429 may come first; the wrong password's own answer, a 401, must follow.
            deadline, error = time.monotonic() + 30, ""
            while "401" not in error and time.monotonic() < deadline:
                error = bad.target_health()[0].get("lastError") or ""
                time.sleep(0.2)
            assert "401" in error, error
        finally:
            good.stop()
            bad.stop()
