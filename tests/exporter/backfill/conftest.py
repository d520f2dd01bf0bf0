"""What several backfill test modules read: runs of the command itself (`kafka-jmx-sidecar
backfill`, in this process, on the shared Spark session) on test_job's hand-written dumps; and the
local[2] runs over inputs on HDFS that the runs on the Spark cluster (test_on_a_cluster.py) must
equal byte for byte: test_archive_input's archive with test_job's dumps, and three brokers'
archives (three_brokers.py)."""
from __future__ import annotations

import contextlib
import io
import logging
from dataclasses import dataclass
from pathlib import Path

import pytest

from kafka_jmx_sidecar.exporter.backfill import job
from kafka_jmx_sidecar.exporter.commands.cli import main
from tests.exporter.backfill.test_job import options, write_dumps
from tests.exporter.backfill.three_brokers import WINDOW as THREE_BROKERS_WINDOW
from tests.exporter.backfill.three_brokers import write_cluster

WINDOW = ["--start", "2026-11-21T22:00:00Z", "--end", "2026-11-21T22:02:30Z", "--step", "30s"]


@dataclass
class Ran:
    out: Path
    code: int
    stdout: str
    stderr: str


def _backfill(inputs: Path, out: Path, *args: str) -> Ran:
    return _backfill_all([str(inputs)], out, *args)


def _backfill_all(inputs: list[str], out: Path, *args: str) -> Ran:
    """The command, its stdout and stderr kept (neither a terminal); the logging it configures
    undone after."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    stdout, stderr = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            code = main(["backfill", "--input", *inputs, "--output", str(out), *args])
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    return Ran(out, code, stdout.getvalue(), stderr.getvalue())


@pytest.fixture(scope="package")
def hand_dumps(tmp_path_factory) -> Path:
    """test_job's dumps, in one place for every run that compares its output with another's (the
    rejects name the input files)."""
    return write_dumps(tmp_path_factory.mktemp("hand") / "dumps")


@pytest.fixture(scope="package")
def command_runs(spark, hand_dumps, tmp_path_factory) -> dict[str, Ran]:
    """`split`: files cut past 2000 bytes, progress records every 50 ms as JSON, the summary as
    JSON (one line of ten rejected and --max-reject-ratio 0: exit 3). `again`: the default files,
    logfmt lines, the same interval without --progress (stderr is no terminal: no record), a JSON
    summary, --max-reject-ratio 0.1 (exit 0). `failed`: --end before --start, which fails once the
    read is done, with progress records as text."""
    base, dumps = tmp_path_factory.mktemp("command"), hand_dumps
    return {
        "split": _backfill(dumps, base / "split" / "out", *WINDOW, "--max-file-bytes", "2000", "--progress",
                           "--progress-interval", "50ms", "--log.format", "json", "--summary", "json"),
        "again": _backfill(dumps, base / "again" / "out", *WINDOW, "--progress-interval", "50ms", "--log.format",
                           "logfmt", "--summary", "json", "--max-reject-ratio", "0.1"),
        "failed": _backfill(dumps, base / "failed" / "out", "--start", "2026-11-21T22:02:00Z", "--end",
                            "2026-11-21T22:00:00Z", "--progress", "--progress-interval", "50ms", "--summary", "json"),
    }


def put(spark, local: Path, url: str) -> str:
    """Copy a local file or directory to `url` (HDFS) through the session's Hadoop client."""
    jvm = spark.sparkContext._jvm
    target = jvm.org.apache.hadoop.fs.Path(url)
    fs = target.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    fs.copyFromLocalFile(False, True, jvm.org.apache.hadoop.fs.Path(str(local)), target)
    return url


@dataclass
class Inputs:
    urls: list[str]  # on HDFS
    args: list[str]  # the command's options besides --input and --output


@pytest.fixture(scope="package")
def hdfs_inputs(spark, hdfs, tmp_path_factory) -> dict[str, Inputs]:
    """`mixed`: test_archive_input's archive (one broker's) and test_job's dumps; `three_brokers`:
    three brokers' archives, each in a directory of its own. Written once to HDFS."""
    from tests.exporter.backfill.test_archive_input import write_archive

    base = tmp_path_factory.mktemp("hdfs-inputs")
    write_dumps(base / "mixed" / "dumps")
    write_archive(base / "mixed" / "archive")
    return {
        "mixed": Inputs([put(spark, base / "mixed" / d, hdfs.url(f"/inputs/mixed/{d}")) for d in ("dumps", "archive")],
                        ["--start", "2026-11-21T22:00:00Z", "--end", "2026-11-21T22:02:30Z", "--step", "30s",
                         "--broker-label", "broker"]),
        "three_brokers": Inputs([put(spark, d, hdfs.url(f"/inputs/three-brokers/{d.name}"))
                                 for d in write_cluster(base / "three-brokers")], THREE_BROKERS_WINDOW),
    }


@pytest.fixture(scope="package")
def mixed_run(hdfs_inputs, tmp_path_factory):
    """One local[2] job over the archive and the dumps together, read from HDFS."""
    base = tmp_path_factory.mktemp("mixed")
    dumps, archive = hdfs_inputs["mixed"].urls
    opts = options(dumps, base / "out", broker_label="broker")
    opts.inputs.append(archive)
    return base, job.run(opts)


@pytest.fixture(scope="package")
def three_brokers_run(hdfs_inputs, tmp_path_factory) -> Ran:
    """The command, local[2], over the three brokers' archives on HDFS."""
    inputs = hdfs_inputs["three_brokers"]
    base = tmp_path_factory.mktemp("three-brokers")
    return _backfill_all(inputs.urls, base / "out", *inputs.args)
