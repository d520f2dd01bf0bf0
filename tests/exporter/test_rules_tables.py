"""BeanTables through the rule engine and the exposition: the bytes must be those of the same
MBeans read one by one (the reference path), in both naming modes, for the rule files users run
and for rules built to hit the corners (duplicates across families, value-dependent rules,
rejected values, labels that drop the partition)."""
from __future__ import annotations

from collections import Counter

import random
from array import array
from pathlib import Path

import pytest

from kafka_jmx_sidecar.exporter.output import exposition
from kafka_jmx_sidecar.exporter.base.families import RejectedPoll
from kafka_jmx_sidecar.exporter.base.model import Attribute, BeanTable, MBean, ObjectName
from kafka_jmx_sidecar.exporter.rule_engine import RuleEngine, parse_config
from kafka_jmx_sidecar.exporter.rule_engine.order import jmx_exporter_order
from kafka_jmx_sidecar.exporter.rule_engine.rule_search import RuleSearch
from kafka_jmx_sidecar.exporter.rule_engine.series import families_of
from kafka_jmx_sidecar.exporter.poll.snapshot import Snapshot

REPO = Path(__file__).resolve().parents[2]
STRIMZI = REPO.parent / "shared" / "reference" / "rules" / "strimzi-kafka-metrics.yml"
HEALTH = REPO / "rules" / "kafka-health.yml"

GAUGE = "com.yammer.metrics.reporting.JmxReporter$Gauge"
FAMILIES = [("kafka.cluster", "Partition", "UnderReplicated", True), ("kafka.cluster", "Partition", "InSyncReplicasCount", True),
            ("kafka.log", "Log", "Size", True), ("kafka.log", "Log", "LogEndOffset", True),
            ("kafka.cluster", "Partition", "Ratio", False)]

CORNERS = """
lowercaseOutputName: true
rules:
  # two families under one name without the partition: duplicates, first visited wins (0.x)
  - pattern: kafka.cluster<type=Partition, name=(UnderReplicated|InSyncReplicasCount), topic=(.+), partition=(.*)><>Value
    name: kafka_partition_any
    labels:
      topic: "$2"
  # value-dependent: only values 3 match this one
  - pattern: "kafka.log<type=Log, name=Size, topic=(.+), partition=(.*)><>Value: 3"
    name: kafka_log_size_three
    labels:
      topic: "$1"
      partition: "$2"
  - pattern: kafka.log<type=Log, name=Size, topic=(.+), partition=(.*)><>Value
    name: kafka_log_size
    valueFactor: 0.5
    labels:
      topic: "$1"
      partition: "$2"
      fixed: "x"
  # a constant `value:` that does not parse: rejected, counted
  - pattern: kafka.log<type=Log, name=LogEndOffset, topic=(a.*), partition=(.*)><>Value
    name: bad
    value: "not-a-number"
  - pattern: kafka.log<type=Log, name=LogEndOffset, topic=(.+), partition=(.*)><>Value
    name: kafka_log_end_$1
    help: "end of $1"
    type: COUNTER
  # the attribute snake-cased, and the value left out of the match string ("<cache>" instead)
  - pattern: "kafka.cluster<type=Partition, name=Ratio, topic=(x.*), partition=(.*)><>value: (.*)"
    name: kafka_ratio_x
    attrNameSnakeCase: true
    cache: true
    labels:
      topic: "$1"
      seen: "$3"
  - pattern: kafka.cluster<type=Partition, name=Ratio, topic=(.+), partition=(.*)><>Value
    name: kafka_ratio
    labels:
      topic: "$1"
      partition: "$2"
      same: "$1"
      odd: 'x{1}"\\y}'  # braces, a quote and a backslash: literal text in a line format
  - pattern: kafka.server<type=(.+), name=(.+)><>Value
    name: kafka_server_$1_$2
"""


def build(seed: int):
    """Random tables plus some other MBeans, with each member's rank in jmx_exporter's order."""
    rnd = random.Random(seed)
    topics = sorted({rnd.choice(["a", "b", "orders", "x-1", "0", "__consumer_offsets", "t.q"]) + str(rnd.randint(0, 3))
                     for _ in range(6)})
    return (rnd,) + tables_of([(t, p) for t in topics for p in range(rnd.randint(1, 4))])


