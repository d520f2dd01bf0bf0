"""The reassignment series, real against real: a throttled reassignment on a
3-broker Kafka 4.4 cluster (the brokers count reassignment bytes themselves) and on a 2.4
ZooKeeper cluster (no reassignment meters before 2.5: the sidecar estimates them from the adding
replica's growth and says so, estimated="true").

    moving-0 (RF 1 on broker 1, MOVING_RECORDS records) is moved to [1, 2], throttled;
    while it copies, steady-0 (RF 3, led by broker 1) takes STEADY_RECORDS records with acks=all.

A sidecar next to each broker (poll.collector.Collector in this process, one poll per
reading). The two releases play side by side, each on a cluster of its own. Checked against what the brokers' disks and tools show, never against the sidecar:
- the leader's remaining bytes for moving-0 fall while the tool says it copies, with a finite ETA,
  and are gone (max lag 0) once `--verify` says the reassignment is complete;
- the reassignment bytes over the run are moving-0's log size on disk (In on broker 2, adding, equal
  to Out on broker 1, its leader): exactly, when estimated from the log's growth; from the meters,
  plus the partial batches a fetch cut and the follower fetched again (REFETCHED);
- the replication that is not reassignment, summed over the brokers, is what the produce made:
  steady-0's log (its segment files on the leader's disk) fetched by its 2 followers, In and Out,
  within the same partial batches;
- the throttled rates are the tool's --throttle on 4.4; 2.4 sends them as sensitive (hidden).
"""
from __future__ import annotations

import math
import re
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kafka_jmx_sidecar.exporter.poll.collector import Collector
from kafka_jmx_sidecar.exporter.source.broker import JmxSource
from kafka_jmx_sidecar.exporter.config.load import broker_settings
from kafka_jmx_sidecar.exporter.config.load import load
from kafka_jmx_sidecar.exporter.poll.snapshot import TEXT, assemble
from harness import processes
from harness.kafka import KafkaCluster
from harness.sidecar import config_text

# Small fetches make the throttle hold (the quota is checked before each fetch over an 11 s
# window; see test_health_vs_brokers): ~2 MB at 50 kB/s copy in ~40 s, several polls' worth.
MOVING_RECORDS, STEADY_RECORDS, RECORD_SIZE, THROTTLE = 20_000, 5_000, 100, 50_000
BROKER_CONFIG = {"replica.fetch.max.bytes": "16384", "controlled.shutdown.retry.backoff.ms": "200"}
WINDOW = 10
# A fetch cut at replica.fetch.max.bytes may end inside a record batch: the follower counts the
# bytes it received (ReplicationBytesIn, and the leader Out), appends the whole batches and fetches
# the cut one again. So the meters exceed the logs on disk by the cut batches: 0.65% and 1.0% for
# moving-0 in two 4.1 runs (steady-0, fetched as produced, was exact); this bound leaves room, well
# under a second copy.
REFETCHED = 0.05
RULES = r"""includeObjectNames:
  - "kafka.server:type=BrokerTopicMetrics,name=Re*"
rules:
- pattern: 'kafka.server<type=BrokerTopicMetrics, name=(\w+)><>Count'
  name: kafka_server_brokertopicmetrics_$1_total
  type: COUNTER
"""
REASSIGNMENT, OTHER = "kafka_reassignment_bytes_total", "kafka_replication_non_reassignment_bytes_total"
REMAINING, ETA, MAX_LAG = ("kafka_reassignment_partition_remaining_bytes", "kafka_reassignment_partition_eta_seconds",
                           "kafka_reassignment_max_lag_bytes")
MOVING = (("move", "replicas"), ("partition", "0"), ("topic", "moving"))

_SAMPLE = re.compile(r"^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$")
_LABEL = re.compile(r'(\w+)="([^"]*)"')


def series(text: str) -> dict[tuple[str, tuple], float]:
    out = {}
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if m:
            out[(m.group(1), tuple(sorted(_LABEL.findall(m.group(2) or ""))))] = float(m.group(3))
    return out


def log_bytes(cluster: KafkaCluster, broker: int, topic: str) -> int:
    """The partition's segment files on the broker's disk (what DescribeLogDirs sums, read apart)."""
    return sum(f.stat().st_size for f in (cluster.brokers[broker].directory / "data" / f"{topic}-0").glob("*.log"))


