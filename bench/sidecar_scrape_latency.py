"""Benchmark: /metrics latency under 20 concurrent scrapers while the poll loop keeps polling, and
the sidecar's memory, on a simulated broker of 40,000 partitions with Strimzi's rules.

The sidecar runs as `python3 -m kafka_jmx_sidecar.exporter.commands.cli serve --config FILE` in a
process of its own (the simulator in another), so its resident memory is its own: Python plus the
JVM inside it (JPype), whose share is reported from the JVM's native memory tracking
(`-XX:NativeMemoryTracking=summary` is added to the default JVM options for this run, unless
--jvm-options is given).

Scrapers: processes each doing sequential GETs of /metrics on a kept-alive loopback connection with
Prometheus' Accept header and `Accept-Encoding: gzip`, for `--seconds`: once back to back (the
server saturated: latency is then mostly queueing behind the other scrapers on the machine's
CPUs), once paced at one GET per `--interval` seconds per scraper. Baseline, measured in the
same run with the same scrapers: a bare `http.server` in its own process serving a static byte
string of the same size (the sidecar's gzipped response), so the ratio shows what the sidecar adds
to serving bytes.

Idle connections: the paced run again while another process holds `--idle` connections open
(each kept alive after one GET of /-/healthy, as many idle Prometheus servers or a hostile
client would; one the server closes is opened again). The two paced runs alternate in
`--rounds` parts, so a change of the machine's load falls on both alike. Target: that run's p99 at most 1.5x the
paced run's without them, and no thread per connection (the sidecar's thread count is printed).

Targets: p99 < 50 ms with the scrapers paced (each a steady scraper, as Prometheus servers are;
200 scrapes/s of the whole snapshot is already ~100x what 20 Prometheus servers at a 15 s interval
ask); sidecar RSS < 300 MB. The back-to-back run has no absolute target: it saturates the machine
(20 processes reading ~1.4 GB/s of loopback on 2 CPUs), where even the bare server's p99 is far
above 50 ms, so it is judged by its ratio to the bare server only. Every answer counted must be the whole
snapshot: answers under half the biggest (the series withdrawn meanwhile) fail the run.

    python -m bench.sidecar_scrape_latency [--partitions N] [--rules strimzi|health|FILE] [--scrapers 20]
        [--seconds 30] [--idle 1000] [--rounds 3] [--jvm-options "-XX:+UseSerialGC ..."]
"""
from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import os
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench import sidecar_setup as setup
from harness.processes import free_port

TARGET_P99 = 0.050
TARGET_RSS = 300 * 10**6  # bytes: 300 MB (286 MiB)
TARGET_IDLE_RATIO = 1.5
ACCEPT = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
          "text/plain;version=0.0.4;q=0.5,*/*;q=0.1")  # Prometheus 2.x's scrape Accept header

BARE_SERVER = r'''
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
body = open(sys.argv[1], "rb").read()
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/openmetrics-text; version=1.0.0; charset=utf-8")
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
class S(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128
s = S(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
'''


def get(port: int, path: str = "/metrics", timeout: float = 30) -> tuple[int, bytes, dict]:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("GET", path, headers={"Accept": ACCEPT, "Accept-Encoding": "gzip"})
        r = c.getresponse()
        return r.status, r.read(), dict(r.getheaders())
    finally:
        c.close()


def metric(text: str, name: str, labels: str = "") -> float | None:
    prefix = name + (("{" + labels + "}") if labels else "")
    for line in text.splitlines():
        if line.startswith(prefix + " "):
            return float(line.split()[-1])
    return None


def self_metrics(port: int) -> str:
    """The sidecar's response, decompressed; its tail holds the self metrics."""
    import gzip

    status, body, headers = get(port)
    if headers.get("Content-Encoding") == "gzip":
        body = gzip.decompress(body)
    text = body.decode()
    return text[text.rfind("# HELP jmx_scrape_duration_seconds"):] if "jmx_scrape_duration_seconds" in text else text


