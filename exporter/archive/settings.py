"""`sidecar.archive`: where `serve` keeps what each poll knew, and for how long.
Its keys: ARCHIVE below. Without the `archive` key nothing is archived.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from kafka_jmx_sidecar.exporter.base.definitions import Block, Key, custom, number, text, text_list

DEFAULT_RETENTION_HOURS = 168.0
DEFAULT_RETENTION_BYTES = 10 << 30
DEFAULT_ATTRIBUTES = ("Value", "Count")
DEFAULT_KEYFRAME_INTERVAL = 600.0  # docs/archive-format.md: the size per interval, measured

_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)?", re.IGNORECASE)
_UNITS = {"b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}


@dataclass(frozen=True)
class ArchiveSettings:
    directory: str
    retention_hours: float = DEFAULT_RETENTION_HOURS
    retention_bytes: int = DEFAULT_RETENTION_BYTES
    attributes: frozenset[str] | None = frozenset(DEFAULT_ATTRIBUTES)  # None: every numeric attribute
    keyframe_interval: float = DEFAULT_KEYFRAME_INTERVAL  # seconds between keyframes, at most


def size_bytes(v: Any) -> int | None:
    """`10GiB`, `500MB`, `1048576` (bytes) -> bytes; None if it is not a size."""
    if isinstance(v, int) and not isinstance(v, bool):
        return v if v > 0 else None
    m = _SIZE.fullmatch(v.strip()) if isinstance(v, str) else None
    if m is None:
        return None
    n = int(float(m.group(1)) * _UNITS[(m.group(2) or "b").lower()])
    return n if n > 0 else None


_ATTRIBUTES = 'a non-empty list of attribute names'
ARCHIVE = Block(("sidecar", "archive"), "What each poll knew, on disk (one directory per broker), for the backfill "
                "and for looking back.", keys=(
    Key("directory", text("a directory path"), "Where the hourly files go; the sidecar must be able to write it.",
        required=True, fix="give a directory the sidecar may write, one per broker, e.g. /var/lib/kafka-jmx-sidecar/archive"),
    Key("retentionHours", number("hours"), "Files whose hour ended longer ago are deleted.", default=168,
        fix="e.g. retentionHours: 168 (7 days)"),
    Key("retentionSize", custom("a size > 0", lambda v: size_bytes(v) is not None,
                                {"type": ["string", "integer"], "pattern": _SIZE.pattern}, size_bytes),
        "Then the oldest files are deleted while the directory holds more (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB).",
        default="10GiB", field="retention_bytes", fix="e.g. retentionSize: 10GiB (or 500MB, or a number of bytes)"),
    Key("attributes", text_list(_ATTRIBUTES, non_empty=True), 'The numeric attributes kept (gauge values, meter '
        'counts); ["*"]: every numeric attribute.', default=list(DEFAULT_ATTRIBUTES),
        fix='e.g. attributes: [Value, Count], or ["*"] for every numeric attribute'),
    Key("keyframeIntervalSeconds", number("seconds", maximum=3600), "A poll is written whole (a keyframe) at "
        "least this often, so a damaged byte costs at most this much history; shorter costs disk in proportion "
        "(the archive format page has the sizes). At most 3600: a file holds an hour.",
        default=600, field="keyframe_interval",
        fix=f"e.g. keyframeIntervalSeconds: {DEFAULT_KEYFRAME_INTERVAL:g} (a damaged byte costs at most that much "
        "history; shorter costs disk, see docs/archive-format.md)"),
), example="""\
sidecar:
  archive:
    directory: /var/lib/kafka-jmx-sidecar/archive
    retentionHours: 168
    retentionSize: 10GiB
    attributes: [Value, Count]
    keyframeIntervalSeconds: 600
""", shape_fix="write `archive:` followed by indented directory, retentionHours, retentionSize, attributes, "
    "keyframeIntervalSeconds")


def archive_settings(raw: Any, error: Callable[..., Exception]) -> ArchiveSettings:
    """`sidecar.archive` validated; `error(path, problem, fix)` makes the ConfigError (file:line)."""
    values = ARCHIVE.read(raw, error)
    attributes = values.pop("attributes")
    return ArchiveSettings(**values, attributes=None if "*" in attributes else frozenset(attributes))
