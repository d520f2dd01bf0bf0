"""One backfill run: inputs -> states -> judged MBean values -> the rules' series -> files, and the
summary (files, rows read, rejects by reason, series, samples, time range). Only small aggregates
ever reach the driver (counts, the observation times, each output file's figures).

The run is a pipeline of named steps (`_steps`), each a phase of progress.Phases (timed for the
summary; with --progress, reported every few seconds); what differs between input formats is behind
inputs.Input (describe_dumps.DescribeDumps, archive_input.Archives)."""
from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass, field
from importlib import resources

from kafka_jmx_sidecar.exporter.backfill import archive_input, describe_dumps
from kafka_jmx_sidecar.exporter.backfill.grid import Grid, parse_duration_ms, parse_time_ms
from kafka_jmx_sidecar.exporter.backfill.inputs import Input, Reading, Tally, rejects_of
from kafka_jmx_sidecar.exporter.backfill.output import (
    REJECTS, check_paths, partial_dir, place, promtool_import, write_manifest,
)
from kafka_jmx_sidecar.exporter.backfill.progress import DEFAULT_EVERY_S, Phases, Progress
from kafka_jmx_sidecar.exporter.backfill.session import log as _log
from kafka_jmx_sidecar.exporter.backfill.session import log_to
from kafka_jmx_sidecar.exporter.backfill.stopping import Interrupted, Signals, signal_name, stop_spark
from kafka_jmx_sidecar.exporter.backfill.summary import (  # EXIT_REJECTS: job's name for it too
    EXIT_REJECTS, STATUS, Written, by_reason, iso, print_json, print_text, rejected_counts, summary, time_ms,
)
from kafka_jmx_sidecar.mbeans.health import PROFILES, Profile

DEFAULT_MAX_FILE_BYTES = 64 * 1024 * 1024
SAMPLES_PER_PARTITION = 2_000_000  # about 100 MB of text per Spark task
# The rules for the cluster-wide view that describe dumps give (the sidecar's cluster mode names it so).
CLUSTER_RULES = "kafka-cluster.yml"
# The rules for one broker's series that an archive gives (the sidecar's default).
HEALTH_RULES = "kafka-health.yml"
DEFAULT_SEMANTICS = "kafka-3.7"


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
    progress: bool = False  # a progress record every progress_every_s seconds on stderr
    progress_every_s: float = DEFAULT_EVERY_S
    summary: str = "text"  # or "json": one JSON object on stdout
    log_format: str = "text"  # the run's lines: text, or records of logfmt or json (the command line's)
    log_level: str = "info"


class UsageError(ValueError):
    """A bad option or input: the message says which and what to do."""


@dataclass
class Plan:
    """What a run reads and how, once the options are checked: the inputs in the order their
    series and rejects are written (describe dumps, then archives)."""

    opts: Options
    profile: Profile
    step_ms: int
    inputs: list[Input]


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


class ImportFailed(RuntimeError):
    """promtool refused a file of the finished output (in place); `figures`: the run's summary."""

    def __init__(self, message: str, figures: dict):
        super().__init__(message)
        self.figures = figures


def run(opts: Options) -> int:
    """The run; raises UsageError (and the like) before any Spark session starts,
    stopping.Interrupted when SIGINT or SIGTERM ended it and ImportFailed when promtool refused
    the output."""
    log_to(opts.log_format, opts.log_level)
    phases = Phases()
    phases.enter("starting")
    plan = _plan(opts)
    partial = partial_dir(opts.output)
    placed = False
    with Signals() as signals:
        try:
            code, figures = _run(plan, partial, signals, phases)
            with signals.held():  # the output's rename into place is not cut in two
                place(partial, opts.output)
                placed = True
        except BaseException as e:
            import shutil

            interrupted = signals.received is not None and isinstance(e, KeyboardInterrupt)
            if interrupted:
                stop_spark()  # first: a task still running could write into the partial output
            shutil.rmtree(partial, ignore_errors=True)
            if not interrupted:
                raise
            raise Interrupted(signals.received, f"backfill: stopped by {signal_name(signals.received)}; " + (
                f"the output was complete and is in place: {opts.output}" if placed else
                f"removed the partial output; {opts.output} is as it was")) from None
    return _finish(opts, code, figures, phases)


def _finish(opts: Options, code: int, figures: dict, phases: Phases) -> int:
    """The summary and the import: as text, the summary first (its time without the import); as
    JSON, the import first, so that the one object says how it went."""
    importing = bool(opts.import_dir) and opts.format == "openmetrics"
    figures.update(status=STATUS[code], exit_code=code, imported_into=opts.import_dir if importing else None)
    if opts.summary != "json":
        figures["seconds"] = round(phases.clock() - phases.began, 1)
        print_text(figures)
    if importing:
        phases.enter("importing")
        _log(f"importing {len(figures['output_files'])} files with promtool into {opts.import_dir}")
        try:
            promtool_import(opts.output, figures["output_files"], opts.import_dir)
        except RuntimeError as e:
            phases.end()
            raise ImportFailed(str(e), _timed(figures, phases)) from None
        phases.end()
    if opts.summary == "json":
        print_json(_timed(figures, phases))
    return code


