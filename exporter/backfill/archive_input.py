"""The sidecar's archive (exporter/archive, `sidecar.archive`) as a backfill input: one archive file
replayed on its own (each hourly file starts with a keyframe), poll by poll, with the reader every
path uses (its rejects and damaged spans become reject rows), into the MBean values
the live sidecar's rules read at that poll, as runs of equal values.

Per poll, the values are the leaves the broker served (gauges, meter counts), with the health
families (the catalog's ReplicaManager and Partition health gauges) passed through the live
recompute itself (archive_health.py): the same mode decisions per family
(`sidecar.recompute.mode`), the same added and replaced MBeans, the same filters.

A run is (ObjectName, attribute, value, first poll, last poll) of one broker's archive: the value
held from the first poll's time until the poll after the last (`Archives.series` turns times into
grid steps, knowing every poll time of that archive, across files). Reading a file imports no
Spark: it runs on the executors, one call per file, and is tested with plain files.
"""
from __future__ import annotations

import io
import json
from collections import namedtuple
from dataclasses import dataclass
from typing import BinaryIO, Iterator

from kafka_jmx_sidecar.exporter.archive.format import (FORMAT, SUFFIX, Cluster, Count, Counts, Leaf, Leaves, MinIsr,
                                                       State, member_object)
from kafka_jmx_sidecar.exporter.archive.reader import ArchiveState, Rejects, read_polls
from kafka_jmx_sidecar.exporter.archive.retention import FILE_NAME
from kafka_jmx_sidecar.exporter.backfill.archive_health import Health, is_health_key
from kafka_jmx_sidecar.exporter.backfill.archive_leaders import LED_FIELDS, Leaders
from kafka_jmx_sidecar.exporter.backfill.inputs import COUNT_TYPES
from kafka_jmx_sidecar.exporter.recompute.settings import RecomputeSettings
from kafka_jmx_sidecar.exporter.recompute.stage import Recompute
from kafka_jmx_sidecar.exporter.rule_engine.config import Config


# One row per run ("v"), per poll ("p": its time and hosted partitions), per reject ("r"), per file
# ("f": lines read, in `line`) and, for the cluster-wide view, per run of a led partition's state
# ("l", archive_leaders.py: its topic, partition, Counts and placeholders), in one schema so one
# pass over the files gives all five. t0 and t1 are seconds: a run's first and last poll, a poll's time.
_COLUMNS = (("kind", "string"), ("source", "string"), ("broker", "string"), ("t0", "double"), ("t1", "double"),
            ("objectname", "string"), ("attribute", "string"), ("value", "double"),
            ("partitions", "int"),  # a poll's hosted partitions
            ("file", "string"), ("line", "int"), ("reason", "string"), ("detail", "string"), ("text", "string"),
            ("topic", "string"), ("partition", "int"), *COUNT_TYPES.items(), ("placeholders", "int"))
ArchiveRow = namedtuple("ArchiveRow", [name for name, _ in _COLUMNS], defaults=(None,) * (len(_COLUMNS) - 2))
ROW_SCHEMA = ", ".join(f"{name} {kind}" for name, kind in _COLUMNS)

_HEALTH_INPUTS = (Count, Counts, State, MinIsr, Cluster)  # records that change what the recompute reads


def is_archive(name: str, head: bytes | None) -> bool:
    """An archive file is told by its first line (`head`; None: the file could not be read): the
    segment header (`"k": "archive"`), whatever its schema version (an unknown one is then read,
    and rejected, by the reader); or by its name, when it is the writer's (a file whose first line
    is damaged is still read as an archive, and its damage counted, not taken for a describe dump)."""
    base = name.rstrip("/").rsplit("/", 1)[-1]
    if FILE_NAME.fullmatch(base):
        return True
    if head is None:
        return base.endswith(SUFFIX)
    try:
        obj = json.loads(head)
    except ValueError:
        return False
    return obj.__class__ is dict and (obj.get("k") == "archive" or obj.get("format") == FORMAT)


def header_broker(head: bytes) -> str | None:
    """The broker id a file's first line, a segment header, names (None: not a readable header)."""
    try:
        obj = json.loads(head)
    except ValueError:
        return None
    broker = obj.get("broker") if obj.__class__ is dict and obj.get("k") == "archive" else None
    return None if broker is None else str(broker)


def source_of(uri: str) -> str:
    """One directory is one broker's archive (docs/backfill.md): a file's source is its directory."""
    return uri.rstrip("/").rsplit("/", 1)[0]