def tables_of(members: list[tuple[str, int]]):
    """The FAMILIES as tables of `members` (sorted by topic, partition), plus some other MBeans,
    with each member's rank in jmx_exporter's order."""
    topics = sorted({t for t, _ in members})
    names: list[ObjectName] = []
    for domain, type_, name, _ in FAMILIES:
        for t, p in members:
            names.append(ObjectName(domain, (("type", type_), ("name", name), ("topic", t), ("partition", str(p)))))
    others = [ObjectName("kafka.server", (("type", "ReplicaManager"), ("name", n)))
              for n in ("UnderReplicatedPartitions", "PartitionCount", "LeaderCount")]
    # same name as a table family, for a merged family in the no-rules case
    others.append(ObjectName("kafka.log", (("type", "Log"), ("name", "Size"), ("topic", "zz"))))
    ordered = jmx_exporter_order(names + others)
    rank = {n: r for r, n in enumerate(ordered)}
    tables = []
    for domain, type_, name, integral in FAMILIES:
        keys = (("type", type_), ("name", name))
        tables.append(BeanTable(domain, keys, GAUGE, "Value", "Attribute exposed for management",
                                "java.lang.Object", integral, list(topics),
                                array("I", [topics.index(t) for t, _ in members]), array("I", [p for _, p in members]),
                                array("I", [rank[ObjectName(domain, keys + (("topic", t), ("partition", str(p))))]
                                            for t, p in members])))
    return tables, others, rank


def fill(rnd: random.Random, tables, others, absent: float = 0.1):
    """One poll's values: some members absent (that share of them), values from a small set (3
    included); offsets (a counter in CORNERS) never below zero, as a 1.x poll with a negative
    counter is refused."""
    for t in tables:
        for i in range(len(t)):
            t.present[i] = rnd.random() >= absent
            v = rnd.choice([0, 1, 2, 3, 3, 1000, 0 if t.keys[1][1] == "LogEndOffset" else -1])
            t.values[i] = v if t.integral else v / 4
    return [MBean(n, GAUGE, (Attribute("Value", rnd.choice([0, 5, 7]), "Attribute exposed for management",
                                       "java.lang.Object"),)) for n in others]


def reference(engine: RuleEngine, tables, rest, rank) -> list:
    """Every MBean one by one, in visiting order: the path the tables must agree with."""
    mbeans = list(rest) + [mb for t in tables for mb in map(t.mbean, range(len(t))) if mb is not None]
    mbeans.sort(key=lambda mb: rank[mb.name])
    return engine.samples(mbeans)


def rendered(samples, naming: str) -> Snapshot:
    """The samples of the one-by-one path as families in the exposition's order."""
    return Snapshot.render_families(families_of(samples, naming == "1.x"), 1.0, 0.0, naming=naming)


RULES = {"strimzi": STRIMZI.read_text(), "health": HEALTH.read_text(), "none": "", "corners": CORNERS}


@pytest.mark.parametrize("naming", ["0.x", "1.x"])
@pytest.mark.parametrize("rules", sorted(RULES))
def test_tables_render_exactly_as_the_same_mbeans_one_by_one(rules, naming):
    config = parse_config(RULES[rules])
    rnd, tables, others, rank = build(hash((rules, naming)) & 0xFFFF)
    by_tables, one_by_one = RuleEngine(config, naming), RuleEngine(config, naming)
    for _ in range(3):  # the first poll plans, the later ones run from the cache
        rest = fill(rnd, tables, others)
        rest.sort(key=lambda mb: rank[mb.name])
        expected = reference(one_by_one, tables, rest, rank)
        families = by_tables.series(rest, [rank[mb.name] for mb in rest], tables)
        got = Snapshot.render_families(families, 1.0, 0.0, naming=naming)
        want = rendered(expected, naming)
        assert got.bodies["text"].decode() == want.bodies["text"].decode()
        assert got.bodies["openmetrics"].decode() == want.bodies["openmetrics"].decode()
        assert got.series == len(expected)
        assert by_tables.stats.rejected_values == one_by_one.stats.rejected_values
        assert by_tables.stats.duplicates == one_by_one.stats.duplicates


