"""Eligible leader replicas (KIP-966) on a real Kafka 4.4 cluster of three brokers, created with
ELR on (the default of new clusters since 4.1) and `min.insync.replicas=2` set at the cluster level
(the only level besides topics with ELR on). One cluster start; the scenario stops brokers one by one and brings them back:

    orders   replicas [1,2,3] [2,3,1] [3,1,2]   min ISR 2
    pairs    replicas [2,3]                      min ISR 2
    cleared  replicas [3,2]                      min ISR 2, then 1 while it is offline (clears its ELR)

At every state, side by side:
  - the sidecar's Admin API read (DescribeTopicPartitions) has the ELR and LastKnownElr that the
    release's own `kafka-topics.sh --describe` (TopicCommand) prints;
  - the cluster-wide mode under kafka-4.1 publishes, per partition and summed, the ELR figures the
    `health` command finds in that describe output (two input paths, one set of formulas);
  - the sidecar next to broker 1 (never stopped here; JMX, the Admin API, recompute kafka-4.1,
    rules/kafka-health.yml) publishes for the partitions it leads the cluster view's ElrUnderMinIsr;
  - the figures this file expects, typed from KIP-966's rules (below), hold;
and the controller's ElectionFromEligibleLeaderReplicasPerSec meter stays 0 until a broker of an
ELR comes back to a leaderless partition, then counts the election.
"""
from __future__ import annotations

import json
import re
import time
from io import StringIO

import pytest

from harness.kafka import CONTROLLER_ID, KafkaCluster
from harness.sidecar import config_text
from kafka_jmx_sidecar.exporter.commands import health as health_command
from kafka_jmx_sidecar.exporter.config.load import broker_settings, load
from kafka_jmx_sidecar.exporter.poll.collector import Collector
from kafka_jmx_sidecar.exporter.poll.snapshot import TEXT, assemble
from kafka_jmx_sidecar.exporter.source.broker import JmxSource
from kafka_jmx_sidecar.exporter.source.cluster import ClusterSource
from tests.real.test_cluster_vs_brokers import CLUSTER_RULES, REPO

HEALTH_RULES = (REPO / "rules" / "kafka-health.yml").read_text()

TOPICS = {"orders": [[1, 2, 3], [2, 3, 1], [3, 1, 2]], "pairs": [[2, 3]], "cleared": [[3, 2]]}
FIGURES = ("elr_under_min_isr", "elr_offline_clean", "elr_offline_unclean")
GAUGE = {"elr_under_min_isr": "elrunderminisr", "elr_offline_clean": "elrofflineclean",
         "elr_offline_unclean": "elrofflineunclean"}
TOTAL = {"elr_under_min_isr": "underminisrpartitioncount", "elr_offline_clean": "offlinecleanpartitioncount",
         "elr_offline_unclean": "offlineuncleanpartitioncount"}
