"""The time grid of a backfill: steps `start + k * step` for k = 0 .. count-1, in milliseconds, and
which steps a state observed at one time holds for (from its observation until the next one)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone

_DURATION = re.compile(r"^(?:(\d+)h)?(?:(\d+)m(?!s))?(?:(\d+)s)?(?:(\d+)ms)?$")

# An ISO-8601 date and time: `:` or `-` between hour, minute and second (file names cannot hold
# `:` everywhere), optional fraction and zone (none: UTC).
ISO_TIME = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[T_ ](\d{2})[:-]?(\d{2})[:-]?(\d{2})(?:[.,](\d{1,9}))?(Z|[+-]\d{2}:?\d{2})?")


def parse_duration_ms(text: str) -> int:
    """Prometheus durations: 15s, 1m, 1m30s, 500ms, 1h. Raises ValueError saying what is expected."""
    m = _DURATION.match(text.strip())
    if not text.strip() or m is None or not any(m.groups()):
        raise ValueError(f"not a duration: {text!r} (expected e.g. 15s, 1m, 500ms)")
    h, mi, s, ms = (int(g or 0) for g in m.groups())
    total = ((h * 60 + mi) * 60 + s) * 1000 + ms
    if total <= 0:
        raise ValueError(f"not a positive duration: {text!r}")
    return total


def iso_ms(m: re.Match) -> int:
    """Milliseconds since the epoch of an ISO_TIME match."""
    year, month, day, hour, minute, second, fraction, zone = m.groups()
    tz = timezone.utc
    if zone and zone != "Z":
        sign = 1 if zone[0] == "+" else -1
        digits = zone[1:].replace(":", "")
        from datetime import timedelta
        tz = timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:])))
    when = datetime(int(year), int(month), int(day), int(hour), int(minute), int(second), tzinfo=tz)
    millis = int((fraction or "0").ljust(3, "0")[:3])
    return int(when.timestamp()) * 1000 + millis


def parse_time_ms(text: str) -> int:
    """--start/--end: an ISO-8601 time (UTC unless it says) or seconds since the epoch."""
    text = text.strip()
    try:
        return round(float(text) * 1000)
    except ValueError:
        pass
    m = ISO_TIME.fullmatch(text)
    if m is None:
        raise ValueError(f"not a time: {text!r} (expected ISO-8601 such as 2026-11-21T22:36:27Z, "
                         "or seconds since the epoch)")
    return iso_ms(m)


@dataclass(frozen=True)
class Grid:
    start_ms: int
    step_ms: int
    count: int  # steps; the last is at start + (count-1) * step <= end

    @classmethod
    def between(cls, start_ms: int, end_ms: int, step_ms: int) -> "Grid":
        if end_ms < start_ms:
            raise ValueError("the end is before the start")
        return cls(start_ms, step_ms, (end_ms - start_ms) // step_ms + 1)

    def time_ms(self, k: int) -> int:
        return self.start_ms + k * self.step_ms

    def first_step_from(self, t_ms: int) -> int:
        """The first step at or after t (may be `count`: none)."""
        if t_ms <= self.start_ms:
            return 0
        return min(self.count, -(-(t_ms - self.start_ms) // self.step_ms))

    def steps_held(self, t_ms: int, next_ms: int | None) -> tuple[int, int]:
        """(first, last) step a state observed at t holds for: until the next observation (not
        included), or to the end of the grid. first > last: no step falls in between."""
        first = self.first_step_from(t_ms)
        last = self.count - 1 if next_ms is None else self.first_step_from(next_ms) - 1
        return first, last


def intervals(times_ms: list[int], grid: Grid) -> dict[int, tuple[int, int]]:
    """Each distinct observation time -> the steps it holds for (those holding none left out)."""
    ordered = sorted(set(times_ms))
    out = {}
    for i, t in enumerate(ordered):
        first, last = grid.steps_held(t, ordered[i + 1] if i + 1 < len(ordered) else None)
        if first <= last:
            out[t] = (first, last)
    return out


def common_steps(held: dict[str, list[tuple[int, int]]]) -> list[tuple[int, int]]:
    """The steps (as ranges first..last) that every source holds: `held` maps each source (a
    broker's archive) to the steps its observations hold. A step one source does not hold (its
    sidecar was down, or not yet started) is in no range: what the sources say together is not
    whole there."""
    common: list[tuple[int, int]] | None = None
    for ranges in held.values():
        merged: list[tuple[int, int]] = []
        for first, last in sorted(r for r in ranges if r[0] <= r[1]):
            if merged and first <= merged[-1][1] + 1:
                merged[-1] = (merged[-1][0], max(merged[-1][1], last))
            else:
                merged.append((first, last))
        if common is None:
            common = merged
            continue
        both, i, j = [], 0, 0
        while i < len(common) and j < len(merged):
            first, last = max(common[i][0], merged[j][0]), min(common[i][1], merged[j][1])
            if first <= last:
                both.append((first, last))
            if common[i][1] < merged[j][1]:
                i += 1
            else:
                j += 1
        common = both
    return common or []
