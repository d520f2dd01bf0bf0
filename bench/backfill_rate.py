"""The backfill job's rate in partition-states per second (partitions x grid steps / seconds) at a
15 s step on local[2], and what doubling the input costs; then promtool's peak memory importing
the output with the default file size.

The default is an hour of a 40,000-partition cluster; a day of it writes about 1.4
billion samples, some 120 GB of OpenMetrics text: the program prints what the day would take (time
from the two runs' slope, bytes from the hour's output) against the free disk, and `--hours 24`
runs it where the disk allows.

Input: describe dumps of a simulated cluster (`--partitions`, RF 3 on 12 brokers) every
`--dump-every` seconds (300) for `--hours`, with 1% of the partitions changing state per hour (an
ISR shrinks or recovers, a leader is lost or comes back). The output is the same for any dump
interval of at most the changes' spacing; only the reading grows with more dumps. The baseline is the same job on the same session over `--hours`;
the doubled run covers twice the hours with the same change rate. Both runs are timed from the
listing of the dumps to the renamed output, after a small warm-up run (the first query of a
Spark session is slow).

Targets: >= 1,000,000 partition-states/s; doubling the input costs <= 2.2x the time;
promtool under 1 GB with default file sizes. Sizes: MB = 10^6 bytes, MiB = 2^20 bytes.

    python -m bench.backfill_rate [--partitions N] [--hours H] [--dump-every S] [--keep DIR]
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import tempfile
import time
from datetime import datetime, timedelta, timezone

from kafka_jmx_sidecar.exporter.backfill import job
from kafka_jmx_sidecar.exporter.backfill.session import spark_session

T0 = datetime(2026, 11, 21, tzinfo=timezone.utc)
MB, MIB = 1000 ** 2, 1024 ** 2


def write_dumps(directory: str, partitions: int, hours: float, seed: int = 11, every_s: float = 300) -> int:
    rnd = random.Random(seed)
    brokers = list(range(1, 13))
    topics = max(1, partitions // 100)
    state = []
    for i in range(partitions):
        replicas = rnd.sample(brokers, 3)
        state.append([replicas[0], replicas, list(replicas)])
    dumps = int(hours * 3600 / every_s)
    changes = partitions * 0.01 * every_s / 3600  # per dump; a fraction carries over
    owed = 0.0
    os.makedirs(directory, exist_ok=True)
    for d in range(dumps):
        owed += changes
        for _ in range(int(owed)):
            owed -= 1
            s = state[rnd.randrange(partitions)]
            if len(s[2]) == 3 and s[0] is not None:
                s[2] = s[2][:rnd.choice((1, 2))]
                if rnd.random() < 0.2:
                    s[0] = None
            else:
                s[0], s[2] = s[1][0], list(s[1])
        when = T0 + timedelta(seconds=d * every_s)
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


def cpu_seconds() -> float:
    """CPU time of this process and all its descendants (the Spark JVM, its Python workers), live
    or reaped: on a shared machine the wall time says more about the neighbours than the job."""
    parent, cpu = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        parent[int(entry)] = int(fields[1])
        cpu[int(entry)] = sum(int(v) for v in fields[11:15])  # utime stime cutime cstime
    total, todo = 0, [os.getpid()]
    while todo:
        pid = todo.pop()
        total += cpu.get(pid, 0)
        todo.extend(p for p, pp in parent.items() if pp == pid)
    return total / os.sysconf("SC_CLK_TCK")


def run(dumps_dir: str, out: str, hours: float) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, grid steps) of one job."""
    end = (T0 + timedelta(hours=hours) - timedelta(seconds=15)).strftime("%Y-%m-%dT%H:%M:%SZ")
    began, cpu = time.perf_counter(), cpu_seconds()
    code = job.run(job.Options([dumps_dir], out, step="15s", master="local[2]", start=T0.strftime("%Y-%m-%dT%H:%M:%SZ"),
                               end=end))
    took, cpu = time.perf_counter() - began, cpu_seconds() - cpu
    assert code == 0
    steps = int(hours * 3600 / 15)
    return took, cpu, steps


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", type=int, default=40_000)
    ap.add_argument("--hours", type=float, default=1.0)
    ap.add_argument("--keep", help="keep the inputs and outputs here")
    ap.add_argument("--dump-every", type=float, default=300, help="seconds between describe dumps")
    ap.add_argument("--import-files", type=int, default=4, help="how many output files promtool imports")
    args = ap.parse_args()
    base = args.keep or tempfile.mkdtemp(prefix="bench-backfill-")
    spark_session("local[2]", [("spark.driver.memory", "2g")])
    try:
        write_dumps(os.path.join(base, "warm"), 200, 0.25)
        run(os.path.join(base, "warm"), os.path.join(base, "warm-out"), 0.25)
        took, cpus, out_bytes = {}, {}, {}
        for label, hours in (("baseline", args.hours), ("doubled", 2 * args.hours)):
            d = os.path.join(base, f"dumps-{label}")
            write_dumps(d, args.partitions, hours, every_s=args.dump_every)
            out = os.path.join(base, f"out-{label}")
            took[label], cpu, steps = run(d, out, hours)
            cpus[label] = cpu
            out_bytes[label] = sum(e.stat().st_size for e in os.scandir(out) if e.name.endswith(".om"))
            rate = args.partitions * steps / took[label]
            print(f"{label}: {args.partitions} partitions x {steps} steps in {took[label]:.1f} s = "
                  f"{rate:,.0f} partition-states/s (target >= 1,000,000); "
                  f"{out_bytes[label] / MB:,.0f} MB ({out_bytes[label] / MIB:,.0f} MiB) written; "
                  f"{cpu:.1f} CPU s: at most {args.partitions * steps / cpu * 2:,.0f}/s on 2 idle cores "
                  f"(load average {os.getloadavg()[0]:.1f})", flush=True)
            if label == "baseline" and not args.keep:
                shutil.rmtree(out)  # disk: the doubled run writes twice as much
        print(f"doubling the input: {took['doubled'] / took['baseline']:.2f}x the time, "
              f"{cpus['doubled'] / cpus['baseline']:.2f}x the CPU time (target <= 2.2x)")
        _day(args.hours, took, out_bytes, base)
        out = os.path.join(base, "out-doubled")
        # promtool imports one file per run, so its peak is that of the largest file: a few of the
        # default-size files show it (all of them take minutes more for the same figure)
        files = sorted(f for f in os.listdir(out) if f.endswith(".om"))[:args.import_files]
        tsdb = os.path.join(base, "tsdb")
        peak_kib = 0
        for f in files:
            child = subprocess.Popen(["promtool", "tsdb", "create-blocks-from", "openmetrics", os.path.join(out, f), tsdb],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            _, status, usage = os.wait4(child.pid, 0)  # this child's own peak, not the session's
            child.returncode = os.waitstatus_to_exitcode(status)
            assert child.returncode == 0, child.stderr.read().decode()[-2000:]
            child.stderr.close()
            peak_kib = max(peak_kib, usage.ru_maxrss)  # Linux: KiB
        size = sum(os.path.getsize(os.path.join(out, f)) for f in files)
        peak = peak_kib * 1024
        print(f"promtool import of {len(files)} files of at most {job.DEFAULT_MAX_FILE_BYTES / MIB:.0f} MiB "
              f"({size / MB:,.0f} MB): peak memory {peak / MB:,.0f} MB = {peak / MIB:,.0f} MiB (target < 1 GB = 1,000 MB)")
        print(f"load average: {os.getloadavg()}")
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


def _day(hours: float, took: dict, out_bytes: dict, base: str) -> None:
    """What a day would take, from the two runs: time as the baseline plus the slope per
    added hour, bytes as the output per hour, against the disk free here."""
    per_hour_s = (took["doubled"] - took["baseline"]) / hours
    linear_s = took["doubled"] / (2 * hours) * 24  # as if nothing were fixed cost: the upper figure
    slope = (f"{(took['baseline'] + (24 - hours) * per_hour_s) / 60:.0f} min from the slope of "
             f"{per_hour_s:.1f} s per added hour" if per_hour_s > 0 else "no slope: the doubled run was not slower")
    day_bytes = out_bytes["doubled"] / (2 * hours) * 24
    free = shutil.disk_usage(base).free
    print(f"the day (24 h): about {linear_s / 60:.0f} min at the doubled run's rate ({slope}); "
          f"{day_bytes / MB:,.0f} MB ({day_bytes / MIB:,.0f} MiB) of OpenMetrics, "
          f"{free / MB:,.0f} MB free here: {'fits' if day_bytes < free else 'does not fit'}")


if __name__ == "__main__":
    main()
