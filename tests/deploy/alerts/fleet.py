"""A Kafka cluster's series as the sidecars next to its brokers serve them (rules/kafka-health.yml's
names), for the alert-volume tests (test_alert_volume.py): every broker's ReplicaManager counts, its
controller gauges (KRaft nodes that are broker and controller), its log directories and the sidecar's
own series, and the per-partition gauges of the partitions it hosts (the leader's values, zeros on
followers; `followers=False` leaves the zeros out).

Values follow Kafka's definitions under the kafka-3.7 profile, written here by hand: a partition's
ISR is its live replicas that keep up, its leader the first of them in replica order; it is
under-replicated with fewer in-sync replicas than replicas, under min ISR below min(min.insync.replicas,
replication factor) and at min ISR exactly there.

    parts = [Partition("orders", p, (1, 2, 3), 2) for p in range(300)]
    healthy = served(parts, live={1, 2, 3})                      # {broker: {series: value}}
    degraded = served(parts, live={1, 2, 3}, lagging={2})        # broker 2 out of every ISR
    promtool_series([(with_self(healthy), 2), (with_self(degraded), 19)], instance=...)
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Callable, Iterable

PARTITION_GAUGES = ("underreplicated", "underminisr", "atminisr", "insyncreplicascount", "replicascount")
# ReplicaManager counts a broker keeps for the partitions it leads: the per-partition flag each counts
LEADER_COUNTS = {"underreplicatedpartitions": "underreplicated", "underminisrpartitioncount": "underminisr",
                 "atminisrpartitioncount": "atminisr"}
# a value is a number, or (first, step) for a counter that grows by `step` per sample
Value = float | tuple[float, float]


@dataclass(frozen=True)
class Partition:
    topic: str
    partition: int
    replicas: tuple[int, ...]
    min_isr: int


def health(p: Partition, live: frozenset[int], lagging: frozenset[int]) -> tuple[int | None, dict[str, int]]:
    """The leader of `p` (None: no live in-sync replica) and the per-partition values it serves."""
    isr = [r for r in p.replicas if r in live and r not in lagging]
    rf, n = len(p.replicas), len(isr)
    floor = min(p.min_isr, rf)
    return (isr[0] if isr else None), {"underreplicated": int(n < rf), "underminisr": int(n < floor),
                                       "atminisr": int(n == floor), "insyncreplicascount": n,
                                       "replicascount": rf}


def served(partitions: Iterable[Partition], live: Iterable[int], lagging: Iterable[int] = (),
           followers: bool = True) -> dict[int, dict[str, float]]:
    """Each live broker's Kafka series (no target labels). The active controller is the lowest live
    node; every controller node reports the offline count."""
    live, lagging = frozenset(live), frozenset(lagging)
    out: dict[int, dict[str, float]] = {b: {} for b in live}
    counts = {b: Counter() for b in live}
    offline = 0
    zeros = dict.fromkeys(PARTITION_GAUGES, 0)
    for p in partitions:
        leader, values = health(p, live, lagging)
        offline += leader is None
        for b in p.replicas:
            if b not in live:
                continue
            counts[b]["partitioncount"] += 1
            if b == leader:
                counts[b]["leadercount"] += 1
                for count, flag in LEADER_COUNTS.items():
                    counts[b][count] += values[flag]
            elif not followers:
                continue
            labels = f'{{topic="{p.topic}",partition="{p.partition}"}}'
            for gauge, v in (values if b == leader else zeros).items():
                out[b][f"kafka_cluster_partition_{gauge}{labels}"] = v
    for b in live:
        for name in (*LEADER_COUNTS, "reassigningpartitions", "leadercount", "partitioncount"):
            out[b][f"kafka_server_replicamanager_{name}"] = counts[b][name]
        out[b].update({
            "kafka_controller_kafkacontroller_activecontrollercount": int(b == min(live)),
            "kafka_controller_kafkacontroller_offlinepartitionscount": offline,
            "kafka_controller_controllerstats_uncleanleaderelections_total": 0,
            "kafka_log_logmanager_offlinelogdirectorycount": 0,
            "kafka_server_brokertopicmetrics_reassignmentbytesout_total": 0,
        })
    return out


def sidecar_self(polls_ok: Value, polls_failed: Value, failing: bool) -> dict[str, Value]:
    """The sidecar's own series (jmx_scrape_error 1 while its polls fail)."""
    return {'jmx_exporter_build_info{name="kafka-jmx-sidecar",version="0.1.0"}': 1,
            "jmx_scrape_error": int(failing), "kafka_jmx_sidecar_snapshot_stale": 0,
            'kafka_jmx_sidecar_polls_total{result="success"}': polls_ok,
            'kafka_jmx_sidecar_polls_total{result="failure"}': polls_failed}


def with_labels(series: str, labels: dict[str, str]) -> str:
    """`series` (name{labels} or name) with `labels` put first."""
    name, _, rest = series.partition("{")
    own = ",".join(f'{k}="{v}"' for k, v in labels.items())
    return f"{name}{{{own}{',' + rest if rest and rest != '}' else '}'}"


def _runs(tokens: list[str]) -> str:
    """promtool's notation for a list of samples: runs of one value as `vxN` (N+1 samples), of
    missing ones as `_xN` (N samples)."""
    out, i = [], 0
    while i < len(tokens):
        j = i
        while j + 1 < len(tokens) and tokens[j + 1] == tokens[i]:
            j += 1
        n = j - i + 1
        if n == 1:
            out.append(tokens[i])
        elif tokens[i] == "_":
            out.append(f"_x{n}")
        else:
            out.append(f"{tokens[i]}x{n - 1}")
        i = j + 1
    return " ".join(out)


def promtool_series(timeline: list[tuple[dict[str, dict[str, Value]], int]],
                    labels: Callable[[str], dict[str, str]]) -> list[dict]:
    """promtool input_series for phases [({target: {series: value}}, samples)]: a series missing
    from a phase after it was served goes stale (as Prometheus marks it), then has no samples.
    `labels(target)` gives the target labels (instance, job...) Prometheus would add."""
    keys = list(dict.fromkeys((t, s) for phase, _ in timeline for t, series in phase.items() for s in series))
    out = []
    for target, series in keys:
        tokens: list[str] = []
        for phase, samples in timeline:
            value = phase.get(target, {}).get(series)
            for j in range(samples):
                if value is None:
                    tokens.append("stale" if tokens and tokens[-1] not in ("_", "stale") else "_")
                else:
                    first, step = value if isinstance(value, tuple) else (value, 0)
                    tokens.append(f"{first + step * j:g}")
        out.append({"series": with_labels(series, labels(target)), "values": _runs(tokens)})
    return out


def exposition(series: dict[str, float]) -> bytes:
    """The text format Prometheus scrapes (no TYPE lines: every series reads as untyped, which
    PromQL treats alike)."""
    return "".join(f"{k} {v:g}\n" for k, v in series.items()).encode()