@dataclass(frozen=True)
class Replay:
    """What every file's replay needs, sent to the executors: the configuration's filters (a
    Config without secrets: naming.Naming strips them) and the recompute, None when the live
    sidecar would recompute nothing."""

    config: Config
    recompute: RecomputeSettings | None
    max_hold: float = 300.0  # seconds: a gap between polls longer than this ends every run (the sidecar was down)
    leaders: bool = False  # the led partitions' states too ("l" rows), for the cluster-wide view


class _FileReplay:
    """One archive file's polls -> runs of equal values: the runs still open (`current`), the
    health families' replay, and the last poll's time."""

    def __init__(self, source: str, replay: Replay):
        self.source, self.max_hold = source, replay.max_hold
        self.recompute = (Recompute(replay.recompute, replay.config, quiet=True)
                          if replay.recompute is not None else None)
        self.state = ArchiveState()
        self.cache: dict = {}
        self.current: dict[tuple[str, str], tuple[float, float]] = {}  # key -> (value, first poll of its run)
        self.health = Health(self.recompute)
        self.last_t = None
        self.broker = None
        self.version = None
        self.leaders = Leaders(replay.recompute) if replay.leaders else None
        self.led_keys: set | None = None  # the partitions whose led state a poll may have changed (None: any)

    def run_row(self, key: tuple[str, str], value: float, first: float) -> ArchiveRow:
        """A run that ended at the last poll."""
        return ArchiveRow("v", self.source, self.broker, first, self.last_t, key[0], key[1], value)

    def poll(self, p, path: str) -> Iterator[ArchiveRow]:
        state = self.state
        before = (state.leaves, state.counts, state.states, state.min_isr, state.cluster)  # a keyframe's new
        state.apply(p)
        self.broker = state.broker
        t = p.poll.t
        gap = self.last_t is not None and t - self.last_t > self.max_hold
        if gap:
            # the sidecar was down: Prometheus would have had nothing, so no run spans the gap
            yield from self.end()
            self.current.clear()
        yield ArchiveRow("p", self.source, self.broker, t, t, partitions=len(state.counts), file=path)
        if not p.poll.keyframe:
            changes = self._delta(p.records)
        elif self.last_t is None or gap:
            changes = self._keyframe()
        else:  # a keyframe amid the file's polls: what differs from the poll before, as a change poll says it
            changes = self._keyframe_delta(*before)
        if self.leaders is not None:
            keys = None if p.poll.keyframe or self.version != state.version else self.led_keys
            for key, led, first, last in self.leaders.poll(state, t, self.last_t, keys):
                yield self.led_row(key, led, first, last)
        self.version = state.version
        current = self.current
        for k, v in changes.items():
            run = current.get(k)
            if v is not None:
                v = float(v)
            if run is not None:
                if v is not None and run[0] == v:
                    continue
                yield self.run_row(k, run[0], run[1])
                del current[k]
            if v is not None:
                current[k] = (v, t)
        self.last_t = t

    def led_row(self, key: tuple[str, int], led: tuple, first: float, last: float) -> ArchiveRow:
        """A run of a led partition's state (archive_leaders.LED_FIELDS) that ended at poll `last`."""
        return ArchiveRow("l", self.source, self.broker, first, last, topic=key[0], partition=key[1],
                          **dict(zip(LED_FIELDS, led)))

    def end(self) -> Iterator[ArchiveRow]:
        """Every open run, ended at the last poll."""
        for k, (v, first) in self.current.items():
            yield self.run_row(k, v, first)
        if self.leaders is not None:
            for key, led, first, last in self.leaders.end(self.last_t):
                yield self.led_row(key, led, first, last)

    def _keyframe(self) -> dict:
        """Every value of a keyframe poll, and None for each open run's key it no longer has."""
        cache, current = self.cache, self.current
        own = {}
        changes = {}
        for k, v in self.state.leaves.items():
            if is_health_key(k, cache):
                own[k] = v
            else:
                changes[k] = v
        for k in current:
            if k not in changes and not is_health_key(k, cache):
                changes[k] = None
        self.health = Health(self.recompute)  # a keyframe starts anew: every health value is told again
        self.health.reset(own)
        fresh = self.health.changes(self.state)
        for k in current:
            if k not in fresh and is_health_key(k, cache):
                changes[k] = None
        changes.update(fresh)
        return changes

    def _keyframe_delta(self, leaves: dict, *inputs) -> dict:
        """The values a keyframe changed since the poll before it (None: gone), the health families
        recomputed when one of their inputs changed: the runs go on as across any poll, without
        rebuilding every health value (a keyframe comes every keyframeIntervalSeconds)."""
        state, cache, health = self.state, self.cache, self.health
        changes = {}
        recount = self.version != state.version or inputs != (state.counts, state.states, state.min_isr,
                                                              state.cluster)
        now = state.leaves
        for k in {k for k, _ in now.items() ^ leaves.items()}:  # in C: 200,000 members at 40,000 partitions
            v = now.get(k)
            if is_health_key(k, cache):
                recount = True
                health.set(k, v)
            else:
                changes[k] = v
        if recount:
            changes.update(health.changes(state))
        return changes

    def _delta(self, records) -> dict:
        """The values a poll of changes changed (None: gone), the health families recomputed when
        one of their inputs changed."""
        state, cache, health = self.state, self.cache, self.health
        changes = {}
        recount = self.version != state.version
        led = self.led_keys = set()
        for r in records:
            kind = r.__class__
            if kind is Count:
                led.add((r.topic, r.partition))
            if kind is Leaf or kind is Leaves:
                keys = ([(r.object, r.attribute)] if kind is Leaf else
                        [(member_object(r.object, r.topic, q), r.attribute) for q in r.partitions])
                for k in keys:
                    v = state.leaves.get(k)
                    if is_health_key(k, cache):
                        recount = True
                        health.set(k, v)
                    else:
                        changes[k] = v
            elif kind in _HEALTH_INPUTS:
                recount = True
                if kind is not Count:  # a topic's min ISR, the lists, the live brokers: any partition
                    self.led_keys = None
        if recount:
            changes.update(health.changes(state))
        return changes


