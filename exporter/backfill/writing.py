"""What the executors write into the partial output: the OpenMetrics files (or Parquet) and the
rejects, through Spark's own writers, so they land on the output's file system (any Spark can
write: a local disk, HDFS, an object store) without it being mounted on the workers.

Spark's writers commit each task's files only when the task succeeds: a task lost with its
executor (a worker gone) leaves nothing behind, and its retry writes the same bytes. They name
files after the task (`part-...`); the driver renames each into the name the output gives it
(`metrics-<part>-<n>.om`, `samples-<n>.parquet`, `rejects.jsonl`), then removes the writers'
directories.
"""
from __future__ import annotations

import json
from urllib.parse import unquote

from kafka_jmx_sidecar.exporter.backfill.grid import Grid
from kafka_jmx_sidecar.exporter.backfill.output import REJECTS
from kafka_jmx_sidecar.exporter.backfill.summary import Written

# Inside the partial output while Spark writes: its directories (removed once renamed out of) and,
# per task, a file of the figures of the OpenMetrics files it wrote (a JSON array).
FILES, PARQUET, REJECTED = ".files", ".parquet", ".rejects"
FIGURES = "_figures-"


def written_bytes(storage, partial: str) -> int:
    """The bytes of output files in the partial output so far: Spark's part files while their
    tasks write them, the files renamed out of them after (not the writers' own files, the tasks'
    figures or the checksum files of a local disk): what the summary's `bytes` counts in the end.
    Spark's committers move a part file, keeping its name, from a task attempt's directory up to the
    writer's while the walk may meet it in both: each name counts once."""
    sizes: dict[str, int] = {}
    for uri, size in storage.files_under(partial):
        name = uri.rsplit("/", 1)[-1]
        if name.startswith(("part-", "metrics-", "samples-")) and f"/file={FIGURES}" not in uri:
            sizes[name] = max(size, sizes.get(name, 0))
    return sum(sizes.values())


def _parts(storage, directory: str) -> list[str]:
    """The data files a Spark writer wrote into `directory` (not its `_SUCCESS` marker)."""
    return [n for n in storage.names(directory) if n.startswith("part-")]


def write_openmetrics(ordered, storage, partial: str, grid: Grid, max_bytes: int) -> Written:
    """The series, sorted in their partitions, as OpenMetrics files: made by their task in pieces of
    whole lines (openmetrics.pieces_of) and written by Spark's text writer, a directory per file."""
    from pyspark.sql import functions as F

    from kafka_jmx_sidecar.exporter.backfill import openmetrics

    pieces_of, piece_bytes = openmetrics.pieces_of, openmetrics.PIECE_BYTES

    def part(index, rows):
        figures = []
        for name, number, data, figure in pieces_of(index, rows, grid, max_bytes, piece_bytes):
            if figure is not None:
                figures.append(figure)
            yield name, number, data[:-1]  # the text writer ends every row with its newline
        yield f"{FIGURES}{index:05d}", 0, json.dumps(figures).encode()

    spark = ordered.sparkSession
    pieces = spark.createDataFrame(ordered.rdd.mapPartitionsWithIndex(part), "file string, piece int, content binary")
    target = f"{partial}/{FILES}"
    # the writer wants the rows of one file together; sorted by (file, piece), they come in order too
    # (a sort spills to disk past its memory, so a task never holds a whole file)
    pieces.sortWithinPartitions("file", "piece").select("file", F.col("content").cast("string").alias("value")) \
        .write.partitionBy("file").option("compression", "none").text(target)
    figures = []
    for directory in storage.names(target):
        if not directory.startswith("file="):
            continue
        name, (written,) = unquote(directory[len("file="):]), _parts(storage, f"{target}/{directory}")
        if name.startswith(FIGURES):
            figures += json.loads(storage.read(f"{target}/{directory}/{written}"))
        else:
            storage.rename(f"{target}/{directory}/{written}", f"{partial}/{name}")
    storage.delete(target)
    figures.sort()
    firsts = [w[4] for w in figures if w[4] is not None]
    lasts = [w[5] for w in figures if w[5] is not None]
    return Written([w[0] for w in figures], [{"name": w[0], "bytes": w[1], "series": w[2], "samples": w[3]}
                                             for w in figures],
                   sum(w[2] for w in figures), sum(w[3] for w in figures),
                   min(firsts) if firsts else None, max(lasts) if lasts else None)


def write_parquet(ordered, storage, partial: str, grid: Grid, partitions: int) -> Written:
    """The samples as Parquet (family, type, series, value, timestamp_ms): `samples-<n>.parquet`."""
    from pyspark.sql import functions as F

    k = F.explode(F.sequence(F.col("k0"), F.col("k1"))).alias("k")
    samples = ordered.select("family", "type", "series", "value", k)
    samples = samples.dropDuplicates(["series", "k"]).select(
        "family", "type", "series", "value", (F.lit(grid.start_ms) + F.col("k") * F.lit(grid.step_ms)).alias("timestamp_ms"))
    target = f"{partial}/{PARQUET}"
    samples.repartition(partitions, "series").sortWithinPartitions("family", "series", "timestamp_ms") \
        .write.parquet(target)
    out_files, entries = [], []
    for i, name in enumerate(sorted(n for n in _parts(storage, target) if n.endswith(".parquet"))):
        final = f"samples-{i:05d}.parquet"
        storage.rename(f"{target}/{name}", f"{partial}/{final}")
        out_files.append(final)
        entries.append({"name": final, "bytes": storage.size(f"{partial}/{final}")})
    storage.delete(target)
    figures = samples.agg(F.countDistinct("series"), F.count(F.lit(1)), F.min("timestamp_ms"), F.max("timestamp_ms")).first()
    first = None if figures[2] is None else (figures[2] - grid.start_ms) // grid.step_ms
    last = None if figures[3] is None else (figures[3] - grid.start_ms) // grid.step_ms
    return Written(out_files, entries, figures[0], figures[1], first, last)


def write_rejects(rejects, storage, partial: str) -> None:
    """Every rejected line (file, line, reason, detail, text), as JSON Lines sorted by file and
    line (written by one task)."""
    from pyspark.sql import functions as F

    target = f"{partial}/{REJECTED}"
    rejects.repartition(1).sortWithinPartitions("file", "line", "reason").select(
        F.to_json(F.struct("file", "line", "reason", "detail", "text")).alias("value")).write.text(target)
    parts = sorted(_parts(storage, target))
    if len(parts) == 1:
        storage.rename(f"{target}/{parts[0]}", f"{partial}/{REJECTS}")
    else:  # none (Spark may write no file for no row)
        storage.write(f"{partial}/{REJECTS}", b"".join(storage.read(f"{target}/{p}") for p in parts))
    storage.delete(target)
