"""The `openTelemetry:` push against real receivers on loopback: Prometheus 3's OTLP receiver
(http/protobuf) and an OTLP/gRPC service (grpc). `kafka-jmx-sidecar serve` polls the simulator
and pushes; what arrives must be what /metrics serves, under the names Prometheus' OTLP
translation gives them back (a counter pushed without `_total` stored with it)."""
from __future__ import annotations

import re
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from harness.sidecar import Serve, config_text, host_port, naming_block
from kafka_jmx_sidecar.mbeans.simulator import Simulator
from tests.e2e.otlp_grpc_receiver import GrpcReceiver
from tests.e2e.prometheus_server import Prometheus
from tests.e2e.sidecar_harness import HEALTH_RULES

# Broker 1 leads orders-0..1 (RF 3, min ISR 2); audit-0 (RF 2) is led by broker 2.
CLUSTER = {
    "brokers": [1, 2, 3], "controllers": [1],
    "topics": [
        {"name": "orders", "config": {"min.insync.replicas": 2},
         "partitions": [{"replicas": [1, 2, 3], "isr": [1, 2, 3], "leader": 1} for _ in range(2)]},
        {"name": "audit", "config": {"min.insync.replicas": 1},
         "partitions": [{"replicas": [2, 3], "isr": [2, 3], "leader": 2}]},
    ],
}
URP = "kafka_server_replicamanager_underreplicatedpartitions"
# One untyped family beside the health rules' gauges and counters (the first rule that matches wins).
UNTYPED_RULE = """rules:
  - pattern: kafka.server<type=ReplicaManager, name=(LeaderCount)><>Value
    name: kafka_untyped_$1
"""
# The broker's series, not the sidecar's own (whose values move between a scrape and a push).
BROKER_SERIES = re.compile(r"kafka_(?!jmx_sidecar_).+")
OWN_LABELS = {"job", "instance", "otel_scope_name", "otel_scope_version", "otel_scope_schema_url"}


@pytest.fixture(scope="module")
def sim():
    with Simulator.start(CLUSTER, kafka_version="4.1", broker=1) as s:
        yield s


def sidecar_config(tmp_path, sim, block: str, naming: str = "0.x"):
    rules = HEALTH_RULES.read_text().replace("rules:\n", UNTYPED_RULE, 1)
    path = tmp_path / "sidecar.yml"
    path.write_text(config_text(host_port(sim.url), rules, "  pollIntervalSeconds: 1\n" + naming_block(naming),
                                head=block))
    return path