def test_the_corner_rules_reach_their_corners():
    """The corner file is only a good test if its cases happen: duplicates, a value-dependent
    rule matching, a rejected value, a table family expanded into samples."""
    engine = RuleEngine(parse_config(CORNERS))
    rnd, tables, others, rank = build(7)
    rest = fill(rnd, tables, others)
    text = "".join(exposition.iter_text_families(engine.series(rest, [rank[mb.name] for mb in rest], tables)))
    assert engine.stats.duplicates > 0 and engine.stats.rejected_values > 0
    assert "kafka_log_size_three{" in text and 'same="' in text


def test_a_table_family_is_written_from_its_columns_without_a_sample_per_member():
    engine = RuleEngine(parse_config(STRIMZI.read_text()))
    rnd, tables, others, rank = build(3)
    rest = fill(rnd, tables, others)
    families = engine.series(rest, [rank[mb.name] for mb in rest], tables)
    from kafka_jmx_sidecar.exporter.base.families import TableSeries

    direct = {f.name for f in families if any(isinstance(p, TableSeries) for p in f.parts)}
    # every family but Size, which shares its name with an MBean outside the table (build())
    assert direct == {"kafka_cluster_partition_underreplicated", "kafka_cluster_partition_insyncreplicascount",
                      "kafka_log_log_logendoffset", "kafka_cluster_partition_ratio"}


def test_a_snapshot_keeps_its_values_when_the_next_poll_changes_the_table():
    engine = RuleEngine(parse_config(STRIMZI.read_text()))
    rnd, tables, others, rank = build(5)
    rest = fill(rnd, tables, others)
    snap = Snapshot.render_families(engine.series(rest, [rank[mb.name] for mb in rest], tables), 1.0, 0.0, formats=())
    before = Snapshot.render_families(engine.series(rest, [rank[mb.name] for mb in rest], tables), 1.0, 0.0)
    fill(rnd, tables, others)  # the source changes its columns in place
    assert snap.bodies["text"] == before.bodies["text"]  # rendered only now, from the old values


def test_visiting_ranks_from_the_jvms_hashes_give_jmx_exporters_order():
    """The sidecar ranks names from the canonical-name hashes the JVM computed (signed ints);
    that must be the order jmx_exporter_order gives, collisions within a bucket included."""
    from kafka_jmx_sidecar.exporter.rule_engine.order import canonical_name, java_string_hash, visiting_ranks

    rnd = random.Random(11)
    names = [ObjectName(rnd.choice(["kafka.cluster", "kafka.log"]), (("type", "Partition"), ("name", rnd.choice(["A", "B", "C"])),
                                          ("topic", f"t{rnd.randint(0, 300)}"), ("partition", str(rnd.randint(0, 40)))))
             for _ in range(3000)]
    names = list(dict.fromkeys(names))
    signed = [h - (1 << 32) if h >= 1 << 31 else h for h in (java_string_hash(canonical_name(n)) for n in names)]
    ranks = visiting_ranks(signed, lambda i: canonical_name(names[i]), Counter(n.domain for n in names))
    by_rank = sorted(range(len(names)), key=ranks.__getitem__)
    assert [names[i] for i in by_rank] == jmx_exporter_order(names)
    assert sorted(ranks) == list(range(len(names)))
    # the same from the JVM's hashes of the canonical key property lists, the text asked only of
    # names alike in every bucket
    from kafka_jmx_sidecar.exporter.rule_engine.order import tie_buckets

    keys = [java_string_hash(canonical_name(n).partition(":")[2]) for n in names]
    buckets = tie_buckets(Counter(n.domain for n in names))
    asked = []
    by_buckets = visiting_ranks(signed, lambda i: asked.append(i) or canonical_name(names[i]),
                                Counter(n.domain for n in names), tie=lambda i: buckets(names[i].domain, keys[i]))
    assert by_buckets == ranks and len(set(asked)) < len(names) / 20