def _timed(figures: dict, phases: Phases) -> dict:
    return {**figures, "seconds": round(phases.clock() - phases.began, 1), "timings": phases.timings()}


def _check_options(opts: Options) -> re.Pattern | None:
    """UsageError for a bad option; the compiled --describe-time-regex."""
    if opts.semantics is not None and opts.semantics not in PROFILES:
        raise UsageError(f"--semantics {opts.semantics}: one of {', '.join(PROFILES)}")
    for option, value, parse in (("--step", opts.step, parse_duration_ms), ("--start", opts.start, parse_time_ms),
                                 ("--end", opts.end, parse_time_ms), ("--max-hold", opts.max_hold, parse_duration_ms)):
        try:
            if value is not None:
                parse(value)
        except ValueError as e:
            raise UsageError(f"{option}: {e}") from None
    if not opts.describe_time_regex:
        return None
    try:
        return re.compile(opts.describe_time_regex)
    except re.error as e:
        raise UsageError(f"--describe-time-regex: {e}") from None


def _plan(opts: Options) -> Plan:
    """The checked options and the inputs, told apart by content (an archive file starts with its
    segment header), each with the rules and settings of the configuration."""
    from kafka_jmx_sidecar.exporter.backfill.naming import Naming

    check_paths(opts.inputs, opts.output)
    listed = describe_dumps.list_dumps(opts.inputs, _check_options(opts))
    if not listed:
        raise UsageError("--input: no files found")
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
    semantics = opts.semantics or (configured.semantics if configured is not None else None) or DEFAULT_SEMANTICS
    profile = PROFILES[semantics]
    inputs: list[Input] = []
    if dumps:
        inputs.append(describe_dumps.DescribeDumps(dumps, Naming(dump_config), profile, opts.default_min_isr,
                                                   _configured_min_isr(configured)))
    if archives:
        inputs.append(archive_input.Archives(archives, Naming(archive_config), _recompute_settings(opts, configured),
                                             parse_duration_ms(opts.max_hold), opts.broker_label))
    return Plan(opts, profile, parse_duration_ms(opts.step), inputs)


def _run(plan: Plan, partial: str, signals: Signals, phases: Phases) -> tuple[int, dict]:
    """The Spark session, then the run's steps, with a progress record every few seconds when
    --progress asks (the records end before anything else when the steps end, fail or are
    interrupted); returns the exit code and the summary's figures."""
    from kafka_jmx_sidecar.exporter.backfill.session import conf_pairs, spark_session

    opts = plan.opts
    spark = spark_session(opts.master, conf_pairs(opts.conf))
    signals.install()  # over pyspark's own SIGINT handler (stopping.py)
    phases.attach(spark.sparkContext)
    progress = Progress(phases, spark.sparkContext, partial, opts.progress_every_s,
                        quiet=lambda: signals.received is not None) if opts.progress else contextlib.nullcontext()
    try:
        with progress:
            return _steps(spark, plan, partial, phases)
    finally:
        if signals.received is None:  # a call a signal cut leaves py4j's connection unusable
            with contextlib.suppress(Exception):  # and a failed run's JVM may be gone
                phases.detach()


def _steps(spark, plan: Plan, partial: str, phases: Phases) -> tuple[int, dict]:
    """Read every input, lay the grid, judge and name the series, write them, the rejects and the
    manifest into `partial`."""
    from kafka_jmx_sidecar.exporter.backfill.session import check_workers

    check_workers(spark)
    phases.enter("reading")
    readings = [source.read(spark) for source in plan.inputs]
    tally = Tally.total(r.tally for r in readings)
    _log(f"read {tally.lines} lines: {tally.partition_states} partition states ({tally.archived_polls} archived "
         f"polls), {sum(tally.rejected.values())} rejected")
    phases.enter("judging")
    grid = _grid(plan, readings)
    series = _union([source.series(r, grid) for source, r in zip(plan.inputs, readings)])
    # kept: its size decides the partition count, then it is written
    series = series.persist()
    samples, size = _estimate(series, grid, plan.opts.format)
    _log(f"judged and named: about {samples} samples to write")
    phases.enter("writing", size)
    written = _write_series(spark, series, partial, grid, plan.opts, samples)
    phases.enter("rejects")
    _write_rejects(_union([rejects_of(r.rows) for r in readings]), partial)
    manifest = _manifest(plan, tally, written, grid)
    write_manifest(partial, manifest)
    phases.end()
    series.unpersist()
    for r in readings:
        r.rows.unpersist()
    code, figures = summary(tally, written, grid, plan.opts.max_reject_ratio)
    figures.update(output=plan.opts.output, format=plan.opts.format, semantics=manifest["semantics"],
                   step_seconds=manifest["step_seconds"])
    return code, figures


