"""The simulator posing as a broker of a real Kafka cluster serves what that broker serves.

Real Apache Kafka 4.4 and 4.1 clusters (tests/real: three brokers and a dedicated KRaft controller,
node 100; 4.1 the first release with ELR on by default) and a real Kafka 2.4 cluster (three brokers
on ZooKeeper, one of them the controller) get topics in the states the health MBeans are about and
producer traffic, then lose broker 3 to a controlled shutdown:

    rf3-min2  RF 3, min.insync.replicas 2, one partition led by each broker  -> ISR 2: at min ISR
    rf2-min2  RF 2 on brokers 1 and 3, min.insync.replicas 2                 -> ISR 1: under min ISR
    rf1-min2  RF 1 on broker 1, min.insync.replicas 2                        -> at min ISR (3.7+), under before
    rf1-on3   RF 1 on broker 3                                               -> offline

The simulator gets the same cluster as `kafka-topics.sh --describe` printed it before the stop,
the same traffic through its produce API and the same stop (fail_broker), poses as broker 1 with
`--kafka-version` the release's, and serves the controller too. Then broker 1 is compared with
broker 1 and the controller with the controller over JMX: the topology the stop left, the
ObjectNames, each MBean's class, attribute names and declared and runtime types, and the health
values. Against 4.4 and 4.1 every kafka.* MBean is compared (the simulator serves a capture of a
real node of each: mbeans/simulator/inventory-4.4.tsv, -4.1.tsv); against 2.4 the health catalog's
(mbeans/catalog.py), because the simulator's other MBeans are the 4.1 capture for every version
before 4.4 (a real 2.4 broker serves about 100 MBeans the simulator lacks, and lacks about 350
the simulator serves). The scenes (tests/real/scenes.py) are played two at a time in threads from
the session's first test that needs one (a scene mostly waits for its cluster), and shared with
test_rules_across_releases.py.

The real broker is right. Names that differ from run to run are normalised (NORMALISED); names
that exist or not depending on which broker a client happened to pick are listed with the reason
(BY_CHANCE), as are the names the simulator does not serve yet (NOT_MODELLED) and the health values
that depend on timing (RACY_VALUES); every difference once found between the two is kept as a
named case (FOUND).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

from kafka_jmx_sidecar.mbeans import catalog
from kafka_jmx_sidecar.mbeans.health import parse_version
from harness.kafka import CONTROLLER_ID
from harness.mbean_dump import Bean
from tests.real.scenes import POSED, RECORDS, SETUPS, Scene, topology
from tests.real.scenes import value as _value


# Parts of names that differ between any two brokers or runs: the log directory, the network
# processor ids (a default broker has 3 network threads, the captured 4.1 node the simulator copies
# had 2; which processor a connection lands on is round-robin) and the leader's listener address in
# the fetcher's FetcherStats.
NORMALISED = [
    (re.compile(r'logDirectory="[^"]*"'), 'logDirectory="<dir>"'),
    (re.compile(r"\b(networkProcessor|processor)=\d+"), r"\1=<n>"),
    (re.compile(r"brokerHost=[^,]*,brokerPort=\d+"), "brokerHost=<host>,brokerPort=<port>"),
]

# Names a broker creates on a client's request, when the client picked that broker: the admin
# client of kafka-topics.sh and the producer send each request to a broker of their choosing (the
# least loaded node, at random among equals), so whether broker 1 saw a request type, one of its
# versions or one of its errors is chance. The simulator serves the set the captured broker saw.
_TOOL_REQUESTS = ("ApiVersions|CreateTopics|DeleteTopics|DescribeCluster|DescribeConfigs|DescribeTopicPartitions|"
                  "InitProducerId|ListPartitionReassignments|Metadata|Produce")
BY_CHANCE = [
    (re.compile(rf"kafka\.network:type=RequestMetrics,name=RequestsPerSec,request=({_TOOL_REQUESTS}),version=\d+"),
     "a request of kafka-topics.sh or of the producer, sent to a broker of the client's choosing"),
    (re.compile(rf"kafka\.network:type=RequestMetrics,name=ErrorsPerSec,request=({_TOOL_REQUESTS}),error=\w+"),
     "its outcome: NONE, or a race such as Metadata LEADER_NOT_AVAILABLE (a new topic's leader not yet "
     "known) or InitProducerId COORDINATOR_LOAD_IN_PROGRESS (producer ids not yet fetched)"),
    (re.compile(r"kafka\.network:type=RequestMetrics,name=ErrorsPerSec,request=Fetch,"
                r"error=(FENCED_LEADER_EPOCH|UNKNOWN_LEADER_EPOCH|NOT_LEADER_OR_FOLLOWER|"
                r"UNKNOWN_TOPIC_OR_PARTITION|UNKNOWN_TOPIC_ID)"),
     "a follower's fetch racing a leader change (the controlled shutdown moves leaders) or racing the "
     "leader's own view of a new topic (a follower that learned of the partition first is answered "
     "UNKNOWN_TOPIC_OR_PARTITION, or UNKNOWN_TOPIC_ID (seen on 4.4) for a fetch naming the topic by "
     "its id, until the leader has applied the metadata record)"),
    (re.compile(r"kafka\.network:type=RequestMetrics,name=ErrorsPerSec,request=BrokerHeartbeat,"
                r"error=REQUEST_TIMED_OUT"),
     "a broker's heartbeat answered too late by the controller on a loaded machine (seen on 4.1 at a load "
     "average of 25 on 2 cores)"),
]


# Names the simulator does not serve yet, with the reason (the real broker is right: these are gaps).
NOT_MODELLED = [
    (re.compile(r"kafka\.controller:type=KafkaController,name=BrokerRegistrationState,broker=\d+"),
     "a KRaft controller's gauge per registered broker (ACTIVE 30, CONTROLLED_SHUTDOWN 20, FENCED 10): "
     "this cluster's controller has one per broker, the captured 4.1 node had none (the 4.4 one had "
     "its own, which the simulator serves per broker); when Kafka registers it is not settled"),
]


def normalise(name: str) -> str:
    for pattern, replacement in NORMALISED:
        name = pattern.sub(replacement, name)
    return name


def by_chance(name: str) -> bool:
    return any(p.fullmatch(name) for p, _reason in BY_CHANCE)


@pytest.fixture(params=list(SETUPS))
def scene(request, scenes) -> Scene:
    """Each comparison against each release (each scene is built once, in the background:
    tests/real/scenes.py, the `scenes` fixture)."""
    return scenes[request.param].result()


# --- the comparisons -------------------------------------------------------------------------------

def test_the_scene_is_the_one_described(scene):
    """The real cluster reached the states this module is about (else the comparisons below prove little)."""
    t = topology(scene.after)
    assert t[("rf3-min2", 0)][2] == {1, 2} and t[("rf3-min2", 2)][0] == 1  # broker 3's partition moved to 1
    assert t[("rf2-min2", 0)][2] == {1} and t[("rf2-min2", 1)][0] == 1
    if scene.setup.elr:  # KIP-966: the ISR empties, the stopped replica stays eligible
        assert t[("rf1-on3", 0)] == (-1, (3,), frozenset(), frozenset({3}))
    else:  # before ELR the controller keeps the last ISR member
        assert t[("rf1-on3", 0)] == (-1, (3,), frozenset({3}), frozenset())
    assert all(len(p[2]) == len(p[1]) for p in topology(scene.before).values()), "all in sync before the stop"


def test_the_simulator_stops_a_broker_as_the_real_controller_does(scene):
    """The topology the stop left, ELR included (KIP-966, on by default from 4.1)."""
    assert scene.sim_topology == topology(scene.after)


def _names(beans: dict[str, Bean]) -> set[str]:
    return {normalise(n) for n in beans}


_CATALOG = {(s.domain, s.type, s.name) for s in catalog.HEALTH_MBEANS}


def _compared(scene: Scene, beans: dict[str, Bean]) -> dict[str, Bean]:
    """The MBeans compared for this release: every one, or the health catalog's (any version's, so
    that a bean served for the wrong versions shows)."""
    if scene.setup.every_mbean:
        return beans
    out = {}
    for name, bean in beans.items():
        domain, _, props = name.partition(":")
        keys = dict(kv.split("=", 1) for kv in props.split(","))
        if (domain, keys.get("type"), keys.get("name")) in _CATALOG:
            out[name] = bean
    return out


def _node(scene: Scene, role: str) -> int:
    return POSED if role == "broker" else scene.controller


@pytest.mark.parametrize("role", ["broker", "controller"])
def test_the_same_kafka_object_names(scene, role):
    node = _node(scene, role)
    real, sim = _names(_compared(scene, scene.real[node])), _names(_compared(scene, scene.sim[node]))
    gaps = [n for n in real - sim if any(p.fullmatch(n) for p, _reason in NOT_MODELLED)]
    assert sorted(n for n in real - sim if not by_chance(n) and n not in gaps) == [], "only the real node has these"
    assert sorted(n for n in sim - real if not by_chance(n)) == [], "only the simulator has these"


def _shape(bean: Bean) -> tuple:
    # attribute order is not compared: a JVM introspects Yammer's MBean interfaces and fills Kafka's
    # metric maps in an order that differs from run to run (seen between two brokers of one cluster)
    return bean.cls, {a: (declared, runtime) for a, (declared, runtime, *_value) in bean.attrs.items()}


@pytest.mark.parametrize("role", ["broker", "controller"])
def test_the_same_classes_attribute_names_and_types(scene, role):
    node = _node(scene, role)
    real = {normalise(n): _shape(b) for n, b in _compared(scene, scene.real[node]).items()}
    sim = {normalise(n): _shape(b) for n, b in _compared(scene, scene.sim[node]).items()}
    problems = [f"{n}: real {real[n]} simulator {sim[n]}" for n in sorted(set(real) & set(sim)) if real[n] != sim[n]]
    assert problems == []
    assert len(set(real) & set(sim)) >= (400 if scene.setup.every_mbean else 50)  # not a vacuous comparison


# Health values that depend on timing, per release, with the reason; the real one is at least the
# simulator's.
RACY_VALUES = {
    "2.4": {
        # Under ZooKeeper a controlled shutdown races the stopping follower's last fetches: the
        # controller shrinks the ISR, the leader may take the follower back ("Expanding ISR from 1,2
        # to 1,2,3" a third of a second later, seen in a real 2.4 broker's log) until it has stopped
        # and the controller shrinks again. KRaft brokers refuse a shutting-down replica (KIP-841).
        "kafka.server:type=ReplicaManager,name=IsrExpandsPerSec":
            "a stopping follower taken back into the ISR before it stops",
    },
}


def _assert_same_health(scene: Scene, real: dict, sim: dict) -> None:
    racy = RACY_VALUES.get(scene.setup.release, {})
    for name in racy:
        if name in real or name in sim:
            assert real.pop(name) >= sim.pop(name), name
    assert sim == real


# Health values a test can expect to be equal: counts and flags of the model. Left out, with the
# reason: ProducerIdCount (the ids of idempotent producers in the logs it leads; the simulator's
# traffic has bytes and messages, no producers), Log Size (the real log holds record batches with
# their headers; the simulator counts payload bytes) and the KRaft metadata log (its length is the
# cluster's history of metadata records; the simulator serves the captured node's).
def _health(beans: dict[str, Bean]) -> dict[str, object]:
    out = {}
    for name, bean in beans.items():
        if by_chance(name):
            continue
        if re.match(r"kafka\.server:type=ReplicaManager,", name) and "ProducerIdCount" not in name:
            out[name] = _value(beans, name, "Value" if "Value" in bean.attrs else "Count")
        elif name.startswith("kafka.cluster:type=Partition,"):
            out[name] = _value(beans, name)
        elif re.match(r"kafka\.log:type=Log,name=(NumLogSegments|LogStartOffset),", name) or \
                re.match(r"kafka\.log:type=Log,name=(Size|LogEndOffset),topic=rf2-min2,", name):
            if "__cluster_metadata" not in name:
                out[name] = _value(beans, name)
        elif re.match(r"kafka\.controller:type=(KafkaController|ControllerStats),name=(OfflinePartitions|ActiveController|"
                      r"PreferredReplicaImbalance|GlobalPartition|GlobalTopic|ActiveBroker|FencedBroker)Count$", name):
            out[name] = _value(beans, name)
        elif name == "kafka.controller:type=ControllerStats,name=UncleanLeaderElectionsPerSec":
            out[name] = _value(beans, name, "Count")
    return out


# What the stop leaves on broker 1, by each release's rules: rf1-min2 (RF 1, min ISR 2) is at min
# ISR from 3.7 (min ISR capped by the replica count) and under min ISR before.
BROKER_1 = {
    "4.1": {"UnderReplicatedPartitions": 4, "UnderMinIsrPartitionCount": 2, "AtMinIsrPartitionCount": 3,
            "LeaderCount": 5, "PartitionCount": 6},
    "2.4": {"UnderReplicatedPartitions": 4, "UnderMinIsrPartitionCount": 3, "AtMinIsrPartitionCount": 2,
            "LeaderCount": 5, "PartitionCount": 6},
}
BROKER_1["4.4"] = BROKER_1["4.1"]


def test_the_same_health_values_on_the_broker(scene):
    real, sim = _health(scene.real[POSED]), _health(scene.sim[POSED])
    _assert_same_health(scene, dict(real), dict(sim))
    # ReplicaManager's gauges and 3 meters; 6 gauges of each of the 6 partitions it hosts, 2 of their
    # logs, and rf2-min2's 2 without traffic; under ZooKeeper the KafkaController gauges (all 0 on a
    # broker that is not the controller) and ControllerStats' meter
    gauges = {"4.4": 8 + 3, "4.1": 8 + 3, "2.4": 6 + 3 + 5 + 1}[scene.setup.release]
    assert len(real) == gauges + 6 * 6 + 6 * 2 + 2 * 2
    rm = "kafka.server:type=ReplicaManager,name="
    assert {k: real[rm + k] for k in BROKER_1[scene.setup.release]} == BROKER_1[scene.setup.release]


def test_the_same_traffic_counts_on_the_broker(scene):
    """The produced records, where the partitioner cannot spread them differently: rf1-min2 has
    one partition, led by broker 1; broker 1 hosts all of rf3-min2's partitions."""
    for beans in (scene.real[POSED], scene.sim[POSED]):
        assert _value(beans, "kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec,topic=rf1-min2",
                      "Count") == RECORDS
        assert _value(beans, "kafka.log:type=Log,name=LogEndOffset,topic=rf1-min2,partition=0") == RECORDS
        assert sum(_value(beans, f"kafka.log:type=Log,name=LogEndOffset,topic=rf3-min2,partition={p}")
                   for p in range(3)) == RECORDS


