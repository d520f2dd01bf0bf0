"""The reassignment series (`sidecar.reassignment`): after the rules, each poll
adds series of its own, with fixed names, to what jmx_exporter's rules make of the broker's MBeans.

Why not MBeans through the rules, as the recompute does: these are not values any Kafka release
serves (a made-up ObjectName would pass for Kafka's own), their names must not depend on a rule
file, and they carry labels (`estimated`, `move`) no rule would give. Kafka's own
ReassignmentBytes and ReplicationBytes meters still reach the rules unchanged.

What the sidecar next to broker B publishes (the arithmetic is mbeans/reassignment.py's):

  kafka_reassignment_bytes_total{direction,estimated}    B's reassignment bytes: its
      ReassignmentBytesIn/OutPerSec counts (2.5+), else the growth of its adding replicas' logs
      (in) and of the adding replicas of the partitions it leads (out), estimated="true"
  kafka_replication_non_reassignment_bytes_total{direction,estimated}
      ReplicationBytesIn/OutPerSec minus the above
  kafka_replication_throttled_rate_bytes_per_second{throttle}   leader/follower.replication.throttled.rate
  kafka_replication_throttled_replicas{throttle}         B's replicas the topics' throttled-replica lists name
  kafka_reassignment_throttle_used_ratio{throttle,estimated}    reassignment rate / throttled rate
  kafka_reassignment_partition_remaining_bytes{topic,partition,move}   bytes still to copy:
      move="replicas", partitions B leads (their adding replicas' lag, summed);
      move="log_dir", B's replicas moving between its log dirs
  kafka_reassignment_partition_eta_seconds{topic,partition,move}       remaining / the rate it fell
  kafka_reassignment_max_lag_bytes                       the largest adding replica's lag of the
      partitions B leads (0: none): the cluster's is the max over brokers

Inputs: the meters from JMX (BrokerReadings.meters, read whatever the filters say), everything
else from the Admin API (shared with the recompute: one read per poll). DescribeLogDirs asks B for
every partition it holds (its adding replicas, the logs it leads, its future logs) and every other
broker only for the partitions B leads that it is being added to. What is not known leaves its
series out, is counted in kafka_jmx_sidecar_reassignment_inputs_unknown{input,reason} and is
logged once.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import NamedTuple

from kafka_jmx_sidecar.exporter.source.admin.convert import throttled_replicas
from kafka_jmx_sidecar.exporter.source.admin.fallback import reassignments_known
from kafka_jmx_sidecar.exporter.source.admin.view import AdminView, Input, Partition
from kafka_jmx_sidecar.exporter.base.families import Family
from kafka_jmx_sidecar.exporter.base.model import Sample
from kafka_jmx_sidecar.exporter.reassignment.settings import ReassignmentSettings
from kafka_jmx_sidecar.exporter.source.protocol import BrokerReadings, SourceError
from kafka_jmx_sidecar.mbeans.health import parse_version
from kafka_jmx_sidecar.mbeans.reassignment import (DIRECTIONS, FOLLOWER, LEADER, LOG_DIR, REASSIGNMENT, REPLICAS, REPLICATION,
                                 THROTTLE_OF, THROTTLES, BrokerTraffic, Move, Progress, adding_lags,
                                 has_reassignment_meters, log_dir_lags, max_lag)

log = logging.getLogger("kafka_jmx_sidecar.reassignment")

REASSIGNMENT_BYTES = "kafka_reassignment_bytes"
OTHER_BYTES = "kafka_replication_non_reassignment_bytes"
THROTTLED_RATE = "kafka_replication_throttled_rate_bytes_per_second"
THROTTLED_REPLICAS = "kafka_replication_throttled_replicas"
THROTTLE_USED = "kafka_reassignment_throttle_used_ratio"
REMAINING = "kafka_reassignment_partition_remaining_bytes"
ETA = "kafka_reassignment_partition_eta_seconds"
MAX_LAG = "kafka_reassignment_max_lag_bytes"


class Series(NamedTuple):
    """A family this stage publishes: its type, its labels, its HELP (docs/metrics.md is made from these)."""

    type: str
    labels: tuple[str, ...]
    help: str


SERIES = {
    REASSIGNMENT_BYTES: Series("counter", ("direction", "estimated"), "Bytes this broker fetched as an adding replica "
                               "(in) or served to adding replicas as their leader (out): its ReassignmentBytesIn/OutPerSec "
                               "counts, or (estimated) its adding replicas' log growth."),
    OTHER_BYTES: Series("counter", ("direction", "estimated"), "Replication bytes that are not reassignment: "
                        "ReplicationBytesIn/OutPerSec minus kafka_reassignment_bytes."),
    THROTTLED_RATE: Series("gauge", ("throttle",), "The broker's leader/follower.replication.throttled.rate (absent: "
                           "not set, or not known)."),
    THROTTLED_REPLICAS: Series("gauge", ("throttle",), "Replicas on this broker named by the topics' "
                               "leader/follower.replication.throttled.replicas."),
    THROTTLE_USED: Series("gauge", ("throttle", "estimated"), "Reassignment bytes per second over the throttled rate "
                          "that limits them (leader: out, follower: in), over sidecar.reassignment.rateWindowSeconds."),
    REMAINING: Series("gauge", ("topic", "partition", "move"), "Bytes a moving partition still lacks: its adding "
                      "replicas' lag behind the leader's log, summed (move=replicas, on the leader's sidecar), or a "
                      "log-dir move's current minus future log."),
    ETA: Series("gauge", ("topic", "partition", "move"), "Seconds until the partition's remaining bytes reach 0 at the "
                "rate they fell over sidecar.reassignment.rateWindowSeconds (+Inf: not falling)."),
    MAX_LAG: Series("gauge", (), "The largest lag, in bytes, of an adding replica of the partitions this broker leads "
                    "(0: none)."),
}

# inputs of kafka_jmx_sidecar_reassignment_inputs_unknown, and what is left out without them
WITHOUT = {
    "admin_api": "only the traffic split from the broker's own meters (Kafka 2.5+) is published",
    "broker_id": "nothing is published",
    "reassignments": "progress is not published, nor (before Kafka 2.5) the reassignment traffic",
    "log_dirs": "progress is not published, nor (before Kafka 2.5) the reassignment traffic",
    "throttle_rates": "the throttled rates and their use are not published",
    "throttled_replicas": "the throttled-replica counts are not published",
    "replication_meters": "the traffic split is not published",
}


@dataclass
class Outcome:
    """What the last poll did, for the self metrics."""

    unknowns: dict[tuple[str, str], int] = field(default_factory=dict)  # (input, reason) -> brokers/topics
    moving: int = 0  # partitions whose progress was published
    estimated: bool | None = None


class ReassignmentStage:
    """One per collector: `prepare(broker)` once the broker is read (before anything reads the
    Admin API), `families(broker, now)` after the rules."""

    def __init__(self, settings: ReassignmentSettings, admin=None, naming: str = "0.x"):
        self.settings = settings
        self.admin = admin  # a source.admin.poll.AdminPoll, or None
        self.one_x = naming == "1.x"
        self.outcome = Outcome()
        self._me: int | None = None
        self._traffic: BrokerTraffic | None = None
        self._progress = Progress(settings.rate_window_seconds)
        self._asked: set[int] = set()  # brokers whose log dirs this poll's read asked for
        self._adding_before: dict[int, set[tuple[str, int]]] = {}  # broker -> partitions it was added to (led here)
        self._told: set[tuple] = set()
        if admin is not None:
            admin.source.log_dir_scope = self._log_dir_scope

    # --- before the Admin API is read ----------------------------------------------------------

    def prepare(self, broker: BrokerReadings | None) -> None:
        self._asked = set()
        try:
            self._me = int(broker.broker_id) if broker is not None and broker.broker_id is not None else None
        except ValueError:
            self._me = None

    def _log_dir_scope(self, broker: int, partitions: list[Partition]) -> dict[str, list[int]] | None:
        """This broker: every partition it holds. Another: the partitions this broker leads that it
        is being added to, or was at the last poll (the end of a copy)."""
        me = self._me
        if me is None:
            return {}
        if broker == me:
            self._asked.add(broker)
            return None
        wanted = {(p.topic, p.partition) for p in partitions if p.leader == me and broker in p.adding_replicas}
        wanted |= self._adding_before.get(broker, set())
        if not wanted:
            return {}
        self._asked.add(broker)
        chosen: dict[str, list[int]] = {}
        for t, p in sorted(wanted):
            chosen.setdefault(t, []).append(p)
        return chosen

    # --- after the rules ---------------------------------------------------------------------

    def families(self, broker: BrokerReadings | None, now: float) -> list[Family]:
        out = self.outcome = Outcome()
        me = self._me
        if broker is None or me is None:
            self._unknown("broker_id", "unknown", 1, "the broker's id is not known (kafka.server:type=app-info,id=N)")
            return []
        if self._traffic is None or self._traffic.broker != me:
            self._traffic = BrokerTraffic(me, self.settings.rate_window_seconds)
        view = self._view()
        moves, sizes, futures, known = self._layout(view, me) if view is not None else ([], None, {}, set())
        traffic = self._update_traffic(broker, now, moves, sizes, known)
        out.estimated = traffic.estimated if traffic.reassignment else None
        samples: dict[str, list[Sample]] = {}

        def add(name: str, labels: tuple, value: float) -> None:
            samples.setdefault(name, []).append(Sample(name, labels, float(value)))

        flag = "true" if traffic.estimated else "false"
        for d in DIRECTIONS:
            if d in traffic.reassignment:
                add(REASSIGNMENT_BYTES, (("direction", d), ("estimated", flag)), traffic.reassignment[d])
                add(OTHER_BYTES, (("direction", d), ("estimated", flag)), traffic.other[d])
        if view is not None:
            rates = self._throttle_rates(view, me)
            for t in THROTTLES:
                if rates.get(t) is not None:
                    add(THROTTLED_RATE, (("throttle", t),), rates[t])
            for d in DIRECTIONS:
                rate, limit = traffic.rate.get(d), rates.get(THROTTLE_OF[d])
                if rate is not None and limit:
                    add(THROTTLE_USED, (("estimated", flag), ("throttle", THROTTLE_OF[d])), max(0.0, rate) / limit)
            counts = self._throttled_replicas(view, me)
            for t in THROTTLES:
                if t in counts:
                    add(THROTTLED_REPLICAS, (("throttle", t),), counts[t])
        if sizes is not None and me in known:
            led = [m for m in moves if m.leader == me]
            lags = adding_lags(led, sizes, known)
            remaining: dict[tuple[str, int, str], int] = {}
            for lag in lags:
                key = (lag.topic, lag.partition, REPLICAS)
                remaining[key] = remaining.get(key, 0) + lag.lag
            for lag in log_dir_lags(sizes, {k: v for k, v in futures.items() if k[2] == me}):
                remaining[(lag.topic, lag.partition, LOG_DIR)] = lag.lag
            for (t, p, move), (left, eta) in sorted(self._progress.update(now, remaining).items()):
                labels = (("topic", t), ("partition", str(p)), ("move", move))
                add(REMAINING, labels, left)
                if eta is not None:
                    add(ETA, labels, eta)
            out.moving = len(remaining)
            add(MAX_LAG, (), max_lag(lags))
        else:
            self._progress.update(now, {})
        self._adding_before = {}
        for m in moves:
            if m.leader == me:
                for b in m.adding:
                    self._adding_before.setdefault(b, set()).add((m.topic, m.partition))
        return self._families(samples)

    # --- inputs ------------------------------------------------------------------------------

    def _unknown(self, input: str, reason: str, count: int, detail: str) -> None:
        self.outcome.unknowns[(input, reason)] = self.outcome.unknowns.get((input, reason), 0) + count
        if (input, reason) not in self._told:
            self._told.add((input, reason))
            log.warning("reassignment series: %s unknown (%s): %s; %s", input, reason, detail, WITHOUT[input])

    def _view(self) -> AdminView | None:
        if self.admin is None:
            self._unknown("admin_api", "not_configured", 1, "sidecar.admin is not set")
            return None
        try:
            return self.admin.read()
        except SourceError as e:
            self._unknown("admin_api", "unreachable", 1, str(e))
            return None

    def _layout(self, view: AdminView, me: int):
        """(reassigning partitions, current log sizes or None, future log sizes, brokers whose log
        dirs were read)."""
        moves: list[Move] = []
        if reassignments_known(view):
            moves = [Move(p.topic, p.partition, p.leader, p.adding_replicas) for p in view.partitions
                     if p.adding_replicas]
        else:
            u = view.unknown(Input.REASSIGNMENTS)
            self._unknown("reassignments", u.reason.value, 1, u.detail)
        known = {b for b in self._asked if view.unknown(Input.LOG_DIRS, broker=b) is None}
        for b in sorted(self._asked - known):
            u = view.unknown(Input.LOG_DIRS, broker=b)
            self._unknown("log_dirs", u.reason.value, 1, u.detail)
        if me not in self._asked:  # its release has no DescribeLogDirs, or it is not live in the cluster's view
            u = view.unknown(Input.LOG_DIRS, broker=me)
            if u is not None:
                self._unknown("log_dirs", u.reason.value, 1, u.detail)
            else:
                self._unknown("log_dirs", "unreachable", 1, f"broker {me} was not asked (not live in the cluster's metadata)")
        if not reassignments_known(view):
            return [], None, {}, known
        sizes = {(r.topic, r.partition, r.broker): r.size for r in view.replica_sizes
                 if not r.is_future and r.broker in known}
        futures = {(r.topic, r.partition, r.broker): r.size for r in view.replica_sizes
                   if r.is_future and r.broker in known}
        return moves, sizes, futures, known

    def _update_traffic(self, broker: BrokerReadings, now: float, moves, sizes, known):
        meters = broker.meters
        replication = {d: meters.get(REPLICATION[d].name) for d in DIRECTIONS}
        missing = sum(1 for v in replication.values() if v is None)
        if missing:
            self._unknown("replication_meters", "missing", missing, "the broker serves no "
                          "kafka.server:type=BrokerTopicMetrics,name=ReplicationBytesIn/OutPerSec (Kafka 0.11+)")
        if _has_meters(broker):
            return self._traffic.update(now, replication, {d: meters.get(REASSIGNMENT[d].name) for d in DIRECTIONS})
        return self._traffic.update(now, replication, None, moves, sizes, known)

    def _throttle_rates(self, view: AdminView, me: int) -> dict[str, int | None]:
        config = view.brokers.get(me)
        u = view.unknown(Input.THROTTLE_RATES, broker=me)
        if u is not None:
            self._unknown("throttle_rates", u.reason.value, 1, u.detail)
            return {}
        if config is None:
            return {}
        return {LEADER: config.leader_throttled_rate, FOLLOWER: config.follower_throttled_rate}

    def _throttled_replicas(self, view: AdminView, me: int) -> dict[str, int]:
        """Per throttle, the replicas on this broker the topics' lists name ("*": all of the topic's)."""
        hosted: dict[str, set[int]] = {}
        for p in view.partitions:
            if me in p.replicas:
                hosted.setdefault(p.topic, set()).add(p.partition)
        counts = {LEADER: 0, FOLLOWER: 0}
        unknown, first = 0, None
        for topic in sorted({p.topic for p in view.partitions}):
            config = view.topics.get(topic)
            values = ((LEADER, config.leader_throttled_replicas), (FOLLOWER, config.follower_throttled_replicas)) \
                if config is not None else ((LEADER, None), (FOLLOWER, None))
            for throttle, value in values:
                try:
                    listed = throttled_replicas(value)
                except ValueError:
                    listed = None
                if listed is None:
                    unknown += 1
                    first = first or topic
                    break
                counts[throttle] += len(hosted.get(topic, ())) if listed == "*" else \
                    sum(1 for p, b in listed if b == me and p in hosted.get(topic, ()))
        if unknown:
            u = view.unknown(Input.THROTTLED_REPLICAS, topic=first)
            self._unknown("throttled_replicas", u.reason.value if u is not None else "error", unknown,
                          u.detail if u is not None else f"{unknown} topic(s) without their throttled-replica configs")
            return {}
        return counts

    # --- out -----------------------------------------------------------------------------------

    def _families(self, samples: dict[str, list[Sample]]) -> list[Family]:
        out = []
        for name, series in SERIES.items():
            if name not in samples:
                continue
            # as the exposition names counters: 0.x keeps `_total` in the family's name, 1.x adds it
            family = name + "_total" if series.type == "counter" and not self.one_x else name
            out.append(Family(family, series.type, series.help,
                              [[Sample(family, s.labels, s.value, series.type, series.help) for s in samples[name]]]))
        return out


def _has_meters(broker: BrokerReadings) -> bool:
    """Whether the broker counts reassignment bytes itself: its release says so (2.5+), or, when the
    release is not known, it serves the meters."""
    if broker.version is not None:
        try:
            parse_version(broker.version)
            return has_reassignment_meters(broker.version)
        except ValueError:
            pass
    return all(REASSIGNMENT[d].name in broker.meters for d in DIRECTIONS)

