"""The alert rules file checked and unit-tested by the real promtool (Debian `prometheus` package):
`promtool check rules` accepts it as it is, and `promtool test rules` runs rules-test.yml, where
every alert fires when it should and stays silent where it should (the reassignment cases too)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
RULES = REPO / "helm" / "kafka-jmx-sidecar" / "files" / "prometheus-rules.yaml"
UNIT_TESTS = Path(__file__).resolve().parent / "rules-test.yml"


def promtool(*args: str) -> subprocess.CompletedProcess:
    if not shutil.which("promtool"):
        raise RuntimeError("promtool is not installed: run scripts/ensure-system-deps --test")
    return subprocess.run(["promtool", *args], capture_output=True, text=True, timeout=120)


def alerts() -> list[dict]:
    return [r for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"] if "alert" in r]


def test_promtool_check_rules_accepts_the_file():
    run = promtool("check", "rules", str(RULES))
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"SUCCESS: {len(alerts())} rules found" in run.stdout


def test_promtool_unit_tests_pass():
    run = promtool("test", "rules", str(UNIT_TESTS))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "SUCCESS" in run.stdout and "FAILED" not in run.stdout


def test_a_broken_expectation_fails(tmp_path):
    """The unit tests can fail: one alert expected silent where it fires makes promtool exit 1."""
    tests = yaml.safe_load(UNIT_TESTS.read_text())
    tests["rule_files"] = [str(RULES)]
    case = next(c for t in tests["tests"] for c in t["alert_rule_test"]
                if c["alertname"] == "KafkaUnderMinIsrPartition" and c["exp_alerts"])
    case["exp_alerts"] = []
    broken = tmp_path / "broken-test.yml"
    broken.write_text(yaml.safe_dump(tests))
    run = promtool("test", "rules", str(broken))
    assert run.returncode == 1
    assert "alertname: KafkaUnderMinIsrPartition, time: 2m" in run.stderr
    assert 'severity="critical", topic="orders"' in run.stderr


@pytest.mark.parametrize("rule", alerts(), ids=lambda r: r["alert"])
def test_every_alert_is_labelled_annotated_and_unit_tested(rule):
    name = rule["alert"]
    assert name.startswith(("Kafka", "KafkaJmxSidecar"))
    assert rule["labels"]["severity"] in ("critical", "warning")
    assert {"summary", "description", "runbook"} <= set(rule["annotations"])
    assert "for" in rule
    # a `for:` chosen with its reason: a comment line right above it in the file
    text = RULES.read_text()
    block = text[text.index(f"alert: {name}\n"):]
    before_for = block[:block.index("        for:")].rstrip().splitlines()
    assert before_for[-1].strip().startswith("#"), f"{name}: no comment giving the reason for `for:`"
    cases = [c for t in yaml.safe_load(UNIT_TESTS.read_text())["tests"] for c in t["alert_rule_test"]
             if c["alertname"] == name]
    assert any(c["exp_alerts"] for c in cases), f"{name}: no unit test where it fires"
    assert any(not c["exp_alerts"] for c in cases), f"{name}: no unit test where it stays silent"
