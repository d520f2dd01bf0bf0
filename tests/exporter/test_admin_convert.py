"""exporter/source/admin/convert.py and view.py: kafka-python's answers (shapes as kafka-python 3.0
returns them, taken from real 4.1, 2.2 and 0.11 brokers) as plain values, and what is unknown."""
from __future__ import annotations

import kafka.errors as kerr

from kafka_jmx_sidecar.exporter.source.admin import convert
from kafka_jmx_sidecar.exporter.source.admin.errors import reason_of, reason_of_code
from kafka_jmx_sidecar.exporter.source.admin.view import AdminView, BrokerConfig, Input, Reason, ReplicaSize, Unknown
from kafka_jmx_sidecar.mbeans.health import PartitionState, judge, KAFKA_3_7

DESCRIBED_CLUSTER_41 = {
    "brokers": [{"broker_id": 2, "host": "127.0.0.1", "is_fenced": False, "port": 9093, "rack": "b"},
                {"broker_id": 1, "host": "127.0.0.1", "is_fenced": False, "port": 9092, "rack": "a"},
                {"broker_id": 3, "host": "127.0.0.1", "is_fenced": True, "port": 9094, "rack": None}],
    "cluster_id": "YaE3gfNQSEqhsBCoXnvJZQ", "controller_id": 2,
}
METADATA_CLUSTER_011 = {  # kafka-python's Metadata fallback: no is_fenced, dead brokers absent
    "brokers": [{"broker_id": 2, "host": "h2", "port": 2, "rack": None}, {"broker_id": 1, "host": "h1", "port": 1, "rack": None}],
    "cluster_id": None, "controller_id": -1,
}


def test_cluster_from_describe_cluster_marks_fenced_brokers_not_live():
    c = convert.cluster_from(DESCRIBED_CLUSTER_41, "DescribeCluster")
    assert [b.id for b in c.brokers] == [1, 2, 3]
    assert (c.brokers[0].rack, c.brokers[0].port, c.brokers[2].fenced) == ("a", 9092, True)
    assert c.live_brokers == {1, 2}
    assert (c.controller_id, c.cluster_id, c.source) == (2, "YaE3gfNQSEqhsBCoXnvJZQ", "DescribeCluster")


def test_cluster_from_metadata_without_controller():
    c = convert.cluster_from(METADATA_CLUSTER_011, "Metadata")
    assert c.live_brokers == {1, 2}
    assert c.controller_id is None and c.cluster_id is None


def _dtp_partition(index, leader, replicas, isr, offline=(), elr=None, last=None):
    return {"error_code": 0, "partition_index": index, "leader_id": leader, "leader_epoch": 0,
            "replica_nodes": list(replicas), "isr_nodes": list(isr), "offline_replicas": list(offline),
            "eligible_leader_replicas": elr, "last_known_elr": last}


def test_partitions_merge_reassignments_and_read_no_leader_as_none():
    topics = [
        {"name": "moving", "error_code": 0, "partitions": [_dtp_partition(0, 1, [2, 3, 1], [1, 2])]},
        {"name": "orders", "error_code": 0, "partitions": [
            _dtp_partition(1, -1, [2], [], offline=[2], elr=[2], last=[2]),
            _dtp_partition(0, 3, [3, 1, 2], [3, 1, 2])]},
    ]
    reassignments = {("moving", 0): {"replicas": [2, 3, 1], "adding_replicas": [2, 3], "removing_replicas": [1]}}
    partitions, unknowns = convert.partitions_from(topics, reassignments)
    assert unknowns == []
    assert [(p.topic, p.partition) for p in partitions] == [("moving", 0), ("orders", 0), ("orders", 1)]
    moving, orders0, orders1 = partitions
    assert (moving.leader, moving.replicas, moving.isr, moving.adding_replicas, moving.removing_replicas) == \
        (1, (2, 3, 1), (1, 2), (2, 3), (1,))
    # kafka-python gives an empty ELR as None; DescribeTopicPartitions always carries the lists
    assert (orders0.eligible_leader_replicas, orders0.last_known_elr, orders0.offline_replicas) == ((), (), ())
    assert (orders1.leader, orders1.isr, orders1.offline_replicas, orders1.eligible_leader_replicas) == (None, (), (2,), (2,))


