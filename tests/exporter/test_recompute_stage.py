"""exporter/recompute/stage.py: what each mode does on brokers of each release, where the recomputed
MBeans enter the rules, and the inputs' fallbacks (metric and one log line). No JVM: the source's
ReadResult is made here as the JMX edge makes it."""
from __future__ import annotations

import logging
from array import array

import pytest

from kafka_jmx_sidecar.exporter.source.admin.errors import AdminError
from kafka_jmx_sidecar.exporter.source.admin.view import (AdminView, BrokerConfig, Cluster, Broker, Input, Partition, Reason, TopicConfig,
                                 Unknown)
from kafka_jmx_sidecar.exporter.base.model import Attribute, BeanTable, MBean, ObjectName
from kafka_jmx_sidecar.exporter.recompute.settings import RecomputeSettings, recompute_settings
from kafka_jmx_sidecar.exporter.recompute.stage import ADDED, NONE, READ, REPLACED, Recompute, action
from kafka_jmx_sidecar.exporter.rule_engine import RuleEngine
from kafka_jmx_sidecar.exporter.rule_engine.config import parse_config
from kafka_jmx_sidecar.exporter.poll.snapshot import TEXT, Snapshot, assemble
from kafka_jmx_sidecar.exporter.source.protocol import BrokerReadings, ReadResult
from kafka_jmx_sidecar.mbeans import catalog
from kafka_jmx_sidecar.mbeans.broker_recompute import HostedPartitions
from kafka_jmx_sidecar.mbeans.health import PROFILES

GAUGE = catalog.Kind.GAUGE.class_name
RM = {s.name: s for s in catalog.REPLICA_MANAGER}
PART = {s.name: s for s in catalog.PARTITION}


def actions(version, mode, semantics="kafka-3.7"):
    specs = [RM[n] for n in ("UnderReplicatedPartitions", "UnderMinIsrPartitionCount", "AtMinIsrPartitionCount",
                             "ReassigningPartitions")] + \
            [PART[n] for n in ("UnderReplicated", "UnderMinIsr", "AtMinIsr", "InSyncReplicasCount", "ReplicasCount")]
    return [action(s, mode, version, PROFILES[semantics]) for s in specs]


# columns: URP, UnderMinIsrCount, AtMinIsrCount, Reassigning | UnderReplicated, UnderMinIsr, AtMinIsr, ISRC, RC
@pytest.mark.parametrize("version, mode, semantics, expected", [
    # 2.2: no AtMinIsr (2.3), no ReassigningPartitions (2.5); every formula but the ISR's size differs
    ("2.2.1", "outdated", "kafka-3.7", [REPLACED, REPLACED, ADDED, ADDED, REPLACED, REPLACED, ADDED, READ, REPLACED]),
    ("2.2.1", "missing", "kafka-3.7", [READ, READ, ADDED, ADDED, READ, READ, ADDED, READ, READ]),
    ("2.2.1", "all", "kafka-3.7", [REPLACED, REPLACED, ADDED, ADDED, REPLACED, REPLACED, ADDED, REPLACED, REPLACED]),
    ("2.2.1", "off", "kafka-3.7", [READ, READ, NONE, NONE, READ, READ, NONE, READ, READ]),
    ("2.2.1", "outdated", "legacy", [READ, READ, ADDED, ADDED, READ, READ, ADDED, READ, READ]),
    # 0.11: no UnderMinIsr either (1.0)
    ("0.11.0.3", "outdated", "kafka-3.7", [REPLACED, ADDED, ADDED, ADDED, REPLACED, ADDED, ADDED, READ, REPLACED]),
    # 2.4: AtMinIsr, but the pre-KIP-352 URP and replica count
    ("2.4.1", "outdated", "kafka-3.7", [REPLACED, REPLACED, REPLACED, ADDED, REPLACED, REPLACED, REPLACED, READ, REPLACED]),
    # 3.6: KIP-352 already; only the effective min ISR (3.7) differs
    ("3.6.2", "outdated", "kafka-3.7", [READ, REPLACED, REPLACED, READ, READ, REPLACED, REPLACED, READ, READ]),
    ("3.6.2", "outdated", "kafka-2.5", [READ] * 9),
    ("4.1.0", "outdated", "kafka-3.7", [READ] * 9),
    ("4.1.0", "outdated", "legacy", [REPLACED, REPLACED, REPLACED, READ, REPLACED, REPLACED, REPLACED, READ, REPLACED]),
])
def test_what_each_mode_does(version, mode, semantics, expected):
    assert actions(version, mode, semantics) == expected


