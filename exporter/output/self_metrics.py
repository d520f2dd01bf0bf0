"""The sidecar's own metrics: jmx_exporter's, which users already alert on, and the sidecar's.

They change per request (snapshot age), so they are rendered per request; they are a few dozen
lines, unlike the snapshot body.

jmx_exporter's own families are written here as the release the naming mode follows writes them
(checked against the real 0.20.0 and 1.x): 0.x through simpleclient 0.16, with a `_created` gauge
beside each config-reload counter and the build info as a gauge; 1.x through client_java 1.x, with
the build info an info metric (`jmx_exporter_build`, labels sorted, value `1`), the scrape
duration with its unit, no `_created`, and the families sorted by name.
"""
from __future__ import annotations

import time

from prometheus_client import (CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector,
                               disable_created_metrics)
from prometheus_client.exposition import generate_latest as _text
from prometheus_client.openmetrics.exposition import generate_latest as _openmetrics

from kafka_jmx_sidecar.exporter import __version__
from kafka_jmx_sidecar.exporter.base.java_text import java_double
from kafka_jmx_sidecar.exporter.output.exposition import OPENMETRICS

disable_created_metrics()  # the sidecar's own counters (jmx_exporter's are written below)

_PREFIX = "kafka_jmx_sidecar_"
_OM_EOF = b"# EOF\n"