def test_partitions_from_old_metadata_leave_offline_and_elr_unknown():
    topics = [{"name": "t", "error_code": 0, "partitions": [
        {"error_code": 0, "isr_nodes": [1], "leader_id": 1, "partition_index": 0, "replica_nodes": [1, 2]}]}]
    (p,), _ = convert.partitions_from(topics, None)
    assert p.offline_replicas is None and p.eligible_leader_replicas is None and p.last_known_elr is None
    assert (p.adding_replicas, p.removing_replicas) == ((), ())


def test_a_refused_topic_is_unknown_not_empty():
    topics = [{"name": "secret", "error_code": 29, "partitions": []},
              {"name": "new", "error_code": 5, "partitions": []}]
    partitions, unknowns = convert.partitions_from(topics, {})
    assert partitions == []
    assert [(u.input, u.reason, u.topic) for u in unknowns] == [
        (Input.PARTITIONS, Reason.UNAUTHORIZED, "secret"), (Input.PARTITIONS, Reason.ERROR, "new")]
    assert "TopicAuthorizationFailed (29)" in unknowns[0].detail and "grant" in unknowns[0].detail
    assert "LeaderNotAvailable (5)" in unknowns[1].detail


def _entry(value, source="DYNAMIC_TOPIC_CONFIG", sensitive=False):
    return {"config_source": source, "is_sensitive": sensitive, "read_only": False, "synonyms": [], "value": value}


def test_topic_configs_override_default_and_throttled_replicas():
    described = {
        "orders": {"min.insync.replicas": _entry("2"), "leader.replication.throttled.replicas": _entry("", "DEFAULT_CONFIG"),
                   "follower.replication.throttled.replicas": _entry("", "DEFAULT_CONFIG")},
        "moving": {"min.insync.replicas": _entry("1", "DEFAULT_CONFIG"),
                   "leader.replication.throttled.replicas": _entry("0:1"),
                   "follower.replication.throttled.replicas": _entry("0:2,0:3")},
        "tuned": {"min.insync.replicas": _entry("3", "DYNAMIC_DEFAULT_BROKER_CONFIG")},
    }
    configs, unknowns = convert.topic_configs_from(described, ["orders", "moving", "tuned"])
    assert unknowns == []
    assert (configs["orders"].min_isr, configs["orders"].min_isr_is_default) == (2, False)
    assert (configs["moving"].min_isr, configs["moving"].min_isr_is_default) == (1, True)
    assert (configs["tuned"].min_isr, configs["tuned"].min_isr_is_default) == (3, True)
    assert configs["moving"].follower_throttled_replicas == "0:2,0:3"
    assert convert.throttled_replicas(configs["moving"].follower_throttled_replicas) == {(0, 2), (0, 3)}
    assert convert.throttled_replicas(configs["orders"].leader_throttled_replicas) == frozenset()
    assert convert.throttled_replicas(" * ") == "*"
    assert convert.throttled_replicas(configs["tuned"].leader_throttled_replicas) is None


def test_topic_without_min_isr_is_unknown_with_the_reason_its_operations_give():
    configs, unknowns = convert.topic_configs_from({"a": {}, "b": {}}, ["a", "b", "c"],
                                                   {"a": False, "b": True})
    assert all(c.min_isr is None for c in configs.values())
    assert [(u.topic, u.reason) for u in unknowns] == [("a", Reason.UNAUTHORIZED), ("b", Reason.ERROR), ("c", Reason.ERROR)]
    assert "DESCRIBE_CONFIGS" in unknowns[0].detail


def test_authorized_operations_read_from_names_and_bit_fields():
    assert convert.allows(["DESCRIBE", "DESCRIBE_CONFIGS"], "DESCRIBE_CONFIGS") is True
    assert convert.allows(["DESCRIBE"], "DESCRIBE_CONFIGS") is False
    assert convert.allows(3576, "DESCRIBE_CONFIGS") is True          # a real 4.1 answer
    assert convert.allows(3576, "DESCRIBE") is True
    assert convert.allows(3576 & ~(1 << 10), "DESCRIBE_CONFIGS") is False
    assert convert.allows(-2147483648, "DESCRIBE") is None    # not asked for
    assert convert.allows(None, "DESCRIBE") is None
    c = convert.cluster_from({**DESCRIBED_CLUSTER_41, "authorized_operations": ["DESCRIBE"]}, "DescribeCluster")
    assert (c.may_describe, c.may_describe_configs) == (True, False)
    assert convert.cluster_from(METADATA_CLUSTER_011, "Metadata").may_describe is None


