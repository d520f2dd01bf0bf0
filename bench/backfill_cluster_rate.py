"""The backfill's rate on a Spark standalone cluster of two workers against local[2], on the same
inputs in the same run, in partition-states per second (partitions x grid steps / seconds), and
what doubling the input costs in each.

Input: bench/backfill_rate.py's describe dumps of a simulated cluster (`--partitions`, dumps every
5 minutes, 1% of the partitions changing state per hour), `--hours` of them and twice that, on the
local disk (the workers run on this machine and read it through Spark as any file system). The
cluster is harness/spark_cluster.py's: a master and two workers of one core each, each a process
of its own, their executors in JVMs of their own and the job's Python shipped to them. Each mode
runs in a Spark session of this process (its driver), warmed up on a small input first; a run is
timed from the listing of the dumps to the renamed output, as bench/backfill_rate.py times it.

On one machine both modes share the same two cores: the cluster's figure says what distributing
the job costs (executors apart from the driver, a shuffle over the network, the tasks' results sent
back), not what more machines would bring. Targets: doubling the input costs <= 2.2x the time in
each mode.

    python -m bench.backfill_cluster_rate [--partitions N] [--hours H]
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from datetime import timedelta

from bench.backfill_rate import T0, cpu_seconds, write_dumps
from harness.spark_cluster import SparkCluster
from kafka_jmx_sidecar.exporter.backfill import job

EXECUTOR_MEMORY = "640m"  # of the workers' 768 MB (harness/spark_cluster.py)


def timed(dumps: str, out: str, hours: float, master: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process and its children) of one job."""
    import time

    end = (T0 + timedelta(hours=hours) - timedelta(seconds=15)).strftime("%Y-%m-%dT%H:%M:%SZ")
    began, cpu = time.perf_counter(), cpu_seconds()
    code = job.run(job.Options([dumps], out, step="15s", master=master, start=T0.strftime("%Y-%m-%dT%H:%M:%SZ"),
                               end=end))
    assert code == 0
    return time.perf_counter() - began, cpu_seconds() - cpu


def session(master: str):
    """A fresh session on `master` (the previous one stopped: one SparkContext per process)."""
    from pyspark.sql import SparkSession

    from kafka_jmx_sidecar.exporter.backfill.session import spark_session

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()
    conf = [("spark.driver.memory", "1g"), ("spark.locality.wait", "0")]
    if master.startswith("spark://"):
        conf += [("spark.executor.memory", EXECUTOR_MEMORY)]
        os.environ["PYSPARK_PYTHON"] = sys.executable  # the workers are on this machine
    return spark_session(master, conf)


def measure(master: str, base: str, inputs: dict[str, tuple[str, float]], partitions: int) -> dict[str, float]:
    session(master)
    timed(inputs["warm"][0], os.path.join(base, "warm-out"), inputs["warm"][1], master)
    took = {}
    for label in ("baseline", "doubled"):
        dumps, hours = inputs[label]
        out = os.path.join(base, f"out-{label}")
        took[label], cpu = timed(dumps, out, hours, master)
        steps = int(hours * 3600 / 15)
        print(f"{master} {label}: {partitions} partitions x {steps} steps in {took[label]:.1f} s = "
              f"{partitions * steps / took[label]:,.0f} partition-states/s ({cpu:.1f} CPU s of this process and "
              f"its children; load average {os.getloadavg()[0]:.1f})", flush=True)
        shutil.rmtree(out)
    shutil.rmtree(os.path.join(base, "warm-out"))
    return took


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", type=int, default=10_000)
    ap.add_argument("--hours", type=float, default=1.0)
    args = ap.parse_args()
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()}", flush=True)
    base = tempfile.mkdtemp(prefix="bench-backfill-cluster-")
    inputs = {"warm": (os.path.join(base, "dumps-warm"), 0.25), "baseline": (os.path.join(base, "dumps-1"), args.hours),
              "doubled": (os.path.join(base, "dumps-2"), 2 * args.hours)}
    for label, (directory, hours) in inputs.items():
        write_dumps(directory, 200 if label == "warm" else args.partitions, hours)
    cluster = SparkCluster(workers=2).start()
    try:
        took = {"local[2]": measure("local[2]", base, inputs, args.partitions),
                "cluster": measure(cluster.master_url, base, inputs, args.partitions)}
    finally:
        from pyspark.sql import SparkSession

        active = SparkSession.getActiveSession()
        if active is not None:
            active.stop()
        cluster.stop()
        shutil.rmtree(base, ignore_errors=True)
    steps = int(args.hours * 3600 / 15)
    for mode, t in took.items():
        print(f"{mode}: doubling the input: {t['doubled'] / t['baseline']:.2f}x the time (target <= 2.2x)")
    cluster, local = took["cluster"], took["local[2]"]
    print(f"the 2-worker cluster against local[2], same input: {cluster['baseline'] / local['baseline']:.2f}x the "
          f"time at {args.partitions * steps:,} partition-states, {cluster['doubled'] / local['doubled']:.2f}x at "
          f"twice that ({os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