CONTROLLER_RULES = """rules:
- pattern: 'kafka.controller<type=ControllerStats, name=(ElectionFromEligibleLeaderReplicas|UncleanLeaderElections)PerSec><>Count'
  name: controllerstats_$1
  type: GAUGE
"""
# What KIP-966's rules make of each state (partition -> (ISR, ELR) and the figures, 1 = raised):
# the ELR is the replicas that left the ISR once it was below min ISR (empty at or above it); a
# leaderless partition with an empty ISR elects an unfenced ELR member; a min ISR change clears it.
EXPECTED = {
    "healthy": {},
    # 3 down: orders at min ISR (ELR stays empty); pairs and cleared below it, 3 kept as ELR
    "broker_3_down": {("pairs", 0): ((2,), (3,)), ("cleared", 0): ((2,), (3,))},
    # 2 down too: orders below min ISR with 2 as ELR; pairs and cleared leaderless, both in the ELR
    "broker_2_down": {("orders", 0): ((1,), (2,)), ("orders", 1): ((1,), (2,)), ("orders", 2): ((1,), (2,)),
                      ("pairs", 0): ((), (2, 3)), ("cleared", 0): ((), (2, 3))},
    # cleared's min ISR changed: its ELR is cleared, nothing clean is left to elect
    "min_isr_changed": {("orders", 0): ((1,), (2,)), ("orders", 1): ((1,), (2,)), ("orders", 2): ((1,), (2,)),
                        ("pairs", 0): ((), (2, 3)), ("cleared", 0): ((), ())},
    # 3 back: elected from pairs' ELR (2 stays its ELR); orders whole again once 3 is in sync
    "broker_3_back": {("pairs", 0): ((3,), (2,)), ("cleared", 0): ((), ())},
}
FLAGS = {  # state -> partition -> the figures raised (every other partition: none)
    "broker_3_down": {("pairs", 0): "elr_under_min_isr", ("cleared", 0): "elr_under_min_isr"},
    "broker_2_down": {**{("orders", p): "elr_under_min_isr" for p in range(3)},
                      ("pairs", 0): "elr_offline_clean", ("cleared", 0): "elr_offline_clean"},
    "min_isr_changed": {**{("orders", p): "elr_under_min_isr" for p in range(3)},
                        ("pairs", 0): "elr_offline_clean", ("cleared", 0): "elr_offline_unclean"},
    "broker_3_back": {("pairs", 0): "elr_under_min_isr", ("cleared", 0): "elr_offline_unclean"},
}
_DESCRIBED = re.compile(r"Topic: ?(\S+)\tPartition: ?(\d+)\tLeader: ?(\S+)\tReplicas: ?\S*\tIsr: ?([\d,]*)"
                        r"\tElr: ?([\d,]*)\tLastKnownElr: ?([\d,]*)")
_PARTITION = re.compile(r'^kafka_cluster_partition_(elr\w+)\{leader="([^"]*)",partition="(\d+)",topic="([^"]*)",\} (\S+)$')
_TOTAL = re.compile(r"^kafka_cluster_elr_(\w+) (\S+)$")


def _ids(text: str) -> tuple[int, ...]:
    return tuple(sorted(int(x) for x in text.split(",") if x))


def _poll(c: Collector) -> str:
    assert c.poll_once(), c.last_error
    return b"".join(assemble(c.snapshot, TEXT, b"", gzip_wanted=False)[1]).decode()


