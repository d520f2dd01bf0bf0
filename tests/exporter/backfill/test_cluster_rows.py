"""Runs: consecutive observations of a partition that say the same become one row over their steps."""
from __future__ import annotations

from kafka_jmx_sidecar.exporter.backfill.cluster_rows import runs

SCHEMA = ("t long, k0 long, k1 long, topic string, partition int, leader int, placeholders int, has_leader boolean, "
          "leader_live boolean, replicas int, adding int, reassigning boolean, isr int, min_isr int, elr int")


def row(t, k0, k1, partition, isr, leader=1):
    return (t, k0, k1, "a", partition, leader, 0, leader >= 0, leader >= 0, 3, 0, False, isr, 2, None)


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


def test_totals_are_the_recompute_on_the_same_states(spark):
    """The cluster's sums on Spark equal the live recompute's (mbeans/recompute.py, cluster_view) on
    the same partition states, and the hand count; under the catalog's ObjectNames."""
    from kafka_jmx_sidecar.exporter.backfill.cluster_rows import total_rows
    from kafka_jmx_sidecar.mbeans.cluster_view import judge_cluster
    from kafka_jmx_sidecar.mbeans.health import KAFKA_3_7, PartitionState, counts_of
    from kafka_jmx_sidecar.mbeans.recompute import offline_partitions

    states = [
        PartitionState("a", 0, 1, (1, 2, 3), (1, 2, 3), min_isr=2),
        PartitionState("a", 1, -1, (1, 2, 3), (3,), min_isr=2),  # no leader: offline
        PartitionState("a", 2, None, (2, 3), (), min_isr=2),  # no leader: offline
        PartitionState("a", 3, 2, (2, 3, 4), (2,), min_isr=2),  # under min ISR
        PartitionState("a", 4, 3, (3, 4, 1), (3, 4), (), (), 2),  # at min ISR
    ]
    rows = [(0, 0, 9, s.topic, s.partition, s.leader if s.leader is not None else -1, 0, *counts_of(s))
            for s in states]
    got = {r.objectname: r.value for r in total_rows(spark.createDataFrame(rows, SCHEMA), KAFKA_3_7).collect()}
    view = judge_cluster(states, KAFKA_3_7)
    assert got["kafka.controller:type=KafkaController,name=OfflinePartitionsCount"] == \
        offline_partitions(states) == view.offline == 2
    for name, value in view.totals.items():
        assert got[f"kafka.server:type=ReplicaManager,name={name}"] == value, name
    assert got["kafka.server:type=ReplicaManager,name=UnderMinIsrPartitionCount"] == 1
    assert got["kafka.server:type=ReplicaManager,name=AtMinIsrPartitionCount"] == 1
    assert got["kafka.server:type=ReplicaManager,name=LeaderCount"] == 3
    assert len(got) == len(view.totals) + 1


def test_elr_figures_on_spark_are_the_cluster_views_and_absent_where_not_known(spark):
    """kafka-4.1's ELR figures from describe-dump rows (Spark Columns) equal the cluster-wide mode's
    (mbeans/cluster_view.py) on the same states, per partition and summed; at a time when a
    partition's ELR is not known (a dump without Elr:), neither its figures nor the sums exist."""
    from kafka_jmx_sidecar.exporter.backfill.cluster_rows import partition_rows, total_rows
    from kafka_jmx_sidecar.mbeans.cluster_view import judge_cluster
    from kafka_jmx_sidecar.mbeans.health import KAFKA_4_1, PartitionState, counts_of

    states = [
        PartitionState("a", 0, 1, (1, 2, 3), (1,), min_isr=2, eligible_leader_replicas=(2,), last_known_elr=()),
        PartitionState("a", 1, None, (2, 3), (), min_isr=2, eligible_leader_replicas=(2, 3), last_known_elr=()),
        PartitionState("a", 2, None, (3,), (), min_isr=2, eligible_leader_replicas=(), last_known_elr=(3,)),
        PartitionState("a", 3, 1, (1, 2), (1, 2), min_isr=2, eligible_leader_replicas=(), last_known_elr=()),
    ]
    unknown = [s._replace(eligible_leader_replicas=None, last_known_elr=None) for s in states]

    def frame(t, k0, k1, these):
        return [(t, k0, k1, s.topic, s.partition, s.leader if s.leader is not None else -1, 0, *counts_of(s))
                for s in these]
    df = spark.createDataFrame(frame(0, 0, 4, states) + frame(1, 5, 9, unknown), SCHEMA)
    totals = {(r.k0, r.objectname): r.value for r in total_rows(df, KAFKA_4_1).collect()}
    view = judge_cluster(states, KAFKA_4_1)
    assert view.elr_totals == {"UnderMinIsrPartitionCount": 1, "OfflineCleanPartitionCount": 1,
                               "OfflineUncleanPartitionCount": 1}
    for name, value in view.elr_totals.items():
        assert totals[(0, f"kafka.cluster:type=Elr,name={name}")] == value, name
        assert (5, f"kafka.cluster:type=Elr,name={name}") not in totals
    assert judge_cluster(unknown, KAFKA_4_1).elr_totals is None
    per = {(r.k0, r.objectname): r.value for r in partition_rows(df, KAFKA_4_1).collect()}
    for i, (topic, partition) in enumerate(zip(view.topic, view.partition)):
        leader = "none" if view.leader[i] < 0 else str(view.leader[i])
        for gauge in ("ElrUnderMinIsr", "ElrOfflineClean", "ElrOfflineUnclean"):
            name = f"kafka.cluster:type=Partition,name={gauge},leader={leader},topic=a,partition={partition}"
            assert per[(0, name)] == view.gauges[gauge][i], name
            assert (5, name) not in per
