"""exporter.jmx_source against a real JVM (tests/exporter/JmxTarget.java): the partition gauge
families learned by query serve the same values as reading every MBean would, poll after poll,
while values move, and with fewer queries once the previous poll's values are known."""
from __future__ import annotations

import pytest

from exporter.jmx_source import JmxSource
from exporter.rules.config import parse_config
from exporter.settings import SidecarSettings
from tests.exporter.jmx_target import Target

TOPICS, PARTITIONS = 3, 20
UR = "kafka.cluster:type=Partition,name=UnderReplicated,topic=t{t},partition={p}"
ISR = "kafka.cluster:type=Partition,name=InSyncReplicasCount,topic=t{t},partition={p}"


def initial(family: str, i: int) -> int:
    """JmxTarget.java's values for partition i (= topic * PARTITIONS + partition)."""
    return (1 if i % 7 == 3 else 0) if family == "UR" else (9 if i % 50 == 49 else i % 4)


@pytest.fixture
def target():
    with Target(topics=TOPICS, partitions=PARTITIONS) as t:
        yield t


def make_source(target: Target) -> JmxSource:
    config = parse_config(f"""
hostPort: {target.host_port}
includeObjectNames: ["kafka.cluster:type=Partition,name=UnderReplicated,*",
                     "kafka.cluster:type=Partition,name=InSyncReplicasCount,*",
                     "kafka.server:type=ReplicaManager,*"]
""")
    return JmxSource(config, SidecarSettings(names_refresh_seconds=3600))


class Truth:
    """What reading every MBean would give, kept up to date as the test changes values."""

    def __init__(self, target: Target):
        self.target = target
        self.values = {}
        for t in range(TOPICS):
            for p in range(PARTITIONS):
                i = t * PARTITIONS + p
                self.values[UR.format(t=t, p=p)] = initial("UR", i)
                self.values[ISR.format(t=t, p=p)] = initial("ISR", i)
        self.values["kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions"] = 0

    def set(self, name: str, value: int) -> None:
        self.target.command(f"set {name} int {value}")
        self.values[name] = value


def served(source: JmxSource) -> tuple[dict[str, object], int]:
    result = source.read()
    out = {}
    for mb in result.mbeans:
        (attr,) = mb.attributes
        assert attr.name == "Value" and mb.class_name == "com.yammer.metrics.reporting.JmxReporter$Gauge"
        out[str(mb.name)] = attr.value
    return out, result.round_trips


def test_queried_families_serve_what_a_full_read_would_while_values_move(target):
    truth = Truth(target)
    source = make_source(target)
    try:
        first, _ = served(source)
        assert first == truth.values
        second, rt = served(source)
        assert second == truth.values
        # after the first poll, with few members off the common value (reads are cheaper than a
        # second query): one query per family (`!= common`), then one read per member it returned
        ur_ones = sum(1 for k, v in truth.values.items() if "UnderReplicated," in k and v)
        common, _ = source._common[("kafka.cluster", "Partition", "InSyncReplicasCount")]
        isr_others = sum(1 for k, v in truth.values.items() if "InSync" in k and v != common)
        assert ur_ones == 9 and isr_others == 45
        assert rt == (1 + ur_ones) + (1 + isr_others) + 1  # + ReplicaManager's one read

        # moves: common -> other, other -> common, a value never seen, a flag raised and lowered
        truth.set(ISR.format(t=0, p=0), 3)
        truth.set(ISR.format(t=0, p=1), 0)
        truth.set(ISR.format(t=0, p=2), 7)
        truth.set(UR.format(t=1, p=5), 1)
        truth.set(UR.format(t=0, p=3), 0)
        assert served(source)[0] == truth.values
        # the next poll asks about the new most common values
        for p in range(PARTITIONS):
            truth.set(ISR.format(t=2, p=p), 2)
        assert served(source)[0] == truth.values
        assert served(source)[0] == truth.values
    finally:
        source.close()


def test_with_many_members_off_the_common_value_a_second_query_replaces_the_reads(target, monkeypatch):
    truth = Truth(target)
    source = make_source(target)
    try:
        served(source)
        served(source)
        monkeypatch.setattr(source, "_reads_per_query", lambda: 0)  # a query always beats reads
        source.client.take_stats()
        got, rt = served(source)
        assert got == truth.values
        isr = [v for k, v in truth.values.items() if "InSync" in k]
        common, second = source._common[("kafka.cluster", "Partition", "InSyncReplicasCount")]
        assert (common, second) == (3, 0) or isr.count(common) >= isr.count(second) >= isr.count(1)
        others = sum(1 for v in isr if v not in (common, second))
        ur_ones = sum(1 for k, v in truth.values.items() if "UnderReplicated," in k and v)
        # UnderReplicated: `!= 0` then `== 1` (nothing left to read);
        # InSyncReplicasCount: `!= common`, `== second`, then one read per remaining member;
        # ReplicaManager: one read
        assert ur_ones > 0
        assert rt == 2 + 2 + others + 1
        # a member moving from the second value to a third one between polls is read, not guessed
        name = next(k for k, v in truth.values.items() if "InSync" in k and v == second)
        truth.set(name, 5)
        assert served(source)[0] == truth.values
    finally:
        source.close()


def test_same_values_give_the_same_mbean_objects(target):
    source = make_source(target)
    try:
        a = {str(m.name): m for m in source.read().mbeans}
        b = {str(m.name): m for m in source.read().mbeans}
        c = {str(m.name): m for m in source.read().mbeans}
        assert b.keys() == c.keys() == a.keys()
        assert all(b[k] is c[k] for k in b if "type=Partition," in k)
    finally:
        source.close()