def test_settings_refuse_topic_command_and_unknown_keys():
    def error(path, problem, fix):
        return ValueError(f"{'.'.join(map(str, path))}: {problem}; {fix}")

    assert recompute_settings({}, error) == RecomputeSettings("kafka-3.7", "outdated", None, {})
    s = recompute_settings({"semantics": "legacy", "mode": "all",
                            "minInsyncReplicas": {"default": 2, "topics": {"orders": 3}}}, error)
    assert (s.semantics, s.mode, s.min_isr_default, dict(s.min_isr_topics)) == ("legacy", "all", 2, {"orders": 3})
    with pytest.raises(ValueError, match="semantics: 'topic-command' is not a broker-gauge profile"):
        recompute_settings({"semantics": "topic-command"}, error)
    with pytest.raises(ValueError, match="mode: 'sometimes' is not a mode"):
        recompute_settings({"mode": "sometimes"}, error)
    with pytest.raises(ValueError, match=r"topics.orders: must be a whole number >= 1, got 0"):
        recompute_settings({"minInsyncReplicas": {"topics": {"orders": 0}}}, error)


# --- a 2.2 broker leading orders-0 (ISR 2 of 3) and single-0 (RF 1), following orders-1 ---------

MEMBERS = [("orders", 0, 2, 3), ("orders", 1, 0, 0), ("single", 0, 1, 1)]
TOPICS = ["orders", "single"]


def columns(values, rank_start):
    topic = array("i", [TOPICS.index(m[0]) for m in MEMBERS])
    partition = array("i", [m[1] for m in MEMBERS])
    return topic, partition, array("I", range(rank_start, rank_start + len(MEMBERS))), array("q", values)


def table(name, values, rank_start, topic, partition):
    _, _, rank, vals = columns(values, rank_start)
    return BeanTable("kafka.cluster", (("type", "Partition"), ("name", name)), GAUGE, "Value",
                     catalog.ATTRIBUTE_DESCRIPTION, "java.lang.Object", True, TOPICS, topic, partition, rank, vals,
                     bytearray(b"\x01" * len(MEMBERS)))


def broker_2_2(version="2.2.1"):
    """What a 2.2 broker serves: its own (legacy) values; ranks 0-1 the ReplicaManager gauges."""
    topic, partition, _, _ = columns([0] * 3, 0)
    rm = [MBean(ObjectName("kafka.server", (("type", "ReplicaManager"), ("name", n))), GAUGE,
                (Attribute("Value", v, catalog.ATTRIBUTE_DESCRIPTION, "java.lang.Object"),))
          for n, v in (("UnderReplicatedPartitions", 1), ("UnderMinIsrPartitionCount", 0))]
    tables = [table("UnderReplicated", [1, 0, 0], 2, topic, partition),
              table("UnderMinIsr", [0, 0, 0], 5, topic, partition),
              table("InSyncReplicasCount", [m[2] for m in MEMBERS], 8, topic, partition),
              table("ReplicasCount", [m[3] for m in MEMBERS], 11, topic, partition)]
    hosted = HostedPartitions(TOPICS, topic, partition, tables[2].values, tables[3].values)
    return ReadResult(rm, tables=tables, ranks=[0, 1], broker=BrokerReadings("1", version, hosted))


def config(includes=None):
    text = "rules:\n- pattern: '.*'\n"
    if includes:
        text = "includeObjectNames:\n" + "".join(f"- '{p}'\n" for p in includes) + text
    return parse_config(text)


def stage(mode="outdated", semantics="kafka-3.7", min_isr=None, default=None, admin=None, includes=None):
    return Recompute(RecomputeSettings(semantics, mode, default, min_isr or {}), config(includes), admin)


