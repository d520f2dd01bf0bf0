"""Kafka's Admin API answered over TCP from a simulated cluster's model (the `simulate --cluster`
dict of mbeans/simulator/cluster.py), for the cluster-wide mode's benchmark at 40,000 partitions
and the alert tests, on the cluster the simulator serves over JMX (the simulator itself speaks JMX
only).

Every live broker of the model gets a listening port on 127.0.0.1; each answers, with the wire
format of kafka-python's own protocol classes (the schemas Kafka publishes), the requests one
cluster-wide poll sends (the model as `normalize` returns it):

    ApiVersions                  Kafka 4.1's API versions (kafka-python's table of them)
    Metadata, DescribeCluster    the live brokers, the controller, the cluster id
    DescribeTopicPartitions      every partition, paged by the request's limit and cursor
    ListPartitionReassignments   the partitions with adding or removing replicas
    DescribeConfigs              topics: min.insync.replicas (the model's; a topic override unless 1);
                                 brokers: nothing set (Kafka's defaults)

A request it does not know closes the connection (the client reports it). `serve(path)` answers in
a process of its own, as brokers do: it prints `bootstrap HOST:PORT` and serves until its
standard input closes.

    python -m harness.admin_wire CLUSTER.json
"""
from __future__ import annotations

import json
import socket
import struct
import sys
import threading
import traceback
import uuid

from kafka.protocol.admin import (DescribeClusterRequest, DescribeClusterResponse, DescribeConfigsRequest,
                                  DescribeConfigsResponse, DescribeTopicPartitionsRequest,
                                  DescribeTopicPartitionsResponse, ListPartitionReassignmentsRequest,
                                  ListPartitionReassignmentsResponse)
from kafka.protocol.broker_version_data import BROKER_API_VERSIONS
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, MetadataResponse

RELEASE = (4, 1)
MIN_ISR = "min.insync.replicas"
TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4  # DescribeConfigs resource types
DEFAULT_CONFIG, TOPIC_CONFIG = 5, 1  # config sources
NOT_ASKED = {31}  # authorized operations not asked for (INT32_MIN), as kafka-python writes a bit field


