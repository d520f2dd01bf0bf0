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
