"""Partition states seen cluster-wide (describe dumps) -> the MBean values of the cluster-wide view,
one row per (ObjectName, attribute, value, steps held).

The view is the one the sidecar's cluster mode serves (rules/kafka-cluster.yml names it): every
partition's Partition health gauges as its leader would serve them under the profile, leaderless
partitions included, in ObjectNames `kafka.cluster:type=Partition,name=G,leader=L,topic=T,partition=P`
(L `none` without a leader), plus `Unavailable` (no live leader) and `PlaceholderReplicas` (where
there are placeholders); the leader-counted ReplicaManager gauges summed over the cluster; and the
controller's OfflinePartitionsCount; and under a profile with eligible leader replicas, the ELR
figures where a dump tells the ELR (`Elr:`), per partition and summed (a sum only at times when
every partition's ELR is known: absent, never a partial count). Which gauges, and what each shows,
come from the catalog and the cluster view; each value from the profile's formula on Columns.
"""
from __future__ import annotations

import dataclasses

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from kafka_jmx_sidecar.exporter.backfill.columns import COUNT_TYPES, evaluate
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


def total_rows(states: DataFrame, profile: Profile) -> DataFrame:
    """The cluster's sums per observation time (one row per gauge per time)."""
    sums = [(spec.object_name, F.sum(evaluate(formula))) for spec, formula in total_formulas(profile)]
    sums.append((OFFLINE_SPEC.object_name, F.sum(evaluate(offline))))
    every_elr_known = F.count(F.when(F.col("elr").isNull(), 1)) == 0
    sums += [(elr_object_name(total), F.when(every_elr_known, F.sum(evaluate(formula))))
             for _, total, formula in elr_formulas(profile)]
    grouped = states.groupBy("t", "k0", "k1").agg(*(agg.alias(f"v{i}") for i, (_, agg) in enumerate(sums)))
    entries = [F.when(F.col(f"v{i}").isNotNull(), F.struct(F.lit(name).alias("objectname"),
                                                          F.col(f"v{i}").cast("double").alias("value")))
               for i, (name, _) in enumerate(sums)]
    exploded = grouped.select(F.explode(F.filter(F.array(*entries), lambda e: e.isNotNull())).alias("e"), "k0", "k1")
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


def cluster_rows(states: DataFrame, profile: Profile) -> DataFrame:
    return partition_rows(runs(states), profile).unionByName(total_rows(states, profile))
