"""The scene the simulator-vs-broker test and the rules-across-releases test share: one story played
on a real Kafka cluster of a release (tests/real/test_simulator_vs_broker.py's docstring tells it),
then the same on the simulator posing as that release, every MBean of both read whole.

    scene = build_scene(SETUPS["4.4"])
    scene.real[1]                              # broker 1's kafka.* MBeans: ObjectName -> Bean
    scene.real_other[1]                        # ... and its org.apache.kafka.* ones (KIP-1100's old names)

The session's `scenes` fixture (tests/real/conftest.py) builds each scene once, PLAYED_AT_ONCE at a
time in threads from the first test that needs one (a scene mostly waits for its cluster).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from kafka_jmx_sidecar.mbeans.partition_states import Parsed, read_describe
from kafka_jmx_sidecar.mbeans.simulator import Simulator
from harness import processes
from harness.kafka import CONTROLLER_ID, KafkaCluster
from harness.mbean_dump import Bean, read_mbeans

POSED = 1
STOPPED = 3
RECORDS = 500
TOPICS = {  # name: (replica assignment, leader first; min.insync.replicas)
    "rf3-min2": ([[1, 2, 3], [2, 3, 1], [3, 1, 2]], 2),
    "rf2-min2": ([[1, 3], [3, 1]], 2),
    "rf1-min2": ([[1]], 2),
    "rf1-on3": ([[3]], 1),
}
PRODUCED = ("rf1-min2", "rf3-min2")  # rf1-min2 only on broker 1; rf3-min2 on every broker


@dataclass(frozen=True)
class Setup:
    release: str             # harness/kafka.py's release name
    acks: str                # the producer's: before 3.7 raw min.insync.replicas 2 rejects acks=all on
                             # rf1-min2 (NOT_ENOUGH_REPLICAS); the simulator's produce API has no acks
    every_mbean: bool        # compare every kafka.* MBean, or the health catalog's (test_simulator_vs_broker.py)
    elr: bool                # KIP-966 eligible leader replicas, on in KRaft clusters created by 4.1 and later


SETUPS = {"4.4": Setup("4.4", acks="all", every_mbean=True, elr=True),
          "4.1": Setup("4.1", acks="all", every_mbean=True, elr=True),
          "2.4": Setup("2.4", acks="1", every_mbean=False, elr=False)}
PLAYED_AT_ONCE = 2
OTHER_DOMAINS = "org.apache.kafka*:*"  # beside kafka.*: the domains KIP-1100 renamed (Kafka 4.2)


_ELR = re.compile(r"\bElr:[ \t]*([\d,]*)")


def cluster_from_describe(text: str, brokers: list[int], controllers: list[int]) -> dict:
    """`kafka-topics.sh --describe` output as a `simulate --cluster` dict (topics in the order printed)."""
    topics: dict[str, dict] = {}
    for row in read_describe(text.splitlines()):
        assert isinstance(row, Parsed), f"describe line {row.line_no}: {row.reason}"
        s = row.state
        t = topics.setdefault(s.topic, {"name": s.topic, "config": {"min.insync.replicas": s.min_isr},
                                        "partitions": []})
        assert s.partition == len(t["partitions"]), "partitions are printed in order"
        t["partitions"].append({"replicas": list(s.replicas), "isr": list(s.isr), "leader": s.leader,
                                "adding_replicas": list(s.adding_replicas),
                                "removing_replicas": list(s.removing_replicas)})
    return {"brokers": brokers, "controllers": controllers, "topics": list(topics.values())}


def topology(text: str) -> dict[tuple[str, int], tuple]:
    """(topic, partition) -> (leader, replicas, ISR as a set, ELR as a set), from describe output."""
    out = {}
    for row in read_describe(text.splitlines()):
        s = row.state
        out[(s.topic, s.partition)] = (-1 if s.leader is None else s.leader, s.replicas, frozenset(s.isr))
    for line in text.splitlines():
        m = re.search(r"Topic:\s*(\S+)\s+Partition:\s*(\d+)", line)
        if m:
            elr = _ELR.search(line)
            key = (m.group(1), int(m.group(2)))
            out[key] += (frozenset(int(x) for x in elr.group(1).split(",") if x) if elr else frozenset(),)
    return out


# --- the scene: the real cluster and the simulator, each read once ---------------------------------

@dataclass
class Scene:
    setup: Setup
    version: str                  # the release's full version, e.g. 4.1.1
    controller: int               # the (active) controller node
    before: str                   # describe output before broker 3 stopped
    after: str                    # ... and after
    real: dict[int, dict[str, Bean]]
    sim: dict[int, dict[str, Bean]]
    sim_topology: dict[tuple[str, int], tuple]
    real_other: dict[int, dict[str, Bean]] = field(default_factory=dict)  # org.apache.kafka.* MBeans
    ports: tuple[int, ...] = ()   # the real brokers' client ports (in fetcher MBeans' names)


def _produce(kafka: KafkaCluster, topic: str, acks: str) -> None:
    # Round-robin over the partitions, so each of rf3-min2's leaders gets records (the default sticky
    # partitioner may leave a partition out, and with it broker 1's per-topic meters).
    kafka.tool(kafka.release.producer_performance, "--topic", topic, "--num-records", str(RECORDS),
               "--record-size", "100", "--throughput", "-1", "--producer-props",
               f"bootstrap.servers={kafka.bootstrap}", f"acks={acks}", "linger.ms=5",
               "partitioner.class=org.apache.kafka.clients.producer.RoundRobinPartitioner", timeout=300)


def _describe_until(kafka: KafkaCluster, ready, what: str) -> str:
    """The first describe output that satisfies `ready`."""
    seen: list[str] = []

    def check() -> bool:
        seen.append(kafka.describe())
        return ready(seen[-1])
    kafka.wait_for(check, what, 60)
    return seen[-1]


def _create_topics(kafka: KafkaCluster) -> str:
    """Creates TOPICS (in one JVM) and returns the describe output once every partition has a leader."""
    return kafka.create_topics({name: dict(assignment=assignment, min_isr=min_isr)
                                for name, (assignment, min_isr) in TOPICS.items()})


def _fetcher_gone(kafka: KafkaCluster, leader: int) -> bool:
    names = read_mbeans(kafka.jmx_url(POSED))
    return not any(f"ReplicaFetcherThread-0-{leader}," in n for n in names)


def _active_controller(kafka: KafkaCluster) -> int:
    if kafka.release.kraft:
        return CONTROLLER_ID
    # ZooKeeper: whichever live broker won the election (reported by ActiveControllerCount)
    for node in kafka.brokers:
        if kafka.brokers[node].running:
            beans = read_mbeans(kafka.jmx_url(node))
            if value(beans, "kafka.controller:type=KafkaController,name=ActiveControllerCount") == 1:
                return node
    raise AssertionError("no live broker is the active controller")


def build_scene(setup: Setup) -> Scene:
    """The real cluster's story, then the simulator's; every process is stopped by PID before it
    returns. The cluster is new (not real_kafka's shared one): every MBean of broker 1 is compared,
    so another test's topics, or MBeans they left behind, would show as differences."""
    kafka = KafkaCluster(setup.release, brokers=3)
    sim = None
    try:
        kafka.start()
        pids = kafka.pids()
        before = _create_topics(kafka)
        for topic in PRODUCED:
            _produce(kafka, topic, setup.acks)
        kafka.stop_broker(STOPPED)
        # The controlled shutdown has moved leaders and shrunk ISRs; broker 1 shuts its idle
        # fetcher for broker 3 when it applies that change.
        kafka.wait_for(lambda: _fetcher_gone(kafka, STOPPED), "broker 1's fetcher for broker 3 gone", 60)
        after = _describe_until(kafka, lambda text: "Leader: 3" not in text, "no partition led by broker 3")
        controller = _active_controller(kafka)
        real = {node: read_mbeans(kafka.jmx_url(node)) for node in {POSED, controller}}
        real_other = {node: read_mbeans(kafka.jmx_url(node), OTHER_DOMAINS) for node in {POSED, controller}}
        version = kafka.release.version
        kafka.remove()
        assert not [p for p in pids if processes.pid_alive(p)], "Kafka processes still running after stop"

        cluster = cluster_from_describe(before, [1, 2, 3], [controller])
        cluster["metadata"] = "kraft" if kafka.release.kraft else "zookeeper"
        sim = Simulator.start(cluster, kafka_version=version, broker=POSED, serve=sorted({POSED, controller}))
        for topic in PRODUCED:
            sim.produce(topic, bytes=RECORDS * 100, messages=RECORDS)
        sim.fail_broker(STOPPED)
        states = {(s.topic, s.partition): (s.leader, s.replicas, frozenset(s.isr)) for s in sim.partition_states()}
        for key, elr in sim.eligible_leader_replicas().items():
            states[key] += (frozenset(elr),)
        served = {node: read_mbeans(url) for node, url in sim.urls.items()}
        return Scene(setup, version, controller, before, after, real, served, states, real_other,
                     tuple(b.port for b in kafka.brokers.values()))
    finally:
        if sim is not None:
            pid = sim.pid
            sim.stop()
            assert not processes.pid_alive(pid), "the simulator still runs after stop"
        kafka.remove()


def value(beans: dict[str, Bean], name: str, attr: str = "Value"):
    return beans[name].attrs[attr][2]

