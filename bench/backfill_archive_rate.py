"""Benchmark: the backfill of a sidecar's archive at a 15 s step on local[2], in
partition-states per second (a partition-state: one hosted partition at one archived poll, so
partitions x steps / seconds at a step equal to the poll interval), and what doubling the input
costs; against a baseline measured in the same run: the archive reader's own replay of the same
files (exporter/archive/reader.replay, one process, no recompute, rules or output).

The archive is bench/archive_size.py's simulated broker (its `Broker`: 40,000 partitions, the
default health rules' tables and meters, 1% of the partitions losing an ISR member each hour for
5 minutes), polled every 15 s and written by the real writer, one file per hour. Under kafka-3.7
that broker (3.6) has its UnderMinIsr and AtMinIsr families replaced by the live recompute at
every poll that changes a count; the shipped health rules name 200,011 series.

The baseline run backfills the first `--hours` files (default 6), the doubled run all 2 x
`--hours`; each output is measured, then deleted. Output at 15 s is about 4.2 GB of OpenMetrics
per hour of this broker, so a whole day (about 101 GB) does not fit on these machines'
disks: the bench checks the free space first, runs what fits and prints what the day would take
from the two runs. Sizes: MB = 10^6 bytes, GB = 10^9.

Targets: >= 1,000,000 partition-states/s; doubling the input costs <= 2.2x the time.

    python -m bench.backfill_archive_rate [--partitions N] [--hours H] [--step D] [--dir DIR]
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time

from bench.archive_size import RECOVERY_POLLS, RF, Broker
from kafka_jmx_sidecar.exporter.archive.reader import Rejects, read_archive, replay
from kafka_jmx_sidecar.exporter.archive.settings import ArchiveSettings
from kafka_jmx_sidecar.exporter.archive.writer import ArchiveWriter


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


GB = 1000 ** 3
OUTPUT_BYTES_PER_STATE = 460  # at a 15 s step (measured: 50.7 GB for 115.2 million states)


def backfill(files: list[str], out: str, step: str) -> tuple[float, int, int]:
    """(seconds, exit code, bytes written) of one job over `files`; its output deleted after."""
    from kafka_jmx_sidecar.exporter.backfill import job

    t0 = time.perf_counter()
    code = job.run(job.Options(files, out, step=step, master="local[2]", conf=["spark.driver.memory=2g"]))
    took = time.perf_counter() - t0
    written = sum(e.stat().st_size for e in os.scandir(out))
    shutil.rmtree(out)
    return took, code, written


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=40_000)
    ap.add_argument("--hours", type=int, default=6, help="the baseline run's hours; the doubled run takes twice")
    ap.add_argument("--interval", type=float, default=15.0)
    ap.add_argument("--step", default="15s")
    ap.add_argument("--dir", default=None, help="where the archive and the outputs go (a temporary directory)")
    args = ap.parse_args()
    from kafka_jmx_sidecar.exporter.backfill.session import spark_session

    with tempfile.TemporaryDirectory(prefix="backfill-archive-bench-", dir=args.dir) as d:
        hours = 2 * args.hours
        per_hour = int(round(3600 / args.interval))
        need = args.partitions * per_hour * hours * OUTPUT_BYTES_PER_STATE * (15 / parse_seconds(args.step))
        free = shutil.disk_usage(d).free
        if need * 1.1 > free:
            print(f"the doubled run would write about {need / GB:,.0f} GB; {free / GB:,.0f} GB are free under {d}: "
                  f"give a smaller --hours or another --dir", file=sys.stderr)
            return 2
        archive = os.path.join(d, "archive")
        t0 = time.perf_counter()
        polls = write_archive(archive, args.partitions, hours, args.interval)
        files = sorted(os.path.join(archive, f) for f in os.listdir(archive))
        print(f"archive: {polls:,} polls of {args.partitions:,} partitions in {len(files)} files, "
              f"written in {time.perf_counter() - t0:.0f} s", flush=True)

        spark_session("local[2]", [("spark.driver.memory", "2g")])
        backfill(files[:1], os.path.join(d, "warm"), "1h")  # the first query of a session is slow
        took = {}
        for label, chosen in (("baseline", files[:args.hours]), ("doubled", files)):
            t0 = time.perf_counter()
            rejects = Rejects()
            states = sum(len(s.counts) for s in replay(read_archive(chosen, rejects)))
            bare = time.perf_counter() - t0
            took[label], code, written = backfill(chosen, os.path.join(d, "out"), args.step)
            print(f"{label}: {len(chosen)} h, {states:,} partition-states: backfill (local[2], --step {args.step}, "
                  f"recompute under kafka-3.7, shipped health rules) {took[label]:.1f} s = "
                  f"{states / took[label]:,.0f}/s (target >= 1,000,000), {written / GB:,.1f} GB written, "
                  f"exit {code}; the reader's bare replay {bare:.1f} s ({took[label] / bare:.1f}x)  "
                  f"[load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}]", flush=True)
            if code != 0 or rejects.total:
                return 1
        ratio = took["doubled"] / took["baseline"]
        per_hour_s = (took["doubled"] - took["baseline"]) / args.hours
        day_s = took["doubled"] + (24 - hours) * per_hour_s
        day_states = args.partitions * per_hour * 24
        print(f"doubling the input: {ratio:.2f}x the time (target <= 2.2x)")
        print(f"the day (24 h, {day_states:,} partition-states, about {need / hours * 24 / GB:,.0f} GB): about "
              f"{day_s:.0f} s from the slope of {per_hour_s:.1f} s per added hour = {day_states / day_s:,.0f}/s")
        return 0


def parse_seconds(step: str) -> float:
    from kafka_jmx_sidecar.exporter.backfill.grid import parse_duration_ms

    return parse_duration_ms(step) / 1000


if __name__ == "__main__":
    sys.exit(main())
