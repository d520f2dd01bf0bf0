"""The dashboard's reassignment progress row (helm/kafka-jmx-sidecar/files/dashboard.json, the
row tests/deploy/alerts/dashboard_panels.py gives to this module), real against real: every query
of it returns data from a real Prometheus scraping the sidecars of a real Kafka 4.4 cluster while a
throttled reassignment runs; the rest of the dashboard is fed by the simulator scenario
(tests/deploy/alerts/test_dashboard.py). The broker info series its filters and legends use names
the real brokers.

    MOVING (RF 1 on broker 1, RECORDS records of RECORD_SIZE bytes) is moved to [1, 2] with the
    tool's --throttle THROTTLE, which throttles broker 1's leader and broker 2's follower
    replication and names both replicas in the topic's throttled-replica lists.

The shared 3-broker cluster (real_kafka) keeps Kafka's default replica.fetch.max.bytes (1 MiB):
each throttled fetch takes up to 1 MiB, then the quota (checked over an 11 s window) holds the
next one, so the copy goes in steps of 1 MiB about 11 s apart and lasts several steps. A sidecar
next to broker 1 (the leader) and one next to broker 2 (the adding replica), each in this process
as `serve` runs it (tests/e2e/sidecar_harness.py) with `sidecar.admin` and `sidecar.reassignment`
and the shipped rules, scraped every second by one Prometheus job. The topic is deleted at the end
(which lifts the throttle first: finish_reassignment), so the shared cluster is as it was.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass

import pytest

from tests.deploy.alerts.dashboard_panels import REAL_BROKER, numbers_returned, targets
from tests.e2e.prometheus_server import Prometheus
from tests.e2e.sidecar_harness import Sidecar
from harness.kafka import KafkaCluster

MOVING = "dashboard-moving"
RECORDS, RECORD_SIZE, THROTTLE = 30_000, 100, 50_000  # ~3 MB: three 1 MiB steps at least
# rateWindowSeconds: longer than the ~11 s between the copy's steps, as a user's should be (the
# default is 60 s); a shorter window sees no fall between two steps, and the ETA is +Inf there
WINDOW = 15
REMAINING = f'kafka_reassignment_partition_remaining_bytes{{topic="{MOVING}",partition="0",move="replicas"}}'


def sidecar_block(cluster: KafkaCluster) -> str:
    return (f"sidecar:\n  reassignment:\n    rateWindowSeconds: {WINDOW}\n"
            f"  admin:\n    bootstrapServers: {cluster.bootstrap}\n")


def log_bytes(cluster: KafkaCluster, broker: int) -> int:
    """The moving partition's segment files on the broker's disk (what DescribeLogDirs sums)."""
    return sum(f.stat().st_size for f in (cluster.brokers[broker].directory / "data" / f"{MOVING}-0").glob("*.log"))


def copying(cluster: KafkaCluster) -> bool:
    line = next(l for l in cluster.describe(MOVING).splitlines() if re.search(r"\bPartition:\s*0\b", l))
    return not re.search(r"Isr:\s*(1,2|2,1)\b", line)


@dataclass
class Run:
    prom: Prometheus
    moving_size: int
    instances: dict[int, str]  # broker -> its sidecar's `instance` label
    started: float = 0.0
    ended: float = 0.0


@pytest.fixture(scope="module")
def progress_run(real_kafka, tmp_path_factory):
    cluster = real_kafka("4.4", brokers=3)
    cluster.create_topic(MOVING, assignment=[[1]])
    try:
        cluster.produce(MOVING, records=RECORDS, record_size=RECORD_SIZE)
        tmp = tmp_path_factory.mktemp("dashboard")
        sidecars = []
        for b in (1, 2):
            (tmp / str(b)).mkdir()
            sidecars.append(Sidecar(cluster.jmx_url(b), tmp / str(b), poll_seconds=1.0, extra=sidecar_block(cluster)))
        for s in sidecars:
            s.__enter__()
        prom, reassigning = None, False
        try:
            prom = Prometheus([s.target for s in sidecars], scrape_interval="1s")
            run = Run(prom, log_bytes(cluster, 1), {b: s.target for b, s in zip((1, 2), sidecars)})
            prom.wait_for("count(kafka_reassignment_max_lag_bytes)", 2, timeout=60)  # both sidecars polled
            run.started = time.time()
            cluster.reassign({(MOVING, 0): [1, 2]}, throttle=THROTTLE)
            reassigning = True
            # until the copy ends (or 90 s), so every query had a chance; ended while it still copies
            deadline = time.monotonic() + 90
            while copying(cluster) and time.monotonic() < deadline:
                run.ended = time.time()
                time.sleep(1)
            yield run
        finally:
            if prom is not None:
                prom.stop()
            for s in reversed(sidecars):
                s.__exit__(None, None, None)
            if reassigning:
                cluster.finish_reassignment()
    finally:
        cluster.tool(cluster.release.topic_command, "--delete", "--topic", MOVING, *cluster.topic_target())


@pytest.mark.parametrize("where,expr", targets(REAL_BROKER), ids=[w for w, _ in targets(REAL_BROKER)])
def test_every_progress_query_returned_data_while_the_reassignment_ran(progress_run, where, expr):
    run = progress_run
    numbers = numbers_returned(run.prom, expr, run.started, run.ended)
    assert numbers, f"{where}: no data while the reassignment ran ({expr})"


def test_remaining_bytes_fell_while_the_partition_copied(progress_run):
    """What the "Bytes left" panel draws: the leader's log (nothing is produced meanwhile) less the
    adding replica's, so it starts at most at the log's size on disk, never rises, and falls."""
    run = progress_run
    series = run.prom.query_range(REMAINING, run.started, run.ended, 1)
    assert len(series) == 1, series
    values = [v for _, v in next(iter(series.values()))]
    assert 0 < values[0] <= run.moving_size, (values[0], run.moving_size)
    assert all(a >= b for a, b in zip(values, values[1:])), values
    assert values[-1] < values[0], values


def test_the_throttle_panels_show_what_the_tool_set(progress_run):
    """--throttle sets both throttled rates on the brokers of the move and names the moving
    partition's leader replica (broker 1) and adding replica (broker 2) in the topic's lists."""
    run = progress_run

    def seen(expr: str) -> dict[tuple[int, str], list[float]]:
        out = {}
        for labels, values in run.prom.query_range(expr, run.started, run.ended, 1).items():
            fields = dict(f.split("=", 1) for f in labels.split(","))
            broker = next(b for b, i in run.instances.items() if i == fields["instance"])
            out[(broker, fields["throttle"])] = [v for _, v in values]
        return out

    rates = {k: set(v) for k, v in seen("kafka_replication_throttled_rate_bytes_per_second").items()}
    assert rates == {(b, t): {THROTTLE} for b in (1, 2) for t in ("leader", "follower")}, rates  # only once set
    replicas = {k: v[-1] for k, v in seen("kafka_replication_throttled_replicas").items()}  # 0 before the tool ran
    assert replicas == {(1, "leader"): 1, (1, "follower"): 0, (2, "leader"): 0, (2, "follower"): 1}, replicas


def test_each_sidecar_names_its_broker_and_cluster(progress_run, real_kafka):
    """kafka_jmx_sidecar_broker_info, which the dashboard's cluster and broker filters and its
    legends use, from real brokers: app-info's id and Version, and the cluster id their storage
    was formatted with (meta.properties)."""
    run, cluster = progress_run, real_kafka("4.4", brokers=3)
    properties = (cluster.brokers[1].directory / "data" / "meta.properties").read_text()
    cluster_id = re.search(r"^cluster\.id=(\S+)$", properties, re.M)[1]
    seen = set()
    for labels in run.prom.query_range("kafka_jmx_sidecar_broker_info", run.started, run.ended, 1):
        fields = dict(f.split("=", 1) for f in labels.split(","))
        seen.add((fields["instance"], fields["broker_id"], fields["cluster_id"], fields["broker_version"]))
    assert seen == {(run.instances[b], str(b), cluster_id, cluster.release.version) for b in (1, 2)}, seen
