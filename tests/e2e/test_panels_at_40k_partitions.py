"""The Grafana dashboard (helm/kafka-jmx-sidecar/files/dashboard.json) at 40,000 partitions: each
panel's queries, as Grafana sends them with every variable at All, return fewer than 1,000 series
in all from a real Prometheus that scrapes the sidecar (in this process, with the shipped rules,
rules/kafka-health.yml) next to a simulated broker of 40,000 partitions (big_broker, shared with
test_operations.py through conftest.py) and evaluates the shipped alert rules, in two states:

  few     FLAGGED partitions that broker 1 leads have broker 3 out of their ISR (under-replicated,
          at min ISR 2), UNDER_MIN of them broker 2 too (under min ISR): the panels that show only
          flagged partitions show them
  outage  broker 2 down as well: every one of the 13,334 partitions broker 1 leads is under-replicated

Each panel's count is printed (pytest -s). The old "In-sync replicas by partition" query (every
partition's two counts) returns some 80,000 series here: the bound can fail. The broker info
series names the broker and its cluster, which the dashboard's variables list.
"""
from __future__ import annotations

import json
import re
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field

import pytest

from kafka_jmx_sidecar.mbeans.simulator import SimulatorError, cluster
from tests.deploy.alerts.dashboard_panels import dashboard, panels, substitute
from tests.deploy.alerts.scenario_run import rules_with_short_for
from tests.e2e.prometheus_server import Prometheus
from tests.e2e.sidecar_harness import Sidecar

LIMIT = 1_000
FLAGGED, UNDER_MIN = 30, 5
LED = 13_334  # the synthetic cluster's partitions x = 0..39,999 (topic x // 100) are led by broker x % 3 + 1
SCRAPE = 10  # seconds: a scrape of the 200,000 series takes ~4 s on a busy machine; the step of the counts
# as Grafana sent it with the old variables (namespace, instance, topic) at All
OLD_ISR_QUERY = 'kafka_cluster_partition_insyncreplicascount{namespace=~".*",instance=~".*",topic=~".*"}'


def led_partitions(count: int) -> list[tuple[str, int]]:
    """`count` partitions broker 1 leads, one per topic: replicas [1, 2, 3], all in sync."""
    return [(f"synthetic-{n:04d}", -100 * n % 3) for n in range(count)]


def label_values(prom: Prometheus, query: str) -> list[str]:
    """What a variable's `label_values(series, label)` lists (variables at All)."""
    series, label = re.fullmatch(r"label_values\((.*), (\w+)\)", substitute(query)).groups()
    return sorted(r["metric"].get(label, "") for r in prom.query(f"group by ({label}) ({series})"))


@dataclass
class Counted:
    panels: dict[str, dict[str, int]] = field(default_factory=dict)  # state -> panel title -> series
    seconds: dict[str, dict[str, float]] = field(default_factory=dict)  # state -> panel title -> query time
    old_isr: dict[str, int] = field(default_factory=dict)  # state -> series of OLD_ISR_QUERY
    variables: dict[str, list[str]] = field(default_factory=dict)
    info: list[dict] = field(default_factory=list)
    took: dict[str, float] = field(default_factory=dict)


def series_returned(prom: Prometheus, expr: str, start: float, end: float) -> int:
    """The series of a range query over [start, end] (Prometheus' API, with more time than
    prometheus_server's 10 s: a query over every partition takes seconds on a busy machine)."""
    query = urllib.parse.urlencode({"query": expr, "start": start, "end": end, "step": SCRAPE})
    with urllib.request.urlopen(f"http://127.0.0.1:{prom.port}/api/v1/query_range?{query}", timeout=180) as r:
        return len(json.loads(r.read())["data"]["result"])


def count(prom: Prometheus, start: float, end: float, out: Counted, state: str) -> None:
    """Series returned by each panel's queries over [start, end], as Grafana asks them (variables
    at All), and the seconds they took."""
    out.panels[state], out.seconds[state] = {}, {}
    for p in panels(dashboard()):
        if p["type"] != "row":
            started = time.monotonic()
            out.panels[state][p["title"]] = sum(series_returned(prom, substitute(t["expr"]), start, end)
                                                for t in p["targets"])
            out.seconds[state][p["title"]] = time.monotonic() - started
    out.old_isr[state] = series_returned(prom, OLD_ISR_QUERY, start, end)


def wait_for_scraped(prom: Prometheus, expr: str, expected: float, timeout: float) -> float:
    """Until `expr` reads `expected` in Prometheus; then the time a full scrape later."""
    prom.wait_for(expr, expected, timeout=timeout)
    time.sleep(SCRAPE)
    return time.time()


