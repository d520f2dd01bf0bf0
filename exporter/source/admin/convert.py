"""kafka-python's Admin API answers (plain dicts and lists since kafka-python 3.0) as the values
of exporter/source/admin/view.py, and what each answer leaves unknown as `Unknown`s. Pure: no requests.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping

from kafka_jmx_sidecar.exporter.source.admin.errors import code_name, reason_of_code
from kafka_jmx_sidecar.exporter.source.admin.view import (
    Broker, BrokerConfig, Cluster, Input, Partition, Reason, ReplicaSize, TopicConfig, Unknown,
)

NO_LEADER = -1
MIN_ISR = "min.insync.replicas"
LEADER_THROTTLED_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_THROTTLED_REPLICAS = "follower.replication.throttled.replicas"
LEADER_THROTTLED_RATE = "leader.replication.throttled.rate"
FOLLOWER_THROTTLED_RATE = "follower.replication.throttled.rate"
TOPIC_KEYS = (MIN_ISR, LEADER_THROTTLED_REPLICAS, FOLLOWER_THROTTLED_REPLICAS)
BROKER_KEYS = (MIN_ISR, LEADER_THROTTLED_RATE, FOLLOWER_THROTTLED_RATE)

# A topic's config comes from the broker's defaults unless the topic overrides it.
_DEFAULT_SOURCES = {"DEFAULT_CONFIG", "STATIC_BROKER_CONFIG", "DYNAMIC_DEFAULT_BROKER_CONFIG",
                    "DYNAMIC_BROKER_CONFIG"}
# AclOperation codes, as bits of an authorized-operations field (KIP-430)
DESCRIBE, DESCRIBE_CONFIGS = "DESCRIBE", "DESCRIBE_CONFIGS"
_OPERATION_BITS = {DESCRIBE: 1 << 8, DESCRIBE_CONFIGS: 1 << 10}


def cluster_from(described: Mapping[str, Any], source: str) -> Cluster:
    """DescribeCluster's answer, or kafka-python's Metadata fallback of the same shape."""
    brokers = tuple(sorted(
        (Broker(int(b["broker_id"]), str(b["host"]), int(b["port"]), b.get("rack"), bool(b.get("is_fenced", False)))
         for b in described.get("brokers", ())), key=lambda b: b.id))
    controller = described.get("controller_id")
    ops = described.get("authorized_operations")
    return Cluster(described.get("cluster_id"), None if controller is None or controller < 0 else int(controller),
                   brokers, source, allows(ops, DESCRIBE), allows(ops, DESCRIBE_CONFIGS))


def _ids(values: Iterable[int] | None) -> tuple[int, ...]:
    return tuple(int(v) for v in values or ())


def partitions_from(topics: Iterable[Mapping[str, Any]],
                    reassignments: Mapping[tuple[str, int], Mapping[str, Any]] | None
                    ) -> tuple[list[Partition], list[Unknown]]:
    """Metadata or DescribeTopicPartitions topics, with the ongoing reassignments (None: unknown)
    merged in. A topic the broker refuses is an Unknown, never an empty topic."""
    partitions: list[Partition] = []
    unknowns: list[Unknown] = []
    for topic in topics:
        name, code = topic["name"], topic.get("error_code", 0)
        if code:
            reason = reason_of_code(code)
            fix = ("grant the sidecar's principal DESCRIBE on the topic" if reason is Reason.UNAUTHORIZED
                   else "the topic may be being created or deleted; it is read again next poll")
            unknowns.append(Unknown(Input.PARTITIONS, reason, f"topic {name}: the broker answered "
                                    f"{code_name(code)}; {fix}", topic=name))
            continue
        for p in topic.get("partitions", ()):
            index = int(p["partition_index"])
            moving = (reassignments or {}).get((name, index), {})
            leader = p.get("leader_id", NO_LEADER)
            partitions.append(Partition(
                topic=name, partition=index,
                leader=None if leader is None or leader < 0 else int(leader),
                replicas=_ids(p.get("replica_nodes")), isr=_ids(p.get("isr_nodes")),
                offline_replicas=_ids(p["offline_replicas"]) if "offline_replicas" in p else None,
                adding_replicas=_ids(moving.get("adding_replicas")),
                removing_replicas=_ids(moving.get("removing_replicas")),
                # kafka-python reads an empty list as None; the key is there only in
                # DescribeTopicPartitions answers, which always carry the lists.
                eligible_leader_replicas=_ids(p["eligible_leader_replicas"]) if "eligible_leader_replicas" in p else None,
                last_known_elr=_ids(p["last_known_elr"]) if "last_known_elr" in p else None,
            ))
    partitions.sort(key=lambda p: (p.topic, p.partition))
    return partitions, unknowns


def merge_topic_pages(topics: list[dict], page: Iterable[Mapping[str, Any]]) -> None:
    """Appends a DescribeTopicPartitions page to `topics`. A page may end inside a topic; the next
    page then starts with the rest of that topic's partitions."""
    page = list(page)
    if topics and page and topics[-1]["name"] == page[0]["name"]:
        topics[-1] = {**topics[-1], "partitions": [*topics[-1]["partitions"], *page[0]["partitions"]]}
        page = page[1:]
    topics.extend(page)


