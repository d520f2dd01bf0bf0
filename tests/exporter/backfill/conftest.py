"""What several backfill test modules read: runs of the command itself (`kafka-jmx-sidecar
backfill`, in this process, on the shared Spark session) on test_job's hand-written dumps."""
from __future__ import annotations

import contextlib
import io
import logging
from dataclasses import dataclass
from pathlib import Path

import pytest

from kafka_jmx_sidecar.exporter.commands.cli import main
from tests.exporter.backfill.test_job import write_dumps

WINDOW = ["--start", "2026-11-21T22:00:00Z", "--end", "2026-11-21T22:02:30Z", "--step", "30s"]


@dataclass
class Ran:
    out: Path
    code: int
    stdout: str
    stderr: str


def _backfill(inputs: Path, out: Path, *args: str) -> Ran:
    """The command, its stdout and stderr kept (neither a terminal); the logging it configures
    undone after."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    stdout, stderr = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            code = main(["backfill", "--input", str(inputs), "--output", str(out), *args])
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
