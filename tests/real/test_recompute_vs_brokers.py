"""The recompute, real against real: one scenario played on a real Kafka 4.4 cluster and
on older real clusters (3.6, KRaft; 2.4, 2.2 and 0.11, ZooKeeper), three brokers each:

    healthy -> reassigning (throttled) -> reassigned -> broker 3 down -> recovered (broker 3 back)

At every step the sidecar next to each live broker of the older cluster, recomputing under
`kafka-3.7` (mode `outdated`, min ISR and reassignments from the Admin API), publishes what the 4.4
brokers report THEMSELVES in the same step: the ReplicaManager counts summed over the live brokers
(UnderReplicatedPartitions, UnderMinIsrPartitionCount, AtMinIsrPartitionCount,
ReassigningPartitions) and every partition's Partition gauges as its leader reports them
(UnderReplicated, UnderMinIsr, AtMinIsr, InSyncReplicasCount, ReplicasCount). Sums and leaders'
values, because which broker leads after a failure is each cluster's own business.

Asked for the release's own profile (mode `all`: `legacy` before 2.5, `kafka-2.5` for 3.6),
the sidecar publishes what the older brokers report
themselves, for every health gauge their release has.

Kafka 2.2 and 0.11 have no ListPartitionReassignments (2.4+): the reassignment is unknown, and the documented
fallback (judged as no reassignment, the broker's own ReplicasCount counting the adding replicas) is
expected in the reassigning step, worked by hand below, with the fallback's self metric and its log
line. Sidecars run in this process (poll.collector.Collector, one poll per reading), so that a
reading is taken right when a step shows in --describe.
"""
from __future__ import annotations

import logging
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
from kafka_jmx_sidecar.mbeans.health import profile_for_version
from harness import processes
from harness.kafka import KafkaCluster
from harness.sidecar import config_text
from tests.real.test_health_vs_brokers import (BROKER_CONFIG, MOVING_RECORDS, RECORD_SIZE, RULES, THROTTLE,
                                               read_describe, read_gauges)

STEPS = ("healthy", "reassigning", "reassigned", "broker_3_down", "recovered")
# topic -> (replica assignment, leader first; min.insync.replicas or None for the default, 1)
TOPICS = {
    "orders": ([[1, 2, 3], [2, 3, 1], [3, 1, 2]], 2),   # at min ISR with broker 3 down
    "pairs": ([[1, 2], [2, 3], [3, 1]], 2),             # under it
    "strict": ([[1, 2]], 3),                            # min ISR above RF: AtMinIsr (3.7), UnderMinIsr before
    "single": ([[1], [3]], None),                       # RF 1: AtMinIsr under 3.7; offline with broker 3 down
    "moving": ([[1], [2]], 2),                          # moved 1 -> 2 and grown 2 -> 2,3
}
MOVES = {("moving", 0): [2], ("moving", 1): [2, 3]}
SUMMED = ("UnderReplicatedPartitions", "UnderMinIsrPartitionCount", "AtMinIsrPartitionCount", "ReassigningPartitions")
PARTITION = ("UnderReplicated", "UnderMinIsr", "AtMinIsr", "InSyncReplicasCount", "ReplicasCount")
# what each older release's brokers serve of them (catalog `since`)
SERVED = {"3.6": (SUMMED, PARTITION), "2.4": (SUMMED[:3], PARTITION), "2.2": (SUMMED[:2], PARTITION[:2] + PARTITION[3:]),
          "0.11": (SUMMED[:1], PARTITION[:1] + PARTITION[3:])}
# releases without ListPartitionReassignments (2.4+): the reassignment is unknown, its fallback expected
NO_REASSIGNMENT_API = ("2.2", "0.11")
REACH_TIMEOUT, AGREE_TIMEOUT = 150.0, 60.0

# the MBean names listed each poll: partitions appear on brokers as they are moved there, and the
# recompute judges the partitions listed (sidecar.namesRefreshSeconds)
REFRESH = "  namesRefreshSeconds: 0.01\n"
SIDECARS = {
    "own": REFRESH,
    "kafka-3.7": REFRESH + "  recompute:\n    semantics: kafka-3.7\n    mode: outdated\n",
    # the release's own profile (mbeans.health.profile_for_version) in place of OWN_PROFILE
    "legacy": REFRESH + "  recompute:\n    semantics: OWN_PROFILE\n    mode: all\n",
}


# --- one cluster, its sidecars, the scenario -------------------------------------------------------

