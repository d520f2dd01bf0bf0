"""Differential: the simulator's gauges (Kafka's rules, in Java) == mbeans.recompute (Python).

For each Kafka version, a seeded random cluster is served with every broker on its own JMX port;
a seeded random sequence of events (failures, restores, ISR changes, reassignments, min ISR
changes, topic creation with placeholders, clock advances, leader elections) is applied, and
after each event every health MBean of every live broker, read over JMX, must equal what
`recompute.cluster_values` derives from the model's partition states (ReplicaManager, Partition
and KafkaController gauges; recompute has no values for the Log gauges and meters). Also the SET
of health MBeans each broker serves must be the one recompute and the catalog expect, Log MBeans
included (one set per hosted replica).

The controller's values are compared as they are: recompute is told the metadata mode and the
model's active controller (KRaft leadership is sticky, so it is not always the lowest live one);
under ZooKeeper every broker serves the KafkaController gauges and only the active one reports.
"""
from __future__ import annotations

import random

import pytest

from kafka_jmx_sidecar.mbeans import catalog, recompute
from kafka_jmx_sidecar.mbeans.simulator import SimulatorError
from tests.simulator.sim_jmx import Jmx

VERSIONS = ["2.2", "2.4", "2.5", "3.6", "3.7", "4.1"]
BROKERS = [1, 2, 3, 4]
STEPS = 40


def random_partition(rng: random.Random) -> dict:
    rf = rng.randint(1, 4)
    replicas = rng.sample(BROKERS, rf)
    if rf > 1 and rng.random() < 0.1:
        replicas[-1] = -1  # a placeholder (the never-shipped KIP): counts as a missing replica
    real = [r for r in replicas if r >= 0]
    isr = rng.sample(real, rng.randint(1, len(real)))
    leader = rng.choice(isr)
    if rng.random() < 0.08:
        leader, isr = None, isr[:1]  # leaderless, the last ISR member kept
    p = {"replicas": replicas, "isr": isr, "leader": leader}
    if rng.random() < 0.2 and len(real) >= 2:
        adding = rng.sample(real, rng.randint(1, len(real) - 1))
        rest = [r for r in real if r not in adding]
        removing = rng.sample(rest, rng.randint(0, len(rest) - 1)) if len(rest) > 1 else []
        if leader in adding and not (set(isr) - set(adding)):
            adding = []
        p["adding_replicas"], p["removing_replicas"] = adding, removing
        if leader is not None and leader in adding:
            p["isr"] = isr  # a caught-up adding replica may lead; keep it
    return p


def random_cluster(rng: random.Random, kraft: bool) -> dict:
    topics = []
    for t in range(3):
        topics.append({"name": f"t{t}", "config": {"min.insync.replicas": rng.randint(1, 4)},
                       "partitions": [random_partition(rng) for _ in range(rng.randint(1, 6))]})
    return {"brokers": BROKERS, "controllers": [1, 3] if kraft else [1], "topics": topics}


def random_event(rng: random.Random, sim, states, live: set[int], step: int) -> dict | None:
    dead = [b for b in BROKERS if b not in live]
    led = [s for s in states if s.leader is not None and s.leader >= 0]
    choices = []
    if len(live) > 1:
        choices.append(lambda: {"op": "fail_broker", "broker": rng.choice(sorted(live))})
    if dead:
        choices += [lambda: {"op": "restore_broker", "broker": rng.choice(dead), "catch_up": rng.random() < 0.7}] * 2
    shrinkable = [s for s in led if len(s.isr) > 1]
    if shrinkable:
        def shrink():
            s = rng.choice(shrinkable)
            return {"op": "shrink_isr", "topic": s.topic, "partition": s.partition,
                    "broker": rng.choice([r for r in s.isr if r != s.leader])}
        choices += [shrink] * 2
    expandable = [s for s in led if [r for r in s.replicas if r >= 0 and r in live and r not in s.isr]]
    if expandable:
        def expand():
            s = rng.choice(expandable)
            return {"op": "expand_isr", "topic": s.topic, "partition": s.partition,
                    "broker": rng.choice([r for r in s.replicas if r >= 0 and r in live and r not in s.isr])}
        choices += [expand] * 2
    idle = [s for s in states if not s.adding_replicas and not s.removing_replicas]
    if idle:
        def reassign():
            s = rng.choice(idle)
            return {"op": "start_reassignment", "topic": s.topic, "partition": s.partition,
                    "replicas": rng.sample(BROKERS, rng.randint(1, 4)), "bytes_per_sec": rng.choice([1000, 10 ** 6]),
                    "auto_complete": rng.random() < 0.7}
        choices += [reassign] * 2
    moving = [s for s in states if s.adding_replicas or s.removing_replicas]
    if moving:
        choices.append(lambda: (lambda s: {"op": rng.choice(["complete_reassignment", "cancel_reassignment"]),
                                           "topic": s.topic, "partition": s.partition})(rng.choice(moving)))
    choices.append(lambda: {"op": "set_min_isr", "topic": rng.choice(sorted({s.topic for s in states})),
                            "min_isr": rng.randint(1, 4)})
    choices.append(lambda: {"op": "create_topic", "name": f"new{step}", "partitions": rng.randint(1, 3),
                            "replication_factor": rng.randint(1, 4), "min_isr": rng.randint(1, 3),
                            "allow_under_replicated": True})
    choices.append(lambda: {"op": "advance", "seconds": rng.choice([1, 5, 30])})
    choices.append(lambda: {"op": "elect_preferred_leaders"})
    choices.append(lambda: {"op": "produce", "topic": "*", "bytes": 10_000, "messages": 10})
    return rng.choice(choices)()


