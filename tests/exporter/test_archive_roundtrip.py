"""Writer and reader together on random poll sequences (hypothesis): whatever the polls hold and
however they change (partitions come and go, tables change members, leaves appear and vanish, the
Admin API answers or not, hours turn), the state read back at each poll's time is that poll's
facts, as this test reads them off the facts it made."""
from __future__ import annotations

from array import array

from hypothesis import HealthCheck, given, settings, strategies as st

from kafka_jmx_sidecar.exporter.source.admin.view import AdminView, Broker, Cluster, Partition, TopicConfig
from kafka_jmx_sidecar.exporter.archive.encoder import PollFacts
from kafka_jmx_sidecar.exporter.archive.reader import Rejects, read_archive, states_at
from kafka_jmx_sidecar.exporter.archive.settings import ArchiveSettings
from kafka_jmx_sidecar.exporter.archive.writer import ArchiveWriter
from kafka_jmx_sidecar.exporter.base.model import Attribute, BeanTable, MBean, ObjectName
from kafka_jmx_sidecar.mbeans.broker_recompute import HostedPartitions

T0 = 1_795_003_000.0  # 2026-11-18T11:56:40Z: a few minutes before an hour turns
TOPICS = ("a", "b", "c")
KEYS = [(t, p) for t in TOPICS for p in range(3)]
FAMILY = "kafka.cluster:type=Partition,name=UnderReplicated"
LEAVES = ("kafka.server:type=ReplicaManager,name=LeaderCount", "kafka.server:type=ReplicaManager,name=PartitionCount")

ids = st.lists(st.integers(1, 4), max_size=4, unique=True).map(tuple)
number = st.one_of(st.integers(-5, 5), st.floats(allow_nan=False, allow_infinity=False, width=32))


@st.composite
def poll(draw):
    hosted = sorted(draw(st.sets(st.sampled_from(KEYS))))
    counts = {k: (draw(st.integers(0, 4)), draw(st.integers(0, 4))) for k in hosted}
    members = sorted(draw(st.sets(st.sampled_from(KEYS))))
    table = {k: (draw(st.integers(0, 1)), draw(st.booleans())) for k in members}  # (value, present)
    leaves = {name: draw(number) for name in LEAVES if draw(st.booleans())}
    admin = None
    if draw(st.booleans()):
        admin = {k: (draw(st.one_of(st.none(), st.integers(1, 4))), draw(ids), draw(ids), draw(ids))
                 for k in sorted(draw(st.sets(st.sampled_from(KEYS))))}
    step = draw(st.sampled_from([15.0, 15.0, 15.0, 400.0]))
    return counts, table, leaves, admin, step


def facts_of(t, counts, table, leaves, admin) -> PollFacts:
    topics = list(TOPICS)
    keys = sorted(counts)
    hosted = HostedPartitions(topics, array("i", [topics.index(k[0]) for k in keys]), array("i", [k[1] for k in keys]),
                              array("q", [counts[k][0] for k in keys]), array("q", [counts[k][1] for k in keys]))
    members = sorted(table)
    bean_table = BeanTable("kafka.cluster", (("type", "Partition"), ("name", "UnderReplicated")), "G", "Value", "", "",
                           True, topics, array("i", [topics.index(k[0]) for k in members]),
                           array("i", [k[1] for k in members]), array("I", range(len(members))),
                           array("q", [table[k][0] for k in members]),
                           bytearray(1 if table[k][1] else 0 for k in members))
    mbeans = [MBean(ObjectName.parse(name), "G", (Attribute("Value", v), Attribute("Text", "x")))
              for name, v in leaves.items()]
    view = None
    if admin is not None:
        view = AdminView(Cluster("c", 1, (Broker(1, "h", 1), Broker(2, "h", 2)), "DescribeCluster"),
                         tuple(Partition(k[0], k[1], leader, replicas, isr, adding_replicas=adding)
                               for k, (leader, replicas, isr, adding) in admin.items()),
                         topics={"a": TopicConfig(2)})
    return PollFacts(t, "1", "3.6.0", hosted, view, {}, mbeans, [bean_table])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(polls=st.lists(poll(), min_size=1, max_size=8))
def test_what_is_read_back_is_what_each_poll_knew(tmp_path_factory, polls):
    directory = tmp_path_factory.mktemp("archive")
    writer = ArchiveWriter(ArchiveSettings(str(directory)), clock=lambda: T0)
    t = T0
    expected = []
    last_admin = None
    for counts, table, leaves, admin, step in polls:
        assert writer.write(facts_of(t, counts, table, leaves, admin))
        last_admin = admin if admin is not None else last_admin
        want_leaves = {(name, "Value"): v for name, v in leaves.items()}
        want_leaves.update({(f"{FAMILY},topic={k[0]},partition={k[1]}", "Value"): v
                            for k, (v, present) in table.items() if present})
        topics = {k[0] for k in counts} | {k[0] for k in (admin or {})}
        expected.append((t, counts, want_leaves, last_admin, topics, admin is not None))
        t += step
    writer.close()
    rejects = Rejects()
    got = dict(states_at(read_archive([directory], rejects), [e[0] for e in expected]))
    assert rejects.total == 0
    for t, counts, want_leaves, admin, topics, asked in expected:
        state = got[t]
        assert state.t == t and state.admin == asked
        assert state.counts == counts
        assert state.leaves == want_leaves
        want_states = {k: (leader, replicas, isr, adding) for k, (leader, replicas, isr, adding) in (admin or {}).items()}
        assert {k: (s.leader, s.replicas, s.isr, s.adding) for k, s in state.states.items()} == want_states
        # min ISR: "a" from the Admin API when it answered this poll, else Kafka's default
        assert state.min_isr == {topic: ((2, "admin") if topic == "a" and asked else (1, "kafka_default"))
                                 for topic in topics}