class Play:
    def __init__(self, cluster: KafkaCluster, directory: Path, kinds: tuple[str, ...]):
        self.cluster = cluster
        self.directory = directory
        self.kinds = kinds
        self.collectors: dict[int, dict[str, Collector]] = {}

    @property
    def live(self) -> list[int]:
        return [i for i, n in self.cluster.brokers.items() if n.running]

    def start_sidecars(self, broker: int) -> None:
        out = {}
        for kind in self.kinds:
            block = SIDECARS[kind].replace("OWN_PROFILE", profile_for_version(self.cluster.release.name).name)
            if "recompute" in block:
                block += f"  admin:\n    bootstrapServers: {self.cluster.bootstrap}\n    logDirs: false\n"
            path = self.directory / f"sidecar-{broker}-{kind}.yml"
            path.write_text(config_text(self.cluster.jmx_host_port(broker), RULES, block))
            loaded = load(str(path))
            settings = loaded.settings
            out[kind] = Collector(lambda cfg, s=settings: JmxSource(cfg, broker_settings(cfg, s)), loaded.config, settings)
        self.collectors[broker] = out

    def stop_sidecars(self, broker: int) -> None:
        for c in self.collectors.pop(broker, {}).values():
            c.close()
            if c._recompute is not None and c._recompute.admin is not None:
                c._recompute.admin.close()

    def act(self, step: str) -> None:
        c = self.cluster
        if step == "healthy":
            c.create_topics({topic: dict(assignment=assignment, min_isr=min_isr)
                             for topic, (assignment, min_isr) in TOPICS.items()})
            c.produce("moving", records=MOVING_RECORDS, record_size=RECORD_SIZE)
            for b in self.live:
                self.start_sidecars(b)
        elif step == "reassigning":
            c.reassign(MOVES, throttle=THROTTLE)
        elif step == "reassigned":
            c.finish_reassignment()
        elif step == "broker_3_down":
            self.stop_sidecars(3)
            c.stop_broker(3)
        elif step == "recovered":
            c.start_broker(3)
            self.start_sidecars(3)

    def shown(self, step: str) -> str | None:
        """What --describe still lacks of `step` (None once it shows it)."""
        lines = read_describe(self.cluster.describe())
        live = set(self.live)
        for (topic, p), target in MOVES.items():
            original = TOPICS[topic][0][p]
            want = set(original) if step == "healthy" else set(original) | set(target) if step == "reassigning" \
                else set(target)
            if (topic, p) not in lines or set(lines[(topic, p)].replicas) != want:
                return f"{topic}-{p}: {lines.get((topic, p))}, expected replicas {sorted(want)}"
        for key, line in lines.items():
            alive = set(line.replicas) & live
            if not alive:
                continue
            lagging = set(MOVES[key]) - set(TOPICS[key[0]][0][key[1]]) if step == "reassigning" and key in MOVES \
                else set()
            if line.leader not in live or set(line.isr) != alive - lagging:
                return f"{key[0]}-{key[1]}: {line}, live brokers {sorted(live)}"
        return None

    def reading(self, kind: str) -> dict:
        """ReplicaManager counts summed over the live brokers, the leaders' non-zero Partition
        gauges, and the text of each broker's poll."""
        totals: Counter = Counter()
        partition: dict = {}
        texts = {}
        for b in self.live:
            c = self.collectors[b][kind]
            assert c.poll_once(), f"the {kind} sidecar of broker {b}: {c.last_error}"
            text = b"".join(assemble(c.snapshot, TEXT, b"", gzip_wanted=False)[1]).decode()
            texts[b] = text + c.metrics.render(TEXT, c.snapshot.taken_at, False).decode()
            g = read_gauges(text)
            for name in SUMMED:
                if name in g.broker:
                    totals[name] += int(g.broker[name])
            for (name, topic, p), v in g.partition.items():
                if name in PARTITION and v:
                    partition[(name, topic, p)] = int(v)
        return {"totals": dict(totals), "partition": partition, "texts": texts}


def _reach(play: Play, step: str) -> None:
    deadline = time.monotonic() + REACH_TIMEOUT
    while (missing := play.shown(step)) is not None:
        if time.monotonic() > deadline:
            pytest.fail(f"Kafka {play.cluster.release.version} never showed {step} in {REACH_TIMEOUT:.0f} s: {missing}")
        time.sleep(1.0)


def _values(r: dict, summed=SUMMED, partition=PARTITION) -> dict:
    """The compared values."""
    return {"totals": {k: r["totals"].get(k, 0) for k in summed},
            "partition": {k: v for k, v in r["partition"].items() if k[0] in partition}}


def _diff(got: dict, want: dict) -> str:
    lines = [f"  {k}: got {got['totals'].get(k)}, expected {v}" for k, v in want["totals"].items()
             if got["totals"].get(k) != v]
    for k in sorted(set(got["partition"]) | set(want["partition"])):
        if got["partition"].get(k, 0) != want["partition"].get(k, 0):
            lines.append(f"  {k[0]}[{k[1]}-{k[2]}]: got {got['partition'].get(k, 0)}, expected {want['partition'].get(k, 0)}")
    return "\n".join(lines)


def _stop(cluster: KafkaCluster) -> None:
    pids = cluster.pids()
    cluster.remove()
    assert not [p for p in pids if processes.pid_alive(p)], "Kafka processes still running after stop"


# --- the 4.4 brokers' own values, step by step ---------------------------------------------------