def allows(authorized_operations: Any, operation: str) -> bool | None:
    """Whether a topic's or the cluster's authorized operations (KIP-430: a list of names from
    kafka-python's Metadata and DescribeCluster, DescribeTopicPartitions' bit field) include
    `operation`; None: the broker did not say (before Kafka 2.3, or not asked)."""
    if isinstance(authorized_operations, bool):
        return None
    if isinstance(authorized_operations, int) and authorized_operations >= 0:
        return bool(authorized_operations & _OPERATION_BITS[operation])
    if isinstance(authorized_operations, (list, tuple, set, frozenset)):
        return operation in authorized_operations
    return None


def _int(entry: Mapping[str, Any] | None) -> int | None:
    value = None if entry is None else entry.get("value")
    try:
        return None if value is None else int(value)
    except ValueError:
        return None


def topic_configs_from(described: Mapping[str, Mapping[str, Mapping[str, Any]]], topics: Iterable[str],
                       describe_configs_allowed: Mapping[str, bool | None] | None = None
                       ) -> tuple[dict[str, TopicConfig], list[Unknown]]:
    """One DescribeConfigs answer for many topics ({topic: {key: entry}}). kafka-python drops a
    resource's error code, so a topic without min.insync.replicas is unknown, unauthorized when
    its authorized operations lack DESCRIBE_CONFIGS."""
    configs: dict[str, TopicConfig] = {}
    unknowns: list[Unknown] = []
    allowed = describe_configs_allowed or {}
    for topic in topics:
        entries = described.get(topic) or {}
        min_isr_entry = entries.get(MIN_ISR)
        min_isr = _int(min_isr_entry)
        if min_isr is None:
            if allowed.get(topic) is False:
                unknowns.append(Unknown(Input.MIN_ISR, Reason.UNAUTHORIZED, f"topic {topic}: DescribeConfigs is not "
                                        f"allowed; grant the sidecar's principal DESCRIBE_CONFIGS on the topic",
                                        topic=topic))
            else:
                unknowns.append(Unknown(Input.MIN_ISR, Reason.ERROR, f"topic {topic}: DescribeConfigs returned no "
                                        f"{MIN_ISR}; it is asked again next poll", topic=topic))
        configs[topic] = TopicConfig(
            min_isr=min_isr,
            min_isr_is_default=min_isr_entry is not None and min_isr_entry.get("config_source") in _DEFAULT_SOURCES,
            leader_throttled_replicas=_text(entries.get(LEADER_THROTTLED_REPLICAS)),
            follower_throttled_replicas=_text(entries.get(FOLLOWER_THROTTLED_REPLICAS)),
        )
    return configs, unknowns


def _text(entry: Mapping[str, Any] | None) -> str | None:
    return None if entry is None or entry.get("value") is None else str(entry["value"])


