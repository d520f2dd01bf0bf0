"""Benchmark: the sidecar against the real Prometheus jmx_exporter standalone, over the same broker.

For each broker (a real Kafka 4.1 broker with as many partitions as this machine holds, and the
simulator at 10,000 and 40,000 partitions), each rule file (Strimzi's, unchanged, and the shipped
`rules/kafka-health.yml`: jmx_exporter is given the same file, which is what a user of those rules
with jmx_exporter pays) and each jmx_exporter release (0.20.0 against the sidecar's 0.x naming, the
newest 1.x, 1.6.0, against `sidecar: {naming: "1.x"}`), both are measured two ways:

- one-shot, what a cron job or a first scrape pays. jmx_exporter: from starting its standalone
  server to the last byte of its first /metrics response (it walks JMX on request, so that response
  is its first walk). Sidecar: the `kafka-jmx-sidecar scrape --config FILE` process, start to exit.
- steady. jmx_exporter: the duration of a later /metrics request (every request walks JMX again).
  Sidecar: a steady poll of `kafka-jmx-sidecar serve`, read from its self metrics: the poll
  (`jmx_scrape_duration_seconds`, the JMX read and the rules; the histogram
  `kafka_jmx_sidecar_poll_duration_seconds` gives the mean over the same window) plus the
  rendering of its snapshot (`kafka_jmx_sidecar_poll_phase_seconds{phase="render"}`), the
  first poll (which lists every MBean name) excluded. Not the sidecar's /metrics response time:
  that is served from the last snapshot and says nothing of the broker.

Before anything else is timed for a configuration, the outputs are checked to be the same: the
first one-shot readings of both (sidecar between two of jmx_exporter's readings) must have the same
families (TYPE, HELP) and the same series (names and label sets, compared as sets: order aside),
and the same values where jmx_exporter printed the same value before and after (a mismatch is read
again once, as a real broker's histogram percentiles drift and come back); the first snapshot of
`serve` must have the same families and series. Self metrics (`jmx_*`, `kafka_jmx_sidecar_*`,
`process_*`) are left out. A configuration whose outputs differ is not timed further: its
differences are printed, the other configurations are measured, and the exit code is 2.

The floor: for each broker and rule file, bench/FloorClient.java (a minimal read-only JMX client in
Java, no rules, no Python) lists the names the configuration includes, asks the health queries and
reads every other MBean with one getAttributes each, at 1, 2 and 4 connections (bench/floor.py).
Every figure is printed as a ratio to jmx_exporter and as a multiple of that floor: a steady poll
against the floor's queries and reads at the sidecar's connections, a one-shot against the floor's
JVM start, raw listing and one steady poll.

The broker's CPU: the broker process's CPU seconds (/proc) over each jmx_exporter request, and over
serve's steady polls at 1, 2 and 4 connections (`sidecar.connections`; the first release of each
rule file only), less what the broker spends idle, per poll; beside them serve's peak resident
memory.

Targets (bench/vs_jmx_exporter_report.py: TARGETS) are judged at 10,000 partitions and more;
smaller brokers are measured and printed, not judged.

jmx_exporter walks every MBean the rules select with getMBeanInfo and getAttributes over RMI, one
MBean at a time: at 40,000 partitions ~400,000 MBeans, minutes per scrape. So on brokers of
`--big` partitions and more it is measured `--big-repeat` times (default: 1 one-shot, 2 steady
requests); the output gives n for every figure.

    python -m bench.vs_jmx_exporter [--sizes 10000,40000] [--real-partitions N | --skip-real-broker]
        [--rules strimzi,health] [--releases 0.20.0,1.6.0] [--repeat 3] [--polls 5]
        [--big 10000] [--big-repeat 1,2] [--exporter-jvm-options "-Xmx2g"] [--poll-interval 5]
        [--connections 1,2,4] [--floor-polls 3]
"""
from __future__ import annotations

import argparse
import http.client
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from bench import sidecar_setup as setup
from bench.floor import HEALTH_FAMILIES, HEALTH_QUERIES, Floor, describe, run_floor
from bench.vs_jmx_exporter_report import report
from harness import compare, processes
from harness import jmx_exporter as jx
from harness.sidecar import Serve, config_text, naming_block
from harness.sidecar import command as sidecar_command

