"""An immutable, pre-rendered result of one complete poll.

A scrape serves bytes rendered once per poll, never per request. A snapshot holds each format
(Prometheus text 0.0.4, OpenMetrics) compressed only: a body of tens of megabytes at 40,000
partitions compresses about tenfold, and Prometheus always asks for gzip. It is compressed family
by family as it is rendered, so the whole uncompressed body never sits in memory; the rare request
without gzip gets it decompressed piece by piece. Gzip members concatenate into one valid stream:
the body is one member per chunk of families, those the last poll's snapshot rendered alike taken
from it (output/reuse.py), and a response is those members followed by a small member with the
self metrics of that moment.

The poll renders the formats scrapers asked for lately (`formats`); another format is rendered
from the snapshot's families at its first request, once.
"""
from __future__ import annotations

import threading
import time
import zlib
from typing import Iterable, Iterator, Mapping, Sequence

from kafka_jmx_sidecar.exporter.output import exposition, reuse
from kafka_jmx_sidecar.exporter.output.exposition import FORMATS, OPENMETRICS, TEXT  # noqa: F401 (TEXT: for callers)
from kafka_jmx_sidecar.exporter.base.families import Family, of_samples
from kafka_jmx_sidecar.exporter.base.model import Sample

_OM_EOF = b"# EOF\n"
_PIECE = 1 << 20  # bytes of decompressed body per write when a client does not take gzip
_GZIP = 31  # zlib window bits for a gzip wrapper


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
        return b"".join(_decompressed(self._snapshot.members(fmt)))

    def __iter__(self):
        return iter(FORMATS)

    def __len__(self) -> int:
        return len(FORMATS)


class Snapshot:
    """One poll's series, rendered. Its content never changes once made (a format rendered late
    comes from the same families, whose tables are frozen copies)."""

    __slots__ = ("taken_at", "poll_seconds", "series", "timings", "naming", "kept", "_families", "_gzipped", "_sizes",
                 "_previous", "_keys", "_lock")

    def __init__(self, taken_at: float, poll_seconds: float, families: Sequence[Family], naming: str = "0.x",
                 previous: "Snapshot | None" = None):
        self.taken_at = taken_at  # wall-clock time the poll finished (seconds since the epoch)
        self.poll_seconds = poll_seconds
        self.series = sum(len(f) for f in families)
        self.timings: dict[str, float] = {}  # format -> seconds its rendering and compression took
        self.naming = naming  # whose writers: jmx_exporter 0.x's or 1.x's (exposition)
        self._families = families
        self._gzipped: dict[str, list[bytes]] = {}  # format -> its gzip members, in order
        self.kept: dict[str, reuse.Kept] = {}  # format -> what the next poll's snapshot may take from it
        # the last poll's, while this one renders (dropped then: no chain of old snapshots)
        self._previous = previous if previous is not None and previous.naming == naming else None
        self._keys: dict[int, tuple] = {}  # id(family) -> reuse.family_key, for every format
        self._sizes: dict[str, int] = {}
        self._lock = threading.Lock()

    @classmethod
    def render(cls, samples: Sequence[Sample], taken_at: float, poll_seconds: float,
               formats: Iterable[str] = FORMATS) -> "Snapshot":
        return cls.render_families(of_samples(samples), taken_at, poll_seconds, formats)

    @classmethod
    def render_families(cls, families: Sequence[Family], taken_at: float, poll_seconds: float,
                        formats: Iterable[str] = FORMATS, naming: str = "0.x",
                        previous: "Snapshot | None" = None) -> "Snapshot":
        """`previous`: the last poll's snapshot, whose chunks this one takes where they are alike."""
        snap = cls(taken_at, poll_seconds, families, naming, previous)
        for fmt in formats:
            snap.members(fmt)
        snap._previous, snap._keys = None, {}
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
        """The body in `fmt` as gzip (its members joined; rendered now if no poll rendered it)."""
        return b"".join(self.members(fmt))

    def members(self, fmt: str) -> list[bytes]:
        """The body in `fmt` as its gzip members (rendered now if no poll rendered it)."""
        out = self._gzipped.get(fmt)
        if out is None:
            if fmt not in FORMATS:
                raise KeyError(fmt)
            with self._lock:
                out = self._gzipped.get(fmt)
                if out is None:
                    started = time.perf_counter()
                    previous = self._previous.kept.get(fmt) if self._previous is not None else None
                    out, self._sizes[fmt], self.kept[fmt] = reuse.members(
                        self._families, lambda chunk: _render(fmt, chunk, self.naming), previous, self._keys)
                    self.timings[fmt] = time.perf_counter() - started
                    self._gzipped[fmt] = out
        return out

    def size(self, fmt: str) -> int:
        """Length of the uncompressed body in `fmt`."""
        self.members(fmt)
        return self._sizes[fmt]

    @property
    def bodies(self) -> Mapping[str, bytes]:
        return _Bodies(self)


def _decompressed(members: Iterable[bytes]) -> Iterator[bytes]:
    for member in members:
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
    members = snapshot.members(fmt)
    if gzip_wanted:
        z = zlib.compressobj(1, zlib.DEFLATED, _GZIP)
        tail_member = z.compress(tail) + z.flush()
        return sum(map(len, members)) + len(tail_member), (*members, tail_member)
    return snapshot.size(fmt) + len(tail), _chain(_decompressed(members), tail)


def printed(snapshot: Snapshot, fmt: str) -> Iterator[bytes]:
    """The body in `fmt` as a one-shot prints it: uncompressed, no self metrics. A format the poll
    did not render is rendered now and neither compressed nor kept (`scrape` prints one format
    once: compressing it only to inflate it again cost it a second at 40,000 partitions)."""
    if snapshot.rendered(fmt):
        return assemble(snapshot, fmt, b"", gzip_wanted=False)[1]
    text = _render(fmt, snapshot.families, snapshot.naming)
    return _chain((chunk.encode("utf-8") for chunk in text), _OM_EOF if fmt == OPENMETRICS else b"")


def _chain(pieces: Iterator[bytes], last: bytes) -> Iterator[bytes]:
    yield from pieces
    if last:
        yield last
