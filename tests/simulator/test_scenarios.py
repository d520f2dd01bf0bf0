"""Each built-in scenario drives the gauges step by step to the values derived by hand.

The expected values below come from KIP-427's table, from which broker reports what, and
from Kafka's leader election (the first replica, in assignment order, that is alive and in the
ISR; the last ISR member is kept when a partition loses its leader, or, from 4.1 under KRaft, kept
eligible (KIP-966 ELR) in an empty ISR); they are written out here,
not computed by the code under test. Every scenario runs on a manual clock: the test advances the
simulated time to each step's `at`, applies it, and reads every live broker over JMX.
"""
from __future__ import annotations

import errno
import socket

import pytest

from kafka_jmx_sidecar.mbeans.simulator import scenario as scenarios
from tests.simulator.sim_jmx import Jmx

RM = "kafka.server:type=ReplicaManager,name="
CTRL = "kafka.controller:type=KafkaController,name="
BTM = "kafka.server:type=BrokerTopicMetrics,name="


class View:
    """Reads one simulator's brokers over JMX (reconnecting to brokers that come back)."""

    def __init__(self, sim, connect):
        self.sim, self.connect, self.conns = sim, connect, {}

    def jmx(self, broker: int) -> Jmx:
        if broker not in self.conns:
            self.conns[broker] = self.connect(self.sim.urls[broker])
        return self.conns[broker]

    def drop(self, broker: int) -> None:
        j = self.conns.pop(broker, None)
        if j:
            j.close()

    def rm(self, broker: int, **expected: int) -> None:
        names = {"urp": "UnderReplicatedPartitions", "at_min": "AtMinIsrPartitionCount",
                 "under_min": "UnderMinIsrPartitionCount", "leaders": "LeaderCount", "partitions": "PartitionCount",
                 "reassigning": "ReassigningPartitions"}
        got = {k: self.jmx(broker).value(RM + names[k]) for k in expected}
        assert got == expected, f"broker {broker} ReplicaManager"

    def part(self, broker: int, topic: str, partition: int, **expected: int) -> None:
        names = {"urp": "UnderReplicated", "at_min": "AtMinIsr", "under_min": "UnderMinIsr",
                 "isr": "InSyncReplicasCount", "replicas": "ReplicasCount"}
        got = {k: self.jmx(broker).value(f"kafka.cluster:type=Partition,name={names[k]},topic={topic},"
                                         f"partition={partition}") for k in expected}
        assert got == expected, f"broker {broker} Partition {topic}-{partition}"

    def ctrl(self, node: int, **expected: int) -> None:
        names = {"offline": "OfflinePartitionsCount", "imbalance": "PreferredReplicaImbalanceCount",
                 "fenced": "FencedBrokerCount", "active_brokers": "ActiveBrokerCount",
                 "active": "ActiveControllerCount", "partitions": "GlobalPartitionCount"}
        got = {k: self.jmx(node).value(CTRL + names[k]) for k in expected}
        assert got == expected, f"node {node} KafkaController"

    def count(self, broker: int, meter: str) -> int:
        return self.jmx(broker).count(meter)

    def down(self, broker: int) -> None:
        """Its JMX is gone: the port refuses connections, as a stopped broker's does, yet stays the
        simulator's, so that no other socket takes it before the broker is restored."""
        self.drop(broker)
        port = int(self.sim.urls[broker].rsplit(":", 1)[1].split("/")[0])
        with socket.socket() as s:
            assert s.connect_ex(("127.0.0.1", port)) == errno.ECONNREFUSED
        with socket.socket() as s, pytest.raises(OSError) as taken:
            s.bind(("127.0.0.1", port))
        assert taken.value.errno == errno.EADDRINUSE
        with pytest.raises(Exception, match="Connection refused"):
            Jmx(self.sim.urls[broker])

    def state(self, topic: str, partition: int = 0):
        return next(s for s in self.sim.partition_states() if (s.topic, s.partition) == (topic, partition))