@pytest.mark.parametrize("naming", ["0.x", "1.x"])
@pytest.mark.parametrize("rules", sorted(RULES))
@pytest.mark.parametrize("changed", [False, True], ids=["as_prepared", "changed_after"])
def test_tables_prepared_while_the_rest_is_read_render_as_the_same_mbeans_one_by_one(rules, naming, changed):
    """A source hands each table to prepare() as its values come in: the poll's series() then
    finds its members planned. Its output is still that of the same MBeans one by one, also
    when values and presence change between prepare() and series() (the recompute writes its
    values after the read), and the cache's counts are those of an engine never prepared."""
    config = parse_config(RULES[rules])
    rnd, tables, others, rank = build(hash((rules, naming, "prepared")) & 0xFFFF)
    prepared, plain, one_by_one = RuleEngine(config, naming), RuleEngine(config, naming), RuleEngine(config, naming)
    for _ in range(3):
        rest = fill(rnd, tables, others)
        for table in tables:
            prepared.prepare(table)
        if changed:
            rest = fill(rnd, tables, others, absent=0.3)
        rest.sort(key=lambda mb: rank[mb.name])
        ranks = [rank[mb.name] for mb in rest]
        got = Snapshot.render_families(prepared.series(rest, ranks, tables), 1.0, 0.0, naming=naming)
        want = rendered(reference(one_by_one, tables, rest, rank), naming)
        assert got.bodies["text"].decode() == want.bodies["text"].decode()
        assert got.bodies["openmetrics"].decode() == want.bodies["openmetrics"].decode()
        assert prepared.stats.rejected_values == one_by_one.stats.rejected_values
        plain.series(rest, ranks, tables)
        if not changed:
            assert (prepared.stats.cache_hits, prepared.stats.cache_misses) == (
                plain.stats.cache_hits, plain.stats.cache_misses)


@pytest.mark.parametrize("rules", ["strimzi", "corners"])
def test_a_names_refresh_runs_the_rules_only_for_new_members(rules):
    """A new member list (topics created and deleted, partitions added and removed) keeps what
    the rules made of the members it shares with the old one: the regexes run for the new members
    only, and the output is still that of the same MBeans one by one."""
    config = parse_config(RULES[rules])
    rnd = random.Random(5)
    before = [(t, p) for t in ("a1", "b2", "orders", "x-1") for p in range(5)]
    after = ([(t, p) for t in ("a1", "orders") for p in range(5)] + [("b2", p) for p in (0, 2, 3, 6, 7)]
             + [("new", p) for p in range(3)] + [("x-1", p) for p in range(3)])
    after.sort()
    by_tables, one_by_one = RuleEngine(config), RuleEngine(config)
    planned: set[tuple] = set()  # (family, topic, partition) the rules have seen present
    for members in (before, after, after):
        tables, others, rank = tables_of(members)
        rest = fill(rnd, tables, others)
        rest.sort(key=lambda mb: rank[mb.name])
        fresh = {(t.keys, t.topics[t.topic[i]], t.partition[i]) for t in tables for i in range(len(t))
                 if t.present[i]} - planned
        misses = by_tables.stats.cache_misses
        families = by_tables.series(rest, [rank[mb.name] for mb in rest], tables)
        expected = reference(one_by_one, tables, rest, rank)
        got = Snapshot.render_families(families, 1.0, 0.0)
        assert got.bodies["text"].decode() == rendered(expected, "0.x").bodies["text"].decode()
        # the MBeans outside tables are the same three each poll (one planned on the first)
        assert by_tables.stats.cache_misses - misses == len(fresh) + (len(others) if not planned else 0)
        planned |= fresh
        assert by_tables.stats.rejected_values == one_by_one.stats.rejected_values