class Sidecars:
    def __init__(self, cluster: KafkaCluster, directory: Path):
        self.cluster = cluster
        self.collectors = {}
        block = (f"  reassignment:\n    rateWindowSeconds: {WINDOW}\n"
                 f"  admin:\n    bootstrapServers: {cluster.bootstrap}\n")
        for b in cluster.brokers:
            path = directory / f"sidecar-{b}.yml"
            path.write_text(config_text(cluster.jmx_host_port(b), RULES, block))
            loaded = load(str(path))
            settings = loaded.settings
            self.collectors[b] = Collector(lambda cfg, s=settings: JmxSource(cfg, broker_settings(cfg, s)), loaded.config, settings)

    def read(self) -> dict[int, dict]:
        out = {}
        for b, c in self.collectors.items():
            assert c.poll_once(), f"the sidecar of broker {b}: {c.last_error}"
            text = b"".join(assemble(c.snapshot, TEXT, b"", gzip_wanted=False)[1]).decode()
            out[b] = series(text + c.metrics.render(TEXT, c.snapshot.taken_at, False).decode())
        return out

    def close(self) -> None:
        for c in self.collectors.values():
            c.close()
            if c._admin is not None:
                c._admin.close()


def total(readings: dict[int, dict], name: str, direction: str, estimated: str) -> float:
    key = (("direction", direction), ("estimated", estimated))
    return sum(r[(name, key)] for r in readings.values())


def copying(cluster: KafkaCluster) -> bool:
    line = next(l for l in cluster.describe("moving").splitlines() if re.search(r"\bPartition:\s*0\b", l))
    return not re.search(r"Isr:\s*1,2|Isr:\s*2,1", line)


RUNS = {"4.4": "false", "2.4": "true"}  # release -> the estimated label of its reassignment series


@dataclass
class Run:
    """What one release's run showed: the sidecars' readings (broker -> series) and the logs on disk."""

    moving_size: int
    before: dict[int, dict]
    progress: list[tuple]  # (remaining, eta, max lag) on the leader's sidecar while the tool showed the copy
    throttles: dict[int, dict]
    leader_running: bool
    steady_size: int = 0
    after: dict[int, dict] = field(default_factory=dict)


def observe(release: str, directory: Path) -> Run:
    """The run on a cluster of its own (small replica fetches; every byte replicated on it is
    counted), removed, every PID checked gone, once the counts have settled."""
    cluster = KafkaCluster(release, brokers=3, broker_config=BROKER_CONFIG)
    pids: set[int] = set()
    sidecars = None
    try:
        cluster.start()
        pids.update(cluster.pids())
        cluster.create_topics({"moving": dict(assignment=[[1]]), "steady": dict(assignment=[[1, 2, 3]])})
        cluster.produce("moving", records=MOVING_RECORDS, record_size=RECORD_SIZE)
        sidecars = Sidecars(cluster, directory)
        run = Run(log_bytes(cluster, 1, "moving"), sidecars.read(), [], {}, False)
        cluster.reassign({("moving", 0): [1, 2]}, throttle=THROTTLE)
        cluster.produce("steady", records=STEADY_RECORDS, record_size=RECORD_SIZE, acks="all")
        while copying(cluster) and len(run.progress) < 60:
            r = sidecars.read()[1]
            if (REMAINING, MOVING) in r:
                run.progress.append((r[(REMAINING, MOVING)], r.get((ETA, MOVING)), r[(MAX_LAG, ())]))
            time.sleep(1)
        run.throttles = sidecars.read()
        cluster.finish_reassignment()
        run.leader_running = cluster.brokers[1].running
        cluster.wait_for(lambda: len({log_bytes(cluster, b, "steady") for b in (1, 2, 3)}) == 1
                         and log_bytes(cluster, 2, "moving") == run.moving_size, "the followers to catch up", 120)
        run.steady_size = log_bytes(cluster, 1, "steady")
        after = sidecars.read()
        # the counts settle within a fetch or two after the logs do
        estimated = RUNS[release]
        for _ in range(10):
            time.sleep(1)
            again = sidecars.read()
            if again == after or all(total(again, OTHER, d, estimated) == total(after, OTHER, d, estimated)
                                     for d in ("in", "out")):
                break
            after = again
        run.after = after
        return run
    finally:
        if sidecars is not None:
            sidecars.close()
        pids.update(cluster.pids())
        cluster.remove()
        assert not [p for p in pids if processes.pid_alive(p)], f"Kafka {release} processes still running after stop"


