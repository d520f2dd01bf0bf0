"""exporter/source/broker.py against a real JVM (harness/JmxTarget.java): the partition gauge
families learned by query serve the same values as reading every MBean would, poll after poll,
while values move, and with fewer queries once the previous poll's values are known."""
from __future__ import annotations

from dataclasses import replace

import pytest

from kafka_jmx_sidecar.exporter.source.broker import JmxSource
from kafka_jmx_sidecar.exporter.source import family_reads
from kafka_jmx_sidecar.exporter.source.query_costs import QueryCosts

from kafka_jmx_sidecar.exporter.config.load import broker_settings, jmx_settings
from kafka_jmx_sidecar.exporter.rule_engine.config import parse_config
from kafka_jmx_sidecar.exporter.config.sidecar import SidecarSettings
from harness.jmx_target import Target

TOPICS, PARTITIONS = 3, 20
UR = "kafka.cluster:type=Partition,name=UnderReplicated,topic=t{t},partition={p}"
ISR = "kafka.cluster:type=Partition,name=InSyncReplicasCount,topic=t{t},partition={p}"


def initial(family: str, i: int) -> int:
    """JmxTarget.java's values for partition i (= topic * PARTITIONS + partition)."""
    return (1 if i % 7 == 3 else 0) if family == "UR" else (9 if i % 50 == 49 else i % 4)


@pytest.fixture
def target():
    with Target(topics=TOPICS, partitions=PARTITIONS) as t:
        yield t


def make_source(target: Target, *more: str, parallel: bool = False) -> JmxSource:
    include = ", ".join(f'"{p}"' for p in ("kafka.cluster:type=Partition,name=UnderReplicated,*",
                                          "kafka.cluster:type=Partition,name=InSyncReplicasCount,*",
                                          "kafka.server:type=ReplicaManager,*") + more)
    config = parse_config(f"""
hostPort: {target.host_port}
includeObjectNames: [{include}]
""")
    settings = broker_settings(config, SidecarSettings(names_refresh_seconds=3600))
    if parallel:  # the target is small: read it as a big broker is read, over 4 connections
        settings = replace(settings, jmx=replace(settings.jmx, parallel_from=0))
    return JmxSource(config, settings)


def test_the_stores_and_their_passwords_reach_the_jmx_settings():
    config = parse_config("hostPort: h:1\nssl:\n  trustStore: {filename: /t.jks, password: '${TRUST_PASS}'}\n"
                          "  keyStore: /k.p12\n  keyStorePassword: k\n", env={"TRUST_PASS": "t"})
    jmx = jmx_settings(config, SidecarSettings(jvm_options=()))
    assert (jmx.ssl, jmx.trust_store, jmx.trust_store_password, jmx.key_store, jmx.key_store_password) == \
        (True, "/t.jks", "t", "/k.p12", "k")


class Truth:
    """What reading every MBean would give, kept up to date as the test changes values."""

    def __init__(self, target: Target, topics: int = TOPICS, partitions: int = PARTITIONS):
        self.target = target
        self.values = {}
        for t in range(topics):
            for p in range(partitions):
                i = t * partitions + p
                self.values[UR.format(t=t, p=p)] = initial("UR", i)
                self.values[ISR.format(t=t, p=p)] = initial("ISR", i)
        self.values["kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions"] = 0

    def set(self, name: str, value: int) -> None:
        self.target.command(f"set {name} int {value}")
        self.values[name] = value


def served(source: JmxSource) -> tuple[dict[str, object], int]:
    result = source.read()
    out = {}
    members = [mb for t in result.tables for mb in map(t.mbean, range(len(t))) if mb is not None]
    for mb in list(result.mbeans) + members:
        (attr,) = mb.attributes
        assert attr.name == "Value" and mb.class_name == "com.yammer.metrics.reporting.JmxReporter$Gauge"
        out[str(mb.name)] = attr.value
    return out, result.round_trips


