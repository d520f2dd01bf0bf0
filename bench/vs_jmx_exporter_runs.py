"""One run of each program bench/vs_jmx_exporter.py times: jmx_exporter's standalone server (its first
and later /metrics responses), the sidecar's `scrape` (start to exit) and `serve` (its steady polls,
read from its self metrics)."""
from __future__ import annotations

import http.client
import re
import shutil
import subprocess
import tempfile
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

from bench import sidecar_setup as setup
from bench.vs_jmx_exporter_brokers import Broker
from harness import jmx_exporter as jx
from harness import processes
from harness.sidecar import Serve
from harness.sidecar import command as sidecar_command


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
