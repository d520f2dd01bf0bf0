"""The cluster-wide mode against a real Kafka 4.4 cluster of four brokers.

Two `kafka-jmx-sidecar serve` processes in the cluster-wide mode (`sidecar.mode: cluster`, no JMX
target, rules/kafka-cluster.yml), one judging by kafka-3.7 (the 4.4 brokers' own semantics), one by
topic-command; beside them, every live broker's own JMX and the KRaft controller's, read with the
health MBean rules of tests/real/test_health_vs_brokers.py. The cluster loses brokers 1, 2 and 3
one after the other, which plays every row of KIP-427's three examples (its brokers
0, 1, 2, 3 are 1, 2, 3, 4 here) on one partition per example:

    kip427-ex1  replicas 1,2,3    min ISR 2
    kip427-ex2  replicas 1,2,3    min ISR 1   (all three down: offline)
    kip427-ex3  replicas 1,2,3,4  min ISR 2

plus partitions led by every broker (`spread`, RF 2, min ISR 2) and one on broker 4 alone (`solo`,
RF 1). At every step:
  - the cluster view's ReplicaManager totals equal the sums of the live brokers' own gauges, its
    OfflinePartitionsCount the controller's;
  - each partition with a leader has, in the view, its leader's own Partition gauges, labelled
    with that leader; no other broker shows it;
  - a partition without a leader shows only in the view (unavailable 1, leader "none"): no live
    broker serves a non-zero gauge for it;
  - the KIP's verdicts (typed from its text below);
  - the topic-command view flags exactly what 4.4's kafka-topics.sh --describe filters list.
Brokers 3, 2 and 1 are started again at the end (the cluster is shared by the module's session).
"""
from __future__ import annotations

import re
import time
from collections import Counter
from pathlib import Path

import pytest

from kafka_jmx_sidecar.exporter.poll.collector import Collector
from kafka_jmx_sidecar.exporter.source.broker import JmxSource
from kafka_jmx_sidecar.exporter.config.load import broker_settings
from kafka_jmx_sidecar.exporter.config.load import load
from kafka_jmx_sidecar.exporter.poll.snapshot import TEXT, assemble
from harness.kafka import CONTROLLER_ID, KafkaCluster
from harness.sidecar import Serve, config_text
from tests.real.test_health_vs_brokers import RULES, read_describe, read_gauges

REPO = Path(__file__).resolve().parents[2]
CLUSTER_RULES = (REPO / "rules" / "kafka-cluster.yml").read_text()

TOPICS = {  # topic -> (replica assignment, leader first; min.insync.replicas, None: the default 1)
    "kip427-ex1": ([[1, 2, 3]], 2),
    "kip427-ex2": ([[1, 2, 3]], 1),
    "kip427-ex3": ([[1, 2, 3, 4]], 2),
    "spread": ([[1, 2], [2, 3], [3, 4], [4, 1], [2, 4], [3, 1]], 2),
    "solo": ([[4]], None),
}
STEPS = ("healthy", "broker_1_down", "broker_2_down", "broker_3_down")
# KIP-427's examples, as its text states them: (URP, UnderMinIsr, AtMinIsr, offline) after each
# failure. Example 1 ends at its second failure; here its partition then loses its last replica.
KIP_427 = {
    "kip427-ex1": {"healthy": (0, 0, 0, 0), "broker_1_down": (1, 0, 1, 0), "broker_2_down": (1, 1, 0, 0)},
    "kip427-ex2": {"healthy": (0, 0, 0, 0), "broker_1_down": (1, 0, 0, 0), "broker_2_down": (1, 0, 1, 0),
                   "broker_3_down": (0, 0, 0, 1)},
    "kip427-ex3": {"healthy": (0, 0, 0, 0), "broker_1_down": (1, 0, 0, 0), "broker_2_down": (1, 0, 1, 0),
                   "broker_3_down": (1, 1, 0, 0)},
}
GAUGES = ("UnderReplicated", "UnderMinIsr", "AtMinIsr", "InSyncReplicasCount", "ReplicasCount")
TOTALS = ("UnderReplicatedPartitions", "UnderMinIsrPartitionCount", "AtMinIsrPartitionCount",
          "ReassigningPartitions", "LeaderCount")
FILTERS = {"--under-replicated-partitions": "underreplicated", "--under-min-isr-partitions": "underminisr",
           "--at-min-isr-partitions": "atminisr", "--unavailable-partitions": "unavailable"}
REACH_TIMEOUT, AGREE_TIMEOUT = 120.0, 60.0