def scraper(port: int, seconds: float, start_at: float, interval: float, out) -> None:
    """One scraper process: sequential GETs on one kept-alive connection until the deadline, one
    every `interval` seconds (0: back to back)."""
    while time.time() < start_at:
        time.sleep(0.001)
    deadline = time.monotonic() + seconds
    next_at = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    latencies, errors, sizes = [], 0, []
    while time.monotonic() < deadline:
        if interval:
            next_at += interval
            pause = next_at - time.monotonic()
            if pause > 0:
                time.sleep(pause)
        t0 = time.perf_counter()
        try:
            conn.request("GET", "/metrics", headers={"Accept": ACCEPT, "Accept-Encoding": "gzip"})
            r = conn.getresponse()
            body = r.read()
            if r.status != 200:
                errors += 1
                continue
        except (OSError, http.client.HTTPException):
            errors += 1
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            continue
        latencies.append(time.perf_counter() - t0)
        sizes.append(len(body))
    conn.close()
    out.put((latencies, errors, sizes))


def idle_holder(port: int, count: int, ready, stop, out) -> None:
    """One process holding `count` kept-alive idle connections open until `stop` is set; puts how
    many the server closed (each opened again)."""
    import select

    request = b"GET /-/healthy HTTP/1.1\r\nHost: bench\r\n\r\n"

    def opened() -> socket.socket:
        s = socket.create_connection(("127.0.0.1", port), timeout=30)
        s.sendall(request)
        answer = b""
        while not answer.endswith(b"\r\n\r\nHealthy\n"):  # the whole answer: now idle between requests
            chunk = s.recv(4096)
            if not chunk:
                raise RuntimeError(f"an idle connection was closed before its answer: {answer!r}")
            answer += chunk
        return s

    socks = {}
    for _ in range(count):
        s = opened()
        socks[s.fileno()] = s
    ready.set()
    reopened = 0
    while not stop.is_set():
        poller = select.poll()
        for fd in socks:
            poller.register(fd, select.POLLIN)
        for fd, _ in poller.poll(500):  # readable while idle: the server closed it
            try:
                if socks[fd].recv(4096):
                    raise RuntimeError("an idle connection received data")
            except ConnectionResetError:
                pass
            socks.pop(fd).close()
            s = opened()
            socks[s.fileno()] = s
            reopened += 1
    for s in socks.values():
        s.close()
    out.put(reopened)