class Value:
    """One number of jmx_exporter's self metrics (`set`, `inc`)."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0.0

    def set(self, value: float) -> None:
        self.value = float(value)

    def inc(self, amount: float = 1.0) -> None:
        self.value += amount


_DURATION_HELP = "Time this JMX scrape took, in seconds."
_ERROR_HELP = "Non-zero if this scrape failed."
_CACHED_HELP = "Number of beans with their matching rule cached"
_RELOAD_HELP = {"success": "Number of times configuration have successfully been reloaded.",
                "failure": "Number of times configuration have failed to be reloaded."}
_BUILD_NAME = "kafka-jmx-sidecar"


class ClientError:
    """The reasons of kafka_jmx_sidecar_http_client_errors_total: what a client did wrong."""

    BAD_REQUEST = "bad_request"  # not HTTP/1.x (HTTP/0.9, garbage), headers too large, a body on a GET
    DISCONNECTED = "disconnected"  # went away with a request half sent or its response half read
    TIMEOUT = "timeout"  # headers, TLS handshake or reading the response took too long
    TLS_HANDSHAKE = "tls_handshake"  # plain HTTP on the TLS port, no or an untrusted client certificate
    TOO_MANY_CONNECTIONS = "too_many_connections"  # refused: the connection limit was reached
    ALL = (BAD_REQUEST, DISCONNECTED, TIMEOUT, TLS_HANDSHAKE, TOO_MANY_CONNECTIONS)


class AuthFailure:
    """The reasons of kafka_jmx_sidecar_http_auth_failures_total: requests basic auth refused."""

    MISSING = "missing"  # no Authorization header, or another scheme than Basic (a 401)
    MALFORMED = "malformed"  # Basic, but not base64 of UTF-8 `user:password` (a 401)
    UNKNOWN_USER = "unknown_user"  # a user name the configuration does not list (a 401)
    WRONG_PASSWORD = "wrong_password"  # a listed user, a wrong password (a 401)
    BUSY = "busy"  # not checked: too many password checks under way (a 429)
    ALL = (MISSING, MALFORMED, UNKNOWN_USER, WRONG_PASSWORD, BUSY)


class JmxExporterMetrics:
    """jmx_exporter's self metrics, in the words of the release `naming` follows."""

    def __init__(self, naming: str = "0.x", clock=time.time) -> None:
        self.one_x = naming == "1.x"
        self.scrape_duration, self.scrape_error, self.cached_beans = Value(), Value(), Value()
        self.reload_success, self.reload_failure = Value(), Value()
        self.created = clock()  # when the reload counters were made (0.x prints it)

    def render(self, openmetrics: bool) -> str:
        return (self._one_x if self.one_x else self._zero_x)(openmetrics)

    @staticmethod
    def _family(name: str, kind: str, help_text: str, lines: list[str], openmetrics: bool,
                unit: str | None = None) -> str:
        if openmetrics:
            head = [f"# TYPE {name} {kind}"] + ([f"# UNIT {name} {unit}"] if unit else []) + [f"# HELP {name} {help_text}"]
        else:
            head = [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]
        return "\n".join(head + lines) + "\n"

    def _zero_x(self, om: bool) -> str:
        f, d = self._family, java_double
        out = [f("jmx_scrape_duration_seconds", "gauge", _DURATION_HELP,
                 [f"jmx_scrape_duration_seconds {d(self.scrape_duration.value)}"], om),
               f("jmx_scrape_error", "gauge", _ERROR_HELP, [f"jmx_scrape_error {d(self.scrape_error.value)}"], om),
               f("jmx_scrape_cached_beans", "gauge", _CACHED_HELP,
                 [f"jmx_scrape_cached_beans {d(self.cached_beans.value)}"], om)]
        created = d(float(int(self.created * 1000)) / 1000)  # simpleclient keeps milliseconds
        for kind, counter in (("failure", self.reload_failure), ("success", self.reload_success)):
            name = f"jmx_config_reload_{kind}"
            if om:
                out.append(f(name, "counter", _RELOAD_HELP[kind],
                             [f"{name}_total {d(counter.value)}", f"{name}_created {created}"], om))
            else:
                out.append(f(f"{name}_total", "counter", _RELOAD_HELP[kind], [f"{name}_total {d(counter.value)}"], om))
        if not om:  # the text format writes each `_created` as a gauge family of its own
            for kind in ("failure", "success"):
                name = f"jmx_config_reload_{kind}_created"
                out.append(f(name, "gauge", _RELOAD_HELP[kind], [f"{name} {created}"], om))
        labels = f'{{version="{__version__}",name="{_BUILD_NAME}"{"" if om else ","}}}'
        out.append(f("jmx_exporter_build_info", "gauge",
                     "A metric with a constant '1' value labeled with the version of the JMX exporter.",
                     [f"jmx_exporter_build_info{labels} 1.0"], om))
        return "".join(out)

    def _one_x(self, om: bool) -> str:
        f, d = self._family, java_double
        out = []
        for kind, counter in (("failure", self.reload_failure), ("success", self.reload_success)):
            name = f"jmx_config_reload_{kind}"
            out.append(f(name if om else f"{name}_total", "counter", _RELOAD_HELP[kind],
                         [f"{name}_total {d(counter.value)}"], om))
        build = f'jmx_exporter_build_info{{name="{_BUILD_NAME}",version="{__version__}"}} 1'
        out.append(f("jmx_exporter_build" if om else "jmx_exporter_build_info", "info" if om else "gauge",
                     "JMX Exporter build information", [build], om))
        out.append(f("jmx_scrape_cached_beans", "gauge", _CACHED_HELP,
                     [f"jmx_scrape_cached_beans {d(self.cached_beans.value)}"], om))
        out.append(f("jmx_scrape_duration_seconds", "gauge", _DURATION_HELP,
                     [f"jmx_scrape_duration_seconds {d(self.scrape_duration.value)}"], om, unit="seconds"))
        out.append(f("jmx_scrape_error", "gauge", _ERROR_HELP, [f"jmx_scrape_error {d(self.scrape_error.value)}"], om))
        return "".join(out)


