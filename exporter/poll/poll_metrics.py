"""The self metrics a good poll sets (Collector.poll_once): its duration and phases, what it read,
and what each stage that ran reports."""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from kafka_jmx_sidecar.exporter.output.self_metrics import SelfMetrics
from kafka_jmx_sidecar.exporter.poll.snapshot import Snapshot

log = logging.getLogger("kafka_jmx_sidecar.collector")


@dataclass
class PollStats:
    """What the last good poll did: where its time went (seconds by phase: names, queries, reads,
    assemble, rules, render) and what it read."""

    phases: dict[str, float] = field(default_factory=dict)
    round_trips: int = 0
    queries: int = 0
    mbeans: int = 0
    series: int = 0


def record_success(m: SelfMetrics, c: Any, result, snap: Snapshot, elapsed: float, phases: dict[str, float],
                   engine_stats, rejected_seen: int) -> int:
    """Set the metrics of the poll `c` (the Collector) just published; returns the rule engine's
    rejected values counted so far (the engine counts since it was built, the metric since start)."""
    m.scrape_duration.set(elapsed)
    m.scrape_error.set(0)
    m.poll_duration.observe(elapsed)
    m.polls.labels("success").inc()
    m.last_success.set(snap.taken_at)
    settings = c.settings
    if c.recompute_stage is not None:
        r = settings.recompute
        m.record_recompute(c.recompute_stage.outcome, r.semantics, r.mode)
    if c.reassignment_stage is not None:
        m.record_reassignment(c.reassignment_stage.outcome)
    if settings.cluster:
        m.record_cluster(c.source.outcome)
    if result.broker is not None:
        m.record_broker(result.broker)
    m.mbeans_read.set(result.count)
    m.round_trips.set(result.round_trips)
    m.series.set(snap.series)
    for phase, seconds in phases.items():
        m.poll_phase.labels(phase).set(seconds)
    memory = getattr(c.source, "jvm_memory", None)
    if memory is not None:
        try:
            for (area, kind), size in memory().items():
                m.jvm_memory.labels(area, kind).set(size)
        except Exception:  # diagnostics only: never fail a poll over them
            log.debug("JVM memory not available", exc_info=True)
    m.cached_beans.set(engine_stats.jmx_cached_beans)
    if engine_stats.rejected_values > rejected_seen:
        m.rejected.inc(engine_stats.rejected_values - rejected_seen)
    return engine_stats.rejected_values