def served(text: str) -> dict[tuple, float]:
    """{(name as Prometheus stores it, labels): value} of the broker's series in a /metrics text."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if BROKER_SERIES.fullmatch(s.name) and not s.name.endswith("_created"):
                out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def stored(prom: Prometheus, job: str) -> dict[tuple, float]:
    """The same, as Prometheus holds it for `job` (its own labels left out)."""
    out = {}
    for r in prom.query(f'{{job="{job}", __name__=~"kafka_.+", __name__!~"kafka_jmx_sidecar_.+"}}'):
        labels = {k: v for k, v in r["metric"].items() if k not in OWN_LABELS}
        out[(labels.pop("__name__"), tuple(sorted(labels.items())))] = float(r["value"][1])
    return out


def wait_equal(actual, expected, what: str, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while True:
        want, got = expected(), actual()
        if got == want:
            return got
        if time.monotonic() > deadline:
            missing, extra = set(want) - set(got), set(got) - set(want)
            differ = {k: (want[k], got[k]) for k in set(want) & set(got) if want[k] != got[k]}
            raise AssertionError(f"{what}: missing {sorted(missing)[:5]}, unexpected {sorted(extra)[:5]}, "
                                 f"different (served, arrived) {dict(list(differ.items())[:5])}")
        time.sleep(0.5)


def self_metric(text: str, name: str, **labels: str) -> float:
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                return s.value
    raise AssertionError(f"{name}{labels} not served")


def test_prometheus_3_receives_over_http_protobuf_what_metrics_serves(sim, tmp_path):
    prom = Prometheus.v3(flags=("--web.enable-otlp-receiver",))
    failed = False
    sim.apply({"op": "produce", "topic": "orders", "bytes": 4_000_000, "messages": 4_000})
    sim.advance(5)
    try:
        block = (f"openTelemetry:\n  endpoint: {prom.url}/api/v1/otlp\n  protocol: http/protobuf\n  interval: 1\n"
                 f"  serviceName: kafka-otlp\n  resourceAttributes: {{deployment.environment: e2e}}\n")
        with Serve(sidecar_config(tmp_path, sim, block)) as sidecar:
            metrics = lambda: served(sidecar.get())  # noqa: E731
            arrived = wait_equal(lambda: stored(prom, "kafka-otlp"), metrics, "pushed series")
            # a counter that moved: the followers fetched what was produced
            assert prom.value('kafka_server_brokertopicmetrics_replicationbytesout_total{job="kafka-otlp"}') > 0
            # gauges, counters (pushed without _total: Prometheus adds it to a monotonic Sum, and to
            # nothing else) and untyped, all there
            names = {name for name, _ in arrived}
            assert {URP, "kafka_untyped_leadercount", "kafka_server_brokertopicmetrics_reassignmentbytesin_total",
                    "kafka_cluster_partition_underreplicated"} <= names
            assert prom.value(f'{URP}{{job="kafka-otlp"}}') == 0
            sim.apply({"op": "fail_broker", "broker": 3})
            failed = True
            sim.advance(5)
            # a changed value arrives too: both orders partitions lose a replica
            prom.wait_for(f'{URP}{{job="kafka-otlp"}}', 2, timeout=30)
            wait_equal(lambda: stored(prom, "kafka-otlp"), metrics, "pushed series after a broker failed")
            # the resource: job and instance from service.name and service.instance.id (the JMX target)
            info = prom.query('target_info{job="kafka-otlp"}')
            assert [r["metric"]["instance"] for r in info] == [host_port(sim.url)]
            assert info[0]["metric"]["deployment_environment"] == "e2e"
            # the sidecar's own metrics ride along, its histogram as one
            assert prom.value('jmx_scrape_error{job="kafka-otlp"}') == 0
            assert prom.value('kafka_jmx_sidecar_poll_duration_seconds_count{job="kafka-otlp"}') > 0
            text = sidecar.get()
            assert self_metric(text, "kafka_jmx_sidecar_otlp_pushes_total", result="success") > 0
            assert self_metric(text, "kafka_jmx_sidecar_otlp_pushes_total", result="failure") == 0
    finally:
        if failed:
            sim.apply({"op": "restore_broker", "broker": 3})
        prom.stop()


def test_grpc_receiver_gets_what_metrics_serves_in_1x_naming(sim, tmp_path):
    with GrpcReceiver() as receiver:
        block = (f"openTelemetry:\n  endpoint: http://127.0.0.1:{receiver.port}\n  protocol: grpc\n  interval: 1\n"
                 f"  headers:\n    X-Tenant: ${{OTLP_TENANT}}\n")  # gRPC metadata: sent lowercase
        with Serve(sidecar_config(tmp_path, sim, block, naming="1.x"), env={"OTLP_TENANT": "team-a"}) as sidecar:
            def expected():
                out = {}
                for (name, labels), value in served(sidecar.get()).items():
                    kind = "sum" if name.endswith("_total") else "gauge"  # the health rules' counters
                    out[(name[:-6] if kind == "sum" else name, labels)] = (kind, value)
                return out

            def arrived():
                return {(name, labels): point for name, series in receiver.points().items()
                        if BROKER_SERIES.fullmatch(name) for labels, point in series.items()}

            got = wait_equal(arrived, expected, "series pushed over grpc")
            assert ("kafka_server_brokertopicmetrics_reassignmentbytesin", ()) in got  # a counter, as a Sum
        assert receiver.headers[-1]["x-tenant"] == "team-a"
        resource = receiver.resource()
        assert resource["service.name"] == "kafka-jmx-sidecar"
        assert resource["service.instance.id"] == host_port(sim.url)


def test_a_receiver_that_is_down_is_counted_logged_once_and_never_stops_the_sidecar(sim, tmp_path):
    receiver = GrpcReceiver()  # its port, not listening yet
    block = (f"openTelemetry:\n  endpoint: http://127.0.0.1:{receiver.port}\n  protocol: grpc\n  interval: 1\n"
             f"  timeoutSeconds: 1\n")
    with Serve(sidecar_config(tmp_path, sim, block)) as sidecar:
        deadline = time.monotonic() + 30
        while self_metric(sidecar.get(), "kafka_jmx_sidecar_otlp_pushes_total", result="failure") < 2:
            assert time.monotonic() < deadline, "no two failed pushes in 30 s"
            time.sleep(0.5)
        assert sidecar.status("/-/ready") == 200
        assert URP in sidecar.get()
        with receiver:
            receiver.wait_for(lambda points: URP in points)
            deadline = time.monotonic() + 30
            while "succeed again" not in sidecar.log.read_text():
                assert time.monotonic() < deadline, "the recovery was not logged"
                time.sleep(0.2)
    log = sidecar.log.read_text()
    assert len(re.findall(r"push to \S+ failed", log)) == 1, log
    assert "Traceback" not in log