def read_file(path: str, stream: BinaryIO, source: str, replay: Replay) -> Iterator[ArchiveRow]:
    """The rows of one archive file named `path`, its bytes read from `stream`. Runs on the executors."""
    rejects = Rejects(keep=1 << 30)
    file = _FileReplay(source, replay)
    for p in read_polls(path, rejects, stream):
        yield from file.poll(p, path)
    yield from file.end()
    for r in rejects.examples:
        yield ArchiveRow("r", source, file=path, line=r.line_no, reason=r.reason.replace(" ", "-"),
                         detail=r.detail, text="")
    yield ArchiveRow("f", source, file.broker, file=path, line=rejects.lines.get(path, 0))


class Archives:
    """Sidecar archives as a backfill input (inputs.Input): about a task per file, the MBean values
    the live rules read at each poll, named by `naming`'s rules; each run holds from its first poll
    until the poll after its last, but no longer than `max_hold_ms`. `broker_label`: the label
    naming each series' broker (the archives of several brokers), None for one broker's.
    `cluster`: the cluster-wide view of all the brokers' archives too (archive_cluster.py)."""

    def __init__(self, files: list, naming, recompute: RecomputeSettings | None, max_hold_ms: int,
                 broker_label: str | None = None, cluster=None):
        self.files, self.naming, self.recompute = files, naming, recompute
        self.max_hold_ms, self.broker_label, self.cluster = max_hold_ms, broker_label, cluster

    def read(self, spark):
        from pyspark.sql import functions as F

        from kafka_jmx_sidecar.exporter.backfill.inputs import Reading, Tally
        from kafka_jmx_sidecar.exporter.backfill.session import log
        from kafka_jmx_sidecar.exporter.backfill.storage import read_files

        replay = Replay(self.naming.config, self.recompute, self.max_hold_ms / 1000, self.cluster is not None)
        files = {f.uri: (f.name, source_of(f.uri)) for f in self.files}
        log(f"reading {len(files)} archive files of {len({s for _, s in files.values()})} broker(s)")
        # about a file per task: each starts with a keyframe, so each replays on its own
        raw = read_files(spark.sparkContext, files, len(files),
                         lambda f, data: read_file(f[0], io.BytesIO(data), f[1], replay))
        rows = spark.createDataFrame(raw, ROW_SCHEMA, verifySchema=False).persist()
        # small aggregates: every poll's time per broker's archive (a day of 15 s polls: 5,760 a
        # broker), lines and rejects per file
        grouped = rows.where("kind in ('p', 'r', 'f')").groupBy("kind", "source", "broker", "t0", "file", "reason") \
            .agg(F.count(F.lit(1)).alias("n"), F.sum("line").alias("lines"), F.sum("partitions").alias("partitions"))
        tally, poll_times, brokers = Tally(files=len(self.files), archive_files=len(self.files)), {}, {}
        for r in grouped.collect():
            if r.kind == "p":
                tally.archived_polls += r.n
                tally.partition_states += r.partitions or 0
                poll_times.setdefault(r.source, []).append(round(r.t0 * 1000))
                brokers[r.source] = r.broker
            else:
                tally.count(r)
        return Reading(rows, tally, poll_times, brokers)

    def listed_range(self) -> None:
        return None

    def series(self, reading, grid):
        from pyspark.sql import functions as F

        from kafka_jmx_sidecar.exporter.backfill.naming import named_series

        ends = {source: poll_ends(ts, self.max_hold_ms) for source, ts in sorted(reading.times.items())}
        ends_df = reading.rows.sparkSession.createDataFrame(
            [(source, t, until) for source, pairs in ends.items() for t, until in pairs] or [("", 0, 0)],
            "source string, t long, until long")
        runs = held_steps(reading.rows.where("kind = 'v'"), ends_df, grid)
        mbean_rows = runs.select("objectname", "attribute", "value", "broker", "k0", "k1")
        named = named_series(mbean_rows, self.naming, carry=("broker",))
        if self.broker_label:
            named = with_broker_label(named, self.broker_label)
        named = named.drop("broker")
        if self.cluster is None:
            return named
        from kafka_jmx_sidecar.exporter.backfill.archive_cluster import broker_holds, cluster_series
        from kafka_jmx_sidecar.exporter.backfill.grid import common_steps
        from kafka_jmx_sidecar.exporter.backfill.session import log

        holds = broker_holds(ends, reading.brokers, grid)
        covered = common_steps(holds)
        log(f"cluster-wide view of {len(holds)} brokers' archives: {sum(b - a + 1 for a, b in covered)} of "
            f"{grid.count} steps have a poll of every broker")
        led = held_steps(reading.rows.where("kind = 'l'"), ends_df, grid)
        return named.unionByName(cluster_series(led, covered, self.cluster))

    def manifest(self) -> dict:
        recompute = self.recompute
        return {"recompute": None if recompute is None else {"semantics": recompute.semantics, "mode": recompute.mode}}


