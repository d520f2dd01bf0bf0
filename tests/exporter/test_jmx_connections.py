"""exporter/source/jmx's connections against a real JVM over real JMX/RMI (harness/JmxTarget.java,
slowed per call where overlap is the point): one connection below parallel_from, reads in the
background while a query runs, parallel connections, listings two families at a time and member
queries one per connection at a time, within a bound, reconnects and their backoff."""
from __future__ import annotations

import time

import pytest

from kafka_jmx_sidecar.exporter.source.jmx import JmxClient, JmxConnectionError, JmxSettings, JmxUnreachableError, client
from harness.jmx_target import Target
from harness.processes import free_port
from tests.exporter.test_jmx_read import KAFKA_AND_TEST, partition_value


UNDER_REPLICATED = "kafka.cluster:type=Partition,name=UnderReplicated,*"


def reading(t: Target) -> None:
    """Until the target serves the first getAttributes of reads begun in the background (they
    then take a second or more: the query asked next meets them, however slow this machine)."""
    deadline = time.monotonic() + 30
    while t.counts()["getAttributes"] == 0:
        assert time.monotonic() < deadline, "the background reads never reached the target"
        time.sleep(0.01)


def test_a_small_broker_is_read_on_one_connection_one_call_at_a_time():
    """Below parallel_from MBeans the client keeps one connection and reads after its queries,
    as jmx_exporter does (the broker's thread gauges then read alike); from it, all of them, the
    reads begun before the queries."""
    with Target(topics=1, partitions=20, extra=("-Dtarget.delay.ms=100",)) as t:
        for parallel_from, connections in ((10_000, 1), (10, 4)):  # the target has about a hundred MBeans
            with JmxClient(JmxSettings(host_port=t.host_port, include_object_names=(UNDER_REPLICATED,),
                                       connections=4, parallel_from=parallel_from)) as c:
                c.list_names()
                c.read()
                assert c.take_stats().connects == connections and c.reads_in_background == (connections > 1)
                t.reset()
                started = c.start_reads([], "Value", c.name_texts)
                if connections > 1:
                    reading(t)
                c.query_names(UNDER_REPLICATED, "Value", "==", 1)
                overlapped = t.counts()["overlapped"]
                c.finish_reads(started, lambda k, values: None)
                assert (overlapped > 0) == (connections > 1)


def test_queries_overlap_the_reads_begun_before_them():
    """start_reads() reads over the connections while a query runs (the target sees the query's
    getAttribute calls while getAttributes calls are in flight), and finish_reads() gives what
    read() gives."""
    # each getAttributes takes 100 ms in the target: the query's calls come while some are in flight
    # (their gaps, a client's turnaround, are short beside that even on a loaded machine)
    with Target(topics=1, partitions=40, extra=("-Dtarget.delay.ms=100",)) as t:
        with JmxClient(JmxSettings(host_port=t.host_port, include_object_names=("kafka.cluster:type=Partition,*",),
                                   connections=2, parallel_from=0)) as c:
            c.list_names()
            plain = {str(m.name): m.attributes for m in c.read()}
            t.reset()
            started = c.start_reads([], "Value", c.name_texts)  # 120 x 100 ms over 2 connections
            reading(t)
            hits = c.query_names("kafka.cluster:type=Partition,name=UnderReplicated,*", "Value", "==", 1)
            overlapped = t.counts()["overlapped"]
            mbeans, seconds = c.finish_reads(started, lambda k, values: pytest.fail("no family was read"))
        assert {str(m.name): m.attributes for m in mbeans} == plain
        assert {str(n) for n in hits} == {f"kafka.cluster:type=Partition,name=UnderReplicated,topic=t0,partition={p}"
                                          for p in range(40) if partition_value("UnderReplicated", p) == 1}
        assert overlapped > 0 and seconds[-1] >= 120 * 0.100 / 2


def test_each_family_is_handed_over_as_soon_as_it_is_read_while_the_next_ones_are_read():
    """finish_reads() hands family k over (take) once it is read, not once all are: the caller
    works on it (the rules plan its members) while the target still serves the later ones."""
    names = ("UnderReplicated", "InSyncReplicasCount", "LastStableOffsetLag")
    # every getAttributes takes 200 ms in the target: the two later families take 2 s more
    with Target(topics=1, partitions=10, extra=("-Dtarget.delay.ms=200",)) as t:
        with JmxClient(JmxSettings(host_port=t.host_port, include_object_names=("kafka.cluster:*",),
                                   connections=2, parallel_from=0)) as c:
            _, _, members = c.list_split([f"kafka.cluster:type=Partition,name={n}" for n in names], ())
            t.reset()
            calls_at_take: list[int] = []
            taken: list[list] = []

            def take(k: int, values: list) -> None:
                calls_at_take.append(t.counts()["getAttributes"])
                taken.append(values)
            c.finish_reads(c.start_reads(members, "Value", None), take)
            calls = t.counts()["getAttributes"]
    assert taken == [[partition_value(n, p) for p in range(10)] for n in names]
    assert calls_at_take[0] < calls and calls_at_take == sorted(calls_at_take), (calls_at_take, calls)


