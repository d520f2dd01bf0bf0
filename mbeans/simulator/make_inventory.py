"""Generate the simulator's MBean inventory from a captured broker (run by hand, output committed).

    python -m mbeans.simulator.make_inventory [REFERENCE_DIR] > mbeans/simulator/inventory-4.1.tsv
    python -m harness.capture 4.4 DIR
    python -m mbeans.simulator.make_inventory DIR > mbeans/simulator/inventory-4.4.tsv

REFERENCE_DIR (default ../shared/reference/kafka-4.1 beside the repository) holds the dump of
every `kafka.*` MBean of a real Kafka node, broker and controller in one process with node id 1
(`all-kafka-mbeans-full.txt`: ObjectName, MBeanInfo class name, attributes with declared type,
value and runtime class) and jmx_exporter's output for the same node
(`jmx_exporter-<release>-standalone-metrics.txt`), whose HELP lines carry the attribute
descriptions of Kafka's own metrics. The Kafka 4.1 one is a reference capture; harness/capture.py
makes such a directory from a real broker of any KRaft release the tests run.

The output is a tab-separated file with three kinds of lines:

    S <shape> <MBeanInfo class name> <attribute>|<declared type>|<runtime class>|<description> ...
    M <roles> <scope> <shape> <ObjectName template> <value> ...   (values in the shape's attribute order)
    # comment

Beans of the health catalog (mbeans/catalog.py) are left out: the simulator's model serves them
(except the Log beans of the KRaft metadata log, `__cluster_metadata`, which is no model partition).
ObjectName templates use `{node}` for the node's own id (`BrokerId`, `id` and `client-id` keys),
`{broker}` for a bean a controller keeps per registered broker and `{version}` for the client
software version of the node's peers; values use `{version}`, `{start_ms}`, `{cluster_id}`,
`{raft_state}` and `{raft_leader}`. Roles say where a bean exists: `b` broker nodes only, `c`
controller nodes only (every broker under ZooKeeper), `k` KRaft only, `q` the KRaft quorum leader
(the active controller) only, `o` every node but the quorum leader; no letter: every node. The roles
of beans other than the health ones are an approximation (the reference is one combined
broker+controller node); see ROLE_RULES.

Scopes say when a bean appears: `-` when the node starts; `T` per topic, on the topic's first
traffic; and for replication, which the single captured node never did (REPLICATION, as a real
broker-only node of a three-broker cluster serves them): `L` once a follower has fetched from the
node, `F` per leader the node fetches from (`{leader}`, `{leader_host}`, `{leader_port}`), `P` per
partition it follows (`{leader}`, `{topic}`, `{partition}`) (`L` also on the KRaft quorum leader
once another node fetches the metadata log from it); `F` and `P` beans go away with the
fetch, as Kafka's idle fetcher threads and moved partitions take theirs.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

from kafka_jmx_sidecar.mbeans import catalog

DEFAULT_DESCRIPTION = "Attribute exposed for management"  # what a standard MBean's introspector says
KAFKA_MBEAN = "org.apache.kafka.common.metrics.JmxReporter$KafkaMbean"
NODE_ID = "1"  # the captured node's id

# Request types only a KRaft controller serves (ListenerType CONTROLLER only). AddRaftVoter,
# RemoveRaftVoter and UnregisterBroker are not among them: a real 4.1 broker-only node has their
# RequestMetrics too (brokers take them and forward them to the controller).
CONTROLLER_REQUESTS = {
    "AllocateProducerIds", "AlterPartition", "AssignReplicasToDirs", "BeginQuorumEpoch",
    "BrokerHeartbeat", "BrokerRegistration", "ControllerRegistration", "EndQuorumEpoch", "Envelope",
    "FetchSnapshot", "UpdateRaftVoter", "Vote",
}
# Request types a KRaft controller serves as well as a broker: a real 4.1.1 dedicated controller has
# their RequestMetrics (brokers forward the admin requests among them to it); UnregisterController
# (4.4) both kinds of node have too.
SHARED_REQUESTS = {
    "AddPartitionsToTxnVerification", "AddRaftVoter", "AlterClientQuotas", "AlterConfigs",
    "AlterPartitionReassignments", "AlterUserScramCredentials", "ApiVersions", "CreateAcls", "CreateDelegationToken",
    "CreatePartitions", "CreateTopics", "DeleteAcls", "DeleteTopics", "DescribeAcls", "DescribeCluster",
    "DescribeConfigs", "DescribeDelegationToken", "DescribeQuorum", "DescribeUserScramCredentials", "ElectLeaders",
    "ExpireDelegationToken", "Fetch", "FetchConsumer", "FetchFollower", "IncrementalAlterConfigs",
    "ListClientMetricsResources", "ListPartitionReassignments", "RemoveRaftVoter", "RenewDelegationToken",
    "SaslAuthenticate", "SaslHandshake", "UnregisterBroker", "UnregisterController", "UpdateFeatures",
}
# KafkaController gauges and ControllerStats meters that exist only under KRaft.
KRAFT_CONTROLLER_NAMES = {
    "ControlledShutdownBrokerCount", "EventQueueOperationsStartedCount", "EventQueueOperationsTimedOutCount",
    "IgnoredStaticVoters", "LastAppliedRecordLagMs", "LastAppliedRecordOffset", "LastAppliedRecordTimestamp",
    "LastCommittedRecordOffset", "MetadataErrorCount", "NewActiveControllersCount",
    "TimeSinceLastHeartbeatReceivedMs", "TimedOutBrokerHeartbeatCount",
    "ElectionFromEligibleLeaderReplicasPerSec",
}
# kafka.server types that belong to the KRaft metadata machinery (any KRaft node).
KRAFT_TYPES = {
    "raft-metrics", "raft-channel-metrics", "MetadataLoader", "SnapshotEmitter", "broker-metadata-metrics",
    "BrokerMetadataListener", "heartbeat-metrics", "registration-metrics", "directory-assignments-metrics",
}
# Beans a real 4.1.1 dedicated controller serves too (it handles requests: the handler pool, the
# client quota managers' delay queues, the ACL purgatory, BrokerTopicStats' broker-wide meters; and it
# flushes its metadata log).
NODE_WIDE_TYPES = {
    ("kafka.log", "LogFlushStats"), ("kafka.server", "KafkaRequestHandlerPool"), ("kafka.server", "Fetch"),
    ("kafka.server", "Produce"), ("kafka.server", "Request"), ("kafka.server", "ControllerMutation"),
}
# Beans every node has, broker or controller (node-metrics: the feature levels the node supports, 4.2+).
COMMON_TYPES = {
    ("kafka.server", "app-info"), ("kafka.server", "kafka-metrics-count"), ("kafka.network", "RequestChannel"),
    ("kafka.network", "SocketServer"), ("kafka.network", "Processor"), ("kafka.server", "raft-metrics"),
    ("kafka.server", "raft-channel-metrics"), ("kafka.server", "MetadataLoader"), ("kafka.server", "SnapshotEmitter"),
    ("kafka.server", "node-metrics"),
}
# KafkaRequestHandlerPool's idle meters per kind of request handler pool (4.2+): the broker's and
# the controller's, beside the node-wide RequestHandlerAvgIdlePercent.
HANDLER_POOLS = {"BrokerRequestHandlerAvgIdlePercent": "b", "ControllerRequestHandlerAvgIdlePercent": "ck"}


def roles_of(domain: str, keys: list[tuple[str, str]]) -> str:
    """ROLE_RULES: where a bean of the captured combined node would exist on other kinds of node."""
    k = dict(keys)
    type_, name = k.get("type", ""), k.get("name", "")
    if domain == "kafka.controller":
        return "ck" if name in KRAFT_CONTROLLER_NAMES else "c"
    if type_ == "KafkaRequestHandlerPool" and name in HANDLER_POOLS:
        return HANDLER_POOLS[name]
    if type_ == "ControllerServer" or k.get("listener") == "CONTROLLER" or type_ == "registration-metrics":
        return "ck"  # registration-metrics: the ControllerServer's registration channel, not on a broker-only node
    if k.get("listener") == "PLAINTEXT":
        return "b"  # the broker listener: a dedicated controller has none
    if type_ == "RequestMetrics" and k.get("request") in CONTROLLER_REQUESTS:
        return "ck"
    if domain == "kafka.log" and k.get("topic") == "__cluster_metadata":
        return "k"
    kraft = "k" if type_ in KRAFT_TYPES else ""
    if (domain, type_) in COMMON_TYPES or type_ == "socket-server-metrics":
        return kraft
    if type_ == "RequestMetrics" and k.get("request") in SHARED_REQUESTS:
        return ""
    if (domain, type_) in NODE_WIDE_TYPES or (type_ == "BrokerTopicMetrics" and "topic" not in k) or \
            (type_ == "DelayedOperationPurgatory" and k.get("delayedOperation") == "AlterAcls"):
        return ""
    return "b" + kraft


# kafka.server:type=raft-metrics attributes only the quorum leader registers (a real 4.1 broker-only
# node, an observer, lacks them): the simulator serves the captured bean on the active controller
# and a copy without them on every other KRaft node.
RAFT_LEADER_ONLY = ("number-of-observers", "uncommitted-voter-change")

# Beans of replication, which the captured single node never did, as a real Kafka 4.1.1 broker-only
# node of a three-broker KRaft cluster serves them (tests/real/test_simulator_vs_broker.py checks
# the simulator against it): (roles, scope, ObjectName template, the captured bean whose shape they
# share, replaced values). A KafkaMbean shape of their own is given as (attribute, declared, runtime,
# description, value) tuples instead of a captured bean.
_METER_AT_ZERO = {"Count": "0", "MeanRate": "0.0", "OneMinuteRate": "0.0", "FiveMinuteRate": "0.0",
                  "FifteenMinuteRate": "0.0"}
_REQUESTS_METER = "kafka.server:type=BrokerTopicMetrics,name=TotalFetchRequestsPerSec"
REPLICATION = [
    # on a node another fetches from: a partition leader, or the KRaft quorum leader (the other
    # nodes fetch the metadata log), from the first fetch on (RequestChannel marks a replica's fetch
    # under FetchFollower and Fetch, its errors under Fetch only); on a partition leader also
    # DelayedFetchMetrics (both fetcher types at once) and the LeaderReplication quota sensor
    ("-", "L", "kafka.network:type=RequestMetrics,name=RequestsPerSec,request=Fetch,version=18",
     _REQUESTS_METER, _METER_AT_ZERO),
    ("-", "L", "kafka.network:type=RequestMetrics,name=RequestsPerSec,request=FetchFollower,version=18",
     _REQUESTS_METER, _METER_AT_ZERO),
    ("-", "L", "kafka.network:type=RequestMetrics,name=ErrorsPerSec,request=Fetch,error=NONE",
     _REQUESTS_METER, _METER_AT_ZERO),
    ("b", "L", "kafka.server:type=DelayedFetchMetrics,name=ExpiresPerSec,fetcherType=consumer",
     _REQUESTS_METER, _METER_AT_ZERO),
    ("b", "L", "kafka.server:type=DelayedFetchMetrics,name=ExpiresPerSec,fetcherType=follower",
     _REQUESTS_METER, _METER_AT_ZERO),
    ("b", "L", "kafka.server:type=LeaderReplication",
     [("byte-rate", "double", "java.lang.Double", "Tracking byte-rate for LeaderReplication", "0.0")], {}),
    # on a leader, per topic a follower fetches (BrokerTopicStats marks every fetched partition's topic)
    ("b", "T", "kafka.server:type=BrokerTopicMetrics,name=TotalFetchRequestsPerSec,topic={topic}",
     _REQUESTS_METER, _METER_AT_ZERO),
    # on a follower, per leader it fetches from (one fetcher thread: num.replica.fetchers=1)
    ("b", "F", "kafka.server:type=FetcherStats,name=BytesPerSec,clientId=ReplicaFetcherThread-0-{leader},"
               "brokerHost={leader_host},brokerPort={leader_port}",
     "kafka.server:type=BrokerTopicMetrics,name=BytesRejectedPerSec", _METER_AT_ZERO),
    ("b", "F", "kafka.server:type=FetcherStats,name=RequestsPerSec,clientId=ReplicaFetcherThread-0-{leader},"
               "brokerHost={leader_host},brokerPort={leader_port}",
     _REQUESTS_METER, _METER_AT_ZERO),
    ("b", "F", "kafka.server:type=replica-fetcher-metrics,broker-id={leader},fetcher-id=0",
     "kafka.server:type=heartbeat-metrics,BrokerId=1", {}),
    # on a follower, per partition it follows (its value: the simulator's lag of that replica)
    ("b", "P", "kafka.server:type=FetcherLagMetrics,name=ConsumerLag,clientId=ReplicaFetcherThread-0-{leader},"
               "topic={topic},partition={partition}",
     "kafka.server:type=ReplicaFetcherManager,name=MaxLag,clientId=Replica", {"Value": "0"}),
]


def parse_dump(path: Path):
    """Yield (ObjectName text, class name, [(attribute, declared, value, runtime class)])."""
    bean = None
    head = re.compile(r"^(kafka\.\S.*?)   \[(.+)\]$")
    attr = re.compile(r"^    (\S+) : (\S+) = (.*)  \(([\w.$]+)\)$")
    for line in path.read_text().splitlines():
        if line.startswith("###") or not line.strip():
            continue
        m = head.match(line)
        if m:
            if bean:
                yield bean
            bean = (m.group(1), m.group(2), [])
            continue
        m = attr.match(line)
        if not m or bean is None:
            raise SystemExit(f"{path}: cannot parse line: {line!r}")
        bean[2].append((m.group(1), m.group(2), m.group(3), m.group(4)))
    if bean:
        yield bean


def parse_help(path: Path) -> dict[tuple[str, str, str], str]:
    """(domain, type, attribute) -> description, from jmx_exporter's HELP lines."""
    out = {}
    for line in path.read_text().splitlines():
        if not line.startswith("# HELP kafka"):
            continue
        rest = line.split(" ", 3)[3]
        desc, _, where = rest.rpartition(" ")
        m = re.match(r"^([\w.]+):(.*),attribute=(.+)$", where)
        if not m:
            continue
        props = dict(p.split("=", 1) for p in m.group(2).split(",") if "=" in p)
        out.setdefault((m.group(1), props.get("type", ""), m.group(3)), desc)
    return out


