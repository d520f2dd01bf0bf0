"""Table members no rule can tell apart are searched once per class (exporter/rule_engine/alike.py):
the bytes stay those of the same MBeans read one by one, for topics and rules built so that
characters the class argument merges or keeps apart decide the match."""
from __future__ import annotations

import re

import pytest

from kafka_jmx_sidecar.exporter.rule_engine.alike import Alike
from kafka_jmx_sidecar.exporter.rule_engine.config import parse_config
from tests.exporter.test_rules_tables import RULES, assert_as_one_by_one, counted_while_polled, polled

# topics alike but for one character a rule below tests: a digit literal, a digit range, case,
# a word boundary ("." and "_"), two literals ("1", "a"), a prefix a rule captures apart; and
# numbers (topic "1")
TOPICS = ("orders-1", "orders-2", "orders-7", "orders-12", "orders-5", "Orders-1", "a_b", "a.b", "x1y", "x9y", "xay", "ord",
          "x1", "xa", "1", "7", "orders")
MEMBERS = sorted((t, p) for t in TOPICS for p in (0, 1, 5, 9, 10, 11, 21))

TESTS = r"""
lowercaseOutputName: true
rules:
  # a digit literal in the topic and the partition: 1 and 7 apart, 1 and 11 apart
  - pattern: kafka.cluster<type=Partition, name=UnderReplicated, topic=(.*1), partition=(1.*)><>Value
    name: kafka_under_ones
    labels: {topic: "$1", partition: "$2"}
  - pattern: kafka.cluster<type=Partition, name=UnderReplicated, topic=(.+), partition=(.*)><>Value
    name: kafka_under
    labels: {topic: "$1", partition: "$2"}
  # a range: digits 0-4 and 5-9 apart
  - pattern: kafka.cluster<type=Partition, name=InSyncReplicasCount, topic=(.+[0-4]), partition=(.*)><>Value
    name: kafka_isr_low
    labels: {topic: "$1", partition: "$2"}
  # part of the topic in a group, and a word boundary
  - pattern: kafka.log<type=Log, name=Size, topic=(\w+)-(\d+), partition=(.*)><>Value
    name: kafka_log_size_numbered
    labels: {stem: "$1", n: "$2", partition: "$3"}
  - pattern: kafka.log<type=Log, name=Size, topic=(a\b.*), partition=(.*)><>Value
    name: kafka_log_size_a
    labels: {topic: "$1", partition: "$2"}
  - pattern: kafka.log<type=Log, name=Size, topic=(.+), partition=(.*)><>Value
    name: kafka_log_size
    labels: {topic: "$1", partition: "$2"}
  # a fixed group some partitions are named like ("1" in the name) and a topic group
  - pattern: kafka.log<type=Log, name=LogEndOffset, topic=(.+), partition=(.*)><>Value
    name: kafka_log_end
    labels: {topic: "$1", partition: "$2", one: "1"}
  - pattern: kafka.cluster<type=Partition, name=(Ratio), topic=(.+), partition=(.*)><>Value
    name: kafka_ratio
    labels: {name: "$1", topic: "$2", partition: "$3"}
"""


@pytest.mark.parametrize("naming", ["0.x", "1.x"])
@pytest.mark.parametrize("rules", ["tests", "strimzi", "health", "corners", "none"])
def test_members_searched_by_class_render_exactly_as_one_by_one(rules, naming):
    text = TESTS if rules == "tests" else RULES[rules]
    assert_as_one_by_one(text, naming, MEMBERS, 3, absent=0.05)


def test_the_tests_rules_reach_their_corners():
    (_, got, _, _, _), = polled(TESTS, "0.x", MEMBERS, 3, polls=1, absent=0.0)
    for series in ('kafka_under_ones{partition="11",topic="orders-1",}', 'kafka_under{partition="11",topic="orders-7",}',
                   'kafka_under{partition="5",topic="orders-1",}', 'kafka_isr_low{partition="0",topic="orders-12",}',
                   'kafka_log_size_numbered{n="12",partition="5",stem="orders",}',
                   'kafka_log_size_a{partition="0",topic="a.b",}', 'kafka_log_size{partition="0",topic="a_b",}'):
        assert series in got, series
    for absent in ('kafka_isr_low{partition="0",topic="orders-7",}', 'kafka_log_size_a{partition="0",topic="a_b",}'):
        assert absent not in got, absent


def _searched(rules: str, members: list, monkeypatch) -> int:
    return counted_while_polled(monkeypatch, "search_members", rules, members,
                                lambda table, indices, leaf: len(indices))


def test_strimzis_rules_search_one_member_per_class(monkeypatch):
    # 20 topics named to one scheme, partitions of one and two digits: two classes a table
    members = [(f"topic-{t}", p) for t in range(10, 30) for p in range(25)]
    assert _searched(RULES["strimzi"], members, monkeypatch) == 5 * 2


def test_a_rule_that_keeps_the_topics_apart_searches_each(monkeypatch):
    members = [(f"topic-{t}", p) for t in range(10, 14) for p in range(3)]
    rules = r"""
rules:
  - pattern: kafka.(\w+)<type=(\w+), name=(\w+), topic=topic-1(\d), partition=(.*)><>Value
    name: kafka_$1_$3
    labels: {n: "$4", partition: "$5"}
"""
    # the group holds part of the topic: the first member of the one class stands for no other
    assert _searched(rules, members, monkeypatch) == 5 * 12


def test_characters_are_alike_unless_a_rule_tests_them_apart():
    alike = Alike.of(r.regex for r in parse_config(TESTS).rules)
    assert alike.canonical("orders-22") == alike.canonical("orders-34") != alike.canonical("orders-52")
    assert alike.canonical("orders-7") != alike.canonical("orders-1")  # the "1" literal
    assert alike.canonical("xa") != alike.canonical("x1")  # two literals
    assert alike.canonical("a_b") != alike.canonical("a.b")  # "\b": "_" is a word character
    assert alike.canonical("jq") == alike.canonical("wv")  # letters no rule names


@pytest.mark.parametrize("pattern", [r"(\w)\1", r"(?i)topic=(.+)", r"topic=(?i:x)(.+)", r"(a)?(?(1)b|c)"])
def test_regexes_that_compare_or_fold_characters_leave_every_member_searched(pattern):
    assert Alike.of([re.compile(pattern)]) is None
