"""Saved `kafka-topics.sh --describe` output as a source of partition states over time.

A dump's time is the first ISO-8601 timestamp in its file name (`2026-11-21T22-36-27Z_describe.txt`),
or what `--describe-time-regex` finds there (its group `time`, else its first group, else the whole
match: ISO-8601 or seconds since the epoch), or the file's mtime. The lines are read by the one
describe parser (mbeans/partition_states.py) and each partition becomes a row of counts
(`counts_of`), so the Spark side evaluates formulas and never looks at replica lists.

Nothing is dropped silently: every line that yields no state is a reject with a reason code.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from kafka_jmx_sidecar.exporter.backfill.grid import ISO_TIME, iso_ms, parse_time_ms
from kafka_jmx_sidecar.mbeans.health import counts_of, has_leader, placeholder_count
from kafka_jmx_sidecar.mbeans.partition_states import Parsed, read_describe

# Reject reasons (codes the summary and the rejects file use).
UNREADABLE = "unreadable-file"  # the file could not be opened or read
NOT_TEXT = "not-text"  # a line that is not UTF-8 (a corrupt or binary file)
TORN_LAST_LINE = "torn-last-line"  # the last line has no newline: the dump was cut while written
UNPARSABLE = "unparsable-line"  # neither a topic header nor a partition line
DUPLICATE = "duplicate-partition"  # a partition listed twice in one dump
NO_PARTITIONS = "no-partitions"  # a file without a single partition line (empty, or not a dump)


@dataclass(frozen=True)
class Dump:
    path: str
    time_ms: int
    time_from: str  # "name", "regex" or "mtime"


def dump_time(path: str, regex: re.Pattern | None = None) -> tuple[int, str]:
    name = os.path.basename(path)
    if regex is not None:
        m = regex.search(name)
        if m is not None:
            text = m.group("time") if "time" in regex.groupindex else m.group(1) if regex.groups else m.group(0)
            return parse_time_ms(text), "regex"
    else:
        m = ISO_TIME.search(name)
        if m is not None:
            return iso_ms(m), "name"
    return int(os.stat(path).st_mtime * 1000), "mtime"


def list_dumps(inputs: list[str], regex: re.Pattern | None = None) -> list[Dump]:
    """Every file under the inputs (directories walked, hidden files skipped), with its time,
    ordered by time then path. Raises FileNotFoundError naming an input that does not exist."""
    files = []
    for given in inputs:
        p = Path(given)
        if p.is_dir():
            files.extend(str(f) for f in sorted(p.rglob("*")) if f.is_file()
                         and not any(part.startswith(".") for part in f.relative_to(p).parts))
        elif p.is_file():
            files.append(str(p))
        else:
            raise FileNotFoundError(f"--input {given}: no such file or directory")
    dumps = [Dump(f, *dump_time(f, regex)) for f in dict.fromkeys(files)]
    return sorted(dumps, key=lambda d: (d.time_ms, d.path))


# One row per partition (kind "s"), per rejected line (kind "r") and per file (kind "f": lines
# read), in one schema so one pass over the files gives all three.
ROW_SCHEMA = (
    "kind string, t long, topic string, partition int, leader int, has_leader boolean, "
    "leader_live boolean, replicas int, adding int, reassigning boolean, isr int, min_isr int, "
    "placeholders int, file string, line int, reason string, detail string, text string"
)
_NONE = (None,) * 11  # topic .. placeholders


def read_dump(path: str, time_ms: int, default_min_isr: int = 1) -> Iterator[tuple]:
    """The rows of one dump (ROW_SCHEMA). Runs on the executors."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        yield ("r", time_ms) + _NONE + (path, 0, UNREADABLE, str(e), "")
        yield ("f", time_ms) + _NONE + (path, 0, None, None, None)
        return
    rejects: list[tuple] = []
    try:
        # a whole good file in one call; line by line only to find the lines that are not text
        lines = data.decode("utf-8").split("\n")
        torn = lines.pop().encode()  # after the last newline: b"" unless torn
    except UnicodeDecodeError:
        raw_lines = data.split(b"\n")
        torn = raw_lines.pop()
        lines = []
        for line_no, raw in enumerate(raw_lines, 1):
            try:
                lines.append(raw.decode("utf-8"))
            except UnicodeDecodeError as e:
                lines.append("")  # keeps line numbers; reported here
                rejects.append((line_no, NOT_TEXT, str(e), raw[:200].decode("utf-8", "replace")))
    read = len(lines)
    if torn:
        read += 1
        rejects.append((read, TORN_LAST_LINE, "the file does not end with a newline: cut while written?",
                        torn[:200].decode("utf-8", "replace")))
    seen: set[tuple[str, int]] = set()
    states = 0
    for item in read_describe(lines, default_min_isr):
        if item.__class__ is Parsed:
            s = item.state
            key = (s.topic, s.partition)
            if key in seen:
                rejects.append((item.line_no, DUPLICATE, f"{s.topic}-{s.partition} is listed twice in this dump",
                                lines[item.line_no - 1][:200]))
                continue
            seen.add(key)
            states += 1
            c = counts_of(s)
            yield ("s", time_ms, s.topic, s.partition, s.leader if has_leader(s.leader) else -1,
                   bool(c.has_leader), bool(c.leader_live), c.replicas, c.adding, bool(c.reassigning), c.isr,
                   c.min_isr, placeholder_count(s), path, item.line_no, None, None, None)
        else:
            rejects.append((item.line_no, UNPARSABLE, item.reason, lines[item.line_no - 1][:200]))
    if not states and not rejects:
        rejects.append((0, NO_PARTITIONS, "no partition line (Topic: ... Partition: ... Leader: ...)", ""))
    for line_no, reason, detail, text in sorted(rejects):
        yield ("r", time_ms) + _NONE + (path, line_no, reason, detail, text)
    yield ("f", time_ms) + _NONE + (path, read, None, None, None)
