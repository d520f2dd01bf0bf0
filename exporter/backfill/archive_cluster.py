"""The cluster-wide view from the archives of several brokers' sidecars (a whole cluster in one run):
each partition as its leader's archive reports it (archive_leaders.py: followers report no led
state, so a partition reported by its leader's and its followers' sidecars counts once), judged
and summed by the same code as the describe dumps' view (cluster_rows.py: mbeans/cluster_view.py's
formulas on Columns), named by the cluster mode's rules.

The brokers whose archives the run reads are the cluster. The view exists only at the steps where
every one of them has a poll holding the step; where one is missing (its sidecar was down, its
archive lost, the broker not yet added or already removed), the view has a gap, never sums short
of that broker's partitions. Where two brokers' reports of one partition overlap (its leadership moved between
their polls), the later report holds. Partitions with no leader are in no broker's report: the
view from archives has neither them nor the controller's OfflinePartitionsCount (each broker's own
series carries its controller gauges).
"""
from __future__ import annotations

from dataclasses import dataclass

from kafka_jmx_sidecar.exporter.backfill.grid import Grid
from kafka_jmx_sidecar.mbeans.health import Counts, Profile


@dataclass(frozen=True)
class ClusterView:
    """What the view is judged and named with."""

    profile: Profile
    naming: object  # naming.Naming of the cluster-wide rules


def broker_holds(poll_ends: dict[str, list[tuple[int, int]]], brokers: dict[str, str],
                 grid: Grid) -> dict[str, list[tuple[int, int]]]:
    """Each broker's held steps: `poll_ends` maps each archive (source) to its polls' (time, until
    when its values hold), `brokers` each archive to its broker."""
    held: dict[str, list[tuple[int, int]]] = {}
    for source, ends in poll_ends.items():
        broker = brokers.get(source) or source
        for t, until in ends:
            held.setdefault(broker, []).append((grid.first_step_from(t), grid.first_step_from(until) - 1))
    return held


def cluster_series(led, covered: list[tuple[int, int]], view: ClusterView):
    """`led`: the archives' led-state runs with the steps each holds (k0, k1) -> the view's named
    series, within the `covered` step ranges."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from kafka_jmx_sidecar.exporter.backfill.cluster_rows import cluster_rows
    from kafka_jmx_sidecar.exporter.backfill.naming import named_series

    spark = led.sparkSession
    ranges = spark.createDataFrame(covered or [(0, -1)], "c0 long, c1 long")
    clipped = led.join(F.broadcast(ranges), (F.col("k0") <= F.col("c1")) & (F.col("k1") >= F.col("c0"))) \
        .withColumn("k0", F.greatest("k0", "c0")).withColumn("k1", F.least("k1", "c1"))
    # one report per partition and step: a report holds until the partition's next one, of any broker
    w = Window.partitionBy("topic", "partition").orderBy("k0", "t0", "broker")
    reported = clipped.withColumn("k1", F.least(F.col("k1"), F.coalesce(F.lead("k0").over(w) - 1, F.col("k1"))))
    states = reported.where("k0 <= k1").select(
        "topic", "partition", F.col("broker").cast("int").alias("leader"), "placeholders", *Counts._fields,
        "k0", "k1").where(F.col("leader").isNotNull())  # a broker id that is no number leads nothing
    return named_series(cluster_rows(states, view.profile, offline_count=False), view.naming)
