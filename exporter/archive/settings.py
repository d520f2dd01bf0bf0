"""`sidecar.archive`: where `serve` keeps what each poll knew, and for how long.

    sidecar:
      archive:
        directory: /var/lib/kafka-jmx-sidecar/archive   # required; one directory per broker
        retentionHours: 168        # files whose hour ended longer ago are deleted (default 7 days)
        retentionSize: 10GiB       # then the oldest files while the directory holds more (default 10GiB)
        attributes: [Value, Count] # the numeric attributes kept (gauge values, meter counts); ["*"]: all
        keyframeIntervalSeconds: 600  # a poll written whole at least this often: what a damaged byte can cost

Without the `archive` key nothing is archived.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping

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


def archive_settings(raw: Any, error: Callable[..., Exception]) -> ArchiveSettings:
    """`sidecar.archive` validated; `error(path, problem, fix)` makes the ConfigError (file:line)."""
    where = ("sidecar", "archive")
    if not isinstance(raw, Mapping):
        raise error(where, f"must be a mapping, got {type(raw).__name__}",
                    "write `archive:` followed by indented directory, retentionHours, retentionSize, attributes, "
                    "keyframeIntervalSeconds")
    known = ("directory", "retentionHours", "retentionSize", "attributes", "keyframeIntervalSeconds")
    for key in raw:
        if key not in known:
            raise error(where + (key,), "unknown setting", f"use one of {', '.join(known)}")
    directory = raw.get("directory")
    if not isinstance(directory, str) or not directory.strip():
        raise error(where + ("directory",), f"must be a directory path, got {directory!r}",
                    "give a directory the sidecar may write, one per broker, e.g. /var/lib/kafka-jmx-sidecar/archive")
    hours = raw.get("retentionHours", DEFAULT_RETENTION_HOURS)
    if isinstance(hours, bool) or not isinstance(hours, (int, float)) or hours <= 0:
        raise error(where + ("retentionHours",), f"must be a number of hours > 0, got {hours!r}",
                    "e.g. retentionHours: 168 (7 days)")
    size = raw.get("retentionSize", DEFAULT_RETENTION_BYTES)
    nbytes = size_bytes(size)
    if nbytes is None:
        raise error(where + ("retentionSize",), f"must be a size > 0, got {size!r}",
                    "e.g. retentionSize: 10GiB (or 500MB, or a number of bytes)")
    attributes = raw.get("attributes", list(DEFAULT_ATTRIBUTES))
    if (not isinstance(attributes, list) or not attributes
            or not all(isinstance(a, str) and a for a in attributes)):
        raise error(where + ("attributes",), f"must be a non-empty list of attribute names, got {attributes!r}",
                    'e.g. attributes: [Value, Count], or ["*"] for every numeric attribute')
    interval = raw.get("keyframeIntervalSeconds", DEFAULT_KEYFRAME_INTERVAL)
    if isinstance(interval, bool) or not isinstance(interval, (int, float)) or not 0 < interval <= 3600:
        raise error(where + ("keyframeIntervalSeconds",),
                    f"must be a number of seconds > 0 and at most 3600 (a file holds an hour), got {interval!r}",
                    f"e.g. keyframeIntervalSeconds: {DEFAULT_KEYFRAME_INTERVAL:g} (a damaged byte costs at most "
                    "that much history; shorter costs disk, see docs/archive-format.md)")
    return ArchiveSettings(directory, float(hours), nbytes, None if "*" in attributes else frozenset(attributes),
                           float(interval))