@pytest.mark.parametrize("engine", ["java", "jpype"])
def test_parallel_connections_overlap_their_waits(engine):
    # every getAttributes sleeps 20 ms in the target: one connection needs >= 40 * 20 ms
    with Target(topics=1, partitions=10, extra=("-Dtarget.delay.ms=20",)) as t:
        pattern = ("kafka.cluster:type=Partition,*", "test:type=ByteGauge,*")
        timings = {}
        for n in (1, 4):
            with JmxClient(JmxSettings(host_port=t.host_port, include_object_names=pattern, connections=n,
                                       engine=engine, parallel_from=0)) as c:
                c.read()
                started = time.perf_counter()
                got = c.read()
                timings[n] = time.perf_counter() - started
                assert len(got) == 40 and c.take_stats().connects == n
    assert timings[1] >= 40 * 0.020
    # Serial reads cannot beat 40 x 20 ms; four overlapping connections ideally take a quarter.
    # Asserting clear overlap, with room for a loaded 2-core machine, proves the GIL is released.
    assert timings[4] < timings[1] * 0.7, timings


def test_a_names_refresh_asks_families_bigger_together_than_the_bound_one_at_a_time(monkeypatch):
    """Over several connections list_split asks two families' names at once; at a refresh, not two
    whose last listing held more than ANSWER_MOST names together (the JVM holds an answer whole,
    so two big ones at once grew a 40,000-partition sidecar's heap by ~40 MB)."""
    families = [f"kafka.cluster:type=Partition,name={n}"
                for n in ("UnderReplicated", "InSyncReplicasCount", "LastStableOffsetLag")]
    # every queryNames takes 500 ms in the target: a second one asked meanwhile is served meanwhile
    slow = ("-Dtarget.query.delay.ms=500", "-Djavax.management.builder.initial=JmxTarget$Builder")
    with Target(topics=1, partitions=20, extra=slow) as t:
        with JmxClient(JmxSettings(host_port=t.host_port, include_object_names=("kafka.cluster:*",),
                                   connections=4, parallel_from=0)) as c:
            at_once = {}
            for bound in (None, 40, 39):  # None: the first listing, nothing known; 20 members a family
                if bound is not None:
                    monkeypatch.setattr(client, "ANSWER_MOST", bound)
                t.reset()
                _, _, members = c.list_split(families, members if bound is not None else ())
                at_once[bound] = t.counts()["queriesAtOnce"]
                assert [len(m) for m in members] == [20, 20, 20]
    assert at_once == {None: 2, 40: 2, 39: 1}


@pytest.mark.parametrize("connections,at_once", [(2, 2), (1, 1)])
def test_a_first_listing_asks_the_first_familys_names_meanwhile_the_others_are_listed(connections, at_once):
    """With one family, only the others' query can overlap its names' (over two connections)."""
    slow = ("-Dtarget.query.delay.ms=500", "-Djavax.management.builder.initial=JmxTarget$Builder")
    with Target(topics=1, partitions=20, extra=slow) as t:
        with JmxClient(JmxSettings(host_port=t.host_port, include_object_names=("kafka.cluster:*", "test:*"),
                                   connections=connections, parallel_from=0)) as c:
            names, _, members = c.list_split(["kafka.cluster:type=Partition,name=UnderReplicated"], ())
            assert t.counts()["queriesAtOnce"] == at_once
    assert len(members[0]) == 20 and any("ByteGauge" in str(n) for n in names)


@pytest.mark.parametrize("connections,expected,bound,at_once", [
    (4, 0, client.ANSWER_MOST, 3), (2, 0, client.ANSWER_MOST, 2), (1, 0, client.ANSWER_MOST, 1),
    (4, 20, 40, 2), (4, 20, 39, 1)])
