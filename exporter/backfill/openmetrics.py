"""Series -> OpenMetrics text that `promtool tsdb create-blocks-from openmetrics` accepts as it is:
every sample timestamped in seconds, each series' samples in time order without repeats, a
`# TYPE` before each family's first sample in a file, `# EOF` last and no blank line anywhere
(toolchain.md lists what promtool silently drops otherwise). Files are cut at a series boundary
once they pass a size, so promtool's memory stays bounded. Runs on the executors, one call per
Spark partition, on rows sorted by (family, series, k0)."""
from __future__ import annotations

import math
import os
from typing import Iterable, Iterator

from exporter.backfill.grid import Grid


def value_text(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return repr(float(v))


def sample_block(grid: Grid):
    """(prefix, first k, last k) -> the lines `prefix<time of step k>` for k in first..last, built
    by C-level loops (map, join): this is the job's innermost loop, once per sample."""
    if grid.start_ms % 1000 == 0 and grid.step_ms % 1000 == 0:
        start, step = grid.start_ms // 1000, grid.step_ms // 1000

        def block(prefix: str, first: int, last: int) -> str:
            times = range(start + first * step, start + (last + 1) * step, step)
            return prefix + ("\n" + prefix).join(map(str, times)) + "\n"
        return block

    def block_ms(prefix: str, first: int, last: int) -> str:
        times = range(grid.start_ms + first * grid.step_ms, grid.start_ms + (last + 1) * grid.step_ms, grid.step_ms)
        return "".join([f"{prefix}{t // 1000}.{t % 1000:03d}\n" for t in times])
    return block_ms


class _File:
    def __init__(self, path: str):
        self.path, self.f = path, open(path, "w", encoding="utf-8", newline="\n")
        self.bytes = self.series = self.samples = 0
        self.first = self.last = None

    def write(self, text: str) -> None:
        self.f.write(text)
        self.bytes += len(text.encode("utf-8")) if not text.isascii() else len(text)

    def close(self) -> tuple:
        self.write("# EOF\n")
        self.f.close()
        return (os.path.basename(self.path), self.bytes, self.series, self.samples, self.first, self.last)


def write_part(index: int, rows: Iterable, out_dir: str, grid: Grid, max_bytes: int) -> Iterator[tuple]:
    """Write one partition's rows (family, type, series, value, k0, k1) to files
    `metrics-<index>-<n>.om`; yields each file's (name, bytes, series, samples, first k, last k)."""
    block = sample_block(grid)
    number = 0
    out: _File | None = None
    family = series = None
    last_k = -1
    for row in rows:
        if row.series != series:
            if out is not None and out.bytes >= max_bytes:
                yield out.close()
                out = None
            if out is None:
                out = _File(os.path.join(out_dir, f"metrics-{index:05d}-{number:04d}.om"))
                number += 1
                family = None
            if row.family != family:
                family = row.family
                out.write(f"# TYPE {family} {row.type}\n")
            series = row.series
            out.series += 1
            last_k = -1
        first = max(row.k0, last_k + 1)  # an earlier row of the series already holds these steps
        if first > row.k1:
            continue
        prefix = f"{series} {value_text(row.value)} "
        out.write(block(prefix, first, row.k1))
        out.samples += row.k1 + 1 - first
        out.first = first if out.first is None else min(out.first, first)
        out.last = row.k1 if out.last is None else max(out.last, row.k1)
        last_k = row.k1
    if out is not None:
        yield out.close()
