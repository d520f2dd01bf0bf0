"""Backfill equals live, against a real Kafka 4.4 cluster (three brokers): `serve` next to broker 1,
with the Admin API and `sidecar.recompute.mode: all` (every health family recomputed from the
archived counts, lists and min ISR), archives while a real Prometheus scrapes it and the cluster
goes healthy -> broker 3 stopped (topics at min ISR) -> broker 3 back -> a throttled reassignment
-> its end. The archive, backfilled with the same configuration and imported with promtool into a
second Prometheus, returns every kafka_* series the live Prometheus holds, with the same labels
and values, after each archived poll (tests/e2e/test_backfill_equals_live.py says when and why)."""
from __future__ import annotations

import time

from tests.e2e.prometheus_server import Prometheus
from tests.e2e.sidecar_harness import HEALTH_RULES
from tests.e2e.test_backfill_equals_live import POLLS_PER_STEP, end_and_compare, wait_for_polls
from tests.e2e.test_operations import Serve

TOPICS = {"held": [[1, 2, 3], [2, 3, 1], [1, 3, 2]], "moved": [[1, 2]]}


def test_backfilled_archive_equals_what_prometheus_scraped_of_a_real_broker(real_kafka, tmp_path, spark):
    cluster = real_kafka("4.4", brokers=3)
    cluster.create_topics({name: dict(assignment=assignment, min_isr=2) for name, assignment in TOPICS.items()})
    cluster.produce("moved", records=3000, record_size=1000)  # 3 MB to move at 100 kB/s
    directory = tmp_path / "archive"
    serve = Serve(tmp_path, cluster.jmx_url(1), {
        "pollIntervalSeconds": 1,
        "namesRefreshSeconds": 0.01,
        "archive": f"{{directory: {directory}}}",
        "recompute": "{mode: all}",
        "admin": f"{{bootstrapServers: '{cluster.bootstrap}', logDirs: false}}",
    }, rules=HEALTH_RULES.read_text())
    live = Prometheus(f"127.0.0.1:{serve.port}", scrape_interval="200ms")

    def alive():
        assert serve.proc.poll() is None, serve.log[-3000:]

    def step(what: str, action=None, settled=None) -> None:
        if action is not None:
            action()
        if settled is not None:
            cluster.wait_for(settled, what, 120)
        wait_for_polls(directory, POLLS_PER_STEP, time.time(), alive, what, timeout=120)

    def isr_sizes() -> list[int]:
        return [int(len(line.split("Isr:")[1].split()[0].split(","))) for line in cluster.describe("held").splitlines()
                if "Isr:" in line]

    try:
        step("healthy", settled=lambda: isr_sizes() == [3, 3, 3])
        step("broker 3 stopped", lambda: cluster.stop_broker(3), lambda: isr_sizes() == [2, 2, 2])
        step("broker 3 back", lambda: cluster.start_broker(3), lambda: isr_sizes() == [3, 3, 3])
        step("a throttled reassignment", lambda: cluster.reassign({("moved", 0): [1, 3]}, throttle=100_000),
             lambda: "Adding Replicas: 3" in cluster.describe("moved"))
        step("its end", lambda: cluster.finish_reassignment(),
             lambda: "Adding" not in cluster.describe("moved"))
        moved = end_and_compare(serve, {"2": live}, directory, tmp_path)
        assert {"kafka_server_replicamanager_underreplicatedpartitions",
                "kafka_server_replicamanager_atminisrpartitioncount",
                "kafka_server_replicamanager_reassigningpartitions",
                "kafka_cluster_partition_atminisr"} <= moved, moved
    finally:
        serve.kill()
        live.stop()
        if not cluster.brokers[3].running:
            cluster.start_broker(3)
