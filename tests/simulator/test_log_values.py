"""The simulator's realistic log values (mbeans/simulator/values.py, LogValues.java): the classes of
partitions in their shares, each serving what its class serves, reproducible from the seed. What a
real broker serves in each class: tests/real/test_simulator_vs_broker.py."""
from __future__ import annotations

import re
import time

import pytest

from kafka_jmx_sidecar.mbeans.simulator.values import EMPTY_LOG, RECORDS_PER_BATCH, VALUE_BYTES, LogValues, stored_bytes

PARTITIONS = 1000
_MEMBER = re.compile(r"kafka\.(?:log|cluster|server):type=\w+,name=(\w+),(?:clientId=[^,]+,)?topic=(synthetic-\d+),"
                     r"partition=(\d+)")  # the cluster's topics, not the captured inventory's metadata log


def _read(jmx) -> dict[tuple[str, int], dict[str, int]]:
    """(topic, partition) -> {family name: value} for the Log gauges, LastStableOffsetLag and ConsumerLag."""
    import jpype

    from tests.simulator.sim_jmx import to_py

    value = jpype.JArray(jpype.JString)(["Value"])
    out: dict[tuple[str, int], dict[str, int]] = {}
    for pattern in ("kafka.log:type=Log,*", "kafka.cluster:type=Partition,name=LastStableOffsetLag,*",
                    "kafka.server:type=FetcherLagMetrics,name=ConsumerLag,*"):
        for on in jmx.mbs.queryNames(jmx.on(pattern), None):
            m = _MEMBER.fullmatch(str(on.toString()))
            if m:
                got = jmx.mbs.getAttributes(on, value)
                out.setdefault((m.group(2), int(m.group(3))), {})[m.group(1)] = to_py(got.get(0).getValue())
    return out


@pytest.fixture(scope="module")
def readings(module_simulators, jvm):
    from tests.simulator.sim_jmx import Jmx

    values = LogValues(seed=7)
    first = module_simulators.start(partitions=PARTITIONS, log_values=values)
    again = module_simulators.start(partitions=PARTITIONS, log_values=values)
    other = module_simulators.start(partitions=200, log_values=LogValues(seed=8))
    jmx = [Jmx(s.url) for s in (first, again, other)]
    try:
        a = _read(jmx[0])
        time.sleep(1.0)
        return values, a, _read(jmx[0]), _read(jmx[1]), _read(jmx[2])
    finally:
        for j in jmx:
            j.close()


def _log(v: dict) -> dict:
    return {k: v[k] for k in EMPTY_LOG}


def test_each_class_serves_what_it_serves_and_in_its_share(readings):
    values, a, b, _, _ = readings
    empty = [k for k, v in a.items() if v["LogEndOffset"] == 0]
    expired = [k for k, v in a.items() if v["Size"] == 0 and v["LogEndOffset"] > 0]
    busy = [k for k in a if b[k]["LogEndOffset"] != a[k]["LogEndOffset"]]
    idle = [k for k in a if k not in empty and k not in expired and k not in busy]
    n = len(a)
    assert n == PARTITIONS
    for keys, share in ((empty, values.empty), (expired, values.expired), (busy, values.busy)):
        assert abs(len(keys) / n - share) < 0.03, (len(keys), share)
    assert all(_log(a[k]) == EMPTY_LOG and a[k]["LastStableOffsetLag"] == 0 for k in empty)
    for k in expired:  # retention deleted every record: the log starts where it ends
        assert a[k]["LogStartOffset"] == a[k]["LogEndOffset"] and a[k]["NumLogSegments"] == 1
    smallest, largest = (stored_bytes(VALUE_BYTES[0], RECORDS_PER_BATCH[1]),
                         stored_bytes(VALUE_BYTES[1], RECORDS_PER_BATCH[0]))
    for k in idle:
        v = a[k]
        kept = v["LogEndOffset"] - v["LogStartOffset"]
        assert kept > 0 and smallest * kept - 1 <= v["Size"] <= largest * kept, (k, v)
        assert v["NumLogSegments"] >= 1 + v["Size"] // (1 << 30)
        assert _log(b[k]) == _log(v) and b[k]["LastStableOffsetLag"] == 0  # nothing written: nothing moves
    for k in busy:  # written to between the two reads
        assert b[k]["Size"] > a[k]["Size"] and b[k]["LogEndOffset"] > a[k]["LogEndOffset"]
    transactional = [k for k in busy if a[k]["LastStableOffsetLag"] > 0]
    assert 0 < len(transactional) < len(busy) and not [k for k in a if k not in busy and a[k]["LastStableOffsetLag"]]


def test_a_few_followers_lag_and_their_lag_grows(readings):
    values, a, b, _, _ = readings
    followed = [k for k in a if "ConsumerLag" in a[k]]
    lagging = [k for k in followed if a[k]["ConsumerLag"] > 0]
    assert len(followed) == PARTITIONS * 2 // 3  # RF 3 on 3 brokers: a third led here
    assert 0 < len(lagging) and abs(len(lagging) / len(followed) - values.lagging) < 0.015
    assert all(b[k]["ConsumerLag"] > a[k]["ConsumerLag"] for k in lagging)


def test_the_same_seed_gives_the_same_values_and_another_seed_others(readings):
    _, a, b, same, other = readings
    unmoved = [k for k in a if a[k] == b[k] and "ConsumerLag" not in a[k] or a[k] == b[k] and not a[k]["ConsumerLag"]]
    assert len(unmoved) > PARTITIONS * 0.8
    assert all(same[k] == a[k] for k in unmoved)
    assert sum(other[k] != a[k] for k in other) > len(other) * 0.7