class Scene:
    def __init__(self, kafka: KafkaCluster, tmp):
        self.kafka, self.tmp = kafka, tmp
        path = tmp / "cluster.yml"
        path.write_text(f"sidecar:\n  mode: cluster\n  recompute:\n    semantics: kafka-4.1\n  admin:\n"
                        f"    bootstrapServers: {kafka.bootstrap}\n" + CLUSTER_RULES)
        loaded = load(str(path))
        self.view = Collector(lambda cfg: ClusterSource(cfg, loaded.settings), loaded.config, loaded.settings)
        path = tmp / "controller.yml"
        path.write_text(config_text(kafka.jmx_host_port(CONTROLLER_ID), CONTROLLER_RULES))
        loaded = load(str(path))
        self.controller = Collector(lambda cfg, s=loaded.settings: JmxSource(cfg, broker_settings(cfg, s)),
                                    loaded.config, loaded.settings)
        path = tmp / "broker-1.yml"
        path.write_text(config_text(kafka.jmx_host_port(1), HEALTH_RULES,
                                    f"  namesRefreshSeconds: 0.01\n  recompute:\n    semantics: kafka-4.1\n"
                                    f"  admin:\n    bootstrapServers: {kafka.bootstrap}\n"))
        loaded = load(str(path))
        self.broker_1 = Collector(lambda cfg, s=loaded.settings: JmxSource(cfg, broker_settings(cfg, s)),
                                  loaded.config, loaded.settings)
        self.rows: list[str] = []  # the report: each state, the sidecar's and the tool's figures
        self.described: dict[str, str] = {}  # state -> the tool's describe output

    def close(self) -> None:
        for c in (self.view, self.controller, self.broker_1):
            c.close()

    def broker_1_figure(self) -> tuple[dict, float]:
        """What the sidecar next to broker 1 publishes: ElrUnderMinIsr per hosted partition, and the count."""
        text = _poll(self.broker_1)
        flags = {}
        for labels, v in re.findall(r"^kafka_cluster_partition_elrunderminisr\{(.*)\} (\S+)$", text, re.M):
            found = dict(re.findall(r'(\w+)="([^"]*)"', labels))
            flags[(found["topic"], int(found["partition"]))] = float(v)
        m = re.search(r"^kafka_cluster_elr_underminisrpartitioncount (\S+)$", text, re.M)
        assert m and flags, text
        return flags, float(m.group(1))

    def sidecar(self) -> tuple[dict, dict, dict]:
        """(partition -> (ISR, ELR, LastKnownElr) as the sidecar's Admin API read them,
        partition -> figures raised, totals) from one poll of the cluster-wide mode."""
        text = _poll(self.view)
        raised: dict = {}
        totals = {}
        for line in text.splitlines():
            m = _PARTITION.match(line)
            if m and float(m.group(5)):
                raised.setdefault((m.group(4), int(m.group(3))), set()).add(m.group(1))
            m = _TOTAL.match(line)
            if m:
                totals[m.group(1)] = float(m.group(2))
        read = self.view.source.admin.read()
        lists = {(p.topic, p.partition): (tuple(sorted(p.isr)), tuple(sorted(p.eligible_leader_replicas)),
                                          tuple(sorted(p.last_known_elr))) for p in read.partitions if p.topic in TOPICS}
        return lists, raised, totals

    def led_by(self, broker: int) -> set:
        return {(p.topic, p.partition) for p in self.view.source.admin.read().partitions if p.leader == broker}

    def tool(self) -> tuple[str, dict, dict]:
        """The describe text, partition -> (ISR, Elr, LastKnownElr) as it prints them, and
        partition -> figures the `health` command raises on that text."""
        text = self.kafka.describe()
        lists = {(t, int(p)): (_ids(isr), _ids(elr), _ids(last))
                 for t, p, _, isr, elr, last in _DESCRIBED.findall(text) if t in TOPICS}
        path = self.tmp / "describe.txt"
        path.write_text(text)
        out = StringIO()
        assert health_command.run([str(path)], semantics="kafka-4.1", output="jsonl", default_min_isr=2, out=out) == 0
        raised = {}
        for line in out.getvalue().splitlines():
            obj = json.loads(line)
            if obj["topic"] in TOPICS:
                raised[(obj["topic"], obj["partition"])] = {GAUGE[f] for f in FIGURES if obj[f]}
        return text, lists, raised

    def meter(self) -> float:
        text = _poll(self.controller)
        m = re.search(r"^controllerstats_ElectionFromEligibleLeaderReplicas (\S+)$", text, re.M)
        assert m, text
        return float(m.group(1))

    def check(self, state: str) -> None:
        """Waits until the sidecar shows `state` as EXPECTED says, then compares it with the tool."""
        expected = {k: v for k, v in EXPECTED[state].items()}
        wanted = {key: {GAUGE[f]} for key, f in FLAGS.get(state, {}).items()}
        seen: list = []

        def settled() -> bool:
            lists, raised, totals = self.sidecar()
            seen[:] = [lists, raised, totals]
            isr_elr = {k: (isr, elr) for k, (isr, elr, _) in lists.items() if elr or k in expected}
            return isr_elr == expected and {k: v for k, v in raised.items() if v} == wanted
        try:
            self.kafka.wait_for(settled, f"the sidecar to show {state}", 90, interval=1.0)
        except RuntimeError:
            pytest.fail(f"{state}: the sidecar showed {seen}, not {expected} and {wanted}:\n{self.kafka.describe()}")
        lists, raised, totals = seen
        text, tool_lists, tool_raised = self.tool()
        assert lists == tool_lists, f"{state}: the sidecar's ISR/ELR/LastKnownElr differ from the tool's:\n{text}"
        assert {k: v for k, v in tool_raised.items() if v} == wanted, f"{state}: health on the tool's output:\n{text}"
        assert totals == {TOTAL[f]: float(sum(1 for v in wanted.values() if GAUGE[f] in v)) for f in FIGURES}
        self.described[state] = text
        # the sidecar next to broker 1: its led partitions' figure is the cluster view's (leader 1)
        led = {k: 1.0 if "elrunderminisr" in v else 0.0 for k, v in raised.items() if k in self.led_by(1)}
        flags, count = self.broker_1_figure()
        assert {k: v for k, v in flags.items() if v} == {k: v for k, v in led.items() if v}, (state, flags)
        assert count == sum(led.values()), (state, count)
        self.rows.append(f"{state:16} sidecar {sorted((k, sorted(v)) for k, v in raised.items() if v)} "
                         f"totals {totals}\n{'':16} tool    {sorted((k, sorted(v)) for k, v in tool_raised.items() if v)} "
                         f"Elr/LastKnownElr {sorted((k, v[1], v[2]) for k, v in tool_lists.items() if v[1] or v[2])}")


