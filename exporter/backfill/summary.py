"""A run's figures as the user gets them at its end: the summary (inputs, rows, rejects by reason
and by file, files, series, samples, time range, timings, exit status) as text for people or, with
`--summary json`, as one JSON object on stdout for a cron job; and what a JSON summary says of a
run that failed or was stopped. The field names are stable (docs/backfill.md lists them)."""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass

from kafka_jmx_sidecar.exporter.backfill.grid import Grid
from kafka_jmx_sidecar.exporter.backfill.inputs import Tally

EXIT_OK = 0
EXIT_FAILED = 1  # an unexpected failure (a Spark job failed): the traceback is on stderr
EXIT_USAGE = 2  # a bad option, input, configuration or environment: one line on stderr says which
EXIT_REJECTS = 3  # the run finished, but more input was rejected than --max-reject-ratio allows
STATUS = {EXIT_OK: "ok", EXIT_REJECTS: "too-many-rejects"}


@dataclass
class Written:
    """The output files' figures: names, manifest entries, series and samples, and the first and
    last step written (None: nothing)."""

    files: list[str]
    entries: list[dict]
    series: int
    samples: int
    first: int | None
    last: int | None


def summary(tally: Tally, written: Written, grid: Grid, max_reject_ratio: float) -> tuple[int, dict]:
    """The exit code (EXIT_REJECTS past `max_reject_ratio`) and the run's figures."""
    rejected = rejected_counts(tally)
    reject_count = sum(c for _, _, c in rejected)
    ratio = reject_count / tally.lines if tally.lines else (1.0 if reject_count else 0.0)
    figures = {
        "input_files": tally.files, "archive_files": tally.archive_files, "archived_polls": tally.archived_polls,
        "lines_read": tally.lines, "partition_states": tally.partition_states,
        "rejected": reject_count, "rejected_by_reason": by_reason(rejected),
        "rejected_by_file": _by_file(rejected), "output_files": written.files,
        "bytes": sum(e["bytes"] for e in written.entries), "series": written.series,
        "samples": written.samples, "start": iso(time_ms(grid, written.first)),
        "end": iso(time_ms(grid, written.last)), "reject_ratio": ratio, "max_reject_ratio": max_reject_ratio,
    }
    return (EXIT_REJECTS if ratio > max_reject_ratio else EXIT_OK), figures


def rejected_counts(tally: Tally) -> list[tuple[str, str, int]]:
    """(file, reason, how many), sorted."""
    return [(f, reason, n) for (f, reason), n in sorted(tally.rejected.items())]


def by_reason(rejected) -> dict[str, int]:
    out: dict[str, int] = {}
    for _, reason, count in rejected:
        out[reason] = out.get(reason, 0) + count
    return dict(sorted(out.items()))


def _by_file(rejected) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for path, reason, count in rejected:
        out.setdefault(path, {})[reason] = count
    return out


def time_ms(grid: Grid, k: int | None) -> int | None:
    return None if k is None else grid.time_ms(k)


def iso(ms: int | None) -> str | None:
    if ms is None:
        return None
    from datetime import datetime, timezone

    return datetime.fromtimestamp(ms / 1000, timezone.utc).isoformat().replace("+00:00", "Z")


def print_text(s: dict) -> None:
    print(f"input files: {s['input_files']}, lines read: {s['lines_read']}, "
          f"partition states: {s['partition_states']}")
    print(f"rejected: {s['rejected']} ({s['reject_ratio']:.4%} of lines; allowed {s['max_reject_ratio']:.4%})")
    for reason, count in s["rejected_by_reason"].items():
        print(f"  {reason}: {count}")
    for path, reasons in s["rejected_by_file"].items():
        print(f"  {path}: " + ", ".join(f"{r} {c}" for r, c in reasons.items()))
    print(f"written: {len(s['output_files'])} files, {s['series']} series, {s['samples']} samples")
    print(f"time range: {s['start']} .. {s['end']}")
    print(f"took {s['seconds']} s")
    sys.stdout.flush()


def print_json(s: dict) -> None:
    """One JSON object, one line, on stdout."""
    print(json.dumps(s, sort_keys=True), flush=True)


def failure(exit_code: int, status: str, error: str, figures: dict | None = None) -> dict:
    """What `--summary json` prints for a run that did not finish: its exit code, `error` (the line
    stderr shows) and whatever figures were known (a run whose output is in place but whose
    promtool import failed has them all)."""
    return {**(figures or {}), "status": status, "exit_code": exit_code, "error": error}


def error_text(e: BaseException, limit: int = 1000) -> str:
    """An unexpected failure in one line: its type and the message's lines before any stack trace
    (a failed Spark job's message holds the Java one)."""
    lines = []
    for line in str(e).splitlines():
        if line.startswith(("\tat ", "Traceback")):
            break
        if line.strip():
            lines.append(line.strip())
    return f"{type(e).__name__}: {' '.join(lines)}"[:limit]