RULES = {"strimzi": setup.STRIMZI_RULES, "health": setup.HEALTH_RULES}
NAMING = {"0.20.0": "0.x", "1.0.1": "1.x", "1.6.0": "1.x"}
SELF_PREFIXES = ("jmx_", "kafka_jmx_sidecar_", "process_")
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


class OutputsDiffer(RuntimeError):
    pass


# -- brokers ---------------------------------------------------------------------------------

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


# -- jmx_exporter ----------------------------------------------------------------------------

class Exporter:
    """One standalone jmx_exporter server, started by `one_shot`, asked again by `request`."""

    def __init__(self, release: str, config: Path, jvm_options: tuple[str, ...], timeout: float):
        self.release = release
        self.port = processes.free_port()
        # computed before the clock starts (1.6.0's harness is compiled on first use)
        self.cmd = jx.command(release, f"127.0.0.1:{self.port}", config, jvm_options)
        self.log = Path(tempfile.mkdtemp(prefix=f"bench-jmx_exporter-{release}-")) / "exporter.log"
        self.timeout = timeout
        self.process = None

    def one_shot(self) -> tuple[float, str]:
        """Start the server; the seconds until the last byte of its first /metrics response."""
        t0 = time.perf_counter()
        self.process = processes.spawn(self.cmd, self.log)
        while True:  # connect as soon as it listens (refused until then)
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
            try:
                conn.connect()
                break
            except ConnectionRefusedError:
                conn.close()
                if self.process.poll() is not None:
                    raise RuntimeError(f"jmx_exporter {self.release} exited {self.process.returncode}:\n"
                                       f"{processes.tail(self.log)}")
                if time.perf_counter() - t0 > self.timeout:
                    raise RuntimeError(f"jmx_exporter {self.release} not listening after {self.timeout:.0f} s")
                time.sleep(0.01)
        body = self._get(conn)
        return time.perf_counter() - t0, body

    def request(self) -> tuple[float, str]:
        t0 = time.perf_counter()
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
        conn.connect()
        body = self._get(conn)
        return time.perf_counter() - t0, body

    def _get(self, conn: http.client.HTTPConnection) -> str:
        try:
            conn.request("GET", "/metrics")
            response = conn.getresponse()
            body = response.read().decode("utf-8")
        finally:
            conn.close()
        if response.status != 200:
            raise RuntimeError(f"jmx_exporter {self.release}: HTTP {response.status}")
        error = re.search(r"(?m)^jmx_scrape_error (\S+)$", body)
        if error is None or float(error.group(1)) != 0:
            raise RuntimeError(f"jmx_exporter {self.release} says its scrape failed (jmx_scrape_error "
                               f"{error.group(1) if error else 'missing'}):\n{processes.tail(self.log)}")
        return body

    def stop(self) -> None:
        processes.stop(self.process, grace=10)
        self.process = None
        shutil.rmtree(self.log.parent, ignore_errors=True)


def own_duration(text: str) -> float:
    """jmx_exporter's own jmx_scrape_duration_seconds in a response (1.x prints the previous
    scrape's there: 0 in its first response)."""
    m = re.search(r"(?m)^jmx_scrape_duration_seconds (\S+)$", text)
    return float(m.group(1)) if m else float("nan")


# -- the sidecar -----------------------------------------------------------------------------

def sidecar_one_shot(config: Path, timeout: float) -> tuple[float, str]:
    """`kafka-jmx-sidecar scrape --config FILE`, start to exit; its stdout."""
    with tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        proc = subprocess.run([*sidecar_command(), "scrape", "--config", str(config)], stdout=out,
                              stderr=subprocess.PIPE, timeout=timeout)
        seconds = time.perf_counter() - t0
        if proc.returncode != 0:
            raise RuntimeError(f"kafka-jmx-sidecar scrape exited {proc.returncode}: {proc.stderr.decode().strip()}")
        out.seek(0)
        return seconds, out.read().decode("utf-8")


@dataclass
class SelfReading:
    last_success: float
    duration: float       # jmx_scrape_duration_seconds: the last poll (read + rules)
    render: float         # poll_phase_seconds{phase="render"} of the last poll
    names: float          # poll_phase_seconds{phase="names"}: the listing, when the poll re-listed names
    count: float          # kafka_jmx_sidecar_poll_duration_seconds_count
    total: float          # ..._sum
    failures: float
    round_trips: float    # kafka_jmx_sidecar_rmi_round_trips of the last poll
    mbeans: float         # kafka_jmx_sidecar_mbeans_read of the last poll
    phases: dict[str, float]  # poll_phase_seconds of the last poll: where its time went


