"""Partition states seen cluster-wide (describe dumps, or the led partitions of every broker's
archive) -> the MBean values of the cluster-wide view, one row per (ObjectName, attribute, value,
steps held).

The view is the one the sidecar's cluster mode serves (rules/kafka-cluster.yml names it): every
partition's Partition health gauges as its leader would serve them under the profile, leaderless
partitions included, in ObjectNames `kafka.cluster:type=Partition,name=G,leader=L,topic=T,partition=P`
(L `none` without a leader), plus `Unavailable` (no live leader) and `PlaceholderReplicas` (where
there are placeholders); the leader-counted ReplicaManager gauges summed over the cluster; the
controller's OfflinePartitionsCount (where the states show leaderless partitions: dumps); and under
a profile with eligible leader replicas, the ELR figures where a dump tells the ELR (`Elr:`), per
partition and summed (a sum only at times when every partition's ELR is known: absent, never a
partial count). Which gauges, and what each shows,
come from the catalog and the cluster view; each value from the profile's formula on Columns.
"""
from __future__ import annotations

import dataclasses

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from kafka_jmx_sidecar.exporter.backfill.columns import evaluate
from kafka_jmx_sidecar.exporter.backfill.inputs import COUNT_TYPES
from kafka_jmx_sidecar.mbeans import catalog
from kafka_jmx_sidecar.mbeans.cluster_view import (LEADER_KEY, NO_LEADER, OFFLINE_SPEC, PLACEHOLDERS, elr_formulas,
                                                   elr_object_name, gauge_formulas, total_formulas)
from kafka_jmx_sidecar.mbeans.health import Profile
from kafka_jmx_sidecar.mbeans.recompute import offline

ATTRIBUTE = "Value"
# Every Partition gauge's domain and type (Unavailable and PlaceholderReplicas, which only this view
# has, are named as Kafka's own Partition gauges are).
PARTITION_FAMILY = catalog.PARTITION[0]


def _family_member(gauge: str) -> str:
    """`domain:type=Partition,name=<gauge>`, as the catalog spells its Partition gauges."""
    return dataclasses.replace(PARTITION_FAMILY, name=gauge).object_name


def _partition_name(gauge: str) -> Column:
    leader = F.when(F.col("leader") >= 0, F.col("leader").cast("string")).otherwise(F.lit(NO_LEADER))
    return F.concat(F.lit(f"{_family_member(gauge)},{LEADER_KEY}="), leader,
                    F.lit(",topic="), F.col("topic"), F.lit(",partition="), F.col("partition").cast("string"))


def partition_rows(states: DataFrame, profile: Profile) -> DataFrame:
    """`states`: rows of counts with topic, partition, leader, placeholders and the steps held (k0, k1)."""
    entries = [F.struct(_partition_name(name).alias("objectname"), evaluate(formula).cast("double").alias("value"))
               for name, formula in gauge_formulas(profile)]
    entries.append(F.when(F.col("placeholders") > 0, F.struct(
        _partition_name(PLACEHOLDERS).alias("objectname"), F.col("placeholders").cast("double").alias("value"))))
    entries += [F.when(F.col("elr").isNotNull(), F.struct(
        _partition_name(name).alias("objectname"), evaluate(formula).cast("double").alias("value")))
        for name, _, formula in elr_formulas(profile)]
    exploded = states.select(F.explode(F.filter(F.array(*entries), lambda e: e.isNotNull())).alias("e"), "k0", "k1")
    return exploded.select(F.col("e.objectname").alias("objectname"), F.lit(ATTRIBUTE).alias("attribute"),
                           F.col("e.value").alias("value"), "k0", "k1")