def held_steps(runs, ends, grid):
    """Runs of an archive (t0: their first poll, t1: their last, seconds) with the grid steps they
    hold, k0 .. k1: from the first poll until the poll after the last (`ends`: each archive's
    polls' (source, t, until) in ms, poll_ends)."""
    from pyspark.sql import functions as F

    joined = runs.withColumn("t", F.round(F.col("t1") * 1000).cast("long")).join(F.broadcast(ends), ["source", "t"])
    k0 = first_step(F.round(F.col("t0") * 1000).cast("long"), grid)
    k1 = first_step(F.col("until"), grid) - 1
    return joined.withColumn("k0", k0).withColumn("k1", k1).where("k0 <= k1")


def poll_ends(times_ms: list[int], hold_ms: int) -> list[tuple[int, int]]:
    """(poll time, until when its values hold): the next poll of the same archive, but no longer
    than `hold_ms` (a sidecar that stopped: Prometheus too would have marked its series stale)."""
    ordered = sorted(set(times_ms))
    return [(t, min(ordered[i + 1], t + hold_ms) if i + 1 < len(ordered) else t + hold_ms)
            for i, t in enumerate(ordered)]


def first_step(t_ms, grid):
    """Grid.first_step_from on a Column of milliseconds (integer arithmetic, as there)."""
    from pyspark.sql import functions as F

    ahead = t_ms - F.lit(grid.start_ms)
    k = F.floor((ahead + F.lit(grid.step_ms - 1)) / F.lit(grid.step_ms)).cast("long")
    return F.when(t_ms <= F.lit(grid.start_ms), F.lit(0)).otherwise(F.least(F.lit(grid.count), k))


def with_broker_label(named, label: str):
    """`label="<broker id>"` added to each series' labels (the archive's header names the broker)."""
    from pyspark.sql import functions as F

    broker = F.coalesce(F.col("broker"), F.lit("unknown"))
    pair = F.concat(F.lit(label + '="'), broker, F.lit('"'))
    at = F.instr(F.col("series"), "{")
    with_labels = F.concat(F.expr("substring(series, 1, instr(series, '{'))"), pair, F.lit(","),
                           F.expr("substring(series, instr(series, '{') + 1)"))
    return named.withColumn("series", F.when(at > 0, with_labels).otherwise(
        F.concat(F.col("series"), F.lit("{"), pair, F.lit("}"))))
