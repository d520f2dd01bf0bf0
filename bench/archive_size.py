"""Benchmark: the archive's size for a day of a 40,000-partition broker (target: at least 20x
smaller than writing every partition at every poll), with a keyframe every
`--keyframe-interval` seconds (sidecar.archive.keyframeIntervalSeconds, its default unless given).

The polls are generated in this process and handed to the real writer (exporter/archive/writer.py,
synchronously, into a temporary directory): no JVM and no simulator, as a day of 15 s polls would
take a day. Each poll carries what the default health rules make the JMX edge read from such a
broker: the per-partition counts (InSyncReplicasCount, ReplicasCount: the recompute's input),
the five per-partition health families as tables (UnderReplicated, UnderMinIsr, AtMinIsr,
InSyncReplicasCount, ReplicasCount; non-zero where the broker leads, a third of its partitions),
the ReplicaManager gauges and four broker-wide meter counts that grow every poll.

State changes: each hour 1% of the partitions (chosen at random, seeded) lose a replica from their
ISR at a random poll of the hour and get it back 5 minutes later.

Baseline: the same encoding with every partition at every poll, i.e. every poll a keyframe. A
keyframe's size is measured with the real encoder every `--sample` polls and taken for the polls
until the next sample (the state, and so the size, moves by a few bytes in between); encoding all
5,760 keyframes would take the better part of an hour.

    python -m bench.archive_size [--partitions N] [--hours H] [--interval S] [--sample N] [--keyframe-interval S]
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from array import array
from pathlib import Path

from kafka_jmx_sidecar.exporter.archive.encoder import PollEncoder, PollFacts
from kafka_jmx_sidecar.exporter.archive.reader import Rejects, read_archive
from kafka_jmx_sidecar.exporter.archive.settings import DEFAULT_KEYFRAME_INTERVAL, ArchiveSettings
from kafka_jmx_sidecar.exporter.archive.writer import ArchiveWriter
from kafka_jmx_sidecar.exporter.base.model import Attribute, BeanTable, MBean, ObjectName
from kafka_jmx_sidecar.mbeans.broker_recompute import HostedPartitions

TARGET = 20.0
GAUGE = "com.yammer.metrics.reporting.JmxReporter$Gauge"
METER = "com.yammer.metrics.reporting.JmxReporter$Meter"
FAMILIES = ("UnderReplicated", "UnderMinIsr", "AtMinIsr", "InSyncReplicasCount", "ReplicasCount")
RM_GAUGES = ("UnderReplicatedPartitions", "UnderMinIsrPartitionCount", "AtMinIsrPartitionCount",
             "ReassigningPartitions", "LeaderCount", "PartitionCount", "OfflineReplicaCount")
METERS = ("ReplicationBytesInPerSec", "ReplicationBytesOutPerSec", "ReassignmentBytesInPerSec",
          "ReassignmentBytesOutPerSec")
RF, MIN_ISR = 3, 2
RECOVERY_POLLS = 20  # 5 minutes at 15 s


class Broker:
    """The simulated broker: per hosted partition whether it leads and the ISR's size."""

    def __init__(self, partitions: int, per_topic: int = 100):
        n_topics = partitions // per_topic
        self.topics = [f"topic-{t:04d}" for t in range(n_topics)]
        self.topic = array("i", (t for t in range(n_topics) for _ in range(per_topic)))
        self.partition = array("i", (p for _ in range(n_topics) for p in range(per_topic)))
        self.rank = array("I", range(len(self.topic)))
        self.led = bytearray(1 if (t * 7 + p) % 3 == 0 else 0 for t, p in zip(self.topic, self.partition))
        self.isr = array("q", [RF] * len(self.topic))
        self.bytes = [0] * len(METERS)

    def facts(self, t: float) -> PollFacts:
        n = len(self.topic)
        led, isr = self.led, self.isr
        shown_isr = array("q", (isr[i] if led[i] else 0 for i in range(n)))
        shown_rc = array("q", (RF if led[i] else 0 for i in range(n)))
        columns = {
            "UnderReplicated": array("q", (1 if led[i] and isr[i] < RF else 0 for i in range(n))),
            "UnderMinIsr": array("q", (1 if led[i] and isr[i] < MIN_ISR else 0 for i in range(n))),
            "AtMinIsr": array("q", (1 if led[i] and isr[i] == MIN_ISR else 0 for i in range(n))),
            "InSyncReplicasCount": shown_isr,
            "ReplicasCount": shown_rc,
        }
        present = bytearray([1]) * n
        tables = [BeanTable("kafka.cluster", (("type", "Partition"), ("name", name)), GAUGE, "Value", "", "", True,
                            self.topics, self.topic, self.partition, self.rank, columns[name], present)
                  for name in FAMILIES]
        urp = sum(columns["UnderReplicated"])
        rm_values = (urp, sum(columns["UnderMinIsr"]), sum(columns["AtMinIsr"]), 0, sum(led), n, 0)
        mbeans = [MBean(ObjectName("kafka.server", (("type", "ReplicaManager"), ("name", name))), GAUGE,
                        (Attribute("Value", v),)) for name, v in zip(RM_GAUGES, rm_values)]
        for k, name in enumerate(METERS):
            self.bytes[k] += 3_000_000 * 15 if "Replication" in name else 0
            mbeans.append(MBean(ObjectName("kafka.server", (("type", "BrokerTopicMetrics"), ("name", name))), METER,
                                (Attribute("EventType", "bytes"), Attribute("Count", self.bytes[k]),
                                 Attribute("OneMinuteRate", 3e6))))
        hosted = HostedPartitions(self.topics, self.topic, self.partition, shown_isr, shown_rc)
        return PollFacts(t, "1", "3.6.2", hosted, None, {t_: (MIN_ISR, "configured") for t_ in self.topics},
                         mbeans, tables)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=40_000)
    ap.add_argument("--hours", type=float, default=24.0)
    ap.add_argument("--interval", type=float, default=15.0)
    ap.add_argument("--sample", type=int, default=20, help="measure the baseline's keyframe every N polls")
    ap.add_argument("--change-per-hour", type=float, default=0.01)
    ap.add_argument("--keyframe-interval", type=float, default=DEFAULT_KEYFRAME_INTERVAL,
                    help="seconds between keyframes (sidecar.archive.keyframeIntervalSeconds)")
    args = ap.parse_args()

    rng = random.Random(14)
    broker = Broker(args.partitions)
    n = len(broker.topic)
    polls_per_hour = int(round(3600 / args.interval))
    polls = int(args.hours * polls_per_hour)
    start = 1_795_046_400.0  # 2026-11-19T00:00:00Z: the day's first poll at an hour's start
    # (poll index) -> partitions that shrink then / recover then
    shrink: dict[int, list[int]] = {}
    recover: dict[int, list[int]] = {}
    for hour in range(int(args.hours + 0.999)):
        for i in rng.sample(range(n), int(n * args.change_per_hour)):
            at = hour * polls_per_hour + rng.randrange(polls_per_hour)
            shrink.setdefault(at, []).append(i)
            recover.setdefault(at + RECOVERY_POLLS, []).append(i)

    baseline_bytes = 0
    keyframe_size = 0
    write_seconds: list[float] = []  # the writer thread's work per poll (encode, write, fsync, retention)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="archive-bench-") as d:
        settings = ArchiveSettings(d, retention_hours=10_000, retention_bytes=1 << 40,
                                   keyframe_interval=args.keyframe_interval)
        writer = ArchiveWriter(settings, clock=lambda: start)
        changes = 0
        for k in range(polls):
            for i in shrink.get(k, ()):
                broker.isr[i] = RF - 1
                changes += 1
            for i in recover.get(k, ()):
                broker.isr[i] = RF
                changes += 1
            facts = broker.facts(start + k * args.interval)
            if k % args.sample == 0:
                keyframe_size = len(PollEncoder(settings.attributes).encode(facts, start)[0])
            baseline_bytes += keyframe_size
            w0 = time.perf_counter()
            if not writer.write(facts):
                raise RuntimeError("the writer failed; see the log")
            spent = time.perf_counter() - w0
            write_seconds.append(spent)
            if k % polls_per_hour == polls_per_hour - 1:
                print(f"  hour {k // polls_per_hour + 1:2d}: {sum(f.stat().st_size for f in Path(d).iterdir()):>12,} "
                      f"bytes archived", flush=True)
        writer.close()
        archive_bytes = sum(f.stat().st_size for f in Path(d).iterdir())
        files = len(os.listdir(d))
        rejects = Rejects()
        keyframes = [p.poll.keyframe for p in read_archive([d], rejects)]  # per poll read back: written whole
        read_back = len(keyframes)
    took = time.perf_counter() - started
    ratio = baseline_bytes / archive_bytes
    print(f"{n:,} partitions, {polls:,} polls every {args.interval:g} s ({args.hours:g} h), {changes:,} partition "
          f"state changes; polls generated in-process and written by the real writer (no JVM)")
    print(f"archive:  {archive_bytes:>15,} bytes in {files} hourly files, {archive_bytes / args.hours:,.0f} bytes an "
          f"hour; {sum(keyframes)} keyframes (one every {args.keyframe_interval:g} s and each hour), "
          f"{read_back:,} polls read back, {rejects.total} rejected")
    print(f"baseline: {baseline_bytes:>15,} bytes (every partition at every poll, same encoding; keyframe measured "
          f"every {args.sample} polls)")
    whole = [w for w, kf in zip(write_seconds, keyframes) if kf]
    changes_only = [w for w, kf in zip(write_seconds, keyframes) if not kf] or [0.0]
    print(f"writer: {1000 * statistics.median(changes_only):.0f} ms a change poll (median), "
          f"{1000 * statistics.median(whole):.0f} ms a keyframe poll (median), in its own thread")
    print(f"ratio: {ratio:.1f}x smaller (target >= {TARGET:g}x)  [{took:.0f} s, load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}]")
    return 0 if ratio >= TARGET and read_back == polls and rejects.total == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