_GZIP_HEADER = b"\x1f\x8b\x08"


def _last_gzip_member(data: bytes) -> bytes:
    """The decompressed last gzip member of a body made of several. The sidecar sends its
    snapshot's stored gzip member, then one with this moment's self metrics: taking only the
    last spares the bench from inflating the whole snapshot (tens of MB) at every reading, on the
    CPUs the polls it times run on."""
    at = len(data)
    while True:
        at = data.rfind(_GZIP_HEADER, 0, at)
        if at < 0:
            return zlib.decompress(data, 31)  # one member only
        z = zlib.decompressobj(31)
        try:
            text = z.decompress(data[at:])
        except zlib.error:
            continue
        if z.eof and not z.unused_data:
            return text


def read_self(port: int) -> SelfReading:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        # gzip: the sidecar then sends its stored member as it is, without work on its side
        conn.request("GET", "/metrics", headers={"Accept-Encoding": "gzip"})
        response = conn.getresponse()
        data = response.read()
    finally:
        conn.close()
    text = _last_gzip_member(data).decode("utf-8") if data[:2] == b"\x1f\x8b" else data.decode("utf-8")

    def value(name: str, labels: str = "") -> float:
        m = re.search(rf"(?m)^{re.escape(name + labels)} (\S+)$", text)
        if m is None:
            raise RuntimeError(f"serve: no {name}{labels} in its self metrics")
        return float(m.group(1))

    p = "kafka_jmx_sidecar_"
    return SelfReading(value(p + "last_successful_poll_timestamp_seconds"), value("jmx_scrape_duration_seconds"),
                       value(p + "poll_phase_seconds", '{phase="render"}'),
                       value(p + "poll_phase_seconds", '{phase="names"}'),
                       value(p + "poll_duration_seconds_count"), value(p + "poll_duration_seconds_sum"),
                       value(p + "polls_total", '{result="failure"}'), value(p + "rmi_round_trips"),
                       value(p + "mbeans_read"),
                       {m.group(1): float(m.group(2)) for m in
                        re.finditer(rf'(?m)^{p}poll_phase_seconds{{phase="(\w+)"}} (\S+)$', text)})


@dataclass
class Steady:
    polls: list[float]        # poll + render, per steady poll seen
    reads: list[float]        # the poll alone (read + rules)
    renders: list[float]
    histogram_mean: float     # poll_duration_seconds sum/count over the same window
    window_polls: int
    first_poll: float
    names_polls: int          # steady polls that re-listed the names (namesRefreshSeconds)
    round_trips: float        # RMI round trips of the last steady poll
    mbeans: float             # MBeans it covered
    first_phases: dict[str, float]   # where the first poll's time went (empty: not seen alone)
    phases: dict[str, float]         # and the last steady poll's
    broker_cpu: float = float("nan")  # the broker's CPU seconds per steady poll (idle share left out)
    peak_rss: float = float("nan")    # serve's peak resident memory, bytes


def serve_steady(config: Path, polls: int, interval: float, timeout: float, check, broker: Broker) -> Steady:
    """Run `serve`, check its first snapshot with `check(text)`, then watch `polls` steady polls."""
    serve = Serve(config, args=("--log-level", "warning"))
    try:
        serve.start(ready=True, timeout=timeout)
        r0 = read_self(serve.port)
        first_poll = r0.duration + r0.render if r0.count == 1 else float("nan")  # nan: not seen alone
        check(serve.get(timeout=timeout))
        first = read_self(serve.port)  # the window starts here: every later poll is a steady one
        cpu0, t0 = broker.cpu(), time.monotonic()
        last = first
        seen: list[SelfReading] = []
        deadline = time.monotonic() + timeout + polls * max(interval, 1.0) * 4
        while len(seen) < polls:
            time.sleep(max(0.2, interval / 4))  # read several times a poll so each poll is seen
            r = read_self(serve.port)
            if r.failures:
                raise RuntimeError(f"a poll of serve failed; the end of its log:\n{processes.tail(serve.log)}")
            if r.last_success != last.last_success:
                if r.count - last.count == 1:  # exactly one poll since the last reading: it is this one
                    seen.append(r)
                last = r
            if time.monotonic() > deadline:
                raise RuntimeError(f"serve: {len(seen)} of {polls} steady polls seen before the deadline")
        polls_done = last.count - first.count
        cpu = broker.busy_cpu(cpu0, t0) / polls_done
        mean = (last.total - first.total) / polls_done
        return Steady([r.duration + r.render for r in seen], [r.duration for r in seen], [r.render for r in seen],
                      mean, int(polls_done), first_poll,
                      sum(1 for r in seen if r.names > 0.01),  # a poll that did not list takes microseconds
                      last.round_trips, last.mbeans, r0.phases if r0.count == 1 else {}, seen[-1].phases,
                      cpu, setup.peak_rss(serve.process.pid))
    finally:
        serve.stop()
        shutil.rmtree(serve.log.parent, ignore_errors=True)