def _grid(plan: Plan, readings: list[Reading]) -> Grid:
    """--start and --end, else the first and last observation read, else the times the inputs'
    files tell (dump names)."""
    opts = plan.opts
    times = {t for r in readings for ts in r.times.values() for t in ts}
    listed = next((span for span in (source.listed_range() for source in plan.inputs) if span is not None), None)
    start_ms = parse_time_ms(opts.start) if opts.start else (min(times) if times else listed and listed[0])
    end_ms = parse_time_ms(opts.end) if opts.end else (max(times) if times else listed and listed[1])
    if start_ms is None or end_ms is None:
        raise UsageError("--input: no archived poll could be read (see the rejects above); "
                         "give --start and --end to write an empty output anyway")
    if end_ms < start_ms:
        raise UsageError(f"--end is before --start ({end_ms / 1000} < {start_ms / 1000})")
    return Grid.between(start_ms, end_ms, plan.step_ms)


def _union(frames: list):
    out = frames[0]
    for more in frames[1:]:
        out = out.unionByName(more)
    return out


def _estimate(series, grid: Grid, fmt: str) -> tuple[int, int | None]:
    """About how many samples the series hold (runs of a series may overlap) and, for OpenMetrics,
    about how many bytes their lines `<series> <value> <time>` take (None for Parquet)."""
    from pyspark.sql import functions as F

    from kafka_jmx_sidecar.exporter.backfill.openmetrics import stamp_format

    steps = F.col("k1") - F.col("k0") + 1
    if fmt != "openmetrics":
        return series.agg(F.sum(steps)).first()[0] or 0, None
    stamp = len(stamp_format(grid)(grid.time_ms(max(0, grid.count - 1))))
    line = F.length("series") + F.length(F.col("value").cast("string")) + F.lit(stamp + 3)
    samples, size = series.agg(F.sum(steps), F.sum(steps * line)).first()
    return samples or 0, size or 0


def _write_series(spark, series, partial: str, grid: Grid, opts: Options, samples_estimate: int) -> Written:
    """The series as OpenMetrics files (or Parquet), in partitions of about SAMPLES_PER_PARTITION."""
    partitions = max(1, min(10_000, -(-samples_estimate // SAMPLES_PER_PARTITION)))
    ordered = series.repartition(partitions, "series").sortWithinPartitions("family", "series", "k0", "objectname")
    if opts.format == "openmetrics":
        written = _write_openmetrics(ordered, partial, grid, opts.max_file_bytes)
    else:
        written = _write_parquet(spark, ordered, partial, grid, partitions)
    _log(f"wrote {len(written.files)} files: {written.series} series, {written.samples} samples")
    return written


def _write_openmetrics(ordered, partial: str, grid: Grid, max_bytes: int) -> Written:
    from kafka_jmx_sidecar.exporter.backfill.openmetrics import write_part

    written = ordered.rdd.mapPartitionsWithIndex(
        lambda i, it: write_part(i, it, partial, grid, max_bytes)).collect()  # one row per file
    written.sort()
    firsts = [w[4] for w in written if w[4] is not None]
    lasts = [w[5] for w in written if w[5] is not None]
    return Written([w[0] for w in written], [{"name": w[0], "bytes": w[1], "series": w[2], "samples": w[3]}
                                             for w in written],
                   sum(w[2] for w in written), sum(w[3] for w in written),
                   min(firsts) if firsts else None, max(lasts) if lasts else None)


def _manifest(plan: Plan, tally: Tally, written: Written, grid: Grid) -> dict:
    rejected = rejected_counts(tally)
    inputs = {"files": tally.files, "lines": tally.lines, "partition_states": tally.partition_states,
              "rejected": sum(c for _, _, c in rejected), "rejected_by_reason": by_reason(rejected)}
    if tally.archive_files:
        inputs.update(archive_files=tally.archive_files, archived_polls=tally.archived_polls)
    manifest = {
        "format": plan.opts.format, "semantics": plan.profile.name, "step_seconds": plan.step_ms / 1000,
        "start": iso(time_ms(grid, written.first)), "end": iso(time_ms(grid, written.last)),
        "files": written.entries, "series": written.series, "samples": written.samples, "inputs": inputs,
    }
    for source in plan.inputs:
        manifest.update(source.manifest())
    return manifest


def _configured_min_isr(recompute):
    """The config's `sidecar.recompute.minInsyncReplicas` as (default or None, {topic: n}), None
    when it has none: for dumps whose topic header shows no min.insync.replicas, as the live
    sidecar uses it without the Admin API."""
    if recompute is None or (recompute.min_isr_default is None and not recompute.min_isr_topics):
        return None
    return recompute.min_isr_default, dict(recompute.min_isr_topics)


def _write_parquet(spark, ordered, partial, grid, partitions) -> Written:
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
    return Written(out_files, entries, figures[0], figures[1], first, last)


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
