"""Which rules cannot tell two numbers apart (exporter/rule_engine/value_blindness.py)."""
import pytest
from hypothesis import given, settings

from kafka_jmx_sidecar.exporter.rule_engine import RuleEngine, parse_config, value_blind
from kafka_jmx_sidecar.exporter.base.java_text import java_str

from .rule_runs import NUMBERS, bean


@pytest.mark.parametrize("pattern, blind", [
    ("kafka.server<type=(.+), name=(.+)><>Value", True),
    ("kafka.(\\w+)<type=(.+), name=(.+)PerSec\\w*><>Count", True),  # 't' is in "Infinity", but "Coun" is not
    ("kafka.(\\w+)<type=(.+), name=(.+)><>(Count|Value)", True),
    ("kafka.(\\w+)<type=(.+), name=(.+)><>(\\d+)thPercentile", True),
    ("kafka.server<type=(.+), listener=(.+), networkProcessor=(.+)><>(.+):", True),
    ("(.+-total|.+-max):", True),
    ("kafka.server<type=(.+), listener=(.+), networkProcessor=(.+)><>(.+)", False),  # (.+) takes the value
    ("kafka.server<type=raft-metrics><>(current-state): (.+)", False),
    ("<>Value: 0", False),
    ("<>Value: ", True),
    ("Value(?=: 1)", False),  # lookahead
    ("Value$", False),
    ("(?<=<>)Value", True),  # lookbehind only sees what precedes
    ("Valu[e0-9]", True),  # a digit there would need "Valu" right before the number, not ": "
    ("Value: [0-9]", False),
    ("(?i)VALUE", True),
    ("(?i)COUNT", True),
    ("(?i)<>COUN(T|X)", True),
    ("x*", False),  # can match the empty string anywhere
    ("Count: -?\\d+", False),
])
def test_value_blind(pattern, blind):
    rule = parse_config(f"rules:\n- pattern: '{pattern}'\n  name: m\n").rules[0]
    assert value_blind(rule) is blind


def test_a_template_with_group_zero_sees_the_value():
    rule = parse_config("rules:\n- pattern: 'd<type=T><>Value'\n  name: m\n  labels: {all: $0}\n").rules[0]
    assert value_blind(rule) is False
    engine = RuleEngine(parse_config("rules:\n- pattern: 'd<type=T><>Value'\n  name: m\n  labels: {all: $0}\n"))
    assert engine.samples([bean("d:type=T", ("Value", 1))])[0].labels == (("all", "d<type=T><>Value: 1"),)
    assert engine.samples([bean("d:type=T", ("Value", 2))])[0].labels == (("all", "d<type=T><>Value: 2"),)


def test_rules_without_pattern_or_with_cache_are_blind():
    config = parse_config("rules:\n- cache: true\n  pattern: 'V: (.+)'\n  name: m\n- {}\n")
    assert [value_blind(r) for r in config.rules] == [True, True]


def _shipped_rules():
    from kafka_jmx_sidecar.exporter.rule_engine import load_config
    from .refdump import RULES
    return [r for f in ("strimzi-kafka-metrics.yml", "confluent-kafka-broker.yml")
            for r in load_config(RULES / f).rules]


SHIPPED = _shipped_rules()
HEADS = [
    "kafka.server<type=ReplicaManager, name=UnderReplicatedPartitions><>Value: ",
    "kafka.cluster<type=Partition, name=UnderMinIsr, topic=orders, partition=3><>Value: ",
    "kafka.server<type=BrokerTopicMetrics, name=BytesInPerSec, topic=orders><>Count: ",
    "kafka.network<type=RequestMetrics, name=TotalTimeMs, request=Produce><>99thPercentile: ",
    "kafka.server<type=socket-server-metrics, listener=PLAINTEXT, networkProcessor=0><>io-ratio: ",
    "kafka.server<type=raft-metrics><>commit-latency-max: ",
    "kafka.server<type=KafkaRequestHandlerPool, name=RequestHandlerAvgIdlePercent><>MeanRate: ",
]


@settings(max_examples=40, deadline=None)
@given(NUMBERS)
def test_value_blind_rules_of_the_shipped_files_really_are(number):
    """The proof checked by brute force: a blind rule gives the same match for every number."""
    assert sum(value_blind(r) for r in SHIPPED) >= len(SHIPPED) - 8
    for rule in SHIPPED:
        if not value_blind(rule) or rule.regex is None or rule.cache:
            continue
        for head in HEADS:
            reference = rule.regex.fullmatch(head + "0")
            other = rule.regex.fullmatch(head + java_str(number))
            assert (reference is None) == (other is None), (rule.pattern, head)
            if reference is not None:
                assert reference.groups() == other.groups(), (rule.pattern, head, number)