def play(simulators, connect, name: str, checks: dict, *, kafka_version: str = "4.1"):
    sc = scenarios.load(name)
    sim = simulators.start(sc.cluster, kafka_version=kafka_version, serve="all", clock="manual")
    view = View(sim, connect)
    checks.get("start", lambda v: None)(view)
    clock = 0.0
    for i, step in enumerate(sc.steps):
        if step.at > clock:
            sim.advance(step.at - clock)
            clock = step.at
        sim.apply(step.event())
        if step.op == "fail_broker":
            view.down(step.args["broker"])
        if i in checks:
            checks[i](view)
    assert set(checks) - {"start"} <= set(range(len(sc.steps)))
    return view


T1 = "kip427-ex1"


def test_kip427_example1(simulators, connect):
    def healthy(v):
        v.rm(0, urp=0, at_min=0, under_min=0, leaders=1)
        v.part(0, T1, 0, urp=0, at_min=0, under_min=0, isr=3, replicas=3)
        v.ctrl(3, offline=0, imbalance=0, fenced=0, active_brokers=4, active=1, partitions=1)

    def broker0_fails(v):  # ISR [1,2]: leader 1, URP and AtMinIsr
        assert (v.state(T1).leader, v.state(T1).isr) == (1, (1, 2))
        v.rm(1, urp=1, at_min=1, under_min=0, leaders=1)
        v.part(1, T1, 0, urp=1, at_min=1, under_min=0, isr=2, replicas=3)
        v.part(2, T1, 0, urp=0, at_min=0, under_min=0, isr=0, replicas=0)  # not the leader
        v.rm(2, urp=0, at_min=0, under_min=0, leaders=0)
        v.ctrl(3, offline=0, imbalance=1, fenced=1, active_brokers=3)

    def broker1_fails(v):  # ISR [2]: under min ISR
        v.rm(2, urp=1, at_min=0, under_min=1, leaders=1)
        v.part(2, T1, 0, urp=1, at_min=0, under_min=1, isr=1, replicas=3)
        v.ctrl(3, offline=0, imbalance=1, fenced=2, active_brokers=2)
        # broker 2 followed from t=0 to 20 and led since: 100,000 B/s each way
        assert v.count(2, BTM + "ReplicationBytesInPerSec") == 2_000_000

    def broker0_back(v):  # ISR [2,0]: at min ISR again; broker 0's MBeans are new
        assert v.state(T1).isr == (2, 0)
        v.rm(2, urp=1, at_min=1, under_min=0, leaders=1)
        v.part(0, T1, 0, urp=0, at_min=0, under_min=0, isr=0, replicas=0)
        v.rm(0, urp=0, leaders=0, partitions=1)
        assert v.count(0, BTM + "BytesInPerSec") == 0  # it led before failing: the count restarted
        assert v.count(2, RM + "IsrExpandsPerSec") == 1
        assert v.count(2, BTM + "BytesInPerSec") == 2_000_000  # leader from t=20 to 40
        v.ctrl(3, fenced=1, active_brokers=3)

    def broker1_back(v):
        v.rm(2, urp=0, at_min=0, under_min=0, leaders=1)
        v.part(2, T1, 0, urp=0, at_min=0, under_min=0, isr=3, replicas=3)
        assert v.count(2, RM + "IsrExpandsPerSec") == 2
        assert v.count(2, RM + "IsrShrinksPerSec") == 0  # the controller shrank the ISR, not the leader
        v.ctrl(3, imbalance=1, fenced=0, active_brokers=4)

    def preferred(v):
        v.rm(0, leaders=1, urp=0)
        v.rm(2, leaders=0)
        v.part(0, T1, 0, isr=3, replicas=3, urp=0)
        v.ctrl(3, imbalance=0)

    play(simulators, connect, "kip427-example1",
         {"start": healthy, 1: broker0_fails, 2: broker1_fails, 3: broker0_back, 4: broker1_back, 5: preferred})


T2 = "kip427-ex2"


