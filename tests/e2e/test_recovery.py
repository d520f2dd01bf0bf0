"""Noticing fast and coming back fast, against the simulator over real JMX/RMI: a frozen broker (its
JVM stopped: the port accepts connections, nothing answers) is withdrawn at withdrawAfterSeconds,
not when the read times out; a broker back after an outage is read again within about a poll
interval, however long the reconnect backoff has grown."""
from __future__ import annotations

import dataclasses
import os
import signal
import threading
import time
import urllib.request

from kafka_jmx_sidecar.exporter.config.load import broker_settings, load
from kafka_jmx_sidecar.exporter.http.server import MetricsServer
from kafka_jmx_sidecar.exporter.http.web_config import WebConfig
from kafka_jmx_sidecar.exporter.poll.collector import Collector
from kafka_jmx_sidecar.exporter.source.broker import JmxSource
from kafka_jmx_sidecar.mbeans.simulator import Simulator, cluster
from tests.e2e.sidecar_harness import HEALTH_RULES, host_port
from tests.exporter.test_collector import metric_value

POLL = 0.5
BROKER_SERIES = b"kafka_server_replicamanager_underreplicatedpartitions"


class Served:
    """The sidecar as `serve` runs it, from a config file, with `tweak(BrokerSettings)` applied to
    what the source is made with."""

    def __init__(self, tmp_path, jmx_url: str, sidecar: str, tweak=lambda s: s):
        path = tmp_path / "sidecar.yml"
        path.write_text(f"hostPort: {host_port(jmx_url)}\nsidecar:\n  listenAddress: 127.0.0.1:0\n"
                        f"  pollIntervalSeconds: {POLL}\n{sidecar}{HEALTH_RULES.read_text()}")
        loaded = load(str(path))
        self.collector = Collector(lambda c, s: JmxSource(c, tweak(broker_settings(c, s))), loaded.config,
                                   loaded.settings, config_path=str(path))
        self.server = MetricsServer("127.0.0.1", 0, self.collector, WebConfig())
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.collector.run, args=(self.stop,), daemon=True)

    def __enter__(self) -> "Served":
        self.server.start()
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.collector.stop()
        self.thread.join(10)
        self.server.stop()

    def metrics(self) -> bytes:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.server.port}/metrics", timeout=5) as r:
            return r.read()

    def wait(self, what: str, check, timeout: float, every: float = 0.02) -> tuple[float, bytes]:
        """(time.time() of the first /metrics body that passes `check`, the body)."""
        deadline = time.monotonic() + timeout
        while True:
            at, body = time.time(), self.metrics()
            if check(body):
                return at, body
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; last error: {self.collector.last_error}")
            time.sleep(every)


def serving(body: bytes) -> bool:
    return BROKER_SERIES in body and metric_value(body, "kafka_jmx_sidecar_snapshot_withdrawn") == 0


def complete(body: bytes) -> bool:
    return serving(body) and metric_value(body, "kafka_jmx_sidecar_snapshot_partial") == 0


def test_a_frozen_broker_is_withdrawn_at_withdraw_after_not_at_the_read_timeout(tmp_path):
    withdraw_after = 3.0
    with Simulator.start(cluster.synthetic(50), kafka_version="4.1") as sim, \
            Served(tmp_path, sim.url, f"  withdrawAfterSeconds: {withdraw_after:g}\n  readTimeoutSeconds: 120\n") as s:
        s.wait("a complete poll", complete, timeout=60)
        os.kill(sim.proc.pid, signal.SIGSTOP)
        try:
            frozen = time.time()
            withdrawn_at, body = s.wait("the series withdrawn", lambda b: BROKER_SERIES not in b, timeout=30)
            last_good = metric_value(body, "kafka_jmx_sidecar_last_successful_poll_timestamp_seconds")
            assert metric_value(body, "kafka_jmx_sidecar_snapshot_withdrawn") == 1
            assert metric_value(body, "jmx_scrape_error") == 1
            # the poll is still waiting on the broker: nothing has failed or timed out
            assert metric_value(body, 'kafka_jmx_sidecar_polls_total{result="failure"}') == 0
            assert s.collector.last_error is None
            after_last_good = withdrawn_at - last_good
            print(f"\nfrozen {frozen - last_good:.2f} s after the last good poll; withdrawn {after_last_good:.2f} s "
                  f"after it (withdrawAfterSeconds {withdraw_after:g}, readTimeoutSeconds 120; load average "
                  f"{os.getloadavg()[0]:.1f})")
            # (read before the request: the sidecar's clock is a little later when it decides)
            assert withdraw_after - 0.05 <= after_last_good < withdraw_after + 0.5
        finally:
            os.kill(sim.proc.pid, signal.SIGCONT)
        thawed = time.time()
        back_at, body = s.wait("the series back", serving, timeout=30)
        print(f"thawed: series back {back_at - thawed:.2f} s later")
        assert back_at - thawed < 2 * POLL + 1.0
        assert metric_value(body, "jmx_scrape_error") == 0
        assert metric_value(body, 'kafka_jmx_sidecar_polls_total{result="failure"}') == 0  # the hung read ended well


def test_a_broker_back_after_an_outage_is_read_within_a_poll_whatever_the_backoff(tmp_path):
    """The outage is seconds, not minutes: what a long one leaves behind is a reconnect backoff
    at its cap (60 s, reached after ~2 minutes of failed attempts), and each failed attempt here
    backs off those 60 s from the first (reconnect_min_seconds = the cap). Without the probe
    between backoff steps the series stayed away up to a whole backoff after the broker was back."""
    broker = cluster.synthetic(50)
    sim = Simulator.start(broker, kafka_version="4.1")
    port = int(host_port(sim.url).rpartition(":")[2])

    def long_backoff(settings):
        return dataclasses.replace(settings, jmx=dataclasses.replace(settings.jmx, reconnect_min_seconds=60))

    try:
        with Served(tmp_path, sim.url, "  withdrawAfterSeconds: 1\n", long_backoff) as s:
            s.wait("a complete poll", complete, timeout=60)
            sim.stop()
            s.wait("the series withdrawn", lambda b: BROKER_SERIES not in b, timeout=30)
            # the outage has gone on long enough for a failed reconnect: the next attempt is 60 s away
            s.wait("a backoff of 60 s", lambda b: "next attempt in" in (s.collector.last_error or ""), timeout=30)
            assert "next attempt in 5" in s.collector.last_error or "next attempt in 6" in s.collector.last_error
            sim = Simulator.start(broker, kafka_version="4.1", jmx_port=port)
            answering = time.time()
            back_at, body = s.wait("the series back", serving, timeout=30)
            print(f"\nbroker answering again: series back {back_at - answering:.2f} s later (poll interval {POLL:g} s, "
                  f"backoff 60 s; load average {os.getloadavg()[0]:.1f})")
            assert back_at - answering < 2 * POLL + 1.0
            assert metric_value(body, "jmx_scrape_error") == 0
            assert metric_value(body, "kafka_jmx_sidecar_jmx_connected") == 1
    finally:
        sim.stop()