@pytest.fixture(scope="module")
def kafka_44_values(tmp_path_factory):
    """step -> the 4.4 brokers' own values (read until two readings 2 s apart agree)."""
    cluster = KafkaCluster("4.4", brokers=3, broker_config=BROKER_CONFIG).start()
    play = Play(cluster, tmp_path_factory.mktemp("recompute-4.4"), ("own",))
    values = {}
    try:
        for step in STEPS:
            play.act(step)
            _reach(play, step)
            previous = None
            deadline = time.monotonic() + AGREE_TIMEOUT
            while True:
                now = _values(play.reading("own"))
                if now == previous or time.monotonic() > deadline:
                    break
                previous = now
                time.sleep(2.0)
            values[step] = now
    finally:
        for b in list(play.collectors):
            play.stop_sidecars(b)
        _stop(cluster)
    return values


def _fallback_2_2(v44: dict) -> dict:
    """Kafka 2.2, reassigning: no reassignment known, so each moving partition is judged on its
    full replica list (the broker's ReplicasCount before 2.5), worked by hand:
      moving-0  replicas [1,2] (1 -> 2), ISR [1]:  rf 2 - 1 > 0: under-replicated; effective min
                ISR min(2, 2) = 2 > 1: under min ISR (as 4.4); not reassigning; ReplicasCount 2
      moving-1  replicas [2,3] (2 -> 2,3), ISR [2]: the same
    4.4 counts both as reassigning, neither as under-replicated, with ReplicasCount 1."""
    want = {"totals": dict(v44["totals"]), "partition": dict(v44["partition"])}
    want["totals"]["UnderReplicatedPartitions"] += 2
    want["totals"]["ReassigningPartitions"] -= 2
    for p in (0, 1):
        want["partition"][("UnderReplicated", "moving", p)] = 1
        want["partition"][("ReplicasCount", "moving", p)] = 2
    return want


@pytest.mark.parametrize("release", ["3.6", "2.4", "2.2", "0.11"])
def test_recompute_publishes_what_44_brokers_report(release, kafka_44_values, tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="kafka_jmx_sidecar.recompute")
    # A cluster of its own, as the 4.4 one: the totals compared count every partition on it, and
    # the scenario stops a broker. Topics deleted as on 4.4 (0.11's default keeps them).
    cluster = KafkaCluster(release, brokers=3, broker_config={**BROKER_CONFIG, "delete.topic.enable": "true"}).start()
    play = Play(cluster, tmp_path, tuple(SIDECARS))
    own_summed, own_partition = SERVED[release]
    try:
        for step in STEPS:
            play.act(step)
            _reach(play, step)
            v44 = kafka_44_values[step]
            want = _fallback_2_2(v44) if release in NO_REASSIGNMENT_API and step == "reassigning" else v44
            deadline = time.monotonic() + AGREE_TIMEOUT
            while True:
                recomputed = play.reading("kafka-3.7")
                got = _values(recomputed)
                own = _values(play.reading("own"), own_summed, own_partition)
                legacy = _values(play.reading("legacy"), own_summed, own_partition)
                # 3.6 and 2.4: every input known from the Admin API (after a controller change, once it answers again)
                known = release in NO_REASSIGNMENT_API or not re.search(r'recompute_input_fallbacks\{[^}]*\} [1-9]',
                                                           "\n".join(recomputed["texts"].values()))
                if (got == want and legacy == own and known) or time.monotonic() > deadline:
                    break
                time.sleep(2.0)
            assert got == want, (f"Kafka {release}, {step}: the sidecar recomputing under kafka-3.7 differs from "
                                 f"what the 4.4 brokers report:\n{_diff(got, want)}\n4.4: {v44}\n"
                                 f"the sidecar's polls:\n" + "\n".join(recomputed["texts"].values()))
            assert legacy == own, (f"Kafka {release}, {step}: the sidecar under legacy differs from the brokers' "
                                   f"own values:\n{_diff(legacy, own)}")
            metrics = "\n".join(recomputed["texts"].values())
            if release in NO_REASSIGNMENT_API and step == "reassigning":
                fallbacks = re.findall(r'recompute_input_fallbacks\{fallback="([^"]+)",input="reassignments"\} (\S+)',
                                       metrics)
                assert fallbacks and all(f == "admin_api_unsupported" and float(v) > 0 for f, v in fallbacks), fallbacks
                assert any("reassignments are not known (admin_api_unsupported)" in r.getMessage()
                           for r in caplog.records), [r.getMessage() for r in caplog.records]
            assert known, f"Kafka {release}, {step}: inputs not known from the Admin API:\n{metrics}"
            assert re.search(r'recompute_info\{broker_semantics="%s",broker_version="%s[.\d]*",mode="outdated",'
                             r'semantics="kafka-3.7"\} 1\.0' % (profile_for_version(release).name, re.escape(release)), metrics), metrics
    finally:
        for b in list(play.collectors):
            play.stop_sidecars(b)
        _stop(cluster)
