"""Saved `kafka-topics.sh --describe` output as a source of partition states over time.

A dump's time is the first ISO-8601 timestamp in its file name (`2026-11-21T22-36-27Z_describe.txt`),
or what `--describe-time-regex` finds there (its group `time`, else its first group, else the whole
match: ISO-8601 or seconds since the epoch), or the file's mtime. The lines are read by the one
describe parser (mbeans/partition_states.py) and each partition becomes a row of counts
(`counts_of`), so the Spark side evaluates formulas and never looks at replica lists.

Nothing is dropped silently: every line that yields no state is a reject with a reason code.
"""
from __future__ import annotations

import io
import re
from dataclasses import dataclass
from typing import BinaryIO, Iterator, NamedTuple

from kafka_jmx_sidecar.exporter.backfill.grid import ISO_TIME, iso_ms, parse_time_ms
from kafka_jmx_sidecar.mbeans.bounded_lines import HEAD, NOT_TEXT, TOO_LONG, LineReader, Unread
from kafka_jmx_sidecar.mbeans.health import counts_of, has_leader, placeholder_count
from kafka_jmx_sidecar.mbeans.partition_states import (
    IMPOSSIBLE, UNPARSABLE, Parsed, header_context, is_describe_header, read_describe,
)

# Reject reasons (codes the summary and the rejects file use). A rejected line's reason is the
# describe reader's kind of problem: UNPARSABLE (neither a topic header nor a partition line, or a
# malformed field), IMPOSSIBLE (a state Kafka cannot be in: more ids than a partition can have, a
# broker listed twice), TOO_LONG (longer than any real line: skipped unread), NOT_TEXT (not UTF-8).
UNREADABLE = "unreadable-file"  # the file could not be read to its end
TORN_LAST_LINE = "torn-last-line"  # the last line has no newline: the dump was cut while written
DUPLICATE = "duplicate-partition"  # a partition listed twice in one dump
NO_PARTITIONS = "no-partitions"  # a file without a single partition line (empty, or not a dump)


@dataclass(frozen=True)
class Dump:
    path: str  # as the user named it (rejects and the summary say it)
    time_ms: int
    time_from: str  # "name", "regex" or "mtime"
    uri: str = ""  # Hadoop's qualified name: what Spark's reader calls the file


def dump_time(name: str, mtime_ms: int, regex: re.Pattern | None = None) -> tuple[int, str]:
    """A dump's time from its file name (`regex`, else the first ISO-8601 timestamp), else `mtime_ms`."""
    base = name.rstrip("/").rsplit("/", 1)[-1]
    if regex is not None:
        m = regex.search(base)
        if m is not None:
            text = m.group("time") if "time" in regex.groupindex else m.group(1) if regex.groups else m.group(0)
            return parse_time_ms(text), "regex"
    else:
        m = ISO_TIME.search(base)
        if m is not None:
            return iso_ms(m), "name"
    return mtime_ms, "mtime"


def dumps_of(listed, regex: re.Pattern | None = None) -> list[Dump]:
    """The listed files (storage.Listed) as dumps with their times, ordered by time then name."""
    dumps = [Dump(f.name, *dump_time(f.name, f.mtime_ms, regex), uri=f.uri) for f in listed]
    return sorted(dumps, key=lambda d: (d.time_ms, d.path))


class DumpRow(NamedTuple):
    """One row per partition (kind "s"), per rejected line (kind "r") and per file (kind "f": lines
    read, in `line`), in one schema so one pass over the files gives all three."""

    kind: str
    t: int
    topic: str | None = None
    partition: int | None = None
    leader: int | None = None  # -1: none
    has_leader: bool | None = None  # has_leader .. min_isr: mbeans.health.Counts
    leader_live: bool | None = None
    replicas: int | None = None
    adding: int | None = None
    reassigning: bool | None = None
    isr: int | None = None
    min_isr: int | None = None
    elr: int | None = None  # len(Elr:); None: the dump does not tell it (no Elr:, or N/A)
    placeholders: int | None = None
    file: str | None = None
    line: int | None = None
    reason: str | None = None
    detail: str | None = None
    text: str | None = None


ROW_SCHEMA = (
    "kind string, t long, topic string, partition int, leader int, has_leader boolean, "
    "leader_live boolean, replicas int, adding int, reassigning boolean, isr int, min_isr int, elr int, "
    "placeholders int, file string, line int, reason string, detail string, text string"
)
assert tuple(f.split()[0] for f in ROW_SCHEMA.split(", ")) == DumpRow._fields


