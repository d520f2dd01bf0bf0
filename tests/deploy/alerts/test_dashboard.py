"""The Grafana dashboard (helm/kafka-jmx-sidecar/files/dashboard.json): well-formed, and every
query of the rows the simulator can feed (dashboard_panels.ROWS) returns data from the real
Prometheus that scraped the sidecar during scenario-alerts.yml (conftest.alerts_run), with the
template variables set to "All". The reassignment progress row is checked against a real Kafka
cluster in tests/real/test_dashboard_vs_broker.py."""
from __future__ import annotations

import re

import pytest

from tests.deploy.alerts.dashboard_panels import (PROGRESS_ROW, REAL_BROKER, ROWS, SIMULATOR, dashboard, panels,
                                                  numbers_returned, rows, targets)


def test_dashboard_is_well_formed():
    d = dashboard()
    assert 36 <= d["schemaVersion"] <= 41
    ids = [p["id"] for p in panels(d)]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    # every panel sits in a row that one of the two tests feeds: none is left untested
    grouped = rows(d)
    assert [row["title"] if row else None for row, _ in grouped] == list(ROWS)
    for (row, members), following in zip(grouped, [*[r for r, _ in grouped[1:]], None]):
        assert members, f"row {row['title']} has no panel"
        for p in members:  # and it sits under its row on the grid, above the next one
            assert row["gridPos"]["y"] < p["gridPos"]["y"], p["title"]
            assert following is None or p["gridPos"]["y"] + p["gridPos"]["h"] <= following["gridPos"]["y"], p["title"]
    assert {f for f in ROWS.values()} == {SIMULATOR, REAL_BROKER}
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


def test_the_progress_row_is_left_to_the_real_broker_test():
    """The split is by row, and the row named here holds the progress series (whose data the
    simulator cannot make): moving it or renaming it must be a conscious change."""
    progress = dict((row["title"], members) for row, members in rows(dashboard()) if row)[PROGRESS_ROW]
    exprs = " ".join(t["expr"] for p in progress for t in p["targets"])
    for series in ("kafka_reassignment_partition_remaining_bytes", "kafka_reassignment_partition_eta_seconds",
                   "kafka_reassignment_max_lag_bytes", "kafka_reassignment_throttle_used_ratio",
                   "kafka_replication_throttled_rate_bytes_per_second", "kafka_replication_throttled_replicas"):
        assert series in exprs, series
    assert len(targets(SIMULATOR)) + len(targets(REAL_BROKER)) == sum(len(p.get("targets", []))
                                                                      for p in panels(dashboard()))


@pytest.mark.parametrize("where,expr", targets(SIMULATOR), ids=[w for w, _ in targets(SIMULATOR)])
def test_every_query_returned_data_during_the_scenario(alerts_run, where, expr):
    run = alerts_run
    numbers = numbers_returned(run.prom, expr, run.started, run.ended)
    assert numbers, f"{where}: no data in the scenario ({expr})"


def test_a_query_without_data_fails_the_check(alerts_run):
    """The check above can fail: the reassignment progress series need the Admin API's
    DescribeLogDirs, which the simulator does not answer, so the scenario has none of them."""
    run = alerts_run
    assert not run.prom.query_range("kafka_reassignment_partition_remaining_bytes", run.started, run.ended, 1)
