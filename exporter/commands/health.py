"""`kafka-jmx-sidecar health`: judge partition states read from files or stdin and print them.

Input is read in bounded pieces (mbeans/bounded_lines.py) and judged in batches of bounded size,
so memory stays bounded whatever a line holds; a line that is too long, not text, malformed or a
state Kafka cannot be in is reported with its number (exit code 2) and the others are judged.

JSON Lines output is the input object plus five booleans, and three more (the ELR figures) under a
profile that has them wherever the partition's eligible leader replicas are known. For JSON Lines input the booleans are
appended to the line's own text rather than re-encoding the object: the output keeps the input's
field order and spelling, and printing costs a string join instead of a second json.dumps.
"""
from __future__ import annotations

import json
import multiprocessing
import os
import re
import sys
from dataclasses import dataclass, field
from itertools import chain, product
from typing import IO, Iterable, Iterator, NamedTuple, Sequence

from kafka_jmx_sidecar.mbeans.bounded_lines import LineReader, Unread
from kafka_jmx_sidecar.mbeans.health import PROFILES, ElrFlags, HealthFlags, PartitionState, counts_of, judge_counts, judge_elr
from kafka_jmx_sidecar.mbeans.partition_states import (
    Parsed, Rejected, header_context, is_describe_header, looks_like_jsonl, read_describe, read_jsonl,
)

KINDS = ("under-replicated", "under-min-isr", "at-min-isr", "unavailable")
ELR_KINDS = ("elr-under-min-isr", "elr-offline-clean", "elr-offline-unclean")
_KIND_FIELD = {k: k.replace("-", "_") for k in KINDS + ELR_KINDS}
FLAG_FIELDS = HealthFlags._fields
ELR_FIELDS = ElrFlags._fields

# Every combination of the five flags, pre-rendered as the JSON tail appended to an input object.
_SUFFIX = {
    flags: ", " + ", ".join(f'"{name}": {"true" if v else "false"}' for name, v in zip(FLAG_FIELDS, flags)) + "}"
    for flags in product((False, True), repeat=len(FLAG_FIELDS))
}
# The ELR figures' JSON, put before the closing brace of _SUFFIX where they are known.
_ELR_PART = {
    flags: ", " + ", ".join(f'"{name}": {"true" if v else "false"}' for name, v in zip(ELR_FIELDS, flags))
    for flags in product((False, True), repeat=len(ELR_FIELDS))
}


class Verdict(NamedTuple):
    flags: HealthFlags
    elr: ElrFlags | None  # None: the profile has no ELR figures, or the partition's ELR is not known

    def has(self, field: str) -> bool:
        if field in ELR_FIELDS:
            return self.elr is not None and getattr(self.elr, field)
        return getattr(self.flags, field)

    @property
    def suffix(self) -> str:
        tail = _SUFFIX[self.flags]
        return tail if self.elr is None else tail[:-1] + _ELR_PART[self.elr] + "}"


def parse_only(text: str | None) -> tuple[str, ...]:
    """'under-replicated,at-min-isr' -> the HealthFlags fields to keep (ORed, as kafka-topics.sh)."""
    if not text:
        return ()
    kinds = [k.strip() for k in text.split(",") if k.strip()]
    bad = [k for k in kinds if k not in _KIND_FIELD]
    if bad:
        raise ValueError(f"--only: unknown kind {', '.join(bad)}; choose from {', '.join(KINDS + ELR_KINDS)}")
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
    if s.eligible_leader_replicas is not None:
        obj["eligible_leader_replicas"] = list(s.eligible_leader_replicas)
    if s.last_known_elr is not None:
        obj["last_known_elr"] = list(s.last_known_elr)
    return obj


_SAFE_TOPIC = re.compile(r"[A-Za-z0-9._-]+")  # Kafka's legal topic characters need no escaping


def _id_array(ids: Sequence[int]) -> str:
    return "[" + ", ".join(map(str, ids)) + "]"


