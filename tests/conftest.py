"""Fixtures shared by every test directory."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():
    """One local Spark session for the whole test run (its start costs about 5 s): local[2], the
    backfill job's own settings (exporter/backfill/session.py)."""
    from kafka_jmx_sidecar.exporter.backfill.session import spark_session

    session = spark_session("local[2]", [("spark.sql.shuffle.partitions", "4"),
                                         ("spark.driver.memory", "1g")])
    yield session
    session.stop()


@pytest.fixture(scope="session")
def hdfs():
    """One real HDFS for the whole test run (Hadoop's minicluster: a NameNode and two DataNodes in a
    JVM of their own, harness/hdfs.py), its NameNode's superuser another user than the tests'."""
    from harness.hdfs import Hdfs

    cluster = Hdfs().start()
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def spark_cluster():
    """One Spark standalone cluster for the whole test run: a master and two workers of one core
    each, every one a process of its own (harness/spark_cluster.py)."""
    from harness.spark_cluster import SparkCluster

    cluster = SparkCluster(workers=2).start()
    yield cluster
    cluster.stop()