def test_kip427_example2(simulators, connect):
    def start(v):
        v.rm(0, urp=0, at_min=0, under_min=0, leaders=1)  # ISR 3 > min ISR 1

    def broker0_fails(v):
        v.rm(1, urp=1, at_min=0, under_min=0, leaders=1)

    def broker1_fails(v):
        v.rm(2, urp=1, at_min=1, under_min=0, leaders=1)
        v.part(2, T2, 0, urp=1, at_min=1, under_min=0, isr=1, replicas=3)

    def broker2_fails(v):  # no leader: every broker gauge 0, only OfflinePartitionsCount shows it
        st = v.state(T2)
        # Kafka 4.1 under KRaft (ELR, KIP-966, on by default) empties the ISR and keeps the last
        # member eligible, as a real 4.1 cluster does (tests/real/test_simulator_vs_broker.py)
        assert (st.leader, st.isr) == (-1, ())
        assert v.sim.eligible_leader_replicas()[(T2, 0)] == (2,)
        v.rm(3, urp=0, at_min=0, under_min=0, leaders=0, partitions=0)
        v.ctrl(3, offline=1, imbalance=1, fenced=3, active_brokers=1, active=1)

    def broker2_back(v):  # the last ISR member leads again
        v.rm(2, urp=1, at_min=1, under_min=0, leaders=1)
        v.ctrl(3, offline=0)

    def broker1_back(v):
        v.rm(2, urp=1, at_min=0, under_min=0, leaders=1)

    def broker0_back(v):
        v.rm(2, urp=0, at_min=0, under_min=0, leaders=1)
        v.part(2, T2, 0, isr=3)

    def preferred(v):
        v.rm(0, leaders=1)
        v.ctrl(3, imbalance=0, offline=0, fenced=0)

    play(simulators, connect, "kip427-example2",
         {"start": start, 1: broker0_fails, 2: broker1_fails, 3: broker2_fails, 4: broker2_back,
          5: broker1_back, 6: broker0_back, 7: preferred})


T3 = "kip427-ex3"


def test_kip427_example3(simulators, connect):
    play(simulators, connect, "kip427-example3", {
        "start": lambda v: v.rm(0, urp=0, at_min=0, under_min=0),
        1: lambda v: (v.rm(1, urp=1, at_min=0, under_min=0), v.part(1, T3, 0, isr=3, replicas=4)),
        2: lambda v: (v.rm(2, urp=1, at_min=1, under_min=0), v.part(2, T3, 0, isr=2, at_min=1)),
        3: lambda v: (v.rm(3, urp=1, at_min=0, under_min=1), v.part(3, T3, 0, isr=1, under_min=1)),
        4: lambda v: v.rm(3, urp=1, at_min=1, under_min=0),
        5: lambda v: v.rm(3, urp=1, at_min=0, under_min=0),
        6: lambda v: v.rm(3, urp=0, at_min=0, under_min=0),
        7: lambda v: (v.rm(0, leaders=1), v.rm(3, leaders=0), v.ctrl(4, imbalance=0, fenced=0)),
    })


SIZE = 13_649_276  # bytes per partition: 3 of them are the 40,947,828 of the reference capture
MIB = 1 << 20


@pytest.mark.parametrize("version", ["4.1", "2.4"])
def test_reassignment(simulators, connect, version):
    """3 partitions move from broker 1 to 2 at 1 MiB/s each. From 2.5 (KIP-352) the adding replica
    does not make them under-replicated and ReplicasCount stays 1; 2.4 counts them as URP and has
    no Reassignment meters (they came with 2.5), while the replication meters count either way."""
    new = version >= "2.5"

    def started(v):
        v.rm(1, reassigning=3, leaders=3, partitions=3) if new else v.rm(1, leaders=3, partitions=3)
        v.rm(1, urp=0 if new else 3)
        v.part(1, "moving", 0, urp=0 if new else 1, isr=1, replicas=1 if new else 2)
        v.rm(2, leaders=0, partitions=3)  # the adding replicas live on broker 2 already
        v.part(2, "moving", 1, urp=0, isr=0, replicas=0)

    view = play(simulators, connect, "reassignment", {2: started}, kafka_version=version)
    out, inn = "ReassignmentBytesOutPerSec", "ReassignmentBytesInPerSec"
    # The reference sampled every 4 s; at 3 MiB/s in total: 12, 24, 36 MiB, then everything.
    for elapsed, expected in ((4, 12 * MIB), (8, 24 * MIB), (12, 36 * MIB), (16, 3 * SIZE)):
        view.sim.advance(4)
        if new:
            assert view.count(1, BTM + out) == expected, f"+{elapsed}s"
            assert view.count(2, BTM + inn) == expected, f"+{elapsed}s"
        else:
            assert not view.jmx(1).exists(BTM + out)
        assert view.count(1, BTM + "ReplicationBytesOutPerSec") == expected
        assert view.count(2, BTM + "ReplicationBytesInPerSec") == expected
        if elapsed == 4:
            assert view.jmx(2).get("kafka.log:type=Log,name=Size,topic=moving,partition=0") == 4 * MIB
            if new:
                view.rm(1, reassigning=3)
    # Done: broker 2 leads all three, broker 1 no longer hosts them.
    if new:
        view.rm(1, reassigning=0)
    view.rm(1, urp=0, leaders=0, partitions=0)
    view.rm(2, urp=0, leaders=3, partitions=3)
    assert view.jmx(1).names("kafka.cluster:type=Partition,*") == []
    assert view.count(1, RM + "IsrExpandsPerSec") == 3  # the leader added each caught-up replica
    assert [s.replicas for s in view.sim.partition_states()] == [(2,), (2,), (2,)]


