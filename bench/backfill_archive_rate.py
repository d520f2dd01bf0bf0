"""Benchmark: the backfill from a sidecar's archive, in partition-states per second (a partition-state:
one hosted partition at one archived poll), against a baseline measured in the same run: the
archive reader's own replay of the same files (exporter/archive/reader.replay, one process, no
recompute, rules or output).

The archive is bench/archive_size.py's simulated broker (its `Broker`: 40,000 partitions, the default
health rules' tables and meters, 1% of the partitions losing an ISR member each hour for 5 minutes),
polled every 15 s and written by the real writer. Under kafka-3.7 that broker (3.6) has its
UnderMinIsr and AtMinIsr families replaced by the live recompute at every poll that changes a count.
The job runs on local[2]; `--step` sets the output grid (a day at 15 s would be about 1.1 billion
samples, more than these machines hold: the figure is the archive path's, the output's size is the
writer's, bench/backfill_rate.py).

    python3 bench/backfill_archive_rate.py [--partitions N] [--hours H] [--step D]
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from archive_size import RECOVERY_POLLS, RF, Broker  # noqa: E402

from exporter.archive.reader import Rejects, read_archive, replay  # noqa: E402
from exporter.archive.settings import ArchiveSettings  # noqa: E402
from exporter.archive.writer import ArchiveWriter  # noqa: E402


def write_archive(directory: str, partitions: int, hours: float, interval: float) -> int:
    """The simulated broker's archive (archive_size.py's broker and change schedule); its polls."""
    rng = random.Random(14)
    broker = Broker(partitions)
    n = len(broker.topic)
    per_hour = int(round(3600 / interval))
    polls = int(hours * per_hour)
    start = 1_795_046_400.0
    shrink: dict[int, list[int]] = {}
    recover: dict[int, list[int]] = {}
    for hour in range(int(hours + 0.999)):
        for i in rng.sample(range(n), int(n * 0.01)):
            at = hour * per_hour + rng.randrange(per_hour)
            shrink.setdefault(at, []).append(i)
            recover.setdefault(at + RECOVERY_POLLS, []).append(i)
    writer = ArchiveWriter(ArchiveSettings(directory, retention_hours=10_000, retention_bytes=1 << 40),
                           clock=lambda: start)
    for k in range(polls):
        for i in shrink.get(k, ()):
            broker.isr[i] = RF - 1
        for i in recover.get(k, ()):
            broker.isr[i] = RF
        if not writer.write(broker.facts(start + k * interval)):
            raise RuntimeError("the writer failed")
    writer.close()
    return polls


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=40_000)
    ap.add_argument("--hours", type=float, default=24.0)
    ap.add_argument("--interval", type=float, default=15.0)
    ap.add_argument("--step", default="1h")
    args = ap.parse_args()
    from exporter.backfill import job

    with tempfile.TemporaryDirectory(prefix="backfill-archive-bench-") as d:
        archive = os.path.join(d, "archive")
        t0 = time.perf_counter()
        polls = write_archive(archive, args.partitions, args.hours, args.interval)
        print(f"archive: {polls:,} polls of {args.partitions:,} partitions in "
              f"{len(os.listdir(archive))} files, written in {time.perf_counter() - t0:.0f} s", flush=True)

        t0 = time.perf_counter()
        rejects = Rejects()
        states = sum(len(s.counts) for s in replay(read_archive([archive], rejects)))
        base = time.perf_counter() - t0
        print(f"baseline: the reader's replay, one process: {states:,} partition-states in {base:.1f} s, "
              f"{states / base:,.0f}/s", flush=True)

        t0 = time.perf_counter()
        code = job.run(job.Options([archive], os.path.join(d, "out"), step=args.step, master="local[2]",
                                   conf=["spark.driver.memory=2g"]))
        took = time.perf_counter() - t0
        print(f"backfill (local[2], --step {args.step}, recompute under kafka-3.7, shipped health rules): "
              f"{states:,} partition-states in {took:.1f} s, {states / took:,.0f}/s (exit {code})")
        print(f"ratio: the backfill takes {took / base:.1f}x the reader's bare replay time  "
              f"[load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}]")
        return 0 if code == 0 and rejects.total == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