class AdminWire:
    """`AdminWire(cluster).start()`; `bootstrap` is the first live broker's host:port."""

    def __init__(self, cluster: dict):
        self.cluster = cluster
        offline = set(cluster.get("offline", ()))
        self.live = [b for b in cluster["brokers"] if b not in offline]
        self.controller = next((c for c in cluster["controllers"] if c not in offline), -1)
        # finalized feature levels (ApiVersions v3+), e.g. {"eligible.leader.replicas.version": 1}
        self.features: dict[str, int] = dict(cluster.get("features", {}))
        # Kafka's order for paging: topics by name, partitions by index
        self.topics = sorted(cluster["topics"], key=lambda t: t["name"])
        self.ids = {t["name"]: uuid.uuid5(uuid.NAMESPACE_DNS, t["name"]) for t in self.topics}
        self.ports: dict[int, int] = {}
        self._listeners: list[socket.socket] = []
        self._closed = threading.Event()

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.ports[self.live[0]]}"

    def start(self) -> "AdminWire":
        for b in self.live:
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", 0))
            s.listen(16)
            self.ports[b] = s.getsockname()[1]
            self._listeners.append(s)
            threading.Thread(target=self._accept, args=(s, b), daemon=True).start()
        return self

    def stop(self) -> None:
        self._closed.set()
        for s in self._listeners:
            s.close()

    # -- the wire ------------------------------------------------------------------------------

    def _accept(self, listener: socket.socket, broker: int) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self._serve, args=(conn, broker), daemon=True).start()

    def _serve(self, conn: socket.socket, broker: int) -> None:
        with conn:
            while True:
                head = _read(conn, 4)
                if head is None:
                    return
                payload = _read(conn, struct.unpack(">i", head)[0])
                if payload is None:
                    return
                key, version = struct.unpack(">hh", payload[:4])
                handler = self._handlers().get(key)
                if handler is None:
                    return  # not a request of a cluster-wide poll: the client sees the connection close
                request_class, answer = handler
                try:
                    request = request_class[version].decode(payload, header=True)
                    response = answer(request, broker)
                    response.API_VERSION = version  # before the header, which a version change would touch
                    response.with_header(correlation_id=request.header.correlation_id)
                    conn.sendall(response.encode(header=True, framed=True))
                except Exception:
                    traceback.print_exc()  # a mistake here, not the client's: shown, and the connection closed
                    return

    def _handlers(self) -> dict:
        return {ApiVersionsRequest.API_KEY: (ApiVersionsRequest, self._api_versions),
                MetadataRequest.API_KEY: (MetadataRequest, self._metadata),
                DescribeClusterRequest.API_KEY: (DescribeClusterRequest, self._describe_cluster),
                DescribeTopicPartitionsRequest.API_KEY: (DescribeTopicPartitionsRequest, self._topic_partitions),
                ListPartitionReassignmentsRequest.API_KEY: (ListPartitionReassignmentsRequest, self._reassignments),
                DescribeConfigsRequest.API_KEY: (DescribeConfigsRequest, self._configs)}

    # -- the answers ---------------------------------------------------------------------------

    def _api_versions(self, request, broker):
        R = ApiVersionsResponse
        return R(error_code=0, throttle_time_ms=0, api_keys=[
            R.ApiVersion(api_key=k, min_version=lo, max_version=hi) for k, (lo, hi) in BROKER_API_VERSIONS[RELEASE].items()],
            supported_features=[], finalized_features_epoch=0 if self.features else -1, finalized_features=[
                R.FinalizedFeatureKey(name=name, max_version_level=level, min_version_level=level)
                for name, level in sorted(self.features.items())], zk_migration_ready=False)

    def _metadata(self, request, broker):
        R = MetadataResponse
        wanted = None if request.topics is None else {t.name for t in request.topics}
        topics = [R.MetadataResponseTopic(
            error_code=0, name=t["name"], topic_id=self.ids[t["name"]], is_internal=False, authorized_operations=NOT_ASKED,
            partitions=[R.MetadataResponseTopic.MetadataResponsePartition(
                error_code=0, partition_index=i, leader_id=_leader(p), leader_epoch=0, replica_nodes=p["replicas"],
                isr_nodes=p["isr"], offline_replicas=[]) for i, p in enumerate(t["partitions"])])
            for t in self.topics if wanted is None or t["name"] in wanted]
        return R(throttle_time_ms=0, brokers=[R.MetadataResponseBroker(node_id=b, host="127.0.0.1", port=self.ports[b],
                                                                       rack=None) for b in self.live],
                 cluster_id=self.cluster.get("cluster_id"), controller_id=self.controller, topics=topics,
                 authorized_operations=NOT_ASKED, error_code=0)

    def _describe_cluster(self, request, broker):
        R = DescribeClusterResponse
        return R(throttle_time_ms=0, error_code=0, error_message=None, endpoint_type=1,
                 cluster_id=self.cluster.get("cluster_id"), controller_id=self.controller, authorized_operations=NOT_ASKED,
                 brokers=[R.DescribeClusterBroker(broker_id=b, host="127.0.0.1", port=self.ports[b], rack=None,
                                                  is_fenced=False) for b in self.live])

    def _topic_partitions(self, request, broker):
        R = DescribeTopicPartitionsResponse
        T = R.DescribeTopicPartitionsResponseTopic
        P = T.DescribeTopicPartitionsResponsePartition
        wanted = {t.name for t in request.topics}
        start = (request.cursor.topic_name, request.cursor.partition_index) if request.cursor else ("", 0)
        left = request.response_partition_limit
        topics, cursor = [], None
        for t in self.topics:
            name = t["name"]
            if (wanted and name not in wanted) or name < start[0]:
                continue
            first = start[1] if name == start[0] else 0
            parts = t["partitions"]
            if left == 0:
                cursor = R.Cursor(topic_name=name, partition_index=first)
                break
            taken = range(first, min(len(parts), first + left))
            left -= len(taken)
            topics.append(T(error_code=0, name=name, topic_id=self.ids[name], is_internal=False,
                            topic_authorized_operations=-2**31, partitions=[
                                P(error_code=0, partition_index=i, leader_id=_leader(parts[i]), leader_epoch=0,
                                  replica_nodes=parts[i]["replicas"], isr_nodes=parts[i]["isr"],
                                  eligible_leader_replicas=parts[i].get("eligible_leader_replicas", []),
                                  last_known_elr=parts[i].get("last_known_elr", []), offline_replicas=[])
                                for i in taken]))
            if taken.stop < len(parts):
                cursor = R.Cursor(topic_name=name, partition_index=taken.stop)
                break
        return R(throttle_time_ms=0, topics=topics, next_cursor=cursor)

    def _reassignments(self, request, broker):
        R = ListPartitionReassignmentsResponse
        T = R.OngoingTopicReassignment
        topics = []
        for t in self.topics:
            moving = [T.OngoingPartitionReassignment(partition_index=i, replicas=p["replicas"],
                                                     adding_replicas=p.get("adding_replicas") or [],
                                                     removing_replicas=p.get("removing_replicas") or [])
                      for i, p in enumerate(t["partitions"]) if p.get("adding_replicas") or p.get("removing_replicas")]
            if moving:
                topics.append(T(name=t["name"], partitions=moving))
        return R(throttle_time_ms=0, error_code=0, error_message=None, topics=topics)

    def _configs(self, request, broker):
        R = DescribeConfigsResponse
        Result = R.DescribeConfigsResult
        Entry = Result.DescribeConfigsResourceResult
        by_name = {t["name"]: t for t in self.topics}
        results = []
        for res in request.resources:
            configs = []
            if res.resource_type == TOPIC_RESOURCE and res.resource_name in by_name:
                min_isr = by_name[res.resource_name]["min_isr"]  # a topic override unless Kafka's default 1
                configs.append(Entry(name=MIN_ISR, value=str(min_isr), read_only=False,
                                     config_source=TOPIC_CONFIG if min_isr != 1 else DEFAULT_CONFIG,
                                     is_sensitive=False, synonyms=[], config_type=3, documentation=None))
            elif res.resource_type == BROKER_RESOURCE:
                configs.append(Entry(name=MIN_ISR, value="1", read_only=False, config_source=DEFAULT_CONFIG,
                                     is_sensitive=False, synonyms=[], config_type=3, documentation=None))
            results.append(Result(error_code=0, error_message=None, resource_type=res.resource_type,
                                  resource_name=res.resource_name, configs=configs))
        return R(throttle_time_ms=0, results=results)


def _leader(p: dict) -> int:
    leader = p.get("leader")
    return -1 if leader is None else leader


def _read(conn: socket.socket, n: int) -> bytes | None:
    chunks, got = [], 0
    while got < n:
        chunk = conn.recv(min(n - got, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def serve(path: str) -> None:
    """Answer for the model in the JSON file `path`, in this process, until standard input closes."""
    with open(path) as f:
        wire = AdminWire(json.load(f)).start()
    print(f"bootstrap {wire.bootstrap}", flush=True)
    sys.stdin.read()
    wire.stop()


if __name__ == "__main__":
    serve(sys.argv[1])
