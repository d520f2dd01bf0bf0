"""The backfill on real distributed parts: a Spark standalone cluster (a master and two workers, each a
process of its own, harness/spark_cluster.py) and a real HDFS (Hadoop's minicluster in a JVM of its
own, harness/hdfs.py), both started once per test run (tests/conftest.py).

The job is submitted as its users submit it (`spark-submit --master spark://...`), its executors'
Python without the project (the job ships itself), its inputs and its output on HDFS, and it
imports its output with promtool (fetched from HDFS). It writes exactly the bytes the local[2]
runs of conftest.py write for the same inputs: one broker's archive with describe dumps, and three
brokers' archives, the latter while a worker is killed (SIGKILL to it, its executor and their
Python workers, as a lost machine) in the middle of the job's first real stage: Spark runs the lost
tasks again on the other worker, and no partial file is left under the output.
"""
from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

import pytest

from kafka_jmx_sidecar.exporter.backfill.storage import Storage
from kafka_jmx_sidecar.exporter.commands import spark_submit
from tests.exporter.backfill.test_hygiene import Run

SPARK_SUBMIT = str(Path(sys.executable).with_name("spark-submit"))
# Small heaps (the workers offer 768 MB each: harness/spark_cluster.py); no wait for a task's
# preferred executor (3 s by default per stage: a small job is mostly such waits); C1 and the serial
# collector for JVMs that live a minute.
JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
SUBMIT = ["--driver-memory", "512m", "--driver-java-options", JVM, "--conf", "spark.executor.memory=512m",
          "--conf", f"spark.executor.extraJavaOptions={JVM}", "--conf", "spark.ui.enabled=false",
          "--conf", "spark.locality.wait=0"]


def python_without_the_project(directory: Path) -> Path:
    """An interpreter with this environment's packages (pyspark, PyYAML, ...) but not the project:
    site-packages on its path without its .pth files, where the editable install lives."""
    site = Path(__import__("pyspark").__file__).resolve().parents[1]
    python = directory / "python-without-the-project"
    python.write_text(f'#!/bin/sh\nPYTHONPATH="$PYTHONPATH:{site}" exec {sys.executable} -S "$@"\n')
    python.chmod(0o755)
    return python


def submit(cluster, inputs, out: str, tsdb: Path, python: Path) -> Run:
    env = {**os.environ, "PYSPARK_PYTHON": str(python), "PYSPARK_DRIVER_PYTHON": sys.executable,
           "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    return Run(["--input", *inputs.urls, "--output", out, *inputs.args, "--import", str(tsdb)], env=env,
               command=[SPARK_SUBMIT, "--master", cluster.master_url, *SUBMIT, spark_submit.__file__], merged=True)


def kill_a_worker_running_a_task(cluster, run: Run, timeout: float = 300) -> int | None:
    """Once the job reads its inputs, SIGKILL the first worker seen in the middle of one of its
    tasks (SparkCluster.kill_worker_in_a_task); None when the job ended first."""
    if not run.wait_for("reading 3 archive files", timeout):
        return None
    deadline = time.monotonic() + timeout
    while run.proc.poll() is None and time.monotonic() < deadline:
        for i in range(len(cluster.workers)):
            if cluster.kill_worker_in_a_task(i):
                return i
        time.sleep(0.01)
    return None


@pytest.fixture(scope="module")
def submitted(spark_cluster, hdfs, hdfs_inputs, tmp_path_factory):
    """The two runs on the cluster, one after the other; the killed worker started again after."""
    base = tmp_path_factory.mktemp("submitted")
    python = python_without_the_project(base)
    runs, killed = {}, None
    try:
        for name in ("mixed", "three_brokers"):
            out = hdfs.url(f"/runs/{name}/out")
            run = runs[name] = submit(spark_cluster, hdfs_inputs[name], out, base / f"{name}-tsdb", python)
            if name == "three_brokers":
                killed = kill_a_worker_running_a_task(spark_cluster, run)
            run.code = run.finish(timeout=900)
            run.out, run.tsdb = out, base / f"{name}-tsdb"
    finally:
        if killed is not None:
            spark_cluster.start_worker(killed)
    return runs, killed


def files_on_hdfs(spark, directory: str) -> dict[str, bytes]:
    storage = Storage(spark.sparkContext)
    return {name: storage.read(f"{directory}/{name}") for name in storage.names(directory)}


def assert_same_output(spark, run, local: Path) -> None:
    """The run's output on HDFS holds exactly the local run's files, byte for byte, and nothing is
    left beside it; promtool imported every sample."""
    assert run.code in (0, 3), "\n".join(run.lines[-60:])
    got = files_on_hdfs(spark, run.out)
    want = {p.name: p.read_bytes() for p in local.iterdir()}
    assert sorted(got) == sorted(want) and all(got[name] == want[name] for name in want), run.out
    parent = run.out.rsplit("/", 1)[0]
    assert Storage(spark.sparkContext).names(parent) == ["out"]  # no partial output beside it
    blocks = [d for d in run.tsdb.iterdir() if (d / "meta.json").exists()]
    assert blocks and sum(json.loads((d / "meta.json").read_text())["stats"]["numSamples"] for d in blocks) == \
        json.loads(want["manifest.json"])["samples"]


def test_dumps_and_an_archive_on_hdfs_the_same_bytes_as_local(spark, submitted, mixed_run):
    runs, _ = submitted
    run = runs["mixed"]
    assert_same_output(spark, run, mixed_run[0] / "out")
    # executors without the project: the job shipped it, and said so
    assert any("shipped kafka-jmx-sidecar" in line for line in run.lines), run.lines


def test_three_brokers_with_a_worker_killed_the_same_bytes_as_local(spark, submitted, three_brokers_run):
    runs, killed = submitted
    run = runs["three_brokers"]
    assert killed is not None, "no task of the job was seen running on a worker: " + "\n".join(run.lines[-40:])
    assert_same_output(spark, run, three_brokers_run.out)
    # Spark saw the executor go in the middle of a task, and ran the task again elsewhere
    text = "\n".join(run.lines)
    lost = re.search(r"task (\d+)\.\d+ in stage ([\d.]+) \(TID \d+\) failed because while it was being computed, "
                     r"its executor exited", text)
    assert "Lost executor" in text and lost, text[-5000:]
    assert re.search(rf"Finished task {lost[1]}\.[1-9]\d* in stage {re.escape(lost[2])} ", text), text[-5000:]
