"""exporter/source/broker.py against a real JVM (harness/JmxTarget.java): the partition gauge
families learned by query serve the same values as reading every MBean would, poll after poll,
while values move, and with fewer queries once the previous poll's values are known."""
from __future__ import annotations

import pytest

from kafka_jmx_sidecar.exporter.source.broker import JmxSource

from kafka_jmx_sidecar.exporter.config.load import broker_settings, jmx_settings
from kafka_jmx_sidecar.exporter.rule_engine.config import parse_config
from kafka_jmx_sidecar.exporter.config.sidecar import SidecarSettings
from harness.jmx_target import Target

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
    return JmxSource(config, broker_settings(config, SidecarSettings(names_refresh_seconds=3600)))


def test_the_stores_and_their_passwords_reach_the_jmx_settings():
    config = parse_config("hostPort: h:1\nssl:\n  trustStore: {filename: /t.jks, password: '${TRUST_PASS}'}\n"
                          "  keyStore: /k.p12\n  keyStorePassword: k\n", env={"TRUST_PASS": "t"})
    jmx = jmx_settings(config, SidecarSettings(jvm_options=()))
    assert (jmx.ssl, jmx.trust_store, jmx.trust_store_password, jmx.key_store, jmx.key_store_password) == \
        (True, "/t.jks", "t", "/k.p12", "k")


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
    members = [mb for t in result.tables for mb in map(t.mbean, range(len(t))) if mb is not None]
    for mb in list(result.mbeans) + members:
        (attr,) = mb.attributes
        assert attr.name == "Value" and mb.class_name == "com.yammer.metrics.reporting.JmxReporter$Gauge"
        out[str(mb.name)] = attr.value
    return out, result.round_trips


def test_queried_families_serve_what_a_full_read_would_while_values_move(target):
    truth = Truth(target)
    for p in (0, 4, 8, 12, 16):  # 3 becomes the most common count (20 of 60)
        truth.set(ISR.format(t=0, p=p), 3)
    source = make_source(target)
    try:
        first, _ = served(source)
        assert first == truth.values
        second, rt = served(source)
        assert second == truth.values
        # after the first poll, with few members off the common value (reads are cheaper than a
        # second query): one query per family (`!= common`), then one read per member it returned
        ur_ones = sum(1 for k, v in truth.values.items() if "UnderReplicated," in k and v)
        common, _ = source.family_reads.common[("kafka.cluster", "Partition", "InSyncReplicasCount")]
        isr_others = sum(1 for k, v in truth.values.items() if "InSync" in k and v != common)
        assert ur_ones == 9 and isr_others == 40 and common == 3
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


def test_with_many_members_off_the_common_value_queries_replace_the_reads(target, monkeypatch):
    truth = Truth(target)
    source = make_source(target)
    isr_key = ("kafka.cluster", "Partition", "InSyncReplicasCount")
    try:
        for p in (2, 6, 10, 14, 18):  # 0 becomes the most common count (20), then 3 (15)
            truth.set(ISR.format(t=0, p=p), 0)
        served(source)
        served(source)
        isr = [v for k, v in truth.values.items() if "InSync" in k]
        assert source.family_reads.common[isr_key] == (0, 3)
        neither = sum(1 for v in isr if v not in (0, 3))
        ur_ones = sum(1 for k, v in truth.values.items() if "UnderReplicated," in k and v)
        assert (len(isr), neither, ur_ones) == (60, 25, 9)

        # reads cost more than a query beyond 30 names. Both families have 0 as their common
        # value: one query of kafka.cluster:type=Partition,* asks `!= 0` for both. UnderReplicated's
        # 9 ones are then read; InSyncReplicasCount asks `!= 0 and != 3`, keeps the members that
        # held 3 and reads the other 25
        monkeypatch.setattr(source.family_reads, "_reads_per_query", lambda: 30)
        got, rt = served(source)
        assert got == truth.values
        assert rt == 1 + ur_ones + (1 + neither) + 1  # + ReplicaManager's one read

        # a query always beats reads: UnderReplicated `!= 0 and != 1`, nothing to read;
        # InSyncReplicasCount: the 25 members not holding 3 are too many to read, so `== 3`
        # tells, and those 25 are read
        monkeypatch.setattr(source.family_reads, "_reads_per_query", lambda: 0)
        got, rt = served(source)
        assert got == truth.values
        assert rt == 1 + 1 + (2 + neither) + 1

        # a member moving from the second value to a third one, and one moving to the second
        # value, between polls: read, not guessed
        monkeypatch.setattr(source.family_reads, "_reads_per_query", lambda: 30)
        name = next(k for k, v in truth.values.items() if "InSync" in k and v == 3)
        truth.set(name, 5)
        name = next(k for k, v in truth.values.items() if "InSync" in k and v not in (0, 3, 5))
        truth.set(name, 3)
        assert served(source)[0] == truth.values
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