def record_queries(source: JmxSource, monkeypatch) -> list[dict[str, tuple]]:
    """Every member query the source asks, in the order asked: family name -> the tests it asks
    of that family's members (((op, value), ...)); the queries started at once come in one list
    entry each, after a marker "at once" with their count."""
    asked: list = []
    client = source.client
    one, start = client.query_members, client.start_queries

    def name(text: str) -> str:
        return text.split("name=")[1].split(",")[0]

    def ask_one(pattern, families, attribute, op, value, *, also=()):
        asked.append({name(m.family): ((op, value), *also) for m in families})
        return one(pattern, families, attribute, op, value, also=also)

    def ask_together(asks, share=None, at_once=None):
        asked.append(("at once", len(asks)))
        for q in asks:
            asked.append({name(p): tuple(tests) for p, tests in q.terms} if q.terms[0][0] is not None
                         else {name(m.family): tuple(q.terms[0][1]) for m in q.families})
        return start(asks, share, at_once)
    monkeypatch.setattr(client, "query_members", ask_one)
    monkeypatch.setattr(client, "start_queries", ask_together)
    return asked


def queries(asked: list) -> list[dict[str, tuple]]:
    return [q for q in asked if isinstance(q, dict)]


@pytest.mark.parametrize("parallel", [False, True], ids=["one connection", "parallel"])
def test_queried_families_serve_what_a_full_read_would_while_values_move(target, parallel):
    truth = Truth(target)
    for p in (0, 4, 8, 12, 16):  # 3 becomes the most common count (20 of 60)
        truth.set(ISR.format(t=0, p=p), 3)
    source = make_source(target, parallel=parallel)
    try:
        first, _ = served(source)
        assert first == truth.values
        second, rt = served(source)
        assert second == truth.values
        # after the first poll, with few members off the common value (reads are cheaper than a
        # second query): one query for both families, each `!= its common value`, then one read
        # per member it returned
        ur_ones = sum(1 for k, v in truth.values.items() if "UnderReplicated," in k and v)
        common, _ = source.family_reads.common[("kafka.cluster", "Partition", "InSyncReplicasCount")]
        isr_others = sum(1 for k, v in truth.values.items() if "InSync" in k and v != common)
        assert ur_ones == 9 and isr_others == 40 and common == 3
        assert rt == 1 + ur_ones + isr_others + 1  # + ReplicaManager's one read

        # moves: common -> other, other -> common, a value never seen, a flag raised and lowered
        truth.set(ISR.format(t=0, p=0), 3)
        truth.set(ISR.format(t=0, p=1), 0)
        truth.set(ISR.format(t=0, p=2), 7)
        truth.set(UR.format(t=1, p=5), 1)
        truth.set(UR.format(t=0, p=3), 0)
        assert served(source)[0] == truth.values
        # the next poll asks about the new most common values
        for p in range(PARTITIONS):
            truth.set(ISR.format(t=2, p=p), 2)
        assert served(source)[0] == truth.values
        assert served(source)[0] == truth.values
    finally:
        source.close()


def test_families_whose_last_answers_were_big_are_asked_in_parts_with_the_same_values(target, monkeypatch):
    """A shared query's families are split when their last answers add up past ANSWER_MOST
    names (here 20): UnderReplicated's ones (9) and the ISR counts off 3 (40) in two queries,
    each for its own family; what they serve is what one query, and reading every MBean, serve."""
    from kafka_jmx_sidecar.exporter.source import family_reads

    monkeypatch.setattr(family_reads, "ANSWER_MOST", 20)
    truth = Truth(target)
    for p in (0, 4, 8, 12, 16):  # 3 becomes the most common count (20 of 60)
        truth.set(ISR.format(t=0, p=p), 3)
    source = make_source(target)
    asked = record_queries(source, monkeypatch)
    try:
        for move in range(4):  # values move between polls, answers with them
            if move:
                truth.set(UR.format(t=move - 1, p=10 + move), 1)
                truth.set(ISR.format(t=2, p=move), 7)
            asked.clear()
            assert served(source)[0] == truth.values
            if move:
                assert queries(asked) == [{"InSyncReplicasCount": (("!=", 3),)}, {"UnderReplicated": (("!=", 0),)}], move
    finally:
        source.close()


