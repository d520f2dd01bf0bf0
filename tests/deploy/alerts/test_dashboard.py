"""The Grafana dashboard (helm/kafka-jmx-sidecar/files/dashboard.json): well-formed, and every
query of the rows the simulator can feed (dashboard_panels.ROWS) returns data from the real
Prometheus that scraped the sidecar during scenario-alerts.yml (conftest.alerts_run), Prometheus 2
and Prometheus 3 each, with the template variables set to "All". The reassignment progress row is checked against a real Kafka
cluster in tests/real/test_dashboard_vs_broker.py."""
from __future__ import annotations

import re

import pytest

from tests.deploy.alerts.dashboard_panels import (CLUSTER_MODE, PROGRESS_ROW, REAL_BROKER, ROWS, SIMULATOR, VARIABLES,
                                                  broker_joins,
                                                  dashboard, panels, numbers_returned, rows, targets)
from tests.deploy.alerts.test_rules_promtool import ALL as ALERT_RULES
from tests.e2e.prometheus_server import VERSIONS


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
    assert {f for f in ROWS.values()} == {SIMULATOR, REAL_BROKER, CLUSTER_MODE}
    cells = set()  # no two panels cover the same grid cell, none is wider than the grid
    for p in panels(d):
        g = p["gridPos"]
        assert g["x"] + g["w"] <= 24, p["title"]
        mine = {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}
        assert not cells & mine, f"{p['title']} overlaps another panel"
        cells |= mine
    variables = {v["name"]: v for v in d["templating"]["list"]}
    assert list(variables) == ["datasource", *VARIABLES]
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    for name in VARIABLES:
        assert variables[name]["type"] == "query" and variables[name]["allValue"] == ".*"
        assert variables[name]["includeAll"] and variables[name]["current"]["value"] == ["$__all"]
    # cluster and broker are the broker info series' ids (no per-partition label_values)
    for name, label in (("cluster", "cluster_id"), ("broker", "broker_id")):
        assert re.fullmatch(rf"label_values\(kafka_jmx_sidecar_broker_info\b.*, {label}\)",
                            variables[name]["query"]["query"]), name
    for p in panels(d):
        if p["type"] == "row":
            continue
        assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, p["title"]
        assert p["targets"], p["title"]
        for t in p["targets"]:
            # every variable a query uses is defined, and matched with =~ (All is a regular expression)
            for used in re.findall(r"\$([a-z_]\w*)", t["expr"]):  # not label_replace's $1
                assert used == "__rate_interval" or used in variables, (p["title"], used)
            assert not re.search(r'[^=!]=\s*"\$', t["expr"]), (p["title"], t["expr"])


def test_every_query_filters_and_names_brokers_through_one_join():
    """Each query joins the broker info series the same way (cluster, namespace and broker
    filters, legends by broker id, a target without the series kept under its address): one
    join, written once per query, never a variant of it."""
    joins = {}
    for p in panels(dashboard()):
        for t in p.get("targets", []):
            found = broker_joins(t["expr"])
            assert found, (p["title"], t["expr"])
            joins.update((j, p["title"]) for j in found)
    assert len(joins) == 1, joins
    (join,) = joins
    for variable in VARIABLES:
        assert f'=~"${variable}"' in join


def test_no_query_matches_le_or_quantile_by_value():
    """Prometheus 3 stores a classic histogram's `le` and a summary's `quantile` in its own float
    form (`le="1"` becomes `le="1.0"`), Prometheus 2 as the target wrote them: a matcher on their
    value could select a bucket on one and nothing on the other. The dashboard and the alerts only
    group by `le` (histogram_quantile) and never match it."""
    exprs = [t["expr"] for p in panels(dashboard()) for t in p.get("targets", [])]
    exprs += [rule["expr"] for _, rule in ALERT_RULES]
    assert any(re.search(r"\ble\b", e) for e in exprs)  # the check looks at the poll-duration quantiles
    for expr in exprs:
        assert not re.search(r"\b(le|quantile)\s*(=|!=|=~|!~)", expr), expr


def test_the_progress_row_is_left_to_the_real_broker_test():
    """The split is by row, and the row named here holds the progress series (whose data the
    simulator cannot make): moving it or renaming it must be a conscious change."""
    progress = dict((row["title"], members) for row, members in rows(dashboard()) if row)[PROGRESS_ROW]
    exprs = " ".join(t["expr"] for p in progress for t in p["targets"])
    for series in ("kafka_reassignment_partition_remaining_bytes", "kafka_reassignment_partition_eta_seconds",
                   "kafka_reassignment_max_lag_bytes", "kafka_reassignment_throttle_used_ratio",
                   "kafka_replication_throttled_rate_bytes_per_second", "kafka_replication_throttled_replicas"):
        assert series in exprs, series
    assert len(targets(SIMULATOR)) + len(targets(REAL_BROKER)) + len(targets(CLUSTER_MODE)) == \
        sum(len(p.get("targets", [])) for p in panels(dashboard()))


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("where,expr", targets(SIMULATOR), ids=[w for w, _ in targets(SIMULATOR)])
def test_every_query_returned_data_during_the_scenario(alerts_run, where, expr, version):
    run = alerts_run
    numbers = numbers_returned(run.proms[version], expr, run.started, run.ended)
    assert numbers, f"{where}: no data in the scenario ({expr})"


@pytest.mark.parametrize("version", VERSIONS)
def test_a_query_without_data_fails_the_check(alerts_run, version):
    """The check above can fail: the reassignment progress series need the Admin API's
    DescribeLogDirs, which the simulator does not answer, so the scenario has none of them."""
    run = alerts_run
    assert not run.proms[version].query_range("kafka_reassignment_partition_remaining_bytes", run.started, run.ended, 1)