def test_broker_throttle_rates_set_not_set_hidden_and_unsupported():
    set_41 = {"min.insync.replicas": _entry("1", "DEFAULT_CONFIG"),
              "leader.replication.throttled.rate": _entry("10000", "DYNAMIC_BROKER_CONFIG"),
              "follower.replication.throttled.rate": _entry("20000", "DYNAMIC_BROKER_CONFIG")}
    config, unknowns = convert.broker_config_from(2, set_41, reports_dynamic=True)
    assert (config.min_isr, config.leader_throttled_rate, config.follower_throttled_rate, unknowns) == (1, 10000, 20000, [])

    not_set = {"min.insync.replicas": _entry("2", "STATIC_BROKER_CONFIG")}
    config, unknowns = convert.broker_config_from(2, not_set, reports_dynamic=True)
    assert (config.min_isr, config.leader_throttled_rate, config.follower_throttled_rate, unknowns) == (2, None, None, [])

    hidden_22 = {"min.insync.replicas": _entry("1", "DEFAULT_CONFIG"),
                 "leader.replication.throttled.rate": _entry(None, "DYNAMIC_BROKER_CONFIG", sensitive=True),
                 "follower.replication.throttled.rate": _entry(None, "DYNAMIC_BROKER_CONFIG", sensitive=True)}
    config, unknowns = convert.broker_config_from(2, hidden_22, reports_dynamic=True)
    assert (config.leader_throttled_rate, config.follower_throttled_rate) == (None, None)
    assert [(u.input, u.reason, u.broker) for u in unknowns] == [(Input.THROTTLE_RATES, Reason.HIDDEN, 2)]

    config, unknowns = convert.broker_config_from(3, not_set, reports_dynamic=False, version="0.11")
    assert [(u.input, u.reason, u.broker) for u in unknowns] == [(Input.THROTTLE_RATES, Reason.UNSUPPORTED, 3)]
    assert "0.11" in unknowns[0].detail and "1.1" in unknowns[0].detail

    # a refused broker resource (kafka-python drops its error code): nothing known, not "not set"
    config, unknowns = convert.broker_config_from(3, {}, reports_dynamic=True, may_describe_configs=False)
    assert config == BrokerConfig() and [(u.input, u.reason) for u in unknowns] == [
        (Input.BROKER_MIN_ISR, Reason.UNAUTHORIZED), (Input.THROTTLE_RATES, Reason.UNAUTHORIZED)]
    assert "DESCRIBE_CONFIGS on the cluster" in unknowns[0].detail
    config, unknowns = convert.broker_config_from(3, {}, reports_dynamic=True)
    assert [(u.input, u.reason) for u in unknowns] == [(Input.BROKER_MIN_ISR, Reason.ERROR), (Input.THROTTLE_RATES, Reason.ERROR)]


def test_replica_sizes_and_an_offline_log_dir():
    log_dirs = [
        {"error_code": 0, "log_dir": "/data/a", "topics": [
            {"name": "moving", "partitions": [
                {"is_future_key": False, "offset_lag": 0, "partition_index": 0, "partition_size": 1037438},
                {"is_future_key": True, "offset_lag": 12, "partition_index": 0, "partition_size": 4096}]}]},
        {"error_code": 56, "log_dir": "/data/b", "topics": []},
    ]
    sizes, unknowns = convert.replica_sizes_from(2, log_dirs)
    assert sizes == [ReplicaSize(2, "/data/a", "moving", 0, 1037438, 0, False),
                     ReplicaSize(2, "/data/a", "moving", 0, 4096, 12, True)]
    assert [(u.input, u.reason, u.broker) for u in unknowns] == [(Input.LOG_DIRS, Reason.ERROR, 2)]
    assert "/data/b" in unknowns[0].detail and "KafkaStorage (56)" in unknowns[0].detail
    # no log dir at all: a refused request, unknown rather than "holds nothing"
    assert convert.replica_sizes_from(2, [], may_describe=False)[1] == [Unknown(
        Input.LOG_DIRS, Reason.UNAUTHORIZED, "broker 2: DescribeLogDirs returned no log dir; grant the sidecar's "
        "principal DESCRIBE on the cluster", broker=2)]
    assert convert.replica_sizes_from(2, [])[1][0].reason is Reason.ERROR