def values(result):
    out = {}
    for mb in result.mbeans:
        out[mb.name.get("name")] = mb.attributes[0].value
    for t in result.tables:
        for i in range(len(t)):
            if t.present[i]:
                out[(t.keys[1][1], t.topics[t.topic[i]], t.partition[i])] = t.values[i]
    return out


def test_2_2_broker_outdated_kafka_3_7():
    s = stage(min_isr={"orders": 2, "single": 1})
    r = s.apply(broker_2_2())
    v = values(r)
    # orders-0: RF 3, ISR 2, min 2 -> URP, at min; single-0: RF 1, min 1 -> at min (effective)
    assert v["UnderReplicatedPartitions"] == 1 and v["UnderMinIsrPartitionCount"] == 0
    assert v["AtMinIsrPartitionCount"] == 2 and v["ReassigningPartitions"] == 0
    assert [v[("AtMinIsr", t, p)] for t, p, _, _ in MEMBERS] == [1, 0, 1]
    assert s.outcome.states["kafka.server:type=ReplicaManager,name=AtMinIsrPartitionCount"] == ADDED
    assert s.outcome.states["kafka.cluster:type=Partition,name=UnderReplicated"] == REPLACED
    assert s.outcome.states["kafka.cluster:type=Partition,name=InSyncReplicasCount"] == READ
    assert s.outcome.broker_semantics == "legacy" and s.outcome.led == 2


def test_replaced_keep_their_place_added_come_after_everything():
    r = stage(min_isr={"orders": 2}).apply(broker_2_2())
    assert [mb.name.get("name") for mb in r.mbeans] == ["UnderReplicatedPartitions", "UnderMinIsrPartitionCount",
                                                         "AtMinIsrPartitionCount", "ReassigningPartitions"]
    assert list(r.ranks) == [0, 1, 14, 15]
    by_name = {t.keys[1][1]: t for t in r.tables}
    assert list(by_name["UnderReplicated"].rank) == [2, 3, 4]  # the broker's own places
    assert list(by_name["AtMinIsr"].rank) == [16, 17, 18]
    # the rules see them under Kafka's names, in that order
    families = RuleEngine(config()).series(r.mbeans, r.ranks, r.tables)
    snap = Snapshot.render_families(families, 1.0, 0.0, [TEXT], "0.x")
    lines = [l for l in b"".join(assemble(snap, TEXT, b"", gzip_wanted=False)[1]).decode().splitlines()
             if not l.startswith("#")]
    assert 'kafka_server_ReplicaManager_Value{name="AtMinIsrPartitionCount",} 2.0' in lines
    assert 'kafka_cluster_Partition_Value{name="AtMinIsr",topic="single",partition="0",} 1.0' in lines
    assert 'kafka_cluster_Partition_Value{name="UnderReplicated",topic="orders",partition="0",} 1.0' in lines
    assert lines.index('kafka_server_ReplicaManager_Value{name="UnderMinIsrPartitionCount",} 0.0') < \
        lines.index('kafka_server_ReplicaManager_Value{name="AtMinIsrPartitionCount",} 2.0')


def test_the_filters_keep_added_families_from_the_rules():
    s = stage(min_isr={"orders": 2}, includes=["kafka.server:type=ReplicaManager,*",
                                               "kafka.cluster:type=Partition,name=UnderReplicated,*"])
    r = s.apply(broker_2_2())
    assert "AtMinIsrPartitionCount" in values(r)  # the includes let ReplicaManager gauges through
    assert not any(t.keys[1][1] == "AtMinIsr" for t in r.tables)
    assert s.outcome.states["kafka.cluster:type=Partition,name=AtMinIsr"] == NONE
    # a filter on one topic lets only its members through
    s = stage(includes=["kafka.cluster:type=Partition,name=AtMinIsr,topic=single,*"])
    r = s.apply(broker_2_2())
    at = next(t for t in r.tables if t.keys[1][1] == "AtMinIsr")
    assert list(at.present) == [0, 0, 1]


