"""`kafka-jmx-sidecar serve` (its own process) archives while the simulator plays a scenario: a
broker fails, an ISR shrinks below min ISR, the broker recovers, a reassignment runs and
completes, another broker fails. Read back with the archive's reader, every poll's reconstructed
state equals what the simulator's model held then: the per-partition counts broker 1 shows (its
ISR size and replica count where it leads, 0 where it follows; Kafka 4.1 leaves adding replicas
out of ReplicasCount), the topics' min ISR as configured, the broker's release, and
the UnderReplicatedPartitions leaf, worked out by hand below."""
from __future__ import annotations

import time

import pytest

from kafka_jmx_sidecar.exporter.archive.reader import Rejects, read_archive, states_at
from kafka_jmx_sidecar.mbeans.simulator import Simulator
from tests.e2e.sidecar_harness import HEALTH_RULES
from tests.e2e.test_operations import Serve
# Broker 1 leads orders-0..2 (RF 3, min ISR 2) and payments-0 (RF 2); audit-0 is on brokers 2, 3.
from tests.e2e.test_prometheus_scenario import CLUSTER

URP = ("kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions", "Value")
# (event, broker 1's UnderReplicatedPartitions after it: Kafka 4.1, worked out by hand)
STEPS = [
    (None, 0),
    ({"op": "fail_broker", "broker": 3}, 3),  # orders ISR [1,2]: URP
    ({"op": "shrink_isr", "topic": "orders", "partition": 0, "broker": 2}, 3),  # orders-0 ISR [1]
    ({"op": "restore_broker", "broker": 3}, 1),  # orders-0 ISR [1,3] still lacks 2
    # payments-0 [1,2] -> [1,3]: replicas [1,2,3], adding [3]; KIP-352: RF 2, ISR 2, not URP
    ({"op": "start_reassignment", "topic": "payments", "partition": 0, "replicas": [1, 3], "auto_complete": False}, 1),
    ({"op": "complete_reassignment", "topic": "payments", "partition": 0}, 1),
    ({"op": "fail_broker", "broker": 2}, 3),  # orders-0 [1,3] as before; orders-1,2 ISR [1,3]
]


def broker_1_counts(states) -> dict:
    """(ISR size, ReplicasCount) of each partition broker 1 hosts, as its gauges show them."""
    out = {}
    for s in states:
        if 1 not in s.replicas:
            continue
        if s.leader == 1:
            adding_in_list = sum(1 for r in s.adding_replicas if r in s.replicas)
            out[(s.topic, s.partition)] = (len(s.isr), len(s.replicas) - adding_in_list)
        else:
            out[(s.topic, s.partition)] = (0, 0)
    return out


@pytest.fixture(scope="module")
def sim():
    with Simulator.start(CLUSTER, kafka_version="4.1", broker=1) as s:
        yield s


def polls_so_far(directory):
    return list(read_archive([directory], Rejects())) if directory.is_dir() else []


def test_the_archive_replays_what_the_model_held_at_each_poll(sim, tmp_path):
    directory = tmp_path / "archive"
    serve = Serve(tmp_path, sim.url, {
        "pollIntervalSeconds": 0.5,
        "archive": f"{{directory: {directory}, retentionHours: 24}}",
        "recompute": "{minInsyncReplicas: {topics: {orders: 2}}}",
    }, rules=HEALTH_RULES.read_text())
    try:
        windows = []  # (from, to, model's counts, URP by hand)
        for event, urp in STEPS:
            if event:
                if windows:
                    windows[-1][1] = time.time()
                sim.apply(event)
            applied = time.time()
            expected = broker_1_counts(sim.partition_states())
            deadline = time.monotonic() + 60
            while len([p for p in polls_so_far(directory) if p.t > applied]) < 3:
                assert serve.proc.poll() is None, serve.log[-3000:]
                assert time.monotonic() < deadline, f"no archived poll after {event}:\n{serve.log[-3000:]}"
                time.sleep(0.1)
            windows.append([applied, None, expected, urp])
        windows[-1][1] = time.time()
    finally:
        serve.sigterm()
        serve.kill()

    rejects = Rejects()
    polls = list(read_archive([directory], rejects))
    # SIGTERM may have come in the middle of a write: at most that poll is lost, and counted
    assert set(rejects.by_reason()) <= {"torn last line", "incomplete poll"}, rejects.examples
    assert polls[0].poll.keyframe and polls[0].header.broker == "1" and polls[0].header.schema == 1
    assert sum(p.poll.keyframe for p in polls) == len({p.path for p in polls})  # one per hourly file
    checked = 0
    for start, end, expected, urp in windows:
        # the first poll that ended after the event may have started before it: the next ones did not
        times = [p.t for p in polls if start < p.t < end][1:]
        assert times, f"no poll between {start} and {end}"
        for t, state in states_at(read_archive([directory]), times):
            assert state.t == t
            assert state.counts == expected, f"at {t}"
            assert state.leaves[URP] == urp, f"at {t}"
            assert state.version.startswith("4.1") and state.broker == "1"
            assert state.min_isr == {"orders": (2, "configured"), "payments": (1, "kafka_default")}
            checked += 1
    assert checked >= len(STEPS) * 2
    # change polls hold only what changed: far fewer records than the keyframe
    assert max(len(p.records) for p in polls if not p.poll.keyframe) < len(polls[0].records)
