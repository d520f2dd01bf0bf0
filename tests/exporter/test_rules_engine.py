"""The rule engine: rules on leaves, duplicates, the match cache (exporter/rule_engine/engine.py,
rule_search.py)."""
import math

import pytest
from hypothesis import given, settings, strategies as st

from kafka_jmx_sidecar.exporter.output.exposition import iter_text_families
from kafka_jmx_sidecar.exporter.base.model import Attribute, Sample
from kafka_jmx_sidecar.exporter.rule_engine import RuleEngine, parse_config
from kafka_jmx_sidecar.exporter.rule_engine.series import families_of

from .rule_runs import METER, NUMBERS, PARTITION, bean, one, run, series


# --- rules: matching and templates -------------------------------------------------------------

def test_greedy_capture_binds_the_right_most_match():
    s = one("rules:\n- pattern: '(\\w+)Rate'\n  name: x_$1\n",
            bean("kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec", ("OneMinuteRate", 1.5)))
    assert (s.name, s.value) == ("x_e", 1.5)


def test_first_matching_rule_wins_and_unmatched_leaves_are_dropped():
    rules = """
rules:
- pattern: 'kafka.server<type=(.+), name=(.+)><>Count'
  name: first_$2
- pattern: 'kafka.server<type=(.+), name=(.+)><>(.+)'
  name: second_$3
"""
    # `(.+)` at the end of a pattern takes the value too, as in jmx_exporter (and ':' is legal in
    # a metric name); the strings (RateUnit, EventType) match the second rule and are dropped.
    assert series(run(rules, METER)) == [("first_BytesInPerSec", (), 989.0), ("second_OneMinuteRate:_1_5", (), 1.5)]
    assert run("rules:\n- pattern: nothing_matches\n  name: x\n", METER) == []


def test_templates_in_name_labels_and_help():
    rules = """
rules:
- pattern: 'kafka.(\\w+)<type=(.+), name=(.+), topic=(.+), partition=(.+)><>Value'
  name: kafka_$1_$2_$3
  help: "$3 of $4/$5"
  type: GAUGE
  labels:
    topic: "$4"
    partition: "$5"
    static: "yes"
"""
    s = one(rules, PARTITION)
    assert s == Sample("kafka_cluster_Partition_AtMinIsr", (("partition", "3"), ("static", "yes"), ("topic", "orders")),
                       1.0, "gauge", "AtMinIsr of orders/3")


def test_label_names_are_sanitised_values_are_not_and_empty_ones_are_omitted():
    rules = """
rules:
- pattern: 'd<type=(.+), k=(.*)><>Value'
  name: m
  labels:
    "client-id": "$1"
    "$2": "v"
    empty: "$2"
"""
    s = one(rules, bean("d:type=a b-c,k=", ("Value", 1)))
    assert s.labels == (("client_id", "a b-c"),)


def test_name_is_sanitised_after_substitution_and_empty_name_drops():
    assert one("rules:\n- pattern: 'd<type=(.+)><>'\n  name: 'x.$1-total'\n", bean("d:type=a/b", ("V", 1))).name == "x_a_b_total"
    engine = RuleEngine(parse_config("rules:\n- pattern: 'd<type=(\\w*)>'\n  name: '$1'\n- pattern: '.*'\n  name: fallback\n"))
    assert engine.samples([bean("d:type=", ("V", 1))]) == []  # dropped, and the search stops
    assert engine.stats.empty_names == 1


def test_value_template_and_factor():
    rules = """
rules:
- pattern: 'kafka.server<type=raft-metrics><>(current-state): (.+)'
  name: kafka_server_raftmetrics_$1
  value: 1
  labels:
    $1: "$2"
- pattern: 'd<type=T><>Count: (\\d+)'
  name: count_in_thousands
  value: $1
  valueFactor: 0.001
- pattern: 'd<type=T><>(\\w+)'
  name: d_$1
  valueFactor: 2
"""
    out = run(rules, bean("kafka.server:type=raft-metrics", ("current-state", "leader")),
              bean("d:type=T", ("Count", 1500), ("Flag", True), ("Ratio", 0.25)))
    assert series(out) == [
        ("kafka_server_raftmetrics_current_state", (("current_state", "leader"),), 1.0),
        ("count_in_thousands", (), 1.5),
        ("d_Flag", (), 1.0),  # booleans are 1/0; valueFactor is not applied to them
        ("d_Ratio", (), 0.5),
    ]


