"""Table members a rule matched alike share one outcome (exporter/rule_engine/shapes.py): the bytes
stay those of the same MBeans read one by one, whatever the topics are named and whatever the
rule does with them, and the outcome is made once per shape, not once per member."""
from __future__ import annotations

import pytest

from tests.exporter.test_rules_tables import RULES, assert_as_one_by_one, counted_while_polled

# topics named like what rules write or match: fixed label values ("under", "x"), the tables' own
# key values ("Partition", "Size", "Value"), partition numbers, texts a template puts around them
TOPICS = ("under", "x", "Partition", "Size", "Value", "1", "0", "t-x", "orders", "kafka.log")
MEMBERS = sorted((t, p) for t in TOPICS for p in range(3))

USES = """
lowercaseOutputName: true
rules:
  # the topic in the name, the help and part of a label value: one outcome per topic
  - pattern: kafka.cluster<type=Partition, name=UnderReplicated, topic=(.+), partition=(.*)><>Value
    name: kafka_under_$1
    help: "under replicated in $1"
    labels: {kind: under, t: "t-$1", partition: "$2"}
  # the partition as the value, and the topic as a label's name
  - pattern: kafka.cluster<type=Partition, name=InSyncReplicasCount, topic=(.+), partition=(.*)><>Value
    name: kafka_isr_fixed
    value: "$2"
    labels: {"$1": "v", topic: "$1"}
  # the whole match
  - pattern: kafka.log<type=Log, name=Size, topic=(.+), partition=(.*)><>Value
    name: kafka_log_size
    labels: {whole: "$0", topic: "$1"}
  # fixed labels some topics are named like, and a group that is not the topic
  - pattern: kafka.log<type=Log, name=(LogEndOffset), topic=(.+), partition=(.*)><>Value
    name: kafka_log_end
    labels: {a: "x", b: "Size", name: "$1", topic: "$2", partition: "$3"}
  # a name from a group that is empty for some members, and a value that does not parse for some
  - pattern: kafka.cluster<type=Partition, name=Ratio, topic=(t-)?(.+), partition=(.*)><>Value
    name: "$1"
    value: "$3.5"
"""


@pytest.mark.parametrize("naming", ["0.x", "1.x"])
@pytest.mark.parametrize("rules", ["uses", "strimzi", "corners", "none"])
def test_members_sharing_a_shape_render_exactly_as_one_by_one(rules, naming):
    text = USES if rules == "uses" else RULES[rules]
    assert_as_one_by_one(text, naming, MEMBERS, 11, absent=0.0)


def _outcomes_made(rules: str, members: list, monkeypatch) -> int:
    return counted_while_polled(monkeypatch, "made", rules, members)


def test_an_outcome_is_made_once_per_shape_not_once_per_member(monkeypatch):
    members = [(f"topic-{t}", p) for t in range(20) for p in range(25)]  # 500 members a table, 5 tables
    # Strimzi's rules put the topic and partition in labels only: the first member of each table
    # makes its outcome, and a probe checks that it stands for the others
    assert _outcomes_made(RULES["strimzi"], members, monkeypatch) == 5 * 2


def test_a_rule_that_names_each_topic_makes_an_outcome_per_member(monkeypatch):
    members = [(f"topic-{t}", p) for t in range(4) for p in range(25)]
    rules = """
rules:
  - pattern: kafka.(\\w+)<type=(\\w+), name=(\\w+), topic=(.+), partition=(.*)><>Value
    name: kafka_$1_$4
    labels: {partition: "$5"}
"""
    # every member made; the one shape of each table probed once
    assert _outcomes_made(rules, members, monkeypatch) == 5 * (100 + 1)


def test_a_rule_whose_shapes_never_repeat_stops_being_probed(monkeypatch):
    members = [(f"topic-{t}", p) for t in range(4) for p in range(25)]
    rules = """
rules:
  - pattern: kafka.log<type=Log, name=Size, (.+)><>Value
    name: kafka_log_size
    labels: {member: "$1"}
"""
    # "topic=topic-0, partition=3": a shape per member; probed for the first 64 only
    assert _outcomes_made(rules, members, monkeypatch) == 100 + 64
