"""docs/migration-from-jmx-exporter.md's table of names is what the rule engine makes: the shipped
rules, Strimzi's and Confluent's rule files (the project's reference copies, unchanged) over the
MBeans of a real Kafka 4.1 broker (the reference dump), MBean by MBean."""
from __future__ import annotations

import re

from kafka_jmx_sidecar.exporter.rule_engine import RuleEngine, load_config
from tests.deploy.helm.chart import REPO
from tests.exporter.refdump import KAFKA_41, RULES, descriptions_from_capture, jmx_exporter_order, read_dump

PAGE = REPO / "docs" / "migration-from-jmx-exporter.md"
ROW = re.compile(r"^\| `(kafka_[a-z_]+)` \| (.+?) \| (.+?) \|$", re.M)


def cell(text: str) -> set[str]:
    return {part.strip().strip("`") for part in text.split(",")}


def computed() -> dict[str, tuple[set[str], set[str]]]:
    capture = (KAFKA_41 / "jmx_exporter-0.17.2-standalone-metrics.txt").read_text(encoding="utf-8")
    mbeans = jmx_exporter_order(read_dump(descriptions_from_capture(capture)))
    shipped = load_config(REPO / "rules" / "kafka-health.yml")
    health = [m for m in mbeans if any(p.matches(m.name) for p in shipped.include_object_names)]
    engines = {"ours": RuleEngine(shipped),
               "strimzi": RuleEngine(load_config(RULES / "strimzi-kafka-metrics.yml")),
               "confluent": RuleEngine(load_config(RULES / "confluent-kafka-broker.yml"))}
    rows: dict[str, tuple[set[str], set[str]]] = {}
    for mbean in health:
        names = {k: {(s.name, frozenset(label for label, _ in s.labels)) for s in e.samples([mbean])}
                 for k, e in engines.items()}
        for ours in names["ours"]:
            row = rows.setdefault(ours[0], (set(), set()))
            for column, other in zip(row, ("strimzi", "confluent")):
                column.update("same" if theirs == ours else theirs[0] for theirs in names[other])
    return rows


def test_the_pages_table_of_names_is_what_the_rules_make():
    page = {m.group(1): (cell(m.group(2)), cell(m.group(3))) for m in ROW.finditer(PAGE.read_text())}
    expected = {name: (s or {"not served"}, c or {"not served"}) for name, (s, c) in computed().items()}
    assert page == expected
    # what the page says in words
    assert all(s == {"same"} for s, _ in expected.values())
    assert expected["kafka_server_replicamanager_isrshrinks_total"][1] == {"kafka_server_replicamanager_isrshrinkspersec"}
    assert expected["kafka_cluster_partition_underminisr"] == ({"same"}, {"same"})