def test_value_that_does_not_parse_drops_the_sample_and_stops_the_search():
    rules = """
rules:
- pattern: 'd<type=T><>(\\w+): (.*)'
  name: m
  value: $2
- pattern: '.*'
  name: never
"""
    engine = RuleEngine(parse_config(rules))
    out = engine.samples([bean("d:type=T", ("Version", "4.1.0"), ("Count", 3), ("State", "1.5"))])
    assert series(out) == [("m", (), 3.0)]  # the string "1.5" is a number once value: reads it
    assert len(run(rules, bean("d:type=T", ("State", "1.5")))) == 1
    assert engine.stats.rejected_values == 1
    engine.samples([bean("d:type=T", ("Version", "4.1.0"))])
    assert engine.stats.rejected_values == 2  # counted every poll


def test_strings_are_dropped_unless_value_is_set_even_when_a_later_rule_would_take_them():
    rules = """
rules:
- pattern: 'd<type=T><>(\\w+)'
  name: first_$1
- pattern: 'd<type=T><>(\\w+): (.+)'
  name: second_$1
  value: 1
"""
    assert series(run(rules, bean("d:type=T", ("Unit", "SECONDS"), ("N", 2)))) == [("first_N", (), 2.0)]


def test_booleans_with_value_get_the_factor():
    rules = "rules:\n- pattern: 'd<type=T><>Up: (true|false)'\n  name: up\n  value: 5\n  valueFactor: 2\n"
    assert one(rules, bean("d:type=T", ("Up", True))).value == 10.0


def test_default_naming_from_the_spec():
    mbean = bean("kafka.cluster:type=Partition,name=UnderReplicated,topic=orders,partition=3", ("Value", 0))
    assert one("", mbean) == Sample(
        "kafka_cluster_Partition_Value", (("name", "UnderReplicated"), ("topic", "orders"), ("partition", "3")), 0.0,
        "untyped", "Attribute exposed for management kafka.cluster:name=UnderReplicated,type=Partition,attribute=Value")


def test_default_naming_keeps_key_order_and_sanitises_label_names():
    mbean = bean("kafka.server:type=socket-server-metrics,listener=PLAINTEXT,networkProcessor=0",
                 ("io-ratio", 1.79e-4, "The fraction of time the I/O thread spent doing I/O"))
    s = one("", mbean)
    assert s.name == "kafka_server_socket_server_metrics_io_ratio"
    assert s.labels == (("listener", "PLAINTEXT"), ("networkProcessor", "0"))
    assert s.help == ("The fraction of time the I/O thread spent doing I/O "
                      "kafka.server:name=null,type=socket-server-metrics,attribute=io-ratio")
    assert one("", bean("d:type=T,client-id=a", ("V", 1))).labels == (("client_id", "a"),)


def test_default_rule_options_apply_to_default_naming():
    rules = "lowercaseOutputName: true\nlowercaseOutputLabelNames: true\nrules:\n- attrNameSnakeCase: true\n  type: GAUGE\n"
    s = one(rules, bean("kafka.server:type=ReplicaManager,name=X,BrokerId=1", ("UnderReplicatedPartitions", 2)))
    assert (s.name, s.labels, s.type) == ("kafka_server_replicamanager_under_replicated_partitions",
                                          (("name", "X"), ("brokerid", "1")), "gauge")


def test_lowercase_applies_after_substitution_and_to_label_names_only():
    rules = """
lowercaseOutputName: true
lowercaseOutputLabelNames: true
rules:
- pattern: 'kafka.(\\w+)<type=(.+), name=(.+), topic=(.+), partition=(.+)><>Value'
  name: kafka_$1_$2_$3
  labels:
    Topic: "$4"
"""
    s = one(rules, bean("kafka.cluster:type=Partition,name=AtMinIsr,topic=Orders,partition=3", ("Value", 1)))
    assert (s.name, s.labels) == ("kafka_cluster_partition_atminisr", (("topic", "Orders"),))


