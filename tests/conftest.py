"""Fixtures shared by every test directory."""
from __future__ import annotations

import pytest

# the hook that stops session fixtures after their last user (tests/last_use.py)
from tests.last_use import pytest_runtest_teardown, stop_after_last_use  # noqa: F401


@pytest.fixture(scope="session")
def spark(request):
    """One local Spark session for the tests that use it (its start costs about 5 s): local[2], the
    backfill job's own settings (exporter/backfill/session.py)."""
    from kafka_jmx_sidecar.exporter.backfill.session import spark_session

    session = spark_session("local[2]", [("spark.sql.shuffle.partitions", "4"),
                                         ("spark.driver.memory", "1g")])
    stop = stop_after_last_use(request, session.stop)
    yield session
    stop()


@pytest.fixture(scope="session")
def hdfs(request):
    """One real HDFS for the tests that use it (Hadoop's minicluster: a NameNode and two DataNodes in
    a JVM of their own, harness/hdfs.py), its NameNode's superuser another user than the tests'."""
    from harness.hdfs import Hdfs

    cluster = Hdfs().start()
    stop = stop_after_last_use(request, cluster.stop)
    yield cluster
    stop()


@pytest.fixture(scope="session")
def spark_cluster(request):
    """One Spark standalone cluster for the tests that use it: a master and two workers of one core
    each, every one a process of its own (harness/spark_cluster.py)."""
    from harness.spark_cluster import SparkCluster

    cluster = SparkCluster(workers=2).start()
    stop = stop_after_last_use(request, cluster.stop)
    yield cluster
    stop()
