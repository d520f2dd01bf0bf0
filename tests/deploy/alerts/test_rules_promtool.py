"""The alert rules files checked and unit-tested by the real promtool, Prometheus 2's (Debian
`prometheus` package) and Prometheus 3's (built by harness/programs.py): `promtool check rules`
accepts each as it is, and `promtool test rules` runs rules-test.yml, where every alert fires when
it should and stays silent where it should (the reassignment cases too). Where the two differ (a
range leaves out its first sample in Prometheus 3) a named test says how. Every alert links its
runbook page, which exists."""
from __future__ import annotations

import copy
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.e2e.prometheus_server import VERSIONS, promtool as promtool_of

REPO = Path(__file__).resolve().parents[3]
CHART = REPO / "helm" / "kafka-jmx-sidecar"
RULES = CHART / "files" / "prometheus-rules.yaml"
PER_PARTITION = CHART / "files" / "prometheus-rules-per-partition.yaml"
RULE_FILES = (RULES, PER_PARTITION)
UNIT_TESTS = Path(__file__).resolve().parent / "rules-test.yml"
RUNBOOKS = REPO / "docs" / "runbooks"


def promtool(*args: str, version: str = "2") -> subprocess.CompletedProcess:
    if version == "2" and not shutil.which("promtool"):
        raise RuntimeError("promtool is not installed: run scripts/ensure-system-deps --test")
    return subprocess.run([promtool_of(version), *args], capture_output=True, text=True, timeout=300)


def alerts(path: Path = RULES) -> list[dict]:
    return [r for g in yaml.safe_load(path.read_text())["groups"] for r in g["rules"] if "alert" in r]


ALL = [(path, rule) for path in RULE_FILES for rule in alerts(path)]


def runbook_base() -> str:
    """The chart's default runbook base URL (prometheusRule.runbookUrl), which the plain files use."""
    return yaml.safe_load((CHART / "values.yaml").read_text())["prometheusRule"]["runbookUrl"]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("path", RULE_FILES, ids=lambda p: p.name)
def test_promtool_check_rules_accepts_the_file(path, version):
    run = promtool("check", "rules", str(path), version=version)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"SUCCESS: {len(alerts(path))} rules found" in run.stdout


@pytest.mark.parametrize("version", VERSIONS)
def test_promtool_unit_tests_pass(version):
    run = promtool("test", "rules", str(UNIT_TESTS), version=version)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "SUCCESS" in run.stdout and "FAILED" not in run.stdout


@pytest.mark.parametrize("version,fires_at_14m", [("2", False), ("3", True)])
def test_prometheus_3_ranges_leave_out_their_first_sample(tmp_path, version, fires_at_14m):
    """rules-test.yml's stalled reassignment (bytes flat from the 5m sample, scraped every minute)
    at minute 14. Prometheus 2's 5m window is closed, [4m, 9m] at 9m still holds the 4m sample
    below the 5m one: the rate is 0 from 10m, the alert fires at 15m. Prometheus 3's leaves out its
    first sample, (4m, 9m] is already flat: pending from 9m, firing at 14m, one scrape interval
    sooner. The same rule file, each promtool's own answer."""
    tests = yaml.safe_load(UNIT_TESTS.read_text())
    group = copy.deepcopy(next(t for t in tests["tests"] for c in t["alert_rule_test"]
                               if c["alertname"] == "KafkaReassignmentStalled" and c["exp_alerts"]))
    firing = next(c for c in group["alert_rule_test"] if c["exp_alerts"])
    group["alert_rule_test"] = [{**firing, "eval_time": "14m",
                                 "exp_alerts": firing["exp_alerts"] if fires_at_14m else []}]
    path = tmp_path / "at-14m.yml"
    path.write_text(yaml.safe_dump({"rule_files": [str(RULES)], "tests": [group]}))
    run = promtool("test", "rules", str(path), version=version)
    assert run.returncode == 0, run.stdout + run.stderr


def test_a_broken_expectation_fails(tmp_path):
    """The unit tests can fail: one alert expected silent where it fires makes promtool exit 1."""
    tests = yaml.safe_load(UNIT_TESTS.read_text())
    tests["rule_files"] = [str(p) for p in RULE_FILES]
    case = next(c for t in tests["tests"] for c in t["alert_rule_test"]
                if c["alertname"] == "KafkaUnderMinIsrPartitions" and c["exp_alerts"])
    case["exp_alerts"] = []
    broken = tmp_path / "broken-test.yml"
    broken.write_text(yaml.safe_dump(tests))
    run = promtool("test", "rules", str(broken))
    assert run.returncode == 1
    assert "alertname: KafkaUnderMinIsrPartitions, time: 2m" in run.stderr
    assert 'instance="kafka-0:9404"' in run.stderr and 'severity="critical"' in run.stderr


def test_the_runbook_base_is_the_repositorys_docs():
    home = yaml.safe_load((CHART / "Chart.yaml").read_text())["home"]
    assert runbook_base() == f"{home}/blob/main/docs/runbooks"


def test_alert_names_are_unique_across_the_files():
    names = [rule["alert"] for _, rule in ALL]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("path,rule", ALL, ids=lambda x: x["alert"] if isinstance(x, dict) else x.stem)
def test_every_alert_is_labelled_annotated_and_unit_tested(path, rule):
    name = rule["alert"]
    assert name.startswith(("Kafka", "KafkaJmxSidecar"))
    assert rule["labels"]["severity"] in ("critical", "warning")
    assert set(rule["annotations"]) == {"summary", "description", "runbook_url"}
    assert rule["annotations"]["runbook_url"] == f"{runbook_base()}/{name}.md"
    page = RUNBOOKS / f"{name}.md"
    assert page.is_file(), f"{name}: no runbook page {page.relative_to(REPO)}"
    assert page.read_text().startswith(f"# {name}\n")
    assert "for" in rule
    # a `for:` chosen with its reason: a comment line right above it in the file
    text = path.read_text()
    block = text[text.index(f"alert: {name}\n"):]
    before_for = block[:block.index("        for:")].rstrip().splitlines()
    assert before_for[-1].strip().startswith("#"), f"{name}: no comment giving the reason for `for:`"
    cases = [c for t in yaml.safe_load(UNIT_TESTS.read_text())["tests"] for c in t["alert_rule_test"]
             if c["alertname"] == name]
    assert any(c["exp_alerts"] for c in cases), f"{name}: no unit test where it fires"
    assert any(not c["exp_alerts"] for c in cases), f"{name}: no unit test where it stays silent"


def test_every_runbook_page_belongs_to_an_alert():
    names = {rule["alert"] for _, rule in ALL}
    assert {p.stem for p in RUNBOOKS.glob("*.md")} - {"README"} == names