@pytest.fixture(scope="module")
def counted(big_broker, tmp_path_factory) -> Counted:
    sim, out = big_broker, Counted()
    flagged = led_partitions(FLAGGED)
    tmp = tmp_path_factory.mktemp("panels")
    started = time.monotonic()
    try:
        for topic, partition in flagged:
            sim.shrink_isr(topic, partition, 3)
        for topic, partition in flagged[:UNDER_MIN]:
            sim.shrink_isr(topic, partition, 2)
        with Sidecar(sim.url, tmp, poll_seconds=5) as sidecar:
            sidecar.wait_for_poll_after(0, timeout=400)
            out.took["first poll"] = time.monotonic() - started
            prom = Prometheus(sidecar.target, scrape_interval=f"{SCRAPE}s", rule_files=[str(rules_with_short_for(tmp))])
            try:
                urp = "sum(kafka_server_replicamanager_underreplicatedpartitions)"
                begin = time.time()
                prom.wait_for(urp, FLAGGED, timeout=120)
                end = wait_for_scraped(prom, 'count(ALERTS{alertstate="firing",alertname=~"Kafka.*"}) > bool 0', 1, 60)
                out.took["few"] = time.monotonic() - started
                count(prom, begin, end, out, "few")
                out.variables = {v["name"]: label_values(prom, v["query"]["query"])
                                 for v in dashboard()["templating"]["list"] if v["type"] == "query"}
                out.info = [r["metric"] for r in prom.query("kafka_jmx_sidecar_broker_info")]

                sim.fail_broker(2)
                begin = time.time()
                end = wait_for_scraped(prom, urp, LED, 120)
                out.took["outage"] = time.monotonic() - started
                count(prom, begin, end, out, "outage")
            finally:
                prom.stop()
    finally:  # as it was for the other modules: every partition in sync, led by its first replica
        if 2 not in sim.live_brokers():
            sim.restore_broker(2)
        sim.elect_preferred_leaders()
        for topic, partition in flagged:  # broker 2 is back in every ISR (restore_broker catches up)
            try:
                sim.expand_isr(topic, partition, 3)
            except SimulatorError:  # never shrunk: the fixture failed before
                pass
    assert all(set(s.isr) == set(s.replicas) and s.leader == s.replicas[0] for s in sim.partition_states())
    out.took["all"] = time.monotonic() - started
    return out


def test_every_panel_returns_fewer_than_1000_series(counted):
    width = max(map(len, counted.panels["few"]))
    print(f"\nseries per panel at 40,000 partitions, few flagged / broker 2 down (query seconds); "
          f"{ {k: round(v) for k, v in counted.took.items()} } s")
    for title in counted.panels["few"]:
        print(f"  {title:<{width}}  " + "  ".join(f"{counted.panels[s][title]:>5} ({counted.seconds[s][title]:4.1f})"
                                                  for s in ("few", "outage")))
    print(f"  {'old: In-sync replicas by partition (A)':<{width}}  {counted.old_isr['few']:>5}  "
          f"{counted.old_isr['outage']:>5}")
    for state, by_panel in counted.panels.items():
        over = {title: n for title, n in by_panel.items() if n >= LIMIT}
        assert not over, (state, over)


def test_the_flagged_partitions_panels_show_the_flagged_ones(counted):
    few, outage = counted.panels["few"], counted.panels["outage"]
    # under-replicated, under min ISR, at min ISR: one topic each per flagged partition (one per topic)
    assert few["Flagged partitions by topic (top 20 per flag)"] == 20 + UNDER_MIN + 20
    assert few["In-sync replicas of under-replicated partitions (fewest 20)"] == 2 * 20
    assert outage["Flagged partitions by topic (top 20 per flag)"] > 0
    assert outage["In-sync replicas of under-replicated partitions (fewest 20)"] >= 2 * 20
    assert few["Firing Kafka alerts"] > 0 and outage["Firing Kafka alerts"] > 0


def test_the_old_per_partition_query_is_over_the_bound(counted):
    """What the bound guards against: every partition's in-sync count, one series each."""
    assert counted.old_isr["few"] == counted.old_isr["outage"] == 40_000 > LIMIT


def test_the_broker_info_series_names_the_broker_and_its_cluster(counted):
    cluster_id = cluster.normalize(cluster.synthetic(40_000), version="4.1")["cluster_id"]  # the simulator's default
    assert [{k: v for k, v in m.items() if k not in ("instance", "job")} for m in counted.info] == [
        {"__name__": "kafka_jmx_sidecar_broker_info", "broker_id": "1", "broker_version": "4.1.0",
         "cluster_id": cluster_id}]
    assert counted.variables["cluster"] == [cluster_id] and counted.variables["broker"] == ["1"]