def test_with_many_members_off_the_common_value_queries_replace_the_reads(target, monkeypatch):
    truth = Truth(target)
    source = make_source(target)
    isr_key = ("kafka.cluster", "Partition", "InSyncReplicasCount")
    try:
        for p in (2, 6, 10, 14, 18):  # 0 becomes the most common count (20), then 3 (15)
            truth.set(ISR.format(t=0, p=p), 0)
        served(source)
        served(source)
        isr = [v for k, v in truth.values.items() if "InSync" in k]
        assert source.family_reads.common[isr_key] == (0, 3)
        neither = sum(1 for v in isr if v not in (0, 3))
        ur_ones = sum(1 for k, v in truth.values.items() if "UnderReplicated," in k and v)
        assert (len(isr), neither, ur_ones) == (60, 25, 9)

        # reads cost more than a query beyond 30 names. Both families have 0 as their common
        # value: one query of kafka.cluster:type=Partition,* asks `!= 0` for both. UnderReplicated's
        # 9 ones are then read; InSyncReplicasCount asks `!= 0 and != 3`, keeps the members that
        # held 3 and reads the other 25
        monkeypatch.setattr(source.family_reads.costs, "reads_per_query", lambda: 30)
        got, rt = served(source)
        assert got == truth.values
        assert rt == 1 + ur_ones + (1 + neither) + 1  # + ReplicaManager's one read

        # a query always beats reads: UnderReplicated `!= 0 and != 1` and InSyncReplicasCount
        # `!= 0 and != 3` in one query, nothing to read of the first; of the second the 25 members
        # not holding 3 are too many to read, so `== 3` tells, and those 25 are read
        monkeypatch.setattr(source.family_reads.costs, "reads_per_query", lambda: 0)
        got, rt = served(source)
        assert got == truth.values
        assert rt == 1 + 1 + (1 + neither) + 1

        # a member moving from the second value to a third one, and one moving to the second
        # value, between polls: read, not guessed
        monkeypatch.setattr(source.family_reads.costs, "reads_per_query", lambda: 30)
        name = next(k for k, v in truth.values.items() if "InSync" in k and v == 3)
        truth.set(name, 5)
        name = next(k for k, v in truth.values.items() if "InSync" in k and v not in (0, 3, 5))
        truth.set(name, 3)
        assert served(source)[0] == truth.values
        assert served(source)[0] == truth.values
    finally:
        source.close()


def test_same_values_give_the_same_mbean_objects(target):
    source = make_source(target)
    try:
        a = {str(m.name): m for m in source.read().mbeans}
        b = {str(m.name): m for m in source.read().mbeans}
        c = {str(m.name): m for m in source.read().mbeans}
        assert b.keys() == c.keys() == a.keys()
        assert all(b[k] is c[k] for k in b if "type=Partition," in k)
    finally:
        source.close()


def test_the_first_poll_learns_many_values_with_one_query_per_small_value(target, monkeypatch):
    truth = Truth(target)
    source = make_source(target)
    try:
        monkeypatch.setattr(source.family_reads.costs, "reads_per_query", lambda: 0)
        got, _ = served(source)
        assert got == truth.values
        # the second poll asks about the values it learned: for UnderReplicated `!= 0` (with the
        # other family, each for its own value), then `!= 0 and != 1`; never `== 1` again
        asked = record_queries(source, monkeypatch)
        got, _ = served(source)
        assert got == truth.values
        ur = [q["UnderReplicated"] for q in queries(asked) if "UnderReplicated" in q]
        assert ur == [(("!=", 0),), (("!=", 0), ("!=", 1))]
        assert asked[0] == ("at once", 2)  # (1) and (2): the last poll said (1) returns many
    finally:
        source.close()


def replication_factor_seven(target: Target) -> Truth:
    """The ISR counts of the partitions led here (those not 0) 7, but two of them 2."""
    truth = Truth(target)
    isr = [k for k, v in truth.values.items() if "InSync" in k and v]
    for name in isr:
        truth.set(name, 7)
    truth.set(isr[0], 2)
    truth.set(isr[-1], 2)
    return truth


