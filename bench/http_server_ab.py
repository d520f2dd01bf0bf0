"""Benchmark: the sidecar's HTTP server (exporter/http/: asyncio + h11) against the standard
library's threading http.server it replaced, serving the same bytes, each in a process of its own
where a busy thread holds the GIL as the poll does (switch interval 0.5 ms, as `serve` sets it).

Paced scrapers (20, one GET per 0.1 s each, Prometheus' Accept header, gzip), with and without
1,000 idle kept-alive connections held open by another process. The servers take turns in
`--rounds` parts of every run, so a change of the machine's load (other processes share its CPUs)
falls on both alike. Prints p50/p99 of each and the ratios: the new server against http.server,
and each with the idle connections against without them (target <= 1.5x), with each server's
threads and resident memory while the idle connections are open.

    python -m bench.http_server_ab [--bytes 7000000] [--seconds 20] [--rounds 4] [--idle 1000]
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from bench import sidecar_scrape_latency as latency
from bench import sidecar_setup as setup

SERVER = r'''
import os, sys, threading
sys.setswitchinterval(0.0005)
kind, body = sys.argv[1], open(sys.argv[2], "rb").read()

def busy():  # the poll's stand-in: pure Python holding the GIL
    while True:
        sum(i * i for i in range(20000))

threading.Thread(target=busy, daemon=True).start()
if kind == "http.server":
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        def log_message(self, *a): pass
        def do_GET(self):
            if self.path != "/metrics":
                payload, ctype, gz = b"Healthy\n", "text/plain; charset=utf-8", False
            else:
                payload, ctype, gz = body, "application/openmetrics-text; version=1.0.0; charset=utf-8", True
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            if gz:
                self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
    class S(ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 128
    s = S(("127.0.0.1", 0), H)
    print(s.server_address[1], flush=True)
    s.serve_forever()
else:
    from kafka_jmx_sidecar.exporter.http.server import MetricsServer
    from kafka_jmx_sidecar.exporter.output.self_metrics import SelfMetrics
    from kafka_jmx_sidecar.exporter.http.web_config import WebConfig
    class Fixed:
        ready, metrics = True, SelfMetrics()
        def response(self, fmt, gzip_wanted):
            return len(body), (body,)
    s = MetricsServer("127.0.0.1", 0, Fixed(), WebConfig())
    s.start()
    print(s.port, flush=True)
    threading.Event().wait()
'''

KINDS = ("http.server", "exporter/http/")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bytes", type=int, default=7_000_000, help="body size (the gzipped snapshot at 40,000 "
                    "partitions with Strimzi's rules is about 7 MB)")
    ap.add_argument("--scrapers", type=int, default=20)
    ap.add_argument("--interval", type=float, default=0.1)
    ap.add_argument("--seconds", type=float, default=20.0, help="scraping time per server and run")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--idle", type=int, default=1000)
    args = ap.parse_args()
    print(f"machine: {setup.machine()}")
    work = Path(tempfile.mkdtemp(prefix="http-ab-"))
    body = work / "body"
    body.write_bytes(os.urandom(args.bytes))
    procs, ports = {}, {}
    try:
        for kind in KINDS:
            procs[kind] = subprocess.Popen([sys.executable, "-c", SERVER, kind, str(body)],
                                           stdout=subprocess.PIPE, text=True, start_new_session=True)
            ports[kind] = int(procs[kind].stdout.readline())
        runs = {(kind, idle): [] for kind in KINDS for idle in sorted({0, args.idle})}
        seen = {kind: {} for kind in KINDS}
        part = args.seconds / args.rounds
        for r in range(args.rounds):
            for idle in sorted({0, args.idle}):
                for kind in (KINDS if r % 2 == 0 else KINDS[::-1]):
                    mem = latency.Memory(procs[kind].pid)

                    def on_idle(kind=kind, mem=mem) -> None:
                        now = mem.status()
                        seen[kind] = {k: max(seen[kind].get(k, 0), v) for k, v in now.items()}

                    runs[(kind, idle)].append(latency.scrape_load(ports[kind], args.scrapers, part, args.interval,
                                                                  idle, on_idle if idle else None))
                    mem.stop()
            print(f"  round {r + 1}/{args.rounds} done; {setup.machine()}", flush=True)
    finally:
        for p in procs.values():
            os.killpg(p.pid, signal.SIGTERM)
            p.wait(10)
    print()
    print(f"{args.scrapers} scrapers, one GET per {args.interval:g} s each, of {args.bytes:,} bytes; a busy thread "
          f"beside each server; {args.rounds} alternating parts, {args.seconds:g} s per server and run:")
    res = {k: latency.summary(v) for k, v in runs.items()}
    for kind in KINDS:
        for idle in sorted({0, args.idle}):
            s = res[(kind, idle)]
            extra = (f"; threads {seen[kind].get('Threads')}, RSS {latency.mib(seen[kind].get('VmRSS', 0))}"
                     if idle else "")
            print(f"  {kind:>16}, {idle:>5} idle: {s['n']:,} scrapes ({s['errors']} errors), p50 {s['p50'] * 1e3:.1f} ms, "
                  f"p90 {s['p90'] * 1e3:.1f} ms, p99 {s['p99'] * 1e3:.1f} ms, max {s['max'] * 1e3:.1f} ms{extra}")
    new, old = KINDS[1], KINDS[0]
    ok = True
    for idle in sorted({0, args.idle}):
        print(f"  {new} / {old}, {idle} idle: p50 {res[(new, idle)]['p50'] / res[(old, idle)]['p50']:.2f}x, "
              f"p99 {res[(new, idle)]['p99'] / res[(old, idle)]['p99']:.2f}x")
    for kind in KINDS:
        ratio = res[(kind, args.idle)]["p99"] / res[(kind, 0)]["p99"]
        verdict = ""
        if kind == new:
            ok = ratio <= latency.TARGET_IDLE_RATIO
            verdict = f" (target <= {latency.TARGET_IDLE_RATIO}x: {setup.verdict(ok)})"
        print(f"  {kind}: p99 with / without {args.idle} idle connections {ratio:.2f}x{verdict}")
    print(f"machine at the end: {setup.machine()}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