def scrape_load(port: int, scrapers: int, seconds: float, interval: float = 0.0, idle: int = 0,
                on_idle=None) -> dict:
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    holder = None
    if idle:
        ready, stop, held = ctx.Event(), ctx.Event(), ctx.Queue()
        holder = ctx.Process(target=idle_holder, args=(port, idle, ready, stop, held), daemon=True)
        holder.start()
        if not ready.wait(120):
            raise RuntimeError("the idle connections could not be opened")
    start_at = time.time() + 2.0  # every scraper process started and waiting
    procs = [ctx.Process(target=scraper, args=(port, seconds, start_at, interval, out), daemon=True)
             for _ in range(scrapers)]
    for p in procs:
        p.start()
    results = [out.get(timeout=seconds + 120) for _ in procs]
    for p in procs:
        p.join(10)
    reopened = None
    if holder is not None:
        if on_idle is not None:
            on_idle()  # while the idle connections are still open
        stop.set()
        reopened = held.get(timeout=60)
        holder.join(10)
    sizes = [x for r in results for x in r[2]] or [0]
    biggest = max(sizes)
    return summary([{"latencies": [x for r in results for x in r[0]], "errors": sum(r[1] for r in results),
                     "bytes": biggest, "short": sum(x < biggest // 2 for x in sizes), "seconds": seconds,
                     "reopened": reopened}])


def summary(runs: list[dict]) -> dict:
    """Percentiles over the scrapes of `runs` taken together."""
    lat = sorted(x for r in runs for x in r["latencies"])
    if not lat:
        raise RuntimeError("no successful scrape")
    q = lambda f: lat[min(len(lat) - 1, int(f * len(lat)))]  # noqa: E731
    seconds = sum(r["seconds"] for r in runs)
    return {"n": len(lat), "errors": sum(r["errors"] for r in runs), "p50": q(0.5), "p90": q(0.9), "p99": q(0.99),
            "max": lat[-1], "mean": statistics.mean(lat), "bytes": max(r["bytes"] for r in runs),
            "rate": len(lat) / seconds, "seconds": seconds, "latencies": lat,
            "reopened": sum(r["reopened"] or 0 for r in runs), "short": sum(r["short"] for r in runs)}


class Memory:
    """Samples a process's resident memory from /proc in a thread."""

    def __init__(self, pid: int, every: float = 0.25):
        self.pid, self.every = pid, every
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def status(self) -> dict[str, int]:
        out = {}
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                    out[k] = int(v.split()[0]) * 1024
                elif k == "Threads":
                    out[k] = int(v)
        return out

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.samples.append((time.monotonic(), self.status()["VmRSS"]))
            except (OSError, KeyError):
                return
            self._stop.wait(self.every)

    def since(self, t: float) -> list[int]:
        return [rss for at, rss in self.samples if at >= t]

    def stop(self) -> None:
        self._stop.set()


def jdk_file_rss(pid: int) -> int:
    """Resident bytes of files mapped from the JDK (libjvm.so, the modules image, ...)."""
    java_home = os.path.realpath("/usr/lib/jvm")
    total, current = 0, ""
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            if line[0] in "0123456789abcdef" and "-" in line.split()[0]:
                parts = line.split()
                current = parts[5] if len(parts) > 5 else ""
            elif line.startswith("Rss:") and current.startswith(java_home):
                total += int(line.split()[1]) * 1024
    return total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=40_000)
    ap.add_argument("--rules", default="strimzi", help="strimzi, health or a rule file")
    ap.add_argument("--scrapers", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=30.0,
                    help="scraping time per run (at least 1.2 polls)")
    ap.add_argument("--idle", type=int, default=1000,
                    help="idle connections held open during a third run, paced (0: no such run)")
    ap.add_argument("--rounds", type=int, default=3,
                    help="the paced runs without and with the idle connections alternate in this many parts")
    ap.add_argument("--interval", type=float, default=0.1,
                    help="the paced run: one GET per this many seconds per scraper (the other run: back to back)")
    ap.add_argument("--jvm-options", default=None,
                    help="the sidecar's jvmOptions (default: its defaults plus native memory tracking)")
    ap.add_argument("--ready-timeout", type=float, default=900.0)
    args = ap.parse_args()
    rules = {"strimzi": setup.STRIMZI_RULES, "health": setup.HEALTH_RULES}.get(args.rules, Path(args.rules))
    if args.jvm_options is None:
        from kafka_jmx_sidecar.exporter.config.sidecar import DEFAULT_JVM_OPTIONS

        jvm_options = list(DEFAULT_JVM_OPTIONS) + ["-XX:NativeMemoryTracking=summary"]
    else:
        jvm_options = shlex.split(args.jvm_options)

    print(f"machine: {setup.machine()}")
    sim = setup.start_simulator(args.partitions)
    work = tempfile.mkdtemp(prefix="sidecar-latency-")
    port = free_port()
    # names re-listed every 45 s: the scrapes and the RSS figures meet the names refresh too
    # (every namesRefreshSeconds, 300 by default: it holds both member lists for a moment).
    # Polls back to back (interval 1 s) take ~10 s here: by default one counts as hung after 4
    # intervals and only the self metrics are served until it ends, so the withdrawal waits longer.
    extra = (f"sidecar:\n  listenAddress: 127.0.0.1:{port}\n  pollIntervalSeconds: 1\n  namesRefreshSeconds: 45\n"
             f"  withdrawAfterSeconds: 3600\n  jvmOptions: {json.dumps(jvm_options)}\n")
    config = setup.write_config(sim.url, rules, extra, directory=work)
    log = open(Path(work) / "sidecar.log", "w")
    t_start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "kafka_jmx_sidecar.exporter.commands.cli", "serve", "--config", str(config),
                             "--log-level", "warning"], cwd=str(setup.REPO), stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    mem = Memory(proc.pid)
    bare = None
    try:
        print(f"sidecar: pid {proc.pid}, http://127.0.0.1:{port}/metrics, jvmOptions {jvm_options}", flush=True)
        deadline = time.monotonic() + args.ready_timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the sidecar exited ({proc.returncode}); see {log.name}")
            try:
                status, _, _ = get(port, "/-/ready", timeout=5)
                if status == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the sidecar was not ready in time")
            time.sleep(1)
        ready_after = time.monotonic() - t_start
        first_peak = mem.status()["VmHWM"]
        print(f"ready after {ready_after:.0f} s (first poll); peak RSS so far {setup.memory(first_peak)}", flush=True)
        # steady state: wait for one more complete poll
        polls0 = metric(self_metrics(port), "kafka_jmx_sidecar_polls_total", 'result="success"') or 0
        while (metric(self_metrics(port), "kafka_jmx_sidecar_polls_total", 'result="success"') or 0) < polls0 + 1:
            time.sleep(1)
        steady_from = time.monotonic()
        before = self_metrics(port)
        polls_before = metric(before, "kafka_jmx_sidecar_polls_total", 'result="success"')
        print(f"steady: {metric(before, 'kafka_jmx_sidecar_series'):,.0f} series, last poll "
              f"{metric(before, 'jmx_scrape_duration_seconds'):.1f} s; {args.scrapers} scrapers ...",
              flush=True)
        modes = [("back to back", 0.0), (f"one GET per {args.interval:g} s each", args.interval)]
        # each run spans at least a whole poll, so the scrapes meet every phase of it
        seconds = max(args.seconds, 1.2 * (metric(before, "jmx_scrape_duration_seconds") or 0))
        loads = {}
        threads_before = mem.status()["Threads"]
        back, paced = modes[0][0], modes[1][0]
        loads[back] = scrape_load(port, args.scrapers, seconds, 0.0)
        print(f"  {back}: p99 {loads[back]['p99'] * 1e3:.1f} ms", flush=True)
        idle_mode = f"one GET per {args.interval:g} s each, {args.idle:,} idle connections open"
        idle_seen: dict = {"Threads": 0, "VmRSS": 0, "max RSS": 0}

        def on_idle() -> None:
            now = mem.status()
            idle_seen.update(Threads=max(idle_seen["Threads"], now["Threads"]), VmRSS=now["VmRSS"])

        # the paced run without and with the idle connections in alternating parts, so a change
        # of the machine's load (other processes share its CPUs) falls on both alike
        rounds = args.rounds if args.idle else 1
        without, with_idle = [], []
        for r in range(rounds):
            order = (0, args.idle) if r % 2 == 0 else (args.idle, 0)  # each goes first in turn
            for idle in order if args.idle else (0,):
                if not idle:
                    without.append(scrape_load(port, args.scrapers, seconds / rounds, args.interval))
                else:
                    idle_from = time.monotonic()
                    with_idle.append(scrape_load(port, args.scrapers, seconds / rounds, args.interval, idle,
                                                 on_idle))
                    idle_seen["max RSS"] = max([idle_seen["max RSS"], *mem.since(idle_from)])
        loads[paced] = summary(without)
        print(f"  {paced}: p99 {loads[paced]['p99'] * 1e3:.1f} ms", flush=True)
        if args.idle:
            loads[idle_mode] = summary(with_idle)
            print(f"  {idle_mode}: p99 {loads[idle_mode]['p99'] * 1e3:.1f} ms", flush=True)
        after = self_metrics(port)
        polls_during = metric(after, "kafka_jmx_sidecar_polls_total", 'result="success"') - polls_before
        status = mem.status()
        steady = mem.since(steady_from)
        jvm = {k: metric(after, "kafka_jmx_sidecar_jvm_memory_bytes", f'area="{a}",kind="{kk}"')
               for k, (a, kk) in {"total": ("total", "committed"), "heap": ("heap", "committed"),
                                  "heap_used": ("heap", "used"), "nonheap": ("nonheap", "committed")}.items()}
        jdk_files = jdk_file_rss(proc.pid)
        last_poll = metric(after, "jmx_scrape_duration_seconds")

        # baseline: the same scrapers against a bare http.server serving the same bytes, while the
        # sidecar keeps polling (the same machine load)
        _, body, _ = get(port)
        body_file = Path(work) / "body.gz"
        body_file.write_bytes(body)
        bare = subprocess.Popen([sys.executable, "-c", BARE_SERVER, str(body_file)], stdout=subprocess.PIPE,
                                text=True, start_new_session=True)
        bare_port = int(bare.stdout.readline())
        print(f"baseline: a bare http.server serving the same {len(body):,} bytes ...", flush=True)
        bases = {mode: scrape_load(bare_port, args.scrapers, seconds, interval) for mode, interval in modes}
    finally:
        mem.stop()
        for p in (proc, bare):
            if p is not None and p.poll() is None:
                os.kill(p.pid, signal.SIGTERM)
                try:
                    p.wait(15)
                except subprocess.TimeoutExpired:
                    os.kill(p.pid, signal.SIGKILL)
                    p.wait(5)
        sim.stop()

    print()
    print(f"broker: {args.partitions:,} partitions; rules: {rules.name}; sidecar polling continuously "
          f"(pollIntervalSeconds 1, namesRefreshSeconds 45; {polls_during:.0f} polls during the scrapes, "
          f"the last {last_poll:.1f} s)")
    ok_latency = ok_whole = True
    for mode, interval in modes:
        load, base = loads[mode], bases[mode]
        print(f"{args.scrapers} scrapers, {mode}:")
        for label, r in (("sidecar", load), ("bare http.server", base)):
            print(f"  {label:>16}: {r['n']:,} scrapes ({r['rate']:.0f}/s, {r['errors']} errors) of {r['bytes']:,} bytes: "
                  f"p50 {r['p50'] * 1e3:.1f} ms, p90 {r['p90'] * 1e3:.1f} ms, p99 {r['p99'] * 1e3:.1f} ms, "
                  f"max {r['max'] * 1e3:.1f} ms")
            if r["short"]:  # the series were withdrawn meanwhile: those latencies are of another answer
                ok_whole = False
                print(f"  {'':>16}  NOT MET: {r['short']:,} answers were less than half the biggest one")
        ratios = f"sidecar / bare server: p50 {load['p50'] / base['p50']:.2f}x, p99 {load['p99'] / base['p99']:.2f}x"
        if interval:
            ok = load["p99"] < TARGET_P99
            ok_latency &= ok
            print(f"  p99 {load['p99'] * 1e3:.1f} ms (target < {TARGET_P99 * 1e3:.0f} ms: {setup.verdict(ok)}); {ratios}")
        else:
            print(f"  saturated (no absolute target; see the docstring): {ratios}")
    ok_idle = True
    if args.idle:
        load, without = loads[idle_mode], loads[modes[1][0]]
        ratio = load["p99"] / without["p99"]
        ok_idle = ratio <= TARGET_IDLE_RATIO
        print(f"{args.scrapers} scrapers, {idle_mode}:")
        if load["short"]:
            ok_whole = False
            print(f"  NOT MET: {load['short']:,} answers were less than half the biggest one")
        print(f"  {'sidecar':>16}: {load['n']:,} scrapes ({load['rate']:.0f}/s, {load['errors']} errors): "
              f"p50 {load['p50'] * 1e3:.1f} ms, p90 {load['p90'] * 1e3:.1f} ms, p99 {load['p99'] * 1e3:.1f} ms, "
              f"max {load['max'] * 1e3:.1f} ms")
        print(f"  p99 with / without the idle connections: {ratio:.2f}x (target <= {TARGET_IDLE_RATIO}x: "
              f"{setup.verdict(ok_idle)}); {load['reopened']} idle connections closed by the server and "
              f"opened again; sidecar threads {idle_seen.get('Threads')} with them open, "
              f"{threads_before} before; RSS {setup.memory(idle_seen.get('VmRSS', 0))} with them open "
              f"(max {setup.memory(idle_seen.get('max RSS', 0))})")
    rss_now = status["VmRSS"]
    peak = status["VmHWM"]
    steady_max = max(steady) if steady else rss_now
    ok_rss = peak < TARGET_RSS
    print(f"sidecar RSS: now {setup.memory(rss_now)} (anon {setup.memory(status['RssAnon'])}, files {setup.memory(status['RssFile'])}), "
          f"max while scraped {setup.memory(steady_max)}, peak {setup.memory(peak)} (first poll's peak {setup.memory(first_peak)}) "
          f"(target < {setup.memory(TARGET_RSS)}: {setup.verdict(ok_rss)})")
    if jvm["total"]:
        print(f"  the JVM inside it (JPype): {setup.memory(jvm['total'])} committed by its own count (heap {setup.memory(jvm['heap'])} "
              f"committed, {setup.memory(jvm['heap_used'])} used; non-heap {setup.memory(jvm['nonheap'])}), plus {setup.memory(jdk_files)} "
              f"of JDK files mapped; Python and the rest: about {setup.memory(rss_now - jvm['total'] - jdk_files)}")
    else:
        print(f"  the JVM inside it (JPype): heap {setup.memory(jvm['heap'] or 0)} committed, non-heap {setup.memory(jvm['nonheap'] or 0)}, "
              f"JDK files {setup.memory(jdk_files)} (no native memory tracking in this run)")
    print(f"machine at the end: {setup.machine()}")
    return 0 if ok_latency and ok_rss and ok_idle and ok_whole else 1


if __name__ == "__main__":
    sys.exit(main())
