"""What a run will do, once its options and inputs are checked: the options (`Options`), the
profile, the grid's step, the inputs found (told apart by content: an archive file starts with its
segment header) with the rules and settings of the configuration, and the output's URI.

Option errors are found before Spark starts; what needs the file systems (the inputs listed, each
file's first line read, so that an unreadable one stops the run here, the output checked) is found
with the Spark session's Hadoop client, before any Spark job runs. Every error is a UsageError of
one line that names the option, URI or file and what to do.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from importlib import resources

from kafka_jmx_sidecar.exporter.backfill import archive_input, describe_dumps
from kafka_jmx_sidecar.exporter.backfill.grid import parse_duration_ms, parse_time_ms
from kafka_jmx_sidecar.exporter.backfill.inputs import Input
from kafka_jmx_sidecar.exporter.backfill.output import check_paths
from kafka_jmx_sidecar.exporter.backfill.progress import DEFAULT_EVERY_S
from kafka_jmx_sidecar.exporter.backfill.storage import NoFileSystem, unreadable_name
from kafka_jmx_sidecar.mbeans.health import PROFILES, Profile

DEFAULT_MAX_FILE_BYTES = 64 * 1024 * 1024
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
    replace: bool = False  # an output holding a previous backfill's is replaced, not refused


class UsageError(ValueError):
    """A bad option or input: the message says which and what to do."""


@dataclass
class Plan:
    """What a run reads and how, once the options are checked: the inputs in the order their
    series and rejects are written (describe dumps, then archives), and the output's URI."""

    opts: Options
    profile: Profile
    step_ms: int
    inputs: list[Input]
    output: str = ""


def load_rules(path: str | None, shipped_name: str = CLUSTER_RULES):
    from kafka_jmx_sidecar.exporter.rule_engine.config import load_config

    if path is not None:
        return load_config(path)
    with resources.as_file(resources.files("kafka_jmx_sidecar.rules").joinpath(shipped_name)) as shipped:
        return load_config(shipped)


def check_options(opts: Options) -> re.Pattern | None:
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
    if opts.max_file_bytes < 1:
        raise UsageError(f"--max-file-bytes {opts.max_file_bytes}: at least 1 (a file is closed at the first series "
                         "boundary past it)")
    if not opts.describe_time_regex:
        return None
    try:
        return re.compile(opts.describe_time_regex)
    except re.error as e:
        raise UsageError(f"--describe-time-regex: {e}") from None


def _qualified(storage, option: str, given: str) -> str:
    try:
        return storage.qualified(given)
    except NoFileSystem as e:
        scheme = given.split(":", 1)[0]
        raise UsageError(f"{option} {given}: Spark has no file system for {scheme}:// ({e}); put the Hadoop client "
                         f"of {scheme}:// on its class path (for s3a://: spark-submit --packages "
                         "org.apache.hadoop:hadoop-aws:<Spark's Hadoop version>) or copy the files where Spark "
                         "reads") from None
    except ValueError as e:
        raise UsageError(f"{option} {given}: not a path or URI ({e})") from None


def _listed(storage, inputs: dict[str, str]) -> list:
    """Every file under the inputs (storage.Listed), each once, in URI order."""
    found = {}
    for given in inputs.values():
        try:
            for f in storage.files(given):
                found.setdefault(f.uri, f)
        except FileNotFoundError:
            raise UsageError(f"--input {given}: no such file or directory") from None
        except OSError as e:
            raise UsageError(f"--input {given}: cannot be listed ({e}); give the user the backfill runs as read "
                             "access to it") from None
    for f in found.values():
        problem = unreadable_name(f.uri)
        if problem is not None:
            raise UsageError(f"--input {f.name}: {problem}; rename the file")
    return [found[uri] for uri in sorted(found)]


def _heads(storage, listed) -> dict[str, bytes]:
    """Each file's first line, read here so that a file Spark could not read stops the run now."""
    heads = {}
    for f in listed:
        try:
            heads[f.uri] = storage.head(f.uri)
        except OSError as e:
            raise UsageError(f"--input {f.name}: cannot be read ({e}); give the user the backfill runs as read "
                             "access to it, or leave it out of --input") from None
    return heads