def total_rows(states: DataFrame, profile: Profile, offline_count: bool = True) -> DataFrame:
    """The cluster's sums at every step some partition's state holds, one row per gauge per run of
    steps: each state adds what it counts at its first step and takes it back after its last, and
    the running sums over the steps are the totals (the states need not share their times: the
    archives of several brokers poll each at its own). Without `offline_count`, no
    OfflinePartitionsCount (the states hold only led partitions: leaderless ones are unseen)."""
    counted = [(spec.object_name, evaluate(formula)) for spec, formula in total_formulas(profile)]
    if offline_count:
        counted.append((OFFLINE_SPEC.object_name, evaluate(offline)))
    elr = [(elr_object_name(total), F.coalesce(evaluate(formula), F.lit(0)))
           for _, total, formula in elr_formulas(profile)]
    names = [f"v{i}" for i in range(len(counted) + len(elr))] + ["states", "unknown_elr"]
    flags = states.select("k0", "k1", *(c.alias(n) for n, (_, c) in zip(names, counted + elr)),
                          F.lit(1).alias("states"), F.col("elr").isNull().cast("int").alias("unknown_elr"))
    changes = flags.select(F.col("k0").alias("k"), *names).unionByName(
        flags.select((F.col("k1") + 1).alias("k"), *(-F.col(n) for n in names)).toDF("k", *names))
    # one window over all (a row per step where a sum changes: at most the grid's steps), keyed by an
    # expression Spark does not fold away (a literal key would be, with a warning on every run)
    w = Window.partitionBy(F.col("k") * 0).orderBy("k")
    sums = changes.groupBy("k").agg(*(F.sum(n).alias(n) for n in names)).select(
        "k", (F.lead("k").over(w) - 1).alias("k1"),
        *(F.sum(n).over(w.rowsBetween(Window.unboundedPreceding, 0)).alias(n) for n in names))
    # an ELR sum only where every partition's ELR is known: absent, never a partial count
    entries = ([F.struct(F.lit(name).alias("objectname"), F.col(n).cast("double").alias("value"))
                for n, (name, _) in zip(names, counted)]
               + [F.when(F.col("unknown_elr") == 0, F.struct(F.lit(name).alias("objectname"),
                                                            F.col(n).cast("double").alias("value")))
                  for n, (name, _) in zip(names[len(counted):], elr)])
    exploded = sums.where("states > 0").select(
        F.explode(F.filter(F.array(*entries), lambda e: e.isNotNull())).alias("e"), F.col("k").alias("k0"), "k1")
    return exploded.select(F.col("e.objectname").alias("objectname"), F.lit(ATTRIBUTE).alias("attribute"),
                           F.col("e.value").alias("value"), "k0", "k1")


# What a partition's row says: when none of it changes from one observation to the next, the two
# rows are one run of steps (most partitions change rarely; the dumps come often).
STATE_FIELDS = ("leader", "placeholders") + tuple(COUNT_TYPES)


def runs(states: DataFrame) -> DataFrame:
    """Consecutive observations of a partition that say the same, as one row over all their steps
    (the work after this is per run, not per observation)."""
    w = Window.partitionBy("topic", "partition").orderBy("k0")
    same = F.lit(True)
    for name in STATE_FIELDS:
        same = same & F.lag(F.col(name)).over(w).eqNullSafe(F.col(name))
    contiguous = F.lag(F.col("k1")).over(w) + 1 == F.col("k0")
    starts = states.withColumn("starts", F.when(same & contiguous, 0).otherwise(1))
    numbered = starts.withColumn("run", F.sum("starts").over(w.rowsBetween(Window.unboundedPreceding, 0)))
    return numbered.groupBy("topic", "partition", "run").agg(
        *(F.first(name).alias(name) for name in STATE_FIELDS), F.min("k0").alias("k0"), F.max("k1").alias("k1"))


def cluster_rows(states: DataFrame, profile: Profile, offline_count: bool = True) -> DataFrame:
    """`states`: rows of counts with topic, partition, leader, placeholders and the steps each
    holds (k0, k1), at most one per partition and step."""
    return partition_rows(runs(states), profile).unionByName(total_rows(states, profile, offline_count))