def test_the_first_poll_learns_many_values_with_one_query_per_small_value(target, monkeypatch):
    truth = Truth(target)
    source = make_source(target)
    try:
        monkeypatch.setattr(source.family_reads, "_reads_per_query", lambda: 0)
        got, _ = served(source)
        assert got == truth.values
        # the second poll asks about the values it learned: for UnderReplicated `!= 0` only
        asked = []
        query_members = source.client.query_members
        monkeypatch.setattr(source.client, "query_members",
                            lambda pattern, families, *a, **kw: asked.append((pattern, a))
                            or query_members(pattern, families, *a, **kw))
        got, _ = served(source)
        assert got == truth.values
        ur = [a for p, a in asked if "UnderReplicated" in p]
        assert ur[0] == ("Value", "!=", 0) and ("Value", "==", 1) not in ur
    finally:
        source.close()


def test_members_kept_as_columns_have_the_names_and_hashes_the_broker_has(target):
    """The JVM lists the partition families as columns; each member must come back as the name
    the broker registered, with its canonical name's String.hashCode() (the visiting order)."""
    from kafka_jmx_sidecar.exporter.source.broker import _member_canonical
    from kafka_jmx_sidecar.exporter.base.model import ObjectName
    from kafka_jmx_sidecar.exporter.rule_engine.order import canonical_name, java_string_hash

    source = make_source(target)
    try:
        served(source)
        assert {f.key[2] for f in source._families} == {"UnderReplicated", "InSyncReplicasCount"}
        for f in source._families:
            m = f.members
            assert len(m) == TOPICS * PARTITIONS
            canonical = _member_canonical(m)
            for i in range(len(m)):
                name = ObjectName.parse(m.name(i))
                assert canonical(i) == canonical_name(name)
                assert m.hash[i] & 0xFFFFFFFF == java_string_hash(canonical(i))
                assert f.table.object_name(i) == name
    finally:
        source.close()


def test_a_names_refresh_keeps_the_tables_when_no_member_came_or_went(target):
    """A names refresh (every namesRefreshSeconds) usually finds the same names: the JVM then
    hands back the same member lists, and the tables, their ranks and values stay the same
    objects. A member added or removed gives new tables holding exactly the broker's members."""
    source = make_source(target)
    try:
        first, _ = served(source)
        tables = {f.key: f.table for f in source._families}
        source._listed_at = None  # due for a refresh
        again, _ = served(source)
        assert again == first
        assert {f.key: f.table for f in source._families} == tables  # the same objects (identity)
        added = UR.format(t=1, p=PARTITIONS + 3)
        assert target.command(f"add {added} int 1") == "OK"
        source._listed_at = None
        after_add, _ = served(source)
        assert after_add == {**first, added: 1}
        ur = next(f for f in source._families if f.key[2] == "UnderReplicated")
        assert ur.table is not tables[ur.key] and len(ur.table) == TOPICS * PARTITIONS + 1
        assert target.command(f"remove {added}") == "OK"
        source._listed_at = None
        assert served(source)[0] == first
    finally:
        source.close()