def test_templates_of_deleted_topics_are_forgotten():
    """With a rule that puts the topic in the metric name, each topic has templates of its own;
    topics come and go for as long as the sidecar runs, and the templates of the gone ones must
    not pile up (nor may forgetting them change the output)."""
    config = parse_config(CORNERS)
    rnd = random.Random(9)
    by_tables, one_by_one = RuleEngine(config), RuleEngine(config)
    sizes = []
    for generation in (0, 1, 2, 2):
        members = [(f"g{generation}-{k:03d}", p) for k in range(60) for p in range(2)]
        tables, others, rank = tables_of(members)
        rest = fill(rnd, tables, others)
        rest.sort(key=lambda mb: rank[mb.name])
        families = by_tables.series(rest, [rank[mb.name] for mb in rest], tables)
        expected = reference(one_by_one, tables, rest, rank)
        got = Snapshot.render_families(families, 1.0, 0.0)
        assert got.bodies["text"].decode() == rendered(expected, "0.x").bodies["text"].decode()
        sizes.append(len(by_tables._tables.templates))
    assert sizes[0] >= 60  # one kafka_log_end_<topic> per topic, at least
    assert max(sizes) < 2 * sizes[0] + 2


@pytest.mark.parametrize("negative_member", [True, False])
def test_a_negative_counter_refuses_the_1x_poll(negative_member):
    # jmx_exporter 1.6.0 answers HTTP 500 ("counters cannot have a negative value"):
    # tests/real/test_examples_vs_jmx_exporter.py, test_1x_fails_a_scrape_with_a_negative_counter
    config = parse_config("""
rules:
  - pattern: kafka.log<type=Log, name=LogEndOffset, topic=(.+), partition=(.*)><>Value
    name: kafka_log_end_offset
    type: COUNTER
    labels: {topic: "$1", partition: "$2"}
  - pattern: kafka.server<type=(.+), name=(.+)><>Value
    name: kafka_server_$1_$2
    type: COUNTER
""")
    tables, others, rank = tables_of([("a", 0), ("a", 1), ("b", 0)])
    for t in tables:
        t.present[:] = bytearray([1]) * len(t)
    offsets = next(t for t in tables if t.keys[1][1] == "LogEndOffset")
    offsets.values[1] = -5 if negative_member else 5
    rest = [MBean(n, GAUGE, (Attribute("Value", 1, "", "java.lang.Object"),)) for n in others]
    for naming in ("0.x", "1.x"):
        engine = RuleEngine(config, naming)
        if naming == "1.x" and negative_member:
            with pytest.raises(RejectedPoll, match="kafka_log_end_offset has a negative value"):
                engine.series(rest, [rank[mb.name] for mb in rest], tables)
        else:
            assert engine.series(rest, [rank[mb.name] for mb in rest], tables)
    rest[0] = MBean(others[0], GAUGE, (Attribute("Value", -1, "", "java.lang.Object"),))
    with pytest.raises(RejectedPoll, match="has a negative value"):
        RuleEngine(config, "1.x").series(rest, [rank[mb.name] for mb in rest], tables)


def polled(rules: str, naming: str, members: list[tuple[str, int]], seed: int, polls: int = 3,
           absent: float = 0.1):
    """`polls` polls of the same tables through the engine and one by one: (families, got text,
    wanted text, engine, reference engine) of each."""
    config = parse_config(rules)
    rnd = random.Random(seed)
    tables, others, rank = tables_of(members)
    by_tables, one_by_one = RuleEngine(config, naming), RuleEngine(config, naming)
    out = []
    for _ in range(polls):
        rest = fill(rnd, tables, others, absent)
        rest.sort(key=lambda mb: rank[mb.name])
        expected = reference(one_by_one, tables, rest, rank)
        families = by_tables.series(rest, [rank[mb.name] for mb in rest], tables)
        got = Snapshot.render_families(families, 1.0, 0.0, naming=naming)
        out.append((families, got.bodies["text"].decode(), rendered(expected, naming).bodies["text"].decode(),
                    by_tables, one_by_one))
        assert got.bodies["openmetrics"] == rendered(expected, naming).bodies["openmetrics"]
    return out