def test_attr_name_snake_case_changes_what_the_pattern_sees():
    rules = "rules:\n- pattern: 'd<type=T><>one_minute_rate'\n  name: m\n  attrNameSnakeCase: true\n"
    assert one(rules, bean("d:type=T", ("OneMinuteRate", 3.0))).value == 3.0
    assert run(rules.replace("  attrNameSnakeCase: true\n", ""), bean("d:type=T", ("OneMinuteRate", 3.0))) == []


@pytest.mark.parametrize("description, expected", [
    ("Attribute exposed for management", "Attribute exposed for management d:name=N,type=T,attribute=V"),
    ("V", "d:name=N,type=T,attribute=V"),  # a description that repeats the attribute name is dropped
    ("", " d:name=N,type=T,attribute=V"),  # an empty one keeps its separator, as jmx_exporter prints it
    (None, "d:name=N,type=T,attribute=V"),
])
def test_default_help(description, expected):
    assert one("", bean("d:type=T,name=N", Attribute("V", 1, description))).help == expected


def test_help_with_missing_keys_says_null():
    assert one("", bean("d:id=1", ("V", 1))).help == "Attribute exposed for management d:name=null,type=null,attribute=V"


def test_infer_counter_type_from_name():
    rules = "inferCounterTypeFromName: true\nrules:\n- pattern: 'd<type=T><>(.+):'\n  name: m_$1\n  type: GAUGE\n"
    out = run(rules, bean("d:type=T", ("request-total", 3), ("request-rate", 0.5)), naming="1.x")
    assert [(s.name, s.type) for s in out] == [("m_request", "counter"), ("m_request_rate", "gauge")]
    # a jmx_exporter 1.x key: 0.20.0 ignores it (tests/real/test_examples_vs_jmx_exporter.py,
    # test_keys_jmx_exporter_0x_does_not_know_are_ignored_in_0x)
    out = run(rules, bean("d:type=T", ("request-total", 3), ("request-rate", 0.5)))
    assert [(s.name, s.type) for s in out] == [("m_request_total", "gauge"), ("m_request_rate", "gauge")]


# --- cache: true -----------------------------------------------------------------------------

def test_cache_true_matches_against_the_cache_placeholder():
    rules = "rules:\n- pattern: 'd<type=T><>V: (.+)'\n  name: m_$1\n  cache: true\n"
    assert one(rules, bean("d:type=T", ("V", 5))).name == "m_cache_"
    rules = "rules:\n- pattern: 'd<type=T><>V: 5'\n  name: m\n  cache: true\n"
    assert run(rules, bean("d:type=T", ("V", 5))) == []


# --- duplicates --------------------------------------------------------------------------------

DUPLICATE_RULES = """
rules:
- pattern: 'd<type=(.+), name=(.+)><>Value'
  name: m
  type: GAUGE
  labels:
    type: "$1"
"""


def test_0x_first_sample_of_a_series_wins():
    engine = RuleEngine(parse_config(DUPLICATE_RULES))
    out = engine.samples([bean("d:type=A,name=x", ("Value", 1)), bean("d:type=A,name=y", ("Value", 2)),
                          bean("d:type=B,name=x", ("Value", 3))])
    assert series(out) == [("m", (("type", "A"),), 1.0), ("m", (("type", "B"),), 3.0)]
    assert engine.stats.duplicates == 1


def test_0x_label_order_is_part_of_the_series():
    rules = """
rules:
- pattern: 'd<type=A, a=(.+), b=(.+)><>V'
  name: m
  labels: {a: $1, b: $2}
- pattern: 'd<type=B, a=(.+), b=(.+)><>V'
  name: m
  labels: {a: $1, b: $2}
"""
    # same label set twice: the second is dropped; default naming keeps ObjectName order
    assert len(run(rules, bean("d:type=A,a=1,b=2", ("V", 1)), bean("d:type=B,a=1,b=2", ("V", 2)))) == 1
    assert len(run("", bean("d:type=A,a=1,b=2", ("V", 1)), bean("d:type=A,b=2,a=1", ("V", 2)))) == 2