# -- the check -------------------------------------------------------------------------------

def parsed(text: str) -> compare.Exposition:
    return compare.parse(text).without(*SELF_PREFIXES)


def shape_differences(ours: compare.Exposition, theirs: compare.Exposition) -> list[str]:
    """Families (TYPE, HELP, UNIT) and series (names, label sets) that differ; order aside."""
    return compare.differences(ours, theirs, check_order=False)


def value_suspects(before: compare.Exposition, ours: compare.Exposition, after: compare.Exposition) -> set:
    """Series jmx_exporter printed alike before and after ours, with another value in ours."""
    return {k for k in compare.unmoved(before, after)
            if k in ours.series and ours.series[k] != before.series[k]}


def describe_values(keys, ours: compare.Exposition, theirs: compare.Exposition) -> list[str]:
    return [f"value of {k[0]}{k[1]}: sidecar {ours.series.get(k)} jmx_exporter {theirs.series.get(k)}"
            for k in sorted(keys)]


def abort_if(differences: list[str], what: str) -> None:
    if differences:
        shown = "\n  ".join(differences[:40])
        more = f"\n  ... and {len(differences) - 40} more" if len(differences) > 40 else ""
        raise OutputsDiffer(f"{what}: {len(differences)} difference(s):\n  {shown}{more}")


# -- one configuration -----------------------------------------------------------------------

@dataclass
class Result:
    broker: Broker
    rules: str
    release: str
    floor: Floor | None = None
    connections: int = 1      # serve's connections by default (the headline steady figure's)
    series: int = 0
    exporter_one_shot: list[float] = field(default_factory=list)
    exporter_steady: list[float] = field(default_factory=list)
    exporter_own: list[float] = field(default_factory=list)  # its jmx_scrape_duration_seconds, steady
    exporter_cpu: list[float] = field(default_factory=list)  # the broker's CPU seconds per steady request
    sidecar_one_shot: list[float] = field(default_factory=list)
    steady: Steady | None = None
    sweep: dict[int, Steady] = field(default_factory=dict)  # connections -> serve's steady polls
    value_rereads: int = 0

    @property
    def name(self) -> str:
        return f"{self.broker.label}, {self.rules} rules, jmx_exporter {self.release}"

    def ratio(self, way: str) -> float:
        if way == "one-shot":
            return statistics.median(self.exporter_one_shot) / statistics.median(self.sidecar_one_shot)
        return statistics.median(self.exporter_steady) / statistics.median(self.steady.polls)

    def over_floor(self, way: str) -> float:
        """The sidecar's figure as a multiple of the floor client's at the same connections."""
        if self.floor is None or self.connections not in self.floor.reads:
            return float("nan")
        if way == "one-shot":
            return statistics.median(self.sidecar_one_shot) / self.floor.one_shot(self.connections)
        return statistics.median(self.steady.polls) / self.floor.poll(self.connections)