def state_json_head(s: PartitionState) -> str:
    """`json.dumps(state_as_object(s))` without its closing brace, built directly: the encoder
    is the slowest step of `health` on describe input."""
    head = _json_up_to_partition(s)
    if head is None:
        return json.dumps(state_as_object(s))[:-1]
    return head + _json_after_partition(s)


def _json_up_to_partition(s: PartitionState) -> str | None:
    """`{"topic": "T", "partition": N`, or None when the topic would need escaping."""
    if not _SAFE_TOPIC.fullmatch(s.topic):
        return None
    return f'{{"topic": "{s.topic}", "partition": {s.partition}'


def _json_after_partition(s: PartitionState) -> str:
    """The fields after `partition`, as state_json_head writes them."""
    live = "" if s.live_brokers is None else f', "live_brokers": {_id_array(sorted(s.live_brokers))}'
    if s.eligible_leader_replicas is not None:
        live += f', "eligible_leader_replicas": {_id_array(s.eligible_leader_replicas)}'
    if s.last_known_elr is not None:
        live += f', "last_known_elr": {_id_array(s.last_known_elr)}'
    return (f', "leader": {"null" if s.leader is None else s.leader}, "replicas": {_id_array(s.replicas)}, '
            f'"isr": {_id_array(s.isr)}, "adding_replicas": {_id_array(s.adding_replicas)}, '
            f'"removing_replicas": {_id_array(s.removing_replicas)}, "min_isr": {s.min_isr}{live}')


# A line that already holds one of the booleans (this command's own output, judged again) is
# re-encoded with the new values in place of the old ones, never given a second copy of a key.
_HAS_FLAG_KEY = re.compile(r'"(?:' + "|".join(FLAG_FIELDS + ELR_FIELDS) + r')"\s*:').search


def _jsonl_line(p: Parsed, verdict: Verdict) -> str:
    if not p.text:
        return state_json_head(p.state) + verdict.suffix + "\n"
    text = p.text.rstrip()
    if ('"un' in text or '"at_' in text or '"reassigning"' in text or '"elr_' in text) and _HAS_FLAG_KEY(text):
        obj = {k: v for k, v in json.loads(text).items() if k not in FLAG_FIELDS and k not in ELR_FIELDS}
        obj.update(zip(FLAG_FIELDS, verdict.flags))
        if verdict.elr is not None:
            obj.update(zip(ELR_FIELDS, verdict.elr))
        return json.dumps(obj) + "\n"
    return text[:-1] + verdict.suffix + "\n"


def _ids(ids: Sequence[int]) -> str:
    return ",".join(map(str, ids)) or "-"


_TABLE_COLUMNS = ("TOPIC", "PARTITION", "LEADER", "REPLICAS", "ISR", "ADDING", "REMOVING", "MIN_ISR", "FLAGS")


def _table_row(s: PartitionState, verdict: Verdict) -> tuple[str, ...]:
    flags = verdict.flags
    marks = [k for k in KINDS + ELR_KINDS if verdict.has(_KIND_FIELD[k])]
    if flags.reassigning:
        marks.append("reassigning")
    return (s.topic, str(s.partition), "none" if s.leader is None else str(s.leader), _ids(s.replicas),
            _ids(s.isr), _ids(s.adding_replicas), _ids(s.removing_replicas), str(s.min_isr),
            ",".join(marks) or "ok")


