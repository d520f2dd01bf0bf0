"""Series -> OpenMetrics text that `promtool tsdb create-blocks-from openmetrics` accepts as it is:
every sample timestamped in seconds, each series' samples in time order without repeats, a
`# TYPE` before each family's first sample in a file, `# EOF` last and no blank line anywhere
(promtool silently drops what breaks these rules). Files are cut at a series boundary
once they pass a size, so promtool's memory stays bounded. Runs on the executors, one call per
Spark partition, on rows sorted by (family, series, k0); each file is handed in pieces to Spark's
writer (writing.py), which puts it on the output's file system.

Speed: the text is nearly all sample lines, `<series> <value> <time>`, one per step of each run, so
the innermost loop is a `bytes.join` of the grid's time stamps (formatted once per task) with the
run's prefix between them, kept as bytes (no per-write encoding)."""
from __future__ import annotations

import math
from typing import Iterable, Iterator

from kafka_jmx_sidecar.exporter.backfill.grid import Grid

# Steps whose time stamps a task formats once and keeps (about 50 bytes each): a year at 1 m.
STAMPS_KEPT = 600_000
# Bytes of a file a task hands on at a time (writing.py reads it on the driver and passes it on).
PIECE_BYTES = 4 * 1024 * 1024


def value_text(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return repr(float(v))


def stamp_format(grid: Grid):
    """How the grid's times are written, in seconds as promtool reads them: integers on a grid of
    whole seconds, else every one with three decimals."""
    if grid.start_ms % 1000 == 0 and grid.step_ms % 1000 == 0:
        return lambda t_ms: str(t_ms // 1000)
    return lambda t_ms: f"{t_ms // 1000}.{t_ms % 1000:03d}"


class _Stamps:
    """The grid's time stamps as bytes, step k at index k; formatted once per task when the grid
    is not huge, else per run."""

    def __init__(self, grid: Grid):
        self.grid, self.text = grid, stamp_format(grid)
        self.kept = ([self.text(grid.time_ms(k)).encode() for k in range(grid.count)]
                     if grid.count <= STAMPS_KEPT else None)

    def lines(self, prefix: bytes, first: int, last: int) -> bytes:
        """`prefix<time of step k>\\n` for k in first..last."""
        if self.kept is not None:
            stamps = self.kept[first:last + 1]
        else:
            stamps = [self.text(self.grid.time_ms(k)).encode() for k in range(first, last + 1)]
        return prefix + (b"\n" + prefix).join(stamps) + b"\n"


class _File:
    """One output file being made: its bytes handed on in pieces of about PIECE_BYTES, whole lines
    each, so that a task holds little of it at a time."""

    def __init__(self, name: str):
        self.name, self.parts, self.pending, self.pieces = name, [], 0, 0
        self.bytes = self.series = self.samples = 0
        self.first = self.last = None

    def write(self, data: bytes) -> None:
        self.parts.append(data)
        self.pending += len(data)
        self.bytes += len(data)

    def piece(self, figures: tuple | None = None) -> tuple[str, int, bytes, tuple | None]:
        """(name, the piece's number in the file, its bytes, the file's figures or None)."""
        data, self.parts, self.pending = b"".join(self.parts), [], 0
        self.pieces += 1
        return self.name, self.pieces - 1, data, figures

    def close(self) -> tuple[str, int, bytes, tuple]:
        """The last piece, with the file's figures: (name, bytes, series, samples, first k, last k)."""
        self.write(b"# EOF\n")
        return self.piece((self.name, self.bytes, self.series, self.samples, self.first, self.last))


def file_name(index: int, number: int) -> str:
    return f"metrics-{index:05d}-{number:04d}.om"


def pieces_of(index: int, rows: Iterable, grid: Grid, max_bytes: int, piece_bytes: int) -> Iterator[tuple]:
    """One partition's rows (family, type, series, value, k0, k1) as files `metrics-<index>-<n>.om`,
    in pieces of about piece_bytes (_File.piece): each file's pieces in order, its figures with the last."""
    stamps = _Stamps(grid)
    number = 0
    out: _File | None = None
    family = series = None
    series_bytes = b""
    last_k = -1
    for row in rows:
        k0, k1 = row.k0, row.k1
        if row.series != series:
            if out is not None and out.bytes >= max_bytes:
                yield out.close()
                out = None
            if out is None:
                out = _File(file_name(index, number))
                number += 1
                family = None
            if row.family != family:
                family = row.family
                out.write(f"# TYPE {family} {row.type}\n".encode())
            series = row.series
            series_bytes = series.encode()
            out.series += 1
            last_k = -1
        first = max(k0, last_k + 1)  # an earlier row of the series already holds these steps
        if first > k1:
            continue
        out.write(stamps.lines(series_bytes + b" " + value_text(row.value).encode() + b" ", first, k1))
        if out.pending >= piece_bytes:
            yield out.piece()
        out.samples += k1 + 1 - first
        if out.first is None or first < out.first:
            out.first = first
        if out.last is None or k1 > out.last:
            out.last = k1
        last_k = k1
    if out is not None:
        yield out.close()