_PARTITION = re.compile(r'^kafka_cluster_partition_(\w+)\{leader="([^"]*)",partition="(\d+)",topic="([^"]*)",\} (\S+)$')
_TOTAL = re.compile(r"^kafka_(server_replicamanager|controller_kafkacontroller)_(\w+) (\S+)$")


def read_view(text: str) -> dict:
    """The cluster view's /metrics: {"partitions": {(topic, p): {"leader": L, gauge: value}},
    "totals": {name: value}} (names lower-cased, as the rules give them)."""
    partitions: dict = {}
    totals = {}
    for line in text.splitlines():
        m = _PARTITION.match(line)
        if m:
            gauge, leader, p, topic, value = m.groups()
            row = partitions.setdefault((topic, int(p)), {})
            assert row.get("leader", leader) == leader, f"{topic}-{p}: two leaders in one poll:\n{text}"
            row["leader"] = leader
            row[gauge] = float(value)
            continue
        m = _TOTAL.match(line)
        if m:
            totals[m.group(2)] = float(m.group(3))
    return {"partitions": partitions, "totals": totals}


class Cluster:
    def __init__(self, kafka: KafkaCluster, directory: Path):
        self.kafka = kafka
        self.directory = directory
        self.jmx: dict[int, Collector] = {}
        self.views: dict[str, Serve] = {}

    @property
    def live(self) -> list[int]:
        return [b for b, n in self.kafka.brokers.items() if n.running]

    def start(self) -> None:
        self.kafka.create_topics({topic: dict(assignment=assignment, min_isr=min_isr)
                                  for topic, (assignment, min_isr) in TOPICS.items()})
        for node in [*self.live, CONTROLLER_ID]:
            path = self.directory / f"jmx-{node}.yml"
            path.write_text(config_text(self.kafka.jmx_host_port(node), RULES, "  namesRefreshSeconds: 0.01\n"))
            loaded = load(str(path))
            self.jmx[node] = Collector(lambda cfg, s=loaded.settings: JmxSource(cfg, broker_settings(cfg, s)), loaded.config,
                                       loaded.settings)
        for semantics in ("kafka-3.7", "topic-command"):
            path = self.directory / f"cluster-{semantics}.yml"
            path.write_text(f"sidecar:\n  mode: cluster\n  pollIntervalSeconds: 1\n  recompute:\n"
                            f"    semantics: {semantics}\n  admin:\n    bootstrapServers: {self.kafka.bootstrap}\n"
                            + CLUSTER_RULES)
            self.views[semantics] = Serve(path).start()

    def stop_broker(self, broker: int) -> None:
        self.jmx.pop(broker).close()
        self.kafka.stop_broker(broker)

    def close(self) -> None:
        for c in self.jmx.values():
            c.close()
        for s in self.views.values():
            s.stop()

    # -- one reading --------------------------------------------------------------------------

    def describe(self, *filters: str) -> list[dict]:
        target = self.kafka.topic_target()
        runs = self.kafka.tool_runs(self.kafka.release.topic_command, ["--describe", *target],
                                    *[["--describe", *target, f] for f in filters])
        for code, out in runs:
            assert code == 0, out
        return [read_describe(out) for _, out in runs]

    def reached(self, step: str) -> str | None:
        """What --describe still lacks of `step` (None once it shows it): every live replica in
        the ISR and a live leader; no leader where no replica is live."""
        live = set(self.live)
        for key, line in self.describe()[0].items():
            if key[0] not in TOPICS:
                continue
            alive = set(line.replicas) & live
            if (alive and (line.leader not in live or set(line.isr) != alive)) or (not alive and line.leader is not None):
                return f"{key}: {line}, live brokers {sorted(live)}"
        return None

    def reading(self) -> dict:
        """The kafka-topics.sh filters, then the first poll of each view after them, then every
        live broker's and the controller's JMX."""
        lists = self.describe(*FILTERS)[1:]
        after = time.time()
        views = {s: read_view(v.wait_for_poll_after(after)) for s, v in self.views.items()}
        jmx = {}
        for node, c in self.jmx.items():
            assert c.poll_once(), f"JMX of node {node}: {c.last_error}"
            jmx[node] = read_gauges(b"".join(assemble(c.snapshot, TEXT, b"", gzip_wanted=False)[1]).decode())
        return {"views": views, "jmx": jmx,
                "filters": {FILTERS[f]: {k for k in listed if k[0] in TOPICS} for f, listed in zip(FILTERS, lists)}}


