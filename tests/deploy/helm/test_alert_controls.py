"""The chart's controls over its alerts (prometheusRule.*): alerts disabled by name, per-alert `for`
and severity, labels and annotations on every alert, the runbook base URL, the grouping labels of the
per-topic and per-cluster alerts and the opt-in per-partition group. Rendered by the Helm library
(chart.render); the rendered rules go through the real promtool where their meaning is at stake."""
from __future__ import annotations

import shutil
import subprocess

import helm_python
import pytest
import yaml

from tests.deploy.helm.chart import CHART, manifest_errors, one, render

FILES = CHART / "files"
BASE = {"jmx": {"hostPort": "kafka-0:9999"}}


def plain(name: str) -> list[dict]:
    return yaml.safe_load((FILES / name).read_text())["groups"]


SHIPPED, PER_PARTITION = plain("prometheus-rules.yaml"), plain("prometheus-rules-per-partition.yaml")


def groups(**rule_values) -> list[dict]:
    doc = one(render({**BASE, "prometheusRule": {"enabled": True, **rule_values}}), "PrometheusRule")
    assert manifest_errors(doc) == []
    return doc["spec"]["groups"]


def rules(groups_: list[dict]) -> dict[str, dict]:
    return {r["alert"]: r for g in groups_ for r in g["rules"]}


def promtool(*args: str) -> subprocess.CompletedProcess:
    if not shutil.which("promtool"):
        raise RuntimeError("promtool is not installed: run scripts/ensure-system-deps --test")
    return subprocess.run(["promtool", *args], capture_output=True, text=True, timeout=120)


def test_by_default_the_shipped_groups_as_they_are_without_the_per_partition_alerts():
    assert groups() == SHIPPED
    assert groups(perPartitionAlerts=True) == SHIPPED + PER_PARTITION


def test_alerts_disabled_by_name_are_left_out_and_an_emptied_group_too():
    sidecar = [r["alert"] for g in SHIPPED if g["name"] == "kafka-jmx-sidecar" for r in g["rules"]]
    got = groups(disabled={"KafkaReassignmentStalled": True, "KafkaActiveControllerCount": True,
                           "KafkaTopicUnderMinIsr": False, **dict.fromkeys(sidecar, True)})
    expected = rules(SHIPPED)
    for name in ["KafkaReassignmentStalled", "KafkaActiveControllerCount", *sidecar]:
        del expected[name]
    assert rules(got) == expected
    assert [g["name"] for g in got] == ["kafka-health"]
    # a per-partition alert can be turned off while the group is on
    on = rules(groups(perPartitionAlerts=True, disabled={"KafkaPartitionUnavailable": True}))
    assert "KafkaPartitionUnavailable" not in on and "KafkaAtMinIsrPartition" in on


@pytest.mark.parametrize("key,value", [("disabled", True), ("customRules", {"for": "1m"})])
def test_an_unknown_alert_name_fails_naming_the_value(key, value):
    with pytest.raises(helm_python.HelmError) as e:
        groups(**{key: {"KafkaUnderReplicatedPartition": value, "KafkaUnderReplicatedPartitionz": value}})
    # the per-partition alert's name is known even with its group off; the misspelt one is not
    assert f"prometheusRule.{key}.KafkaUnderReplicatedPartitionz: the chart has no alert named" in str(e.value)
    assert "KafkaUnderReplicatedPartitions," in str(e.value)  # the names it has


def test_per_alert_for_and_severity():
    got = rules(groups(customRules={"KafkaUnderReplicatedPartitions": {"for": "15m", "severity": "critical"},
                                    "KafkaOfflineLogDirectories": {"severity": "page"},
                                    "KafkaAtMinIsrPartitions": {"for": "1h"}}))
    shipped = rules(SHIPPED)
    assert (got["KafkaUnderReplicatedPartitions"]["for"], got["KafkaUnderReplicatedPartitions"]["labels"]) == \
        ("15m", {"severity": "critical"})
    assert (got["KafkaOfflineLogDirectories"]["for"], got["KafkaOfflineLogDirectories"]["labels"]) == \
        (shipped["KafkaOfflineLogDirectories"]["for"], {"severity": "page"})
    assert got["KafkaAtMinIsrPartitions"]["for"] == "1h"
    assert got["KafkaAtMinIsrPartitions"]["labels"] == shipped["KafkaAtMinIsrPartitions"]["labels"]
    changed = {"KafkaUnderReplicatedPartitions", "KafkaOfflineLogDirectories", "KafkaAtMinIsrPartitions"}
    assert {k: v for k, v in got.items() if k not in changed} == {k: v for k, v in shipped.items() if k not in changed}


