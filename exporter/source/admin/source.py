"""The Kafka Admin API edge: one `read()` asks a cluster what partition health and throttling
depend on and returns an `AdminView` of plain values.

    source = AdminSource(AdminSettings(bootstrap_servers=("kafka-0:9092",)))
    view = source.read()              # connects on first use; AdminError when nothing answers
    view.partition_states(MinIsrResolver(view), view.cluster.live_brokers)
    source.close()

One read sends, whatever the cluster's size:
  - DescribeCluster (Metadata before Kafka 2.8): brokers, controller, cluster id;
  - DescribeTopicPartitions (Kafka 3.8+, with eligible leader replicas; paged by 2,000
    partitions) or else (an older broker, or one that refuses it) one Metadata request for every
    topic, the ELR then unknown;
  - ApiVersions v3 for the finalized `eligible.leader.replicas.version` (ELR on or off, followed
    at every read: a feature change needs no restart);
  - ListPartitionReassignments (Kafka 2.4+), to the controller;
  - one DescribeConfigs for every topic's min ISR and throttled replicas, and one per live broker
    for its default min ISR and throttle rates (broker configs are answered by their own broker);
  - one DescribeLogDirs per live broker (Kafka 1.0+), for the partitions it holds, or those a
    `log_dir_scope` chooses (the reassignment series ask only what they measure).
What a broker version lacks, refuses or does not answer becomes an `Unknown` in the view (logged
once when it appears), never an invented value; only the cluster and the partition list are
required, and their failure is an AdminError.
"""
from __future__ import annotations

import logging
import time
from typing import Any, Callable

from kafka_jmx_sidecar.exporter.source.admin import convert
from kafka_jmx_sidecar.exporter.source.admin.connection import FailureLog, client_options, new_client, quiet_wire_logs
from kafka_jmx_sidecar.exporter.source.admin.errors import connect_error, describe, read_error, reason_of
from kafka_jmx_sidecar.exporter.source.admin.settings import AdminSettings
from kafka_jmx_sidecar.exporter.source.admin.view import AdminView, BrokerConfig, Cluster, Input, Partition, Reason, ReplicaSize, Unknown

log = logging.getLogger(__name__)

ELR_FEATURE = "eligible.leader.replicas.version"  # KIP-966's feature: level 1 turns ELR on
PAGE_PARTITIONS = 2000  # DescribeTopicPartitions' response_partition_limit (Kafka's default)

# The Admin APIs by the name kafka-python's ApiKey gives them, and the Kafka release that added each.
DESCRIBE_CLUSTER, DESCRIBE_TOPIC_PARTITIONS = "DescribeCluster", "DescribeTopicPartitions"
LIST_REASSIGNMENTS, DESCRIBE_LOG_DIRS, DESCRIBE_CONFIGS = "ListPartitionReassignments", "DescribeLogDirs", "DescribeConfigs"
ADDED_IN = {DESCRIBE_CLUSTER: "2.8", DESCRIBE_TOPIC_PARTITIONS: "3.8", LIST_REASSIGNMENTS: "2.4",
            DESCRIBE_LOG_DIRS: "1.0", DESCRIBE_CONFIGS: "0.11"}


# (broker, the partitions read) -> {topic: [partition]} to ask that broker's log dirs for; None: every
# partition it holds; empty: nothing (no request)
LogDirScope = Callable[[int, "list[Partition]"], "dict[str, list[int]] | None"]


