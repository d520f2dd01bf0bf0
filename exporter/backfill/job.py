"""One backfill run: inputs -> states -> judged MBean values -> the rules' series -> files, and the
summary (files, rows read, rejects by reason, series, samples, time range). Only small aggregates
ever reach the driver (counts, the observation times, each output file's figures)."""
from __future__ import annotations

import json
import os
import re
import sys
import time
from dataclasses import dataclass, field
from importlib import resources

from kafka_jmx_sidecar.exporter.backfill import archive_input, describe_dumps
from kafka_jmx_sidecar.exporter.backfill.grid import Grid, intervals, parse_duration_ms, parse_time_ms
from kafka_jmx_sidecar.exporter.backfill.output import REJECTS, partial_dir, place, promtool_import, write_manifest
from kafka_jmx_sidecar.mbeans.health import PROFILES

DEFAULT_MAX_FILE_BYTES = 64 * 1024 * 1024
SAMPLES_PER_PARTITION = 2_000_000  # about 100 MB of text per Spark task
# The rules for the cluster-wide view that describe dumps give (the sidecar's cluster mode names it so).
CLUSTER_RULES = "kafka-cluster.yml"
# The rules for one broker's series that an archive gives (the sidecar's default).
HEALTH_RULES = "kafka-health.yml"
DEFAULT_SEMANTICS = "kafka-3.7"
EXIT_REJECTS = 3  # the run finished, but more input was rejected than --max-reject-ratio allows


@dataclass
class Options:
    inputs: list[str]
    output: str
    config: str | None = None
    semantics: str | None = None  # None: the config's sidecar.recompute.semantics, else kafka-3.7
    start: str | None = None
    end: str | None = None
    step: str = "15s"
    master: str | None = None
    conf: list[str] = field(default_factory=list)
    format: str = "openmetrics"
    import_dir: str | None = None
    describe_time_regex: str | None = None
    default_min_isr: int = 1
    max_reject_ratio: float = 0.0
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    broker_label: str | None = None  # archives: the label naming each series' broker (several brokers)
    max_hold: str = "5m"  # archives: the longest a poll's values hold when no poll follows sooner


class UsageError(ValueError):
    """A bad option or input: the message says which and what to do."""


_BEGAN = time.monotonic()


def _log(message: str) -> None:
    print(f"backfill [{time.monotonic() - _BEGAN:7.1f} s]: {message}", file=sys.stderr, flush=True)


def _load_rules(path: str | None, shipped_name: str = CLUSTER_RULES):
    from kafka_jmx_sidecar.exporter.rule_engine.config import load_config

    if path is not None:
        return load_config(path)
    with resources.as_file(resources.files("kafka_jmx_sidecar.rules").joinpath(shipped_name)) as shipped:
        return load_config(shipped)


def _configured_recompute(config, path: str | None):
    """The configuration's `sidecar.recompute` (None without --config or without the key): read
    once, for the archives' recompute, the profile and the dumps' min ISR."""
    if path is None:
        return None
    from kafka_jmx_sidecar.exporter.config.sidecar import sidecar_settings

    return sidecar_settings(config).recompute


def _recompute_settings(opts: Options, configured):
    """The recompute an archive's polls go through: the configuration's `sidecar.recompute`
    (`configured`) as the live sidecar ran it (--semantics, when given, chooses the profile); a
    configuration without it recomputes nothing, as live, unless --semantics asks; without
    --config, the default mode (`outdated`) under --semantics."""
    import dataclasses

    from kafka_jmx_sidecar.exporter.recompute.settings import RecomputeSettings

    if configured is None:
        if opts.config is not None and opts.semantics is None:
            return None
        return RecomputeSettings(semantics=opts.semantics or DEFAULT_SEMANTICS)
    return dataclasses.replace(configured, semantics=opts.semantics) if opts.semantics else configured