def test_missing_min_isr_falls_back_to_1_with_a_metric_and_one_log_line(caplog):
    caplog.set_level(logging.WARNING, logger="kafka_jmx_sidecar.recompute")
    s = stage(min_isr={"orders": 2})
    for _ in range(3):
        s.apply(broker_2_2())
    assert s.outcome.fallbacks[("min_isr", "kafka_default")] == 1  # single
    assert s.outcome.fallbacks[("reassignments", "no_admin_api")] == 2  # the led partitions
    lines = [r.getMessage() for r in caplog.records]
    assert sum("no min.insync.replicas known for 1 topic(s) (single); using 1, Kafka's default" in m
               for m in lines) == 1
    assert sum("reassignments are not known (no_admin_api)" in m and "counts adding replicas" in m
               for m in lines) == 1
    # a configured default is the documented source without the Admin API: no fallback
    s = stage(min_isr={"orders": 2}, default=1)
    s.apply(broker_2_2())
    assert ("min_isr", "kafka_default") not in s.outcome.fallbacks


def test_unknown_version_recomputes_nothing(caplog):
    caplog.set_level(logging.WARNING, logger="kafka_jmx_sidecar.recompute")
    result = broker_2_2()
    result.broker = BrokerReadings(None, None, result.broker.hosted, ["the broker has no app-info MBean"])
    s = stage()
    assert s.apply(result) is result
    assert s.outcome.fallbacks == {("broker_version", "nothing_recomputed"): 1}
    assert any("release is not known" in r.getMessage() for r in caplog.records)


class FakeAdmin:
    def __init__(self, view=None, error=None):
        self.view, self.error = view, error
        self.closed = 0

    def close(self):
        self.closed += 1

    def read(self):
        if self.error:
            raise self.error
        return self.view


def view(unknowns=(), min_isr=2):
    cluster = Cluster("c", 1, (Broker(1, "h", 1), Broker(2, "h", 2), Broker(3, "h", 3)), "Metadata")
    parts = (Partition("orders", 0, 1, (1, 2, 3), (1, 2)), Partition("orders", 1, 2, (2, 3, 1), (2, 3, 1)),
             Partition("single", 0, 1, (1,), (1,)))
    return AdminView(cluster, parts, {"orders": TopicConfig(min_isr), "single": TopicConfig(None)},
                     {b: BrokerConfig() for b in (1, 2, 3)}, unknowns=tuple(unknowns))


def test_admin_api_unsupported_reassignments_fall_back_reported():
    # Kafka 2.2: no ListPartitionReassignments; single's min ISR refused
    unknowns = [Unknown(Input.REASSIGNMENTS, Reason.UNSUPPORTED, "broker 2.2: no ListPartitionReassignments"),
                Unknown(Input.MIN_ISR, Reason.UNAUTHORIZED, "denied", topic="single")]
    s = stage(admin=FakeAdmin(view(unknowns)), default=1)
    v = values(s.apply(broker_2_2()))
    assert v["AtMinIsrPartitionCount"] == 2  # orders-0 at 2 (from the Admin API), single-0 at 1
    assert s.outcome.fallbacks[("reassignments", "admin_api_unsupported")] == 2
    assert s.outcome.fallbacks[("min_isr", "configured_default")] == 1


def test_admin_api_unreachable_falls_back_to_the_configuration(caplog):
    caplog.set_level(logging.WARNING, logger="kafka_jmx_sidecar.recompute")
    s = stage(admin=FakeAdmin(error=AdminError("no broker of 127.0.0.1:1 answered")), min_isr={"orders": 2})
    s.apply(broker_2_2())
    assert s.outcome.fallbacks[("reassignments", "admin_api_unreachable")] == 2
    assert s.outcome.fallbacks[("min_isr", "configured")] == 1  # orders: configured, but the Admin API is the source
    assert any("the Admin API could not be read (no broker of 127.0.0.1:1 answered)" in r.getMessage()
               for r in caplog.records)


def test_admin_api_known_inputs_no_fallback():
    s = stage(admin=FakeAdmin(view()))
    s.apply(broker_2_2())
    assert s.outcome.fallbacks == {("min_isr", "kafka_default"): 1}  # single: no value, no broker default


def test_placeholders_from_the_admin_api_are_counted():
    v = view()
    parts = (Partition("orders", 0, 1, (1, -1, -2), (1,)),) + v.partitions[1:]
    s = stage(admin=FakeAdmin(AdminView(v.cluster, parts, v.topics, v.brokers)))
    s.apply(broker_2_2())
    assert s.outcome.placeholders == {("orders", 0): 2}


