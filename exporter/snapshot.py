"""An immutable, pre-rendered result of one complete poll.

A scrape serves bytes rendered once per poll, never per request: Prometheus text 0.0.4 and
OpenMetrics, each also gzip-compressed. Gzip members concatenate into one valid stream, so a
response is the snapshot's compressed body followed by a small compressed member with the
self metrics of that moment.
"""
from __future__ import annotations

import gzip
from dataclasses import dataclass
from typing import Sequence

from exporter import exposition
from exporter.model import Sample

TEXT = "text"
OPENMETRICS = "openmetrics"
_OM_EOF = b"# EOF\n"


@dataclass(frozen=True)
class Snapshot:
    taken_at: float  # wall-clock time the poll finished (seconds since the epoch)
    poll_seconds: float
    series: int
    bodies: dict  # format -> rendered bytes, without self metrics (and without OpenMetrics' EOF)
    gzipped: dict  # format -> gzip member of the body

    @classmethod
    def render(cls, samples: Sequence[Sample], taken_at: float, poll_seconds: float) -> "Snapshot":
        text = exposition.render_text(samples)
        om = exposition.render_openmetrics(samples)
        if om.endswith(_OM_EOF):
            om = om[: -len(_OM_EOF)]
        bodies = {TEXT: text, OPENMETRICS: om}
        # Level 1: a 50 MB body compresses ~10x in well under a second; higher levels gain little.
        gzipped = {fmt: gzip.compress(body, compresslevel=1) for fmt, body in bodies.items()}
        return cls(taken_at, poll_seconds, len(samples), bodies, gzipped)

    @classmethod
    def empty(cls) -> "Snapshot":
        return cls(0.0, 0.0, 0, {TEXT: b"", OPENMETRICS: b""},
                   {TEXT: gzip.compress(b""), OPENMETRICS: gzip.compress(b"")})


def assemble(snapshot: Snapshot, fmt: str, self_metrics: bytes, gzip_wanted: bool) -> list[bytes]:
    """The response body as chunks: snapshot body, then this moment's self metrics."""
    tail = self_metrics + (_OM_EOF if fmt == OPENMETRICS else b"")
    if gzip_wanted:
        return [snapshot.gzipped[fmt], gzip.compress(tail, compresslevel=1)]
    return [snapshot.bodies[fmt], tail]