def run(opts: Options) -> int:
    began = time.monotonic()
    if opts.semantics is not None and opts.semantics not in PROFILES:
        raise UsageError(f"--semantics {opts.semantics}: one of {', '.join(PROFILES)}")
    for option, value, parse in (("--step", opts.step, parse_duration_ms), ("--start", opts.start, parse_time_ms),
                                 ("--end", opts.end, parse_time_ms), ("--max-hold", opts.max_hold, parse_duration_ms)):
        try:
            if value is not None:
                parse(value)
        except ValueError as e:
            raise UsageError(f"{option}: {e}") from None
    step_ms = parse_duration_ms(opts.step)
    regex = None
    if opts.describe_time_regex:
        try:
            regex = re.compile(opts.describe_time_regex)
        except re.error as e:
            raise UsageError(f"--describe-time-regex: {e}") from None
    listed = describe_dumps.list_dumps(opts.inputs, regex)
    if not listed:
        raise UsageError("--input: no files found")
    # told apart by content: an archive file starts with its segment header
    archives = [d.path for d in listed if archive_input.is_archive(d.path)]
    dumps = [d for d in listed if d.path not in set(archives)]
    sources = sorted({archive_input.source_of(a) for a in archives})
    if len(sources) > 1 and not opts.broker_label:
        raise UsageError(f"--input: the archives of {len(sources)} brokers ({', '.join(sources[:3])}"
                         f"{', ...' if len(sources) > 3 else ''}) would name the same series; set --broker-label "
                         "NAME (a label holding each series' broker id) or backfill one broker's archive at a time")
    # a bad file raises ConfigError naming file:line and key
    dump_config = _load_rules(opts.config) if dumps else None
    archive_config = _load_rules(opts.config, HEALTH_RULES) if archives else None
    configured = _configured_recompute(dump_config or archive_config, opts.config)
    dump_min_isr = _configured_min_isr(configured) if dumps else None
    recompute = _recompute_settings(opts, configured) if archives else None
    semantics = opts.semantics or (configured.semantics if configured is not None else None) or DEFAULT_SEMANTICS
    profile = PROFILES[semantics]
    partial = partial_dir(opts.output)
    try:
        code, summary = _run(opts, profile, step_ms, dump_config, dumps, partial,
                             archives, archive_config, recompute, dump_min_isr)
        place(partial, opts.output)
    except BaseException:
        import shutil

        shutil.rmtree(partial, ignore_errors=True)
        raise
    summary["seconds"] = round(time.monotonic() - began, 1)
    _print_summary(summary)
    if opts.import_dir and opts.format == "openmetrics":
        _log(f"importing {len(summary['output_files'])} files with promtool into {opts.import_dir}")
        promtool_import(opts.output, summary["output_files"], opts.import_dir)
    return code