class AdminSource:
    def __init__(self, settings: AdminSettings, environ=None,
                 client_factory: Callable[..., Any] | None = None, page_partitions: int = PAGE_PARTITIONS,
                 log_dir_scope: LogDirScope | None = None):
        self.settings = settings
        self.page_partitions = page_partitions
        # which partitions DescribeLogDirs asks each broker for (None: every partition it holds)
        self.log_dir_scope = log_dir_scope
        self.target = ",".join(settings.bootstrap_servers)
        self._environ = environ
        self._factory = client_factory
        self._client = None
        self._logged: set[tuple] = set()
        self.requests: dict[str, int] = {}  # requests the last read sent, by API

    @property
    def connected(self) -> bool:
        return self._client is not None

    def connect(self) -> None:
        if self._client is not None:
            return
        options = client_options(self.settings, self._environ)
        factory = self._factory
        if factory is None:
            from kafka import KafkaAdminClient
            factory = KafkaAdminClient
        quiet_wire_logs()
        with FailureLog() as failures:
            try:
                self._client = new_client(factory, options)
            except Exception as e:
                raise connect_error(e, self.target, self.settings.protocol, self.settings.request_timeout_seconds,
                                    failures.messages) from e

    def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            client.close()

    def __enter__(self) -> "AdminSource":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- one read ------------------------------------------------------------------------------

    def read(self) -> AdminView:
        self.connect()
        self.requests = {}
        started = time.monotonic()
        api_versions = _known_api_versions(self._client)
        names = {key.name: tuple(value) for key, value in api_versions.items()}
        version = _release(api_versions)
        unknowns: list[Unknown] = []

        cluster = self._cluster(names)
        partitions, allowed = self._partitions(names, version, unknowns)
        topics = self._topic_configs(sorted({p.topic for p in partitions}), allowed, unknowns)
        brokers, sizes = self._per_broker(cluster, partitions, names, version, unknowns)

        elr_level = self._elr_level(names, unknowns)
        view = AdminView(cluster, tuple(partitions), topics, brokers, tuple(sizes), tuple(unknowns), names, elr_level)
        self._log_unknowns(view)
        log.debug("Admin API read of %s: %d partitions, %d unknowns, requests %s, %.3f s", self.target,
                  len(partitions), len(unknowns), self.requests, time.monotonic() - started)
        return view

    def _count(self, api: str, n: int = 1) -> None:
        self.requests[api] = self.requests.get(api, 0) + n

    def _cluster(self, names: dict) -> Cluster:
        source = DESCRIBE_CLUSTER if DESCRIBE_CLUSTER in names else "Metadata"
        self._count(source)
        try:
            return convert.cluster_from(self._client.describe_cluster(), source)
        except KeyError as e:
            if e.args != ("endpoint_type",):
                raise read_error(e, f"{source} (the cluster's brokers)", self.target) from e
        except Exception as e:
            raise read_error(e, f"{source} (the cluster's brokers)", self.target) from e
        # kafka-python 3.0 drops DescribeCluster's endpoint_type, which v0 (Kafka 2.8 to 3.6) has not:
        # a KeyError after a good answer. Metadata tells the same brokers, controller and cluster id.
        self._count("Metadata")
        try:
            described = self._client._manager.run(self._client._get_cluster_metadata, [])
        except Exception as e:
            raise read_error(e, "Metadata (the cluster's brokers)", self.target) from e
        brokers = [{**b, "broker_id": b.get("node_id", b.get("broker_id"))} for b in described.get("brokers", ())]
        return convert.cluster_from({**described, "brokers": brokers}, "Metadata")

    def _partitions(self, names: dict, version: str, unknowns: list[Unknown]) -> tuple[list[Partition], dict]:
        """Every partition with its reassignment, and whether each topic's configs may be read."""
        topics_raw, source_api = self._topics(names, version, unknowns)
        reassignments = self._reassignments(names, version, unknowns)
        partitions, topic_unknowns = convert.partitions_from(topics_raw, reassignments)
        unknowns += topic_unknowns
        if partitions and partitions[0].offline_replicas is None:
            unknowns.append(Unknown(Input.OFFLINE_REPLICAS, Reason.UNSUPPORTED,
                                    f"broker {version}: Metadata before v5 (Kafka 1.0) has no offline replicas"))
        allowed = {t["name"]: convert.allows(t.get("authorized_operations", t.get("topic_authorized_operations")),
                                             convert.DESCRIBE_CONFIGS) for t in topics_raw}
        return partitions, allowed

    def _per_broker(self, cluster: Cluster, partitions: list[Partition], names: dict, version: str,
                    unknowns: list[Unknown]) -> tuple[dict[int, BrokerConfig], list[ReplicaSize]]:
        """Each live broker's configs and log dirs, one request each; a broker that is not live
        (fenced, or named only in replica lists) is unknown."""
        live = cluster.live_brokers
        known = sorted({b.id for b in cluster.brokers} | {r for p in partitions for r in p.replicas if r >= 0})
        brokers: dict[int, BrokerConfig] = {}
        sizes: list[ReplicaSize] = []
        reports_dynamic = names.get(DESCRIBE_CONFIGS, (0, 0))[1] >= 1
        for broker in known:
            if broker not in live:
                state = "fenced" if any(b.id == broker and b.fenced for b in cluster.brokers) else "not registered (down)"
                for what in (Input.BROKER_MIN_ISR, Input.THROTTLE_RATES, Input.LOG_DIRS):
                    unknowns.append(Unknown(what, Reason.UNREACHABLE, f"broker {broker} is {state}; "
                                            f"it is asked again once it is live", broker=broker))
                continue
            brokers[broker] = self._broker_config(broker, reports_dynamic, version, cluster, unknowns)
            if self.settings.log_dirs:
                sizes += self._log_dirs(broker, partitions, names, version, cluster, unknowns)
        return brokers, sizes

    def _topics(self, names: dict, version: str, unknowns: list[Unknown]) -> tuple[list[dict], str]:
        """Every topic, by DescribeTopicPartitions where the broker answers it (the only API that
        tells the eligible leader replicas), else by Metadata, the ELR then unknown and said why."""
        if DESCRIBE_TOPIC_PARTITIONS not in names:
            unknowns.append(Unknown(Input.ELIGIBLE_LEADERS, Reason.UNSUPPORTED,
                                    f"broker {version}: no DescribeTopicPartitions (Kafka 3.8+, KIP-966)"))
        else:
            try:
                topics: list[dict] = []
                cursor = None
                while True:
                    self._count(DESCRIBE_TOPIC_PARTITIONS)
                    page = self._client.describe_topic_partitions([], self.page_partitions, cursor)
                    convert.merge_topic_pages(topics, page["topics"])
                    cursor = page.get("next_cursor")
                    if not cursor:
                        return topics, DESCRIBE_TOPIC_PARTITIONS
            except Exception as e:
                reason = reason_of(e)
                if reason is Reason.UNREACHABLE:
                    raise read_error(e, "reading the partitions", self.target) from e
                fix = ("grant the sidecar's principal DESCRIBE on the topics" if reason is Reason.UNAUTHORIZED
                       else "see the broker's log")
                unknowns.append(Unknown(Input.ELIGIBLE_LEADERS, reason, f"DescribeTopicPartitions failed: "
                                        f"{describe(e)}; partitions read by Metadata, without ELR; {fix}"))
        try:
            self._count("Metadata")
            return self._client.describe_topics(None), "Metadata"
        except Exception as e:
            raise read_error(e, "reading the partitions", self.target) from e

    def _elr_level(self, names: dict, unknowns: list[Unknown]) -> int | None:
        """The finalized eligible.leader.replicas.version (0 when not finalized: ELR off), or None
        where the broker does not tell feature levels (ApiVersions before v3) or the ask failed."""
        if names.get("ApiVersions", (0, 0))[1] < 3:
            return None
        self._count("ApiVersions")
        try:
            features = self._client.describe_features()
        except Exception as e:
            unknowns.append(Unknown(Input.FEATURES, reason_of(e), f"the finalized feature levels: {describe(e)}; "
                                    f"asked again next poll"))
            return None
        finalized = (features.get(ELR_FEATURE) or {}).get("finalized")
        return int(finalized[1]) if finalized else 0

    def _reassignments(self, names: dict, version: str, unknowns: list[Unknown]) -> dict | None:
        fallback = "read as none, so a running reassignment counts as under-replicated, as kafka-topics.sh counts it"
        if LIST_REASSIGNMENTS not in names:
            unknowns.append(Unknown(Input.REASSIGNMENTS, Reason.UNSUPPORTED,
                                    f"broker {version} has no ListPartitionReassignments (Kafka 2.4+): "
                                    f"reassignments {fallback}"))
            return None
        self._count(LIST_REASSIGNMENTS)
        try:
            found = self._client.list_partition_reassignments()
        except Exception as e:
            reason = reason_of(e)
            fix = ("grant the sidecar's principal DESCRIBE on the cluster" if reason is Reason.UNAUTHORIZED
                   else "it is asked again next poll")
            unknowns.append(Unknown(Input.REASSIGNMENTS, reason, f"ListPartitionReassignments failed: {describe(e)}; "
                                    f"reassignments {fallback}; {fix}"))
            return None
        return {(tp[0], int(tp[1])): value for tp, value in found.items()}

    def _topic_configs(self, topics: list[str], allowed: dict, unknowns: list[Unknown]) -> dict:
        if not topics:
            return {}
        from kafka.admin import ConfigResource, ConfigResourceType
        self._count(DESCRIBE_CONFIGS)
        try:
            described = self._client.describe_configs(
                [ConfigResource(ConfigResourceType.TOPIC, t, list(convert.TOPIC_KEYS)) for t in topics],
                config_filter="all")
        except Exception as e:
            reason = reason_of(e)
            for what in (Input.MIN_ISR, Input.THROTTLED_REPLICAS):
                unknowns.append(Unknown(what, reason, f"DescribeConfigs for {len(topics)} topics failed: "
                                        f"{describe(e)}; it is asked again next poll"))
            return {}
        configs, found = convert.topic_configs_from(described.get("topic", {}), topics, allowed)
        unknowns += found
        return configs

    def _broker_config(self, broker: int, reports_dynamic: bool, version: str, cluster: Cluster,
                       unknowns: list[Unknown]) -> BrokerConfig:
        from kafka.admin import ConfigResource, ConfigResourceType
        self._count(DESCRIBE_CONFIGS)
        try:
            described = self._client.describe_configs(
                [ConfigResource(ConfigResourceType.BROKER, str(broker), list(convert.BROKER_KEYS))],
                config_filter="all")
        except Exception as e:
            reason = reason_of(e)
            for what in (Input.BROKER_MIN_ISR, Input.THROTTLE_RATES):
                unknowns.append(Unknown(what, reason, f"broker {broker}: DescribeConfigs failed: {describe(e)}"
                                        f"{_broker_fix(reason)}", broker=broker))
            return BrokerConfig()
        config, found = convert.broker_config_from(broker, described.get("broker", {}).get(str(broker), {}),
                                                   reports_dynamic, version, cluster.may_describe_configs)
        unknowns += found
        return config

    def _log_dirs(self, broker: int, partitions: list[Partition], names: dict, version: str, cluster: Cluster,
                  unknowns: list[Unknown]) -> list[ReplicaSize]:
        if DESCRIBE_LOG_DIRS not in names:
            if not any(u.input is Input.LOG_DIRS and u.broker is None for u in unknowns):
                unknowns.append(Unknown(Input.LOG_DIRS, Reason.UNSUPPORTED,
                                        f"broker {version} has no DescribeLogDirs (Kafka 1.0+)"))
            return []
        chosen = self.log_dir_scope(broker, partitions) if self.log_dir_scope is not None else None
        held: dict[str, list[int]] = {}
        if chosen is not None:
            held = {t: sorted(ps) for t, ps in chosen.items() if ps}
        else:
            for p in partitions:
                if broker in p.replicas:
                    held.setdefault(p.topic, []).append(p.partition)
        if not held:
            return []
        self._count(DESCRIBE_LOG_DIRS)
        try:
            answer = self._client.describe_log_dirs(held, brokers=[broker])
        except Exception as e:
            reason = reason_of(e)
            unknowns.append(Unknown(Input.LOG_DIRS, reason, f"broker {broker}: DescribeLogDirs failed: {describe(e)}"
                                    f"{_broker_fix(reason)}", broker=broker))
            return []
        sizes, found = convert.replica_sizes_from(broker, answer[0]["log_dirs"] if answer else [], cluster.may_describe)
        unknowns += found
        return sizes

    def _log_unknowns(self, view: AdminView) -> None:
        """Each unknown once while it lasts: a log line when it appears, one when it clears."""
        now = {(u.input, u.reason, u.broker, u.topic): u for u in view.unknowns}
        for key in now.keys() - self._logged:
            u = now[key]
            log.warning("Admin API: %s unknown (%s): %s", u.input.value, u.reason.value, u.detail)
        for key in self._logged - now.keys():
            scope = f" of broker {key[2]}" if key[2] is not None else f" of topic {key[3]}" if key[3] else ""
            log.info("Admin API: %s%s known again", key[0].value, scope)
        self._logged = set(now)


def _broker_fix(reason: Reason) -> str:
    return {Reason.UNAUTHORIZED: "; grant the sidecar's principal DESCRIBE_CONFIGS on the cluster",
            Reason.UNREACHABLE: "; check that the broker runs and that its advertised listener is reachable "
                                "from the sidecar"}.get(reason, "")


def _known_api_versions(client) -> dict:
    """The broker's API versions by kafka-python's ApiKey, for the APIs kafka-python knows. A newer
    broker also lists APIs kafka-python has no ApiKey for (Kafka 4.4: key 93), and kafka-python
    3.0's api_versions() then raises ValueError on the whole answer: those are left out."""
    try:
        return client.api_versions()
    except ValueError:
        from kafka.protocol.api_key import ApiKey
        known = {k.value for k in ApiKey}
        raw = client._manager.broker_version_data.api_versions
        return {ApiKey(k): v for k, v in raw.items() if k in known}


def _release(api_versions: dict) -> str:
    """The Kafka release the answering broker's API versions say it is (kafka-python's table)."""
    from kafka.protocol.broker_version_data import infer_broker_version_from_api_versions
    try:
        return ".".join(map(str, infer_broker_version_from_api_versions(api_versions)))
    except Exception:
        return "of this version"

