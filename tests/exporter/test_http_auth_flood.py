"""A flood of wrong passwords (another process, several threads, four client addresses) cannot hold
up a scraper: one whose login is remembered is answered without hashing; a scraper's first login
waits for at most workers + queue hashes; the flood's excess is answered 429 at once; every
refused login is counted, and logged in a few lines. Real sockets, real bcrypt at cost 10."""
from __future__ import annotations

import json
import logging
import os
import statistics
import subprocess
import sys
import threading
import time

import bcrypt

from kafka_jmx_sidecar.exporter.http.limits import Limits
from kafka_jmx_sidecar.exporter.http.server import MetricsServer
from kafka_jmx_sidecar.exporter.http.web_config import load_web_config
from tests.exporter.test_http import FixedBody, wait_until
from tests.exporter.test_http_auth import auth, failures, logged, status

COST = 10  # a common choice (htpasswd -B makes 5, the toolkit's docs show 10 and more)
FLOOD = 200
ATTACKERS = ("127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5")  # fewer than workers + queue (5)
THREADS_PER_ADDRESS = 3

# The flood, in a process of its own as an attacker would be: FLOOD requests, each a new wrong
# password on a new connection, from THREADS_PER_ADDRESS threads per address.
_FLOOD_SCRIPT = r"""
import base64, http.client, json, sys, threading, time
port, count, per, addresses = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
lock, taken, out = threading.Lock(), [0], []
def run(address):
    while True:
        with lock:
            if taken[0] >= count:
                return
            i = taken[0]; taken[0] += 1
        token = base64.b64encode(f"prometheus:wrong-{i}".encode()).decode()
        t0 = time.perf_counter()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120, source_address=(address, 0))
        conn.request("GET", "/metrics", headers={"Authorization": "Basic " + token})
        r = conn.getresponse(); r.read(); conn.close()
        with lock:
            out.append((r.status, time.perf_counter() - t0))
threads = [threading.Thread(target=run, args=(a,)) for a in addresses for _ in range(per)]
for t in threads: t.start()
for t in threads: t.join()
print(json.dumps(out))
"""


def timed(port: int, headers: dict, address: str = "127.0.0.1") -> tuple[int, float]:
    import http.client

    t0 = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120, source_address=(address, 0))
    try:
        conn.request("GET", "/metrics", headers=headers)
        r = conn.getresponse()
        r.read()
        return r.status, time.perf_counter() - t0
    finally:
        conn.close()


def pct(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(q * len(values)))]


def test_a_flood_of_wrong_passwords_cannot_hold_up_a_scraper(tmp_path, caplog):
    web = tmp_path / "web.yml"
    web.write_text("basic_auth_users:\n"
                   f"  prometheus: '{bcrypt.hashpw(b's3cret', bcrypt.gensalt(COST)).decode()}'\n"
                   f"  second: '{bcrypt.hashpw(b'other', bcrypt.gensalt(COST)).decode()}'\n")
    collector = FixedBody(b"x" * 20000)
    server = MetricsServer("127.0.0.1", 0, collector, load_web_config(str(web)), Limits(auth_log_seconds=0.5))
    server.start()
    scraper = auth("prometheus", "s3cret")
    try:
        with caplog.at_level(logging.INFO, logger="kafka_jmx_sidecar.http"):
            hashed = bcrypt.hashpw(b"y", bcrypt.gensalt(COST))
            t0 = time.perf_counter()
            bcrypt.checkpw(b"x", hashed)
            one_hash = time.perf_counter() - t0  # what waiting behind one check would cost
            assert timed(server.port, scraper)[0] == 200  # its first login, before the flood
            quiet = [timed(server.port, scraper)[1] for _ in range(20)]

            flood = subprocess.Popen([sys.executable, "-c", _FLOOD_SCRIPT, str(server.port), str(FLOOD),
                                      str(THREADS_PER_ADDRESS), *ATTACKERS], stdout=subprocess.PIPE, text=True)
            cold: list[tuple[int, float]] = []
            # a second scraper's first login, from an address of its own, once the flood is on
            late = threading.Timer(0.3, lambda: cold.append(timed(server.port, auth("second", "other"), "127.0.0.6")))
            late.start()
            during, started = [], time.perf_counter()
            while flood.poll() is None:
                code, took = timed(server.port, scraper)
                assert code == 200
                during.append(took)
                time.sleep(0.02)
            flood_seconds = time.perf_counter() - started
            late.join()
            answers = json.loads(flood.communicate()[0])
            wait_until("every failure logged", lambda: logged(caplog.records) == FLOOD, 10)
    finally:
        server.stop()
    load = os.getloadavg()
    codes = [code for code, _ in answers]
    busy = [took for code, took in answers if code == 429]
    report = (f"load {load[0]:.1f}; one hash {one_hash * 1000:.0f} ms; flood {flood_seconds:.1f} s, "
              f"{codes.count(401)} checked (401), {len(busy)} refused (429, p50 {statistics.median(busy or [0]) * 1000:.0f} "
              f"ms, max {max(busy or [0]) * 1000:.0f} ms); remembered scraper: quiet p50 "
              f"{statistics.median(quiet) * 1000:.1f} ms, during the flood p50 {statistics.median(during) * 1000:.1f} ms "
              f"p90 {pct(during, 0.9) * 1000:.1f} ms max {max(during) * 1000:.1f} ms ({len(during)} requests); "
              f"first login during the flood {cold[0][1] * 1000:.0f} ms")
    print(report)
    assert len(answers) == FLOOD and set(codes) <= {401, 429}, report
    assert busy, report  # the flood was bigger than the checks allowed: its excess was refused
    # No hashing on a remembered login's path: the scraper is slowed only by the machine being busy
    # (two cores: one hashing, one running the flood's threads and the answers), never by waiting
    # for hashes (behind the flood's, that would be seconds). The maximum allows for a loaded
    # machine's scheduling, which the median does not see.
    assert statistics.median(during) < 0.1 and max(during) < 1.0, report
    # The first login of another address waits for at most workers + queue hashes (5), far
    # within Prometheus' default scrape timeout of 10 s.
    assert cold[0][0] == 200 and cold[0][1] < 10, report
    assert failures(collector, "wrong_password") == codes.count(401)
    assert failures(collector, "busy") == len(busy)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    # one line at once, then at most one per 0.5 s (the last may come after the flood ends)
    assert len(warnings) <= flood_seconds / 0.5 + 3, report
    assert all(r.levelno < logging.ERROR and not r.exc_info for r in caplog.records)
    assert any(all(a in line for a in ATTACKERS) for line in warnings[1:]), warnings