def _configs(broker: Broker, rules: str, release: str, args, workdir: Path) -> tuple[Path, Path, Callable]:
    naming = NAMING[release]
    body = RULES[rules].read_text(encoding="utf-8")
    theirs_config = workdir / f"{rules}-{release}-jmx_exporter.yml"
    ours_config = workdir / f"{rules}-{release}-sidecar.yml"
    theirs_config.write_text(config_text(broker.host_port, body))
    block = naming_block(naming) + f"  pollIntervalSeconds: {args.poll_interval}\n"
    ours_config.write_text(config_text(broker.host_port, body, block))

    def with_connections(n: int) -> Path:
        path = workdir / f"{rules}-{release}-sidecar-{n}.yml"
        path.write_text(config_text(broker.host_port, body, block + f"  connections: {n}\n"))
        return path
    return theirs_config, ours_config, with_connections


def measure(broker: Broker, rules: str, release: str, args, workdir: Path, floor: Floor | None,
            sweep: bool) -> Result:
    from kafka_jmx_sidecar.exporter.config.sidecar import SidecarSettings

    theirs_config, ours_config, with_connections = _configs(broker, rules, release, args, workdir)
    big = broker.partitions >= args.big
    ex_one_shots, ex_steady = args.big_repeat if big else (args.repeat, args.repeat)
    res = Result(broker, rules, release, floor, SidecarSettings().connections)
    print(f"\n== {res.name} (sidecar naming {NAMING[release]}); machine: {setup.machine()}", flush=True)

    def exporter_request() -> str:
        cpu0, t0 = broker.cpu(), time.monotonic()
        seconds, text = exporter.request()
        res.exporter_cpu.append(broker.busy_cpu(cpu0, t0))
        res.exporter_steady.append(seconds)
        res.exporter_own.append(own_duration(text))
        print(f"  jmx_exporter steady request: {seconds:.2f} s (its own scrape duration {own_duration(text):.2f} s; "
              f"broker CPU {res.exporter_cpu[-1]:.2f} s)", flush=True)
        return text

    exporter = Exporter(release, theirs_config, tuple(args.exporter_jvm_options), args.timeout)
    try:
        seconds, before_text = exporter.one_shot()
        res.exporter_one_shot.append(seconds)
        print(f"  jmx_exporter one-shot: {seconds:.2f} s (its own scrape duration {own_duration(before_text):.2f} s)",
              flush=True)
        seconds, ours_text = sidecar_one_shot(ours_config, args.timeout)
        res.sidecar_one_shot.append(seconds)
        print(f"  sidecar one-shot (scrape): {seconds:.2f} s", flush=True)
        after_text = exporter_request()

        before, ours, after = parsed(before_text), parsed(ours_text), parsed(after_text)
        abort_if(shape_differences(ours, before), f"{res.name}: `scrape` against jmx_exporter")
        res.series = len(before.series)
        suspects = value_suspects(before, ours, after)
        print(f"  outputs the same: {len(before.families):,} families, {res.series:,} series (as sets); "
              f"{len(compare.unmoved(before, after)):,} values unmoved in jmx_exporter, "
              f"{len(suspects)} differ in ours{' (read again)' if suspects else ''}", flush=True)
        i = 1
        while i < max(args.repeat, ex_steady) or suspects:
            previous = after
            if i < args.repeat or suspects:
                seconds, ours_text = sidecar_one_shot(ours_config, args.timeout)
                res.sidecar_one_shot.append(seconds)
                print(f"  sidecar one-shot (scrape): {seconds:.2f} s", flush=True)
            if i < ex_steady or suspects:
                after_text = exporter_request()
            if suspects:  # only a mismatch that repeats on a value that did not move counts
                res.value_rereads += 1
                ours, after = parsed(ours_text), parsed(after_text)
                suspects &= value_suspects(previous, ours, after)
                abort_if(describe_values(suspects, ours, previous), f"{res.name}: values that did not move")
            i += 1
    finally:
        exporter.stop()
    for _ in range(ex_one_shots - 1):
        exporter = Exporter(release, theirs_config, tuple(args.exporter_jvm_options), args.timeout)
        try:
            seconds, _text = exporter.one_shot()
        finally:
            exporter.stop()
        res.exporter_one_shot.append(seconds)
        print(f"  jmx_exporter one-shot: {seconds:.2f} s", flush=True)

    def check_serve(text: str) -> None:
        abort_if(shape_differences(parsed(text), before), f"{res.name}: `serve`'s first snapshot against jmx_exporter")

    res.steady = serve_steady(ours_config, args.polls, args.poll_interval, args.timeout, check_serve, broker)
    print_steady(f"serve ({res.connections} connection(s), the default)", res.steady)
    if sweep:
        for n in args.connections:
            if n == res.connections:
                res.sweep[n] = res.steady
                continue
            res.sweep[n] = serve_steady(with_connections(n), args.polls, args.poll_interval, args.timeout,
                                        check_serve, broker)
            print_steady(f"serve, connections: {n}", res.sweep[n])
    return res


