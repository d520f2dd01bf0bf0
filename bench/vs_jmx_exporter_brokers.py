"""The brokers bench/vs_jmx_exporter.py measures against: the simulator, and a real Kafka 4.1 broker
holding as many partitions as this machine holds, each with its process's CPU seconds."""
from __future__ import annotations

import os
import re
import time
from contextlib import contextmanager
from dataclasses import dataclass

from bench import sidecar_setup as setup
from harness import processes

# The real broker: Kafka's own start script gives a broker 1 GiB (KAFKA_HEAP_OPTS); small segments
# and indexes (an index file is preallocated and mapped at its maximum size) keep each idle
# partition's footprint small.
REAL_BROKER_HEAP = ("-Xms1g", "-Xmx1g")
REAL_BROKER_CONFIG = {"log.segment.bytes": "1048576", "log.index.size.max.bytes": "16384"}
REAL_TOPIC_PARTITIONS = 1000  # partitions per topic created on the real broker
# What one broker holds comfortably here: each partition keeps its active segment's file open and
# maps its two indexes, and the machine allows 20,000 open files (hard limit) and 65,530 maps; at
# 10,000 partitions the broker had 10,133 files open, 20,361 maps, ~320 MiB of live heap. 15,000
# keeps a quarter of the file limit spare.
DEFAULT_REAL_PARTITIONS = 15_000



@dataclass
class Broker:
    label: str
    partitions: int
    host_port: str
    pid: int                      # the broker's process: its CPU seconds are read from /proc
    idle_cpu: float = 0.0         # its CPU seconds per second while nobody reads it

    def cpu(self) -> float:
        return setup.cpu_seconds(self.pid)

    def measure_idle(self, seconds: float = 5.0) -> None:
        c0, t0 = self.cpu(), time.monotonic()
        time.sleep(seconds)
        self.idle_cpu = max(0.0, (self.cpu() - c0) / (time.monotonic() - t0))

    def busy_cpu(self, c0: float, t0: float) -> float:
        """The broker's CPU seconds since (c0 = cpu(), t0 = time.monotonic()), less its idle share."""
        return self.cpu() - c0 - self.idle_cpu * (time.monotonic() - t0)


@contextmanager
def simulated_broker(partitions: int):
    sim = setup.start_simulator(partitions)  # Kafka 4.1's MBeans; manual clock: only busy logs move
    try:
        broker = Broker(f"simulator, {partitions:,} partitions", partitions, setup.host_port(sim.url), sim.pid)
        broker.measure_idle()
        yield broker
    finally:
        sim.stop()


@contextmanager
def real_broker(partitions: int):
    """One Kafka 4.1 broker (and its KRaft controller) holding `partitions` partitions, RF 1, in
    topics of REAL_TOPIC_PARTITIONS."""
    from harness import kafka

    # the harness's test heap (384 MiB) is for small clusters
    cluster = kafka.KafkaCluster("4.1", brokers=1, broker_config=REAL_BROKER_CONFIG, start_timeout=300,
                                 heap=REAL_BROKER_HEAP)
    try:
        t0 = time.monotonic()
        cluster.start()
        topics = _create_partitions(cluster, partitions)
        pid = cluster.brokers[1].process.pid
        print(f"real broker: Kafka {cluster.release.version}, {partitions:,} partitions in {topics} topics (RF 1), "
              f"ready in {time.monotonic() - t0:.0f} s; JVM {' '.join(REAL_BROKER_HEAP)} -XX:+UseSerialGC; "
              f"{_process_resources(pid)}", flush=True)
        broker = Broker(f"Kafka {cluster.release.version} broker, {partitions:,} partitions", partitions,
                        cluster.jmx_host_port(1), pid)
        broker.measure_idle()
        yield broker
        print(f"real broker at the end: {_process_resources(pid)}", flush=True)
    finally:
        cluster.remove()


def _create_partitions(cluster, partitions: int) -> int:
    """Topics of REAL_TOPIC_PARTITIONS partitions (RF 1) until `partitions`; returns when the broker
    holds a log for each and the metadata names a leader for each. (KafkaCluster.create_topic
    describes each new topic at once, which a broker still catching up on metadata refuses.)"""
    names = [f"bench-{i:03d}" for i in range(-(-partitions // REAL_TOPIC_PARTITIONS))]
    for i, name in enumerate(names):
        count = min(REAL_TOPIC_PARTITIONS, partitions - i * REAL_TOPIC_PARTITIONS)
        cluster.tool(cluster.release.topic_command, "--create", "--topic", name, "--partitions", str(count),
                     "--replication-factor", "1", "--bootstrap-server", cluster.bootstrap, timeout=300)
    data = cluster.brokers[1].directory / "data"
    processes.wait_until("a log for every partition", lambda: sum(
        1 for p in data.iterdir() if p.name.startswith("bench-")) == partitions, 600, interval=2.0)

    def leaders() -> bool:
        out = cluster.tool(cluster.release.topic_command, "--describe", "--bootstrap-server", cluster.bootstrap,
                           timeout=300, check=False)
        lines = [l for l in out.splitlines() if re.search(r"Topic:\s*bench-\d+\s+Partition:\s*\d", l)]
        return len(lines) == partitions and not any(re.search(r"Leader:\s*(-1|none)", l) for l in lines)
    processes.wait_until("a leader for every partition", leaders, 600, interval=5.0)
    return len(names)


def _process_resources(pid: int) -> str:
    try:
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        with open(f"/proc/{pid}/maps") as f:
            maps = sum(1 for _ in f)
        rss = next(int(line.split()[1]) for line in open(f"/proc/{pid}/status") if line.startswith("VmRSS"))
    except OSError:
        return "resources not readable"
    return f"open files {fds:,}, memory maps {maps:,}, RSS {rss // 1024:,} MiB"