def render_table(rows: list[tuple[str, ...]], out: IO[str]) -> None:
    widths = [max([len(c)] + [len(r[i]) for r in rows]) for i, c in enumerate(_TABLE_COLUMNS)]
    for r in [_TABLE_COLUMNS, *rows]:
        out.write("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() + "\n")


@dataclass(frozen=True)
class Job:
    """What every batch of one `health` run shares (picklable: batches may run in workers)."""

    profile: str
    only: tuple[str, ...]
    output: str
    default_min_isr: int
    # Brokers registered when the input was taken (--live-brokers): for the states that do not
    # say (describe output never does), so a leader that is not among them counts as dead.
    live_brokers: frozenset[int] | None = None


@dataclass
class BatchResult:
    text: str  # JSON Lines output
    rows: list[tuple[str, ...]]  # table rows
    judged: int
    printed: int
    rejected: list[tuple[int, str]]


def judge_batch(job: Job, lines: list[str], first_line_no: int, jsonl_input: bool,
                header: str | None) -> BatchResult:
    """Judge consecutive input lines. `header` is the describe topic header in force where the
    batch starts (describe text carries min ISR from header to partition lines)."""
    profile = PROFILES[job.profile]
    only = job.only
    live = job.live_brokers
    if jsonl_input:
        items = read_jsonl(lines, first_line_no)
    else:
        items = read_describe(lines, job.default_min_isr, first_line_no,
                              header_context(header, job.default_min_isr))
    out: list[str] = []
    rows: list[tuple[str, ...]] = []
    rejected: list[tuple[int, str]] = []
    # A fleet has few distinct count shapes, so each is judged once (same formulas, memoised).
    verdicts: dict = {}
    # Describe input: few distinct states but for topic and partition (brokers x replication
    # factor), so each one's verdict and JSON after the partition are made once per batch.
    shapes: dict = {}
    judged = printed = 0
    jsonl = job.output == "jsonl"

    def verdict(state: PartitionState) -> Verdict:
        c = counts_of(state)
        found = verdicts.get(c)
        if found is None:
            found = verdicts[c] = Verdict(judge_counts(c, profile), judge_elr(c, profile))
        return found

    for item in items:
        if item.__class__ is Rejected:
            rejected.append((item.line_no, item.reason))
            continue
        state = item.state
        if live is not None and state.live_brokers is None:
            state = state._replace(live_brokers=live)
        if jsonl_input:
            flags, line = verdict(state), None
        else:
            key = state[2:]
            shape = shapes.get(key)
            if shape is None:
                flags = verdict(state)
                shape = shapes[key] = (flags, _json_after_partition(state) + flags.suffix + "\n")
            flags, line = shape
        judged += 1
        if only and not any(flags.has(f) for f in only):
            continue
        printed += 1
        if not jsonl:
            rows.append(_table_row(state, flags))
        elif line is not None and (head := _json_up_to_partition(state)) is not None:
            out.append(head + line)
        else:
            out.append(_jsonl_line(item, flags))
    return BatchResult("".join(out), rows, judged, printed, rejected)


BATCH_LINES = 20_000
# A batch also ends once it holds this much text: lines of the longest real kind (bounded_lines)
# are few to a batch, so the batches in flight stay small.
BATCH_CHARS = 4 * 1024 * 1024


def _grouped(blocks: Iterable[list[str]]) -> Iterator[list[str]]:
    """The reader's blocks regrouped into batches of at most BATCH_LINES lines or about BATCH_CHARS."""
    batch: list[str] = []
    size = 0
    for block in blocks:
        batch.extend(block)
        size += sum(map(len, block))
        while len(batch) >= BATCH_LINES:
            yield batch[:BATCH_LINES]
            batch = batch[BATCH_LINES:]
            size = sum(map(len, batch))
        if size >= BATCH_CHARS:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def _batches(blocks: Iterable[list[str]]) -> Iterator[tuple[list[str], int, bool, str | None]]:
    """Split input into batches of lines, detecting the form once and carrying the describe
    header in force into each batch."""
    it = _grouped(blocks)
    line_no, header = 1, None
    batch = next(it, [])
    if batch and batch[0].startswith("\ufeff"):  # a byte-order mark (Windows editors) is no content
        batch[0] = batch[0][1:]
    first = next((l for l in batch if l.strip()), None)
    while first is None and batch:  # only blank (or unread) lines so far: skip them, keep counting
        if any(l.__class__ is Unread for l in batch):  # either reader rejects them alike
            yield batch, line_no, True, None
        line_no += len(batch)
        batch = next(it, [])
        first = next((l for l in batch if l.strip()), None)
    if first is None:
        return
    jsonl_input = looks_like_jsonl(first)
    while batch:
        yield batch, line_no, jsonl_input, header
        if not jsonl_input:
            header = next((l for l in reversed(batch) if is_describe_header(l)), header)
        line_no += len(batch)
        batch = next(it, [])


def _parallel_map(job: Job, batches: Iterator) -> Iterator[BatchResult]:
    """Judge batches on every core once the input proves big (a second full batch), in order."""
    first = next(batches, None)
    if first is None:
        return
    second = next(batches, None)
    if second is None or (os.cpu_count() or 1) < 2:
        yield judge_batch(job, *first)
        if second is not None:
            yield judge_batch(job, *second)
        yield from (judge_batch(job, *b) for b in batches)
        return
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(os.cpu_count()) as pool:
        yield from pool.imap(_judge_task, ((job, *b) for b in chain([first, second], batches)), chunksize=1)


def _judge_task(task) -> BatchResult:
    return judge_batch(*task)


def judge_stream(stream: IO, source: str, job: Job, out: IO[str], summary: Summary) -> None:
    """Judge every line of `stream` (binary, or text), read in bounded pieces (bounded_lines)."""
    rows: list[tuple[str, ...]] = []
    for result in _parallel_map(job, _batches(LineReader(stream).blocks())):
        if result.text:
            out.write(result.text)
        rows.extend(result.rows)
        summary.judged += result.judged
        summary.printed += result.printed
        summary.rejected.extend((source, n, reason) for n, reason in result.rejected)
    if rows:
        render_table(rows, out)


def parse_live_brokers(text: str | None) -> frozenset[int] | None:
    """'1,2,3' -> frozenset({1, 2, 3}); None or '' -> None (unknown)."""
    if not text:
        return None
    try:
        return frozenset(int(b) for b in text.split(",") if b.strip())
    except ValueError:
        raise ValueError(f"--live-brokers: {text!r} is not a comma-separated list of broker ids") from None


def run(files: Sequence[str], semantics: str = "kafka-3.7", only: str | None = None, output: str = "table",
        default_min_isr: int = 1, out: IO[str] | None = None, err: IO[str] | None = None,
        live_brokers: str | None = None) -> int:
    """Exit 0 when every line was judged, 2 when any line was rejected or a file was unreadable.
    `out`/`err` default to sys.stdout/sys.stderr as they are when called (not when imported)."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    try:
        job = Job(semantics, parse_only(only), output, default_min_isr, parse_live_brokers(live_brokers))
        if set(job.only) & set(ELR_FIELDS) and not PROFILES[semantics].has_elr:
            raise ValueError(f"--only: the elr-* kinds need a profile with eligible leader replicas "
                             f"(--semantics kafka-4.1), not {semantics}")
    except ValueError as e:
        err.write(f"error: {e}\n")
        return 2
    summary = Summary()
    for name in files or ["-"]:
        if name == "-":
            judge_stream(getattr(sys.stdin, "buffer", sys.stdin), "<stdin>", job, out, summary)
            continue
        try:
            f = open(name, "rb")
        except OSError as e:
            summary.rejected.append((name, 0, f"cannot read: {e.strerror}"))
            continue
        with f:  # (not inside the try: a BrokenPipeError writing the output is no unreadable file)
            judge_stream(f, name, job, out, summary)
    for source, line_no, reason in summary.rejected:
        where = f"{source}:{line_no}" if line_no else source
        err.write(f"{where}: {reason}\n")
    if summary.rejected:
        err.write(f"health: judged {summary.judged} partitions; {len(summary.rejected)} input "
                  f"problem(s) above were skipped: fix or remove them\n")
        return 2
    return 0
