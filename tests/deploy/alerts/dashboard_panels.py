"""The Grafana dashboard's panels and queries, each with the row it sits in, and which test feeds
that row with data: the simulator scenario (tests/deploy/alerts/test_dashboard.py), a real Kafka
cluster with the Admin API (tests/real/test_dashboard_vs_broker.py), or the cluster-wide mode's
alert test (tests/deploy/alerts/test_alerts_cluster_mode.py: the Admin API answered from a model). A row is the marker: a new
row must be given to one of them (test_dashboard_is_well_formed checks), so no panel goes untested."""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
DASHBOARD = REPO / "helm" / "kafka-jmx-sidecar" / "files" / "dashboard.json"

SIMULATOR, REAL_BROKER, CLUSTER_MODE = "simulator", "real broker", "cluster mode"
ELR_ROW = "Eligible leader replicas (cluster-wide mode, semantics kafka-4.1)"
# The progress series need the Admin API (DescribeLogDirs, DescribeConfigs), which the simulator does not answer.
PROGRESS_ROW = "Reassignment progress (needs sidecar.admin)"
ROWS = {  # in the dashboard's order
    "Cluster health": SIMULATOR,
    "Per-broker health": SIMULATOR,
    "Reassignment traffic": SIMULATOR,
    PROGRESS_ROW: REAL_BROKER,
    "Sidecar health": SIMULATOR,
    ELR_ROW: CLUSTER_MODE,
}


def dashboard() -> dict:
    return json.loads(DASHBOARD.read_text())


def panels(d: dict) -> list[dict]:
    out = []
    for p in d["panels"]:
        out.append(p)
        out.extend(p.get("panels", []))  # a collapsed row holds its panels
    return out


def rows(d: dict) -> list[tuple[dict | None, list[dict]]]:
    """Each row with the panels under it (an open row's panels follow it in the list, a collapsed
    row holds them); panels above the first row come with None."""
    out: list[tuple[dict | None, list[dict]]] = [(None, [])]
    for p in d["panels"]:
        if p["type"] == "row":
            out.append((p, list(p.get("panels", []))))
        else:
            out[-1][1].append(p)
    return out if out[0][1] else out[1:]


def targets(fed_by: str) -> list[tuple[str, str]]:
    """(panel title / refId, expr) of every query in the rows `fed_by` feeds."""
    return [(f'{p["title"]} / {t["refId"]}', t["expr"])
            for row, members in rows(dashboard()) if row is not None and ROWS.get(row["title"]) == fed_by
            for p in members for t in p.get("targets", [])]


VARIABLES = ("cluster", "namespace", "broker")  # the dashboard's filters, besides the data source


def substitute(expr: str) -> str:
    """As Grafana sends it with every variable at All (allValue .*) and a 1m rate interval
    (label_replace's `$1` is PromQL's own)."""
    return re.sub(r"\$(\w+)", lambda m: {"__rate_interval": "1m"}.get(m[1], ".*" if m[1] in VARIABLES else m[0]),
                  expr)


BROKER_JOIN = "* on (instance) group_left (broker_id) "


def _group_end(expr: str, i: int) -> int:
    """Just past the parenthesized group opening at or after `i`."""
    i = expr.index("(", i)
    depth = 0
    for j in range(i, len(expr)):
        depth += {"(": 1, ")": -1}.get(expr[j], 0)
        if depth == 0:
            return j + 1
    raise ValueError(f"unbalanced parentheses: {expr}")


def broker_joins(expr: str) -> list[str]:
    """The right-hand sides of `expr`'s joins with the broker info series: `group by (...) (...)`."""
    out = []
    start = expr.find(BROKER_JOIN)
    while start >= 0:
        i = start + len(BROKER_JOIN)
        end = _group_end(expr, _group_end(expr, i))  # the `by` clause, then what it groups
        out.append(expr[i:end])
        start = expr.find(BROKER_JOIN, end)
    return out


def numbers_returned(prom, expr: str, start: float, end: float) -> list[float]:
    """The numbers (NaN left out) the panel's query returns over [start, end] at a 1 s step, as
    Grafana would ask (variables at All); a query Prometheus refuses raises (HTTP 400)."""
    result = prom.query_range(substitute(expr), start, end, 1)
    return [v for values in result.values() for _, v in values if not math.isnan(v)]