def print_steady(what: str, s: Steady) -> None:
    print(f"  {what}: first poll {s.first_poll:.2f} s (lists the names); snapshot the same as jmx_exporter's; "
          f"steady polls (poll + render): {', '.join(f'{p:.3f}' for p in s.polls)} s; histogram mean "
          f"{s.histogram_mean:.3f} s over {s.window_polls} polls; broker CPU {s.broker_cpu:.3f} s per poll; "
          f"peak RSS {setup.memory(s.peak_rss)}", flush=True)


def measure_floor(broker: Broker, rules: str, args) -> Floor | None:
    """The floor client over the names the rule file includes (bench/floor.py), at --connections
    and at serve's default connections, which the headline figures are taken at."""
    from kafka_jmx_sidecar.exporter.config.sidecar import DEFAULT_CONNECTIONS
    from kafka_jmx_sidecar.exporter.rule_engine.config import load_config

    config = load_config(str(RULES[rules]))
    include = tuple(p.text for p in config.include_object_names) or ("*:*",)
    exclude = tuple(p.text for p in config.exclude_object_names)
    try:
        floor = run_floor(f"service:jmx:rmi:///jndi/rmi://{broker.host_port}/jmxrmi", include=include,
                          exclude=exclude, queried=HEALTH_FAMILIES, queries=HEALTH_QUERIES,
                          connections=tuple(sorted({*args.connections, DEFAULT_CONNECTIONS})),
                          polls=args.floor_polls, broker_pid=broker.pid,
                          timeout=args.timeout)
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        print(f"\n== floor client, {broker.label}, {rules} rules: NOT MEASURED: {e}", flush=True)
        return None
    print(f"\n== floor client, {broker.label}, {rules} rules: {describe(floor)}", flush=True)
    return floor


def prepare_sidecar(workdir: Path) -> None:
    """What an installed sidecar has before its first run: its modules' bytecode and its Java
    helper compiled. This machine's environment sets PYTHONDONTWRITEBYTECODE and the repository
    is installed editable, so without this every `scrape` would compile the sidecar's modules
    again; the bytecode goes to the bench's own directory, never into the working tree."""
    from kafka_jmx_sidecar import exporter

    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(workdir / "pycache")  # inherited by every sidecar process
    root = Path(exporter.__file__).resolve().parents[1]
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(root / "exporter"), str(root / "mbeans")],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run([sys.executable, "-c", "from kafka_jmx_sidecar.exporter.source.jmx.jvm import helper, start_jvm; start_jvm(); helper()"],
                   check=True)


