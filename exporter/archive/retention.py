"""Which archive files to delete: those whose hour ended more than the retention age ago, then the
oldest while the directory holds more than the retention size. The file being written is never
deleted. Only files named as the writer names them (`YYYY-MM-DDTHHZ.jsonl`) are touched.
"""
from __future__ import annotations

import calendar
import os
import re
import time
from typing import NamedTuple

from kafka_jmx_sidecar.exporter.archive.format import SUFFIX

FILE_NAME = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2})Z" + re.escape(SUFFIX))


def file_name(t: float) -> str:
    """The hourly file a poll at `t` (seconds since the epoch) goes to, by its UTC hour."""
    return time.strftime("%Y-%m-%dT%HZ", time.gmtime(t)) + SUFFIX


def hour_start(name: str) -> float | None:
    m = FILE_NAME.fullmatch(name)
    if m is None:
        return None
    y, mo, d, h = map(int, m.groups())
    return float(calendar.timegm((y, mo, d, h, 0, 0)))


class ArchiveFile(NamedTuple):
    name: str
    start: float  # its hour's start
    size: int


class Deleted(NamedTuple):
    name: str
    reason: str  # "age" or "size"


def hourly_files(directory: str) -> list[ArchiveFile]:
    """The writer's files in `directory`, oldest first."""
    out = []
    try:
        entries = list(os.scandir(directory))
    except FileNotFoundError:
        return []
    for e in entries:
        start = hour_start(e.name)
        if start is not None and e.is_file(follow_symlinks=False):
            out.append(ArchiveFile(e.name, start, e.stat(follow_symlinks=False).st_size))
    out.sort()
    return out


def to_delete(files: list[ArchiveFile], now: float, max_age: float, max_bytes: int,
              current: str | None) -> list[Deleted]:
    """Pure: the files (oldest first) that retention removes."""
    out = []
    kept = []
    for f in files:
        if f.name != current and f.start + 3600 <= now - max_age:
            out.append(Deleted(f.name, "age"))
        else:
            kept.append(f)
    total = sum(f.size for f in kept)
    for f in kept:
        if total <= max_bytes:
            break
        if f.name == current:
            continue
        out.append(Deleted(f.name, "size"))
        total -= f.size
    return out


def enforce(directory: str, now: float, max_age: float, max_bytes: int, current: str | None) -> tuple[list[Deleted], int]:
    """Delete what `to_delete` says; (deleted, bytes left in the directory's archive files)."""
    files = hourly_files(directory)
    deleted = to_delete(files, now, max_age, max_bytes, current)
    gone = set()
    for d in deleted:
        try:
            os.unlink(os.path.join(directory, d.name))
            gone.add(d.name)
        except FileNotFoundError:
            gone.add(d.name)
    return [d for d in deleted if d.name in gone], sum(f.size for f in files if f.name not in gone)