@pytest.mark.parametrize("override", [{"for": "5 minutes"}, {"severity": ""}, {"labels": {"team": "a"}}])
def test_the_schema_refuses_a_bad_override(override):
    with pytest.raises(helm_python.HelmError, match="customRules"):
        groups(customRules={"KafkaUnderReplicatedPartitions": override})


def test_labels_and_annotations_on_every_alert_its_own_win_a_clash():
    additional = [{"alert": "Mine", "expr": "vector(1)", "labels": {"severity": "info"}}]
    got = groups(perPartitionAlerts=True, additionalRules=additional,
                 additionalRuleLabels={"team": "streaming", "severity": "none"},
                 additionalRuleAnnotations={"dashboard": "https://grafana/d/kafka", "summary": "theirs"})
    shipped = rules(SHIPPED + PER_PARTITION)
    assert got[-1]["rules"] == additional  # the user's own rules stay as written
    for name, rule in rules(got[:-1]).items():
        assert rule["labels"] == {**shipped[name]["labels"], "team": "streaming"}
        assert rule["annotations"] == {**shipped[name]["annotations"], "dashboard": "https://grafana/d/kafka"}
    assert len(shipped) == len(rules(got[:-1]))


@pytest.mark.parametrize("base", ["https://wiki.example.com/kafka/runbooks", "https://wiki.example.com/kafka/runbooks/"])
def test_the_runbook_base_url(base):
    got = rules(groups(perPartitionAlerts=True, runbookUrl=base))
    assert {n: r["annotations"]["runbook_url"] for n, r in got.items()} == \
        {n: f"https://wiki.example.com/kafka/runbooks/{n}.md" for n in got}


def test_aggregation_labels_join_every_per_topic_and_per_cluster_grouping():
    got = rules(groups(additionalAggregationLabels=["kafka_cluster", "region"]))
    shipped = rules(SHIPPED)
    grouped = {n for n, r in shipped.items() if "(namespace, job" in r["expr"]}
    assert grouped == {"KafkaTopicUnderMinIsr", "KafkaOfflinePartitions", "KafkaActiveControllerCount",
                       "KafkaUncleanLeaderElection", "KafkaOfflinePartitionsEligibleLeader",
                       "KafkaOfflinePartitionsNoEligibleLeader"}
    for name, rule in got.items():
        old = shipped[name]["expr"]
        assert rule["expr"] == old.replace("(namespace, job", "(namespace, job, kafka_cluster, region")
    assert "count by (namespace, job, kafka_cluster, region, topic)" in got["KafkaTopicUnderMinIsr"]["expr"]


def test_aggregation_labels_tell_two_clusters_of_one_job_apart(tmp_path):
    """Two clusters scraped by one job, each with its one active controller: grouped by namespace
    and job they read as two active controllers; with their kafka_cluster label, one each."""
    for labels, fires in (([], True), (["kafka_cluster"], False)):
        rules_file = tmp_path / f"rules-{len(labels)}.yml"
        rules_file.write_text(yaml.safe_dump({"groups": groups(additionalAggregationLabels=labels)}))
        run = promtool("check", "rules", str(rules_file))
        assert run.returncode == 0, run.stdout + run.stderr
        series = [{"series": f'kafka_controller_kafkacontroller_activecontrollercount{{instance="{c}-{n}:9404",'
                             f'job="kafka",namespace="kafka",kafka_cluster="{c}"}}', "values": v}
                  for c in ("east", "west") for n, v in ((0, "1x5"), (1, "0x5"))]
        firing = ('ALERTS{alertname="KafkaActiveControllerCount",alertstate="firing",job="kafka",'
                  'namespace="kafka",severity="critical"}')
        test = {"rule_files": [str(rules_file)], "evaluation_interval": "1m", "tests": [{
            "interval": "1m", "input_series": series,
            "promql_expr_test": [{"expr": 'ALERTS{alertstate="firing"}', "eval_time": "3m",
                                  "exp_samples": [{"labels": firing, "value": 1}] if fires else []}]}]}
        test_file = tmp_path / f"test-{len(labels)}.yml"
        test_file.write_text(yaml.safe_dump(test))
        run = promtool("test", "rules", str(test_file))
        assert run.returncode == 0, run.stdout + run.stderr
