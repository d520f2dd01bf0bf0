"""One backfill run: inputs -> states -> judged MBean values -> the rules' series -> files, and the
summary (files, rows read, rejects by reason, series, samples, time range). Only small aggregates
ever reach the driver (counts, the observation times, each output file's figures).

The run is a pipeline of named steps (`_steps`), each a phase of progress.Phases (timed for the
summary; with --progress, reported every few seconds); what differs between input formats is behind
inputs.Input (describe_dumps.DescribeDumps, archive_input.Archives)."""
from __future__ import annotations

import contextlib

from kafka_jmx_sidecar.exporter.backfill.grid import Grid, parse_time_ms
from kafka_jmx_sidecar.exporter.backfill.inputs import Reading, Tally, rejects_of
from kafka_jmx_sidecar.exporter.backfill.output import Output, promtool_import
from kafka_jmx_sidecar.exporter.backfill.plan import (  # Options, UsageError and the rules' names: job's too
    CLUSTER_RULES, DEFAULT_MAX_FILE_BYTES, DEFAULT_SEMANTICS, HEALTH_RULES, Options, Plan, UsageError, check_options,
    load_rules, make_plan,
)
from kafka_jmx_sidecar.exporter.backfill.progress import Phases, Progress
from kafka_jmx_sidecar.exporter.backfill.session import log as _log
from kafka_jmx_sidecar.exporter.backfill.session import log_to
from kafka_jmx_sidecar.exporter.backfill.stopping import Interrupted, Signals, signal_name, stop_spark
from kafka_jmx_sidecar.exporter.backfill.summary import (  # EXIT_REJECTS: job's name for it too
    EXIT_REJECTS, STATUS, Written, by_reason, iso, print_json, print_text, rejected_counts, summary, time_ms,
)

SAMPLES_PER_PARTITION = 2_000_000  # about 100 MB of text per Spark task
__all__ = ["CLUSTER_RULES", "DEFAULT_MAX_FILE_BYTES", "DEFAULT_SEMANTICS", "EXIT_REJECTS", "HEALTH_RULES",
           "ImportFailed", "Interrupted", "Options", "UsageError", "run"]


class ImportFailed(RuntimeError):
    """promtool refused a file of the finished output (in place); `figures`: the run's summary."""

    def __init__(self, message: str, figures: dict):
        super().__init__(message)
        self.figures = figures


def run(opts: Options) -> int:
    """The run; raises UsageError (and the like) for bad options before any Spark session starts
    and for bad inputs or output before any Spark job runs, stopping.Interrupted when SIGINT or
    SIGTERM ended it and ImportFailed when promtool refused the output."""
    from kafka_jmx_sidecar.exporter.backfill.session import conf_pairs

    log_to(opts.log_format, opts.log_level)
    phases = Phases()
    phases.enter("starting")
    pattern = check_options(opts)
    conf = conf_pairs(opts.conf)
    config = load_rules(opts.config) if opts.config else None  # a bad file raises ConfigError naming file:line
    out: Output | None = None
    placed = False
    with Signals() as signals:
        try:
            spark, storage = _session(opts, conf, signals)
            plan = make_plan(opts, storage, pattern, config)
            out = Output(storage, plan.output, opts.output)
            out.prepare(opts.replace)
            code, figures = _run(spark, storage, plan, out, signals, phases)
            with signals.held():  # the output's rename into place is not cut in two
                out.place()
                placed = True
        except BaseException as e:
            interrupted = signals.received is not None and isinstance(e, KeyboardInterrupt)
            if interrupted:
                stop_spark()  # first: a task still running could write into the partial output
            if out is not None:
                out.discard(jvm_usable=not interrupted)
            if not interrupted:
                raise
            raise Interrupted(signals.received, f"backfill: stopped by {signal_name(signals.received)}; " + (
                f"the output was complete and is in place: {opts.output}" if placed else
                f"removed the partial output; {opts.output} is as it was")) from None
    return _finish(opts, storage, plan.output, code, figures, phases)


def _session(opts: Options, conf: list, signals: Signals):
    """The Spark session (and, on a cluster, the project shipped to its executors) and the Hadoop
    file systems it reaches."""
    from kafka_jmx_sidecar.exporter.backfill.session import spark_session
    from kafka_jmx_sidecar.exporter.backfill.storage import Storage

    spark = spark_session(opts.master, conf)
    signals.install()  # over pyspark's own SIGINT handler (stopping.py)
    return spark, Storage(spark.sparkContext)


def _finish(opts: Options, storage, output: str, code: int, figures: dict, phases: Phases) -> int:
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
            promtool_import(storage, output, figures["output_files"], opts.import_dir)
        except RuntimeError as e:
            phases.end()
            raise ImportFailed(str(e), _timed(figures, phases)) from None
        phases.end()
    if opts.summary == "json":
        print_json(_timed(figures, phases))
    return code


def _timed(figures: dict, phases: Phases) -> dict:
    return {**figures, "seconds": round(phases.clock() - phases.began, 1), "timings": phases.timings()}


def _run(spark, storage, plan: Plan, out: Output, signals: Signals, phases: Phases) -> tuple[int, dict]:
    """The run's steps, with a progress record every few seconds when --progress asks (the records
    end before anything else when the steps end, fail or are interrupted); returns the exit code
    and the summary's figures."""
    opts = plan.opts
    phases.attach(spark.sparkContext)
    from kafka_jmx_sidecar.exporter.backfill.writing import written_bytes

    progress = Progress(phases, spark.sparkContext, lambda: written_bytes(storage, out.partial), opts.progress_every_s,
                        quiet=lambda: signals.received is not None) if opts.progress else contextlib.nullcontext()
    try:
        with progress:
            return _steps(spark, storage, plan, out, phases)
    finally:
        if signals.received is None:  # a call a signal cut leaves py4j's connection unusable
            with contextlib.suppress(Exception):  # and a failed run's JVM may be gone
                phases.detach()


def _steps(spark, storage, plan: Plan, out: Output, phases: Phases) -> tuple[int, dict]:
    """Read every input, lay the grid, judge and name the series, write them, the rejects and the
    manifest into the partial output."""
    from kafka_jmx_sidecar.exporter.backfill.shipping import check_workers
    from kafka_jmx_sidecar.exporter.backfill.writing import write_rejects

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
    written = _write_series(series, storage, out.partial, grid, plan.opts, samples)
    phases.enter("rejects")
    write_rejects(_union([rejects_of(r.rows) for r in readings]), storage, out.partial)
    manifest = _manifest(plan, tally, written, grid)
    out.write_manifest(manifest)
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


def _write_series(series, storage, partial: str, grid: Grid, opts: Options, samples_estimate: int) -> Written:
    """The series as OpenMetrics files (or Parquet), in partitions of about SAMPLES_PER_PARTITION."""
    from kafka_jmx_sidecar.exporter.backfill.writing import write_openmetrics, write_parquet

    partitions = max(1, min(10_000, -(-samples_estimate // SAMPLES_PER_PARTITION)))
    ordered = series.repartition(partitions, "series").sortWithinPartitions("family", "series", "k0", "objectname")
    if opts.format == "openmetrics":
        written = write_openmetrics(ordered, storage, partial, grid, opts.max_file_bytes)
    else:
        written = write_parquet(ordered, storage, partial, grid, partitions)
    _log(f"wrote {len(written.files)} files: {written.series} series, {written.samples} samples")
    return written


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