def test_the_first_poll_asks_first_for_the_value_a_few_members_read_hold(target, monkeypatch):
    """Most partitions led here show the replication factor, here 7 (above the usual maximum of
    5): a few members read say so, one `== 7` query finds who holds it, and the two members left
    are read instead of asking `== 1` ... `== 5`."""
    truth = replication_factor_seven(target)
    source = make_source(target)
    try:
        monkeypatch.setattr(source.family_reads.costs, "reads_per_query", lambda: 5)
        asked = record_queries(source, monkeypatch)
        got, _ = served(source)
        assert got == truth.values
        equal = [(n, t) for q in queries(asked) for n, t in q.items() if t[0][0] == "=="]
        assert equal == [("UnderReplicated", (("==", 1),)), ("InSyncReplicasCount", (("==", 7),))]
    finally:
        source.close()


def test_the_first_poll_asks_for_the_value_members_read_before_its_first_query_hold_with_that_query(
        target, monkeypatch):
    """As above, with a family big enough for a few members read before the first query (six
    here) to say most of those off 0 hold 7: `== 7` is asked while `!= 0` is, not after it, and
    not again; UnderReplicated, a 0/1 flag, is not read before it, and is asked `== 1` after."""
    monkeypatch.setattr(family_reads, "SAMPLE_NUMBERS", 6)
    truth = replication_factor_seven(target)
    source = make_source(target)
    try:
        monkeypatch.setattr(source.family_reads.costs, "reads_per_query", lambda: 5)
        asked = record_queries(source, monkeypatch)
        read = source.family_reads.read_members
        monkeypatch.setattr(source.family_reads, "read_members", lambda f, positions: (
            asked.append(("read", f.key[2], len(positions))), read(f, positions))[1])
        got, _ = served(source)
        assert got == truth.values
        assert [a for a in asked if isinstance(a, tuple) and a[0] == "read"][:1] == [("read", "InSyncReplicasCount", 6)]
        # `== 7` is started after the members are read, while `!= 0` is asked
        assert asked[:5] == [("at once", 1), {"UnderReplicated": (("!=", 0),), "InSyncReplicasCount": (("!=", 0),)},
                             ("read", "InSyncReplicasCount", 6), ("at once", 1), {"InSyncReplicasCount": (("==", 7),)}]
        equal = [(n, t) for q in queries(asked) for n, t in q.items() if t[0][0] == "=="]
        assert equal == [("InSyncReplicasCount", (("==", 7),)), ("UnderReplicated", (("==", 1),))]
    finally:
        source.close()


def record_calls(source: JmxSource, monkeypatch) -> list[str]:
    """The names of the client's listing and query calls, in the order made."""
    calls: list[str] = []
    for name in ("list_split", "start_queries", "cancel_queries", "query_members"):
        def call(*a, _orig=getattr(source.client, name), _name=name, **k):
            calls.append(_name)
            return _orig(*a, **k)
        monkeypatch.setattr(source.client, name, call)
    return calls


def test_the_first_polls_first_query_is_asked_while_the_names_are_listed(target, monkeypatch):
    """Step (1) of the first poll needs no listing to be asked: it starts before the names are
    listed, and its answer, taken with the families listed meanwhile, is not asked again."""
    truth = Truth(target)
    source = make_source(target, parallel=True)
    try:
        calls = record_calls(source, monkeypatch)
        got, _ = served(source)
        assert got == truth.values
        assert calls[:2] == ["start_queries", "list_split"] and calls.count("start_queries") == 1
        assert "cancel_queries" not in calls
    finally:
        source.close()


def test_a_first_query_asked_ahead_that_the_poll_does_not_need_is_given_up(monkeypatch):
    """Families of fewer than QUERY_MIN_MEMBERS members are read, not queried: the query started
    before the listing is cancelled, and every member is read."""
    with Target(topics=1, partitions=family_reads.QUERY_MIN_MEMBERS - 1) as t:
        truth = Truth(t, 1, family_reads.QUERY_MIN_MEMBERS - 1)
        source = make_source(t)
        try:
            calls = record_calls(source, monkeypatch)
            got, _ = served(source)
            assert got == truth.values
            assert calls == ["start_queries", "list_split", "cancel_queries"]
        finally:
            source.close()