def test_partition_states_convert_one_to_one_and_judge():
    topics = [{"name": "moving", "error_code": 0, "partitions": [_dtp_partition(0, 1, [2, 3, 1], [1])]},
              {"name": "gone", "error_code": 0, "partitions": [_dtp_partition(0, -1, [2], [])]}]
    reassignments = {("moving", 0): {"adding_replicas": [2, 3], "removing_replicas": [1]}}
    partitions, _ = convert.partitions_from(topics, reassignments)
    cluster = convert.cluster_from(DESCRIBED_CLUSTER_41, "DescribeCluster")
    view = AdminView(cluster, tuple(partitions))
    states = view.partition_states(lambda topic: {"moving": 2, "gone": 1}[topic], cluster.live_brokers)
    assert states == [
        # DescribeTopicPartitions answered: the ELR lists are known (empty here), not None
        PartitionState("gone", 0, None, (2,), (), (), (), 1, frozenset({1, 2}), (), ()),
        PartitionState("moving", 0, 1, (2, 3, 1), (1,), (2, 3), (1,), 2, frozenset({1, 2}), (), ()),
    ]
    gone, moving = (judge(s, KAFKA_3_7) for s in states)
    assert gone.unavailable and not gone.under_replicated
    # RF 1 while reassigning, ISR 1: not URP; effective min ISR min(2, 3) = 2 > 1: under min ISR
    assert moving.reassigning and not moving.under_replicated and moving.under_min_isr


def test_unknown_lookup_by_scope():
    from kafka_jmx_sidecar.exporter.source.admin.view import Unknown
    view = AdminView(convert.cluster_from(METADATA_CLUSTER_011, "Metadata"), (), unknowns=(
        Unknown(Input.REASSIGNMENTS, Reason.UNSUPPORTED, "broker 2.2 has no ListPartitionReassignments"),
        Unknown(Input.LOG_DIRS, Reason.UNREACHABLE, "broker 3 is down", broker=3)))
    assert view.unknown(Input.REASSIGNMENTS).reason is Reason.UNSUPPORTED
    assert view.unknown(Input.LOG_DIRS, broker=3).reason is Reason.UNREACHABLE
    assert view.unknown(Input.LOG_DIRS, broker=1) is None
    assert view.unknown(Input.MIN_ISR, topic="t") is None


def test_failures_map_to_the_fixed_reasons():
    assert reason_of(kerr.ClusterAuthorizationFailedError()) is Reason.UNAUTHORIZED
    assert reason_of(kerr.TopicAuthorizationFailedError()) is Reason.UNAUTHORIZED
    assert reason_of(kerr.IncompatibleBrokerVersion("no ListPartitionReassignments")) is Reason.UNSUPPORTED
    assert reason_of(kerr.KafkaConnectionError("111 ECONNREFUSED")) is Reason.UNREACHABLE
    assert reason_of(kerr.KafkaTimeoutError()) is Reason.UNREACHABLE
    assert reason_of(kerr.RequestTimedOutError()) is Reason.UNREACHABLE
    assert reason_of(kerr.PolicyViolationError()) is Reason.ERROR
    assert reason_of_code(29) is Reason.UNAUTHORIZED and reason_of_code(31) is Reason.UNAUTHORIZED
    assert reason_of_code(35) is Reason.UNSUPPORTED and reason_of_code(56) is Reason.ERROR
    assert {r.value for r in Reason} == {"unsupported", "unauthorized", "unreachable", "hidden", "error"}


def test_describe_topic_partitions_pages_join_a_topic_split_between_them():
    topics: list[dict] = []
    convert.merge_topic_pages(topics, [{"name": "a", "error_code": 0, "partitions": [_dtp_partition(0, 1, [1], [1])]},
                                       {"name": "b", "error_code": 0, "partitions": [_dtp_partition(0, 1, [1], [1])]}])
    convert.merge_topic_pages(topics, [{"name": "b", "error_code": 0, "partitions": [_dtp_partition(1, 2, [2], [2])]},
                                       {"name": "c", "error_code": 0, "partitions": [_dtp_partition(0, 1, [1], [1])]}])
    assert [(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in topics] == \
        [("a", [0]), ("b", [0, 1]), ("c", [0])]
    partitions, _ = convert.partitions_from(topics, {})
    assert [(p.topic, p.partition, p.leader) for p in partitions] == [("a", 0, 1), ("b", 0, 1), ("b", 1, 2), ("c", 0, 1)]