def test_member_queries_are_asked_at_once_one_per_connection_within_the_bound(
        monkeypatch, connections, expected, bound, at_once):
    """start_queries asks its queries at once, one per connection at a time, and not two whose
    expected answers add up past ANSWER_MOST names (the JVM holds each answer whole); each
    answer (query_answer) is what the query asked alone answers."""
    from kafka_jmx_sidecar.exporter.source.jmx.queries import MemberQuery

    families = [f"kafka.cluster:type=Partition,name={n}"
                for n in ("UnderReplicated", "InSyncReplicasCount", "LastStableOffsetLag")]
    slow = ("-Dtarget.query.delay.ms=500", "-Djavax.management.builder.initial=JmxTarget$Builder")
    with Target(topics=1, partitions=20, extra=slow) as t:
        with JmxClient(JmxSettings(host_port=t.host_port, include_object_names=("kafka.cluster:*",),
                                   connections=connections, parallel_from=0)) as c:
            _, _, members = c.list_split(families, ())
            alone = [c.query_members(f"{m.family},*", [m], "Value", "!=", 1) for m in members]
            monkeypatch.setattr(client, "ANSWER_MOST", bound)
            t.reset()
            started = c.start_queries(
                [MemberQuery(f"{m.family},*", (m,), "Value", ((None, (("!=", 1),)),), expected) for m in members])
            answers = [c.query_answer(started, k) for k in range(len(members))]
            assert t.counts()["queriesAtOnce"] == at_once
    assert [list(map(list, hits)) for hits, _ in answers] == [list(map(list, hits)) for hits in alone]
    assert all(len(hits[0]) for hits in alone) and all(seconds >= 0.5 for _, seconds in answers)


def test_a_query_started_before_its_families_are_listed_answers_as_one_asked_with_them():
    """A member query may start with no families (MemberQuery.families None) before the listing
    it is about; taken with the families listed meanwhile, its answer is what the same query
    asked with them answers."""
    from kafka_jmx_sidecar.exporter.source.jmx.queries import MemberQuery

    families = [f"kafka.cluster:type=Partition,name={n}"
                for n in ("UnderReplicated", "InSyncReplicasCount", "LastStableOffsetLag")]
    with Target(topics=2, partitions=20) as t:
        with JmxClient(JmxSettings(host_port=t.host_port, include_object_names=("kafka.cluster:*",),
                                   connections=2, parallel_from=0)) as c:
            started = c.start_queries([MemberQuery("kafka.cluster:type=Partition,*", None, "Value",
                                                   ((None, (("!=", 1),)),))])
            _, _, members = c.list_split(families, ())
            early, _ = c.query_answer(started, 0, members)
            asked = c.query_members("kafka.cluster:type=Partition,*", members, "Value", "!=", 1)
    assert [list(h) for h in early] == [list(h) for h in asked] and all(len(h) for h in asked)


def test_reconnects_after_the_broker_restarts_and_backs_off_while_it_is_down():
    port = free_port()
    now = [1000.0]
    t = Target(topics=1, partitions=1, port=port).start()
    try:
        c = JmxClient(JmxSettings(host_port=t.host_port, include_object_names=KAFKA_AND_TEST,
                                  reconnect_min_seconds=1, reconnect_max_seconds=4), clock=lambda: now[0])
        n = len(c.read())
        assert n == 9 and c.take_stats().connects == 1
        # restarted between two polls: the next poll succeeds (the RMI connector looks the new
        # server up again by itself, or we reconnect at once)
        t.stop()
        t = Target(topics=1, partitions=1, port=port).start()
        assert len(c.read()) == n
        assert c.take_stats().connects <= 1
        # down: the poll fails with the reason; later polls fail fast until the backoff has passed
        t.stop()
        with pytest.raises(JmxUnreachableError) as e:
            c.read()
        assert f"127.0.0.1:{port}" in e.value.message and "connection refused" in e.value.message
        started = time.perf_counter()
        with pytest.raises(JmxUnreachableError, match=r"next attempt in 1 s"):
            c.read()
        assert time.perf_counter() - started < 0.1  # no network while backing off
        for delay in (2, 4, 4):  # doubling, capped at reconnect_max_seconds
            now[0] += 10
            with pytest.raises(JmxConnectionError):
                c.read()
            with pytest.raises(JmxConnectionError, match=rf"next attempt in {delay} s"):
                c.read()
        t = Target(topics=1, partitions=1, port=port).start()
        now[0] += 10
        assert len(c.read()) == n
        stats = c.take_stats()
        assert stats.connects == 1 and stats.connect_failures == 4
        c.close()
    finally:
        t.stop()