def test_a_poll_that_fails_before_its_listing_is_ranked_lists_the_names_again(target, monkeypatch):
    """A listing's visiting ranks are computed while the poll's first queries run: a poll that
    fails before that (its reads would not start) leaves the next poll to list the names again,
    so that no table goes out unranked."""
    from kafka_jmx_sidecar.exporter.source.jmx import JmxError
    from kafka_jmx_sidecar.exporter.source.protocol import SourceError

    source = make_source(target)
    try:
        calls = record_calls(source, monkeypatch)
        start_reads = source.client.start_reads

        def broken(*a, **k):
            raise JmxError("the connection broke")
        monkeypatch.setattr(source.client, "start_reads", broken)
        with pytest.raises(SourceError):
            source.read()
        monkeypatch.setattr(source.client, "start_reads", start_reads)
        result = source.read()
        assert calls.count("list_split") == 2
        ranks = [r for t in result.tables for r in t.rank] + list(result.ranks or ())
        assert len(ranks) == len(set(ranks)) == 2 * TOPICS * PARTITIONS + 1
    finally:
        source.close()


@pytest.mark.parametrize("more,at_once", [((), 2), (("test:type=ByteGauge,*",), 1)],
                         ids=["nothing else read", "many MBeans read meanwhile"])
def test_a_polls_queries_are_asked_at_once_unless_many_reads_keep_the_connections_busy(monkeypatch, more, at_once):
    """(1) and (2) of a poll are asked at once over the connections; one at a time while more
    than a query's worth of MBeans are read meanwhile (60 ByteGauges, a query costing 8 reads)."""
    slow = ("-Dtarget.query.delay.ms=300", "-Djavax.management.builder.initial=JmxTarget$Builder")
    with Target(topics=TOPICS, partitions=PARTITIONS, extra=slow) as t:
        truth = Truth(t)
        source = make_source(t, *more, parallel=True)
        try:
            served(source)
            monkeypatch.setattr(source.family_reads.costs, "reads_per_query", lambda: 8)
            asked = record_queries(source, monkeypatch)
            t.reset()
            got, _ = served(source)
            assert asked[0] == ("at once", 2)
            assert t.counts()["queriesAtOnce"] == at_once
            assert {k: v for k, v in got.items() if k in truth.values} == truth.values
        finally:
            source.close()


def test_members_kept_as_columns_have_the_names_and_hashes_the_broker_has(target):
    """The JVM lists the partition families as columns; each member must come back as the name
    the broker registered, with its canonical name's String.hashCode() (the visiting order)."""
    from kafka_jmx_sidecar.exporter.source.visiting import member_canonical
    from kafka_jmx_sidecar.exporter.base.model import ObjectName
    from kafka_jmx_sidecar.exporter.rule_engine.order import canonical_name, java_string_hash

    source = make_source(target)
    try:
        served(source)
        assert {f.key[2] for f in source._families} == {"UnderReplicated", "InSyncReplicasCount"}
        for f in source._families:
            m = f.members
            assert len(m) == TOPICS * PARTITIONS
            canonical = member_canonical(m)
            for i in range(len(m)):
                name = ObjectName.parse(m.name(i))
                assert canonical(i) == canonical_name(name)
                assert m.hash[i] & 0xFFFFFFFF == java_string_hash(canonical(i))
                assert m.key_hash[i] & 0xFFFFFFFF == java_string_hash(canonical(i).partition(":")[2])
                assert f.table.object_name(i) == name
    finally:
        source.close()


def test_a_names_refresh_keeps_the_tables_when_no_member_came_or_went(target):
    """A names refresh (every namesRefreshSeconds) usually finds the same names: the JVM then
    hands back the same member lists, and the tables, their ranks and values stay the same
    objects. A member added or removed gives new tables holding exactly the broker's members."""
    source = make_source(target)
    try:
        first, _ = served(source)
        tables = {f.key: f.table for f in source._families}
        source._listed_at = None  # due for a refresh
        again, _ = served(source)
        assert again == first
        assert {f.key: f.table for f in source._families} == tables  # the same objects (identity)
        added = UR.format(t=1, p=PARTITIONS + 3)
        assert target.command(f"add {added} int 1") == "OK"
        source._listed_at = None
        after_add, _ = served(source)
        assert after_add == {**first, added: 1}
        ur = next(f for f in source._families if f.key[2] == "UnderReplicated")
        assert ur.table is not tables[ur.key] and len(ur.table) == TOPICS * PARTITIONS + 1
        assert target.command(f"remove {added}") == "OK"
        source._listed_at = None
        assert served(source)[0] == first
    finally:
        source.close()


