"""The series /metrics serves, as OpenTelemetry metrics: what jmx_exporter 1.x pushes through
client_java's OpenTelemetryExporter, for the same series.

    gauge        -> Gauge
    untyped      -> Gauge (client_java's unknown)
    counter      -> Sum, monotonic, cumulative, named without `_total` (with it: preserveNames)
    histogram    -> Histogram, cumulative, explicit buckets (the sidecar's own poll durations)

Each series' labels become the point's attributes, its value the point's value, stamped with
the time of the push (a sample's own timestamp where it has one) and no start time, as
client_java does for a registry's counters. A receiver names them back: Prometheus' OTLP receiver
adds `_total` to a monotonic Sum, so the names it stores are those /metrics serves.

The points come in `MetricsData` of at most `batch` points each, made as they are sent: a big
broker's million series never sit in memory as OpenTelemetry objects all at once.
"""
from __future__ import annotations

import math
from collections import defaultdict
from typing import Iterable, Iterator

from opentelemetry.sdk.metrics.export import (AggregationTemporality, Gauge, Histogram, HistogramDataPoint,
                                              Metric, MetricsData, NumberDataPoint, ResourceMetrics, ScopeMetrics,
                                              Sum)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from prometheus_client.parser import text_string_to_metric_families

from kafka_jmx_sidecar.exporter import __version__
from kafka_jmx_sidecar.exporter.base.families import Family, MergedTables, TableSeries, scaled

SCOPE = InstrumentationScope("kafka-jmx-sidecar", __version__)
BATCH = 10_000  # points per request


def otlp_name(name: str, sample_type: str, naming: str, preserve_names: bool) -> str:
    """The metric's name in OTLP for a family `name` of `sample_type` as /metrics serves it in
    `naming`: a counter's series are served with `_total` in 1.x (and as the rule named them in
    0.x); client_java pushes a counter without it unless told to preserve the names."""
    if sample_type != "counter":
        return name
    served = name + "_total" if naming == "1.x" else name
    if preserve_names:
        return served
    return served[:-6] if served.endswith("_total") else served


def _points(family: Family) -> Iterator[tuple[tuple[tuple[str, str], ...], float, int | None]]:
    """(labels, value, timestamp in ms or None) of every series of the family."""
    for part in family.parts:
        tables = part.parts if isinstance(part, MergedTables) else [part] if isinstance(part, TableSeries) else None
        if tables is None:
            for s in part:
                yield s.labels, float(s.value), s.timestamp_ms
            continue
        for t in tables:
            table, tpl = t.table, t.template
            topics, topic, partition, values, present = table.topics, table.topic, table.partition, table.values, table.present
            for i in t.positions:
                if present[i]:
                    yield (tpl.member_labels(topics[topic[i]], str(partition[i])),
                           scaled(values[i], tpl.fixed, tpl.factor), None)


def _data(sample_type: str, points: list):
    if sample_type == "counter":
        return Sum(points, AggregationTemporality.CUMULATIVE, is_monotonic=True)
    if sample_type == "histogram":
        return Histogram(points, AggregationTemporality.CUMULATIVE)
    return Gauge(points)


class _Batches:
    """Metrics gathered until `batch` points, then handed out as one MetricsData."""

    def __init__(self, resource: Resource, batch: int):
        self.resource, self.batch = resource, batch
        self.metrics: list[Metric] = []
        self.size = 0

    def add(self, name: str, help_text: str, sample_type: str, points: list) -> MetricsData | None:
        if points:
            self.metrics.append(Metric(name, help_text, None, _data(sample_type, points)))
            self.size += len(points)
        return self.take() if self.size >= self.batch else None

    def take(self) -> MetricsData | None:
        if not self.metrics:
            return None
        data = MetricsData([ResourceMetrics(self.resource, [ScopeMetrics(SCOPE, self.metrics, "")], "")])
        self.metrics, self.size = [], 0
        return data


def batches(families: Iterable[Family], self_metrics: str, naming: str, preserve_names: bool,
            resource: Resource, now_ns: int, batch: int = BATCH) -> Iterator[MetricsData]:
    """The snapshot's `families` and the `self_metrics` text (as /metrics serves both), in
    MetricsData of about `batch` points."""
    out = _Batches(resource, batch)
    for family in families:
        name = otlp_name(family.name, family.type, naming, preserve_names)
        points: list = []
        for labels, value, timestamp_ms in _points(family):
            at = now_ns if timestamp_ms is None else timestamp_ms * 1_000_000
            points.append(NumberDataPoint(dict(labels), 0, at, value))
            if len(points) >= batch:
                data, points = out.add(name, family.help, family.type, points), []
                if data is not None:
                    yield data
        data = out.add(name, family.help, family.type, points)
        if data is not None:
            yield data
    for name, help_text, sample_type, points in _self_metrics(self_metrics, preserve_names, now_ns):
        data = out.add(name, help_text, sample_type, points)
        if data is not None:
            yield data
    data = out.take()
    if data is not None:
        yield data


def _self_metrics(text: str, preserve_names: bool, now_ns: int) -> Iterator[tuple[str, str, str, list]]:
    """(name, help, type, points) of the sidecar's own metrics, from their text as /metrics serves
    it (a few dozen lines). A counter's `_created` is its start, not a series of its own here."""
    for family in text_string_to_metric_families(text):
        if family.type == "histogram":
            yield family.name, family.documentation, "histogram", _histogram_points(family.samples, now_ns)
        elif family.type == "counter":
            totals = [s for s in family.samples if s.name.endswith("_total")]
            name = totals[0].name if preserve_names and totals else family.name
            yield name, family.documentation, "counter", [NumberDataPoint(s.labels, 0, now_ns, s.value) for s in totals]
        elif family.type in ("gauge", "untyped", "unknown"):
            yield family.name, family.documentation, "gauge", [
                NumberDataPoint(s.labels, 0, now_ns, s.value) for s in family.samples]


def _histogram_points(samples, now_ns: int) -> list[HistogramDataPoint]:
    """Prometheus' cumulative `_bucket{le}` counts, `_sum` and `_count` per label set, as OTLP's
    per-bucket counts over the finite bounds."""
    series: dict[tuple, dict] = defaultdict(lambda: {"buckets": [], "sum": 0.0, "count": 0})
    for s in samples:
        labels = tuple(sorted((k, v) for k, v in s.labels.items() if k != "le"))
        if s.name.endswith("_bucket"):
            series[labels]["buckets"].append((float(s.labels["le"]), s.value))
        elif s.name.endswith("_sum"):
            series[labels]["sum"] = s.value
        elif s.name.endswith("_count"):
            series[labels]["count"] = int(s.value)
    points = []
    for labels, h in series.items():
        buckets = sorted(h["buckets"])
        cumulative = [int(count) for _, count in buckets]
        counts = [c - p for c, p in zip(cumulative, [0] + cumulative[:-1])]
        bounds = [le for le, _ in buckets if not math.isinf(le)]
        points.append(HistogramDataPoint(dict(labels), 0, now_ns, h["count"], h["sum"], counts, bounds,
                                         math.nan, math.nan))
    return points
