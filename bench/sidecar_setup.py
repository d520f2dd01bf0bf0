"""What the sidecar benchmarks share: the machine's load, a simulated broker, a generated sidecar
configuration, one timed poll split into its phases, and plain JPype access to the broker for the
baselines. Not a benchmark itself.
"""
from __future__ import annotations

import os
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness.sidecar import host_port

REPO = Path(__file__).resolve().parents[1]

HEALTH_RULES = REPO / "rules" / "kafka-health.yml"
# the shared reference data sits beside the repository (../shared/reference)
STRIMZI_RULES = REPO.parent / "shared" / "reference" / "rules" / "strimzi-kafka-metrics.yml"


def machine() -> str:
    load = os.getloadavg()
    return (f"{os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} "
            f"(other processes share these CPUs: times scale with the load)")


# The seed of the simulator's log values: every bench run serves the same partitions the same values.
LOG_VALUES_SEED = 1


def start_simulator(partitions: int, **kwargs):
    """The simulator at `partitions` partitions (3 brokers, RF 3, posing as broker 1) with realistic
    log values (mbeans/simulator/values.py): sizes, offsets and lags as a production broker's (most
    partitions idle, some written to between polls, a few lagging), not all 0."""
    from kafka_jmx_sidecar.mbeans.simulator import Simulator
    from kafka_jmx_sidecar.mbeans.simulator.values import LogValues

    t0 = time.monotonic()
    values = LogValues(seed=LOG_VALUES_SEED)
    sim = Simulator.start(partitions=partitions, log_values=values, **kwargs)
    print(f"simulator: {partitions:,} partitions, ready in {time.monotonic() - t0:.1f} s ({sim.url}); log values "
          f"{values}", flush=True)
    return sim


def start_jvm(options: list[str] | None) -> list[str]:
    """Start this process's JVM with `options` (None: the sidecar's defaults) before anything else
    does; returns the options used."""
    from kafka_jmx_sidecar.exporter.source.jmx import JmxSettings
    from kafka_jmx_sidecar.exporter.source.jmx import start_jvm as start
    from kafka_jmx_sidecar.exporter.config.sidecar import DEFAULT_JVM_OPTIONS

    options = list(DEFAULT_JVM_OPTIONS) if options is None else options
    start(JmxSettings(jvm_options=tuple(options)))
    return options


def write_config(jmx_url: str, rules: Path, extra: str = "", directory: str | None = None) -> Path:
    """jmx_exporter YAML: hostPort, then the rule file unchanged, then `extra` (a `sidecar:` block)."""
    d = Path(directory or tempfile.mkdtemp(prefix="sidecar-bench-"))
    path = d / "sidecar.yml"
    path.write_text(f"hostPort: {host_port(jmx_url)}\n{rules.read_text()}\n{extra}")
    return path


@dataclass
class Poll:
    seconds: float  # read + rules + render with compression: one poll of the collector
    phases: dict[str, float]  # names, queries, reads, assemble, rules, render (with gzip)
    round_trips: int
    queries: int
    mbeans: int
    series: int
    body_bytes: int  # uncompressed, the format rendered
    gzip_bytes: int
    gzip_seconds: float  # compressing that body alone, measured again after the poll


class Pipeline:
    """The sidecar's collector, polled in this thread as `serve` polls it (gc.freeze included),
    in the steady state of a sidecar that Prometheus scrapes: only OpenMetrics is rendered."""

    def __init__(self, config_path: Path, connections: int | None = None):
        from kafka_jmx_sidecar.exporter.poll.collector import Collector
        from kafka_jmx_sidecar.exporter.source.broker import JmxSource
        from kafka_jmx_sidecar.exporter.config.load import broker_settings
        from kafka_jmx_sidecar.exporter.rule_engine.config import load_config
        from kafka_jmx_sidecar.exporter.config.sidecar import SidecarSettings
        from kafka_jmx_sidecar.exporter.poll.snapshot import OPENMETRICS

        self.config = load_config(str(config_path))
        chosen = {} if connections is None else {"connections": connections}  # None: the default
        self.settings = SidecarSettings(names_refresh_seconds=3600, **chosen)
        self.collector = Collector(lambda c: JmxSource(c, broker_settings(c, self.settings)), self.config, self.settings,
                                   freeze_gc=True)
        self.format = OPENMETRICS
        self.collector._requested = {OPENMETRICS: time.monotonic()}  # what Prometheus asks for

    @property
    def source(self):
        return self.collector.source

    def poll(self) -> Poll:
        import zlib

        c = self.collector
        c._requested[self.format] = time.monotonic()
        t0 = time.perf_counter()
        if not c.poll_once():
            raise RuntimeError(f"poll failed: {c.last_error}")
        seconds = time.perf_counter() - t0
        snap = c.snapshot
        members = snap.members(self.format)  # one gzip member per chunk of families
        body = b"".join(zlib.decompress(m, 31) for m in members)
        member = b"".join(members)
        g0 = time.perf_counter()
        z = zlib.compressobj(1, zlib.DEFLATED, 31)
        z.compress(body)
        z.flush()
        gz = time.perf_counter() - g0
        last = c.last_poll
        return Poll(seconds, dict(last.phases), last.round_trips, last.queries, last.mbeans, last.series,
                    len(body), len(member), gz)

    def close(self) -> None:
        self.collector.close()


def timed_poll(c) -> tuple[float, dict[str, float]]:
    """One poll of an in-process Collector as Prometheus asking for OpenMetrics would make it:
    its wall time and its phases."""
    from kafka_jmx_sidecar.exporter.poll.snapshot import OPENMETRICS

    c._requested[OPENMETRICS] = time.monotonic()
    t0 = time.perf_counter()
    if not c.poll_once():
        raise RuntimeError(f"poll failed: {c.last_error}")
    return time.perf_counter() - t0, dict(c.last_poll.phases)


def median_poll(polls: list[Poll]) -> Poll:
    return sorted(polls, key=lambda p: p.seconds)[len(polls) // 2]


def spread(values: list[float]) -> str:
    if len(values) == 1:
        return f"{values[0]:.2f} s"
    return f"median {statistics.median(values):.2f} s (min {min(values):.2f}, max {max(values):.2f}, n={len(values)})"


def plain_connection(jmx_url: str):
    """A fresh MBeanServerConnection through plain JPype calls (the JVM is this process's)."""
    import jpype

    from kafka_jmx_sidecar.exporter.source.jmx import start_jvm

    start_jvm()
    JMXConnectorFactory = jpype.JClass("javax.management.remote.JMXConnectorFactory")
    JMXServiceURL = jpype.JClass("javax.management.remote.JMXServiceURL")
    connector = JMXConnectorFactory.connect(JMXServiceURL(jmx_url), None)
    return connector, connector.getMBeanServerConnection()


def memory(n: float) -> str:
    """A memory figure in both units: MiB (2**20 bytes, what /proc and the JVM count in) and MB
    (10**6 bytes, the unit of the targets)."""
    return f"{n / 2**20:.0f} MiB = {n / 1e6:.0f} MB"


def verdict(ok: bool) -> str:
    return "OK" if ok else "OVER"


def cpu_seconds(pid: int) -> float:
    """A process's CPU seconds so far, user and system (/proc/PID/stat), for a broker's CPU per
    poll or scrape; NaN when it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return float("nan")


def peak_rss(pid: int) -> float:
    """A process's peak resident memory so far, in bytes (VmHWM); NaN when it cannot be read."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM"))
    except (OSError, ValueError, StopIteration):
        return float("nan")