@pytest.fixture(scope="module")
def scene(tmp_path_factory):
    # A cluster of its own: the scenario stops brokers and changes a topic's min ISR.
    with KafkaCluster("4.4", brokers=3) as kafka:
        # With ELR on the controller keeps min.insync.replicas at the cluster level, made from ITS
        # static config when ELR was enabled (here at the format: 1): a broker's server.properties
        # is overridden by it (seen on 4.4). So the cluster-level value is set, as an operator must.
        kafka.tool("org.apache.kafka.tools.ConfigCommand", "--bootstrap-server", kafka.bootstrap, "--alter",
                   "--entity-type", "brokers", "--entity-default", "--add-config", "min.insync.replicas=2")
        kafka.create_topics({t: dict(assignment=a) for t, a in TOPICS.items()})
        s = Scene(kafka, tmp_path_factory.mktemp("elr"))
        try:
            yield s
        finally:
            print("\n" + "\n".join(s.rows))
            print("".join(f"--- describe at {k}\n{v}" for k, v in s.described.items()))
            s.close()


def test_elr_figures_follow_a_real_cluster_losing_and_regaining_brokers(scene):
    kafka = scene.kafka
    scene.check("healthy")
    assert scene.meter() == 0
    kafka.stop_broker(3)
    scene.check("broker_3_down")
    kafka.stop_broker(2)
    scene.check("broker_2_down")
    # a topic's min ISR changed while its partition is offline: Kafka clears the ELR
    kafka.tool("org.apache.kafka.tools.ConfigCommand", "--bootstrap-server", kafka.bootstrap, "--alter",
               "--entity-type", "topics", "--entity-name", "cleared", "--add-config", "min.insync.replicas=1")
    scene.check("min_isr_changed")
    assert scene.meter() == 0  # nothing elected from an ELR yet
    kafka.start_broker(3)
    scene.check("broker_3_back")
    elected = scene.meter()
    assert elected >= 1  # pairs-0's leader, elected from its ELR
    scene.rows.append(f"ElectionFromEligibleLeaderReplicasPerSec Count: 0 before, {elected:g} after broker 3 came back")
    kafka.start_broker(2)
    kafka.wait_for(lambda: scene.sidecar()[0][("pairs", 0)][0] == (2, 3), "broker 2 back in pairs-0's ISR", 90, 1.0)
    lists, raised, _ = scene.sidecar()
    text, tool_lists, tool_raised = scene.tool()
    assert lists == tool_lists, text
    # every broker is back, but cleared-0's ELR and LastKnownElr were cleared while it was offline:
    # no election brings it back by itself (what KafkaOfflinePartitionsNoEligibleLeader pages for)
    assert {k: v for k, v in raised.items() if v} == {("cleared", 0): {"elrofflineunclean"}}, text
    assert tool_lists[("cleared", 0)] == ((), (), ()) and lists[("orders", 0)][1] == (), text
    scene.rows.append(f"{'broker_2_back':16} sidecar {sorted((k, sorted(v)) for k, v in raised.items() if v)}\n"
                      f"{'':16} tool    {sorted((k, sorted(v)) for k, v in tool_raised.items() if v)}")
