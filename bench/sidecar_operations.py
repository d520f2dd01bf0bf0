"""Benchmark: the sidecar's memory, its first poll and its stop on a simulated broker of 40,000
partitions, with Strimzi's rules and with none (jmx_exporter's default naming of every MBean).

Each run is `python3 -m kafka_jmx_sidecar.exporter.commands.cli serve` in a process of its
own, with its default JVM options, as a user runs it, scraped as Prometheus scrapes it (one gzip
OpenMetrics GET a second):

- memory: the process's resident memory after each complete poll, and its peak (VmHWM), for
  `--polls` complete polls after the first. Baseline, measured in the same run: the same `serve`
  against a closed port (Python, the JVM and its JMX helper, nothing read); the ratio is what the
  broker adds to the runtime.
- the first poll: when the health MBeans read first were served (kafka_jmx_sidecar_snapshot_partial)
  and when the first complete poll ended (ready); the later polls' durations; the overruns counted.
- SIGTERM: sent a few seconds into the first poll (`--sigterm-at`, one fresh process each) and at
  the end of the memory run, wherever its poll loop is; the seconds until the process is gone.
  Baseline: SIGTERM to the idle sidecar above.

Targets: RSS < 300 MB with Strimzi's rules and < 500 MB with none; the process gone
within 5 s of SIGTERM.

    python -m bench.sidecar_operations [--partitions N] [--rules strimzi,none] [--polls 3]
        [--interval 15] [--sigterm-at 3,15,30]
"""
from __future__ import annotations

import argparse
import gzip
import http.client
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench import sidecar_setup as setup
from harness.processes import free_port

TARGET_RSS = {"strimzi": 300 * 10**6, "none": 500 * 10**6}  # bytes: 300 MB (286 MiB), 500 MB (477 MiB)
TARGET_STOP = 5.0
ACCEPT = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
NO_RULES = "# no rules: jmx_exporter's default naming, every MBean and attribute\n"


def shown(v: float | None, spec: str = ".1f") -> str:
    """A figure, or "n/a" for a self metric the sidecar does not have."""
    return "n/a" if v is None else format(v, spec)


def value(text: str, sample: str) -> float | None:
    for line in text.splitlines():
        if line.startswith(sample + " "):
            return float(line.rsplit(" ", 1)[1])
    return None


class Serve:
    """A `serve` process on a free loopback port; its resident memory sampled from /proc."""

    def __init__(self, work: Path, host_port: str, rules: str, interval: float):
        self.port = free_port()
        config = work / f"sidecar-{self.port}.yml"
        config.write_text(f"hostPort: {host_port}\n{rules}\nsidecar:\n  listenAddress: 127.0.0.1:{self.port}\n"
                          f"  pollIntervalSeconds: {interval}\n")
        self.log = work / f"serve-{self.port}.log"
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "kafka_jmx_sidecar.exporter.commands.cli", "serve", "--config", str(config)],
                                         cwd=str(setup.REPO), stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        self.started = time.monotonic()
        self.samples: list[int] = []
        self._stop = threading.Event()
        threading.Thread(target=self._sample, daemon=True).start()

    def status(self) -> dict[str, int]:
        out = {}
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "VmHWM"):
                    out[k] = int(v.split()[0]) * 1024
        return out

    def _sample(self) -> None:
        while not self._stop.wait(0.1):
            try:
                self.samples.append(self.status()["VmRSS"])
            except (OSError, KeyError):
                return

    def get(self, path: str = "/metrics", timeout: float = 30, decode: bool = True) -> tuple[int, bytes]:
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            c.request("GET", path, headers={"Accept": ACCEPT, "Accept-Encoding": "gzip"})
            r = c.getresponse()
            body = r.read()
            gzipped = r.getheader("Content-Encoding") == "gzip"
            return r.status, gzip.decompress(body) if gzipped and decode else body
        finally:
            c.close()

    def metrics(self) -> str:
        """The response's self metrics (the text after the snapshot's series)."""
        text = self.get()[1].decode()
        return text[text.find("# TYPE jmx_scrape_duration_seconds"):]

    def alive(self) -> None:
        if self.proc.poll() is not None:
            raise RuntimeError(f"the sidecar exited ({self.proc.returncode}); see {self.log}")

    def sigterm(self) -> float:
        self._stop.set()
        started = time.monotonic()
        os.kill(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
            return float("inf")
        return time.monotonic() - started

    def kill(self) -> None:
        self._stop.set()
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)