def fixed_costs(monkeypatch, query: float, read: float, hit: float = 15e-6) -> None:
    """The cost model's figures, whatever the polls measure on this machine meanwhile."""
    monkeypatch.setattr(QueryCosts, "query_seconds", property(lambda self: query))
    monkeypatch.setattr(QueryCosts, "read_seconds", property(lambda self: read))
    monkeypatch.setattr(QueryCosts, "hit_seconds", property(lambda self: hit))


LSO = "kafka.cluster:type=Partition,name=LastStableOffsetLag,topic=t{t},partition={p}"


def test_a_family_of_numbers_is_asked_by_query_when_the_costs_say_so(target, monkeypatch):
    """LastStableOffsetLag (numbers of its own, 0 on most partitions): asked `!= 0` in the health
    flags' query from the first poll on (the broker scans its members for that query anyway), and
    only the members not holding 0 are read. With most members off 0, their common value is asked
    instead; with the flags not configured it is read member by member on the first poll (which
    learns its values) and takes a query of its own only when the reads it saves cost more."""
    truth = Truth(target)
    for t in range(TOPICS):
        for p in range(PARTITIONS):
            i = t * PARTITIONS + p
            truth.values[LSO.format(t=t, p=p)] = 1000000 + i if i % 40 == 39 else i % 3
    for name in [k for k, v in truth.values.items() if "LastStable" in k and v == 1][:18]:
        target.command(f"set {name} long 0")
        truth.values[name] = 0
    source = make_source(target, "kafka.cluster:type=Partition,name=LastStableOffsetLag,*")
    try:
        fixed_costs(monkeypatch, query=0.02, read=0.0002)  # a query: 100 reads
        got, rt_first = served(source)
        assert got == truth.values
        lso = next(f for f in source._families if f.key[2] == "LastStableOffsetLag")
        nonzero = sum(1 for k, v in truth.values.items() if "LastStable" in k and v)
        assert lso.number and lso.unusual == nonzero == 23
        got, rt = served(source)
        assert got == truth.values
        ur_ones = sum(1 for k, v in truth.values.items() if "UnderReplicated," in k and v)
        isr_others = sum(1 for k, v in truth.values.items() if "InSync" in k and v != 0)
        # one query for the three families, then the members it returned: none of the 37 zeros read
        assert rt == 1 + ur_ones + isr_others + nonzero + 1
        name = next(k for k, v in truth.values.items() if "LastStable" in k and v == 0)
        target.command(f"set {name} long 5")
        truth.values[name] = 5
        assert served(source)[0] == truth.values
        assert lso.unusual == nonzero + 1

        for name in [k for k, v in truth.values.items() if "LastStable" in k and v == 0]:  # most off 0 now
            target.command(f"set {name} long 7")
            truth.values[name] = 7
        assert served(source)[0] == truth.values  # queried: the 37 returned, read
        asked = record_queries(source, monkeypatch)
        assert served(source)[0] == truth.values  # 7 is common now: its query returns the others
        assert [len(q) for q in queries(asked)] == [3]
    finally:
        source.close()

    config = parse_config(f"hostPort: {target.host_port}\n"
                          f"includeObjectNames: ['kafka.cluster:type=Partition,name=LastStableOffsetLag,*']\n")
    source = JmxSource(config, broker_settings(config, SidecarSettings(names_refresh_seconds=3600)))
    try:
        lso_only = {k: v for k, v in truth.values.items() if "LastStable" in k}
        assert served(source)[0] == lso_only
        others = sum(1 for v in lso_only.values() if v != 7)
        assert others == 24 and len(lso_only) == 60
        # a query costs 100 reads: more than the 36 it would save
        assert served(source)[1] == 60
        fixed_costs(monkeypatch, query=0.001, read=0.001)  # a query costs a read
        got, rt = served(source)
        assert got == lso_only and rt == 1 + others
    finally:
        source.close()