def test_1x_naming_adds_objectname_on_collisions_and_fixes_suffixes():
    out = run(DUPLICATE_RULES, bean("d:type=A,name=x", ("Value", 1)), bean("d:type=A,name=y", ("Value", 2)),
              bean("d:type=B,name=x", ("Value", 3)), naming="1.x")
    assert series(out) == [
        ("m", (("_objectname", "d<type=A, name=x><>Value"), ("type", "A")), 1.0),
        ("m", (("_objectname", "d<type=A, name=y><>Value"), ("type", "A")), 2.0),
        ("m", (("_objectname", "d<type=B, name=x><>Value"), ("type", "B")), 3.0),
    ]
    rules = """
rules:
- pattern: 'd<type=T><>(\\w+)'
  name: x_$1
  type: COUNTER
  labels: {z: "1", a: "2"}
- pattern: 'd<type=G><>(\\w+)'
  name: g_$1_total
  type: GAUGE
"""
    out = run(rules, bean("d:type=T", ("count", 4)), bean("d:type=G", ("n", 5)), naming="1.x")
    # samples carry their family's name; a counter family's series are written `<name>_total`
    assert [(s.name, s.labels, s.type) for s in out] == [
        ("x_count", (("a", "2"), ("z", "1")), "counter"), ("g_n", (), "gauge")]
    text = "".join(iter_text_families(families_of(out, True), "1.x"))
    assert 'x_count_total{a="2",z="1"} 4.0' in text.splitlines()


# --- caching -------------------------------------------------------------------------------

def test_steady_state_runs_no_regex_and_follows_values():
    engine = RuleEngine(parse_config(DUPLICATE_RULES))
    first = engine.samples([bean("d:type=A,name=x", ("Value", 1))])
    assert (engine.stats.cache_misses, engine.stats.cache_hits) == (1, 0)
    again = engine.samples([bean("d:type=A,name=x", ("Value", 1))])
    assert again[0] is first[0]  # unchanged value: the same Sample object
    changed = engine.samples([bean("d:type=A,name=x", ("Value", 7))])
    assert changed[0].value == 7.0
    assert (engine.stats.cache_misses, engine.stats.cache_hits) == (1, 2)
    assert engine.cached_leaves() == engine.stats.cached_leaves == 1
    engine.samples([bean("d:type=A,name=y", ("Value", 1)), bean("d:type=A,name=z", ("Value", 1), ("Unit", "s"))])
    assert engine.stats.cached_leaves == 3
    engine.samples([bean("d:type=A,name=y", ("Value", 1))])
    assert engine.cached_leaves() == engine.stats.cached_leaves == 1  # MBeans that went away left the cache


def test_value_dependent_rules_are_rerun_every_poll():
    rules = """
rules:
- pattern: 'kafka.server<type=KafkaServer, name=BrokerState><>Value: (\\d+)'
  name: kafka_server_broker_state
  value: 1
  labels:
    state: "$1"
- pattern: 'kafka.server<type=(.+), name=(.+)><>Value'
  name: kafka_server_$1_$2
"""
    engine = RuleEngine(parse_config(rules))
    state = "kafka.server:type=KafkaServer,name=BrokerState"
    assert series(engine.samples([bean(state, ("Value", 3))])) == [("kafka_server_broker_state", (("state", "3"),), 1.0)]
    assert series(engine.samples([bean(state, ("Value", 7))])) == [("kafka_server_broker_state", (("state", "7"),), 1.0)]
    # `(\\d+)` needs no more than a digit: 1.5 is state 1, as jmx_exporter would say.
    assert series(engine.samples([bean(state, ("Value", 1.5))])) == [("kafka_server_broker_state", (("state", "1"),), 1.0)]
    # A value the first rule cannot match falls through to the cached second rule.
    assert series(engine.samples([bean(state, ("Value", -1))])) == [("kafka_server_KafkaServer_BrokerState", (), -1.0)]
    # Other leaves never pay for the value-dependent rule: it cannot match their names.
    other = bean("kafka.server:type=ReplicaManager,name=LeaderCount", ("Value", 5))
    engine.samples([other])
    hits = engine.stats.cache_hits
    engine.samples([other])
    assert engine.stats.cache_hits == hits + 1