def test_a_failed_list_reassignments_makes_the_admin_client_anew():
    # after a controller change kafka-python keeps asking the old controller (UnknownBrokerIdError)
    failed = Unknown(Input.REASSIGNMENTS, Reason.ERROR, "ListPartitionReassignments failed: UnknownBrokerIdError: 3")
    admin = FakeAdmin(view([failed]))
    s = stage(admin=admin)
    s.apply(broker_2_2())
    assert admin.closed == 1 and s.outcome.fallbacks[("reassignments", "admin_api_error")] == 2
    admin.view = view()
    s.apply(broker_2_2())
    assert admin.closed == 1 and ("reassignments", "admin_api_error") not in s.outcome.fallbacks
    # refused is not cured by a new client: kept
    admin.view = view([Unknown(Input.REASSIGNMENTS, Reason.UNAUTHORIZED, "denied")])
    s.apply(broker_2_2())
    assert admin.closed == 1 and s.outcome.fallbacks[("reassignments", "admin_api_unauthorized")] == 2


# --- the ELR figure of the led partitions (kafka-4.1) ------------------------------------------------

def elr_view(known=True):
    """As view(), with min ISR 3 and orders-0 (led here: ISR [1, 2] of 3) keeping 3 in its ELR."""
    v = view(min_isr=3)
    parts = tuple(p.__class__(p.topic, p.partition, p.leader, p.replicas, p.isr,
                              eligible_leader_replicas=((3,) if (p.topic, p.partition) == ("orders", 0) else ())
                              if known else None) for p in v.partitions)
    unknowns = () if known else (Unknown(Input.ELIGIBLE_LEADERS, Reason.UNSUPPORTED, "no DescribeTopicPartitions"),)
    return AdminView(v.cluster, parts, v.topics, v.brokers, unknowns=unknowns)


def test_the_led_partitions_elr_figure_is_added_under_kafka_4_1(caplog):
    # on the 2.2 broker: orders-0 led, 2 < min(3, 3) and ELR [3]: 1; single-0 led, min ISR unknown
    # (1, Kafka's default): not under; orders-1 not led: 0
    s = stage(semantics="kafka-4.1", admin=FakeAdmin(elr_view()))
    v = values(s.apply(broker_2_2()))
    assert (v[("ElrUnderMinIsr", "orders", 0)], v[("ElrUnderMinIsr", "orders", 1)],
            v[("ElrUnderMinIsr", "single", 0)]) == (1, 0, 0)
    assert v["UnderMinIsrPartitionCount"] == 1
    result = s.apply(broker_2_2())
    elr_total = [mb for mb in result.mbeans if mb.name.domain == "kafka.cluster" and mb.name.get("type") == "Elr"]
    assert [(mb.name.get("name"), mb.attributes[0].value) for mb in elr_total] == [("UnderMinIsrPartitionCount", 1)]
    # kafka-3.7 has no ELR figure
    assert not any(k[0] == "ElrUnderMinIsr" for k in values(stage(admin=FakeAdmin(elr_view())).apply(broker_2_2()))
                   if isinstance(k, tuple))


def test_the_elr_figure_not_known_is_absent_with_a_metric_and_one_log_line(caplog):
    caplog.set_level(logging.WARNING, logger="kafka_jmx_sidecar.recompute")
    s = stage(semantics="kafka-4.1", admin=FakeAdmin(elr_view(known=False)))
    for _ in range(2):
        result = s.apply(broker_2_2())
        assert not [t for t in result.tables if t.keys[1][1] == "ElrUnderMinIsr"]
        assert not [mb for mb in result.mbeans if mb.name.get("type") == "Elr"]
        assert s.outcome.fallbacks[("eligible_leader_replicas", "admin_api_unsupported")] == 2  # led partitions
    said = [r.getMessage() for r in caplog.records if "eligible leader replicas" in r.getMessage()]
    assert said == ["recompute: the eligible leader replicas of the led partitions are not known "
                    "(admin_api_unsupported): ElrUnderMinIsr is left out, not published as 0"]
