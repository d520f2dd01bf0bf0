"""The sidecar's own metrics: jmx_exporter's, which users already alert on, and the sidecar's.

They change per request (snapshot age), so they are rendered per request; they are a few dozen
lines, unlike the snapshot body.
"""
from __future__ import annotations

import time

from prometheus_client import (CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector,
                               disable_created_metrics)
from prometheus_client.exposition import generate_latest as _text
from prometheus_client.openmetrics.exposition import generate_latest as _openmetrics

from exporter import __version__
from exporter.snapshot import OPENMETRICS

disable_created_metrics()  # jmx_exporter 0.x prints no `_created` series

_PREFIX = "kafka_jmx_sidecar_"
_OM_EOF = b"# EOF\n"


class SelfMetrics:
    def __init__(self) -> None:
        r = self.registry = CollectorRegistry(auto_describe=True)
        ProcessCollector(registry=r)  # process_resident_memory_bytes, ... as jmx_exporter's DefaultExports
        # jmx_exporter's names and meanings
        self.scrape_duration = Gauge("jmx_scrape_duration_seconds",
                                     "Time this JMX scrape took, in seconds.", registry=r)
        self.scrape_error = Gauge("jmx_scrape_error",
                                  "Non-zero if this scrape failed.", registry=r)
        self.cached_beans = Gauge("jmx_scrape_cached_beans",
                                  "Number of beans with their matching rule cached", registry=r)
        self.reload_success = Counter("jmx_config_reload_success",
                                      "Number of times configuration have successfully been reloaded.", registry=r)
        self.reload_failure = Counter("jmx_config_reload_failure",
                                      "Number of times configuration have failed to be reloaded.", registry=r)
        build = Gauge("jmx_exporter_build_info",
                      "A metric with a constant '1' value labeled with the version of the JMX exporter.",
                      ["version", "name"], registry=r)
        build.labels(__version__, "kafka-jmx-sidecar").set(1)
        # the sidecar's own
        self.poll_duration = Histogram(
            _PREFIX + "poll_duration_seconds", "Duration of complete broker polls.",
            buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120), registry=r)
        self.polls = Counter(_PREFIX + "polls", "Broker polls by result.", ["result"], registry=r)
        self.last_success = Gauge(_PREFIX + "last_successful_poll_timestamp_seconds",
                                  "When the snapshot being served was taken (0: never).", registry=r)
        self.snapshot_age = Gauge(_PREFIX + "snapshot_age_seconds",
                                  "Age of the snapshot being served.", registry=r)
        self.stale = Gauge(_PREFIX + "snapshot_stale",
                           "1 when the served snapshot is older than the staleness limit or the last poll failed.",
                           registry=r)
        self.connected = Gauge(_PREFIX + "jmx_connected", "1 while the JMX connection is up.", registry=r)
        self.mbeans_read = Gauge(_PREFIX + "mbeans_read", "MBeans covered by the last poll.", registry=r)
        self.round_trips = Gauge(_PREFIX + "rmi_round_trips", "RMI round trips in the last poll.", registry=r)
        self.series = Gauge(_PREFIX + "series", "Series in the snapshot being served.", registry=r)
        self.poll_phase = Gauge(_PREFIX + "poll_phase_seconds",
                                "Where the last successful poll's time went: names (listing, on its slow clock), "
                                "queries, reads, assemble, rules, render.", ["phase"], registry=r)
        self.jvm_memory = Gauge(_PREFIX + "jvm_memory_bytes",
                                "Memory of the JVM inside the sidecar process (JMX client), by area and kind.",
                                ["area", "kind"], registry=r)
        self.rejected = Counter(_PREFIX + "rejected_values",
                                "Attribute values a rule could not turn into a sample (counted, dropped).",
                                registry=r)
        for result in ("success", "failure"):
            self.polls.labels(result)

    def render(self, fmt: str, snapshot_taken_at: float, stale: bool, now: float | None = None) -> bytes:
        now = time.time() if now is None else now
        self.snapshot_age.set(now - snapshot_taken_at if snapshot_taken_at else 0)
        self.stale.set(1 if stale else 0)
        if fmt == OPENMETRICS:
            body = _openmetrics(self.registry)
            return body[: -len(_OM_EOF)] if body.endswith(_OM_EOF) else body
        return _text(self.registry)
