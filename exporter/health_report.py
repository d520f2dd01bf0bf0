"""`kafka-jmx-sidecar health`: judge partition states read from files or stdin and print them.

JSON Lines output is the input object plus five booleans. For JSON Lines input the booleans are
appended to the line's own text rather than re-encoding the object: the output keeps the input's
field order and spelling, and printing costs a string join instead of a second json.dumps.
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from itertools import product
from typing import IO, Iterable, Sequence

from mbeans.health import PROFILES, HealthFlags, PartitionState, Profile, counts_of, judge_counts
from mbeans.partition_states import Parsed, Rejected, read_states

KINDS = ("under-replicated", "under-min-isr", "at-min-isr", "unavailable")
_KIND_FIELD = {k: k.replace("-", "_") for k in KINDS}
FLAG_FIELDS = HealthFlags._fields

# Every combination of the five flags, pre-rendered as the JSON tail appended to an input object.
_SUFFIX = {
    flags: ", " + ", ".join(f'"{name}": {"true" if v else "false"}' for name, v in zip(FLAG_FIELDS, flags)) + "}"
    for flags in product((False, True), repeat=len(FLAG_FIELDS))
}


def parse_only(text: str | None) -> tuple[str, ...]:
    """'under-replicated,at-min-isr' -> the HealthFlags fields to keep (ORed, as kafka-topics.sh)."""
    if not text:
        return ()
    kinds = [k.strip() for k in text.split(",") if k.strip()]
    bad = [k for k in kinds if k not in _KIND_FIELD]
    if bad:
        raise ValueError(f"--only: unknown kind {', '.join(bad)}; choose from {', '.join(KINDS)}")
    return tuple(_KIND_FIELD[k] for k in kinds)


@dataclass
class Summary:
    judged: int = 0
    printed: int = 0
    rejected: list[tuple[str, int, str]] = field(default_factory=list)


def state_as_object(s: PartitionState) -> dict:
    obj = {"topic": s.topic, "partition": s.partition, "leader": s.leader, "replicas": list(s.replicas),
           "isr": list(s.isr), "adding_replicas": list(s.adding_replicas),
           "removing_replicas": list(s.removing_replicas), "min_isr": s.min_isr}
    if s.live_brokers is not None:
        obj["live_brokers"] = sorted(s.live_brokers)
    return obj


def _jsonl_line(p: Parsed, flags: HealthFlags) -> str:
    if p.text:
        return p.text.rstrip()[:-1] + _SUFFIX[flags] + "\n"
    obj = state_as_object(p.state)
    obj.update(zip(FLAG_FIELDS, flags))
    return json.dumps(obj) + "\n"


def _ids(ids: Sequence[int]) -> str:
    return ",".join(map(str, ids)) or "-"


_TABLE_COLUMNS = ("TOPIC", "PARTITION", "LEADER", "REPLICAS", "ISR", "ADDING", "REMOVING", "MIN_ISR", "FLAGS")


def _table_row(s: PartitionState, flags: HealthFlags) -> tuple[str, ...]:
    marks = [k for k in KINDS if getattr(flags, _KIND_FIELD[k])]
    if flags.reassigning:
        marks.append("reassigning")
    return (s.topic, str(s.partition), "none" if s.leader is None else str(s.leader), _ids(s.replicas),
            _ids(s.isr), _ids(s.adding_replicas), _ids(s.removing_replicas), str(s.min_isr),
            ",".join(marks) or "ok")


def render_table(rows: list[tuple[str, ...]], out: IO[str]) -> None:
    widths = [max([len(c)] + [len(r[i]) for r in rows]) for i, c in enumerate(_TABLE_COLUMNS)]
    for r in [_TABLE_COLUMNS, *rows]:
        out.write("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() + "\n")


def judge_lines(lines: Iterable[str], source: str, profile: Profile, only: tuple[str, ...],
                output: str, out: IO[str], summary: Summary, default_min_isr: int = 1) -> None:
    write = out.write
    table_rows: list[tuple[str, ...]] = []
    for item in read_states(lines, default_min_isr):
        if type(item) is Rejected:
            summary.rejected.append((source, item.line_no, item.reason))
            continue
        flags = judge_counts(counts_of(item.state), profile)
        summary.judged += 1
        if only and not any(getattr(flags, f) for f in only):
            continue
        summary.printed += 1
        if output == "jsonl":
            write(_jsonl_line(item, flags))
        else:
            table_rows.append(_table_row(item.state, flags))
    if output == "table" and table_rows:
        render_table(table_rows, out)


def run(files: Sequence[str], semantics: str = "kafka-3.7", only: str | None = None, output: str = "table",
        default_min_isr: int = 1, out: IO[str] = sys.stdout, err: IO[str] = sys.stderr) -> int:
    """Exit 0 when every line was judged, 2 when any line was rejected or a file was unreadable."""
    profile = PROFILES[semantics]
    try:
        kinds = parse_only(only)
    except ValueError as e:
        err.write(f"error: {e}\n")
        return 2
    summary = Summary()
    for name in files or ["-"]:
        if name == "-":
            judge_lines(sys.stdin, "<stdin>", profile, kinds, output, out, summary, default_min_isr)
            continue
        try:
            f = open(name, encoding="utf-8")
        except OSError as e:
            summary.rejected.append((name, 0, f"cannot read: {e.strerror}"))
            continue
        try:
            with f:
                judge_lines(f, name, profile, kinds, output, out, summary, default_min_isr)
        except UnicodeDecodeError as e:
            summary.rejected.append((name, 0, f"not UTF-8 text ({e.reason} at byte {e.start})"))
    for source, line_no, reason in summary.rejected:
        where = f"{source}:{line_no}" if line_no else source
        err.write(f"{where}: {reason}\n")
    if summary.rejected:
        err.write(f"health: judged {summary.judged} partitions; {len(summary.rejected)} input "
                  f"problem(s) above were skipped: fix or remove them\n")
        return 2
    return 0
