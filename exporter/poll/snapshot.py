"""An immutable, pre-rendered result of one complete poll.

A scrape serves bytes rendered once per poll, never per request. A snapshot holds each format
(Prometheus text 0.0.4, OpenMetrics) as one gzip member only: a body of tens of megabytes at
40,000 partitions compresses about tenfold, and Prometheus always asks for gzip. It is compressed
family by family as it is rendered, so the whole uncompressed body never sits in memory; the rare
request without gzip gets it decompressed piece by piece. Gzip members concatenate into one valid
stream, so a response is the snapshot's member followed by a small member with the self metrics
of that moment.

The poll renders the formats scrapers asked for lately (`formats`); another format is rendered
from the snapshot's families at its first request, once.
"""
from __future__ import annotations

import threading
import time
import zlib
from typing import Iterable, Iterator, Mapping, Sequence

from kafka_jmx_sidecar.exporter.output import exposition
from kafka_jmx_sidecar.exporter.output.exposition import FORMATS, OPENMETRICS, TEXT  # noqa: F401 (TEXT: for callers)
from kafka_jmx_sidecar.exporter.base.families import Family, of_samples
from kafka_jmx_sidecar.exporter.base.model import Sample

_OM_EOF = b"# EOF\n"
_PIECE = 1 << 20  # bytes of decompressed body per write when a client does not take gzip
_GZIP = 31  # zlib window bits for a gzip wrapper


def gzip_member(chunks: Iterable[str]) -> tuple[bytes, int]:
    """One gzip member of the UTF-8 text `chunks`, and the uncompressed size. Level 1: a 50 MB
    body compresses ~10x in well under a second; higher levels gain little."""
    z = zlib.compressobj(1, zlib.DEFLATED, _GZIP)
    out = []
    size = 0
    for chunk in chunks:
        data = chunk.encode("utf-8")
        size += len(data)
        out.append(z.compress(data))
    out.append(z.flush())
    return b"".join(out), size


def _render(fmt: str, families: Sequence[Family], naming: str) -> Iterator[str]:
    if fmt == OPENMETRICS:  # the EOF follows the self metrics
        return exposition.iter_openmetrics_families(families, eof=False, naming=naming)
    return exposition.iter_text_families(families, naming)


class _Bodies(Mapping):
    """`snapshot.bodies[fmt]`: the uncompressed body (decompressed on access; for tests and tools)."""

    def __init__(self, snapshot: "Snapshot"):
        self._snapshot = snapshot

    def __getitem__(self, fmt: str) -> bytes:
        if fmt not in FORMATS:
            raise KeyError(fmt)
        return zlib.decompress(self._snapshot.gzipped(fmt), _GZIP)

    def __iter__(self):
        return iter(FORMATS)

    def __len__(self) -> int:
        return len(FORMATS)


class Snapshot:
    """One poll's series, rendered. Its content never changes once made (a format rendered late
    comes from the same families, whose tables are frozen copies)."""

    __slots__ = ("taken_at", "poll_seconds", "series", "timings", "naming", "_families", "_gzipped", "_sizes", "_lock")

    def __init__(self, taken_at: float, poll_seconds: float, families: Sequence[Family], naming: str = "0.x"):
        self.taken_at = taken_at  # wall-clock time the poll finished (seconds since the epoch)
        self.poll_seconds = poll_seconds
        self.series = sum(len(f) for f in families)
        self.timings: dict[str, float] = {}  # format -> seconds its rendering and compression took
        self.naming = naming  # whose writers: jmx_exporter 0.x's or 1.x's (exposition)
        self._families = families
        self._gzipped: dict[str, bytes] = {}
        self._sizes: dict[str, int] = {}
        self._lock = threading.Lock()

    @classmethod
    def render(cls, samples: Sequence[Sample], taken_at: float, poll_seconds: float,
               formats: Iterable[str] = FORMATS) -> "Snapshot":
        return cls.render_families(of_samples(samples), taken_at, poll_seconds, formats)

    @classmethod
    def render_families(cls, families: Sequence[Family], taken_at: float, poll_seconds: float,
                        formats: Iterable[str] = FORMATS, naming: str = "0.x") -> "Snapshot":
        snap = cls(taken_at, poll_seconds, families, naming)
        for fmt in formats:
            snap.gzipped(fmt)
        return snap

    @classmethod
    def empty(cls) -> "Snapshot":
        return cls.render((), 0.0, 0.0)

    @property
    def families(self) -> Sequence[Family]:
        """The poll's families, as rendered (the push of exporter/otlp reads them too)."""
        return self._families

    def rendered(self, fmt: str) -> bool:
        return fmt in self._gzipped

    def gzipped(self, fmt: str) -> bytes:
        """The body in `fmt` as one gzip member (rendered now if no poll rendered it)."""
        member = self._gzipped.get(fmt)
        if member is None:
            if fmt not in FORMATS:
                raise KeyError(fmt)
            with self._lock:
                member = self._gzipped.get(fmt)
                if member is None:
                    started = time.perf_counter()
                    member, self._sizes[fmt] = gzip_member(_render(fmt, self._families, self.naming))
                    self.timings[fmt] = time.perf_counter() - started
                    self._gzipped[fmt] = member
        return member

    def size(self, fmt: str) -> int:
        """Length of the uncompressed body in `fmt`."""
        self.gzipped(fmt)
        return self._sizes[fmt]

    @property
    def bodies(self) -> Mapping[str, bytes]:
        return _Bodies(self)


def _decompressed(member: bytes) -> Iterator[bytes]:
    z = zlib.decompressobj(_GZIP)
    data = member
    while data:
        piece = z.decompress(data, _PIECE)
        if piece:
            yield piece
        data = z.unconsumed_tail
    rest = z.flush()
    if rest:
        yield rest


def assemble(snapshot: Snapshot, fmt: str, self_metrics: bytes, gzip_wanted: bool) -> tuple[int, Iterable[bytes]]:
    """The response body as (length, chunks): the snapshot body, then this moment's self metrics."""
    tail = self_metrics + (_OM_EOF if fmt == OPENMETRICS else b"")
    member = snapshot.gzipped(fmt)
    if gzip_wanted:
        z = zlib.compressobj(1, zlib.DEFLATED, _GZIP)
        tail_member = z.compress(tail) + z.flush()
        return len(member) + len(tail_member), (member, tail_member)
    return snapshot.size(fmt) + len(tail), _chain(_decompressed(member), tail)


def _chain(pieces: Iterator[bytes], last: bytes) -> Iterator[bytes]:
    yield from pieces
    if last:
        yield last
