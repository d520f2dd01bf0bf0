"""The sidecar running in this process (poll thread + HTTP server) against a simulator, the way
`serve` runs it, so end-to-end tests can drive the broker and read what Prometheus sees."""
from __future__ import annotations

import threading
import time
from pathlib import Path

from harness.sidecar import host_port
from kafka_jmx_sidecar.exporter.poll.collector import Collector
from kafka_jmx_sidecar.exporter.http.server import MetricsServer
from kafka_jmx_sidecar.exporter.source.broker import JmxSource
from kafka_jmx_sidecar.exporter.config.load import broker_settings
from kafka_jmx_sidecar.exporter.rule_engine.config import load_config
from kafka_jmx_sidecar.exporter.config.sidecar import sidecar_settings
from kafka_jmx_sidecar.exporter.http.web_config import WebConfig

REPO = Path(__file__).resolve().parents[2]
HEALTH_RULES = REPO / "rules" / "kafka-health.yml"


class Sidecar:
    def __init__(self, jmx_url: str, tmp_path: Path, rules: Path = HEALTH_RULES, web: WebConfig | None = None,
                 poll_seconds: float = 0.5, extra: str = ""):
        self.config_path = tmp_path / "sidecar.yml"
        self.config_path.write_text(f"hostPort: {host_port(jmx_url)}\n{extra}{rules.read_text() if rules else ''}")
        config = load_config(str(self.config_path))
        # the file's `sidecar:` block (from `extra` or the rules) applies, as `serve` applies it
        overrides = {"poll_interval_seconds": poll_seconds, "listen_address": "127.0.0.1:0"}
        self.settings = sidecar_settings(config, overrides)
        # as `serve` makes it: the source from the settings in force (a reload hands new ones)
        self.collector = Collector(lambda c, s: JmxSource(c, broker_settings(c, s)), config, self.settings,
                                   config_path=str(self.config_path), overrides=overrides)
        self.server = MetricsServer("127.0.0.1", 0, self.collector, web or WebConfig())
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self.collector.run, args=(self.stop_event,), daemon=True)

    def __enter__(self) -> "Sidecar":
        self.server.start()
        self.thread.start()
        return self

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.server.port}"

    def wait_for_poll_after(self, t: float, timeout: float = 30) -> None:
        """Until the snapshot of a complete poll taken after wall-clock time `t` is served (not
        the health MBeans read before the first one)."""
        deadline = time.monotonic() + timeout
        while self.collector.snapshot.taken_at <= t or self.collector.partial:
            if time.monotonic() > deadline:
                raise AssertionError(f"no poll after {t}: last error {self.collector.last_error}")
            time.sleep(0.05)

    def stop(self) -> None:
        """Stop polling and serving, as leaving the `with` block does (a second call does nothing)."""
        if self.stop_event.is_set():
            return
        self.stop_event.set()
        self.thread.join(15)
        self.server.stop()

    def __exit__(self, *exc) -> None:
        self.stop()