def split_keys(text: str) -> tuple[str, list[tuple[str, str]]]:
    domain, _, rest = text.partition(":")
    return domain, [tuple(p.split("=", 1)) for p in re.findall(r'[^,=]+=(?:"[^"]*"|[^,]*)', rest)]


def node_facts(beans: list) -> tuple[str, str, str]:
    """The captured node's cluster id, start time and version, which the inventory templates."""
    cluster_id = next(a[0][2] for n, _, a in beans if n == "kafka.server:type=KafkaServer,name=ClusterId")
    start_ms = next(v for n, _, a in beans if n == f"kafka.server:type=app-info,id={NODE_ID}"
                    for (an, _, v, _) in a if an == "StartTimeMs")
    version = next(v for n, _, a in beans if n == f"kafka.server:type=app-info,id={NODE_ID}"
                   for (an, _, v, _) in a if an == "Version")
    return cluster_id, start_ms, version


def shape_and_values(name: str, cls: str, domain: str, k: dict, attrs: list, helps: dict,
                     facts: tuple[str, str, str]) -> tuple[list[str], list[str]]:
    """A bean's `attr|declared|runtime|description` fields and its values, the node's facts templated."""
    cluster_id, start_ms, version = facts
    shape_attrs = []
    values = []
    for an, declared, value, runtime in attrs:
        if cls == KAFKA_MBEAN:
            desc = helps.get((domain, k.get("type", ""), an))
            if desc is None:
                desc = f"Metric indicating {an}" if k.get("type") == "app-info" else ""
        else:
            desc = DEFAULT_DESCRIPTION
        for text in (an, declared, runtime, desc, value):
            if any(c in text for c in "\t\n|"):
                raise SystemExit(f"{name}: attribute {an}: tab, newline or '|' in {text!r}")
        shape_attrs.append(f"{an}|{declared}|{runtime}|{desc}")
        if value == cluster_id and runtime == "java.lang.String":
            value = "{cluster_id}"
        elif value == version and runtime == "java.lang.String":
            value = "{version}"
        elif value == start_ms and runtime == "java.lang.Long":
            value = "{start_ms}"
        values.append(value)
    return shape_attrs, values