def broker_config_from(broker: int, entries: Mapping[str, Mapping[str, Any]], reports_dynamic: bool,
                       version: str = "", may_describe_configs: bool | None = None
                       ) -> tuple[BrokerConfig, list[Unknown]]:
    """A broker's DescribeConfigs answer for BROKER_KEYS. An absent throttle rate is "not set"
    when the broker reports dynamic broker configs (DescribeConfigs v1+, Kafka 1.1+); before
    that it is unknown. Kafka 2.x sends the rates as sensitive, without a value: hidden.
    An answer without min.insync.replicas (every broker has it) is a refused resource, whose
    error code kafka-python drops: then nothing of it is known."""
    unknowns: list[Unknown] = []
    if MIN_ISR not in entries:
        reason, fix = ((Reason.UNAUTHORIZED, "grant the sidecar's principal DESCRIBE_CONFIGS on the cluster")
                       if may_describe_configs is False else (Reason.ERROR, "it is asked again next poll"))
        for what in (Input.BROKER_MIN_ISR, Input.THROTTLE_RATES):
            unknowns.append(Unknown(what, reason, f"broker {broker}: DescribeConfigs returned nothing for the "
                                    f"broker; {fix}", broker=broker))
        return BrokerConfig(), unknowns
    rates: dict[str, int | None] = {}
    for key in (LEADER_THROTTLED_RATE, FOLLOWER_THROTTLED_RATE):
        entry = entries.get(key)
        if entry is None:
            rates[key] = None
            if not reports_dynamic:
                unknowns.append(Unknown(Input.THROTTLE_RATES, Reason.UNSUPPORTED,
                                        f"broker {broker}: {key} is not reported by DescribeConfigs before Kafka "
                                        f"1.1 (broker {version or 'version'} answers v0); read it with "
                                        f"kafka-configs.sh --zookeeper", broker=broker))
                break
        elif entry.get("value") is None:
            rates[key] = None
            unknowns.append(Unknown(Input.THROTTLE_RATES, Reason.HIDDEN,
                                    f"broker {broker}: {key} is set but the broker sends it as sensitive, "
                                    f"without its value (as Kafka 2.2 and 2.4 brokers do); read it with kafka-configs.sh",
                                    broker=broker))
            break
        else:
            rates[key] = _int(entry)
    min_isr = _int(entries.get(MIN_ISR))
    if min_isr is None:
        unknowns.append(Unknown(Input.BROKER_MIN_ISR, Reason.ERROR,
                                f"broker {broker}: {MIN_ISR} is not a number: {entries[MIN_ISR].get('value')!r}",
                                broker=broker))
    return BrokerConfig(min_isr, rates.get(LEADER_THROTTLED_RATE), rates.get(FOLLOWER_THROTTLED_RATE),
                        min_isr_source=entries[MIN_ISR].get("config_source")), unknowns


def replica_sizes_from(broker: int, log_dirs: Iterable[Mapping[str, Any]], may_describe: bool | None = None
                       ) -> tuple[list[ReplicaSize], list[Unknown]]:
    """One broker's DescribeLogDirs answer, asked for the replicas it holds; a log dir in error
    (offline disk) is an Unknown. No log dir at all is a refused request (kafka-python drops the
    top-level error code of v3+, Kafka 3.1+; older brokers send no log dir): unknown, not empty."""
    sizes: list[ReplicaSize] = []
    unknowns: list[Unknown] = []
    log_dirs = list(log_dirs)
    if not log_dirs:
        reason, fix = ((Reason.UNAUTHORIZED, "grant the sidecar's principal DESCRIBE on the cluster")
                       if may_describe is False else (Reason.ERROR, "it is asked again next poll"))
        return [], [Unknown(Input.LOG_DIRS, reason, f"broker {broker}: DescribeLogDirs returned no log dir; {fix}",
                            broker=broker)]
    for d in log_dirs:
        path, code = d.get("log_dir", ""), d.get("error_code", 0)
        if code:
            unknowns.append(Unknown(Input.LOG_DIRS, reason_of_code(code), f"broker {broker}: log dir {path}: "
                                    f"{code_name(code)}; see the broker's log for the disk", broker=broker))
            continue
        for t in d.get("topics", ()):
            for p in t.get("partitions", ()):
                sizes.append(ReplicaSize(broker, path, t["name"], int(p["partition_index"]), int(p["partition_size"]),
                                         int(p.get("offset_lag", 0)), bool(p.get("is_future_key", False))))
    return sizes, unknowns


def throttled_replicas(value: str | None) -> frozenset[tuple[int, int]] | str | None:
    """`leader/follower.replication.throttled.replicas` as {(partition, broker)}, or "*" (every
    replica), or None when unknown. Kafka writes "0:1,0:2" (partition:broker pairs)."""
    if value is None:
        return None
    value = value.strip()
    if value == "*":
        return "*"
    pairs = set()
    for piece in filter(None, (p.strip() for p in value.split(","))):
        partition, _, broker = piece.partition(":")
        pairs.add((int(partition), int(broker)))
    return frozenset(pairs)
