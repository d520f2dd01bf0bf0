"""The series /metrics serves, as the OpenTelemetry metrics the push sends: types and names as
client_java's OpenTelemetryExporter makes them in jmx_exporter 1.x (gauge and untyped: Gauge;
counter: monotonic cumulative Sum without `_total`), the sidecar's own histogram as a Histogram,
and a push's points in bounded batches. The receivers themselves: tests/e2e/test_otlp.py."""
from __future__ import annotations

import logging

import pytest
from opentelemetry.sdk.metrics.export import AggregationTemporality, Gauge, Histogram, MetricExportResult, Sum
from opentelemetry.sdk.resources import Resource

from kafka_jmx_sidecar.exporter.base.families import of_samples
from kafka_jmx_sidecar.exporter.base.model import Sample
from kafka_jmx_sidecar.exporter.otlp.metrics import batches, otlp_name
from kafka_jmx_sidecar.exporter.otlp.push import Pusher
from kafka_jmx_sidecar.exporter.otlp.settings import OtlpSettings, effective
from kafka_jmx_sidecar.exporter.output.self_metrics import SelfMetrics

NOW = 1_700_000_000 * 10**9


@pytest.mark.parametrize("name, kind, naming, preserve, expected", [
    ("kafka_x_total", "counter", "0.x", False, "kafka_x"),  # 0.x serves it as the rule named it
    ("kafka_x", "counter", "0.x", False, "kafka_x"),
    ("kafka_x", "counter", "1.x", False, "kafka_x"),  # 1.x serves kafka_x_total
    ("kafka_x", "counter", "1.x", True, "kafka_x_total"),
    ("kafka_x_total", "counter", "0.x", True, "kafka_x_total"),
    ("kafka_x_total", "gauge", "0.x", False, "kafka_x_total"),  # only a counter loses it
    ("kafka_y", "untyped", "1.x", False, "kafka_y"),
])
def test_names(name, kind, naming, preserve, expected):
    assert otlp_name(name, kind, naming, preserve) == expected


def metrics_of(families, self_text="", naming="0.x", batch=10_000):
    out = list(batches(families, self_text, naming, False, Resource({"service.name": "s"}), NOW, batch))
    return [m for data in out for m in data.resource_metrics[0].scope_metrics[0].metrics], out


def test_gauges_counters_untyped_as_client_java_maps_them():
    families = of_samples([
        Sample("kafka_urp", (), 2.0, "gauge", "under-replicated"),
        Sample("kafka_bytes_total", (("topic", "a"),), 10.0, "counter"),
        Sample("kafka_bytes_total", (("topic", "b"),), 20.0, "counter"),
        Sample("kafka_odd", (), 1.5, "untyped"),
        Sample("kafka_stamped", (), 3.0, "gauge", timestamp_ms=1_600_000_000_000),
    ])
    metrics, _ = metrics_of(families)
    by_name = {m.name: m for m in metrics}
    assert list(by_name) == ["kafka_urp", "kafka_bytes", "kafka_odd", "kafka_stamped"]
    assert isinstance(by_name["kafka_urp"].data, Gauge) and by_name["kafka_urp"].description == "under-replicated"
    total = by_name["kafka_bytes"].data
    assert isinstance(total, Sum) and total.is_monotonic
    assert total.aggregation_temporality == AggregationTemporality.CUMULATIVE
    assert [(dict(p.attributes), p.value, p.time_unix_nano, p.start_time_unix_nano) for p in total.data_points] == [
        ({"topic": "a"}, 10.0, NOW, 0), ({"topic": "b"}, 20.0, NOW, 0)]
    assert isinstance(by_name["kafka_odd"].data, Gauge)
    assert by_name["kafka_stamped"].data.data_points[0].time_unix_nano == 1_600_000_000_000 * 10**6


def test_the_sidecars_own_metrics_ride_along_its_histogram_as_one():
    metrics = SelfMetrics()
    metrics.poll_duration.observe(0.2)
    metrics.poll_duration.observe(3)
    metrics.polls.labels("success").inc(2)
    text = metrics.render("text", 0, False).decode()
    pushed, _ = metrics_of([], text)
    by_name = {m.name: m for m in pushed}
    histogram = by_name["kafka_jmx_sidecar_poll_duration_seconds"].data
    assert isinstance(histogram, Histogram)
    point = histogram.data_points[0]
    assert (point.count, point.sum) == (2, 3.2)
    assert list(point.explicit_bounds) == [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120]
    assert list(point.bucket_counts) == [0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]  # per bucket, +Inf last
    polls = by_name["kafka_jmx_sidecar_polls"].data
    assert isinstance(polls, Sum) and {p.attributes["result"]: p.value for p in polls.data_points} == {
        "success": 2.0, "failure": 0.0}
    assert isinstance(by_name["jmx_scrape_error"].data, Gauge)


def test_a_push_goes_in_batches_of_bounded_size():
    families = of_samples([Sample("kafka_p", (("partition", str(i)),), float(i), "gauge") for i in range(25)])
    metrics, out = metrics_of(families, batch=10)
    assert [sum(len(m.data.data_points) for m in d.resource_metrics[0].scope_metrics[0].metrics) for d in out] == [
        10, 10, 5]
    assert [p.value for m in metrics for p in m.data.data_points] == [float(i) for i in range(25)]


class Refusing:
    """An exporter whose receiver refuses everything (the SDK logs why, as its exporters do)."""

    def __init__(self, error: Exception | None = None):
        self.error, self.calls = error, 0

    def export(self, data, timeout_millis=None):
        self.calls += 1
        if self.error:
            raise self.error
        logging.getLogger("opentelemetry.exporter.otlp.proto.http.metric_exporter").error(
            "Failed to export metrics batch code: 404, reason: not found")
        return MetricExportResult.FAILURE

    def shutdown(self, timeout_millis=None):
        pass


def test_failures_are_counted_and_logged_once_with_the_exporters_reason(caplog):
    metrics = SelfMetrics()
    push = effective(OtlpSettings(), {}, "b:1")
    for exporter in (Refusing(), Refusing(RuntimeError("connection reset"))):
        pusher = Pusher(push, lambda: (of_samples([Sample("kafka_a", (), 1.0, "gauge")]), "", "0.x"), metrics,
                        exporter=exporter)
        with caplog.at_level(logging.INFO, logger="kafka_jmx_sidecar.otlp"):
            assert [pusher.push_once() for _ in range(3)] == [False] * 3
    failures = metrics.otlp_pushes.labels("failure")._value.get()
    assert failures == 6
    lines = [r.getMessage() for r in caplog.records if r.name == "kafka_jmx_sidecar.otlp"]
    assert lines == [
        "push to http://localhost:4317 failed: Failed to export metrics batch code: 404, reason: not found; the next "
        "is tried in 60 s (kafka_jmx_sidecar_otlp_pushes_total counts them)",
        "push to http://localhost:4317 failed: RuntimeError: connection reset; the next is tried in 60 s "
        "(kafka_jmx_sidecar_otlp_pushes_total counts them)"]