def assert_as_one_by_one(rules: str, naming: str, members: list[tuple[str, int]], seed: int, absent: float) -> None:
    """Two polls through the engine render and count exactly as the same MBeans one by one."""
    for _, got, want, by_tables, one_by_one in polled(rules, naming, members, seed, polls=2, absent=absent):
        assert got == want
        for counted in ("duplicates", "rejected_values", "empty_names"):
            assert getattr(by_tables.stats, counted) == getattr(one_by_one.stats, counted), counted


def counted_while_polled(monkeypatch, method: str, rules: str, members: list, weigh=lambda *args: 1) -> int:
    """One poll of `members` under `rules` (its text checked against one by one), counting the
    calls of `RuleSearch.<method>`, each weighed by `weigh` of its arguments."""
    counted = 0
    real = getattr(RuleSearch, method)

    def counting(self, *args):
        nonlocal counted
        counted += weigh(*args)
        return real(self, *args)

    monkeypatch.setattr(RuleSearch, method, counting)
    (_, got, want, _, _), = polled(rules, "0.x", members, 5, polls=1, absent=0.0)
    assert got == want
    return counted


def parts_of(families, name: str) -> list:
    return next(f for f in families if f.name == name).parts


MEMBERS = [(t, p) for t in ("a1", "orders", "x", "x-1", "0") for p in range(4)]


def test_the_rule_search_keeps_no_members_own_labels():
    """The rule search shares its outcomes' label tuples between leaves; a table member's own are
    only read into its template, and kept they would be one tuple per member for as long as the
    engine (those of deleted topics too)."""
    (_, got, want, by_tables, _), = polled("", "0.x", MEMBERS, 8, polls=1, absent=0.0)
    assert got == want
    shared = by_tables._search.shared
    assert not any(isinstance(k, tuple) and ("name", "UnderReplicated") in k for k in shared)
    assert ("name", "UnderReplicated") in shared  # the pairs are still shared


@pytest.mark.parametrize("rules", ["none", "corners"])
def test_members_visited_in_a_new_order_are_written_in_it(rules):
    """A names refresh that changes other names only keeps a table's member columns (the same
    objects) but gives its members new ranks, and jmx_exporter's HashSet may then visit them in
    another order: the output follows the new ranks."""
    config = parse_config(RULES[rules])
    rnd = random.Random(4)
    tables, others, rank = tables_of([(t, p) for t, p in MEMBERS if t != "0"])
    by_tables, one_by_one = RuleEngine(config), RuleEngine(config)
    for generation in range(3):
        if generation:
            shuffled = list(rank.values())
            rnd.shuffle(shuffled)
            rank = dict(zip(rank, shuffled))
            for t in tables:  # the same topic and partition columns, new ranks
                t.rank = array("I", [rank[t.object_name(i)] for i in range(len(t))])
        rest = fill(rnd, tables, others)
        rest.sort(key=lambda mb: rank[mb.name])
        expected = reference(one_by_one, tables, rest, rank)
        families = by_tables.series(rest, [rank[mb.name] for mb in rest], tables)
        got = Snapshot.render_families(families, 1.0, 0.0)
        assert got.bodies["text"].decode() == rendered(expected, "0.x").bodies["text"].decode()


@pytest.mark.parametrize("naming", ["0.x", "1.x"])
def test_a_topic_named_like_a_partition_number_shares_its_tables_template(naming):
    """Topic "0", partition 0: which of its labels holds the topic and which the partition is
    open; the member takes its table's template, not one of its own (which would make its whole
    family expanded into Samples)."""
    members = [("0", 0), ("0", 1), ("1", 0), ("1", 1), ("a", 0)]
    for _, got, want, by_tables, _ in polled("", naming, members, 6, absent=0.0):
        assert got == want
        assert len(by_tables._tables.templates) == len(FAMILIES)