class SelfMetrics:
    def __init__(self, naming: str = "0.x") -> None:
        r = self.registry = CollectorRegistry(auto_describe=True)
        ProcessCollector(registry=r)  # the sidecar process, as every Prometheus exporter shows itself
        # jmx_exporter's names and meanings
        self.jmx = JmxExporterMetrics(naming)
        self.scrape_duration, self.scrape_error = self.jmx.scrape_duration, self.jmx.scrape_error
        self.cached_beans = self.jmx.cached_beans
        self.reload_success, self.reload_failure = self.jmx.reload_success, self.jmx.reload_failure
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
        self.withdrawn = Gauge(_PREFIX + "snapshot_withdrawn",
                               "1 while the broker's series are withdrawn: polls have failed (or one hangs) for longer than "
                               "sidecar.withdrawAfterSeconds since the last good one; only these self metrics "
                               "are served until a poll succeeds.", registry=r)
        self.partial = Gauge(_PREFIX + "snapshot_partial",
                             "1 while the snapshot holds only the broker-wide health MBeans read before the first "
                             "complete poll (which a big broker takes a minute or more to finish).", registry=r)
        self.poll_overruns = Counter(_PREFIX + "poll_overruns",
                                     "Polls that took longer than sidecar.pollIntervalSeconds (the next one starts "
                                     "at the first interval tick after such a poll ends).", registry=r)
        self.connected = Gauge(_PREFIX + "jmx_connected", "1 while the JMX connection is up.", registry=r)
        self.mbeans_read = Gauge(_PREFIX + "mbeans_read", "MBeans covered by the last poll.", registry=r)
        self.round_trips = Gauge(_PREFIX + "rmi_round_trips", "RMI round trips in the last poll.", registry=r)
        self.series = Gauge(_PREFIX + "series", "Series in the snapshot being served.", registry=r)
        self.poll_phase = Gauge(_PREFIX + "poll_phase_seconds",
                                "Where the last successful poll's time went: names (listing, on its slow clock), recompute_inputs and "
                                "recompute (with sidecar.recompute), reassignment_inputs and reassignment (with "
                                "sidecar.reassignment), "
                                "queries (the server-side queries and the reads they call for, while the other reads run), "
                                "reads (what is left of the other reads after them, with the rules run on new per-partition "
                                "members as their values come in), assemble, rules (the rest of the rules), render.", ["phase"],
                                registry=r)
        self.jvm_memory = Gauge(_PREFIX + "jvm_memory_bytes",
                                "Memory of the JVM inside the sidecar process (JMX client), by area and kind.",
                                ["area", "kind"], registry=r)
        self.rejected = Counter(_PREFIX + "rejected_values",
                                "Attribute values a rule could not turn into a sample (counted, dropped).",
                                registry=r)
        for result in ("success", "failure"):
            self.polls.labels(result)

        # the HTTP side
        self.http_client_errors = Counter(
            _PREFIX + "http_client_errors", "HTTP connections closed or answered with an error for what the "
            "client did, by reason.", ["reason"], registry=r)
        for reason in ClientError.ALL:
            self.http_client_errors.labels(reason)
        self.http_auth_failures = Counter(
            _PREFIX + "http_auth_failures", "Requests refused by basic auth, by reason: missing or malformed "
            "credentials, unknown_user, wrong_password, busy (429: too many password checks under way).",
            ["reason"], registry=r)
        for reason in AuthFailure.ALL:
            self.http_auth_failures.labels(reason)
        self.http_connections = Gauge(_PREFIX + "http_connections", "Open HTTP connections.", registry=r)
        self.web_config_reload_success = Counter(
            _PREFIX + "web_config_reload_success", "Times the web config file was reloaded after a change.",
            registry=r)
        self.web_config_reload_failure = Counter(
            _PREFIX + "web_config_reload_failure", "Times a changed web config file could not be used (the last "
            "good one stays).", registry=r)

    def record_broker(self, broker) -> None:
        """Which broker the source read (an exporter.source.protocol.BrokerReadings): made at the
        first poll that knows it (never in the cluster-wide mode), kept while polls fail."""
        if not hasattr(self, "broker_info"):
            self.broker_info = Gauge(
                _PREFIX + "broker_info", "1, labelled with the broker's id and release (kafka.server:type=app-info,"
                "id=N, Version) and its cluster's id (kafka.server:type=KafkaServer,name=ClusterId); a label the "
                "broker does not tell is empty.", ["broker_id", "cluster_id", "broker_version"], registry=self.registry)
        self.broker_info.clear()
        self.broker_info.labels(broker.broker_id or "", broker.cluster_id or "", broker.version or "").set(1)

    def enable_recompute(self) -> None:
        """The recompute's metrics (exporter/recompute/stage.py): only when sidecar.recompute is set."""
        if hasattr(self, "recompute_info"):
            return
        r = self.registry
        self.recompute_info = Gauge(
            _PREFIX + "recompute_info", "1, labelled with the recompute's profile and mode, the broker's release "
            "(app-info Version) and the profile that release's own gauges follow.",
            ["semantics", "mode", "broker_version", "broker_semantics"], registry=r)
        self.recompute_family = Gauge(
            _PREFIX + "recompute_family", "Per health MBean family, 1 for what the last poll did with it: read "
            "(the broker's own values), added (the broker's release lacks it), replaced (recomputed under the "
            "profile), none (not served: the configuration's filters, or recompute off); 0 for the others.",
            ["family", "state"], registry=r)
        self.recompute_fallbacks = Gauge(
            _PREFIX + "recompute_input_fallbacks", "Recompute inputs not known in the last poll and the documented "
            "fallback used instead: topics (min_isr) or led partitions (reassignments) it concerns.",
            ["input", "fallback"], registry=r)
        self._fallbacks_seen: set[tuple[str, str]] = set()
        self.recompute_led = Gauge(_PREFIX + "recompute_led_partitions",
                                   "Partitions this broker leads, judged by the last poll's recompute.", registry=r)
        self.recompute_placeholders = Gauge(
            _PREFIX + "recompute_placeholder_replicas", "Placeholder ids (replicas that do not exist yet) in the "
            "replica list of a partition this broker leads, as the Admin API describes it.",
            ["topic", "partition"], registry=r)

    def enable_archive(self) -> None:
        """The archive writer's metrics (exporter/archive/writer.py): only when sidecar.archive is set."""
        if hasattr(self, "archive_polls"):
            return
        r = self.registry
        self.archive_polls = Counter(
            _PREFIX + "archive_polls", "Complete polls handed to the archive, by outcome: written, dropped (the "
            "writer was still busy with earlier polls), failed (the write failed; logged once per error).",
            ["outcome"], registry=r)
        for outcome in ("written", "dropped", "failed"):
            self.archive_polls.labels(outcome)
        self.archive_deleted = Counter(
            _PREFIX + "archive_files_deleted", "Archive files deleted by the retention, by reason: age "
            "(sidecar.archive.retentionHours) or size (sidecar.archive.retentionSize).", ["reason"], registry=r)
        for reason in ("age", "size"):
            self.archive_deleted.labels(reason)
        self.archive_bytes = Gauge(_PREFIX + "archive_bytes", "Bytes of the archive files on disk.", registry=r)

    def enable_reassignment(self) -> None:
        """The reassignment series' metrics (exporter/reassignment/stage.py): only with sidecar.reassignment."""
        if hasattr(self, "reassignment_unknowns"):
            return
        self.reassignment_unknowns = Gauge(
            _PREFIX + "reassignment_inputs_unknown", "Inputs of the reassignment series not known in the last poll, "
            "by reason (the series they feed are left out): brokers or topics concerned; 0 once known again.",
            ["input", "reason"], registry=self.registry)
        self._reassignment_seen: set[tuple[str, str]] = set()
        self.reassignment_moving = Gauge(
            _PREFIX + "reassignment_moving_partitions", "Moving partitions whose progress the last poll published.",
            registry=self.registry)

    def record_reassignment(self, outcome) -> None:
        """The last poll's reassignment series (an exporter.reassignment_stage.Outcome)."""
        for labels in self._reassignment_seen:
            self.reassignment_unknowns.labels(*labels).set(0)
        for labels, count in outcome.unknowns.items():
            self._reassignment_seen.add(labels)
            self.reassignment_unknowns.labels(*labels).set(count)
        self.reassignment_moving.set(outcome.moving)

    def enable_otlp(self) -> None:
        """The push of `openTelemetry:` (exporter/otlp/push.py)."""
        if hasattr(self, "otlp_pushes"):
            return
        r = self.registry
        self.otlp_pushes = Counter(_PREFIX + "otlp_pushes", "Pushes to the OTLP receiver of openTelemetry: by result "
                                   "(a failure: the receiver or the exporter refused a part of it).", ["result"],
                                   registry=r)
        for result in ("success", "failure"):
            self.otlp_pushes.labels(result)
        self.otlp_push_duration = Gauge(_PREFIX + "otlp_push_duration_seconds", "How long the last push took.",
                                        registry=r)

    def enable_cluster(self) -> None:
        """The cluster-wide mode's metrics (exporter/source/cluster.py): only with sidecar.mode: cluster."""
        if hasattr(self, "cluster_info"):
            return
        r = self.registry
        self.cluster_info = Gauge(_PREFIX + "cluster_info", "1, labelled with the health profile the cluster-wide "
                                  "mode judges every partition by and the cluster's id.", ["semantics", "cluster_id"],
                                  registry=r)
        self.cluster_partitions = Gauge(_PREFIX + "cluster_partitions",
                                        "Partitions the last poll judged: every one the Admin API described.",
                                        registry=r)
        self.cluster_live_brokers = Gauge(_PREFIX + "cluster_live_brokers", "Brokers the Admin API listed as live "
                                          "(registered and not fenced) in the last poll.", registry=r)
        # not kafka_jmx_sidecar_broker_info: a join on `instance` with that one stays one-to-one
        self.cluster_broker_info = Gauge(_PREFIX + "cluster_broker_info", "1 per broker the Admin API listed as live "
                                         "in the last poll, labelled with its id and the cluster's id.",
                                         ["broker_id", "cluster_id"], registry=r)
        self.admin_unknown = Gauge(
            _PREFIX + "admin_unknown", "What the Admin API could not tell in the last poll, by input and reason "
            "(unsupported, unauthorized, unreachable, hidden, error): topics or brokers concerned, 1 for a "
            "cluster-wide input; 0 once known again.", ["input", "reason"], registry=r)
        self.cluster_fallbacks = Gauge(
            _PREFIX + "cluster_input_fallbacks", "Inputs of the cluster-wide view not known in the last poll and "
            "the documented fallback used instead: topics (min_isr) or partitions (reassignments) concerned; 0 "
            "once known again.", ["input", "fallback"], registry=r)
        self._cluster_seen: dict[Gauge, set] = {self.admin_unknown: set(), self.cluster_fallbacks: set()}
        self.cluster_feature_level = Gauge(_PREFIX + "cluster_feature_level", "The cluster's finalized feature "
                                           "levels the view depends on, read each poll: eligible.leader.replicas.version "
                                           "(KIP-966; 0: ELR off, 1: on); absent while the Admin API does not tell it.",
                                           ["feature"], registry=r)

    def record_cluster(self, outcome) -> None:
        """The last poll of the cluster-wide source (an exporter.cluster_source.Outcome)."""
        self.cluster_info.clear()
        self.cluster_info.labels(outcome.semantics, outcome.cluster_id or "unknown").set(1)
        self.cluster_partitions.set(outcome.partitions)
        self.cluster_live_brokers.set(outcome.live_brokers)
        self.cluster_feature_level.clear()
        if outcome.elr_level is not None:
            self.cluster_feature_level.labels("eligible.leader.replicas.version").set(outcome.elr_level)
        self.cluster_broker_info.clear()
        for broker_id in outcome.broker_ids:
            self.cluster_broker_info.labels(str(broker_id), outcome.cluster_id or "").set(1)
        for gauge, counts in ((self.admin_unknown, outcome.unknowns), (self.cluster_fallbacks, outcome.fallbacks)):
            seen = self._cluster_seen[gauge]  # listed once, then 0 when known again (an alert sees it recover)
            for labels in seen:
                gauge.labels(*labels).set(0)
            for labels, count in counts.items():
                seen.add(labels)
                gauge.labels(*labels).set(count)

    def record_recompute(self, outcome, semantics: str, mode: str) -> None:
        """The last poll's recompute (an exporter.recompute_stage.Outcome)."""
        self.recompute_info.clear()
        self.recompute_info.labels(semantics, mode, outcome.version or "unknown",
                                   outcome.broker_semantics or "unknown").set(1)
        for family, state in outcome.states.items():
            for s in ("read", "added", "replaced", "none"):
                self.recompute_family.labels(family, s).set(1 if s == state else 0)
        # inputs seen missing once stay listed, at 0 once known again (an alert can see them recover)
        for labels in list(self._fallbacks_seen):
            self.recompute_fallbacks.labels(*labels).set(0)
        for labels, count in outcome.fallbacks.items():
            self._fallbacks_seen.add(labels)
            self.recompute_fallbacks.labels(*labels).set(count)
        self.recompute_led.set(outcome.led)
        self.recompute_placeholders.clear()
        for (topic, partition), count in sorted(outcome.placeholders.items()):
            self.recompute_placeholders.labels(topic, str(partition)).set(count)

    def render(self, fmt: str, snapshot_taken_at: float, stale: bool, now: float | None = None,
               withdrawn: bool = False, partial: bool = False) -> bytes:
        now = time.time() if now is None else now
        self.snapshot_age.set(now - snapshot_taken_at if snapshot_taken_at else 0)
        self.stale.set(1 if stale else 0)
        self.withdrawn.set(1 if withdrawn else 0)
        self.partial.set(1 if partial else 0)
        jmx = self.jmx.render(fmt == OPENMETRICS).encode()
        if fmt == OPENMETRICS:
            body = _openmetrics(self.registry)
            return jmx + (body[: -len(_OM_EOF)] if body.endswith(_OM_EOF) else body)
        return jmx + _text(self.registry)