@pytest.mark.parametrize("mostly_zero", [True, False], ids=["most members 0", "values of their own"])
def test_the_first_poll_asks_a_family_of_numbers_by_query_when_a_few_members_read_say_it_pays(
        target, monkeypatch, mostly_zero):
    """Nothing learned yet: six members read, spread over the family, stand for it. Most of
    them 0: one `!= 0` query and reads of the five members it returns, not 60 reads. Values of
    their own: no value held twice among the six, so every member is read."""
    monkeypatch.setattr(family_reads, "SAMPLE_NUMBERS", 6)
    lso = {}
    for t in range(TOPICS):
        for p in range(PARTITIONS):
            i = t * PARTITIONS + p
            lso[LSO.format(t=t, p=p)] = (9 if i % 12 == 5 else 0) if mostly_zero else 1000 + i
    for name, value in lso.items():
        target.command(f"set {name} long {value}")
    config = parse_config(f"hostPort: {target.host_port}\n"
                          f"includeObjectNames: ['kafka.cluster:type=Partition,name=LastStableOffsetLag,*']\n")
    source = JmxSource(config, broker_settings(config, SidecarSettings(names_refresh_seconds=3600)))
    try:
        fixed_costs(monkeypatch, query=0.005, read=0.0002)  # a query: 25 reads
        asked = []
        read_members, start = source.client.read_members, source.client.start_queries
        monkeypatch.setattr(source.client, "read_members", lambda members, positions, *a: asked.append(
            len(members) if positions is None else len(positions)) or read_members(members, positions, *a))
        monkeypatch.setattr(source.client, "start_queries", lambda asks, share=None, at_once=None: asked.extend(
            ["query"] * len(asks)) or start(asks, share, at_once))
        assert served(source)[0] == lso
        # else the whole family is read with the MBeans read whole (not by read_members)
        assert asked == ([6, "query", 5] if mostly_zero else [6])
        assert served(source) == (lso, 1 + 5 if mostly_zero else 60)
    finally:
        source.close()


LAG = "kafka.server:type=FetcherLagMetrics,name=ConsumerLag,clientId=ReplicaFetcherThread-0-2,topic=t0,partition={p}"


def test_a_family_of_names_read_whole_is_asked_by_query_when_the_costs_say_so(target, monkeypatch):
    """The replica fetchers' lag gauges (a clientId key: read whole, not kept as columns), 0 on
    most followed partitions: the first poll reads them, later ones ask `Value != 0` and read only
    the members it returns; the others are served 0 as the MBean last read (the same object when
    it held 0 already), what a read would give."""
    from kafka_jmx_sidecar.exporter.source import named_reads

    monkeypatch.setattr(named_reads, "MIN_MEMBERS", 10)
    truth = {LAG.format(p=p): (p * 37 if p % 5 == 0 else 0) for p in range(20)}
    for name, value in truth.items():
        assert target.command(f"add {name} long {value}") == "OK"
    source = make_source(target, "kafka.server:type=FetcherLagMetrics,*")

    def lags() -> dict:
        return {str(mb.name): mb for mb in source.read().mbeans if "FetcherLag" in str(mb.name)}

    def values(mbeans: dict) -> dict:
        return {k: mb.attributes[0].value for k, mb in mbeans.items()}
    try:
        assert values(lags()) == truth
        (family,) = source._named
        assert (family.eligible, family.common, family.unusual) == (True, 0, 3)  # p 5, 10, 15
        fixed_costs(monkeypatch, query=0.001, read=0.001)  # a query costs a read
        before, after = lags(), lags()
        assert values(before) == values(after) == truth
        assert all(after[k] is before[k] for k, v in truth.items() if v == 0)
        asked, read = [], []
        query_texts, client_read = source.client.query_texts, source.client.read
        monkeypatch.setattr(source.client, "query_texts", lambda *a: asked.append(a) or query_texts(*a))
        monkeypatch.setattr(source.client, "read", lambda names, **kw: read.extend(
            n for n in names if "FetcherLag" in n) or client_read(names, **kw))
        for p, value in ((1, 4), (5, 0), (10, 11)):  # 0 -> 4, 185 -> 0, 370 -> 11
            target.command(f"set {LAG.format(p=p)} long {value}")
            truth[LAG.format(p=p)] = value
        assert values(lags()) == truth
        assert asked == [("kafka.server:type=FetcherLagMetrics,name=ConsumerLag,*", "Value", "!=", 0)]
        assert sorted(read) == sorted(LAG.format(p=p) for p in (1, 10, 15))  # what the query returned
        assert family.unusual == 3
    finally:
        source.close()