def test_the_same_health_values_on_the_controller(scene):
    real, sim = _health(scene.real[scene.controller]), _health(scene.sim[scene.controller])
    _assert_same_health(scene, dict(real), dict(sim))
    c = "kafka.controller:type=KafkaController,name="
    expected = {"OfflinePartitionsCount": 1, "GlobalPartitionCount": 7, "GlobalTopicCount": 4,
                "PreferredReplicaImbalanceCount": 3, "ActiveControllerCount": 1}
    if parse_version(scene.version) >= (2, 8):
        expected.update(FencedBrokerCount=1, ActiveBrokerCount=2)
    assert {k: real[c + k] for k in expected} == expected


# --- every difference found between the simulator and the real broker, kept ------------------------

@dataclass(frozen=True)
class Case:
    node: int
    present: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()
    attributes: tuple[str, frozenset] | None = None  # (name, its exact attribute set)


_REQ = "kafka.network:type=RequestMetrics,name={},request={}"
_FETCHER = "clientId=ReplicaFetcherThread-0-{},brokerHost=<host>,brokerPort=<port>"
FOUND = {
    # make_inventory had these request types as controller-only; brokers take and forward them
    "forwarded requests have RequestMetrics on a broker": Case(POSED, present=tuple(
        _REQ.format(m, r) for r in ("AddRaftVoter", "RemoveRaftVoter", "UnregisterBroker")
        for m in ("TotalTimeMs", "RequestQueueTimeMs", "LocalTimeMs", "RemoteTimeMs", "ThrottleTimeMs",
                  "ResponseQueueTimeMs", "ResponseSendTimeMs", "RequestBytes"))),
    # the ControllerServer's registration channel: a broker-only node has none
    "no controller registration channel on a broker": Case(
        POSED, absent=("kafka.server:type=registration-metrics,BrokerId=1",),
        present=("kafka.server:type=heartbeat-metrics,BrokerId=1",)),
    "a controller registration channel on the controller": Case(
        CONTROLLER_ID, present=("kafka.server:type=registration-metrics,BrokerId=100",)),
    # the KRaft quorum leader's own raft-metrics attributes: not on an observer
    "raft-metrics of an observer": Case(POSED, attributes=("kafka.server:type=raft-metrics", frozenset({
        "append-records-rate", "commit-latency-avg", "commit-latency-max", "current-epoch", "current-leader",
        "current-state", "current-vote", "current-vote-directory-id", "election-latency-avg", "election-latency-max",
        "fetch-records-rate", "high-watermark", "log-end-epoch", "log-end-offset", "number-of-voters",
        "number-unknown-voter-connections", "poll-idle-ratio-avg"}))),
    # make_inventory had these as broker-only; a dedicated controller handles requests too (brokers
    # forward admin requests to it; the other nodes fetch the metadata log from it)
    "a dedicated controller handles requests": Case(CONTROLLER_ID, present=(
        _REQ.format("TotalTimeMs", "CreateTopics"), _REQ.format("TotalTimeMs", "IncrementalAlterConfigs"),
        _REQ.format("TotalTimeMs", "FetchFollower"),
        "kafka.network:type=RequestMetrics,name=RequestsPerSec,request=FetchFollower,version=18",
        "kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec", "kafka.server:type=BrokerTopicMetrics,name=TotalFetchRequestsPerSec",
        "kafka.server:type=KafkaRequestHandlerPool,name=RequestHandlerAvgIdlePercent", "kafka.server:type=Produce",
        "kafka.server:type=ControllerMutation", "kafka.log:type=LogFlushStats,name=LogFlushRateAndTimeMs",
        "kafka.server:type=DelayedOperationPurgatory,name=PurgatorySize,delayedOperation=AlterAcls"),
        absent=("kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions",
                "kafka.server:type=DelayedFetchMetrics,name=ExpiresPerSec,fetcherType=follower")),
    # a dedicated controller has no broker listener
    "no broker listener on the controller": Case(CONTROLLER_ID, absent=(
        "kafka.server:type=socket-server-metrics,listener=PLAINTEXT",
        "kafka.server:type=socket-server-metrics,listener=PLAINTEXT,networkProcessor=<n>")),
    # the peers' client software version is the release's, not the captured node's 4.1.0
    "client software of the release": Case(POSED, present=(
        "kafka.server:type=socket-server-metrics,clientSoftwareName=apache-kafka-java,clientSoftwareVersion={release},"
        "listener=PLAINTEXT,networkProcessor=<n>",)),
    # replication, which the captured single node never did: on a leader once followers fetch
    "a leader's beans of follower fetches": Case(POSED, present=(
        "kafka.network:type=RequestMetrics,name=RequestsPerSec,request=Fetch,version=18",
        "kafka.network:type=RequestMetrics,name=RequestsPerSec,request=FetchFollower,version=18",
        "kafka.network:type=RequestMetrics,name=ErrorsPerSec,request=Fetch,error=NONE",
        "kafka.server:type=DelayedFetchMetrics,name=ExpiresPerSec,fetcherType=consumer",
        "kafka.server:type=DelayedFetchMetrics,name=ExpiresPerSec,fetcherType=follower",
        "kafka.server:type=LeaderReplication",
        "kafka.server:type=BrokerTopicMetrics,name=TotalFetchRequestsPerSec,topic=rf3-min2",
        # broker 3 fetched rf2-min2 from broker 1 before it stopped: the meter stays
        "kafka.server:type=BrokerTopicMetrics,name=TotalFetchRequestsPerSec,topic=rf2-min2"),
        absent=("kafka.server:type=BrokerTopicMetrics,name=TotalFetchRequestsPerSec,topic=rf1-min2",)),
    # ... and on a follower, per leader it fetches from and per partition it follows; the fetcher
    # for the stopped broker 3 is gone with its partitions
    "a follower's fetcher beans": Case(POSED, present=(
        f"kafka.server:type=FetcherStats,name=BytesPerSec,{_FETCHER.format(2)}",
        f"kafka.server:type=FetcherStats,name=RequestsPerSec,{_FETCHER.format(2)}",
        "kafka.server:type=replica-fetcher-metrics,broker-id=2,fetcher-id=0",
        "kafka.server:type=FetcherLagMetrics,name=ConsumerLag,clientId=ReplicaFetcherThread-0-2,topic=rf3-min2,"
        "partition=1"), absent=(
        f"kafka.server:type=FetcherStats,name=BytesPerSec,{_FETCHER.format(3)}",
        "kafka.server:type=replica-fetcher-metrics,broker-id=3,fetcher-id=0",
        "kafka.server:type=FetcherLagMetrics,name=ConsumerLag,clientId=ReplicaFetcherThread-0-3,topic=rf3-min2,"
        "partition=2")),
}