MERGES = """
rules:
  # two tables under one name, told apart by a label each fixes: merged in visiting order (0.x)
  - pattern: kafka.cluster<type=Partition, name=UnderReplicated, topic=(.+), partition=(.*)><>Value
    name: kafka_partition_flag
    labels: {kind: under, topic: "$1", partition: "$2"}
  - pattern: kafka.cluster<type=Partition, name=InSyncReplicasCount, topic=(.+), partition=(.*)><>Value
    name: kafka_partition_flag
    type: GAUGE
    help: in sync
    labels: {kind: isr, topic: "$1", partition: "$2"}
  # two tables named alike: every member of one meets its twin of the other; the first visited wins
  - pattern: kafka.log<type=Log, name=(Size|LogEndOffset), topic=(.+), partition=(.*)><>Value
    name: kafka_log_twins
    labels: {topic: "$2", partition: "$3"}
  # a label fixed to "x": the members of topic "x" take the others' template (its slot for the
  # topic would only ever hold the fixed text)
  - pattern: kafka.cluster<type=Partition, name=Ratio, topic=(.+), partition=(.*)><>Value
    name: kafka_partition_crossed
    labels: {a: "$1", b: "$2", c: "x"}
  - pattern: kafka.server<type=ReplicaManager, name=(.+)><>Value
    name: kafka_server_$1
"""


def test_default_naming_writes_a_family_of_several_tables_interleaved_from_their_columns():
    """No rules: `kafka_cluster_Partition_Value` is three tables (one per `name=`), their members'
    visits interleaved; 0.x writes them in that order, from the columns, with no Sample made
    (the member of topic "0", partition 0 included: it shares its table's template)."""
    from kafka_jmx_sidecar.exporter.base.families import MergedTables

    for families, got, want, _, _ in polled("", "0.x", MEMBERS, 1):
        assert got == want
        (merged,) = parts_of(families, "kafka_cluster_Partition_Value")
        assert isinstance(merged, MergedTables) and len(merged.parts) == 3
        names = [line.split('name="')[1].split('"')[0] for line in got.splitlines()
                 if line.startswith("kafka_cluster_Partition_Value{")]
        assert len(set(names)) == 3 and names != sorted(names, key=names.index)  # interleaved, not part by part
        assert len(merged) == len(names)
        # kafka.log:type=Log,name=Size,topic=zz (outside the tables) shares kafka_log_Log_Value: expanded
        (samples,) = parts_of(families, "kafka_log_Log_Value")
        assert isinstance(samples, list) and any(("topic", "zz") in s.labels for s in samples)


@pytest.mark.parametrize("naming", ["0.x", "1.x"])
def test_tables_named_alike_merge_only_when_their_labels_tell_them_apart(naming):
    from kafka_jmx_sidecar.exporter.base.families import MergedTables, TableSeries

    polls = polled(MERGES, naming, MEMBERS, 2)
    for families, got, want, by_tables, one_by_one in polls:
        assert got == want
        assert by_tables.stats.duplicates == one_by_one.stats.duplicates
        if naming == "0.x":
            assert by_tables.stats.duplicates > 0  # the twins, and topic "x" crossed
        flag = parts_of(families, "kafka_partition_flag")
        if naming == "0.x":
            assert [type(p) for p in flag] == [MergedTables]
            # HELP and type are the first visited member's part's
            first = min((ts.first_rank(), ts) for ts in flag[0].parts)[1]
            assert f"# HELP kafka_partition_flag {first.template.help}\n" in got
        else:
            assert [type(p) for p in flag] == [TableSeries, TableSeries]
        # expanded into Samples, resolved
        assert not any(isinstance(p, (MergedTables, TableSeries)) for p in parts_of(families, "kafka_log_twins"))
        assert [type(p) for p in parts_of(families, "kafka_partition_crossed")] == [TableSeries]
    crossed = [line for line in polls[0][1].splitlines() if line.startswith("kafka_partition_crossed{")]
    assert any('a="x",' in line for line in crossed)


def test_a_merge_order_is_worked_out_once_per_member_list():
    rnd = random.Random(3)
    by_tables, one_by_one = RuleEngine(parse_config("")), RuleEngine(parse_config(""))
    orders = []
    for members in (MEMBERS, MEMBERS[:-3]):  # a names refresh: new member columns
        tables, others, rank = tables_of(members)
        for _ in range(2):
            rest = fill(rnd, tables, others, absent=0.0)  # (a member first seen later regroups its table)
            rest.sort(key=lambda mb: rank[mb.name])
            families = by_tables.series(rest, [rank[mb.name] for mb in rest], tables)
            got = Snapshot.render_families(families, 1.0, 0.0).bodies["text"]
            assert got == rendered(reference(one_by_one, tables, rest, rank), "0.x").bodies["text"]
            orders.append(parts_of(families, "kafka_cluster_Partition_Value")[0].order)
    assert orders[0] is orders[1] and orders[2] is orders[3]
    assert orders[2] is not orders[1] and len(orders[2]) == 3 * len(MEMBERS[:-3])