def read_dump(path: str, f: BinaryIO, time_ms: int, default_min_isr: int = 1) -> Iterator[DumpRow]:
    """The rows of one dump named `path`, its bytes read from `f` in bounded pieces
    (mbeans/bounded_lines.py: a line longer than any real one is parsed no further). Runs on the
    executors; a read that fails midway keeps what was read and is rejected as UNREADABLE."""
    rejects: list[tuple] = []
    seen: set[tuple[str, int]] = set()
    read = states = 0
    header = None
    tails: dict = {}  # the describe reader's parsed line tails, kept from block to block
    with f:
        reader = LineReader(f)
        try:
            for lines in reader.blocks():
                first, read = read + 1, read + len(lines)
                if reader.torn:
                    text = lines[0].head if lines[0].__class__ is Unread else lines[0][:HEAD]
                    rejects.append((read, TORN_LAST_LINE, "the file does not end with a newline: cut while written?",
                                    text))
                    break
                for item in read_describe(lines, default_min_isr, first, header_context(header, default_min_isr),
                                          tails):
                    if item.__class__ is Parsed:
                        s = item.state
                        key = (s.topic, s.partition)
                        if key in seen:
                            rejects.append((item.line_no, DUPLICATE, f"{s.topic}-{s.partition} is listed twice in "
                                            "this dump", lines[item.line_no - first][:HEAD]))
                            continue
                        seen.add(key)
                        states += 1
                        c = counts_of(s)
                        yield DumpRow("s", time_ms, s.topic, s.partition, s.leader if has_leader(s.leader) else -1,
                                      bool(c.has_leader), bool(c.leader_live), c.replicas, c.adding,
                                      bool(c.reassigning), c.isr, c.min_isr, c.elr, placeholder_count(s), file=path,
                                      line=item.line_no)
                    else:
                        line = lines[item.line_no - first]
                        rejects.append((item.line_no, item.kind, item.reason,
                                        line.head if line.__class__ is Unread else line[:HEAD]))
                header = next((line for line in reversed(lines) if is_describe_header(line)), header)
        except OSError as e:  # a read failing midway: what was read stands, the rest is reported
            rejects.append((read, UNREADABLE, str(e), ""))
    if not states and not rejects:
        rejects.append((0, NO_PARTITIONS, "no partition line (Topic: ... Partition: ... Leader: ...)", ""))
    for line_no, reason, detail, text in sorted(rejects):
        yield DumpRow("r", time_ms, file=path, line=line_no, reason=reason, detail=detail, text=text)
    yield DumpRow("f", time_ms, file=path, line=read)


class DescribeDumps:
    """Describe dumps as a backfill input (inputs.Input): partition states at each dump's time,
    judged under `profile` into the cluster-wide view, named by `naming`'s rules.
    `configured_min_isr`: the configuration's (default or None, {topic: n}), for topics whose
    header shows no min.insync.replicas, as the live sidecar uses it without the Admin API."""

    def __init__(self, dumps: list[Dump], naming, profile, default_min_isr: int = 1,
                 configured_min_isr: tuple[int | None, dict[str, int]] | None = None):
        self.dumps, self.naming, self.profile = dumps, naming, profile
        self.default_min_isr, self.configured_min_isr = default_min_isr, configured_min_isr

    def read(self, spark):
        from pyspark.sql import functions as F

        from kafka_jmx_sidecar.exporter.backfill.inputs import Reading, Tally

        rows = self._rows(spark)
        # one small aggregate for the summary: per kind, time, file and reason, rows and lines
        tally, times = Tally(files=len(self.dumps)), set()
        grouped = rows.groupBy("kind", "t", "file", "reason").agg(F.count(F.lit(1)).alias("n"),
                                                                  F.sum("line").alias("lines"))
        for r in grouped.collect():
            if r.kind == "s":
                tally.partition_states += r.n
                times.add(r.t)
            else:
                tally.count(r)
        return Reading(rows, tally, {"": sorted(times)})

    def _rows(self, spark):
        from pyspark.sql import functions as F

        from kafka_jmx_sidecar.exporter.backfill.session import log
        from kafka_jmx_sidecar.exporter.backfill.storage import read_files

        sc = spark.sparkContext
        configured = self.configured_min_isr
        # with configured values, a topic whose header shows none reads as 0 (min.insync.replicas is
        # at least 1), then takes the configured topic's value, else the configured default, else
        # --default-min-isr
        default_min_isr = 0 if configured is not None else self.default_min_isr
        dumps = self.dumps
        log(f"reading {len(dumps)} describe dumps ({dumps[0].path} ... {dumps[-1].path})")
        # a few files per task: a task per file would cost a Python worker round each
        raw = read_files(sc, {d.uri: (d.path, d.time_ms) for d in dumps}, min(len(dumps), 4 * sc.defaultParallelism),
                         lambda dump, data: read_dump(dump[0], io.BytesIO(data), dump[1], default_min_isr))
        rows = spark.createDataFrame(raw, ROW_SCHEMA, verifySchema=False)
        if configured is not None:
            default, topics = configured
            fallback = F.lit(default if default is not None else self.default_min_isr)
            if topics:
                by_topic = F.create_map(*[F.lit(x) for kv in sorted(topics.items()) for x in kv])
                fallback = F.coalesce(by_topic[F.col("topic")], fallback)
            rows = rows.withColumn("min_isr", F.when(F.col("min_isr") == 0, fallback).otherwise(F.col("min_isr")))
        return rows.persist()

    def listed_range(self) -> tuple[int, int]:
        return self.dumps[0].time_ms, self.dumps[-1].time_ms

    def series(self, reading, grid):
        from pyspark.sql import functions as F

        from kafka_jmx_sidecar.exporter.backfill.cluster_rows import cluster_rows
        from kafka_jmx_sidecar.exporter.backfill.grid import intervals
        from kafka_jmx_sidecar.exporter.backfill.naming import named_series
        from kafka_jmx_sidecar.exporter.backfill.session import log

        times = reading.times[""]
        held = intervals(times, grid)
        log(f"grid: {grid.count} steps of {grid.step_ms / 1000:g} s; {len(held)} of {len(times)} dump times hold a step")
        held_df = reading.rows.sparkSession.createDataFrame(
            [(t, k0, k1) for t, (k0, k1) in sorted(held.items())] or [(0, 0, -1)], "t long, k0 long, k1 long")
        states = reading.rows.where("kind = 's'").join(F.broadcast(held_df), "t")
        return named_series(cluster_rows(states, self.profile), self.naming)

    def manifest(self) -> dict:
        return {}