def test_string_leaves_are_cached_per_value():
    rules = "rules:\n- pattern: 'd<type=T><>State: (\\w+)'\n  name: state\n  value: 1\n  labels: {s: $1}\n"
    engine = RuleEngine(parse_config(rules))
    for value in ("RUNNING", "STOPPED", "RUNNING"):
        assert engine.samples([bean("d:type=T", ("State", value))])[0].labels == (("s", value),)
    assert (engine.stats.cache_misses, engine.stats.cache_hits) == (2, 1)


SOUNDNESS_RULES = """
rules:
- pattern: 'd<type=T, name=(\\w+)><>Value: (\\d)$'
  name: single_digit_$1
  labels: {digit: $2}
- pattern: 'd<type=T, name=(\\w+)><>Value: (-?)(.+)E(.+)'
  name: scientific_$1
  labels: {sign: $2, exponent: $4}
- pattern: 'd<type=T, name=(\\w+)><>(Count|Value)'
  name: plain_$1_$2
- pattern: 'd<type=T, name=(\\w+)><>(.+): (NaN|-?Infinity)'
  name: special_$1
  value: 0
- pattern: 'd<type=T, name=(\\w+)><>(.+): (.+)'
  name: any_$1_$3
"""


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b"]), st.sampled_from(["Value", "Count", "Other"]), NUMBERS),
                min_size=1, max_size=8))
def test_cached_engine_agrees_with_a_fresh_engine_every_poll(polls):
    config = parse_config(SOUNDNESS_RULES)
    cached = RuleEngine(config)
    for name, attr, value in polls:
        mbeans = [bean(f"d:type=T,name={name}", (attr, value))]
        expected = RuleEngine(config).samples(mbeans)
        got = cached.samples(mbeans)
        assert series(got) == series(expected) or all(
            math.isnan(g.value) and math.isnan(e.value) for g, e in zip(got, expected))


# --- memory: one object per repeated text ----------------------------------------------------

def test_series_of_different_families_share_equal_label_and_help_objects():
    """At 40,000 partitions every per-partition family repeats the same topic, partition and
    help texts; the engine keeps one object of each (the sidecar's memory depends on it)."""
    rules = """
rules:
- pattern: kafka.(\\w+)<type=(.+), name=(.+), topic=(.+), partition=(.*)><>Value
  name: kafka_$1_$2_$3
  labels:
    topic: "$4"
    partition: "$5"
"""
    mbeans = [bean(f"kafka.{d}:type={t},name={n},topic=orders,partition=3", ("Value", v))
              for d, t, n, v in (("cluster", "Partition", "UnderReplicated", 0), ("cluster", "Partition", "AtMinIsr", 1),
                                 ("log", "Log", "Size", 10), ("log", "Log", "LogEndOffset", 20))]
    out = run(rules, *mbeans)
    assert [s.name for s in out] == ["kafka_cluster_Partition_UnderReplicated", "kafka_cluster_Partition_AtMinIsr",
                                     "kafka_log_Log_Size", "kafka_log_Log_LogEndOffset"]
    assert all(s.labels == (("partition", "3"), ("topic", "orders")) for s in out)  # labels: sorted, as jmx_exporter's TreeMap
    assert len({id(s.labels) for s in out}) == 1
    cluster = [s for s in out if s.name.startswith("kafka_cluster")]
    assert cluster[0].help == cluster[1].help.replace("AtMinIsr", "UnderReplicated")
    again = run(rules, bean("kafka.cluster:type=Partition,name=AtMinIsr,topic=orders,partition=4", ("Value", 1)),
                mbeans[1])
    assert again[0].help is again[1].help  # same family, same default help: one object
