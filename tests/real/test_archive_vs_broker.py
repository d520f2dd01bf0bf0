"""The archive, real against real: a sidecar next to broker 1 of a real Kafka 4.4 cluster (three
brokers), with the Admin API configured and no recompute (so the writer asks the Admin API with a
client of its own), archives while the cluster goes healthy -> broker 3 down -> recovered. Read
back, the state at each step's polls equals what `kafka-topics.sh --describe` printed then (leader,
replicas, ISR of every partition), the live brokers, the topic's min ISR from the Admin API, and the
counts broker 1 shows of itself: ISR size and replica count where `--describe` says it leads, 0
and 0 where it follows. `--describe` is read by this test's own parser (test_health_vs_brokers)."""
from __future__ import annotations

import time

from kafka_jmx_sidecar.exporter.archive.reader import Rejects, read_archive, states_at
from kafka_jmx_sidecar.exporter.poll.collector import Collector
from kafka_jmx_sidecar.exporter.source.broker import JmxSource
from kafka_jmx_sidecar.exporter.config.load import broker_settings
from kafka_jmx_sidecar.exporter.config.load import load
from harness.sidecar import config_text
from tests.real.test_health_vs_brokers import RULES, read_describe

TOPICS = {"archived": [[1, 2, 3], [2, 3, 1], [3, 1, 2]], "pair": [[1, 3], [3, 2]]}


def settled(cluster, predicate, what: str) -> dict:
    """`--describe` of our topics once `predicate(lines)` holds and two reads 2 s apart agree."""
    deadline = time.monotonic() + 120
    last = None
    while True:
        lines = {k: v for k, v in read_describe(cluster.describe()).items() if k[0] in TOPICS}
        if len(lines) == 5 and predicate(lines) and lines == last:
            return lines
        last = lines
        assert time.monotonic() < deadline, f"{what}: not within 120 s:\n{cluster.describe()}"
        time.sleep(2)


def test_the_archive_holds_what_describe_and_the_broker_showed(real_kafka, tmp_path):
    cluster = real_kafka("4.4", brokers=3)
    cluster.create_topics({name: dict(assignment=assignment, min_isr=2) for name, assignment in TOPICS.items()})
    directory = tmp_path / "archive"
    path = tmp_path / "sidecar.yml"
    path.write_text(config_text(cluster.jmx_host_port(1), RULES, sidecar=(
        "  namesRefreshSeconds: 0.01\n"
        f"  admin:\n    bootstrapServers: {cluster.bootstrap}\n    logDirs: false\n"
        f"  archive:\n    directory: {directory}\n")))
    loaded = load(str(path))
    collector = Collector(lambda cfg: JmxSource(cfg, broker_settings(cfg, loaded.settings)), loaded.config, loaded.settings)
    written = 0

    def poll_twice() -> list[float]:
        nonlocal written
        times = []
        for _ in range(2):
            assert collector.poll_once(), collector.last_error
            times.append(collector.snapshot.taken_at)
            written += 1
            deadline = time.monotonic() + 60
            while collector.metrics.registry.get_sample_value(
                    "kafka_jmx_sidecar_archive_polls_total", {"outcome": "written"}) < written:
                assert time.monotonic() < deadline, "the writer did not write the poll"
                time.sleep(0.05)
        return times

    steps = []  # (poll times, describe lines, live brokers)
    try:
        full = settled(cluster, lambda ls: all(len(l.isr) == len(l.replicas) for l in ls.values()), "healthy")
        steps.append((poll_twice(), full, (1, 2, 3)))
        cluster.stop_broker(3)
        down = settled(cluster, lambda ls: all(l.leader != 3 for l in ls.values()), "broker 3 down")
        assert down != full  # broker 3's partitions have other leaders now
        # not compared: when broker 3 was the controller, the first ListPartitionReassignments after
        # goes to it and fails (kafka-python keeps the controller it found), and the client is made anew
        assert collector.poll_once(), collector.last_error
        written += 1
        steps.append((poll_twice(), down, (1, 2)))
    finally:
        if not cluster.brokers[3].running:
            cluster.start_broker(3)
    back = settled(cluster, lambda ls: all(len(l.isr) == len(l.replicas) for l in ls.values()), "recovered")
    steps.append((poll_twice(), back, (1, 2, 3)))
    collector.close()

    rejects = Rejects()
    polls = list(read_archive([directory], rejects))
    assert rejects.total == 0, rejects.examples
    assert len(polls) == 7 and all(p.poll.admin for p in polls) and polls[0].poll.keyframe
    assert polls[0].poll.version.startswith("4.4") and polls[0].header.broker == "1"
    assert not polls[1].records  # nothing changed between the two polls of a step
    at = dict(states_at(iter(polls), [t for times, _, _ in steps for t in times]))
    for times, lines, live in steps:
        expected_counts = {k: (len(l.isr), len(l.replicas)) if l.leader == 1 else (0, 0)
                           for k, l in lines.items() if 1 in l.replicas}
        for t in times:
            state = at[t]
            ours = {k: s for k, s in state.states.items() if k[0] in TOPICS}
            assert {k: (s.leader, s.replicas, s.isr, s.adding, s.removing) for k, s in ours.items()} == \
                {k: (l.leader, l.replicas, l.isr, l.adding, l.removing) for k, l in lines.items()}, f"at {t}"
            assert state.cluster.live == live and state.cluster.reassignments == "known"
            assert state.min_isr["archived"] == (2, "admin") and state.min_isr["pair"] == (2, "admin")
            assert {k: v for k, v in state.counts.items() if k[0] in TOPICS} == expected_counts, f"at {t}"