def wait_until(s: Serve, what: str, ready, timeout: float, every: float = 0.25):
    deadline = time.monotonic() + timeout
    while True:
        s.alive()
        try:
            got = ready()
            if got:
                return got
        except (OSError, http.client.HTTPException):
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: not within {timeout:.0f} s; see {s.log}")
        time.sleep(every)


def baseline(work: Path) -> dict:
    """`serve` against a closed port: the runtime alone, and an idle sidecar's stop."""
    s = Serve(work, f"127.0.0.1:{free_port()}", NO_RULES, 15)
    try:
        wait_until(s, "the idle sidecar's failed poll",
                   lambda: value(s.metrics(), 'kafka_jmx_sidecar_polls_total{result="failure"}'), 120)
        time.sleep(2)
        rss = s.status()["VmRSS"]
        return {"rss": rss, "stop": s.sigterm()}
    finally:
        s.kill()


def phases(text: str) -> dict[str, float]:
    """The last poll's `kafka_jmx_sidecar_poll_phase_seconds`: where its time went."""
    return {m[1]: float(m[2]) for m in
            re.finditer(r'(?m)^kafka_jmx_sidecar_poll_phase_seconds\{phase="(\w+)"\} (\S+)$', text)}


def successes(s: Serve) -> float:
    return value(s.metrics(), 'kafka_jmx_sidecar_polls_total{result="success"}') or 0


def memory_run(work: Path, host_port: str, rules: str, polls: int, interval: float) -> dict:
    s = Serve(work, host_port, rules, interval)
    out: dict = {"rss_after": [], "polls": [], "phases": []}
    scraping = threading.Event()

    def scrape() -> None:  # Prometheus' share of the load: one gzip OpenMetrics GET a second
        while not scraping.wait(1.0):
            try:
                s.get(decode=False)
            except (OSError, http.client.HTTPException):
                pass

    try:
        wait_until(s, "the health MBeans served first",
                   lambda: value(s.metrics(), "kafka_jmx_sidecar_snapshot_partial") == 1 or successes(s), 300, 0.05)
        out["partial_at"] = time.monotonic() - s.started
        threading.Thread(target=scrape, daemon=True).start()
        wait_until(s, "the first complete poll", lambda: s.get("/-/ready")[0] == 200, 900)
        out["ready_at"] = time.monotonic() - s.started
        text = s.metrics()
        out["first_poll"] = value(text, "jmx_scrape_duration_seconds")
        out["rss_first"] = s.status()["VmRSS"]
        first_end = len(s.samples)
        done = successes(s)
        for _ in range(polls):
            # each look decompresses the whole response (~50 MB): not too often, it loads the machine
            wait_until(s, "a complete poll", lambda: successes(s) > done, 900, 2.0)
            text = s.metrics()
            done = value(text, 'kafka_jmx_sidecar_polls_total{result="success"}')
            out["polls"].append(value(text, "jmx_scrape_duration_seconds"))
            out["phases"].append(phases(text))
            out["rss_after"].append(s.status()["VmRSS"])
        out["series"] = value(text, "kafka_jmx_sidecar_series")
        out["overruns"] = value(text, "kafka_jmx_sidecar_poll_overruns_total")
        out["heap_used"] = value(text, 'kafka_jmx_sidecar_jvm_memory_bytes{area="heap",kind="used"}')
        out["heap_committed"] = value(text, 'kafka_jmx_sidecar_jvm_memory_bytes{area="heap",kind="committed"}')
        out["heap_max"] = value(text, 'kafka_jmx_sidecar_jvm_memory_bytes{area="heap",kind="max"}')
        out["steady_max"] = max(s.samples[first_end:] or [0])
        out["peak"] = s.status()["VmHWM"]
        scraping.set()
        out["stop_end"] = s.sigterm()
        return out
    finally:
        scraping.set()
        s.kill()


