"""The SparkSession the job runs in: `local[*]` with no setup, or the user's `--master` and
`--conf k=v` passed through unchanged (spark-submit's own settings win when it started us); and
the run's lines on stderr (`log`), as text or as records of the command line's log format. Whether
its executors can run the project is shipping.py's."""
from __future__ import annotations

import logging
import os
import sys
import time


def conf_pairs(pairs: list[str]) -> list[tuple[str, str]]:
    """`k=v` strings -> pairs; raises ValueError naming the bad one."""
    out = []
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--conf {pair!r}: expected key=value (e.g. spark.executor.memory=4g)")
        out.append((key.strip(), value))
    return out


# Settings the output's bytes depend on: fixed partition counts, so that a re-run writes the same
# files (adaptive execution would choose counts from runtime statistics).
DETERMINISTIC = {
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
}


def spark_session(master: str | None = None, conf: list[tuple[str, str]] = (), app_name: str = "kafka-jmx-sidecar backfill"):
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    elif "spark.master" not in _submitted_conf():
        builder = builder.master("local[*]")
    if (master or _submitted_conf().get("spark.master") or "local").startswith("local"):
        # Local workers run this interpreter, which imports the project: Spark's default, the
        # first python3 on PATH, need not be the virtual environment's (a start by absolute path)
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    for key, value in DETERMINISTIC.items():
        builder = builder.config(key, value)
    builder = builder.config("spark.ui.showConsoleProgress", "false")
    for key, value in conf:
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    if "spark.sql.shuffle.partitions" not in dict(conf):
        # Spark's 200 shuffle partitions cost a Python worker round each on every stage of a small
        # job; the output's own partitioning is explicit (job.py), so this changes no byte of it.
        session.conf.set("spark.sql.shuffle.partitions", str(max(2, 2 * session.sparkContext.defaultParallelism)))
    return session


def _submitted_conf() -> dict[str, str]:
    """spark-submit passes its settings to the Python process through the JVM it started; a plain
    `python` start has none."""
    return {"spark.master": os.environ["MASTER"]} if "MASTER" in os.environ else (
        {"spark.master": "submitted"} if "PYSPARK_GATEWAY_PORT" in os.environ else {})


_BEGAN = time.monotonic()
# Where the run's lines go (`log_to`): the backfill's own text lines on stderr by default (a
# library caller, the benches), records of the project's log format when the command line asks.
_OUT = {"format": "text", "level": logging.INFO}
LOGGER = "kafka_jmx_sidecar.backfill"


def log_to(fmt: str = "text", level: str = "info") -> None:
    """`text`: the lines below as they are; `logfmt` or `json`: log records of LOGGER (the command
    line's handler formats them), their fields as fields of their own. Below `level`, nothing."""
    _OUT.update(format=fmt, level=logging.getLevelName(level.upper()))


def log(message: str, logger: str = LOGGER, **fields) -> None:
    """A line of the run's progress on stderr, with the seconds since the job started; `fields`
    (numbers, strings, lists, None: unknown) go into a structured record as they are."""
    if _OUT["format"] != "text":
        logging.getLogger(logger).info(message, extra={"fields": fields})
    elif _OUT["level"] <= logging.INFO:
        print(f"backfill [{time.monotonic() - _BEGAN:7.1f} s]: {message}", file=sys.stderr, flush=True)