def disagreements(r: dict, step: str) -> list[str]:
    """Every way the reading breaks the module's claims (empty: none)."""
    out = []
    view = r["views"]["kafka-3.7"]
    brokers = {b: g for b, g in r["jmx"].items() if b != CONTROLLER_ID}
    summed = Counter()
    for g in brokers.values():
        for name in TOTALS:
            summed[name] += g.broker.get(name, 0.0)
    for name in TOTALS:
        if view["totals"].get(name.lower()) != summed[name]:
            out.append(f"{name}: the view says {view['totals'].get(name.lower())}, the brokers sum to {summed[name]}")
    offline = r["jmx"][CONTROLLER_ID].controller.get("OfflinePartitionsCount")
    if view["totals"].get("offlinepartitionscount") != offline:
        out.append(f"OfflinePartitionsCount: the view says {view['totals'].get('offlinepartitionscount')}, "
                   f"the controller {offline}")
    for key, row in view["partitions"].items():
        leader = row["leader"]
        for b, g in brokers.items():
            for name in GAUGES:
                theirs = g.partition.get((name, *key), 0.0)
                if str(b) == leader and row.get(name.lower()) != theirs:
                    out.append(f"{name}[{key}]: the view says {row.get(name.lower())}, its leader {b} {theirs}")
                elif str(b) != leader and theirs:
                    out.append(f"{name}[{key}]: broker {b} shows {theirs}, the view's leader is {leader}")
        if (leader == "none") != (row.get("unavailable") == 1.0):
            out.append(f"{key}: leader {leader}, unavailable {row.get('unavailable')}")
    for topic, rows in KIP_427.items():
        if step in rows:
            row = view["partitions"].get((topic, 0), {})
            got = tuple(int(row.get(g, -1)) for g in ("underreplicated", "underminisr", "atminisr", "unavailable"))
            if got != rows[step]:
                out.append(f"KIP-427 {topic}, {step}: (URP, UnderMinIsr, AtMinIsr, offline) {got}, the KIP says "
                           f"{rows[step]}")
    tc = r["views"]["topic-command"]
    for flag, listed in r["filters"].items():
        flagged = {k for k, row in tc["partitions"].items() if k[0] in TOPICS and row.get(flag) == 1.0}
        if flagged != listed:
            out.append(f"topic-command {flag}: the view flags {sorted(flagged)}, kafka-topics.sh lists {sorted(listed)}")
    return out


@pytest.fixture(scope="module")
def cluster(real_kafka, tmp_path_factory):
    kafka = real_kafka("4.4", brokers=4)
    c = Cluster(kafka, tmp_path_factory.mktemp("cluster-mode"))
    try:
        c.start()
        yield c
    finally:
        c.close()
        for b in (3, 2, 1):  # the shared cluster as it was found
            if not kafka.brokers[b].running:
                kafka.start_broker(b)


@pytest.mark.parametrize("step", STEPS)
def test_the_cluster_view_agrees_with_every_broker_and_with_kip_427(cluster, step):
    if step != "healthy":
        cluster.stop_broker(int(step.split("_")[1]))
    deadline = time.monotonic() + REACH_TIMEOUT
    while (missing := cluster.reached(step)) is not None:
        assert time.monotonic() < deadline, f"--describe never showed {step} in {REACH_TIMEOUT:.0f} s: {missing}"
        time.sleep(1.0)
    deadline = time.monotonic() + AGREE_TIMEOUT
    while True:
        r = cluster.reading()
        wrong = disagreements(r, step)
        if not wrong or time.monotonic() > deadline:
            break
        time.sleep(2.0)
    assert not wrong, f"{step}:\n  " + "\n  ".join(wrong)
    view = r["views"]["kafka-3.7"]["partitions"]
    assert {k for k in view if k[0] in TOPICS} == {(t, p) for t, (a, _) in TOPICS.items() for p in range(len(a))}
    if step == "broker_3_down":
        # the partitions no broker gauge shows: only the view has them
        # every partition without a replica on broker 4, the one left: both 3-replica KIP examples
        # and spread's 0 (1,2), 1 (2,3) and 5 (3,1)
        leaderless = {k for k, row in view.items() if row["leader"] == "none"}
        assert leaderless == {("kip427-ex1", 0), ("kip427-ex2", 0), ("spread", 0), ("spread", 1), ("spread", 5)}, \
            leaderless
        for key in leaderless:
            assert all(not g.partition.get((name, *key)) for b, g in r["jmx"].items() for name in GAUGES)
            assert view[key]["unavailable"] == 1.0
        assert r["jmx"][CONTROLLER_ID].controller["OfflinePartitionsCount"] == 5.0
