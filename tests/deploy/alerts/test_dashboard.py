"""The Grafana dashboard (helm/kafka-jmx-sidecar/files/dashboard.json): well-formed, and every panel
query returns data from the real Prometheus that scraped the sidecar during scenario-alerts.yml
(conftest.alerts_run), with the template variables set to "All"."""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
DASHBOARD = REPO / "helm" / "kafka-jmx-sidecar" / "files" / "dashboard.json"
ROWS = ["Cluster health", "Per-broker health", "Reassignment traffic and progress", "Sidecar health"]


def dashboard() -> dict:
    return json.loads(DASHBOARD.read_text())


def panels(d: dict) -> list[dict]:
    out = []
    for p in d["panels"]:
        out.append(p)
        out.extend(p.get("panels", []))  # a collapsed row holds its panels
    return out


def targets() -> list[tuple[str, str]]:
    return [(f'{p["title"]} / {t["refId"]}', t["expr"]) for p in panels(dashboard()) for t in p.get("targets", [])]


def substitute(expr: str) -> str:
    """As Grafana sends it with every variable at All (allValue .*) and a 1m rate interval."""
    return expr.replace("$__rate_interval", "1m").replace("$namespace", ".*").replace(
        "$instance", ".*").replace("$topic", ".*")


def test_dashboard_is_well_formed():
    d = dashboard()
    assert 36 <= d["schemaVersion"] <= 41
    ids = [p["id"] for p in panels(d)]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    assert [p["title"] for p in d["panels"] if p["type"] == "row"] == ROWS
    cells = set()  # no two panels cover the same grid cell, none is wider than the grid
    for p in panels(d):
        g = p["gridPos"]
        assert g["x"] + g["w"] <= 24, p["title"]
        mine = {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}
        assert not cells & mine, f"{p['title']} overlaps another panel"
        cells |= mine
    variables = {v["name"]: v for v in d["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    for name in ("namespace", "instance", "topic"):
        assert variables[name]["type"] == "query" and variables[name]["allValue"] == ".*"
    for p in panels(d):
        if p["type"] == "row":
            continue
        assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, p["title"]
        assert p["targets"], p["title"]
        for t in p["targets"]:
            # every variable a query uses is defined, and matched with =~ (All is a regular expression)
            for used in re.findall(r"\$(\w+)", t["expr"]):
                assert used == "__rate_interval" or used in variables, (p["title"], used)
            assert not re.search(r'[^=!]=\s*"\$', t["expr"]), (p["title"], t["expr"])


@pytest.mark.parametrize("where,expr", targets(), ids=[w for w, _ in targets()])
def test_every_query_returned_data_during_the_scenario(alerts_run, where, expr):
    run = alerts_run
    result = run.prom.query_range(substitute(expr), run.started, run.ended, 1)  # a bad query: HTTP 400
    numbers = [v for values in result.values() for _, v in values if not math.isnan(v)]
    assert numbers, f"{where}: no data in the scenario ({expr})"


def test_a_query_without_data_fails_the_check(alerts_run):
    """The check above can fail: the reassignment progress series need the Admin API's
    DescribeLogDirs, which the simulator does not answer, so the scenario has none of them."""
    run = alerts_run
    assert not run.prom.query_range("kafka_reassignment_partition_remaining_bytes", run.started, run.ended, 1)
