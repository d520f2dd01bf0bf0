"""Benchmark: the reassignment series' share of a poll at 40,000 partitions (target: under 10%, as
the recompute's).

One simulated Kafka 4.1 broker (it has the Replication and Reassignment meters), the default
health rules, and two collectors polling it in turns, as `serve` polls (gc.freeze included, only
OpenMetrics rendered):

  baseline      no sidecar.reassignment
  reassignment  sidecar.reassignment {} with an Admin API view of a 4-broker cluster: the same
                partitions, replicated 3 times (so this broker holds every one and leads a third),
                `--moving` of those it leads each adding a 4th broker, 100 partitions a topic, every
                topic with throttled-replica lists, and every replica's size

The simulator speaks no Kafka protocol, so the view is made once, in this process, and handed to
the stage each poll (with the stage's DescribeLogDirs scope asked, as the Admin API source asks
it): what is measured is the sidecar's own work (the meters' reads, the arithmetic, the series),
not the Admin API read's network round trips (in a real poll they add to its time, once per poll
shared with the recompute; DescribeLogDirs asks other brokers only for the partitions moving to
them).

The share is the `reassignment_inputs` and `reassignment` phases over the poll; the ratio of the
two polls' medians is printed beside it.

    python -m bench.reassignment_share [--partitions N] [--moving N] [--polls N]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from bench import sidecar_setup as setup

TARGET_SHARE = 0.10
PER_TOPIC = 100


class ViewPoll:
    """An exporter.admin.poll.AdminPoll over a view made once."""

    def __init__(self):
        self.source = type("Source", (), {"log_dir_scope": None})()
        self.view = None

    def next_poll(self):
        pass

    def read(self):
        scope = self.source.log_dir_scope
        for b in sorted(self.view.cluster.live_brokers):
            scope(b, self.view.partitions)
        return self.view

    def close(self):
        pass


def make_view(me: int, partitions: int, moving: int):
    from kafka_jmx_sidecar.exporter.source.admin.view import (AdminView, Broker, BrokerConfig, Cluster, Partition, ReplicaSize,
                                     TopicConfig)

    others = [b for b in (1, 2, 3, 4) if b != me][:2]
    target = next(b for b in (1, 2, 3, 4) if b != me and b not in others)
    parts, sizes, topics = [], [], {}
    for i in range(partitions):
        topic, p = f"topic-{i // PER_TOPIC:05d}", i % PER_TOPIC
        ring = [me, *others][i % 3:] + [me, *others][:i % 3]
        adding = (target,) if ring[0] == me and i // 3 < moving else ()
        parts.append(Partition(topic, p, ring[0], tuple(ring) + adding, tuple(ring), adding_replicas=adding))
        sizes.append(ReplicaSize(me, "/data", topic, p, 1_000_000 + i, 0, False))
        if adding:
            sizes.append(ReplicaSize(target, "/data", topic, p, 500_000, 0, False))
        topics.setdefault(topic, TopicConfig(2, leader_throttled_replicas=f"0:{me}", follower_throttled_replicas=""))
    cluster = Cluster("bench", me, tuple(Broker(b, "h", 9092) for b in (1, 2, 3, 4)), "DescribeCluster")
    return AdminView(cluster, tuple(parts), topics, {b: BrokerConfig(2, 50_000_000, 50_000_000) for b in (1, 2, 3, 4)},
                     tuple(sizes))


def collector(config_path: Path, reassignment: bool):
    from kafka_jmx_sidecar.exporter.poll.collector import Collector
    from kafka_jmx_sidecar.exporter.source.broker import JmxSource
    from kafka_jmx_sidecar.exporter.config.load import broker_settings
    from kafka_jmx_sidecar.exporter.reassignment.settings import ReassignmentSettings
    from kafka_jmx_sidecar.exporter.reassignment.stage import ReassignmentStage
    from kafka_jmx_sidecar.exporter.rule_engine.config import load_config
    from kafka_jmx_sidecar.exporter.config.sidecar import SidecarSettings
    from kafka_jmx_sidecar.exporter.poll.snapshot import OPENMETRICS

    config = load_config(str(config_path))
    settings = SidecarSettings(names_refresh_seconds=3600,
                               reassignment=ReassignmentSettings() if reassignment else None)
    c = Collector(lambda cfg: JmxSource(cfg, broker_settings(cfg, settings)), config, settings, freeze_gc=True)
    if reassignment:
        c._admin = ViewPoll()
        c._reassignment = ReassignmentStage(settings.reassignment, c._admin, settings.naming)
    c._requested = {OPENMETRICS: time.monotonic()}  # what Prometheus asks for
    return c


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=40_000)
    ap.add_argument("--moving", type=int, default=1_000)
    ap.add_argument("--polls", type=int, default=5)
    args = ap.parse_args()
    print(f"machine: {setup.machine()}")
    setup.start_jvm(None)

    t0 = time.monotonic()
    sim = setup.start_simulator(args.partitions, kafka_version="4.1")
    print(f"simulator: {args.partitions:,} partitions posing as Kafka 4.1, ready in {time.monotonic() - t0:.1f} s",
          flush=True)
    try:
        path = setup.write_config(sim.url, setup.HEALTH_RULES)
        base, moving = collector(path, False), collector(path, True)
        setup.timed_poll(base)  # the listing
        moving._admin.view = make_view(1, args.partitions, 0)
        setup.timed_poll(moving)  # the listing; the broker's id
        me = moving._reassignment._me
        moving._admin.view = make_view(me, args.partitions, args.moving)
        setup.timed_poll(moving)  # the counters' first values
        times = {"baseline": [], "reassignment": []}
        shares, phases_seen = [], []
        for _ in range(args.polls):
            for name, c in (("baseline", base), ("reassignment", moving)):
                seconds, phases = setup.timed_poll(c)
                times[name].append(seconds)
                if name == "reassignment":
                    shares.append((phases.get("reassignment_inputs", 0.0) + phases.get("reassignment", 0.0)) / seconds)
                    phases_seen.append(phases)
        outcome = moving._reassignment.outcome
        assert outcome.moving == args.moving and not outcome.unknowns, outcome
        mid = sorted(range(len(shares)), key=lambda i: shares[i])[len(shares) // 2]
        print(f"reassignment: broker {me}, {args.moving:,} moving partitions it leads published")
        print(f"baseline poll:     {setup.spread(times['baseline'])}")
        print(f"reassignment poll: {setup.spread(times['reassignment'])}; its phases (median-share poll): "
              + ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in phases_seen[mid].items()))
        share = statistics.median(shares)
        ratio = statistics.median(times["reassignment"]) / statistics.median(times["baseline"])
        print(f"reassignment share of the poll: median {share:.1%} (min {min(shares):.1%}, max {max(shares):.1%}); "
              f"target < {TARGET_SHARE:.0%}: {setup.verdict(share < TARGET_SHARE)}")
        print(f"poll with reassignment series / without: {ratio:.2f}x")
        print(f"machine at the end: {setup.machine()}")
        for c in (base, moving):
            c.source.close()
        return 0 if share < TARGET_SHARE else 1
    finally:
        sim.stop()


if __name__ == "__main__":
    sys.exit(main())