def captured_rows(beans: list, helps: dict, shapes: dict[tuple, int], rows: list) -> dict[str, tuple[str, list]]:
    """Adds the shapes and rows of the captured beans; returns them by ObjectName as
    (class, [(attr|declared|runtime|desc, value)])."""
    health = {s.key for s in catalog.HEALTH_MBEANS}
    facts = node_facts(beans)
    version = facts[2]
    captured: dict[str, tuple[str, list]] = {}
    for name, cls, attrs in beans:
        domain, keys = split_keys(name)
        k = dict(keys)
        if (domain, k.get("type"), k.get("name")) in health and k.get("topic") != "__cluster_metadata":
            continue  # the model serves it (the metadata log is no partition of the model)
        if "topic" in k and k["topic"] != "__cluster_metadata":
            if (domain, k.get("type")) != ("kafka.server", "BrokerTopicMetrics"):
                raise SystemExit(f"unexpected per-topic bean {name}: teach make_inventory.py its scope")
            keys = [(kk, "{topic}" if kk == "topic" else vv) for kk, vv in keys]
        keys = [(kk, "{node}" if kk in ("BrokerId", "id", "client-id") and vv == NODE_ID else
                 "{broker}" if kk == "broker" and vv == NODE_ID else vv) for kk, vv in keys]
        template = domain + ":" + ",".join(f"{kk}={vv}" for kk, vv in keys)
        shape_attrs, values = shape_and_values(name, cls, domain, k, attrs, helps, facts)
        captured[name] = (cls, list(zip(shape_attrs, values)))
        scope = "T" if "{topic}" in template else "-"
        template = re.sub(r"clientSoftwareVersion=" + re.escape(version) + r"\b", "clientSoftwareVersion={version}",
                          template)
        shape = shapes.setdefault((cls, tuple(shape_attrs)), len(shapes))
        if k.get("type") == "raft-metrics":
            values = ["{raft_state}" if an == "current-state" else "{raft_leader}" if an == "current-leader" else v
                      for (an, *_), v in zip(attrs, values)]
            rows.append(("qk", scope, shape, template, values))
            kept = [i for i, (an, *_) in enumerate(attrs) if an not in RAFT_LEADER_ONLY]
            lesser = shapes.setdefault((cls, tuple(shape_attrs[i] for i in kept)), len(shapes))
            rows.append(("ok", scope, lesser, template, [values[i] for i in kept]))
            continue
        rows.append((roles_of(domain, keys) or "-", scope, shape, template, values))
    return captured


