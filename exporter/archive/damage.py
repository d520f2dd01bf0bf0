"""What an archive's reader could not use: every rejected line or poll counted under its file and
reason, and each damaged span located (file, bytes, lines, and the polls read on either side).

A line or poll that cannot be used is counted under one of these reasons (the first few are kept
with line number and detail):

    unreadable file         a path that does not exist or cannot be read (counted once)
    torn last line          the file ends in an unterminated line (a crash while writing it)
    corrupt line            not JSON
    malformed record        JSON, but not a record of the segment's schema
    unknown record kind     a "k" this reader does not know
    checksum mismatch       schema 2: a block (a header; a poll from its poll line to its end line)
                            whose bytes do not match the checksum in its last line, or that has none
    unknown schema version  every line of a segment whose header names a schema this reader does
                            not read
    no header               lines with no readable header before them (before the file's first,
                            or after a header that failed its checksum)
    outside a poll          a record between a poll's end and the next poll
    incomplete poll         a poll without its (usable) end line, or whose end counts other records
                            than it holds (a line of it was rejected): the whole poll, counted once
    no keyframe             a change poll with no complete keyframe before it in its segment: counted
                            once per poll (it cannot be applied)
    damaged span            one per run of unusable bytes: from the first byte not used to the next
                            poll used (or the file's end); `Rejects.spans` holds them as `Damage`

A damaged span is what the rejects above cost, in one place: it opens at the first rejected line
or poll and closes at the next poll read whole. Not damage (no span): an unreadable file, a
segment of an unknown schema, and the poll being written when the file ends (a torn last line,
a last poll without its end line), which is what a crash, or a reader racing the writer, leaves.
"""
from __future__ import annotations

import os
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import NamedTuple

from kafka_jmx_sidecar.exporter.archive.retention import hour_start

UNREADABLE, TORN, CORRUPT = "unreadable file", "torn last line", "corrupt line"
MALFORMED, UNKNOWN_KIND, CHECKSUM = "malformed record", "unknown record kind", "checksum mismatch"
UNKNOWN_SCHEMA, NO_HEADER, OUTSIDE, INCOMPLETE, NO_KEYFRAME = (
    "unknown schema version", "no header", "outside a poll", "incomplete poll", "no keyframe")
DAMAGED = "damaged span"
REASONS = (UNREADABLE, TORN, CORRUPT, MALFORMED, UNKNOWN_KIND, CHECKSUM, UNKNOWN_SCHEMA, NO_HEADER, OUTSIDE,
           INCOMPLETE, NO_KEYFRAME, DAMAGED)
_NOT_DAMAGE = frozenset({UNREADABLE, TORN, UNKNOWN_SCHEMA, DAMAGED})


class Rejected(NamedTuple):
    path: str
    line_no: int
    reason: str
    detail: str


class Damage(NamedTuple):
    """A run of bytes that yielded no poll: `offset` (its first byte) up to `end` (where reading
    resumed; the file's size when it did not), lines `line` to `last_line`; `after` and `before`
    are the times of the polls read on either side in the same file (None: none), so the history
    lost lies strictly between them; `polls`: the poll lines in it that could still be read."""

    path: str
    offset: int
    end: int
    line: int
    last_line: int
    after: float | None
    before: float | None
    polls: int

    def describe(self) -> str:
        hour = hour_start(os.path.basename(self.path))  # None: not named as the writer names files
        since = (f"after the poll at {_when(self.after)}" if self.after is not None else
                 f"from the file's start ({_when(hour)})" if hour is not None else "from the file's start")
        until = (f"until the poll at {_when(self.before)}" if self.before is not None else
                 f"to the file's end ({_when(hour + 3600)})" if hour is not None else "to the file's end")
        return (f"bytes {self.offset}-{self.end} (lines {self.line}-{self.last_line}) unusable: "
                f"{self.polls} poll(s) lost, history {since} {until}")


def _when(t: float) -> str:
    whole = int(t)
    frac = f"{t - whole:.3f}".lstrip("0") if t != whole else ""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + frac.rstrip("0").rstrip(".") + "Z"


@dataclass
class Rejects:
    """What could not be used, per (file, reason); `examples` keeps the first `keep` in full and
    `spans` every damaged span."""

    counts: Counter = field(default_factory=Counter)
    examples: list[Rejected] = field(default_factory=list)
    keep: int = 1000
    lines: Counter = field(default_factory=Counter)  # path -> lines read (the ratio's denominator)
    spans: list[Damage] = field(default_factory=list)

    def add(self, path: str, line_no: int, reason: str, detail: str = "") -> None:
        self.counts[(path, reason)] += 1
        if len(self.examples) < self.keep:
            self.examples.append(Rejected(path, line_no, reason, detail))

    def by_reason(self) -> dict[str, int]:
        out: Counter = Counter()
        for (_, reason), n in self.counts.items():
            out[reason] += n
        return dict(out)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


class FileDamage:
    """One file's rejects as its reader meets them, and the span they make: opened at the first
    unusable byte, closed by the next poll used (`used`) or the file's end (`finish`)."""

    def __init__(self, path: str, rejects: Rejects):
        self.path, self.rejects = path, rejects
        self.after: float | None = None  # the last poll used
        self.open: list | None = None  # [first offset, its line] of the span under way
        self.poll_lines: list[int] = []  # offsets of the poll lines since the last poll used
        self.size = 0  # bytes and lines read, once read_records has run
        self.line_count = 0

    def reject(self, line_no: int, offset: int, reason: str, detail: str = "", damage: bool | None = None) -> None:
        self.rejects.add(self.path, line_no, reason, detail)
        if damage if damage is not None else reason not in _NOT_DAMAGE:
            span = self.open
            if span is None:
                self.open = [offset, line_no]
            elif offset < span[0]:
                span[0], span[1] = offset, line_no

    def used(self, t: float, offset: int, line_no: int) -> None:
        """A poll read whole, its block starting at `offset` (its header's, if it has one)."""
        if self.open is not None:
            self._close(offset, line_no - 1, t)
        self.after = t
        self.poll_lines.clear()

    def finish(self) -> None:
        if self.open is not None:
            self._close(self.size, self.line_count, None)

    def _close(self, end: int, last_line: int, before: float | None) -> None:
        offset, line = self.open
        self.open = None
        polls = sum(1 for at in self.poll_lines if offset <= at < end)
        d = Damage(self.path, offset, end, line, max(line, last_line), self.after, before, polls)
        self.rejects.spans.append(d)
        self.rejects.add(self.path, line, DAMAGED, d.describe())