@pytest.fixture(scope="module")
def runs(request, tmp_path_factory) -> dict[str, Future]:
    """release -> its run, for the releases the session's tests ask for, played side by side from
    the module's first test (each mostly waits for the throttled copy)."""
    from kafka_jmx_sidecar.exporter.source.jmx.jvm import start_jvm

    start_jvm()  # the collectors' JVM (JPype) started by the main thread, not by a worker
    wanted = {item.callspec.params["release"] for item in request.session.items
              if item.module is request.module and "release" in getattr(getattr(item, "callspec", None), "params", {})}
    with ThreadPoolExecutor(max_workers=len(RUNS), thread_name_prefix="reassignment-run") as pool:
        yield {release: pool.submit(observe, release, tmp_path_factory.mktemp(f"reassignment-{release}"))
               for release in RUNS if release in wanted}


@pytest.mark.parametrize("release, estimated", list(RUNS.items()))
def test_throttled_reassignment_progress_and_traffic(runs, release, estimated):
    run = runs[release].result()
    moving_size, before, progress, throttles, after = run.moving_size, run.before, run.progress, run.throttles, run.after
    assert all(r[(MAX_LAG, ())] == 0 for r in before.values())
    assert not any(k[0] == REMAINING for r in before.values() for k in r)

    during = progress[-1] if progress else None
    assert len(progress) >= 3, f"too few readings while copying: {progress}"
    remaining = [p[0] for p in progress]
    assert remaining == sorted(remaining, reverse=True) and remaining[0] > remaining[-1], remaining
    assert 0 < remaining[0] <= moving_size
    finite = [eta for left, eta, _ in progress if left > 0 and eta is not None and math.isfinite(eta) and eta > 0]
    assert finite, f"no finite ETA while copying: {progress}"
    assert all(lag == left for left, _, lag in progress)  # one adding replica: its lag is the max

    rate = "kafka_replication_throttled_rate_bytes_per_second"
    leader_rate, follower_rate = (rate, (("throttle", "leader"),)), (rate, (("throttle", "follower"),))
    if release == "4.4":  # the tool throttles the moving partition's leader and its adding follower
        assert (throttles[1][leader_rate], throttles[2][follower_rate]) == (THROTTLE, THROTTLE)
    else:
        assert leader_rate not in throttles[1] and follower_rate not in throttles[2]
        assert throttles[1][("kafka_jmx_sidecar_reassignment_inputs_unknown",
                             (("input", "throttle_rates"), ("reason", "hidden")))] == 1

    assert run.leader_running
    steady_size = run.steady_size
    assert after[1][(MAX_LAG, ())] == 0
    assert not any(k[0] in (REMAINING, ETA) for r in after.values() for k in r)

    def gained(name, direction, broker=None):
        pick = (lambda r: {broker: r[broker]}) if broker else (lambda r: r)
        return total(pick(after), name, direction, estimated) - total(pick(before), name, direction, estimated)

    moved_in, moved_out = gained(REASSIGNMENT, "in", 2), gained(REASSIGNMENT, "out", 1)
    other_in, other_out = gained(OTHER, "in"), gained(OTHER, "out")
    shown = (f"moving-0 {moving_size} B on disk, moved in {moved_in} out {moved_out}; steady-0 {steady_size} B "
             f"on disk, other in {other_in} out {other_out}; during the copy {during}")
    # what one broker sent the other received, and no other broker moved anything
    assert moved_in == moved_out == gained(REASSIGNMENT, "in") == gained(REASSIGNMENT, "out"), shown
    assert other_in == other_out, shown
    if estimated == "true":  # the adding replica's growth: its log on disk exactly
        assert moved_in == moving_size, shown
    else:
        assert moving_size <= moved_in <= moving_size * (1 + REFETCHED), shown
    # steady-0's log fetched by its 2 followers, and the partial batches fetched again (on 2.4 the
    # moving log's ones too: the estimate counts what was written, the meters what was sent)
    partial = REFETCHED * (2 * steady_size + (moving_size if estimated == "true" else 0))
    assert 2 * steady_size <= other_in <= 2 * steady_size + partial, shown