def code_version() -> str:
    """The commit of the sidecar code measured, and whether its files differ from it."""
    from kafka_jmx_sidecar import exporter

    root = Path(exporter.__file__).resolve().parents[1]
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--", "exporter", "mbeans", "rules"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return f"{root} (not a git checkout)"
    return f"{root} at {head}" + (" with uncommitted changes in exporter/, mbeans/ or rules/" if dirty else "")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,40000",
                    help="simulator sizes in partitions, comma-separated ('' for none)")
    ap.add_argument("--real-partitions", type=int, default=DEFAULT_REAL_PARTITIONS,
                    help="partitions of the real Kafka 4.1 broker")
    ap.add_argument("--skip-real-broker", action="store_true")
    ap.add_argument("--rules", default="strimzi,health", help="rule files: strimzi, health")
    ap.add_argument("--releases", default="0.20.0,1.6.0", help=f"jmx_exporter releases: {', '.join(NAMING)}")
    ap.add_argument("--repeat", type=int, default=3, help="one-shot runs and steady requests of each side")
    ap.add_argument("--polls", type=int, default=5, help="steady polls of serve watched")
    ap.add_argument("--big", type=int, default=10_000, help="from this many partitions jmx_exporter runs --big-repeat")
    ap.add_argument("--big-repeat", default="1,2", help="jmx_exporter one-shots and steady requests on big brokers")
    ap.add_argument("--exporter-jvm-options", default="-Xmx2g",
                    help="jmx_exporter's JVM options (its defaults but a heap large enough for big brokers)")
    ap.add_argument("--poll-interval", type=float, default=5.0, help="serve's pollIntervalSeconds")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds allowed for one scrape or poll")
    ap.add_argument("--connections", default="1,2,4",
                    help="serve's connections measured (the first release of each rule file) and the floor client's")
    ap.add_argument("--floor-polls", type=int, default=3, help="the floor client's polls at each connection count")
    args = ap.parse_args(argv)
    args.connections = tuple(int(x) for x in args.connections.split(",") if x.strip())
    args.exporter_jvm_options = shlex.split(args.exporter_jvm_options)
    args.big_repeat = tuple(int(x) for x in args.big_repeat.split(","))
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    rules = [r.strip() for r in args.rules.split(",") if r.strip()]
    releases = [r.strip() for r in args.releases.split(",") if r.strip()]
    for r in rules:
        if r not in RULES:
            ap.error(f"--rules: unknown {r!r}; known: {', '.join(RULES)}")
    for r in releases:
        if r not in NAMING:
            ap.error(f"--releases: unknown {r!r}; known: {', '.join(NAMING)}")
    if len(args.big_repeat) != 2 or min(args.big_repeat) < 1 or args.repeat < 1 or args.polls < 1:
        ap.error("--repeat, --polls and both --big-repeat counts are at least 1")
    if not args.connections or min(args.connections) < 1 or args.floor_polls < 1:
        ap.error("--connections are numbers of at least 1, --floor-polls at least 1")

    from kafka_jmx_sidecar.exporter.config.sidecar import DEFAULT_JVM_OPTIONS

    print(f"machine: {setup.machine()}")
    print(f"sidecar code: {code_version()}")
    print(f"jmx_exporter JVM options: {' '.join(args.exporter_jvm_options) or 'the JVM defaults'} "
          f"(0.20.0 and 1.0.1: the packaged jmx_prometheus_httpserver jar; 1.6.0: its collector and client_java's "
          f"HTTPServer through harness/JmxExporterStandalone.java)")
    print(f"sidecar JVM options: its defaults, {' '.join(DEFAULT_JVM_OPTIONS)}; serve's pollIntervalSeconds "
          f"{args.poll_interval:g}, other settings default; its bytecode and Java helper compiled before timing, "
          f"as an installed sidecar has them")
    brokers = [] if args.skip_real_broker else [(f"real Kafka broker, {args.real_partitions:,} partitions",
                                                  lambda: real_broker(args.real_partitions))]
    brokers += [(f"simulator, {n:,} partitions", lambda n=n: simulated_broker(n)) for n in sizes]
    results: list[Result] = []
    failed: list[str] = []  # what could not be measured, and why: reported, never dropped
    differ: list[str] = []  # configurations whose outputs differ: not timed further
    workdir = Path(tempfile.mkdtemp(prefix="bench-vs-jmx_exporter-"))
    try:
        prepare_sidecar(workdir)
        for label, start in brokers:
            try:
                with start() as broker:
                    for r in rules:
                        floor = measure_floor(broker, r, args)
                        for k, release in enumerate(releases):
                            try:
                                results.append(measure(broker, r, release, args, workdir, floor, sweep=k == 0))
                            except OutputsDiffer as e:
                                differ.append(str(e))
                                print(f"  OUTPUTS DIFFER, not timed further: {e}", flush=True)
                            except (RuntimeError, OSError, subprocess.SubprocessError) as e:
                                failed.append(f"{broker.label}, {r} rules, jmx_exporter {release}: {e}")
                                print(f"  NOT MEASURED: {e}", flush=True)
            except (RuntimeError, OSError, subprocess.SubprocessError) as e:
                failed.append(f"{label}: {e}")
                print(f"\n{label}: NOT MEASURED: {e}", flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    ok = report(results) if results else False
    for line in failed:
        print(f"NOT MEASURED: {line}")
    for line in differ:
        print(f"OUTPUTS DIFFER (not timed): {line}")
    print(f"\nmachine at the end: {setup.machine()}")
    return 2 if differ else 0 if ok and not failed else 1


if __name__ == "__main__":
    sys.exit(main())
