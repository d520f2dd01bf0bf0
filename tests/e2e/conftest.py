"""Fixtures shared by the end-to-end modules."""
from __future__ import annotations

import pytest

from kafka_jmx_sidecar.mbeans.simulator import Simulator


@pytest.fixture(scope="package")
def big_broker():
    """40,000 partitions (Simulator.start(partitions=40_000): RF 3 on brokers 1-3, posing as
    broker 1, which leads a third of them): the first poll with no rules reads ~430,000 MBeans (a
    minute or more). Started once (~20 s) for every module that asks (test_operations.py,
    test_panels_at_40k_partitions.py); a module that changes it puts it back before it ends."""
    with Simulator.start(partitions=40_000) as sim:
        yield sim