# Refusals that Kafka would also make in these random situations (the generator does not track them).
EXPECTED_REFUSALS = ("are not in the ISR", "even with placeholders", "no live broker", "larger than the",
                     "would need an unclean leader election")


def read_health(j: Jmx) -> dict:
    rm = {}
    for n in j.names("kafka.server:type=ReplicaManager,*"):
        name = n.split("name=")[1]
        if not name.endswith("PerSec"):
            rm[name] = j.value(n)
    parts: dict[tuple[str, int], dict[str, int]] = {}
    for n in j.names("kafka.cluster:type=Partition,*"):
        keys = dict(kv.split("=") for kv in n.split(":", 1)[1].split(","))
        parts.setdefault((keys["topic"], int(keys["partition"])), {})[keys["name"]] = j.value(n)
    ctrl = {n.split("name=")[1]: j.value(n) for n in j.names("kafka.controller:type=KafkaController,*")
            if "," not in n.split("name=")[1]}
    health_ctrl = {s.name for s in catalog.KAFKA_CONTROLLER if s.kind is catalog.Kind.GAUGE}
    logs: dict[tuple[str, int], set[str]] = {}
    for n in j.names("kafka.log:type=Log,*"):
        keys = dict(kv.split("=") for kv in n.split(":", 1)[1].split(","))
        if keys["topic"] != "__cluster_metadata":
            logs.setdefault((keys["topic"], int(keys["partition"])), set()).add(keys["name"])
    return {"rm": rm, "partitions": parts, "logs": logs,
            "controller": {k: v for k, v in ctrl.items() if k in health_ctrl}}


def compare(version: str, sim, jmx: dict[int, Jmx], label: str) -> list[str]:
    info = sim.cluster()
    states = sim.partition_states()
    live = set(info["live_brokers"])
    kraft = info["metadata_mode"] == "kraft"
    expected = recompute.cluster_values(
        states, version=version, live_brokers=live, registered_brokers=set(BROKERS) if kraft else live,
        controllers=info["controllers"], active_controller=info["active_controller"],
        metadata=info["metadata_mode"])
    partition_names = {s.name for s in catalog.health_mbeans(version) if s.domain == "kafka.cluster"}
    problems = []
    for b in sorted(live):
        got = read_health(jmx[b])
        want = expected.brokers[b]
        where = f"{label} broker {b}"
        if got["rm"] != want.replica_manager:
            problems.append(f"{where} ReplicaManager {got['rm']} != {want.replica_manager}")
        if set(got["partitions"]) != set(want.partitions):
            problems.append(f"{where} hosts Partition beans for {sorted(got['partitions'])}, "
                            f"expected {sorted(want.partitions)}")
        log_names = {s.name for s in catalog.health_mbeans(version) if s in catalog.LOG}
        if got["logs"] != {key: log_names for key in want.partitions}:
            problems.append(f"{where}: Log MBeans {got['logs']} do not follow the hosted replicas")
        for key, values in want.partitions.items():
            g = got["partitions"].get(key, {})
            if set(g) != partition_names:
                problems.append(f"{where} {key}: Partition gauges {sorted(g)} != {sorted(partition_names)}")
            for name, v in values.items():
                if g.get(name) != v:
                    problems.append(f"{where} {key} {name}: {g.get(name)} != {v}")
        want_ctrl = want.controller
        if want_ctrl is None:
            if got["controller"]:
                problems.append(f"{where}: has KafkaController gauges {sorted(got['controller'])}, expected none")
            continue
        if set(got["controller"]) != set(want_ctrl):
            problems.append(f"{where}: KafkaController gauges {sorted(got['controller'])} != {sorted(want_ctrl)}")
        for name, v in want_ctrl.items():
            if got["controller"].get(name) != v:
                problems.append(f"{where} KafkaController {name}: {got['controller'].get(name)} != {v}")
    if expected.totals.get("LeaderCount", 0) != sum(1 for s in states if s.leader is not None and s.leader >= 0
                                                    and s.leader in live):
        problems.append(f"{label}: LeaderCount total {expected.totals.get('LeaderCount')} off")
    return problems


@pytest.mark.parametrize("version", VERSIONS)
def test_simulator_gauges_equal_recompute_under_random_events(version, simulators, connect):
    rng = random.Random(f"differential-{version}")
    kraft = version >= "3.3"
    sim = simulators.start(random_cluster(rng, kraft), kafka_version=version, serve="all", clock="manual")
    jmx: dict[int, Jmx] = {}

    def connections():
        live = set(sim.cluster()["live_brokers"])
        for b in list(jmx):
            if b not in live:
                jmx.pop(b).close()
        for b in live:
            if b not in jmx:
                jmx[b] = connect(sim.urls[b])
        return live

    connections()
    problems = compare(version, sim, jmx, "initial")
    assert problems == [], "initial state:\n" + "\n".join(problems[:20])
    applied = 0
    seen_nonzero: set[str] = set()
    for step in range(STEPS):
        live = connections()
        event = random_event(rng, sim, sim.partition_states(), live, step)
        try:
            sim.apply(event)
            applied += 1
        except SimulatorError as e:
            assert any(r in str(e) for r in EXPECTED_REFUSALS), f"step {step} {event}: refused: {e}"
            continue
        connections()
        problems = compare(version, sim, jmx, f"step {step} {event['op']}")
        assert problems == [], f"after {event}:\n" + "\n".join(problems[:20])
        for j in jmx.values():
            seen_nonzero |= {k for k, v in read_health(j)["rm"].items() if v}
    assert applied >= STEPS * 0.8
    # the random walk reached the states the test is about
    assert {"UnderReplicatedPartitions", "UnderMinIsrPartitionCount"} <= seen_nonzero