def test_rolling_restart(simulators, connect):
    T = "orders"  # 6 partitions, replicas [1,2,3] [2,3,1] [3,1,2] [1,2,3] [2,3,1] [3,1,2], min ISR 2

    def leaders(v, expected):
        assert [s.leader for s in v.sim.partition_states()] == expected

    def one_down(v):  # broker 1 stopped: its leaderships moved to the next replica in the ISR
        leaders(v, [2, 2, 3, 2, 2, 3])
        v.rm(2, urp=4, at_min=4, under_min=0, leaders=4, partitions=6)
        v.rm(3, urp=2, at_min=2, under_min=0, leaders=2, partitions=6)
        # controller 1 was active; 2 took over; 3 is a standby reporting the same values
        v.ctrl(2, active=1, offline=0, imbalance=2, fenced=1, active_brokers=2, partitions=6)
        v.ctrl(3, active=0, offline=0, imbalance=2, fenced=1)

    def one_back(v):
        v.rm(1, urp=0, at_min=0, leaders=0, partitions=6)
        v.rm(2, urp=0, at_min=0, leaders=4)
        assert v.count(1, BTM + "ReplicationBytesInPerSec") == 0  # new MBeans, nothing replicated yet
        assert v.count(2, RM + "IsrExpandsPerSec") == 4
        assert v.count(3, RM + "IsrExpandsPerSec") == 2
        v.ctrl(2, active=1, imbalance=2, fenced=0)
        v.ctrl(1, active=0, imbalance=2)  # a controller that comes back does not take over

    def one_elected(v):
        leaders(v, [1, 2, 3, 1, 2, 3])
        # broker 1 followed every partition for 5 s of 1,000,000 B/s
        assert v.count(1, BTM + "ReplicationBytesInPerSec") == 5_000_000
        v.ctrl(1, imbalance=0)

    def two_down(v):
        leaders(v, [1, 3, 3, 1, 3, 3])
        v.rm(1, urp=2, at_min=2, leaders=2)
        v.rm(3, urp=4, at_min=4, leaders=4)
        v.ctrl(1, active=1, imbalance=2, fenced=1)  # 2 was active: 1 takes over
        v.ctrl(3, active=0)

    def two_back(v):
        v.rm(1, urp=0, at_min=0)
        v.rm(3, urp=0, at_min=0)
        assert v.count(1, RM + "IsrExpandsPerSec") == 2  # counted since broker 1's own restart
        assert v.count(3, RM + "IsrExpandsPerSec") == 6

    def three_down(v):
        leaders(v, [1, 2, 1, 1, 2, 1])
        v.rm(1, urp=4, at_min=4, leaders=4)
        v.rm(2, urp=2, at_min=2, leaders=2)
        v.ctrl(1, active=1, imbalance=2, fenced=1)

    def all_done(v):
        leaders(v, [1, 2, 3, 1, 2, 3])
        for b in (1, 2, 3):
            v.rm(b, urp=0, at_min=0, under_min=0, leaders=2, partitions=6)
        v.ctrl(1, active=1, imbalance=0, fenced=0, active_brokers=3)

    play(simulators, connect, "rolling-restart", {
        1: one_down, 2: one_back, 3: one_elected, 4: two_down, 5: two_back, 6: lambda v: leaders(v, [1, 2, 3] * 2),
        7: three_down, 9: all_done})


def test_every_builtin_scenario_has_a_test():
    assert scenarios.builtin_names() == ["kip427-example1", "kip427-example2", "kip427-example3", "reassignment",
                                         "rolling-restart"]