@pytest.mark.parametrize("case", list(FOUND), ids=list(FOUND))
def test_a_difference_once_found_stays_fixed(scene_4_4, case):
    c = FOUND[case]
    for side, beans in (("real broker", scene_4_4.real[c.node]), ("simulator", scene_4_4.sim[c.node])):
        names = _names(beans)
        present = [n.replace("{release}", scene_4_4.version) for n in c.present]
        assert [n for n in present if n not in names] == [], f"{side} lacks"
        assert [n for n in c.absent if n in names] == [], f"{side} has"
        if c.attributes:
            name, attrs = c.attributes
            assert set(beans[name].attrs) == attrs, side


def test_the_elr_case_of_a_stopped_last_replica(scene_4_1):
    """Found: the simulator kept the last ISR member in the ISR of a partition whose only replica
    stopped; Kafka 4.1 (ELR) empties the ISR and keeps the replica eligible."""
    assert topology(scene_4_1.after)[("rf1-on3", 0)][2:] == (frozenset(), frozenset({3}))
    assert scene_4_1.sim_topology[("rf1-on3", 0)][2:] == (frozenset(), frozenset({3}))


# --- the classes of the simulator's realistic log values (mbeans/simulator/values.py) ---------------

def test_the_log_values_classes_serve_what_a_real_broker_serves(scene_4_1):
    """What LogValues serves in each class is what broker 1 serves in it (the classes' shares are
    the simulator's, tests/simulator/test_log_values.py): a never-written log (rf2-min2: no
    traffic) is EMPTY_LOG; a written, idle one (rf1-min2: 500 records of 100 bytes) keeps them from
    offset 0 in one segment and stores each in what stored_bytes says for its size and some batch
    size; the fetcher of a caught-up follower lags 0, and a partition with no open transaction has
    LastStableOffsetLag 0."""
    from kafka_jmx_sidecar.mbeans.simulator.values import EMPTY_LOG, stored_bytes

    beans = scene_4_1.real[POSED]

    def log(topic: str) -> dict:
        return {k: _value(beans, f"kafka.log:type=Log,name={k},topic={topic},partition=0") for k in EMPTY_LOG}
    assert log("rf2-min2") == EMPTY_LOG
    written = log("rf1-min2")
    assert written["LogEndOffset"] == RECORDS and written["LogStartOffset"] == 0 and written["NumLogSegments"] == 1
    assert stored_bytes(100, RECORDS) <= written["Size"] / RECORDS <= stored_bytes(100, 1)
    lags = {n: _value(beans, n) for n in beans if n.startswith("kafka.server:type=FetcherLagMetrics,name=ConsumerLag,")}
    assert lags and set(lags.values()) == {0}
    lso = {n: _value(beans, n) for n in beans if n.startswith("kafka.cluster:type=Partition,name=LastStableOffsetLag,")}
    assert len(lso) == 6 and set(lso.values()) == {0}