@pytest.mark.parametrize("mostly_zero", [True, False], ids=["most members 0", "values of their own"])
def test_the_first_poll_asks_a_family_of_names_by_query_when_a_few_members_read_say_it_pays(
        target, monkeypatch, mostly_zero):
    """The listing says every fetcher lag gauge is a gauge; six of them read, most holding 0: the
    first poll asks `Value != 0` and reads the members it returns, and serves the others the
    MBean a read gives. With no value held twice among the six, every member is read."""
    from kafka_jmx_sidecar.exporter.source import named_reads

    monkeypatch.setattr(named_reads, "MIN_MEMBERS", 10)
    monkeypatch.setattr(family_reads, "SAMPLE_NUMBERS", 6)
    truth = {LAG.format(p=p): (p * 37 if p % 5 == 0 else 0) if mostly_zero else 100 + p for p in range(20)}
    for name, value in truth.items():
        assert target.command(f"add {name} long {value}") == "OK"
    source = make_source(target, "kafka.server:type=FetcherLagMetrics,*")
    try:
        fixed_costs(monkeypatch, query=0.001, read=0.001)  # a query costs a read
        asked, read = [], []
        query_texts, client_read = source.client.query_texts, source.client.read
        monkeypatch.setattr(source.client, "query_texts", lambda *a: asked.append(a) or query_texts(*a))
        monkeypatch.setattr(source.client, "read", lambda names, **kw: read.append(
            [int(n.rsplit("=", 1)[1]) for n in names if "FetcherLag" in n] or None) or client_read(names, **kw))
        served = {str(mb.name): mb for mb in source.read().mbeans if "FetcherLag" in str(mb.name)}
        assert {k: mb.attributes[0].value for k, mb in served.items()} == truth
        read = [r for r in read if r]  # the reads of fetcher lags
        if mostly_zero:  # six read (spread over the names' order), the query, then what it returned
            assert len(read) == 2 and len(read[0]) == 6 and sorted(read[1]) == [5, 10, 15]
            assert asked == [("kafka.server:type=FetcherLagMetrics,name=ConsumerLag,*", "Value", "!=", 0)]
        else:
            assert len(read) == 1 and len(read[0]) == 6 and asked == []  # the rest: read whole, not by read()
        assert served == {str(mb.name): mb for mb in client_read(list(truth))}  # what reading each gives
    finally:
        source.close()


@pytest.mark.parametrize("include", ["*:*", "kafka.cluster:type=Partition,*"])
def test_a_gauge_of_a_familys_type_in_no_family_is_listed_and_read_whole(target, include):
    """The listing asks for the names of no family's type (`not` the families' types) and then
    each family's names: a name of the type in no family (a gauge Kafka adds to that type later)
    is found apart, with the broker's MBean count when every name is included, else asked of that
    type's names, and read whole."""
    stray = "kafka.cluster:type=Partition,name=SomethingNew,topic=t0,partition=1"
    assert target.command(f"add {stray} int 42") == "OK"
    config = parse_config(f"hostPort: {target.host_port}\nincludeObjectNames: ['{include}']\n")
    source = JmxSource(config, broker_settings(config, SidecarSettings(names_refresh_seconds=3600)))
    try:
        result = source.read()
        whole = {str(mb.name): mb.attributes[0].value for mb in result.mbeans if "type=Partition," in str(mb.name)}
        assert whole.get(stray) == 42
        assert {f.key[2] for f in source._families} >= {"UnderReplicated", "InSyncReplicasCount"}
        assert not [n for n in whole if "name=UnderReplicated," in n]  # the families' members are columns
    finally:
        source.close()
