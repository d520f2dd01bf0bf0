"""The backfill job's rate in partition-states per second (partitions x grid steps / seconds) at a
15 s step on local[2], and what doubling the input costs; then promtool's peak memory importing
the output with the default file size.

The default is an hour of a 40,000-partition cluster (the issue's day of it writes about 1.5
billion samples, some 130 GB of OpenMetrics text, more than these machines hold); `--hours 24`
runs the day where the disk allows.

Input: describe dumps of a simulated cluster (`--partitions`, RF 3 on 12 brokers) every 5 minutes
for `--hours`, with 1% of the partitions changing state per hour (an ISR shrinks or recovers, a
leader is lost or comes back). The baseline is the same job on the same session over `--hours`;
the doubled run covers twice the hours with the same change rate. Both runs are timed from the
listing of the dumps to the renamed output, after a small warm-up run (the first query of a
Spark session is slow).

Targets (issue 14): >= 1,000,000 partition-states/s; doubling the input costs <= 2.2x the time;
promtool under 1 GB with default file sizes.

    python bench/backfill_rate.py [--partitions N] [--hours H] [--keep DIR]
"""
from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from exporter.backfill import job  # noqa: E402
from exporter.backfill.session import spark_session  # noqa: E402

T0 = datetime(2026, 11, 21, tzinfo=timezone.utc)
DUMP_EVERY = timedelta(minutes=5)


def write_dumps(directory: str, partitions: int, hours: float, seed: int = 11) -> int:
    rnd = random.Random(seed)
    brokers = list(range(1, 13))
    topics = max(1, partitions // 100)
    state = []
    for i in range(partitions):
        replicas = rnd.sample(brokers, 3)
        state.append([replicas[0], replicas, list(replicas)])
    dumps = int(hours * 3600 / DUMP_EVERY.total_seconds())
    changes = max(1, round(partitions * 0.01 * DUMP_EVERY.total_seconds() / 3600))
    os.makedirs(directory, exist_ok=True)
    for d in range(dumps):
        for _ in range(changes):
            s = state[rnd.randrange(partitions)]
            if len(s[2]) == 3 and s[0] is not None:
                s[2] = s[2][:rnd.choice((1, 2))]
                if rnd.random() < 0.2:
                    s[0] = None
            else:
                s[0], s[2] = s[1][0], list(s[1])
        when = T0 + d * DUMP_EVERY
        lines = []
        for t in range(topics):
            lines.append(f"Topic: t{t}\tTopicId: x\tPartitionCount: 100\tReplicationFactor: 3\tConfigs: min.insync.replicas=2\n")
            for p in range(100):
                i = t * 100 + p
                if i >= partitions:
                    break
                leader, replicas, isr = state[i]
                lines.append(f"\tTopic: t{t}\tPartition: {p}\tLeader: {'none' if leader is None else leader}\t"
                             f"Replicas: {','.join(map(str, replicas))}\tIsr: {','.join(map(str, isr))}\n")
        with open(os.path.join(directory, when.strftime("%Y-%m-%dT%H-%M-%SZ") + "_describe.txt"), "w") as f:
            f.writelines(lines)
    return dumps


def run(dumps_dir: str, out: str, hours: float) -> tuple[float, int]:
    end = (T0 + timedelta(hours=hours) - timedelta(seconds=15)).strftime("%Y-%m-%dT%H:%M:%SZ")
    began = time.perf_counter()
    code = job.run(job.Options([dumps_dir], out, step="15s", master="local[2]", start=T0.strftime("%Y-%m-%dT%H:%M:%SZ"),
                               end=end))
    took = time.perf_counter() - began
    assert code == 0
    steps = int(hours * 3600 / 15)
    return took, steps


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", type=int, default=40_000)
    ap.add_argument("--hours", type=float, default=1.0)
    ap.add_argument("--keep", help="keep the inputs and outputs here")
    ap.add_argument("--import-files", type=int, default=4, help="how many output files promtool imports")
    args = ap.parse_args()
    base = args.keep or tempfile.mkdtemp(prefix="bench-backfill-")
    spark_session("local[2]", [("spark.driver.memory", "2g")])
    try:
        write_dumps(os.path.join(base, "warm"), 200, 0.25)
        run(os.path.join(base, "warm"), os.path.join(base, "warm-out"), 0.25)
        figures = {}
        for label, hours in (("baseline", args.hours), ("doubled", 2 * args.hours)):
            d = os.path.join(base, f"dumps-{label}")
            write_dumps(d, args.partitions, hours)
            took, steps = run(d, os.path.join(base, f"out-{label}"), hours)
            rate = args.partitions * steps / took
            figures[label] = took
            print(f"{label}: {args.partitions} partitions x {steps} steps in {took:.1f} s = "
                  f"{rate:,.0f} partition-states/s (target >= 1,000,000)", flush=True)
        print(f"doubling the input: {figures['doubled'] / figures['baseline']:.2f}x the time (target <= 2.2x)")
        out = os.path.join(base, "out-doubled")
        # promtool imports one file per run, so its peak is that of the largest file: a few of the
        # default-size files show it (all of them take minutes more for the same figure)
        files = sorted(f for f in os.listdir(out) if f.endswith(".om"))[:args.import_files]
        tsdb = os.path.join(base, "tsdb")
        peak = 0
        for f in files:
            subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", os.path.join(out, f), tsdb],
                           check=True, capture_output=True)
            peak = max(peak, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
        size = sum(os.path.getsize(os.path.join(out, f)) for f in files)
        print(f"promtool import of {len(files)} files ({size / 1e6:.0f} MB): peak memory {peak / 1024:.0f} MB "
              f"(target < 1024 MB)")
        print(f"load average: {os.getloadavg()}")
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