# --- tables keyed by a leader (the cluster-wide view: exporter/source/cluster.py) ------------------

CLUSTER_RULES = (REPO / "rules" / "kafka-cluster.yml").read_text()
# the same MBeans under rules that drop the leader: the tables' members then meet (duplicates)
NO_LEADER_LABEL = """
rules:
  - pattern: kafka.cluster<type=Partition, name=(\\w+), leader=(\\w+), topic=(.+), partition=(\\d+)><>Value
    name: kafka_cluster_partition_$1
    labels:
      topic: "$3"
      partition: "$4"
"""


def leader_tables(members: list[tuple[str, int, str]], rank_start: int = 0):
    """Per partition name, one table per leader (members sorted by topic and partition), ranked
    table after table; the members' keys hold their leader's id, which some partitions share."""
    topics = sorted({t for t, _, _ in members})
    tables, rank = [], rank_start
    for name in ("UnderReplicated", "AtMinIsr"):
        for leader in sorted({l for _, _, l in members}):
            mine = [(t, p) for t, p, l in members if l == leader]
            tables.append(BeanTable("kafka.cluster", (("type", "Partition"), ("name", name), ("leader", leader)),
                                    GAUGE, "Value", "Attribute exposed for management", "java.lang.Object", True,
                                    topics, array("I", [topics.index(t) for t, _ in mine]),
                                    array("I", [p for _, p in mine]), array("I", range(rank, rank + len(mine)))))
            rank += len(mine)
    return tables


@pytest.mark.parametrize("naming", ["0.x", "1.x"])
@pytest.mark.parametrize("rules", [CLUSTER_RULES, NO_LEADER_LABEL], ids=["cluster", "no-leader-label"])
def test_leader_tables_render_exactly_as_the_same_mbeans_one_by_one(rules, naming):
    # partition 1 led by broker 1 and a topic named "2" led by broker 2: label values that equal
    # the member's partition or topic although they are the leader's
    members = sorted([(t, p, l) for t in ("2", "orders", "x") for p, l in ((0, "1"), (1, "1"), (2, "2"), (3, "none"))])
    rnd = random.Random(3)
    config = parse_config(rules)
    by_tables, one_by_one = RuleEngine(config, naming), RuleEngine(config, naming)
    tables = leader_tables(members)
    rank = {t.object_name(i): t.rank[i] for t in tables for i in range(len(t))}
    for _ in range(3):
        fill(rnd, tables, [])
        expected = reference(one_by_one, tables, [], rank)
        families = by_tables.series([], [], tables)
        got = Snapshot.render_families(families, 1.0, 0.0, naming=naming)
        want = rendered(expected, naming)
        assert got.bodies["text"].decode() == want.bodies["text"].decode()
        assert got.bodies["openmetrics"].decode() == want.bodies["openmetrics"].decode()
        assert by_tables.stats.duplicates == one_by_one.stats.duplicates
    from kafka_jmx_sidecar.exporter.base.families import TableSeries
    from kafka_jmx_sidecar.exporter.base.families import MergedTables

    if rules is CLUSTER_RULES:
        # written from the columns: one template per table, each family made of table parts only
        # (0.x: the parts merged in visiting order)
        assert all(all(isinstance(p, (TableSeries, MergedTables)) for p in f.parts) for f in families)
        assert len(by_tables._tables.templates) == len(tables)
    else:  # one template for every table: the parts are expanded (the members could meet)
        assert len(by_tables._tables.templates) == 2
        assert all(not any(isinstance(p, TableSeries) for p in f.parts) for f in families)