def stop_runs(work: Path, host_port: str, rules: str, offsets: list[float], interval: float) -> list[tuple]:
    """SIGTERM `offset` seconds after the health MBeans were served, during the first poll."""
    out = []
    for offset in offsets:
        s = Serve(work, host_port, rules, interval)
        try:
            wait_until(s, "the health MBeans served first",
                       lambda: value(s.metrics(), "kafka_jmx_sidecar_snapshot_partial") == 1 or successes(s), 300, 0.05)
            time.sleep(offset)
            mid = successes(s) == 0  # the first complete poll still running
            took = s.sigterm()
            out.append((offset, mid, took, "still in progress" in s.log.read_text()))
        finally:
            s.kill()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=40_000)
    ap.add_argument("--rules", default="strimzi,none", help="comma-separated: strimzi, none, health or a rule file")
    ap.add_argument("--polls", type=int, default=3, help="complete polls measured after the first")
    ap.add_argument("--interval", type=float, default=15.0, help="pollIntervalSeconds")
    ap.add_argument("--sigterm-at", default="3,15,30",
                    help="seconds into the first poll (after the health MBeans are served) to send SIGTERM")
    args = ap.parse_args()
    offsets = [float(x) for x in args.sigterm_at.split(",") if x]
    rule_sets = {"strimzi": setup.STRIMZI_RULES.read_text(), "none": NO_RULES,
                 "health": setup.HEALTH_RULES.read_text()}

    print(f"machine: {setup.machine()}")
    work = Path(tempfile.mkdtemp(prefix="sidecar-operations-"))
    base = baseline(work)
    print(f"baseline: an idle sidecar (broker unreachable): RSS {setup.memory(base['rss'])}, SIGTERM -> gone in "
          f"{base['stop']:.2f} s", flush=True)
    sim = setup.start_simulator(args.partitions)
    host_port = setup.host_port(sim.url)
    ok = True
    results = {}
    try:
        for name in args.rules.split(","):
            rules = rule_sets.get(name) or Path(name).read_text()
            print(f"== {name}: serve, {args.polls} polls after the first, then SIGTERM ...", flush=True)
            results[name] = (memory_run(work, host_port, rules, args.polls, args.interval),
                             stop_runs(work, host_port, rules, offsets, args.interval))
    finally:
        sim.stop()

    print()
    print(f"broker: {args.partitions:,} partitions; pollIntervalSeconds {args.interval:g}; the sidecar's default "
          f"JVM options; one gzip OpenMetrics scrape a second")
    for name, (m, stops) in results.items():
        target = TARGET_RSS.get(name)
        worst = max(m["peak"], m["steady_max"])
        verdict = "" if target is None else f" (target < {setup.memory(target)}: {setup.verdict(worst < target)})"
        ok &= target is None or worst < target
        print(f"{name}: {m['series']:,.0f} series")
        print(f"  health MBeans served {m['partial_at']:.1f} s after start; first complete poll ended after "
              f"{m['ready_at']:.1f} s (it took {shown(m['first_poll'])} s); then polls of "
              f"{statistics.median(m['polls']):.1f} s (median of {len(m['polls'])}; "
              f"{shown(m['overruns'], '.0f')} overruns counted)")
        if m["phases"]:
            median = {k: statistics.median(p.get(k, 0.0) for p in m["phases"]) for k in m["phases"][0]}
            print("  their phases (median, s): " + ", ".join(f"{k} {v:.1f}" for k, v in median.items()))
        after = ", ".join(setup.memory(r) for r in m["rss_after"])
        print(f"  RSS after the first poll {setup.memory(m['rss_first'])}, after the next {after}; "
              f"max while scraped {setup.memory(m['steady_max'])}, peak {setup.memory(m['peak'])}{verdict}; "
              f"{worst / base['rss']:.2f}x the idle sidecar's {setup.memory(base['rss'])}")
        print(f"  the JVM's heap: {setup.memory(m['heap_used'] or 0)} used, {setup.memory(m['heap_committed'] or 0)} committed, "
              f"ceiling {setup.memory(m['heap_max'] or 0)}")
        for offset, mid, took, cut in stops:
            ok &= took < TARGET_STOP
            where = "mid-first-poll" if mid else "after the first poll"
            how = "the poll thread left behind" if cut else "the poll given up"
            print(f"  SIGTERM {offset:g} s into the first poll ({where}): gone in {took:.2f} s ({how}; "
                  f"target < {TARGET_STOP:g} s: {setup.verdict(took < TARGET_STOP)}; "
                  f"{took / base['stop']:.1f}x the idle sidecar's)")
        ok &= m["stop_end"] < TARGET_STOP
        print(f"  SIGTERM after {len(m['polls']) + 1} polls: gone in {m['stop_end']:.2f} s "
              f"({setup.verdict(m['stop_end'] < TARGET_STOP)})")
    print(f"machine at the end: {setup.machine()}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