def replication_rows(captured: dict[str, tuple[str, list]], shapes: dict[tuple, int], rows: list) -> None:
    """Adds the rows of REPLICATION, each like a captured bean or with its own attributes."""
    for roles, scope, template, like, replaced in REPLICATION:
        if isinstance(like, str):
            cls, pairs = captured[like]
            attrs = [a for a, _ in pairs]
            values = [replaced.get(a.split("|", 1)[0], v) for a, v in pairs]
        else:
            cls, attrs, values = KAFKA_MBEAN, ["|".join(a[:4]) for a in like], [a[4] for a in like]
        shape = shapes.setdefault((cls, tuple(attrs)), len(shapes))
        rows.append((roles, scope, shape, template, values))


def write_inventory(out, version: str, shapes: dict[tuple, int], rows: list) -> None:
    out.write(f"# kafka-jmx-sidecar broker simulator: MBean inventory of a real Kafka {version} node\n")
    out.write("# generated by mbeans/simulator/make_inventory.py from a capture of that node; do not edit\n")
    out.write("# S <shape> <class> <attr|declared|runtime|description>...\n")
    out.write("# M <roles: b broker, c controller, k KRaft, - any> <scope: T per topic on produce, - once> "
              "<shape> <ObjectName template> <values>...\n")
    for (cls, attrs), sid in sorted(shapes.items(), key=lambda kv: kv[1]):
        out.write("\t".join(["S", str(sid), cls, *attrs]) + "\n")
    for roles, scope, sid, template, values in rows:
        out.write("\t".join(["M", roles, scope, str(sid), template, *values]) + "\n")


def main(argv: list[str]) -> int:
    ref = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[3] / "shared/reference/kafka-4.1"
    dump, exporters = ref / "all-kafka-mbeans-full.txt", sorted(ref.glob("jmx_exporter-*-standalone-metrics.txt"))
    for f in (dump, *exporters[:1]):
        if not f.is_file():
            print(f"error: {f} not found; pass the reference directory as the first argument", file=sys.stderr)
            return 2
    if len(exporters) != 1:
        print(f"error: {ref}: expected one jmx_exporter-*-standalone-metrics.txt, found {len(exporters)}",
              file=sys.stderr)
        return 2
    helps = parse_help(exporters[0])
    beans = list(parse_dump(dump))
    shapes: dict[tuple, int] = {}
    rows: list = []
    captured = captured_rows(beans, helps, shapes, rows)
    replication_rows(captured, shapes, rows)
    write_inventory(sys.stdout, node_facts(beans)[2], shapes, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
