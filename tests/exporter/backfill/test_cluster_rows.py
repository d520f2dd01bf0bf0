"""Runs: consecutive observations of a partition that say the same become one row over their steps."""
from __future__ import annotations

from exporter.backfill.cluster_rows import runs

SCHEMA = ("t long, k0 long, k1 long, topic string, partition int, leader int, placeholders int, has_leader boolean, "
          "leader_live boolean, replicas int, adding int, reassigning boolean, isr int, min_isr int")


def row(t, k0, k1, partition, isr, leader=1):
    return (t, k0, k1, "a", partition, leader, 0, leader >= 0, leader >= 0, 3, 0, False, isr, 2)


def test_runs(spark):
    df = spark.createDataFrame([
        row(0, 0, 3, 0, 3), row(1, 4, 7, 0, 3), row(2, 8, 9, 0, 2), row(3, 10, 11, 0, 2),
        # partition 1 is missing from the observation at t=1: a gap ends its run
        row(0, 0, 3, 1, 3), row(2, 8, 9, 1, 3),
        # the leader changes, nothing else does
        row(0, 0, 3, 2, 3, leader=1), row(1, 4, 7, 2, 3, leader=2),
    ], SCHEMA)
    got = sorted((r.partition, r.k0, r.k1, r.isr, r.leader) for r in runs(df).collect())
    assert got == [(0, 0, 7, 3, 1), (0, 8, 11, 2, 1), (1, 0, 3, 3, 1), (1, 8, 9, 3, 1), (2, 0, 3, 3, 1), (2, 4, 7, 3, 2)]