def _configured_recompute(config, path: str | None):
    """The configuration's `sidecar.recompute` (None without --config or without the key): read
    once, for the archives' recompute, the profile and the dumps' min ISR."""
    if path is None:
        return None
    from kafka_jmx_sidecar.exporter.config.sidecar import sidecar_settings

    return sidecar_settings(config).recompute


def recompute_settings(opts: Options, configured):
    """The recompute an archive's polls go through: the configuration's `sidecar.recompute`
    (`configured`) as the live sidecar ran it (--semantics, when given, chooses the profile); a
    configuration without it recomputes nothing, as live, unless --semantics asks; without
    --config, the default mode (`outdated`) under --semantics."""
    from kafka_jmx_sidecar.exporter.recompute.settings import RecomputeSettings

    if configured is None:
        if opts.config is not None and opts.semantics is None:
            return None
        return RecomputeSettings(semantics=opts.semantics or DEFAULT_SEMANTICS)
    return dataclasses.replace(configured, semantics=opts.semantics) if opts.semantics else configured


def _configured_min_isr(recompute):
    """The config's `sidecar.recompute.minInsyncReplicas` as (default or None, {topic: n}), None
    when it has none: for dumps whose topic header shows no min.insync.replicas, as the live
    sidecar uses it without the Admin API."""
    if recompute is None or (recompute.min_isr_default is None and not recompute.min_isr_topics):
        return None
    return recompute.min_isr_default, dict(recompute.min_isr_topics)


def make_plan(opts: Options, storage, pattern: re.Pattern | None, config) -> Plan:
    """The checked inputs and output on `storage` (storage.Storage), each input with the rules and
    settings of the configuration (`config`: --config loaded, or None)."""
    from kafka_jmx_sidecar.exporter.backfill.naming import Naming

    inputs = {_qualified(storage, "--input", given): given for given in opts.inputs}
    output = _qualified(storage, "--output", opts.output)
    check_paths(inputs, output, opts.output)
    listed = _listed(storage, inputs)
    if not listed:
        raise UsageError("--input: no files found")
    heads = _heads(storage, listed)
    archives = [f for f in listed if archive_input.is_archive(f.name, heads[f.uri])]
    dumps = describe_dumps.dumps_of([f for f in listed if f not in set(archives)], pattern)
    brokers = sorted({archive_input.header_broker(heads[f.uri]) or archive_input.source_of(f.uri) for f in archives})
    if len(brokers) > 1 and not opts.broker_label:
        raise UsageError(f"--input: the archives of {len(brokers)} brokers ({', '.join(brokers[:3])}"
                         f"{', ...' if len(brokers) > 3 else ''}) would name the same series; set --broker-label "
                         "NAME (a label holding each series' broker id) or backfill one broker's archive at a time")
    dump_config = (config or load_rules(None)) if dumps else None
    archive_config = (config or load_rules(None, HEALTH_RULES)) if archives else None
    configured = _configured_recompute(dump_config or archive_config, opts.config)
    semantics = opts.semantics or (configured.semantics if configured is not None else None) or DEFAULT_SEMANTICS
    profile = PROFILES[semantics]
    plan_inputs: list[Input] = []
    if dumps:
        plan_inputs.append(describe_dumps.DescribeDumps(dumps, Naming(dump_config), profile, opts.default_min_isr,
                                                        _configured_min_isr(configured)))
    if archives:
        plan_inputs.append(archive_input.Archives(
            archives, Naming(archive_config), recompute_settings(opts, configured), parse_duration_ms(opts.max_hold),
            opts.broker_label, _cluster_view(brokers, bool(dumps), profile)))
    return Plan(opts, profile, parse_duration_ms(opts.step), plan_inputs, output)


def _cluster_view(brokers: list[str], dumps: bool, profile: Profile):
    """The cluster-wide view of several brokers' archives, named by the cluster mode's rules; none
    for one broker's, nor beside describe dumps, whose view (leaderless partitions included) it
    would repeat under the same names."""
    from kafka_jmx_sidecar.exporter.backfill.archive_cluster import ClusterView
    from kafka_jmx_sidecar.exporter.backfill.naming import Naming
    from kafka_jmx_sidecar.exporter.backfill.session import log

    if len(brokers) < 2:
        return None
    if dumps:
        log("the cluster-wide view comes from the describe dumps; the archives give each broker's own series")
        return None
    return ClusterView(profile, Naming(load_rules(None, CLUSTER_RULES)))