def _run(opts, profile, step_ms, config, dumps, partial, archives=(), archive_config=None,
         recompute=None, dump_min_isr=None) -> tuple[int, dict]:
    from pyspark.sql import functions as F

    from kafka_jmx_sidecar.exporter.backfill.naming import Naming, named_series
    from kafka_jmx_sidecar.exporter.backfill.session import conf_pairs, spark_session

    spark = spark_session(opts.master, conf_pairs(opts.conf))
    lines_read = states_read = polls_read = 0
    times: set[int] = set()
    by_file_reason: dict[tuple[str, str], int] = {}
    rows = archive_rows = None
    rejects = []
    if dumps:
        rows = _read_dumps(spark, opts, dumps, dump_min_isr)
        # one small aggregate for the summary: per kind, time, file and reason, rows and lines
        tally = rows.groupBy("kind", "t", "file", "reason").agg(F.count(F.lit(1)).alias("n"), F.sum("line").alias("lines"))
        for r in tally.collect():
            if r.kind == "f":
                lines_read += r.lines or 0
            elif r.kind == "s":
                states_read += r.n
                times.add(r.t)
            else:
                by_file_reason[(r.file, r.reason)] = by_file_reason.get((r.file, r.reason), 0) + r.n
        rejects.append(rows.where("kind = 'r'").select("file", "line", "reason", "detail", "text"))
    poll_times: dict[str, list[int]] = {}
    if archives:
        naming = Naming(archive_config)
        replay = archive_input.Replay(naming.config, recompute, parse_duration_ms(opts.max_hold) / 1000)
        archive_rows = _read_archives(spark, archives, replay)
        # small aggregates: every poll's time per broker's archive (a day of 15 s polls: 5,760 a
        # broker), lines and rejects per file
        tally = archive_rows.where("kind != 'v'").groupBy("kind", "source", "t0", "file", "reason").agg(
            F.count(F.lit(1)).alias("n"), F.sum("line").alias("lines"), F.sum("partitions").alias("partitions"))
        for r in tally.collect():
            if r.kind == "f":
                lines_read += r.lines or 0
            elif r.kind == "p":
                polls_read += r.n
                states_read += r.partitions or 0
                poll_times.setdefault(r.source, []).append(round(r.t0 * 1000))
            else:
                by_file_reason[(r.file, r.reason)] = by_file_reason.get((r.file, r.reason), 0) + r.n
        rejects.append(archive_rows.where("kind = 'r'").select("file", "line", "reason", "detail", "text"))
    rejected = [(f, reason, n) for (f, reason), n in sorted(by_file_reason.items())]
    all_times = times | {t for ts in poll_times.values() for t in ts}
    _log(f"read {lines_read} lines: {states_read} partition states ({polls_read} archived polls), "
         f"{sum(c for _, _, c in rejected)} rejected")

    first_given = dumps[0].time_ms if dumps else None
    start_ms = parse_time_ms(opts.start) if opts.start else (min(all_times) if all_times else first_given)
    end_ms = parse_time_ms(opts.end) if opts.end else (max(all_times) if all_times else
                                                       (dumps[-1].time_ms if dumps else None))
    if start_ms is None or end_ms is None:
        raise UsageError("--input: no archived poll could be read (see the rejects above); "
                         "give --start and --end to write an empty output anyway")
    if end_ms < start_ms:
        raise UsageError(f"--end is before --start ({end_ms / 1000} < {start_ms / 1000})")
    grid = Grid.between(start_ms, end_ms, step_ms)
    parts = []
    if dumps:
        from kafka_jmx_sidecar.exporter.backfill.cluster_rows import cluster_rows

        held = intervals(sorted(times), grid)
        _log(f"grid: {grid.count} steps of {step_ms / 1000:g} s; {len(held)} of {len(times)} dump times hold a step")
        held_df = spark.createDataFrame([(t, k0, k1) for t, (k0, k1) in sorted(held.items())] or [(0, 0, -1)],
                                        "t long, k0 long, k1 long")
        states = rows.where("kind = 's'").join(F.broadcast(held_df), "t")
        parts.append(named_series(cluster_rows(states, profile), Naming(config)))
    if archives:
        hold_ms = parse_duration_ms(opts.max_hold)
        ends = [(source, t, end) for source, ts in sorted(poll_times.items()) for t, end in _poll_ends(ts, hold_ms)]
        ends_df = spark.createDataFrame(ends or [("", 0, 0)], "source string, t long, until long")
        runs = archive_rows.where("kind = 'v'").withColumn("t", F.round(F.col("t1") * 1000).cast("long")) \
            .join(F.broadcast(ends_df), ["source", "t"])
        k0 = _first_step(F.round(F.col("t0") * 1000).cast("long"), grid)
        k1 = _first_step(F.col("until"), grid) - 1
        mbean_rows = runs.select("objectname", "attribute", "value", "broker", k0.alias("k0"), k1.alias("k1")) \
            .where("k0 <= k1")
        named = named_series(mbean_rows, naming, carry=("broker",))
        if opts.broker_label:
            named = _with_broker_label(named, opts.broker_label)
        parts.append(named.drop("broker"))
    series = parts[0]
    for part in parts[1:]:
        series = series.unionByName(part)

    # kept: its size decides the partition count, then it is written
    series = series.persist()
    samples_estimate = series.agg(F.sum(F.col("k1") - F.col("k0") + 1)).first()[0] or 0
    _log(f"judged and named: about {samples_estimate} samples to write")
    partitions = max(1, min(10_000, -(-samples_estimate // SAMPLES_PER_PARTITION)))
    ordered = series.repartition(partitions, "series").sortWithinPartitions("family", "series", "k0", "objectname")

    out_files = []
    if opts.format == "openmetrics":
        from kafka_jmx_sidecar.exporter.backfill.openmetrics import write_part

        max_bytes = opts.max_file_bytes
        written = ordered.rdd.mapPartitionsWithIndex(
            lambda i, it: write_part(i, it, partial, grid, max_bytes)).collect()  # one row per file
        written.sort()
        out_files = [w[0] for w in written]
        series_count = sum(w[2] for w in written)
        sample_count = sum(w[3] for w in written)
        firsts = [w[4] for w in written if w[4] is not None]
        lasts = [w[5] for w in written if w[5] is not None]
        file_entries = [{"name": w[0], "bytes": w[1], "series": w[2], "samples": w[3]} for w in written]
    else:
        out_files, series_count, sample_count, firsts, lasts, file_entries = _write_parquet(
            spark, ordered, partial, grid, partitions)
    _log(f"wrote {len(out_files)} files: {series_count} series, {sample_count} samples")
    all_rejects = rejects[0]
    for more in rejects[1:]:
        all_rejects = all_rejects.unionByName(more)
    _write_rejects(all_rejects, partial)

    reject_count = sum(c for _, _, c in rejected)
    first_ms = grid.time_ms(min(firsts)) if firsts else None
    last_ms = grid.time_ms(max(lasts)) if lasts else None
    inputs = {"files": len(dumps) + len(archives), "lines": lines_read, "partition_states": states_read,
              "rejected": reject_count, "rejected_by_reason": _by_reason(rejected)}
    if archives:
        inputs.update(archive_files=len(archives), archived_polls=polls_read)
    manifest = {
        "format": opts.format, "semantics": profile.name, "step_seconds": step_ms / 1000,
        "start": _iso(first_ms), "end": _iso(last_ms), "files": file_entries,
        "series": series_count, "samples": sample_count, "inputs": inputs,
    }
    if archives:
        manifest["recompute"] = None if recompute is None else {"semantics": recompute.semantics,
                                                                "mode": recompute.mode}
    write_manifest(partial, manifest)
    series.unpersist()
    for df in (rows, archive_rows):
        if df is not None:
            df.unpersist()
    ratio = reject_count / lines_read if lines_read else (1.0 if reject_count else 0.0)
    summary = {
        "input_files": len(dumps) + len(archives), "archive_files": len(archives), "archived_polls": polls_read,
        "lines_read": lines_read, "partition_states": states_read,
        "rejected": reject_count, "rejected_by_reason": _by_reason(rejected),
        "rejected_by_file": _by_file(rejected), "output_files": out_files, "series": series_count,
        "samples": sample_count, "start": _iso(first_ms), "end": _iso(last_ms),
        "reject_ratio": ratio, "max_reject_ratio": opts.max_reject_ratio,
    }
    return (EXIT_REJECTS if ratio > opts.max_reject_ratio else 0), summary


def _configured_min_isr(recompute):
    """The config's `sidecar.recompute.minInsyncReplicas` as (default or None, {topic: n}), None
    when it has none: for dumps whose topic header shows no min.insync.replicas, as the live
    sidecar uses it without the Admin API."""
    if recompute is None or (recompute.min_isr_default is None and not recompute.min_isr_topics):
        return None
    return recompute.min_isr_default, dict(recompute.min_isr_topics)


def _read_dumps(spark, opts, dumps, configured=None):
    from pyspark.sql import functions as F

    sc = spark.sparkContext
    # with configured values, a topic whose header shows none reads as 0 (min.insync.replicas is
    # at least 1), then takes the configured topic's value, else the configured default, else
    # --default-min-isr
    default_min_isr = 0 if configured is not None else opts.default_min_isr
    files = [(d.path, d.time_ms) for d in dumps]
    _log(f"reading {len(files)} describe dumps ({files[0][0]} ... {files[-1][0]})")
    # a few files per task: a task per file would cost a Python worker round each
    raw = sc.parallelize(files, min(len(files), 4 * sc.defaultParallelism)).flatMap(
        lambda f: describe_dumps.read_dump(f[0], f[1], default_min_isr))
    rows = spark.createDataFrame(raw, describe_dumps.ROW_SCHEMA, verifySchema=False)
    if configured is not None:
        default, topics = configured
        fallback = F.lit(default if default is not None else opts.default_min_isr)
        if topics:
            by_topic = F.create_map(*[F.lit(x) for kv in sorted(topics.items()) for x in kv])
            fallback = F.coalesce(by_topic[F.col("topic")], fallback)
        rows = rows.withColumn("min_isr", F.when(F.col("min_isr") == 0, fallback).otherwise(F.col("min_isr")))
    return rows.persist()


def _read_archives(spark, archives, replay):
    """One task per archive file: each starts with a keyframe, so each replays on its own."""
    sc = spark.sparkContext
    files = [(path, archive_input.source_of(path)) for path in archives]
    _log(f"reading {len(files)} archive files of {len({s for _, s in files})} broker(s)")
    raw = sc.parallelize(files, len(files)).flatMap(lambda f: archive_input.read_file(f[0], f[1], replay))
    return spark.createDataFrame(raw, archive_input.ROW_SCHEMA, verifySchema=False).persist()


def _poll_ends(times_ms: list[int], hold_ms: int) -> list[tuple[int, int]]:
    """(poll time, until when its values hold): the next poll of the same archive, but no longer
    than `hold_ms` (a sidecar that stopped: Prometheus too would have marked its series stale)."""
    ordered = sorted(set(times_ms))
    return [(t, min(ordered[i + 1], t + hold_ms) if i + 1 < len(ordered) else t + hold_ms)
            for i, t in enumerate(ordered)]


def _first_step(t_ms, grid: Grid):
    """Grid.first_step_from on a Column of milliseconds (integer arithmetic, as there)."""
    from pyspark.sql import functions as F

    ahead = t_ms - F.lit(grid.start_ms)
    k = F.floor((ahead + F.lit(grid.step_ms - 1)) / F.lit(grid.step_ms)).cast("long")
    return F.when(t_ms <= F.lit(grid.start_ms), F.lit(0)).otherwise(F.least(F.lit(grid.count), k))


def _with_broker_label(named, label: str):
    """`label="<broker id>"` added to each series' labels (the archive's header names the broker)."""
    from pyspark.sql import functions as F

    broker = F.coalesce(F.col("broker"), F.lit("unknown"))
    pair = F.concat(F.lit(label + '="'), broker, F.lit('"'))
    at = F.instr(F.col("series"), "{")
    with_labels = F.concat(F.expr("substring(series, 1, instr(series, '{'))"), pair, F.lit(","),
                           F.expr("substring(series, instr(series, '{') + 1)"))
    return named.withColumn("series", F.when(at > 0, with_labels).otherwise(
        F.concat(F.col("series"), F.lit("{"), pair, F.lit("}"))))


def _write_parquet(spark, ordered, partial, grid, partitions):
    from pyspark.sql import functions as F

    k = F.explode(F.sequence(F.col("k0"), F.col("k1"))).alias("k")
    samples = ordered.select("family", "type", "series", "value", k)
    samples = samples.dropDuplicates(["series", "k"]).select(
        "family", "type", "series", "value", (F.lit(grid.start_ms) + F.col("k") * F.lit(grid.step_ms)).alias("timestamp_ms"))
    target = os.path.join(partial, "parquet")
    samples.repartition(partitions, "series").sortWithinPartitions("family", "series", "timestamp_ms") \
        .write.parquet(target)
    names = sorted(n for n in os.listdir(target) if n.endswith(".parquet"))
    out_files, entries = [], []
    for i, name in enumerate(names):
        final = f"samples-{i:05d}.parquet"
        os.rename(os.path.join(target, name), os.path.join(partial, final))
        out_files.append(final)
        entries.append({"name": final, "bytes": os.path.getsize(os.path.join(partial, final))})
    import shutil

    shutil.rmtree(target)
    figures = samples.agg(F.countDistinct("series"), F.count(F.lit(1)), F.min("timestamp_ms"), F.max("timestamp_ms")).first()
    first = None if figures[2] is None else (figures[2] - grid.start_ms) // grid.step_ms
    last = None if figures[3] is None else (figures[3] - grid.start_ms) // grid.step_ms
    return out_files, figures[0], figures[1], [first] if first is not None else [], [last] if last is not None else [], entries


def _write_rejects(rejects, partial) -> None:
    """Every rejected line (file, line, reason, detail, text), as JSON Lines sorted by file and
    line (written by one task)."""
    from pyspark.sql import functions as F

    target = os.path.join(partial, ".rejects")
    rejects.repartition(1).sortWithinPartitions("file", "line", "reason").select(
        F.to_json(F.struct("file", "line", "reason", "detail", "text")).alias("value")).write.text(target)
    parts = sorted(n for n in os.listdir(target) if n.startswith("part-"))
    with open(os.path.join(partial, REJECTS), "wb") as out:
        for name in parts:
            with open(os.path.join(target, name), "rb") as f:
                out.write(f.read())
    import shutil

    shutil.rmtree(target)


def _by_reason(rejected) -> dict[str, int]:
    out: dict[str, int] = {}
    for _, reason, count in rejected:
        out[reason] = out.get(reason, 0) + count
    return dict(sorted(out.items()))


def _by_file(rejected) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for path, reason, count in rejected:
        out.setdefault(path, {})[reason] = count
    return out


def _iso(ms: int | None) -> str | None:
    if ms is None:
        return None
    from datetime import datetime, timezone

    return datetime.fromtimestamp(ms / 1000, timezone.utc).isoformat().replace("+00:00", "Z")


def _print_summary(s: dict) -> None:
    print(f"input files: {s['input_files']}, lines read: {s['lines_read']}, "
          f"partition states: {s['partition_states']}")
    print(f"rejected: {s['rejected']} ({s['reject_ratio']:.4%} of lines; allowed {s['max_reject_ratio']:.4%})")
    for reason, count in s["rejected_by_reason"].items():
        print(f"  {reason}: {count}")
    for path, reasons in s["rejected_by_file"].items():
        print(f"  {path}: " + ", ".join(f"{r} {c}" for r, c in reasons.items()))
    print(f"written: {len(s['output_files'])} files, {s['series']} series, {s['samples']} samples")
    print(f"time range: {s['start']} .. {s['end']}")
    print(f"took {s['seconds']} s")
    sys.stdout.flush()


def summary_json(s: dict) -> str:
    return json.dumps(s, sort_keys=True)
